//! The `logfire-tool` rule: Logfire spans a user writes around each tool,
//! known by a message template opening with the word `tool` and an
//! attribute naming the tool; their pending copies are no calls.

use serde_json::json;

use super::test_support::calls_in as calls;
use crate::assemble::SpanRecord;

fn span(id: u8, name: &str, when: (u64, u64), attrs: &[(&str, &str)]) -> SpanRecord {
    super::tests::sp(id, (id > 1).then_some(1), when, name, attrs)
}

#[test]
fn a_logfire_span_templated_tool_with_the_tools_name_is_a_call() {
    let got = calls(vec![
        span(
            1,
            "desk agent",
            (0, 100),
            &[("logfire.msg_template", "desk agent")],
        ),
        // `logfire.span("tool {tool_name}", {tool_name, arguments})`, the
        // result set on the span.
        span(
            2,
            "tool {tool_name}",
            (10, 20),
            &[
                ("logfire.msg_template", "tool {tool_name}"),
                ("logfire.msg", "tool lamp_status"),
                ("tool_name", "lamp_status"),
                ("tool_call_id", "c-1"),
                ("arguments", r#"{"desk": 4}"#),
                ("result", r#"{"on": true}"#),
            ],
        ),
        // Its pending copy, opened before the call ran.
        span(
            3,
            "tool {tool_name}",
            (10, 10),
            &[
                ("logfire.msg_template", "tool {tool_name}"),
                ("logfire.span_type", "pending_span"),
                ("tool_name", "lamp_status"),
                ("arguments", r#"{"desk": 4}"#),
            ],
        ),
        // JS `logfire.instrument(fn, {message: "tool dim_lamp",
        // extractArgs: ["args"], recordReturn: true})`.
        span(
            4,
            "dim_lamp",
            (30, 40),
            &[
                ("logfire.msg_template", "tool dim_lamp"),
                ("tool.name", "dim_lamp"),
                ("args", r#"{"desk": 4, "level": 0.3}"#),
                ("return", "dimmed"),
            ],
        ),
    ]);
    let rule = "logfire-tool".to_string();
    assert_eq!(
        got,
        vec![
            (
                "lamp_status".into(),
                Some(json!({"desk": 4})),
                Some(json!({"on": true})),
                rule.clone()
            ),
            (
                "dim_lamp".into(),
                Some(json!({"desk": 4, "level": 0.3})),
                Some(json!("dimmed")),
                rule
            ),
        ]
    );
}

#[test]
fn another_template_or_no_tools_name_is_no_call() {
    let got = calls(vec![
        span(1, "desk agent", (0, 100), &[]),
        // A template about tools, not a tool's run.
        span(
            2,
            "toolbox {n}",
            (10, 20),
            &[
                ("logfire.msg_template", "toolbox {n}"),
                ("tool_name", "lamp_status"),
                ("arguments", "{}"),
            ],
        ),
        // No attribute names the tool.
        span(
            3,
            "tool {x}",
            (30, 40),
            &[("logfire.msg_template", "tool {x}"), ("x", "lamp_status")],
        ),
        // Not Logfire's template at all.
        span(
            4,
            "tool lamp",
            (50, 60),
            &[("tool_name", "lamp_status"), ("arguments", "{}")],
        ),
    ]);
    assert_eq!(got, vec![]);
}
