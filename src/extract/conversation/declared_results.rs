//! A `{"result": <object>}` result told a wrapper by the tool's declared
//! response schema (docs/conventions.md, "The conversation witness",
//! "Automatic function calling").
//!
//! A loop that hands every return value to the model under one `result`
//! key (google-genai's automatic function calling) is known by its own
//! markers where they are recorded (`afc`), but a streamed run records
//! neither. What such a request does carry is the tools it offers, and a
//! tool may declare what it returns (Gemini's `response_json_schema` or
//! `response`, MCP's `outputSchema`). When that schema is an object
//! without a `result` property, an object under a lone `result` key is
//! not what the tool returns but the loop's wrapper around it, and comes
//! off. A schema with a `result` property, or of another type, leaves it
//! as sent. Without a schema, the shape decides: Gemini's function
//! responses carry `result` around every value in google-genai's own loop
//! and in its manual function-calling examples, so in a `functionResponse`
//! part (or a GenAI part on a Gemini span) the key comes off; elsewhere it
//! stays.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::bodies;
use super::{message_text, Request, INPUT_KEYS};
use crate::assemble::SpanRecord;
use crate::extract::sides::Side;

/// Where a request body lists its tools: at its top or in its `config`
/// (google-genai's `GenerateContentConfig`).
const TOOL_LISTS: [&[&str]; 2] = [&["tools"], &["config", "tools"]];

/// Span attributes that hold the offered tools' definitions as a list.
const DEFINITION_KEYS: [&str; 1] = ["gen_ai.tool.definitions"];

/// The keys of a tool entry that group declarations (Gemini's `Tool`).
const DECLARATION_GROUPS: [&str; 2] = ["function_declarations", "functionDeclarations"];

/// The keys of a declaration holding the schema of what the tool returns.
const RESPONSE_SCHEMA_KEYS: [&str; 5] = [
    "response_json_schema",
    "responseJsonSchema",
    "response",
    "outputSchema",
    "output_schema",
];

/// The wrapper's key.
const KEY: &str = "result";

/// Takes [`KEY`] off each result of `r`, the request span `s` records,
/// whose content is `{"result": <object>}` (as a value or as its JSON
/// text) when the tools `s` offers declare that tool's response as an
/// object without such a property, or declare none and the result is in
/// Gemini's function-response shape.
pub(super) fn unwrap(s: &SpanRecord, r: &mut Request) {
    // Most results are no such object: look at the span only for one.
    let wrapped: Vec<(usize, Value)> = r
        .answers
        .iter()
        .enumerate()
        .filter_map(|(i, a)| inner_object(a.content.as_ref()?).map(|v| (i, v)))
        .collect();
    if wrapped.is_empty() {
        return;
    }
    let offered = offered(s);
    // Each call id's tool, and each tool's decision, looked up once: a
    // request may answer thousands of calls.
    let by_id: HashMap<&str, &str> = r
        .history
        .iter()
        .filter_map(|c| Some((c.id.as_deref()?, c.name.as_str())))
        .collect();
    let mut decided: HashMap<String, Option<bool>> = HashMap::new();
    let mut take = Vec::new();
    for (i, inner) in wrapped {
        let a = &r.answers[i];
        let Some(name) = a
            .name
            .as_deref()
            .or_else(|| by_id.get(a.id.as_deref()?).copied())
        else {
            continue;
        };
        // What the tool's declared schema says (`None`: no schema).
        let declared = *decided.entry(name.to_string()).or_insert_with(|| {
            offered
                .iter()
                .find_map(|v| declared_response(v, name))
                .map(object_without_key)
        });
        let wrapper = declared.unwrap_or(a.gemini_shape);
        if wrapper {
            take.push((i, inner));
        }
    }
    for (i, inner) in take {
        r.answers[i].content = Some(inner);
    }
}

/// The object under a lone [`KEY`] of a result's content, an object or
/// the JSON text of one.
fn inner_object(content: &Value) -> Option<Value> {
    let parsed;
    let o = match content {
        Value::Object(o) => o,
        Value::String(t) if lone_key_first(t) => {
            parsed = serde_json::from_str::<Value>(t).ok()?;
            parsed.as_object()?
        }
        _ => return None,
    };
    match (o.len(), o.get(KEY)) {
        (1, Some(inner @ Value::Object(_))) => Some(inner.clone()),
        _ => None,
    }
}

/// Whether JSON text `t` opens an object whose first key is [`KEY`]
/// (cheap: no other text is parsed).
fn lone_key_first(t: &str) -> bool {
    t.trim_start()
        .strip_prefix('{')
        .and_then(|t| t.trim_start().strip_prefix('"'))
        .is_some_and(|t| t.strip_prefix(KEY).is_some_and(|t| t.starts_with('"')))
}

/// What span `s` records of the tools it offers: its request bodies (the
/// tools inside them) and its definition lists.
fn offered(s: &SpanRecord) -> Vec<Value> {
    let texts = INPUT_KEYS
        .iter()
        .filter_map(|k| message_text(s, k))
        .chain(bodies::bodies_of_model_call(s, Side::Input))
        .chain(DEFINITION_KEYS.iter().filter_map(|k| s.attr_str(k)));
    texts
        .filter(|t| RESPONSE_SCHEMA_KEYS.iter().any(|k| t.contains(k)))
        .filter_map(|t| serde_json::from_str(t).ok())
        .collect()
}

/// The response schema `v` (a request body, a list of tools or one tool)
/// declares for tool `name`.
fn declared_response<'v>(v: &'v Value, name: &str) -> Option<&'v Value> {
    let in_body = TOOL_LISTS.iter().filter_map(|path| {
        path.iter()
            .try_fold(v, |at, k| at.get(*k))
            .and_then(Value::as_array)
    });
    let entries: Vec<&Value> = match v {
        Value::Array(list) => list.iter().collect(),
        _ => in_body.flatten().chain(std::iter::once(v)).collect(),
    };
    for entry in entries {
        let grouped = DECLARATION_GROUPS
            .iter()
            .find_map(|k| entry.get(*k).and_then(Value::as_array));
        let declarations: Vec<&Value> = match grouped {
            Some(list) => list.iter().collect(),
            None => vec![entry],
        };
        for d in declarations {
            // OpenAI's `{"type": "function", "function": {...}}` or flat.
            let d = d.get("function").filter(|f| f.is_object()).unwrap_or(d);
            if d.get("name").and_then(Value::as_str) == Some(name) {
                return RESPONSE_SCHEMA_KEYS.iter().find_map(|k| d.get(*k));
            }
        }
    }
    None
}

/// Whether `schema` describes an object (its `type`, any case, or its
/// `properties`) that has no [`KEY`] property.
fn object_without_key(schema: &Value) -> bool {
    let Some(s) = schema.as_object() else {
        return false;
    };
    let typed = s
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.eq_ignore_ascii_case("object"));
    let properties = s.get("properties").and_then(Value::as_object);
    (typed || properties.is_some()) && !properties.is_some_and(|p: &Map<_, _>| p.contains_key(KEY))
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{SpanRecord, Trace, TraceId};
    use crate::extract::test_support::{acme_model, names_and_results};
    use crate::extract::{Analysis, Extractor};

    fn results(spans: Vec<SpanRecord>) -> Vec<(String, Value)> {
        let a: Analysis = Extractor::default().analyze(&Trace::new(TraceId([9; 16]), spans, 0));
        names_and_results(&a)
    }

    fn model(id: u8, when: (u64, u64), input: Value, output: Value) -> SpanRecord {
        acme_model(id, when, "acme.stream", &input, &output)
    }

    /// One streamed loop, its two requests offering `tools`; the tool's
    /// result sent back as `sent`.
    fn two_turns(tools: Value, sent: Value) -> Vec<SpanRecord> {
        let user = json!({"role": "user", "parts": [{"text": "plan"}]});
        let asked =
            json!({"function_call": {"id": "q-1", "name": "look_up", "args": {"town": "Oslo"}}});
        let first = json!({"contents": [user], "tools": tools});
        let out =
            |parts: Value| json!({"candidates": [{"content": {"role": "model", "parts": parts}}]});
        let second = json!({"contents": [user, {"role": "model", "parts": [asked]},
            {"role": "user", "parts": [{"function_response": {"name": "look_up", "response": sent}}]}],
            "tools": tools});
        vec![
            model(1, (10, 20), first, out(json!([asked]))),
            model(2, (30, 40), second, out(json!([{"text": "ok"}]))),
        ]
    }

    fn declared(response: Value) -> Value {
        json!([{"function_declarations": [{"name": "look_up",
            "parameters_json_schema": {"type": "object"}, "response_json_schema": response}]}])
    }

    #[test]
    fn an_object_schema_without_the_key_takes_the_wrapper_off() {
        let sent = json!({"result": {"inn": "Fjord", "beds": 4}});
        let got = results(two_turns(declared(json!({"type": "object"})), sent.clone()));
        assert_eq!(
            got,
            vec![("look_up".into(), json!({"inn": "Fjord", "beds": 4}))]
        );
        // MCP's form, a flat declaration with `outputSchema`.
        let mcp = json!([{"name": "look_up", "outputSchema":
            {"type": "object", "properties": {"inn": {"type": "string"}}}}]);
        let got = results(two_turns(mcp, sent));
        assert_eq!(
            got,
            vec![("look_up".into(), json!({"inn": "Fjord", "beds": 4}))]
        );
    }

    #[test]
    fn only_text_that_opens_with_the_key_is_parsed() {
        use super::{inner_object, lone_key_first};
        assert!(lone_key_first(r#" { "result": {"a": 1}}"#));
        assert!(!lone_key_first(r#"{"results": {"a": 1}}"#));
        assert!(!lone_key_first(r#"{"ok": 1, "result": {}}"#));
        assert_eq!(
            inner_object(&json!(r#"{"result": {"a": 1}}"#)),
            Some(json!({"a": 1}))
        );
        // Not lone, or no object under the key.
        assert_eq!(
            inner_object(&json!(r#"{"result": {"a": 1}, "b": 2}"#)),
            None
        );
        assert_eq!(inner_object(&json!({"result": "done"})), None);
    }

    #[test]
    fn a_schema_with_the_key_keeps_it_and_gemini_s_shape_without_one_takes_it_off() {
        let sent = json!({"result": {"inn": "Fjord"}});
        let own = json!({"type": "OBJECT", "properties": {"result": {"type": "OBJECT"}}});
        let got = results(two_turns(declared(own), sent.clone()));
        assert_eq!(got, vec![("look_up".into(), sent.clone())]);
        // No schema (or another tool's): a `function_response` part is
        // Gemini's shape, whose loops wrap every value under `result`.
        let bare = json!([{"function_declarations": [{"name": "look_up"}]}]);
        let other = json!([{"name": "walk", "outputSchema": {"type": "object"}}]);
        for tools in [bare, other] {
            let got = results(two_turns(tools, sent.clone()));
            assert_eq!(got, vec![("look_up".into(), json!({"inn": "Fjord"}))]);
        }
        // Another provider's tool message without a schema keeps it.
        let user = json!({"role": "user", "content": "plan"});
        let call = json!({"id": "q-1", "type": "function",
            "function": {"name": "look_up", "arguments": "{\"town\": \"Oslo\"}"}});
        let asked = json!({"role": "assistant", "tool_calls": [call]});
        let tools = json!([{"type": "function", "function": {"name": "look_up"}}]);
        let answer = json!({"role": "tool", "tool_call_id": "q-1", "content": sent.to_string()});
        let out = |m: Value| json!({"choices": [{"message": m}]});
        let spans = vec![
            model(
                1,
                (10, 20),
                json!({"messages": [user], "tools": tools}),
                out(asked.clone()),
            ),
            model(
                2,
                (30, 40),
                json!({"messages": [user, asked, answer], "tools": tools}),
                out(json!({"role": "assistant", "content": "ok"})),
            ),
        ];
        assert_eq!(results(spans), vec![("look_up".into(), sent)]);
    }
}
