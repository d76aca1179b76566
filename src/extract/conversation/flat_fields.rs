//! Flattened message fields whose value is not plain text
//! (docs/conventions.md, "The conversation witness").
//!
//! Most flattened forms write one attribute per scalar
//! (`<prefix><i>.tool_calls.<j>.function.name`); some write a whole list
//! under the message's field instead. Respan's instrumentations write a
//! message's calls as the JSON text of OpenAI's `tool_calls` list in one
//! attribute (`gen_ai.completion.0.tool_calls`), and a message's content as
//! an OTLP array when the client sent a list (Cohere's document results:
//! `gen_ai.prompt.2.content` = `[{"type": "document", ...}]`). Both are
//! read as the indexed form would be, for every flattened prefix: the list
//! of calls as the message's `tool_calls` (indexed calls, where a span has
//! both, win), a nested content as its JSON value.
//!
//! Netra's instrumentations flatten each call the model asked for as a
//! message of its own: a model-role message whose `tool_call_id` names the
//! call and whose content is the JSON text of `{"name", "arguments"}`
//! (`gen_ai.completion.0.content` / `.tool_call_id`, then
//! `gen_ai.completion.1.*` for the next call of the same turn). Such a
//! message is read as a model message asking for that one call, and the
//! run of such messages in a row as one turn ([`calls_per_message`]).

use serde_json::{Map, Value};

use crate::assemble::Val;
use crate::extract::source::any_to_json;

/// The message field `field` of a flattened message, given whole as
/// `value` (no index after it), when it is a list of calls in JSON text or
/// a nested content: its value in the message.
pub(super) fn whole(field: &str, value: Val<'_>) -> Option<Value> {
    match (field, value) {
        ("tool_calls", Val::Str(text)) => calls_list(text),
        ("content", v @ (Val::Array(_) | Val::Kvlist(_))) => Some(any_to_json(v)),
        _ => None,
    }
}

/// `messages` (flattened, in order) with each model-role message that is
/// one call (see the module's doc) read as a message asking for it, and
/// the run of such messages in a row merged into one turn.
pub(super) fn calls_per_message(messages: Vec<Value>) -> Vec<Value> {
    // Most flattened messages are none: one look.
    if !messages.iter().any(|m| one_call(m).is_some()) {
        return messages;
    }
    let mut out: Vec<Value> = Vec::with_capacity(messages.len());
    // Whether the last message of `out` is a turn made of such messages.
    let mut in_run = false;
    for m in messages {
        let Some(call) = one_call(&m) else {
            in_run = false;
            out.push(m);
            continue;
        };
        let last = out.last_mut().and_then(Value::as_object_mut);
        let list = last
            .filter(|_| in_run)
            .and_then(|l| l.get_mut("tool_calls"))
            .and_then(Value::as_array_mut);
        match list {
            Some(list) => list.push(call),
            None => {
                let role = m.get("role").cloned().unwrap_or(Value::Null);
                let turn = Map::from_iter([
                    ("role".to_string(), role),
                    ("tool_calls".to_string(), Value::Array(vec![call])),
                ]);
                out.push(Value::Object(turn));
            }
        }
        in_run = true;
    }
    out
}

/// The call a flattened message stands for: a model-role message with a
/// `tool_call_id`, no `tool_calls`, and as content the JSON text of an
/// object naming the tool and holding its arguments and nothing else.
fn one_call(m: &Value) -> Option<Value> {
    let o = m.as_object()?;
    let role = o.get("role")?.as_str()?;
    if !super::MODEL_ROLES.contains(&role) || o.contains_key("tool_calls") {
        return None;
    }
    let id = o
        .get("tool_call_id")?
        .as_str()
        .filter(|id| !id.is_empty())?;
    let text = o.get("content")?.as_str()?.trim_start();
    if !text.starts_with('{') || !text.contains("\"arguments\"") {
        return None;
    }
    let Ok(Value::Object(call)) = serde_json::from_str::<Value>(text) else {
        return None;
    };
    let named = call.get("name").and_then(Value::as_str).is_some();
    let only = call
        .keys()
        .all(|k| matches!(k.as_str(), "name" | "arguments" | "id" | "type"));
    if !named || !call.contains_key("arguments") || !only {
        return None;
    }
    let mut call = call;
    call.insert("id".into(), Value::String(id.to_string()));
    Some(Value::Object(call))
}

/// The JSON text of a list of call objects, parsed; `None` for anything
/// else (an empty list, text, a list of non-objects).
fn calls_list(text: &str) -> Option<Value> {
    let t = text.trim_start();
    if !t.starts_with('[') {
        return None;
    }
    match serde_json::from_str::<Value>(t) {
        Ok(Value::Array(list)) if !list.is_empty() && list.iter().all(Value::is_object) => {
            Some(Value::Array(list))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{calls_per_message, whole as read};
    use crate::assemble::Val;

    #[test]
    fn a_calls_list_in_json_text_is_the_message_calls() {
        let text = r#"[{"id": "k1", "type": "function", "function": {"name": "tide", "arguments": "{}"}}]"#;
        assert_eq!(
            read("tool_calls", Val::Str(text)),
            Some(json!([{"id": "k1", "type": "function",
                "function": {"name": "tide", "arguments": "{}"}}]))
        );
        for not in ["", "[]", "[1, 2]", "calls", "{\"id\": 1}", "[{"] {
            assert_eq!(read("tool_calls", Val::Str(not)), None, "{not}");
        }
        // Only the calls field is read so; a text content stays text.
        assert_eq!(read("content", Val::Str(text)), None);
    }

    #[test]
    fn a_model_message_that_is_one_call_asks_for_it_and_a_run_is_one_turn() {
        let call = |n: &str, a: &str| json!({"name": n, "arguments": a}).to_string();
        let got = calls_per_message(vec![
            json!({"role": "user", "content": "go"}),
            json!({"role": "assistant", "content": call("tide", "{}"), "tool_call_id": "k1"}),
            json!({"role": "assistant", "content": call("berth", "{\"n\": 2}"), "tool_call_id": "k2"}),
            json!({"role": "tool", "content": "06:12", "tool_call_id": "k1"}),
            // Not a call: no id; a user's message; another key.
            json!({"role": "assistant", "content": call("tide", "{}")}),
            json!({"role": "user", "content": call("tide", "{}"), "tool_call_id": "k3"}),
            json!({"role": "assistant", "tool_call_id": "k4",
                "content": json!({"name": "tide", "arguments": "{}", "note": 1}).to_string()}),
        ]);
        assert_eq!(got.len(), 6, "{got:?}");
        assert_eq!(
            got[1],
            json!({"role": "assistant", "tool_calls": [
                {"id": "k1", "name": "tide", "arguments": "{}"},
                {"id": "k2", "name": "berth", "arguments": "{\"n\": 2}"}]})
        );
        for m in &got[3..] {
            assert!(m.get("tool_calls").is_none(), "{m}");
        }
    }

    #[test]
    fn every_flattened_family_reads_a_calls_list_and_one_call_messages() {
        use crate::extract::conversation::{
            asked_of, flat_messages, read_request, FLAT_IN, FLAT_OUT,
        };
        use crate::extract::tests::sp;
        let list = json!([{"id": "k1", "type": "function",
            "function": {"name": "tide", "arguments": "{\"port\": \"Brest\"}"}}])
        .to_string();
        for (out, input) in FLAT_OUT.iter().zip(FLAT_IN) {
            let key = |p: &str, k: &str| format!("{p}{k}");
            let (o, i) = (out.prefix, input.prefix);
            let attrs = [
                (key(o, "0.role"), "assistant".to_string()),
                (key(o, "0.tool_calls"), list.clone()),
                (key(i, "0.role"), "assistant".to_string()),
                (
                    key(i, "0.content"),
                    json!({"name": "berth", "arguments": "{}"}).to_string(),
                ),
                (key(i, "0.tool_call_id"), "k0".to_string()),
                (key(i, "1.role"), "tool".to_string()),
                (key(i, "1.content"), "2 nights".to_string()),
            ];
            let attrs: Vec<(&str, &str)> = attrs
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let s = sp(1, None, (0, 5), "acme.chat", &attrs);
            let (asked, _) = asked_of(&s);
            let got: Vec<(Option<&str>, &str)> = asked
                .iter()
                .map(|a| (a.id.as_deref(), a.name.as_str()))
                .collect();
            assert_eq!(got, [(Some("k1"), "tide")], "{o}");
            let messages = flat_messages(&s, input);
            let r = read_request(&messages.unwrap_or_default(), input.form);
            assert_eq!(r.last_turn.len(), 1, "{i}");
            assert_eq!(r.last_turn[0].name, "berth", "{i}");
            assert_eq!(r.answers[0].id.as_deref(), Some("k0"), "{i}");
        }
    }

    #[test]
    fn a_cohere_document_block_is_the_result_it_holds() {
        use crate::extract::wrappers::known_result;
        let block = |data: &str| json!([{"type": "document", "document": {"data": data}}]);
        assert_eq!(known_result(block("{\"high\": 4}")), json!({"high": 4}));
        assert_eq!(known_result(block("\"booked\"")), json!("booked"));
        // Two documents, or a document with more than its data, stay.
        let two = json!([block("a")[0], block("b")[0]]);
        assert_eq!(known_result(two.clone()), two);
        let more = json!([{"type": "document", "document": {"data": "a", "title": "t"}}]);
        assert_eq!(known_result(more.clone()), more);
    }
}
