//! Helpers shared by the presets: Python-style views of the calls and of the
//! libraries' messages.

use std::borrow::Cow;

use crate::expect::Call;
use crate::score::{MetricOptions, ScoreError};
use crate::value::{push_str_repr, PyValue};

/// The call's arguments as Python sees them (key order kept when known).
pub(super) fn py_args(call: &Call) -> Option<Cow<'_, PyValue>> {
    match (&call.ordered_args, &call.args) {
        (Some(ordered), _) => Some(Cow::Borrowed(&**ordered)),
        (None, Some(v)) => Some(Cow::Owned(PyValue::from_json(v))),
        (None, None) => None,
    }
}

/// Arguments for libraries whose `ToolCall.args` is a pydantic
/// `Dict[str, Any]`: absent means `{}`, anything but an object fails validation.
pub(super) fn dict_args<'a>(call: &'a Call, library: &str) -> Result<Cow<'a, PyValue>, String> {
    match py_args(call) {
        None => Ok(Cow::Owned(PyValue::Dict(Vec::new()))),
        Some(v) if v.as_dict().is_some() => Ok(v),
        Some(v) => Err(validation_error(library, &call.name, &v)),
    }
}

/// Like [`dict_args`] but keeps "absent" (`Optional[dict]` fields).
pub(super) fn optional_dict_args<'a>(
    call: &'a Call,
    library: &str,
) -> Result<Option<Cow<'a, PyValue>>, String> {
    match py_args(call) {
        Some(v) if v.as_dict().is_none() => Err(validation_error(library, &call.name, &v)),
        other => Ok(other),
    }
}

fn validation_error(library: &str, tool: &str, v: &PyValue) -> String {
    format!(
        "ValidationError: {library} ToolCall `{tool}`: arguments must be a dict, got {}",
        v.type_name()
    )
}

/// Python `repr()` of a list of strings: `['a', 'b']`.
pub(super) fn py_list<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let items = items.into_iter();
    let mut out = String::with_capacity(2 + 8 * items.size_hint().0);
    out.push('[');
    for (n, item) in items.enumerate() {
        if n > 0 {
            out.push_str(", ");
        }
        push_str_repr(&mut out, item);
    }
    out.push(']');
    out
}

/// Python `repr()` of the names of `calls`.
pub(super) fn names_list(calls: &[Call]) -> String {
    py_list(calls.iter().map(|c| c.name.as_str()))
}

/// The threshold to judge `pass` by: the override if given, else the default.
pub(super) fn threshold(name: &str, opts: &MetricOptions, default: f64) -> Result<f64, ScoreError> {
    match opts.threshold {
        Some(t) if !t.is_finite() => Err(ScoreError::BadOption {
            metric: name.to_string(),
            reason: format!("threshold must be a finite number, got {t}"),
        }),
        Some(t) => Ok(t),
        None => Ok(default),
    }
}

/// Deduplicates `items` by `eq`, keeping first occurrences in order (what a
/// Python `set` holds; its iteration order is not reproduced).
pub(super) fn dedup_by<T: Clone>(items: &[T], eq: impl Fn(&T, &T) -> bool) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for item in items {
        if !out.iter().any(|o| eq(o, item)) {
            out.push(item.clone());
        }
    }
    out
}
