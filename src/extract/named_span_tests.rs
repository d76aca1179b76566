//! The `named-function-span` family rule on made-up spans: a tool's own
//! record under any prefix, known by a name key whose value is the span's
//! name with the input beside it (AgentOps JS writes the OpenAI Agents
//! SDK's function span data as `function.name`/`.input`/`.output`).

use serde_json::json;

use super::test_support::calls_in as calls;
use super::*;
use crate::assemble::SpanRecord;
use crate::ingest::projection::{AttrsOf, KeyFilter};

fn span(id: u8, name: &str, when: (u64, u64), attrs: &[(&str, &str)]) -> SpanRecord {
    super::tests::sp(id, (id > 1).then_some(1), when, name, attrs)
}

#[test]
fn a_span_named_after_the_tool_with_its_input_under_a_prefix_is_a_call() {
    let got = calls(vec![
        span(1, "workflow", (0, 100), &[]),
        span(
            2,
            "check_tide",
            (10, 20),
            &[
                ("quux.name", "check_tide"),
                ("quux.input", r#"{"harbour": "Peniche"}"#),
                ("quux.output", r#"{"high": "14:05"}"#),
            ],
        ),
        // Another prefix, two levels deep; a text result.
        span(
            3,
            "ring_bell",
            (30, 40),
            &[
                ("zed.step.name", "ring_bell"),
                ("zed.step.input", r#"{"times": 2}"#),
                ("zed.step.output", "rung"),
            ],
        ),
    ]);
    let rule = "named-function-span".to_string();
    assert_eq!(
        got,
        vec![
            (
                "check_tide".into(),
                Some(json!({"harbour": "Peniche"})),
                Some(json!({"high": "14:05"})),
                rule.clone()
            ),
            (
                "ring_bell".into(),
                Some(json!({"times": 2})),
                Some(json!("rung")),
                rule
            ),
        ]
    );
}

#[test]
fn a_name_that_is_not_the_spans_or_no_input_beside_it_gives_no_call() {
    let got = calls(vec![
        span(1, "workflow", (0, 100), &[]),
        // An agent span: named after the agent, no input.
        span(
            2,
            "trip-agent",
            (5, 90),
            &[("agent.name", "trip-agent"), ("agent.output_type", "text")],
        ),
        // The name is not the span's.
        span(
            3,
            "Generation",
            (10, 20),
            &[("quux.name", "check_tide"), ("quux.input", "{}")],
        ),
        // The input in another namespace than the name.
        span(
            4,
            "check_tide",
            (30, 40),
            &[("quux.name", "check_tide"), ("other.input", "{}")],
        ),
        // A namespace ending in `_` is not one here.
        span(
            5,
            "check_tide",
            (50, 60),
            &[("quux_name", "check_tide"), ("quux_input", "{}")],
        ),
        // Typed by a kind key in another namespace: that marker's to judge.
        span(
            6,
            "planner",
            (62, 68),
            &[
                ("acme.entity.name", "planner"),
                ("acme.entity.input", "[]"),
                ("zeta.entity.log_type", "agent"),
            ],
        ),
        // A model call: its usage says so.
        span(
            7,
            "summarise",
            (70, 80),
            &[
                ("quux.name", "summarise"),
                ("quux.input", "{}"),
                ("gen_ai.usage.input_tokens", "12"),
            ],
        ),
    ]);
    assert_eq!(got, vec![]);
}

#[test]
fn decoding_keeps_what_the_rule_reads_and_no_snake_case_name() {
    let p = Extractor::default().projection(Vec::new());
    for key in ["quux.name", "quux.input", "quux.output", "name", "input"] {
        assert!(p.keep(AttrsOf::Span, key), "{key}");
    }
    assert!(!p.keep(AttrsOf::Span, "quux_name"));
}
