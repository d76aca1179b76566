//! The calls a model asked for, flattened one attribute per field under a
//! list of requests (docs/conventions.md, "Tool requests in span events"):
//! WayFlow's message spans write `initial_message.tool_requests.<j>.name`,
//! `.args.<arg>` (each argument typed as the model gave it) and
//! `.tool_request_id`. Read as the requested calls the JSON forms give
//! (`extract::requested`), so that a tool span whose arguments were
//! written as text (`hours = "2"`) is typed by the model's ask. The list
//! names are data (vocabulary `flat_ask_lists`).

use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::rules::builtin_list;
use super::source::any_to_json;
use crate::assemble::SpanRecord;

/// The fields of a flattened request: its name, arguments and call id.
const NAME: &str = "name";
const ARGS: [&str; 2] = ["args", "arguments"];
const IDS: [&str; 3] = ["tool_request_id", "id", "call_id"];

/// The list names, each with a dot after it (`tool_requests.`).
fn lists() -> &'static [String] {
    static LISTS: OnceLock<Vec<String>> = OnceLock::new();
    LISTS.get_or_init(|| {
        builtin_list("flat_ask_lists")
            .iter()
            .map(|l| format!("{l}."))
            .collect()
    })
}

/// The span key infixes read here (projection at decode).
pub(crate) fn infixes() -> impl Iterator<Item = String> {
    lists().iter().cloned()
}

/// The requests flattened on span `s`, in key order: each call's id (when
/// recorded), tool name and arguments.
pub(crate) fn read(s: &SpanRecord) -> Vec<(Option<String>, String, Value)> {
    let mut out = Vec::new();
    let lists = lists();
    for (key, value) in s.span.attributes() {
        let Some(stem) = key.strip_suffix(NAME).and_then(|k| k.strip_suffix('.')) else {
            continue;
        };
        // `<...><list>.<j>`: an index after a declared list name.
        let Some((list, index)) = stem.rsplit_once('.') else {
            continue;
        };
        let listed = lists
            .iter()
            .any(|l| list.ends_with(&l[..l.len() - 1]) && is_part_end(list, l.len() - 1));
        if !listed || index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Some(Value::String(name)) = value.map(any_to_json) else {
            continue;
        };
        let args = ARGS
            .iter()
            .find_map(|a| super::flat::object(&format!("{stem}.{a}"), s));
        let id = IDS
            .iter()
            .find_map(|f| s.attr_str(&format!("{stem}.{f}")))
            .map(str::to_string);
        out.push((id, name, args.unwrap_or_else(|| Value::Object(Map::new()))));
    }
    out
}

/// Whether the list name, the last `len` bytes of `list`, starts it or
/// follows a `.`.
fn is_part_end(list: &str, len: usize) -> bool {
    let at = list.len() - len;
    at == 0 || list.as_bytes()[at - 1] == b'.'
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
    use opentelemetry_proto::tonic::trace::v1::span::Event;
    use serde_json::json;

    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::{name_args_results, span_of};
    use crate::extract::Extractor;

    fn kv(key: &str, v: any_value::Value) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue { value: Some(v) }),
            ..KeyValue::default()
        }
    }

    fn text(key: &str, t: &str) -> KeyValue {
        kv(key, any_value::Value::StringValue(t.into()))
    }

    fn event(name: &str, attributes: Vec<KeyValue>) -> Event {
        Event {
            name: name.into(),
            attributes,
            ..Event::default()
        }
    }

    /// A made-up vendor's tool span whose arguments are text, one
    /// attribute per key in its start event, typed by the model's ask
    /// flattened under a `tool_requests` list on an earlier span; its
    /// result in another event.
    #[test]
    fn a_tool_request_in_events_is_typed_by_the_flattened_ask() {
        let ask = span_of(
            1,
            None,
            "qux.message",
            (10, 20),
            vec![
                text("qux.msg.tool_requests.0.name", "rent_kayak"),
                text("qux.msg.tool_requests.0.args.lake", "Orta"),
                kv(
                    "qux.msg.tool_requests.0.args.hours",
                    any_value::Value::IntValue(3),
                ),
                text("qux.msg.tool_requests.0.tool_request_id", "req-7"),
            ],
        );
        let mut tool = span_of(
            2,
            None,
            "ToolExecutionSpan",
            (30, 40),
            vec![text("tool.name", "rent_kayak")],
        );
        tool.span.events = vec![
            event(
                "qux.start",
                vec![
                    text("qux.request.inputs.lake", "Orta"),
                    text("qux.request.inputs.hours", "3"),
                    text("qux.request.id", "req-7"),
                ],
            ),
            event(
                "qux.end",
                vec![text("tool_result.output", r#"{"ok": true}"#)],
            ),
        ];
        let trace = Trace::new(TraceId([9; 16]), vec![ask, tool], 0);
        let a = Extractor::default().analyze(&trace);
        assert_eq!(
            name_args_results(&a),
            vec![(
                "rent_kayak",
                Some(json!({"lake": "Orta", "hours": 3})),
                Some(json!({"ok": true}))
            )]
        );
    }
}
