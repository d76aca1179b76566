//! The eleventh held-out set's tool-span misses, on made-up vendors' shapes:
//! an attribute with an empty value, a fork's own entity type, a call id
//! spelled `_id`, a result inside a tool message, a framework's loop step
//! typed `tool` by a vendor's marker.

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use serde_json::json;

use super::*;
use crate::assemble::SpanRecord;
use crate::ingest::projection::{AttrsOf, KeyFilter};

/// A string attribute, or one whose `AnyValue` holds nothing (`None`).
fn kv(key: &str, v: Option<&str>) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            value: v.map(|s| any_value::Value::StringValue(s.to_string())),
        }),
        ..Default::default()
    }
}

fn span(id: u8, parent: Option<u8>, name: &str, attrs: &[(&str, Option<&str>)]) -> SpanRecord {
    let attributes = attrs.iter().map(|&(k, v)| kv(k, v)).collect();
    let start = u64::from(id) * 10;
    super::test_support::span_of(id, parent, name, (start, start + 5), attributes)
}

fn calls(spans: Vec<SpanRecord>) -> Vec<(String, Value, Value, String)> {
    super::test_support::calls_of(11, spans)
}

use super::test_support::call;

#[test]
fn an_attribute_with_an_empty_value_is_absent_to_conditions() {
    // A made-up processor writes an empty kind on a framework's tool span:
    // the exclusion asks whether the kind is there, and it is not.
    let tool = |kind: Option<&str>| {
        span(
            2,
            Some(1),
            "tool.execution:pick_seat",
            &[
                ("kestrel.span.type", Some("tool")),
                ("tool.name", Some("pick_seat")),
                ("input", Some(r#"{"row": 12}"#)),
                ("output", Some("seated")),
                ("openinference.span.kind", kind),
            ],
        )
    };
    let got = calls(vec![span(1, None, "run", &[]), tool(None)]);
    let want = call(
        "pick_seat",
        json!({"row": 12}),
        json!("seated"),
        "tool-kind",
    );
    assert_eq!(got, vec![want]);
    // A kind that is there still excludes it (OpenInference's rule reads
    // its own spans).
    assert!(calls(vec![span(1, None, "run", &[]), tool(Some("CHAIN"))]).is_empty());
}

#[test]
fn a_fork_s_own_entity_type_marks_a_tool_read_in_traceloop_keys() {
    // A made-up Traceloop fork types its entities `<ns>.entity.log_type`
    // and keeps the entity's name, input and output in Traceloop's keys.
    let entity = |id: u8, kind: &str, name: &str, input: &str, output: &str| {
        span(
            id,
            Some(1),
            &format!("{kind}.{name}"),
            &[
                ("plover.entity.log_type", Some(kind)),
                ("traceloop.entity.name", Some(name)),
                ("traceloop.entity.input", Some(input)),
                ("traceloop.entity.output", Some(output)),
            ],
        )
    };
    let got = calls(vec![
        span(
            1,
            None,
            "agent",
            &[("plover.entity.log_type", Some("agent"))],
        ),
        entity(2, "chat", "model_request", r#"[{"role": "user"}]"#, "{}"),
        // A call record, a dict result as a Python literal.
        entity(
            3,
            "tool",
            "pick_seat",
            r#"{"name": "pick_seat", "arguments": {"row": 12}}"#,
            "{'seat': '12A', 'window': True}",
        ),
        // The arguments and the result each in one tool message.
        entity(
            4,
            "tool",
            "order_tea",
            r#"[{"role": "tool", "content": "{\"cups\": 2}"}]"#,
            r#"{"role": "tool", "content": "served"}"#,
        ),
    ]);
    let seat = json!({"seat": "12A", "window": true});
    assert_eq!(
        got,
        vec![
            call("pick_seat", json!({"row": 12}), seat, "tool-kind"),
            call(
                "order_tea",
                json!({"cups": 2}),
                json!("served"),
                "tool-kind"
            ),
        ]
    );
    let p = Extractor::default().projection(Vec::new());
    assert!(p.keep(AttrsOf::Span, "plover.entity.log_type"));
    assert!(p.keep(AttrsOf::Span, "traceloop.entity.input"));
}

#[test]
fn a_call_id_spelled_with_an_underscore_joins_the_model_s_request() {
    // A tool span records the model's call id as `gen_ai.tool.call_id` and
    // its arguments nowhere a rule reads; the model's request under that id
    // gives them.
    let asked = r#"[{"role": "assistant", "parts": [{"type": "tool_call", "id": "c-41", "name": "pick_seat", "arguments": {"row": 12}}]}]"#;
    let got = calls(vec![
        span(1, None, "run", &[]),
        span(
            2,
            Some(1),
            "chat",
            &[
                ("gen_ai.operation.name", Some("chat")),
                ("gen_ai.output.messages", Some(asked)),
            ],
        ),
        span(
            3,
            Some(1),
            "pick_seat",
            &[
                ("gen_ai.tool.name", Some("pick_seat")),
                ("gen_ai.tool.call_id", Some("c-41")),
                ("output", Some("{}")),
            ],
        ),
    ]);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1, json!({"row": 12}));
    for key in [
        "gen_ai.tool.call_id",
        "tool.call_id",
        "tool_call_id",
        "ai.toolCallId",
    ] {
        assert!(source::call_id_keys().iter().any(|k| k == key), "{key}");
    }
    let p = Extractor::default().projection(Vec::new());
    assert!(p.keep(AttrsOf::Span, "gen_ai.tool.call_id"));
}

#[test]
fn a_generic_tool_span_holding_a_loop_step_is_no_call() {
    let marker = ("wren_event_type", Some("tool"));
    let step = |id: u8, parent: u8| span(id, Some(parent), "loop_step", &[marker]);
    let model = |id: u8, parent: u8| {
        span(
            id,
            Some(parent),
            "chat",
            &[
                ("wren_event_type", Some("model")),
                ("gen_ai.operation.name", Some("chat")),
            ],
        )
    };
    let tool = |id: u8, parent: u8| {
        span(
            id,
            Some(parent),
            "execute_tool pick_seat",
            &[
                ("gen_ai.operation.name", Some("execute_tool")),
                ("gen_ai.tool.name", Some("pick_seat")),
                ("gen_ai.tool.call.arguments", Some(r#"{"row": 12}"#)),
                ("gen_ai.tool.call.result", Some("seated")),
            ],
        )
    };
    let seat = call(
        "pick_seat",
        json!({"row": 12}),
        json!("seated"),
        "otel-genai",
    );
    // A step holding a model call and a named convention's tool span, and
    // one holding a model call alone: neither is a call.
    let got = calls(vec![
        span(1, None, "run", &[]),
        step(2, 1),
        model(3, 2),
        tool(4, 2),
        step(5, 1),
        model(6, 5),
    ]);
    assert_eq!(got, vec![seat.clone()]);
    // Nothing below it, or a call's own arguments or result: a call.
    let got = calls(vec![span(1, None, "run", &[]), step(2, 1)]);
    assert_eq!(got.len(), 1);
    let agent_tool = |id: u8, attr: (&'static str, Option<&'static str>)| {
        span(id, Some(1), "ask_expert", &[marker, attr])
    };
    for attr in [
        ("wren_inputs", Some(r#"{"topic": "seats"}"#)),
        ("wren_outputs", Some("window seats")),
    ] {
        let got = calls(vec![
            span(1, None, "run", &[]),
            agent_tool(2, attr),
            model(3, 2),
        ]);
        assert_eq!(got.len(), 1, "{attr:?}");
        assert_eq!(got[0].0, "ask_expert");
    }
}
