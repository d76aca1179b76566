//! A tool span whose result is a LangChain `ToolMessage` that says the
//! call failed (docs/conventions.md, "Result wrappers").
//!
//! LangChain's tool node turns a tool's error into a `ToolMessage` with
//! `status` `error` and the error's text as its content (a tool raising
//! `ToolException` with `handle_tool_error`, or a node that catches
//! errors), and the model reads that text as the call's answer. A tracer
//! that records the message as the tool's result leaves the call looking
//! as if it ran: Traceloop's LangChain instrumentation
//! (`gen_ai.tool.call.result` = the serialized message inside its
//! callback record, the span status unset), OpenInference's (`output.value`
//! = the message's `message_to_dict()`, the span status OK). When the
//! rule's result source the call's result came from holds such a message
//! and that result is the content a wrapper took off it (`langchain_message`, `langchain_callback`,
//! `text_envelope`, `tool_message`, `langchain_message_repr`), the call is
//! failed with the content as its error message, as a failed Anthropic
//! `tool_result` is; the result stays. A message with `status` `success`,
//! or none, changes nothing.

use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde_json::{Map, Value};

use super::rules::Source;
use super::source::{parse_json_or_string, raw_string};
use super::wrappers;
use super::{CallResult, CallStatus, ToolCall};
use crate::assemble::SpanRecord;

/// The status a failed `ToolMessage` carries.
const FAILED: &str = "error";

/// How a message's `repr()` starts.
const REPR_START: &str = "content=";

/// How deep a message may sit in the records around it (`{"output":
/// message, "kwargs"}`, a lone key, a typed value).
const MAX_DEPTH: usize = 3;

/// Whether `text` may be a failed message: the cheap test before any
/// parse, which the extractor also makes before reading a result it would
/// otherwise skip (results off), so a call fails alike whatever the output.
pub(crate) fn may_be_failed(text: &str) -> bool {
    // A message is an object, its `repr()` (maybe as a JSON string); most
    // results say nothing of a status or an error.
    let t = text.trim_start();
    if !(t.starts_with('{') || t.starts_with('"') || t.starts_with(REPR_START)) {
        return false;
    }
    // Built once: a finder per call costs more than the search.
    static FINDERS: LazyLock<[Finder<'static>; 2]> =
        LazyLock::new(|| [Finder::new(FAILED.as_bytes()), Finder::new(b"status")]);
    FINDERS.iter().all(|f| f.find(t.as_bytes()).is_some())
}

/// Marks `call`, read from span `s`, failed when `from`, the rule's own
/// result source its result came from, holds a failed `ToolMessage` whose
/// content is that result (see the module's doc).
pub(crate) fn mark(from: Option<&Source>, s: &SpanRecord, call: &mut ToolCall) {
    if call.status != CallStatus::Ok {
        return;
    }
    // A result kept as its JSON text had no wrapper taken off.
    let (Some(src), Some(result @ CallResult::Value(_))) = (from, &call.result) else {
        return;
    };
    let Some(text) = raw_string(&src.field, s) else {
        return;
    };
    if !may_be_failed(text) {
        return;
    }
    let Some(content) = failed_content(&parse_json_or_string(text)) else {
        return;
    };
    // Only where a wrapper took this content off as the call's result.
    if as_result(&content) != result.to_value() {
        return;
    }
    call.status = CallStatus::Error;
    call.error_message = Some(match content {
        Value::String(t) => t,
        other => other.to_string(),
    });
}

/// The value a wrapper gives for a message's content (text JSON-decoded).
fn as_result(content: &Value) -> Value {
    match content {
        Value::String(t) => parse_json_or_string(t),
        other => other.clone(),
    }
}

/// The content of the failed `ToolMessage` `v` is or holds.
fn failed_content(v: &Value) -> Option<Value> {
    if let Value::String(t) = v {
        return repr_failed(t);
    }
    let m = message_in(v, 0)?;
    (m.get("status").and_then(Value::as_str) == Some(FAILED)).then(|| m.get("content").cloned())?
}

/// The fields of a `ToolMessage` (its dump, or the `kwargs` of its
/// serialization) found in `v`: the message itself, the `output` of a
/// callback record (`{"output", "kwargs"}`), the value of a lone key, or
/// the value beside a string `type`.
fn message_in(v: &Value, depth: usize) -> Option<&Map<String, Value>> {
    let o = v.as_object()?;
    // The shapes the wrappers take a message's content off
    // (`wrappers::langchain_message`, `langchain_callback`, `tool_message`):
    // a message is found where a wrapper would have read it.
    let message = if wrappers::serialized_shape(v) {
        o.get("kwargs")
    } else if wrappers::is_tool_message_envelope(v) {
        o.get("data")
    } else {
        wrappers::is_dumped_tool_message(o).then_some(v)
    };
    if let Some(m) = message {
        return m.as_object();
    }
    if depth >= MAX_DEPTH {
        return None;
    }
    let inner = match o.len() {
        1 => o.values().next(),
        2 if o.contains_key("output") && o.contains_key("kwargs") => o.get("output"),
        2 if o.get("type").is_some_and(Value::is_string) => {
            o.iter().find(|(k, _)| k.as_str() != "type").map(|(_, v)| v)
        }
        _ => None,
    };
    message_in(inner?, depth + 1)
}

/// A `ToolMessage`'s `repr()` (`content='...' name='...' tool_call_id='...'
/// status='error'`: the fields `langchain_message_repr` reads) -> its
/// content when its status says it failed.
fn repr_failed(text: &str) -> Option<Value> {
    if !text.trim_start().starts_with(REPR_START) {
        return None;
    }
    let mut fields = super::literal::keyword_fields(text)?;
    // What `wrappers::langchain_message_repr` reads: `content` first.
    let message = wrappers::is_tool_message(&fields);
    let failed = fields
        .iter()
        .any(|(k, v)| k == "status" && v.as_str() == Some(FAILED));
    (message && failed).then(|| fields.swap_remove(0).1)
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::failed_content;
    use crate::assemble::{Trace, TraceId};
    use crate::extract::tests::sp;
    use crate::extract::{CallResult, CallStatus, Extractor, ToolCall};

    fn serialized(content: &str, status: Option<&str>) -> Value {
        let mut kwargs = json!({"content": content, "type": "tool", "name": "hold",
            "tool_call_id": "tc_9"});
        if let Some(st) = status {
            kwargs["status"] = json!(st);
        }
        json!({"lc": 1, "type": "constructor",
            "id": ["langchain", "schema", "messages", "ToolMessage"], "kwargs": kwargs})
    }

    #[test]
    fn a_failed_tool_message_is_found_in_every_record_around_it() {
        let failed = serialized("over the limit", Some("error"));
        let dump = json!({"content": "over the limit", "type": "tool", "tool_call_id": "tc_9",
            "name": "hold", "status": "error", "artifact": null});
        for v in [
            failed.clone(),
            json!({"output": failed.clone(), "kwargs": {"tags": [], "name": "hold"}}),
            json!({"output": failed.clone()}),
            json!("content='over the limit' name='hold' tool_call_id='tc_9' status='error'"),
            json!({"type": "json", "value": failed.clone()}),
            dump.clone(),
            json!({"result": dump.clone()}),
            json!({"type": "tool", "data": dump.clone()}),
        ] {
            assert_eq!(failed_content(&v), Some(json!("over the limit")), "{v}");
        }
    }

    /// An OTel GenAI tool span (`execute_tool hold`) with result
    /// attributes `attrs`.
    fn call(attrs: &[(&str, &str)]) -> ToolCall {
        let mut all = vec![
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "hold"),
            ("gen_ai.tool.call.arguments", "{\"qty\": 12}"),
        ];
        all.extend_from_slice(attrs);
        let s = sp(1, None, (0, 5), "execute_tool hold", &all);
        let a = Extractor::default().analyze(&Trace::new(TraceId([5; 16]), vec![s], 0));
        a.calls.into_iter().next().expect("one call")
    }

    #[test]
    fn a_tool_span_whose_result_is_a_failed_message_is_a_failed_call() {
        let record = |status: &str| {
            json!({"output": serialized("over the limit", Some(status)),
                "kwargs": {"tags": ["seq:step:1"], "name": "hold"}})
            .to_string()
        };
        let failed = call(&[("gen_ai.tool.call.result", &record("error"))]);
        assert_eq!(failed.status, CallStatus::Error);
        assert_eq!(failed.error_message.as_deref(), Some("over the limit"));
        let kept = failed.result.as_ref().map(CallResult::to_value);
        assert_eq!(kept, Some(json!("over the limit")));
        let ran = call(&[("gen_ai.tool.call.result", &record("success"))]);
        assert_eq!((ran.status, ran.error_message), (CallStatus::Ok, None));
        // The failed message under another key than the one the result
        // came from, with another content, says nothing of this result.
        let other = call(&[
            ("gen_ai.tool.call.result", "\"held 10\""),
            ("traceloop.entity.output", &record("error")),
        ]);
        assert_eq!(other.status, CallStatus::Ok);
    }

    #[test]
    fn a_message_that_ran_or_another_record_is_no_failure() {
        for v in [
            serialized("held", Some("success")),
            serialized("held", None),
            // Another class; a dump with a key no ToolMessage has; a
            // status beside a tool's own value; text.
            json!({"lc": 1, "type": "constructor", "id": ["x", "messages", "AIMessage"],
                "kwargs": {"content": "no", "status": "error"}}),
            json!({"content": "no", "type": "tool", "tool_call_id": "a", "status": "error", "seats": 2}),
            json!({"status": "error", "content": "no"}),
            json!({"output": serialized("no", Some("error")), "kwargs": {}, "extra": 1}),
            json!("status: error"),
            json!("content='held' name='hold' tool_call_id='tc_9' status='success'"),
            json!("content='no' tool_call_id='tc_9' status='error' seats=2"),
        ] {
            assert_eq!(failed_content(&v), None, "{v}");
        }
    }

    #[test]
    fn a_message_is_found_in_the_shapes_the_wrappers_read() {
        // A callback record's serialized message without `lc`: the
        // callback's wrapper takes its content off (`serialized_shape`), so
        // its failure is found too; the call is failed.
        let mut bare = serialized("over the limit", Some("error"));
        bare.as_object_mut().map(|o| o.remove("lc"));
        let record = json!({"output": bare, "kwargs": {"name": "hold"}}).to_string();
        let failed = call(&[("gen_ai.tool.call.result", &record)]);
        assert_eq!(failed.status, CallStatus::Error);
        assert_eq!(failed.error_message.as_deref(), Some("over the limit"));
        // A `repr()` whose first field is not `content` is no message's
        // (`wrappers::langchain_message_repr` reads none).
        let v = json!("content_type='x' content='no' tool_call_id='tc_9' status='error'");
        assert_eq!(failed_content(&v), None);
    }
}
