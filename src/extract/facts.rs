//! What a trace says beyond its tool calls, for metrics that read it
//! (`Needs::trace_facts`): computed once per trace, only when asked for.

use crate::assemble::Trace;

/// Facts about one trace (or, summed, the traces of a session).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceFacts {
    /// Spans in the trace(s).
    pub spans: usize,
    /// Earliest span start and latest span end, in Unix nanoseconds.
    pub start_unix_nano: u64,
    pub end_unix_nano: u64,
}

impl TraceFacts {
    /// The facts of one trace.
    pub fn of(trace: &Trace) -> TraceFacts {
        let end = trace
            .spans
            .iter()
            .map(|s| s.span.end_time_unix_nano)
            .max()
            .unwrap_or(0);
        TraceFacts {
            spans: trace.spans.len(),
            start_unix_nano: trace.start_time(),
            end_unix_nano: end,
        }
    }

    /// Wall time from the first span's start to the last span's end.
    pub fn duration_nanos(&self) -> u64 {
        self.end_unix_nano.saturating_sub(self.start_unix_nano)
    }

    /// The facts of several traces taken together (a session).
    pub fn merge(&mut self, other: &TraceFacts) {
        if self.spans == 0 {
            *self = other.clone();
            return;
        }
        self.spans += other.spans;
        self.start_unix_nano = self.start_unix_nano.min(other.start_unix_nano);
        self.end_unix_nano = self.end_unix_nano.max(other.end_unix_nano);
    }
}
