//! Tool calls recorded without their content (docs/conventions.md, "Calls
//! without content").
//!
//! Many writers record a tool call's arguments and result only when told
//! to: Google ADK and the OTel GenAI instrumentations without
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`, OpenLLMetry with
//! `TRACELOOP_TRACE_CONTENT=false`, OpenInference with its inputs and
//! outputs hidden (`__REDACTED__` in their place); AutoGen's own spans never
//! do. Their tool spans still make calls, with null arguments and no result,
//! and every argument check fails with no reason given. A trace whose tool
//! spans' calls hold neither warns of them: how many, and, where the span
//! tells its writer ([`no_content.toml`](self)), why and what to set.
//!
//! Decided on each read of a trace, after the conversation witness, the
//! joins and the calls carried from other traces filled what they could: a
//! trace read again because a later trace completes its calls (the carry's
//! `witnessed`, `deferred`, `twice`) decides again, and the read that is
//! due is the one reported. Not warned of: arguments `{}` (recorded,
//! empty), a call with a result (a tool without arguments), a failed call
//! with its error message, a call rebuilt from the model's messages (asked
//! for, not recorded by a tool span).

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

use crate::assemble::{SpanId, SpanRecord, Trace};

use super::rules::Kind;
use super::{
    event_attrs, family_ns, ns_result, own_result, result_of, Analysis, CallArgs, CallResult,
    Extractor, ToolCall,
};

/// Calls named in a warning; the rest are counted.
const NAMED: usize = 4;

/// A writer that records content only when asked (`no_content.toml`).
#[derive(Debug, Default, Deserialize)]
struct Writer {
    name: String,
    #[serde(default)]
    keys: Vec<String>,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    conventions: Vec<String>,
    #[serde(default)]
    placeholders: Vec<String>,
    reason: String,
    set: String,
}

/// Keys that hold message content (`[elsewhere]`).
#[derive(Debug, Default, Deserialize)]
struct Elsewhere {
    keys: Vec<String>,
    prefixes: Vec<String>,
    suffixes: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Table {
    writer: Vec<Writer>,
    generic: Writer,
    elsewhere: Elsewhere,
}

fn parse() -> Result<Table, toml::de::Error> {
    toml::from_str(include_str!("no_content.toml"))
}

/// The table, read once (a table that does not parse, which a unit test
/// rules out, names no writer).
fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| parse().unwrap_or_default())
}

impl Writer {
    fn tells(&self, c: &ToolCall, s: Option<&SpanRecord>) -> bool {
        let by_span = s.is_some_and(|s| {
            self.keys.iter().any(|k| s.attr(k).is_some())
                || self
                    .scopes
                    .iter()
                    .any(|p| s.scope.name.starts_with(p.as_str()))
        });
        by_span || self.conventions.contains(&c.convention)
    }
}

/// Whether `t` is a placeholder some writer puts for hidden content.
fn placeholder_str(t: &str) -> bool {
    table()
        .writer
        .iter()
        .any(|w| w.placeholders.iter().any(|p| p == t))
}

/// [`placeholder_str`] of a string value.
fn placeholder(v: &Value) -> bool {
    v.as_str().is_some_and(placeholder_str)
}

/// [`placeholder_str`] of JSON text, unparsed: a placeholder has nothing
/// to escape, so its JSON is the text in quotes (no parse on every call).
fn placeholder_json(t: &str) -> bool {
    t.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .is_some_and(placeholder_str)
}

/// Whether the call's arguments are not recorded (`{}` is recorded).
fn no_args(args: &CallArgs) -> bool {
    match args {
        CallArgs::None => true,
        CallArgs::Value(v) | CallArgs::Ordered { value: v, .. } => placeholder(v),
        CallArgs::Text(t) => placeholder_json(t),
    }
}

/// Whether the call's result is not recorded; with results not read, the
/// span's own sources are asked (a tool without arguments has its result).
fn no_result(x: &Extractor, c: &ToolCall, s: Option<&SpanRecord>) -> bool {
    match &c.result {
        Some(CallResult::Value(v)) => placeholder(v),
        Some(CallResult::Json(t)) => placeholder_json(t),
        None if x.results => true,
        None => !s.is_some_and(|s| records_result(x, s)),
    }
}

/// Whether span `s`, a call's, records a result of its own, as the
/// extractor's `collect` reads it: for a reader that does not read results
/// (on a call without arguments only).
fn records_result(x: &Extractor, s: &SpanRecord) -> bool {
    let Some(rule) = x.rule_for(s) else {
        return false;
    };
    let named = rule
        .family
        .as_ref()
        .and(family_ns(rule, s))
        .map(|ns| rule.in_namespace(ns));
    let rule = named.as_ref().unwrap_or(rule);
    let generic = x
        .rules
        .iter()
        .rev()
        .find(|r| r.kind() == Kind::Tool && r.family.as_ref().is_some_and(|f| !f.names_span));
    own_result(rule, s).is_some()
        || event_attrs::sources(&rule.result, s)
            .iter()
            .any(|src| result_of(src, s).is_some())
        || ns_result::of(generic, rule, s).is_some()
}

/// A tool span's call with neither arguments nor a result nor an error
/// message. The cheap tests go first: nearly every call has arguments.
fn hollow(x: &Extractor, c: &ToolCall, s: Option<&SpanRecord>) -> bool {
    no_args(&c.args) && c.from.is_none() && c.error_message.is_none() && no_result(x, c, s)
}

/// The first key of a span other than `skip` holding message content, and
/// that span.
fn content_elsewhere<'t>(
    trace: &'t Trace,
    skip: &HashSet<SpanId>,
) -> Option<(&'t str, &'t SpanRecord)> {
    let e = &table().elsewhere;
    let content = |k: &str| {
        e.keys.iter().any(|w| w == k)
            || (e.prefixes.iter().any(|p| k.starts_with(p.as_str()))
                && e.suffixes.iter().any(|x| k.ends_with(x.as_str())))
    };
    trace
        .spans
        .iter()
        .filter(|s| !skip.contains(&s.span_id))
        .find_map(|s| {
            s.span
                .attributes()
                .find(|(k, v)| {
                    content(k)
                        && v.as_ref()
                            .and_then(|v| v.as_str())
                            .is_some_and(|t| !t.is_empty() && !placeholder_str(t))
                })
                .map(|(k, _)| (k, s))
        })
}

/// Warns of the tool spans' calls in `out` that hold neither arguments nor
/// a result, one warning per writer.
pub(super) fn warn(x: &Extractor, trace: &Trace, out: &mut Analysis) {
    // Most traces: every call has arguments, one test each.
    if !out
        .calls
        .iter()
        .any(|c| no_args(&c.args) && c.from.is_none())
    {
        return;
    }
    // By span id: a trace may hold thousands of such calls.
    let by_id: HashMap<SpanId, &SpanRecord> = trace.spans.iter().map(|s| (s.span_id, s)).collect();
    let found: Vec<(&ToolCall, Option<&SpanRecord>)> = out
        .calls
        .iter()
        .map(|c| (c, by_id.get(&c.span_id).copied()))
        .filter(|(c, s)| hollow(x, c, *s))
        .collect();
    if found.is_empty() {
        return;
    }
    let t = table();
    let spans: HashSet<SpanId> = found.iter().map(|(c, _)| c.span_id).collect();
    let elsewhere = content_elsewhere(trace, &spans);
    // Grouped by writer, in the order the calls come.
    let mut groups: Vec<(&Writer, Vec<&ToolCall>)> = Vec::new();
    for (c, s) in &found {
        let w = t
            .writer
            .iter()
            .find(|w| w.tells(c, *s))
            .unwrap_or(&t.generic);
        match groups.iter_mut().find(|(g, _)| std::ptr::eq(*g, w)) {
            Some((_, calls)) => calls.push(c),
            None => groups.push((w, vec![c])),
        }
    }
    for (w, calls) in groups {
        out.warnings.push(message(w, &calls, elsewhere));
    }
}

/// One writer's warning.
fn message(w: &Writer, calls: &[&ToolCall], elsewhere: Option<(&str, &SpanRecord)>) -> String {
    let mut named: Vec<String> = calls
        .iter()
        .take(NAMED)
        .map(|c| format!("`{}` (span {})", c.name, c.span_id))
        .collect();
    if calls.len() > NAMED {
        named.push(format!("{} more", calls.len() - NAMED));
    }
    let n = calls.len();
    let head = format!(
        "{n} tool call{} hold{} neither arguments nor a result ({})",
        if n == 1 { "" } else { "s" },
        if n == 1 { "s" } else { "" },
        named.join(", ")
    );
    let why = match elsewhere {
        // Content capture was on: the spans themselves record none.
        Some((key, s)) => format!(
            "this trace records message content elsewhere (`{key}` in span {}), so content capture was on: these tool spans record none of their own (a writer that never does, or calls awaiting approval)",
            s.span_id
        ),
        None => format!("{} {}; {}", w.name, w.reason, w.set),
    };
    format!("{head}: {why}; argument checks find no arguments for them")
}

#[cfg(test)]
#[path = "no_content_tests.rs"]
mod tests;
