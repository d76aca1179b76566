//! Session cases in a live stream: the tool calls of every completed trace
//! of a session are collected per session case; the session is scored when
//! no trace of it has completed for the session wait. A trace that completes
//! after its session was scored (a new turn, or late spans) makes the session
//! due again: the next evaluation is its next revision, with every call so far.
//!
//! Memory: one entry per session case (the fixture bounds them), holding the
//! extracted calls of its traces, not their spans, and at most
//! [`MAX_SESSION_CALLS`] calls per session.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::assemble::{SpanId, TraceId};
use crate::extract::facts::TraceFacts;
use crate::extract::ToolCall;

/// Calls kept per session; later ones are left out (with a warning), so a
/// case that matches an endless stream of traces cannot grow without bound.
pub const MAX_SESSION_CALLS: usize = 100_000;

/// The calls one trace contributed to a session.
#[derive(Debug)]
struct Member {
    /// Start of the trace, to order turns.
    start: u64,
    root: Option<SpanId>,
    calls: Vec<ToolCall>,
    /// Facts of the trace (of each revision, merged), when metrics need them.
    facts: Option<TraceFacts>,
}

#[derive(Debug)]
struct State {
    id: String,
    members: HashMap<TraceId, Member>,
    last_change: Instant,
    /// Evaluations so far.
    revision: u32,
    /// Changed since the last evaluation.
    due: bool,
    /// Calls held.
    calls: usize,
    /// Calls left out over [`MAX_SESSION_CALLS`].
    dropped: usize,
}

/// A session ready to be scored.
#[derive(Debug)]
pub(crate) struct DueSession {
    /// Index of the session case (among the session cases).
    pub case: usize,
    pub id: String,
    pub revision: u32,
    /// Trace ids by start time.
    pub trace_ids: Vec<TraceId>,
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
        calls: Vec<ToolCall>,
        facts: Option<&TraceFacts>,
        now: Instant,
    ) {
        let state = self.states.entry(case).or_insert_with(|| State {
            id: id.to_string(),
            members: HashMap::new(),
            last_change: now,
            revision: 0,
            due: false,
            calls: 0,
            dropped: 0,
        });
        state.last_change = now;
        state.due = true;
        let member = state.members.entry(trace).or_insert_with(|| Member {
            start,
            root,
            calls: Vec::new(),
            facts: None,
        });
        if let Some(f) = facts {
            member
                .facts
                .get_or_insert_with(TraceFacts::default)
                .merge(f);
        }
        member.start = member.start.min(start);
        if member.root.is_none() {
            member.root = root;
        }
        let room = MAX_SESSION_CALLS.saturating_sub(state.calls);
        if calls.len() > room {
            if state.dropped == 0 {
                tracing::warn!(
                    session = %state.id,
                    max_calls = MAX_SESSION_CALLS,
                    "Session has too many tool calls; later ones are left out of its evaluation."
                );
            }
            state.dropped += calls.len() - room;
        }
        let kept = calls.len().min(room);
        state.calls += kept;
        member.calls.extend(calls.into_iter().take(kept));
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
                let mut members: Vec<(&TraceId, &Member)> = s.members.iter().collect();
                members.sort_by_key(|(id, m)| (m.start, **id));
                let mut calls: Vec<ToolCall> = members
                    .iter()
                    .flat_map(|(_, m)| m.calls.iter().cloned())
                    .collect();
                // Turns are sequential; order by start time across traces too.
                calls.sort_by_key(|c| c.start_time_unix_nano);
                DueSession {
                    case,
                    id: s.id.clone(),
                    revision: s.revision,
                    trace_ids: members.iter().map(|(id, _)| **id).collect(),
                    root: members.first().and_then(|(_, m)| m.root),
                    calls,
                    facts: crate::evaluate::merged_facts(
                        members.iter().map(|(_, m)| m.facts.as_ref()),
                    ),
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
        ToolCall {
            name: name.into(),
            args: crate::extract::CallArgs::None,
            result: None,
            status: crate::extract::CallStatus::Ok,
            error_message: None,
            error_type: None,
            span_id: SpanId([1; 8]),
            start_time_unix_nano: at,
            depth: 0,
            agent: None,
            retriever: false,
            convention: "test".into(),
            from: None,
            span_name: None,
            within: None,
            end_time_unix_nano: at,
        }
    }

    #[test]
    fn due_after_the_wait_then_again_after_a_new_turn() {
        let t0 = Instant::now();
        let wait = Duration::from_secs(10);
        let mut s = SessionTracker::new(wait);
        let (a, b) = (TraceId([1; 16]), TraceId([2; 16]));
        s.add(0, "s1", b, 200, None, vec![call("second", 210)], None, t0);
        s.add(0, "s1", a, 100, None, vec![call("first", 110)], None, t0);
        assert_eq!(s.next_due(), Some(t0 + wait));
        assert!(s.take_due(t0 + Duration::from_secs(9), false).is_empty());
        let due = s.take_due(t0 + wait, false);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].revision, 1);
        assert_eq!(due[0].trace_ids, vec![a, b]);
        let names: Vec<&str> = due[0].calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["first", "second"]);
        assert_eq!(s.next_due(), None);
        // Late spans of trace a: revision 2 with every call so far.
        s.add(
            0,
            "s1",
            a,
            100,
            None,
            vec![call("late", 150)],
            None,
            t0 + wait,
        );
        let due = s.take_due(t0, true);
        assert_eq!(due[0].revision, 2);
        assert_eq!(due[0].calls.len(), 3);
    }
}
