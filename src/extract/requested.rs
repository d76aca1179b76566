//! Naming unnamed tool arguments from the model's requested calls
//! (docs/conventions.md, "Arguments without names").
//!
//! Some libraries record a call's arguments without parameter names:
//! LangChain (through OpenInference) gives a single-parameter tool's input as
//! the bare value (`Paris`); Langfuse and Traceloop record a Python call as
//! `{"args": [...], "kwargs": {...}}`, so positional arguments have no names.
//! The model step that asked for the call usually still has it, with names:
//! the *requested* call. For a tool call with a bare value or positional
//! arguments, the nearest earlier span that requested a call of the same tool
//! whose arguments are exactly the known keyword arguments plus one key per
//! positional value, each value matching exactly one key (`3` matches `"3"`),
//! gives the names. Nothing is invented: without such a request the arguments
//! stay as recorded (a bare value, or positional ones under `"args"`).
//!
//! Requested calls are read from every earlier span:
//! - OpenInference flattened messages:
//!   `llm.output_messages.{i}.message.tool_calls.{j}.tool_call.function.{name,arguments}`;
//! - any JSON attribute (`gen_ai.output.messages`, `ai.response.toolCalls`,
//!   Langfuse/MLflow/Traceloop outputs, ...), searched for call objects: items
//!   of a `tool_calls` list (OpenAI `{"function": {"name", "arguments"}}`,
//!   LangChain `{"name", "args"}`), parts typed `tool_call`/`tool_use`/
//!   `function_call` (OTel GenAI, Anthropic), Bedrock `toolUse`, Vercel
//!   `{"toolName", "input"}`. Arguments given as JSON strings are decoded
//!   (docs/conventions.md, "Values encoded twice").

use std::cell::OnceCell;
use std::sync::OnceLock;

use memchr::memmem::Finder;
use serde_json::{Map, Value};

use super::borrowed::Json;
use crate::assemble::{SpanRecord, Trace, Val};

const OI_PREFIX: &str = "llm.output_messages.";
/// The keys read here by name (projection at decode; JSON values are read
/// whatever their key).
pub(crate) const SPAN_KEY_PREFIX: &str = OI_PREFIX;
const OI_NAME: &str = ".tool_call.function.name";
const OI_ARGS: &str = ".tool_call.function.arguments";
const OI_ID: &str = ".tool_call.id";
/// Deep enough for LangChain's `generations[[{message: {kwargs: {tool_calls}}}]]`.
const MAX_DEPTH: usize = 10;

/// A call a model asked for: its call id when one was recorded, the tool's
/// name and its arguments (JSON strings decoded).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Asked {
    pub id: Option<String>,
    pub name: String,
    pub args: Value,
}

/// The requested calls of each span of a trace, each span's read once when
/// first needed: the search goes back from the call and usually stops at
/// the model step just before it, so most spans are never parsed.
#[derive(Debug)]
pub struct Requests<'t> {
    trace: &'t Trace,
    per_span: Vec<OnceCell<Vec<Asked>>>,
    /// The spans that requested any call, in order: built when a search
    /// must read every span anyway (`later_args`), so that each of many
    /// calls does not walk every span again (a chain of 50,000 id-less
    /// calls took time quadratic in its length).
    askers: OnceCell<Vec<usize>>,
}

impl<'t> Requests<'t> {
    pub fn new(trace: &'t Trace) -> Requests<'t> {
        Requests {
            trace,
            per_span: trace.spans.iter().map(|_| OnceCell::new()).collect(),
            askers: OnceCell::new(),
        }
    }

    fn of_span(&self, i: usize) -> &[Asked] {
        self.per_span[i].get_or_init(|| calls_of_span(&self.trace.spans[i]))
    }

    /// Named arguments for the call of `tool` at span `at` whose recorded
    /// arguments `args` are a bare value or hold positional `"args"`; or
    /// typed ones, when `args` are `stringified` and the request has the
    /// same keys with values whose text they are (`3` for `"3"`).
    pub fn name_args(&self, at: usize, tool: &str, args: &Value) -> Option<Value> {
        let (positional, known): (Vec<&Value>, Map<String, Value>) = match args {
            Value::Object(o) => match o.get("args") {
                Some(Value::Array(p)) if !p.is_empty() => {
                    let mut known = o.clone();
                    known.remove("args");
                    (p.iter().collect(), known)
                }
                _ if stringified(args) => return self.typed(at, tool, o),
                _ => return None,
            },
            Value::Null => return None,
            bare => (vec![bare], Map::new()),
        };
        // Nearest first: the model step that asked for this call.
        (0..at.min(self.per_span.len()))
            .rev()
            .flat_map(|i| self.of_span(i))
            .filter(|a| a.name == tool)
            .find_map(|a| match_request(&a.args, &positional, &known))
    }
}

impl Requests<'_> {
    /// The arguments of the nearest request of `tool` before span `at`.
    pub fn nearest(&self, at: usize, tool: &str) -> Option<&Value> {
        (0..at.min(self.per_span.len()))
            .rev()
            .flat_map(|i| self.of_span(i))
            .find(|a| a.name == tool)
            .map(|a| &a.args)
    }

    /// The arguments of call span `at` of `tool` that recorded none and no
    /// call id, from the first later span whose requests hold a call of
    /// `tool` that no span before `at` asked for (a later request's
    /// history repeats the call the span ran): taken only when there is
    /// exactly one such call there (Splunk's OpenAI Agents spans).
    pub fn later_args(&self, at: usize, tool: &str) -> Option<Value> {
        let askers = self.askers.get_or_init(|| {
            (0..self.per_span.len())
                .filter(|&i| !self.of_span(i).is_empty())
                .collect()
        });
        let split = askers.partition_point(|&i| i < at);
        let before: Vec<&Asked> = askers[..split]
            .iter()
            .flat_map(|&i| self.of_span(i))
            .filter(|a| a.name == tool)
            .collect();
        let fresh = |a: &&Asked| {
            !before.iter().any(|b| match (&a.id, &b.id) {
                (Some(x), Some(y)) => x == y,
                _ => a.args == b.args,
            })
        };
        for &i in askers[split..].iter().filter(|&&i| i > at) {
            let new: Vec<&Asked> = self
                .of_span(i)
                .iter()
                .filter(|a| a.name == tool)
                .filter(fresh)
                .collect();
            match new.as_slice() {
                [] => continue,
                [one] => return Some(one.args.clone()),
                _ => return None,
            }
        }
        None
    }

    /// The nearest earlier request of `tool` whose arguments have exactly
    /// the keys of `recorded`, each value the same or the one whose text
    /// the recorded string is (Netra records `{"hours": "3"}` for the
    /// model's `{"hours": 3}`).
    fn typed(&self, at: usize, tool: &str, recorded: &Map<String, Value>) -> Option<Value> {
        (0..at.min(self.per_span.len()))
            .rev()
            .flat_map(|i| self.of_span(i))
            .filter(|a| a.name == tool)
            .find(|a| {
                a.args.as_object().is_some_and(|r| {
                    r.len() == recorded.len()
                        && recorded
                            .iter()
                            .all(|(k, v)| r.get(k).is_some_and(|q| same_value(q, v)))
                })
            })
            .map(|a| a.args.clone())
    }
}

/// Arguments without parameter names (a bare value, or positional
/// `"args"`), or with values written as text ([`stringified`]).
pub(crate) fn unnamed(a: &Value) -> bool {
    match a {
        Value::Null => false,
        Value::Object(o) => {
            o.get("args")
                .is_some_and(|p| p.as_array().is_some_and(|p| !p.is_empty()))
                || stringified(a)
        }
        _ => true,
    }
}

/// Whether arguments `a` are an object with a value written as the text
/// of a number, boolean or null (`{"hours": "3"}`): an SDK that records
/// every value with `str()`. Only then is the model's request looked up.
pub(crate) fn stringified(a: &Value) -> bool {
    let Value::Object(o) = a else {
        return false;
    };
    o.values().any(|v| {
        v.as_str().is_some_and(|t| {
            let t = t.trim();
            t.len() <= 32
                && t.starts_with(|c: char| {
                    c.is_ascii_digit() || matches!(c, '-' | 't' | 'f' | 'n' | 'T' | 'F' | 'N')
                })
                && serde_json::from_str::<Value>(&t.to_ascii_lowercase())
                    .is_ok_and(|v| !v.is_string())
        })
    })
}

/// `req` when it is `known` plus exactly one key per positional value.
fn match_request(req: &Value, positional: &[&Value], known: &Map<String, Value>) -> Option<Value> {
    let r = req.as_object()?;
    if r.len() != known.len() + positional.len() {
        return None;
    }
    if !known.iter().all(|(k, v)| r.get(k) == Some(v)) {
        return None;
    }
    let rest: Vec<(&String, &Value)> = r.iter().filter(|(k, _)| !known.contains_key(*k)).collect();
    let mut used = vec![false; rest.len()];
    for p in positional {
        let mut hits = rest
            .iter()
            .enumerate()
            .filter(|(_, (_, v))| same_value(v, p));
        let (i, _) = hits.next()?;
        if hits.next().is_some() || used[i] {
            return None; // ambiguous: two parameters with this value
        }
        used[i] = true;
    }
    Some(req.clone())
}

/// The same JSON, or the same text (`3` recorded as `"3"`).
fn same_value(requested: &Value, recorded: &Value) -> bool {
    requested == recorded
        || match (requested, recorded) {
            (Value::String(_), _) => false,
            // Python writes booleans `True`/`False`.
            (r, Value::String(b)) => {
                serde_json::from_str::<Value>(&b.trim().to_ascii_lowercase()).is_ok_and(|v| v == *r)
            }
            _ => false,
        }
}

fn calls_of_span(s: &SpanRecord) -> Vec<Asked> {
    let mut out = Vec::new();
    for (key, value) in s.span.attributes() {
        let Some(text) = value.and_then(Val::as_str) else {
            continue;
        };
        if key.starts_with(OI_PREFIX) {
            if let Some(stem) = key.strip_suffix(OI_NAME) {
                let args_key = format!("{stem}{OI_ARGS}");
                if let Some(args) = s.attr_str(&args_key) {
                    out.push(Asked {
                        id: s.attr_str(&format!("{stem}{OI_ID}")).map(str::to_string),
                        name: text.to_string(),
                        args: json_or_string(args),
                    });
                }
            }
            continue;
        }
        let t = text.trim_start();
        if !(t.starts_with('{') || t.starts_with('[')) || !may_hold_call_objects(t) {
            continue;
        }
        if let Some(v) = Json::parse(t) {
            match Some(&v).filter(|v| bare_call(*v)).and_then(Tree::call) {
                Some(call) => out.push(call),
                None => walk(&v, None, 0, &mut out),
            }
        }
    }
    let flat = super::flat_asks::read(s).into_iter();
    out.extend(flat.map(|(id, name, args)| Asked { id, name, args }));
    // The output written in span events (Monocle's `data.output`).
    if out.is_empty() && !s.span.events.is_empty() {
        if let Some(v) = super::content_events::output(s) {
            walk(&v, None, 0, &mut out);
        }
    }
    out
}

/// Whether JSON text may hold a call [`walk`] or [`bare_call`] reads: each
/// shape names itself by one of these words, in a key or a `type` value.
/// Text with a `\u` escape is parsed whatever it holds (a key so written
/// may hide a word). Most JSON attributes (requests, tool outputs) hold no
/// call: a byte search spares their parse.
/// A word that only ends keys of empty lists (`"tool_calls": []`, as every
/// LangChain message has) names no call: such text is not parsed either.
fn may_hold_call_objects(text: &str) -> bool {
    /// `type` values and list keys (`tool_calls`, `function_call`), by
    /// their stems ([`Stem`]).
    static WORDS: OnceLock<[Stem; 2]> = OnceLock::new();
    static OTHERS: OnceLock<[Finder<'static>; 3]> = OnceLock::new();
    let words = WORDS.get_or_init(|| {
        [
            Stem::new("tool", &["_call", "_use", "Calls", "Use", "Request"]),
            Stem::new("function", &["_call", "Call"]),
        ]
    });
    let others = OTHERS.get_or_init(|| {
        [
            Finder::new(b"toolName"),
            // A bare legacy call.
            Finder::new(b"arguments"),
            Finder::new(b"\\u"),
        ]
    });
    let bytes = text.as_bytes();
    named(bytes, words) == Named::Otherwise || others.iter().any(|f| f.find(bytes).is_some())
}

/// Words of calls that start alike (`tool_call`, `toolUse`, ...: `tool`
/// and what follows it), so that one search of the text for the stem finds
/// every word's every place.
pub(crate) struct Stem {
    stem: Finder<'static>,
    rests: &'static [&'static str],
}

impl Stem {
    pub(crate) fn new(stem: &'static str, rests: &'static [&'static str]) -> Stem {
        Stem {
            stem: Finder::new(stem.as_bytes()),
            rests,
        }
    }
}

/// How text names a word of calls ([`named`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Named {
    Not,
    /// Only as the end of an object's key whose value is an empty list
    /// (`"tool_calls": []`, `"invalid_tool_calls": []`).
    EmptyLists,
    Otherwise,
}

/// How `text` names the words of `stems`. A call object is found by a
/// `type` value (never followed by `:`) or under a list's key: an empty
/// list holds none. An unescaped `"` right after the word closes a string,
/// which `:` makes a key; text that is no JSON fails its parse whatever it
/// holds.
pub(crate) fn named(text: &[u8], stems: &[Stem]) -> Named {
    let mut named = Named::Not;
    for s in stems {
        let len = s.stem.needle().len();
        for at in s.stem.find_iter(text) {
            let after = text.get(at + len..).unwrap_or_default();
            for rest in s.rests {
                let Some(tail) = after.strip_prefix(rest.as_bytes()) else {
                    continue;
                };
                if !empty_list_follows(tail) {
                    return Named::Otherwise;
                }
                named = Named::EmptyLists;
            }
        }
    }
    named
}

/// Whether `rest` starts as the rest of a key named with a word whose value
/// is an empty list: an optional plural `s`, then `"`, `:`, `[` and `]`,
/// with whitespace between.
fn empty_list_follows(rest: &[u8]) -> bool {
    let rest = rest.strip_prefix(b"s").unwrap_or(rest);
    let Some(mut rest) = rest.strip_prefix(b"\"") else {
        return false;
    };
    for want in [b':', b'[', b']'] {
        match rest.trim_ascii_start().split_first() {
            Some((b, tail)) if *b == want => rest = tail,
            _ => return false,
        }
    }
    true
}

/// A whole attribute that is one call in OpenAI's legacy `function_call`
/// form, `{"name", "arguments": "<JSON object>"}` and nothing else: Netra
/// writes the model's call so as the assistant message's `content`.
fn bare_call<T: Tree>(o: &T) -> bool {
    o.entries().is_some_and(|e| e.count() == 2)
        && o.field("name").and_then(T::text).is_some()
        && o.field("arguments")
            .and_then(T::text)
            .is_some_and(|a| a.trim_start().starts_with('{'))
}

fn json_or_string(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.to_string()))
}

/// Arguments recorded as a JSON string (encoded twice) are decoded.
fn decoded(v: &Value) -> Value {
    match v {
        Value::String(s) => json_or_string(s),
        other => other.clone(),
    }
}

/// The keys a call object's id is under (OpenAI and OTel GenAI, Vercel,
/// Bedrock, a tool message, Genkit).
const ID_KEYS: [&str; 5] = ["id", "toolCallId", "toolUseId", "tool_call_id", "ref"];

/// A call object's id, name and arguments, in any of the known shapes,
/// read in place on either tree: only the arguments are copied into a
/// `Value`.
fn call_in<T: Tree>(o: &T) -> Option<Asked> {
    // Not an object: no field, no name.
    let f = o.field("function").filter(|f| f.entries().is_some());
    let name = f
        .and_then(|f| f.field("name"))
        .or_else(|| o.field("name"))
        .or_else(|| o.field("toolName"))
        .and_then(T::text)?;
    let args = f
        .and_then(|f| f.field("arguments"))
        .or_else(|| o.field("arguments"))
        .or_else(|| o.field("args"))
        .or_else(|| o.field("input"))
        // Cohere v1: `{"name", "parameters"}`.
        .or_else(|| o.field("parameters"))?;
    Some(Asked {
        id: id_of(o),
        name: name.to_string(),
        args: args.decoded(),
    })
}

/// A call object's id: the `call_id` a result answers (a Responses API
/// `function_call` item has its own `id`, `fc_...`, beside it; an OTel
/// GenAI `tool_call` part keeps both), else the first of [`ID_KEYS`].
fn id_of<T: Tree>(o: &T) -> Option<String> {
    o.field("call_id")
        .and_then(T::text)
        .filter(|id| !id.is_empty())
        .or_else(|| ID_KEYS.iter().find_map(|k| o.field(k).and_then(T::text)))
        .filter(|id| !id.is_empty())
        .map(str::to_string)
}

/// A call typed as one (`"type": "tool_call"`) with its name and call id
/// and no arguments: a writer that drops empty values (Langtrace's dump of
/// LangChain's `tool_calls`) dropped `"args": {}`. Its arguments are
/// unknown (`null`), as a flattened call's without them (`conversation`'s
/// `with_arguments`).
fn argless<T: Tree>(o: &T) -> Option<Asked> {
    let name = o
        .field("name")
        .and_then(T::text)
        .filter(|n| !n.is_empty())?;
    Some(Asked {
        id: Some(id_of(o)?),
        name: name.to_string(),
        args: Value::Null,
    })
}

/// What [`walk`] reads of a JSON tree: a `serde_json::Value`, or a tree
/// borrowing from its text ([`Json`]: a model output read only for its
/// calls need not be copied into a `Value`).
pub(crate) trait Tree: Sized {
    /// An array's items.
    fn items(&self) -> Option<&[Self]>;
    /// An object's entries, in `serde_json::Map`'s order.
    fn entries(&self) -> Option<impl Iterator<Item = (&str, &Self)>>;
    /// An object's value under `key`.
    fn field(&self, key: &str) -> Option<&Self>;
    fn text(&self) -> Option<&str>;
    fn is_container(&self) -> bool;
    /// As a `Value`, a string holding JSON decoded.
    fn decoded(&self) -> Value;
    fn is_null(&self) -> bool;
    /// The compact JSON text `serde_json` writes of the value.
    fn compact(&self) -> String;

    /// The call this object is, in any of the known shapes.
    fn call(&self) -> Option<Asked> {
        call_in(self)
    }
}

impl Tree for Value {
    fn items(&self) -> Option<&[Value]> {
        self.as_array().map(Vec::as_slice)
    }

    fn entries(&self) -> Option<impl Iterator<Item = (&str, &Value)>> {
        self.as_object()
            .map(|o| o.iter().map(|(k, v)| (k.as_str(), v)))
    }

    fn field(&self, key: &str) -> Option<&Value> {
        self.get(key)
    }

    fn text(&self) -> Option<&str> {
        self.as_str()
    }

    fn is_container(&self) -> bool {
        matches!(self, Value::Array(_) | Value::Object(_))
    }

    fn decoded(&self) -> Value {
        decoded(self)
    }

    fn is_null(&self) -> bool {
        Value::is_null(self)
    }

    fn compact(&self) -> String {
        self.to_string()
    }
}

impl Tree for Json<'_> {
    fn items(&self) -> Option<&[Self]> {
        match self {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }

    fn entries(&self) -> Option<impl Iterator<Item = (&str, &Self)>> {
        match self {
            Json::Object(o) => Some(o.iter().map(|(k, v)| (k.as_ref(), v))),
            _ => None,
        }
    }

    fn field(&self, key: &str) -> Option<&Self> {
        self.get(key)
    }

    fn text(&self) -> Option<&str> {
        self.as_str()
    }

    fn is_container(&self) -> bool {
        matches!(self, Json::Array(_) | Json::Object(_))
    }

    fn decoded(&self) -> Value {
        match self {
            Json::Str(s) => json_or_string(s),
            other => other.to_value(),
        }
    }

    fn is_null(&self) -> bool {
        matches!(self, Json::Scalar(Value::Null))
    }

    fn compact(&self) -> String {
        self.to_value().to_string()
    }
}

/// Every call object in `v` (found under `parent_key`), in document order.
pub(crate) fn walk<T: Tree>(v: &T, parent_key: Option<&str>, depth: usize, out: &mut Vec<Asked>) {
    if depth > MAX_DEPTH {
        return;
    }
    if let Some(items) = v.items() {
        let from = out.len();
        for x in items {
            walk(x, parent_key, depth + 1, out);
        }
        // A streamed call's arguments in pieces after its start block.
        if let Some(found) = out.get_mut(from..).filter(|f| !f.is_empty()) {
            fill_streamed(items, found);
        }
        return;
    }
    let Some(entries) = v.entries() else {
        return;
    };
    let typed = v
        .field("type")
        .and_then(T::text)
        .is_some_and(|t| matches!(t, "tool_call" | "tool_use" | "function_call"));
    // `function_call`: Gemini's part as Python's SDK (and Google
    // ADK's GenAI messages) dump it, `{"function_call": {"id",
    // "name", "args"}}`, and OpenAI's older API's call (no id).
    let listed = matches!(
        parent_key,
        Some(
            "tool_calls"
                | "toolCalls"
                | "toolUse"
                | "toolRequest"
                | "functionCall"
                | "function_call"
        )
    );
    if typed || listed || v.field("toolName").is_some() {
        if let Some(call) = v.call().or_else(|| typed.then(|| argless(v)).flatten()) {
            out.push(call);
        }
    }
    for (k, x) in entries {
        // A response's history (Cohere v1) repeats earlier calls.
        if k == "chat_history" {
            continue;
        }
        if x.is_container() {
            walk(x, Some(k), depth + 1, out);
        } else if let Some(s) = x.text() {
            // Nested JSON text (Vercel `ai.response.toolCalls`,
            // LangChain `content`): one more level.
            if k == "toolCalls" && s.trim_start().starts_with('[') {
                if let Some(inner) = Json::parse(s) {
                    walk(&inner, Some(k), depth + 1, out);
                }
            }
        }
    }
}

// Streamed call blocks: a model's call as a streamed response's blocks record it
// (docs/conventions.md, "Streamed call blocks"): LangChain.js keeps an
// Anthropic stream's chunks in a message's `content`, a `tool_use` start
// block (`{"index": 0, "type": "tool_use", "id", "name", "input": ""}`)
// and then the arguments' JSON in pieces, each a block `{"index": 0,
// "type": "input_json_delta", "input": "..."}` (Anthropic's own stream
// events name the piece `partial_json`). The start block's empty `input`
// is no argument: the pieces of its index, joined in order, are.

/// The type of a block holding a piece of a streamed call's arguments.
const PIECE_TYPE: &str = "input_json_delta";

/// The keys a piece's text is under (LangChain's, Anthropic's).
const PIECE_KEYS: [&str; 2] = ["input", "partial_json"];

/// Gives each call of `found` (the calls [`walk`] read
/// from `items`, a list of blocks) that a `tool_use` start block with an
/// empty `input` asked, the arguments the pieces of its index hold.
fn fill_streamed<T: Tree>(items: &[T], found: &mut [Asked]) {
    // The cheap test first: most lists hold no call with empty arguments.
    if !found.iter().any(is_blank) {
        return;
    }
    for block in items.iter().filter(|b| is_start(*b)) {
        let Some(id) = block.field("id").and_then(T::text) else {
            continue;
        };
        let Some(index) = block.field("index").map(T::compact) else {
            continue;
        };
        let Some(args) = joined(items, &index) else {
            continue;
        };
        if let Some(call) = found
            .iter_mut()
            .find(|c| is_blank(c) && c.id.as_deref() == Some(id))
        {
            call.args = args;
        }
    }
}

/// Whether a call's arguments are the empty text a start block holds.
fn is_blank(c: &Asked) -> bool {
    c.args.as_str() == Some("")
}

/// Whether `b` is a `tool_use` block whose `input` is the empty text.
fn is_start<T: Tree>(b: &T) -> bool {
    b.field("type").and_then(T::text) == Some("tool_use")
        && b.field("input").and_then(T::text) == Some("")
}

/// The arguments the pieces of block index `index` (compact JSON) hold,
/// joined in order and decoded; none when there is no piece or the joined
/// text is no JSON object (a stream cut short keeps the empty text).
fn joined<T: Tree>(items: &[T], index: &str) -> Option<Value> {
    let mut text = String::new();
    let mut any = false;
    for b in items {
        if b.field("type").and_then(T::text) != Some(PIECE_TYPE)
            || b.field("index").map(T::compact).as_deref() != Some(index)
        {
            continue;
        }
        let piece = PIECE_KEYS
            .iter()
            .find_map(|k| b.field(k).and_then(T::text))?;
        text.push_str(piece);
        any = true;
    }
    let v: Value = serde_json::from_str(text.trim()).ok().filter(|_| any)?;
    v.is_object().then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Lists of calls that are all empty are not parsed; a call anywhere
    /// else, or a word that may hide in an escape, still is.
    #[test]
    fn text_naming_only_empty_lists_of_calls_is_not_parsed() {
        for t in [
            r#"{"tool_calls": [], "invalid_tool_calls": [ ]}"#,
            r#"{"functionCalls" :[]}"#,
        ] {
            assert!(!may_hold_call_objects(t), "{t}");
        }
        for t in [
            r#"{"tool_calls": [], "x": {"tool_calls": [{"function": {"name": "f"}}]}}"#,
            r#"{"tool_calls": [], "type": "tool_use"}"#,
            r#"{"tool_calls": [], "toolName": "f"}"#,
            r#"{"tool_calls": [], "name": "f", "arguments": "{}"}"#,
            r#"{"tool_calls": [], "tool\u005fuse": {}}"#,
            r#"{"tool_calls": "[]"}"#,
        ] {
            assert!(may_hold_call_objects(t), "{t}");
        }
    }

    fn calls(v: Value) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        walk(&v, None, 0, &mut out);
        out.into_iter().map(|a| (a.name, a.args)).collect()
    }

    /// A call typed `tool_call` with a name and an id and no arguments
    /// (Langtrace drops LangChain's empty `args`) is a call of unknown
    /// arguments; without an id or a type it is none.
    #[test]
    fn a_typed_call_without_arguments_is_a_call_of_unknown_arguments() {
        let ai = json!({"type": "ai", "tool_calls": [
            {"name": "crossings_today", "id": "call_1", "type": "tool_call"},
            {"name": "car_deck", "args": {"departure": "09:45"}, "id": "call_2", "type": "tool_call"}
        ]});
        assert_eq!(
            calls(ai),
            [
                ("crossings_today".to_string(), Value::Null),
                ("car_deck".to_string(), json!({"departure": "09:45"}))
            ]
        );
        for none in [
            json!({"name": "crossings_today", "type": "tool_call"}),
            json!({"name": "crossings_today", "id": "call_1", "type": "text"}),
            json!({"name": "", "id": "call_1", "type": "tool_call"}),
        ] {
            assert!(calls(none.clone()).is_empty(), "{none}");
        }
    }

    #[test]
    fn positional_and_bare_values_are_named_only_unambiguously() {
        let m = Map::new();
        assert_eq!(
            match_request(&json!({"city": "Paris"}), &[&json!("Paris")], &m),
            Some(json!({"city": "Paris"}))
        );
        assert_eq!(
            match_request(&json!({"n": 3}), &[&json!("3")], &m),
            Some(json!({"n": 3}))
        );
        assert_eq!(
            match_request(&json!({"city": "Rome"}), &[&json!("Paris")], &m),
            None
        );
        let req = json!({"amount": 100, "src": "EUR", "dst": "USD"});
        assert_eq!(
            match_request(&req, &[&json!(100), &json!("EUR"), &json!("USD")], &m),
            Some(req.clone())
        );
        let mut known = Map::new();
        known.insert("dst".into(), json!("USD"));
        assert_eq!(
            match_request(&req, &[&json!("EUR"), &json!(100)], &known),
            Some(req.clone())
        );
        // Two parameters with the same value: which is which is unknown.
        let same = json!({"a": "x", "b": "x"});
        assert_eq!(match_request(&same, &[&json!("x"), &json!("x")], &m), None);
    }

    #[test]
    fn finds_calls_in_every_known_shape() {
        let openai = json!({"choices": [{"message": {"tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "a", "arguments": "{\"x\": 1}"}}]}}]});
        assert_eq!(calls(openai), vec![("a".to_string(), json!({"x": 1}))]);
        let genai = json!([{"role": "assistant", "parts": [
            {"type": "tool_call", "id": "1", "name": "b", "arguments": {"y": 2}}]}]);
        assert_eq!(calls(genai), vec![("b".to_string(), json!({"y": 2}))]);
        let vercel = json!([{"toolCallId": "c", "toolName": "c", "input": "{\"z\": 3}"}]);
        assert_eq!(calls(vercel), vec![("c".to_string(), json!({"z": 3}))]);
        let bedrock =
            json!({"content": [{"toolUse": {"toolUseId": "t", "name": "d", "input": {"w": 4}}}]});
        assert_eq!(calls(bedrock), vec![("d".to_string(), json!({"w": 4}))]);
        let gemini_py = json!([{"role": "model", "parts": [
            {"function_call": {"id": "g1", "args": {"v": 5}, "name": "e"}}]}]);
        assert_eq!(calls(gemini_py), vec![("e".to_string(), json!({"v": 5}))]);
        assert!(calls(json!({"name": "not a call", "args": []})).is_empty());
    }

    // Streamed call blocks.
    fn asked(v: serde_json::Value) -> Vec<(Option<String>, serde_json::Value)> {
        let mut out = Vec::new();
        walk(&v, None, 0, &mut out);
        out.into_iter().map(|a| (a.id, a.args)).collect()
    }

    #[test]
    fn a_start_block_takes_the_pieces_of_its_index() {
        let content = json!({"content": [
            {"index": 0, "type": "tool_use", "id": "t-1", "name": "rent_bike", "input": ""},
            {"index": 0, "type": "input_json_delta", "input": "{\"town\":"},
            {"index": 1, "type": "tool_use", "id": "t-2", "name": "rent_bike", "input": ""},
            {"index": 0, "type": "input_json_delta", "input": "\"Oslo\"}"},
            {"index": 1, "type": "input_json_delta", "partial_json": "{\"town\":\"Bergen\"}"},
        ]});
        assert_eq!(
            asked(content),
            vec![
                (Some("t-1".into()), json!({"town": "Oslo"})),
                (Some("t-2".into()), json!({"town": "Bergen"})),
            ]
        );
    }

    /// Near misses: no piece, pieces that are no JSON object, a start
    /// block with arguments of its own: the block's `input` stays.
    #[test]
    fn without_whole_pieces_the_start_block_s_input_stays() {
        let cut = json!([
            {"index": 0, "type": "tool_use", "id": "t-1", "name": "rent_bike", "input": ""},
            {"index": 0, "type": "input_json_delta", "input": "{\"town\":"},
        ]);
        assert_eq!(asked(cut), vec![(Some("t-1".into()), json!(""))]);
        let none = json!([
            {"index": 0, "type": "tool_use", "id": "t-1", "name": "rent_bike", "input": ""},
            {"index": 1, "type": "input_json_delta", "input": "{\"town\":\"Oslo\"}"},
        ]);
        assert_eq!(asked(none), vec![(Some("t-1".into()), json!(""))]);
        let own = json!([
            {"index": 0, "type": "tool_use", "id": "t-1", "name": "rent_bike", "input": {"town": "Rome"}},
            {"index": 0, "type": "input_json_delta", "input": "{\"town\":\"Oslo\"}"},
        ]);
        assert_eq!(
            asked(own),
            vec![(Some("t-1".into()), json!({"town": "Rome"}))]
        );
    }
}
