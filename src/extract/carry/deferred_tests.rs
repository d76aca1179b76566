//! A call deferred to the caller and answered in a later run (`deferred`):
//! counted once, where its result is; near misses stay two calls.

use opentelemetry_proto::tonic::trace::v1::Status;
use serde_json::{json, Value};

use crate::assemble::{SpanRecord, Trace, TraceId};
use crate::extract::test_support::{
    genai_asks, genai_chat, genai_result, genai_user, in_process, names_and_results, read_in_order,
};
use crate::extract::tests::sp;
use crate::extract::Analysis;

const TOOL: &str = "ship_parcel";

fn parcel() -> Value {
    json!({"parcel": "QX-19", "speed": "express"})
}

/// The agent's span (1) of a run from `when.0` to `when.1`.
fn agent(when: (u64, u64)) -> SpanRecord {
    sp(
        1,
        None,
        when,
        "invoke_agent courier",
        &[("gen_ai.operation.name", "invoke_agent")],
    )
}

/// A tool span (2) under the agent, from 10 to 20: call id `id`,
/// arguments `args`, result `result`.
fn tool(id: Option<&str>, args: &Value, result: Option<&str>) -> SpanRecord {
    let args = args.to_string();
    let mut attrs = vec![
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", TOOL),
        ("gen_ai.tool.call.arguments", args.as_str()),
    ];
    attrs.extend(id.map(|id| ("gen_ai.tool.call.id", id)));
    attrs.extend(result.map(|r| ("gen_ai.tool.call.result", r)));
    sp(
        2,
        Some(1),
        (10, 20),
        &format!("execute_tool {TOOL}"),
        &attrs,
    )
}

fn trace(id: u8, process: &str, spans: Vec<SpanRecord>) -> Trace {
    let spans = spans.into_iter().map(|s| in_process(s, process)).collect();
    Trace::new(TraceId([id; 16]), spans, 0)
}

/// Run 1: the tool span left without a result, the run ending there.
fn deferred(id: Option<&str>, args: &Value) -> Trace {
    trace(1, "p1", vec![agent((0, 30)), tool(id, args, None)])
}

/// Run 2, starting at `start`: its request carries call `id` and its
/// result; no tool span.
fn answered(process: &str, start: u64, id: &str, args: &Value) -> Trace {
    let input = json!([
        genai_user(),
        genai_asks(&[(id, TOOL, args.clone())]),
        genai_result(id, "label printed")
    ]);
    let output = json!([{"role": "assistant", "parts": [{"type": "text", "content": "shipped"}]}]);
    let chat = genai_chat(3, (start + 5, start + 15), "chat", input, output);
    trace(2, process, vec![agent((start, start + 20)), chat])
}

/// Run 2, starting at 40: the tool runs again, with its result.
fn resumed(id: Option<&str>, args: &Value, result: Option<&str>) -> Trace {
    let mut s = tool(id, args, result);
    s.span.start_time_unix_nano = 45;
    s.span.end_time_unix_nano = 50;
    trace(2, "p1", vec![agent((40, 60)), s])
}

fn counts(read: &[Analysis]) -> Vec<usize> {
    read.iter().map(|a| a.calls.len()).collect()
}

#[test]
fn a_deferred_call_answered_by_the_next_run_is_counted_once_with_its_result() {
    let read = read_in_order(vec![
        deferred(Some("c7"), &parcel()),
        answered("p1", 40, "c7", &parcel()),
    ]);
    assert_eq!(counts(&read), [0, 1]);
    assert_eq!(
        names_and_results(&read[1]),
        [(TOOL.to_string(), json!("label printed"))]
    );
    let note = read[0].notes.iter().find(|n| n.contains("has no result"));
    let note = note.map(String::as_str).unwrap_or_default();
    assert!(note.contains("call id c7"), "{note}");
    assert!(note.contains(&TraceId([2; 16]).to_string()), "{note}");
}

#[test]
fn an_attempt_without_a_call_id_is_the_resumed_runs_call_of_its_arguments() {
    let read = read_in_order(vec![
        deferred(None, &parcel()),
        resumed(None, &parcel(), Some("label printed")),
    ]);
    assert_eq!(counts(&read), [0, 1]);
    assert!(read[0]
        .notes
        .iter()
        .any(|n| n.contains("same tool and arguments")));
}

#[test]
fn near_misses_stay_two_calls() {
    let other_args = json!({"parcel": "QX-20", "speed": "express"});
    let cases = [
        // Another process.
        vec![
            deferred(Some("c7"), &parcel()),
            answered("p2", 40, "c7", &parcel()),
        ],
        // Another call id; the same id with other arguments.
        vec![
            deferred(Some("c7"), &parcel()),
            answered("p1", 40, "c8", &parcel()),
        ],
        vec![
            deferred(Some("c7"), &parcel()),
            answered("p1", 40, "c7", &other_args),
        ],
        // Without ids: other arguments; a later call without a result.
        vec![
            deferred(None, &parcel()),
            resumed(None, &other_args, Some("ok")),
        ],
        vec![deferred(None, &parcel()), resumed(None, &parcel(), None)],
        // A span with an id, the later one without.
        vec![
            deferred(Some("c7"), &parcel()),
            resumed(None, &parcel(), Some("ok")),
        ],
    ];
    for (k, traces) in cases.into_iter().enumerate() {
        let read = read_in_order(traces);
        assert_eq!(counts(&read), [1, 1], "case {k}");
        let noted = read[0].notes.iter().any(|n| n.contains("has no result"));
        assert!(!noted, "case {k}: {:?}", read[0].notes);
    }
    // A request that started before the span ended: the traces overlap,
    // and the call is one by `twice` (the span's trace counts it).
    let read = read_in_order(vec![
        deferred(Some("c7"), &parcel()),
        answered("p1", 5, "c7", &parcel()),
    ]);
    assert_eq!(counts(&read), [1, 0]);
    assert!(read[0].notes.iter().all(|n| !n.contains("has no result")));
}

#[test]
fn a_failed_span_is_no_deferred_call() {
    let mut span = tool(Some("c7"), &parcel(), None);
    span.span.status = Some(Status {
        code: 2,
        message: "depot closed".into(),
    });
    let failed = trace(1, "p1", vec![agent((0, 30)), span]);
    let read = read_in_order(vec![failed, answered("p1", 40, "c7", &parcel())]);
    assert_eq!(counts(&read), [1, 1]);
}
