//! The generic tool-kind rule in a namespace written with `:` for `.`
//! (`extract::colon_ns`), on made-up spans in the shape Genkit's own
//! telemetry writes: action spans typed `<ns>:metadata:subtype`, the tool's
//! name, input and output beside the marker, a thrown tool's span failed.

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::Status;
use serde_json::{json, Value};

use super::test_support::{event, span_of};
use super::{CallResult, CallStatus, Extractor};
use crate::assemble::{SpanRecord, Trace, TraceId};

fn span(id: u8, parent: Option<u8>, name: &str, attrs: &[(&str, &str)]) -> SpanRecord {
    let start = u64::from(id) * 10;
    let attributes = attrs
        .iter()
        .map(|(k, v)| KeyValue {
            key: (*k).to_string(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue((*v).to_string())),
            }),
            ..Default::default()
        })
        .collect();
    span_of(id, parent, name, (start, start + 5), attributes)
}

/// A tool action span of namespace `ns` (`acme:`), its output or none.
fn tool_action(id: u8, ns: &str, name: &str, input: &str, output: Option<&str>) -> SpanRecord {
    let keys: Vec<(String, String)> = [
        ("type", "action"),
        ("metadata:subtype", "tool"),
        ("name", name),
        ("input", input),
    ]
    .into_iter()
    .chain(output.map(|o| ("output", o)))
    .map(|(k, v)| (format!("{ns}{k}"), v.to_string()))
    .collect();
    let attrs: Vec<(&str, &str)> = keys.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    span(id, Some(1), name, &attrs)
}

/// `(name, arguments, result, status, error message, convention)` of
/// each call.
type Row = (
    String,
    Option<Value>,
    Option<Value>,
    CallStatus,
    Option<String>,
    String,
);

fn calls(spans: Vec<SpanRecord>) -> Vec<Row> {
    Extractor::default()
        .extract(&Trace::new(TraceId([0x3a; 16]), spans, 0))
        .into_iter()
        .map(|c| {
            let result = c.result.as_ref().map(CallResult::to_value);
            let args = c.args.value().cloned();
            (
                c.name,
                args,
                result,
                c.status,
                c.error_message,
                c.convention,
            )
        })
        .collect()
}

fn ok(name: &str, args: Value, result: Value) -> Row {
    let rule = "tool-kind".to_string();
    (
        name.into(),
        Some(args),
        Some(result),
        CallStatus::Ok,
        None,
        rule,
    )
}

/// A model action asking for `asks` (`(ref, name, input)`), Genkit's
/// message shape.
fn model_asking(id: u8, asks: &[(&str, &str, Value)]) -> SpanRecord {
    let content: Vec<Value> = asks
        .iter()
        .map(|(r, n, i)| json!({"toolRequest": {"name": n, "ref": r, "input": i}}))
        .collect();
    let out = json!({"finishReason": "stop", "message": {"role": "model", "content": content}});
    let input = json!({"messages": [{"role": "user", "content": [{"text": "go"}]}]});
    span(
        id,
        Some(1),
        "acme/model",
        &[
            ("genkit:type", "action"),
            ("genkit:metadata:subtype", "model"),
            ("genkit:name", "acme/model"),
            ("genkit:input", &input.to_string()),
            ("genkit:output", &out.to_string()),
        ],
    )
}

#[test]
fn a_tool_action_in_a_colon_namespace_is_one_call_beside_the_models_ask() {
    let util = [("genkit:type", "util"), ("genkit:name", "generate")];
    let mut thrown = tool_action(
        5,
        "genkit:",
        "hold_room",
        r#"{"room": "B2", "nights": 3}"#,
        None,
    );
    thrown.span.status = Some(Status {
        code: 2,
        message: "room B2 is closed for repairs".into(),
    });
    let thrown_event = event(
        "exception",
        "exception.message",
        "room B2 is closed for repairs",
    );
    thrown.span.events.push(thrown_event);
    let got = calls(vec![
        span(1, None, "generate", &util),
        model_asking(2, &[("r1", "find_room", json!({"floor": 2}))]),
        tool_action(
            3,
            "genkit:",
            "find_room",
            r#"{"floor": 2}"#,
            Some(r#"["B2"]"#),
        ),
        // The ask for the tool that threw: no later request answers it;
        // the span alone records the call.
        model_asking(
            4,
            &[("r2", "hold_room", json!({"room": "B2", "nights": 3}))],
        ),
        thrown,
    ]);
    let failed = (
        "hold_room".to_string(),
        Some(json!({"room": "B2", "nights": 3})),
        None,
        CallStatus::Error,
        Some("room B2 is closed for repairs".to_string()),
        "tool-kind".to_string(),
    );
    assert_eq!(
        got,
        vec![ok("find_room", json!({"floor": 2}), json!(["B2"])), failed]
    );
}

#[test]
fn any_namespace_written_with_colons_reads_so() {
    // A made-up vendor: the name under `{ns}tool.name` in its `:` form.
    let got = calls(vec![
        span(1, None, "run", &[]),
        span(
            2,
            Some(1),
            "step",
            &[
                ("acme:metadata:subtype", "TOOL"),
                ("acme:tool:name", "pick_seat"),
                ("acme:input", r#"{"row": 9}"#),
                ("acme:output", r#""9C""#),
            ],
        ),
        // A kind key of one segment after a `:` namespace.
        span(
            3,
            Some(1),
            "count",
            &[
                ("zeta:span_kind", "tool"),
                ("zeta:input", r#"{"n": 1}"#),
                ("zeta:output", "2"),
            ],
        ),
    ]);
    assert_eq!(
        got,
        vec![
            ok("pick_seat", json!({"row": 9}), json!("9C")),
            ok("count", json!({"n": 1}), json!(2)),
        ]
    );
}

#[test]
fn other_subtypes_and_near_misses_are_no_call() {
    let io = |ns: &str| {
        [
            (format!("{ns}input"), r#"{"a": 1}"#.to_string()),
            (format!("{ns}output"), r#"{"b": 2}"#.to_string()),
        ]
    };
    let near = [
        // Genkit's other actions: a flow, a model, an embedder.
        ("genkit:metadata:subtype", "flow"),
        ("genkit:metadata:subtype", "model"),
        ("genkit:metadata:subtype", "embedder"),
        // Not the kind: a longer word, a segment after it that is no run.
        ("acme:metadata:subtype", "toolkit"),
        ("acme:metadata:subtype", "tool_choice"),
        // Mixed separators, no namespace, an empty one.
        ("acme:metadata.subtype", "tool"),
        ("metadata:subtype", "tool"),
        (":metadata:subtype", "tool"),
        // `type = action` alone says nothing of the kind.
        ("genkit:type", "action"),
    ];
    for (i, (k, v)) in near.iter().enumerate() {
        let ns = k
            .split(':')
            .next()
            .map_or(String::new(), |n| format!("{n}:"));
        let extra = io(&ns);
        let mut attrs: Vec<(&str, &str)> = vec![(k, v)];
        attrs.extend(extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let got = calls(vec![
            span(1, None, "run", &[]),
            span(2, Some(1), "lookup", &attrs),
        ]);
        assert!(got.is_empty(), "near miss {i} ({k} = {v}): {got:?}");
    }
}
