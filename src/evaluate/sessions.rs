//! The calls of a session case's traces, collected in one place for every
//! driver: `replay` adds every trace then scores each session once; `serve`
//! adds traces as they complete (a later revision of a trace adds to what it
//! gave) and scores a session when it goes idle. Both merge, order and cap a
//! session's calls here.

use std::collections::HashMap;

use crate::assemble::{SpanId, TraceId};
use crate::extract::facts::TraceFacts;
use crate::extract::ToolCall;
use crate::parallel::in_parallel;

use super::{merged_facts, Evaluation, Evaluator, SessionRef, TraceResult, Warning};

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

/// One session case's traces so far.
#[derive(Debug)]
struct SessionCalls {
    id: String,
    members: HashMap<TraceId, Member>,
    /// Calls held.
    calls: usize,
    /// Calls left out over [`MAX_SESSION_CALLS`].
    dropped: usize,
}

/// A session's traces together, ready to score.
#[derive(Debug)]
pub struct Collected {
    /// The session case (its index in the run's case list).
    pub case: usize,
    pub session: SessionRef,
    /// Root span of the first trace (for results sent back into it).
    pub root: Option<SpanId>,
    /// Every call of the session, by start time.
    pub calls: Vec<ToolCall>,
    /// The facts of its traces together, when metrics need them.
    pub facts: Option<TraceFacts>,
}

impl SessionCalls {
    fn new(id: &str) -> SessionCalls {
        SessionCalls {
            id: id.to_string(),
            members: HashMap::new(),
            calls: 0,
            dropped: 0,
        }
    }

    /// Adds the calls of one trace (or of a later revision of it: those are
    /// added to the ones it already gave). True the first time calls are
    /// left out over [`MAX_SESSION_CALLS`], for the caller to warn once.
    fn add(
        &mut self,
        trace: TraceId,
        start: u64,
        root: Option<SpanId>,
        calls: &[ToolCall],
        facts: Option<&TraceFacts>,
    ) -> bool {
        let member = self.members.entry(trace).or_insert_with(|| Member {
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
        let room = MAX_SESSION_CALLS.saturating_sub(self.calls);
        let kept = calls.len().min(room);
        let first_drop = kept < calls.len() && self.dropped == 0;
        self.dropped += calls.len() - kept;
        self.calls += kept;
        member.calls.extend(calls[..kept].iter().cloned());
        first_drop
    }

    /// Every trace's calls so far, for session case `case`: traces by
    /// start (turns are sequential), calls by start across traces too.
    fn collected(&self, case: usize) -> Collected {
        let mut members: Vec<(&TraceId, &Member)> = self.members.iter().collect();
        members.sort_by_key(|(id, m)| (m.start, **id));
        let mut calls: Vec<ToolCall> = members
            .iter()
            .flat_map(|(_, m)| m.calls.iter().cloned())
            .collect();
        calls.sort_by_key(|c| c.start_time_unix_nano);
        Collected {
            case,
            session: SessionRef {
                id: self.id.clone(),
                trace_ids: members.iter().map(|(id, _)| **id).collect(),
            },
            root: members.first().and_then(|(_, m)| m.root),
            calls,
            facts: merged_facts(members.iter().map(|(_, m)| m.facts.as_ref())),
        }
    }
}

impl Collected {
    /// Scores the session against its case.
    pub fn evaluate(self, evaluator: &Evaluator) -> Evaluation {
        evaluator.evaluate_session(self.case, self.session, self.calls, self.facts.as_ref())
    }
}

/// The calls of every session case's traces, collected as traces are
/// evaluated: the one collector of every driver. `replay` adds every trace
/// and then scores each session once ([`Sessions::evaluate`]); `serve` adds
/// traces as they complete and scores a session whenever it goes idle
/// ([`Sessions::collected`]), keeping only the clock itself.
#[derive(Debug, Default)]
pub struct Sessions {
    /// Per session case.
    cases: HashMap<usize, SessionCalls>,
}

impl Sessions {
    /// Adds the calls of an evaluated trace to the session cases it
    /// belongs to. Returns a warning for each session that reached
    /// [`MAX_SESSION_CALLS`] with this trace (once per session).
    pub fn add(&mut self, t: &TraceResult) -> Vec<Warning> {
        let mut capped = Vec::new();
        for m in &t.sessions {
            let session = self
                .cases
                .entry(m.case)
                .or_insert_with(|| SessionCalls::new(&m.id));
            if session.add(t.trace_id, t.start, t.root, &t.calls, t.facts.as_ref()) {
                capped.push(Warning::SessionCapped(m.id.clone()));
            }
        }
        capped
    }

    /// Session case `case`'s traces so far, ready to score; `None` before
    /// any trace of it was added.
    pub fn collected(&self, case: usize) -> Option<Collected> {
        self.cases.get(&case).map(|s| s.collected(case))
    }

    /// Scores every session case that has traces, in case order (in
    /// parallel, up to the judge's concurrency, when a metric asks one).
    pub fn evaluate(self, evaluator: &Evaluator) -> Vec<Evaluation> {
        let mut cases: Vec<_> = self.cases.into_iter().collect();
        cases.sort_by_key(|(c, _)| *c);
        let threads = evaluator.judge().map_or(1, |j| j.concurrency());
        in_parallel(cases, threads, |(case, session)| {
            session.collected(case).evaluate(evaluator)
        })
    }
}

/// Shared so the unit tests of both drivers build calls alike.
#[cfg(test)]
pub(crate) fn test_call(name: &str, at: u64) -> ToolCall {
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
        mcp_server: None,
        within: None,
        end_time_unix_nano: at,
        call_id: None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn calls_are_ordered_merged_by_trace_and_capped() {
        let mut s = SessionCalls::new("s1");
        let (a, b) = (TraceId([1; 16]), TraceId([2; 16]));
        assert!(!s.add(b, 200, None, &[test_call("second", 210)], None));
        assert!(!s.add(a, 100, None, &[test_call("first", 110)], None));
        // A later revision of trace a adds to what it gave.
        assert!(!s.add(a, 100, None, &[test_call("late", 150)], None));
        let c = s.collected(0);
        assert_eq!(c.session.trace_ids, vec![a, b]);
        let names: Vec<&str> = c.calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["first", "late", "second"]);
        // Over the cap: the rest is left out, and said once.
        let many: Vec<ToolCall> = (0..MAX_SESSION_CALLS as u64)
            .map(|i| test_call("x", 1_000 + i))
            .collect();
        assert!(s.add(b, 200, None, &many, None));
        assert!(!s.add(b, 200, None, &many[..10], None));
        assert_eq!(s.collected(0).calls.len(), MAX_SESSION_CALLS);
        assert_eq!(s.dropped, 3 + 10);
    }

    /// Replay's sessions keep the same cap as serve's.
    #[test]
    fn replay_sessions_are_capped() {
        let mut sessions = Sessions::default();
        let calls: Arc<[ToolCall]> = (0..(MAX_SESSION_CALLS as u64 + 5))
            .map(|i| test_call("x", i))
            .collect();
        let t = TraceResult {
            trace_id: TraceId([3; 16]),
            spans: 1,
            root: None,
            start: 0,
            calls,
            evaluations: Vec::new(),
            defaulted: false,
            sessions: vec![super::super::SessionMember {
                case: 0,
                id: "s".into(),
            }],
            facts: None,
            warnings: Default::default(),
            assembly_warnings: Vec::new(),
        };
        assert_eq!(sessions.add(&t), [Warning::SessionCapped("s".into())]);
        // Said once per session.
        assert_eq!(sessions.add(&t), []);
        let s = &sessions.cases[&0];
        assert_eq!(
            (s.calls, s.dropped),
            (MAX_SESSION_CALLS, 5 + MAX_SESSION_CALLS + 5)
        );
    }
}
