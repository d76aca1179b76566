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

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::{AskedAt, Request};
use crate::assemble::Trace;
use crate::extract::{CallResult, ToolCall};

/// The one field's value of a result that is an object of one field, when
/// that value is no object (a wrapper is put around what is no object).
fn one_field(r: &CallResult) -> Option<Value> {
    let inner = match r {
        // Most results are no such object: read no further than a second
        // key.
        CallResult::Json(t) if t.trim_start().starts_with('{') => {
            serde_json::from_str::<OneField>(t).ok()?.0
        }
        CallResult::Value(Value::Object(o)) if o.len() == 1 => o.values().next().cloned(),
        _ => None,
    }?;
    (!inner.is_object()).then_some(inner)
}

/// An object's one field's value (an error at a second key).
struct OneField(Option<Value>);

impl<'de> de::Deserialize<'de> for OneField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OneField;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of one field")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OneField, A::Error> {
                if map.next_key::<IgnoredAny>()?.is_none() {
                    return Ok(OneField(None));
                }
                let v: Value = map.next_value()?;
                if map.next_key::<IgnoredAny>()?.is_some() {
                    return Err(de::Error::custom("more than one field"));
                }
                Ok(OneField(Some(v)))
            }
        }
        d.deserialize_map(V)
    }
}

/// Gives the calls joined by call id (`joined`: the ask of each call) whose
/// recorded result wraps the one the next request (the first with input
/// after the asking span started) carries that bare value (see the
/// module's doc), noting each.
pub(super) fn unwrap_agreeing(
    trace: &Trace,
    asked: &[AskedAt],
    joined: &[Option<usize>],
    calls: &mut [ToolCall],
    notes: &mut Vec<String>,
) {
    let start = |i: usize| trace.spans[i].span.start_time_unix_nano;
    // Each span's request, read when first needed; the spans by start.
    let mut requests: Vec<Option<Request>> = Vec::new();
    let mut by_start: Vec<usize> = Vec::new();
    for (c, j) in calls.iter_mut().zip(joined) {
        let Some(at) = j.and_then(|k| asked.get(k)) else {
            continue;
        };
        let Some(inner) = c.result.as_ref().and_then(one_field) else {
            continue;
        };
        let id = at.asked.id.as_deref();
        if by_start.is_empty() {
            by_start = (0..trace.spans.len()).collect();
            by_start.sort_by_key(|&i| (start(i), i));
            requests.resize_with(trace.spans.len(), || None);
        }
        // The first later request: it carries the result (a later one
        // repeats it in its history) or none does.
        let next = by_start
            .iter()
            .copied()
            .filter(|&i| i != at.span && start(i) >= start(at.span))
            .find(|&i| super::has_any_input(&trace.spans[i]));
        let found = next.and_then(|i| {
            let r = requests[i].get_or_insert_with(|| super::request_of(&trace.spans[i]));
            // An ask without an id (Ollama's native chat) is answered by
            // a result without a recorded one (`idless` pairs them by
            // order and names them): the one of its tool carrying the
            // bare value.
            let idless = |a: &super::Answer| a.id.as_deref().is_none_or(super::is_made);
            let is = |a: &super::Answer| {
                (a.id.as_deref() == id || (id.is_none() && idless(a)))
                    && a.name.as_deref().is_none_or(|n| n == at.asked.name)
                    && (id.is_some() || a.content.as_ref().is_some_and(|v| agrees(v, &inner)))
            };
            r.answers.iter().position(is).map(|k| (i, k))
        });
        let carried = found.and_then(|(i, k)| {
            let r = requests.get(i)?.as_ref()?;
            r.answers.get(k)?.content.as_ref()
        });
        let Some(bare) = carried.filter(|v| agrees(v, &inner)).map(bare_value) else {
            continue;
        };
        let by = id.map_or_else(|| "no call id".to_string(), |id| format!("call id {id}"));
        notes.push(format!(
            "tool span {} recorded the result of `{}` ({by}) wrapped in an object of one field; the next model request carries its bare value, which is the result",
            c.span_id, c.name
        ));
        c.result = Some(CallResult::Value(bare));
    }
}

/// A carried result's value: text is read as JSON where it is JSON.
fn bare_value(carried: &Value) -> Value {
    match carried {
        Value::String(t) => crate::extract::source::parse_json_or_literal(t),
        other => other.clone(),
    }
}

/// Whether a carried result is the bare value a one-field wrapper holds.
fn agrees(carried: &Value, inner: &Value) -> bool {
    crate::value::json_eq(&bare_value(carried), inner)
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

    /// As [`trace`], but the model's calls have no ids (as a chat API
    /// without call ids writes them): two asks, two answers by order.
    fn idless(recorded: &Value, carried: &str) -> Option<Value> {
        let parts = json!([
            {"type": "tool_call", "name": "lookup", "arguments": {"q": "tide"}},
            {"type": "tool_call", "name": "moon", "arguments": {}},
        ]);
        let asks = json!([{"role": "assistant", "parts": parts}]).to_string();
        let answer = |r: &str| json!({"role": "tool", "parts": [{"type": "tool_call_response", "response": r}]});
        let request = json!([
            {"role": "user", "parts": [{"type": "text", "content": "tide?"}]},
            {"role": "assistant", "parts": parts},
            answer(carried),
            answer("full"),
        ])
        .to_string();
        let recorded = recorded.to_string();
        let tool = |id, at, name, args, result: &str| {
            let attrs = [
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", name),
                ("gen_ai.tool.call.arguments", args),
                ("gen_ai.tool.call.result", result),
            ];
            sp(id, Some(1), at, &format!("execute_tool {name}"), &attrs)
        };
        let chat = |id, at, key, v: &str| {
            let ops = [("gen_ai.operation.name", "chat"), (key, v)];
            sp(id, Some(1), at, "acme.chat", &ops)
        };
        let spans = vec![
            sp(1, None, (0, 100), "acme.run", &[]),
            chat(2, (10, 20), "gen_ai.output.messages", &asks),
            tool(3, (30, 40), "lookup", "{\"q\": \"tide\"}", &recorded),
            tool(4, (41, 45), "moon", "{}", "full"),
            chat(5, (50, 60), "gen_ai.input.messages", &request),
        ];
        let a = Extractor::default().analyze(&Trace::new(TraceId([8; 16]), spans, 0));
        assert_eq!(a.calls.len(), 2, "{:?}", a.calls);
        let c = a.calls.iter().find(|c| c.name == "lookup")?;
        c.result.as_ref().map(crate::extract::CallResult::to_value)
    }

    #[test]
    fn a_one_field_wrapper_comes_off_where_the_calls_have_no_ids() {
        assert_eq!(
            idless(&json!({"value": "high"}), "high"),
            Some(json!("high"))
        );
        // The other call's value, or another value: as recorded.
        for carried in ["low", "full"] {
            assert_eq!(
                idless(&json!({"value": "high"}), carried),
                Some(json!({"value": "high"})),
                "{carried}"
            );
        }
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
