//! A model call's messages written in span events as role-keyed objects,
//! for the conversation witness (docs/conventions.md, "Calls written as
//! span events"). Monocle writes the request as a `data.input` event whose
//! `input` is a list of JSON texts, one a message, each `{"<role>":
//! <content>}`, and the output as a `data.output` event whose `response` is
//! one such text (`{"assistant": ...}`, or `{"tools": [...]}` for the
//! calls alone).
//!
//! Read by the shape, not the vendor: an event whose name says the side
//! (`bodies::side_of`), an attribute whose key says it too, holding such
//! objects (a list of texts, or one text). Each becomes a chat message:
//! the role its key names, the calls in it moved to `tool_calls`
//! (`{"tool_id", "tool_name", "tool_arguments"}` as the model asked for
//! them, `{"tool_function", "tool_arguments"}` as the history repeats
//! them, without an id); a result under `tool` (no id), and the Responses
//! API's items written without a role (`{"tool_function", ..., "call_id"}`,
//! `{"call_id", "output"}`), as the messages they stand for. Content
//! blocks (Anthropic's `tool_use`, `tool_result`) are left as they are:
//! the witness reads them.

use opentelemetry_proto::tonic::trace::v1::span::Event;
use serde_json::{json, Map, Value};

use super::sides::{side_of, Side};
use crate::assemble::{SpanRecord, Val};

/// The roles a message's one key may name; `tools` is the model's calls.
/// `developer` is OpenAI's name for the system's message (Agno sends it so).
const ROLES: [&str; 6] = ["system", "developer", "user", "assistant", "tool", "tools"];

/// Keys of a Responses item written without a role.
const ITEM_KEYS: [&str; 2] = ["tool_function", "call_id"];

/// Whether `text` starts as a role-keyed message or a roleless item:
/// `{"<role>"` (a byte look, no parse), or with `repr`, `{'<role>'`
/// too, a Python dict's repr: Monocle writes a message whose content is no
/// JSON value so (`{'system': <openai.Omit object at 0x...>}` first in the
/// list where a Responses request had no instructions). Such a text parses
/// as no message; it only opens a list of JSON ones.
fn looks_keyed(text: &str, repr: bool) -> bool {
    let Some(rest) = text.trim_start().strip_prefix('{') else {
        return false;
    };
    let rest = rest.trim_start();
    let quotes: &[char] = if repr { &['"', '\''] } else { &['"'] };
    let Some(quote) = rest.chars().next().filter(|c| quotes.contains(c)) else {
        return false;
    };
    let rest = &rest[1..];
    ROLES
        .iter()
        .chain(&ITEM_KEYS)
        .any(|k| rest.strip_prefix(k).is_some_and(|r| r.starts_with(quote)))
}

/// The texts of side `side` in `s`'s events, when they look role-keyed.
fn texts(s: &SpanRecord, side: Side) -> Vec<&str> {
    let mut out = Vec::new();
    if s.span.events.is_empty() {
        return out;
    }
    for e in s
        .span
        .events
        .iter()
        .filter(|e| side_of(&e.name) == Some(side))
    {
        if let Some(v) = value_of(e, side) {
            match v {
                Val::Str(t) if looks_keyed(t, false) => out.push(t),
                Val::Array(items) => {
                    let list: Vec<&str> =
                        items.iter().filter_map(|i| Val::of(i).as_str()).collect();
                    let opens = list.first().is_some_and(|t| looks_keyed(t, true));
                    if opens && list.iter().any(|t| looks_keyed(t, false)) {
                        out.extend(list);
                    }
                }
                _ => {}
            }
        }
        if !out.is_empty() {
            break;
        }
    }
    out
}

fn value_of(e: &Event, side: Side) -> Option<Val<'_>> {
    let kv = e
        .attributes
        .iter()
        .find(|kv| side_of(&kv.key) == Some(side))?;
    kv.value.as_ref().map(Val::of)
}

/// Whether span `s` has role-keyed messages of side `side`.
pub(super) fn has(s: &SpanRecord, side: Side) -> bool {
    !texts(s, side).is_empty()
}

/// The messages of side `side` of span `s`, as chat messages.
pub(super) fn messages(s: &SpanRecord, side: Side) -> Option<Value> {
    let out: Vec<Value> = texts(s, side)
        .into_iter()
        .filter_map(|t| match serde_json::from_str::<Value>(t) {
            Ok(Value::Object(o)) => message(o),
            _ => None,
        })
        .collect();
    (!out.is_empty()).then_some(Value::Array(out))
}

/// One role-keyed object (or roleless Responses item) as a chat message.
fn message(mut o: Map<String, Value>) -> Option<Value> {
    if o.len() == 1 {
        let (role, content) = o.into_iter().next()?;
        return keyed(&role, content);
    }
    // The Responses API's items, written without a role.
    let id = o.remove("call_id");
    if let Some(name) = o.remove("tool_function") {
        let args = o.remove("tool_arguments").unwrap_or(Value::Null);
        return Some(json!({"role": "assistant", "content": null,
            "tool_calls": [call(id, name, args)]}));
    }
    let output = o.remove("output")?;
    Some(json!({"role": "tool", "tool_call_id": id?, "content": output}))
}

/// The message of role key `role` holding `content`.
fn keyed(role: &str, content: Value) -> Option<Value> {
    let role = match role {
        "tools" => "assistant",
        r if ROLES.contains(&r) => r,
        _ => return None,
    };
    if role != "assistant" {
        return Some(json!({"role": role, "content": content}));
    }
    let Value::Array(items) = &content else {
        return Some(json!({"role": role, "content": content}));
    };
    let calls: Vec<Value> = items.iter().filter_map(call_of).collect();
    if calls.is_empty() || calls.len() != items.len() {
        // Content blocks (Anthropic's `tool_use`): the witness reads them.
        return Some(json!({"role": role, "content": content}));
    }
    Some(json!({"role": role, "content": null, "tool_calls": calls}))
}

/// A call as the model asked for it (`tool_id`, `tool_name`,
/// `tool_arguments`) or as the history repeats it, as JSON text
/// (`tool_function`, `tool_arguments`, no id).
fn call_of(item: &Value) -> Option<Value> {
    let parsed;
    let o = match item {
        Value::String(t) => {
            parsed = serde_json::from_str::<Value>(t).ok()?;
            parsed.as_object()?
        }
        Value::Object(o) => o,
        _ => return None,
    };
    let name = o.get("tool_name").or_else(|| o.get("tool_function"))?;
    let args = o.get("tool_arguments").cloned().unwrap_or(Value::Null);
    Some(call(o.get("tool_id").cloned(), name.clone(), args))
}

fn call(id: Option<Value>, name: Value, args: Value) -> Value {
    let mut c = json!({"type": "function", "function": {"name": name, "arguments": args}});
    if let Some(id) = id {
        c["id"] = id;
    }
    c
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, ArrayValue, KeyValue};
    use serde_json::json;

    use super::*;
    use crate::assemble::{Trace, TraceId};
    use crate::extract::Extractor;

    fn kv(key: &str, value: any_value::Value) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue { value: Some(value) }),
            ..KeyValue::default()
        }
    }

    /// A list attribute of `texts`, each a string value.
    fn list<T: ToString>(texts: &[T]) -> any_value::Value {
        any_value::Value::ArrayValue(ArrayValue {
            values: texts
                .iter()
                .map(|t| AnyValue {
                    value: Some(any_value::Value::StringValue(t.to_string())),
                })
                .collect(),
        })
    }

    fn model_span(id: u8, start: u64, input: &[Value], output: &Value) -> SpanRecord {
        let mut s = crate::extract::tests::sp(id, None, (start, start + 5), "acme.llm", &[]);
        s.span.events = vec![
            Event {
                name: "acme.request".into(),
                attributes: vec![kv("prompts", list(input))],
                ..Event::default()
            },
            Event {
                name: "acme.meta".into(),
                attributes: vec![kv("response", any_value::Value::StringValue("x".into()))],
                ..Event::default()
            },
            Event {
                name: "acme.completion".into(),
                attributes: vec![kv(
                    "completion",
                    any_value::Value::StringValue(output.to_string()),
                )],
                ..Event::default()
            },
        ];
        s
    }

    /// Monocle's Responses request without instructions: the list opens
    /// with a Python dict's repr, the JSON messages after it are read.
    #[test]
    fn a_list_opened_by_a_dicts_repr_is_read_by_its_json_messages() {
        let with = |texts: &[&str]| {
            let mut s = model_span(1, 10, &[], &json!({"assistant": "ok"}));
            s.span.events[0].attributes = vec![kv("prompts", list(texts))];
            s
        };
        let omitted = "{'system': <openai.Omit object at 0x7f00c0ffee10>}";
        let s = with(&[
            omitted,
            r#"{"user": "Find a flight."}"#,
            r#"{"call_id": "k1", "output": "AF12"}"#,
        ]);
        assert_eq!(
            messages(&s, Side::Input),
            Some(json!([
                {"role": "user", "content": "Find a flight."},
                {"role": "tool", "tool_call_id": "k1", "content": "AF12"},
            ]))
        );
        // Reprs alone are no messages; nor is a list a repr of no role opens.
        assert!(!has(
            &with(&[omitted, "{'user': 'Find a flight.'}"]),
            Side::Input
        ));
        assert!(!has(
            &with(&["{'town': 'Lyon'}", r#"{"user": "x"}"#]),
            Side::Input
        ));
    }

    /// A list opened by OpenAI's `developer` message (Agno's system
    /// prompt) is role-keyed like one opened by `system`.
    #[test]
    fn a_list_opened_by_a_developer_message_is_read() {
        let mut s = model_span(1, 10, &[], &json!({"assistant": "ok"}));
        let texts = [
            r#"{"developer": "Keep records."}"#,
            r#"{"user": "Weigh hive 3."}"#,
        ];
        s.span.events[0].attributes = vec![kv("prompts", list(&texts))];
        assert_eq!(
            messages(&s, Side::Input),
            Some(json!([
                {"role": "developer", "content": "Keep records."},
                {"role": "user", "content": "Weigh hive 3."},
            ]))
        );
    }

    /// A made-up vendor's role-keyed messages in events of its own names:
    /// the call asked for with an id, repeated without one, its result
    /// under `tool`.
    #[test]
    fn role_keyed_messages_in_events_are_read_as_chat_messages() {
        let user = json!({"user": "Find a flight from Nantes."});
        let asks = model_span(
            1,
            10,
            std::slice::from_ref(&user),
            &json!({"assistant": [{"tool_id": "k1", "tool_name": "find_flight",
                "tool_arguments": "{\"origin\": \"Nantes\"}"}]}),
        );
        assert!(has(&asks, Side::Input) && has(&asks, Side::Output));
        assert_eq!(
            messages(&asks, Side::Output),
            Some(
                json!([{"role": "assistant", "content": null, "tool_calls": [
                {"id": "k1", "type": "function", "function": {"name": "find_flight",
                    "arguments": "{\"origin\": \"Nantes\"}"}}]}])
            )
        );
        let repeated = json!({"tool_function": "find_flight",
            "tool_arguments": "{\"origin\": \"Nantes\"}"})
        .to_string();
        let answers = model_span(
            2,
            20,
            &[
                user,
                json!({"assistant": [repeated]}),
                json!({"tool": "{\"flight\": \"AF12\"}"}),
            ],
            &json!({"assistant": "AF12 it is."}),
        );
        assert_eq!(
            messages(&answers, Side::Input).map(|m| m[2].clone()),
            Some(json!({"role": "tool", "content": "{\"flight\": \"AF12\"}"}))
        );
        // The Responses API's items written without a role.
        let item = json!({"call_id": "k1", "output": "AF12"});
        assert_eq!(
            message(item.as_object().cloned().unwrap_or_default()),
            Some(json!({"role": "tool", "tool_call_id": "k1", "content": "AF12"}))
        );
        // Not role-keyed: a tool's own input, a key no role names.
        assert!(!looks_keyed("{'town': 'Lyon'}", true));
        assert!(!looks_keyed("{\"town\": \"Lyon\"}", true));
        assert!(!looks_keyed("{\"users\": 3}", true));

        let trace = Trace::new(TraceId([4; 16]), vec![asks, answers], 0);
        let a = Extractor::default().analyze(&trace);
        let got: Vec<_> = a
            .calls
            .iter()
            .map(|c| {
                let result = c.result.as_ref().map(|r| r.to_value());
                (c.name.as_str(), c.args.value().cloned(), result, c.from)
            })
            .collect();
        assert_eq!(
            got,
            [(
                "find_flight",
                Some(json!({"origin": "Nantes"})),
                Some(json!({"flight": "AF12"})),
                Some(crate::extract::conversation::FROM_CONVERSATION)
            )]
        );
    }
}
