//! An MCP call recorded as a chain of nested client spans, each chain a
//! trace of its own, beside model calls that are each a trace of their own
//! (acceldata-aio-tracer's shape): one call per chain, and that call the
//! one the conversation counts, even when the chain's trace comes before
//! the model call asking for it (`carry::lone_asked`). Made-up tools and
//! values in the GenAI message shape.

use serde_json::{json, Value};

use crate::assemble::{Trace, TraceId};
use crate::extract::test_support::{in_process, read_in_order};
use crate::extract::tests::sp;
use crate::extract::{Analysis, CallResult};

/// What the tracer records for the coroutine before it is awaited.
const STAND_IN: &str = r#"{"type": "mcp_coroutine", "function": "call_tool", "awaitable": true}"#;

fn ask(id: &str, tool: &str, args: &Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": tool,
        "arguments": args.to_string()}})
}

/// A model call, a trace of its own: `input` the history sent, `asks` the
/// calls its answer asks for.
fn chat(trace: u8, when: (u64, u64), input: &[Value], asks: Vec<Value>) -> Trace {
    let mut history = vec![json!({"role": "user", "content": "plan the trip"})];
    history.extend(input.iter().cloned());
    let output = if asks.is_empty() {
        json!([{"role": "assistant", "content": "done"}])
    } else {
        json!([{"role": "assistant", "tool_calls": asks}])
    };
    let (input, output) = (Value::Array(history).to_string(), output.to_string());
    let attrs = [
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.input.messages", input.as_str()),
        ("gen_ai.output.messages", output.as_str()),
    ];
    let s = in_process(sp(1, None, when, "acme.chat", &attrs), "p");
    Trace::new(TraceId([trace; 16]), vec![s], 0)
}

/// One MCP call as a chain, a trace of its own: the server framework's
/// root naming the tool only, the client span with the arguments and the
/// answer, and inside it the client span around the unawaited coroutine.
fn chain(trace: u8, when: (u64, u64), tool: &str, args: &Value, process: &str) -> Trace {
    let args = args.to_string();
    let answer = json!({"content": ["type='text' text='ok'"],
        "structured_content": {"seats": 2}, "is_error": false})
    .to_string();
    let root = [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", tool),
    ];
    let client = |payload| {
        [
            ("mcp.operation.name", "tools_call"),
            ("mcp.tool.name", tool),
            ("mcp.tool.arguments", args.as_str()),
            ("mcp.response.payload", payload),
        ]
    };
    let outer = client(answer.as_str());
    let inner = client(STAND_IN);
    let (from, to) = when;
    let spans = vec![
        in_process(
            sp(1, None, (from, to), &format!("tools/call {tool}"), &root),
            process,
        ),
        in_process(
            sp(2, Some(1), (from + 1, to - 1), "mcp tools/call", &outer),
            process,
        ),
        in_process(
            sp(3, Some(2), (from + 1, from + 2), "mcp tools/call", &inner),
            process,
        ),
    ];
    Trace::new(TraceId([trace; 16]), spans, 0)
}

fn counts(got: &[Analysis]) -> Vec<usize> {
    got.iter().map(|a| a.calls.len()).collect()
}

#[test]
fn a_chain_of_nested_client_spans_is_one_call_without_the_stand_in() {
    let town = json!({"town": "Braga"});
    let got = read_in_order(vec![chain(1, (10, 20), "seat", &town, "p")]);
    assert_eq!(counts(&got), [1]);
    let c = &got[0].calls[0];
    assert_eq!((c.name.as_str(), c.args.value()), ("seat", Some(&town)));
    let result = c.result.as_ref().map(CallResult::to_value);
    let stand_in: Value = serde_json::from_str(STAND_IN).unwrap_or_default();
    assert!(result.is_some_and(|r| r != stand_in), "{:?}", c.result);
}

/// Chains of `seat` and `dine` first in the input, then the model calls:
/// the first asks for `seat`, the second answers it and asks for `dine`,
/// the third answers `dine`. `dine_at`: when its chain ran, `process`: its
/// process.
fn trip(dine_at: (u64, u64), process: &str) -> Vec<Analysis> {
    let (seat, dine) = (json!({"town": "Braga"}), json!({"table": 4}));
    let seat_asked = ask("k1", "seat", &seat);
    let dine_asked = ask("k2", "dine", &dine);
    let seat_turn = [
        json!({"role": "assistant", "tool_calls": [seat_asked.clone()]}),
        json!({"role": "tool", "tool_call_id": "k1", "content": "seat 3"}),
    ];
    let mut dine_turn = seat_turn.to_vec();
    dine_turn.push(json!({"role": "assistant", "tool_calls": [dine_asked.clone()]}));
    dine_turn.push(json!({"role": "tool", "tool_call_id": "k2", "content": "table 4"}));
    read_in_order(vec![
        chain(1, (12, 18), "seat", &seat, "p"),
        chain(2, dine_at, "dine", &dine, process),
        chat(3, (0, 10), &[], vec![seat_asked]),
        chat(4, (20, 30), &seat_turn, vec![dine_asked]),
        chat(5, (40, 50), &dine_turn, vec![]),
    ])
}

#[test]
fn a_chain_read_before_its_asking_trace_waits_for_the_answering_one() {
    let got = trip((32, 38), "p");
    assert_eq!(counts(&got), [0, 0, 0, 1, 1]);
    assert_eq!(got[4].calls[0].name, "dine");
    assert!(
        got[1].notes.iter().any(|n| n.contains("not counted again")),
        "{:?}",
        got[1].notes
    );
}

#[test]
fn a_chain_run_before_the_asking_or_in_another_process_stays_a_call() {
    // Run before the model asked for `dine` (the asking ended at 30).
    let got = trip((22, 28), "p");
    assert_eq!(counts(&got), [0, 1, 0, 1, 1]);
    // Another process.
    let got = trip((32, 38), "q");
    assert_eq!(counts(&got), [0, 1, 0, 1, 1]);
}
