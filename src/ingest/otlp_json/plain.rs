//! Attributes written as one JSON object of plain values
//! (`{"gen_ai.tool.name": "find_hotel", "n": 2, "tags": ["a"]}`) rather
//! than a list of KeyValue: the "OTLP-like" JSON some exporters post
//! (Microsoft Agent 365's own exporter). A string, boolean, integer or
//! other number is that AnyValue; an array an `arrayValue`, an object a
//! `kvlistValue`, `null` an attribute without a value. Only this form
//! comes here (serde hands a JSON object to `visit_map`): the KeyValue
//! list is read as before.

use std::borrow::Cow;
use std::fmt;

use opentelemetry_proto::tonic::common::v1::{
    any_value::Value as V, AnyValue, ArrayValue, KeyValue, KeyValueList,
};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::any_in::AnyIn;
use super::scalars::Key;
use crate::ingest::projection::{holds_json, AttrsOf, KeyFilter};

/// Each kept attribute of a map (`filter`: which keys to keep, `None`
/// inside a kvlistValue), handed to `put` with its value (`None`: null).
pub(super) fn each<'de, A: MapAccess<'de>>(
    mut map: A,
    filter: Option<(&dyn KeyFilter, AttrsOf)>,
    mut put: impl FnMut(Cow<'de, str>, Option<AnyIn<'de>>),
) -> Result<(), A::Error> {
    while let Some(Key(key)) = map.next_key()? {
        let value = map.next_value_seed(Plain)?;
        let kept = filter.is_none_or(|(f, at)| {
            f.keep(at, &key)
                || f.keep_json(at) && matches!(&value, Some(AnyIn::Str(t)) if holds_json(t))
        });
        if kept {
            put(key, value);
        }
    }
    Ok(())
}

/// One plain JSON value as an AnyValue (`None` for null).
struct Plain;

impl<'de> DeserializeSeed<'de> for Plain {
    type Value = Option<AnyIn<'de>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Plain {
    type Value = Option<AnyIn<'de>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an attribute's value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Self::Value, E> {
        Ok(Some(AnyIn::Bool(b)))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
        Ok(Some(AnyIn::Int(n)))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
        // Past i64: the nearest double, as a JSON reader would keep it.
        Ok(Some(match i64::try_from(n) {
            Ok(i) => AnyIn::Int(i),
            Err(_) => AnyIn::Double(n as f64),
        }))
    }
    fn visit_f64<E: de::Error>(self, d: f64) -> Result<Self::Value, E> {
        Ok(Some(AnyIn::Double(d)))
    }
    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Some(AnyIn::Str(Cow::Borrowed(s))))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Some(AnyIn::Str(Cow::Owned(s.to_owned()))))
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
        Ok(Some(AnyIn::Str(Cow::Owned(s))))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut values = Vec::new();
        while let Some(v) = seq.next_element_seed(Plain)? {
            values.push(v.map_or_else(AnyValue::default, AnyIn::into_any));
        }
        Ok(Some(AnyIn::Nested(AnyValue {
            value: Some(V::ArrayValue(ArrayValue { values })),
        })))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let mut values = Vec::new();
        each(map, None, |key, value| values.push(key_value(key, value)))?;
        Ok(Some(AnyIn::Nested(AnyValue {
            value: Some(V::KvlistValue(KeyValueList { values })),
        })))
    }
}

/// prost's KeyValue of a plain attribute.
pub(super) fn key_value(key: Cow<'_, str>, value: Option<AnyIn<'_>>) -> KeyValue {
    KeyValue {
        key: key.into_owned(),
        value: value.map(AnyIn::into_any),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{decode, decode_with, Document};
    use crate::ingest::projection::{AttrsOf, KeyFilter};

    const LIST: &str = r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"desk"}},{"key":"process.pid","value":{"intValue":"42"}}]},"scopeSpans":[{"scope":{"name":"acme","attributes":[{"key":"acme.tier","value":{"stringValue":"gold"}}]},"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"execute_tool lookup","kind":1,"startTimeUnixNano":"10","endTimeUnixNano":"20","attributes":[{"key":"gen_ai.tool.name","value":{"stringValue":"lookup"}},{"key":"acme.count","value":{"intValue":"3"}},{"key":"acme.ratio","value":{"doubleValue":0.5}},{"key":"acme.ok","value":{"boolValue":true}},{"key":"acme.tags","value":{"arrayValue":{"values":[{"stringValue":"a"},{"intValue":"2"}]}}},{"key":"acme.meta","value":{"kvlistValue":{"values":[{"key":"k","value":{"stringValue":"v"}}]}}},{"key":"acme.none"}],"events":[{"name":"e","timeUnixNano":"15","attributes":[{"key":"acme.step","value":{"intValue":"1"}}]}],"status":{"code":0}}]}]}]}"#;

    /// [`LIST`] as an exporter writing attributes as objects does.
    const OBJECT: &str = r#"{"resourceSpans":[{"resource":{"attributes":{"service.name":"desk","process.pid":42}},"scopeSpans":[{"scope":{"name":"acme","attributes":{"acme.tier":"gold"}},"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"execute_tool lookup","kind":"INTERNAL","startTimeUnixNano":10,"endTimeUnixNano":20,"attributes":{"gen_ai.tool.name":"lookup","acme.count":3,"acme.ratio":0.5,"acme.ok":true,"acme.tags":["a",2],"acme.meta":{"k":"v"},"acme.none":null},"events":[{"name":"e","timeUnixNano":15,"attributes":{"acme.step":1}}],"links":null,"status":{"code":"UNSET","message":""}}]}]}]}"#;

    fn requests(d: &Document) -> String {
        assert!(d.rejected.is_empty(), "{:?}", d.rejected);
        let spans = super::super::tests::spans_of(d);
        let resources: Vec<_> = d
            .requests
            .iter()
            .flat_map(|r| &r.resource_spans)
            .map(|rs| {
                (
                    &rs.resource,
                    rs.scope_spans.iter().map(|s| &s.scope).collect::<Vec<_>>(),
                )
            })
            .collect();
        format!("{spans:?} {resources:?}")
    }

    #[test]
    fn attributes_as_one_object_read_as_the_list() {
        let list = decode(LIST.as_bytes()).unwrap();
        let object = decode(OBJECT.as_bytes()).unwrap();
        assert_eq!(requests(&list), requests(&object));
        assert_eq!(list.spans(), 1);
    }

    #[test]
    fn a_key_filter_applies_to_attributes_as_an_object() {
        struct OnlyGenAi;
        impl KeyFilter for OnlyGenAi {
            fn keep(&self, at: AttrsOf, key: &str) -> bool {
                at != AttrsOf::Span || key.starts_with("gen_ai.")
            }
            fn keep_json(&self, at: AttrsOf) -> bool {
                at == AttrsOf::Span
            }
        }
        let json = OBJECT.replace(
            r#""acme.none":null"#,
            r#""acme.msgs":"[{\"role\":\"user\"}]""#,
        );
        let d = decode_with(json.as_bytes(), &OnlyGenAi).unwrap();
        assert!(d.rejected.is_empty(), "{:?}", d.rejected);
        let span = d.requests[0].resource_spans[0].scope_spans[0].spans[0].to_proto();
        let keys: Vec<&str> = span.attributes.iter().map(|kv| kv.key.as_str()).collect();
        // JSON text under a dropped key is kept, as in the list form.
        assert_eq!(keys, ["gen_ai.tool.name", "acme.msgs"]);
    }
}
