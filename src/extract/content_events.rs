//! A model call's messages recorded as span events that each hold one side
//! of the call, the whole message list as JSON text, for the conversation
//! witness (`conversation.rs`; docs/conventions.md, "Calls written as
//! span events"). Langtrace writes `gen_ai.content.prompt` with the
//! request's messages under `gen_ai.prompt`, and `gen_ai.content.completion`
//! with the output under `gen_ai.completion`.
//!
//! Read by the family, not the vendor: an event whose name says a side in
//! the words a model-call body's key says it with (`prompt`, `input`,
//! `request`, ... for the request; `completion`, `output`, `response`, ...
//! for the output; `bodies.rs`), and in it an attribute of [`EVENT_KEYS`]
//! that says the same side and holds a JSON list or object of messages. A model's
//! calls written as the `content` of its message (a list of
//! `{"id", "type": "function", "function": {...}}`, or that list's JSON
//! text) are moved to the message's `tool_calls`, where the witness reads
//! them; system messages are moved first (see [`messages`]).

use serde_json::Value;

use super::sides::Side;
use super::{role_keyed, role_lines};
use crate::assemble::SpanRecord;

/// The form these messages are read in (`from` notes, explain).
pub(super) const FORM: &str = "span-content-events";

/// The event attributes read here (projection at decode).
pub(crate) const EVENT_KEYS: [&str; 6] = [
    "gen_ai.prompt",
    "gen_ai.completion",
    "prompt",
    "completion",
    "input",
    "output",
];

/// The JSON texts of side `side` in `s`'s events: events and attributes
/// whose names say the side by the words a model-call body's key says it
/// with (`sides::event_texts`); of each event, the first such attribute of
/// [`EVENT_KEYS`] whose text is a JSON list or object.
fn texts(s: &SpanRecord, side: Side) -> impl Iterator<Item = &str> + '_ {
    super::sides::event_texts(s, side, |key, t| {
        let t = t.trim_start();
        (EVENT_KEYS.contains(&key) && t.starts_with(['[', '{'])).then_some(t)
    })
}

/// The JSON texts of span `s`'s output events (`conversation`'s reader of
/// an output that lists results).
pub(crate) fn output_texts(s: &SpanRecord) -> impl Iterator<Item = &str> + '_ {
    texts(s, Side::Output)
}

/// Whether span `s` has an event of a model's output.
pub(super) fn has_output(s: &SpanRecord) -> bool {
    texts(s, Side::Output).next().is_some() || role_keyed::has(s, Side::Output)
}

/// Whether span `s` has an event of a request's messages.
pub(super) fn has_request(s: &SpanRecord) -> bool {
    texts(s, Side::Input).next().is_some()
        || role_keyed::has(s, Side::Input)
        || role_lines::has(s, Side::Input)
}

/// The messages of span `s`'s output events, as a JSON list; else its
/// role-keyed ones (`role_keyed`).
pub(crate) fn output(s: &SpanRecord) -> Option<Value> {
    messages(s, Side::Output).or_else(|| role_keyed::messages(s, Side::Output))
}

/// The messages of span `s`'s request events, as a JSON list; else its
/// role-keyed ones (`role_keyed`), else its role lines (`role_lines`).
pub(super) fn request(s: &SpanRecord) -> Option<Value> {
    messages(s, Side::Input)
        .or_else(|| role_keyed::messages(s, Side::Input))
        .or_else(|| role_lines::messages(s, Side::Input))
}

/// The messages of side `side`, in event order: a list's items, a
/// request object's `messages`, or another object as one message.
fn messages(s: &SpanRecord, side: Side) -> Option<Value> {
    let mut out = Vec::new();
    for t in texts(s, side) {
        match serde_json::from_str::<Value>(t) {
            Ok(Value::Array(items)) => out.extend(items),
            Ok(Value::Object(mut o)) => match o.remove("messages") {
                Some(Value::Array(items)) => out.extend(items),
                Some(other) => {
                    o.insert("messages".into(), other);
                    out.push(Value::Object(o));
                }
                None => out.push(Value::Object(o)),
            },
            Ok(_) | Err(_) => {}
        }
    }
    for m in &mut out {
        calls_from_content(m);
    }
    // A system message is no turn: Langtrace appends Anthropic's separate
    // `system` parameter after the history, where it would read as someone
    // speaking after the model's last turn. Moved first, order kept.
    out.sort_by_key(|m| m.get("role").and_then(Value::as_str) != Some("system"));
    (!out.is_empty()).then_some(Value::Array(out))
}

/// Moves a message's calls written as its `content` to its `tool_calls`:
/// a list (or a list's JSON text) of objects, each with a `function`
/// object that has a `name`.
fn calls_from_content(m: &mut Value) {
    let Some(o) = m.as_object_mut() else {
        return;
    };
    if o.contains_key("tool_calls") {
        return;
    }
    let calls = match o.get("content") {
        Some(Value::Array(items)) => items.clone(),
        Some(Value::String(t)) if t.trim_start().starts_with('[') => {
            match serde_json::from_str::<Vec<Value>>(t) {
                Ok(items) => items,
                Err(_) => return,
            }
        }
        _ => return,
    };
    let is_call = |c: &Value| {
        c.get("function")
            .and_then(|f| f.get("name"))
            .is_some_and(Value::is_string)
    };
    if calls.is_empty() || !calls.iter().all(is_call) {
        return;
    }
    o.insert("content".into(), Value::Null);
    o.insert("tool_calls".into(), Value::Array(calls));
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::trace::v1::span::Event;
    use serde_json::json;

    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::event;
    use crate::extract::Extractor;

    fn span(id: u8, start: u64, events: Vec<Event>) -> SpanRecord {
        let mut s = crate::extract::tests::sp(id, None, (start, start + 5), "chat", &[]);
        s.span.events = events;
        s
    }

    /// A made-up vendor's event names and keys of the same family: the
    /// calls as the JSON text of the output message's content, the request
    /// an object with `messages`, the system message after the history.
    #[test]
    fn events_of_either_side_are_read_by_their_words() {
        let calls = json!([{"id": "c1", "type": "function",
            "function": {"name": "find_hotel", "arguments": "{\"town\":\"Lyon\"}"}}]);
        let out = json!([{"role": "assistant", "content": calls.to_string()}]).to_string();
        let asks = span(
            1,
            10,
            vec![
                event("acme.llm.output", "output", &out),
                event("acme.llm.output", "output", "not json"),
                event("acme.llm.note", "output", "[]"),
            ],
        );
        assert!(has_output(&asks) && !has_request(&asks));
        assert_eq!(
            output(&asks),
            Some(json!([{"role": "assistant", "content": null, "tool_calls": calls}]))
        );

        let req = json!({"messages": [
            {"role": "assistant", "content": calls.clone()},
            {"role": "tool", "tool_call_id": "c1", "content": "Le Phare"},
            {"role": "system", "content": "You book trips."}]});
        let answers = span(
            2,
            20,
            vec![event("acme.llm.input", "input", &req.to_string())],
        );
        assert!(has_request(&answers) && !has_output(&answers));
        let read = json!([
            {"role": "system", "content": "You book trips."},
            {"role": "assistant", "content": null, "tool_calls": calls},
            {"role": "tool", "tool_call_id": "c1", "content": "Le Phare"}]);
        assert_eq!(request(&answers), Some(read));

        // The witness makes the call of them, once, with its result.
        let trace = Trace::new(TraceId([5; 16]), vec![asks, answers], 0);
        let a = Extractor::default().analyze(&trace);
        let got: Vec<_> = a
            .calls
            .iter()
            .map(|c| (c.name.as_str(), c.args.value().cloned(), c.from))
            .collect();
        assert_eq!(
            got,
            [(
                "find_hotel",
                Some(json!({"town": "Lyon"})),
                Some(crate::extract::conversation::FROM_CONVERSATION)
            )]
        );

        // Content that is text, or a list not only of calls, stays.
        let text = json!([{"role": "assistant", "content": "[see above]"},
            {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}]);
        let s = span(
            3,
            30,
            vec![event("x.completion", "completion", &text.to_string())],
        );
        assert_eq!(output(&s), Some(text));
    }
}
