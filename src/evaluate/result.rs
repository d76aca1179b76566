//! What evaluation gives: a metric's verdict, a (trace, case) pair's
//! evaluation, a trace's result. The reports (`report`) and the live sinks
//! (`serve`) write these; nothing here formats them.

use std::sync::Arc;

use crate::assemble::{SpanId, Trace, TraceId};
use crate::expect::{Call, Case};
use crate::extract::facts::TraceFacts;
use crate::extract::ToolCall;
use crate::score::{Outcome, Unjudged};

/// One metric's verdict on one (trace, case) pair.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricResult {
    pub metric: String,
    pub threshold: Option<f64>,
    pub outcome: Outcome,
}

/// A verdict as counted: a judge that could not (or was not asked to)
/// judge is neither a pass nor a failure of the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    /// The judge gave no verdict: the run could not evaluate.
    JudgeError,
    /// `--judge-dry-run`.
    NotJudged,
}

impl Verdict {
    /// As machines read it (results API, OTLP records, the HTML page).
    pub fn code(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::JudgeError => "judge_error",
            Verdict::NotJudged => "not_judged",
        }
    }

    /// As the tables and JUnit show it.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::JudgeError => "judge error",
            Verdict::NotJudged => "not judged",
        }
    }
}

impl MetricResult {
    /// Errors fail, but a judge's (see [`Verdict`]); a metric with no
    /// verdict of its own (ragas) passes unless its score is under the
    /// threshold.
    pub fn verdict(&self) -> Verdict {
        match self.outcome.unjudged {
            Some(Unjudged::JudgeError) => return Verdict::JudgeError,
            Some(Unjudged::NotJudged) => return Verdict::NotJudged,
            None => {}
        }
        if self.outcome.error.is_some() {
            return Verdict::Fail;
        }
        let pass = match (self.outcome.pass, self.outcome.score, self.threshold) {
            (Some(p), _, _) => p,
            (None, Some(s), Some(t)) => s >= t,
            _ => true,
        };
        if pass {
            Verdict::Pass
        } else {
            Verdict::Fail
        }
    }

    pub fn passed(&self) -> bool {
        self.verdict() == Verdict::Pass
    }
}

/// The traces of a session, when a case targets one.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRef {
    pub id: String,
    /// By start time; `Evaluation::trace_id` is the first.
    pub trace_ids: Vec<TraceId>,
}

/// A trace (or a session of traces) scored against a case.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// The trace, or the first trace of the session.
    pub trace_id: TraceId,
    /// Set when the case targets a session: `tools_called` are the calls of
    /// all its traces, in time order.
    pub session: Option<SessionRef>,
    pub case_id: String,
    /// The case's index in the run's case list.
    pub case_index: usize,
    /// How the case found its trace: `trace_id`, `match`, `session`,
    /// `user_text` or `default` ([`crate::expect::Join::label`]).
    pub joined_by: &'static str,
    /// Shared with the trace's other evaluations.
    pub tools_called: Arc<[ToolCall]>,
    /// The case's, shared.
    pub expected: Arc<[Call]>,
    /// In `--metric` order; the first is the headline.
    pub results: Vec<MetricResult>,
    /// What the trace's conversation witness found amiss (shared with the
    /// trace's other evaluations; empty for a session case).
    pub warnings: Arc<[String]>,
}

impl Evaluation {
    pub fn passed(&self) -> bool {
        self.verdict() == Verdict::Pass
    }

    /// A failure if any metric failed; else a judge error if the judge
    /// failed any; else not judged if a dry run skipped any; else a pass.
    pub fn verdict(&self) -> Verdict {
        let mut v = Verdict::Pass;
        for r in &self.results {
            v = match (v, r.verdict()) {
                (_, Verdict::Fail) => return Verdict::Fail,
                (Verdict::JudgeError, _) | (_, Verdict::JudgeError) => Verdict::JudgeError,
                (Verdict::NotJudged, _) | (_, Verdict::NotJudged) => Verdict::NotJudged,
                _ => Verdict::Pass,
            };
        }
        v
    }

    pub fn headline(&self) -> Option<&MetricResult> {
        self.results.first()
    }

    /// The result that explains the verdict: the first whose own verdict is
    /// the evaluation's (a case failing only on its budget is explained by
    /// `budget`, not by the `tool_correctness` that passed), else the
    /// headline.
    pub fn deciding(&self) -> Option<&MetricResult> {
        let verdict = self.verdict();
        self.results
            .iter()
            .find(|r| r.verdict() == verdict)
            .or_else(|| self.headline())
    }

    /// The trace id, or `session <id>` for a session case.
    pub fn target_label(&self) -> String {
        match &self.session {
            Some(s) => format!("session {} ({} traces)", s.id, s.trace_ids.len()),
            None => self.trace_id.to_string(),
        }
    }
}

/// A case that no trace joined: what it looked for and what it expected.
/// It points into the evaluator's case list, so a big fixture's unmatched
/// cases cost a pointer each; reports make their text as they write it.
#[derive(Clone)]
pub struct UnmatchedCase(Unmatched);

#[derive(Clone)]
enum Unmatched {
    /// Case `index` of the run's case list.
    Listed { cases: Arc<Vec<Case>>, index: usize },
    /// As a saved run's report row gave it (the fixture is not at hand).
    Saved(Arc<SavedCase>),
}

/// An unmatched case read back from a saved report row.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedCase {
    pub id: String,
    pub joined_by: &'static str,
    pub looked_for: String,
    pub expected: Arc<[Call]>,
}

impl UnmatchedCase {
    /// Case `index` of `cases`.
    pub fn new(cases: Arc<Vec<Case>>, index: usize) -> Option<UnmatchedCase> {
        (index < cases.len()).then_some(UnmatchedCase(Unmatched::Listed { cases, index }))
    }

    /// A case as a saved report row describes it.
    pub fn saved(case: SavedCase) -> UnmatchedCase {
        UnmatchedCase(Unmatched::Saved(Arc::new(case)))
    }

    pub fn id(&self) -> &str {
        match &self.0 {
            Unmatched::Listed { cases, index } => &cases[*index].id,
            Unmatched::Saved(c) => &c.id,
        }
    }

    /// How it joins (`trace_id`, `match`, `session`, `user_text`).
    pub fn joined_by(&self) -> &'static str {
        match &self.0 {
            Unmatched::Listed { cases, index } => cases[*index].join.label(),
            Unmatched::Saved(c) => c.joined_by,
        }
    }

    /// What it looked for ([`crate::expect::Join::describe`]).
    pub fn looked_for(&self) -> String {
        match &self.0 {
            Unmatched::Listed { cases, index } => cases[*index].join.describe(),
            Unmatched::Saved(c) => c.looked_for.clone(),
        }
    }

    pub fn expected(&self) -> Arc<[Call]> {
        match &self.0 {
            Unmatched::Listed { cases, index } => cases[*index].expected.calls(),
            Unmatched::Saved(c) => c.expected.clone(),
        }
    }

    /// Why it fails, for people: what it looked for and what it expected.
    pub fn explanation(&self) -> String {
        self.explanation_of(&self.expected())
    }

    /// [`UnmatchedCase::explanation`] with its calls already parsed.
    pub fn explanation_of(&self, calls: &[Call]) -> String {
        let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
        format!(
            "no trace matched this case: looked for {}; expected {}",
            self.looked_for(),
            if names.is_empty() {
                "no tool calls".to_string()
            } else {
                names.join(", ")
            }
        )
    }
}

impl PartialEq for UnmatchedCase {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (
                Unmatched::Listed { cases, index },
                Unmatched::Listed {
                    cases: c2,
                    index: i2,
                },
            ) => cases[*index] == c2[*i2],
            (Unmatched::Saved(a), Unmatched::Saved(b)) => a == b,
            _ => false,
        }
    }
}

impl std::fmt::Debug for UnmatchedCase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnmatchedCase")
            .field("id", &self.id())
            .field("looked_for", &self.looked_for())
            .finish()
    }
}

/// A trace that no case matched.
#[derive(Debug, Clone)]
pub struct UnmatchedTrace {
    pub trace_id: TraceId,
    pub spans: usize,
    pub tools_called: Arc<[ToolCall]>,
    /// As [`Evaluation::warnings`].
    pub warnings: Arc<[String]>,
}

/// One trace's share of a session case.
#[derive(Debug, Clone)]
pub struct SessionMember {
    /// The session case.
    pub case: usize,
    /// The session value the case names.
    pub id: String,
}

/// What evaluating one trace gave.
#[derive(Debug, Clone)]
pub struct TraceResult {
    pub trace_id: TraceId,
    pub spans: usize,
    /// Root span (the first span without a parent), for results sent back
    /// into the trace.
    pub root: Option<SpanId>,
    /// Earliest span start.
    pub start: u64,
    /// The tool calls extracted (shared by every evaluation of the trace).
    pub calls: Arc<[ToolCall]>,
    /// One per trace case joined, in case order; or one against the
    /// default case when the trace joined no case at all.
    pub evaluations: Vec<Evaluation>,
    /// Whether `evaluations` holds the default case's evaluation.
    pub defaulted: bool,
    /// Session cases this trace contributes its calls to.
    pub sessions: Vec<SessionMember>,
    /// The trace's facts, when a metric needs them.
    pub facts: Option<TraceFacts>,
    /// What the conversation witness found amiss (`extract::conversation`).
    pub warnings: Arc<[String]>,
    /// What assembling the trace found amiss, for the driver to print or
    /// log (not part of any result row).
    pub assembly_warnings: Vec<Warning>,
}

impl TraceResult {
    /// The trace's warnings, given to its evaluations too.
    pub fn with_warnings(mut self, warnings: Vec<String>) -> TraceResult {
        if warnings.is_empty() {
            return self;
        }
        self.warnings = warnings.into();
        for e in &mut self.evaluations {
            e.warnings = Arc::clone(&self.warnings);
        }
        self
    }

    /// No case, session case or default case took this trace.
    pub fn unmatched(&self) -> bool {
        self.evaluations.is_empty() && self.sessions.is_empty()
    }

    /// The cases this trace was scored against or contributes to (its
    /// session cases, then its evaluations' cases, the default case too).
    pub fn cases_hit(&self) -> impl Iterator<Item = usize> + '_ {
        let sessions = self.sessions.iter().map(|m| m.case);
        sessions.chain(self.evaluations.iter().map(|e| e.case_index))
    }

    /// What the trace gives a run's results, decided here for every
    /// driver. Its calls go to its session cases before this
    /// ([`crate::evaluate::Sessions::add`]).
    pub fn into_outcome(self) -> TraceOutcome {
        if self.unmatched() {
            return TraceOutcome::Unmatched(UnmatchedTrace {
                trace_id: self.trace_id,
                spans: self.spans,
                tools_called: self.calls,
                warnings: self.warnings,
            });
        }
        TraceOutcome::Evaluated {
            evaluations: self.evaluations,
            defaulted: self.defaulted,
        }
    }
}

/// What one trace gives a run's results.
#[derive(Debug, Clone)]
pub enum TraceOutcome {
    /// No case, session case or default case took the trace.
    Unmatched(UnmatchedTrace),
    /// One evaluation per trace case it joined, in case order; none when
    /// only session cases took it.
    Evaluated {
        evaluations: Vec<Evaluation>,
        /// The one evaluation is against the default case: the trace
        /// joined no case of the fixture.
        defaulted: bool,
    },
}

impl TraceOutcome {
    /// The trace joined no case of the fixture (it is unmatched, or scored
    /// against the default case).
    pub fn matched_no_case(&self) -> bool {
        matches!(
            self,
            TraceOutcome::Unmatched(_)
                | TraceOutcome::Evaluated {
                    defaulted: true,
                    ..
                }
        )
    }
}

/// What a run says about its input besides its results, one line each:
/// `replay` prints it and `serve` logs it, both from here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// Parent links dropped to break cycles (the calls are kept):
    /// [`Trace::cycle_warning`].
    ParentCycle(String),
    /// Span ids that came again with other content (the first copy is
    /// read): [`Trace::conflict_warning`].
    SpanConflict(String),
    /// A session case reached [`crate::evaluate::MAX_SESSION_CALLS`] calls:
    /// later ones are left out of its evaluation. Holds the session id.
    SessionCapped(String),
}

impl Warning {
    /// What assembling `trace` found amiss, in this order: parent cycles,
    /// then reused span ids.
    pub fn of_trace(trace: &Trace) -> Vec<Warning> {
        let cycle = trace.cycle_warning().map(Warning::ParentCycle);
        cycle
            .into_iter()
            .chain(trace.conflict_warning().map(Warning::SpanConflict))
            .collect()
    }

    /// A short title, for a log line that carries the text as a field.
    pub fn title(&self) -> &'static str {
        match self {
            Warning::ParentCycle(_) => "Parent cycle in a trace.",
            Warning::SpanConflict(_) => "Span id reused with other content.",
            Warning::SessionCapped(_) => "Session has too many tool calls.",
        }
    }
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::ParentCycle(t) | Warning::SpanConflict(t) => f.write_str(t),
            Warning::SessionCapped(id) => write!(
                f,
                "session {id}: more than {} tool calls; later ones are left out of its evaluation",
                super::MAX_SESSION_CALLS
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(evaluations: Vec<Evaluation>, sessions: &[usize], defaulted: bool) -> TraceResult {
        TraceResult {
            trace_id: TraceId([7; 16]),
            spans: 3,
            root: None,
            start: 0,
            calls: Arc::new([]),
            evaluations,
            defaulted,
            sessions: sessions
                .iter()
                .map(|&case| SessionMember {
                    case,
                    id: "s".into(),
                })
                .collect(),
            facts: None,
            warnings: Arc::new([]),
            assembly_warnings: Vec::new(),
        }
    }

    fn evaluation(case_index: usize) -> Evaluation {
        Evaluation {
            trace_id: TraceId([7; 16]),
            session: None,
            case_id: format!("c{case_index}"),
            case_index,
            joined_by: "trace_id",
            tools_called: Arc::new([]),
            expected: Arc::new([]),
            results: Vec::new(),
            warnings: Arc::new([]),
        }
    }

    /// Every driver reads what a trace gives from here: unmatched only when
    /// no case, session case or default case took it.
    #[test]
    fn a_trace_gives_evaluations_or_an_unmatched_trace() {
        let r = result(Vec::new(), &[], false);
        assert_eq!(r.cases_hit().count(), 0);
        let o = r.into_outcome();
        assert!(matches!(&o, TraceOutcome::Unmatched(u) if u.spans == 3));
        assert!(o.matched_no_case());

        // Only a session case took it: no evaluation of its own, not unmatched.
        let r = result(Vec::new(), &[4], false);
        assert_eq!(r.cases_hit().collect::<Vec<_>>(), [4]);
        let o = r.into_outcome();
        assert!(
            matches!(&o, TraceOutcome::Evaluated { evaluations, defaulted: false } if evaluations.is_empty())
        );
        assert!(!o.matched_no_case());

        let r = result(vec![evaluation(0), evaluation(2)], &[4], false);
        assert_eq!(r.cases_hit().collect::<Vec<_>>(), [4, 0, 2]);
        assert!(!r.into_outcome().matched_no_case());

        // The default case scored it: evaluated, yet it matched no case.
        let o = result(vec![evaluation(5)], &[], true).into_outcome();
        assert!(
            matches!(&o, TraceOutcome::Evaluated { evaluations, defaulted: true } if evaluations.len() == 1)
        );
        assert!(o.matched_no_case());
    }

    /// The words `replay` prints (after `toolscore: warning: `) and `serve`
    /// logs.
    #[test]
    fn warnings_read_as_before() {
        let w = Warning::SessionCapped("s1".into());
        assert_eq!(
            w.to_string(),
            "session s1: more than 100000 tool calls; later ones are left out of its evaluation"
        );
        assert_eq!(w.title(), "Session has too many tool calls.");
        let w = Warning::ParentCycle("trace 00: parent cycle(s) broken: ...".into());
        assert_eq!(w.to_string(), "trace 00: parent cycle(s) broken: ...");
    }
}
