//! Attempts that failed with the framework's pause (`extract::pending`,
//! vocabulary `pause_errors`): a tool that paused the run for a human and
//! ran again, to completion, when the run was resumed in another trace.

use opentelemetry_proto::tonic::trace::v1::Status;

use crate::assemble::{SpanRecord, Trace, TraceId};
use crate::extract::test_support::{in_process, read_in_order};
use crate::extract::tests::sp;

const ARGS: &str = r#"{"crate_id": 7, "dock": "north"}"#;

/// A made-up vendor's tool span of `tool` (span `id`) over `when`, with
/// arguments `args`, call id `call` when not empty, and either a result
/// or, when `failed` is given, status error with that text.
fn tool(
    id: u8,
    when: (u64, u64),
    tool: &str,
    call: &str,
    args: &str,
    failed: Option<&str>,
) -> SpanRecord {
    let mut attrs = vec![
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", tool),
        ("gen_ai.tool.call.arguments", args),
    ];
    if !call.is_empty() {
        attrs.push(("gen_ai.tool.call.id", call));
    }
    if failed.is_none() {
        attrs.push(("gen_ai.tool.call.result", r#"{"moved": true}"#));
    }
    let mut s = sp(id, Some(1), when, &format!("execute_tool {tool}"), &attrs);
    if let Some(text) = failed {
        s.span.status = Some(Status {
            code: 2,
            message: text.to_string(),
        });
    }
    in_process(s, "depot")
}

/// An agent run over `when` holding `tools`.
fn trace(n: u8, when: (u64, u64), tools: Vec<SpanRecord>) -> Trace {
    let agent = [
        ("gen_ai.operation.name", "invoke_agent"),
        ("gen_ai.agent.name", "depot"),
    ];
    let mut spans = vec![in_process(
        sp(1, None, when, "invoke_agent depot", &agent),
        "depot",
    )];
    spans.extend(tools);
    Trace::new(TraceId([n; 16]), spans, 0)
}

const PAUSE: &str = "GraphInterrupt: [{\"id\": \"q1\", \"value\": \"Move crate 7?\"}]";

/// The first invoke: `list_docks` ran, `move_crate` paused (failed with
/// `pause`); the resumed invoke runs `move_crate` with `resumed_name`,
/// `resumed_id`, `resumed_args`.
fn paused_then_resumed(
    pause: &str,
    attempt_name: &str,
    attempt_id: &str,
    resumed: (&str, &str, &str),
) -> Vec<usize> {
    let first = trace(
        1,
        (0, 100),
        vec![
            tool(2, (10, 20), "list_docks", "c1", "{}", None),
            tool(3, (30, 40), attempt_name, attempt_id, ARGS, Some(pause)),
        ],
    );
    let second = trace(
        2,
        (200, 300),
        vec![tool(2, (210, 220), resumed.0, resumed.1, resumed.2, None)],
    );
    read_in_order(vec![first, second])
        .iter()
        .map(|a| a.calls.len())
        .collect()
}

#[test]
fn a_paused_attempt_is_counted_by_the_resumed_run() {
    let n = paused_then_resumed(PAUSE, "move_crate", "c2", ("move_crate", "c2", ARGS));
    assert_eq!(n, vec![1, 1]);
}

#[test]
fn the_pause_is_read_after_its_payload_in_a_stack_trace() {
    let text = format!("[{{\"id\": \"q1\"}}]\n\n{PAUSE}\n    at interrupt (interrupt.js:93:8)");
    let n = paused_then_resumed(&text, "move_crate", "", ("move_crate", "", ARGS));
    assert_eq!(n, vec![1, 1]);
}

#[test]
fn a_paused_attempt_with_a_run_id_or_the_class_name_takes_the_run_with_its_arguments() {
    // The framework's run id on the attempt, the model's call id on the run.
    let n = paused_then_resumed(PAUSE, "move_crate", "5f0e-run", ("move_crate", "c2", ARGS));
    assert_eq!(n, vec![1, 1]);
    // The attempt named after the tool class.
    let n = paused_then_resumed(PAUSE, "DynamicStructuredTool", "", ("move_crate", "", ARGS));
    assert_eq!(n, vec![1, 1]);
}

#[test]
fn near_misses_stay_calls() {
    // Another error type that holds the word: a failure, not a pause.
    let other = "MyGraphInterruptError: the dock is closed";
    let n = paused_then_resumed(other, "move_crate", "c2", ("move_crate", "c2", ARGS));
    assert_eq!(n, vec![2, 1]);
    // The resumed run asked with other arguments.
    let n = paused_then_resumed(
        PAUSE,
        "move_crate",
        "",
        ("move_crate", "", r#"{"crate_id": 8}"#),
    );
    assert_eq!(n, vec![2, 1]);
    // A run id and a class name, but other arguments.
    let n = paused_then_resumed(
        PAUSE,
        "DynamicStructuredTool",
        "5f0e-run",
        ("move_crate", "c2", r#"{"crate_id": 8}"#),
    );
    assert_eq!(n, vec![2, 1]);
    // Other call ids on a tool of another name.
    let n = paused_then_resumed(PAUSE, "move_crate", "c2", ("ship_crate", "c3", ARGS));
    assert_eq!(n, vec![2, 1]);
}

#[test]
fn a_paused_attempt_no_run_follows_stays_a_call() {
    let first = trace(
        1,
        (0, 100),
        vec![
            tool(2, (10, 20), "list_docks", "c1", "{}", None),
            tool(3, (30, 40), "move_crate", "c2", ARGS, Some(PAUSE)),
        ],
    );
    let got = read_in_order(vec![first]);
    assert_eq!(got[0].calls.len(), 2);
}
