//! A tool span with the model's call id, a trace of its own, run between
//! the asking trace and the trace whose request carries its result.

use serde_json::json;

use crate::assemble::{Trace, TraceId};
use crate::extract::test_support::{in_process, read_in_order};
use crate::extract::tests::sp;
use crate::extract::Analysis;

/// A made-up vendor's model call, a trace of its own in `process`: its
/// request carries the results `answered` (call id, result) after the
/// model's turn asking for them; its output asks for `asks`.
fn model_call(
    trace: u8,
    when: (u64, u64),
    process: &str,
    answered: &[(&str, &str)],
    asks: &[&str],
) -> Trace {
    let mut input = vec![json!({"role": "user", "content": "open the gate"})];
    if !answered.is_empty() {
        let calls: Vec<_> = answered
            .iter()
            .map(|(id, _)| {
                json!({"id": id, "type": "function",
                "function": {"name": "open_gate", "arguments": "{\"gate\": 4}"}})
            })
            .collect();
        input.push(json!({"role": "assistant", "tool_calls": calls}));
        for (id, r) in answered {
            input.push(json!({"role": "tool", "tool_call_id": id, "content": r}));
        }
    }
    let output = if asks.is_empty() {
        json!([{"role": "assistant", "content": "done"}])
    } else {
        let calls: Vec<_> = asks
            .iter()
            .map(|id| {
                json!({"id": id, "type": "function",
                "function": {"name": "open_gate", "arguments": "{\"gate\": 4}"}})
            })
            .collect();
        json!([{"role": "assistant", "tool_calls": calls}])
    };
    let s = sp(
        1,
        None,
        when,
        "acme.chat",
        &[
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.input.messages", &json!(input).to_string()),
            ("gen_ai.output.messages", &output.to_string()),
        ],
    );
    Trace::new(TraceId([trace; 16]), vec![in_process(s, process)], 0)
}

/// A made-up vendor's tool span, a trace of its own: the model's call id,
/// the arguments `args` and, unless `None`, the result.
fn tool_span(
    trace: u8,
    when: (u64, u64),
    process: &str,
    id: &str,
    args: &str,
    result: Option<&str>,
) -> Trace {
    let mut attrs = vec![
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", "open_gate"),
        ("gen_ai.tool.call.id", id),
        ("gen_ai.tool.call.arguments", args),
    ];
    attrs.extend(result.map(|r| ("gen_ai.tool.call.result", r)));
    let s = sp(1, None, when, "execute_tool open_gate", &attrs);
    Trace::new(TraceId([trace; 16]), vec![in_process(s, process)], 0)
}

const GATE: &str = r#"{"gate": 4}"#;

/// One run: the asking trace, the tool span's, the answering trace, in
/// time order from `at`, traces numbered from `first`.
fn run(first: u8, at: u64, id: &str) -> [Trace; 3] {
    [
        model_call(first, (at, at + 10), "p", &[], &[id]),
        tool_span(first + 1, (at + 20, at + 30), "p", id, GATE, Some("opened")),
        model_call(first + 2, (at + 40, at + 50), "p", &[(id, "opened")], &[]),
    ]
}

fn counts(got: &[Analysis]) -> Vec<usize> {
    got.iter().map(|a| a.calls.len()).collect()
}

#[test]
fn a_tool_span_with_the_call_id_between_asking_and_answering_counts_once() {
    // In time order: the tool span counts the call, the conversation's
    // copy in the answering trace is its record.
    let got = read_in_order(run(1, 0, "call_7").into());
    assert_eq!(counts(&got), [0, 1, 0]);
    let result = got[1].calls[0].result.as_ref().map(|r| r.to_value());
    assert_eq!(result, Some(json!("opened")));
    let notes = &got[2].notes;
    assert!(
        notes.iter().any(|n| n.contains("conversation's record")),
        "{notes:?}"
    );
    assert!(got[0].warnings.is_empty(), "{:?}", got[0].warnings);
    // The answering trace read before the tool span's: once, counted by
    // the conversation.
    let [ask, span, answer] = run(1, 0, "call_7");
    let got = read_in_order(vec![ask, answer, span]);
    assert_eq!(counts(&got), [0, 1, 0]);
}

#[test]
fn a_failed_tool_span_with_the_call_id_counts_once_with_its_error() {
    let mut traces = run(1, 0, "call_7");
    let mut failed = tool_span(2, (20, 30), "p", "call_7", GATE, None).spans;
    failed[0].span.status = Some(opentelemetry_proto::tonic::trace::v1::Status {
        code: 2,
        message: "gate jammed".into(),
    });
    traces[1] = Trace::new(TraceId([2; 16]), failed, 0);
    let got = read_in_order(traces.into());
    assert_eq!(counts(&got), [0, 1, 0]);
    assert_eq!(got[1].calls[0].status, crate::extract::CallStatus::Error);
}

#[test]
fn a_scripted_model_reusing_call_ids_across_runs_gives_two_calls() {
    // Two runs one after the other, the same ids in both: each run's
    // tool span is its own call.
    let mut traces: Vec<Trace> = run(1, 0, "call_7").into();
    traces.extend(run(4, 100, "call_7"));
    let got = read_in_order(traces);
    assert_eq!(counts(&got), [0, 1, 0, 0, 1, 0]);
}

#[test]
fn a_tool_span_outside_the_window_or_of_another_call_stays_a_call() {
    // Started before the asking ended, another process, other arguments,
    // another call id: two calls. (A span overlapping the answering trace
    // in time is the overlap join's: `twice::same_call`.)
    for (when, process, args, id) in [
        ((5, 30), "p", GATE, "call_7"),
        ((20, 30), "q", GATE, "call_7"),
        ((20, 30), "p", r#"{"gate": 5}"#, "call_7"),
        ((20, 30), "p", GATE, "call_8"),
    ] {
        let mut traces = run(1, 0, "call_7");
        traces[1] = tool_span(2, when, process, id, args, Some("opened"));
        let got = read_in_order(traces.into());
        assert_eq!(
            counts(&got).iter().sum::<usize>(),
            2,
            "{when:?} {process} {args} {id}"
        );
    }
    // Two spans of the call id in the window: which one the model saw is
    // not known, nothing is joined.
    let [ask, span, answer] = run(1, 0, "call_7");
    let again = tool_span(9, (32, 38), "p", "call_7", GATE, Some("opened"));
    let got = read_in_order(vec![ask, span, again, answer]);
    assert_eq!(counts(&got), [0, 1, 1, 1]);
}

#[test]
fn a_tool_span_left_without_a_result_is_counted_where_its_result_is() {
    // No result and no error: the span's call waits for a later run
    // (`deferred`), which counts it with the result.
    let mut traces = run(1, 0, "call_7");
    traces[1] = tool_span(2, (20, 30), "p", "call_7", GATE, None);
    let got = read_in_order(traces.into());
    assert_eq!(counts(&got), [0, 0, 1]);
    let result = got[2].calls[0].result.as_ref().map(|r| r.to_value());
    assert_eq!(result, Some(json!("opened")));
}

#[test]
fn a_held_trace_of_tool_spans_waits_for_each_of_its_calls_asked_later() {
    // Both tool spans in one trace, read before any model call asked for
    // them (held: `unasked`): the first is answered by the second model
    // call, the second by the third. The spans, read first, count both
    // calls, with their own results; each answering trace's copy is their
    // record, as when the spans' trace is read after the asking one.
    let span = |n: u8, when, id, result: Option<&str>| {
        let t = tool_span(9, when, "p", id, GATE, result);
        let mut s = t.spans.into_iter().next().expect("one span");
        s.span_id = crate::assemble::SpanId([n; 8]);
        s
    };
    let spans = vec![
        span(1, (20, 30), "k1", Some("opened")),
        span(2, (60, 70), "k2", Some("closed")),
    ];
    let tools = Trace::new(TraceId([9; 16]), spans, 0);
    let wrapped = r#"{"result": "closed"}"#;
    let traces = vec![
        tools,
        model_call(1, (0, 10), "p", &[], &["k1"]),
        model_call(2, (40, 50), "p", &[("k1", "opened")], &["k2"]),
        model_call(3, (80, 90), "p", &[("k1", "opened"), ("k2", wrapped)], &[]),
    ];
    let got = read_in_order(traces.clone());
    assert_eq!(counts(&got), [2, 0, 0, 0]);
    let results: Vec<_> = got[0]
        .calls
        .iter()
        .map(|c| c.result.as_ref().map(|r| r.to_value()))
        .collect();
    assert_eq!(results, [Some(json!("opened")), Some(json!("closed"))]);
    assert!(
        got[3].notes.iter().any(|n| n.contains("k2")),
        "{:?}",
        got[3].notes
    );
    // Read after the asking trace (not held), the same calls and results.
    let mut later = traces.clone();
    later.swap(0, 1);
    let got = read_in_order(later);
    assert_eq!(counts(&got), [0, 2, 0, 0]);
    // A held span without a result leaves its call to the conversation,
    // which counts it where the result is.
    let spans = vec![
        span(1, (20, 30), "k1", Some("opened")),
        span(2, (60, 70), "k2", None),
    ];
    let mut held = traces;
    held[0] = Trace::new(TraceId([9; 16]), spans, 0);
    let got = read_in_order(held);
    assert_eq!(counts(&got), [1, 0, 0, 1]);
}
