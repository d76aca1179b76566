//! A turn echoed under other ids (`conversation::echoed`) in one trace and
//! the same model calls recorded by another writer, each a trace of its
//! own, under the request's ids: one call id in two traces
//! (`twice::ids_meet`).

use serde_json::{json, Value};

use crate::assemble::{Trace, TraceId};
use crate::extract::test_support::{
    genai_asks as asks, genai_result as result, genai_user as user, in_process, read_in_order,
};
use crate::extract::tests::sp;
use crate::extract::Analysis;

/// A made-up vendor's model span `id` (a root when `parent` is `None`)
/// of process `process`, with GenAI `input` and `output` messages.
fn model(
    id: u8,
    parent: Option<u8>,
    when: (u64, u64),
    io: (&Value, &Value),
    process: &str,
) -> crate::assemble::SpanRecord {
    let (input, output) = (io.0.to_string(), io.1.to_string());
    let attrs = [
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.input.messages", input.as_str()),
        ("gen_ai.output.messages", output.as_str()),
    ];
    in_process(sp(id, parent, when, "acme.respond", &attrs), process)
}

fn done() -> Value {
    json!([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}])
}

fn tide() -> Value {
    json!({"port": "Brest"})
}

fn berth() -> Value {
    json!({"nights": 2})
}

/// The agent framework's trace: a workflow span over two model calls; the
/// first asks under item ids, the second's request echoes that turn under
/// the call ids `cid_1`, `cid_2` and carries their results.
fn framework(trace: u8) -> Trace {
    let asked = json!([asks(&[
        ("item_7q", "tide", tide()),
        ("item_k2", "berth", berth())
    ])]);
    let input = echo(&[("cid_1", "tide", tide()), ("cid_2", "berth", berth())]);
    let root = in_process(sp(1, None, (0, 100), "workflow", &[]), "p");
    let spans = vec![
        root,
        model(2, Some(1), (10, 20), (&json!([user()]), &asked), "p"),
        model(3, Some(1), (40, 50), (&input, &done()), "p"),
    ];
    Trace::new(TraceId([trace; 16]), spans, 0)
}

/// A request echoing `calls`, each in a message of its own, then their
/// results (`06:12`, `booked`, ... by order).
fn echo(calls: &[(&str, &str, Value)]) -> Value {
    let mut m = vec![user()];
    m.extend(calls.iter().map(|c| asks(std::slice::from_ref(c))));
    let results = ["06:12", "booked"];
    m.extend(calls.iter().zip(results).map(|(c, r)| result(c.0, r)));
    Value::Array(m)
}

/// The client instrumentation's record of the second model call, a trace
/// of its own: the request with `calls` and their results.
fn client(trace: u8, when: (u64, u64), calls: &[(&str, &str, Value)], process: &str) -> Trace {
    let input = echo(calls);
    let spans = vec![model(9, None, when, (&input, &done()), process)];
    Trace::new(TraceId([trace; 16]), spans, 0)
}

fn both() -> Vec<(&'static str, &'static str, Value)> {
    vec![("cid_1", "tide", tide()), ("cid_2", "berth", berth())]
}

fn counts(read: &[Analysis]) -> Vec<usize> {
    read.iter().map(|a| a.calls.len()).collect()
}

fn joined(a: &Analysis) -> usize {
    let n = |n: &&String| n.contains("is another record of the call trace");
    a.notes.iter().filter(n).count()
}

#[test]
fn a_turn_echoed_under_other_ids_is_counted_once_across_traces() {
    // The client's trace first, as the capture had it.
    let read = read_in_order(vec![client(2, (38, 52), &both(), "p"), framework(1)]);
    assert_eq!(counts(&read), [2, 0], "{:?}", read[1].notes);
    assert_eq!(joined(&read[1]), 2, "{:?}", read[1].notes);
    assert!(read[1]
        .notes
        .iter()
        .any(|n| n.contains("same call id cid_1")));
    // The framework's trace first: its calls are found by the ids their
    // results answer.
    let read = read_in_order(vec![framework(1), client(2, (38, 52), &both(), "p")]);
    assert_eq!(counts(&read), [2, 0], "{:?}", read[1].notes);
}

#[test]
fn another_tool_under_the_answering_id_is_no_join() {
    // `cid_1` is a call of `anchor` in the client's record: not `tide`.
    let other = [("cid_1", "anchor", tide())];
    let read = read_in_order(vec![client(2, (38, 52), &other, "p"), framework(1)]);
    assert_eq!(counts(&read), [1, 2], "{:?}", read[1].notes);
    assert_eq!(joined(&read[1]), 0);
}

#[test]
fn another_process_or_another_time_is_no_join() {
    let read = read_in_order(vec![client(2, (38, 52), &both(), "q"), framework(1)]);
    assert_eq!(counts(&read), [2, 2]);
    // The client's trace after the framework's ended.
    let read = read_in_order(vec![framework(1), client(2, (150, 160), &both(), "p")]);
    assert_eq!(counts(&read), [2, 2]);
}

#[test]
fn a_turn_echoed_in_one_trace_only_keeps_its_calls() {
    let read = read_in_order(vec![framework(1)]);
    assert_eq!(counts(&read), [2]);
    let results: Vec<Value> = read[0]
        .calls
        .iter()
        .filter_map(|c| c.result.as_ref().map(|r| r.to_value()))
        .collect();
    assert_eq!(results, [json!("06:12"), json!("booked")]);
    assert_eq!(read[0].echoed_ids.len(), 2);
}
