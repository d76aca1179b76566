//! Reading a rule source as a JSON value, and taking off the wrappers that
//! instrumentations put around what a tool received or returned
//! (docs/conventions.md, "Argument wrappers"): each `unwrap` kind of a source
//! applies only to a value of exactly its shape, and says when it applied so
//! that `inspect --explain` can name it.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::mcp_resource::{is_text_resource_block, is_text_resource_block_map, take_block_text};
use super::rules::{Decode, Field, Source, Unwrap};
use super::source::{
    any_text, any_to_json, apply_pattern, parse_json_or_literal, parse_json_or_string, raw,
};
use crate::assemble::{SpanRecord, Val};
use crate::value::PyValue;

/// The wrappers taken off one value, by name, in the order applied.
pub type Notes = Vec<&'static str>;

pub(crate) fn is_json_mime(s: &SpanRecord, key: Option<&String>) -> bool {
    key.and_then(|k| s.attr_str(k))
        .is_some_and(|m| m.trim().starts_with("application/json"))
}

/// The span has no attribute `key` at all (not even an empty one).
fn no_mime(s: &SpanRecord, key: Option<&String>) -> bool {
    key.is_some_and(|k| s.attr(k).is_none())
}

/// `text` as a JSON object, if it is one.
fn json_object(text: &str) -> Option<Value> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    serde_json::from_str::<Value>(text)
        .ok()
        .filter(Value::is_object)
}

/// Whether `text` is JavaScript's `Object.prototype.toString` text of an
/// object (`[object ToolMessage]`): what an instrumentation writes when it
/// turns a result object into a string, not the result.
pub(crate) fn is_js_placeholder(text: &str) -> bool {
    text.trim()
        .strip_prefix("[object ")
        .and_then(|t| t.strip_suffix(']'))
        .is_some_and(|name| {
            name.starts_with(|c: char| c.is_ascii_uppercase())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// A source read as a JSON value (arguments, results).
pub(crate) fn value_of(src: &Source, s: &SpanRecord) -> Option<Value> {
    value_noting(src, s, None)
}

/// [`value_of`], noting in `notes` the wrappers it took off.
pub(crate) fn value_noting(
    src: &Source,
    s: &SpanRecord,
    mut notes: Option<&mut Notes>,
) -> Option<Value> {
    let mut note = |n: &'static str| {
        if let Some(list) = notes.as_deref_mut() {
            list.push(n);
        }
    };
    if src.flat {
        let v = match &src.field {
            Field::Attr(key) => super::flat::object(key, s)?,
            // Read from an event (`extract::event_attrs`).
            Field::Event { event, attr } => super::flat::event_object(event, attr, s)?,
            _ => return None,
        };
        // A text left by a wrapper may be a Python literal (a source that
        // decodes: `str()` of a dict in MCP text content).
        let v = repr_in_string(src, unwrap(src, s, v, &mut note)?, &mut note);
        return not_schema(src, v);
    }
    let text = match &src.field {
        Field::SpanName => Cow::Borrowed(s.span.name()),
        f => {
            let v = raw(f, s)?;
            match v {
                Val::Str(t) => Cow::Borrowed(t),
                // Structured attributes (kvlist/array) are already values.
                Val::Array(_) | Val::Kvlist(_) if src.pattern.is_none() => {
                    let mut v = any_to_json(v);
                    if src.decode == Decode::ArgsKwargs {
                        v = super::event_side::key_value_lines(v);
                    }
                    return not_schema(src, unwrap(src, s, v, &mut note)?);
                }
                _ => any_text(v)?,
            }
        }
    };
    let text = apply_pattern(src, text)?;
    let parse = |t: &str| match src.literal {
        true => parse_json_or_literal(t),
        false => parse_json_or_string(t),
    };
    let value = match src.decode {
        Decode::Plain => Value::String(text.into_owned()),
        Decode::Json => parse(&text),
        Decode::ArgsKwargs => match call_record(parse(&text), &[], None) {
            Ok(v) => {
                note("args_kwargs");
                v
            }
            Err(v) => v,
        },
        Decode::JsonIfMime if is_json_mime(s, src.mime_attr.as_ref()) => parse(&text),
        Decode::JsonIfMime => {
            let object = if no_mime(s, src.mime_attr.as_ref()) {
                json_object(&text)
            } else {
                None
            };
            // A Python literal (agno writes `str(dict)` as text/plain); JSON
            // typed text/plain stays text, as it always has.
            match object.or_else(|| literal_of(src, &text)) {
                Some(o) => o,
                None => match schema_text(src, s).and_then(single_property) {
                    Some(name) => {
                        note("bare value named from the schema");
                        Value::Object(Map::from_iter([(name, Value::String(text.into_owned()))]))
                    }
                    None => Value::String(text.into_owned()),
                },
            }
        }
    };
    let value = unwrap(src, s, value, &mut note)?;
    not_schema(src, repr_in_string(src, value, &mut note))
}

/// A string value that is wholly a Python dict, list or tuple literal and
/// no JSON, at an argument or result source that decodes: the value the
/// literal writes. The string is what an instrumentation or framework made
/// of a returned dict with `str()` and then JSON-encoded or put in a
/// message's text (MLflow's AG2 spans, AG2's function reply); text that is
/// JSON, or any other text, stays as it is (docs/conventions.md, "Python
/// literals").
fn repr_in_string(src: &Source, v: Value, note: &mut dyn FnMut(&'static str)) -> Value {
    match v {
        Value::String(t) if src.literal && src.decode != Decode::Plain => {
            match literal_of(src, &t) {
                Some(x) => {
                    note("python_literal");
                    x
                }
                None => Value::String(t),
            }
        }
        other => other,
    }
}

/// `text`, a JSON string holding a Python container literal, as that
/// literal's value ([`repr_in_string`] for the text of a JSON string).
pub(crate) fn repr_in_json_string(src: &Source, text: &str) -> Option<Value> {
    if !src.literal || !text.starts_with('"') {
        return None;
    }
    let inner: String = serde_json::from_str(text).ok()?;
    literal_of(src, &inner)
}

/// `v`, unless the source takes no schema (`not_schema`) and `v` is one.
fn not_schema(src: &Source, v: Value) -> Option<Value> {
    (!(src.not_schema && is_schema(&v))).then_some(v)
}

/// Whether `v` is a JSON Schema of an object: `type` is `object` and
/// `properties` an object (what a tool's parameters are declared as).
fn is_schema(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("object")
        && v.get("properties").is_some_and(Value::is_object)
}

/// `text` as a Python literal that is no JSON, for a source that reads
/// literals: a container literal, or pydantic's `str()` of a model
/// ([`model_str`]). The source's known wrappers come off the literal's
/// value as off its JSON form: `str()` of an MCP text block (OpenLIT's
/// OpenAI Agents result) is the block's text either way.
pub(crate) fn literal_of(src: &Source, text: &str) -> Option<Value> {
    if !src.literal || serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
        return None;
    }
    match super::literal::parse(text) {
        Some(v) => Some(take_known(src.known, v, &mut |_| {})),
        None => model_str(src, text).or_else(|| text_content_reprs(text)),
    }
}

/// The `repr()` of a list of text contents, `[TextContent(..., text='...',
/// ...)]` (Semantic Kernel's result of an MCP tool, as its kernel function
/// span and the tool message record it): each instance's `text`,
/// JSON-decoded, one alone. Each item must be an instance of a class whose
/// name ends in `Content` with a string `text`; anything else is `None`.
fn text_content_reprs(text: &str) -> Option<Value> {
    if !text.trim_start().starts_with('[') {
        return None;
    }
    let Value::Array(items) = super::literal::parse_with_reprs(text)? else {
        return None;
    };
    let text_of = |item: Value| -> Option<Value> {
        let Value::Object(mut o) = item else {
            return None;
        };
        let class = o.get(super::literal::CLASS_KEY)?.as_str()?;
        if !class.ends_with("Content") {
            return None;
        }
        o.remove("text")
            .filter(Value::is_string)
            .map(json_in_string)
    };
    let texts: Option<Vec<Value>> = items.into_iter().map(text_of).collect();
    texts.filter(|t| !t.is_empty()).map(one_or_list)
}

/// Pydantic's `str()` of a model (`type='image' image_url='...'
/// detail=None`: fields, no class name) as the object it writes, with the
/// source's known wrappers off as for that object's dict. A LangChain
/// `ToolMessage`'s (whose `str()` leaves out its `type`) gives its content
/// where its dict would ([`langchain_message_repr`]).
fn model_str(src: &Source, text: &str) -> Option<Value> {
    let mut fields = super::literal::model_str(text)?;
    let v = if src.known.contains(&Unwrap::LangchainMessage) && is_tool_message(&fields) {
        json_in_string(fields.swap_remove(0).1)
    } else {
        Value::Object(fields.into_iter().collect())
    };
    Some(take_known(src.known, v, &mut |_| {}))
}

/// The tool's schema text on the span, when the source names one.
fn schema_text<'a>(src: &Source, s: &'a SpanRecord) -> Option<&'a str> {
    src.schema_attr.as_ref().and_then(|k| s.attr_str(k))
}

/// `v` with the source's wrappers taken off; `None` when the source counts
/// only unwrapped values (`unwrapped_only`) and none of its own applied.
fn unwrap(
    src: &Source,
    s: &SpanRecord,
    mut v: Value,
    note: &mut dyn FnMut(&'static str),
) -> Option<Value> {
    let mut applied = false;
    for &u in &src.unwrap {
        let step = match u {
            // The schema is parsed for its names only for a value that
            // can be a record: most are not, and most schemas are long.
            Unwrap::ArgsKwargs if !record_keys(&v, RECORD_EXTRA) => Err(v),
            Unwrap::ArgsKwargs => {
                let names = schema_text(src, s)
                    .and_then(parameter_names)
                    .unwrap_or_default();
                call_record(v, RECORD_EXTRA, Some(&names))
            }
            u => shape(u, v),
        };
        v = match step {
            Ok(x) => {
                note(u.as_str());
                applied = true;
                x
            }
            Err(x) => x,
        };
    }
    if src.unwrapped_only && !applied {
        return None;
    }
    if let Some(key) = &src.unwrap_key {
        if let Value::Object(o) = &mut v {
            if o.len() == 1 {
                if let Some(inner) = o.remove(key.as_str()) {
                    note("unwrap_key");
                    v = inner;
                }
            }
        }
    }
    // A wrapper written as JSON text inside the JSON value (Laminar's
    // `lmnr.span.output` of an MCP tool: a JSON string holding a text
    // block) comes off as from the conversation's text (`known_result`).
    if let Value::String(t) = &v {
        if let Some(x) = known_unwrapped(src, t) {
            note("known wrapper in JSON text");
            return Some(x);
        }
    }
    Some(take_known(src.known, v, note))
}

/// How many wrappers [`take_known`] takes off one value at most (a
/// `{"output": ToolMessage}` holding MCP content blocks is three).
const KNOWN_DEPTH: usize = 4;

/// `v` with the wrappers of `known` taken off, again while one applies (a
/// LangChain message around MCP content), noting each.
fn take_known(known: &[Unwrap], mut v: Value, note: &mut dyn FnMut(&'static str)) -> Value {
    'pass: for _ in 0..KNOWN_DEPTH {
        for &u in known {
            match shape(u, v) {
                Ok(x) => {
                    note(u.as_str());
                    v = x;
                    continue 'pass;
                }
                Err(x) => v = x,
            }
        }
        break;
    }
    v
}

/// `v` with the result wrappers every rule takes off (`KNOWN_RESULT`)
/// taken off: for results read from the conversation, where a message's
/// content may be the wrapped value or its JSON text (which stays text
/// when no wrapper applies).
pub(crate) fn known_result(v: Value) -> Value {
    let known = super::rules::KNOWN_RESULT;
    match v {
        Value::String(text) if known_may_apply(&text) => {
            let mut applied = false;
            let unwrapped = take_known(known, parse_json_or_string(&text), &mut |_| applied = true);
            if applied {
                unwrapped
            } else {
                Value::String(text)
            }
        }
        other => take_known(known, other, &mut |_| {}),
    }
}

/// The value at a source's JSON `text` with the known wrappers of the
/// source taken off, when one applies (`None`: the text stands as is).
/// A cheap look at the text first: most results are left unparsed.
pub(crate) fn known_unwrapped(src: &Source, text: &str) -> Option<Value> {
    if src.known.is_empty() {
        return None;
    }
    // A JSON string holding the wrapper's JSON text, encoded twice
    // (Laminar's `lmnr.span.output` of an MCP tool's text block).
    if text.trim_start().starts_with('"') {
        let inner: String = serde_json::from_str(text.trim()).ok()?;
        return known_unwrapped_once(src, &inner);
    }
    known_unwrapped_once(src, text)
}

/// [`known_unwrapped`] of JSON `text` itself.
fn known_unwrapped_once(src: &Source, text: &str) -> Option<Value> {
    if !known_may_apply(text) {
        return None;
    }
    let v = parse_json_or_string(text);
    let mut applied = false;
    let v = take_known(src.known, v, &mut |_| applied = true);
    applied.then_some(v)
}

/// Whether a known result wrapper could apply to JSON `text` (`false`:
/// surely not). Every known shape is an object with a `type`, `content`
/// or `raw_output` key (or `output` around one, or a message's `repr()`
/// there), or a list of text, JSON or document blocks.
pub(crate) fn known_may_apply(text: &str) -> bool {
    let t = text.trim_start();
    let has = |needle: &str| memchr::memmem::find(t.as_bytes(), needle.as_bytes()).is_some();
    match t.as_bytes().first() {
        Some(b'{') => {
            has("\"type\"") || has("\"content\"") || has("\"raw_output\"") || has("\"content=")
        }
        Some(b'[') => has("\"text\"") || has("\"json\"") || has("\"document\""),
        _ => false,
    }
}

/// Takes off wrapper `u` when `v` has its shape (`Err` gives `v` back);
/// `args_kwargs`, which needs the span's schema, is [`unwrap`]'s.
pub(crate) fn shape(u: Unwrap, v: Value) -> Result<Value, Value> {
    match u {
        Unwrap::ContentBlocks => content_blocks(v),
        Unwrap::ToolMessage => tool_message(v),
        Unwrap::LangchainCallback => langchain_callback(v),
        Unwrap::ArgsKwargs => call_record(v, RECORD_EXTRA, Some(&[])),
        Unwrap::McpToolCall => mcp_tool_call(v),
        Unwrap::LlamaIndexOutput => llama_index_output(v),
        Unwrap::BeeaiRun => beeai_run(v),
        Unwrap::AdkFunctionResponse => adk_function_response(v),
        Unwrap::Ag2Function => ag2_function(v),
        Unwrap::LangchainMessage => langchain_message(v),
        Unwrap::McpContent => mcp_content(v),
        Unwrap::TypedValue => typed_value(v),
        Unwrap::McpClientResult => mcp_client_result(v),
        // ADK TS hands an array on as `{"results": [...]}`.
        Unwrap::AdkResult => {
            lone_key_around_non_object(v, "result").or_else(|v| lone_key_around_array(v, "results"))
        }
        Unwrap::LangsmithOutputs => lone_key_around_non_object(v, "outputs"),
        Unwrap::LangchainMessageRepr => langchain_message_repr(v),
        Unwrap::AgnoResult => agno_result(v),
        Unwrap::ProviderBlock => provider_block(v),
        Unwrap::AiSdkExecute => ai_sdk_execute(v),
        Unwrap::TextEnvelope => super::envelopes::text_envelope(v),
        Unwrap::NamedCall => super::envelopes::named_call(v),
        Unwrap::LoneToolMessage => super::envelopes::lone_tool_message(v),
        Unwrap::AiSdkPart => super::result_part::ai_sdk_part(v),
        Unwrap::JsonText => json_text(v),
        Unwrap::LoneJsonText => lone_json_text(v),
    }
}

/// How the `str()` of Agno's `FunctionExecutionResult` starts.
pub(crate) const AGNO_RESULT_START: &str = "status=";

/// The `str()` of Agno's successful `FunctionExecutionResult` -> its
/// `result` (JSON-decoded), as `outcome_record` reads the record under any
/// rule (one reader, one shape test). Any other text (a user's own result,
/// a failure) stays (a failure makes a failed call: `outcome_record`).
pub(crate) fn agno_result(v: Value) -> Result<Value, Value> {
    match &v {
        Value::String(t) if t.starts_with(AGNO_RESULT_START) => {
            super::outcome_record::returned(t).ok_or(v)
        }
        _ => Err(v),
    }
}

/// Python's `repr()` of a LangChain `ToolMessage` (`content='...'
/// name='find_hotel' tool_call_id='call_1'`) -> its content (JSON-decoded).
/// Only text whose every field is a literal, the first `content`, one of
/// them `tool_call_id`, and none a key a `ToolMessage` lacks.
pub(crate) fn langchain_message_repr(v: Value) -> Result<Value, Value> {
    let Value::String(text) = &v else {
        return Err(v);
    };
    match super::literal::keyword_fields(text) {
        Some(mut fields) if is_tool_message(&fields) => Ok(json_in_string(fields.swap_remove(0).1)),
        _ => Err(v),
    }
}

/// Whether keyword fields are a `ToolMessage`'s as its `repr()` writes
/// them: `content` first, a `tool_call_id`, no key a `ToolMessage` lacks.
pub(crate) fn is_tool_message(fields: &[(String, Value)]) -> bool {
    fields.first().is_some_and(|(k, _)| k == "content")
        && fields.iter().any(|(k, _)| k == "tool_call_id")
        && fields
            .iter()
            .all(|(k, _)| TOOL_MESSAGE_KEYS.contains(&k.as_str()))
}

/// The keys of a LangChain `ToolMessage` as Python's `model_dump()` writes
/// it.
pub(crate) const TOOL_MESSAGE_KEYS: [&str; 9] = [
    "content",
    "additional_kwargs",
    "response_metadata",
    "type",
    "name",
    "id",
    "tool_call_id",
    "artifact",
    "status",
];

/// A LangChain `ToolMessage`: Python's dump `{"content", "tool_call_id",
/// "type": "tool", ...}`, the serialized form `{"lc": 1, "type":
/// "constructor", "id": [..., "ToolMessage"], "kwargs"}`, or that form as
/// OpenInference records a LangChain.js tool's output, `{"output": ...}`
/// -> its content (JSON-decoded).
pub(crate) fn langchain_message(v: Value) -> Result<Value, Value> {
    let Value::Object(mut o) = v else {
        return Err(v);
    };
    if is_dumped_tool_message(&o) {
        return Ok(o.remove("content").map_or(Value::Null, json_in_string));
    }
    if o.len() == 1 && o.get("output").is_some_and(is_serialized_tool_message) {
        let out = o.remove("output").unwrap_or(Value::Null);
        return serialized_tool_message(out);
    }
    if let Some(content) = command_message(&mut o) {
        return Ok(content);
    }
    // OpenInference's `{"output": ...}` around a LangGraph.js `Command`.
    if o.len() == 1 {
        if let Some(Value::Object(command)) = o.get_mut("output") {
            if let Some(content) = command_message(command) {
                return Ok(content);
            }
        }
    }
    let v = Value::Object(o);
    if is_serialized_tool_message(&v) {
        return serialized_tool_message(v);
    }
    Err(v)
}

/// The keys of LangGraph's `Command` as Python dumps it, and the class
/// name LangGraph.js serializes it with (`lg_name`).
const COMMAND_KEYS: [&str; 5] = ["graph", "update", "resume", "goto", "lg_name"];

/// A LangGraph `Command` returned by a tool (Deep Agents' `task`, LangSmith
/// records it dumped: `{"graph", "update": {"messages": [...]}, "resume",
/// "goto"}`; LangGraph.js as `{"lg_name": "Command", "update", "goto"}`)
/// whose update adds one `ToolMessage`, dumped, serialized, or in
/// LangChain's envelope `{"type": "tool", "data": ...}` ([`tool_message`]:
/// `message_to_dict`, as OpenInference writes a Python `Command`): what the
/// model was answered with, that message's content. Anything else stays.
fn command_message(o: &mut Map<String, Value>) -> Option<Value> {
    let command = o.contains_key("update")
        && o.keys().all(|k| COMMAND_KEYS.contains(&k.as_str()))
        && o.get("lg_name").is_none_or(|n| n == "Command");
    if !command {
        return None;
    }
    let messages = o.get_mut("update")?.get_mut("messages")?.as_array_mut()?;
    let [m] = messages.as_mut_slice() else {
        return None;
    };
    if is_serialized_tool_message(m) {
        return serialized_tool_message(m.take()).ok();
    }
    if is_tool_message_envelope(m) {
        return tool_message(m.take()).ok();
    }
    let m = m.as_object_mut().filter(|m| is_dumped_tool_message(m))?;
    Some(m.remove("content").map_or(Value::Null, json_in_string))
}

/// Python's `model_dump()` of a LangChain `ToolMessage`: `type` `tool`, a
/// `content` and a `tool_call_id`, no key a `ToolMessage` lacks.
pub(crate) fn is_dumped_tool_message(o: &Map<String, Value>) -> bool {
    o.get("type").and_then(Value::as_str) == Some("tool")
        && o.contains_key("content")
        && o.contains_key("tool_call_id")
        && o.keys().all(|k| TOOL_MESSAGE_KEYS.contains(&k.as_str()))
}

/// Exactly LangChain's serialized `ToolMessage`: the keys `lc` (1), `type`
/// (`constructor`), `id` (ending `ToolMessage`) and `kwargs` (with a
/// `content`), no other.
fn is_serialized_tool_message(v: &Value) -> bool {
    v.as_object().is_some_and(|o| {
        o.len() == 4
            && o.get("lc").and_then(Value::as_u64) == Some(1)
            && o.get("kwargs").is_some_and(Value::is_object)
    }) && serialized_shape(v)
}

/// The keys an MCP `CallToolResult` may have besides `content`, as the
/// protocol writes them and as the Python SDK's models dump them
/// (`structured_content`, `is_error`; FastMCP adds its `data`; the Python
/// SDK of protocol 2026-07-28 adds `resultType`, `complete` for a result
/// given at once). A discriminated union's `kind` (the OpenHands SDK's
/// Observation, an MCP result's shape with the class name) is one more.
const CALL_RESULT_KEYS: [&str; 11] = [
    "content",
    "isError",
    "structuredContent",
    "_meta",
    "meta",
    "is_error",
    "structured_content",
    "data",
    "kind",
    "resultType",
    "result_type",
];

/// The keys a text content block may have besides `type` and `text`:
/// LangChain's `id`, MCP's `annotations` and `_meta`, the OpenHands SDK's
/// `cache_prompt`.
const TEXT_BLOCK_KEYS: [&str; 7] = [
    "type",
    "text",
    "id",
    "annotations",
    "_meta",
    "meta",
    "cache_prompt",
];

/// A text content block: `{"type": "text", "text": "..."}`, with at most
/// the other keys of [`TEXT_BLOCK_KEYS`].
fn is_text_block(v: &Value) -> bool {
    v.as_object().is_some_and(is_text_block_map)
}

fn is_text_block_map(o: &Map<String, Value>) -> bool {
    o.get("type").and_then(Value::as_str) == Some("text")
        && o.get("text").is_some_and(Value::is_string)
        && o.keys().all(|k| TEXT_BLOCK_KEYS.contains(&k.as_str()))
}

/// An OTel GenAI text part, `{"type": "text", "content": "..."}` and no
/// other key: how the GenAI utilities record an MCP result's text blocks.
fn is_genai_text_part(v: &Value) -> bool {
    v.as_object().is_some_and(|o| {
        o.len() == 2
            && o.get("type").and_then(Value::as_str) == Some("text")
            && o.get("content").is_some_and(Value::is_string)
    })
}

/// MCP content: a `CallToolResult` `{"content": [text blocks], "isError",
/// "structuredContent"}` (or its snake_case dump), a list of text blocks
/// (or of GenAI text parts), or one text block -> the text (JSON-decoded;
/// several blocks a list). An embedded resource that holds text is read
/// as a text block, its `resource.text` (`mcp_resource`). The text, not
/// the structured content: an SDK may wrap a return value that is no
/// object in the structured content (`{"result": ...}`) but not in the
/// text. Content that is not all text (an image, a `blob` resource, a
/// resource link) stays.
pub(crate) fn mcp_content(v: Value) -> Result<Value, Value> {
    match v {
        Value::Array(items) if !items.is_empty() && items.iter().all(is_mcp_text) => {
            Ok(mcp_texts(items))
        }
        Value::Array(items) if !items.is_empty() && items.iter().all(is_genai_text_part) => {
            Ok(texts_at(items, "content"))
        }
        Value::Object(o) if is_text_block_map(&o) || is_text_resource_block_map(&o) => {
            Ok(mcp_texts(vec![Value::Object(o)]))
        }
        Value::Object(mut o) if is_call_result(&o) => match o.remove("content") {
            Some(Value::Array(items)) => Ok(mcp_texts(items)),
            _ => Err(Value::Object(o)),
        },
        other => Err(other),
    }
}

/// A text block, or an embedded resource that holds text.
fn is_mcp_text(v: &Value) -> bool {
    is_text_block(v) || is_text_resource_block(v)
}

/// The texts of blocks [`is_mcp_text`] holds, JSON-decoded; one block's
/// text alone.
fn mcp_texts(items: Vec<Value>) -> Value {
    one_or_list(
        items
            .into_iter()
            .filter_map(take_block_text)
            .map(json_in_string)
            .collect(),
    )
}

/// One text alone, several as a list.
fn one_or_list(mut texts: Vec<Value>) -> Value {
    if texts.len() == 1 {
        texts.pop().unwrap_or(Value::Null)
    } else {
        Value::Array(texts)
    }
}

/// A `CallToolResult` whose content is all text blocks (or text resources).
fn is_call_result(o: &Map<String, Value>) -> bool {
    o.keys().all(|k| CALL_RESULT_KEYS.contains(&k.as_str()))
        && o.get("content").is_some_and(|c| {
            c.as_array()
                .is_some_and(|a| !a.is_empty() && a.iter().all(is_mcp_text))
        })
}

/// LangWatch's typed value `{"type": "json" | "text" | "raw", "value"}` ->
/// the value (a `json` one JSON-decoded when it is text). A tool's output
/// typed `chat_messages` is one message LangWatch made of the return value
/// (role `unknown` or `tool`, and `content`): its content, JSON-decoded.
pub(crate) fn typed_value(v: Value) -> Result<Value, Value> {
    let kind = match &v {
        Value::Object(o) if o.len() == 2 && o.contains_key("value") => {
            o.get("type").and_then(Value::as_str).map(str::to_owned)
        }
        _ => None,
    };
    match (kind.as_deref(), v) {
        (Some("json"), Value::Object(mut o)) => {
            let inner = o.remove("value").map_or(Value::Null, json_in_string);
            // A value handed to LangWatch already typed is typed again (a
            // tool a LangGraph node invokes with bare arguments: `json`
            // around `text`).
            Ok(typed_value(inner).unwrap_or_else(|v| v))
        }
        (Some("text" | "raw"), Value::Object(mut o)) => {
            Ok(o.remove("value").map_or(Value::Null, object_in_string))
        }
        (Some("chat_messages"), Value::Object(mut o)) => match o.remove("value") {
            Some(Value::Array(mut list)) if list.len() == 1 && is_returned_message(&list[0]) => {
                match list.pop() {
                    Some(Value::Object(mut m)) => {
                        Ok(m.remove("content").map_or(Value::Null, json_in_string))
                    }
                    _ => Ok(Value::Null),
                }
            }
            value => {
                o.insert("value".into(), value.unwrap_or(Value::Null));
                Err(Value::Object(o))
            }
        },
        (_, other) => Err(other),
    }
}

/// Text holding a JSON object -> the object: LangWatch types a LangChain
/// tool's input, the arguments' JSON text, as `text`. Other text stays text.
fn object_in_string(v: Value) -> Value {
    match v {
        Value::String(s) if s.trim_start().starts_with('{') => serde_json::from_str::<Value>(&s)
            .ok()
            .filter(Value::is_object)
            .unwrap_or(Value::String(s)),
        other => other,
    }
}

/// The chat message LangWatch makes of a tool's return value: `role`
/// `unknown` or `tool`, `content`, and no key but `tool_call_id` and `name`.
fn is_returned_message(m: &Value) -> bool {
    m.as_object().is_some_and(|m| {
        matches!(
            m.get("role").and_then(Value::as_str),
            Some("unknown" | "tool")
        ) && m.contains_key("content")
            && m.keys()
                .all(|k| ["role", "content", "tool_call_id", "name"].contains(&k.as_str()))
    })
}

/// LangWatch's typed list of chat messages, `{"type": "chat_messages",
/// "value": [...]}` (exactly these keys) -> the list, as its model spans'
/// input and output record a conversation.
pub(crate) fn langwatch_messages(v: &Value) -> Option<&Value> {
    let o = v.as_object().filter(|o| o.len() == 2)?;
    (o.get("type").and_then(Value::as_str) == Some("chat_messages"))
        .then(|| o.get("value"))
        .flatten()
        .filter(|l| l.is_array())
}

/// OpenLLMetry's MCP client record of a result, `{"result": text}` or
/// `{"result": text, "is_error": true}` -> the text (JSON-decoded).
pub(crate) fn mcp_client_result(v: Value) -> Result<Value, Value> {
    let shaped = v.as_object().is_some_and(|o| {
        o.contains_key("result")
            && match o.len() {
                1 => true,
                2 => o.get("is_error").is_some_and(Value::is_boolean),
                _ => false,
            }
    });
    match v {
        Value::Object(mut o) if shaped => {
            Ok(o.remove("result").map_or(Value::Null, json_in_string))
        }
        other => Err(other),
    }
}

/// `{key: v}` with `v` no object -> `v`, as it is (a string stays the
/// string). The wrapper a framework puts around a return value that is no
/// dict (Google ADK's `{"result"}`, LangSmith JS's `{"outputs"}`): a dict
/// it passes on as it is, so an object under the key is the tool's own.
pub(crate) fn lone_key_around_non_object(v: Value, key: &str) -> Result<Value, Value> {
    match v {
        Value::Object(mut o) if o.len() == 1 && o.get(key).is_some_and(|x| !x.is_object()) => {
            Ok(o.remove(key).unwrap_or(Value::Null))
        }
        other => Err(other),
    }
}

/// `{key: [...]}` and no other key -> the list.
fn lone_key_around_array(v: Value, key: &str) -> Result<Value, Value> {
    match v {
        Value::Object(mut o) if o.len() == 1 && o.get(key).is_some_and(Value::is_array) => {
            Ok(o.remove(key).unwrap_or(Value::Null))
        }
        other => Err(other),
    }
}

/// A list of one Bedrock Converse content block, `{"json": v}` or
/// `{"text": "..."}` and no other key -> `v` (a list a framework put under
/// one key: `json_block`), or the text JSON-decoded.
/// Several blocks, or another key (an image, a document), stay. Cohere
/// v2's one document block is such a block too ([`cohere_document`]).
pub(crate) fn provider_block(v: Value) -> Result<Value, Value> {
    let v = match cohere_document(v) {
        Ok(data) => return Ok(data),
        Err(v) => v,
    };
    let one = match &v {
        Value::Array(items) if items.len() == 1 => items[0].as_object().filter(|b| {
            b.len() == 1 && (b.contains_key("json") || b.get("text").is_some_and(Value::is_string))
        }),
        _ => None,
    };
    if one.is_none() {
        return Err(v);
    }
    match v {
        Value::Array(mut items) => match items.pop() {
            Some(Value::Object(mut b)) => Ok(match b.remove("json") {
                Some(x) => super::json_block::block_value(x),
                None => b.remove("text").map_or(Value::Null, json_in_string),
            }),
            _ => Ok(Value::Null),
        },
        other => Err(other),
    }
}

/// A Cohere v2 document block, `{"type": "document", "document": {"data":
/// v}}` (the document may also carry its `id`), alone or as a list of one
/// -> `v`, JSON-decoded when text: the form Cohere documents for a tool
/// message's content (OpenInference's Cohere spans write the one block of
/// a message's content as the content). Anything else comes back as
/// `Err`, unchanged.
fn cohere_document(v: Value) -> Result<Value, Value> {
    // Two keys first: most values this sees are results of other shapes.
    let is_block = |b: &Value| {
        b.as_object().is_some_and(|o| {
            o.len() == 2
                && o.get("type").and_then(Value::as_str) == Some("document")
                && o.get("document")
                    .and_then(Value::as_object)
                    .is_some_and(|d| {
                        d.contains_key("data") && d.keys().all(|k| k == "data" || k == "id")
                    })
        })
    };
    let block = match v {
        Value::Array(mut items) if items.len() == 1 && is_block(&items[0]) => items.pop(),
        one if is_block(&one) => Some(one),
        other => return Err(other),
    };
    let data = block
        .and_then(|mut b| b.get_mut("document").map(Value::take))
        .and_then(|mut d| d.get_mut("data").map(Value::take));
    Ok(data.map_or(Value::Null, json_in_string))
}

/// The keys of the AI SDK's tool-call options besides `toolCallId`.
const AI_SDK_OPTION_KEYS: [&str; 3] = ["messages", "abortSignal", "experimental_context"];

/// `{"args": [arguments, options]}`, LangSmith's record of the AI SDK's
/// `execute(arguments, options)` -> the arguments (an object). Only when
/// the second is the SDK's options: a string `toolCallId` and no key but
/// [`AI_SDK_OPTION_KEYS`].
pub(crate) fn ai_sdk_execute(v: Value) -> Result<Value, Value> {
    let is_options = |o: &Value| {
        o.as_object().is_some_and(|o| {
            o.get("toolCallId").is_some_and(Value::is_string)
                && o.keys()
                    .all(|k| k == "toolCallId" || AI_SDK_OPTION_KEYS.contains(&k.as_str()))
        })
    };
    let shaped = v.as_object().is_some_and(|o| {
        o.len() == 1
            && o.get("args")
                .and_then(Value::as_array)
                .is_some_and(|a| a.len() == 2 && a[0].is_object() && is_options(&a[1]))
    });
    match v {
        Value::Object(mut o) if shaped => match o.remove("args") {
            Some(Value::Array(mut a)) => {
                a.truncate(1);
                Ok(a.pop().unwrap_or(Value::Null))
            }
            _ => Ok(Value::Null),
        },
        other => Err(other),
    }
}

/// A string that holds JSON becomes that JSON; other values stay.
/// A string holding an object's or a list's JSON text -> that value;
/// `Err` gives back anything else (other text stays the string).
fn json_text(v: Value) -> Result<Value, Value> {
    let Value::String(t) = &v else {
        return Err(v);
    };
    if !matches!(t.trim_start().as_bytes().first(), Some(b'{' | b'[')) {
        return Err(v);
    }
    match parse_json_or_string(t) {
        x @ (Value::Object(_) | Value::Array(_)) => Ok(x),
        _ => Err(v),
    }
}

/// `["{...}"]` -> the object (`Unwrap::LoneJsonText`).
fn lone_json_text(v: Value) -> Result<Value, Value> {
    let object = match &v {
        Value::Array(items) => match items.as_slice() {
            [Value::String(t)] if t.trim_start().starts_with('{') => parse_json_or_string(t),
            _ => Value::Null,
        },
        _ => Value::Null,
    };
    match object {
        x @ Value::Object(_) => Ok(x),
        _ => Err(v),
    }
}

fn json_in_string(v: Value) -> Value {
    match v {
        Value::String(s) => parse_json_or_string(&s),
        other => other,
    }
}

/// `[{"text": "..."}]` -> the text (JSON-decoded); several blocks -> a list.
/// `Err` gives back a value of another shape.
pub(crate) fn content_blocks(v: Value) -> Result<Value, Value> {
    let Value::Array(items) = v else {
        return Err(v);
    };
    let is_text_block = |x: &Value| {
        x.as_object()
            .is_some_and(|o| o.len() == 1 && o.get("text").is_some_and(Value::is_string))
    };
    if items.is_empty() || !items.iter().all(is_text_block) {
        return Err(Value::Array(items));
    }
    Ok(texts_at(items, "text"))
}

/// The string at `key` of every block (JSON-decoded): one block gives its
/// text, several a list.
fn texts_at(items: Vec<Value>, key: &str) -> Value {
    one_or_list(
        items
            .into_iter()
            .filter_map(|x| match x {
                Value::Object(mut o) => o.remove(key),
                _ => None,
            })
            .map(json_in_string)
            .collect(),
    )
}

/// LangChain `ToolMessage` envelope `{"type": "tool", "data": {"content"}}`
/// -> its content (JSON-decoded).
pub(crate) fn tool_message(v: Value) -> Result<Value, Value> {
    if !is_tool_message_envelope(&v) {
        return Err(v);
    }
    match v {
        Value::Object(mut o) => Ok(match o.remove("data") {
            Some(Value::Object(mut d)) => d.remove("content").map_or(Value::Null, json_in_string),
            _ => Value::Null,
        }),
        other => Err(other),
    }
}

/// Whether `v` is LangChain's `ToolMessage` envelope (`message_to_dict`):
/// `{"type": "tool", "data": {"content", ...}}`, no other key.
pub(crate) fn is_tool_message_envelope(v: &Value) -> bool {
    // `{"type", "data"}` only: a cheap test before any key lookup.
    v.as_object().is_some_and(|o| o.len() == 2)
        && v.get("type").and_then(Value::as_str) == Some("tool")
        && v.get("data").and_then(|d| d.get("content")).is_some()
}

/// The keys of LangChain's `on_tool_start` callback payload as OpenLLMetry
/// records it.
const CALLBACK_KEYS: [&str; 5] = ["input_str", "tags", "metadata", "inputs", "kwargs"];

/// OpenLLMetry's LangChain callback payloads: `{"input_str", "tags",
/// "metadata", "inputs", "kwargs"}` -> `inputs` (what the tool was invoked
/// with; `input_str` when there is none), and `{"output", "kwargs"}` -> the
/// output, a serialized `ToolMessage` becoming its content.
pub(crate) fn langchain_callback(v: Value) -> Result<Value, Value> {
    let Value::Object(mut o) = v else {
        return Err(v);
    };
    let input =
        o.contains_key("input_str") && o.keys().all(|k| CALLBACK_KEYS.contains(&k.as_str()));
    if input {
        return Ok(match o.remove("inputs") {
            Some(Value::Null) | None => o.remove("input_str").map_or(Value::Null, json_in_string),
            Some(inputs) => inputs,
        });
    }
    let output = o.len() == 2 && o.contains_key("output") && o.contains_key("kwargs");
    if output {
        let out = o.remove("output").unwrap_or(Value::Null);
        return Ok(serialized_tool_message(out).unwrap_or_else(|v| v));
    }
    Err(Value::Object(o))
}

/// OpenLLMetry's FastMCP tool span: the input `{"tool_name", "arguments"}`
/// -> the arguments; the output, one `{"type": "text", "content"}` item per
/// content block of the tool's result -> the text (JSON-decoded; several
/// blocks -> a list).
pub(crate) fn mcp_tool_call(v: Value) -> Result<Value, Value> {
    match v {
        Value::Object(mut o)
            if o.len() == 2 && o.contains_key("tool_name") && o.contains_key("arguments") =>
        {
            Ok(o.remove("arguments").unwrap_or(Value::Null))
        }
        Value::Array(items) => {
            let is_text = |x: &Value| {
                x.as_object().is_some_and(|o| {
                    o.len() == 2
                        && o.get("type").and_then(Value::as_str) == Some("text")
                        && o.get("content").is_some_and(Value::is_string)
                })
            };
            if items.is_empty() || !items.iter().all(is_text) {
                return Err(Value::Array(items));
            }
            Ok(texts_at(items, "content"))
        }
        other => Err(other),
    }
}

/// The keys of LlamaIndex's `ToolOutput` (`content` in older releases,
/// `blocks` in newer ones).
const TOOL_OUTPUT_KEYS: [&str; 6] = [
    "blocks",
    "content",
    "tool_name",
    "raw_input",
    "raw_output",
    "is_error",
];

/// LlamaIndex's `ToolOutput` -> its `raw_output` (what the tool returned).
pub(crate) fn llama_index_output(v: Value) -> Result<Value, Value> {
    let Value::Object(mut o) = v else {
        return Err(v);
    };
    let shaped = o.contains_key("raw_output")
        && o.contains_key("tool_name")
        && o.keys().all(|k| TOOL_OUTPUT_KEYS.contains(&k.as_str()));
    if !shaped {
        return Err(Value::Object(o));
    }
    Ok(o.remove("raw_output").map_or(Value::Null, json_in_string))
}

/// BeeAI's record of `Tool.run(input, options)`: `{"input": {...},
/// "options": null or {...}}` -> the input object.
pub(crate) fn beeai_run(v: Value) -> Result<Value, Value> {
    let shaped = v.as_object().is_some_and(|o| {
        o.len() == 2
            && o.get("input").is_some_and(Value::is_object)
            && o.get("options")
                .is_some_and(|x| x.is_null() || x.is_object())
    });
    match v {
        Value::Object(mut o) if shaped => Ok(o.remove("input").unwrap_or(Value::Null)),
        other => Err(other),
    }
}

/// Google ADK's `FunctionResponse` `{"id", "name", "response"}` -> the
/// response (ADK's `{"result": ...}` around a value that is no dict stays:
/// it is what the model was given).
pub(crate) fn adk_function_response(v: Value) -> Result<Value, Value> {
    let shaped = v.as_object().is_some_and(|o| {
        o.get("name").is_some_and(Value::is_string)
            && o.contains_key("response")
            && o.keys()
                .all(|k| matches!(k.as_str(), "id" | "name" | "response"))
    });
    match v {
        Value::Object(mut o) if shaped => Ok(o.remove("response").unwrap_or(Value::Null)),
        other => Err(other),
    }
}

/// AG2's function call: `{"name", "arguments": "<JSON object>"}` -> the
/// arguments; its result `[success, {"name", "role", "content"}]` -> the
/// content (JSON-decoded).
pub(crate) fn ag2_function(v: Value) -> Result<Value, Value> {
    match v {
        Value::Object(o) if o.len() == 2 && o.get("name").is_some_and(Value::is_string) => {
            let args = match o.get("arguments") {
                Some(Value::String(text)) => json_object(text),
                _ => None,
            };
            match args {
                Some(args) => Ok(args),
                None => Err(Value::Object(o)),
            }
        }
        Value::Array(mut items)
            if items.len() == 2
                && items[0].is_boolean()
                && items[1]
                    .as_object()
                    .is_some_and(|m| m.contains_key("name") && m.contains_key("content")) =>
        {
            match items.pop() {
                Some(Value::Object(mut m)) => {
                    Ok(m.remove("content").map_or(Value::Null, json_in_string))
                }
                _ => Err(Value::Array(items)),
            }
        }
        other => Err(other),
    }
}

/// LangChain's serialized form of a message (`to_json()`): `{"lc": 1, "type":
/// "constructor", "id": [..., "ToolMessage"], "kwargs": {"content", ...}}`
/// -> its content (JSON-decoded).
fn serialized_tool_message(v: Value) -> Result<Value, Value> {
    if !serialized_shape(&v) {
        return Err(v);
    }
    match v {
        Value::Object(mut o) => Ok(match o.remove("kwargs") {
            Some(Value::Object(mut k)) => k.remove("content").map_or(Value::Null, json_in_string),
            _ => Value::Null,
        }),
        other => Err(other),
    }
}

/// `{"type": "constructor", "id": [..., "ToolMessage"], "kwargs":
/// {"content", ...}}`, other keys allowed.
pub(crate) fn serialized_shape(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("constructor")
        && v.get("id")
            .and_then(Value::as_array)
            .and_then(|id| id.last())
            .and_then(Value::as_str)
            == Some("ToolMessage")
        && v.get("kwargs").and_then(|k| k.get("content")).is_some()
}

/// The name of the only property of a JSON Schema, if it has exactly one.
fn single_property(schema: &str) -> Option<String> {
    let v: Value = serde_json::from_str(schema).ok()?;
    let props = v.get("properties")?.as_object()?;
    (props.len() == 1)
        .then(|| props.keys().next().cloned())
        .flatten()
}

/// A tool's parameter names in declared order, from the schema a span
/// carries: a JSON Schema's `properties`, or smolagents' `inputs` map
/// (`{"name": {"type", "description"}, ...}`).
pub(crate) fn parameter_names(schema: &str) -> Option<Vec<String>> {
    let v = PyValue::parse(schema).ok()?;
    let map = match v.get("properties") {
        Some(PyValue::Dict(props)) => props,
        _ => {
            let top = v.as_dict()?;
            if top.is_empty() || !top.iter().all(|(_, x)| matches!(x, PyValue::Dict(_))) {
                return None;
            }
            top
        }
    };
    Some(map.iter().map(|(k, _)| k.clone()).collect())
}

/// The keys a traced call's own keywords add to its record
/// ([`Unwrap::ArgsKwargs`]).
const RECORD_EXTRA: &[&str] = &["sanitize_inputs_outputs"];

/// Whether `v` is an object of no keys but `args`, `kwargs` and `extra`
/// ones, and of at least one: what [`call_record`] may take apart.
fn record_keys(v: &Value, extra: &[&str]) -> bool {
    v.as_object().is_some_and(|o| {
        !o.is_empty()
            && o.keys()
                .all(|k| k == "args" || k == "kwargs" || extra.contains(&k.as_str()))
    })
}

/// A Python call record `{"args": [...], "kwargs": {...}}` (plus any of
/// `extra` keys, dropped) -> keyword arguments by name. With parameter
/// `names` (the tool's schema): positional arguments take the first names,
/// as Python binds them, and a lone positional object whose keys are all
/// parameters is the keyword arguments (smolagents calls a tool so). Without
/// names, or when they do not fit, positional ones stay under `"args"`.
/// `names = None`: the loose form (Langfuse, Traceloop), where either key
/// may be missing.
fn call_record(v: Value, extra: &[&str], names: Option<&[String]>) -> Result<Value, Value> {
    let keys_fit = record_keys(&v, extra);
    let Value::Object(mut o) = v else {
        return Err(v);
    };
    // Strict: both keys, or `kwargs` alone (LlamaIndex and DSPy record a
    // tool called by keyword so) unless the tool has a parameter `kwargs`.
    let shaped = keys_fit
        && match names {
            None => true,
            Some(names) => {
                matches!(o.get("kwargs"), Some(Value::Object(_)))
                    && match o.get("args") {
                        Some(a) => a.is_array(),
                        None => !names.iter().any(|n| n == "kwargs"),
                    }
            }
        };
    if !shaped {
        return Err(Value::Object(o));
    }
    let mut kwargs = match o.remove("kwargs") {
        Some(Value::Object(kw)) => kw,
        _ => Map::new(),
    };
    let positional = match o.remove("args") {
        Some(Value::Array(a)) => a,
        None => Vec::new(),
        Some(other) => {
            kwargs.insert("args".to_string(), other);
            return Ok(Value::Object(kwargs));
        }
    };
    if positional.is_empty() {
        return Ok(Value::Object(kwargs));
    }
    let names = names.unwrap_or_default();
    if let [Value::Object(lone)] = positional.as_slice() {
        if kwargs.is_empty() && !lone.is_empty() && lone.keys().all(|k| names.contains(k)) {
            return Ok(Value::Object(lone.clone()));
        }
    }
    let fits = positional.len() <= names.len()
        && names[..positional.len()]
            .iter()
            .all(|n| !kwargs.contains_key(n));
    if fits {
        for (n, a) in names.iter().zip(positional) {
            kwargs.insert(n.clone(), a);
        }
    } else {
        kwargs.insert("args".to_string(), Value::Array(positional));
    }
    Ok(Value::Object(kwargs))
}

#[cfg(test)]
mod tests;
