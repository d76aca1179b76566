//! JSON text parsed into a tree that borrows its strings from the text,
//! for the readers that look through a model's output for call objects
//! ([`super::requested::walk`]) and copy out only the calls they find.
//!
//! Parsing into `serde_json::Value` builds a map per object and a string
//! per key and string value; most of a model output's nodes are neither a
//! call nor read, so here a string is copied only when the text escapes
//! it, and an object is a list of its entries. An object's entries are
//! kept as `serde_json::Map` keeps them (sorted by key, the last of a
//! repeated key winning), so a walk sees the same keys in the same order
//! as over the text's `Value`, and [`Json::to_value`] gives that `Value`.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// A JSON value whose strings borrow from the text it was parsed from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json<'a> {
    /// `null`, a boolean or a number, as `serde_json` reads it.
    Scalar(Value),
    Str(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    /// Sorted by key, each key once (see the module's doc).
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

impl<'a> Json<'a> {
    /// `text` parsed, or `None` where `serde_json` would fail on it.
    pub(crate) fn parse(text: &'a str) -> Option<Json<'a>> {
        serde_json::from_str(text).ok()
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value of `key`, when this is an object that has it.
    pub(crate) fn get(&self, key: &str) -> Option<&Json<'a>> {
        match self {
            Json::Object(o) => o
                .binary_search_by(|(k, _)| crate::short_bytes::cmp(k.as_bytes(), key.as_bytes()))
                .ok()
                .map(|i| &o[i].1),
            _ => None,
        }
    }

    /// The `serde_json::Value` the same text parses into.
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Json::Scalar(v) => v.clone(),
            Json::Str(s) => Value::String(s.to_string()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(o) => Value::Object(object_to_map(o)),
        }
    }
}

/// An object's entries as the `serde_json::Map` of the same text.
fn object_to_map(o: &[(Cow<'_, str>, Json<'_>)]) -> Map<String, Value> {
    o.iter()
        .map(|(k, v)| (k.to_string(), v.to_value()))
        .collect()
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json<'de>, E> {
        Ok(Json::Scalar(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json<'de>, E> {
        Ok(Json::Scalar(Value::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json<'de>, E> {
        Ok(Json::Scalar(Value::from(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Json<'de>, E> {
        // `Value`'s own reading: a float that is no JSON number is null.
        Ok(Json::Scalar(Value::from(v)))
    }

    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Scalar(Value::Null))
    }

    fn visit_none<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Scalar(Value::Null))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Owned(v.to_string())))
    }

    fn visit_string<E>(self, v: String) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Owned(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(x) = seq.next_element()? {
            items.push(x);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut entries: Vec<(Cow<'de, str>, Json<'de>)> = Vec::new();
        while let Some(k) = map.next_key_seed(KeySeed)? {
            entries.push((k, map.next_value()?));
        }
        // As `Map` keeps them: sorted (a stable sort keeps a repeated key's
        // entries in text order), the last of a repeated key kept.
        entries.sort_by(|a, b| crate::short_bytes::cmp(a.0.as_bytes(), b.0.as_bytes()));
        // `later` is dropped when its key is `kept`'s: its value goes first.
        entries.dedup_by(|later, kept| {
            let same = crate::short_bytes::eq(later.0.as_bytes(), kept.0.as_bytes());
            if same {
                std::mem::swap(later, kept);
            }
            same
        });
        Ok(Json::Object(entries))
    }
}

/// An object's key, borrowed from the text unless escaped there.
struct KeySeed;

impl<'de> de::DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v))
    }
}

impl<'a> Json<'a> {
    /// [`Json::parse`], except that when the text is a list, the items
    /// after the first one `stop` accepts are read through, not kept: the
    /// text fails where [`Json::parse`] fails, and the tree is the same up
    /// to that item (a conversation's opening message is what some readers
    /// want; its history is most of the bytes).
    pub(crate) fn parse_until(text: &'a str, stop: &dyn Fn(&Json<'a>) -> bool) -> Option<Json<'a>> {
        // JSON's blanks only: what serde_json skips before a value.
        if !text
            .trim_start_matches([' ', '\n', '\r', '\t'])
            .starts_with('[')
        {
            return Json::parse(text);
        }
        let mut d = serde_json::Deserializer::from_str(text);
        let v = de::DeserializeSeed::deserialize(Until(stop), &mut d).ok()?;
        // As `serde_json::from_str`: nothing but blanks after the value.
        d.end().ok()?;
        Some(v)
    }
}

/// [`Json::parse_until`]'s reading of the whole text.
struct Until<'s, 'a>(&'s dyn Fn(&Json<'a>) -> bool);

impl<'de> de::DeserializeSeed<'de> for Until<'_, 'de> {
    type Value = Json<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Json<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Until<'_, 'de> {
    type Value = Json<'de>;

    // Asked of a list only (anything else is `Json::parse`'s): every other
    // kind is the default's error, never reached.
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON list")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(x) = seq.next_element::<Json<'de>>()? {
            let stop = (self.0)(&x);
            items.push(x);
            if stop {
                while seq.next_element::<Skip>()?.is_some() {}
                break;
            }
        }
        Ok(Json::Array(items))
    }
}

/// A value read through and dropped by the reads `Json` makes (keys as
/// strings, values as any), so that it fails where `Json` fails: nothing is
/// kept, no string copied.
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Skip, D::Error> {
        d.deserialize_any(SkipVisitor)
    }
}

/// An object's key read through as [`KeySeed`] reads it.
struct SkipKey;

impl<'de> de::DeserializeSeed<'de> for SkipKey {
    type Value = Skip;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Skip, D::Error> {
        d.deserialize_str(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_none<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_borrowed_str<E>(self, _: &'de str) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_string<E>(self, _: String) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_key_seed(SkipKey)?.is_some() {
            map.next_value::<Skip>()?;
        }
        Ok(Skip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree gives back the `Value` of the same text, repeated keys,
    /// escapes, numbers and nesting included, and fails where it fails.
    #[test]
    fn gives_the_value_serde_json_reads() {
        let texts = [
            r#"{"b": 1, "a": [true, null, -3, 2.5], "b": {"x\"y": "\u00e9t\u00e9"}, "b": 3}"#,
            r#"{"n": 1e400}"#,
            r#"[{"type": "tool_call", "id": "c1", "name": "f", "arguments": {"k": "v"}}]"#,
            r#""plain""#,
            "18446744073709551615",
            r#"{"z": {}, "y": [], "x": "", "z": 0}"#,
        ];
        for t in texts {
            let want: Result<Value, _> = serde_json::from_str(t);
            let got = Json::parse(t).map(|j| j.to_value());
            assert_eq!(got, want.ok(), "{t}");
        }
        for bad in [r#"{"a": 1"#, "[1, 2] x", "", "{'a': 1}"] {
            assert!(serde_json::from_str::<Value>(bad).is_err());
            assert_eq!(Json::parse(bad), None, "{bad}");
        }
        let j = Json::parse(r#"{"k": 1, "k": "last", "a": "x"}"#);
        let j = j.as_ref();
        assert_eq!(
            j.and_then(|j| j.get("k")).and_then(Json::as_str),
            Some("last")
        );
        assert_eq!(j.and_then(|j| j.get("none")), None);
        // Strings without escapes are borrowed, not copied.
        let text = r#"{"key": "value"}"#;
        match Json::parse(text) {
            Some(Json::Object(o)) => {
                assert!(matches!(o[0].0, Cow::Borrowed(_)));
                assert!(matches!(o[0].1, Json::Str(Cow::Borrowed(_))));
            }
            other => panic!("{other:?}"),
        }
    }

    /// `parse_until` fails where `parse` fails, in the items it reads
    /// through too (escapes, numbers, syntax, nesting, what follows), and
    /// keeps the items `parse` gives up to the first that `stop` accepts.
    #[test]
    fn parse_until_fails_where_parse_fails() {
        let stop = |j: &Json<'_>| j.get("stop").is_some();
        let deep = format!(r#"[{{"stop": 1}}, {}{}]"#, "[".repeat(200), "]".repeat(200));
        let texts = [
            r#"[{"a": 1}, {"stop": 1}, {"b": [1, {"c": "d\u00e9"}]}, "x"]"#,
            r#"[{"stop": 1}, {"n": 1e400}]"#,
            r#"[{"stop": 1}, "\ud800"]"#,
            r#"[{"stop": 1}, {"\ud800": 1}]"#,
            r#"[{"stop": 1}, {"a": 1,}]"#,
            r#"[{"stop": 1}, 1] x"#,
            r#"[{"stop": 1}, {"k": 1, "k": 2}]"#,
            r#"[{"stop": 1}"#,
            r#"{"stop": 1, "a": [1]}"#,
            "[1, 2, 3]",
            "[]",
            deep.as_str(),
        ];
        for t in texts {
            let whole = Json::parse(t);
            let until = Json::parse_until(t, &stop);
            assert_eq!(until.is_some(), whole.is_some(), "{t}");
            match (until, whole) {
                (Some(Json::Array(u)), Some(Json::Array(w))) => {
                    let kept = w.iter().position(stop).map_or(w.len(), |i| i + 1);
                    assert_eq!(u, w[..kept], "{t}");
                }
                (u, w) => assert_eq!(u, w, "{t}"),
            }
        }
    }
}
