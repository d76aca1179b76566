//! A tool span without a call id, joined to its trace's model output by
//! name, and a model call of another trace replaying the call under its id
//! (`conversation::ask_ids`, `twice::ids_meet`).

use serde_json::json;

use crate::assemble::{Trace, TraceId};
use crate::extract::test_support::{in_process, read_in_order};
use crate::extract::tests::sp;
use crate::extract::Analysis;

const ARGS: &str = r#"{"desk": 4, "floor": "B"}"#;

/// A made-up framework's run: its model response asks for `reserve_desk`
/// under `id`, then a tool span runs it (no call id on the span).
fn framework(trace: u8, when: (u64, u64), process: &str, id: &str) -> Trace {
    let output = json!([{"role": "assistant", "parts": [{"type": "tool_call", "id": id,
        "name": "reserve_desk", "arguments": {"desk": 4, "floor": "B"}}]}])
    .to_string();
    let run = sp(
        1,
        None,
        when,
        "invoke_agent office",
        &[
            ("gen_ai.operation.name", "invoke_agent"),
            ("gen_ai.agent.name", "office"),
        ],
    );
    let model = sp(
        2,
        Some(1),
        (when.0 + 1, when.0 + 5),
        "chat acme-1",
        &[
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.output.messages", &output),
        ],
    );
    let tool = sp(
        3,
        Some(1),
        (when.0 + 6, when.0 + 9),
        "execute_tool reserve_desk",
        &[
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "reserve_desk"),
            ("gen_ai.tool.call.arguments", ARGS),
            ("gen_ai.tool.call.result", "reserved"),
        ],
    );
    let spans = [run, model, tool].map(|s| in_process(s, process));
    Trace::new(TraceId([trace; 16]), spans.into(), 0)
}

/// A made-up client instrumentation's model call, a trace of its own,
/// whose request replays the call under `id` with its result.
fn replay(trace: u8, when: (u64, u64), process: &str, id: &str) -> Trace {
    let input = json!([
        {"role": "user", "parts": [{"type": "text", "content": "desk 4 on B please"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": id,
            "name": "reserve_desk", "arguments": {"desk": 4, "floor": "B"}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": id,
            "response": "reserved"}]},
    ])
    .to_string();
    chat(trace, when, process, &input)
}

/// A made-up client instrumentation's model call with request `input`,
/// answering "done", a trace of its own.
fn chat(trace: u8, when: (u64, u64), process: &str, input: &str) -> Trace {
    let output =
        json!([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}]).to_string();
    let s = sp(
        1,
        None,
        when,
        "chat acme-1",
        &[
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.input.messages", input),
            ("gen_ai.output.messages", &output),
        ],
    );
    Trace::new(TraceId([trace; 16]), vec![in_process(s, process)], 0)
}

fn total(got: &[Analysis]) -> usize {
    got.iter().map(|a| a.calls.len()).sum()
}

#[test]
fn a_span_joined_to_its_trace_s_ask_is_the_call_another_trace_replays() {
    // The replay read first (its trace ends first), or after the run.
    let got = read_in_order(vec![
        replay(1, (20, 30), "p", "k-41"),
        framework(2, (0, 100), "p", "k-41"),
    ]);
    assert_eq!(total(&got), 1, "{got:#?}");
    let got = read_in_order(vec![
        framework(2, (0, 100), "p", "k-41"),
        replay(1, (20, 30), "p", "k-41"),
    ]);
    assert_eq!(total(&got), 1, "{got:#?}");
}

/// Near misses: the same tool and arguments under other ids (two runs of
/// one script), or in another process, stay calls of their own.
#[test]
fn the_same_call_under_another_id_or_process_stays_two_calls() {
    let got = read_in_order(vec![
        replay(1, (20, 30), "p", "k-42"),
        framework(2, (0, 100), "p", "k-41"),
    ]);
    assert_eq!(total(&got), 2, "{got:#?}");
    let got = read_in_order(vec![
        replay(1, (20, 30), "q", "k-41"),
        framework(2, (0, 100), "p", "k-41"),
    ]);
    assert_eq!(total(&got), 2, "{got:#?}");
    // Two runs of one script, each a run and its replay, the same ids.
    let got = read_in_order(vec![
        replay(1, (20, 30), "p", "k-41"),
        framework(2, (0, 100), "p", "k-41"),
        replay(3, (220, 230), "p", "k-41"),
        framework(4, (200, 300), "p", "k-41"),
    ]);
    assert_eq!(total(&got), 2, "{got:#?}");
}

/// A model call, a trace of its own, whose request holds the call of
/// `reserve_desk` under `id` before a later turn's `order_coffee` (`k-50`),
/// both answered: the call in its history, not its last turn.
fn later_replay(trace: u8, when: (u64, u64), id: &str) -> Trace {
    let input = json!([
        {"role": "user", "parts": [{"type": "text", "content": "desk 4 on B, then coffee"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": id,
            "name": "reserve_desk", "arguments": {"desk": 4, "floor": "B"}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": id,
            "response": "reserved"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "k-50",
            "name": "order_coffee", "arguments": {"size": "large"}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "k-50",
            "response": "ordered"}]},
    ])
    .to_string();
    chat(trace, when, "p", &input)
}

/// Each trace's call names, in order.
fn names(got: &[Analysis]) -> Vec<Vec<&str>> {
    got.iter()
        .map(|a| a.calls.iter().map(|c| c.name.as_str()).collect())
        .collect()
}

#[test]
fn a_replay_matched_to_the_span_keeps_the_id_counted_for_later_histories() {
    // The run first; one replay has the call as its last turn (another
    // record of the span's call), a later one in its history.
    let got = read_in_order(vec![
        framework(2, (0, 100), "p", "k-41"),
        replay(1, (20, 30), "p", "k-41"),
        later_replay(3, (40, 50), "k-41"),
    ]);
    let want: Vec<Vec<&str>> = vec![vec!["reserve_desk"], vec![], vec!["order_coffee"]];
    assert_eq!(names(&got), want, "{got:#?}");
}

/// Near miss: the later history's call under another id is a call of its
/// own.
#[test]
fn a_later_history_s_call_under_another_id_is_counted() {
    let got = read_in_order(vec![
        framework(2, (0, 100), "p", "k-41"),
        replay(1, (20, 30), "p", "k-41"),
        later_replay(3, (40, 50), "k-43"),
    ]);
    let total: usize = got.iter().map(|a| a.calls.len()).sum();
    assert_eq!(total, 3, "{got:#?}");
}
