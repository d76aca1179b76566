//! A model call's whole request and response bodies under a framework's own
//! keys, on a span that says no kind (docs/conventions.md, "The
//! conversation witness", "Bodies under any key").
//!
//! Google ADK records each model call as a `call_llm` span with the Gemini
//! request it sent (`gcp.vertex.agent.llm_request`, `contents` and the
//! config) and the response it got (`gcp.vertex.agent.llm_response`, the
//! model's `content`), and no span kind or operation name: the generic
//! test of [`super::bodies`] does not see a model call. The keys are data
//! (vocabulary `model_body_keys`): a span where one of them holds a JSON
//! object or list that is not empty is a model call, and its bodies are read
//! as any model call's, under input- and output-like keys. ADK's tool spans
//! write both keys as `{}`: they stay what their rule says.

use std::sync::OnceLock;

use crate::assemble::{SpanRecord, Val};
use crate::extract::rules::builtin_list;

/// The keys (vocabulary `model_body_keys`), looked up once: every key of
/// every span is compared with them.
fn keys() -> &'static [String] {
    static KEYS: OnceLock<&'static [String]> = OnceLock::new();
    KEYS.get_or_init(|| builtin_list("model_body_keys"))
}

/// Whether attribute `i` of span `s`, whose key is `key`, is one of the
/// keys and holds a body ([`holds_body`]).
#[inline]
pub(super) fn model_call_at(s: &SpanRecord, i: usize, key: &[u8]) -> bool {
    // The key first (a length and bytes compared): most keys are neither.
    keys().iter().any(|k| k.as_bytes() == key)
        && s.span
            .attr_value(i)
            .and_then(Val::as_str)
            .is_some_and(holds_body)
}

/// Whether span `s` is such a model call ([`model_call_at`] over its keys).
pub(super) fn is_model_call(s: &SpanRecord) -> bool {
    s.span
        .attr_keys()
        .enumerate()
        .any(|(i, k)| model_call_at(s, i, k))
}

/// Whether `text` is a JSON object or list with something in it (`{}`, as
/// ADK's tool spans write the keys, is not).
fn holds_body(text: &str) -> bool {
    let t = text.trim();
    let (Some(open), Some(close)) = (t.as_bytes().first(), t.as_bytes().last()) else {
        return false;
    };
    let inner = t.get(1..t.len().saturating_sub(1)).unwrap_or("");
    matches!((open, close), (b'{', b'}') | (b'[', b']')) && !inner.trim().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::sides::side_of;

    fn span(attrs: &[(&str, &str)]) -> SpanRecord {
        crate::extract::tests::sp(1, None, (0, 5), "call_llm", attrs)
    }

    #[test]
    fn each_key_names_its_side() {
        // The bodies are read under input- and output-like keys: a key
        // without a side's word would make a model call nothing reads.
        assert!(!keys().is_empty());
        for k in keys() {
            assert!(side_of(k).is_some(), "{k}");
        }
    }

    #[test]
    fn a_body_under_a_named_key_makes_a_model_call() {
        let request =
            r#"{"model": "m-1", "contents": [{"role": "user", "parts": [{"text": "hi"}]}]}"#;
        assert!(is_model_call(&span(&[(
            "gcp.vertex.agent.llm_request",
            request
        )])));
        let response = r#"{"content": {"role": "model", "parts": [{"text": "hello"}]}}"#;
        assert!(is_model_call(&span(&[(
            "gcp.vertex.agent.llm_response",
            response
        )])));
        // A tool span's empty bodies, text that is no JSON, another key.
        for (k, v) in [
            ("gcp.vertex.agent.llm_request", "{}"),
            ("gcp.vertex.agent.llm_response", " { } "),
            ("gcp.vertex.agent.llm_response", "[]"),
            ("gcp.vertex.agent.llm_response", "N/A"),
            ("gcp.vertex.agent.llm_response", "{"),
            ("gcp.vertex.agent.tool_response", response),
        ] {
            assert!(!is_model_call(&span(&[(k, v)])), "{k} = {v}");
        }
    }
}
