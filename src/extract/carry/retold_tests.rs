//! A tool span's call recording its call id only, completed by the
//! conversation's record of that call in other traces of the same process
//! (`witness_records::of_retold`): the model's arguments and the result
//! its request carried, the call counted once. Made-up vendor spans.

use serde_json::{json, Value};

use crate::assemble::{Trace, TraceId};
use crate::extract::test_support::{
    answering_trace as answering, asking_trace as asking, in_process, read_in_order,
};
use crate::extract::tests::sp;
use crate::extract::{Analysis, CallResult};

/// A made-up framework's agent run over `(0, 100)` with one tool span
/// (`(35, 55)`) naming the tool and call id `id`, and `args` where given;
/// no result.
fn framework(trace: u8, process: &str, name: &str, id: &str, args: Option<&Value>) -> Trace {
    let run = sp(
        1,
        None,
        (0, 100),
        "invoke_agent porter",
        &[
            ("gen_ai.operation.name", "invoke_agent"),
            ("gen_ai.agent.name", "porter"),
        ],
    );
    let args = args.map(Value::to_string);
    let mut attrs = vec![
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", name),
        ("gen_ai.tool.call.id", id),
    ];
    attrs.extend(args.as_deref().map(|a| ("gen_ai.tool.call.arguments", a)));
    let tool = sp(
        2,
        Some(1),
        (35, 55),
        &format!("execute_tool {name}"),
        &attrs,
    );
    let spans = vec![in_process(run, process), in_process(tool, process)];
    Trace::new(TraceId([trace; 16]), spans, 0)
}

fn locker() -> Value {
    json!({"locker": 41, "hours": 3})
}

/// The model's call (`acme.chat`, process `p`) asking for `fetch_bag`.
fn ask() -> Trace {
    asking(2, (20, 30), &[("call_r1", "fetch_bag", locker())])
}

/// The next model call, its request carrying the result.
fn answer() -> Trace {
    answering(
        3,
        (60, 70),
        &[("call_r1", "fetch_bag", locker())],
        &[r#"{"bag": "blue", "fee": 4}"#],
    )
}

/// Each trace's calls: (name, arguments, result).
fn calls(got: &[Analysis]) -> Vec<Vec<(String, Value, Value)>> {
    got.iter()
        .map(|a| {
            a.calls
                .iter()
                .map(|c| {
                    let args = c.args.value().cloned().unwrap_or(Value::Null);
                    let result = c.result.as_ref().map_or(Value::Null, CallResult::to_value);
                    (c.name.clone(), args, result)
                })
                .collect()
        })
        .collect()
}

fn filled() -> (String, Value, Value) {
    (
        "fetch_bag".into(),
        locker(),
        json!({"bag": "blue", "fee": 4}),
    )
}

fn taken(a: &Analysis) -> bool {
    a.notes
        .iter()
        .any(|n| n.contains("taken from a record of that call in trace 0303"))
}

#[test]
fn the_conversation_in_other_traces_completes_a_tool_span_with_its_call_id_only() {
    let got = read_in_order(vec![
        framework(1, "p", "fetch_bag", "call_r1", None),
        ask(),
        answer(),
    ]);
    assert_eq!(calls(&got), [vec![filled()], vec![], vec![]]);
    assert!(taken(&got[0]), "{:?}", got[0].notes);
    assert!(
        got[2].notes.iter().any(|n| n.contains("not counted again")),
        "{:?}",
        got[2].notes
    );
    // The tool span's trace between the asking and the request.
    let got = read_in_order(vec![
        ask(),
        framework(1, "p", "fetch_bag", "call_r1", None),
        answer(),
    ]);
    assert_eq!(calls(&got), [vec![], vec![filled()], vec![]]);
    // After both: the conversation's trace counts the call (`twice`), with
    // what it knows; the tool span is not counted again.
    let got = read_in_order(vec![
        ask(),
        answer(),
        framework(1, "p", "fetch_bag", "call_r1", None),
    ]);
    assert_eq!(calls(&got), [vec![], vec![filled()], vec![]]);
}

#[test]
fn another_process_or_tool_or_a_span_with_arguments_takes_nothing() {
    let bare = |name: &str| (name.to_string(), Value::Null, Value::Null);
    // Another process: the conversation's call is a call of its own.
    let got = read_in_order(vec![
        framework(1, "q", "fetch_bag", "call_r1", None),
        ask(),
        answer(),
    ]);
    assert_eq!(
        calls(&got),
        [vec![bare("fetch_bag")], vec![], vec![filled()]]
    );
    assert!(!taken(&got[0]));
    // Another tool under the same call id.
    let got = read_in_order(vec![
        framework(1, "p", "store_bag", "call_r1", None),
        ask(),
        answer(),
    ]);
    assert_eq!(
        calls(&got),
        [vec![bare("store_bag")], vec![], vec![filled()]]
    );
    assert!(!taken(&got[0]));
    // A span with arguments keeps them, and the record completes nothing.
    let own = json!({"locker": 41, "hours": 3});
    let got = read_in_order(vec![
        framework(1, "p", "fetch_bag", "call_r1", Some(&own)),
        ask(),
        answer(),
    ]);
    assert_eq!(
        calls(&got),
        [vec![("fetch_bag".into(), own, Value::Null)], vec![], vec![]]
    );
    assert!(!taken(&got[0]));
}

#[test]
fn an_ask_no_request_answers_completes_nothing() {
    // The model asked, no request carried the result: the conversation
    // counts no call, so there is no record to take anything from.
    let got = read_in_order(vec![framework(1, "p", "fetch_bag", "call_r1", None), ask()]);
    let bare = ("fetch_bag".to_string(), Value::Null, Value::Null);
    assert_eq!(calls(&got), [vec![bare], vec![]]);
    assert!(!taken(&got[0]));
}

#[test]
fn a_record_completes_only_the_call_it_repeats() {
    // Two tool spans' traces under one call id: the conversation's call is
    // the record of the first only.
    let got = read_in_order(vec![
        framework(1, "p", "fetch_bag", "call_r1", None),
        framework(4, "p", "fetch_bag", "call_r1", None),
        ask(),
        answer(),
    ]);
    let bare = ("fetch_bag".to_string(), Value::Null, Value::Null);
    assert_eq!(calls(&got), [vec![filled()], vec![bare], vec![], vec![]]);
    assert!(!taken(&got[1]));
}
