//! The evaluation core, shared by `replay`, `serve` and `score`: extracted
//! traces, the fixture cases they join and a metric set built once, in; typed
//! results out. Nothing here reads files, formats reports or knows about
//! sockets.
//!
//! A trace is evaluated alone ([`Evaluator::evaluate_trace`]): it is routed to
//! the trace cases it joins (by trace id or attribute match) and scored
//! against each; it names the session cases it belongs to, whose calls every
//! driver collects with [`Sessions`] (all at once in `replay`, as traces
//! complete in `serve`) and scores with [`Evaluator::evaluate_session`].
//! What a trace gives a run (its warnings, evaluations or unmatched trace,
//! session calls) is decided by its [`TraceResult`]; drivers only fold it
//! into their outputs.

pub mod metrics;
mod pipeline;
mod result;
mod sessions;
mod trials;

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use crate::assemble::{session, Trace, TraceId};
use crate::expect::Call;
use crate::expect::{Case, Join};
use crate::extract::facts::TraceFacts;
use crate::extract::{AgentRun, ToolCall};
use crate::judge::Judge;
use crate::names::Normalizer;
use crate::score::native::NativeConfig;
use crate::score::{agents, budget, handoffs, MetricInput, MetricOptions, Needs, ScoreError};

pub use metrics::{
    literal_matchers_note, literal_matchers_note_for, CustomMetric, Extras, MetricSet, MetricSpec,
};
pub use pipeline::{Inspected, OutputNeeds, Pipeline};
pub use result::{
    Evaluation, MetricResult, SavedCase, SessionMember, SessionRef, TraceOutcome, TraceResult,
    UnmatchedCase, UnmatchedTrace, Verdict, Warning,
};
#[cfg(test)]
pub(crate) use sessions::test_call as sessions_test_call;
pub use sessions::{Collected, Sessions, MAX_SESSION_CALLS};
pub use trials::{case_trials, CaseTrials, Stability, TrialsPass};

/// How a run scores: what `--metric`, `--threshold`, `--strict`, `--args`,
/// `--score`, `--normalize` and the config's session keys say.
#[derive(Debug, Clone)]
pub struct ScoreSettings {
    /// Metric specs; the first is the headline.
    pub metrics: Vec<MetricSpec>,
    /// Overrides for every metric (`--threshold`, `--strict`).
    pub options: MetricOptions,
    /// `tool_correctness` settings.
    pub native: NativeConfig,
    /// Tool names as compared (`--normalize`); off by default.
    pub names: Normalizer,
    /// Keys a `session_id` case looks at (docs/conventions.md, sessions).
    pub session_keys: Vec<String>,
    /// The run's LLM judge (`--judge-url`/`--judge-model`), if any.
    pub judge: Option<Arc<Judge>>,
    /// Metrics the embedding program defines, named in `metrics` like any.
    pub custom: Vec<CustomMetric>,
}

impl Default for ScoreSettings {
    fn default() -> Self {
        ScoreSettings {
            metrics: MetricSpec::parse_list(&[crate::score::native::NATIVE_NAME])
                .unwrap_or_default(),
            options: MetricOptions::default(),
            native: NativeConfig::default(),
            names: Normalizer::off(),
            session_keys: session::default_keys(),
            judge: None,
            custom: Vec::new(),
        }
    }
}

/// Where a trace belongs.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Route {
    /// Trace cases (indexes into [`Evaluator::cases`]), in case order.
    pub cases: Vec<usize>,
    /// Session cases with the session id each names, in case order.
    pub sessions: Vec<(usize, String)>,
}

/// Case lookups by join kind, built once.
#[derive(Debug, Default)]
struct Routes {
    /// Trace-id cases as (trace id, case), sorted: 24 bytes a case, where
    /// a map of lists took about 70 (docs/formats.md, fixture memory). A
    /// fixture holds far fewer than 2^32 cases (`MAX_FIXTURE_BYTES`).
    by_trace_id: Vec<(TraceId, u32)>,
    /// `match` cases: every pair must be present on the trace.
    matches: Vec<usize>,
    /// Session cases by (session key index or `None` for any key, value).
    sessions: HashMap<(Option<usize>, String), Vec<usize>>,
    /// Session cases on a key outside the configured list (checked by scan).
    other_sessions: Vec<usize>,
    /// User-text cases by normalized text.
    by_text: HashMap<String, Vec<usize>>,
}

/// Scores traces and sessions against fixture cases with metric sets built
/// once. Read-only after [`Evaluator::new`]; share it between threads.
#[derive(Debug)]
pub struct Evaluator {
    settings: ScoreSettings,
    run: MetricSet,
    /// The fixture's cases as loaded (never copied: a big fixture is held
    /// once; unmatched-case rows point into it).
    cases: Arc<Vec<Case>>,
    /// Per case, its own metrics (its `metrics` list or `threshold`), if it
    /// overrides the run's; shared by cases that set the same. Empty when
    /// no case has its own.
    own: Vec<Option<Arc<MetricSet>>>,
    /// Index of the default case in `cases`, if any (it joins nothing).
    default: Option<usize>,
    /// Whether a fixture was given (else traces are listed, not judged).
    has_cases: bool,
    routes: Routes,
    /// Result labels in column order: the run's, then cases' own.
    labels: Vec<String>,
    needs: Needs,
}

/// A case's error, naming the case.
fn in_case(case: &Case, e: ScoreError) -> ScoreError {
    ScoreError::InCase {
        case: case.id.clone(),
        source: Box::new(e),
    }
}

/// The metric specs a case is scored with when they are not the run's
/// (`None`): its own `metrics` list, or the run's with a `threshold` of its
/// own. A case with budgets, agents or handoffs and no metrics of its own
/// gets `budget`, `agents`, `handoffs` added to the run's; one that states
/// no expected tools is scored on them alone (docs/scoring.md).
fn case_specs(case: &Case, run: &[MetricSpec]) -> Result<Option<Vec<MetricSpec>>, ScoreError> {
    let alone = !case.states_tools && case.metrics().is_none();
    let implied: Vec<&str> = [
        (case.budgets().is_set(), budget::NAME),
        (!case.agents().is_empty(), agents::NAME),
        (case.handoffs().is_some(), handoffs::NAME),
    ]
    .into_iter()
    .filter(|&(set, name)| {
        set && case.metrics().is_none() && (alone || !run.iter().any(|m| m.name == name))
    })
    .map(|(_, name)| name)
    .collect();
    let add_implied = !implied.is_empty();
    Ok(match (case.metrics(), case.threshold) {
        (None, None) if !add_implied => None,
        (Some(l), _) => Some(MetricSpec::parse_list(l)?),
        (None, _) if add_implied => {
            let mut s = if alone { Vec::new() } else { run.to_vec() };
            for name in &implied {
                s.push(name.parse()?);
            }
            Some(s)
        }
        (None, _) => Some(run.to_vec()),
    })
}

impl Evaluator {
    /// Builds every metric set and the case lookups. `cases` is `None`
    /// without a fixture; `default` scores traces that join no case.
    pub fn new(
        settings: ScoreSettings,
        cases: Option<Vec<Case>>,
        default: Option<Case>,
    ) -> Result<Evaluator, ScoreError> {
        let extras = Extras {
            judge: settings.judge.as_ref(),
            custom: &settings.custom,
        };
        let run = MetricSet::build_with(
            &settings.metrics,
            &settings.options,
            &settings.native,
            None,
            extras,
        )?;
        let mut labels: Vec<String> = run.labels().map(String::from).collect();
        let mut needs = run.needs();
        let has_cases = cases.is_some();
        let mut all = cases.unwrap_or_default();
        let default_index = default.map(|d| {
            all.push(d);
            all.len() - 1
        });
        let mut own = Vec::with_capacity(all.len());
        // Cases with the same metrics and threshold share one set: a big
        // fixture where every case sets `threshold` builds it once.
        let mut shared: HashMap<(Vec<String>, Option<u64>), Arc<MetricSet>> = HashMap::new();
        for case in &all {
            let metrics = match case_specs(case, &settings.metrics) {
                Err(e) => return Err(in_case(case, e)),
                Ok(None) => None,
                Ok(Some(specs)) => {
                    let key = (
                        specs.iter().map(|s| s.label.clone()).collect(),
                        case.threshold.map(f64::to_bits),
                    );
                    let set = match shared.get(&key) {
                        Some(set) => Arc::clone(set),
                        None => {
                            let set = MetricSet::build_with(
                                &specs,
                                &settings.options,
                                &settings.native,
                                case.threshold,
                                extras,
                            )
                            .map_err(|e| in_case(case, e))?;
                            for l in set.labels() {
                                if !labels.iter().any(|x| x == l) {
                                    labels.push(l.to_string());
                                }
                            }
                            needs = needs | set.needs();
                            let set = Arc::new(set);
                            shared.insert(key, Arc::clone(&set));
                            set
                        }
                    };
                    Some(set)
                }
            };
            own.push(metrics);
        }
        if own.iter().all(Option::is_none) {
            own = Vec::new();
        }
        let routes = Routes::build(&all, default_index, &settings.session_keys);
        Ok(Evaluator {
            settings,
            run,
            cases: Arc::new(all),
            own,
            default: default_index,
            has_cases,
            routes,
            labels,
            needs,
        })
    }

    /// What the metrics of the run and of every case need from extraction.
    pub fn needs(&self) -> Needs {
        self.needs
    }

    /// The run's LLM judge, when a metric of the run asks one.
    pub fn judge(&self) -> Option<&Arc<Judge>> {
        self.settings.judge.as_ref().filter(|_| self.needs.judge)
    }

    /// Result labels in column order (the first is the headline).
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// How many of [`Evaluator::labels`] are the run's own metrics.
    pub fn run_metrics(&self) -> usize {
        self.run.len()
    }

    /// The run's own metrics with the threshold each passes at (`None`: the
    /// metric's own rule, no threshold), in column order.
    pub fn run_thresholds(&self) -> impl Iterator<Item = (&str, Option<f64>)> {
        self.run.thresholds()
    }

    pub fn has_cases(&self) -> bool {
        self.has_cases
    }

    /// Every case (the default case last, if any).
    pub fn cases(&self) -> impl ExactSizeIterator<Item = &Case> {
        self.cases.iter()
    }

    /// The cases no trace joined (`hit[i]`: case `i` was scored), the
    /// default case aside.
    pub fn unmatched(&self, hit: &[bool]) -> Vec<UnmatchedCase> {
        let unmatched = |i: &usize| !hit.get(*i).copied().unwrap_or(false) && !self.is_default(*i);
        // Sized first: a big fixture's list is not grown by doubling.
        let mut out = Vec::with_capacity((0..self.cases.len()).filter(unmatched).count());
        out.extend(
            (0..self.cases.len())
                .filter(unmatched)
                .filter_map(|i| UnmatchedCase::new(Arc::clone(&self.cases), i)),
        );
        out
    }

    /// Whether case `i` is the default case (never "unmatched").
    pub fn is_default(&self, i: usize) -> bool {
        self.default == Some(i)
    }

    /// Keys a `session_id` case looks at.
    pub fn session_keys(&self) -> &[String] {
        &self.settings.session_keys
    }

    /// Attribute keys that joins read, on spans or resources: the session
    /// keys and the cases' `match` and session keys (projection at decode).
    pub fn join_keys(&self) -> Vec<String> {
        let mut keys = self.settings.session_keys.clone();
        for case in self.cases.iter() {
            match &case.join {
                Join::Match(kv) => keys.extend(kv.iter().map(|(k, _)| k.clone())),
                Join::Session { key: Some(k), .. } => keys.push(k.clone()),
                _ => {}
            }
        }
        keys
    }

    /// The cases `trace` joins.
    pub fn route(&self, trace: &Trace) -> Route {
        let r = &self.routes;
        let from = r.by_trace_id.partition_point(|(id, _)| *id < trace.id);
        let mut cases: Vec<usize> = r.by_trace_id[from..]
            .iter()
            .take_while(|(id, _)| *id == trace.id)
            .map(|&(_, ci)| ci as usize)
            .collect();
        for &ci in &r.matches {
            if let Join::Match(kv) = &self.cases[ci].join {
                if kv.iter().all(|(k, v)| trace.has_attr(k, v)) {
                    cases.push(ci);
                }
            }
        }
        if !r.by_text.is_empty() {
            let text = crate::extract::facts::turn_text_of(trace)
                .map(|t| crate::expect::normalize_text(&t));
            if let Some(found) = text.and_then(|t| r.by_text.get(&t)) {
                cases.extend(found);
            }
        }
        cases.sort_unstable();
        cases.dedup();
        let mut sessions: Vec<(usize, String)> = Vec::new();
        if !r.sessions.is_empty() || !r.other_sessions.is_empty() {
            let keys = &self.settings.session_keys;
            for (ki, value) in session::values_of(trace, keys) {
                for lookup in [(Some(ki), value.clone()), (None, value.clone())] {
                    for &ci in r.sessions.get(&lookup).into_iter().flatten() {
                        sessions.push((ci, value.clone()));
                    }
                }
            }
            for &ci in &r.other_sessions {
                if let Join::Session { key: Some(k), id } = &self.cases[ci].join {
                    if trace.has_attr(k, id) {
                        sessions.push((ci, id.clone()));
                    }
                }
            }
            sessions.sort();
            sessions.dedup_by_key(|s| s.0);
        }
        Route { cases, sessions }
    }

    /// The cases `trace` joins (trace cases, then session cases), each with
    /// how it was joined: what `inspect --expected` shows.
    pub fn joins(&self, trace: &Trace) -> Vec<(String, &'static str)> {
        let route = self.route(trace);
        route
            .cases
            .iter()
            .chain(route.sessions.iter().map(|(c, _)| c))
            .map(|&ci| {
                let case = &self.cases[ci];
                (case.id.clone(), case.join.label())
            })
            .collect()
    }

    /// Routes and scores one trace whose calls were extracted (`calls`, by
    /// start time).
    pub fn evaluate_trace(&self, trace: &Trace, calls: Vec<ToolCall>) -> TraceResult {
        self.evaluate_trace_with_runs(trace, calls, &[])
    }

    /// [`Evaluator::evaluate_trace`] with the trace's agent runs, for the
    /// metrics that read them (`agents`, `handoffs`).
    pub fn evaluate_trace_with_runs(
        &self,
        trace: &Trace,
        calls: Vec<ToolCall>,
        runs: &[AgentRun],
    ) -> TraceResult {
        let route = self.route(trace);
        let calls: Arc<[ToolCall]> = calls.into();
        let facts = self.needs.trace_facts.then(|| {
            let mut f = TraceFacts::of(trace);
            if self.needs.judge {
                f.inputs = crate::extract::facts::judge_input_of(trace)
                    .into_iter()
                    .collect();
            }
            f.runs = runs
                .iter()
                .map(|r| (r.start_time_unix_nano, r.name.clone()))
                .collect();
            f
        });
        let mut result = TraceResult {
            trace_id: trace.id,
            spans: trace.spans.len(),
            root: trace.roots().next().map(|i| trace.spans[i].span_id),
            start: trace.start_time(),
            calls: Arc::clone(&calls),
            evaluations: Vec::new(),
            defaulted: false,
            sessions: route
                .sessions
                .into_iter()
                .map(|(case, id)| SessionMember { case, id })
                .collect(),
            facts,
            warnings: Arc::new([]),
            assembly_warnings: Warning::of_trace(trace),
        };
        let mut case_list = route.cases;
        if case_list.is_empty() && result.sessions.is_empty() {
            if let Some(d) = self.default {
                case_list.push(d);
                result.defaulted = true;
            }
        }
        if case_list.is_empty() {
            return result;
        }
        let called = self.called(&calls);
        result.evaluations = case_list
            .into_iter()
            .map(|ci| {
                self.score(
                    ci,
                    trace.id,
                    None,
                    Arc::clone(&calls),
                    &called,
                    result.facts.as_ref(),
                )
            })
            .collect();
        result
    }

    /// Scores the calls of a session (`calls` from every trace of it, in time
    /// order; `facts` of its traces merged) against session case `case`.
    pub fn evaluate_session(
        &self,
        case: usize,
        session: SessionRef,
        calls: Vec<ToolCall>,
        facts: Option<&TraceFacts>,
    ) -> Evaluation {
        let first = session
            .trace_ids
            .first()
            .copied()
            .unwrap_or(TraceId([0; 16]));
        let calls: Arc<[ToolCall]> = calls.into();
        let called = self.called(&calls);
        self.score(case, first, Some(session), calls, &called, facts)
    }

    /// Calls as the metrics see them (names normalized when enabled).
    fn called(&self, calls: &[ToolCall]) -> Vec<Call> {
        let norm = &self.settings.names;
        calls
            .iter()
            .map(|c| {
                let mut call = Call::new(norm.apply(&c.name).into_owned(), c.args.value().cloned());
                call.ordered_args = c.args.ordered().cloned();
                call
            })
            .collect()
    }

    /// A case's expected calls with names as compared (normalized when
    /// enabled).
    fn compared<'a>(&self, expected: &'a [Call]) -> Cow<'a, [Call]> {
        let norm = &self.settings.names;
        if !norm.is_enabled() {
            return Cow::Borrowed(expected);
        }
        expected
            .iter()
            .map(|c| {
                let mut c = c.clone();
                c.name = norm.apply(&c.name).into_owned();
                c
            })
            .collect()
    }

    fn score(
        &self,
        case: usize,
        trace_id: TraceId,
        session: Option<SessionRef>,
        calls: Arc<[ToolCall]>,
        called: &[Call],
        facts: Option<&TraceFacts>,
    ) -> Evaluation {
        let c = &self.cases[case];
        let metrics = self
            .own
            .get(case)
            .and_then(Option::as_deref)
            .unwrap_or(&self.run);
        let expected = c.expected.calls();
        // An expected MCP tool of a named server, resolved here alone, so
        // every metric, preset and the judge see the same names.
        let (compared, called) =
            self.settings
                .names
                .with_servers(&expected, self.compared(&expected), called, |i| {
                    calls.get(i).and_then(|c| c.mcp_server.as_deref())
                });
        let results = metrics.evaluate(&MetricInput {
            called: &called,
            expected: &compared,
            calls: &calls,
            case: c,
            facts,
        });
        Evaluation {
            trace_id,
            session,
            case_id: c.id.clone(),
            case_index: case,
            joined_by: if self.is_default(case) {
                "default"
            } else {
                c.join.label()
            },
            tools_called: calls,
            expected,
            results,
            warnings: Arc::new([]),
        }
    }
}

impl Routes {
    fn build(cases: &[Case], default: Option<usize>, keys: &[String]) -> Routes {
        let mut r = Routes::default();
        let by_id = cases
            .iter()
            .filter(|c| matches!(c.join, Join::TraceId(_)))
            .count();
        r.by_trace_id.reserve_exact(by_id);
        for (ci, case) in cases.iter().enumerate() {
            if Some(ci) == default {
                continue;
            }
            match &case.join {
                Join::TraceId(id) => {
                    if let Ok(ci) = u32::try_from(ci) {
                        r.by_trace_id.push((*id, ci));
                    }
                }
                Join::Match(_) => r.matches.push(ci),
                Join::UserText(t) => r.by_text.entry(t.clone()).or_default().push(ci),
                Join::Session { key: None, id } => {
                    r.sessions.entry((None, id.clone())).or_default().push(ci)
                }
                Join::Session { key: Some(k), id } => match keys.iter().position(|x| x == k) {
                    Some(ki) => r
                        .sessions
                        .entry((Some(ki), id.clone()))
                        .or_default()
                        .push(ci),
                    None => r.other_sessions.push(ci),
                },
            }
        }
        r.by_trace_id.sort_unstable();
        r
    }
}

/// The facts of a session's traces together (`None` when not computed).
pub fn merged_facts<'a>(
    facts: impl IntoIterator<Item = Option<&'a TraceFacts>>,
) -> Option<TraceFacts> {
    let mut out: Option<TraceFacts> = None;
    for f in facts.into_iter().flatten() {
        out.get_or_insert_with(TraceFacts::default).merge(f);
    }
    out
}
