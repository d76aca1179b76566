//! A provider that takes a tool's result only as an object, seen through
//! flattened messages (docs/conventions.md, "Result wrappers").
//!
//! Gemini (the Gemini API and Vertex AI) takes a function response only as
//! an object, so a value that is no object reaches it under one key, and
//! the witness takes `{"result": v}` / `{"output": v}` off a
//! `functionResponse` part ([`super::object_wrapped`]). Flattened messages
//! (OpenInference's and traceAI's Vertex AI instrumentations) keep only
//! the role `tool`, the function's name and the response as JSON text: the
//! part's type is gone. The span's provider attribute says whose API it
//! was; on a Gemini span the same rule applies to a tool message's content.
//! The Vertex AI SDK wraps nothing itself (its automatic function calling
//! hands the function's return value to `Part.from_function_response` as
//! it is, which takes only a dict), so the key is the application's or a
//! framework's, and only the exact shape of one key around no object comes
//! off: a tool's own object, or a second key, stays.

use serde_json::Value;

use super::Answer;
use crate::assemble::SpanRecord;
use crate::extract::any_text;

/// Span attributes naming the model's provider (projection at decode).
pub(crate) const PROVIDER_KEYS: [&str; 4] = [
    "gen_ai.provider.name",
    "gen_ai.system",
    "llm.provider",
    "llm.system",
];

/// Whether span `s` says its model call went to Gemini (the Gemini API or
/// Vertex AI): `gcp.gemini`, `gcp.vertex_ai`, `gcp.gen_ai` (semantic
/// conventions), `vertex_ai`, `vertexai`, `gemini`, `google` (OpenInference's
/// `llm.provider`), in any case.
fn to_gemini(s: &SpanRecord) -> bool {
    PROVIDER_KEYS.iter().any(|k| {
        s.attr(k).and_then(any_text).is_some_and(|v| {
            let v = v.trim().to_ascii_lowercase();
            v.contains("vertex") || v.contains("gemini") || v == "google" || v == "gcp.gen_ai"
        })
    })
}

/// `answers` read from span `s`'s flattened messages, with Gemini's
/// object-only wrapper taken off their contents when `s` went to Gemini.
pub(super) fn unwrap_flat(s: &SpanRecord, answers: &mut [Answer]) {
    if !answers
        .iter()
        .any(|a| a.content.as_ref().is_some_and(may_wrap))
        || !to_gemini(s)
    {
        return;
    }
    for a in answers {
        if let Some(c) = a.content.take() {
            a.content = Some(unwrapped(c));
        }
    }
}

/// Whether a content may be a one-key wrapper (cheap: a text that starts
/// as an object, or an object of one key).
fn may_wrap(c: &Value) -> bool {
    match c {
        Value::String(t) => t.trim_start().starts_with('{'),
        Value::Object(o) => o.len() == 1,
        _ => false,
    }
}

/// `{"result": v}` or `{"output": v}` (v no object, as a value or as its
/// JSON text) -> `v`; anything else as it is.
fn unwrapped(c: Value) -> Value {
    let parsed = match &c {
        Value::String(t) if may_wrap(&c) => match serde_json::from_str::<Value>(t) {
            Ok(v @ Value::Object(_)) => v,
            _ => return c,
        },
        Value::Object(_) => c.clone(),
        _ => return c,
    };
    match super::object_wrapped(parsed) {
        inner if !inner.is_object() => inner,
        _ => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_one_key_around_no_object_comes_off() {
        assert_eq!(unwrapped(json!(r#"{"result": "docked"}"#)), json!("docked"));
        assert_eq!(unwrapped(json!({"output": 4})), json!(4));
        // A tool's own object, under the key or beside a second key, stays,
        // and so does its text.
        for own in [
            json!(r#"{"result": {"slot": 4}}"#),
            json!(r#"{"result": "docked", "slot": 4}"#),
            json!({"result": {"slot": 4}}),
            json!("docked"),
            json!(r#"{"result": "#),
        ] {
            assert_eq!(unwrapped(own.clone()), own);
        }
    }
}
