//! Envelopes around what a tool span holds, in shapes no tool returns or
//! takes of its own (docs/conventions.md, "Result wrappers"):
//!
//! - a framework's result object whose model-visible part is its text
//!   blocks, the rest its own bookkeeping (AgentScope's `ToolResponse`:
//!   `content` blocks with ids and times, `state`, `metadata`, `id`);
//! - Python's `repr()` of a tool message (`content='...' name='...'
//!   tool_call_id='...'`), alone or as the lone value of an `output` or
//!   `result` key (traceAI's record of LangGraph's `ToolNode` output);
//! - a call record `{"tool_name": ..., "arguments": {...}}` under a
//!   vendor's input key (Laminar's MCP tool spans);
//! - a tool span's own GenAI messages holding one tool message, or one tool
//!   call or tool result part (TanStack AI's tool spans);
//! - LangChain's serialization of a message of any class (`{"lc": 1,
//!   "type": "constructor", "id": [..., "messages", "<Class>"], "kwargs"}`),
//!   alone, as the lone value of any key, or as the value of a typed value
//!   `{"type", "value"}` (LangWatch's): it shows up under every tracer of
//!   LangChain (LangSmith, LangWatch, Langfuse, OpenInference).

use serde_json::{Map, Value};

/// The keys of a producer's bookkeeping beside a result's text blocks and
/// in them: ids, times, a status, metadata. A key outside this list is the
/// tool's own (`{"content": [...], "seats": 2}` is a value, no envelope).
const BOOKKEEPING_KEYS: [&str; 18] = [
    "id",
    "state",
    "status",
    "metadata",
    "meta",
    "_meta",
    "annotations",
    "created_at",
    "finished_at",
    "updated_at",
    "timestamp",
    "is_error",
    "isError",
    "error",
    "tool_call_id",
    "call_id",
    "name",
    "index",
];

/// A text block with its producer's bookkeeping: `type` `text`, `text` a
/// string, any other key one of [`BOOKKEEPING_KEYS`] holding a scalar.
fn is_text_block_with_scalars(v: &Value) -> bool {
    v.as_object().is_some_and(|o| {
        o.get("type").and_then(Value::as_str) == Some("text")
            && o.get("text").is_some_and(Value::is_string)
            && o.iter()
                .all(|(k, x)| k == "type" || k == "text" || (is_bookkeeping_key(k) && is_scalar(x)))
    })
}

fn is_bookkeeping_key(k: &str) -> bool {
    BOOKKEEPING_KEYS.contains(&k)
}

fn is_scalar(v: &Value) -> bool {
    !(v.is_object() || v.is_array())
}

/// Bookkeeping beside an envelope's content: a scalar, or an object or
/// list of scalars (`"metadata": {}`).
fn is_bookkeeping(v: &Value) -> bool {
    match v {
        Value::Object(o) => o.values().all(is_scalar),
        Value::Array(a) => a.iter().all(is_scalar),
        _ => true,
    }
}

/// The keys under which a wrapper holds the one value it wraps.
const LONE_KEYS: [&str; 2] = ["output", "result"];

/// A result envelope -> the value the model saw:
/// - `{"content": [text blocks], <bookkeeping>...}` (at least one other
///   key, each of [`BOOKKEEPING_KEYS`] holding [`is_bookkeeping`] data; the
///   blocks may carry such keys too, scalars) -> the text (JSON-decoded;
///   several blocks a list);
/// - such a list of text blocks on its own -> the same;
/// - a tool message's `repr()` ([`message_repr`]), alone or as the lone
///   value of `output` / `result` -> its content (JSON-decoded).
///
/// `Err` gives `v` back.
pub(crate) fn text_envelope(v: Value) -> Result<Value, Value> {
    let v = match lc_message(v) {
        Ok(content) => return Ok(content),
        Err(v) => v,
    };
    let v = match genai_tool_result(v) {
        Ok(content) => return Ok(content),
        Err(v) => v,
    };
    match v {
        Value::Array(items)
            if !items.is_empty() && items.iter().all(is_text_block_with_scalars) =>
        {
            Ok(texts(items))
        }
        Value::Object(mut o) if is_content_envelope(&o) => match o.remove("content") {
            Some(Value::Array(items)) => Ok(texts(items)),
            _ => Err(Value::Object(o)),
        },
        Value::Object(mut o) if o.len() == 1 => {
            let key = LONE_KEYS.iter().find(|k| o.contains_key(**k));
            let inner = key.and_then(|k| o.remove(*k));
            match (key, inner) {
                (Some(k), Some(inner)) => match message_repr(inner) {
                    Ok(x) => Ok(x),
                    Err(inner) => {
                        o.insert((*k).to_string(), inner);
                        Err(Value::Object(o))
                    }
                },
                _ => Err(Value::Object(o)),
            }
        }
        Value::String(_) => message_repr(v).or_else(state_repr),
        other => Err(other),
    }
}

/// The `repr()` of a tool message instance (`ToolMessage(content='...',
/// tool_call_id='...')`), alone or as the one message of a graph state's
/// update (`{'messages': [ToolMessage(...)]}`: LangGraph's tool node
/// returns it, TruLens records its `repr()`) -> the content (JSON-decoded).
fn state_repr(v: Value) -> Result<Value, Value> {
    let Value::String(text) = &v else {
        return Err(v);
    };
    let t = text.trim_start();
    if !(t.starts_with('{') || t.starts_with(|c: char| c.is_ascii_uppercase())) {
        return Err(v);
    }
    let Some(parsed) = super::literal::parse_with_reprs(t) else {
        return Err(v);
    };
    let message = match &parsed {
        Value::Object(o) if o.len() == 1 => match o.get("messages") {
            Some(Value::Array(list)) if list.len() == 1 => &list[0],
            _ => return Err(v),
        },
        one => one,
    };
    let content = message.as_object().and_then(|m| {
        let class = m.get(super::literal::CLASS_KEY)?;
        (class.is_string() && m.contains_key("tool_call_id")).then(|| m.get("content"))?
    });
    match content {
        Some(c) => Ok(json_in_string(c.clone())),
        None => Err(v),
    }
}

fn is_content_envelope(o: &Map<String, Value>) -> bool {
    o.len() >= 2
        && o.get("content").is_some_and(|c| {
            c.as_array()
                .is_some_and(|a| !a.is_empty() && a.iter().all(is_text_block_with_scalars))
        })
        && o.iter()
            .all(|(k, x)| k == "content" || (is_bookkeeping_key(k) && is_bookkeeping(x)))
}

/// The `text` of every block (JSON-decoded): one block its text, several a
/// list.
fn texts(items: Vec<Value>) -> Value {
    let mut out: Vec<Value> = items
        .into_iter()
        .filter_map(|b| match b {
            Value::Object(mut o) => o.remove("text"),
            _ => None,
        })
        .map(json_in_string)
        .collect();
    if out.len() == 1 {
        out.pop().unwrap_or(Value::Null)
    } else {
        Value::Array(out)
    }
}

fn json_in_string(v: Value) -> Value {
    match v {
        Value::String(s) => super::source::parse_json_or_string(&s),
        other => other,
    }
}

/// The keys of LangChain's serialized object, and no other.
const LC_KEYS: [&str; 4] = ["lc", "type", "id", "kwargs"];

/// The module a serialized message's class path names (`langchain_core.
/// messages`, the older `langchain.schema.messages`).
const LC_MESSAGES_MODULE: &str = "messages";

/// Whether `o` is LangChain's serialization of a message: exactly
/// [`LC_KEYS`], `lc` 1, `type` `constructor`, an `id` path through the
/// messages module to a class named `...Message` or `...MessageChunk`,
/// `kwargs` holding `content`.
fn is_lc_message(o: &Map<String, Value>) -> bool {
    // The cheap tests first: most objects are no such message.
    if o.len() != LC_KEYS.len() || !o.contains_key("lc") {
        return false;
    }
    let class = o.get("id").and_then(Value::as_array).is_some_and(|id| {
        let last = id.last().and_then(Value::as_str).unwrap_or("");
        let path = id[..id.len().saturating_sub(1)]
            .iter()
            .any(|p| p.as_str() == Some(LC_MESSAGES_MODULE));
        path && (last.ends_with("Message") || last.ends_with("MessageChunk"))
    });
    o.keys().all(|k| LC_KEYS.contains(&k.as_str()))
        && o.get("lc").and_then(Value::as_u64) == Some(1)
        && o.get("type").and_then(Value::as_str) == Some("constructor")
        && class
        && o.get("kwargs")
            .and_then(Value::as_object)
            .is_some_and(|k| k.contains_key("content"))
}

/// A serialized LangChain message ([`is_lc_message`]) alone, as the lone
/// value of any key, or beside a `type` that is a string (a typed value)
/// -> its content: text JSON-decoded, a list of text blocks their text,
/// other content as it is. `Err` gives `v` back.
pub(crate) fn lc_message(v: Value) -> Result<Value, Value> {
    let Value::Object(mut o) = v else {
        return Err(v);
    };
    if is_lc_message(&o) {
        return Ok(lc_content(o));
    }
    // The one key holding the message, beside at most a string `type`
    // (its name copied only when it holds one).
    let lc = |v: &Value| v.as_object().is_some_and(is_lc_message);
    let held = match o.len() {
        1 => o.iter().find(|(_, v)| lc(v)).map(|(k, _)| k.clone()),
        2 if o.get("type").is_some_and(Value::is_string) => o
            .iter()
            .find(|(k, v)| k.as_str() != "type" && lc(v))
            .map(|(k, _)| k.clone()),
        _ => None,
    };
    match held.and_then(|k| o.remove(&k)) {
        Some(Value::Object(m)) => Ok(lc_content(m)),
        _ => Err(Value::Object(o)),
    }
}

fn lc_content(mut o: Map<String, Value>) -> Value {
    let content = match o.remove("kwargs") {
        Some(Value::Object(mut k)) => k.remove("content").unwrap_or(Value::Null),
        _ => Value::Null,
    };
    match content {
        Value::Array(items)
            if !items.is_empty() && items.iter().all(is_text_block_with_scalars) =>
        {
            texts(items)
        }
        other => json_in_string(other),
    }
}

/// Python's `repr()` of a tool message of any framework: keyword fields of
/// literals, the first `content`, one of them `tool_call_id` -> the content
/// (JSON-decoded). Text of any other shape stays.
pub(crate) fn message_repr(v: Value) -> Result<Value, Value> {
    let Value::String(text) = &v else {
        return Err(v);
    };
    if !text.trim_start().starts_with("content=") {
        return Err(v);
    }
    let Some(mut fields) = super::literal::keyword_fields(text) else {
        return Err(v);
    };
    if !fields.iter().any(|(k, _)| k == "tool_call_id") {
        return Err(v);
    }
    Ok(json_in_string(fields.swap_remove(0).1))
}

/// The keys naming the tool in a call record.
const CALL_NAME_KEYS: [&str; 2] = ["tool_name", "name"];
/// The keys holding its arguments.
const CALL_ARGS_KEYS: [&str; 3] = ["arguments", "args", "input"];

/// A call record of exactly two keys, the tool's name (a string under
/// [`CALL_NAME_KEYS`]) and its arguments (an object, or the JSON text of
/// one, under [`CALL_ARGS_KEYS`]), besides the writer's bookkeeping
/// (vocabulary `call_record_bookkeeping_keys`, scalars: JAF's
/// `timestamp`) -> the arguments.
pub(crate) fn named_call(v: Value) -> Result<Value, Value> {
    let Value::Object(mut o) = v else {
        return Err(v);
    };
    let kept = super::rules::builtin_list("call_record_bookkeeping_keys");
    let bookkeeping = o
        .iter()
        .filter(|(k, v)| kept.contains(k) && !v.is_object() && !v.is_array())
        .count();
    let named = o.len() - bookkeeping == 2
        && CALL_NAME_KEYS
            .iter()
            .any(|k| o.get(*k).is_some_and(Value::is_string));
    let key = CALL_ARGS_KEYS.iter().find(|k| o.contains_key(**k)).copied();
    let (true, Some(key)) = (named, key) else {
        return Err(Value::Object(o));
    };
    match o.remove(key) {
        Some(x @ Value::Object(_)) => Ok(x),
        Some(Value::String(t)) => match super::source::parse_json_or_string(&t) {
            x @ Value::Object(_) => Ok(x),
            _ => {
                o.insert(key.into(), Value::String(t));
                Err(Value::Object(o))
            }
        },
        Some(x) => {
            o.insert(key.into(), x);
            Err(Value::Object(o))
        }
        None => Err(Value::Object(o)),
    }
}

/// A tool span's own GenAI messages holding exactly one tool message ->
/// what it carries: `[{"role": "tool", "content": c}]` (no other message)
/// gives `c` (JSON-decoded); one message whose parts are exactly one tool
/// call (`{"type": "tool_call", "arguments"}`) or one tool result
/// (`{"type": "tool_call_response", "response"}`) gives its arguments or
/// response. Anything else (a conversation, several calls) stays.
/// LangSmith's Strands exporter writes the list as `{"messages": [...]}`,
/// its one message a chat message (`role` `tool`, `content`, and
/// `tool_call_id` or `name` at most).
pub(crate) fn lone_tool_message(v: Value) -> Result<Value, Value> {
    let chat_keys = |m: &Map<String, Value>| {
        m.keys()
            .all(|k| matches!(k.as_str(), "role" | "content" | "tool_call_id" | "name"))
    };
    let lone = match &v {
        Value::Array(a) if a.len() == 1 => a[0].as_object(),
        Value::Object(o) if o.len() == 1 => match o.get("messages") {
            Some(Value::Array(a)) if a.len() == 1 => a[0].as_object().filter(|m| chat_keys(m)),
            _ => None,
        },
        _ => None,
    };
    let Some(m) = lone else {
        return Err(v);
    };
    if m.get("role").and_then(Value::as_str) == Some("tool") {
        if let Some(c @ Value::String(_)) = m.get("content") {
            return Ok(json_in_string(c.clone()));
        }
    }
    let part = match m.get("parts") {
        Some(Value::Array(p)) if p.len() == 1 => p[0].as_object(),
        _ => None,
    };
    let inner = part.and_then(|p| match p.get("type").and_then(Value::as_str) {
        Some("tool_call") => p.get("arguments"),
        Some("tool_call_response") => p.get("response"),
        _ => None,
    });
    match inner {
        Some(x) => Ok(json_in_string(x.clone())),
        None => Err(v),
    }
}

/// The keys a tool message around a result may have besides `role` and
/// the `parts` or `content` holding the result.
const TOOL_MESSAGE_BOOKKEEPING: [&str; 2] = ["tool_call_id", "name"];

/// A tool's result inside one tool message: an OTel GenAI message (role
/// `tool`, `parts` exactly one part: `{"type": "json", "content": value}`,
/// `{"type": "text", "content": text}` or `{"type": "tool_call_response",
/// "response": value}`, an `id` beside it), or a chat message (role `tool`,
/// `content` text), either alone or as the one message of a list, with no
/// key but `tool_call_id` and `name` beside -> the value, text JSON-decoded.
/// OpenLIT's Strands processor writes a tool span's `gen_ai.tool.call.result`
/// as such a list; Respan's OpenAI Agents instrumentation its output as such
/// a message. `Err` gives `v` back.
fn genai_tool_result(v: Value) -> Result<Value, Value> {
    let v = match v {
        Value::Array(mut items) if items.len() == 1 && items[0].is_object() => {
            match genai_tool_result(items.pop().unwrap_or(Value::Null)) {
                Ok(x) => return Ok(x),
                Err(m) => return Err(Value::Array(vec![m])),
            }
        }
        other => other,
    };
    let Value::Object(mut m) = v else {
        return Err(v);
    };
    let bookkeeping = |k: &str| k == "role" || TOOL_MESSAGE_BOOKKEEPING.contains(&k);
    let tool = m.get("role").and_then(Value::as_str) == Some("tool");
    let only = |key: &str| m.keys().all(|k| k == key || bookkeeping(k));
    if tool && only("content") && m.get("content").is_some_and(Value::is_string) {
        return Ok(m.remove("content").map_or(Value::Null, json_in_string));
    }
    let part = match m.get("parts").and_then(Value::as_array).map(Vec::as_slice) {
        Some([Value::Object(p)]) if tool && only("parts") => result_part(p),
        _ => None,
    };
    let Some(key) = part else {
        return Err(Value::Object(m));
    };
    let mut part = m
        .remove("parts")
        .and_then(|mut p| p.as_array_mut()?.pop())
        .unwrap_or(Value::Null);
    let json_part = part.get("type").and_then(Value::as_str) == Some("json");
    let inner = part.as_object_mut().and_then(|p| p.remove(key));
    Ok(match inner {
        // A JSON block's content as the framework held it (OpenLIT writes
        // Strands TS's `{"json": {"$value": [...]}}` as a `json` part).
        Some(v) if json_part => super::json_block::block_value(json_in_string(v)),
        other => other.map_or(Value::Null, json_in_string),
    })
}

/// The key of a GenAI message part that holds a tool's result: `content` of
/// a `json` or `text` part, `response` of a `tool_call_response` (no other
/// keys but `type` and, for that one, `id`).
fn result_part(p: &Map<String, Value>) -> Option<&'static str> {
    let (key, extra): (&'static str, &[&str]) = match p.get("type").and_then(Value::as_str)? {
        "json" => ("content", &[]),
        "text" if p.get("content").is_some_and(Value::is_string) => ("content", &[]),
        "tool_call_response" => ("response", &["id"]),
        _ => return None,
    };
    let only = p
        .keys()
        .all(|k| k == "type" || k == key || extra.contains(&k.as_str()));
    (p.contains_key(key) && only).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_text_envelope_gives_the_text_the_model_saw() {
        // A made-up framework's result object: text blocks with their own
        // ids and times, a status, empty metadata.
        let v = json!({"content": [{"type": "text", "text": "{\"seat\": \"12A\"}", "id": "b1", "created_at": "2031-01-01T00:00:00", "finished_at": null}], "status": "ok", "meta": {}, "id": "c9"});
        assert_eq!(text_envelope(v), Ok(json!({"seat": "12A"})));
        let blocks = json!([{"type": "text", "text": "booked", "id": "b2", "timestamp": 7}]);
        assert_eq!(text_envelope(blocks), Ok(json!("booked")));
        let two = json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "2"}], "state": "done"});
        assert_eq!(text_envelope(two), Ok(json!(["a", 2])));
    }

    #[test]
    fn a_value_that_only_looks_like_an_envelope_stays() {
        for v in [
            // Content that is not all text, nested payload beside it, a
            // block with a structured key, content alone (MCP's to judge).
            json!({"content": [{"type": "image", "data": "x"}], "state": "ok"}),
            json!({"content": [{"type": "text", "text": "a"}], "metadata": [{"n": 1}]}),
            json!({"content": [{"type": "text", "text": "a", "id": {"x": 1}}], "state": 1}),
            // A key of the tool's own, beside the blocks or in one.
            json!({"content": [{"type": "text", "text": "a"}], "seats": 2}),
            json!([{"type": "text", "text": "a", "seats": 2}]),
            json!({"content": [{"type": "text", "text": "a"}]}),
            json!({"content": [], "state": "ok"}),
            json!({"output": "plain text"}),
            json!({"output": "content='x' name='y'"}),
            json!({"output": "x", "other": 1}),
            json!("content='x' tool_call_id=nothing literal"),
        ] {
            assert_eq!(text_envelope(v.clone()), Err(v));
        }
    }

    #[test]
    fn a_message_repr_gives_its_content_alone_or_under_a_lone_key() {
        let repr =
            "content='{\"seat\": \"12A\"}' name='pick_seat' tool_call_id='t-1' origin='vendor'";
        assert_eq!(text_envelope(json!(repr)), Ok(json!({"seat": "12A"})));
        assert_eq!(
            text_envelope(json!({"output": repr})),
            Ok(json!({"seat": "12A"}))
        );
        assert_eq!(
            text_envelope(json!({"result": "content='done' tool_call_id='t-2'"})),
            Ok(json!("done"))
        );
    }

    #[test]
    fn a_tool_message_instance_repr_gives_its_content_alone_or_as_a_state_update() {
        let one = "ToolMessage(content='{\"seats\": 2}', name='book', tool_call_id='tc_1')";
        assert_eq!(text_envelope(json!(one)), Ok(json!({"seats": 2})));
        let state = format!("{{'messages': [{one}]}}");
        assert_eq!(text_envelope(json!(state)), Ok(json!({"seats": 2})));
        let plain = "{'messages': [ToolMessage(content='ok', name='book', tool_call_id='a'), ToolMessage(content='ok', name='book', tool_call_id='b')]}";
        assert!(text_envelope(json!(plain)).is_err());
        let no_id = "Reply(content='ok', name='book')";
        assert!(text_envelope(json!(no_id)).is_err());
        assert!(text_envelope(json!("{'content': 'ok', 'tool_call_id': 'a'}")).is_err());
    }

    #[test]
    fn a_serialized_langchain_message_gives_its_content_however_wrapped() {
        // A made-up tracer's typed value around an AI message chunk whose
        // content is text blocks, and a tool message's JSON text.
        let chunk = json!({"lc": 1, "type": "constructor",
            "id": ["acme_chains", "messages", "AIMessageChunk"],
            "kwargs": {"content": [{"type": "text", "text": "{\"seat\": \"12A\"}", "id": "b1"}], "name": "x"}});
        let typed = json!({"type": "text", "value": chunk.clone()});
        assert_eq!(text_envelope(typed), Ok(json!({"seat": "12A"})));
        assert_eq!(text_envelope(chunk), Ok(json!({"seat": "12A"})));
        let tool = json!({"lc": 1, "type": "constructor",
            "id": ["langchain", "schema", "messages", "ToolMessage"],
            "kwargs": {"content": "{\"row\": 12}", "tool_call_id": "t-1"}});
        assert_eq!(
            text_envelope(json!({"reply": tool.clone()})),
            Ok(json!({"row": 12}))
        );
        // Content that is no text stays as it is.
        let image = json!({"lc": 1, "type": "constructor", "id": ["x", "messages", "HumanMessage"],
            "kwargs": {"content": [{"type": "image_url", "image_url": "u"}]}});
        assert_eq!(
            text_envelope(image),
            Ok(json!([{"type": "image_url", "image_url": "u"}]))
        );
        for v in [
            // Not a message class, not the messages module, a key more,
            // no content, a wrapper with a key of its own.
            json!({"lc": 1, "type": "constructor", "id": ["x", "documents", "Document"], "kwargs": {"content": "a"}}),
            json!({"lc": 1, "type": "constructor", "id": ["x", "HumanMessage"], "kwargs": {"content": "a"}}),
            json!({"lc": 1, "type": "constructor", "id": ["x", "messages", "ToolMessage"], "kwargs": {"content": "a"}, "graph": 1}),
            json!({"lc": 1, "type": "constructor", "id": ["x", "messages", "ToolMessage"], "kwargs": {"text": "a"}}),
            json!({"lc": 2, "type": "constructor", "id": ["x", "messages", "ToolMessage"], "kwargs": {"content": "a"}}),
            json!({"output": tool.clone(), "seats": 2}),
            json!({"type": 3, "value": tool}),
        ] {
            assert_eq!(text_envelope(v.clone()), Err(v));
        }
    }

    #[test]
    fn a_result_in_one_tool_message_gives_the_result() {
        // A made-up processor's GenAI message list around a tool's result.
        let json_part =
            json!([{"role": "tool", "parts": [{"type": "json", "content": {"seat": "12A"}}]}]);
        assert_eq!(text_envelope(json_part), Ok(json!({"seat": "12A"})));
        // A JSON block's list under the framework's one key comes off with
        // the message (OpenLIT on Strands TS); the tool's own object stays.
        let listed =
            json!([{"role": "tool", "parts": [{"type": "json", "content": {"$value": ["B", 2]}}]}]);
        assert_eq!(text_envelope(listed), Ok(json!(["B", 2])));
        let own = json!([{"role": "tool", "parts": [{"type": "json", "content": {"$value": 3}}]}]);
        assert_eq!(text_envelope(own), Ok(json!({"$value": 3})));
        let text_part =
            json!([{"role": "tool", "parts": [{"type": "text", "content": "{\"row\": 12}"}]}]);
        assert_eq!(text_envelope(text_part), Ok(json!({"row": 12})));
        let response = json!([{"role": "tool", "parts": [{"type": "tool_call_response", "id": "t-1", "response": "seated"}]}]);
        assert_eq!(text_envelope(response), Ok(json!("seated")));
        // A chat message, alone or listed.
        let chat = json!({"role": "tool", "content": "{\"row\": 12}", "tool_call_id": "t-1"});
        assert_eq!(text_envelope(chat.clone()), Ok(json!({"row": 12})));
        assert_eq!(text_envelope(json!([chat])), Ok(json!({"row": 12})));
        for v in [
            // Two parts, two messages, another role, a key of its own, a
            // part with a key more, content that is no text.
            json!([{"role": "tool", "parts": [{"type": "text", "content": "a"}, {"type": "text", "content": "b"}]}]),
            json!([{"role": "tool", "parts": [{"type": "text", "content": "a"}]}, {"role": "tool", "parts": [{"type": "text", "content": "b"}]}]),
            json!([{"role": "assistant", "parts": [{"type": "text", "content": "a"}]}]),
            json!([{"role": "tool", "parts": [{"type": "text", "content": "a"}], "seats": 2}]),
            json!([{"role": "tool", "parts": [{"type": "json", "content": 1, "seats": 2}]}]),
            json!({"role": "tool", "content": [{"type": "image"}]}),
            json!({"role": "user", "content": "a"}),
        ] {
            assert_eq!(text_envelope(v.clone()), Err(v));
        }
    }

    #[test]
    fn a_call_record_gives_its_arguments() {
        assert_eq!(
            named_call(json!({"tool_name": "pick_seat", "arguments": {"row": 12}})),
            Ok(json!({"row": 12}))
        );
        assert_eq!(
            named_call(json!({"name": "pick_seat", "args": "{\"row\": 12}"})),
            Ok(json!({"row": 12}))
        );
        assert_eq!(
            named_call(
                json!({"tool_name": "pick_seat", "arguments": {"row": 12}, "timestamp": "t"})
            ),
            Ok(json!({"row": 12}))
        );
        for v in [
            json!({"tool_name": "pick_seat", "arguments": {"row": 12}, "x": 1}),
            json!({"tool_name": "pick_seat", "arguments": {"row": 12}, "timestamp": {"t": 1}}),
            json!({"tool_name": 3, "arguments": {"row": 12}}),
            json!({"name": "pick_seat", "arguments": "not json"}),
            json!({"name": "pick_seat", "arguments": [1]}),
            json!({"name": "pick_seat", "row": 12}),
        ] {
            assert_eq!(named_call(v.clone()), Err(v));
        }
    }

    #[test]
    fn a_lone_tool_message_gives_what_it_carries() {
        let args = json!([{"role": "tool", "content": "{\"row\": 12}"}]);
        assert_eq!(lone_tool_message(args), Ok(json!({"row": 12})));
        let result = json!([{"role": "tool", "content": "seated"}]);
        assert_eq!(lone_tool_message(result), Ok(json!("seated")));
        let call = json!([{"role": "assistant", "parts": [{"type": "tool_call", "id": "t-1", "name": "pick_seat", "arguments": {"row": 12}}]}]);
        assert_eq!(lone_tool_message(call), Ok(json!({"row": 12})));
        let answer = json!([{"role": "tool", "parts": [{"type": "tool_call_response", "id": "t-1", "response": "{\"ok\": true}"}]}]);
        assert_eq!(lone_tool_message(answer), Ok(json!({"ok": true})));
        let langsmith = json!({"messages": [{"role": "tool", "content": "{\"row\": 12}", "tool_call_id": "t-1"}]});
        assert_eq!(lone_tool_message(langsmith), Ok(json!({"row": 12})));
        for v in [
            json!([{"role": "user", "content": "hi"}]),
            json!([{"role": "tool", "content": "a"}, {"role": "tool", "content": "b"}]),
            json!([{"role": "assistant", "parts": [{"type": "tool_call", "arguments": {}}, {"type": "tool_call", "arguments": {}}]}]),
            json!({"role": "tool", "content": "a"}),
            // LangSmith's form with a key a chat message lacks, or two.
            json!({"messages": [{"role": "tool", "content": "a", "status": "ok"}]}),
            json!({"messages": [{"role": "tool", "content": "a"}, {"role": "tool", "content": "b"}]}),
        ] {
            assert_eq!(lone_tool_message(v.clone()), Err(v));
        }
    }
}
