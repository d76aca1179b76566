//! What the readers of foreign fixture formats share: the record's context,
//! field lookups with messages that name the path, and the case they build.

use serde::Deserialize as _;
use serde_json::Value;

use super::{Call, Case, Join};

/// What a converter knows about the record besides its content.
pub(super) struct Ctx {
    /// The file name without its extensions, for ids of records that have
    /// none.
    pub stem: String,
    /// The record's ordinal (1-based).
    pub n: usize,
}

impl Ctx {
    /// `<file stem>#<n>`: the id of a record that carries none.
    pub fn default_id(&self) -> String {
        format!("{}#{}", self.stem, self.n)
    }
}

/// A JSON value's kind, for messages.
pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The first of `keys` present and not null in `v` (an object), with the
/// key found.
pub(super) fn field<'a>(v: &'a Value, keys: &[&'static str]) -> Option<(&'static str, &'a Value)> {
    keys.iter()
        .find_map(|k| v.get(*k).filter(|x| !x.is_null()).map(|x| (*k, x)))
}

/// A list field, named `path` in messages.
pub(super) fn list<'a>(
    v: &'a Value,
    keys: &[&'static str],
    path: &str,
) -> Result<Option<&'a Vec<Value>>, String> {
    match field(v, keys) {
        None => Ok(None),
        Some((_, Value::Array(items))) => Ok(Some(items)),
        Some((k, other)) => Err(format!("`{path}{k}` must be a list, not {}", kind(other))),
    }
}

/// A required text field.
pub(super) fn text(v: &Value, keys: &[&'static str], path: &str) -> Result<String, String> {
    match field(v, keys) {
        Some((_, Value::String(s))) => Ok(s.clone()),
        Some((k, other)) => Err(format!("`{path}{k}` must be a string, not {}", kind(other))),
        None => Err(format!("`{path}{}` is missing", keys[0])),
    }
}

/// Tool calls from a list of objects with a name key and an arguments key:
/// `list_path` names the list in messages.
pub(super) fn calls(
    items: &[Value],
    list_path: &str,
    name_keys: &[&'static str],
    args_keys: &[&'static str],
) -> Result<Vec<Call>, String> {
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = format!("{list_path}[{i}].");
        if !item.is_object() {
            return Err(format!(
                "`{list_path}[{i}]` must be an object, not {}",
                kind(item)
            ));
        }
        let name = text(item, name_keys, &path)?;
        if name.trim().is_empty() {
            return Err(format!("`{path}{}` is empty", name_keys[0]));
        }
        let (key, args) = match field(item, args_keys) {
            None => (args_keys[0], None),
            Some((k, a @ Value::Object(_))) => (k, Some(a.clone())),
            Some((k, other)) => {
                return Err(format!(
                    "`{path}{k}` must be an object, not {}",
                    kind(other)
                ))
            }
        };
        out.push(Call::expected(name, args, || format!("{path}{key}"))?);
    }
    Ok(out)
}

/// A case with only an id, a join and expected calls.
pub(super) fn case(id: String, join: Join, expected: Vec<Call>) -> Case {
    Case {
        id,
        join,
        expected: expected.into(),
        threshold: None,
        states_tools: true,
        more: None,
    }
}

/// The join on a user text; an empty text joins nothing, so it is refused.
pub(super) fn user_text_join(text: &str, path: &str) -> Result<Join, String> {
    let t = super::normalize_text(text);
    if t.is_empty() {
        return Err(format!(
            "`{path}` holds no text to find the trace by (docs/formats.md)"
        ));
    }
    Ok(Join::UserText(t))
}

/// Pretty-printed JSON documents one after another (as `json.dumps(...,
/// indent=2)` per record writes them): each document's first line (1-based)
/// and text. `None` when `text` is JSON lines (its first non-empty line is a
/// document on its own) or not a stream of documents at all; the caller
/// then reads it line by line, rejecting the bad lines alone.
pub(super) fn documents(text: &str) -> Option<Vec<(usize, &str)>> {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    if serde_json::from_str::<serde::de::IgnoredAny>(first).is_ok() {
        return None;
    }
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<serde::de::IgnoredAny>();
    let mut docs = Vec::new();
    let mut end = 0;
    while let Some(next) = stream.next() {
        next.ok()?;
        let start = end + text[end..].len() - text[end..].trim_start().len();
        end = stream.byte_offset();
        let line = text.as_bytes()[..start]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        docs.push((line, &text[start..end]));
    }
    (docs.len() > 1).then_some(docs)
}

/// How [`record`]'s message for text that is not JSON starts.
pub(super) const NOT_JSON: &str = "not JSON: ";

/// Parses one fixture record. A key written twice in one object is an error
/// naming it (`serde_json::Value` would keep the last silently); checked
/// while the record is read, so it costs no second pass.
pub(super) fn record(text: &str) -> Result<Value, String> {
    serde_json::from_str::<Checked>(text)
        .map(|c| c.0)
        .map_err(|e| match e.classify() {
            serde_json::error::Category::Data => e.to_string(),
            _ => format!("{NOT_JSON}{e}"),
        })
}

/// A JSON value built as `serde_json::Value` builds it, with duplicate keys
/// refused.
struct Checked(Value);

impl<'de> serde::Deserialize<'de> for Checked {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Flagged::deserialize(d).map(|f| Checked(f.value))
    }
}

/// A [`Checked`] value, and whether a key in it starts with `$` (so an
/// argument matcher may be inside, `expect::matchers`): found while the value
/// is built, so fixtures without matchers pay no second pass over their
/// arguments.
pub(super) struct Flagged {
    pub value: Value,
    pub dollar: bool,
}

impl<'de> serde::Deserialize<'de> for Flagged {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CheckedVisitor)
    }
}

/// A leaf: no key in it.
fn leaf(value: Value) -> Flagged {
    Flagged {
        value,
        dollar: false,
    }
}

struct CheckedVisitor;

impl<'de> serde::de::Visitor<'de> for CheckedVisitor {
    type Value = Flagged;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Flagged, E> {
        Ok(leaf(Value::Bool(b)))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Flagged, E> {
        Ok(leaf(Value::from(n)))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Flagged, E> {
        Ok(leaf(Value::from(n)))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Flagged, E> {
        Ok(leaf(Value::from(n)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Flagged, E> {
        Ok(leaf(Value::String(s.to_string())))
    }
    fn visit_string<E>(self, s: String) -> Result<Flagged, E> {
        Ok(leaf(Value::String(s)))
    }
    fn visit_unit<E>(self) -> Result<Flagged, E> {
        Ok(leaf(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Flagged, E> {
        Ok(leaf(Value::Null))
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Flagged, D::Error> {
        Flagged::deserialize(d)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Flagged, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        let mut dollar = false;
        while let Some(f) = seq.next_element::<Flagged>()? {
            dollar |= f.dollar;
            items.push(f.value);
        }
        Ok(Flagged {
            value: Value::Array(items),
            dollar,
        })
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Flagged, A::Error> {
        let mut out = serde_json::Map::new();
        let mut dollar = false;
        while let Some(key) = map.next_key::<String>()? {
            dollar |= key.starts_with('$');
            match out.entry(key) {
                serde_json::map::Entry::Occupied(e) => {
                    return Err(serde::de::Error::custom(format!(
                        "key `{}` appears twice in one object",
                        e.key()
                    )))
                }
                serde_json::map::Entry::Vacant(e) => {
                    let f: Flagged = map.next_value()?;
                    dollar |= f.dollar;
                    e.insert(f.value);
                }
            }
        }
        Ok(Flagged {
            value: Value::Object(out),
            dollar,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_values_and_repeated_keys_are_errors() {
        let text = r#"{"a": [1, -2, 1.5, "s", null, true], "b": {"c": {}}}"#;
        assert_eq!(
            record(text).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
        let e = record(r#"{"a": {"b": 1, "b": 2}}"#).unwrap_err();
        assert!(e.starts_with("key `b` appears twice"), "{e}");
        assert!(record("{").unwrap_err().starts_with(NOT_JSON));
    }

    #[test]
    fn flagged_values_say_whether_a_key_starts_with_a_dollar() {
        let flag = |text: &str| serde_json::from_str::<Flagged>(text).unwrap().dollar;
        assert!(!flag(r#"{"a": ["$x", {"b": "$"}], "c": null}"#));
        assert!(flag(r#"{"a": [1, {"b": {"$any": true}}]}"#));
        assert!(flag(r#"{"\u0024regex": "x"}"#));
        let v = serde_json::from_str::<Flagged>(r#"{"a": [1, 2.5, "s", null, true]}"#).unwrap();
        assert_eq!(v.value, serde_json::json!({"a": [1, 2.5, "s", null, true]}));
    }
}
