//! An AnyValue as the OTLP/JSON decoders read it (`attributes`, and the
//! attribute maps of `plain`).

use std::borrow::Cow;

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue};

/// An AnyValue as decoded, its string borrowed from the input where the
/// deserializer lends it: a span attribute's value goes to the builder as
/// it is, any other becomes prost's ([`AnyIn::into_any`]).
pub(super) enum AnyIn<'de> {
    /// No member set.
    Empty,
    Str(Cow<'de, str>),
    Bool(bool),
    Int(i64),
    Double(f64),
    /// Bytes, arrays and key-value lists, as prost's.
    Nested(AnyValue),
}

impl AnyIn<'_> {
    pub(super) fn nested(v: any_value::Value) -> Self {
        AnyIn::Nested(AnyValue { value: Some(v) })
    }

    pub(super) fn into_any(self) -> AnyValue {
        use any_value::Value as V;
        let value = match self {
            AnyIn::Empty => None,
            AnyIn::Str(s) => Some(V::StringValue(s.into_owned())),
            AnyIn::Bool(b) => Some(V::BoolValue(b)),
            AnyIn::Int(i) => Some(V::IntValue(i)),
            AnyIn::Double(d) => Some(V::DoubleValue(d)),
            AnyIn::Nested(v) => return v,
        };
        AnyValue { value }
    }
}
