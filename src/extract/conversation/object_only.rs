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

/// `answers` read from span `s`'s flattened messages, read as Gemini's
/// function responses when `s` went to Gemini: a content of one key
/// `result`, `output` or `error` (an object or its JSON text) is in
/// Gemini's function-response shape, as a `functionResponse` part's
/// `response` is, so it reads as one (its wrapper off, a lone `error` a
/// failed call, an object under `result` left to `declared_results`).
/// Any other content stays as it is.
pub(super) fn unwrap_flat(s: &SpanRecord, answers: &mut [Answer]) {
    if !answers
        .iter()
        .any(|a| a.content.as_ref().is_some_and(may_wrap))
        || !to_gemini(s)
    {
        return;
    }
    for a in answers {
        let Some(c) = a.content.take() else {
            continue;
        };
        match one_key_response(c) {
            Ok(o) => {
                a.content = Some(super::gemini_unwrapped(o).unwrap_or_else(|o| o));
                a.gemini_shape = true;
                super::gemini_error(a);
            }
            Err(c) => a.content = Some(c),
        }
    }
}

/// `answers` read from OTel GenAI `tool_call_response` parts of span `s`'s
/// request, when `s` went to Gemini: the part's `response` is Gemini's
/// function response as the writer copied it (the OTel google-genai
/// instrumentation), so Gemini's keys read as in a `functionResponse`
/// part: `output` (or `result` around no object) gives the value, a lone
/// `error` a failed call.
///
/// A writer may copy the response as its JSON text instead (Traceloop's
/// google-generativeai instrumentation: `"response": "{\"result\": ...}"`):
/// text that parses to an object reads as that object; other text stays.
pub(super) fn unwrap_parts(s: &SpanRecord, answers: &mut [Answer]) {
    let wrapped = |a: &Answer| a.genai_part && a.content.as_ref().is_some_and(may_be_object);
    if !answers.iter().any(wrapped) || !to_gemini(s) {
        return;
    }
    for a in answers.iter_mut().filter(|a| wrapped(a)) {
        let Some(c) = a.content.take() else {
            continue;
        };
        match as_object(c) {
            Ok(o) => a.content = Some(super::gemini_unwrapped(o).unwrap_or_else(|o| o)),
            Err(text) => {
                a.content = Some(text);
                continue;
            }
        }
        a.gemini_shape = true;
        super::gemini_error(a);
    }
}

/// Whether a part's response may be an object: one, or text that starts
/// as one (cheap: parsed only then).
fn may_be_object(c: &Value) -> bool {
    match c {
        Value::Object(_) => true,
        Value::String(t) => t.trim_start().starts_with('{'),
        _ => false,
    }
}

/// A response as an object: an object as it is, the JSON text of one
/// parsed (`Err`: anything else, given back).
fn as_object(c: Value) -> Result<Value, Value> {
    match c {
        Value::Object(_) => Ok(c),
        Value::String(t) => match serde_json::from_str::<Value>(&t) {
            Ok(v @ Value::Object(_)) => Ok(v),
            _ => Err(Value::String(t)),
        },
        other => Err(other),
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

/// The keys of Gemini's function response: a function's output (`output`,
/// documented; `result`, google-genai's and most applications' choice)
/// or its failure (`error`).
const RESPONSE_KEYS: [&str; 3] = ["result", "output", "error"];

/// A content as a Gemini function response: an object of one of
/// [`RESPONSE_KEYS`] alone, as it is or parsed from its JSON text (`Err`:
/// anything else, given back as it was).
fn one_key_response(c: Value) -> Result<Value, Value> {
    let is_response = |v: &Value| {
        matches!(v, Value::Object(o)
            if o.len() == 1 && RESPONSE_KEYS.iter().any(|k| o.contains_key(*k)))
    };
    match c {
        Value::String(ref t) if may_wrap(&c) => match serde_json::from_str::<Value>(t) {
            Ok(v) if is_response(&v) => Ok(v),
            _ => Err(c),
        },
        Value::Object(_) if is_response(&c) => Ok(c),
        other => Err(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::names_and_results;
    use crate::extract::tests::sp;
    use crate::extract::{CallStatus, Extractor};

    /// Two GenAI model calls to `provider`, each a trace of its own as
    /// Traceloop writes them: the second request answers call `k1` with
    /// `response` (an OTel GenAI part, the response as it is given).
    fn answered(provider: &str, response: Value) -> Vec<(String, Value, CallStatus)> {
        let call =
            json!({"type": "tool_call", "id": "k1", "name": "moor", "arguments": {"pier": 3}});
        let asked = json!([{"role": "assistant", "parts": [call]}]).to_string();
        let user = json!({"role": "user", "parts": [{"type": "text", "content": "moor it"}]});
        let answer = json!({"role": "user", "parts": [
            {"type": "tool_call_response", "id": "k1", "response": response}]});
        let input = json!([user, {"role": "assistant", "parts": [call]}, answer]).to_string();
        let done = json!([{"role": "assistant", "parts": [{"type": "text", "content": "moored"}]}]);
        let (first, second) = (user.to_string(), done.to_string());
        let model = |id: u8, input: &str, output: &str| {
            sp(
                id,
                None,
                (u64::from(id) * 10, u64::from(id) * 10 + 5),
                "generate_content",
                &[
                    ("gen_ai.provider.name", provider),
                    ("gen_ai.operation.name", "generate_content"),
                    ("gen_ai.input.messages", input),
                    ("gen_ai.output.messages", output),
                ],
            )
        };
        let first = format!("[{first}]");
        let traces = [
            Trace::new(TraceId([1; 16]), vec![model(1, &first, &asked)], 0),
            Trace::new(TraceId([2; 16]), vec![model(2, &input, &second)], 0),
        ];
        let x = Extractor::default();
        let a = x.analyze_all(&traces);
        let calls: Vec<_> = a.iter().flat_map(|a| a.calls.iter()).collect();
        let results = a.iter().flat_map(names_and_results);
        results
            .zip(calls)
            .map(|((n, r), c)| (n, r, c.status.clone()))
            .collect()
    }

    #[test]
    fn a_gemini_response_in_json_text_reads_as_the_object() {
        let ok = || CallStatus::Ok;
        for (sent, want, status) in [
            (r#"{"result": {"slot": 4}}"#, json!({"slot": 4}), ok()),
            (r#"{"result": "moored"}"#, json!("moored"), ok()),
            (r#" {"output": {"slot": 4}}"#, json!({"slot": 4}), ok()),
            (
                r#"{"error": "pier closed"}"#,
                json!({"error": "pier closed"}),
                CallStatus::Error,
            ),
            // A tool's own object of two keys, and text that is no JSON.
            (
                r#"{"result": "moored", "slot": 4}"#,
                json!({"result": "moored", "slot": 4}),
                ok(),
            ),
            ("{moored}", json!("{moored}"), ok()),
        ] {
            let got = answered("gcp.gen_ai", json!(sent));
            assert_eq!(got, [("moor".to_string(), want, status)], "{sent}");
        }
        // Another provider's result keeps its `result` key.
        let got = answered("acme", json!(r#"{"result": {"slot": 4}}"#));
        assert_eq!(
            got,
            [("moor".to_string(), json!({"result": {"slot": 4}}), ok())]
        );
    }

    #[test]
    fn only_one_key_of_gemini_s_response_reads_as_a_response() {
        for sent in [
            json!(r#"{"result": "docked"}"#),
            json!(r#" {"result": {"slot": 4}}"#),
            json!(r#"{"output": [4]}"#),
            json!(r#"{"error": "closed"}"#),
            json!({"result": {"slot": 4}}),
        ] {
            let want = match &sent {
                Value::String(t) => serde_json::from_str(t).ok(),
                v => Some(v.clone()),
            };
            assert_eq!(one_key_response(sent.clone()).ok(), want, "{sent}");
        }
        // A second key, another key, no object, or no JSON: given back.
        for own in [
            json!(r#"{"result": "docked", "slot": 4}"#),
            json!(r#"{"slot": 4}"#),
            json!({"output": 4, "slot": 4}),
            json!(r#"["result"]"#),
            json!("docked"),
            json!(r#"{"result": "#),
        ] {
            assert_eq!(one_key_response(own.clone()), Err(own));
        }
    }
}
