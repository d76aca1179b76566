//! A model's call retold after its tool ran (`conversation::answered_history`):
//! each LangGraph.js step a trace of its own (OpenLLMetry's LangChain.js),
//! the tool span naming no call id, and a later step's output writing the
//! whole history again, the tool's message with it (a graph resumed after
//! an interrupt), before the next model request, whose results carry no
//! ids. The retold call is no open ask: the request's result is the tool
//! span's call, counted once. Made-up tools and values.

use serde_json::{json, Value};

use crate::assemble::{Trace, TraceId};
use crate::extract::test_support::{in_process, read_in_order};
use crate::extract::tests::sp;

fn lc(class: &str, kwargs: Value) -> Value {
    json!({"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", class], "kwargs": kwargs})
}

fn human() -> Value {
    lc(
        "HumanMessage",
        json!({"content": "how many pens are left?", "id": "h-1"}),
    )
}

fn asking(id: &str) -> Value {
    let call = json!({"id": id, "type": "function",
        "function": {"name": "count_pens", "arguments": "{\"shelf\":\"B2\"}"}});
    lc(
        "AIMessage",
        json!({"id": "m-1", "content": "",
        "additional_kwargs": {"tool_calls": [call]}, "type": "ai",
        "tool_calls": [{"name": "count_pens", "args": {"shelf": "B2"}, "id": id, "type": "tool_call"}]}),
    )
}

fn answer(id: &str) -> Value {
    lc(
        "ToolMessage",
        json!({"status": "success", "content": "{\"pens\":14}",
        "tool_call_id": id, "name": "count_pens"}),
    )
}

fn trace(n: u8, when: (u64, u64), name: &str, attrs: &[(&str, &str)], process: &str) -> Trace {
    let s = in_process(sp(n, None, when, name, attrs), process);
    Trace::new(TraceId([n; 16]), vec![s], 0)
}

/// A graph step recording its input and output (`workflow <name>`).
fn step(n: u8, when: (u64, u64), output: &Value) -> Trace {
    let output = output.to_string();
    let attrs = [
        ("traceloop.span.kind", "workflow"),
        ("traceloop.workflow.name", "RunnableSequence"),
        ("traceloop.entity.input", "{}"),
        ("traceloop.entity.output", output.as_str()),
    ];
    trace(n, when, "workflow RunnableSequence", &attrs, "p")
}

/// The steps: the model asks for `asked`, the tool runs, a step's output
/// retells the history (the ask and a tool message answering `answered`),
/// and the next model request carries the result without an id. The
/// number of calls counted over all traces.
fn counted(asked: &str, answered: &str) -> usize {
    let output = answer(asked).to_string();
    let tool = [
        ("gen_ai.operation.name", "execute_tool"),
        ("traceloop.span.kind", "task"),
        ("traceloop.entity.name", "DynamicStructuredTool"),
        (
            "traceloop.entity.input",
            r#"{"args":["{\"shelf\":\"B2\"}"]}"#,
        ),
        ("traceloop.entity.output", output.as_str()),
    ];
    let request = json!([
        {"role": "user", "parts": [{"type": "text", "content": "how many pens are left?"}]},
        {"role": "assistant", "parts": [{"type": "text", "content": ""}]},
        {"role": "tool", "parts": [{"type": "text", "content": "{\"pens\":14}"}]},
    ])
    .to_string();
    let reply = json!([{"role": "assistant", "parts": [{"type": "text", "content": "14 pens."}]}])
        .to_string();
    let chat = [
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.input.messages", request.as_str()),
        ("gen_ai.output.messages", reply.as_str()),
    ];
    let history = json!({"output": [human(), asking(asked), answer(answered)]});
    let traces = vec![
        step(1, (100, 110), &json!({"messages": [asking(asked)]})),
        trace(
            2,
            (120, 125),
            "execute_tool DynamicStructuredTool",
            &tool,
            "p",
        ),
        step(3, (130, 132), &history),
        trace(4, (140, 150), "chat gpt-4o-mini", &chat, "p"),
    ];
    read_in_order(traces).iter().map(|a| a.calls.len()).sum()
}

#[test]
fn a_call_retold_with_its_answer_is_counted_once() {
    assert_eq!(counted("k-1", "k-1"), 1);
}

#[test]
fn a_retold_call_of_an_id_already_asked_is_that_ask() {
    // The output's tool message answers another call, so the history does
    // not answer the retold ask; but the first step's output asked for the
    // same id, and one ask copied into two chain outputs is one ask
    // (`carry::copies`), whose call the tool span ran: counted once.
    assert_eq!(counted("k-1", "k-9"), 1);
}
