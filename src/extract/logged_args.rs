//! Arguments recorded only in a log record of the call (docs/conventions.md,
//! "Arguments without names"): Claude Code's tool span has the tool's name
//! and call id, and its `tool_result` record (read as an event, on whatever
//! span it names) has the arguments, `tool_input`, by the call's id,
//! `tool_use_id`. A call whose span recorded no arguments takes them from
//! the event of the trace that names its call id.

use super::source::tool_call_id;
use super::{CallArgs, ToolCall};
use crate::assemble::{find_attr, Trace, Val};

/// The event attributes read here (projection at decode).
pub(crate) const EVENT_KEYS: [&str; 2] = [USE_ID, INPUT];
const USE_ID: &str = "tool_use_id";
const INPUT: &str = "tool_input";

/// Fills the arguments of `calls` of `trace` that have none from the
/// trace's events naming their call ids.
pub(crate) fn fill(trace: &Trace, calls: &mut [ToolCall]) {
    if calls.iter().all(|c| !c.args.is_none()) || !trace.spans.iter().any(has_input) {
        return;
    }
    let index = trace.positions();
    for call in calls.iter_mut().filter(|c| c.args.is_none()) {
        let Some(id) = index
            .get(call.span_id)
            .and_then(|i| tool_call_id(&trace.spans[i]))
        else {
            continue;
        };
        let input = trace
            .spans
            .iter()
            .flat_map(|s| &s.span.events)
            .filter(|e| find_attr(&e.attributes, USE_ID).and_then(Val::as_str) == Some(id))
            .find_map(|e| find_attr(&e.attributes, INPUT).and_then(Val::as_str));
        if let Some(text) = input {
            call.args = CallArgs::Value(super::source::parse_json_or_literal(text));
        }
    }
}

/// Whether span `s` has an event with the arguments of a call.
fn has_input(s: &crate::assemble::SpanRecord) -> bool {
    s.span
        .events
        .iter()
        .any(|e| e.attributes.iter().any(|kv| kv.key == INPUT))
}
