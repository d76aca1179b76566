//! A call's arguments or result written as a span event's attribute under
//! a key its rule reads as a span attribute (docs/conventions.md, "Content
//! in span events"). OTel GenAI moved content from attributes to events, and
//! instrumentations follow at their own pace: openai-agents-opentelemetry
//! writes `gen_ai.tool.call.arguments` on an event `gen_ai.tool.input` of
//! the `execute_tool` span, not on the span. So when none of a rule's
//! sources gives a value, each of its attribute sources is read again from
//! the first event that holds its key, in the rule's order, with the same
//! decoding and wrappers. Any rule, any key: no event or vendor is named.
//! A `flat` source (one attribute per key under a prefix) is read so too,
//! from the first event holding a key under its prefix: WayFlow's tool
//! spans carry the request in a `ToolExecutionStartEvent` as
//! `tool_request.inputs.<arg>`, one attribute per argument.

use super::flat;
use super::rules::{Field, Rule, Source, ANY, NS};
use crate::assemble::{find_attr, SpanRecord};

/// `sources` read from span `s`'s events: each attribute source whose key
/// an event of `s` holds, as a source of that event's attribute, in
/// `sources`' order. Empty (and no allocation) for a span without events.
pub(crate) fn sources(sources: &[Source], s: &SpanRecord) -> Vec<Source> {
    if s.span.events.is_empty() {
        return Vec::new();
    }
    sources
        .iter()
        .filter_map(|src| {
            let Field::Attr(key) = &src.field else {
                return None;
            };
            if src.flat {
                return flat_source(src, key, s);
            }
            let e = s
                .span
                .events
                .iter()
                .find(|e| find_attr(&e.attributes, key).is_some())?;
            let mut read = src.clone();
            read.field = Field::Event {
                event: e.name.clone(),
                attr: key.clone(),
            };
            Some(read)
        })
        .collect()
}

/// A `flat` source of key `key` read from the first event of `s` holding an
/// attribute under it (`{any}inputs`: WayFlow's `tool_request.inputs.town`
/// on its tool request event), the prefix found there made exact.
fn flat_source(src: &Source, key: &str, s: &SpanRecord) -> Option<Source> {
    if key.contains(NS) {
        return None;
    }
    let (e, prefix) = s.span.events.iter().find_map(|e| {
        let keys = || e.attributes.iter().map(|kv| kv.key.as_str());
        let prefix = match key.strip_prefix(ANY) {
            Some(rest) => flat::namespaced_in(rest, keys())?,
            None => {
                let under = format!("{key}.");
                keys()
                    .any(|k| k.starts_with(&under))
                    .then(|| key.to_string())?
            }
        };
        Some((e, prefix))
    })?;
    let mut read = src.clone();
    read.field = Field::Event {
        event: e.name.clone(),
        attr: prefix,
    };
    Some(read)
}

/// The attribute keys of the argument and result sources of `rules`: the
/// event attributes [`sources`] may read (projection at decode).
pub(crate) fn keys(rules: &[Rule]) -> impl Iterator<Item = String> + '_ {
    rules
        .iter()
        .flat_map(|r| r.args.iter().chain(&r.result))
        .filter(|src| !src.flat)
        .filter_map(|src| match &src.field {
            Field::Attr(key) => Some(key.clone()),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::event;
    use crate::extract::tests::sp;
    use crate::extract::Extractor;

    /// A made-up vendor's OTel GenAI tool spans with their arguments (and
    /// one result) only in span events of its own names, under the keys
    /// the rule reads on spans; a span with both keeps its attribute's.
    #[test]
    fn a_tool_spans_arguments_and_result_are_read_from_its_events() {
        let mut hotel = sp(
            1,
            None,
            (10, 20),
            "execute_tool find_hotel",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "find_hotel"),
            ],
        );
        hotel.span.events = vec![
            event("qux.note", "qux.text", "started"),
            event(
                "qux.tool.begin",
                "gen_ai.tool.call.arguments",
                r#"{"town": "Lyon"}"#,
            ),
            event("qux.tool.end", "gen_ai.tool.call.result", r#"{"stars": 3}"#),
        ];
        let mut bike = sp(
            2,
            None,
            (30, 40),
            "execute_tool rent_bike",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "rent_bike"),
                ("gen_ai.tool.call.result", "rented"),
            ],
        );
        bike.span.events = vec![
            event(
                "qux.tool.begin",
                "gen_ai.tool.call.arguments",
                r#"{"hours": 2}"#,
            ),
            event("qux.tool.end", "gen_ai.tool.call.result", "'ignored'"),
        ];
        let mut own = sp(
            3,
            None,
            (50, 60),
            "execute_tool rent_bike",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "rent_bike"),
                ("gen_ai.tool.call.arguments", r#"{"hours": 5}"#),
            ],
        );
        own.span.events = vec![event(
            "qux.tool.begin",
            "gen_ai.tool.call.arguments",
            r#"{"hours": 9}"#,
        )];
        let trace = Trace::new(TraceId([7; 16]), vec![hotel, bike, own], 0);
        let a = Extractor::default().analyze(&trace);
        let got = crate::extract::test_support::name_args_results(&a);
        assert_eq!(
            got,
            vec![
                (
                    "find_hotel",
                    Some(json!({"town": "Lyon"})),
                    Some(json!({"stars": 3}))
                ),
                (
                    "rent_bike",
                    Some(json!({"hours": 2})),
                    Some(json!("rented"))
                ),
                ("rent_bike", Some(json!({"hours": 5})), None),
            ]
        );
    }
}
