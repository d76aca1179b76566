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
                .binary_search_by(|(k, _)| k.as_ref().cmp(key))
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
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        // `later` is dropped when its key is `kept`'s: its value goes first.
        entries.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
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
}
