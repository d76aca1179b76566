//! A tool message whose content is the record of the result it carries
//! (docs/conventions.md, "The conversation witness").
//!
//! Respan's pydantic-ai instrumentation writes a `tool` message without
//! `tool_call_id`, its content the JSON text of `{"name", "result",
//! "tool_call_id"}`: the call id, the tool's name and the value the tool
//! returned, and nothing else. Such a content is a record of the result,
//! not the result: the message takes its call id and tool name (where it
//! names none, or the same) and the record's result as its content. A
//! record needs a call id key and one result key, and any other key makes
//! it the tool's own value.

use serde_json::{Map, Value};

use super::Answer;

/// Keys of the call id in a record (a bare `id` is too common in a tool's
/// own value to count).
const ID_KEYS: [&str; 5] = [
    "tool_call_id",
    "call_id",
    "toolCallId",
    "tool_use_id",
    "toolUseId",
];
/// Keys of the tool's name in a record.
const NAME_KEYS: [&str; 3] = ["name", "tool_name", "toolName"];
/// Keys of the result in a record.
const RESULT_KEYS: [&str; 3] = ["result", "output", "response"];

/// `a` with its content's record taken apart (see the module's doc).
pub(super) fn unwrap(a: &mut Answer) {
    let Some(record) = a.content.as_ref().and_then(record) else {
        return;
    };
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| record.get(*k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let (Some(id), name) = (text(&ID_KEYS), text(&NAME_KEYS)) else {
        return;
    };
    let agrees = |mine: &Option<String>, theirs: &Option<String>| {
        mine.is_none() || theirs.is_none() || mine == theirs
    };
    if !agrees(&a.id, &Some(id.clone())) || !agrees(&a.name, &name) {
        return;
    }
    let result = RESULT_KEYS.iter().find_map(|k| record.get(*k)).cloned();
    a.id = Some(id);
    a.name = a.name.take().or(name);
    a.content = result;
}

/// The record in a content: an object (or its JSON text) of a call id,
/// one result and at most the tool's name.
fn record(c: &Value) -> Option<Map<String, Value>> {
    match c {
        Value::Object(o) => is_record(o).then(|| o.clone()),
        Value::String(t) => {
            let t = t.trim_start();
            if !t.starts_with('{') || !ID_KEYS.iter().any(|k| t.contains(k)) {
                return None;
            }
            match serde_json::from_str::<Value>(t) {
                Ok(Value::Object(o)) => is_record(&o).then_some(o),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether `o` holds a call id, one result, at most the tool's name and
/// nothing else.
fn is_record(o: &Map<String, Value>) -> bool {
    let count = |keys: &[&str]| keys.iter().filter(|k| o.contains_key(**k)).count();
    let (ids, names, results) = (count(&ID_KEYS), count(&NAME_KEYS), count(&RESULT_KEYS));
    ids == 1 && results == 1 && names <= 1 && o.len() == ids + names + results
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::{unwrap, Answer};

    fn answer(id: Option<&str>, content: Value) -> Answer {
        Answer {
            id: id.map(str::to_string),
            name: None,
            content: Some(content),
            ..Answer::default()
        }
    }

    #[test]
    fn a_result_record_gives_its_id_name_and_result() {
        let text = json!({"name": "tide", "result": {"high": 4}, "tool_call_id": "k1"}).to_string();
        for (id, content) in [(None, json!(text)), (Some("k1"), json!(text))] {
            let mut a = answer(id, content);
            unwrap(&mut a);
            assert_eq!(a.id.as_deref(), Some("k1"));
            assert_eq!(a.name.as_deref(), Some("tide"));
            assert_eq!(a.content, Some(json!({"high": 4})));
        }
        // Another id, another key, no id key: the tool's own value.
        let kept = [
            (Some("k2"), json!(text)),
            (None, json!({"call_id": "k1", "result": 1, "note": "x"})),
            (None, json!({"id": "k1", "result": 1})),
            (None, json!("{\"tool_call_id\": \"k1\"}")),
        ];
        for (id, content) in kept {
            let mut a = answer(id, content.clone());
            unwrap(&mut a);
            assert_eq!(a.content, Some(content));
        }
    }
}
