//! A model request recorded as one span event holding the request's
//! messages under `messages`, as JSON text (LlamaIndex's instrumentation
//! events as its OTel integration writes them: `LLMChatStartEvent`), for
//! the conversation witness (`conversation.rs`; docs/conventions.md,
//! "Calls written as log events").
//!
//! Read by the shape, not the event's name: an event whose `messages` is the
//! JSON text of a list of messages that each have a `role`. A framework's
//! message may keep the provider's fields aside, as LlamaIndex's
//! `ChatMessage` does (`additional_kwargs` holding `tool_calls` and
//! `tool_call_id`, the text in `blocks`): those are read as the message's
//! own ([`lifted`]).

use opentelemetry_proto::tonic::trace::v1::span::Event;
use serde_json::{Map, Value};

use crate::assemble::{SpanRecord, Val};

/// The form these messages are read in (`from` notes, explain).
pub(super) const FORM: &str = "chat-event";

/// The event attribute read here (projection at decode).
pub(crate) const EVENT_KEY: &str = "messages";

/// The key a framework keeps the provider's message fields under.
const ASIDE: &str = "additional_kwargs";

/// The provider's fields read from [`ASIDE`].
const LIFTED: [&str; 3] = ["tool_calls", "tool_call_id", "name"];

/// The text of `e`'s `messages` when it may be a JSON list.
fn text_of(e: &Event) -> Option<&str> {
    let kv = e.attributes.iter().find(|kv| kv.key == EVENT_KEY)?;
    let Val::Str(t) = kv.value.as_ref().map(Val::of)? else {
        return None;
    };
    let t = t.trim_start();
    t.starts_with('[').then_some(t)
}

/// Whether span `s` has an event that may hold a request's messages.
pub(super) fn has_request(s: &SpanRecord) -> bool {
    s.span.events.iter().any(|e| text_of(e).is_some())
}

/// The messages of span `s`'s first event holding a list of them, each
/// with the fields its framework kept aside lifted ([`lifted`]).
pub(super) fn request(s: &SpanRecord) -> Option<Value> {
    s.span.events.iter().find_map(|e| {
        let Ok(Value::Array(list)) = serde_json::from_str::<Value>(text_of(e)?) else {
            return None;
        };
        let all_messages = !list.is_empty()
            && list
                .iter()
                .all(|m| m.get("role").is_some_and(Value::is_string));
        all_messages.then(|| Value::Array(list.into_iter().map(lifted).collect()))
    })
}

/// Message `m` with the provider's fields its framework kept in
/// [`ASIDE`] as its own, and, when it has no `content`, the text of its
/// `blocks` (each `{"block_type": "text", "text"}`) as its content. A
/// field the message has itself is kept.
fn lifted(m: Value) -> Value {
    let Value::Object(mut o) = m else {
        return m;
    };
    if let Some(Value::Object(aside)) = o.get(ASIDE) {
        let found: Vec<(String, Value)> = LIFTED
            .iter()
            .filter_map(|k| aside.get(*k).map(|v| (k.to_string(), v.clone())))
            .collect();
        for (k, v) in found {
            o.entry(k).or_insert(v);
        }
    }
    if !o.contains_key("content") {
        if let Some(text) = blocks_text(&o) {
            o.insert("content".into(), Value::String(text));
        }
    }
    Value::Object(o)
}

/// The text of a message's text blocks, when it has some.
fn blocks_text(o: &Map<String, Value>) -> Option<String> {
    let blocks = o.get("blocks")?.as_array()?;
    let texts: Vec<&str> = blocks
        .iter()
        .filter(|b| b.get("block_type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    (!texts.is_empty()).then(|| texts.concat())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::assemble::{Trace, TraceId};
    use crate::extract::conversation::FROM_CONVERSATION;
    use crate::extract::Extractor;

    fn span(id: u8, start: u64, event: &str, messages: &Value) -> SpanRecord {
        let mut s = crate::extract::tests::sp(id, Some(9), (start, start + 5), "Acme.chat", &[]);
        s.span.events = vec![crate::extract::test_support::event(
            event,
            EVENT_KEY,
            &messages.to_string(),
        )];
        s
    }

    /// A made-up framework's request events, its messages keeping the
    /// provider's fields aside under `additional_kwargs` and the text in
    /// `blocks`: each request repeats the history, so the call is counted
    /// once, where a request first shows it answered.
    #[test]
    fn a_request_event_with_fields_kept_aside_gives_the_calls() {
        let text = |t: &str| json!([{"block_type": "text", "text": t}]);
        let user = json!({"role": "user", "additional_kwargs": {}, "blocks": text("tide?")});
        let asked = json!({"role": "assistant", "additional_kwargs": {"tool_calls": [{"id": "k4",
            "type": "function", "function": {"name": "get_tide", "arguments": "{\"port\": \"Brest\"}"}}]},
            "blocks": text("")});
        let answer = json!({"role": "tool", "additional_kwargs": {"tool_call_id": "k4"},
            "blocks": text("{'m': 4}")});
        let first = span(1, 10, "AcmeChatBegin", &json!([user]));
        let second = span(2, 20, "AcmeChatBegin", &json!([user, asked, answer]));
        let third = span(3, 30, "AcmeChatBegin", &json!([user, asked, answer]));
        let read = request(&second).unwrap_or_default();
        assert_eq!(read[2]["tool_call_id"], json!("k4"));
        assert_eq!(read[2]["content"], json!("{'m': 4}"));
        let trace = Trace::new(TraceId([4; 16]), vec![first, second, third], 0);
        let a = Extractor::default().analyze(&trace);
        let got: Vec<_> = a
            .calls
            .iter()
            .map(|c| {
                (
                    c.name.as_str(),
                    c.args.value().cloned(),
                    c.result.as_ref().map(|r| r.to_value()),
                    c.from,
                )
            })
            .collect();
        assert_eq!(
            got,
            [(
                "get_tide",
                Some(json!({"port": "Brest"})),
                Some(json!({"m": 4})),
                Some(FROM_CONVERSATION)
            )]
        );
    }

    /// A list whose items are not all messages, or text that is no list,
    /// is no request.
    #[test]
    fn other_lists_are_no_request() {
        let s = span(
            1,
            10,
            "AcmeChatBegin",
            &json!([{"role": "user"}, {"id": 3}]),
        );
        assert!(has_request(&s) && request(&s).is_none());
        let s = span(1, 10, "AcmeChatBegin", &json!({"role": "user"}));
        assert!(!has_request(&s));
    }
}
