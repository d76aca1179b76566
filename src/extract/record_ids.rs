//! The model's call id a tool span's result record names (docs/conventions.md,
//! "One call id in two traces"): OpenLLMetry-JS writes LangGraph.js tool runs
//! as `execute_tool DynamicStructuredTool` spans with no call id of their own,
//! while their output is the one `ToolMessage` the run returned, whose
//! `tool_call_id` is the id the model asked for the call under. Each LangChain
//! step a trace of its own, the request that carries the result counts the
//! call from the conversation under that id in another trace; the span's call
//! goes by it too (kept beside the call, `Analysis::joined_ids`, as
//! `conversation::ask_ids` keeps an ask's id), so the two are one call
//! (`twice`) whichever trace is read first.
//!
//! Only a record that is exactly one `ToolMessage` (LangChain's serialized
//! form, or Python's `model_dump()`) of the call's own tool counts: a list of
//! messages (a tools node's output) names several calls, and a message of
//! another tool is no record of this call.

use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde_json::Value;

use super::ToolCall;
use crate::assemble::{SpanId, SpanRecord, Trace};

/// The (span, call id) of each call of `calls` read from a span without a
/// call id of its own whose span records one `ToolMessage` of that tool.
pub(crate) fn of_records(trace: &Trace, calls: &[ToolCall]) -> Vec<(SpanId, String)> {
    let bare = |c: &&ToolCall| c.from.is_none() && c.call_id.is_none();
    if !calls.iter().any(|c| bare(&c)) {
        return Vec::new();
    }
    // One index, not a walk per call: a trace may hold thousands of calls.
    let at = trace.positions();
    let mut out = Vec::new();
    for call in calls.iter().filter(bare) {
        let Some(s) = at.get(call.span_id).and_then(|i| trace.spans.get(i)) else {
            continue;
        };
        if super::source::tool_call_id(s).is_some() {
            continue;
        }
        if let Some(id) = message_id(s, &call.name) {
            out.push((call.span_id, id));
        }
    }
    out
}

/// The `tool_call_id` of the one `ToolMessage` of tool `name` among the
/// span's string attributes (JSON text), if exactly one attribute holds one.
fn message_id(s: &SpanRecord, name: &str) -> Option<String> {
    static KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"tool_call_id"));
    let mut found = s.span.attributes().filter_map(|(_, value)| {
        let text = value?.as_str()?.trim();
        // The cheap test first: most attributes are no such record, and a
        // text naming several call ids (a list of messages) is not one.
        if !text.starts_with('{') || KEY.find_iter(text.as_bytes()).take(2).count() != 1 {
            return None;
        }
        let v: Value = serde_json::from_str(text).ok()?;
        tool_message_id(&v, name)
    });
    let id = found.next()?;
    // Two records naming ids: which is this call's is not said.
    found.all(|other| other == id).then_some(id)
}

/// The `tool_call_id` of `v` when it is one `ToolMessage` of tool `name`:
/// LangChain's serialized form (`{"lc": 1, "type": "constructor", "id":
/// [..., "ToolMessage"], "kwargs"}`) or a `model_dump()` (`"type": "tool"`).
fn tool_message_id(v: &Value, name: &str) -> Option<String> {
    let fields = match v.as_object()? {
        o if o.get("lc").and_then(Value::as_u64) == Some(1)
            && super::wrappers::serialized_shape(v) =>
        {
            o.get("kwargs")?.as_object()?
        }
        o if super::wrappers::is_dumped_tool_message(o) => o,
        _ => return None,
    };
    // A message without the tool's name may be any call's: not taken.
    let named = fields.get("name").and_then(Value::as_str) == Some(name);
    let id = fields.get("tool_call_id")?.as_str()?.trim();
    (named && !id.is_empty() && !super::conversation::is_made(id)).then(|| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assemble::TraceId;
    use crate::extract::tests::sp;
    use crate::extract::Extractor;

    /// A made-up vendor's tool span: its kind in its own namespace, the
    /// arguments as input, a serialized message `output` as given.
    fn traced(output: &str) -> crate::extract::Analysis {
        let span = sp(
            1,
            None,
            (0, 10),
            "run_tool StructuredTool",
            &[
                ("acme.span.kind", "tool"),
                ("acme.tool.name", "reserve_desk"),
                ("acme.input", r#"{"floor": 2}"#),
                ("acme.output", output),
            ],
        );
        Extractor::default().analyze(&Trace::new(TraceId([7; 16]), vec![span], 0))
    }

    fn serialized(name: &str, id: &str) -> String {
        serde_json::json!({
            "lc": 1, "type": "constructor",
            "id": ["langchain_core", "messages", "ToolMessage"],
            "kwargs": {"status": "success", "content": "desk 4", "tool_call_id": id, "name": name}
        })
        .to_string()
    }

    #[test]
    fn a_span_recording_its_tool_message_goes_by_the_messages_call_id() {
        let a = traced(&serialized("reserve_desk", "k-31"));
        assert_eq!(a.calls.len(), 1);
        assert_eq!(a.calls[0].name, "reserve_desk");
        let span = a.calls[0].span_id;
        assert!(a.joined_ids.contains(&(span, "k-31".to_string())));
        // Kept beside the call, not as the span's own id.
        assert_eq!(a.calls[0].call_id, None);
        // Python's model_dump() of the message reads the same.
        let dumped = serde_json::json!({"type": "tool", "content": "desk 4",
            "tool_call_id": "k-32", "name": "reserve_desk"});
        let a = traced(&dumped.to_string());
        assert!(a.joined_ids.iter().any(|(_, id)| id == "k-32"));
    }

    #[test]
    fn a_message_of_another_tool_or_a_list_of_messages_names_no_id() {
        // Near misses: another tool's message, a list (a tools node's
        // output), a message without a name, a message-like object of
        // other keys.
        let other = traced(&serialized("rent_bike", "k-41"));
        assert!(other.joined_ids.is_empty());
        let list = format!("[{}]", serialized("reserve_desk", "k-42"));
        assert!(traced(&list).joined_ids.is_empty());
        let nameless =
            serde_json::json!({"type": "tool", "content": "desk 4", "tool_call_id": "k-43"});
        assert!(traced(&nameless.to_string()).joined_ids.is_empty());
        let odd = serde_json::json!({"type": "tool", "content": "desk 4", "tool_call_id": "k-44",
            "name": "reserve_desk", "colour": "red"});
        assert!(traced(&odd.to_string()).joined_ids.is_empty());
    }
}
