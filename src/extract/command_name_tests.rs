//! The name of an OpenLLMetry LangChain.js tool span (`execute_tool
//! DynamicStructuredTool`) from its output (docs/conventions.md, "Spans
//! named after a wrapper's method"): the `ToolMessage` the output is, or
//! the last `ToolMessage` of a LangGraph `Command`'s update; never a
//! message an output merely holds. Made-up tools and values.

use serde_json::{json, Value};

use crate::assemble::{Trace, TraceId};
use crate::extract::tests::sp;
use crate::extract::Extractor;

/// A serialized LangChain message, its keys in the order LangChain.js
/// writes them (`lc`, `type`, `id`, `kwargs`; `json!` would sort them).
fn message(class: &str, kwargs: Value) -> String {
    format!(
        r#"{{"lc":1,"type":"constructor","id":["langchain_core","messages","{class}"],"kwargs":{kwargs}}}"#
    )
}

fn tool_message(name: &str, id: &str, content: &str) -> String {
    message(
        "ToolMessage",
        json!({"status": "success", "content": content, "tool_call_id": id, "name": name}),
    )
}

/// The name the one call of a tool span whose output is `output` gets.
fn named(output: &str) -> Option<String> {
    let s = sp(
        1,
        None,
        (0, 10),
        "execute_tool DynamicStructuredTool",
        &[
            ("gen_ai.operation.name", "execute_tool"),
            ("traceloop.span.kind", "task"),
            ("traceloop.entity.name", "DynamicStructuredTool"),
            ("traceloop.entity.input", r#"{"args":["{}"]}"#),
            ("traceloop.entity.output", output),
        ],
    );
    let t = Trace::new(TraceId([1; 16]), vec![s], 0);
    let calls = Extractor::default().analyze(&t).calls;
    calls.first().map(|c| c.name.clone())
}

/// A history: the user's ask, the first tool's ask and answer, the
/// handoff's ask and answer.
fn history() -> String {
    let messages = [
        message("HumanMessage", json!({"content": "a desk in Faro"})),
        message(
            "AIMessage",
            json!({"content": "", "name": "ana", "tool_calls": [
            {"name": "find_desk", "args": {"town": "Faro"}, "type": "tool_call", "id": "k1"}]}),
        ),
        tool_message("find_desk", "k1", "desk 4"),
        message(
            "AIMessage",
            json!({"content": "", "name": "ana", "tool_calls": [
            {"name": "hand_to_ben", "args": {}, "type": "tool_call", "id": "k2"}]}),
        ),
        tool_message("hand_to_ben", "k2", "handed over"),
    ];
    format!("[{}]", messages.join(","))
}

#[test]
fn a_tool_message_output_names_its_call() {
    let out = tool_message("find_desk", "k1", "desk 4");
    assert_eq!(named(&out).as_deref(), Some("find_desk"));
}

#[test]
fn a_command_names_its_call_by_its_last_tool_message() {
    let command = format!(
        r#"{{"lg_name":"Command","update":{{"messages":{}}},"goto":["ben"]}}"#,
        history()
    );
    assert_eq!(named(&command).as_deref(), Some("hand_to_ben"));
}

#[test]
fn an_output_holding_messages_names_no_call_by_them() {
    // Near miss: a graph state holding the same messages, and an object
    // tagged otherwise, are no tool message and no `Command`: the span
    // keeps the wrapper's name.
    for output in [
        format!(r#"{{"messages":{}}}"#, history()),
        format!(
            r#"{{"lg_name":"Send","update":{{"messages":{}}}}}"#,
            history()
        ),
    ] {
        assert_eq!(
            named(&output).as_deref(),
            Some("DynamicStructuredTool"),
            "{output}"
        );
    }
}
