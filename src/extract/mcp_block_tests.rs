//! An MCP tool's one text block as a tool span's result in the two forms
//! instrumentations write besides its JSON: Python's `str()` of the block
//! (`wrappers::literal_of`) and its JSON text inside a JSON string
//! (`wrappers::known_unwrapped`), on made-up vendors' spans. A block with a
//! key of the tool's own is a value, no wrapper, in either form.

use serde_json::{json, Value};

use super::test_support::calls_of;
use super::tests::sp;

/// The result of the one call of a GenAI `execute_tool` span whose result
/// attribute holds `result`.
fn genai_result(result: &str) -> Value {
    let s = sp(
        1,
        None,
        (10, 20),
        "execute_tool fly_kite",
        &[
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "fly_kite"),
            ("gen_ai.tool.call.arguments", r#"{"kite": "K1"}"#),
            ("gen_ai.tool.call.result", result),
        ],
    );
    let mut calls = calls_of(1, vec![s]);
    assert_eq!(calls.len(), 1, "{calls:?}");
    calls.remove(0).2
}

/// The result of the one call of a made-up vendor's tool span
/// (`acme.span.type = TOOL`) whose output attribute holds `output`.
fn vendor_result(output: &str) -> Value {
    let s = sp(
        1,
        None,
        (10, 20),
        "fly_kite",
        &[
            ("acme.span.type", "TOOL"),
            ("acme.span.input", r#""{\"kite\": \"K1\"}""#),
            ("acme.span.output", output),
        ],
    );
    let mut calls = calls_of(1, vec![s]);
    assert_eq!(calls.len(), 1, "{calls:?}");
    calls.remove(0).2
}

#[test]
fn a_python_str_of_an_mcp_text_block_is_its_text() {
    let got = genai_result("{'type': 'text', 'text': 'Kite K1 is aloft'}");
    assert_eq!(got, json!("Kite K1 is aloft"));
    // The text JSON-decoded, as from the JSON form.
    let got = genai_result(r#"{'type': 'text', 'text': '{"height_m": 40}'}"#);
    assert_eq!(got, json!({"height_m": 40}));
}

#[test]
fn a_python_str_of_a_block_with_the_tool_s_own_key_stays_the_object() {
    let got = genai_result("{'type': 'text', 'text': 'aloft', 'kites': 2}");
    assert_eq!(got, json!({"type": "text", "text": "aloft", "kites": 2}));
}

#[test]
fn an_mcp_text_block_as_json_text_in_a_json_string_is_its_text() {
    let block = json!({"type": "text", "text": "Kite K1 is aloft"}).to_string();
    let got = vendor_result(&Value::String(block).to_string());
    assert_eq!(got, json!("Kite K1 is aloft"));
}

#[test]
fn json_text_in_a_json_string_of_no_wrapper_stays_the_text() {
    let own = json!({"type": "text", "text": "aloft", "kites": 2}).to_string();
    let got = vendor_result(&Value::String(own.clone()).to_string());
    assert_eq!(got, json!(own));
}
