//! A call's arguments, in the one form extraction was asked for: parsed,
//! parsed with their key order kept, or kept as JSON text.

use std::sync::Arc;

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::value::PyValue;

/// The arguments of a [`super::ToolCall`]. Which form a call carries is
/// chosen once per run by what reads them ([`super::Extractor::with_ordered_args`],
/// [`super::Extractor::with_args_text`]); every form is written the same
/// way in reports.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum CallArgs {
    /// The span carries no arguments (not the same as `{}`).
    #[default]
    None,
    /// Parsed.
    Value(Value),
    /// Parsed, with the key order of the span's JSON text kept beside:
    /// presets that compare Python `str()` of dicts (ragas) read it.
    Ordered { value: Value, ordered: Arc<PyValue> },
    /// The JSON text serde_json writes of their value, not parsed: when
    /// nothing reads arguments, rows copy this in their place.
    Text(Box<str>),
}

impl CallArgs {
    /// Parsed arguments, if any (and if parsed).
    pub fn from_value(v: Option<Value>) -> CallArgs {
        v.map_or(CallArgs::None, CallArgs::Value)
    }

    /// The parsed value; `None` with no arguments or arguments kept as text.
    pub fn value(&self) -> Option<&Value> {
        match self {
            CallArgs::Value(v) | CallArgs::Ordered { value: v, .. } => Some(v),
            CallArgs::None | CallArgs::Text(_) => None,
        }
    }

    /// The arguments as a value, text parsed (arguments kept as text are
    /// compared so by the joins); `None` when the span had none.
    pub fn parsed(&self) -> Option<std::borrow::Cow<'_, Value>> {
        match self {
            CallArgs::None => None,
            CallArgs::Value(v) | CallArgs::Ordered { value: v, .. } => {
                Some(std::borrow::Cow::Borrowed(v))
            }
            CallArgs::Text(t) => serde_json::from_str(t).ok().map(std::borrow::Cow::Owned),
        }
    }

    /// The parsed value, taken.
    pub fn into_value(self) -> Option<Value> {
        match self {
            CallArgs::Value(v) | CallArgs::Ordered { value: v, .. } => Some(v),
            CallArgs::None | CallArgs::Text(_) => None,
        }
    }

    /// The arguments with their key order as written, when kept.
    pub fn ordered(&self) -> Option<&Arc<PyValue>> {
        match self {
            CallArgs::Ordered { ordered, .. } => Some(ordered),
            _ => None,
        }
    }

    /// Whether the span carried no arguments at all.
    pub fn is_none(&self) -> bool {
        matches!(self, CallArgs::None)
    }

    /// Appends the arguments as JSON (`null` for none): the text as it is,
    /// a value as serde_json writes it.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            CallArgs::None => out.extend_from_slice(b"null"),
            CallArgs::Text(text) => out.extend_from_slice(text.as_bytes()),
            // Writing to a Vec cannot fail.
            CallArgs::Value(v) | CallArgs::Ordered { value: v, .. } => {
                let _ = serde_json::to_writer(out, v);
            }
        }
    }
}

impl Serialize for CallArgs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            CallArgs::None => s.serialize_none(),
            CallArgs::Value(v) | CallArgs::Ordered { value: v, .. } => v.serialize(s),
            CallArgs::Text(text) => {
                // The text is JSON serde_json wrote; a reader that is not
                // serde_json gets it as the value it stands for.
                let raw: &serde_json::value::RawValue =
                    serde_json::from_str(text).map_err(serde::ser::Error::custom)?;
                raw.serialize(s)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_writes_the_same_json_both_ways() {
        let value = serde_json::json!({"b": 1, "a": [1.5, "é\n"]});
        let text: Box<str> = serde_json::to_string(&value).unwrap().into();
        let forms = [
            CallArgs::None,
            CallArgs::Value(value.clone()),
            CallArgs::Ordered {
                value: value.clone(),
                ordered: Arc::new(PyValue::parse(r#"{"b": 1, "a": [1.5, "é\n"]}"#).unwrap()),
            },
            CallArgs::Text(text),
        ];
        for f in &forms {
            let mut direct = Vec::new();
            f.write_json(&mut direct);
            assert_eq!(direct, serde_json::to_vec(f).unwrap(), "{f:?}");
        }
        assert_eq!(forms[1].value(), forms[2].value());
        assert!(forms[3].value().is_none() && !forms[3].is_none());
    }
}
