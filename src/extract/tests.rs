//! Unit tests of the extractor: runs and nesting, named calls, helpers other modules' tests share.

use super::*;
use std::sync::Arc;

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::Span;

use crate::assemble::TraceId;

/// A span with string attributes; the conversation tests build theirs
/// here too.
pub(super) fn sp(
    id: u8,
    parent: Option<u8>,
    when: (u64, u64),
    name: &str,
    attrs: &[(&str, &str)],
) -> SpanRecord {
    SpanRecord {
        span_id: SpanId([id; 8]),
        parent: parent.map(|p| SpanId([p; 8])),
        span: Span {
            name: name.to_string(),
            start_time_unix_nano: when.0,
            end_time_unix_nano: when.1,
            attributes: attrs
                .iter()
                .map(|(k, v)| KeyValue {
                    key: k.to_string(),
                    value: Some(AnyValue {
                        value: Some(any_value::Value::StringValue(v.to_string())),
                    }),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        resource: Arc::default(),
        scope: Arc::default(),
    }
}

/// Microsoft Agent Framework's `invoke_agent <name>` span.
fn run(id: u8, parent: Option<u8>, when: (u64, u64), name: &str) -> SpanRecord {
    sp(
        id,
        parent,
        when,
        &format!("invoke_agent {name}"),
        &[
            ("gen_ai.operation.name", "invoke_agent"),
            ("gen_ai.agent.name", name),
            ("gen_ai.provider.name", "microsoft.agent_framework"),
        ],
    )
}

/// Microsoft Agent Framework's `execute_tool <name>` span.
fn tool(id: u8, parent: Option<u8>, when: (u64, u64), name: &str) -> SpanRecord {
    sp(
        id,
        parent,
        when,
        &format!("execute_tool {name}"),
        &[
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", name),
            ("gen_ai.tool.type", "function"),
        ],
    )
}

/// `name -> (agent name, depth, within)` of every call.
fn owners(spans: Vec<SpanRecord>) -> Vec<(String, Option<String>, usize, Option<SpanId>)> {
    let t = Trace::new(TraceId([7; 16]), spans, 0);
    let mut out: Vec<_> = Extractor::default()
        .analyze(&t)
        .calls
        .into_iter()
        .map(|c| (c.name, c.agent.map(|a| a.name), c.depth, c.within))
        .collect();
    out.sort();
    out
}

fn own(
    name: &str,
    agent: Option<&str>,
    depth: usize,
    within: Option<u8>,
) -> (String, Option<String>, usize, Option<SpanId>) {
    (
        name.into(),
        agent.map(Into::into),
        depth,
        within.map(|w| SpanId([w; 8])),
    )
}

#[test]
fn a_call_belongs_to_the_sibling_run_that_encloses_it() {
    // A workflow executor whose streaming agent runs do not parent their
    // tool spans: runs, chats and tools are siblings.
    let workflow = sp(1, None, (0, 1000), "workflow.run", &[]);
    let executor = sp(2, Some(1), (10, 500), "executor.process writer", &[]);
    let chat = sp(
        4,
        Some(2),
        (25, 60),
        "chat gpt-4o",
        &[("gen_ai.operation.name", "chat")],
    );
    let got = owners(vec![
        workflow,
        executor,
        run(3, Some(2), (20, 400), "writer"),
        chat,
        tool(5, Some(2), (70, 90), "get_weather"),
        // A later run inside the first one's time: the innermost wins.
        run(6, Some(2), (100, 200), "helper"),
        tool(7, Some(2), (120, 150), "lookup"),
        // Ends after every run: no run encloses it.
        tool(8, Some(2), (390, 450), "late"),
        // Another parent: the runs under the executor are not its siblings.
        tool(9, Some(1), (30, 40), "elsewhere"),
        // Under get_weather: a sub-agent run with its own call, and a
        // plain call that inherits get_weather's run.
        run(10, Some(5), (75, 85), "sub"),
        tool(11, Some(10), (76, 80), "deep"),
        tool(12, Some(5), (86, 88), "nested"),
    ]);
    assert_eq!(
        got,
        vec![
            own("deep", Some("sub"), 1, Some(10)),
            own("elsewhere", None, 0, None),
            own("get_weather", Some("writer"), 0, Some(3)),
            own("late", None, 0, None),
            own("lookup", Some("helper"), 0, Some(6)),
            own("nested", Some("writer"), 1, Some(5)),
        ]
    );
}

#[test]
fn overlapping_sibling_runs_latest_enclosing_start_wins() {
    let p = sp(1, None, (0, 1000), "root", &[]);
    let got = owners(vec![
        p,
        run(2, Some(1), (0, 100), "r1"),
        run(3, Some(1), (50, 150), "r2"),
        tool(4, Some(1), (60, 90), "both"),
        tool(5, Some(1), (10, 40), "first"),
        tool(6, Some(1), (110, 140), "second"),
        tool(7, Some(1), (60, 120), "past_r1"),
        tool(8, Some(1), (40, 120), "neither"),
        // Starts with r2: a run starting at the same time encloses it.
        tool(9, Some(1), (50, 60), "same_start"),
        // A sibling run does not override the parent run of a call.
        run(10, Some(1), (200, 300), "outer"),
        tool(11, Some(10), (210, 220), "child"),
    ]);
    assert_eq!(
        got,
        vec![
            own("both", Some("r2"), 0, Some(3)),
            own("child", Some("outer"), 0, Some(10)),
            own("first", Some("r1"), 0, Some(2)),
            own("neither", None, 0, None),
            own("past_r1", Some("r2"), 0, Some(3)),
            own("same_start", Some("r2"), 0, Some(3)),
            own("second", Some("r2"), 0, Some(3)),
        ]
    );
}

#[test]
fn a_sibling_run_wins_over_an_enclosing_parent_run() {
    // A workflow run as an agent: the outer run encloses the executor,
    // whose streaming inner run is a sibling of its tool span.
    let got = owners(vec![
        run(1, None, (0, 1000), "outer"),
        sp(2, Some(1), (10, 500), "executor.process inner", &[]),
        run(3, Some(2), (20, 400), "inner"),
        tool(4, Some(2), (30, 40), "t"),
        tool(5, Some(2), (450, 460), "after_inner"),
    ]);
    assert_eq!(
        got,
        vec![
            own("after_inner", Some("outer"), 0, Some(1)),
            own("t", Some("inner"), 0, Some(3)),
        ]
    );
}

#[test]
fn one_positional_json_object_text_is_the_arguments() {
    let text = |t: &str| serde_json::json!({"args": [t]});
    assert_eq!(
        lone_json_object(&text(r#"{"q": "x"}"#)),
        Some(serde_json::json!({"q": "x"}))
    );
    // A tool without parameters (a LangGraph handoff tool) gets `{}`.
    assert_eq!(lone_json_object(&text("{}")), Some(serde_json::json!({})));
    // Not an object, two values, or keyword arguments beside.
    assert_eq!(lone_json_object(&text("[1]")), None);
    assert_eq!(lone_json_object(&text("plain")), None);
    assert_eq!(
        lone_json_object(&serde_json::json!({"args": ["{\"a\": 1}", "{}"]})),
        None
    );
    assert_eq!(
        lone_json_object(&serde_json::json!({"args": ["{\"a\": 1}"], "k": 1})),
        None
    );
}

#[test]
fn a_tool_named_after_its_wrapper_class_takes_the_name_it_records() {
    let x = Extractor::default();
    let calls = |spans: Vec<SpanRecord>| -> Vec<(String, Option<Value>, Option<String>)> {
        x.analyze(&Trace::new(TraceId([5; 16]), spans, 0))
            .calls
            .into_iter()
            .map(|c| (c.name, c.args.value().cloned(), c.span_name))
            .collect()
    };
    // A made-up tool class in a task span: the name is its output's.
    let task = sp(
        1,
        None,
        (0, 5),
        "LookupTool.task",
        &[
            ("traceloop.span.kind", "task"),
            ("traceloop.entity.name", "LookupTool.task"),
            ("traceloop.entity.input", r#"{"kwargs": {"id": 7}}"#),
            (
                "traceloop.entity.output",
                r#"{"blocks": [], "tool_name": "lookup", "raw_input": {}, "raw_output": 1, "is_error": false}"#,
            ),
        ],
    );
    assert_eq!(
        calls(vec![task]),
        [(
            "lookup".to_string(),
            Some(serde_json::json!({"id": 7})),
            Some("LookupTool.task".to_string())
        )]
    );
    // An `execute_tool <class>` span whose result is a ToolMessage.
    let wrapped = sp(
        1,
        None,
        (0, 5),
        "execute_tool AnyTool",
        &[
            ("gen_ai.operation.name", "execute_tool"),
            ("traceloop.entity.input", r#"{"args": ["{\"id\": 7}"]}"#),
            (
                "traceloop.entity.output",
                r#"{"lc": 1, "type": "constructor", "id": ["x", "ToolMessage"], "kwargs": {"content": "1", "tool_call_id": "c", "name": "lookup"}}"#,
            ),
        ],
    );
    assert_eq!(
        calls(vec![wrapped]),
        [(
            "lookup".to_string(),
            Some(serde_json::json!({"id": 7})),
            Some("execute_tool AnyTool".to_string())
        )]
    );
}

#[test]
fn depth_and_agent_come_from_parents_even_when_children_start_first() {
    // Malformed timing: each child starts before its parent, so index
    // (start) order is the reverse of the tree order.
    let got = owners(vec![
        run(9, None, (300, 400), "a"),
        tool(1, Some(9), (100, 500), "outer"),
        tool(2, Some(1), (50, 500), "inner"),
        tool(3, Some(2), (10, 500), "innermost"),
    ]);
    assert_eq!(
        got,
        vec![
            own("inner", Some("a"), 1, Some(1)),
            own("innermost", Some("a"), 2, Some(2)),
            own("outer", Some("a"), 0, Some(9)),
        ]
    );
}
