//! One call's records in traces of their own, read in input order: a tool
//! span and the conversation's record joined across traces (by call id
//! between the asking and the request, in a trace read again, in a trace
//! held until the request), and the start of a call the model asked for in
//! another trace. Made-up vendor spans in the GenAI message shape.

use serde_json::{json, Value};

use crate::assemble::{Trace, TraceId};
use crate::extract::test_support::{
    answering_trace as answering_turn, asking_trace as asking, chat_trace, final_text_trace,
    in_process, read_in_order,
};
use crate::extract::tests::sp;
use crate::extract::Analysis;

/// A model call whose request carries only results (`(id, result)`), the
/// turn that asked for them not repeated.
fn answering(trace: u8, when: (u64, u64), results: &[(&str, &str)]) -> Trace {
    let mut input = vec![json!({"role": "user", "content": "plan my day"})];
    for (id, r) in results {
        input.push(json!({"role": "tool", "tool_call_id": id, "content": r}));
    }
    final_text_trace(trace, when, input)
}

/// A tool span, a trace of its own in `process`.
fn tool(
    trace: u8,
    when: (u64, u64),
    name: &str,
    id: Option<&str>,
    args: &Value,
    process: &str,
) -> Trace {
    let args = args.to_string();
    let mut attrs = vec![
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", name),
        ("gen_ai.tool.call.arguments", args.as_str()),
        ("gen_ai.tool.call.result", "[object AcmeMessage]"),
    ];
    attrs.extend(id.map(|i| ("gen_ai.tool.call.id", i)));
    let s = in_process(
        sp(1, None, when, &format!("execute_tool {name}"), &attrs),
        process,
    );
    Trace::new(TraceId([trace; 16]), vec![s], 0)
}

fn counts(got: &[Analysis]) -> Vec<usize> {
    got.iter().map(|a| a.calls.len()).collect()
}

fn tide() -> Value {
    json!({"q": "tide"})
}

#[test]
fn a_tool_span_with_the_call_id_between_the_asking_and_the_request_is_that_call() {
    let ask = || asking(1, (0, 10), &[("call_5", "lookup", tide())]);
    let answer = || answering_turn(2, (50, 60), &[("call_5", "lookup", tide())], &["high"]);
    let span = |when, id, process| tool(3, when, "lookup", Some(id), &tide(), process);
    let got = read_in_order(vec![ask(), answer(), span((20, 30), "call_5", "p")]);
    assert_eq!(counts(&got), [0, 1, 0]);
    assert!(
        got[2]
            .notes
            .iter()
            .any(|n| n.contains("counts it from the conversation (same call id call_5")),
        "{:?}",
        got[2].notes
    );
    // Another id, another process, or a span before the asking ended: a
    // call of its own.
    for (when, id, process) in [
        ((20, 30), "call_9", "p"),
        ((20, 30), "call_5", "q"),
        ((5, 30), "call_5", "p"),
    ] {
        let got = read_in_order(vec![ask(), answer(), span(when, id, process)]);
        assert_eq!(counts(&got), [0, 1, 1], "{when:?} {id} {process}");
    }
}

#[test]
fn a_call_counted_only_against_the_earlier_ask_is_the_tool_span_read_before() {
    let read = |args: Value| {
        read_in_order(vec![
            asking(1, (0, 10), &[("call_5", "lookup", tide())]),
            tool(2, (20, 30), "lookup", None, &args, "p"),
            answering(3, (50, 60), &[("call_5", "high")]),
        ])
    };
    let got = read(tide());
    assert_eq!(counts(&got), [0, 1, 0]);
    assert!(
        got[2]
            .notes
            .iter()
            .any(|n| n.contains("conversation's record")),
        "{:?}",
        got[2].notes
    );
    // Other arguments: two calls.
    assert_eq!(counts(&read(json!({"q": "surf"}))), [0, 1, 1]);
}

#[test]
fn a_tool_trace_sent_before_its_asking_trace_waits_for_the_request() {
    let read = |process| {
        read_in_order(vec![
            tool(
                1,
                (20, 30),
                "AcmeToolWrapper",
                Some("call_5"),
                &tide(),
                process,
            ),
            asking(2, (0, 10), &[("call_5", "lookup", tide())]),
            answering(3, (50, 60), &[("call_5", "high")]),
        ])
    };
    let got = read("p");
    assert_eq!(counts(&got), [0, 0, 1]);
    assert_eq!(got[2].calls[0].name, "lookup");
    assert!(
        got[0]
            .notes
            .iter()
            .any(|n| n.contains("counts it from the conversation")),
        "{:?}",
        got[0].notes
    );
    // Another process: nothing joins it, and the held trace comes out as read.
    assert_eq!(counts(&read("q")), [1, 0, 1]);
}

#[test]
fn a_call_asked_in_another_trace_starts_when_the_asking_output_ended() {
    // A sub-agent used as a tool: its own model calls come between the
    // asking of `plan` and the request carrying its result.
    let plan = [("call_0", "plan", json!({"input": "plan my day"}))];
    let look = [("call_1", "lookup", tide())];
    let got = read_in_order(vec![
        asking(1, (0, 10), &plan),
        asking(2, (20, 30), &look),
        answering_turn(3, (40, 50), &look, &["high"]),
        answering_turn(4, (60, 70), &plan, &["a calm day"]),
    ]);
    assert_eq!(counts(&got), [0, 0, 1, 1]);
    let (lookup, plan) = (&got[2].calls[0], &got[3].calls[0]);
    assert_eq!(
        (plan.start_time_unix_nano, plan.end_time_unix_nano),
        (10, 60)
    );
    assert_eq!(
        (lookup.start_time_unix_nano, lookup.end_time_unix_nano),
        (30, 40)
    );
}

#[test]
fn a_call_no_kept_output_asked_for_is_the_last_tool_span_of_it_before_the_request() {
    // The asking model call recorded its request and no output: each span
    // a trace of its own, nothing asked for the call where the carry looks.
    let user = json!([{"role": "user", "content": "plan my day"}]).to_string();
    let read = |args: Value, when: (u64, u64), process: &str| {
        read_in_order(vec![
            chat_trace(1, (0, 10), Some(&user), None),
            tool(2, when, "lookup", None, &args, process),
            answering_turn(3, (50, 60), &[("call_5", "lookup", tide())], &["high"]),
        ])
    };
    assert_eq!(counts(&read(tide(), (20, 30), "p")), [0, 1, 0]);
    // Other arguments, another process, or a span ending after the
    // request started: two calls.
    assert_eq!(
        counts(&read(json!({"q": "surf"}), (20, 30), "p")),
        [0, 1, 1]
    );
    assert_eq!(counts(&read(tide(), (20, 30), "q")), [0, 1, 1]);
    assert_eq!(counts(&read(tide(), (20, 55), "p")), [0, 1, 1]);
}
