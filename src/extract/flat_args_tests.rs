//! Arguments written one attribute per key under a prefix in any namespace
//! (`{any}arguments`, `{any}call.kwargs`), typed by the offered tool's
//! schema, and the nested spans of one call that then agree (made-up
//! vendor namespaces; heldout13-py's mcp-agent and TruLens pairs).

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use serde_json::{json, Value};

use super::test_support::{call, calls_of, span_of};
use super::tests::sp;
use crate::assemble::SpanRecord;

fn kv(key: &str, v: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(v) }),
        ..Default::default()
    }
}

fn text(key: &str, v: &str) -> KeyValue {
    kv(key, any_value::Value::StringValue(v.into()))
}

fn int(key: &str, v: i64) -> KeyValue {
    kv(key, any_value::Value::IntValue(v))
}

const NO_OP: &str = "otel-genai-no-operation";

#[test]
fn arguments_under_any_namespace_are_one_object() {
    let spans = vec![
        span_of(
            1,
            None,
            "Skiff.harbor.call_tool",
            (10, 20),
            vec![
                text("gen_ai.tool.name", "moor_boat"),
                text("arguments.pier", "West"),
                int("arguments.nights", 2),
                text("arguments.crew.captain", "Ines"),
            ],
        ),
        span_of(
            2,
            None,
            "moor_boat",
            (30, 40),
            vec![
                text("gen_ai.tool.name", "moor_boat"),
                text("zeta.trace.call.kwargs.pier", "East"),
                int("zeta.trace.call.kwargs.nights", 1),
            ],
        ),
    ];
    assert_eq!(
        calls_of(1, spans),
        vec![
            call(
                "moor_boat",
                json!({"pier": "West", "nights": 2, "crew": {"captain": "Ines"}}),
                Value::Null,
                NO_OP
            ),
            call(
                "moor_boat",
                json!({"pier": "East", "nights": 1}),
                Value::Null,
                NO_OP
            ),
        ]
    );
}

#[test]
fn the_first_namespace_is_read_whole_and_never_mixed() {
    // Two writers' copies on one span: the request's params first.
    let spans = vec![span_of(
        1,
        None,
        "Skiff.call_tool",
        (10, 20),
        vec![
            text("gen_ai.tool.name", "moor_boat"),
            text("request.params.arguments.pier", "West"),
            text("processed.arguments.pier", "Elsewhere"),
            text("processed.arguments.extra", "x"),
            // A key that ends at the prefix holds no field.
            text("other.arguments", "{\"pier\": \"North\"}"),
        ],
    )];
    let got = calls_of(1, spans);
    assert_eq!(got[0].1, json!({"pier": "West"}));
}

#[test]
fn text_values_take_the_offered_schema_s_types() {
    let tools = r#"[{"type": "function", "name": "moor_boat", "parameters": {"type": "object",
        "properties": {"pier": {"type": "string"}, "nights": {"type": "integer"},
        "paid": {"type": "boolean"}}}}]"#;
    let model = sp(
        1,
        None,
        (1, 5),
        "chat",
        &[
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.request.model", "m"),
            ("gen_ai.tool.definitions", tools),
        ],
    );
    let tool = |id: u8| {
        sp(
            id,
            None,
            (10, 20),
            "Skiff.call_tool",
            &[
                ("gen_ai.tool.name", "moor_boat"),
                ("acme.arguments.pier", "7"),
                ("acme.arguments.nights", "2"),
                ("acme.arguments.paid", "False"),
            ],
        )
    };
    let typed = json!({"pier": "7", "nights": 2, "paid": false});
    assert_eq!(calls_of(1, vec![model, tool(2)])[0].1, typed);
    // Without a schema, text stays text.
    let untyped = json!({"pier": "7", "nights": "2", "paid": "False"});
    assert_eq!(calls_of(1, vec![tool(2)])[0].1, untyped);
}

/// mcp-agent's three records of one call: the model's call id and JSON
/// arguments outside, a span the rules do not read, the agent's span with
/// the arguments flattened inside.
fn nested(base: u8, at: u64, id: &str, pier: &str) -> Vec<SpanRecord> {
    let args = format!("{{\"pier\": \"{pier}\"}}");
    vec![
        sp(
            base,
            Some(9),
            (at, at + 10),
            "Llm.harbor.execute_tool_call",
            &[
                ("gen_ai.tool.name", "moor_boat"),
                ("gen_ai.tool.call.id", id),
                ("tool_args", &args),
            ],
        ),
        sp(
            base + 1,
            Some(base),
            (at + 1, at + 9),
            "Llm.harbor.call_tool",
            &[
                ("processed.request.gen_ai.tool.name", "moor_boat"),
                ("request.params.arguments.pier", pier),
            ],
        ),
        sp(
            base + 2,
            Some(base + 1),
            (at + 2, at + 8),
            "Agent.harbor.call_tool",
            &[
                ("gen_ai.tool.name", "moor_boat"),
                ("arguments.pier", pier),
                ("result.content.0.type", "text"),
                ("result.content.0.text", "moored"),
            ],
        ),
    ]
}

#[test]
fn nested_records_of_one_call_are_one_call_and_parallel_calls_stay_two() {
    let mut spans = vec![sp(9, None, (0, 100), "execute_many", &[])];
    // Two calls of one tool at once, other arguments: two calls.
    spans.extend(nested(10, 10, "call_a", "West"));
    spans.extend(nested(20, 11, "call_b", "East"));
    spans.sort_by_key(|s| s.span.start_time_unix_nano);
    let got = calls_of(1, spans);
    let args: Vec<&Value> = got.iter().map(|c| &c.1).collect();
    assert_eq!(args, [&json!({"pier": "West"}), &json!({"pier": "East"})]);
    // The inner record's result (no model span here to give one).
    assert!(got.iter().all(|c| c.2 == json!("moored")), "{got:?}");
    // The same arguments one after the other: still two calls.
    let mut spans = vec![sp(9, None, (0, 100), "execute_many", &[])];
    spans.extend(nested(10, 10, "call_a", "West"));
    spans.extend(nested(20, 30, "call_b", "West"));
    assert_eq!(calls_of(1, spans).len(), 2);
}

#[test]
fn decoding_keeps_arguments_flattened_in_any_namespace() {
    use crate::ingest::projection::{AttrsOf, KeyFilter};
    let p = super::Extractor::default().projection(Vec::new());
    for key in [
        "arguments.pier",
        "request.params.arguments.pier",
        "zeta.trace.call.kwargs.crew.captain",
    ] {
        assert!(p.keep(AttrsOf::Span, key), "{key}");
    }
    for key in ["myarguments.pier", "zeta.kwargs.pier", "call.kwargsx.pier"] {
        assert!(!p.keep(AttrsOf::Span, key), "{key}");
    }
}

#[test]
fn any_namespace_starts_the_key_of_a_flat_source_only() {
    use super::rules::{CondSpec, RuleSpec, SourceSpec};
    let rule = |attr: &str, flat: bool| RuleSpec {
        name: "harbor".into(),
        priority: 1,
        when: vec![CondSpec::attr_equals("harbor.kind", "tool")],
        name_from: vec![SourceSpec {
            attr: Some("harbor.tool".into()),
            ..SourceSpec::default()
        }],
        args: vec![SourceSpec {
            attr: Some(attr.into()),
            flat,
            ..SourceSpec::default()
        }],
        ..RuleSpec::default()
    };
    assert!(super::Extractor::new(&[rule("{any}params", true)]).is_ok());
    for (attr, flat) in [
        ("{any}params", false),
        ("harbor.{any}params", true),
        ("{any}", true),
        ("{any}{any}params", true),
    ] {
        assert!(
            super::Extractor::new(&[rule(attr, flat)]).is_err(),
            "{attr} {flat}"
        );
    }
}

#[test]
fn a_result_flattened_as_a_list_of_content_blocks_is_its_text() {
    let spans = vec![
        sp(
            1,
            None,
            (10, 20),
            "Skiff.call_tool",
            &[
                ("gen_ai.tool.name", "moor_boat"),
                ("result.isError", "false"),
                ("result.content.0.type", "text"),
                ("result.content.0.text", "{'berth': 'B4', 'fee': 12}"),
            ],
        ),
        sp(
            2,
            None,
            (30, 40),
            "Skiff.call_tool",
            &[
                ("gen_ai.tool.name", "moor_boat"),
                // Not a list: index 1 without 0.
                ("result.content.1.text", "late"),
            ],
        ),
    ];
    let got = calls_of(1, spans);
    assert_eq!(got[0].2, json!({"berth": "B4", "fee": 12}));
    assert_eq!(got[1].2, json!({"content": {"1": {"text": "late"}}}));
}

#[test]
fn a_kind_marked_span_reads_them_and_explain_names_the_prefix_found() {
    use crate::assemble::{Trace, TraceId};
    let t = Trace::new(
        TraceId([1; 16]),
        vec![sp(
            1,
            None,
            (0, 10),
            "moor_boat",
            &[
                ("zeta.span.kind", "tool"),
                ("zeta.call.kwargs.pier", "West"),
                ("zeta.result.content.0.type", "text"),
                ("zeta.result.content.0.text", "{'berth': 'B4'}"),
            ],
        )],
        0,
    );
    let x = super::Extractor::default();
    let calls = x.extract(&t);
    assert_eq!(calls[0].args.value(), Some(&json!({"pier": "West"})));
    let result = calls[0].result.as_ref().map(super::CallResult::to_value);
    assert_eq!(result, Some(json!({"berth": "B4"})));
    let m = x.explain(&t)[0].matched.clone().expect("matched");
    assert_eq!(m.rule, "tool-kind");
    assert_eq!(
        m.read,
        vec![
            "zeta.span.kind",
            "span name",
            "zeta.call.kwargs",
            "zeta.result"
        ]
    );
}
