//! The conversation as a second witness of a trace's tool calls
//! (docs/conventions.md, "The conversation witness").
//!
//! A model's output names the calls it asks for, each with a call id; the
//! next request to the model carries each call's result under the same id.
//! Instrumentations of LLM clients record both on their spans, as JSON
//! (`gen_ai.output.messages`, `input.value`, `ai.response.toolCalls`, ...)
//! or flattened into indexed attributes (`llm.output_messages.*`,
//! `gen_ai.completion.*`). One hook per trace (`witness`) uses them:
//!
//! - **The call-id join.** A tool span that has a call id but no
//!   arguments, or that is named after a wrapper class or a namespace, takes
//!   the name and arguments the model gave that call (the span's own name is
//!   kept as `span_name`); one no output gave arguments takes those a
//!   request's history records under its id (`history_args`).
//! - **Calls from the conversation.** A trace with no tool span at all gets
//!   its calls from the conversation: a call the model asked for and whose
//!   result a later request carries. One never answered is reported, not
//!   counted. A call belongs to the span whose output asked for it, once per
//!   call id: every request repeats the history, and two instrumentations
//!   of one model call repeat its output. When each model call is a trace of
//!   its own, the result sits in the next trace: there, the calls of the
//!   last model turn in the request, answered by the results after it, are
//!   counted (the trace that asked reports them as not answered).
//! - **The cross-check.** When tool spans exist, a call the model asked for
//!   that no tool span shows, or a tool span's call no model output asked
//!   for, is a warning of the trace.
//!
//! Besides the named forms, a span that says it is a model call is read for
//! provider bodies under any input- or output-like key (`bodies`); a tool
//! span that carries nothing of a call does not stand in for the model's
//! calls (`hollow`); calls and results without ids pair by the tool's
//! name, else by order (`idless`); the one unjoined tool span and the one
//! unjoined ask of a turn are one call (`same_turn`); and a trace with no tool span and no model output
//! asking for a call may list its calls in an agent run's transcript
//! (`transcript`).
//!
//! Outputs are read cheaply (a few keys, and JSON parsed only when its text
//! names a tool call); requests, which hold the whole history, are read only
//! when the calls are rebuilt.

use std::cell::OnceCell;
use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Map, Value};

use self::messages::{
    answer_of, failed, gemini_error, gemini_unwrapped, messages_of, object_wrapped, read_request,
    with_items,
};
use super::borrowed::Json;
use super::open::{run_key, Open, OpenAsk};
use super::requested::{self, Asked, Tree};
use super::{AgentRef, Analysis, CallArgs, CallResult, CallStatus, Ctx, Extractor, ToolCall};
use crate::assemble::{IdMap, IdSet, SpanId, SpanRecord, Trace, Val};

mod action_args;
mod afc;
mod agent_tool;
mod ai_sdk_output;
mod answered_history;
#[cfg(test)]
mod answered_history_tests;
mod ask_ids;
mod ask_warnings;
mod asked_time;
mod bare_value;
mod blank_spans;
#[cfg(test)]
mod blank_spans_tests;
mod bodies;
pub(crate) mod call_attrs;
mod call_words;
pub(crate) mod chain_outputs;
mod continues;
mod declared_results;
mod echoed;
mod elided;
pub(crate) mod failed_texts;
mod flat_blocks;
mod flat_contents;
mod flat_events;
mod flat_fields;
mod history_args;
mod history_fill;
mod hollow;
mod http;
mod idless;
mod item_ids;
mod item_names;
mod joins;
use joins::{join, join_and_check, take_from_model};
mod kinds;
mod later;
mod look;
mod messages;
mod named_bodies;
mod named_roles;
mod object_only;
mod one_part;
mod order;
mod output_exchange;
mod placeholder_calls;
mod positional;
mod positions;
pub(crate) mod provider;
mod quoteless;
mod react_text;
mod records;
mod repeated;
mod requested_model;
mod result_records;
mod result_words;
pub(crate) mod resumed;
mod same_turn;
mod spans;
pub(crate) mod text_results;
mod transcript;
mod turn_roles;
mod twin_asks;
pub(crate) mod twins;
mod unseen;
mod wrapped_results;
mod writer_names;
use super::content_events;
use super::sides::Side;
pub(crate) use ask_warnings::{id_text, unanswered_warning, unjoined_warning, unshown_warning};
pub(crate) use bodies::{is_model_call, KIND_KEYS, KIND_TAILS, METHOD_KEYS};
use call_words::{may_hold_any_call, may_hold_calls};
pub(crate) use content_events::EVENT_KEYS;
pub(crate) use flat_events::event_keys as flat_event_keys;
pub(crate) use idless::{is_made, named_tool};
use look::Look;
pub(crate) use object_only::PROVIDER_KEYS;
use positions::Positions;
pub(crate) use react_text::step_words as react_step_words;
pub(crate) use records::span_keys as record_keys;
use result_words::may_hold_results;
pub use spans::reads_messages;
pub(crate) use spans::records_output;

/// What a call rebuilt from the conversation says in rows (`from`).
pub const FROM_CONVERSATION: &str = "conversation";

/// Prefixes of flattened messages (projection at decode).
pub(crate) const SPAN_KEY_PREFIXES: [&str; 6] = [
    OI_OUT.prefix,
    OI_IN.prefix,
    OPENLLMETRY_OUT.prefix,
    OPENLLMETRY_IN.prefix,
    TRACEAI_OUT.prefix,
    TRACEAI_IN.prefix,
];

/// Messages flattened into indexed attributes:
/// `<prefix><i>.[message.]{role,content,tool_call_id}` and
/// `<prefix><i>.[message.]tool_calls.<j>.[tool_call.]{id,function.name,function.arguments}`
/// (or `{id,name,arguments}`).
struct Flat {
    prefix: &'static str,
    form: &'static str,
}

const OI_OUT: Flat = Flat {
    prefix: "llm.output_messages.",
    form: "openinference",
};
const OI_IN: Flat = Flat {
    prefix: "llm.input_messages.",
    form: "openinference",
};
const OPENLLMETRY_OUT: Flat = Flat {
    prefix: "gen_ai.completion.",
    form: "openllmetry",
};
const OPENLLMETRY_IN: Flat = Flat {
    prefix: "gen_ai.prompt.",
    form: "openllmetry",
};
// traceAI: the OTel GenAI keys, flattened as OpenInference's are.
const TRACEAI_OUT: Flat = Flat {
    prefix: "gen_ai.output.messages.",
    form: "traceai",
};
const TRACEAI_IN: Flat = Flat {
    prefix: "gen_ai.input.messages.",
    form: "traceai",
};
/// The flattened forms of a model's output, and of a request.
const FLAT_OUT: [&Flat; 3] = [&OI_OUT, &OPENLLMETRY_OUT, &TRACEAI_OUT];
const FLAT_IN: [&Flat; 3] = [&OI_IN, &OPENLLMETRY_IN, &TRACEAI_IN];

/// A JSON attribute holding a model's output or request, the form it
/// names, and, for generic keys, the attribute that marks the span as a
/// model call (key, value).
type MessageKey = (
    &'static str,
    &'static str,
    Option<(&'static str, &'static str)>,
);

const OI_LLM: Option<(&str, &str)> = Some(("openinference.span.kind", "LLM"));
const LANGFUSE_GENERATION: Option<(&str, &str)> = Some(("langfuse.observation.type", "generation"));
const GENKIT_MODEL: Option<(&str, &str)> = Some(("genkit:metadata:subtype", "model"));

/// The span attributes that mark a model call (projection at decode).
pub(crate) const MODEL_MARKERS: [&str; 3] = [
    "openinference.span.kind",
    "langfuse.observation.type",
    "genkit:metadata:subtype",
];

/// Attributes holding a model's output.
const OUTPUT_KEYS: [MessageKey; 5] = [
    ("gen_ai.output.messages", "otel-genai", None),
    ("ai.response.toolCalls", "vercel-ai", None),
    ("output.value", "openinference", OI_LLM),
    (
        "langfuse.observation.output",
        "langfuse",
        LANGFUSE_GENERATION,
    ),
    ("genkit:output", "genkit", GENKIT_MODEL),
];

/// Attributes holding a model request's messages.
const INPUT_KEYS: [MessageKey; 6] = [
    ("gen_ai.input.messages", "otel-genai", None),
    ("ai.prompt.messages", "vercel-ai", None),
    ("ai.prompt", "vercel-ai", None),
    ("input.value", "openinference", OI_LLM),
    (
        "langfuse.observation.input",
        "langfuse",
        LANGFUSE_GENERATION,
    ),
    ("genkit:input", "genkit", GENKIT_MODEL),
];

/// The text of message attribute `key` on `s`, when the span is a model
/// call as `marker` requires.
fn message_text<'s>(s: &'s SpanRecord, (key, _, marker): &MessageKey) -> Option<&'s str> {
    if let Some((k, v)) = marker {
        if s.attr_str(k) != Some(*v) {
            return None;
        }
    }
    s.attr_str(key)
}

/// Roles of the model's own messages.
const MODEL_ROLES: [&str; 5] = ["assistant", "ai", "model", "CHATBOT", "chatbot"];
/// Roles of a message that is a tool's result: OpenAI's (`function`, its
/// older API's, with the function's name and no call id), a Responses item.
const RESULT_ROLES: [&str; 3] = ["tool", "function", RESPONSES_RESULT];
/// Part types of a tool result (OTel GenAI, Vercel, Anthropic).
const RESULT_PARTS: [&str; 3] = [GENAI_RESULT, "tool-result", "tool_result"];
/// OTel GenAI's part type of a tool result.
const GENAI_RESULT: &str = "tool_call_response";
/// The OpenAI Responses API's items: a call the model made, and its result.
const RESPONSES_CALL: &str = "function_call";
const RESPONSES_RESULT: &str = "function_call_output";
/// The type of an offered tool's definition (OpenAI's `tools` entries).
const TOOL_DEFINITION: &str = "function";
/// Keys of a tool result's call id.
const RESULT_ID_KEYS: [&str; 7] = [
    "tool_call_id",
    "call_id",
    "id",
    "toolCallId",
    "tool_use_id",
    "toolUseId",
    "ref",
];
/// Keys of a tool result's content.
const RESULT_KEYS: [&str; 4] = ["response", "result", "output", "content"];
/// Messages deeper than this in a request are not looked at.
const MAX_DEPTH: usize = 10;

/// A call asked for by span `span`'s output, read in `form`.
#[derive(Debug, Clone)]
struct AskedAt {
    span: usize,
    asked: Asked,
    form: &'static str,
}

/// A tool result carried by a request.
#[derive(Debug, Clone, Default)]
struct Answer {
    id: Option<String>,
    name: Option<String>,
    content: Option<Value>,
    /// How the call went, when the result part says (`ai_sdk_output`).
    outcome: ai_sdk_output::Outcome,
    /// Read from an OTel GenAI `tool_call_response` part's `response`: the
    /// writer's copy of the provider's own result (`object_only::unwrap_parts`).
    genai_part: bool,
    /// In Gemini's function-response shape (a `functionResponse` part, or
    /// a GenAI part on a Gemini span): a lone `result` around an object is
    /// the loop's wrapper unless a declared schema says otherwise
    /// (`declared_results`).
    gemini_shape: bool,
}

/// What one request carries: the results in it, the calls of its last
/// model turn when only results follow that turn, and the calls of every
/// model turn in its history.
#[derive(Debug, Default)]
struct Request {
    answers: Vec<Answer>,
    last_turn: Vec<Asked>,
    history: Vec<Asked>,
    form: &'static str,
    /// Which of `answers` follow the last model message ([`order::pair`]).
    trailing: Vec<usize>,
    /// How many results took their call's id by order ([`item_ids`]):
    /// results under an id no call has, and results without one.
    rekeyed: (usize, usize),
    /// Whether results took the asked calls' ids by order ([`order::pair`]).
    by_order: bool,
    /// The failures told in text after the last model message
    /// ([`failed_texts`]).
    failures: Vec<failed_texts::Failure>,
}

/// [`asked_looked`] with the span's look taken here.
#[cfg(test)]
fn asked_of(s: &SpanRecord) -> (Vec<Asked>, &'static str) {
    asked_looked(s, Look::of(s))
}

/// The calls span `s`'s output asked for, and the form they were read in:
/// of the forms the span records, the one that keeps the most call ids
/// (`look`: the span's [`Look`], taken by the caller).
fn asked_looked(s: &SpanRecord, look: Look) -> (Vec<Asked>, &'static str) {
    let mut best: (Vec<Asked>, &'static str) = (Vec::new(), "");
    // Most spans record no model output: one look at their keys.
    if !look.may_output(s) {
        return best;
    }
    let model_call = look.model_call;
    let mut offer = |calls: Vec<Asked>, form: &'static str| {
        let ids = |c: &[Asked]| c.iter().filter(|a| a.id.is_some()).count();
        if !calls.is_empty() && (best.0.is_empty() || ids(&calls) > ids(&best.0)) {
            best = (calls, form);
        }
    };
    // The named forms whose keys are there: the others hold nothing.
    let there = |bits: u8, j: usize| bits & (1 << j) != 0;
    let flats = FLAT_OUT.iter().enumerate();
    for (_, flat) in flats.filter(|(j, _)| there(look.flat_out, *j)) {
        offer(calls_in(&gather_flat(s, flat)), flat.form);
    }
    if look.flat_out_events {
        for flat in FLAT_OUT {
            if let Some(messages) = flat_events::messages(s, flat) {
                offer(calls_in(&messages), flat.form);
            }
        }
    }
    // Which named keys are read under their form (bit `j`: the `j`th).
    let mut read_as_named = 0u8;
    let named = OUTPUT_KEYS.iter().enumerate();
    for (j, key) in named.filter(|(j, _)| there(look.named_out, *j)) {
        let form = key.1;
        let Some(text) = message_text(s, key) else {
            continue;
        };
        read_as_named |= 1 << j;
        if !may_hold_calls(text) {
            continue;
        }
        if let Some(v) = Json::parse(text) {
            offer(calls_in(&v), form);
        }
    }
    // The forms written as span events: most spans have none.
    if !s.span.events.is_empty() {
        // Most choice messages are text, or JSON without a call: not parsed.
        match super::genai_events::choice_calls(s, may_hold_any_call) {
            Some(calls) => offer(once_per_id(calls), super::genai_events::FORM),
            None => {
                if let Some(v) = super::genai_events::output(s) {
                    offer(calls_in(&v), super::genai_events::FORM);
                }
            }
        }
        if let Some(v) = content_events::output(s) {
            offer(calls_in(&v), content_events::FORM);
        }
    }
    if model_call {
        let read = move |j: usize| there(read_as_named, j);
        for (key, text) in bodies::bodies_besides(s, Side::Output, read) {
            // A list under a key named like one (`gen_ai.response.tool_calls`:
            // Cohere v1's and Gemini's calls without a type; tmam's Python
            // literal) is a list of calls.
            let listed = key
                .rsplit('.')
                .next()
                .filter(|k| CALL_LIST_KEYS.contains(k));
            if listed.is_none() && !may_hold_calls(text) {
                continue;
            }
            if let Some(v) = Json::parse(text) {
                offer(calls_under(&v, listed), bodies::FORM);
            } else if let Some(v) = listed.and_then(|_| super::literal::parse(text)) {
                offer(calls_under(&v, listed), bodies::FORM); // tmam: `str()` of the list
            }
        }
    }
    best
}

/// The last part of a body's key that says its list holds calls.
const CALL_LIST_KEYS: [&str; 2] = ["tool_calls", "toolCalls"];

/// The call objects in `v`, once per call id.
fn calls_in<T: Tree>(v: &T) -> Vec<Asked> {
    calls_under(v, None)
}

/// The call objects in `v` found under key `parent`, once per call id.
fn calls_under<T: Tree>(v: &T, parent: Option<&str>) -> Vec<Asked> {
    let mut out = Vec::new();
    requested::walk(v, parent, 0, &mut out);
    once_per_id(out)
}

/// Calls found in document order, once per call id (the first kept).
fn once_per_id(mut out: Vec<Asked>) -> Vec<Asked> {
    // An output asks for a few calls: each id looked for among the calls
    // kept before it, with no set (and no copy of each id) built.
    if out.len() <= 16 {
        let mut kept = 0;
        for i in 0..out.len() {
            let seen = out[i]
                .id
                .as_ref()
                .is_some_and(|id| out[..kept].iter().any(|a| a.id.as_ref() == Some(id)));
            if !seen {
                out.swap(kept, i);
                kept += 1;
            }
        }
        out.truncate(kept);
        return out;
    }
    // foldhash (as `IdSet`): a set only asked, never walked.
    let mut ids: IdSet<String> = IdSet::default();
    out.retain(|a| a.id.as_ref().is_none_or(|id| ids.insert(id.clone())));
    out
}

/// Whether span `s` has an attribute starting with `prefix`.
fn has_prefix(s: &SpanRecord, prefix: &str) -> bool {
    s.span.attr_keys().any(|k| k.starts_with(prefix.as_bytes()))
}

/// One flattened message: its fields, and its tool calls by index.
type FlatMessage = (Map<String, Value>, BTreeMap<usize, Map<String, Value>>);

/// The messages flattened under `flat.prefix` on `s`, rebuilt as a JSON
/// list of OpenAI-shaped messages; `None` when there are none.
fn flat_messages(s: &SpanRecord, flat: &Flat) -> Option<Value> {
    has_prefix(s, flat.prefix).then(|| gather_flat(s, flat))
}

/// [`flat_messages`] on a span known to have a key under `flat.prefix`.
fn gather_flat(s: &SpanRecord, flat: &Flat) -> Value {
    gather_pairs(s.span.attributes(), flat.prefix)
}

/// The messages flattened under `prefix` in `pairs` (attributes, or the
/// fields of messages written one an event, [`flat_events`]), as
/// [`flat_messages`] rebuilds them.
fn gather_pairs<'v, K: AsRef<str>>(
    pairs: impl Iterator<Item = (K, Option<Val<'v>>)>,
    prefix: &str,
) -> Value {
    // index -> message; within it, call index -> call
    let mut messages: BTreeMap<usize, FlatMessage> = BTreeMap::new();
    for (key, value) in pairs {
        let Some(rest) = key.as_ref().strip_prefix(prefix) else {
            continue;
        };
        let Some(value) = value else {
            continue;
        };
        let Some((i, field)) = rest.split_once('.') else {
            continue;
        };
        let Ok(i) = i.parse::<usize>() else {
            continue;
        };
        let field = field.strip_prefix("message.").unwrap_or(field);
        if let Some(whole) = flat_fields::whole(field, value) {
            let message = &mut messages.entry(i).or_default().0;
            message.insert(field.to_string(), whole);
            continue;
        }
        let Some(text) = value.as_str() else {
            continue;
        };
        let (message, calls) = messages.entry(i).or_default();
        match field.strip_prefix("tool_calls.") {
            Some(call) => {
                let Some((j, part)) = call.split_once('.') else {
                    continue;
                };
                let Ok(j) = j.parse::<usize>() else {
                    continue;
                };
                let part = part.strip_prefix("tool_call.").unwrap_or(part);
                let part = part.strip_prefix("function.").unwrap_or(part);
                if matches!(part, "id" | "name" | "arguments") {
                    let call = calls.entry(j).or_default();
                    call.insert(part.to_string(), Value::String(text.to_string()));
                }
            }
            None if flat_contents::add(message, field, text) => {}
            None if matches!(field, "role" | "content" | "tool_call_id" | "name") => {
                message.insert(field.to_string(), Value::String(text.to_string()));
            }
            None => {}
        }
    }
    let list = messages
        .into_values()
        .map(|(mut message, calls)| {
            // Anthropic's result blocks as one text (`flat_blocks`).
            flat_blocks::read_blocks(&mut message);
            // Indexed calls win over a list in one field (`flat_fields`).
            if !calls.is_empty() {
                let calls = calls
                    .into_values()
                    .map(with_arguments)
                    .map(Value::Object)
                    .collect();
                message.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(message)
        })
        .collect();
    Value::Array(flat_fields::calls_per_message(list))
}

/// Flattened call `call` with `arguments`, `null` (unknown) where it has
/// none: a writer that leaves out an empty value (OpenInference) leaves out
/// a call's `"{}"`, and a call with an id and a name is still a call
/// (without it the request's history lost the call, and the turn it
/// ended). `history_args` takes no arguments from a `null`.
fn with_arguments(mut call: Map<String, Value>) -> Map<String, Value> {
    if call.contains_key("id") && call.contains_key("name") && !call.contains_key("arguments") {
        call.insert("arguments".into(), Value::Null);
    }
    call
}

/// What the request recorded on span `s` carries: of the forms the span
/// records, the one that keeps the most call ids.
fn request_of(s: &SpanRecord) -> Request {
    let mut best = Request::default();
    let look = Look::of_input(s);
    if !look.may_input(s) {
        // A record of a run may keep only its output, listing the exchange.
        return output_exchange::request(s, look).unwrap_or(best);
    }
    let mut offer = |r: Request| {
        // Call ids first, then the tools' names (a form that keeps neither
        // cannot say which call a result answers).
        let ids = |r: &Request| {
            let count = |f: fn(&Answer) -> bool| r.answers.iter().filter(|a| f(a)).count();
            (count(|a| a.id.is_some()), count(|a| a.name.is_some()))
        };
        if r.answers.is_empty() && r.failures.is_empty() {
            return;
        }
        let better = best.answers.is_empty()
            || match ids(&r).cmp(&ids(&best)) {
                std::cmp::Ordering::Greater => true,
                // As many ids and names: the form whose results a writer
                // elided less (`elided`), then the one that keeps more
                // failures (OpenInference's flattened messages drop
                // Anthropic's `is_error`; its `input.value` keeps it).
                std::cmp::Ordering::Equal => {
                    let kept = |r: &Request| (elided::count(&r.answers), failed(&r.answers));
                    let ((e, f), (be, bf)) = (kept(&r), kept(&best));
                    e < be || (e == be && f > bf)
                }
                std::cmp::Ordering::Less => false,
            };
        if better {
            best = r;
        }
    };
    each_form(s, look, &mut offer);
    object_only::unwrap_parts(s, &mut best.answers);
    declared_results::unwrap(s, &mut best);
    best
}

/// Every form of the request recorded on span `s` (one `look` may hold an
/// input), each read whole and handed to `offer`, which keeps what it
/// needs ([`request_of`]: the best; `history_args`: a call by id).
fn each_form(s: &SpanRecord, look: Look, offer: &mut impl FnMut(Request)) {
    for flat in FLAT_IN {
        if let Some(messages) = flat_messages(s, flat) {
            let mut r = read_request(&messages, flat.form);
            object_only::unwrap_flat(s, &mut r.answers);
            offer(r);
        }
        if let Some(messages) = flat_events::messages(s, flat) {
            offer(read_request(&messages, flat.form));
        }
    }
    for key in &INPUT_KEYS {
        let form = key.1;
        let Some(text) = message_text(s, key) else {
            continue;
        };
        let t = text.trim_start();
        if !(t.starts_with('{') || t.starts_with('[')) || !may_hold_results(t) {
            continue;
        }
        if let Ok(v) = serde_json::from_str::<Value>(t) {
            offer(read_request(&v, form));
        }
    }
    if let Some(v) = super::genai_events::request(s) {
        offer(read_request(&v, super::genai_events::FORM));
    }
    if let Some(v) = content_events::request(s) {
        offer(read_request(&v, content_events::FORM));
    }
    if let Some(v) = super::chat_events::request(s) {
        offer(read_request(&v, super::chat_events::FORM));
    }
    let bodies = look
        .model_call
        .then(|| bodies::bodies_of_model_call(s, Side::Input));
    for text in bodies.into_iter().flatten() {
        if !may_hold_results(text) {
            continue;
        }
        if let Ok(v) = serde_json::from_str::<Value>(text) {
            offer(read_request(&v, bodies::FORM));
        }
    }
    // An output that records the exchange the client ran (`afc`).
    let outputs = look
        .model_call
        .then(|| bodies::bodies_of_model_call(s, Side::Output));
    let named = OUTPUT_KEYS.iter().filter_map(|k| message_text(s, k));
    for text in named.chain(outputs.into_iter().flatten()) {
        offer(afc::request_in_output(text).unwrap_or_default());
    }
    // An output that lists the calls and the results answering them.
    offer(output_exchange::request(s, look).unwrap_or_default());
}

/// Runs the witness on one trace's analysis: the call-id join and the
/// cross-check when tool spans gave calls, else the calls rebuilt from the
/// conversation. `seen`: what each span sees above it (empty when no rule
/// classified any span).
/// `carried`: calls earlier traces left open that this trace's requests
/// may answer (`extract::carry`).
pub(super) fn witness(
    x: &Extractor,
    trace: &Trace,
    seen: &[Ctx],
    carried: &[OpenAsk],
    out: &mut Analysis,
) {
    history_fill::fill(x, trace, out);
    let mut quiet = Vec::new();
    // Calls the provider ran are no asks a tool answers (`provider`).
    let ran = provider::calls(x, trace, seen, out);
    let mut asked = asked_in(trace, &out.calls, &mut quiet);
    asked.retain(|a| !provider::is_ran(&ran, a));
    if !out.calls.is_empty() && !asked.is_empty() {
        placeholder_calls::name(trace, &asked, out);
        hollow::drop_hollow(trace, &asked, out);
    }
    let asked = react_text::unless_native(asked, trace, &quiet, out);
    if out.calls.is_empty() {
        // A blank tool span is where its rebuilt call ran (`blank_spans`).
        let blank = blank_spans::pair(trace, &asked, |_| true, &out.calls);
        rebuild(x, trace, seen, &asked, out, Some(carried));
        blank_spans::retime(trace, seen, &asked, &blank, &mut out.calls, &mut out.notes);
        if out.calls.is_empty() && asked.is_empty() {
            transcript::calls(x, trace, seen, out);
        }
    } else if !asked.is_empty() {
        let (toolless, blank) = join_and_check(x, trace, seen, &asked, carried, out);
        if !toolless.is_empty() {
            let from = out.calls.len();
            rebuild(x, trace, seen, &toolless, out, None);
            let rebuilt = &mut out.calls[from..];
            blank_spans::retime(trace, seen, &asked, &blank, rebuilt, &mut out.notes);
        }
    }
    // After the joins: what the model's outputs gave comes first.
    history_args::fill(trace, out);
    out.calls.extend(ran);
}

/// Every call the trace's model outputs asked for, in span order, once per
/// call id and tool (ids are unique within a conversation only: two agents'
/// conversations may reuse one) and, without ids, once per span and its
/// parent. `quiet`: the spans with a model output that asked for none.
fn asked_in(trace: &Trace, tool_calls: &[ToolCall], quiet: &mut react_text::Quiet) -> Vec<AskedAt> {
    let mut out: Vec<AskedAt> = Vec::new();
    // The (id, tool) pairs kept: looked for among the few calls kept, and
    // in a set (foldhash, as `IdSet`: only asked, never walked) once
    // there are many.
    let mut ids: Option<IdSet<(String, String)>> = None;
    // A span a rule took for a call ran it: it is no record of a request
    // (the sorted ids gathered only when a span has a call id key).
    let mut ran: Option<Vec<SpanId>> = None;
    // Whether an ask kept has a Responses item id (`twin_asks`).
    let mut items = false;
    // The asks under an id that repeated one kept, with their spans:
    // another record of that model call may sit beside them.
    let mut also: Vec<(usize, Asked)> = Vec::new();
    for (i, s) in trace.spans.iter().enumerate() {
        // Cold again by now: `Extractor::analyze_all` witnesses a batch's
        // traces after reading all their calls.
        trace.prefetch_ahead(i);
        let look = Look::of(s);
        let (mut calls, mut form) = asked_looked(s, look);
        react_text::note(quiet, (i, s, look), &calls);
        if calls.is_empty() && (look.call_id_key || !look.model_call) {
            let ran = ran.get_or_insert_with(|| {
                let mut ids: Vec<SpanId> = tool_calls.iter().map(|c| c.span_id).collect();
                ids.sort_unstable();
                ids
            });
            if ran.binary_search(&s.span_id).is_err() {
                if let Some(a) = look.call_id_key.then(|| records::asked(s)).flatten() {
                    (calls, form) = (vec![a], records::FORM);
                } else if !look.model_call {
                    (calls, form) = (call_attrs::asked(s), call_attrs::FORM);
                    if calls.is_empty() {
                        (calls, form) = (chain_outputs::asked(s), chain_outputs::FORM);
                    }
                }
            }
        }
        for a in calls {
            let repeated = match &a.id {
                Some(id) => {
                    if ids.is_none() && out.len() >= MANY_ASKED {
                        let kept = out.iter().map(|o| &o.asked);
                        let kept = kept.filter_map(|k| Some((k.id.clone()?, k.name.clone())));
                        ids = Some(kept.collect());
                    }
                    match &mut ids {
                        Some(ids) => !ids.insert((id.clone(), a.name.clone())),
                        None => out
                            .iter()
                            .any(|o| o.asked.id.as_ref() == Some(id) && o.asked.name == a.name),
                    }
                }
                None => twin_asks::bare_repeat(trace, s, &a, (&out, &also)),
            };
            if repeated {
                // An id-less record of the same ask may sit beside this copy.
                if a.id.is_some() {
                    also.push((i, a));
                }
                continue;
            }
            let kept = (out.as_mut_slice(), &mut ids, items);
            if !twin_asks::twin_ask(trace, i, &a, kept) {
                items |= a.id.as_deref().is_some_and(twin_asks::is_item);
                out.push(AskedAt {
                    span: i,
                    asked: a,
                    form,
                });
            }
        }
    }
    out
}

/// How many calls a trace's outputs ask for before [`asked_in`] keeps a
/// set of their ids.
const MANY_ASKED: usize = 16;

/// The calls of a trace without tool spans, from its conversation.
/// (`carried`, when the whole trace has no tool span: also the calls asked
/// for before this trace and answered in it, either repeated in its
/// requests or left open by an earlier trace; and what it leaves open.)
fn rebuild(
    x: &Extractor,
    trace: &Trace,
    seen: &[Ctx],
    asked: &[AskedAt],
    out: &mut Analysis,
    carried: Option<&[OpenAsk]>,
) {
    // Which spans record a request: asked once per span here.
    let inputs: Vec<bool> = trace.spans.iter().map(has_any_input).collect();
    if asked.is_empty() && !inputs.contains(&true) {
        return;
    }
    let mut requests = requests_of(trace, &inputs);
    let echoed = echoed::pair_noting(trace, asked, &mut requests, &mut out.notes);
    out.echoed_ids.extend(echoed);
    if carried.is_some() {
        idless::key_by_name(trace, &mut requests);
    }
    let mut open = Open::default();
    if let Some(carried) = carried {
        // Read on its own: what the carry compares (`twins`).
        if carried.is_empty() {
            open.print = twins::print_of(trace, &inputs, &requests);
        }
        order::carried_by_order(trace, carried, &mut requests, &mut open, &mut out.notes);
    }
    // The first request (after the asking span starts) that answers each id.
    let start = |i: usize| trace.spans[i].span.start_time_unix_nano;
    let answered = answers_by_id(&requests);
    // Answers without a recorded id, each used once (`idless`).
    let mut used: Vec<(usize, usize)> = Vec::new();
    let mut counted: HashSet<(&str, &str)> = HashSet::new();
    let names = writer_names::AskedNames::of(asked);
    // The failures told in text that asks of this trace took.
    let mut told = Vec::new();
    for at in asked {
        let a = &at.asked;
        let answer = match a.id.as_deref() {
            // A later request's result for this id (and this tool, when
            // the result names one, or its writer's name).
            Some(id) => answered
                .get(id)
                .and_then(|list| writer_names::answer_by_id(list, at, &requests, &names, start)),
            None => idless::answer_for(trace, at, &requests, &mut used),
        };
        let Some(answer) = answer else {
            // A call that raised, told only in the next request's text.
            let both = (requests.as_slice(), inputs.as_slice());
            if failed_texts::in_trace((x, trace, seen), at, both, &mut told, out) {
                if let Some(id) = a.id.as_deref() {
                    counted.insert((id, &a.name));
                }
                continue;
            }
            // With no later model request in the trace, the result may be
            // in the next trace (each model call a trace of its own).
            let later = (0..trace.spans.len())
                .any(|i| i != at.span && start(i) >= start(at.span) && inputs[i]);
            if let (false, Some(_)) = (later, carried) {
                let s = &trace.spans[at.span];
                let id = a.id.clone().unwrap_or_else(|| idless::by_name(&a.name));
                open.asks.push(OpenAsk {
                    asked: Asked {
                        id: Some(id),
                        ..a.clone()
                    },
                    form: at.form,
                    trace_id: trace.id,
                    span_id: s.span_id,
                    end_time_unix_nano: s.span.end_time_unix_nano,
                    run: run_key(s),
                });
            }
            let span = trace.spans[at.span].span_id;
            let warning = unanswered_warning(&a.name, &id_text(a), span, !later);
            out.warnings.push(warning);
            continue;
        };
        // A call without an id, answered by a result placed in the history:
        // the history's call at that place is this one.
        if let Some(id) = a.id.as_deref().or(answer.1.id.as_deref()) {
            counted.insert((id, &a.name));
        }
        if a.id.is_none() {
            out.notes.push(idless::paired_note(trace, at, answer));
        }
        let fuller = later::fuller_args(&requests[answer.0], a).map(|args| Asked {
            args: args.clone(),
            ..a.clone()
        });
        let a = fuller.as_ref().unwrap_or(a);
        let call = conversation_call(x, trace, seen, out, at.span, a, at.form, Some(answer));
        out.calls.push(call);
    }
    if let Some(carried) = carried {
        // Before the last turns: a history's calls come first.
        let (ctx, history) = ((x, trace, seen, asked), &mut open.history);
        unseen::history_calls(ctx, &inputs, &requests, &mut counted, carried, history, out);
        let ctx = (x, trace, seen, asked);
        open.retold = repeated::in_requests(ctx, &requests, &mut counted, carried, out);
        open.answers = left_open(x, trace, seen, asked, &requests, &mut counted, carried, out);
        let both = (requests.as_slice(), inputs.as_slice());
        let ctx = (x, trace, seen);
        failed_texts::carried_calls(ctx, both, carried, &mut counted, &mut open, out);
    }
    if !open.is_empty() {
        out.open = Some(Box::new(open));
    }
}

/// Each span's request (an empty one where `inputs` says the span records
/// none).
fn requests_of(trace: &Trace, inputs: &[bool]) -> Vec<Request> {
    let request = |(s, &input): (&SpanRecord, &bool)| {
        if input {
            request_of(s)
        } else {
            Request::default()
        }
    };
    trace.spans.iter().zip(inputs).map(request).collect()
}

/// Each call id's answers in the trace's requests, in span order.
fn answers_by_id(requests: &[Request]) -> HashMap<&str, Vec<(usize, &Answer)>> {
    let mut answered: HashMap<&str, Vec<(usize, &Answer)>> = HashMap::new();
    for (i, r) in requests.iter().enumerate() {
        for a in &r.answers {
            if let Some(id) = a.id.as_deref() {
                answered.entry(id).or_default().push((i, a));
            }
        }
    }
    answered
}

/// The call ids of request `r` that are this trace's own: its last model
/// turn's, and those of its history past a call the trace asked for
/// ([`later::after_asked`]).
fn own_ids<'r>(r: &'r Request, asked: &[AskedAt]) -> HashSet<&'r str> {
    r.last_turn
        .iter()
        .chain(later::after_asked(r, asked))
        .filter_map(|a| a.id.as_deref())
        .collect()
}

/// Request `r`'s answer to history call `a` (call id `id`), when no output
/// of this trace asked for the call and nothing counted it yet.
fn uncounted_answer<'r>(
    r: &'r Request,
    a: &Asked,
    id: &str,
    asked: &[AskedAt],
    counted: &HashSet<(&str, &str)>,
) -> Option<&'r Answer> {
    let asked_here = asked
        .iter()
        .any(|at| at.asked.id.as_deref() == Some(id) && at.asked.name == a.name);
    if asked_here || counted.contains(&(id, a.name.as_str())) {
        return None;
    }
    r.answers.iter().find(|ans| ans.id.as_deref() == Some(id))
}

/// Results in this trace's requests that nothing in it asked for: counted
/// when an earlier trace left the call open (`carried`), else returned
/// (call id, process, request start) for the traces after it
/// (`extract::carry`).
#[allow(clippy::too_many_arguments)]
fn left_open<'r>(
    x: &Extractor,
    trace: &Trace,
    seen: &[Ctx],
    asked: &[AskedAt],
    requests: &'r [Request],
    counted: &mut HashSet<(&'r str, &'r str)>,
    carried: &'r [OpenAsk],
    out: &mut Analysis,
) -> Vec<(String, u64, u64)> {
    let start = |i: usize| trace.spans[i].span.start_time_unix_nano;
    let mut open: Vec<(String, u64, u64)> = Vec::new();
    // Results that nothing in this trace asked for: an earlier trace may
    // hold the call (`extract::carry`).
    let explained: HashSet<&str> = requests
        .iter()
        .flat_map(|r| &r.history)
        .chain(asked.iter().map(|at| &at.asked))
        .filter_map(|a| a.id.as_deref())
        .collect();
    for (i, r) in requests.iter().enumerate() {
        for ans in &r.answers {
            // (A result this trace's own call took is explained too.)
            let Some(id) = ans
                .id
                .as_deref()
                .filter(|id| !explained.contains(id))
                .filter(|id| !counted.iter().any(|(c, _)| c == id))
            else {
                continue;
            };
            let from_before = carried.iter().find(|c| {
                c.asked.id.as_deref() == Some(id)
                    && ans.name.as_deref().is_none_or(|n| n == c.asked.name)
            });
            let Some(c) = from_before else {
                if !open.iter().any(|(known, ..)| known == id) {
                    open.push((id.to_string(), run_key(&trace.spans[i]), start(i)));
                }
                continue;
            };
            if !counted.insert((id, &c.asked.name)) {
                continue;
            }
            out.notes.push(format!(
                "`{}`{} was asked for in trace {} (span {}) and answered in span {}: counted here",
                c.asked.name,
                id_text(&c.asked),
                c.trace_id,
                c.span_id,
                trace.spans[i].span_id
            ));
            let mut call =
                conversation_call(x, trace, seen, out, i, &c.asked, c.form, Some((i, ans)));
            call.start_time_unix_nano = asked_time::asked_start(c, start(i));
            call.end_time_unix_nano = start(i);
            out.calls.push(call);
        }
    }
    open
}

/// Whether span `s` records a request's messages in any known form. Text
/// that is no JSON list or object under a message key is no request (AG2's
/// OpenLIT spans name the sending agent in `gen_ai.input.messages`).
fn has_any_input(s: &SpanRecord) -> bool {
    let look = Look::of_input(s);
    if !look.may_input(s) {
        return output_exchange::request(s, look).is_some();
    }
    (look.input
        && (INPUT_KEYS
            .iter()
            .any(|k| message_text(s, k).is_some_and(|t| t.trim_start().starts_with(['[', '{'])))
            || FLAT_IN.iter().any(|f| has_prefix(s, f.prefix))))
        || super::genai_events::has_request(s)
        || content_events::has_request(s)
        || super::chat_events::has_request(s)
        || flat_events::has(s, &FLAT_IN)
        || (look.model_call
            && bodies::bodies_of_model_call(s, Side::Input)
                .next()
                .is_some())
        || output_exchange::request(s, look).is_some()
}

/// The agent run a call rebuilt on a span under `ctx` belongs to, named
/// as the run's row names it.
fn agent_of(trace: &Trace, out: &Analysis, ctx: Ctx) -> Option<AgentRef> {
    ctx.agent.map(|r| {
        let span_id = trace.spans[r].span_id;
        let run = out.runs.iter().find(|run| run.span_id == span_id);
        AgentRef {
            span_id,
            name: run.map(|run| run.name.clone()).unwrap_or_default(),
        }
    })
}

/// A call rebuilt from the conversation: asked for by span `at`, answered
/// by the request on span `answer.0`.
#[allow(clippy::too_many_arguments)]
fn conversation_call(
    x: &Extractor,
    trace: &Trace,
    seen: &[Ctx],
    out: &mut Analysis,
    at: usize,
    a: &Asked,
    form: &'static str,
    answer: Option<(usize, &Answer)>,
) -> ToolCall {
    let s = &trace.spans[at];
    let ctx = seen.get(at).copied().unwrap_or_default();
    // The call ran after the model answered and before the next request.
    let start = s.span.end_time_unix_nano.max(s.span.start_time_unix_nano);
    let end = answer
        .map(|(i, _)| trace.spans[i].span.start_time_unix_nano)
        .filter(|&e| e >= start)
        .unwrap_or(start);
    let result = answer
        .filter(|_| x.results)
        .and_then(|(_, ans)| ans.content.as_ref())
        .map(|c| {
            CallResult::Value(match c {
                // LlamaIndex hands the model `str()` of what a tool returned.
                Value::String(t) => super::source::parse_json_or_literal(t),
                other => other.clone(),
            })
        });
    let agent = agent_of(trace, out, ctx);
    let function = super::tool_name::mcp_parts(&a.name).map(|(_, tool)| tool);
    // A call the result says threw is a failed call with the error's text
    // (`ai_sdk_output`); a denied one stays a call, noted.
    let (status, error_message) = match answer.map(|(_, ans)| &ans.outcome) {
        Some(ai_sdk_output::Outcome::Failed(m)) => (CallStatus::Error, Some(m.clone())),
        Some(ai_sdk_output::Outcome::Denied) => {
            // Counted as a refused call is (docs/conventions.md, "Refused
            // calls"): the agent asked for it; the note says it never ran.
            out.notes.push(format!(
                "`{}`{} was denied before it ran (`execution-denied`): counted with the denial's reason as its result",
                a.name,
                id_text(a)
            ));
            (CallStatus::Ok, None)
        }
        _ => (CallStatus::Ok, None),
    };
    ToolCall {
        name: function.unwrap_or(&a.name).to_string(),
        args: args_of(&a.args),
        result,
        status,
        error_message,
        error_type: None,
        span_id: s.span_id,
        start_time_unix_nano: start,
        depth: ctx.depth,
        agent,
        retriever: false,
        convention: format!("{form}-messages"),
        from: Some(FROM_CONVERSATION),
        // The name the model gave, when it is not the function's.
        span_name: function.map(|_| a.name.clone()),
        mcp_server: super::tool_name::server(&a.name, function.unwrap_or(&a.name)),
        within: ctx.within.map(|w| trace.spans[w].span_id),
        end_time_unix_nano: end,
        call_id: a.id.clone(),
    }
}

/// The model's arguments as the call's; text that is a Python dict or list
/// literal (`str(dict)`) is read as its value.
fn args_of(v: &Value) -> CallArgs {
    match v {
        Value::Null => CallArgs::None,
        Value::String(t) => CallArgs::Value(super::source::parse_json_or_literal(t)),
        other => CallArgs::Value(other.clone()),
    }
}

use super::source::tool_call_id as call_id;

#[cfg(test)]
mod tests;
