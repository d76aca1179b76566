//! An MCP client's record of a call's answer alone, in a trace of its own
//! (docs/conventions.md, "One call, several spans", "An MCP record of the
//! answer alone").
//!
//! An MCP client instrumentation that is not given the caller's span as
//! context writes each `tools/call` as a trace of its own; OpenLIT's JS
//! client span holds the tool's name and its whole answer (the content
//! parts, `mcp.tool.result`) and neither the arguments nor a call id. The
//! caller's trace counts the call from the conversation, with the result
//! the loop sent the model: for a Chat Completions tool message, text, so a
//! multi-part answer arrives flattened (`text\n[image]\n[resource uri]`).
//!
//! Such a record (a lone MCP trace's call with a result and nothing else:
//! [`answers_only`]) is held as a hollow record is (`super::hollow_record`)
//! and joins the first call of the same tool, in the same process, that a
//! later trace counts from the conversation, the record having run after
//! the model asked and ended before the request carrying the result
//! (`hollow_record::ran_for`): it is not counted again. Its answer then
//! replaces the model-side copy of a call of that tool in that trace whose
//! result is the same answer ([`same_answer`]: equal, or the text parts the
//! record holds, as the loop flattened them), when the copy differs: the
//! tool's own record wins. Where one tool ran twice at once, the answers
//! say which call each record is; a record whose answer no call shows gives
//! none.

use serde_json::Value;

use super::open::{Echo, OpenAsk, MCP_RESULT_FORM};
use super::requested::Asked;
use super::{Analysis, CallArgs, CallResult, CallStatus, ToolCall};

/// Whether `c` is a record of a call's result alone: from a span, with a
/// result, no arguments, no call id and no error.
pub(crate) fn answers_only(c: &ToolCall) -> bool {
    c.from.is_none()
        && matches!(&c.args, CallArgs::None | CallArgs::Value(Value::Null))
        && c.result.is_some()
        && c.status == CallStatus::Ok
        && c.call_id.is_none()
}

/// The carried entry giving `counted`'s trace the answer `record` holds,
/// when `record` is a record of an answer alone.
pub(crate) fn entry(record: &Echo, counted: &Echo) -> Option<OpenAsk> {
    let answer = record.result.clone()?;
    Some(OpenAsk {
        asked: Asked {
            id: None,
            name: record.name.clone(),
            args: answer,
        },
        form: MCP_RESULT_FORM,
        // The record's trace, for the note.
        trace_id: record.trace_id,
        span_id: counted.span_id,
        // No call starts after it: the entry dates no call's asking.
        end_time_unix_nano: u64::MAX,
        run: 0,
    })
}

/// Gives the calls rebuilt from the conversation that `carried`'s answers
/// are records of (see the module's doc) those answers, noting each.
pub(crate) fn fill(carried: &[OpenAsk], a: &mut Analysis) {
    let mut given: Vec<usize> = Vec::new();
    for e in carried.iter().filter(|e| e.form == MCP_RESULT_FORM) {
        let record = &e.asked.args;
        let found = (0..a.calls.len()).find(|&k| {
            let c = &a.calls[k];
            c.from.is_some()
                && c.span_id == e.span_id
                && c.name == e.asked.name
                && !given.contains(&k)
                && c.result
                    .as_ref()
                    .is_some_and(|r| same_answer(&r.to_value(), record))
        });
        let Some(k) = found else {
            continue;
        };
        given.push(k);
        let c = &mut a.calls[k];
        if c.result.as_ref().is_some_and(|r| r.to_value() == *record) {
            continue;
        }
        c.result = Some(CallResult::Value(record.clone()));
        a.notes.push(format!(
            "tool call `{}` (span {}) takes its result from the MCP client's record of the call in trace {} (the whole answer; the conversation holds the copy the model was sent)",
            c.name, c.span_id, e.trace_id
        ));
    }
}

/// Whether `model`, the result the model was sent, is `record`, an MCP
/// answer: equal; or, for an answer of content parts, the text of its
/// text parts (one per line, other parts after them as the loop names
/// them), or its one text part's JSON.
pub(crate) fn same_answer(model: &Value, record: &Value) -> bool {
    if model == record {
        return true;
    }
    let texts = text_parts(record);
    let Some(first) = texts.first() else {
        return false;
    };
    match model {
        Value::String(m) => {
            *m == texts.join("\n") || m.strip_prefix(first).is_some_and(|r| r.starts_with('\n'))
        }
        other => {
            texts.len() == 1 && serde_json::from_str::<Value>(first).ok().as_ref() == Some(other)
        }
    }
}

/// The texts of an MCP answer's `text` parts, when it is a list of content
/// parts (each an object with a `type`); none otherwise.
fn text_parts(v: &Value) -> Vec<&str> {
    let Some(parts) = v.as_array() else {
        return Vec::new();
    };
    let typed = |p: &Value| p.get("type").is_some_and(Value::is_string);
    if !parts.iter().all(typed) {
        return Vec::new();
    }
    parts
        .iter()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::same_answer;

    fn parts() -> serde_json::Value {
        json!([
            {"type": "text", "text": "[{\"seat\":3}]"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "acme://seat/3", "text": "Seat 3"}}
        ])
    }

    #[test]
    fn a_flattened_copy_is_the_same_answer() {
        let flat = json!("[{\"seat\":3}]\n[image]\n[resource acme://seat/3]");
        assert!(same_answer(&flat, &parts()));
        assert!(same_answer(&json!("[{\"seat\":3}]"), &parts()));
    }

    #[test]
    fn another_answer_is_not() {
        assert!(!same_answer(&json!("[{\"seat\":4}]\n[image]"), &parts()));
        assert!(!same_answer(&json!("[{\"seat\":3}]x"), &parts()));
        // A plain list is no list of content parts.
        assert!(!same_answer(&json!("a"), &json!([{"text": "a"}])));
    }

    #[test]
    fn one_text_part_matches_its_json() {
        let one = json!([{"type": "text", "text": "{\"seat\":3}"}]);
        assert!(same_answer(&json!({"seat": 3}), &one));
        assert!(!same_answer(&json!({"seat": 4}), &one));
    }
}
