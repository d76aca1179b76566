//! Result wrappers of issue 37 (docs/conventions.md, "Result wrappers") on
//! hand-built spans of made-up vendors: the known shapes come off every
//! rule's results, exactly those shapes and no other; the ambiguous ones
//! (`{"result": ...}`, typed values) only under the rules that know them.

use std::sync::Arc;

use opentelemetry_proto::tonic::common::v1::InstrumentationScope;
use serde_json::json;

use super::unwrap_tests::{calls, one, span, trace};
use super::*;

/// A Python `ToolMessage.model_dump()`.
const DUMP: &str = r#"{"content": "{\"seats\": 2}", "additional_kwargs": {}, "response_metadata": {}, "type": "tool", "name": "book", "id": null, "tool_call_id": "c7", "artifact": null, "status": "success"}"#;
/// A serialized LangChain.js `ToolMessage`.
const SERIALIZED: &str = r#"{"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", "ToolMessage"], "kwargs": {"status": "success", "content": "{\"seats\": 2}", "tool_call_id": "c7", "name": "book", "additional_kwargs": {}, "response_metadata": {}}}"#;

/// The result of a Galtea tool span (a rule that declares no wrapper)
/// whose output is `output`.
fn galtea_result(output: &str) -> Value {
    one(
        "book",
        &[
            ("galtea.trace.type", "TOOL"),
            ("galtea.trace.input", r#"{"room": "B"}"#),
            ("galtea.trace.output", output),
        ],
    )
    .2
}

#[test]
fn langchain_messages_come_off_every_rule_s_results() {
    assert_eq!(galtea_result(DUMP), json!({"seats": 2}));
    assert_eq!(galtea_result(SERIALIZED), json!({"seats": 2}));
    let wrapped = format!(r#"{{"output": {SERIALIZED}}}"#);
    assert_eq!(galtea_result(&wrapped), json!({"seats": 2}));
    // A tool span in a namespace no rule knows, through the generic rule.
    let (_, args, result, convention) = one(
        "book",
        &[
            ("zeta.span.kind", "tool"),
            ("zeta.input", r#"{"room": "B"}"#),
            ("zeta.output", DUMP),
        ],
    );
    assert_eq!(
        (args, result, convention.as_str()),
        (json!({"room": "B"}), json!({"seats": 2}), "tool-kind")
    );
}

#[test]
fn mcp_content_comes_off_every_rule_s_results() {
    let result = r#"{"content": [{"type": "text", "text": "{\"seats\": 2}"}], "isError": false}"#;
    assert_eq!(galtea_result(result), json!({"seats": 2}));
    // With structured content, LangChain's block ids, MCP's annotations.
    let result = r#"{"content": [{"type": "text", "text": "ok", "annotations": null}], "structuredContent": {"result": "ok"}}"#;
    assert_eq!(galtea_result(result), json!("ok"));
    let blocks = r#"[{"type": "text", "text": "a", "id": "lc_1"}, {"type": "text", "text": "[1]", "id": "lc_2"}]"#;
    assert_eq!(galtea_result(blocks), json!(["a", [1]]));
    assert_eq!(galtea_result(r#"{"type": "text", "text": "7"}"#), json!(7));
    // A ToolMessage holding MCP blocks: both come off.
    let nested = r#"{"type": "tool", "data": {"content": [{"type": "text", "text": "{\"seats\": 2}", "id": "lc_3"}], "tool_call_id": "c7"}}"#;
    assert_eq!(galtea_result(nested), json!({"seats": 2}));
    // The Python SDK's snake_case dump (with FastMCP's `data`): the text,
    // not the structured content that wraps a value that is no object.
    let dumped = r#"{"content": [{"type": "text", "text": "free", "annotations": null, "meta": null}], "structured_content": {"result": "free"}, "meta": null, "data": "free", "is_error": false}"#;
    assert_eq!(galtea_result(dumped), json!("free"));
    // GenAI text parts.
    let parts = r#"[{"type": "text", "content": "{\"seats\": 2}"}]"#;
    assert_eq!(galtea_result(parts), json!({"seats": 2}));
    // A part with one key more, or a dump with a key of its own: kept.
    let more = r#"[{"type": "text", "content": "a", "seats": 2}]"#;
    assert_eq!(
        galtea_result(more),
        json!([{"type": "text", "content": "a", "seats": 2}])
    );
    let own = r#"{"content": [{"type": "text", "text": "a"}], "seats": 2}"#;
    assert_eq!(
        galtea_result(own),
        json!({"content": [{"type": "text", "text": "a"}], "seats": 2})
    );
}

#[test]
fn an_embedded_text_resource_comes_off_like_a_text_block() {
    // The AI SDK's MCP client: one resource block, and `isError` it adds.
    let one = r#"{"content": [{"type": "resource", "resource": {"uri": "menu://soup/fr", "mimeType": "text/plain", "text": "leek and potato"}}], "isError": false}"#;
    assert_eq!(galtea_result(one), json!("leek and potato"));
    // A text block beside it; JSON text decoded as a text block's is.
    let mixed = r#"{"content": [{"type": "text", "text": "menu"}, {"type": "resource", "resource": {"uri": "menu://soup", "text": "{\"kcal\": 210}"}}]}"#;
    assert_eq!(galtea_result(mixed), json!(["menu", {"kcal": 210}]));
    let bare = r#"{"type": "resource", "resource": {"uri": "menu://soup", "text": "leek"}}"#;
    assert_eq!(galtea_result(bare), json!("leek"));
    // Bytes, a link, or a blob beside text: the content stays whole.
    let kept = [
        r#"{"content": [{"type": "resource", "resource": {"uri": "menu://p", "mimeType": "image/png", "blob": "iVBO"}}], "isError": false}"#,
        r#"{"content": [{"type": "resource_link", "uri": "menu://soup", "name": "soup"}]}"#,
        r#"{"content": [{"type": "text", "text": "a"}, {"type": "resource", "resource": {"uri": "menu://p", "blob": "iVBO"}}]}"#,
    ];
    for text in kept {
        let want: Value = serde_json::from_str(text).expect("test JSON");
        assert_eq!(galtea_result(text), want, "{text}");
    }
}

#[test]
fn only_the_exact_shapes_come_off() {
    // One key more than the shape, or content that is not all text: kept.
    let kept = [
        r#"{"content": "x", "tool_call_id": "c7", "type": "tool", "seats": 2}"#,
        r#"{"content": "x", "type": "tool"}"#,
        r#"{"output": {"lc": 1, "type": "constructor", "id": ["x", "HumanMessage"], "kwargs": {"content": "x"}}}"#,
        r#"{"output": {"lc": 1, "type": "constructor", "id": ["x", "ToolMessage"], "kwargs": {"content": "x"}}, "other": 1}"#,
        r#"{"content": [{"type": "image", "data": "AA=="}]}"#,
        r#"{"content": [{"type": "text", "text": "x"}], "seats": 2}"#,
        r#"{"type": "text", "text": "x", "seats": 2}"#,
        r#"[{"type": "text", "text": "x"}, 3]"#,
        r#"{"content": []}"#,
        // Under a rule that does not declare them, the ambiguous shapes.
        r#"{"result": 1}"#,
        r#"{"type": "json", "value": {"seats": 2}}"#,
    ];
    for text in kept {
        let want: Value = serde_json::from_str(text).expect("test JSON");
        assert_eq!(galtea_result(text), want, "{text}");
    }
}

#[test]
fn typed_values_come_off_a_vendor_namespace_s_input_and_output() {
    let (name, args, result, _) = one(
        "book",
        &[
            ("zeta.span.type", "tool"),
            ("zeta.input", r#"{"type": "json", "value": {"room": "B"}}"#),
            ("zeta.output", r#"{"type": "text", "value": "booked"}"#),
        ],
    );
    assert_eq!(
        (name.as_str(), args, result),
        ("book", json!({"room": "B"}), json!("booked"))
    );
    // Another type (LangWatch's chat messages) or another key: kept.
    let (_, args, result, _) = one(
        "book",
        &[
            ("zeta.span.type", "tool"),
            ("zeta.input", r#"{"type": "json", "value": 1, "room": "B"}"#),
            ("zeta.output", r#"{"type": "chat_messages", "value": []}"#),
        ],
    );
    assert_eq!(args, json!({"type": "json", "value": 1, "room": "B"}));
    assert_eq!(result, json!({"type": "chat_messages", "value": []}));
    // A tool's output as one chat message LangWatch made of it: its content.
    let (_, _, result, _) = one(
        "book",
        &[
            ("zeta.span.type", "tool"),
            ("zeta.input", r#"{"type": "text", "value": "B"}"#),
            (
                "zeta.output",
                r#"{"type": "chat_messages", "value": [{"role": "unknown", "content": "{\"room\": 7}"}]}"#,
            ),
        ],
    );
    assert_eq!(result, json!({"room": 7}));
    // Text holding a JSON object (a LangChain tool's input, typed `text`):
    // the object; other text, a JSON number's included, stays text.
    let (_, args, result, _) = one(
        "book",
        &[
            ("zeta.span.type", "tool"),
            (
                "zeta.input",
                r#"{"type": "text", "value": "{\"room\": \"B\"}"}"#,
            ),
            ("zeta.output", r#"{"type": "text", "value": "7"}"#),
        ],
    );
    assert_eq!((args, result), (json!({"room": "B"}), json!("7")));
    // A typed value typed again: both come off.
    let (_, _, result, _) = one(
        "book",
        &[
            ("zeta.span.type", "tool"),
            ("zeta.input", r#"{"type": "text", "value": "B"}"#),
            (
                "zeta.output",
                r#"{"type": "json", "value": {"type": "text", "value": "09:30"}}"#,
            ),
        ],
    );
    assert_eq!(result, json!("09:30"));
    // Two messages, a user's, or another key: kept.
    for kept in [
        json!({"type": "chat_messages", "value": [{"role": "unknown", "content": "a"}, {"role": "unknown", "content": "b"}]}),
        json!({"type": "chat_messages", "value": [{"role": "user", "content": "a"}]}),
        json!({"type": "chat_messages", "value": [{"role": "tool", "content": "a", "extra": 1}]}),
    ] {
        let (_, _, result, _) = one(
            "book",
            &[
                ("zeta.span.type", "tool"),
                ("zeta.output", &kept.to_string()),
            ],
        );
        assert_eq!(result, kept);
    }
}

/// A `{name}.tool` span of a Traceloop-style tool in scope `scope`.
fn traceloop_call(scope: &str, input: &str, output: &str) -> (String, Value, Value, String) {
    let mut s = span(
        1,
        None,
        "book.tool",
        &[
            ("traceloop.span.kind", "tool"),
            ("traceloop.entity.name", "book"),
            ("traceloop.entity.input", input),
            ("traceloop.entity.output", output),
        ],
    );
    s.scope = Arc::new(InstrumentationScope {
        name: scope.to_string(),
        ..Default::default()
    });
    let mut found = calls(&trace(vec![s]));
    assert_eq!(found.len(), 1);
    found.remove(0)
}

#[test]
fn an_mcp_instrumentation_s_result_record_comes_off_its_spans_only() {
    let input = r#"{"tool_name": "book", "arguments": {"room": "B"}}"#;
    for scope in ["acme.instrumentation.mcp", "@acme/instrumentation-mcp"] {
        let (_, args, result, convention) =
            traceloop_call(scope, input, r#"{"result": "{\"seats\": 2}"}"#);
        assert_eq!(
            (args, result, convention.as_str()),
            (json!({"room": "B"}), json!({"seats": 2}), "openllmetry-mcp"),
            "{scope}"
        );
        let failed = traceloop_call(scope, input, r#"{"result": "no room", "is_error": true}"#);
        assert_eq!(failed.2, json!("no room"));
        // Another key beside `result`: not the record.
        let other = traceloop_call(scope, input, r#"{"result": 1, "seats": 2}"#);
        assert_eq!(other.2, json!({"result": 1, "seats": 2}));
    }
    // A `@tool` of the same vendor that returns `{"result": ...}` keeps it.
    let own = traceloop_call(
        "traceloop.tracer",
        r#"{"args": [], "kwargs": {"room": "B"}}"#,
        r#"{"result": 1}"#,
    );
    assert_eq!((own.2, own.3.as_str()), (json!({"result": 1}), "traceloop"));
}

#[test]
fn results_read_as_text_and_as_values_agree() {
    // The fast path (JSON text kept as is) and the parsed one give the
    // same result, wrapped or not.
    for output in [DUMP, r#"{"seats": 2, "type": "suite"}"#] {
        let s = span(
            1,
            None,
            "book",
            &[
                ("galtea.trace.type", "TOOL"),
                ("galtea.trace.output", output),
            ],
        );
        let t = trace(vec![s]);
        let text = Extractor::default().with_args_text(true).extract(&t);
        let value = Extractor::default().extract(&t);
        assert_eq!(
            text[0].result.as_ref().map(CallResult::to_value),
            value[0].result.as_ref().map(CallResult::to_value)
        );
    }
    // A result no known shape fits stays its JSON text, untouched.
    let plain = r#"{"type": "suite", "seats": 2}"#;
    let s = span(
        1,
        None,
        "book",
        &[
            ("galtea.trace.type", "TOOL"),
            ("galtea.trace.output", plain),
        ],
    );
    let found = Extractor::default().extract(&trace(vec![s]));
    assert!(
        matches!(&found[0].result, Some(CallResult::Json(t)) if &**t == plain),
        "{:?}",
        found[0].result
    );
}

/// An `execute_tool` span of tool `book` in scope `scope` with result
/// `result` and attributes `extra`: `(result, convention)`.
fn execute_tool(scope: &str, result: &str, extra: &[(&str, &str)]) -> (Value, String) {
    let mut attrs = vec![
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", "book"),
        ("gen_ai.tool.call.arguments", r#"{"room": "B"}"#),
        ("gen_ai.tool.call.result", result),
    ];
    attrs.extend_from_slice(extra);
    let mut s = span(1, None, "execute_tool book", &attrs);
    s.scope = Arc::new(InstrumentationScope {
        name: scope.to_string(),
        ..Default::default()
    });
    let mut found = calls(&trace(vec![s]));
    assert_eq!(found.len(), 1, "{found:?}");
    let (_, _, result, convention) = found.remove(0);
    (result, convention)
}

#[test]
fn google_adk_s_result_wrapper_comes_off_its_spans_only() {
    let adk = |result: &str| execute_tool("gcp.vertex.agent", result, &[]);
    // A value that is no dict, as ADK hands it to the model.
    assert_eq!(
        adk(r#"{"result": "booked"}"#),
        (json!("booked"), "google-adk".to_string())
    );
    assert_eq!(adk(r#"{"result": [1, 2]}"#).0, json!([1, 2]));
    assert_eq!(adk(r#"{"result": null}"#).0, Value::Null);
    // A string stays the string the tool returned, JSON or not.
    assert_eq!(
        adk(r#"{"result": "{\"seats\": 2}"}"#).0,
        json!("{\"seats\": 2}")
    );
    // A dict is passed on as it is: an object under `result` is the tool's.
    let own = [
        r#"{"result": {"seats": 2}}"#,
        r#"{"result": "booked", "seats": 2}"#,
        r#"{"seats": 2}"#,
    ];
    for text in own {
        let want: Value = serde_json::from_str(text).expect("test JSON");
        assert_eq!(adk(text).0, want, "{text}");
    }
    // ADK's event id marks its spans where no scope was exported.
    let by_event = execute_tool(
        "",
        r#"{"result": 3}"#,
        &[("gcp.vertex.agent.event_id", "e-1")],
    );
    assert_eq!(by_event, (json!(3), "google-adk".to_string()));
    // Another instrumentation's execute_tool span keeps the shape.
    assert_eq!(
        execute_tool("acme.agents", r#"{"result": "booked"}"#, &[]),
        (json!({"result": "booked"}), "otel-genai".to_string())
    );
}

#[test]
fn langsmith_s_output_wrappers_come_off_its_results_only() {
    let traced = |kind: Option<&str>, completion: &str| {
        let mut attrs = vec![
            ("langsmith.span.kind", "tool"),
            ("gen_ai.tool.name", "book"),
            ("gen_ai.prompt", r#"{"room": "B"}"#),
            ("gen_ai.completion", completion),
        ];
        if let Some(op) = kind {
            attrs.push(("gen_ai.operation.name", op));
        }
        one("book", &attrs)
    };
    // JavaScript's `{"outputs"}` and Python's `{"output"}`, under the
    // otel-genai rule (the operation name set) and the langsmith rule.
    for op in [Some("execute_tool"), None] {
        assert_eq!(traced(op, r#"{"outputs": "booked"}"#).2, json!("booked"));
        assert_eq!(traced(op, r#"{"outputs": [1]}"#).2, json!([1]));
        assert_eq!(traced(op, r#"{"output": "booked"}"#).2, json!("booked"));
        // JavaScript passes an object on as it is: the tool's own.
        let own = r#"{"outputs": {"seats": 2}}"#;
        assert_eq!(traced(op, own).2, json!({"outputs": {"seats": 2}}));
        let other = r#"{"outputs": "booked", "seats": 2}"#;
        assert_eq!(
            traced(op, other).2,
            json!({"outputs": "booked", "seats": 2})
        );
    }
    // A rule that does not declare it keeps the shape.
    assert_eq!(
        galtea_result(r#"{"outputs": "booked"}"#),
        json!({"outputs": "booked"})
    );
}

#[test]
fn haystack_s_tool_step_is_a_call() {
    let attrs = [
        ("haystack.tool.name", "book"),
        ("haystack.agent.step.tool.input", r#"{"room": "B"}"#),
        ("haystack.agent.step.tool.output", "booked"),
    ];
    let found = calls(&trace(vec![span(
        1,
        None,
        "haystack.agent.step.tool",
        &attrs,
    )]));
    assert_eq!(
        found,
        vec![(
            "book".to_string(),
            json!({"room": "B"}),
            json!("booked"),
            "haystack".to_string()
        )]
    );
    // The tool name on a span of another name (a component run, a step) or
    // the span name without a tool name: no call.
    for (name, attrs) in [
        ("haystack.agent.step", &attrs[..]),
        ("haystack.agent.step.tool", &attrs[1..]),
    ] {
        assert!(
            calls(&trace(vec![span(1, None, name, attrs)])).is_empty(),
            "{name}"
        );
    }
}

#[test]
fn a_models_str_is_the_object_it_writes() {
    let quoted = |t: &str| Value::String(t.to_string()).to_string();
    // Pydantic's `str()` of a returned model, as text or a JSON string.
    let model = "kind='chart' src='data:image/png;base64,AAAA' id=None";
    let want = json!({"kind": "chart", "src": "data:image/png;base64,AAAA", "id": null});
    assert_eq!(galtea_result(model), want);
    assert_eq!(galtea_result(&quoted(model)), want);
    // A LangChain `ToolMessage`'s: its content, as its dict gives.
    let message = r#"content='{"seats": 2}' name='book' tool_call_id='c7'"#;
    assert_eq!(galtea_result(message), json!({"seats": 2}));
    assert_eq!(galtea_result(&quoted(message)), json!({"seats": 2}));
    let blocks = "content=[{'type': 'text', 'text': 'a'}, {'type': 'image', 'base64': 'AAAA'}] name='book' tool_call_id='c7' status='success'";
    assert_eq!(
        galtea_result(&quoted(blocks)),
        json!([{"type": "text", "text": "a"}, {"type": "image", "base64": "AAAA"}])
    );
    // An MCP text block's, as its dict.
    assert_eq!(galtea_result("type='text' text='7'"), json!(7));
    // In a namespace no rule knows, through the generic rule.
    let (_, _, result, _) = one(
        "book",
        &[
            ("zeta.span.kind", "tool"),
            ("zeta.input", r#"{"room": "B"}"#),
            ("zeta.output", model),
        ],
    );
    assert_eq!(result, want);
    // Text that is not wholly such fields stays text.
    for text in [
        "a=1 and b",
        "x = 1",
        "k='v' trailing",
        "k='v'",
        "seats=2, rooms=1",
        "total: a=1 b=2",
        "a=1 a=2",
        "a=1 b=two",
        "Chart(kind='x', id=None)",
    ] {
        assert_eq!(galtea_result(text), json!(text), "{text}");
        assert_eq!(galtea_result(&quoted(text)), json!(text), "{text}");
    }
}
