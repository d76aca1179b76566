//! A span that names the model it requested and records the request's
//! messages as JSON, with no kind of its own (docs/conventions.md, "The
//! conversation witness", "Bodies under any key").
//!
//! Some patches of a model client write only the GenAI request keys and
//! the two sides as JSON (agentlog-ai: `gen_ai.request.model`,
//! `gen_ai.prompt` the JSON list of chat messages, `gen_ai.completion` the
//! JSON message object), and no span kind or operation name. Such a span
//! is a model call when it names a requested model, has no key that ends
//! like a kind (`span.kind`, `operation.name`, ...), and an input-like
//! attribute of it ([`side_of`]) is a JSON list of messages, each an
//! object with a `role`: its bodies are then read as [`super::bodies`]
//! reads any model call's. A chain or agent span that repeats messages but
//! names no requested model stays what it was.

use memchr::memmem;
use serde_json::Value;

use super::Side;
use crate::assemble::{SpanRecord, Val};
use crate::extract::sides::side_of;

/// The attribute naming the model a request asked for.
const REQUEST_MODEL: &str = super::kinds::KIND_KEYS[1];

/// Whether attribute `i` of span `s`, whose key is `key`, names the
/// requested model of a span whose request is a JSON list of messages.
#[inline]
pub(super) fn model_call_at(s: &SpanRecord, _i: usize, key: &[u8]) -> bool {
    key == REQUEST_MODEL.as_bytes() && !says_a_kind(s) && messages_in(s)
}

/// Whether a key of `s` ends like a kind ([`super::kinds::kind_like`]):
/// such a span says what it is, and its history is not parsed here.
fn says_a_kind(s: &SpanRecord) -> bool {
    s.span.attr_keys().any(super::kinds::kind_like)
}

/// Whether span `s` is such a span ([`model_call_at`] over its keys).
pub(super) fn is_model_call(s: &SpanRecord) -> bool {
    s.span
        .attr_keys()
        .enumerate()
        .any(|(i, k)| model_call_at(s, i, k))
}

/// Whether an input-like attribute of `s` is the JSON text of a list of
/// messages, each an object with a `role` (parsed only when the text opens
/// a list and names a role).
fn messages_in(s: &SpanRecord) -> bool {
    s.span.attributes().any(|(key, value)| {
        let Some(text) = value.and_then(|v: Val<'_>| v.as_str()) else {
            return false;
        };
        text.trim_start().starts_with('[')
            && (memmem::find(text.as_bytes(), b"\"role\"").is_some()
                || memmem::find(text.as_bytes(), b"\"type\"").is_some())
            && side_of(key) == Some(Side::Input)
            && serde_json::from_str::<Value>(text).is_ok_and(|v| is_messages(&v))
    })
}

/// The `type` of a LangChain message's dump (`message.model_dump()`,
/// which Langtrace records), standing for a role.
const LANGCHAIN_TYPES: [&str; 5] = ["human", "ai", "system", "tool", "chat"];

/// A non-empty list of objects that each have a `role` text or a
/// LangChain message's `type`, or a call's positional arguments holding
/// such a list (`positional::messages`).
fn is_messages(v: &Value) -> bool {
    let Some(items) = v.as_array() else {
        return false;
    };
    let items = super::positional::messages(items).unwrap_or(items);
    let message = |m: &Value| {
        m.get("role").is_some_and(Value::is_string)
            || m.get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| LANGCHAIN_TYPES.contains(&t))
    };
    !items.is_empty() && items.iter().all(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(attrs: &[(&str, &str)]) -> SpanRecord {
        crate::extract::tests::sp(1, None, (0, 5), "zorblax.ask", attrs)
    }

    #[test]
    fn a_requested_model_and_a_message_list_make_a_model_call() {
        let msgs = r#"[{"role": "user", "content": "two kites"}]"#;
        let s = span(&[
            ("zorblax.request.input", msgs),
            ("gen_ai.request.model", "m-1"),
        ]);
        assert!(is_model_call(&s));
        // No requested model: a chain repeating the messages.
        assert!(!is_model_call(&span(&[("zorblax.request.input", msgs)])));
        // A list that is not all messages, or on an output-like key.
        let mixed = r#"[{"role": "user"}, "kite"]"#;
        let s = span(&[("zorblax.input", mixed), ("gen_ai.request.model", "m-1")]);
        assert!(!is_model_call(&s));
        let s = span(&[("zorblax.output", msgs), ("gen_ai.request.model", "m-1")]);
        assert!(!is_model_call(&s));
        // A span that says its kind is what its kind says.
        let s = span(&[
            ("zorblax.input", msgs),
            ("gen_ai.request.model", "m-1"),
            ("zorblax.span.kind", "AGENT"),
        ]);
        assert!(!is_model_call(&s));
    }

    /// LangChain's message dumps (typed, no role), alone or as the first
    /// of `invoke`'s two positional arguments (Langtrace's
    /// `langchain.inputs`), make a model call beside a requested model.
    #[test]
    fn langchain_message_dumps_and_invoke_arguments_make_a_model_call() {
        let msgs = r#"[{"type": "system", "content": "ferry office"},
            {"type": "human", "content": "crossings?"},
            {"type": "ai", "tool_calls": [{"name": "crossings_today", "id": "c1", "type": "tool_call"}]},
            {"type": "tool", "content": "07:30", "tool_call_id": "c1", "status": "success"}]"#;
        let invoked = format!(r#"[{msgs}, {{"metadata": {{"thread_id": "t1"}}}}]"#);
        for input in [msgs, invoked.as_str()] {
            let s = span(&[("langchain.inputs", input), ("gen_ai.request.model", "m-1")]);
            assert!(is_model_call(&s), "{input}");
        }
        // Tool definitions are typed too; a second argument that is a
        // message makes no positional pair; a third argument neither.
        let defs = r#"[{"type": "function", "function": {"name": "f"}}]"#;
        let two_messages = format!(r#"[{msgs}, {{"type": "human", "content": "x"}}]"#);
        let three = format!(r#"[{msgs}, {{}}, {{}}]"#);
        for input in [defs, two_messages.as_str(), three.as_str()] {
            let s = span(&[("langchain.inputs", input), ("gen_ai.request.model", "m-1")]);
            assert!(!is_model_call(&s), "{input}");
        }
    }
}
