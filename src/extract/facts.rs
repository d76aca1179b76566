//! What a trace says beyond its tool calls, for metrics that read it
//! (`Needs::trace_facts`): computed once per trace, only when asked for.
//!
//! The user request and the tools the agent had are read from the attribute
//! keys listed below (docs/conventions.md, "What the judge sees"): a new
//! framework's key is one more entry.

use std::cell::OnceCell;
use std::rc::Rc;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::assemble::{SpanRecord, Trace, Val};
use crate::extract::any_to_json;
use crate::extract::borrowed::Json;
use crate::extract::requested::Tree;
use crate::ingest::Span;

/// Attributes holding the user's request, most specific first. Looked up on
/// the root span, then on every span in start order.
const REQUEST_KEYS: &[&str] = &[
    "input.value",
    "gen_ai.input.messages",
    "mlflow.spanInputs",
    "gen_ai.prompt",
    "llm.input_messages",
    "traceloop.entity.input",
    "langfuse.observation.input",
    "pydantic_ai.all_messages",
];

/// Span events whose `content` attribute is the user's message.
const REQUEST_EVENTS: &[&str] = &["gen_ai.user.message"];

/// The event attributes read here (the user's message).
pub(crate) const EVENT_KEYS: &[&str] = &["content"];

/// Attributes holding the tools an LLM was offered: a JSON list of tool
/// definitions (OpenAI `{"type": "function", "function": {...}}`, flat
/// `{"name", "description", "parameters"}`) or of names; Langtrace writes
/// `gen_ai.request.tools` as a list of one JSON text of the request's list.
pub(crate) const TOOL_KEYS: &[&str] = &[
    "gen_ai.tool.definitions",
    "mlflow.chat.tools",
    "llm.tools",
    "gen_ai.agent.tools",
    "agent.tools",
    "gen_ai.request.tools",
];

/// OpenInference flattens its tool list: `llm.tools.<i>.tool.json_schema`.
const TOOL_KEY_PREFIX: (&str, &str) = ("llm.tools.", ".tool.json_schema");

/// The span attributes read here, and the prefix of the flattened tool
/// lists (projection at decode).
pub(crate) const SPAN_KEYS: [&[&str]; 4] = [REQUEST_KEYS, TOOL_KEYS, INPUT_KEYS, OUTPUT_KEYS];
pub(crate) const SPAN_KEY_PREFIX: &str = TOOL_KEY_PREFIX.0;

/// A request longer than this is cut (a judge prompt should stay small).
const MAX_REQUEST_CHARS: usize = 4000;

/// A tool the agent could call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDef {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
}

/// Facts about one trace (or, summed, the traces of a session).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceFacts {
    /// Spans in the trace(s).
    pub spans: usize,
    /// Earliest span start and latest span end, in Unix nanoseconds.
    pub start_unix_nano: u64,
    pub end_unix_nano: u64,
    /// The user's request, one per trace (a session's turns in order).
    pub requests: Vec<String>,
    /// The request as the judge is shown it, one per trace
    /// ([`judge_input_of`]); filled only when a metric asks a judge.
    pub inputs: Vec<Value>,
    /// The tools offered to the agent's LLM, by name, first definition kept.
    pub tools: Vec<ToolDef>,
    /// Tokens the trace's LLM spans report (`None`: no span carries a
    /// count); see [`token_usage`].
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// Agent runs (start, name) by start time, when the driver extracted
    /// them (`Evaluator::evaluate_trace_with_runs`).
    pub runs: Vec<(u64, String)>,
}

impl TraceFacts {
    /// The facts of one trace.
    pub fn of(trace: &Trace) -> TraceFacts {
        let end = trace
            .spans
            .iter()
            .map(|s| s.span.end_time_unix_nano)
            .max()
            .unwrap_or(0);
        let (input_tokens, output_tokens) = token_usage(trace);
        TraceFacts {
            spans: trace.spans.len(),
            start_unix_nano: trace.start_time(),
            end_unix_nano: end,
            requests: request_of(trace).into_iter().collect(),
            inputs: Vec::new(),
            tools: tools_of(trace),
            input_tokens,
            output_tokens,
            runs: Vec::new(),
        }
    }

    /// Wall time from the first span's start to the last span's end.
    pub fn duration_nanos(&self) -> u64 {
        self.end_unix_nano.saturating_sub(self.start_unix_nano)
    }

    /// The facts of several traces taken together (a session).
    pub fn merge(&mut self, other: &TraceFacts) {
        if self.spans == 0 {
            *self = other.clone();
            return;
        }
        self.spans += other.spans;
        self.start_unix_nano = self.start_unix_nano.min(other.start_unix_nano);
        self.end_unix_nano = self.end_unix_nano.max(other.end_unix_nano);
        self.requests.extend(other.requests.iter().cloned());
        self.inputs.extend(other.inputs.iter().cloned());
        for t in &other.tools {
            if !self.tools.iter().any(|x| x.name == t.name) {
                self.tools.push(t.clone());
            }
        }
        self.input_tokens = add_opt(self.input_tokens, other.input_tokens);
        self.output_tokens = add_opt(self.output_tokens, other.output_tokens);
        self.runs.extend(other.runs.iter().cloned());
        self.runs.sort();
    }

    /// Input plus output tokens, when any span reported either.
    pub fn total_tokens(&self) -> Option<u64> {
        match (self.input_tokens, self.output_tokens) {
            (None, None) => None,
            (i, o) => Some(i.unwrap_or(0) + o.unwrap_or(0)),
        }
    }
}

fn add_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
    }
}

/// Token count keys, most current spelling first; a span counts the first
/// one it carries (strands writes both spellings on one span).
const INPUT_KEYS: &[&str] = &[
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "llm.token_count.prompt",
];
const OUTPUT_KEYS: &[&str] = &[
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
];

/// Input and output tokens summed over the spans that report them.
/// Frameworks also repeat the totals on the agent (and loop) spans above
/// the LLM calls, so only spans with no reporting descendant are counted
/// (docs/conventions.md, token usage).
pub fn token_usage(trace: &Trace) -> (Option<u64>, Option<u64>) {
    let n = trace.spans.len();
    let counts: Vec<(Option<u64>, Option<u64>)> =
        trace.spans.iter().map(|s| span_tokens(&s.span)).collect();
    if counts.iter().all(|c| *c == (None, None)) {
        return (None, None);
    }
    // Mark the ancestors of every reporting span: they hold totals.
    let mut above = vec![false; n];
    for (i, c) in counts.iter().enumerate() {
        if *c != (None, None) {
            for a in trace.ancestors(i) {
                if above[a] {
                    break;
                }
                above[a] = true;
            }
        }
    }
    let (mut input, mut output) = (None, None);
    for (i, (ci, co)) in counts.into_iter().enumerate() {
        if !above[i] {
            input = add_opt(input, ci);
            output = add_opt(output, co);
        }
    }
    (input, output)
}

/// One span's (input, output) tokens: one pass over its attributes, the
/// first spelling in key order winning.
fn span_tokens(span: &Span) -> (Option<u64>, Option<u64>) {
    // (rank, count) of the best spelling seen so far.
    let mut input: Option<(usize, u64)> = None;
    let mut output: Option<(usize, u64)> = None;
    for (k, v) in span.attributes() {
        if !(k.starts_with("gen_ai.usage.") || k.starts_with("llm.token_count.")) {
            continue;
        }
        let Some(count) = v.and_then(any_count) else {
            continue;
        };
        for (keys, best) in [(INPUT_KEYS, &mut input), (OUTPUT_KEYS, &mut output)] {
            if let Some(rank) = keys.iter().position(|x| *x == k) {
                if best.is_none_or(|(r, _)| rank < r) {
                    *best = Some((rank, count));
                }
            }
        }
    }
    (input.map(|b| b.1), output.map(|b| b.1))
}

/// A token count: a non-negative integer, or its text.
fn any_count(v: Val<'_>) -> Option<u64> {
    match v {
        Val::Int(i) => u64::try_from(i).ok(),
        Val::Double(d) if d >= 0.0 && d.fract() == 0.0 => Some(d as u64),
        Val::Str(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// The user's request, shortened for reports.
pub fn request_of(trace: &Trace) -> Option<String> {
    request_text_of(trace).map(cut)
}

/// The request as a judge is shown it: the root span's input (the span
/// [`request_text_of`] reads) in full, i.e. the whole conversation up to
/// this turn's request, its messages as recorded, when that is more than
/// one message; else the request's text. [`TraceFacts::requests`] is the
/// first user message only, which misreads a conversation's later turn.
pub fn judge_input_of(trace: &Trace) -> Option<Value> {
    let spans = trace
        .roots()
        .map(|i| &trace.spans[i])
        .chain(trace.spans.iter());
    for s in spans {
        for k in REQUEST_KEYS {
            let Some(attr) = s.attr(k) else {
                continue;
            };
            let value = match attr {
                Val::Str(text) => {
                    let t = text.trim();
                    let json = (t.starts_with('[') || t.starts_with('{'))
                        .then(|| serde_json::from_str::<Value>(t).ok())
                        .flatten();
                    json.unwrap_or_else(|| Value::String(t.to_string()))
                }
                other => any_to_json(other),
            };
            // The same attribute as the request's text: the first with text.
            let Some(text) = text_in(&value, false) else {
                continue;
            };
            return Some(match conversation(&value) {
                Some(messages) if messages.len() > 1 => Value::Array(messages),
                _ => Value::String(text),
            });
        }
    }
    request_text_of(trace).map(Value::String)
}

/// The conversation of an input (a list of messages, or an inputs
/// object's `messages`) up to its last user message with text: what the
/// agent was asked. Frameworks that record the conversation at the end of
/// the run (pydantic-ai's `all_messages`) also hold the agent's own work
/// after it: its calls, their results, its answer.
fn conversation(v: &Value) -> Option<Vec<Value>> {
    let list = match v {
        Value::Object(o) => o.get("messages")?.as_array()?,
        Value::Array(a) => a,
        _ => return None,
    };
    let asked = list.iter().rposition(|m| {
        m.get("role").and_then(Value::as_str) == Some("user") && message_text(m).is_some()
    })?;
    Some(list[..=asked].to_vec())
}

/// The user's request in full: the root span's first request attribute, else
/// the earliest span carrying one, else a user-message event. Expectations in
/// other tools' formats join traces on it (docs/formats.md).
pub fn request_text_of(trace: &Trace) -> Option<String> {
    request_in(trace, false)
}

/// This turn's words: [`request_text_of`], except that of a message list
/// (a conversation's history followed by the new turn) the *last* user
/// message with text is taken. Expectations in other tools' formats join
/// traces on it (docs/formats.md).
pub fn turn_text_of(trace: &Trace) -> Option<String> {
    request_in(trace, true)
}

fn request_in(trace: &Trace, last: bool) -> Option<String> {
    let order = || {
        trace
            .roots()
            .map(|i| &trace.spans[i])
            .chain(trace.spans.iter())
    };
    let from_attr = order().find_map(|s| request_attr(s, last));
    let text = from_attr.or_else(|| {
        order().find_map(|s| {
            s.span
                .events
                .iter()
                .filter(|e| REQUEST_EVENTS.contains(&e.name.as_str()))
                .find_map(|e| {
                    crate::assemble::find_attr(&e.attributes, EVENT_KEYS[0])
                        .and_then(|v| text_in_attr(v, last))
                })
        })
    })?;
    Some(text)
}

/// The first user message (else the first message with text) of the
/// request recorded on span `s`: what opened its conversation
/// (`conversation::continues`).
pub(crate) fn opening_of(s: &SpanRecord) -> Option<String> {
    request_attr(s, false)
}

/// The request text of span `s` under the first of [`REQUEST_KEYS`] (most
/// specific first) that holds one, each key's first attribute read: one
/// pass over the span's keys rather than a lookup per key (every span of
/// a trace without a request is asked).
fn request_attr(s: &SpanRecord, last: bool) -> Option<String> {
    let mut first: [Option<usize>; REQUEST_KEYS.len()] = [None; REQUEST_KEYS.len()];
    let mut any = false;
    for (i, key) in s.span.attr_keys().enumerate() {
        if let Some(j) = REQUEST_KEYS.iter().position(|k| k.as_bytes() == key) {
            first[j].get_or_insert(i);
            any = true;
        }
    }
    if !any {
        return None;
    }
    first
        .into_iter()
        .flatten()
        .find_map(|i| s.span.attr_value(i).and_then(|v| text_in_attr(v, last)))
}

/// This turn's words in an attribute value (see [`turn_text_of`]).
pub(crate) fn turn_text(v: &Value) -> Option<String> {
    text_in(v, true)
}

/// The user's words in an attribute value: a string (JSON text is decoded),
/// the first (with `last`, the last) user message with text of a message
/// list, a message's text parts, or an inputs object's
/// `messages`/`input`/`query`/`question`; else the value as compact JSON.
/// On a `Value` or on JSON text parsed in place ([`Json`]: most of a
/// conversation is never read, so its strings are not copied).
fn text_in<T: Tree>(v: &T, last: bool) -> Option<String> {
    if let Some(s) = v.text() {
        return text_in_str(s, last);
    }
    if let Some(items) = v.items() {
        let is_msg = |m: &T| m.field("role").is_some() || m.field("parts").is_some();
        if items.iter().any(is_msg) {
            let mut users = items
                .iter()
                .filter(|m| m.field("role").and_then(T::text) == Some("user"));
            let user = if last {
                users.rev().find_map(message_text)
            } else {
                users.find_map(message_text)
            };
            return user.or_else(|| items.iter().find_map(message_text));
        }
        // Content parts (`[{"text": ...}]`) or plain strings.
        let parts: Vec<String> = items.iter().filter_map(part_text).collect();
        if parts.is_empty() {
            return Some(v.compact());
        }
        return Some(parts.join("\n"));
    }
    if v.entries().is_some() {
        for k in [
            "messages", "input", "query", "question", "prompt", "request",
        ] {
            if let Some(t) = v.field(k).and_then(|x| text_in(x, last)) {
                return Some(t);
            }
        }
        if v.field("role").is_some() {
            return message_text(v);
        }
        return Some(v.compact());
    }
    if v.is_null() {
        return None;
    }
    Some(v.compact())
}

/// [`text_in`] of an attribute value; a string is not copied first.
fn text_in_attr(v: Val<'_>, last: bool) -> Option<String> {
    match v {
        Val::Str(s) => text_in_str(s, last),
        _ => text_in(&any_to_json(v), last),
    }
}

/// [`text_in`] of a string: JSON text is decoded.
fn text_in_str(s: &str, last: bool) -> Option<String> {
    let t = s.trim();
    if t.is_empty() {
        return None;
    }
    if t.starts_with('{') || t.starts_with('[') {
        // Of a list of messages the first user message with text is the
        // answer ([`text_in`]): the history after it is read through, not
        // kept (most of a later turn's bytes).
        let opening = |m: &Json<'_>| {
            m.field("role").and_then(Tree::text) == Some("user") && message_text(m).is_some()
        };
        let inner = match last {
            true => Json::parse(t),
            false => Json::parse_until(t, &opening),
        };
        if let Some(inner) = inner {
            return text_in(&inner, last);
        }
    }
    Some(t.to_string())
}

/// A chat message's text: `content` as a string or a list of parts, or
/// OpenTelemetry GenAI `parts`.
fn message_text<T: Tree>(m: &T) -> Option<String> {
    let content = m.field("content").or_else(|| m.field("parts"))?;
    if let Some(s) = content.text() {
        let s = s.trim();
        return (!s.is_empty()).then(|| s.to_string());
    }
    let parts = content.items()?;
    let texts: Vec<String> = parts.iter().filter_map(part_text).collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

fn part_text<T: Tree>(p: &T) -> Option<String> {
    if let Some(s) = p.text() {
        return Some(s.to_string());
    }
    // An object's (`field` finds nothing in anything else).
    ["content", "text"]
        .iter()
        .find_map(|k| p.field(k).and_then(T::text))
        .map(str::to_string)
}

fn cut(s: String) -> String {
    match s.char_indices().nth(MAX_REQUEST_CHARS) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s,
    }
}

/// The tools offered in a trace ([`TraceFacts::tools`]), without the
/// other facts.
pub fn tools_of(trace: &Trace) -> Vec<ToolDef> {
    offered_tools(trace).iter().cloned().collect()
}

/// The tools offered in a trace, by name, first definition kept, each
/// borrowed from the list it was read in (most from the per-thread cache
/// of parsed lists): what an inspect row shows, with no definition (and
/// its parameters' schema) copied for it. Written as a JSON list of
/// [`ToolDef`]s, from their remembered JSON text: a serializer other than
/// serde_json's takes [`OfferedTools::iter`]'s definitions instead.
#[derive(Debug, Default)]
pub struct OfferedTools {
    lists: Vec<Rc<ToolList>>,
    /// (list, definition) of each tool, in order.
    picked: Vec<(usize, usize)>,
}

impl OfferedTools {
    pub fn iter(&self) -> impl Iterator<Item = &ToolDef> + '_ {
        self.picked.iter().map(|&(l, d)| &self.lists[l].defs[d])
    }

    pub fn is_empty(&self) -> bool {
        self.picked.is_empty()
    }

    /// Adds list `defs`' tools whose names are not there yet.
    fn add(&mut self, defs: Rc<ToolList>) {
        let (l, before) = (self.lists.len(), self.picked.len());
        self.lists.push(defs);
        for d in 0..self.lists[l].defs.len() {
            let name = &self.lists[l].defs[d].name;
            if !self.iter().any(|x| x.name == *name) {
                self.picked.push((l, d));
            }
        }
        if self.picked.len() == before {
            self.lists.pop();
        }
    }
}

impl Serialize for OfferedTools {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.picked.iter().map(|&(l, d)| Written(&self.lists[l], d)))
    }
}

/// The tool definitions read from one attribute, and each one's JSON text
/// once it is first written: an agent offers the same list on every model
/// call, the parsed list is shared (`cached_tool_defs`), and writing each
/// definition's schema again for every inspect row was a visible part of
/// the row's cost.
#[derive(Debug, Default)]
struct ToolList {
    defs: Box<[ToolDef]>,
    /// `None` if a definition could not be written (it is then written
    /// each time, as it would have been).
    json: OnceCell<Option<Box<[Box<RawValue>]>>>,
}

impl ToolList {
    fn new(defs: Vec<ToolDef>) -> Rc<ToolList> {
        Rc::new(ToolList {
            defs: defs.into(),
            json: OnceCell::new(),
        })
    }

    /// Definition `d`'s JSON text, as serde writes the definition.
    fn json(&self, d: usize) -> Option<&RawValue> {
        self.json
            .get_or_init(|| {
                self.defs
                    .iter()
                    .map(|d| serde_json::value::to_raw_value(d).ok())
                    .collect()
            })
            .as_deref()
            .and_then(|list| list.get(d))
            .map(|raw| &**raw)
    }
}

/// Definition `.1` of list `.0`, written from its remembered text.
struct Written<'a>(&'a ToolList, usize);

impl Serialize for Written<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.json(self.1) {
            Some(raw) => raw.serialize(s),
            None => self.0.defs[self.1].serialize(s),
        }
    }
}

/// [`OfferedTools`] of a trace.
pub fn offered_tools(trace: &Trace) -> OfferedTools {
    let mut tools = OfferedTools::default();
    for s in &trace.spans {
        add_tools(s, &mut tools);
    }
    tools
}

/// Adds the tools `s` declares to `out` (by name, first definition kept).
fn add_tools(s: &SpanRecord, out: &mut OfferedTools) {
    let mut add = |v: Val<'_>| match v {
        Val::Str(text) => out.add(cached_tool_defs(text)),
        _ => out.add(ToolList::new(tool_defs(&any_to_json(v)))),
    };
    // One pass over the keys (every span is asked; few have any): the
    // first attribute of each of `TOOL_KEYS`, then the flattened lists in
    // attribute order, as looking each key up would give them.
    let mut first: [Option<usize>; TOOL_KEYS.len()] = [None; TOOL_KEYS.len()];
    let mut flat: Vec<usize> = Vec::new();
    let (prefix, suffix) = TOOL_KEY_PREFIX;
    for (i, key) in s.span.attr_keys().enumerate() {
        if let Some(j) = TOOL_KEYS.iter().position(|k| k.as_bytes() == key) {
            first[j].get_or_insert(i);
        } else if key.starts_with(prefix.as_bytes()) && key.ends_with(suffix.as_bytes()) {
            flat.push(i);
        }
    }
    for i in first.into_iter().flatten().chain(flat) {
        if let Some(v) = s.span.attr_value(i) {
            add(v);
        }
    }
}

/// Tool definitions parsed from JSON text, remembered per thread: an agent
/// offers the same list on every LLM call of every trace, and parsing it
/// again each time was most of the cost of a trace's facts.
fn cached_tool_defs(text: &str) -> Rc<ToolList> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    /// Bounds of the cache: entries and bytes of text held.
    const MAX_ENTRIES: usize = 64;
    const MAX_BYTES: usize = 4 << 20;
    /// Parsed lists by their text, and the bytes of text held. foldhash:
    /// every model call's list of a few KiB is hashed to find it, several
    /// times cheaper than SipHash on such texts (the cache is bounded, so a
    /// crafted input gains nothing from colliding keys).
    type Cache = (
        HashMap<Box<str>, Rc<ToolList>, foldhash::fast::RandomState>,
        usize,
    );
    thread_local! {
        static CACHE: RefCell<Cache> = RefCell::new((HashMap::default(), 0));
    }
    if let Some(hit) = CACHE.with_borrow(|(map, _)| map.get(text).cloned()) {
        return hit;
    }
    let defs = ToolList::new(tool_defs_in_text(text));
    CACHE.with_borrow_mut(|(map, bytes)| {
        if map.len() >= MAX_ENTRIES || *bytes + text.len() > MAX_BYTES {
            map.clear();
            *bytes = 0;
        }
        if text.len() <= MAX_BYTES {
            *bytes += text.len();
            map.insert(text.into(), Rc::clone(&defs));
        }
    });
    defs
}

/// [`tool_defs`] of a string value, without copying it first.
fn tool_defs_in_text(s: &str) -> Vec<ToolDef> {
    match serde_json::from_str::<Value>(s) {
        Ok(inner @ (Value::Array(_) | Value::Object(_))) => tool_defs(&inner),
        _ if !s.trim().is_empty() && !s.contains(char::is_whitespace) => vec![ToolDef {
            name: s.to_string(),
            description: None,
            parameters: None,
        }],
        _ => Vec::new(),
    }
}

/// Tool definitions in a value: a list (or JSON text of one), or one
/// definition.
pub(crate) fn tool_defs(v: &Value) -> Vec<ToolDef> {
    match v {
        Value::String(s) => tool_defs_in_text(s),
        Value::Array(items) => items.iter().flat_map(tool_defs).collect(),
        Value::Object(o) => {
            // `{"type": "function", "function": {...}}` or the flat form.
            let def = o.get("function").filter(|f| f.is_object()).unwrap_or(v);
            let Some(name) = def.get("name").and_then(Value::as_str) else {
                return Vec::new();
            };
            vec![ToolDef {
                name: name.to_string(),
                description: def
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                parameters: def
                    .get("parameters")
                    .or_else(|| def.get("input_schema"))
                    .or_else(|| def.get("inputSchema"))
                    .cloned(),
            }]
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request_text(v: &Value) -> Option<String> {
        text_in(v, false)
    }

    #[test]
    fn turn_text_takes_the_last_user_message_with_text() {
        let history = json!([
            {"role": "user", "parts": [{"type": "text", "content": "Weather in Berlin?"}]},
            {"role": "assistant", "parts": [{"type": "text", "content": "12C"}]},
            {"role": "user", "parts": [{"type": "tool_call_response", "response": {}}]},
            {"role": "user", "parts": [{"type": "text", "content": "Convert 100 EUR"}]},
            {"role": "user", "parts": [{"type": "tool_call_response", "response": {}}]}
        ]);
        assert_eq!(turn_text(&history).as_deref(), Some("Convert 100 EUR"));
        assert_eq!(
            request_text(&history).as_deref(),
            Some("Weather in Berlin?")
        );
        let inputs = json!({"messages": history});
        assert_eq!(turn_text(&inputs).as_deref(), Some("Convert 100 EUR"));
    }
    use serde_json::json;

    /// Rows write each offered tool from its remembered text: the same
    /// bytes serde writes of the definitions, the first time (text made)
    /// and after (text reused), a name offered twice kept once.
    #[test]
    fn offered_tools_written_from_their_text_as_serde_writes_them() {
        let defs = |names: &[&str]| -> Vec<ToolDef> {
            names
                .iter()
                .map(|n| ToolDef {
                    name: n.to_string(),
                    description: (*n == "b").then(|| "line\nbreak \"quoted\"".to_string()),
                    parameters: Some(
                        json!({"type": "object", "properties": {"z": {}, "a": [1.5, null]}}),
                    ),
                })
                .collect()
        };
        let first = ToolList::new(defs(&["a", "b"]));
        let mut tools = OfferedTools::default();
        tools.add(Rc::clone(&first));
        tools.add(ToolList::new(defs(&["b", "c"])));
        let expected = serde_json::to_string(&tools.iter().collect::<Vec<_>>()).unwrap();
        assert!(
            expected.contains(r#""name":"c""#) && expected.matches(r#""name":"b""#).count() == 1
        );
        assert_eq!(serde_json::to_string(&tools).unwrap(), expected);
        assert!(first.json.get().is_some());
        assert_eq!(serde_json::to_string(&tools).unwrap(), expected);
    }

    #[test]
    fn request_shapes() {
        let genai = json!(
            r#"[{"role":"system","parts":[{"type":"text","content":"be brief"}]},
            {"role":"user","parts":[{"type":"text","content":"Weather in Paris?"}]}]"#
        );
        assert_eq!(request_text(&genai).as_deref(), Some("Weather in Paris?"));
        let mlflow = json!(r#"{"messages": [{"role": "user", "content": "Book a flight"}]}"#);
        assert_eq!(request_text(&mlflow).as_deref(), Some("Book a flight"));
        let strands = json!(r#"[{"text": "I cannot log in"}]"#);
        assert_eq!(request_text(&strands).as_deref(), Some("I cannot log in"));
        assert_eq!(request_text(&json!("plain")).as_deref(), Some("plain"));
        assert_eq!(request_text(&json!({"query": "q"})).as_deref(), Some("q"));
    }

    #[test]
    fn tool_definition_shapes() {
        let openai = json!(
            r#"[{"type":"function","function":{"name":"a","description":"A","parameters":{"type":"object"}}}]"#
        );
        let t = tool_defs(&openai);
        assert_eq!(
            (t[0].name.as_str(), t[0].description.as_deref()),
            ("a", Some("A"))
        );
        let flat = json!([{"type": "function", "name": "b", "parameters": {}}]);
        assert_eq!(tool_defs(&flat)[0].name, "b");
        let names = json!(r#"["get_weather", "format_answer"]"#);
        assert_eq!(tool_defs(&names).len(), 2);
        let schema = json!(r#"{"type":"function","function":{"name":"c"}}"#);
        assert_eq!(tool_defs(&schema)[0].name, "c");
    }

    use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};

    fn kv(key: &str, v: any_value::Value) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue { value: Some(v) }),
            ..Default::default()
        }
    }

    fn span_tokens(attrs: &[KeyValue]) -> (Option<u64>, Option<u64>) {
        super::span_tokens(&Span::from(opentelemetry_proto::tonic::trace::v1::Span {
            attributes: attrs.to_vec(),
            ..Default::default()
        }))
    }

    #[test]
    fn one_spelling_per_span_current_first() {
        use any_value::Value::{IntValue, StringValue};
        // Strands writes both spellings; the older one first here.
        let attrs = [
            kv("gen_ai.usage.prompt_tokens", IntValue(7)),
            kv("gen_ai.usage.input_tokens", IntValue(5)),
            kv("gen_ai.usage.completion_tokens", StringValue("3".into())),
            kv("gen_ai.usage.total_tokens", IntValue(99)),
        ];
        assert_eq!(span_tokens(&attrs), (Some(5), Some(3)));
        let oi = [kv("llm.token_count.prompt", IntValue(-1))];
        assert_eq!(
            span_tokens(&oi),
            (None, None),
            "a negative count is not a count"
        );
    }
}
