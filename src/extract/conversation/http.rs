//! An HTTP client span that records a model provider's request and
//! response bodies (docs/conventions.md, "The conversation witness",
//! "HTTP client spans").
//!
//! Some tracers instrument the HTTP client under a provider's SDK
//! (Netra's httpx spans, `POST`) and keep the exchange as JSON under
//! input- and output-like keys: `{"url", "headers", "body": <request>}`
//! and `{"status_code", "headers", "body": <response>}`. Such a span is a
//! model call when its method is `POST` and its request body is a chat
//! request: an object with a `model` text and a `messages` list (OpenAI
//! chat completions, Anthropic Messages, Cohere v2, Mistral, Ollama). A
//! tool that POSTs anything else stays what it was. The bodies are then
//! read as [`super::bodies`] reads any model call's (the request's
//! `body` is one of the keys a request's messages are looked for under).

use memchr::memmem;
use serde_json::Value;

use super::Side;
use crate::assemble::{SpanRecord, Val};

/// The span attributes holding an HTTP request's method (semantic
/// conventions, current and older; projection at decode).
pub(crate) const METHOD_KEYS: [&str; 2] = ["http.request.method", "http.method"];

/// Whether `key` is one of [`METHOD_KEYS`] (by length first: every span's
/// every key is asked).
#[inline]
pub(super) fn method_key(key: &[u8]) -> bool {
    match key.len() {
        19 => key == METHOD_KEYS[0].as_bytes(),
        11 => key == METHOD_KEYS[1].as_bytes(),
        _ => false,
    }
}

/// Whether attribute `i` of span `s`, whose key is `key`, says `s` is a
/// POST whose request body is a model provider's chat request.
#[inline]
pub(super) fn model_call_at(s: &SpanRecord, i: usize, key: &[u8]) -> bool {
    method_key(key) && posted(s, i) && chat_request(s)
}

/// Whether span `s` is such a POST ([`model_call_at`] over its keys).
pub(super) fn is_model_call(s: &SpanRecord) -> bool {
    s.span
        .attr_keys()
        .enumerate()
        .any(|(i, k)| model_call_at(s, i, k))
}

/// Whether attribute `i`'s value is `POST`.
fn posted(s: &SpanRecord, i: usize) -> bool {
    s.span
        .attr_value(i)
        .and_then(Val::as_str)
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("POST"))
}

/// Whether a JSON text under an input-like key of `s` is a chat request,
/// itself or as the `body` of a recorded HTTP request. Parsed only when
/// both keys' names are in the text.
fn chat_request(s: &SpanRecord) -> bool {
    s.span.attributes().any(|(key, value)| {
        let Some(text) = value.and_then(|v: Val<'_>| v.as_str()) else {
            return false;
        };
        let bytes = text.as_bytes();
        text.trim_start().starts_with('{')
            && memmem::find(bytes, b"\"messages\"").is_some()
            && memmem::find(bytes, b"\"model\"").is_some()
            && crate::extract::sides::side_of(key) == Some(Side::Input)
            && serde_json::from_str::<Value>(text).is_ok_and(|v| is_chat(&v))
    })
}

/// A chat request: `model` a text and `messages` a list, in `v` or in its
/// `body`.
fn is_chat(v: &Value) -> bool {
    let chat = |b: &Value| {
        b.get("model").is_some_and(Value::is_string)
            && b.get("messages").is_some_and(Value::is_array)
    };
    chat(v) || v.get("body").is_some_and(chat)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::assemble::{Trace, TraceId};
    use crate::extract::{CallResult, Extractor};

    fn span(id: u8, attrs: &[(&str, String)]) -> SpanRecord {
        let start = u64::from(id) * 10;
        let attrs: Vec<(&str, &str)> = attrs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut s = crate::extract::tests::sp(id, None, (start, start + 5), "POST", &attrs);
        // A client span.
        s.span.kind = 3;
        s
    }

    /// A made-up tracer's HTTP client span: `acme.http.request` and
    /// `acme.http.response` hold the exchange.
    fn exchange(id: u8, method: &str, request: Value, response: Value) -> SpanRecord {
        let url = "http://127.0.0.1:9/v1/chat/completions".to_string();
        let request = json!({"url": url, "headers": {}, "body": request});
        let response = json!({"status": 200, "body": response});
        span(
            id,
            &[
                ("http.request.method", method.into()),
                ("url.full", url.clone()),
                ("acme.http.request", request.to_string()),
                ("acme.http.response", response.to_string()),
            ],
        )
    }

    #[test]
    fn a_post_of_a_chat_request_is_read_and_another_post_is_not() {
        let call = json!({"id": "k1", "type": "function",
            "function": {"name": "find_dock", "arguments": "{\"pier\": 4}"}});
        let user = json!({"role": "user", "content": "dock"});
        let turn = json!({"role": "assistant", "tool_calls": [call]});
        let result = json!({"role": "tool", "tool_call_id": "k1", "content": "{\"slot\": 2}"});
        let first = exchange(
            1,
            "POST",
            json!({"model": "acme-1", "messages": [user]}),
            json!({"choices": [{"message": turn}]}),
        );
        let second = exchange(
            3,
            "post",
            json!({"model": "acme-1", "messages": [user, turn, result]}),
            json!({"choices": [{"message": {"role": "assistant", "content": "done"}}]}),
        );
        // A tool's own POST (a body with `messages`, no model), and a chat
        // body under a method that is no POST: neither is a model call.
        let tool = exchange(
            2,
            "POST",
            json!({"messages": [user], "dock": 4}),
            json!({"tool_calls": [call]}),
        );
        let put = exchange(
            4,
            "PUT",
            json!({"model": "acme-1", "messages": [user]}),
            json!({"choices": [{"message": turn}]}),
        );
        assert!(is_model_call(&first) && is_model_call(&second));
        assert!(!is_model_call(&tool) && !is_model_call(&put));
        let trace = Trace::new(TraceId([7; 16]), vec![first, tool, second], 0);
        let calls = Extractor::default().extract(&trace);
        let got: Vec<(String, Value, Value)> = calls
            .iter()
            .map(|c| {
                let result = c.result.as_ref().map_or(Value::Null, CallResult::to_value);
                (
                    c.name.clone(),
                    c.args.value().cloned().unwrap_or_default(),
                    result,
                )
            })
            .collect();
        assert_eq!(
            got,
            [("find_dock".into(), json!({"pier": 4}), json!({"slot": 2}))]
        );
        // The tool's POST alone asks for nothing.
        let alone = Trace::new(
            TraceId([8; 16]),
            vec![exchange(
                2,
                "POST",
                json!({"messages": [user], "dock": 4}),
                json!({"tool_calls": [call]}),
            )],
            0,
        );
        assert!(Extractor::default().extract(&alone).is_empty());
    }

    #[test]
    fn only_a_chat_request_makes_a_post_a_model_call() {
        assert!(is_chat(&json!({"model": "m", "messages": []})));
        assert!(is_chat(
            &json!({"url": "u", "body": {"model": "m", "messages": [{"role": "user"}]}})
        ));
        // A tool's own POST, an embedding request, a search.
        assert!(!is_chat(&json!({"url": "u", "body": {"city": "Oslo"}})));
        assert!(!is_chat(&json!({"model": "m", "input": ["a"]})));
        assert!(!is_chat(&json!({"body": {"model": 3, "messages": []}})));
        assert!(!is_chat(&json!({"body": {"model": "m", "messages": "hi"}})));
    }

    #[test]
    fn the_method_keys_are_known_by_length_then_bytes() {
        for k in METHOD_KEYS {
            assert!(method_key(k.as_bytes()), "{k}");
        }
        assert!(!method_key(b"http.methox") && !method_key(b"url.full"));
    }
}
