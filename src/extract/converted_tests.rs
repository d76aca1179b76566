//! Spans of another instrumentation relabelled OpenInference TOOL in place by
//! a converter (openinference-instrumentation-openllmetry): the writer's own
//! span naming still tells its task, agent and workflow spans from its tool
//! spans (issue 37, held-out set 26). Our own names and values.

use serde_json::{json, Value};

use super::tests::sp;
use super::*;
use crate::assemble::TraceId;

fn analyze(spans: Vec<SpanRecord>) -> Analysis {
    Extractor::default().analyze(&Trace::new(TraceId([26; 16]), spans, 0))
}

/// Each call's name, arguments, result and convention.
fn calls(a: &Analysis) -> Vec<(String, Option<Value>, Option<Value>, String)> {
    a.calls
        .iter()
        .map(|c| {
            let result = c.result.as_ref().map(CallResult::to_value);
            let args = c.args.value().cloned();
            (c.name.clone(), args, result, c.convention.clone())
        })
        .collect()
}

/// A converted span: kind TOOL, `tool.name` its name, JSON input and output.
fn converted(
    id: u8,
    parent: Option<u8>,
    name: &str,
    tool_name: &str,
    input: &str,
    output: &str,
) -> SpanRecord {
    sp(
        id,
        parent,
        (u64::from(id) * 10, u64::from(id) * 10 + 5),
        name,
        &[
            ("openinference.span.kind", "TOOL"),
            ("tool.name", tool_name),
            ("input.mime_type", "application/json"),
            ("input.value", input),
            ("output.mime_type", "application/json"),
            ("output.value", output),
        ],
    )
}

#[test]
fn task_agent_and_workflow_spans_typed_tool_are_not_calls() {
    let state = r#"{"messages": [{"role": "user", "content": "tide?"}]}"#;
    let out = r#"{"outputs": {"messages": []}}"#;
    let a = analyze(vec![
        converted(1, None, "invoke_agent Graph", "Graph", state, out),
        converted(2, Some(1), "execute_task agent", "agent", state, out),
        converted(
            3,
            Some(2),
            "execute_task call_model",
            "call_model",
            state,
            out,
        ),
        converted(4, Some(1), "Graph.workflow", "Graph.workflow", state, out),
        converted(5, Some(1), "Planner.agent", "Planner.agent", state, out),
        converted(6, Some(1), "StepRunner.task", "StepRunner.task", state, out),
        converted(7, Some(1), "execute_task tools", "tools", state, out),
        converted(
            8,
            Some(7),
            "execute_tool tide_at",
            "tide_at",
            r#"{"port": "Sines"}"#,
            r#"{"metres": 2.2}"#,
        ),
    ]);
    assert_eq!(
        calls(&a),
        vec![(
            "tide_at".to_string(),
            Some(json!({"port": "Sines"})),
            Some(json!({"metres": 2.2})),
            "openinference".to_string()
        )]
    );
}

#[test]
fn names_that_only_look_like_another_kind_stay_calls() {
    // No space after the operation word, no `.kind` suffix of the writer's:
    // tools that happen to be named so.
    let a = analyze(vec![
        converted(
            1,
            None,
            "create_agent",
            "create_agent",
            r#"{"role": "pilot"}"#,
            r#""ok""#,
        ),
        converted(2, None, "task", "task", r#"{"id": 4}"#, r#""done""#),
        converted(
            3,
            None,
            "close_tasks",
            "close_tasks",
            r#"{"all": true}"#,
            "3",
        ),
    ]);
    let names: Vec<String> = calls(&a).into_iter().map(|c| c.0).collect();
    assert_eq!(names, ["create_agent", "task", "close_tasks"]);
}

#[test]
fn a_converted_wrapper_class_task_is_the_call_its_output_names() {
    let a = analyze(vec![
        converted(
            1,
            None,
            "FunctionTool.task",
            "FunctionTool.task",
            r#"{"kwargs": {"catalogue": "BWV 1008", "days": 3}}"#,
            r#"{"blocks": [{"block_type": "text", "text": "held"}], "tool_name": "hold_score", "raw_input": {"args": [], "kwargs": {"catalogue": "BWV 1008", "days": 3}}, "raw_output": "held", "is_error": false}"#,
        ),
        // Not a tool class: the workflow's step, which names the tool too.
        converted(
            2,
            None,
            "BaseWorkflowAgent.task",
            "BaseWorkflowAgent.task",
            "{}",
            r#"{"tool_name": "hold_score", "tool_kwargs": {"catalogue": "BWV 1008", "days": 3}, "tool_id": "c1"}"#,
        ),
    ]);
    assert_eq!(
        calls(&a),
        vec![(
            "hold_score".to_string(),
            Some(json!({"catalogue": "BWV 1008", "days": 3})),
            Some(json!("held")),
            "openinference-tool-task".to_string()
        )]
    );
}

#[test]
fn the_writers_tool_suffix_is_not_part_of_the_name() {
    let suffixed = |id: u8, span_name: &str, tool_name: &str| {
        sp(
            id,
            None,
            (u64::from(id) * 10, u64::from(id) * 10 + 5),
            span_name,
            &[
                ("openinference.span.kind", "TOOL"),
                ("tool.name", tool_name),
            ],
        )
    };
    let a = analyze(vec![
        suffixed(1, "move_berth.tool", "move_berth.tool"),
        // The span's name says nothing of the suffix: the name stays.
        suffixed(2, "run", "legacy.tool"),
    ]);
    let names: Vec<(String, String)> = calls(&a).into_iter().map(|c| (c.0, c.3)).collect();
    assert_eq!(
        names,
        [
            (
                "move_berth".to_string(),
                "openinference-suffixed".to_string()
            ),
            ("legacy.tool".to_string(), "openinference".to_string()),
        ]
    );
}
