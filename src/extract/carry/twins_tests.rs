//! One model request recorded by two writers, each record a trace of its
//! own (`conversation::twins`, `copies::answered_before`): a made-up
//! client instrumentation keeps the calls and results under ids, a
//! made-up framework's keeps the model turn's text and the results as
//! bare text parts; the model's asks are also copied into a chain output.
//! Near misses: a second user turn asking the same tool with the same
//! arguments, two asks of one tool in one turn, a later request carrying
//! the same results.

use serde_json::{json, Value};

use crate::assemble::{Trace, TraceId};
use crate::extract::test_support::{in_process, read_in_order};
use crate::extract::tests::sp;
use crate::extract::Analysis;

fn user(text: &str) -> Value {
    json!({"role": "user", "parts": [{"type": "text", "content": text}]})
}

/// A model turn asking for `calls` (id, town) of `seat`.
fn turn(calls: &[(&str, &str)]) -> Value {
    let parts: Vec<Value> = calls
        .iter()
        .map(|(id, town)| {
            json!({"type": "tool_call", "id": id, "name": "seat", "arguments": {"town": town}})
        })
        .collect();
    json!({"role": "assistant", "parts": parts})
}

/// The client's record of a result, under its id.
fn result(id: &str, text: &str) -> Value {
    json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": id, "response": text}]})
}

/// The framework's record of a result: bare text.
fn bare(text: &str) -> Value {
    json!({"role": "tool", "parts": [{"type": "text", "content": text}]})
}

fn lost_turn() -> Value {
    json!({"role": "assistant", "parts": [{"type": "text", "content": ""}]})
}

/// A model call, a trace of its own, named `name` (the writer).
fn chat(trace: u8, when: (u64, u64), name: &str, input: &[Value], output: &Value) -> Trace {
    let (input, output) = (Value::Array(input.to_vec()).to_string(), output.to_string());
    let attrs = [
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.input.messages", input.as_str()),
        ("gen_ai.output.messages", output.as_str()),
    ];
    let s = in_process(sp(1, None, when, name, &attrs), "p");
    Trace::new(TraceId([trace; 16]), vec![s], 0)
}

/// A chain run, a trace of its own, whose output is the model's message
/// asking for `calls` (LangChain's serialized `AIMessage`).
fn chain(trace: u8, when: (u64, u64), calls: &[(&str, &str)]) -> Trace {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, town)| {
            json!({"name": "seat", "args": {"town": town}, "type": "tool_call", "id": id})
        })
        .collect();
    let output = json!({"lc": 1, "type": "constructor",
        "id": ["langchain_core", "messages", "AIMessage"],
        "kwargs": {"content": "", "tool_calls": calls}})
    .to_string();
    let attrs = [
        ("traceloop.span.kind", "workflow"),
        ("traceloop.entity.output", output.as_str()),
    ];
    let s = in_process(sp(1, None, when, "workflow agent", &attrs), "p");
    Trace::new(TraceId([trace; 16]), vec![s], 0)
}

fn answer(text: &str) -> Value {
    json!([{"role": "assistant", "parts": [{"type": "text", "content": text}]}])
}

fn counted(got: &[Analysis]) -> Vec<String> {
    got.iter()
        .flat_map(|a| &a.calls)
        .map(|c| format!("{} {:?} {:?}", c.name, c.args, c.result))
        .collect()
}

/// One turn asking `calls`, answered by `results` (id, text), each
/// request recorded by the client (`acme-client`) and then the framework
/// (`acme-flow`); `gap`: how long after the client's record of the
/// second request the framework's starts (0: the two overlap).
fn one_turn(calls: &[(&str, &str)], results: &[(&str, &str)], gap: u64) -> Vec<Trace> {
    let asks = turn(calls);
    let with_ids: Vec<Value> = [user("two seats"), asks.clone()]
        .into_iter()
        .chain(results.iter().map(|(id, t)| result(id, t)))
        .collect();
    let bare_ones: Vec<Value> = [user("two seats"), lost_turn()]
        .into_iter()
        .chain(results.iter().map(|(_, t)| bare(t)))
        .collect();
    vec![
        chat(
            1,
            (10, 20),
            "chat acme-client",
            &[user("two seats")],
            &json!([asks]),
        ),
        chat(
            2,
            (9, 21),
            "chat acme-flow",
            &[user("two seats")],
            &answer(""),
        ),
        chain(3, (22, 24), calls),
        chat(4, (30, 40), "chat acme-client", &with_ids, &answer("done")),
        chat(
            5,
            (29 + gap, 41 + gap),
            "chat acme-flow",
            &bare_ones,
            &answer("done"),
        ),
    ]
}

#[test]
fn one_request_in_two_records_counts_its_calls_once() {
    let got = read_in_order(one_turn(
        &[("k1", "Braga"), ("k2", "Faro")],
        &[("k1", "row 3"), ("k2", "row 9")],
        0,
    ));
    let calls = counted(&got);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(
        calls[0].contains("Braga") && calls[0].contains("row 3"),
        "{calls:?}"
    );
    assert!(
        calls[1].contains("Faro") && calls[1].contains("row 9"),
        "{calls:?}"
    );
}

#[test]
fn two_asks_of_one_tool_with_equal_arguments_in_one_turn_stay_two() {
    // Near miss: parallel asks of the same tool and arguments (two ids).
    let got = read_in_order(one_turn(
        &[("k1", "Braga"), ("k2", "Braga")],
        &[("k1", "row 3"), ("k2", "row 4")],
        0,
    ));
    assert_eq!(counted(&got).len(), 2, "{:?}", counted(&got));
}

/// Two user turns, each asking `seat` for Braga (under `ids`), each
/// request recorded by both writers.
fn two_turns(ids: [&str; 2]) -> Vec<Analysis> {
    let asks = turn(&[(ids[0], "Braga")]);
    let again = turn(&[(ids[1], "Braga")]);
    let first = [user("a seat"), asks.clone(), result(ids[0], "row 3")];
    let first_bare = [user("a seat"), lost_turn(), bare("row 3")];
    let mut second = first.to_vec();
    second.extend([json!(answer("ok")[0]), user("one more"), again.clone()]);
    let mut second_bare = first_bare.to_vec();
    second_bare.extend([json!(answer("ok")[0]), user("one more"), lost_turn()]);
    let mut third = second.clone();
    third.push(result(ids[1], "row 4"));
    let mut third_bare = second_bare.clone();
    third_bare.push(bare("row 4"));
    let traces = vec![
        chat(
            1,
            (10, 20),
            "chat acme-client",
            &[user("a seat")],
            &json!([asks]),
        ),
        chain(2, (21, 22), &[(ids[0], "Braga")]),
        chat(3, (30, 40), "chat acme-client", &first, &answer("ok")),
        chat(4, (29, 41), "chat acme-flow", &first_bare, &answer("ok")),
        chat(5, (50, 60), "chat acme-client", &second, &json!([again])),
        chain(6, (61, 62), &[(ids[1], "Braga")]),
        chat(7, (70, 80), "chat acme-client", &third, &answer("ok")),
        chat(8, (69, 81), "chat acme-flow", &third_bare, &answer("ok")),
    ];
    read_in_order(traces)
}

#[test]
fn a_second_turn_asking_the_same_call_again_is_another_call() {
    // Near miss: the user asks again; the model asks the same tool with
    // the same arguments. Two calls.
    let calls = counted(&two_turns(["k1", "k2"]));
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(
        calls[0].contains("row 3") && calls[1].contains("row 4"),
        "{calls:?}"
    );
}

#[test]
fn a_later_request_with_the_same_results_pairs_with_no_answered_ask() {
    // The framework's record starts after the client's ended (no twin by
    // time): its bare results still take no ask a request answered.
    let got = read_in_order(one_turn(
        &[("k1", "Braga"), ("k2", "Faro")],
        &[("k1", "row 3"), ("k2", "row 9")],
        100,
    ));
    assert_eq!(counted(&got).len(), 2, "{:?}", counted(&got));
}
