//! Argument and result shapes on made-up spans: the declared key
//! vocabularies of GenAI tool spans, framework keywords beside a tool's
//! declared parameters, a provider's object-only result wrapper in
//! flattened messages.

use std::sync::Arc;

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::Span;
use serde_json::json;

use super::test_support::calls_in as calls;
use super::*;
use crate::assemble::{SpanRecord, Trace, TraceId};

fn kv(key: &str, v: &str) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(v.to_string())),
        }),
        ..Default::default()
    }
}

fn span(id: u8, name: &str, start: u64, attrs: &[(&str, &str)]) -> SpanRecord {
    SpanRecord {
        span_id: SpanId([id; 8]),
        parent: None,
        span: Span {
            span_id: vec![id; 8],
            name: name.to_string(),
            start_time_unix_nano: start,
            end_time_unix_nano: start + 10,
            attributes: attrs.iter().map(|(k, v)| kv(k, v)).collect(),
            ..Default::default()
        }
        .into(),
        resource: Arc::new(Resource::default()),
        scope: Arc::new(InstrumentationScope::default()),
    }
}

#[test]
fn every_key_of_the_genai_tool_vocabularies_is_read() {
    // A made-up vendor writing each draft name in turn, with and without
    // an operation name.
    let pairs = [
        ("gen_ai.tool.arguments", "gen_ai.tool.message"),
        ("gen_ai.tool.arguments", "gen_ai.tool.result"),
        ("gen_ai.tool.input", "gen_ai.tool.response"),
        ("gen_ai.tool.call.arguments", "gen_ai.tool.output"),
    ];
    for (args_key, result_key) in pairs {
        for op in [true, false] {
            let mut attrs = vec![
                ("gen_ai.tool.name", "find_museum"),
                (args_key, r#"{"city":"Turin"}"#),
                (result_key, r#"{"museum":"Egizio"}"#),
            ];
            if op {
                attrs.push(("gen_ai.operation.name", "execute_tool"));
            }
            let got = calls(vec![span(1, "execute_tool find_museum", 0, &attrs)]);
            assert_eq!(got.len(), 1, "{args_key} {result_key} {op}");
            let (name, args, result, _) = &got[0];
            assert_eq!(name, "find_museum");
            assert_eq!(args, &Some(json!({"city": "Turin"})), "{args_key} {op}");
            assert_eq!(
                result,
                &Some(json!({"museum": "Egizio"})),
                "{result_key} {op}"
            );
        }
    }
}

#[test]
fn the_vocabulary_comes_after_every_key_a_rule_read_before() {
    // The semantic conventions' key wins over a draft name on the same span.
    let got = calls(vec![span(
        1,
        "execute_tool find_museum",
        0,
        &[
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "find_museum"),
            ("gen_ai.tool.call.arguments", r#"{"city":"Turin"}"#),
            ("gen_ai.tool.arguments", r#"{"city":"Milan"}"#),
            ("gen_ai.tool.call.result", r#""open""#),
            ("gen_ai.tool.message", r#""closed""#),
        ],
    )]);
    assert_eq!(got[0].1, Some(json!({"city": "Turin"})));
    assert_eq!(got[0].2, Some(json!("open")));
}

/// Two model calls of one trace in OpenInference's flattened messages: the
/// first asks for `book_taxi`, the second's request carries its result
/// `content`, both spans naming `provider`, the second with `extra`
/// attributes too.
fn flattened_exchange(provider: &str, content: &str, extra: &[(&str, &str)]) -> Vec<SpanRecord> {
    let asked = [
        ("openinference.span.kind", "LLM"),
        ("llm.provider", provider),
        ("llm.input_messages.0.message.role", "user"),
        ("llm.input_messages.0.message.content", "A taxi for two."),
        ("llm.output_messages.0.message.role", "assistant"),
        (
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
            "book_taxi",
        ),
        (
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
            r#"{"seats": 2}"#,
        ),
    ];
    let answered = [
        ("openinference.span.kind", "LLM"),
        ("llm.provider", provider),
        ("llm.input_messages.0.message.role", "user"),
        ("llm.input_messages.0.message.content", "A taxi for two."),
        ("llm.input_messages.1.message.role", "assistant"),
        (
            "llm.input_messages.1.message.tool_calls.0.tool_call.function.name",
            "book_taxi",
        ),
        (
            "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments",
            r#"{"seats": 2}"#,
        ),
        ("llm.input_messages.2.message.role", "tool"),
        ("llm.input_messages.2.message.name", "book_taxi"),
        ("llm.input_messages.2.message.content", content),
        ("llm.output_messages.0.message.role", "assistant"),
        ("llm.output_messages.0.message.content", "Booked."),
    ];
    let answered: Vec<_> = answered.iter().chain(extra).copied().collect();
    vec![
        span(1, "generate_content", 0, &asked),
        span(2, "generate_content", 100, &answered),
    ]
}

#[test]
fn gemini_s_object_only_wrapper_comes_off_flattened_results_and_nothing_else() {
    let result = |provider: &str, content: &str| {
        let got = calls(flattened_exchange(provider, content, &[]));
        assert_eq!(got.len(), 1, "{provider} {content}: {got:?}");
        assert_eq!(got[0].1, Some(json!({"seats": 2})));
        got[0].2.clone()
    };
    for gemini in ["google", "vertexai", "gcp.vertex_ai", "Gemini"] {
        assert_eq!(
            result(gemini, r#"{"result": "booked"}"#),
            Some(json!("booked"))
        );
        assert_eq!(result(gemini, r#"{"output": 4}"#), Some(json!(4)));
        // `output` is Gemini's documented key: it comes off an object too.
        assert_eq!(
            result(gemini, r#"{"output": {"cab": 7}}"#),
            Some(json!({"cab": 7}))
        );
        // A tool message on a Gemini span is Gemini's function response,
        // as a `functionResponse` part is: with no declared response
        // schema an object under a lone `result` is the loop's wrapper
        // (google-genai's automatic function calling wraps every value).
        assert_eq!(
            result(gemini, r#" {"result": {"cab": 7}}"#),
            Some(json!({"cab": 7}))
        );
        // A second key is the tool's own, and so is text that is no JSON.
        assert_eq!(
            result(gemini, r#"{"result": "booked", "cab": 7}"#),
            Some(json!({"result": "booked", "cab": 7}))
        );
        assert_eq!(
            result(gemini, r#"{"result": {"cab": 7}"#),
            Some(json!(r#"{"result": {"cab": 7}"#))
        );
    }
    // Another provider takes any value: the key is the tool's.
    assert_eq!(
        result("openai", r#"{"result": "booked"}"#),
        Some(json!({"result": "booked"}))
    );
    assert_eq!(
        result("openai", r#"{"result": {"cab": 7}}"#),
        Some(json!({"result": {"cab": 7}}))
    );
    assert_eq!(
        result("openai", r#"{"output": {"cab": 7}}"#),
        Some(json!({"output": {"cab": 7}}))
    );
}

#[test]
fn a_declared_result_property_or_a_lone_error_reads_as_in_a_gemini_part() {
    let content = r#"{"result": {"cab": 7}}"#;
    // A response schema with a `result` property: the key is the tool's.
    let declared = |property: &str| {
        let schema = json!({"type": "object", "properties": {property: {"type": "object"}}});
        let tools = json!([{"name": "book_taxi", "response_json_schema": schema}]);
        let got = calls(flattened_exchange(
            "google",
            content,
            &[("gen_ai.tool.definitions", &tools.to_string())],
        ));
        got[0].2.clone()
    };
    assert_eq!(declared("result"), Some(json!({"result": {"cab": 7}})));
    assert_eq!(declared("cab"), Some(json!({"cab": 7})));
    // `error` alone: the call failed, on a Gemini span, and on any other
    // read from the conversation alone (`conversation_error_keys`).
    let status = |provider: &str, content: &str| {
        let trace = Trace::new(
            TraceId([7; 16]),
            flattened_exchange(provider, content, &[]),
            0,
        );
        let got = Extractor::default().extract(&trace);
        assert_eq!(got.len(), 1, "{provider} {content}");
        (got[0].status.clone(), got[0].error_message.clone())
    };
    let ok = (CallStatus::Ok, None);
    assert_eq!(
        status("google", r#"{"error": "no cabs"}"#),
        (CallStatus::Error, Some("no cabs".to_string()))
    );
    assert_eq!(
        status("openai", r#"{"error": "no cabs"}"#),
        (CallStatus::Error, Some("no cabs".to_string()))
    );
    assert_eq!(status("google", r#"{"error": ""}"#), ok);
    assert_eq!(status("google", r#"{"error": "no cabs", "cab": 7}"#), ok);
}

#[test]
fn a_kind_marker_written_as_a_json_object_or_flattened_is_a_tool_span() {
    // Braintrust's SDKs: `<ns>.span_attributes` = `{"type": "tool", "name"}`
    // (or its flattened keys), arguments and result as `<ns>.input_json` /
    // `<ns>.output_json`; here in a made-up namespace.
    let object = [
        (
            "acme.span_attributes",
            r#"{"type":"tool","name":"find_museum"}"#,
        ),
        ("acme.input_json", r#"{"city":"Turin"}"#),
        ("acme.output_json", r#"{"museum":"Egizio"}"#),
    ];
    let flat = [
        ("acme.span_attributes.type", "tool"),
        ("acme.span_attributes.name", "find_museum"),
        ("acme.input_json", r#"{"city":"Turin"}"#),
        ("acme.output_json", r#"{"museum":"Egizio"}"#),
    ];
    for attrs in [&object[..], &flat[..]] {
        let got = calls(vec![span(1, "runner.step", 0, attrs)]);
        assert_eq!(
            got,
            [(
                "find_museum".to_string(),
                Some(json!({"city": "Turin"})),
                Some(json!({"museum": "Egizio"})),
                "tool-kind".to_string()
            )],
            "{attrs:?}"
        );
    }
    // Another type in the object, or an object without one, is no tool.
    for marker in [r#"{"type":"llm"}"#, r#"{"name":"find_museum"}"#, "{"] {
        let got = calls(vec![span(
            1,
            "runner.step",
            0,
            &[("acme.span_attributes", marker), ("acme.input_json", "{}")],
        )]);
        assert!(got.is_empty(), "{marker}: {got:?}");
    }
}

#[test]
fn livekit_function_tool_spans_are_calls() {
    // Older keys, then the ones LiveKit marks for redaction; the output is
    // the `str()` of what the tool returned.
    for (args_key, out_key) in [
        ("lk.function_tool.arguments", "lk.function_tool.output"),
        (
            "lk.pii.function_tool.arguments",
            "lk.pii.function_tool.output",
        ),
    ] {
        let got = calls(vec![span(
            1,
            "function_tool",
            0,
            &[
                ("lk.function_tool.id", "call_lk1"),
                ("lk.function_tool.name", "book_taxi"),
                (args_key, r#"{"seats": 2}"#),
                (out_key, "{'cab': 7, 'ok': True}"),
                ("lk.function_tool.is_error", "false"),
            ],
        )]);
        assert_eq!(
            got,
            [(
                "book_taxi".to_string(),
                Some(json!({"seats": 2})),
                Some(json!({"cab": 7, "ok": true})),
                "livekit".to_string()
            )],
            "{args_key}"
        );
    }
}

#[test]
fn spring_ai_tool_observations_are_calls_in_either_generation() {
    let content = [
        ("spring.ai.tool.definition.name", "book_taxi"),
        ("spring.ai.tool.call.arguments", r#"{"seats":2}"#),
        ("spring.ai.tool.call.result", r#""booked""#),
    ];
    let v1 = [
        ("spring.ai.kind", "tool_call"),
        ("gen_ai.operation.name", "framework"),
    ];
    let v2 = [
        ("spring.ai.kind", "tool_call"),
        ("gen_ai.operation.name", "execute_tool"),
    ];
    for (name, marks, rule) in [
        ("tool_call book_taxi", &v1, "spring-ai"),
        ("execute_tool book_taxi", &v2, "otel-genai"),
    ] {
        let attrs: Vec<(&str, &str)> = marks.iter().chain(&content).copied().collect();
        let got = calls(vec![span(1, name, 0, &attrs)]);
        assert_eq!(
            got,
            [(
                "book_taxi".to_string(),
                Some(json!({"seats": 2})),
                Some(json!("booked")),
                rule.to_string()
            )],
            "{name}"
        );
    }
}
