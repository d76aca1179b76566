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
//! Arguments that are a placeholder warn whatever the result; ADK's `{}`
//! arguments and result are its placeholder when its model calls' requests
//! are `{}` too (`empty_when`). Content elsewhere in the trace says capture
//! was on only when the calls' writer recorded it (another writer's content
//! says nothing of this one's switch).
//!
//! Decided on each read of a trace, after the conversation witness, the
//! joins and the calls carried from other traces filled what they could: a
//! trace read again because a later trace completes its calls (the carry's
//! `witnessed`, `deferred`, `twice`) decides again, and the read that is
//! due is the one reported. Not warned of: arguments `{}` (recorded,
//! empty; but for `empty_when`), a call with a result (a tool without arguments), a failed call
//! with its error message, a call rebuilt from the model's messages (asked
//! for, not recorded by a tool span).

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

use crate::assemble::{SpanId, SpanRecord, Trace};

use super::{Analysis, CallArgs, CallResult, ToolCall};

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
    #[serde(default)]
    empty_when: Option<EmptyWhen>,
}

/// When a writer's `{}` arguments and `{}` result are its placeholder:
/// every span with `key` but not `not_on` holds `value` there.
#[derive(Debug, Default, Deserialize)]
struct EmptyWhen {
    key: String,
    value: String,
    not_on: String,
}

impl EmptyWhen {
    fn holds(&self, trace: &Trace) -> bool {
        let mut marked = trace
            .spans
            .iter()
            .filter(|s| s.attr(&self.not_on).is_none())
            .filter_map(|s| s.attr_str(&self.key))
            .peekable();
        marked.peek().is_some() && marked.all(|v| v == self.value)
    }
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
    /// Whether span `s` tells this writer by a key or its scope.
    fn tells_span(&self, s: &SpanRecord) -> bool {
        self.keys.iter().any(|k| s.attr(k).is_some())
            || self
                .scopes
                .iter()
                .any(|p| s.scope.name.starts_with(p.as_str()))
    }

    fn tells(&self, c: &ToolCall, s: Option<&SpanRecord>) -> bool {
        s.is_some_and(|s| self.tells_span(s)) || self.conventions.contains(&c.convention)
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

/// Whether the arguments are a writer's placeholder for hidden ones.
fn hidden_args(args: &CallArgs) -> bool {
    match args {
        CallArgs::None => false,
        CallArgs::Value(v) | CallArgs::Ordered { value: v, .. } => placeholder(v),
        CallArgs::Text(t) => placeholder_json(t),
    }
}

/// Whether the call's arguments are not recorded (`{}` is recorded).
pub(super) fn no_args(args: &CallArgs) -> bool {
    matches!(args, CallArgs::None) || hidden_args(args)
}

/// Whether the result is a writer's placeholder for a hidden one.
fn hidden_result(c: &ToolCall) -> bool {
    match &c.result {
        Some(CallResult::Value(v)) => placeholder(v),
        Some(CallResult::Json(t)) => placeholder_json(t),
        None => false,
    }
}

/// Whether the call's result is not recorded; with results not read,
/// `collect` noted the calls without arguments whose span has one
/// (`Analysis::unread_results`).
fn no_result(out: &Analysis, c: &ToolCall) -> bool {
    match &c.result {
        Some(_) => hidden_result(c),
        None => !out.unread_results.contains(&c.span_id),
    }
}

/// Whether the call holds `{}` arguments and a `{}` result (a writer's
/// placeholder only when its `empty_when` holds).
fn empty_both(c: &ToolCall) -> bool {
    let empty = |v: &Value| v.as_object().is_some_and(serde_json::Map::is_empty);
    c.from.is_none()
        && c.error_message.is_none()
        && c.args.value().is_some_and(empty)
        && match &c.result {
            Some(CallResult::Value(v)) => empty(v),
            Some(CallResult::Json(t)) => t.trim() == "{}",
            None => false,
        }
}

/// What a tool span's call lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lack {
    /// Neither arguments nor a result nor an error message, no placeholder.
    Neither,
    /// The same, a placeholder in the place of one: the writer hid them.
    NeitherHidden,
    /// A placeholder for the arguments, a result or an error beside it.
    ArgsHidden,
}

/// What call `c` of a tool span lacks, if anything. The cheap tests go
/// first: nearly every call has arguments.
fn lack(out: &Analysis, c: &ToolCall) -> Option<Lack> {
    if c.from.is_some() || !no_args(&c.args) {
        return None;
    }
    let args_hidden = hidden_args(&c.args);
    if c.error_message.is_none() && no_result(out, c) {
        return Some(match args_hidden || hidden_result(c) {
            true => Lack::NeitherHidden,
            false => Lack::Neither,
        });
    }
    args_hidden.then_some(Lack::ArgsHidden)
}

/// Whether key `k` holds message content (`[elsewhere]`).
fn content_key(k: &str) -> bool {
    let e = &table().elsewhere;
    e.keys.iter().any(|w| w == k)
        || (e.prefixes.iter().any(|p| k.starts_with(p.as_str()))
            && e.suffixes.iter().any(|x| k.ends_with(x.as_str())))
}

/// Where the trace shows content capture was on for writer `w` (`None`:
/// not told apart) of calls `calls` (`skip`: every warned call's span): a
/// key of another span holding message content (of a span `w` tells or
/// with the scope of one of `calls`, when `w` is known: another writer's
/// content says nothing of its switch), or another call of `w` with its
/// content.
fn content_elsewhere(
    (trace, out): (&Trace, &Analysis),
    by_id: &HashMap<SpanId, &SpanRecord>,
    (w, calls): (Option<&Writer>, &[&ToolCall]),
    skip: &HashSet<SpanId>,
) -> Option<String> {
    let scopes: HashSet<&str> = calls
        .iter()
        .filter_map(|c| by_id.get(&c.span_id))
        .map(|s| s.scope.name.as_str())
        .filter(|n| !n.is_empty())
        .collect();
    let same = |s: &SpanRecord| {
        w.is_none_or(|w| w.tells_span(s)) || scopes.contains(s.scope.name.as_str())
    };
    let key = trace
        .spans
        .iter()
        .filter(|s| !skip.contains(&s.span_id) && same(s))
        .find_map(|s| {
            s.span
                .attributes()
                .find(|(k, v)| {
                    content_key(k)
                        && v.as_ref()
                            .and_then(|v| v.as_str())
                            .is_some_and(|t| !t.is_empty() && !placeholder_str(t))
                })
                .map(|(k, _)| format!("`{k}` in span {}", s.span_id))
        });
    if key.is_some() {
        return key;
    }
    let w = w?;
    out.calls
        .iter()
        .find(|c| {
            c.from.is_none()
                && !skip.contains(&c.span_id)
                && w.tells(c, by_id.get(&c.span_id).copied())
                && lack(out, c).is_none()
        })
        .map(|c| format!("the call `{}` in span {}", c.name, c.span_id))
}

/// Warns of the tool spans' calls in `out` that hold neither arguments nor
/// a result, or a placeholder for their arguments: one warning per writer
/// and lack.
pub(super) fn warn(trace: &Trace, out: &mut Analysis) {
    // Most traces: every call has arguments, one test each.
    if !out
        .calls
        .iter()
        .any(|c| (no_args(&c.args) && c.from.is_none()) || empty_both(c))
    {
        return;
    }
    // By span id: a trace may hold thousands of such calls.
    let by_id: HashMap<SpanId, &SpanRecord> = trace.spans.iter().map(|s| (s.span_id, s)).collect();
    let t = table();
    // Grouped by writer and lack, in the order the calls come.
    let mut groups: Vec<(Option<&Writer>, Lack, Vec<&ToolCall>)> = Vec::new();
    // Whether each writer's `empty_when` holds, decided on first need.
    let mut empty_holds: HashMap<*const Writer, bool> = HashMap::new();
    for c in &out.calls {
        let s = by_id.get(&c.span_id).copied();
        let w = t.writer.iter().find(|w| w.tells(c, s));
        let placeholder_pair = || {
            let e = w.and_then(|w| w.empty_when.as_ref().map(|e| (w, e)))?;
            let holds = *empty_holds
                .entry(std::ptr::from_ref(e.0))
                .or_insert_with(|| e.1.holds(trace));
            (holds && empty_both(c)).then_some(Lack::NeitherHidden)
        };
        let Some(l) = lack(out, c).or_else(placeholder_pair) else {
            continue;
        };
        match groups
            .iter_mut()
            .find(|(g, gl, _)| *gl == l && g.map(std::ptr::from_ref) == w.map(std::ptr::from_ref))
        {
            Some((_, _, calls)) => calls.push(c),
            None => groups.push((w, l, vec![c])),
        }
    }
    let spans: HashSet<SpanId> = groups
        .iter()
        .flat_map(|(_, _, calls)| calls.iter().map(|c| c.span_id))
        .collect();
    let mut warnings = Vec::with_capacity(groups.len());
    for (w, l, calls) in &groups {
        // A placeholder is the writer's word that it hid the content.
        let elsewhere = (*l == Lack::Neither)
            .then(|| content_elsewhere((trace, out), &by_id, (*w, calls), &spans))
            .flatten();
        warnings.push(message(w.unwrap_or(&t.generic), *l, calls, elsewhere));
    }
    out.warnings.extend(warnings);
}

/// One writer's warning.
fn message(w: &Writer, l: Lack, calls: &[&ToolCall], elsewhere: Option<String>) -> String {
    let mut named: Vec<String> = calls
        .iter()
        .take(NAMED)
        .map(|c| format!("`{}` (span {})", c.name, c.span_id))
        .collect();
    if calls.len() > NAMED {
        named.push(format!("{} more", calls.len() - NAMED));
    }
    let n = calls.len();
    let what = match (l, n) {
        (Lack::ArgsHidden, 1) => "holds a placeholder for its arguments",
        (Lack::ArgsHidden, _) => "hold a placeholder for their arguments",
        (_, 1) => "holds neither arguments nor a result",
        _ => "hold neither arguments nor a result",
    };
    let head = format!(
        "{n} tool call{} {what} ({})",
        if n == 1 { "" } else { "s" },
        named.join(", ")
    );
    let why = match elsewhere {
        // Content capture was on: the spans themselves record none.
        Some(there) => format!(
            "this trace records content elsewhere ({there}), so content capture was on: these tool spans record none of their own (a writer that never does, a value it could not record, or calls awaiting approval)"
        ),
        None => format!("{} {}; {}", w.name, w.reason, w.set),
    };
    format!("{head}: {why}; argument checks find no arguments for them")
}

#[cfg(test)]
#[path = "no_content_tests.rs"]
mod tests;
