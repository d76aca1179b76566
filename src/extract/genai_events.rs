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
//! Values that are not scalars come as JSON text and are parsed here. Some
//! SDKs put the whole message, as JSON text, under one attribute
//! ([`WHOLE`]): its keys are the event's.
//!
//! The newer form is one event a model call side
//! (`gen_ai.client.inference.operation.details`, whatever its name): the
//! span's `gen_ai.input.messages` / `gen_ai.output.messages` on the event,
//! as structured values or JSON text ([`DETAILS`]).

use opentelemetry_proto::tonic::trace::v1::span::Event;
use serde_json::{Map, Value};

use super::borrowed::Json;
use super::requested::{walk, Asked};
use crate::assemble::{SpanRecord, Val};
use crate::extract::source::any_to_json;

/// The form these messages are read in (`from` notes, explain).
pub(super) const FORM: &str = "otel-genai-events";

/// The event attributes read here (projection at decode).
pub(crate) const EVENT_KEYS: [&str; 8] = [
    "message",
    "content",
    "id",
    "tool_calls",
    "role",
    WHOLE,
    DETAILS.0,
    DETAILS.1,
];

/// The attribute holding a whole message as JSON text (Azure AI
/// Inference's tracing: `{"role", "content", "tool_call_id"}`, a choice's
/// `{"message", "finish_reason", "index"}`).
const WHOLE: &str = "gen_ai.event.content";

/// The attributes of the details event: a request's messages, the output's.
const DETAILS: (&str, &str) = ("gen_ai.input.messages", "gen_ai.output.messages");

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

/// Whether span `s` has a `gen_ai.choice` event, or a details event with
/// the output.
pub(crate) fn has_output(s: &SpanRecord) -> bool {
    s.span
        .events
        .iter()
        .any(|e| e.name == CHOICE || has_key(e, DETAILS.1))
}

/// Whether span `s` has an event of a request's message, or a details
/// event with the request.
pub(super) fn has_request(s: &SpanRecord) -> bool {
    s.span
        .events
        .iter()
        .any(|e| role_of(e).is_some() || has_key(e, DETAILS.0))
}

fn has_key(e: &Event, key: &str) -> bool {
    e.attributes.iter().any(|kv| kv.key == key)
}

/// The messages under `key` of span `s`'s first details event holding
/// them (a model call records one of each side), as a JSON list.
fn details(s: &SpanRecord, key: &str) -> Option<Value> {
    s.span.events.iter().find_map(|e| {
        let v = e.attributes.iter().find(|kv| kv.key == key)?;
        let value = match v.value.as_ref().map(Val::of)? {
            Val::Str(t) => serde_json::from_str(t).ok()?,
            other => any_to_json(other),
        };
        value.is_array().then_some(value)
    })
}

/// Attributes whose JSON text is a structure to read (a message, its
/// calls); `content` stays text, as a message's content is elsewhere.
const STRUCTURED: [&str; 2] = ["message", "tool_calls"];

/// An event's attributes as a JSON object, [`STRUCTURED`] ones parsed, the
/// keys of a [`WHOLE`] message among them. A request message's `content`
/// that is the JSON text of a list is its list of content blocks (a map
/// body's list comes so: Bedrock Converse's `toolResult` blocks in a user
/// message); a tool's result stays text.
fn object_of(e: &Event, role: Option<&str>) -> Map<String, Value> {
    let mut o = Map::new();
    for kv in &e.attributes {
        let Some(v) = kv.value.as_ref().map(Val::of) else {
            continue;
        };
        let value = match v {
            Val::Str(t) if kv.key == WHOLE => match serde_json::from_str(t) {
                Ok(Value::Object(whole)) => {
                    for (k, v) in whole {
                        o.entry(k).or_insert(v);
                    }
                    continue;
                }
                _ => Value::String(t.to_string()),
            },
            Val::Str(t) if STRUCTURED.contains(&kv.key.as_str()) => {
                serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.to_string()))
            }
            Val::Str(t)
                if kv.key == "content"
                    && role.is_some_and(|r| r != "tool")
                    && t.trim_start().starts_with('[') =>
            {
                serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.to_string()))
            }
            other => any_to_json(other),
        };
        o.entry(kv.key.clone()).or_insert(value);
    }
    o
}

/// The messages of span `s`'s `gen_ai.choice` events, else of its details
/// events' output, as a JSON list.
pub(super) fn output(s: &SpanRecord) -> Option<Value> {
    let messages: Vec<Value> = s
        .span
        .events
        .iter()
        .filter(|e| e.name == CHOICE)
        .filter_map(|e| object_of(e, None).remove("message"))
        .collect();
    if messages.is_empty() {
        return details(s, DETAILS.1);
    }
    Some(Value::Array(messages))
}

/// The calls [`output`]'s choice messages ask for, as a walk of its list
/// finds them ([`walk`], each message one level down), the messages that
/// are JSON text parsed as borrowed trees and only when `may_hold` (a byte
/// look at the text) sees a call; `None` when the output is no list of
/// choice messages alone (a whole message, [`WHOLE`], or none: the details
/// event), for the caller to read [`output`].
pub(super) fn choice_calls(s: &SpanRecord, may_hold: impl Fn(&str) -> bool) -> Option<Vec<Asked>> {
    let mut out = Vec::new();
    let mut messages = false;
    for e in s.span.events.iter().filter(|e| e.name == CHOICE) {
        if e.attributes
            .iter()
            .any(|kv| kv.key == WHOLE && kv.value.is_some())
        {
            return None;
        }
        // The first attribute of the key with a value, as [`object_of`] keeps.
        let Some(v) = e
            .attributes
            .iter()
            .filter(|kv| kv.key == "message")
            .find_map(|kv| kv.value.as_ref().map(Val::of))
        else {
            continue;
        };
        messages = true;
        match v {
            // Text that is no JSON stays text: no call.
            Val::Str(t) => {
                if let Some(tree) = Some(t).filter(|t| may_hold(t)).and_then(Json::parse) {
                    walk(&tree, None, 1, &mut out);
                }
            }
            other => walk(&any_to_json(other), None, 1, &mut out),
        }
    }
    messages.then_some(out)
}

/// The request span `s`'s message events record, as a JSON list of
/// OpenAI-shaped messages (a tool message's `id` is its call id), else its
/// details events' request.
pub(super) fn request(s: &SpanRecord) -> Option<Value> {
    let messages: Vec<Value> = s
        .span
        .events
        .iter()
        .filter_map(|e| {
            let role = role_of(e)?;
            let mut o = object_of(e, Some(role));
            o.entry("role")
                .or_insert_with(|| Value::String(role.into()));
            Some(Value::Object(o))
        })
        .collect();
    if messages.is_empty() {
        return details(s, DETAILS.0);
    }
    Some(Value::Array(messages))
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
    use serde_json::json;

    use crate::assemble::{Trace, TraceId};
    use crate::extract::conversation::FROM_CONVERSATION;
    use crate::extract::Extractor;

    fn text(t: &str) -> AnyValue {
        AnyValue {
            value: Some(any_value::Value::StringValue(t.into())),
        }
    }

    /// A JSON value as an OTLP structured value (kvlist, array).
    fn structured(v: &Value) -> AnyValue {
        let value = match v {
            Value::Array(items) => {
                any_value::Value::ArrayValue(opentelemetry_proto::tonic::common::v1::ArrayValue {
                    values: items.iter().map(structured).collect(),
                })
            }
            Value::Object(o) => any_value::Value::KvlistValue(
                opentelemetry_proto::tonic::common::v1::KeyValueList {
                    values: o
                        .iter()
                        .map(|(k, v)| KeyValue {
                            key: k.clone(),
                            value: Some(structured(v)),
                            ..KeyValue::default()
                        })
                        .collect(),
                },
            ),
            Value::String(s) => any_value::Value::StringValue(s.clone()),
            other => any_value::Value::StringValue(other.to_string()),
        };
        AnyValue { value: Some(value) }
    }

    fn event(name: &str, attrs: Vec<(&str, AnyValue)>) -> Event {
        Event {
            name: name.into(),
            attributes: attrs
                .into_iter()
                .map(|(k, v)| KeyValue {
                    key: k.into(),
                    value: Some(v),
                    ..KeyValue::default()
                })
                .collect(),
            ..Event::default()
        }
    }

    fn span(id: u8, start: u64, events: Vec<Event>) -> SpanRecord {
        let mut s = crate::extract::tests::sp(id, None, (start, start + 5), "acme.chat", &[]);
        s.span.events = events;
        s
    }

    fn calls(trace: &Trace) -> Vec<(String, Value, Value)> {
        let a = Extractor::default().analyze(trace);
        a.calls
            .iter()
            .inspect(|c| assert_eq!(c.from, Some(FROM_CONVERSATION)))
            .map(|c| {
                (
                    c.name.clone(),
                    c.args.value().cloned().unwrap_or_default(),
                    c.result.as_ref().map(|r| r.to_value()).unwrap_or_default(),
                )
            })
            .collect()
    }

    /// A made-up SDK writing each message whole, as JSON text under
    /// `gen_ai.event.content`; a later request repeats the model's turn.
    #[test]
    fn a_whole_message_under_one_attribute_is_the_events_keys() {
        let whole = |m: Value| vec![("gen_ai.event.content", text(&m.to_string()))];
        let call = json!({"id": "k1", "type": "function",
            "function": {"name": "get_tide", "arguments": "{\"port\":\"Brest\"}"}});
        let asks = span(
            1,
            10,
            vec![
                event(
                    "gen_ai.user.message",
                    whole(json!({"role": "user", "content": "tide?"})),
                ),
                event(
                    "gen_ai.choice",
                    whole(json!({"message": {"tool_calls": [call]}, "index": 0})),
                ),
            ],
        );
        assert_eq!(
            output(&asks),
            Some(json!([{"tool_calls": [call]}])),
            "the choice's message"
        );
        let answers = span(
            2,
            20,
            vec![
                event(
                    "gen_ai.assistant.message",
                    whole(json!({"role": "assistant", "tool_calls": [call]})),
                ),
                event(
                    "gen_ai.tool.message",
                    whole(json!({"role": "tool", "tool_call_id": "k1", "content": "{\"m\": 4}"})),
                ),
            ],
        );
        let trace = Trace::new(TraceId([7; 16]), vec![asks, answers], 0);
        assert_eq!(
            calls(&trace),
            [("get_tide".into(), json!({"port": "Brest"}), json!({"m": 4}))]
        );
    }

    /// A made-up provider's blocks in map bodies: a user message whose
    /// content list holds the result block does not end the model's turn.
    #[test]
    fn a_request_messages_content_list_is_read_as_blocks() {
        let calls_of = json!([{"id": "u1", "type": "function",
            "function": {"name": "get_tide", "arguments": {"port": "Brest"}}}]);
        let blocks = json!([{"toolResult": {"toolUseId": "u1", "content": [{"json": {"m": 4}}]}}]);
        let asks = span(
            1,
            10,
            vec![event(
                "gen_ai.choice",
                vec![(
                    "message",
                    text(&json!({"tool_calls": calls_of}).to_string()),
                )],
            )],
        );
        let answers = span(
            2,
            20,
            vec![
                event(
                    "gen_ai.assistant.message",
                    vec![("tool_calls", text(&calls_of.to_string()))],
                ),
                event(
                    "gen_ai.tool.message",
                    vec![
                        ("id", text("u1")),
                        ("content", text("[{\"json\": {\"m\": 4}}]")),
                    ],
                ),
                event(
                    "gen_ai.user.message",
                    vec![("content", text(&blocks.to_string()))],
                ),
            ],
        );
        let got = request(&answers).unwrap_or_default();
        assert_eq!(
            got[1]["content"],
            json!("[{\"json\": {\"m\": 4}}]"),
            "a tool's result stays text"
        );
        assert_eq!(
            got[2]["content"], blocks,
            "a user message's blocks are parsed"
        );
        let trace = Trace::new(TraceId([8; 16]), vec![asks, answers], 0);
        assert_eq!(
            calls(&trace),
            [("get_tide".into(), json!({"port": "Brest"}), json!({"m": 4}))]
        );
    }

    /// A made-up client writing one details event a side, the messages as
    /// structured values, its call parts with an item id and the `call_id`
    /// the result answers.
    #[test]
    fn details_events_carry_either_side_as_structured_values() {
        let part = json!({"type": "tool_call", "id": "item_1", "call_id": "c9",
            "name": "get_tide", "arguments": "{\"port\":\"Brest\"}"});
        let details =
            |key: &str, v: Value| event("acme.inference.details", vec![(key, structured(&v))]);
        let asks = span(
            1,
            10,
            vec![
                details(
                    DETAILS.0,
                    json!([{"role": "user", "parts": [{"type": "text", "content": "tide?"}]}]),
                ),
                details(DETAILS.1, json!([{"role": "assistant", "parts": [part]}])),
            ],
        );
        assert!(has_output(&asks) && has_request(&asks));
        let answers = span(
            2,
            20,
            vec![details(
                DETAILS.0,
                json!([{"role": "assistant", "parts": [part]},
                    {"role": "user", "parts": [{"type": "tool_call_response", "call_id": "c9", "response": "4 m"}]}]),
            )],
        );
        let trace = Trace::new(TraceId([9; 16]), vec![asks, answers], 0);
        assert_eq!(
            calls(&trace),
            [("get_tide".into(), json!({"port": "Brest"}), json!("4 m"))]
        );
        // An event with neither is no side.
        let other = span(3, 30, vec![event("acme.note", vec![("note", text("[]"))])]);
        assert!(!has_output(&other) && !has_request(&other));
    }
}
