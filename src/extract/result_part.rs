//! The AI SDK's tool-result part recorded whole as a tool span's output
//! (docs/conventions.md, "Result wrappers").
//!
//! The AI SDK hands a finished call back as a content part: `{"type":
//! "tool-result", "toolCallId", "toolName", "input", "output", ...}` (a
//! `tool-error` part with `error` when the tool threw). A writer that
//! serializes that part as the span's output (Sentry's AI SDK integration
//! does, in `gen_ai.tool.output`) gives the call's result one level down:
//! the part's `output` (version 4: `result`), typed or not, is the result;
//! a `tool-error` part's `error` is, when it says anything. Only a part
//! naming its call (`toolCallId` and `toolName`, both text) is taken for
//! one: no tool returns that shape of its own.

use serde_json::Value;

/// The part type of a result and of an error.
const RESULT: &str = "tool-result";
const ERROR: &str = "tool-error";

/// The result an AI SDK tool-result part holds (`Err`: any other value,
/// given back).
pub(crate) fn ai_sdk_part(v: Value) -> Result<Value, Value> {
    let Value::Object(mut o) = v else {
        return Err(v);
    };
    let text = |k: &str| o.get(k).is_some_and(Value::is_string);
    let kind = o.get("type").and_then(Value::as_str);
    if !matches!(kind, Some(RESULT | ERROR)) || !text("toolCallId") || !text("toolName") {
        return Err(Value::Object(o));
    }
    if kind == Some(ERROR) {
        let error = o.remove("error").unwrap_or(Value::Null);
        return Ok(match error {
            Value::String(t) if t.trim().is_empty() => Value::Null,
            Value::Object(e) if e.is_empty() => Value::Null,
            e => e,
        });
    }
    let Some(output) = o.remove("output").or_else(|| o.remove("result")) else {
        return Err(Value::Object(o));
    };
    Ok(typed(output))
}

/// The value of the SDK's typed output (`{"type": "json" | "text" |
/// "error-text" | "error-json", "value"}`, version 5 on); any other
/// output as it is.
fn typed(output: Value) -> Value {
    const TYPES: [&str; 4] = ["json", "text", "error-text", "error-json"];
    match output {
        Value::Object(mut o)
            if o.len() == 2
                && o.contains_key("value")
                && o.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| TYPES.contains(&t)) =>
        {
            o.remove("value").unwrap_or(Value::Null)
        }
        other => other,
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
    fn a_result_part_gives_its_output() {
        let raw = part(RESULT, json!({"output": {"berth": 4, "ok": true}}));
        assert_eq!(ai_sdk_part(raw), Ok(json!({"berth": 4, "ok": true})));
        let typed = part(RESULT, json!({"output": {"type": "json", "value": [1, 2]}}));
        assert_eq!(ai_sdk_part(typed), Ok(json!([1, 2])));
        let text = part(
            RESULT,
            json!({"output": {"type": "text", "value": "moored"}}),
        );
        assert_eq!(ai_sdk_part(text), Ok(json!("moored")));
        let v4 = part(RESULT, json!({"result": "moored"}));
        assert_eq!(ai_sdk_part(v4), Ok(json!("moored")));
    }

    #[test]
    fn an_error_part_gives_its_error_when_it_says_anything() {
        let empty = part(ERROR, json!({"error": {}}));
        assert_eq!(ai_sdk_part(empty), Ok(Value::Null));
        let said = part(ERROR, json!({"error": "berth taken"}));
        assert_eq!(ai_sdk_part(said), Ok(json!("berth taken")));
    }

    #[test]
    fn near_misses_stay() {
        for own in [
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
        // A typed output with a third key is the tool's own object.
        let own = json!({"type": "json", "value": 1, "note": "x"});
        let p = part(RESULT, json!({"output": own.clone()}));
        assert_eq!(ai_sdk_part(p), Ok(own));
    }
}
