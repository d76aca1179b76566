//! A tool span's result that wraps the one the model was handed
//! (docs/conventions.md, "The conversation witness").
//!
//! An instrumentation may record a return value that is no JSON object as
//! an object of one field (Microsoft Agent 365's `recordResponse` writes
//! the string `rented` as `{"result": "rented"}`), while the next model
//! request carries the bare value under the call's id. When a span's call,
//! joined to the model's request for it by call id, recorded an object of
//! one field whose value equals the result the next request carries for
//! that id, the two records agree (as arguments written as a bare field
//! do, `merge::same_args`) and the bare value is the call's result.

use serde_json::Value;

use super::{AskedAt, Request};
use crate::assemble::Trace;
use crate::extract::{CallResult, ToolCall};

/// The one field's value of a result that is an object of one field.
fn one_field(r: &CallResult) -> Option<Value> {
    let whole = match r {
        // Most results are no such object: look before parsing.
        CallResult::Json(t) if t.trim_start().starts_with('{') => r.to_value(),
        CallResult::Value(v @ Value::Object(_)) => v.clone(),
        _ => return None,
    };
    match whole {
        Value::Object(o) if o.len() == 1 => o.into_iter().next().map(|(_, v)| v),
        _ => None,
    }
}

/// Gives the calls joined by call id (`joined`: the ask of each call) whose
/// recorded result wraps the one the next request carries that bare value
/// (see the module's doc), noting each.
pub(super) fn unwrap_agreeing(
    trace: &Trace,
    asked: &[AskedAt],
    joined: &[Option<usize>],
    calls: &mut [ToolCall],
    notes: &mut Vec<String>,
) {
    let mut requests: Option<Vec<Request>> = None;
    let start = |i: usize| trace.spans[i].span.start_time_unix_nano;
    for (c, j) in calls.iter_mut().zip(joined) {
        let Some(at) = j.and_then(|k| asked.get(k)) else {
            continue;
        };
        let (Some(id), Some(inner)) = (
            at.asked.id.as_deref(),
            c.result.as_ref().and_then(one_field),
        ) else {
            continue;
        };
        let requests =
            requests.get_or_insert_with(|| trace.spans.iter().map(super::request_of).collect());
        // The first later request carrying a result under this id.
        let carried = requests
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != at.span && start(i) >= start(at.span))
            .flat_map(|(i, r)| r.answers.iter().map(move |a| (i, a)))
            .filter(|(_, a)| a.id.as_deref() == Some(id))
            .filter(|(_, a)| a.name.as_deref().is_none_or(|n| n == at.asked.name))
            .min_by_key(|&(i, _)| (start(i), i))
            .and_then(|(_, a)| a.content.as_ref());
        let bare = match carried {
            Some(Value::String(t)) => crate::extract::source::parse_json_or_literal(t),
            Some(other) => other.clone(),
            None => continue,
        };
        if bare.is_object() || !crate::value::json_eq(&bare, &inner) {
            continue;
        }
        notes.push(format!(
            "tool span {} recorded the result of `{}` (call id {id}) wrapped in an object of one field; the next model request carries its bare value, which is the result",
            c.span_id, c.name
        ));
        c.result = Some(CallResult::Value(bare));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{Trace, TraceId};
    use crate::extract::tests::sp;
    use crate::extract::Extractor;

    /// One trace of a made-up vendor: a model call asking for `lookup`
    /// (call `call_q1`), the tool's span recording `recorded`, and the
    /// next model call's request carrying `carried` under that id.
    fn trace(recorded: &Value, carried: &str) -> Trace {
        let asks =
            json!([{"role": "assistant", "tool_calls": [{"id": "call_q1", "type": "function",
            "function": {"name": "lookup", "arguments": "{\"q\": \"tide\"}"}}]}])
            .to_string();
        let request = json!([
            {"role": "user", "content": "tide?"},
            {"role": "assistant", "tool_calls": [{"id": "call_q1", "type": "function",
                "function": {"name": "lookup", "arguments": "{\"q\": \"tide\"}"}}]},
            {"role": "tool", "tool_call_id": "call_q1", "content": carried},
        ])
        .to_string();
        let recorded = recorded.to_string();
        let spans = vec![
            sp(1, None, (0, 100), "acme.run", &[]),
            sp(
                2,
                Some(1),
                (10, 20),
                "acme.chat",
                &[
                    ("gen_ai.operation.name", "chat"),
                    ("gen_ai.output.messages", &asks),
                ],
            ),
            sp(
                3,
                Some(1),
                (30, 40),
                "execute_tool lookup",
                &[
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", "lookup"),
                    ("gen_ai.tool.call.id", "call_q1"),
                    ("gen_ai.tool.call.arguments", "{\"q\": \"tide\"}"),
                    ("gen_ai.tool.call.result", &recorded),
                ],
            ),
            sp(
                4,
                Some(1),
                (50, 60),
                "acme.chat",
                &[
                    ("gen_ai.operation.name", "chat"),
                    ("gen_ai.input.messages", &request),
                ],
            ),
        ];
        Trace::new(TraceId([7; 16]), spans, 0)
    }

    fn result(recorded: Value, carried: &str) -> Option<Value> {
        let a = Extractor::default().analyze(&trace(&recorded, carried));
        assert_eq!(a.calls.len(), 1, "{:?}", a.calls);
        a.calls[0]
            .result
            .as_ref()
            .map(crate::extract::CallResult::to_value)
    }

    #[test]
    fn a_one_field_wrapper_of_the_carried_result_comes_off() {
        assert_eq!(
            result(json!({"value": "high"}), "high"),
            Some(json!("high"))
        );
        assert_eq!(result(json!({"n": 4}), "4"), Some(json!(4)));
        // Other values, more fields, or an object carried: as recorded.
        assert_eq!(
            result(json!({"value": "high"}), "low"),
            Some(json!({"value": "high"}))
        );
        assert_eq!(
            result(json!({"value": "high", "at": 6}), "high"),
            Some(json!({"value": "high", "at": 6}))
        );
        assert_eq!(
            result(json!({"value": {"h": 1}}), "{\"h\": 1}"),
            Some(json!({"value": {"h": 1}}))
        );
    }
}
