//! A framework's own message roles for tool turns (docs/conventions.md,
//! "The conversation witness", "A framework's tool-turn roles").
//!
//! A framework may keep its memory in messages of roles of its own and
//! convert them for the provider only when it calls the model; an
//! instrumentation of the framework records them before that conversion.
//! smolagents writes the model's calls as a `tool-call` message whose text
//! is `Calling tools:` and the Python `repr` of the calls (`[{'id', 'type',
//! 'function': {'name', 'arguments'}}]`), and the results as a
//! `tool-response` message (`Observation:` and the result), which it sends
//! as `assistant` and `user` messages. Such messages are read as the model
//! turn and the user message they stand for: the turn's calls keep their
//! ids, and the results after it are paired with them as any results
//! without ids are (`item_ids`). The roles and the text that opens a call
//! turn are data (`vocabulary.toml`: `call_turn_roles`,
//! `call_turn_opens`, `result_turn_roles`).

use std::borrow::Cow;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::extract::rules::builtin_list;

/// The declared roles and openings, looked up once.
struct Roles {
    calls: &'static [String],
    opens: &'static [String],
    results: &'static [String],
}

fn roles() -> &'static Roles {
    static ROLES: OnceLock<Roles> = OnceLock::new();
    ROLES.get_or_init(|| Roles {
        calls: builtin_list("call_turn_roles"),
        opens: builtin_list("call_turn_opens"),
        results: builtin_list("result_turn_roles"),
    })
}

/// Whether message `m`'s role is one of `list`.
fn role_in(m: &Value, list: &[String]) -> bool {
    m.get("role")
        .and_then(Value::as_str)
        .is_some_and(|role| list.iter().any(|r| r == role))
}

/// The role a Python enum member's `str()` stands for (`MessageRole.TOOL_CALL`
/// -> `tool-call`: smolagents' roles as the OTel GenAI instrumentation
/// writes them), when `role` is one.
fn enum_role(role: &str) -> Option<String> {
    let (class, member) = role.split_once('.')?;
    let word = |t: &str, upper: bool| {
        !t.is_empty()
            && t.starts_with(|c: char| c.is_ascii_alphabetic())
            && t.chars().all(|c| {
                c == '_'
                    || c.is_ascii_digit()
                    || (c.is_ascii_alphabetic() && (!upper || c.is_ascii_uppercase()))
            })
    };
    (word(class, false) && word(member, true))
        .then(|| member.to_ascii_lowercase().replace('_', "-"))
}

/// `messages` with roles written as an enum member's name read as the
/// role they stand for; borrowed when there is none.
fn plain_roles(messages: Cow<'_, [Value]>) -> Cow<'_, [Value]> {
    let named = |m: &Value| m.get("role").and_then(Value::as_str).and_then(enum_role);
    if !messages.iter().any(|m| named(m).is_some()) {
        return messages;
    }
    let out = messages
        .iter()
        .map(|m| match named(m) {
            Some(role) => with_role(m, &role),
            None => m.clone(),
        })
        .collect();
    Cow::Owned(out)
}

/// Whether `m` is a model message whose whole text is a call turn's
/// (`Calling tools:` and the calls): smolagents sends its call turns to the
/// model so, as `assistant` messages.
fn model_call_turn(m: &Value, opens: &[String]) -> bool {
    // The first text says, before any text is gathered or parsed.
    let first = match m.get("content").or_else(|| m.get("parts")) {
        Some(Value::String(t)) => Some(t.as_str()),
        Some(Value::Array(parts)) => parts.first().and_then(|p| {
            p.get("content")
                .or_else(|| p.get("text"))
                .and_then(Value::as_str)
        }),
        _ => None,
    };
    let opens_turn =
        first.is_some_and(|t| opens.iter().any(|o| t.trim_start().starts_with(o.as_str())));
    opens_turn
        && m.get("role").and_then(Value::as_str) == Some("assistant")
        && m.get("tool_calls").is_none()
        && calls_of(m, opens).is_some()
}

/// `messages` with each message of a framework's tool-turn role read as
/// the message it stands for (see the module's doc); borrowed when there
/// is none.
pub(super) fn converted(messages: Cow<'_, [Value]>) -> Cow<'_, [Value]> {
    let r = roles();
    let messages = plain_roles(messages);
    if !messages
        .iter()
        .any(|m| role_in(m, r.calls) || role_in(m, r.results) || model_call_turn(m, r.opens))
    {
        return messages;
    }
    let out = messages
        .iter()
        .map(|m| {
            if role_in(m, r.results) {
                return with_role(m, "user");
            }
            if role_in(m, r.calls) || model_call_turn(m, r.opens) {
                if let Some(calls) = calls_of(m, r.opens) {
                    return Value::Object(Map::from_iter([
                        ("role".to_string(), Value::String("assistant".into())),
                        ("tool_calls".to_string(), calls),
                    ]));
                }
            }
            m.clone()
        })
        .collect();
    Cow::Owned(out)
}

/// `m` with role `role`.
fn with_role(m: &Value, role: &str) -> Value {
    let mut m = m.clone();
    if let Some(o) = m.as_object_mut() {
        o.insert("role".into(), Value::String(role.into()));
    }
    m
}

/// The calls a call turn's text lists after one of `opens`: a JSON or
/// Python list of call objects.
fn calls_of(m: &Value, opens: &[String]) -> Option<Value> {
    let o = m.as_object()?;
    let text = match o.get("content") {
        Some(Value::String(t)) => Value::String(t.clone()),
        _ => super::order::text_of_parts(o)?,
    };
    let text = text.as_str()?.trim();
    let rest = opens.iter().find_map(|p| text.strip_prefix(p.as_str()))?;
    let list = super::text_results::value_of(rest.trim());
    let items = list.as_array()?;
    let calls = !items.is_empty() && items.iter().all(|c| c.get("function").is_some());
    calls.then_some(list)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_framework_s_tool_turns_read_as_the_messages_they_stand_for() {
        let messages = vec![
            json!({"role": "user", "content": "Plan the trip."}),
            json!({"role": "tool-call", "content": [{"type": "text", "text":
                "Calling tools:\n[{'id': 'c1', 'type': 'function', 'function': {'name': 'pick_berth', 'arguments': {'marina': 'Ostia'}}}]"}]}),
            json!({"role": "tool-response", "content": [{"type": "text", "text": "Observation:\nberth 12"}]}),
        ];
        let got = converted(Cow::Owned(messages));
        assert_eq!(
            got[1],
            json!({"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                   "function": {"name": "pick_berth", "arguments": {"marina": "Ostia"}}}]})
        );
        assert_eq!(got[2]["role"], "user");
        assert_eq!(got[0]["role"], "user");
        // Text that lists no calls stays as it was.
        let other = vec![json!({"role": "tool-call", "content": "Calling tools:\nnone"})];
        assert_eq!(converted(Cow::Owned(other.clone()))[0], other[0]);
    }

    #[test]
    fn enum_member_roles_and_call_turns_sent_as_the_model_s_text_are_read() {
        let turn = "Calling tools:\n[{'id': 'c7', 'type': 'function', 'function': {'name': 'count_vans', 'arguments': {}}}]";
        let messages = vec![
            json!({"role": "MessageRole.USER", "parts": [{"type": "text", "content": "How many?"}]}),
            json!({"role": "MessageRole.ASSISTANT", "parts": [{"type": "text", "content": turn}]}),
            json!({"role": "MessageRole.TOOL_RESPONSE", "content": "Observation:\n9"}),
        ];
        let got = converted(Cow::Owned(messages));
        assert_eq!(got[0]["role"], "user");
        assert_eq!(got[1]["role"], "assistant");
        assert_eq!(got[1]["tool_calls"][0]["function"]["name"], "count_vans");
        assert_eq!(got[2]["role"], "user");
        // Not an enum member's name: left as written.
        for role in [
            "assistant",
            "a.b",
            "Role.",
            ".USER",
            "MessageRole.User",
            "x.y.Z",
        ] {
            assert_eq!(enum_role(role), None, "{role}");
        }
        assert_eq!(
            enum_role("MessageRole.TOOL_CALL").as_deref(),
            Some("tool-call")
        );
        // A model's text that only mentions the words is no call turn.
        let prose =
            json!({"role": "assistant", "content": "Before Calling tools:\n[{'id': 'c1'}]"});
        let listed = json!({"role": "assistant", "content": "Calling tools:\n[{'id': 'c1'}]"});
        for m in [prose, listed] {
            assert_eq!(converted(Cow::Owned(vec![m.clone()]))[0], m);
        }
    }
}
