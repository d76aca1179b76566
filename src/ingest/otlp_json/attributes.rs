//! Attributes and their values (AnyValue), filtered by key as they are
//! read.

use std::borrow::Cow;
use std::fmt;

use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, ArrayValue, KeyValue, KeyValueList,
};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

pub(super) use super::any_in::AnyIn;
use super::context::Fault;
use super::ids::base64;
use super::scalars::{clip, str_field, to_f64, to_i64, Key, Scalar};
use super::seeds::{list_seed, Nullable};
use crate::ingest::projection::{holds_json, AttrsOf, KeyFilter};
use crate::ingest::span::{NewValue, SpanBuilder};
use simd_json::Node;

use super::tape::TapeDe;

/// A list of KeyValue. `filter`: which keys to keep (`None` inside a
/// kvlistValue, whose keys are data, not attribute names).
pub(super) struct Attrs<'a, 'f> {
    pub(super) out: &'a mut Vec<KeyValue>,
    pub(super) fault: &'a mut Fault,
    pub(super) filter: Option<(&'f dyn KeyFilter, AttrsOf)>,
    /// The tape the list is on, when simd-json parsed the document.
    pub(super) tape: Option<&'f TapeDe<'f, 'f>>,
}

impl<'de> DeserializeSeed<'de> for Attrs<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        // As for `SpanAttrs`: a list on the tape is read from it here.
        match self.tape {
            Some(tape) if matches!(tape.peek(), Some(Node::Array { .. })) => {
                attrs_on_tape(tape, self.out, self.fault, self.filter).map_err(de::Error::custom)
            }
            _ => d.deserialize_any(self),
        }
    }
}

impl Attrs<'_, '_> {
    fn describe(f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of attributes (or null)")
    }
}

/// A list of KeyValue read from the tape, as [`Attrs::visit_seq`] reads
/// it (elements of the usual shape here, others by [`KeyValueSeed`]).
fn attrs_on_tape(
    tape: &TapeDe<'_, '_>,
    out: &mut Vec<KeyValue>,
    fault: &mut Fault,
    filter: Option<(&dyn KeyFilter, AttrsOf)>,
) -> Result<(), simd_json::Error> {
    let Some(Node::Array { len, .. }) = tape.peek() else {
        return Ok(());
    };
    tape.at.set(tape.at.get() + 1);
    let keeps_json = filter.is_some_and(|(f, at)| f.keep_json(at));
    let mut kept = ATTR_SCRATCH.take();
    kept.clear();
    let mut push = |key: &str, value: Option<AnyIn<'_>>| {
        kept.push(KeyValue {
            key: key.to_owned(),
            value: value.map(AnyIn::into_any),
            ..Default::default()
        })
    };
    let filled = (|| {
        for _ in 0..len {
            let at = tape.at.get();
            let plain = tape.nodes.get(at..at + 7).and_then(PlainAttr::of);
            match plain.and_then(|a| Some((a.key, a.value(filter, keeps_json)?))) {
                Some((key, value)) => {
                    tape.at.set(at + 7);
                    if let Some(value) = value {
                        push(key, Some(value));
                    }
                }
                None => {
                    let seed = KeyValueSeed {
                        fault: &mut *fault,
                        filter,
                    };
                    if let Some((key, value)) = seed.deserialize(tape)? {
                        push(&key, value);
                    }
                }
            }
        }
        Ok(())
    })();
    out.reserve_exact(kept.len());
    out.append(&mut kept);
    ATTR_SCRATCH.set(kept);
    filled
}

impl<'de> Visitor<'de> for Attrs<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        Self::describe(f)
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        // Gathered in a reused buffer, then moved into a list of exactly
        // their number: growing each list push by push cost a reallocation
        // and a copy per span. A nested list (a kvlistValue) finds the
        // buffer taken and uses its own.
        let mut kept = ATTR_SCRATCH.take();
        kept.clear();
        let filled = (|| {
            while let Some(kv) = seq.next_element_seed(KeyValueSeed {
                fault: &mut *self.fault,
                filter: self.filter,
            })? {
                if let Some((key, value)) = kv {
                    kept.push(KeyValue {
                        key: key.into_owned(),
                        value: value.map(AnyIn::into_any),
                        ..Default::default()
                    });
                }
            }
            Ok(())
        })();
        self.out.reserve_exact(kept.len());
        self.out.append(&mut kept);
        ATTR_SCRATCH.set(kept);
        filled
    }
    /// Attributes as one JSON object (`super::plain`).
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        let out = self.out;
        super::plain::each(map, self.filter, |k, v| {
            out.push(super::plain::key_value(k, v))
        })
    }
}

thread_local! {
    /// [`Attrs`]' reused buffer.
    static ATTR_SCRATCH: std::cell::Cell<Vec<KeyValue>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A span's attributes, into its builder: a key or string value is copied
/// once, from the input into the span's text.
pub(super) struct SpanAttrs<'a, 'f> {
    pub(super) sb: &'a mut SpanBuilder,
    pub(super) fault: &'a mut Fault,
    pub(super) filter: &'f dyn KeyFilter,
    /// The tape the list is on, when simd-json parsed the document.
    pub(super) tape: Option<&'f TapeDe<'f, 'f>>,
}

impl<'de> DeserializeSeed<'de> for SpanAttrs<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        // `d` is the tape's deserializer, at the list: a list on the tape
        // is read from it here, anything else by the visitor.
        match self.tape {
            Some(tape) if matches!(tape.peek(), Some(Node::Array { .. })) => {
                span_attrs_on_tape(tape, self.sb, self.fault, self.filter)
                    .map_err(de::Error::custom)
            }
            _ => d.deserialize_any(self),
        }
    }
}

impl SpanAttrs<'_, '_> {
    fn describe(f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of attributes (or null)")
    }
}

/// A span's attribute list read from the tape, as [`SpanAttrs::visit_seq`]
/// reads it: each element of the usual shape, `{"key": "k", "value":
/// {"stringValue" | "boolValue" | "intValue" | "doubleValue": v}}` with a
/// value that converts ([`PlainAttr::value`]), is read here from its seven
/// nodes; any other element goes to [`KeyValueSeed`] on the same tape.
fn span_attrs_on_tape(
    tape: &TapeDe<'_, '_>,
    sb: &mut SpanBuilder,
    fault: &mut Fault,
    filter: &dyn KeyFilter,
) -> Result<(), simd_json::Error> {
    let Some(Node::Array { len, .. }) = tape.peek() else {
        return Ok(());
    };
    tape.at.set(tape.at.get() + 1);
    let keeps_json = filter.keep_json(AttrsOf::Span);
    let on = Some((filter, AttrsOf::Span));
    for _ in 0..len {
        let at = tape.at.get();
        let plain = tape.nodes.get(at..at + 7).and_then(PlainAttr::of);
        if let Some((key, value)) = plain.and_then(|a| Some((a.key, a.value(on, keeps_json)?))) {
            tape.at.set(at + 7);
            if let Some(value) = value {
                span_attr(sb, key, Some(value));
            }
            continue;
        }
        let seed = KeyValueSeed {
            fault: &mut *fault,
            filter: Some((filter, AttrsOf::Span)),
        };
        if let Some((key, value)) = seed.deserialize(tape)? {
            span_attr(sb, &key, value);
        }
    }
    Ok(())
}

/// An attribute of the usual shape, its nodes on the tape.
struct PlainAttr<'n> {
    key: &'n str,
    /// `stringValue`, ...
    member: &'n str,
    value: Node<'n>,
}

impl<'n> PlainAttr<'n> {
    fn of(nodes: &[Node<'n>]) -> Option<Self> {
        match *nodes {
            [Node::Object { len: 2, .. }, Node::String("key"), Node::String(key), Node::String("value"), Node::Object { len: 1, .. }, Node::String(member), value]
                if !matches!(value, Node::Array { .. } | Node::Object { .. }) =>
            {
                Some(PlainAttr { key, member, value })
            }
            _ => None,
        }
    }

    /// The attribute as [`KeyValueSeed`] (with [`AnyValueSeed`] or
    /// [`JsonText`]) reads it: `Some(None)` dropped, `Some(Some(value))`
    /// kept; `None` where they would note a fault or read a null (the
    /// visitors read it then).
    fn value(
        &self,
        filter: Option<(&dyn KeyFilter, AttrsOf)>,
        keeps_json: bool,
    ) -> Option<Option<AnyIn<'n>>> {
        if !filter.is_none_or(|(f, at)| f.keep(at, self.key)) {
            // Dropped unless it is a string holding JSON (`JsonText`);
            // a null or any other member is skipped all the same.
            return Some(match (keeps_json, self.member, self.value) {
                (true, "stringValue", Node::String(s)) if holds_json(s) => {
                    Some(AnyIn::Str(Cow::Borrowed(s)))
                }
                _ => None,
            });
        }
        let scalar = match self.value {
            Node::String(s) => Scalar::Str(Cow::Borrowed(s)),
            Node::Static(simd_json::StaticNode::Bool(b)) => Scalar::Bool(b),
            Node::Static(simd_json::StaticNode::I64(n)) => Scalar::I64(n),
            Node::Static(simd_json::StaticNode::U64(n)) => Scalar::U64(n),
            Node::Static(simd_json::StaticNode::F64(n)) => Scalar::F64(n),
            _ => return None,
        };
        let value = match (self.member, scalar) {
            ("stringValue", Scalar::Str(s)) => AnyIn::Str(s),
            ("boolValue", Scalar::Bool(b)) => AnyIn::Bool(b),
            ("boolValue", Scalar::Str(s)) if s == "true" || s == "false" => {
                AnyIn::Bool(s == "true")
            }
            ("intValue", v) => AnyIn::Int(to_i64(&v)?),
            ("doubleValue", v) => AnyIn::Double(to_f64(&v)?),
            _ => return None,
        };
        Some(Some(value))
    }
}

impl<'de> Visitor<'de> for SpanAttrs<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        Self::describe(f)
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(kv) = seq.next_element_seed(KeyValueSeed {
            fault: &mut *self.fault,
            filter: Some((self.filter, AttrsOf::Span)),
        })? {
            if let Some((key, value)) = kv {
                span_attr(self.sb, &key, value);
            }
        }
        Ok(())
    }
    /// Attributes as one JSON object (`super::plain`).
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        let sb = self.sb;
        let filter = Some((self.filter, AttrsOf::Span));
        super::plain::each(map, filter, |k, v| span_attr(sb, &k, v))
    }
}

/// One span attribute into its builder (inlined: every attribute of every
/// span comes here).
#[inline(always)]
fn span_attr(sb: &mut SpanBuilder, key: &str, value: Option<AnyIn<'_>>) {
    match value {
        None => sb.attr(key, NewValue::Absent),
        Some(AnyIn::Empty) => sb.attr(key, NewValue::Empty),
        Some(AnyIn::Str(s)) => sb.attr(key, NewValue::Str(&s)),
        Some(AnyIn::Bool(b)) => sb.attr(key, NewValue::Bool(b)),
        Some(AnyIn::Int(i)) => sb.attr(key, NewValue::Int(i)),
        Some(AnyIn::Double(d)) => sb.attr(key, NewValue::Double(d)),
        Some(AnyIn::Nested(v)) => sb.attr(key, NewValue::Nested(v)),
    }
}

/// One KeyValue: its key and its value (`None`: no value field), strings
/// borrowed from the input where the deserializer lends them; `None` if
/// the filter drops it. [`Attrs`] makes prost's `KeyValue` of it,
/// [`SpanAttrs`] hands it to the span's builder.
struct KeyValueSeed<'a, 'f> {
    fault: &'a mut Fault,
    filter: Option<(&'f dyn KeyFilter, AttrsOf)>,
}

/// What [`KeyValueSeed`] yields for a kept attribute.
type KeyValueIn<'de> = (Cow<'de, str>, Option<AnyIn<'de>>);

impl<'de> DeserializeSeed<'de> for KeyValueSeed<'_, '_> {
    type Value = Option<KeyValueIn<'de>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl KeyValueSeed<'_, '_> {
    fn keeps(&self, key: &str) -> bool {
        self.filter.is_none_or(|(f, at)| f.keep(at, key))
    }

    fn keeps_json(&self) -> bool {
        self.filter.is_some_and(|(f, at)| f.keep_json(at))
    }
}

impl<'de> Visitor<'de> for KeyValueSeed<'_, '_> {
    type Value = Option<KeyValueIn<'de>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key-value object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut key: Option<Cow<'de, str>> = None;
        let mut value: Option<AnyIn<'de>> = None;
        let mut inner = Fault::default();
        // Known to be dropped once the key is read (key usually comes first),
        // unless its value holds JSON (`json_only`).
        let mut dropped = false;
        let mut json_only = false;
        // The filter's answer for the key read, asked once: every attribute
        // of every span is asked.
        let mut keeps_key: Option<bool> = None;
        while let Some(Key(k)) = map.next_key()? {
            match &*k {
                "key" => {
                    // Tested borrowed: a dropped key is never copied.
                    let s = str_field(map.next_value()?, "key", &mut inner);
                    let keeps = self.keeps(&s);
                    keeps_key = Some(keeps);
                    dropped = !keeps;
                    json_only = dropped && self.keeps_json();
                    key = (!dropped || json_only).then_some(s);
                }
                "value" if json_only => value = map.next_value_seed(JsonText)?.map(AnyIn::Str),
                "value" if dropped => {
                    map.next_value::<IgnoredAny>()?;
                }
                "value" => value = map.next_value_seed(AnyValueSeed { fault: &mut inner })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let key = key.unwrap_or_default();
        let json = matches!(&value, Some(AnyIn::Str(t)) if holds_json(t));
        let kept =
            !dropped && keeps_key.unwrap_or_else(|| self.keeps(&key)) || self.keeps_json() && json;
        if !kept {
            return Ok(None);
        }
        if let Some(why) = inner.0 {
            self.fault
                .note(|| format!("attribute `{}`: {why}", clip(&key)));
        }
        Ok(Some((key, value)))
    }
}

/// The value of an attribute [`KeyFilter::keep_json`] may keep: the text
/// of a string value holding JSON, or `None` (anything else is skipped
/// undecoded).
struct JsonText;

impl<'de> DeserializeSeed<'de> for JsonText {
    type Value = Option<Cow<'de, str>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for JsonText {
    type Value = Option<Cow<'de, str>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an AnyValue object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut value = None;
        while let Some(Key(k)) = map.next_key()? {
            match (&*k, map.next_value()?) {
                ("stringValue", Scalar::Str(s)) if holds_json(&s) => value = Some(s),
                // A null member is "not set"; another member set last wins,
                // as in the full decode.
                (_, Scalar::Null) => {}
                (
                    "stringValue" | "boolValue" | "intValue" | "doubleValue" | "bytesValue"
                    | "arrayValue" | "kvlistValue",
                    _,
                ) => value = None,
                _ => {}
            }
        }
        Ok(value)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// An AnyValue object: `Some` (possibly empty), `None` for null. A member
/// set later replaces one set before.
struct AnyValueSeed<'a> {
    fault: &'a mut Fault,
}

impl<'de> DeserializeSeed<'de> for AnyValueSeed<'_> {
    type Value = Option<AnyIn<'de>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for AnyValueSeed<'_> {
    type Value = Option<AnyIn<'de>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an AnyValue object (`{\"stringValue\": ...}` etc.) or null")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use any_value::Value as V;
        let f = self.fault;
        let mut value = AnyIn::Empty;
        while let Some(Key(k)) = map.next_key()? {
            // A null member is "not set" (as the serde derive reads it).
            match &*k {
                "stringValue" => match map.next_value()? {
                    Scalar::Null => {}
                    v => value = AnyIn::Str(str_field(v, "stringValue", f)),
                },
                "boolValue" => match map.next_value()? {
                    Scalar::Null => {}
                    Scalar::Bool(b) => value = AnyIn::Bool(b),
                    Scalar::Str(s) if s == "true" || s == "false" => {
                        value = AnyIn::Bool(s == "true")
                    }
                    v => f.note(|| format!("boolValue {v} is not a boolean")),
                },
                "intValue" => match map.next_value()? {
                    Scalar::Null => {}
                    v => match to_i64(&v) {
                        Some(n) => value = AnyIn::Int(n),
                        None => f.note(|| format!("intValue {v} is not a 64-bit integer")),
                    },
                },
                "doubleValue" => match map.next_value()? {
                    Scalar::Null => {}
                    v => match to_f64(&v) {
                        Some(n) => value = AnyIn::Double(n),
                        None => f.note(|| format!("doubleValue {v} is not a number")),
                    },
                },
                "bytesValue" => match map.next_value()? {
                    Scalar::Null => {}
                    Scalar::Str(s) if s.is_empty() => {
                        value = AnyIn::nested(V::BytesValue(Vec::new()))
                    }
                    v => match &v {
                        Scalar::Str(s) => match base64(s.as_bytes()) {
                            Some(b) => value = AnyIn::nested(V::BytesValue(b)),
                            None => f.note(|| format!("bytesValue {v} is not base64")),
                        },
                        _ => f.note(|| format!("bytesValue {v} is not a base64 string")),
                    },
                },
                "arrayValue" => {
                    let mut values = Vec::new();
                    // null: not set, as for every member of the oneof.
                    if map.next_value_seed(Nullable(ValuesOf(ArrayValues {
                        out: &mut values,
                        fault: &mut *f,
                    })))? {
                        value = AnyIn::nested(V::ArrayValue(ArrayValue { values }));
                    }
                }
                "kvlistValue" => {
                    let mut values = Vec::new();
                    if map.next_value_seed(Nullable(ValuesOf(Attrs {
                        out: &mut values,
                        fault: &mut *f,
                        filter: None,
                        tape: None,
                    })))? {
                        value = AnyIn::nested(V::KvlistValue(KeyValueList { values }));
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(value))
    }
}

/// `{"values": [...]}` (ArrayValue, KeyValueList): the list goes to `S`.
struct ValuesOf<S>(S);

impl<'de, S: DeserializeSeed<'de, Value = ()>> DeserializeSeed<'de> for ValuesOf<S> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, S: DeserializeSeed<'de, Value = ()>> Visitor<'de> for ValuesOf<S> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object with `values`")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seed = Some(self.0);
        while let Some(Key(k)) = map.next_key()? {
            match (&*k, seed.take()) {
                ("values", Some(s)) => map.next_value_seed(s)?,
                (_, s) => {
                    seed = s;
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The elements of an ArrayValue (null elements are empty values).
struct ArrayValues<'a, 'b> {
    out: &'a mut Vec<AnyValue>,
    fault: &'b mut Fault,
}
list_seed!(ArrayValues, "values");

impl<'de> Visitor<'de> for ArrayValues<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        Self::describe(f)
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(v) = seq.next_element_seed(AnyValueSeed {
            fault: &mut *self.fault,
        })? {
            self.out
                .push(v.map_or_else(AnyValue::default, AnyIn::into_any));
        }
        Ok(())
    }
}
