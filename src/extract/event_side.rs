//! A span's input or output written as a span event rather than an
//! attribute (docs/conventions.md, "Content in span events"): Monocle's
//! `data.input` event with the arguments under `input`, its `data.output`
//! event with the result under `response`. Read by the words, not the
//! vendor: the first event whose name says the side (the words a model
//! call's body keys say it with: `input`, `prompt`, `request`, ... or
//! `output`, `response`, `completion`, ...), and in it the first attribute
//! whose key says the same side. Its value is then read as an attribute's
//! would be (JSON, a Python literal, a structured value).

use opentelemetry_proto::tonic::trace::v1::span::Event;
use serde_json::{Map, Value};

use super::rules::SideSpec;
use super::sides::{side_of, Side, SIDE_WORDS};
use crate::assemble::{SpanRecord, Val};

fn side(s: SideSpec) -> Side {
    match s {
        SideSpec::Input => Side::Input,
        SideSpec::Output => Side::Output,
    }
}

/// The event and attribute holding side `spec` of span `s`.
fn find(spec: SideSpec, s: &SpanRecord) -> Option<(&Event, usize)> {
    if s.span.events.is_empty() {
        return None;
    }
    let want = Some(side(spec));
    s.span
        .events
        .iter()
        .filter(|e| side_of(&e.name) == want)
        .find_map(|e| {
            let i = e
                .attributes
                .iter()
                .position(|kv| side_of(&kv.key) == want)?;
            Some((e, i))
        })
}

/// The value of side `spec` of span `s`, as its event holds it.
pub(crate) fn raw(spec: SideSpec, s: &SpanRecord) -> Option<Val<'_>> {
    let (e, i) = find(spec, s)?;
    e.attributes[i].value.as_ref().map(Val::of)
}

/// `event <name>.<key>` of the event attribute read for side `spec` of
/// span `s` (explain).
pub(crate) fn found(spec: SideSpec, s: &SpanRecord) -> Option<String> {
    let (e, i) = find(spec, s)?;
    Some(format!("event {}.{}", e.name, e.attributes[i].key))
}

/// The event attribute keys to keep at decode: the side words as bare keys
/// (`input`, `response`, ...), which rules' event-side sources and the
/// conversation witness's role-keyed messages read.
pub(crate) fn event_keys() -> Vec<String> {
    SIDE_WORDS
        .iter()
        .flat_map(|w| w.iter())
        .map(|w| w.to_string())
        .collect()
}

/// Arguments written as a list of `"name: value"` texts, one an argument
/// (Monocle's CrewAI tool spans: `["station: Part-Dieu", "hours: 3"]`), as
/// an object of those texts; a scalar's type is lost there, and taken from
/// the model's request as for other arguments written as text
/// (`requested::stringified`). A value that is a Python container literal
/// (`str()` of a list or dict: `types: ['T65', 'rye']`) is read as one
/// (`literal::parse`). Any other list, or one naming an argument twice,
/// stays as it is.
pub(crate) fn key_value_lines(v: Value) -> Value {
    let Value::Array(items) = &v else {
        return v;
    };
    let mut out = Map::new();
    for item in items {
        let Some((key, value)) = item.as_str().and_then(|t| t.split_once(": ")) else {
            return v;
        };
        let is_name = key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !is_name || out.contains_key(key) {
            return v;
        }
        let value =
            super::literal::parse(value).unwrap_or_else(|| Value::String(value.to_string()));
        out.insert(key.to_string(), value);
    }
    if out.is_empty() {
        return v;
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, ArrayValue, KeyValue};
    use serde_json::json;

    use super::*;
    use crate::assemble::{Trace, TraceId};
    use crate::extract::tests::sp;
    use crate::extract::Extractor;

    fn event(name: &str, key: &str, value: any_value::Value) -> Event {
        Event {
            name: name.into(),
            attributes: vec![KeyValue {
                key: key.into(),
                value: Some(AnyValue { value: Some(value) }),
                ..KeyValue::default()
            }],
            ..Event::default()
        }
    }

    fn text(t: &str) -> any_value::Value {
        any_value::Value::StringValue(t.into())
    }

    /// A made-up vendor's tool span typed by a dotted value, its input and
    /// output in span events: a Python literal and a structured list.
    #[test]
    fn a_tool_span_reads_its_input_and_output_from_events() {
        let mut s = sp(
            1,
            None,
            (10, 20),
            "zeta_sdk.tools.Wrapper.call",
            &[
                ("zeta.span.type", "agent.tool.execution"),
                ("zeta.name", "find_hotel"),
            ],
        );
        s.span.events = vec![
            event("zeta.metadata", "input", text("{'town': 'Paris'}")),
            event(
                "zeta.begin_input",
                "request",
                text("{'town': 'Lyon', 'ok': True}"),
            ),
            event(
                "zeta.end_output",
                "response",
                text("{'hotel': 'Le Phare', 'n': None}"),
            ),
        ];
        assert_eq!(
            found(SideSpec::Input, &s).as_deref(),
            Some("event zeta.begin_input.request")
        );
        let mut listed = sp(
            2,
            None,
            (30, 40),
            "zeta_sdk.tools.Wrapper.call",
            &[("zeta.span.type", "TOOL"), ("zeta.name", "rent_bike")],
        );
        let list = ArrayValue {
            values: vec![AnyValue {
                value: Some(text("Part-Dieu")),
            }],
        };
        listed.span.events = vec![
            event("input", "input", any_value::Value::ArrayValue(list)),
            event("output", "output", text("rented")),
        ];
        // A kind naming something else around tools: no call.
        let choice = sp(
            3,
            None,
            (50, 60),
            "zeta.choose",
            &[("zeta.span.type", "tool_choice"), ("zeta.name", "auto")],
        );
        let trace = Trace::new(TraceId([9; 16]), vec![s, listed, choice], 0);
        let a = Extractor::default().analyze(&trace);
        let got = crate::extract::test_support::name_args_results(&a);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].0, "find_hotel");
        assert_eq!(got[0].1, Some(json!({"town": "Lyon", "ok": true})));
        assert_eq!(got[1].0, "rent_bike");
        assert_eq!(got[0].2, Some(json!({"hotel": "Le Phare", "n": null})));
        assert_eq!(got[1].1, Some(json!(["Part-Dieu"])));
        assert_eq!(got[1].2, Some(json!("rented")));
    }

    #[test]
    fn a_list_of_name_value_texts_is_an_object_of_texts() {
        assert_eq!(
            key_value_lines(json!(["station: Part-Dieu", "hours: 3"])),
            json!({"station": "Part-Dieu", "hours": "3"})
        );
        assert_eq!(
            key_value_lines(json!([
                "bikes: ['e-1', 'e-2']",
                "plan: {'days': 2, 'ok': True}"
            ])),
            json!({"bikes": ["e-1", "e-2"], "plan": {"days": 2, "ok": true}})
        );
        for kept in [
            json!(["Part-Dieu"]),
            json!(["a: 1", "a: 2"]),
            json!(["two words: x"]),
            json!(["a: 1", 2]),
            json!([]),
        ] {
            assert_eq!(key_value_lines(kept.clone()), kept);
        }
    }
}
