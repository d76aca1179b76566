//! Tool spans that carry nothing of a call (docs/conventions.md, "The
//! conversation witness", "Hollow tool spans").
//!
//! Some instrumentations write an execution span per tool step with no
//! tool name, arguments, result or call id (OpenLIT's PydanticAI spans are
//! named `execute_tool <model>`): a rule takes it for a call named after
//! whatever its span name holds. When the trace's model outputs asked for
//! calls no span shows, such a span must not stand in for them: it is no
//! call, and the conversation's calls are counted instead.

use std::collections::{HashMap, HashSet};

use super::{call_id, AskedAt};
use crate::assemble::{SpanId, Trace};
use crate::extract::{Analysis, CallStatus, ToolCall};

/// Whether `call` carries nothing of a call: no arguments, no result, no
/// error and no call id on its span.
fn is_hollow(call: &ToolCall, trace: &Trace, index: &HashMap<SpanId, usize>) -> bool {
    call.args.is_none()
        && call.result.is_none()
        && call.status == CallStatus::Ok
        && index
            .get(&call.span_id)
            .is_none_or(|&i| call_id(&trace.spans[i]).is_none())
}

/// Drops the hollow calls whose name no model output asked for, when the
/// model asked for a call that no call of `out` is named after; each
/// dropped span is a note of the trace.
pub(super) fn drop_hollow(trace: &Trace, asked: &[AskedAt], out: &mut Analysis) {
    let called: HashSet<&str> = out.calls.iter().map(|c| c.name.as_str()).collect();
    if asked
        .iter()
        .all(|at| called.contains(at.asked.name.as_str()))
    {
        return;
    }
    let asked_names: HashSet<&str> = asked.iter().map(|at| at.asked.name.as_str()).collect();
    let index: HashMap<SpanId, usize> = trace
        .spans
        .iter()
        .enumerate()
        .map(|(i, s)| (s.span_id, i))
        .collect();
    let hollow: Vec<bool> = out
        .calls
        .iter()
        .map(|c| !asked_names.contains(c.name.as_str()) && is_hollow(c, trace, &index))
        .collect();
    if !hollow.contains(&true) {
        return;
    }
    let mut keep = hollow.iter().map(|h| !h);
    let calls = std::mem::take(&mut out.calls);
    for call in calls {
        if keep.next().unwrap_or(true) {
            out.calls.push(call);
            continue;
        }
        out.notes.push(format!(
            "tool span {} records nothing of a call (no arguments, result or call id) and no model output asked for `{}`: not counted, the conversation's calls stand",
            call.span_id, call.name
        ));
    }
}
