//! A model call's messages recorded as OTel GenAI events on its span (the
//! older span events, or log records read as span events by
//! `ingest::logs`), as JSON messages for the conversation witness
//! (`conversation.rs`; docs/conventions.md, "Calls written as log events").
//!
//! The request is one event a message, named after the role
//! (`gen_ai.system.message`, `gen_ai.user.message`,
//! `gen_ai.assistant.message` with its `tool_calls`, `gen_ai.tool.message`
//! with the call's `id` and `content`); the output is one `gen_ai.choice`
//! event a choice, its `message` holding the calls the model asked for.
//! Values that are not scalars come as JSON text and are parsed here.

use opentelemetry_proto::tonic::trace::v1::span::Event;
use serde_json::{Map, Value};

use crate::assemble::{SpanRecord, Val};
use crate::extract::source::any_to_json;

/// The form these messages are read in (`from` notes, explain).
pub(super) const FORM: &str = "otel-genai-events";

/// The event attributes read here (projection at decode).
pub(crate) const EVENT_KEYS: [&str; 5] = ["message", "content", "id", "tool_calls", "role"];

/// The event of a model's output.
const CHOICE: &str = "gen_ai.choice";

/// The events of a request's messages, and the role each stands for.
const MESSAGES: [(&str, &str); 4] = [
    ("gen_ai.system.message", "system"),
    ("gen_ai.user.message", "user"),
    ("gen_ai.assistant.message", "assistant"),
    ("gen_ai.tool.message", "tool"),
];

fn role_of(e: &Event) -> Option<&'static str> {
    MESSAGES
        .iter()
        .find(|(name, _)| e.name == *name)
        .map(|(_, role)| *role)
}

/// Whether span `s` has a `gen_ai.choice` event.
pub(super) fn has_output(s: &SpanRecord) -> bool {
    s.span.events.iter().any(|e| e.name == CHOICE)
}

/// Whether span `s` has an event of a request's message.
pub(super) fn has_request(s: &SpanRecord) -> bool {
    s.span.events.iter().any(|e| role_of(e).is_some())
}

/// Attributes whose JSON text is a structure to read (a message, its
/// calls); `content` stays text, as a message's content is elsewhere.
const STRUCTURED: [&str; 2] = ["message", "tool_calls"];

/// An event's attributes as a JSON object, [`STRUCTURED`] ones parsed.
fn object_of(e: &Event) -> Map<String, Value> {
    let mut o = Map::new();
    for kv in &e.attributes {
        let Some(v) = kv.value.as_ref().map(Val::of) else {
            continue;
        };
        let value = match v {
            Val::Str(t) if STRUCTURED.contains(&kv.key.as_str()) => {
                serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.to_string()))
            }
            other => any_to_json(other),
        };
        o.entry(kv.key.clone()).or_insert(value);
    }
    o
}

/// The messages of span `s`'s `gen_ai.choice` events, as a JSON list.
pub(super) fn output(s: &SpanRecord) -> Option<Value> {
    let messages: Vec<Value> = s
        .span
        .events
        .iter()
        .filter(|e| e.name == CHOICE)
        .filter_map(|e| object_of(e).remove("message"))
        .collect();
    (!messages.is_empty()).then_some(Value::Array(messages))
}

/// The request span `s`'s message events record, as a JSON list of
/// OpenAI-shaped messages (a tool message's `id` is its call id).
pub(super) fn request(s: &SpanRecord) -> Option<Value> {
    let messages: Vec<Value> = s
        .span
        .events
        .iter()
        .filter_map(|e| {
            let role = role_of(e)?;
            let mut o = object_of(e);
            o.entry("role")
                .or_insert_with(|| Value::String(role.into()));
            Some(Value::Object(o))
        })
        .collect();
    (!messages.is_empty()).then_some(Value::Array(messages))
}
