//! A tool span its tracer opened and never filled in, standing for the call
//! the model asked for that no tool span shows (docs/conventions.md, "The
//! conversation witness", "Blank tool spans").
//!
//! Google ADK TS opens `execute_tool <name>` before the tool runs and sets
//! its attributes (tool name, call id, arguments, response) once the tool
//! returned: a tool that threw leaves a span with its name only, and no
//! rule reads it. The model's ask (`functionCall` in the `call_llm`
//! span's response, no call id) and its outcome (the next request's
//! `functionResponse`, `{"error": ...}`) are the only record of the call.
//!
//! Such a blank span (no attribute at all, named after a template of the
//! vocabulary `blank_tool_span_names`, `execute_tool {name}`, taken by no
//! rule) is where the call ran: the ask of that tool that the joins left
//! unjoined is rebuilt from the conversation as an agent run's toolless
//! calls are (answered by a later request, else listed and not counted),
//! and the call takes the blank span's id and times. Each ask and each
//! blank span pair once, in order, and only within the ask's turn: the
//! span starts no earlier than the span that asked and before the next
//! span recording a request (one starting after the asking span ended: a
//! client's span of the same model call, inside it, records that call's
//! own request). A tool span that recorded the call joins the
//! ask first (by call id, else by name and, of several asks of the tool,
//! equal arguments: [`super::joins`]), so no call is counted twice. A
//! span that failed may hold the attributes that say so and still be blank
//! (`blank_tool_span_error_keys`: AutoGen's under Langtrace keep
//! `error.type`); its call fails with the span's error.

use std::sync::OnceLock;

use super::{has_any_input, AskedAt, Ctx};
use crate::assemble::{SpanRecord, Trace};
use crate::extract::rules::builtin_list;
use crate::extract::tool_name::normalized;
use crate::extract::{failure_of, CallStatus, ToolCall, STATUS_ERROR};

/// An ask (its index in the witness's asks) and the blank span (its index
/// in the trace) that stands for its call.
pub(super) type Pair = (usize, usize);

/// The tool a blank span of `s` names: `None` unless the span has no
/// attribute but those saying how it failed (`blank_tool_span_error_keys`)
/// and its name fills a template of `blank_tool_span_names`.
fn blank_tool(s: &SpanRecord) -> Option<&str> {
    let mut keys = s.span.attr_keys();
    if keys.len() != 0 {
        static ERROR_KEYS: OnceLock<&'static [String]> = OnceLock::new();
        let error_keys = ERROR_KEYS.get_or_init(|| builtin_list("blank_tool_span_error_keys"));
        if !keys.all(|k| error_keys.iter().any(|e| e.as_bytes() == k)) {
            return None;
        }
    }
    let name = s.span.name();
    static NAMES: OnceLock<&'static [String]> = OnceLock::new();
    let names = NAMES.get_or_init(|| builtin_list("blank_tool_span_names"));
    names.iter().find_map(|t| {
        let (before, after) = t.split_once("{name}")?;
        let tool = name.strip_prefix(before)?.strip_suffix(after)?;
        (!tool.is_empty() && !tool.contains(char::is_whitespace)).then_some(tool)
    })
}

/// Pairs the asks `open` says are left with the blank spans of their tools
/// (see the module's text). `calls`: the calls rules read (a span one of
/// them was read from is no blank span).
pub(super) fn pair(
    trace: &Trace,
    asked: &[AskedAt],
    open: impl Fn(usize) -> bool,
    calls: &[ToolCall],
) -> Vec<Pair> {
    if asked.is_empty() {
        return Vec::new();
    }
    // Most traces have none: one look at each span's attribute count first.
    let blank: Vec<(usize, &str)> = trace
        .spans
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((i, blank_tool(s)?)))
        .filter(|(i, _)| {
            let id = trace.spans[*i].span_id;
            !calls.iter().any(|c| c.span_id == id)
        })
        .collect();
    if blank.is_empty() {
        return Vec::new();
    }
    let start = |i: usize| trace.spans[i].span.start_time_unix_nano;
    // The spans recording a request, by start: an ask's turn ends at the
    // first one after the span that asked.
    let mut requests: Vec<u64> = (0..trace.spans.len())
        .filter(|&i| has_any_input(&trace.spans[i]))
        .map(start)
        .collect();
    requests.sort_unstable();
    let mut used = vec![false; blank.len()];
    let mut pairs = Vec::new();
    for (k, at) in asked.iter().enumerate().filter(|(k, _)| open(*k)) {
        let from = start(at.span);
        // A request recorded inside the asking span is its own (a client
        // instrumentation's span of the same model call under ADK's
        // `call_llm`: OpenInference's), not the next turn's.
        let asked_end = trace.spans[at.span].span.end_time_unix_nano;
        let to = requests
            .iter()
            .copied()
            .find(|&r| r > from && r > asked_end)
            .unwrap_or(u64::MAX);
        let tool = normalized(&at.asked.name);
        let found = blank.iter().enumerate().find(|(b, (i, name))| {
            !used[*b] && *name == tool && *i != at.span && (from..to).contains(&start(*i))
        });
        if let Some((b, &(i, _))) = found {
            used[b] = true;
            pairs.push((k, i));
        }
    }
    pairs
}

/// Gives the calls rebuilt for paired asks (`calls`, those the rebuild
/// added) their blank span's id, times and place; a note says so of each.
pub(super) fn retime(
    trace: &Trace,
    seen: &[Ctx],
    asked: &[AskedAt],
    pairs: &[Pair],
    calls: &mut [ToolCall],
    notes: &mut Vec<String>,
) {
    let mut done = vec![false; calls.len()];
    for &(k, i) in pairs {
        let (Some(at), Some(blank)) = (asked.get(k), trace.spans.get(i)) else {
            continue;
        };
        let asker = trace.spans[at.span].span_id;
        let args = super::args_of(&at.asked.args);
        let of_ask = |c: usize| {
            !done[c] && calls[c].span_id == asker && calls[c].name == normalized(&at.asked.name)
        };
        // The ask's own arguments first; the rebuild may have taken fuller
        // ones from a later request (`later`): then the first of the tool.
        let c = (0..calls.len())
            .find(|&c| of_ask(c) && calls[c].args.parsed() == args.parsed())
            .or_else(|| (0..calls.len()).find(|&c| of_ask(c)));
        let Some(c) = c else {
            continue;
        };
        done[c] = true;
        let call = &mut calls[c];
        call.span_id = blank.span_id;
        call.start_time_unix_nano = blank.span.start_time_unix_nano;
        call.end_time_unix_nano = blank
            .span
            .end_time_unix_nano
            .max(blank.span.start_time_unix_nano);
        if let Some(ctx) = seen.get(i) {
            call.depth = ctx.depth;
            call.within = ctx.within.map(|w| trace.spans[w].span_id);
        }
        // The span says how the run went where it failed; the
        // conversation's text stays the result (what the model was shown).
        if blank
            .span
            .status
            .as_ref()
            .is_some_and(|st| st.code == STATUS_ERROR)
        {
            let (message, kind) = failure_of(blank, None);
            call.status = CallStatus::Error;
            call.error_message = message.or(call.error_message.take());
            call.error_type = kind.or(call.error_type.take());
        }
        notes.push(format!(
            "tool span {} (`{}`) records nothing of its call: it is the call of `{}` the model's output in span {} asked for, rebuilt from the conversation",
            blank.span_id,
            blank.span.name(),
            call.name,
            asker
        ));
    }
}
