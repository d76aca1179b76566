//! Session cases in a live stream: the tool calls of every completed trace
//! of a session are collected per session case (the core's
//! [`SessionCalls`], which replay uses too, with its cap); the session is
//! scored when no trace of it has completed for the session wait. A trace
//! that completes after its session was scored (a new turn, or late spans)
//! makes the session due again: the next evaluation is its next revision,
//! with every call so far. This module adds only the clock.
//!
//! Memory: one entry per session case (the fixture bounds them), holding the
//! extracted calls of its traces, not their spans, and at most
//! [`MAX_SESSION_CALLS`] calls per session.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::assemble::{SpanId, TraceId};
use crate::evaluate::{SessionCalls, SessionRef, MAX_SESSION_CALLS};
use crate::extract::facts::TraceFacts;
use crate::extract::ToolCall;

#[derive(Debug)]
struct State {
    calls: SessionCalls,
    last_change: Instant,
    /// Evaluations so far.
    revision: u32,
    /// Changed since the last evaluation.
    due: bool,
}

/// A session ready to be scored.
#[derive(Debug)]
pub(crate) struct DueSession {
    /// Index of the session case (among the session cases).
    pub case: usize,
    pub session: SessionRef,
    pub revision: u32,
    /// Root span of the first trace (for OTLP results).
    pub root: Option<SpanId>,
    /// Every call of the session, by start time.
    pub calls: Vec<ToolCall>,
    /// The facts of its traces together, when metrics need them.
    pub facts: Option<TraceFacts>,
}

/// Per-session-case state of a running server.
#[derive(Debug)]
pub(crate) struct SessionTracker {
    wait: Duration,
    states: HashMap<usize, State>,
}

impl SessionTracker {
    pub fn new(wait: Duration) -> Self {
        SessionTracker {
            wait,
            states: HashMap::new(),
        }
    }

    /// Adds the calls of one completed trace (or of a later revision of it:
    /// those calls are added to the ones it already gave).
    #[allow(clippy::too_many_arguments)]
    pub fn add(
        &mut self,
        case: usize,
        id: &str,
        trace: TraceId,
        start: u64,
        root: Option<SpanId>,
        calls: &[ToolCall],
        facts: Option<&TraceFacts>,
        now: Instant,
    ) {
        let state = self.states.entry(case).or_insert_with(|| State {
            calls: SessionCalls::new(id),
            last_change: now,
            revision: 0,
            due: false,
        });
        state.last_change = now;
        state.due = true;
        if state.calls.add(trace, start, root, calls, facts) {
            tracing::warn!(
                session = %state.calls.id(),
                max_calls = MAX_SESSION_CALLS,
                "Session has too many tool calls; later ones are left out of its evaluation."
            );
        }
    }

    /// Sessions with calls not yet scored.
    pub fn waiting(&self) -> usize {
        self.states.values().filter(|s| s.due).count()
    }

    /// When the next session becomes due, if any is waiting.
    pub fn next_due(&self) -> Option<Instant> {
        self.states
            .values()
            .filter(|s| s.due)
            .map(|s| s.last_change + self.wait)
            .min()
    }

    /// Sessions idle for the wait (all waiting ones when `all`), marked as
    /// scored.
    pub fn take_due(&mut self, now: Instant, all: bool) -> Vec<DueSession> {
        let wait = self.wait;
        let mut out: Vec<DueSession> = self
            .states
            .iter_mut()
            .filter(|(_, s)| s.due && (all || s.last_change + wait <= now))
            .map(|(&case, s)| {
                s.due = false;
                s.revision += 1;
                let c = s.calls.collected();
                DueSession {
                    case,
                    session: c.session,
                    revision: s.revision,
                    root: c.root,
                    calls: c.calls,
                    facts: c.facts,
                }
            })
            .collect();
        out.sort_by_key(|d| d.case);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, at: u64) -> ToolCall {
        crate::evaluate::sessions_test_call(name, at)
    }

    #[test]
    fn due_after_the_wait_then_again_after_a_new_turn() {
        let t0 = Instant::now();
        let wait = Duration::from_secs(10);
        let mut s = SessionTracker::new(wait);
        let (a, b) = (TraceId([1; 16]), TraceId([2; 16]));
        s.add(0, "s1", b, 200, None, &[call("second", 210)], None, t0);
        s.add(0, "s1", a, 100, None, &[call("first", 110)], None, t0);
        assert_eq!(s.next_due(), Some(t0 + wait));
        assert!(s.take_due(t0 + Duration::from_secs(9), false).is_empty());
        let due = s.take_due(t0 + wait, false);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].revision, 1);
        assert_eq!(due[0].session.trace_ids, vec![a, b]);
        let names: Vec<&str> = due[0].calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["first", "second"]);
        assert_eq!(s.next_due(), None);
        // Late spans of trace a: revision 2 with every call so far.
        s.add(0, "s1", a, 100, None, &[call("late", 150)], None, t0 + wait);
        let due = s.take_due(t0, true);
        assert_eq!(due[0].revision, 2);
        assert_eq!(due[0].calls.len(), 3);
    }
}
