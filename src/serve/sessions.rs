//! Session cases in a live stream: the tool calls of every completed trace
//! go to the core's session collector ([`Sessions`], which replay uses too,
//! with its cap); a session is scored when no trace of it has completed for
//! the session wait. A trace that completes after its session was scored (a
//! new turn, or late spans) makes the session due again: the next
//! evaluation is its next revision, with every call so far. This module
//! adds only the clock.
//!
//! Memory: one entry per session case (the fixture bounds them), holding the
//! extracted calls of its traces, not their spans, and at most
//! [`crate::evaluate::MAX_SESSION_CALLS`] calls per session.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::evaluate::{Collected, Sessions, TraceResult, Warning};

/// When a session case last changed, and its evaluations so far.
#[derive(Debug)]
struct Clock {
    last_change: Instant,
    /// Evaluations so far.
    revision: u32,
    /// Changed since the last evaluation.
    due: bool,
}

/// A session ready to be scored.
#[derive(Debug)]
pub(crate) struct DueSession {
    /// Its calls and facts so far, with its case.
    pub collected: Collected,
    pub revision: u32,
}

/// Per-session-case state of a running server: the core's collector and
/// the clock.
#[derive(Debug)]
pub(crate) struct SessionTracker {
    wait: Duration,
    sessions: Sessions,
    clocks: HashMap<usize, Clock>,
}

impl SessionTracker {
    pub fn new(wait: Duration) -> Self {
        SessionTracker {
            wait,
            sessions: Sessions::default(),
            clocks: HashMap::new(),
        }
    }

    /// Adds the calls of one completed trace (or of a later revision of it:
    /// those calls are added to the ones it already gave) to its session
    /// cases, which become due a session wait after `now`. Returns the
    /// collector's warnings (a session over the cap).
    pub fn add(&mut self, result: &TraceResult, now: Instant) -> Vec<Warning> {
        let warnings = self.sessions.add(result);
        for m in &result.sessions {
            let clock = self.clocks.entry(m.case).or_insert(Clock {
                last_change: now,
                revision: 0,
                due: false,
            });
            clock.last_change = now;
            clock.due = true;
        }
        warnings
    }

    /// Sessions with calls not yet scored.
    pub fn waiting(&self) -> usize {
        self.clocks.values().filter(|c| c.due).count()
    }

    /// When the next session becomes due, if any is waiting.
    pub fn next_due(&self) -> Option<Instant> {
        self.clocks
            .values()
            .filter(|c| c.due)
            .map(|c| c.last_change + self.wait)
            .min()
    }

    /// Sessions idle for the wait (all waiting ones when `all`), marked as
    /// scored, in case order.
    pub fn take_due(&mut self, now: Instant, all: bool) -> Vec<DueSession> {
        let wait = self.wait;
        let mut due: Vec<(usize, u32)> = self
            .clocks
            .iter_mut()
            .filter(|(_, c)| c.due && (all || c.last_change + wait <= now))
            .map(|(&case, c)| {
                c.due = false;
                c.revision += 1;
                (case, c.revision)
            })
            .collect();
        due.sort_unstable();
        due.into_iter()
            .filter_map(|(case, revision)| {
                let collected = self.sessions.collected(case)?;
                Some(DueSession {
                    collected,
                    revision,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::assemble::TraceId;
    use crate::evaluate::SessionMember;

    /// A trace of session `s1` (session case 0) with calls `(name, start)`.
    fn trace(id: u8, start: u64, calls: &[(&str, u64)]) -> TraceResult {
        TraceResult {
            trace_id: TraceId([id; 16]),
            spans: 1,
            root: None,
            start,
            calls: calls
                .iter()
                .map(|&(name, at)| crate::evaluate::sessions_test_call(name, at))
                .collect::<Vec<_>>()
                .into(),
            evaluations: Vec::new(),
            defaulted: false,
            sessions: vec![SessionMember {
                case: 0,
                id: "s1".into(),
            }],
            facts: None,
            warnings: Arc::new([]),
            assembly_warnings: Vec::new(),
        }
    }

    #[test]
    fn due_after_the_wait_then_again_after_a_new_turn() {
        let t0 = Instant::now();
        let wait = Duration::from_secs(10);
        let mut s = SessionTracker::new(wait);
        assert!(s.add(&trace(2, 200, &[("second", 210)]), t0).is_empty());
        assert!(s.add(&trace(1, 100, &[("first", 110)]), t0).is_empty());
        assert_eq!(s.next_due(), Some(t0 + wait));
        assert!(s.take_due(t0 + Duration::from_secs(9), false).is_empty());
        let due = s.take_due(t0 + wait, false);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].revision, 1);
        let c = &due[0].collected;
        assert_eq!(c.case, 0);
        assert_eq!(
            c.session.trace_ids,
            vec![TraceId([1; 16]), TraceId([2; 16])]
        );
        let names: Vec<&str> = c.calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["first", "second"]);
        assert_eq!(s.next_due(), None);
        // Late spans of the first trace: revision 2 with every call so far.
        s.add(&trace(1, 100, &[("late", 150)]), t0 + wait);
        assert_eq!(s.waiting(), 1);
        let due = s.take_due(t0, true);
        assert_eq!(due[0].revision, 2);
        assert_eq!(due[0].collected.calls.len(), 3);
        assert_eq!(s.waiting(), 0);
    }
}
