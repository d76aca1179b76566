//! `toolscore inspect`: what extraction found in each trace, as a run tree
//! (table) or one JSON object per trace.

use std::collections::HashMap;
use std::io::{self, Write};

use super::printable;

use serde::Serialize;
use serde_json::{json, Value};

use crate::assemble::{SpanId, Trace};
use crate::extract::facts::{offered_tools, request_of, OfferedTools};
use crate::extract::{AgentRun, Analysis, CallStatus, ToolCall};

/// The JSONL row of one trace (`inspect --format jsonl`): its calls, skipped
/// retrievers, agent runs, session and, with `inspect --expected`, the
/// cases it joins. Serialized straight from the calls: their arguments and
/// results are often kilobytes of JSON, which a `Value` tree would copy
/// (and a raw result would be parsed). Keys in alphabetical order, as
/// always.
#[derive(Debug, Serialize)]
pub struct InspectRow<'a> {
    pub agent_runs: &'a [AgentRun],
    /// What an LLM judge is shown besides the calls.
    pub available_tools: OfferedTools,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cases: Option<Value>,
    pub orphans: usize,
    pub request: Option<String>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub retrievers: &'a [ToolCall],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<Value>,
    pub spans: usize,
    pub tools: &'a [ToolCall],
    pub trace_id: String,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub warnings: &'a [String],
}

impl<'a> InspectRow<'a> {
    pub fn of(
        trace: &Trace,
        a: &'a Analysis,
        session: Option<&(String, String)>,
        joins: Option<&[(String, &'static str)]>,
    ) -> InspectRow<'a> {
        InspectRow {
            agent_runs: &a.runs,
            available_tools: offered_tools(trace),
            cases: joins.map(joins_json),
            orphans: trace.orphans.len(),
            request: request_of(trace),
            retrievers: &a.retrievers,
            session: session.map(|(key, id)| json!({"key": key, "id": id})),
            spans: trace.spans.len(),
            tools: &a.calls,
            trace_id: trace.id.to_hex(),
            warnings: &a.warnings,
        }
    }
}

/// [`InspectRow`] as JSON text.
pub fn inspect_row(
    trace: &Trace,
    a: &Analysis,
    session: Option<&(String, String)>,
    joins: Option<&[(String, &'static str)]>,
) -> String {
    let mut out = Vec::new();
    write_inspect_row(&mut out, trace, a, session, joins);
    // serde_json writes UTF-8 only.
    String::from_utf8(out).unwrap_or_default()
}

/// [`inspect_row`] appended to `out` as a line: no text of its own to
/// allocate and copy.
pub fn write_inspect_row(
    out: &mut Vec<u8>,
    trace: &Trace,
    a: &Analysis,
    session: Option<&(String, String)>,
    joins: Option<&[(String, &'static str)]>,
) {
    let start = out.len();
    // Serializing these types cannot fail (string keys only); were it to,
    // the part written is taken back.
    if serde_json::to_writer(&mut *out, &InspectRow::of(trace, a, session, joins)).is_err() {
        out.truncate(start);
    }
    out.push(b'\n');
}

/// The cases a trace joins, as `inspect --expected` writes them in JSONL:
/// `[{"case", "joined_by"}]`.
pub fn joins_json(joins: &[(String, &'static str)]) -> Value {
    json!(joins
        .iter()
        .map(|(case, by)| json!({"case": case, "joined_by": by}))
        .collect::<Vec<_>>())
}

/// The `cases:` line under a trace's tree (`inspect --expected`).
pub fn write_joins(out: &mut dyn Write, joins: &[(String, &'static str)]) -> io::Result<()> {
    if joins.is_empty() {
        return writeln!(out, "  cases: none joined");
    }
    let list: Vec<String> = joins
        .iter()
        .map(|(case, by)| format!("{} (by {by})", printable(case)))
        .collect();
    writeln!(out, "  cases: {}", list.join(", "))
}

/// First line of a possibly multi-line message (tracebacks), shortened.
fn first_line(m: &str) -> String {
    let first = m.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    first.chars().take(120).collect()
}

enum Node<'a> {
    Run(&'a crate::extract::AgentRun),
    Call(&'a ToolCall, bool),
}

impl Node<'_> {
    fn span(&self) -> SpanId {
        match self {
            Node::Run(r) => r.span_id,
            Node::Call(c, _) => c.span_id,
        }
    }
    fn within(&self) -> Option<SpanId> {
        match self {
            Node::Run(r) => r.within,
            Node::Call(c, _) => c.within,
        }
    }
    fn start(&self) -> u64 {
        match self {
            Node::Run(r) => r.start_time_unix_nano,
            Node::Call(c, _) => c.start_time_unix_nano,
        }
    }
}

fn call_line(c: &ToolCall, counted: bool) -> String {
    let args = c
        .args
        .value()
        .map_or_else(|| "-".to_string(), |a| a.to_string());
    let status = match (&c.status, &c.error_message) {
        (CallStatus::Error, Some(m)) => format!("error: {}", first_line(m)),
        (CallStatus::Error, None) => "error".to_string(),
        (CallStatus::Ok, _) => "ok".to_string(),
    };
    let tag = match (c.retriever, counted, c.from) {
        (true, true, _) => "retriever; ".to_string(),
        (true, false, _) => "retriever, not counted (--retrievers-as-tools); ".to_string(),
        (_, _, Some(from)) => format!("from the {from}; "),
        _ => match &c.span_name {
            Some(n) => format!("span named {}; ", printable(n)),
            None => String::new(),
        },
    };
    // Names and messages come from the trace: escaped for the terminal
    // (arguments are JSON text, whose strings are escaped already).
    format!(
        "{} {}  [{tag}{}; {}; span {}]",
        printable(&c.name),
        args,
        printable(&status),
        printable(&c.convention),
        c.span_id
    )
}

/// One trace as a tree of agent runs and tool calls (nesting by span
/// parents: a sub-agent run inside a tool sits under that tool).
pub fn write_inspect_tree(
    out: &mut dyn Write,
    trace: &Trace,
    a: &Analysis,
    session: Option<&(String, String)>,
) -> io::Result<()> {
    write!(
        out,
        "trace {}  ({} spans, {} tool calls, {} agent runs",
        trace.id,
        trace.spans.len(),
        a.calls.len(),
        a.runs.len()
    )?;
    if !a.retrievers.is_empty() {
        write!(out, ", {} retrievers not counted", a.retrievers.len())?;
    }
    if let Some((k, v)) = session {
        write!(out, "; session {}={}", printable(k), printable(v))?;
    }
    writeln!(out, ")")?;
    if let Some(r) = request_of(trace) {
        writeln!(out, "  request: {}", printable(&first_line(&r)))?;
    }
    let tools = offered_tools(trace);
    if !tools.is_empty() {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        writeln!(out, "  tools available: {}", printable(&names.join(", ")))?;
    }
    let mut nodes: Vec<Node> = a
        .runs
        .iter()
        .map(Node::Run)
        .chain(a.calls.iter().map(|c| Node::Call(c, true)))
        .chain(a.retrievers.iter().map(|c| Node::Call(c, false)))
        .collect();
    nodes.sort_by_key(|n| n.start());
    // Children in start order under the node their `within` names; a node
    // whose `within` is not shown is a root. Printed depth-first with an
    // explicit stack: a recursive walk overflows on very deep traces.
    // Calls from the conversation hold nothing, and share their model
    // span's id (which may be an agent run's).
    let index: HashMap<SpanId, usize> = nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| !matches!(n, Node::Call(c, _) if c.from.is_some()))
        .map(|(i, n)| (n.span(), i))
        .collect();
    let parent: Vec<Option<usize>> = nodes
        .iter()
        .map(|n| n.within().and_then(|w| index.get(&w).copied()))
        .collect();
    let mut kids: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (i, p) in parent.iter().enumerate() {
        if let Some(p) = *p {
            kids[p].push(i);
        }
    }
    let mut printed = vec![false; nodes.len()];
    // Roots first; then anything a `within` cycle (malformed analysis) left out.
    let starts = (0..nodes.len())
        .filter(|&i| parent[i].is_none())
        .chain(0..nodes.len());
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for root in starts {
        if printed[root] {
            continue;
        }
        stack.push((root, 0));
        while let Some((i, level)) = stack.pop() {
            if printed[i] {
                continue;
            }
            printed[i] = true;
            write_indent(out, level)?;
            match &nodes[i] {
                Node::Run(r) => writeln!(
                    out,
                    "agent {}  [{}; span {}]",
                    printable(&r.name),
                    printable(&r.convention),
                    r.span_id
                )?,
                Node::Call(c, counted) => writeln!(out, "{}", call_line(c, *counted))?,
            }
            stack.extend(kids[i].iter().rev().map(|&k| (k, level + 1)));
        }
    }
    for w in &a.warnings {
        writeln!(out, "  warning: {}", printable(w))?;
    }
    Ok(())
}

/// Printed nesting stops growing here, so output stays linear in the
/// number of nodes however deep the tree is.
const MAX_INDENT: usize = 32;

/// Two spaces per level (the top level is indented once); past
/// [`MAX_INDENT`] levels the level is written as a number instead.
fn write_indent(out: &mut dyn Write, level: usize) -> io::Result<()> {
    for _ in 0..=level.min(MAX_INDENT) {
        out.write_all(b"  ")?;
    }
    if level > MAX_INDENT {
        write!(out, "[depth {level}] ")?;
    }
    Ok(())
}
