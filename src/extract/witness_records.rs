//! Records of calls in spans that run no tool (docs/conventions.md, "One
//! call, several spans", "Call records in a runtime's messages").
//!
//! A framework's runtime may trace the messages its agents send each other,
//! each message a span of its own trace: autogen-core 0.7.5's
//! `SingleThreadedAgentRuntime` writes the `message` it delivers as JSON,
//! among them the model's request for tools (`{"content": [{"id",
//! "arguments", "name"}], "type": "ToolCallRequestEvent"}`) and the results
//! (`{"content": [{"content", "name", "call_id", "is_error"}], "type":
//! "ToolCallExecutionEvent"}`), while its `execute_tool` spans, in another
//! trace, hold the tool's name and the call id only. A JSON list in any
//! string attribute of a span that records no model messages, in a trace
//! where no call or agent run was read, is a *witness* of those calls when each of its items is a call
//! record, `{"id", "name", "arguments"}` (and `type` at most), the
//! arguments an object or its JSON text, or each a result record,
//! `{"call_id", "content"}` (and `name`, `is_error` at most). The carry
//! gives a tool span's call that has a call id and neither arguments nor a
//! result what the witnesses of its id in the same process say
//! (`carry::witnessed`), whichever trace comes first.
//!
//! A call rebuilt from the conversation of a trace of its own is such a
//! record too when the carry finds it is another record of that tool
//! span's call (same call id and tool, same process, the traces
//! overlapping: `twice`): it is not counted again, and what it knows, the
//! model's arguments and the result its request carried, is what the tool
//! span lacks ([`of_retold`]). Without it both would be dropped with the
//! duplicate. So is another writer's tool span of that call in a trace of
//! its own (LangSmith's beside Google ADK's, content capture off): its
//! arguments, result and failure, under its own call id or its trace's
//! ask's.

use std::collections::HashMap;
use std::sync::Arc;

use memchr::memmem;
use serde_json::{Map, Value};

use super::open::{
    Echo, OpenAsk, Witnessed, TWICE_FORM, WITNESS_ARGS_FORM, WITNESS_ERROR_FORM,
    WITNESS_RESULT_FORM,
};
use super::requested::Asked;
use super::{Analysis, CallArgs, CallResult, CallStatus};
use crate::assemble::{SpanId, Trace, TraceId};

/// How deep in an attribute's JSON a witness list is looked for
/// (autogen's: `message.content`, or a response's `inner_messages[i].content`).
const DEPTH: u8 = 5;

/// The witnesses of the spans of `trace`, a trace in which no call and no
/// agent run was read, that record no model messages (see the module's
/// doc). A record beside calls of its own trace completes none of them (it
/// joins across traces only), and most traces hold calls: those are not
/// searched.
pub(crate) fn of(trace: &Trace, a: &Analysis) -> Vec<Witnessed> {
    let mut out = Vec::new();
    if !a.calls.is_empty() || !a.runs.is_empty() {
        return out;
    }
    for s in &trace.spans {
        // Asked once per span, at its first JSON value: a span holding
        // model messages is no witness (its messages, the largest values,
        // are not searched).
        let mut skip: Option<bool> = None;
        for (_, value) in s.span.attributes() {
            let Some(text) = value.and_then(|v| v.as_str()) else {
                continue;
            };
            if !crate::ingest::projection::holds_json(text) {
                continue;
            }
            if *skip.get_or_insert_with(|| super::conversation::reads_messages(s)) {
                break;
            }
            if !names_calls(text) {
                continue;
            }
            let Ok(v) = serde_json::from_str::<Value>(text) else {
                continue;
            };
            let mut items = Vec::new();
            lists(&v, DEPTH, &mut items);
            out.extend(items.into_iter().map(|mut w| {
                w.trace_id = trace.id;
                w.resource = Some(Arc::clone(&s.resource));
                w
            }));
        }
    }
    out
}

/// The calls of `a` (rebuilt from the conversation, or tool spans' calls)
/// that `carried` says are other records of a call an earlier trace
/// counts under the same call id (`TWICE_FORM`, taken out of `a` after
/// this), as witnesses of that call
/// (see the module's doc): each with its arguments and its result, where
/// it has either. Only those entries are looked at: nothing runs for a
/// trace the carry matched nothing of.
pub(crate) fn of_retold(trace: &Trace, carried: &[OpenAsk], a: &Analysis) -> Vec<Witnessed> {
    let mut out = Vec::new();
    for e in carried.iter().filter(|e| e.form == TWICE_FORM) {
        // A tool span's call without an id of its own is known by its
        // trace's ask of that id (`echo::twice_id`).
        let Some(id) = e.asked.id.as_deref().or_else(|| e.asked.args.as_str()) else {
            continue;
        };
        let found = a.calls.iter().find(|c| {
            c.span_id == e.span_id
                && c.name == e.asked.name
                && match c.from {
                    Some(_) => c.call_id.as_deref() == Some(id),
                    None => c.call_id.as_deref().is_none_or(|own| own == id),
                }
        });
        let Some(c) = found else {
            continue;
        };
        let args = c
            .args
            .parsed()
            .filter(|v| !v.is_null())
            .map(std::borrow::Cow::into_owned);
        let failed = c.status == CallStatus::Error;
        // A failed span's message, where it kept no result.
        let message = || {
            let m = c.error_message.as_ref().filter(|_| failed);
            m.map(|m| Value::String(m.clone()))
        };
        let result = c.result.as_ref().map(CallResult::to_value).or_else(message);
        if args.is_none() && result.is_none() {
            continue;
        }
        // The process is the request span's: the tool span's call must
        // share it (`fills`).
        let Some(span) = trace.spans.iter().find(|s| s.span_id == c.span_id) else {
            continue;
        };
        let mut w = blank(id);
        w.name = Some(c.name.clone());
        w.error = result.is_some() && failed;
        w.args = args;
        w.result = result;
        w.trace_id = trace.id;
        w.resource = Some(Arc::clone(&span.resource));
        w.of_trace = Some(e.trace_id);
        out.push(w);
    }
    out
}

/// Whether `text` may hold a call record or a result record.
fn names_calls(text: &str) -> bool {
    let b = text.as_bytes();
    memmem::find(b, b"\"arguments\"").is_some() || memmem::find(b, b"\"call_id\"").is_some()
}

/// The call records and result records in the lists of `v`
/// (`failed_records`), as deep as witnesses are looked for.
pub(crate) fn in_lists(v: &Value) -> Vec<Witnessed> {
    let mut out = Vec::new();
    lists(v, DEPTH, &mut out);
    out
}

/// The witnesses in the lists of `v`, `depth` levels down at most.
fn lists(v: &Value, depth: u8, out: &mut Vec<Witnessed>) {
    match v {
        Value::Array(list) if !list.is_empty() => {
            let calls: Option<Vec<Witnessed>> = list.iter().map(call_record).collect();
            let results = || list.iter().map(result_record).collect::<Option<Vec<_>>>();
            if let Some(found) = calls.or_else(results) {
                out.extend(found);
            } else if depth > 0 {
                list.iter().for_each(|x| lists(x, depth - 1, out));
            }
        }
        Value::Object(o) if depth > 0 => o.values().for_each(|x| lists(x, depth - 1, out)),
        _ => {}
    }
}

fn text_of<'v>(o: &'v Map<String, Value>, key: &str) -> Option<&'v str> {
    o.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// A witness of call `id` saying nothing yet (its trace and process are
/// set where it was found).
fn blank(id: &str) -> Witnessed {
    Witnessed {
        id: id.to_string(),
        name: None,
        args: None,
        result: None,
        error: false,
        trace_id: TraceId([0; 16]),
        resource: None,
        of_trace: None,
        asked_in: None,
    }
}

/// The calls of `calls` (`a`'s echoes) read from tool spans with a call id
/// and neither arguments nor a result.
pub(crate) fn wanting(a: &Analysis, calls: &[Echo]) -> Vec<Echo> {
    let bare = |e: &&Echo| !e.from_conversation && e.id.is_some() && e.args.is_null();
    if !calls.iter().any(|e| bare(&e)) {
        return Vec::new();
    }
    // Sorted once: a trace may hold thousands of calls.
    let mut resultless: Vec<SpanId> = a
        .calls
        .iter()
        .filter(|c| c.from.is_none() && c.result.is_none())
        .map(|c| c.span_id)
        .collect();
    resultless.sort_unstable();
    calls
        .iter()
        .filter(bare)
        .filter(|e| resultless.binary_search(&e.span_id).is_ok())
        .cloned()
        .collect()
}

/// `{"id", "name", "arguments"}` (and `type`): a call the model asked for.
fn call_record(v: &Value) -> Option<Witnessed> {
    let o = v.as_object()?;
    if !o
        .keys()
        .all(|k| matches!(k.as_str(), "id" | "name" | "arguments" | "type"))
    {
        return None;
    }
    let args = match o.get("arguments")? {
        Value::String(t) => serde_json::from_str::<Value>(t).ok()?,
        other => other.clone(),
    };
    args.is_object().then_some(())?;
    let mut w = blank(text_of(o, "id")?);
    w.name = Some(text_of(o, "name")?.to_string());
    w.args = Some(args);
    Some(w)
}

/// `{"call_id", "content"}` (and `name`, `is_error`): a call's result.
fn result_record(v: &Value) -> Option<Witnessed> {
    let o = v.as_object()?;
    if !o
        .keys()
        .all(|k| matches!(k.as_str(), "call_id" | "content" | "name" | "is_error"))
    {
        return None;
    }
    let result = match o.get("content")? {
        Value::String(t) => super::source::parse_json_or_literal(t),
        other => other.clone(),
    };
    let mut w = blank(text_of(o, "call_id")?);
    w.name = text_of(o, "name").map(str::to_string);
    w.result = Some(result);
    w.error = o.get("is_error").and_then(Value::as_bool) == Some(true);
    Some(w)
}

/// The carried entries filling `call` (a tool span's call with a call id
/// and neither arguments nor result) from `witnesses`: the last of its id,
/// its tool (where the record names one) and its process, for the
/// arguments and for the result.
pub(crate) fn fills<'w>(
    call: &Echo,
    witnesses: impl DoubleEndedIterator<Item = &'w Witnessed> + Clone,
) -> Vec<OpenAsk> {
    let same_process = |w: &Witnessed| super::open::same_process(&w.resource, &call.resource);
    let of_call = |w: &&Witnessed| {
        call.id.as_deref() == Some(w.id.as_str())
            && w.name.as_deref().is_none_or(|n| n == call.name)
            && w.trace_id != call.trace_id
            && w.of_trace.is_none_or(|t| t == call.trace_id)
            && w.asked_in
                .is_none_or(|(_, (a, b))| a <= call.window.1 && call.window.0 <= b)
            && same_process(w)
    };
    let entry = |w: &Witnessed, form: &'static str, v: &Value| OpenAsk {
        asked: Asked {
            id: call.id.clone(),
            name: call.name.clone(),
            args: v.clone(),
        },
        form,
        trace_id: w.trace_id,
        span_id: call.span_id,
        // No call starts after it: the entry dates no call's asking.
        end_time_unix_nano: u64::MAX,
        run: 0,
    };
    let mut out = Vec::new();
    let args = witnesses
        .clone()
        .rev()
        .filter(of_call)
        .find(|w| w.args.is_some());
    if let Some((w, v)) = args.and_then(|w| Some((w, w.args.as_ref()?))) {
        out.push(entry(w, WITNESS_ARGS_FORM, v));
    }
    let result = witnesses.rev().filter(of_call).find(|w| w.result.is_some());
    if let Some((w, v)) = result.and_then(|w| Some((w, w.result.as_ref()?))) {
        let form = if w.error {
            WITNESS_ERROR_FORM
        } else {
            WITNESS_RESULT_FORM
        };
        out.push(entry(w, form, v));
    }
    out
}

/// Gives the calls `carried` fills (from [`fills`]) the arguments and
/// result their witnesses recorded, noting each.
pub(crate) fn fill(carried: &[OpenAsk], a: &mut Analysis) {
    let forms = [WITNESS_ARGS_FORM, WITNESS_RESULT_FORM, WITNESS_ERROR_FORM];
    let mut entries = carried
        .iter()
        .filter(|e| forms.contains(&e.form))
        .peekable();
    if entries.peek().is_none() {
        return;
    }
    // The span calls by span id, found once: a trace may have thousands
    // of entries filled (`OpenAsk::span_call` looks through every call).
    let mut by_span: HashMap<SpanId, Vec<usize>> = HashMap::new();
    for (k, c) in a.calls.iter().enumerate().filter(|(_, c)| c.from.is_none()) {
        by_span.entry(c.span_id).or_default().push(k);
    }
    for e in entries {
        let found = by_span.get(&e.span_id).and_then(|ks| {
            ks.iter()
                .copied()
                .find(|&k| a.calls[k].name == e.asked.name)
        });
        let Some(c) = found.map(|k| &mut a.calls[k]) else {
            continue;
        };
        let what = if e.form == WITNESS_ARGS_FORM {
            if c.args.value().is_some_and(|v| !v.is_null()) {
                continue;
            }
            c.args = CallArgs::Value(e.asked.args.clone());
            "arguments"
        } else {
            if c.result.is_some() {
                continue;
            }
            c.result = Some(CallResult::Value(e.asked.args.clone()));
            if e.form == WITNESS_ERROR_FORM {
                c.status = CallStatus::Error;
            }
            "result"
        };
        a.notes.push(format!(
            "tool call `{}` (span {}) records call id {} and no {what}: taken from a record of that call in trace {} (same process)",
            c.name,
            c.span_id,
            e.asked.id.as_deref().unwrap_or_default(),
            e.trace_id
        ));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn lists_of_call_or_result_records_are_witnesses() {
        let mut out = Vec::new();
        let v = json!({"note": {"items": [{"id": "k1", "name": "book_desk", "arguments": "{\"floor\": 2}"}], "kind": "Asked"}});
        lists(&v, DEPTH, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].args, Some(json!({"floor": 2})));
        let mut out = Vec::new();
        let v = json!([{"content": "{'desk': 4}", "call_id": "k1", "is_error": true}]);
        lists(&v, DEPTH, &mut out);
        assert_eq!(out[0].result, Some(json!({"desk": 4})));
        assert!(out[0].error);
        // Another key, arguments that are no object, or a mixed list: none.
        for no in [
            json!([{"id": "k1", "name": "b", "arguments": "{}", "colour": "red"}]),
            json!([{"id": "k1", "name": "b", "arguments": "[1]"}]),
            json!([{"id": "k1", "name": "b", "arguments": "{}"}, {"call_id": "k1", "content": "x"}]),
            json!([{"call_id": "k1"}]),
        ] {
            let mut out = Vec::new();
            lists(&no, DEPTH, &mut out);
            assert!(out.is_empty(), "{no}");
        }
    }

    /// A made-up runtime's trace of one delivered message (`acme.message`).
    fn message_trace(trace: u8, when: (u64, u64), process: &str, message: Value) -> Trace {
        let s = crate::extract::tests::sp(
            1,
            None,
            when,
            "acme deliver",
            &[("acme.message", &message.to_string())],
        );
        let s = crate::extract::test_support::in_process(s, process);
        Trace::new(TraceId([trace; 16]), vec![s], 0)
    }

    /// A tool span with the tool's name and call id only, under an agent.
    fn tool_trace(trace: u8, process: &str) -> Trace {
        let agent = crate::extract::tests::sp(
            1,
            None,
            (100, 400),
            "invoke_agent desk",
            &[
                ("gen_ai.operation.name", "invoke_agent"),
                ("gen_ai.agent.name", "desk"),
            ],
        );
        let tool = crate::extract::tests::sp(
            2,
            Some(1),
            (200, 300),
            "execute_tool book_desk",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "book_desk"),
                ("gen_ai.tool.call.id", "k1"),
            ],
        );
        let in_p = |s| crate::extract::test_support::in_process(s, process);
        Trace::new(TraceId([trace; 16]), vec![in_p(agent), in_p(tool)], 0)
    }

    fn asked() -> Value {
        json!({"event": {"items": [{"id": "k1", "name": "book_desk", "arguments": "{\"floor\": 2}"}]}})
    }

    fn answered() -> Value {
        json!({"event": {"items": [{"call_id": "k1", "name": "book_desk", "content": "{'desk': 4}"}]}})
    }

    fn the_call(got: &[Analysis]) -> Vec<(Value, Value)> {
        got.iter()
            .flat_map(|a| &a.calls)
            .map(|c| {
                let args = c.args.value().cloned().unwrap_or(Value::Null);
                (
                    args,
                    c.result.as_ref().map_or(Value::Null, CallResult::to_value),
                )
            })
            .collect()
    }

    #[test]
    fn records_in_other_traces_complete_a_call_with_its_id_only() {
        use crate::extract::test_support::read_in_order;
        let want = vec![(json!({"floor": 2}), json!({"desk": 4}))];
        // The tool's trace first (held), or the records first (kept).
        let got = read_in_order(vec![
            tool_trace(1, "p1"),
            message_trace(2, (150, 160), "p1", asked()),
            message_trace(3, (350, 360), "p1", answered()),
        ]);
        assert_eq!(the_call(&got), want);
        assert!(got[0]
            .notes
            .iter()
            .any(|n| n.contains("records call id k1")));
        let got = read_in_order(vec![
            message_trace(2, (150, 160), "p1", asked()),
            message_trace(3, (350, 360), "p1", answered()),
            tool_trace(1, "p1"),
        ]);
        assert_eq!(the_call(&got), want);
        // Records of another process complete nothing.
        let got = read_in_order(vec![
            tool_trace(1, "p1"),
            message_trace(2, (150, 160), "p2", asked()),
            message_trace(3, (350, 360), "p2", answered()),
        ]);
        assert_eq!(the_call(&got), vec![(Value::Null, Value::Null)]);
    }
}
