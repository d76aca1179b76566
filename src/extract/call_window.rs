//! When a call was asked for and answered, as the joins across traces
//! compare a lone tool span with a conversation's call
//! (`carry::lone_span`, `twice`, `hollow_record`, `echo`), and the note
//! for a span that fits more than one such call.

use crate::assemble::SpanRecord;
use crate::extract::open::{Echo, OpenAsk, AMBIGUOUS_FORM};
use crate::extract::{Analysis, ToolCall};

/// For a call rebuilt from the conversation, asked for by a model output
/// of its own trace and answered by a later request of that trace: when
/// that output ended (the call's start; its end is the request's start).
/// `None` for any other call: one asked for in another trace starts on the
/// request that carries its result (`s`, that request's span).
pub(crate) fn asked_here(c: &ToolCall, s: Option<&SpanRecord>) -> Option<u64> {
    let s = s?;
    let asked = s.span.end_time_unix_nano.max(s.span.start_time_unix_nano);
    (c.from.is_some()
        && asked == c.start_time_unix_nano
        && c.end_time_unix_nano > c.start_time_unix_nano)
        .then_some(asked)
}

/// When the request carrying the result of `e`, a call rebuilt from the
/// conversation, started: its end (a call asked for in another trace
/// starts and ends there).
#[inline]
pub(crate) fn answered_at(e: &Echo) -> u64 {
    e.start.max(e.end)
}

/// Notes the calls of `a` that `carried` says fit records of other traces
/// more than one way (`Carry::counting_call`, `Carry::running_span`).
pub(crate) fn note_ambiguous(carried: &[OpenAsk], a: &mut Analysis) {
    for e in carried.iter().filter(|e| e.form == AMBIGUOUS_FORM) {
        let other = e.asked.args.as_str().unwrap_or_default();
        a.notes.push(format!(
            "`{}` (span {}) fits the records of more than one call in other traces (traces {} and {}: the same tool and arguments, the same process, each run's asking and answering around the tool span): not joined, each record counted",
            e.asked.name, e.span_id, e.trace_id, other
        ));
    }
}
