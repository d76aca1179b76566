//! What a tool span holds, on spans of made-up vendors (docs/conventions.md,
//! "Result wrappers", "Argument wrappers", "Key vocabularies"): a result
//! envelope around the text the model saw, a call record under a vendor's
//! input key, a tool span's own lone tool message, and a model call a kind
//! attribute types TOOL.

use serde_json::json;

use super::unwrap_tests::{calls, one, span, trace};
use super::*;

#[test]
fn a_result_envelope_comes_off_under_a_namespace_no_rule_knows() {
    // A framework's result object: text blocks with its own ids and
    // times, a state and metadata beside them.
    let envelope = r#"{"content": [{"type": "text", "text": "{\"seat\": \"12A\"}", "id": "b7", "created_at": "2031-01-01T00:00:00", "finished_at": null}], "state": "success", "metadata": {}, "id": "t-9"}"#;
    let (_, args, result, convention) = one(
        "pick_seat",
        &[
            ("quill.span.kind", "tool"),
            ("quill.input", r#"{"row": 12}"#),
            ("quill.output", envelope),
        ],
    );
    assert_eq!(
        (args, result, convention.as_str()),
        (json!({"row": 12}), json!({"seat": "12A"}), "tool-kind")
    );
    // A tool message's repr() under `output`, on a GenAI tool span.
    let repr = r#"{"output": "content='{\"seat\": \"12A\"}' name='pick_seat' tool_call_id='t-9'"}"#;
    let (_, _, result, _) = one(
        "execute_tool pick_seat",
        &[
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "pick_seat"),
            ("gen_ai.tool.call.arguments", r#"{"row": 12}"#),
            ("gen_ai.tool.call.result", repr),
        ],
    );
    assert_eq!(result, json!({"seat": "12A"}));
    // A plain result, and one with a key of the tool's own, stay as read.
    for own in [
        r#"{"seat": "12A"}"#,
        r#"{"content": [{"type": "text", "text": "a"}], "seats": 2}"#,
    ] {
        let (_, _, result, _) = one(
            "pick_seat",
            &[
                ("quill.span.kind", "tool"),
                ("quill.input", "{}"),
                ("quill.output", own),
            ],
        );
        assert_eq!(result, serde_json::from_str::<Value>(own).expect("json"));
    }
}

#[test]
fn a_call_record_under_a_vendor_s_input_key_gives_the_arguments() {
    let (name, args, _, _) = one(
        "pick_seat.tool",
        &[
            ("quill.span.type", "TOOL"),
            (
                "quill.span.input",
                r#"{"tool_name": "pick_seat", "arguments": {"row": 12}}"#,
            ),
            (
                "quill.span.output",
                r#"{"content": [{"type": "text", "text": "ok"}], "isError": false}"#,
            ),
        ],
    );
    assert_eq!((name.as_str(), args), ("pick_seat", json!({"row": 12})));
    // Laminar's key, declared in the `vendor_tool_input` vocabulary, under
    // the GenAI tool name alone (`otel-genai-no-operation`).
    let (_, args, result, convention) = one(
        "pick_seat.tool",
        &[
            ("gen_ai.tool.name", "pick_seat"),
            (
                "lmnr.span.input",
                r#"{"tool_name": "pick_seat", "arguments": {"row": 12}}"#,
            ),
            (
                "lmnr.span.output",
                r#"{"content": [{"type": "text", "text": "ok"}], "isError": false}"#,
            ),
        ],
    );
    assert_eq!(
        (args, result, convention.as_str()),
        (json!({"row": 12}), json!("ok"), "otel-genai-no-operation")
    );
}

#[test]
fn a_tool_span_s_own_lone_tool_message_gives_its_arguments_and_result() {
    let (_, args, result, _) = one(
        "execute_tool pick_seat",
        &[
            ("gen_ai.tool.name", "pick_seat"),
            ("gen_ai.tool.call.id", "t-9"),
            (
                "gen_ai.input.messages",
                r#"[{"role":"tool","content":"{\"row\":12}"}]"#,
            ),
            (
                "gen_ai.output.messages",
                r#"[{"role":"tool","content":"seated"}]"#,
            ),
        ],
    );
    assert_eq!((args, result), (json!({"row": 12}), json!("seated")));
    // Messages of another shape (a conversation) give nothing.
    let (_, args, result, _) = one(
        "execute_tool pick_seat",
        &[
            ("gen_ai.tool.name", "pick_seat"),
            (
                "gen_ai.input.messages",
                r#"[{"role":"user","content":"a seat"},{"role":"tool","content":"{}"}]"#,
            ),
        ],
    );
    assert_eq!((args, result), (Value::Null, Value::Null));
}

#[test]
fn a_model_call_typed_tool_is_no_tool_call() {
    let usage = [
        ("gen_ai.usage.input_tokens", "40"),
        ("llm.token_count.prompt", "40"),
        ("gen_ai.response.model", "trip-model"),
    ];
    for (key, value) in usage {
        for marker in [
            ("openinference.span.kind", "TOOL"),
            ("quill.span.kind", "tool"),
        ] {
            let t = trace(vec![span(
                1,
                None,
                "chat trip-model",
                &[marker, ("tool.name", "pick_seat"), (key, value)],
            )]);
            assert!(calls(&t).is_empty(), "{marker:?} with {key}");
        }
    }
    // A chat operation is a model call too; without either, a call.
    let chat = trace(vec![span(
        1,
        None,
        "chat trip-model",
        &[
            ("openinference.span.kind", "TOOL"),
            ("tool.name", "pick_seat"),
            ("gen_ai.operation.name", "chat"),
        ],
    )]);
    assert!(calls(&chat).is_empty());
    let tool = trace(vec![span(
        1,
        None,
        "pick_seat",
        &[
            ("openinference.span.kind", "TOOL"),
            ("tool.name", "pick_seat"),
        ],
    )]);
    assert_eq!(calls(&tool).len(), 1);
}
