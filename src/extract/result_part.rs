//! The AI SDK's tool-result part recorded whole as a tool span's output
//! (docs/conventions.md, "Result wrappers").
//!
//! The AI SDK hands a finished call back as a content part: `{"type":
//! "tool-result", "toolCallId", "toolName", "input", "output", ...}`. A
//! writer that serializes that part as the span's output (Sentry's AI SDK
//! integration does, in `gen_ai.tool.output`) gives the call's result one
//! level down: the part's `output` (version 4: `result`), the tool's
//! return value as it is, is the result. Only a part naming its call
//! (`toolCallId` and `toolName`, both text) is taken for one: no tool
//! returns that shape of its own. A `tool-error` part stays whole: it says
//! the tool threw, which a wrapper taken off would hide when the span's
//! status does not say it.

use serde_json::Value;

/// The part type of a result.
const RESULT: &str = "tool-result";

/// The result an AI SDK tool-result part holds (`Err`: any other value,
/// given back).
pub(crate) fn ai_sdk_part(v: Value) -> Result<Value, Value> {
    let Value::Object(mut o) = v else {
        return Err(v);
    };
    let text = |k: &str| o.get(k).is_some_and(Value::is_string);
    let kind = o.get("type").and_then(Value::as_str);
    if kind != Some(RESULT) || !text("toolCallId") || !text("toolName") {
        return Err(Value::Object(o));
    }
    match o.remove("output").or_else(|| o.remove("result")) {
        Some(output) => Ok(output),
        None => Err(Value::Object(o)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn part(kind: &str, extra: Value) -> Value {
        let mut p = json!({"type": kind, "toolCallId": "k1", "toolName": "moor_boat",
            "input": {"berth": 4}, "dynamic": false, "providerMetadata": {}});
        if let (Some(p), Value::Object(e)) = (p.as_object_mut(), extra) {
            p.extend(e);
        }
        p
    }

    #[test]
    fn a_result_part_gives_its_output_as_the_tool_returned_it() {
        let raw = part(RESULT, json!({"output": {"berth": 4, "ok": true}}));
        assert_eq!(ai_sdk_part(raw), Ok(json!({"berth": 4, "ok": true})));
        // A tool's own typed-looking value stays the tool's.
        let own = json!({"type": "text", "value": "moored"});
        assert_eq!(
            ai_sdk_part(part(RESULT, json!({"output": own.clone()}))),
            Ok(own)
        );
        let v4 = part(RESULT, json!({"result": "moored"}));
        assert_eq!(ai_sdk_part(v4), Ok(json!("moored")));
    }

    #[test]
    fn near_misses_and_errors_stay() {
        for own in [
            // An error part says the tool threw: it stays whole.
            part("tool-error", json!({"error": "berth taken"})),
            part("tool-error", json!({"error": {}})),
            // No call named: a tool's own object of that type.
            json!({"type": "tool-result", "output": 4}),
            json!({"type": "tool-result", "toolCallId": "k1", "output": 4}),
            json!({"type": "tool-result", "toolCallId": 1, "toolName": "moor_boat", "output": 4}),
            // Another part type, or a result part without a result.
            json!({"type": "tool-call", "toolCallId": "k1", "toolName": "moor_boat", "input": {}}),
            json!({"type": "tool-result", "toolCallId": "k1", "toolName": "moor_boat"}),
            json!(["tool-result"]),
            json!("tool-result"),
        ] {
            assert_eq!(ai_sdk_part(own.clone()), Err(own));
        }
    }
}
