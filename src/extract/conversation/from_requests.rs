//! What the requests to the model tell about calls that tool spans show
//! without a result: the result the next request carries for a call id, and
//! a tool message's result held in text parts only.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::{call_id, has_any_input, request_of, Answer, Request};
use crate::assemble::{SpanId, Trace};
use crate::extract::{Analysis, CallResult, CallStatus, ToolCall};

/// A tool span's call that has a call id and no result takes the result
/// the next request to the model carries for that id (AutoGen's
/// `execute_tool` spans record no result): the first request that starts
/// after the call does, read only when such a call exists. A failed call
/// takes none.
pub(super) fn results_from_requests(trace: &Trace, out: &mut Analysis) {
    // A failed call has no result: what the request carries for it is the
    // error told to the model.
    let without =
        |c: &ToolCall| c.result.is_none() && c.status == CallStatus::Ok && c.from.is_none();
    // Most calls have a result: no index built for them.
    if !out.calls.iter().any(without) {
        return;
    }
    let index: HashMap<SpanId, usize> = trace
        .spans
        .iter()
        .enumerate()
        .map(|(i, s)| (s.span_id, i))
        .collect();
    let span_of = |c: &ToolCall| index.get(&c.span_id).map(|&i| &trace.spans[i]);
    let wanting = |c: &ToolCall| without(c) && span_of(c).and_then(call_id).is_some();
    if !out.calls.iter().any(wanting) {
        return;
    }
    let requests: Vec<(usize, Request)> = trace
        .spans
        .iter()
        .enumerate()
        .filter(|(_, s)| has_any_input(s))
        .map(|(i, s)| (i, request_of(s)))
        .collect();
    for call in out.calls.iter_mut() {
        if !wanting(call) {
            continue;
        }
        let Some(id) = span_of(call).and_then(call_id) else {
            continue;
        };
        let answer = requests.iter().find_map(|(i, r)| {
            let later = trace.spans[*i].span.start_time_unix_nano >= call.start_time_unix_nano;
            let named = |a: &&Answer| a.name.as_deref().is_none_or(|n| n == call.name);
            r.answers
                .iter()
                .filter(|a| a.id.as_deref() == Some(id))
                .find(named)
                .filter(|_| later)
                .and_then(|a| a.content.as_ref().map(|c| (*i, c)))
        });
        let Some((i, content)) = answer else {
            continue;
        };
        call.result = Some(CallResult::Value(match content {
            Value::String(t) => crate::extract::source::parse_json_or_literal(t),
            other => other.clone(),
        }));
        out.notes.push(format!(
            "tool span {} records no result for `{}` (call id {id}): its result is read from the request of span {}",
            call.span_id, call.name, trace.spans[i].span_id
        ));
    }
}

/// The text of a tool message whose result sits in text parts only
/// (`{"role": "tool", "parts": [{"type": "text", "content": ...}],
/// "tool_call_id": ...}`: LiteLLM's GenAI messages), the parts joined.
pub(super) fn text_parts(o: &Map<String, Value>) -> Option<Value> {
    let parts = o.get("parts")?.as_array()?;
    let texts = parts
        .iter()
        .map(|p| {
            let text = p.get("type")?.as_str()? == "text";
            text.then(|| p.get("content").or_else(|| p.get("text")))??
                .as_str()
        })
        .collect::<Option<Vec<&str>>>()?;
    (!texts.is_empty()).then(|| Value::String(texts.concat()))
}
