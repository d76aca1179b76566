//! A class-named tool span in a trace of its own that ran a call an earlier
//! trace asked for (`extract::attempts`): named after it and counted, the
//! conversation's record joined to the run the model saw; near misses keep
//! the class name. Made-up vendor spans in the GenAI message shape, each a
//! trace of its own.

use serde_json::{json, Value};

use crate::assemble::{Trace, TraceId};
use crate::extract::test_support::{
    answering_trace as answering, asking_trace as asking, in_process, read_in_order,
};
use crate::extract::tests::sp;
use crate::extract::{Analysis, CallStatus};

/// A tool span without a call id, a trace of its own in `process`: named
/// `name` with `result`, or, without one, failed.
fn tool(
    trace: u8,
    when: (u64, u64),
    name: &str,
    args: &Value,
    result: Option<&str>,
    process: &str,
) -> Trace {
    let args = args.to_string();
    let mut attrs = vec![
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", name),
        ("gen_ai.tool.call.arguments", args.as_str()),
    ];
    attrs.extend(result.map(|r| ("gen_ai.tool.call.result", r)));
    let mut s = sp(1, None, when, &format!("execute_tool {name}"), &attrs);
    if result.is_none() {
        s.span.status = Some(opentelemetry_proto::tonic::trace::v1::Status {
            code: 2,
            message: "front desk closed".into(),
        });
    }
    Trace::new(TraceId([trace; 16]), vec![in_process(s, process)], 0)
}

fn names(got: &[Analysis]) -> Vec<Vec<(String, CallStatus)>> {
    got.iter()
        .map(|a| {
            a.calls
                .iter()
                .map(|c| (c.name.clone(), c.status.clone()))
                .collect()
        })
        .collect()
}

fn oslo() -> Value {
    json!({"town": "Oslo", "nights": 2})
}

#[test]
fn a_failed_class_named_run_and_its_retry_are_two_runs_of_the_asked_call() {
    let oslo = oslo();
    let asked = [("k1", "find_room", &oslo)];
    let got = read_in_order(vec![
        asking(1, (0, 10), &asked),
        tool(2, (20, 25), "StructuredTool", &oslo, None, "p"),
        tool(3, (30, 35), "find_room", &oslo, Some("room 4"), "p"),
        answering(4, (50, 60), &asked, &["room 4"]),
    ]);
    let ok = |n: &str, s| (n.to_string(), s);
    assert_eq!(
        names(&got),
        [
            vec![],
            vec![ok("find_room", CallStatus::Error)],
            vec![ok("find_room", CallStatus::Ok)],
            vec![],
        ],
        "{:?}",
        got.iter().map(|a| &a.notes).collect::<Vec<_>>()
    );
    assert_eq!(
        got[1].calls[0].span_name.as_deref(),
        Some("execute_tool StructuredTool")
    );
    assert!(got[1].notes.iter().any(|n| n.contains("names no tool")));
    // The conversation's record is the retry's (the run the model saw).
    let retry = TraceId([3; 16]).to_string();
    assert!(
        got[3].notes.iter().any(|n| n.contains(&retry)),
        "{:?}",
        got[3].notes
    );
}

#[test]
fn an_attempt_alone_is_the_record_of_the_asked_call() {
    let oslo = oslo();
    let asked = [("k1", "find_room", &oslo)];
    let got = read_in_order(vec![
        asking(1, (0, 10), &asked),
        tool(2, (20, 25), "StructuredTool", &oslo, None, "p"),
        answering(4, (50, 60), &asked, &["front desk closed"]),
    ]);
    assert_eq!(
        names(&got),
        [
            vec![],
            vec![("find_room".to_string(), CallStatus::Error)],
            vec![]
        ]
    );
}

#[test]
fn near_misses_keep_the_class_name() {
    let oslo = oslo();
    let class = "StructuredTool".to_string();
    let read = |asks: &[(&str, &str, &Value)], span: Trace| {
        let got = read_in_order(vec![asking(1, (0, 10), asks), span]);
        got[1]
            .calls
            .iter()
            .map(|c| c.name.clone())
            .collect::<Vec<_>>()
    };
    let attempt =
        |when, args: &Value, process| tool(2, when, "StructuredTool", args, None, process);
    // Two model calls with these arguments: which one ran is unknown.
    let two = [("k1", "find_room", &oslo), ("k2", "find_hall", &oslo)];
    assert_eq!(
        read(&two, attempt((20, 25), &oslo, "p")),
        std::slice::from_ref(&class)
    );
    let one = [("k1", "find_room", &oslo)];
    // Other arguments; another process; started before the asking ended.
    let bergen = json!({"town": "Bergen", "nights": 2});
    assert_eq!(
        read(&one, attempt((20, 25), &bergen, "p")),
        std::slice::from_ref(&class)
    );
    assert_eq!(
        read(&one, attempt((20, 25), &oslo, "q")),
        std::slice::from_ref(&class)
    );
    assert_eq!(
        read(&one, attempt((5, 12), &oslo, "p")),
        std::slice::from_ref(&class)
    );
    // A tool's own name is left as it is.
    let named = tool(2, (20, 25), "find_hall", &oslo, None, "p");
    assert_eq!(read(&one, named), ["find_hall".to_string()]);
}
