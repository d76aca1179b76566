//! Flattened messages written one an event (docs/conventions.md, "The
//! conversation witness"): instead of the span attributes
//! `<prefix><i>.role`, `<prefix><i>.content`, ..., a span event named
//! `<prefix><i>` (genai-otel-instrument: `gen_ai.prompt.0`,
//! `gen_ai.completion.0`) holds message `i`'s fields, each named
//! `<prefix><field>` (`gen_ai.prompt.role`), `<prefix><i>.<field>` or
//! `<field>`. They are read as the flattened attributes of any prefix of
//! [`super::FLAT_IN`] / [`super::FLAT_OUT`] would be, so a vendor that
//! moves one of those forms into events is read whatever its prefix.

use serde_json::Value;

use super::{gather_pairs, Flat, SPAN_KEY_PREFIXES};
use crate::assemble::{SpanRecord, Val};

/// A message's fields read from such an event (the flattened form's).
const FIELDS: [&str; 5] = ["role", "content", "tool_call_id", "name", "tool_calls"];

/// The event attribute keys read here (projection at decode): each
/// field under each flattened prefix, and bare.
pub(crate) fn event_keys() -> impl Iterator<Item = String> {
    let prefixed = SPAN_KEY_PREFIXES
        .iter()
        .flat_map(|p| FIELDS.iter().map(move |f| format!("{p}{f}")));
    prefixed.chain(FIELDS.iter().map(|f| f.to_string()))
}

/// The message index of an event named `name` under `prefix`
/// (`gen_ai.prompt.` and `gen_ai.prompt.3`: 3).
fn index(name: &str, prefix: &str) -> Option<usize> {
    name.strip_prefix(prefix)?.parse().ok()
}

/// Whether span `s` has an event of a message flattened under one of
/// `flats`' prefixes.
pub(super) fn has(s: &SpanRecord, flats: &[&Flat]) -> bool {
    s.span
        .events
        .iter()
        .any(|e| flats.iter().any(|f| index(&e.name, f.prefix).is_some()))
}

/// The messages of span `s`'s events flattened under `flat.prefix`, as
/// [`super::flat_messages`] rebuilds attributes; `None` when there are none.
pub(super) fn messages(s: &SpanRecord, flat: &Flat) -> Option<Value> {
    let prefix = flat.prefix;
    let mut pairs: Vec<(String, Option<Val<'_>>)> = Vec::new();
    for e in &s.span.events {
        let Some(i) = index(&e.name, prefix) else {
            continue;
        };
        let own = format!("{}.", e.name);
        for kv in &e.attributes {
            let key = kv.key.as_str();
            // `<prefix><i>.<field>`, `<prefix><field>`, or the bare field.
            let field = key
                .strip_prefix(own.as_str())
                .or_else(|| key.strip_prefix(prefix))
                .unwrap_or(key);
            if !FIELDS.contains(&field) {
                continue;
            }
            let value = kv.value.as_ref().map(Val::of);
            pairs.push((format!("{prefix}{i}.{field}"), value));
        }
    }
    (!pairs.is_empty()).then(|| gather_pairs(pairs.into_iter(), prefix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
    use opentelemetry_proto::tonic::trace::v1::span::Event;
    use serde_json::json;

    fn text(t: &str) -> Option<AnyValue> {
        Some(AnyValue {
            value: Some(any_value::Value::StringValue(t.into())),
        })
    }

    fn event(name: &str, attrs: &[(&str, Option<AnyValue>)]) -> Event {
        Event {
            name: name.into(),
            attributes: attrs
                .iter()
                .map(|(k, v)| KeyValue {
                    key: (*k).into(),
                    value: v.clone(),
                    ..KeyValue::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn span_with(events: Vec<Event>) -> SpanRecord {
        let mut s = crate::extract::tests::sp(1, None, (0, 5), "acme.chat", &[]);
        s.span.events = events;
        s
    }

    /// A made-up vendor writing OpenLLMetry's request one message an
    /// event: fields prefixed, bare, or with the index; an empty content.
    #[test]
    fn messages_one_an_event_read_as_flattened_attributes() {
        let s = span_with(vec![
            event(
                "gen_ai.prompt.1",
                &[
                    ("gen_ai.prompt.role", text("assistant")),
                    ("gen_ai.prompt.content", None),
                ],
            ),
            event(
                "gen_ai.prompt.0",
                &[("role", text("user")), ("content", text("a kite"))],
            ),
            event(
                "gen_ai.prompt.2",
                &[
                    ("gen_ai.prompt.2.role", text("tool")),
                    ("gen_ai.prompt.2.content", text("{\"kites\": 2}")),
                    ("zorblax.mood", text("sunny")),
                ],
            ),
            event("zorblax.prompt.0", &[("role", text("user"))]),
        ]);
        let flat = &super::super::OPENLLMETRY_IN;
        assert!(has(&s, &[flat]));
        let got = messages(&s, flat).expect("messages");
        assert_eq!(
            got,
            json!([
                {"role": "user", "content": "a kite"},
                {"role": "assistant"},
                {"role": "tool", "content": "{\"kites\": 2}"},
            ])
        );
        assert!(!has(&s, &[&super::super::OI_IN]));
        assert!(messages(&s, &super::super::OI_IN).is_none());
    }

    /// Calls flattened under an output prefix, one message an event.
    #[test]
    fn calls_of_an_output_message_event() {
        let s = span_with(vec![event(
            "llm.output_messages.0",
            &[
                ("llm.output_messages.role", text("assistant")),
                (
                    "llm.output_messages.tool_calls",
                    text(
                        r#"[{"id": "k1", "type": "function", "function": {"name": "fly_kite", "arguments": "{\"wind\": 3}"}}]"#,
                    ),
                ),
            ],
        )]);
        let got = messages(&s, &super::super::OI_OUT).expect("messages");
        let calls = super::super::calls_in(&got);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].id.as_deref(), Some("k1"));
        assert_eq!(calls[0].name, "fly_kite");
    }
}
