//! A call's value that a writer cut at its attribute length limit
//! (docs/conventions.md, "Values cut at a length limit").
//!
//! OTel SDKs keep a string attribute longer than the limit a user set
//! (`OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`, or a writer's own) as its first N
//! characters, and say nothing. A result or arguments read from such an
//! attribute is a prefix, and the value itself rarely shows it (a text
//! stops mid-sentence). The trace does: another attribute cut at the same
//! length is JSON that stops before its end. A call's text value of exactly
//! that many characters is then warned about; it is kept as recorded.

use serde_json::Value;

use crate::assemble::Trace;

use super::{Analysis, CallArgs, CallResult, ToolCall};

/// Shortest value looked at: a limit below it would cut nearly every
/// attribute, and short values are rarely cut.
const MIN_CHARS: usize = 32;

/// Whether `text` opens as a JSON object or list and does not close as
/// one: what a cut leaves of a JSON document. What follows the opening
/// bracket must be able to begin its content: a text in brackets
/// (Strands' `[ERROR] ...` answer) is no JSON.
fn open_json(text: &str) -> bool {
    let t = text.trim();
    if matches!(t.as_bytes().last(), Some(b'}' | b']')) {
        return false;
    }
    let inner = |open: char| t.strip_prefix(open).map(str::trim_start);
    match (inner('{'), inner('[')) {
        (Some(rest), _) => rest.is_empty() || rest.starts_with('"'),
        (_, Some(rest)) => {
            let literal = ["true", "false", "null"]
                .iter()
                .any(|w| rest.starts_with(w));
            rest.is_empty()
                || literal
                || rest.starts_with(|c: char| matches!(c, '{' | '[' | '"' | '-' | '0'..='9'))
        }
        _ => false,
    }
}

/// A call's values that may be cut: text of at least [`MIN_CHARS`]
/// characters (a JSON value whole is never a cut one), with their length
/// in characters, as the SDKs count it.
fn texts(c: &ToolCall) -> impl Iterator<Item = (&'static str, &str, usize)> {
    let result = match &c.result {
        Some(CallResult::Value(Value::String(s))) => Some(("result", s.as_str())),
        _ => None,
    };
    let args = match &c.args {
        CallArgs::Value(Value::String(s)) => Some(("arguments", s.as_str())),
        _ => None,
    };
    result
        .into_iter()
        .chain(args)
        .filter(|(_, s)| s.len() >= MIN_CHARS)
        .map(|(what, s)| (what, s, s.chars().count()))
}

/// Warns of each call value in `out` that the trace shows cut.
pub(crate) fn warn(trace: &Trace, out: &mut Analysis) {
    let candidates: Vec<(&ToolCall, &str, &str, usize)> = out
        .calls
        .iter()
        .flat_map(|c| texts(c).map(move |(what, text, chars)| (c, what, text, chars)))
        .collect();
    if candidates.is_empty() {
        return;
    }
    // Gathered once, and only for a trace with a value to check.
    let mut open: Option<Vec<(&str, usize)>> = None;
    let mut found = Vec::new();
    for (c, what, text, chars) in candidates {
        let witness = if open_json(text) {
            Some("it is JSON that stops before its end".to_string())
        } else {
            let open = open.get_or_insert_with(|| open_attrs(trace));
            open.iter().find(|(_, n)| *n == chars).map(|(key, _)| {
                format!("attribute `{key}` of this trace is JSON cut at the same length")
            })
        };
        if let Some(witness) = witness {
            found.push(format!(
                "tool call `{}` (span {}): its {what} is {chars} characters long and {witness}: a writer's attribute length limit (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT) probably cut it; read as recorded",
                c.name, c.span_id
            ));
        }
    }
    out.warnings.extend(found);
}

/// The string attributes of `trace` that are JSON stopping before its end,
/// with their length in characters.
fn open_attrs(trace: &Trace) -> Vec<(&str, usize)> {
    let mut out = Vec::new();
    for s in &trace.spans {
        for (key, v) in s.span.attributes() {
            let Some(text) = v.and_then(|v| v.as_str()) else {
                continue;
            };
            if text.len() >= MIN_CHARS && open_json(text) {
                out.push((key, text.chars().count()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_that_stops_before_its_end_is_open() {
        assert!(open_json(r#"{"a": [1, 2"#));
        assert!(open_json(r#"[{"role": "user", "content": "hel"#));
        assert!(!open_json(r#"{"a": 1}"#));
        assert!(!open_json("[1, 2]\n"));
        assert!(!open_json("plain text that stops mid-senten"));
        // Text in brackets is no JSON; a list of literals or numbers is.
        assert!(!open_json("[ERROR] Error: account is locked"));
        assert!(!open_json("{name} was not found"));
        assert!(open_json("[true, false, nu"));
        assert!(open_json("[-1.5, 2"));
        assert!(!open_json("[nothing to see"));
    }
}
