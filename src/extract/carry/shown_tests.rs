//! A framework's tool spans recording call ids only, in a trace of their
//! own, completed by another writer's trace of the same run: a tool span
//! of it with the content (`witness_records::of_retold`), and the model's
//! ask that no tool span of that trace shows, with the result the next
//! request carries (`conversation::joins::elsewhere`); that ask's warning
//! becomes a note. Made-up vendor spans.

use serde_json::{json, Value};

use crate::assemble::{Trace, TraceId};
use crate::extract::test_support::{
    genai_asks, genai_chat, genai_result, genai_user, in_process, read_in_order,
};
use crate::extract::tests::sp;
use crate::extract::{Analysis, CallResult};

/// The framework's trace: an agent run with a tool span per call, each
/// naming its tool and call id only.
fn framework(process: &str) -> Trace {
    let run = sp(
        1,
        None,
        (0, 100),
        "invoke_agent waiter",
        &[
            ("gen_ai.operation.name", "invoke_agent"),
            ("gen_ai.agent.name", "waiter"),
        ],
    );
    let tool = |id: u8, when, name: &str, call: &str| {
        let attrs = [
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", name),
            ("gen_ai.tool.call.id", call),
        ];
        sp(id, Some(1), when, &format!("execute_tool {name}"), &attrs)
    };
    let spans = vec![
        run,
        tool(2, (22, 40), "ask_chef", "call_a"),
        tool(3, (50, 60), "fetch_bag", "call_b"),
    ];
    let spans = spans.into_iter().map(|s| in_process(s, process)).collect();
    Trace::new(TraceId([1; 16]), spans, 0)
}

fn chef_args() -> Value {
    json!({"q": "any nuts?"})
}

fn bag_args() -> Value {
    json!({"locker": 41})
}

/// The other writer's trace of the same run: its model calls, and a tool
/// span (a made-up vendor's kind marker, no call id) for `fetch_bag`
/// only, opened within the framework's span of that call.
fn writer(process: &str) -> Trace {
    let ask_a = genai_asks(&[("call_a", "ask_chef", chef_args())]);
    let ask_b = genai_asks(&[("call_b", "fetch_bag", bag_args())]);
    let res_a = genai_result("call_a", "no nuts");
    let res_b = genai_result("call_b", r#"{"bag": "blue"}"#);
    let bag = sp(
        4,
        Some(1),
        (51, 59),
        "fetch_bag",
        &[
            ("acme.span.kind", "tool"),
            ("acme.input", r#"{"locker": 41}"#),
            ("acme.output", r#"{"bag": "blue"}"#),
        ],
    );
    let spans = vec![
        sp(1, None, (0, 100), "waiter", &[]),
        genai_chat(2, (10, 20), "chat", json!([genai_user()]), json!([ask_a])),
        genai_chat(
            3,
            (42, 48),
            "chat",
            json!([genai_user(), ask_a, res_a]),
            json!([ask_b]),
        ),
        bag,
        genai_chat(
            5,
            (62, 70),
            "chat",
            json!([genai_user(), ask_a, res_a, ask_b, res_b]),
            json!([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}]),
        ),
    ];
    let spans = spans.into_iter().map(|s| in_process(s, process)).collect();
    Trace::new(TraceId([2; 16]), spans, 0)
}

/// Each trace's calls: (name, arguments, result).
fn calls(got: &[Analysis]) -> Vec<Vec<(String, Value, Value)>> {
    got.iter()
        .map(|a| {
            let call = |c: &crate::extract::ToolCall| {
                let args = c.args.value().cloned().unwrap_or(Value::Null);
                let result = c.result.as_ref().map_or(Value::Null, CallResult::to_value);
                (c.name.clone(), args, result)
            };
            a.calls.iter().map(call).collect()
        })
        .collect()
}

fn call(name: &str, args: Value, result: Value) -> (String, Value, Value) {
    (name.into(), args, result)
}

#[test]
fn another_writers_trace_completes_tool_spans_recording_call_ids_only() {
    let got = read_in_order(vec![framework("p"), writer("p")]);
    assert_eq!(
        calls(&got),
        [
            vec![
                call("ask_chef", chef_args(), json!("no nuts")),
                call("fetch_bag", bag_args(), json!({"bag": "blue"})),
            ],
            vec![],
        ]
    );
    // The ask no tool span of its own trace shows is no warning there.
    assert!(got[1].warnings.is_empty(), "{:?}", got[1].warnings);
    let shown = "a tool span of trace 01010101010101010101010101010101 does";
    assert!(
        got[1].notes.iter().any(|n| n.contains(shown)),
        "{:?}",
        got[1].notes
    );
}

#[test]
fn another_process_completes_nothing() {
    let got = read_in_order(vec![framework("p"), writer("q")]);
    let bare = |name: &str| call(name, Value::Null, Value::Null);
    assert_eq!(
        calls(&got),
        [
            vec![bare("ask_chef"), bare("fetch_bag")],
            vec![call("fetch_bag", bag_args(), json!({"bag": "blue"}))],
        ]
    );
    assert!(
        got[1].warnings.iter().any(|w| w.contains("`ask_chef`")),
        "{:?}",
        got[1].warnings
    );
}

#[test]
fn read_the_other_way_round_each_call_is_counted_once_without_a_warning() {
    let got = read_in_order(vec![writer("p"), framework("p")]);
    assert_eq!(
        calls(&got),
        [
            vec![call("fetch_bag", bag_args(), json!({"bag": "blue"}))],
            vec![call("ask_chef", chef_args(), json!("no nuts"))],
        ]
    );
    // The ask waited for the framework's trace, which counts it.
    assert!(got[0].warnings.is_empty(), "{:?}", got[0].warnings);
    let later =
        "no tool span of this trace shows it: trace 01010101010101010101010101010101, later";
    assert!(
        got[0].notes.iter().any(|n| n.contains(later)),
        "{:?}",
        got[0].notes
    );
}

#[test]
fn an_ask_of_a_run_apart_in_time_completes_nothing() {
    // The same call ids in a later run of the process (a scripted model
    // numbers its calls the same way each run).
    let later = writer("p");
    let spans = later
        .spans
        .into_iter()
        .map(|mut s| {
            s.span.start_time_unix_nano += 1_000;
            s.span.end_time_unix_nano += 1_000;
            s
        })
        .collect();
    let later = Trace::new(later.id, spans, 0);
    let got = read_in_order(vec![framework("p"), later]);
    let bare = |name: &str| call(name, Value::Null, Value::Null);
    assert_eq!(
        calls(&got),
        [
            vec![bare("ask_chef"), bare("fetch_bag")],
            vec![call("fetch_bag", bag_args(), json!({"bag": "blue"}))],
        ]
    );
}
