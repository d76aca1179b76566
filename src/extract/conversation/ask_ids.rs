//! The model's call id of a tool span's call joined to its ask by name
//! (docs/conventions.md, "One call id in two traces"): the OpenAI Agents
//! SDK's function spans under Laminar hold no call id, while the model
//! response of their turn (`agents.response`) asked for the calls with
//! ids. Joined in order by name ([`super::joins::join`]), the span's call
//! is the call of that id; another trace of the process may record it
//! under the id only (Laminar's own Responses instrumentation, each
//! model call a trace of its own, replaying the history). The id is kept
//! beside the call (`Analysis::joined_ids`), as the id its other records
//! use (`Echo::also`), not as the span's own: the joins across traces
//! that look for spans without ids still find it.

use super::{AskedAt, ToolCall};
use crate::assemble::SpanId;

/// The (span, call id) of each tool span's call of `calls` that has no
/// call id of its own (`own`: its span has one) and was joined (`joined`)
/// to an ask of the same tool with one: the model's id, not one made from
/// its place in the history.
pub(super) fn of_joined(
    asked: &[AskedAt],
    joined: &[Option<usize>],
    own: &[bool],
    calls: &[ToolCall],
) -> Vec<(SpanId, String)> {
    // The cheap test first: most traces' asks join by their ids, or have none.
    if !joined.iter().any(Option::is_some) || asked.iter().all(|a| a.asked.id.is_none()) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for ((call, k), own) in calls.iter().zip(joined).zip(own) {
        let Some(ask) = k.and_then(|k| asked.get(k)).map(|a| &a.asked) else {
            continue;
        };
        let Some(id) = ask.id.as_deref().filter(|id| !super::is_made(id)) else {
            continue;
        };
        if !own && call.from.is_none() && call.call_id.is_none() && ask.name == call.name {
            out.push((call.span_id, id.to_string()));
        }
    }
    out
}
