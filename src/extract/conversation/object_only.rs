//! A provider that takes a tool's result only as an object, seen through
//! flattened messages (docs/conventions.md, "Result wrappers").
//!
//! Gemini (the Gemini API and Vertex AI) takes a function response only as
//! an object, so a value that is no object reaches it under one key, and
//! the witness takes `{"result": v}` off a `functionResponse` part, and
//! `{"output": v}` (Gemini's documented key) whatever `v` is
//! ([`super::gemini_unwrapped`]). Flattened messages
//! (OpenInference's and traceAI's Vertex AI instrumentations) keep only
//! the role `tool`, the function's name and the response as JSON text: the
//! part's type is gone. The span's provider attribute says whose API it
//! was; on a Gemini span the same rule applies to a tool message's content.
//! The Vertex AI SDK wraps nothing itself (its automatic function calling
//! hands the function's return value to `Part.from_function_response` as
//! it is, which takes only a dict), so the key is the application's or a
//! framework's, and only the exact shape of one key around no object comes
//! off: a tool's own object under `result`, or a second key, stays. A
//! writer that copies the response into an OTel GenAI `tool_call_response`
//! part's `response` (the OTel google-genai instrumentation) keeps the
//! object under the generic part type: on a Gemini span such a part reads
//! as Gemini's.

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
pub(super) fn to_gemini(s: &SpanRecord) -> bool {
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

/// `answers` read from OTel GenAI `tool_call_response` parts of span `s`'s
/// request, when `s` went to Gemini: the part's `response` is Gemini's
/// function response as the writer copied it (the OTel google-genai
/// instrumentation), so Gemini's keys read as in a `functionResponse`
/// part: `output` (or `result` around no object) gives the value, a lone
/// `error` a failed call.
pub(super) fn unwrap_parts(s: &SpanRecord, answers: &mut [Answer]) {
    let wrapped = |a: &Answer| a.genai_part && a.content.as_ref().is_some_and(|c| c.is_object());
    if !answers.iter().any(wrapped) || !to_gemini(s) {
        return;
    }
    for a in answers.iter_mut().filter(|a| wrapped(a)) {
        if let Some(c) = a.content.take() {
            a.content = Some(super::gemini_unwrapped(c).unwrap_or_else(|c| c));
        }
        a.gemini_shape = true;
        super::gemini_error(a);
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

/// `{"result": v}` (v no object) or `{"output": v}`, as a value or as its
/// JSON text -> `v`; anything else as it is.
fn unwrapped(c: Value) -> Value {
    let parsed = match &c {
        Value::String(t) if may_wrap(&c) => match serde_json::from_str::<Value>(t) {
            Ok(v @ Value::Object(_)) => v,
            _ => return c,
        },
        Value::Object(_) => c.clone(),
        _ => return c,
    };
    super::gemini_unwrapped(parsed).unwrap_or(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_one_key_around_no_object_comes_off() {
        assert_eq!(unwrapped(json!(r#"{"result": "docked"}"#)), json!("docked"));
        assert_eq!(unwrapped(json!({"output": 4})), json!(4));
        // Gemini's documented output key comes off an object too.
        assert_eq!(
            unwrapped(json!(r#"{"output": {"slot": 4}}"#)),
            json!({"slot": 4})
        );
        // A tool's own object under `result`, or a second key, stays, and
        // so does its text.
        for own in [
            json!(r#"{"result": {"slot": 4}}"#),
            json!(r#"{"result": "docked", "slot": 4}"#),
            json!(r#"{"output": "docked", "slot": 4}"#),
            json!({"result": {"slot": 4}}),
            json!("docked"),
            json!(r#"{"result": "#),
        ] {
            assert_eq!(unwrapped(own.clone()), own);
        }
    }
}
