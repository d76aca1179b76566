//! Call records one span attribute per call, on a made-up vendor's spans.

use serde_json::{json, Value};

use super::is_record_key;
use crate::assemble::{Trace, TraceId};
use crate::extract::tests::sp;
use crate::extract::Extractor;

/// A made-up framework's run span listing its calls one attribute each
/// (`records`), a model call whose recorded output lost the calls, and a
/// later request whose assistant turn is mangled (empty ids and types)
/// before the results under their call ids (`answered`).
fn calls(records: &[(&str, &str)], answered: &[(&str, &str)]) -> Vec<(String, Value, Value)> {
    let mut request = vec![
        json!({"role": "user", "content": "tide and moon at Brest?"}),
        json!([{"id": "", "type": ""}, {"id": "", "type": ""}]),
    ];
    for (id, content) in answered {
        request.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
    }
    let request = Value::Array(request).to_string();
    let spans = vec![
        sp(1, None, (0, 100), "Quux.run", records),
        sp(
            2,
            Some(1),
            (10, 20),
            "quux.chat",
            &[
                ("gen_ai.operation.name", "chat"),
                (
                    "gen_ai.completion",
                    r#"[{"role": "assistant", "content": "{\"port\": \"Brest\"}{\"at\": \"Brest\"}"}]"#,
                ),
            ],
        ),
        sp(
            3,
            Some(1),
            (40, 50),
            "quux.chat",
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.input.messages", &request),
            ],
        ),
    ];
    let a = Extractor::default().analyze(&Trace::new(TraceId([7; 16]), spans, 0));
    a.calls
        .iter()
        .map(|c| {
            let result = c.result.as_ref().map(|r| r.to_value()).unwrap_or_default();
            let args = c.args.value().cloned().unwrap_or_default();
            (c.name.clone(), args, result)
        })
        .collect()
}

const TIDE: (&str, &str) = (
    "quux.run.tool_call.k1",
    r#"{"id": "k1", "name": "tide", "arguments": "{\"port\": \"Brest\"}", "start_time": 5}"#,
);
const MOON: (&str, &str) = (
    "quux.run.tool_calls.0",
    r#"{"call_id": "k2", "tool_name": "moon", "args": {"at": "Brest"}, "result": "full"}"#,
);

#[test]
fn each_attribute_holding_a_call_record_is_a_call_answered_by_id() {
    let got = calls(
        &[TIDE, MOON],
        &[("k1", "{\"high\": \"06:12\"}"), ("k2", "full")],
    );
    assert_eq!(
        got,
        vec![
            (
                "tide".into(),
                json!({"port": "Brest"}),
                json!({"high": "06:12"})
            ),
            ("moon".into(), json!({"at": "Brest"}), json!("full")),
        ]
    );
}

#[test]
fn the_key_s_last_part_is_the_id_of_a_record_without_one() {
    let record = (
        "quux.run.tool_call.k1",
        r#"{"name": "tide", "arguments": {"port": "Brest"}}"#,
    );
    let got = calls(&[record], &[("k1", "low")]);
    assert_eq!(
        got,
        vec![("tide".into(), json!({"port": "Brest"}), json!("low"))]
    );
    // A position is no id: such a record without its own id names no call.
    let record = ("quux.run.tool_calls.0", record.1);
    assert!(calls(&[record], &[("0", "low")]).is_empty());
}

#[test]
fn a_record_no_request_answers_or_a_schema_is_no_call() {
    assert!(calls(&[TIDE], &[]).is_empty());
    let schema = (
        "quux.run.tool_call.k1",
        r#"{"id": "k1", "name": "tide", "arguments": {"type": "object", "properties": {"port": {}}}}"#,
    );
    assert!(calls(&[schema], &[("k1", "low")]).is_empty());
    let nameless = ("quux.run.tool_call.k1", r#"{"id": "k1", "arguments": {}}"#);
    assert!(calls(&[nameless], &[("k1", "low")]).is_empty());
}

#[test]
fn record_keys_name_a_tool_call_before_their_last_part_or_in_it() {
    for key in [
        "quux.tool_call.k1",
        "a.b.tool_calls.3",
        "tool_call.x",
        "quux.function_call",
    ] {
        assert!(is_record_key(key.as_bytes()), "{key}");
    }
    for key in [
        "quux.tool_calls.0.function.name",
        "quux.tool_call_id",
        "tool_choice",
        "quux.tool_call.",
        "x",
    ] {
        assert!(!is_record_key(key.as_bytes()), "{key}");
    }
}
