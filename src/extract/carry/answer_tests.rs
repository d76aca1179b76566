//! An MCP client's record of a call's answer alone (no arguments, no call
//! id), each a trace of its own, read in input order: joined to the call
//! a later trace counts from the conversation, whose result it gives when
//! the model was sent a flattened copy (`extract::mcp_record_result`).
//! Made-up tools and values in the GenAI message shape.

use serde_json::{json, Value};

use crate::assemble::{Trace, TraceId};
use crate::extract::test_support::{in_process, read_in_order};
use crate::extract::tests::sp;
use crate::extract::Analysis;

fn calls() -> Vec<Value> {
    [("call_n", "Braga"), ("call_s", "Faro")]
        .iter()
        .map(|(id, town)| {
            json!({"id": id, "type": "function", "function": {"name": "seat",
                "arguments": json!({"town": town}).to_string()}})
        })
        .collect()
}

fn chat(trace: u8, when: (u64, u64), input: Option<Value>, output: Value) -> Trace {
    let (input, output) = (input.map(|i| i.to_string()), output.to_string());
    let mut attrs = vec![
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.output.messages", output.as_str()),
    ];
    attrs.extend(input.as_deref().map(|i| ("gen_ai.input.messages", i)));
    let s = in_process(sp(1, None, when, "acme.chat", &attrs), "p");
    Trace::new(TraceId([trace; 16]), vec![s], 0)
}

/// The model's answer asking for both calls.
fn asking() -> Trace {
    chat(
        1,
        (0, 10),
        None,
        json!([{"role": "assistant", "tool_calls": calls()}]),
    )
}

/// The request carrying both results as the loop sent them (text).
fn answering(trace: u8, braga: &str, faro: &str) -> Trace {
    let input = json!([
        {"role": "user", "content": "seats?"},
        {"role": "assistant", "tool_calls": calls()},
        {"role": "tool", "tool_call_id": "call_n", "content": braga},
        {"role": "tool", "tool_call_id": "call_s", "content": faro},
    ]);
    let output = json!([{"role": "assistant", "content": "done"}]);
    chat(trace, (50, 60), Some(input), output)
}

/// An MCP client's `tools/call` span of tool `seat`, a trace of its own,
/// with its answer (content parts) and nothing else of the call.
fn record(trace: u8, when: (u64, u64), answer: &Value, process: &str) -> Trace {
    let answer = answer.to_string();
    let attrs = [
        ("mcp.operation.name", "tools_call"),
        ("mcp.tool.name", "seat"),
        ("mcp.tool.result", answer.as_str()),
    ];
    let s = in_process(sp(1, None, when, "mcp tools/call", &attrs), process);
    Trace::new(TraceId([trace; 16]), vec![s], 0)
}

fn faro_parts() -> Value {
    json!([{"type": "text", "text": "seat 7"},
        {"type": "image", "data": "QUJD", "mimeType": "image/png"}])
}

fn braga_parts() -> Value {
    json!([{"type": "text", "text": "seat 3"}])
}

fn counts(got: &[Analysis]) -> Vec<usize> {
    got.iter().map(|a| a.calls.len()).collect()
}

fn results(a: &Analysis) -> Vec<Value> {
    let r = |c: &crate::extract::ToolCall| c.result.as_ref().map(|r| r.to_value());
    a.calls.iter().filter_map(r).collect()
}

#[test]
fn an_answer_record_is_the_call_the_conversation_counts_and_gives_its_whole_answer() {
    // The Faro record first: the answers, not the order, say which call each is.
    let got = read_in_order(vec![
        asking(),
        record(2, (20, 30), &faro_parts(), "p"),
        record(3, (21, 40), &braga_parts(), "p"),
        answering(4, "seat 3", "seat 7\n[image]"),
    ]);
    assert_eq!(counts(&got), [0, 0, 0, 2]);
    assert_eq!(results(&got[3]), [json!("seat 3"), faro_parts()]);
    assert!(
        got[3]
            .notes
            .iter()
            .any(|n| n.contains("MCP client's record")),
        "{:?}",
        got[3].notes
    );
}

#[test]
fn an_answer_record_no_call_shows_or_of_another_process_gives_nothing() {
    // Another answer: the record still ran the call (same tool, between
    // the asking and the request), but gives no result.
    let other = json!([{"type": "text", "text": "seat 9"}, {"type": "image", "data": "QUJD"}]);
    let got = read_in_order(vec![
        asking(),
        record(2, (20, 30), &other, "p"),
        answering(4, "seat 3", "seat 7\n[image]"),
    ]);
    assert_eq!(counts(&got), [0, 0, 2]);
    assert_eq!(
        results(&got[2]),
        [json!("seat 3"), json!("seat 7\n[image]")]
    );
    // Another process: a call of its own, and the copy stays.
    let got = read_in_order(vec![
        asking(),
        record(2, (20, 30), &faro_parts(), "q"),
        answering(4, "seat 3", "seat 7\n[image]"),
    ]);
    assert_eq!(counts(&got), [0, 1, 2]);
    assert_eq!(
        results(&got[2]),
        [json!("seat 3"), json!("seat 7\n[image]")]
    );
}
