//! `toolscore inspect --explain`: per span, the rule that classified it or the
//! rules that almost did, as a table or one JSON object per span.

use std::io::{self, Write};

use serde_json::{json, Value};

use super::printable;
use crate::assemble::Trace;
use crate::extract::conversation::reads_messages;
use crate::extract::explain::{NearMiss, Reason, SpanExplanation};
use crate::extract::rules::Kind;
use crate::extract::{Analysis, ToolCall};

/// The JSONL row of one span.
pub fn explain_row(trace: &Trace, e: &SpanExplanation) -> Value {
    let mut row = json!({ "trace_id": trace.id.to_string() });
    if let (Some(obj), Value::Object(span)) = (row.as_object_mut(), json!(e)) {
        obj.extend(span);
    }
    row
}

fn verdict(e: &SpanExplanation) -> String {
    let Some(m) = &e.matched else {
        return "no rule matched".to_string();
    };
    let name = m.name.as_deref().unwrap_or("");
    match (m.kind, &m.name, m.call) {
        (_, None, _) => format!(
            "[{}] matched but no name source gave a name: skipped",
            m.rule
        ),
        (Kind::Agent, _, _) => format!("agent run `{name}`  [{}]", m.rule),
        (Kind::Tool, _, _) | (Kind::Retriever, _, true) => {
            let unwrapped = match m.args_unwrapped.as_slice() {
                [] => String::new(),
                kinds => format!(", arguments unwrapped: {}", kinds.join(", ")),
            };
            let read = match m.read.as_slice() {
                [] => String::new(),
                keys => format!(", read: {}", keys.join(", ")),
            };
            let behind = match m.name_behind_wrapper {
                Some(key) => format!(", name from `{key}` (span named after a wrapper's method)"),
                None => String::new(),
            };
            let qualified = match &m.name_qualified_by {
                Some(key) => format!(", named by the last part of the qualified name in `{key}`"),
                None => String::new(),
            };
            let server = match &m.mcp_server {
                Some(s) => format!(" of MCP server `{s}`"),
                None => String::new(),
            };
            format!(
                "tool call `{name}`{server}  [{}]{unwrapped}{read}{behind}{qualified}",
                m.rule
            )
        }
        (Kind::Retriever, _, false) => format!(
            "retriever `{name}`, not counted (--retrievers-as-tools)  [{}]",
            m.rule
        ),
    }
}

/// One trace: a line per span, and under a span no rule matched, a line
/// per near miss that held a condition at least, else one line for the
/// first marker attribute found with another value; a model call whose
/// messages the conversation witness reads says so instead. Names and
/// quoted values come from the trace: escaped for the terminal
/// ([`printable`]). `counted` is the number of calls the trace's rows list:
/// the header also gives the tool spans when they differ (several spans of
/// one call, calls rebuilt from the conversation or counted elsewhere).
pub fn write_explain(
    out: &mut dyn Write,
    trace: &Trace,
    rows: &[SpanExplanation],
    counted: usize,
) -> io::Result<()> {
    let tool_spans = rows
        .iter()
        .filter(|e| e.matched.as_ref().is_some_and(|m| m.call))
        .count();
    let spans = rows.len();
    match tool_spans == counted {
        true => writeln!(
            out,
            "trace {}  ({spans} spans, {counted} tool calls)",
            trace.id
        )?,
        false => writeln!(
            out,
            "trace {}  ({spans} spans, {tool_spans} tool spans, {counted} tool calls)",
            trace.id
        )?,
    }
    let names: Vec<String> = rows
        .iter()
        .map(|e| printable(&e.span_name).chars().take(48).collect())
        .collect();
    let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    for (e, name) in rows.iter().zip(&names) {
        let model_call = e.matched.is_none()
            && trace
                .spans
                .iter()
                .find(|s| s.span_id == e.span_id)
                .is_some_and(reads_messages);
        let verdict = match model_call {
            true => "model call: its messages are read by the conversation witness".to_string(),
            false => verdict(e),
        };
        writeln!(
            out,
            "  span {}  {name:width$}  {}",
            e.span_id,
            printable(&verdict)
        )?;
        if !model_call {
            write_near_misses(out, &e.near_misses)?;
        }
    }
    Ok(())
}

/// The near misses of a span no rule matched: each rule that held a
/// condition at least; when none did, the first attribute a rule tests
/// that the span has with another value, on one line.
fn write_near_misses(out: &mut dyn Write, misses: &[NearMiss]) -> io::Result<()> {
    let mut close = misses.iter().filter(|m| m.held > 0).peekable();
    if close.peek().is_none() {
        let wrong = misses.iter().find_map(|m| {
            m.reasons
                .iter()
                .find(|r| matches!(r, Reason::WrongValue { .. }))
                .map(|r| format!("{}: {r}", m.rule))
        });
        if let Some(w) = wrong {
            writeln!(out, "      no rule's conditions held; {}", printable(&w))?;
        }
        return Ok(());
    }
    for m in close {
        let miss = m.to_string();
        writeln!(
            out,
            "      almost {}  ({} of {} conditions)",
            printable(&miss),
            m.held,
            m.of
        )?;
    }
    Ok(())
}

/// What the conversation witness did in a trace, as one JSONL row after
/// its spans' rows: calls rebuilt from the conversation or renamed by the
/// call-id join, and its warnings. `None` when it did nothing.
pub fn conversation_row(trace: &Trace, calls: &[&ToolCall], a: &Analysis) -> Option<String> {
    if calls.is_empty() && a.warnings.is_empty() && a.notes.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    out.extend_from_slice(b"{\"trace_id\":");
    let _ = serde_json::to_writer(&mut out, &trace.id.to_string());
    out.extend_from_slice(b",\"conversation\":{\"calls\":[");
    for (i, c) in calls.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        super::write_call(&mut out, c);
    }
    out.extend_from_slice(b"],\"notes\":");
    let _ = serde_json::to_writer(&mut out, &a.notes);
    out.extend_from_slice(b",\"warnings\":");
    let _ = serde_json::to_writer(&mut out, &a.warnings);
    out.extend_from_slice(b"}}");
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// The conversation witness's lines under a trace's spans.
pub fn write_conversation(
    out: &mut dyn Write,
    calls: &[&ToolCall],
    a: &Analysis,
) -> io::Result<()> {
    for c in calls {
        let args = c
            .args
            .value()
            .map_or_else(|| "-".to_string(), ToString::to_string);
        let line = match (&c.from, &c.span_name) {
            (Some(from), _) if *from == crate::extract::conversation::provider::FROM_PROVIDER => {
                format!(
                    "tool call `{}` {args} run by the provider (recorded in the model's response)  [{}; span {}]",
                    c.name, c.convention, c.span_id
                )
            }
            (Some(_), _) => format!(
                "tool call `{}` {args} from the conversation  [{}; asked in span {}]",
                c.name, c.convention, c.span_id
            ),
            (None, Some(span_name)) => format!(
                "tool span {} `{span_name}` is the call `{}` (named from its attributes, its result or the model's call, not its span name)",
                c.span_id, c.name
            ),
            (None, None) => continue,
        };
        writeln!(out, "  conversation: {}", printable(&line))?;
    }
    for n in &a.notes {
        writeln!(out, "  conversation: {}", printable(n))?;
    }
    for w in &a.warnings {
        writeln!(out, "  warning: {}", printable(w))?;
    }
    Ok(())
}
