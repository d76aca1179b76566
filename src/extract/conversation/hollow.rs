//! Tool spans that carry nothing of a call (docs/conventions.md, "The
//! conversation witness", "Hollow tool spans").
//!
//! Some instrumentations write an execution span per tool step with no
//! tool name, arguments, result or call id (OpenLIT's PydanticAI spans are
//! named `execute_tool <model>`): a rule takes it for a call named after
//! whatever its span name holds. When the trace's model outputs asked for
//! calls no span shows, such a span that the call-id join pairs with no
//! request must not stand in for them: it is no call, and the
//! conversation's calls are counted instead.

use super::{call_id, join, AskedAt, Positions};
use crate::assemble::Trace;
use crate::extract::{Analysis, CallStatus, ToolCall};

/// Whether `call` carries nothing of a call: no arguments, no result, no
/// error and no call id on its span.
fn is_hollow(call: &ToolCall, trace: &Trace, index: &Positions) -> bool {
    call.args.is_none()
        && call.result.is_none()
        && call.status == CallStatus::Ok
        && index
            .get(call.span_id)
            .is_none_or(|i| call_id(&trace.spans[i]).is_none())
}

/// Drops the hollow calls that the model's requests do not join (by call
/// id, name, namespaced name or equal arguments, as [`super::join`] does),
/// when some request of the model's joins no call; each dropped span is a
/// note of the trace.
pub(super) fn drop_hollow(trace: &Trace, asked: &[AskedAt], out: &mut Analysis) {
    let index = Positions::of(trace);
    if !out.calls.iter().any(|c| is_hollow(c, trace, &index)) {
        return;
    }
    // The join on a copy: which calls and requests it pairs.
    let mut copy = out.calls.clone();
    let (used, joined, _) = join(trace, asked, &mut copy);
    if used.iter().all(|u| *u) {
        return;
    }
    let hollow: Vec<bool> = out
        .calls
        .iter()
        .zip(&joined)
        .map(|(c, j)| j.is_none() && is_hollow(c, trace, &index))
        .collect();
    if !hollow.contains(&true) {
        return;
    }
    let mut drop = hollow.into_iter();
    let calls = std::mem::take(&mut out.calls);
    for call in calls {
        if !drop.next().unwrap_or(false) {
            out.calls.push(call);
            continue;
        }
        out.notes.push(format!(
            "tool span {} records nothing of a call (no arguments, result or call id) and no model output asked for `{}`: not counted, the conversation's calls stand",
            call.span_id, call.name
        ));
    }
}
