//! Calls the provider runs (docs/conventions.md, "Calls the provider
//! runs").
//!
//! A model may call tools that its provider runs inside the same model
//! response: the OpenAI Responses API's hosted tools (`mcp_call`,
//! `web_search_call`, ...), Anthropic's server tools (`server_tool_use`
//! answered by a `*_tool_result` block, the MCP connector's `mcp_tool_use`),
//! Gemini's code execution (`executableCode` / `codeExecutionResult`), the
//! OTel GenAI parts `server_tool_call` / `server_tool_call_response`. No
//! tool span records them: the model's output does, with the call's
//! arguments and its result side by side. Writers that turn such a block
//! into a plain call part write the call and its answer in the same model
//! message (`tool_call` + `tool_call_response` of one id): an answer the
//! model's own message carries is the provider's too.
//!
//! Each is a tool call (`from: "provider"`), read from model outputs first,
//! then from the last model turn of each request whose model call before it
//! is in the same trace (writers that leave the provider's items out of
//! their outputs). One call is counted once per call id (an output and the
//! next request's history repeat it). The item, block and part types are
//! data (`vocabulary.toml`).

use std::sync::OnceLock;

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue};
use serde_json::{Map, Value};

use super::super::any_word::AnyWord;
use super::super::rules::builtin_list;
use super::super::{Analysis, CallArgs, CallResult, CallStatus, Ctx, Extractor, ToolCall};
use super::{messages_of, with_items, AskedAt, MODEL_ROLES};
use crate::assemble::{SpanRecord, Trace};

/// What a call the provider ran says in rows (`from`).
pub const FROM_PROVIDER: &str = "provider";
/// The convention of such a call.
const CONVENTION: &str = "provider-call";
/// Deeper than this a document is not searched.
const MAX_DEPTH: usize = 12;

/// The vocabulary's lists, read once.
struct Words {
    /// Item or block types of a call the provider ran.
    calls: &'static [String],
    /// Block or part types of its result (paired by id).
    results: &'static [String],
    /// Keys of a part that is such a call (`executableCode`), and of its
    /// result, which follows it (`codeExecutionResult`).
    code: &'static [String],
    code_results: &'static [String],
    /// Outcomes of such a result that say the code failed.
    code_failed: &'static [String],
    /// Keys of a Gemini part that answers a function call (a request's
    /// results after the model turn that asked).
    function_responses: &'static [String],
    /// Id prefixes of a server tool's call.
    prefixes: &'static [String],
    /// Any of the above, as one search: a text without it is not parsed.
    any: AnyWord,
    /// Attributes of what the model was offered besides its tools
    /// (parameters, instructions): never a call's record, and with the
    /// tools most of a model call's bytes.
    offered: &'static [String],
}

fn words() -> &'static Words {
    static WORDS: OnceLock<Words> = OnceLock::new();
    WORDS.get_or_init(|| {
        let calls = builtin_list("provider_call_types");
        let results = builtin_list("provider_result_types");
        let code = builtin_list("provider_code_keys");
        let code_results = builtin_list("provider_code_result_keys");
        // A call part answered in its own message says it is the
        // provider's by a flag or its id's opening quote and prefix.
        let flags = ["\"builtin\"", "\"server\""].map(str::to_string);
        let prefixes = builtin_list("provider_call_id_prefixes");
        let ids = prefixes.iter().map(|p| format!("\"{p}"));
        let all = calls.iter().chain(code).chain(&flags).cloned().chain(ids);
        Words {
            calls,
            results,
            code,
            code_results,
            code_failed: builtin_list("provider_code_failed_outcomes"),
            function_responses: builtin_list("function_response_part_keys"),
            prefixes,
            offered: builtin_list("provider_offered_keys"),
            any: AnyWord::new(all),
        }
    })
}

/// One call the provider ran, as a record gives it.
#[derive(Debug, Clone, PartialEq)]
struct Ran {
    id: Option<String>,
    name: String,
    server: Option<String>,
    args: Value,
    result: Option<Value>,
    failed: Option<String>,
}

/// A result block found apart from its call, by the call's id.
type Answers = Vec<(String, Value)>;

/// The calls the provider ran in `trace`, in the order they were read,
/// once per call id.
pub(super) fn calls(x: &Extractor, trace: &Trace, seen: &[Ctx], out: &Analysis) -> Vec<ToolCall> {
    let mut found: Vec<(usize, Ran, u64)> = Vec::new();
    let keep = |i: usize, ran: Ran, start: u64, found: &mut Vec<(usize, Ran, u64)>| {
        let twice = found.iter().any(|(_, r, _)| match (&r.id, &ran.id) {
            (Some(a), Some(b)) => a == b,
            // Without ids (Gemini's code execution): the same code once.
            (None, None) => r.name == ran.name && r.args == ran.args,
            _ => false,
        });
        if !twice {
            found.push((i, ran, start));
        }
    };
    // Outputs first: the record of the model call that ran them. The
    // requests that may hold one wait for them.
    let mut asking: Vec<(usize, Vec<Value>)> = Vec::new();
    let ended = Ended::of(trace);
    for (i, s) in trace.spans.iter().enumerate() {
        let (outputs, requests) = documents(s, ended.before(i, s.span.start_time_unix_nano));
        for v in outputs {
            for ran in in_document(&v) {
                keep(i, ran, s.span.start_time_unix_nano, &mut found);
            }
        }
        if !requests.is_empty() {
            asking.push((i, requests));
        }
    }
    // Then the last model turn of each request whose model call before it
    // is in this trace (a writer that leaves the provider's items out of
    // its outputs keeps them in the history): when that model call is in
    // another trace, that trace read its output. Which spans record a
    // request is looked at only when a request may hold such a call.
    let models: Vec<(usize, u64, u64)> = if asking.is_empty() {
        Vec::new()
    } else {
        (trace.spans.iter().enumerate())
            .filter(|(_, p)| super::has_any_input(p))
            .map(|(j, p)| (j, p.span.start_time_unix_nano, p.span.end_time_unix_nano))
            .collect()
    };
    for (i, requests) in asking {
        let at = trace.spans[i].span.start_time_unix_nano;
        let before = models.iter().filter(|(j, _, end)| *j != i && *end <= at);
        let Some(start) = before.map(|(_, start, _)| *start).max() else {
            continue;
        };
        for v in requests {
            for ran in last_turn(&v) {
                keep(i, ran, start, &mut found);
            }
        }
    }
    found
        .into_iter()
        .map(|(i, ran, start)| call(x, trace, seen, out, i, ran, start))
        .collect()
}

/// Whether the model's ask `a` is a call the provider ran (in `ran`).
pub(super) fn is_ran(ran: &[ToolCall], a: &AskedAt) -> bool {
    ran.iter().any(|c| match (&c.call_id, &a.asked.id) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    })
}

/// The two earliest span ends of a trace, to tell whether any other span
/// ended before a span started (else no model call before it did, and its
/// request is not read: the scan of the text a call is never read from is
/// most of this reader's time).
struct Ended {
    first: Option<(usize, u64)>,
    second: Option<u64>,
}

impl Ended {
    fn of(trace: &Trace) -> Ended {
        let mut e = Ended {
            first: None,
            second: None,
        };
        for (i, s) in trace.spans.iter().enumerate() {
            let end = s.span.end_time_unix_nano;
            match e.first {
                Some((_, f)) if f <= end => e.second = Some(e.second.map_or(end, |x| x.min(end))),
                _ => {
                    e.second = e.first.map(|(_, f)| f);
                    e.first = Some((i, end));
                }
            }
        }
        e
    }

    /// Whether a span other than span `i` ended by `at`.
    fn before(&self, i: usize, at: u64) -> bool {
        match self.first {
            Some((j, end)) if j != i => end <= at,
            Some(_) => self.second.is_some_and(|end| end <= at),
            None => false,
        }
    }
}

/// The JSON documents of span `s` that may name a provider's call: its
/// outputs (JSON attributes other than requests and the tools the model
/// was offered, output events) and, when `asks` (a span ended before it),
/// its requests, each parsed only when its text names one of the words.
fn documents(s: &SpanRecord, asks: bool) -> (Vec<Value>, Vec<Value>) {
    let w = words();
    let (mut outputs, mut requests) = (Vec::new(), Vec::new());
    // One search of all the span's string values first: most spans name no
    // word in any (a word across two values is a hit too), and then no
    // value is looked at one by one. All of them: leaving out the long ones
    // no document is read from (the offered tools) took more tests of each
    // value than it saved in the search.
    if w.any.is_in(s.span.string_values().as_bytes()) {
        for (key, val) in s.span.attributes() {
            let Some(text) = val.and_then(|v| v.as_str()) else {
                continue;
            };
            // Most values are no JSON: the first byte says so.
            if !crate::ingest::projection::holds_json(text) {
                continue;
            }
            // The keys' tests cost less than the search of the text: first,
            // each once. Whether the key is a request's matters before the
            // search only when requests are not read, after it only for the
            // few texts that name a word.
            if offered(w, key) || (!asks && is_request_key(key)) {
                continue;
            }
            if !w.any.is_in(text.as_bytes()) {
                continue;
            }
            let request = asks && is_request_key(key);
            let Ok(v) = serde_json::from_str::<Value>(text.trim()) else {
                continue;
            };
            match request {
                true => requests.push(v),
                false => outputs.push(v),
            }
        }
    }
    // Only events the readers below read (most spans have none).
    use super::super::{content_events, genai_events};
    let read = !s.span.events.is_empty()
        && (genai_events::has_output(s)
            || content_events::has_output(s)
            || (asks && (genai_events::has_request(s) || content_events::has_request(s))));
    if read
        && s.span.events.iter().any(|e| {
            e.attributes
                .iter()
                .any(|kv| names_a_call(kv.value.as_ref()))
        })
    {
        outputs.extend(genai_events::output(s));
        outputs.extend(content_events::output(s));
        if asks {
            requests.extend(genai_events::request(s));
            requests.extend(content_events::request(s));
        }
    }
    (outputs, requests)
}

/// Whether attribute `key` holds what the model was offered.
fn offered(w: &Words, key: &str) -> bool {
    use crate::extract::facts::{SPAN_KEY_PREFIX, TOOL_KEYS};
    TOOL_KEYS.contains(&key)
        || key.starts_with(SPAN_KEY_PREFIX)
        || w.offered.iter().any(|k| k == key)
}

/// Whether an event's attribute value may name a provider's call: JSON
/// text naming a word, a call type or a server tool's id as a value, or a
/// flag or code key in a structured value (log records' bodies).
fn names_a_call(v: Option<&AnyValue>) -> bool {
    let w = words();
    match v.and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(t)) => {
            let t8 = t.as_bytes();
            w.calls
                .iter()
                .any(|c| crate::short_bytes::eq(c.as_bytes(), t8))
                || (w.prefixes.iter()).any(|p| crate::short_bytes::starts_with(t8, p.as_bytes()))
                || (crate::ingest::projection::holds_json(t) && w.any.is_in(t.as_bytes()))
        }
        Some(any_value::Value::ArrayValue(a)) => a.values.iter().any(|v| names_a_call(Some(v))),
        Some(any_value::Value::KvlistValue(kv)) => kv.values.iter().any(|kv| {
            matches!(kv.key.as_str(), "builtin" | "server")
                || w.code.contains(&kv.key)
                || names_a_call(kv.value.as_ref())
        }),
        _ => false,
    }
}

/// Whether attribute `key` holds a request (the history before the call).
fn is_request_key(key: &str) -> bool {
    // Keys are short: no substring search is set up each time (asked of
    // every JSON attribute of a span no other span ended before); each
    // word is compared only where its first byte is.
    let holds = |k: &[u8], w: &[u8]| memchr::memchr_iter(w[0], k).any(|at| k[at..].starts_with(w));
    let key = key.as_bytes();
    let last = key.rsplit(|&b| b == b'.').next().unwrap_or(key);
    holds(key, b"input")
        || holds(key, b"prompt")
        || (holds(last, b"messages") && holds(key, b"all_"))
}

/// The provider's calls of a request's last model turn: the model's
/// messages (or Responses items) after which only results follow.
fn last_turn(v: &Value) -> Vec<Ran> {
    let Some(messages) = messages_of(v, 0) else {
        return Vec::new();
    };
    let messages = with_items(messages);
    let role = |m: &Value| -> String {
        let o = m.as_object();
        let r = o.and_then(|o| o.get("role")).and_then(Value::as_str);
        let t = o.and_then(|o| o.get("type")).and_then(Value::as_str);
        r.or(t).unwrap_or_default().to_string()
    };
    let is_model = |m: &Value| {
        let r = role(m);
        MODEL_ROLES.contains(&r.as_str())
            || m.get("role").is_none() && m.get("type").is_some() && !r.ends_with("_output")
    };
    let is_result = |m: &Value| {
        let r = role(m);
        matches!(r.as_str(), "tool" | "function") || r.ends_with("_output") || only_results(m)
    };
    let mut end = messages.len();
    while end > 0 && is_result(&messages[end - 1]) {
        end -= 1;
    }
    let mut start = end;
    while start > 0 && is_model(&messages[start - 1]) {
        start -= 1;
    }
    let turn = Value::Array(messages[start..end].to_vec());
    in_document(&turn)
}

/// Whether message `m` holds tool results only (Anthropic's user message
/// of `tool_result` blocks, a GenAI user message of responses, Gemini's
/// user content of `functionResponse` parts, which have no `type`).
fn only_results(m: &Value) -> bool {
    let parts = m.get("parts").or_else(|| m.get("content"));
    let Some(Value::Array(parts)) = parts else {
        return false;
    };
    let w = words();
    !parts.is_empty()
        && parts.iter().all(|p| {
            let typed = p.get("type").and_then(Value::as_str);
            match typed {
                Some(t) => t.ends_with("result") || t.ends_with("response"),
                None => {
                    (w.function_responses.iter()).any(|k| p.get(k).is_some_and(Value::is_object))
                }
            }
        })
}

/// Every call the provider ran in document `v`, in document order, each
/// with its result where the document has it.
fn in_document(v: &Value) -> Vec<Ran> {
    let mut out = Vec::new();
    let mut answers = Answers::new();
    walk(v, 0, &mut out, &mut answers);
    for ran in &mut out {
        if ran.result.is_none() {
            let id = ran.id.as_deref();
            ran.result = answers
                .iter()
                .find(|(a, _)| Some(a.as_str()) == id)
                .map(|(_, r)| r.clone());
        }
    }
    out
}

fn walk(v: &Value, depth: usize, out: &mut Vec<Ran>, answers: &mut Answers) {
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        Value::Array(items) => {
            code_parts(items, out);
            for item in items {
                walk(item, depth + 1, out, answers);
            }
        }
        Value::Object(o) => {
            let w = words();
            let kind = o.get("type").and_then(Value::as_str).unwrap_or_default();
            if w.calls.iter().any(|t| t == kind) {
                out.extend(typed(o, kind));
                return;
            }
            if w.results.iter().any(|t| t == kind) {
                answers.extend(typed_result(o, kind));
                return;
            }
            if let Some(parts) = model_parts(o) {
                answered_here(parts, out);
            }
            for item in o.values() {
                walk(item, depth + 1, out, answers);
            }
        }
        // A request whose items are the JSON text of one message part
        // (OpenLLMetry's Responses input).
        Value::String(t) if t.starts_with('[') && words().any.is_in(t.as_bytes()) => {
            if let Ok(inner) = serde_json::from_str::<Value>(t) {
                walk(&inner, depth + 1, out, answers);
            }
        }
        _ => {}
    }
}

/// The parts of a model's message, when `o` is one.
fn model_parts(o: &Map<String, Value>) -> Option<&Vec<Value>> {
    let role = o.get("role").and_then(Value::as_str)?;
    if !MODEL_ROLES.contains(&role) {
        return None;
    }
    o.get("parts").or_else(|| o.get("content"))?.as_array()
}

/// A call item or block of a type the provider runs.
fn typed(o: &Map<String, Value>, kind: &str) -> Option<Ran> {
    let text = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
    // The GenAI part: `{"type": "server_tool_call", "name", "server_tool_call": {...}}`.
    let nested = o.get(kind).and_then(Value::as_object);
    // A block of a type only (a writer that kept nothing of the call) is
    // no record of one.
    let name = text("name")
        .or_else(|| {
            nested
                .and_then(|n| n.get("type"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .or_else(|| kind.strip_suffix("_call").map(str::to_string))?;
    if o.len() <= 1 {
        return None;
    }
    let args = match nested {
        Some(n) => n
            .get("input")
            .cloned()
            .unwrap_or_else(|| without(n, &["type", "caller"])),
        None => ["arguments", "input", "action"]
            .iter()
            .find_map(|k| o.get(*k))
            .map(decoded)
            .unwrap_or_else(|| without(o, BOOKKEEPING)),
    };
    let result = ["output", "outputs", "results", "result"]
        .iter()
        .find_map(|k| o.get(*k).filter(|r| !r.is_null()))
        .map(decoded);
    let failed = o
        .get("error")
        .filter(|e| !e.is_null())
        .map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_string));
    Some(Ran {
        id: text("id"),
        name,
        server: text("server_label").or_else(|| text("server_name")),
        args,
        result,
        failed,
    })
}

/// Fields of a call item that are not its arguments.
const BOOKKEEPING: &[&str] = &[
    "id",
    "type",
    "status",
    "output",
    "outputs",
    "results",
    "result",
    "error",
    "server_label",
    "server_name",
    "name",
    "caller",
];

/// `o` without `keys`.
fn without(o: &Map<String, Value>, keys: &[&str]) -> Value {
    let rest = o.iter().filter(|(k, _)| !keys.contains(&k.as_str()));
    Value::Object(rest.map(|(k, v)| (k.clone(), v.clone())).collect())
}

/// A result block: its call's id and its content.
fn typed_result(o: &Map<String, Value>, kind: &str) -> Option<(String, Value)> {
    let id = ["tool_use_id", "id", "call_id"]
        .iter()
        .find_map(|k| o.get(*k).and_then(Value::as_str))?;
    let body = o.get(kind).and_then(Value::as_object).unwrap_or(o);
    let content = ["content", "output", "result", "response"]
        .iter()
        .find_map(|k| body.get(*k))?;
    Some((id.to_string(), decoded(content)))
}

/// Calls of a model's message answered in that same message: a call part
/// (`tool_call`) whose id a result part of the message (`tool_call_response`)
/// carries, and that says it is the provider's: flagged (`builtin`, a
/// `server`) or under a server tool's id (`provider_call_id_prefixes`).
/// A framework that runs the tools inside one model step (the AI SDK's
/// steps) writes its own calls answered in the same message too.
fn answered_here(parts: &[Value], out: &mut Vec<Ran>) {
    let w = words();
    let flagged = |p: &Value, id: &str| {
        p.get("builtin").and_then(Value::as_bool) == Some(true)
            || p.get("server").is_some_and(Value::is_string)
            || w.prefixes.iter().any(|x| id.starts_with(x.as_str()))
    };
    let id = |p: &Value| p.get("id").and_then(Value::as_str).map(str::to_string);
    let typed = |p: &Value, t: &str| p.get("type").and_then(Value::as_str) == Some(t);
    for p in parts.iter().filter(|p| typed(p, "tool_call")) {
        let Some(name) = p.get("name").and_then(Value::as_str) else {
            continue;
        };
        // A part named after a hosted item's type is one (OTel contrib JS:
        // `web_search_call`), answered or not.
        let item = w.calls.iter().any(|c| c == name);
        let Some(call_id) = id(p).filter(|i| item || flagged(p, i)) else {
            continue;
        };
        let answer = parts
            .iter()
            .find(|r| typed(r, "tool_call_response") && id(r).as_deref() == Some(&call_id));
        if answer.is_none() && !item {
            continue;
        }
        let args = p.get("arguments").map(decoded).unwrap_or(Value::Null);
        let name = match item {
            true => called(&args).unwrap_or_else(|| name.strip_suffix("_call").unwrap_or(name)),
            false => name,
        };
        out.push(Ran {
            id: Some(call_id),
            name: name.to_string(),
            server: p.get("server").and_then(Value::as_str).map(str::to_string),
            args: call_text(name, args.clone()),
            result: ["response", "result", "content"]
                .iter()
                .find_map(|k| answer?.get(*k))
                .map(decoded),
            failed: None,
        });
    }
}

/// The tool a call's text names, `name({...})`.
fn called(args: &Value) -> Option<&str> {
    let (name, _) = args.as_str()?.trim().split_once('(')?;
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '-' || c == '.';
    (!name.is_empty() && name.chars().all(word)).then_some(name)
}

/// Gemini's code execution: a part `{"executableCode": {...}}` and the
/// part after it, `{"codeExecutionResult": {...}}`.
fn code_parts(items: &[Value], out: &mut Vec<Ran>) {
    let w = words();
    // Python SDK dumps write every part field, most of them `null`.
    let under = |p: &Value, keys: &[String]| {
        keys.iter()
            .find_map(|k| p.get(k.as_str()).filter(|v| v.is_object()))
            .cloned()
    };
    for (k, p) in items.iter().enumerate() {
        let Some(code) = under(p, w.code) else {
            continue;
        };
        let part = items.get(k + 1).and_then(|n| under(n, w.code_results));
        let (result, failed) = part.map_or((None, None), code_outcome);
        out.push(Ran {
            id: None,
            name: "code_execution".to_string(),
            server: None,
            args: code,
            result,
            failed,
        });
    }
}

/// A code execution result part `{"outcome", "output"}` -> the call's
/// result, its `output` (what the code printed, as a hosted item's result
/// is its output), and the outcome when it says the run failed
/// (`provider_code_failed_outcomes`). A part without an `output` is the
/// result whole: no field of it is the output then.
fn code_outcome(part: Value) -> (Option<Value>, Option<String>) {
    let w = words();
    let outcome = part.get("outcome").and_then(Value::as_str);
    // A Python dump may write the enum's name after its class's.
    let failed = outcome
        .filter(|o| {
            let name = o.rsplit('.').next().unwrap_or(o);
            w.code_failed.iter().any(|f| f == name)
        })
        .map(str::to_string);
    let result = match part {
        Value::Object(mut o) if o.get("output").is_some_and(|x| !x.is_null()) => o.remove("output"),
        // A failed run may write no output: nothing it printed.
        Value::Object(_) if failed.is_some() => None,
        other => Some(other),
    };
    (result, failed)
}

/// JSON text decoded (arguments and outputs are often written as text).
fn decoded(v: &Value) -> Value {
    match v {
        Value::String(t) => {
            let t = t.trim();
            if t.starts_with(['{', '[']) {
                serde_json::from_str(t).unwrap_or_else(|_| v.clone())
            } else {
                v.clone()
            }
        }
        other => other.clone(),
    }
}

/// Arguments written as the call's text, `name({...})` (OTel contrib's
/// hosted MCP call), as the object inside.
fn call_text(name: &str, args: Value) -> Value {
    let inner = args
        .as_str()
        .and_then(|t| t.trim().strip_prefix(name))
        .and_then(|t| t.strip_prefix('('))
        .and_then(|t| t.strip_suffix(')'))
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .filter(Value::is_object);
    inner.unwrap_or(args)
}

/// The call `ran` read on span `i`, as a row.
fn call(
    x: &Extractor,
    trace: &Trace,
    seen: &[Ctx],
    out: &Analysis,
    i: usize,
    ran: Ran,
    start: u64,
) -> ToolCall {
    let s = &trace.spans[i];
    let ctx = seen.get(i).copied().unwrap_or_default();
    let agent = super::agent_of(trace, out, ctx);
    let status = match ran.failed {
        Some(_) => CallStatus::Error,
        None => CallStatus::Ok,
    };
    ToolCall {
        name: ran.name,
        args: match ran.args {
            Value::Null => CallArgs::None,
            v => CallArgs::Value(v),
        },
        result: ran.result.filter(|_| x.results).map(CallResult::Value),
        status,
        error_message: ran.failed,
        error_type: None,
        span_id: s.span_id,
        start_time_unix_nano: start,
        depth: ctx.depth,
        agent,
        retriever: false,
        convention: CONVENTION.to_string(),
        from: Some(FROM_PROVIDER),
        span_name: None,
        mcp_server: ran.server,
        within: ctx.within.map(|w| trace.spans[w].span_id),
        end_time_unix_nano: start.max(s.span.end_time_unix_nano),
        call_id: ran.id,
    }
}

#[cfg(test)]
mod tests;
