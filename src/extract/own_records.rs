//! A tool span's result that is a record the framework or the protocol
//! built around what the tool returned, recognised by what the trace says
//! of the call (docs/conventions.md, "Result wrappers"):
//!
//! - the call's own result record: an object that names the span's own
//!   call id (`toolUseId`, `tool_call_id`, ...) beside a list of content
//!   blocks (`{"text"}`, `{"json"}`, `{"type": "text", "text"}`) and at
//!   most a status (Strands' `ToolResult`, as LoongSuite's Strands
//!   instrumentor writes `gen_ai.tool.call.result`; Bedrock Converse's
//!   `toolResult` has the same form). A tool does not return the id the
//!   model gave its own call, so the record is no tool's value: its blocks
//!   are. A failed record (`status` `error`, `isError` true) stays.
//! - MCP structured content around a value that is no object: an MCP
//!   server (the Python SDK's and FastMCP's) sends a tool's return value
//!   that is no object as `{"result": value}`, and a client that prefers
//!   structured content (Agent Framework's default) records that. When the
//!   call's span, or a span right under it, is the MCP `tools/call`
//!   request (`mcp.method.name`), `{"result": v}` with `v` no object is
//!   `v`. A tool that ran without MCP keeps its `{"result": ...}`. A call
//!   read from the conversation has no span of its own: it was made over
//!   MCP when a `tools/call` request of the trace names its tool (a client
//!   that sends the structured content back to the model as the tool's
//!   message, as fast-agent does).

use std::cell::OnceCell;

use serde_json::{Map, Value};

use super::rules::builtin_list;
use super::source::{parse_json_or_string, tool_call_id};
use super::wrappers::lone_key_around_non_object;
use super::{CallResult, ToolCall};
use crate::assemble::{Children, IdSet, SpanRecord, Trace};

/// The keys under which a result record names the call it answers
/// (vocabulary `result_record_id_keys`).
fn id_keys() -> &'static [String] {
    builtin_list("result_record_id_keys")
}

/// The keys a result record may hold besides its call id and content
/// (vocabulary `result_record_other_keys`).
fn other_keys() -> &'static [String] {
    builtin_list("result_record_other_keys")
}

/// The keys under which a result record names its tool (vocabulary
/// `result_record_name_keys`).
fn name_keys() -> &'static [String] {
    builtin_list("result_record_name_keys")
}

/// The attribute that names an MCP request's method, and the method of a
/// tool call.
pub(crate) const MCP_METHOD: &str = "mcp.method.name";
pub(crate) const MCP_TOOLS_CALL: &str = "tools/call";

/// Where an MCP `tools/call` request names its tool, besides its span's
/// name (`tools/call NAME`, after the method as OTel's MCP conventions and
/// the Python SDK write it).
const MCP_TOOL_NAME_KEYS: [&str; 2] = ["gen_ai.tool.name", "mcp.tool.name"];

/// The key MCP structured content wraps a value that is no object under.
const MCP_WRAP_KEY: &str = "result";
const MCP_WRAP_KEY_QUOTED: &str = "\"result\"";

/// Takes the records described in the module's doc off the results of
/// `calls` read from `trace` (its spans or its conversation).
pub(crate) fn settle(trace: &Trace, calls: &mut [ToolCall]) {
    let wanted = |c: &ToolCall| c.result.as_ref().is_some_and(may_be_record);
    if !calls.iter().any(wanted) {
        return;
    }
    let positions = trace.positions();
    // Built when a call over MCP is first asked about (each call looks
    // only at its own span's children).
    let children = OnceCell::new();
    let mcp_tools = OnceCell::new();
    for c in calls.iter_mut().filter(|c| wanted(c)) {
        let Some(Value::Object(o)) = c.result.as_ref().map(CallResult::to_value) else {
            continue;
        };
        let inner = if c.from.is_some() {
            let named = mcp_tools
                .get_or_init(|| mcp_tool_names(trace))
                .contains(&c.name.as_str());
            // JAF hands the model its envelope naming the tool.
            named_record(&o, &c.name).or_else(|| {
                named
                    .then(|| lone_key_around_non_object(Value::Object(o), MCP_WRAP_KEY).ok())
                    .flatten()
            })
        } else {
            let Some(at) = positions.get(c.span_id) else {
                continue;
            };
            let inner = own_record(&o, tool_call_id(&trace.spans[at]))
                .or_else(|| named_record(&o, &c.name));
            let over_mcp = || over_mcp(trace, children.get_or_init(|| trace.children()), at);
            inner.or_else(|| {
                over_mcp()
                    .then(|| lone_key_around_non_object(Value::Object(o), MCP_WRAP_KEY).ok())
                    .flatten()
            })
        };
        if let Some(v) = inner {
            c.result = Some(CallResult::Value(v));
        }
    }
}

/// The tools that MCP `tools/call` requests of `trace` name (a set: a
/// trace may hold thousands of calls and requests).
fn mcp_tool_names(trace: &Trace) -> IdSet<&str> {
    trace
        .spans
        .iter()
        .filter(|s| is_mcp_tools_call(s))
        .filter_map(|s| {
            MCP_TOOL_NAME_KEYS
                .iter()
                .find_map(|k| s.attr_str(k))
                .or_else(|| {
                    let name = s.span.name();
                    let at = memchr::memmem::find(name.as_bytes(), MCP_TOOLS_CALL.as_bytes())?;
                    name[at + MCP_TOOLS_CALL.len()..].split_whitespace().next()
                })
        })
        .collect()
}

/// A cheap look, without parsing: an object whose first key is the MCP
/// wrap key (an object of one key has no other first), or that names
/// `content` and a record id key.
fn may_be_record(r: &CallResult) -> bool {
    match r {
        CallResult::Json(t) => {
            let Some(body) = t.trim_start().strip_prefix('{') else {
                return false;
            };
            let has =
                |needle: &str| memchr::memmem::find(body.as_bytes(), needle.as_bytes()).is_some();
            body.trim_start().starts_with(MCP_WRAP_KEY_QUOTED)
                || (has("\"content\"") && id_keys().iter().any(|k| has(k)))
                || (has(MCP_WRAP_KEY_QUOTED) && name_keys().iter().any(|k| has(k)))
        }
        CallResult::Value(Value::Object(o)) => {
            (o.len() == 1 && o.contains_key(MCP_WRAP_KEY))
                || (o.contains_key("content") && id_keys().iter().any(|k| o.contains_key(k)))
                || (o.contains_key(MCP_WRAP_KEY) && name_keys().iter().any(|k| o.contains_key(k)))
        }
        CallResult::Value(_) => false,
    }
}

/// The value of the call `id`'s own result record `o` (see the module's
/// doc), if `o` is one. A span that records no call id (`id` `None`) takes
/// a record naming any id: the id is still no value a tool returns.
pub(crate) fn own_record(o: &Map<String, Value>, id: Option<&str>) -> Option<Value> {
    let names = |v: &str| id.map_or(!v.is_empty(), |id| v == id);
    let named = id_keys()
        .iter()
        .filter(|k| o.get(k.as_str()).and_then(Value::as_str).is_some_and(names))
        .count();
    let failed = failed(o);
    let others = o.iter().all(|(k, v)| {
        k == "content"
            || id_keys().contains(k)
            || (other_keys().contains(k) && !v.is_object() && !v.is_array())
    });
    if named != 1 || failed || !others {
        return None;
    }
    let blocks = o.get("content")?.as_array()?;
    let mut values: Vec<Value> = blocks.iter().map(block_value).collect::<Option<_>>()?;
    match values.len() {
        0 => None,
        1 => values.pop(),
        _ => Some(Value::Array(values)),
    }
}

/// The value of a result record `o` naming the call's own tool `name`
/// (one of `result_record_name_keys`) beside its `result` and no key but
/// `result_record_other_keys` (scalars), not failed: JAF's tool span output
/// `{"tool_name", "result", "status", "timestamp"}`. A tool does not return
/// its own name beside its value, so the record is the framework's; the
/// result, when text, is what the model was handed (JSON-decoded).
pub(crate) fn named_record(o: &Map<String, Value>, name: &str) -> Option<Value> {
    let named = name_keys()
        .iter()
        .filter(|k| o.get(k.as_str()).and_then(Value::as_str) == Some(name))
        .count();
    let others = o.iter().all(|(k, v)| {
        k == MCP_WRAP_KEY
            || name_keys().contains(k)
            || (other_keys().contains(k) && !v.is_object() && !v.is_array())
    });
    if named != 1 || !others || failed(o) {
        return None;
    }
    match o.get(MCP_WRAP_KEY)? {
        Value::String(t) => Some(parse_json_or_string(t)),
        v => Some(v.clone()),
    }
}

/// Whether a result record says the call failed (`status` `error`,
/// `isError` or `is_error` true).
fn failed(o: &Map<String, Value>) -> bool {
    o.get("status").and_then(Value::as_str) == Some("error") || super::mcp_error_text::flagged(o)
}

/// A content block's value: `{"json": v}` -> `v` (a list a framework put
/// under one key: `json_block`), `{"text": t}` (typed `text` or not) -> `t`
/// JSON-decoded; any other block is none.
fn block_value(b: &Value) -> Option<Value> {
    let b = b.as_object()?;
    let typed = match b.get("type") {
        None => 0,
        Some(t) if matches!(t.as_str(), Some("text" | "json")) => 1,
        Some(_) => return None,
    };
    if b.len() != 1 + typed {
        return None;
    }
    if let Some(v) = b.get("json") {
        return Some(super::json_block::block_value(v.clone()));
    }
    b.get("text")?.as_str().map(parse_json_or_string)
}

/// Whether span `s` is an MCP `tools/call` request.
pub(crate) fn is_mcp_tools_call(s: &SpanRecord) -> bool {
    s.attr_str(MCP_METHOD) == Some(MCP_TOOLS_CALL)
}

/// Whether span `at` of `trace`, or a span right under it, is an MCP
/// `tools/call` request.
fn over_mcp(trace: &Trace, children: &Children, at: usize) -> bool {
    let is_call = |i: usize| is_mcp_tools_call(&trace.spans[i]);
    is_call(at) || children.of(at).iter().any(|&i| is_call(i))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::unwrap_tests::{calls, span, trace};
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(o) => o,
            _ => Map::new(),
        }
    }

    #[test]
    fn a_result_record_naming_its_own_tool_gives_its_result() {
        let rec = |v: Value| named_record(&obj(v), "pick_seat");
        assert_eq!(
            rec(
                json!({"tool_name": "pick_seat", "result": "{\"row\": 12}", "status": "completed", "timestamp": "t"})
            ),
            Some(json!({"row": 12}))
        );
        assert_eq!(
            rec(json!({"toolName": "pick_seat", "result": "taken"})),
            Some(json!("taken"))
        );
        for kept in [
            // Another tool's record, a failure, a key of the tool's own.
            json!({"tool_name": "open_gate", "result": "x"}),
            json!({"tool_name": "pick_seat", "result": "boom", "status": "error"}),
            json!({"tool_name": "pick_seat", "result": "x", "seats": 2}),
            json!({"tool_name": "pick_seat", "status": "completed"}),
        ] {
            assert_eq!(rec(kept.clone()), None, "{kept}");
        }
    }

    /// A made-up framework's envelope `{"state", "result", "tool_name",
    /// "message"}` around each result it hands the model, read from the
    /// conversation only (no tool spans).
    fn envelope_result(envelope: &Value) -> Option<Value> {
        use crate::extract::tests::sp;
        let call = json!({"id": "c_77", "type": "function",
            "function": {"name": "pick_seat", "arguments": "{\"row\": 12}"}});
        let asks = json!([{"role": "assistant", "tool_calls": [call]}]).to_string();
        let request = json!([
            {"role": "user", "content": "a seat?"},
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c_77", "content": envelope.to_string()},
        ])
        .to_string();
        let chat = |id, at, key, v: &str| {
            let ops = [("gen_ai.operation.name", "chat"), (key, v)];
            sp(id, Some(1), at, "acme.chat", &ops)
        };
        let spans = vec![
            sp(1, None, (0, 100), "acme.run", &[]),
            chat(2, (10, 20), "gen_ai.output.messages", &asks),
            chat(3, (50, 60), "gen_ai.input.messages", &request),
        ];
        let t = Trace::new(crate::assemble::TraceId([9; 16]), spans, 0);
        let a = crate::extract::Extractor::default().analyze(&t);
        assert_eq!(a.calls.len(), 1, "{:?}", a.calls);
        a.calls[0].result.as_ref().map(CallResult::to_value)
    }

    #[test]
    fn a_conversation_result_in_an_envelope_naming_its_tool_gives_its_result() {
        let env = |name: &str, extra: Value| {
            let mut o = obj(json!({"status": "executed", "result": "{\"row\": 12}",
                "tool_name": name, "message": "done."}));
            o.extend(obj(extra));
            Value::Object(o)
        };
        assert_eq!(
            envelope_result(&env("pick_seat", json!({}))),
            Some(json!({"row": 12}))
        );
        // Another tool's name, or a key no envelope vocabulary holds: kept.
        for kept in [
            env("open_gate", json!({})),
            env("pick_seat", json!({"seats": 2})),
        ] {
            assert_eq!(envelope_result(&kept), Some(kept.clone()), "{kept}");
        }
    }

    #[test]
    fn a_result_record_naming_its_own_call_gives_its_blocks() {
        let rec = |v: Value| own_record(&obj(v), Some("q-7"));
        assert_eq!(
            rec(
                json!({"toolUseId": "q-7", "status": "success", "content": [{"text": "{\"a\": 1}"}]})
            ),
            Some(json!({"a": 1}))
        );
        assert_eq!(
            rec(
                json!({"tool_call_id": "q-7", "content": [{"json": [2]}, {"type": "text", "text": "ok"}]})
            ),
            Some(json!([[2], "ok"]))
        );
        for kept in [
            // Another call's id, or none: a value of the tool's own.
            json!({"toolUseId": "q-8", "content": [{"text": "x"}]}),
            json!({"status": "success", "content": [{"text": "x"}]}),
            // A failure stays, so that it shows.
            json!({"toolUseId": "q-7", "status": "error", "content": [{"text": "boom"}]}),
            json!({"call_id": "q-7", "isError": true, "content": [{"text": "boom"}]}),
            // A key of the tool's own, or a block that is no text.
            json!({"toolUseId": "q-7", "seats": 2, "content": [{"text": "x"}]}),
            json!({"toolUseId": "q-7", "content": [{"image": {"format": "png"}}]}),
            json!({"toolUseId": "q-7", "content": []}),
        ] {
            assert_eq!(rec(kept.clone()), None, "{kept}");
        }
        // A span with no call id of its own: a record naming any id is the
        // framework's; one naming none, or an empty id, stays.
        let idless = |v: Value| own_record(&obj(v), None);
        assert_eq!(
            idless(json!({"toolUseId": "q-8", "status": "success", "content": [{"text": "x"}]})),
            Some(json!("x"))
        );
        for kept in [
            json!({"status": "success", "content": [{"text": "x"}]}),
            json!({"toolUseId": "", "content": [{"text": "x"}]}),
            json!({"toolUseId": "q-8", "status": "error", "content": [{"text": "boom"}]}),
        ] {
            assert_eq!(idless(kept.clone()), None, "{kept}");
        }
    }

    #[test]
    fn a_tool_span_s_own_result_record_comes_off_under_a_made_up_namespace() {
        let record =
            r#"{"toolUseId":"q-7","status":"success","content":[{"text":"{\"berth\": 4}"}]}"#;
        let t = trace(vec![span(
            1,
            None,
            "execute_tool book_berth",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "book_berth"),
                ("gen_ai.tool.call.id", "q-7"),
                ("gen_ai.tool.call.arguments", r#"{"pier":"B"}"#),
                ("gen_ai.tool.call.result", record),
            ],
        )]);
        assert_eq!(calls(&t)[0].2, json!({"berth": 4}));
        // The same record on a span of another call id stays as it is.
        let other = trace(vec![span(
            1,
            None,
            "execute_tool book_berth",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "book_berth"),
                ("gen_ai.tool.call.id", "q-9"),
                ("gen_ai.tool.call.result", record),
            ],
        )]);
        assert_eq!(
            calls(&other)[0].2,
            serde_json::from_str::<Value>(record).unwrap_or_default()
        );
    }

    fn tool_span(result: &str) -> crate::assemble::SpanRecord {
        span(
            1,
            None,
            "execute_tool moor_boat",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "moor_boat"),
                ("gen_ai.tool.call.id", "m-1"),
                ("gen_ai.tool.call.result", result),
            ],
        )
    }

    #[test]
    fn mcp_structured_content_comes_off_a_call_made_over_mcp_only() {
        let mcp = span(
            2,
            Some(1),
            "tools/call moor_boat",
            &[(MCP_METHOD, "tools/call")],
        );
        let over = |result: &str| {
            calls(&trace(vec![tool_span(result), mcp.clone()]))[0]
                .2
                .clone()
        };
        assert_eq!(over(r#"{"result": "moored"}"#), json!("moored"));
        assert_eq!(over(r#"{"result": [1, 2]}"#), json!([1, 2]));
        // An object under the key, or a second key: the tool's own.
        assert_eq!(
            over(r#"{"result": {"berth": 4}}"#),
            json!({"result": {"berth": 4}})
        );
        assert_eq!(
            over(r#"{"result": "moored", "pier": "B"}"#),
            json!({"result": "moored", "pier": "B"})
        );
        // A tool that ran without MCP returned `{"result": ...}` itself.
        let alone = calls(&trace(vec![tool_span(r#"{"result": "moored"}"#)]));
        assert_eq!(alone[0].2, json!({"result": "moored"}));
        // Another MCP method under the span is no tool call over MCP.
        let list = span(2, Some(1), "tools/list", &[(MCP_METHOD, "tools/list")]);
        let listed = calls(&trace(vec![tool_span(r#"{"result": "moored"}"#), list]));
        assert_eq!(listed[0].2, json!({"result": "moored"}));
    }

    /// The model's two chat spans around a tool call over MCP, the second
    /// holding the structured content the client sent back as its result.
    fn chats(result: &str) -> [crate::assemble::SpanRecord; 2] {
        let sent = serde_json::from_str::<Value>(result).unwrap_or_default();
        crate::extract::test_support::ask_and_answer(sent, 3)
    }

    #[test]
    fn mcp_structured_content_comes_off_a_conversation_call_its_tool_named_over_mcp() {
        let over = |mcp_name: &str, attrs: &[(&str, &str)]| {
            let mcp = span(2, None, mcp_name, attrs);
            let [ask, answer] = chats(r#"{"result": "moored"}"#);
            calls(&trace(vec![ask, mcp, answer]))[0].2.clone()
        };
        // The tool named after the method in the span's name, or by attribute
        // (then the request is the call's own span, its result filled in
        // from the conversation).
        let by_name = over(
            "MCP send tools/call moor_boat",
            &[(MCP_METHOD, "tools/call")],
        );
        assert_eq!(by_name, json!("moored"));
        let by_key = over(
            "tools/call",
            &[
                (MCP_METHOD, "tools/call"),
                ("gen_ai.tool.name", "moor_boat"),
            ],
        );
        assert_eq!(by_key, json!("moored"));
        // Another tool's request, or another method: the tool's own value.
        let other = over("tools/call lift_anchor", &[(MCP_METHOD, "tools/call")]);
        assert_eq!(other, json!({"result": "moored"}));
        let list = over("tools/list moor_boat", &[(MCP_METHOD, "tools/list")]);
        assert_eq!(list, json!({"result": "moored"}));
        let alone = calls(&trace(chats(r#"{"result": "moored"}"#).to_vec()));
        assert_eq!(alone[0].2, json!({"result": "moored"}));
    }
}
