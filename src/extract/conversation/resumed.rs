//! The request that carries the results of calls an earlier trace asked
//! for, in a run resumed in a trace of its own (LangChain's
//! human-in-the-loop interrupt ends one `invoke`; the resumed one is a new
//! trace): results without call ids or tool names that end the first
//! request after the tools ran, with no model turn of it asking for calls
//! (OpenLIT's LangChain.js integration drops the assistant turn's calls and
//! the tool messages' ids). See `extract::resumed`.

use serde_json::Value;

use super::{has_any_input, request_of};
use crate::assemble::Trace;

/// The contents, in order, of the results that end the first request of
/// `trace` starting at or after `after`, when none names a call id or a tool
/// and no model turn of that request asks for calls; `None` when the trace
/// holds no request after `after` or its results are not so.
pub(crate) fn bare_results_after(trace: &Trace, after: u64) -> Option<Vec<Value>> {
    let start = |i: usize| trace.spans[i].span.start_time_unix_nano;
    let first = (0..trace.spans.len())
        .filter(|&i| start(i) >= after && has_any_input(&trace.spans[i]))
        .min_by_key(|&i| (start(i), i))?;
    let r = request_of(&trace.spans[first]);
    if r.trailing.is_empty() || !r.last_turn.is_empty() {
        return None;
    }
    r.trailing
        .iter()
        .map(|&k| {
            let a = r.answers.get(k)?;
            if a.id.is_some() || a.name.is_some() {
                return None;
            }
            Some(match a.content.clone()? {
                Value::String(t) => crate::extract::source::parse_json_or_string(&t),
                v => v,
            })
        })
        .collect()
}
