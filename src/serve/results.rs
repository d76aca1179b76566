//! Scoring completed traces and writing the results: JSONL rows (appended,
//! flushed after every batch), one stdout line per result, and a per-metric
//! summary at shutdown. Joining and scoring are `replay`'s own functions, so
//! a trace gets the same result here as in `traceval replay`.

use crate::report::prometheus::{Metrics, Verdict as PromVerdict};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::Path;

use serde::Serialize;
use serde_json::{json, Value};
use tracing::{debug, info, warn};

use super::buffer::Completed;
use super::intake::{ServeStats, StatsSnapshot};
use super::sessions::{DueSession, SessionTracker};
use super::ServeError;
use crate::assemble::{session::SessionIndex, SpanId, Trace, TraceId};
use crate::expect::{self, Case, FixtureOptions, Join};
use crate::extract::{Extractor, ToolCall};
use crate::ingest::Rejected;
use crate::replay::{self, ScoreSettings};
use crate::report::{self, ellipsize, Evaluation, Report, SessionRef};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

/// How traces are scored: the same settings as `replay`.
#[derive(Debug, Clone, Default)]
pub struct Scoring {
    pub settings: ScoreSettings,
    pub extractor: Extractor,
}

/// Totals of one metric over the run.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct MetricSummary {
    pub metric: String,
    pub evaluations: u64,
    pub passed: u64,
    pub errors: u64,
    /// Mean over the evaluations that produced a score.
    pub mean_score: Option<f64>,
    #[serde(skip)]
    score_sum: f64,
    #[serde(skip)]
    scored: u64,
}

/// What a whole `serve` run produced.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct ServeSummary {
    pub stats: StatsSnapshot,
    pub evaluations: u64,
    pub passed: u64,
    pub failed: u64,
    /// Cases of `--expected` that no trace matched during the run.
    pub unmatched_cases: Vec<String>,
    pub metrics: Vec<MetricSummary>,
    /// Batches whose results could not be written.
    pub write_errors: u64,
}

/// Scores batches of completed traces: read-only, shared by the scoring
/// threads. The pure, CPU-heavy part (extract, join, score, build rows).
pub(crate) struct BatchScorer {
    scoring: Scoring,
    cases: Option<Vec<Case>>,
    /// Case id -> index in `cases`, to mark cases hit.
    case_index: HashMap<String, usize>,
    /// Cases joined by session, scored when their session is idle.
    session_cases: Vec<Case>,
    /// Index of the first session case in the run's case list.
    session_case_base: usize,
    sessions: Mutex<SessionTracker>,
    default_case: Option<Case>,
    /// Build JSONL rows (a results file is open).
    rows: bool,
    /// Build stdout lines (not quiet).
    lines: bool,
    /// Also export each evaluation as a span in its trace.
    result_spans: bool,
    /// The results hub and exporter live here.
    stats: std::sync::Arc<ServeStats>,
}

/// How one evaluation is reported.
struct Emitted {
    revision: u32,
    /// Spans of the trace (not for sessions).
    spans: Option<usize>,
    /// Root span of the trace (first trace of a session).
    root: Option<SpanId>,
    /// Scored against `--default-expected`.
    is_default: bool,
    /// In the run's case list, to mark the case hit.
    case_index: Option<usize>,
}

/// One metric verdict, for the run's summary.
struct Verdict {
    metric_index: usize,
    passed: bool,
    error: bool,
    score: Option<f64>,
}

/// What scoring one batch produced: its output and its counts.
#[derive(Default)]
pub(crate) struct BatchResult {
    rows: Vec<u8>,
    lines: String,
    traces: u64,
    rescored: u64,
    unmatched: u64,
    evaluations: u64,
    passed: u64,
    cases_hit: Vec<usize>,
    verdicts: Vec<Verdict>,
    /// Metrics not in the run's list (per-case `metrics`), by name; a
    /// verdict's `metric_index` past the run's list points in here.
    extra_metrics: Vec<String>,
    /// `gen_ai.evaluation.result` records, when results are exported.
    log_records: Vec<opentelemetry_proto::tonic::logs::v1::LogRecord>,
    /// `traceval.evaluation` spans, when `--results-spans` is on.
    spans: Vec<opentelemetry_proto::tonic::trace::v1::Span>,
}

impl BatchResult {
    /// Nothing was scored.
    pub fn is_empty(&self) -> bool {
        self.traces == 0 && self.evaluations == 0 && self.rows.is_empty() && self.lines.is_empty()
    }

    pub fn traces(&self) -> u64 {
        self.traces
    }
}

/// Writes batch results (one writer) and keeps the run's totals.
pub(crate) struct ResultSink {
    jsonl: Option<BufWriter<File>>,
    stdout: bool,
    /// The run's metrics first, then per-case ones as they appear.
    metrics: Vec<MetricSummary>,
    /// How many of `metrics` are the run's own.
    run_metrics: usize,
    case_ids: Vec<String>,
    cases_hit: Vec<bool>,
    has_cases: bool,
    evaluations: u64,
    passed: u64,
    write_errors: u64,
    stats: std::sync::Arc<ServeStats>,
}

/// Loads fixtures and opens the results file. Bad fixture lines are logged
/// and written as `rejected` rows; the run goes on without them.
pub(crate) fn build(
    config: &super::ServeConfig,
    mut scoring: Scoring,
    stats: std::sync::Arc<ServeStats>,
) -> Result<(BatchScorer, ResultSink), ServeError> {
    let mut rejected = Vec::new();
    let mut session_cases = Vec::new();
    let opts = FixtureOptions {
        session_keys: scoring.settings.session_keys.clone(),
    };
    let cases = match &config.expected {
        Some(p) => {
            let (cases, bad) = expect::load_with(p, &opts)?;
            rejected.extend(bad);
            // Trace cases are joined per completed trace; session cases
            // collect the calls of their traces until the session is idle
            // (`sessions.rs`).
            let (trace_cases, sessions): (Vec<Case>, Vec<Case>) = cases
                .into_iter()
                .partition(|c| !matches!(c.join, Join::Session { .. }));
            session_cases = sessions;
            Some(trace_cases)
        }
        None => None,
    };
    let default_case = match &config.default_expected {
        Some(p) => Some(load_default_case(p, &opts)?),
        None => None,
    };
    let jsonl = match &config.output {
        Some(p) => Some(BufWriter::new(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|source| ServeError::Output {
                    path: p.display().to_string(),
                    source,
                })?,
        )),
        None => None,
    };
    let metrics: Vec<MetricSummary> = scoring
        .settings
        .metrics
        .iter()
        .map(|m| MetricSummary {
            metric: m.clone(),
            ..MetricSummary::default()
        })
        .collect();
    // Trace cases first, then session cases (`session_case_base` on).
    let case_ids: Vec<String> = cases
        .iter()
        .flatten()
        .chain(&session_cases)
        .map(|c| c.id.clone())
        .collect();
    let session_case_base = case_ids.len() - session_cases.len();
    let case_index = case_ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.clone(), i))
        .collect();
    let mut sink = ResultSink {
        jsonl,
        stdout: !config.quiet,
        run_metrics: metrics.len(),
        metrics,
        cases_hit: vec![false; case_ids.len()],
        case_ids,
        has_cases: cases.is_some(),
        evaluations: 0,
        passed: 0,
        write_errors: 0,
        stats,
    };
    for r in &rejected {
        tracing::warn!(source = %r.source, position = %r.position, reason = %r.reason, "Fixture rejected.");
    }
    let mut rows = Vec::new();
    for r in &rejected {
        push_row(&mut rows, &rejected_row(r));
    }
    sink.write(&rows, "")
        .map_err(|source| ServeError::Write { source })?;
    if scoring.settings.wants_ordered_args(cases.as_deref())
        || scoring.settings.wants_ordered_args(Some(&session_cases))
    {
        scoring.extractor = scoring.extractor.with_ordered_args(true);
    }
    // Only JSONL rows show each call's result (stdout lines, OTLP records
    // and the results API do not): without a results file, skip decoding them.
    if sink.jsonl.is_none() {
        scoring.extractor = scoring.extractor.with_results(false);
    }
    let scorer = BatchScorer {
        scoring,
        cases,
        case_index,
        session_cases,
        session_case_base,
        sessions: Mutex::new(SessionTracker::new(config.session_wait)),
        default_case,
        rows: sink.jsonl.is_some(),
        lines: sink.stdout,
        result_spans: config.results_spans,
        stats: std::sync::Arc::clone(&sink.stats),
    };
    Ok((scorer, sink))
}

impl BatchScorer {
    /// Extracts, joins and scores one batch; builds its rows and lines.
    pub fn score(&self, batch: Vec<Completed>) -> BatchResult {
        let revisions: HashMap<TraceId, u32> =
            batch.iter().map(|c| (c.trace.id, c.revision)).collect();
        let traces: Vec<Trace> = batch.into_iter().map(|c| c.trace).collect();
        let by_id: HashMap<TraceId, &Trace> = traces.iter().map(|t| (t.id, t)).collect();
        let mut report = Report::default();
        replay::score_traces(
            &traces,
            self.cases.as_deref(),
            &self.scoring.extractor,
            &self.scoring.settings,
            &mut report,
        );
        // Traces of a session case: their calls go to the session tracker
        // (they are not "unmatched" for want of a trace case).
        let members = self.session_members(&traces);

        let revision_of = |id: &TraceId| revisions.get(id).copied().unwrap_or(1);
        let spans_of = |id: &TraceId| by_id.get(id).map_or(0, |t| t.spans.len());
        let mut out = BatchResult {
            traces: traces.len() as u64,
            rescored: revisions.values().filter(|&&r| r > 1).count() as u64,
            ..BatchResult::default()
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut evaluated = std::mem::take(&mut report.evaluations);
        let mut unmatched = std::mem::take(&mut report.unmatched_traces);
        if !members.is_empty() {
            let mut tracker = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
            let arrived = Instant::now();
            for (case, ti) in &members {
                let trace = &traces[*ti];
                // The calls were moved into the unmatched entry, or copied
                // into the trace case evaluations.
                let calls = unmatched
                    .iter()
                    .find(|u| u.trace_id == trace.id)
                    .map(|u| u.tools_called.clone())
                    .or_else(|| {
                        evaluated
                            .iter()
                            .find(|e| e.trace_id == trace.id)
                            .map(|e| e.tools_called.clone())
                    })
                    .unwrap_or_default();
                let root = trace.roots().next().map(|i| trace.spans[i].span_id);
                let id = match &self.session_cases[*case].join {
                    Join::Session { id, .. } => id.as_str(),
                    _ => "",
                };
                tracker.add(
                    *case,
                    id,
                    trace.id,
                    trace.start_time(),
                    root,
                    calls,
                    arrived,
                );
            }
            let in_session: std::collections::HashSet<TraceId> =
                members.iter().map(|&(_, ti)| traces[ti].id).collect();
            unmatched.retain(|u| !in_session.contains(&u.trace_id));
        }
        out.unmatched = unmatched.len() as u64;
        if !unmatched.is_empty() && (self.cases.is_some() || !self.session_cases.is_empty()) {
            info!(
                traces = unmatched.len(),
                first = %unmatched[0].trace_id,
                defaulted = self.default_case.is_some(),
                "Traces matched no case."
            );
        }
        let mut plain_unmatched = Vec::new();
        let first_default = evaluated.len();
        for u in unmatched {
            match (&self.default_case, by_id.get(&u.trace_id)) {
                (Some(case), Some(trace)) => evaluated.push(replay::evaluate(
                    trace,
                    u.tools_called,
                    case,
                    &self.scoring.settings,
                )),
                _ => plain_unmatched.push(u),
            }
        }
        for (i, e) in evaluated.iter_mut().enumerate() {
            let is_default = i >= first_default;
            let root = by_id
                .get(&e.trace_id)
                .and_then(|t| t.roots().next().map(|i| t.spans[i].span_id));
            let emitted = Emitted {
                revision: revision_of(&e.trace_id),
                spans: Some(spans_of(&e.trace_id)),
                root,
                is_default,
                case_index: if is_default {
                    None
                } else {
                    self.case_index.get(&e.case_id).copied()
                },
            };
            self.emit(&mut out, e, &emitted, now);
        }
        for u in &mut plain_unmatched {
            if self.rows {
                let calls = std::mem::take(&mut u.tools_called);
                let mut row = report::unmatched_trace_row(u);
                u.tools_called = calls;
                row["revision"] = json!(revision_of(&u.trace_id));
                push_row_with_calls(&mut out.rows, row, &u.tools_called);
            }
            if self.lines {
                let tools: Vec<&str> = u.tools_called.iter().map(|c| c.name.as_str()).collect();
                out.lines.push_str(&format!(
                    "----  {}  r{}  (no case)  {} tool call(s): {}\n",
                    u.trace_id,
                    revision_of(&u.trace_id),
                    tools.len(),
                    ellipsize(&tools.join(", "), 100)
                ));
            }
        }
        debug!(
            traces = out.traces,
            evaluations = out.evaluations,
            rescored = out.rescored,
            "Scored batch."
        );
        out
    }

    /// `(session case, trace index)` for every trace of `traces` that
    /// belongs to a session case.
    fn session_members(&self, traces: &[Trace]) -> Vec<(usize, usize)> {
        if self.session_cases.is_empty() {
            return Vec::new();
        }
        let index = SessionIndex::build(traces, &self.scoring.settings.session_keys);
        let mut out = Vec::new();
        for (ci, c) in self.session_cases.iter().enumerate() {
            if let Join::Session { key, id } = &c.join {
                out.extend(
                    index
                        .lookup(traces, key.as_deref(), id)
                        .into_iter()
                        .map(|ti| (ci, ti)),
                );
            }
        }
        out
    }

    /// When the next session is due for scoring, if any is waiting.
    pub fn next_session_due(&self) -> Option<Instant> {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .next_due()
    }

    /// Scores the sessions idle for the session wait (every waiting one
    /// when `all`, at shutdown).
    pub fn score_due_sessions(&self, now: Instant, all: bool) -> BatchResult {
        let due: Vec<DueSession> = {
            let mut tracker = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
            let due = tracker.take_due(now, all);
            let prom = &self.stats.prometheus;
            Metrics::set(&prom.sessions_waiting, tracker.waiting() as u64);
            Metrics::add(&prom.sessions_scored, due.len() as u64);
            due
        };
        let mut out = BatchResult::default();
        if due.is_empty() {
            return out;
        }
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        for d in due {
            let case = &self.session_cases[d.case];
            let session = SessionRef {
                id: d.id,
                trace_ids: d.trace_ids,
            };
            let mut e =
                replay::evaluate_session_calls(session, d.calls, case, &self.scoring.settings);
            let emitted = Emitted {
                revision: d.revision,
                spans: None,
                root: d.root,
                is_default: false,
                case_index: Some(self.session_case_base + d.case),
            };
            self.emit(&mut out, &mut e, &emitted, wall);
        }
        debug!(sessions = out.evaluations, "Scored sessions.");
        out
    }

    /// Adds one evaluation's row, line, tallies, live result and OTLP
    /// records to `out`.
    fn emit(&self, out: &mut BatchResult, e: &mut Evaluation, how: &Emitted, now: u64) {
        if self.rows {
            // The calls are serialized straight from `e` (no `Value` copy).
            let calls = std::mem::take(&mut e.tools_called);
            let mut row = report::evaluation_row(e);
            e.tools_called = calls;
            row["revision"] = json!(how.revision);
            if let Some(spans) = how.spans {
                row["spans"] = json!(spans);
            }
            if how.is_default {
                row["default_expectation"] = json!(true);
            }
            push_row_with_calls(&mut out.rows, row, &e.tools_called);
        }
        if self.lines {
            out.lines.push_str(&evaluation_line(e, how.revision));
        }
        self.tally(out, e, how.case_index);
        self.stats.results_hub.publish(e, how.revision);
        if self.stats.results_forward.lock().is_ok_and(|f| f.is_some()) {
            let records = report::otlp::evaluation_records(e, how.root, how.revision, now);
            if self.result_spans {
                out.spans.push(report::otlp::evaluation_span(
                    e,
                    &records,
                    how.root,
                    how.revision,
                    now,
                ));
            }
            out.log_records.extend(records);
        }
    }

    fn tally(&self, out: &mut BatchResult, e: &Evaluation, case_index: Option<usize>) {
        out.evaluations += 1;
        if e.passed() {
            out.passed += 1;
        }
        if let Some(i) = case_index {
            out.cases_hit.push(i);
        }
        let run = &self.scoring.settings.metrics;
        for r in &e.results {
            let metric_index = match run.iter().position(|m| *m == r.metric) {
                Some(i) => i,
                None => match out.extra_metrics.iter().position(|m| *m == r.metric) {
                    Some(i) => run.len() + i,
                    None => {
                        out.extra_metrics.push(r.metric.clone());
                        run.len() + out.extra_metrics.len() - 1
                    }
                },
            };
            out.verdicts.push(Verdict {
                metric_index,
                passed: r.passed(),
                error: r.outcome.error.is_some(),
                score: r.outcome.score,
            });
        }
    }
}

impl ResultSink {
    /// Writes one batch's rows (flushed) and lines, and adds up its counts.
    pub fn record(&mut self, r: BatchResult) -> io::Result<()> {
        self.stats
            .add_scored(r.traces, r.rescored, r.evaluations, r.unmatched);
        self.evaluations += r.evaluations;
        self.passed += r.passed;
        for i in r.cases_hit {
            if let Some(hit) = self.cases_hit.get_mut(i) {
                *hit = true;
            }
        }
        let run_metrics = self.run_metrics;
        // Map the batch's extra metrics onto ours.
        let extra: Vec<usize> = r
            .extra_metrics
            .iter()
            .map(
                |name| match self.metrics.iter().position(|m| &m.metric == name) {
                    Some(i) => i,
                    None => {
                        self.metrics.push(MetricSummary {
                            metric: name.clone(),
                            ..MetricSummary::default()
                        });
                        self.metrics.len() - 1
                    }
                },
            )
            .collect();
        for v in r.verdicts {
            let i = if v.metric_index < run_metrics {
                v.metric_index
            } else {
                extra[v.metric_index - run_metrics]
            };
            let m = &mut self.metrics[i];
            let verdict = match (v.error, v.passed) {
                (true, _) => PromVerdict::Error,
                (false, true) => PromVerdict::Pass(v.score),
                (false, false) => PromVerdict::Fail(v.score),
            };
            self.stats.prometheus.record(&m.metric, verdict);
            m.evaluations += 1;
            m.passed += u64::from(v.passed);
            m.errors += u64::from(v.error);
            if let Some(s) = v.score {
                m.score_sum += s;
                m.scored += 1;
            }
        }
        let exporter = self
            .stats
            .results_forward
            .lock()
            .ok()
            .and_then(|f| f.clone());
        if let Some(f) = exporter {
            if !r.log_records.is_empty() {
                let body =
                    prost::Message::encode_to_vec(&report::otlp::logs_request(r.log_records));
                if f.send_blocking(crate::forward::Signal::Logs, body.into(), 0)
                    .is_err()
                {
                    warn!("The results exporter has stopped; evaluation log records are not sent.");
                }
            }
            if !r.spans.is_empty() {
                // Counted as 0 forwarded spans: they are ours, not the upstream's.
                let body = prost::Message::encode_to_vec(&report::otlp::spans_request(r.spans));
                if f.send_blocking(crate::forward::Signal::Traces, body.into(), 0)
                    .is_err()
                {
                    warn!("The results exporter has stopped; evaluation spans are not sent.");
                }
            }
        }
        self.write(&r.rows, &r.lines)
    }

    /// Appends `rows` (JSONL text) to the results file and flushes it; prints `lines`.
    fn write(&mut self, rows: &[u8], lines: &str) -> io::Result<()> {
        if let Some(w) = &mut self.jsonl {
            w.write_all(rows)?;
            w.flush()?;
        }
        if self.stdout && !lines.is_empty() {
            let mut out = io::stdout().lock();
            out.write_all(lines.as_bytes())?;
            out.flush()?;
        }
        Ok(())
    }

    /// Counts a batch whose rows could not be written.
    pub fn write_failed(&mut self) {
        self.write_errors += 1;
    }

    /// Writes unmatched cases and the summary; returns the summary.
    pub fn finish(mut self) -> io::Result<ServeSummary> {
        for m in &mut self.metrics {
            m.mean_score = (m.scored > 0).then(|| m.score_sum / m.scored as f64);
        }
        let unmatched_cases: Vec<String> = self
            .case_ids
            .iter()
            .zip(&self.cases_hit)
            .filter(|(_, hit)| !**hit)
            .map(|(id, _)| id.clone())
            .collect();
        let summary = ServeSummary {
            stats: self.stats.snapshot(),
            evaluations: self.evaluations,
            passed: self.passed,
            failed: self.evaluations - self.passed,
            unmatched_cases,
            metrics: self.metrics.clone(),
            write_errors: self.write_errors,
        };
        let mut rows = Vec::new();
        for c in &summary.unmatched_cases {
            push_row(&mut rows, &report::unmatched_case_row(c));
        }
        let metrics: serde_json::Map<String, Value> = summary
            .metrics
            .iter()
            .map(|m| (m.metric.clone(), json!(m)))
            .collect();
        push_row(
            &mut rows,
            &json!({
                "type": "summary",
                "stats": summary.stats,
                "evaluations": summary.evaluations,
                "passed": summary.passed,
                "failed": summary.failed,
                "unmatched_traces": summary.stats.unmatched_traces,
                "unmatched_cases": summary.unmatched_cases.len(),
                "has_cases": self.has_cases,
                "metrics": metrics,
            }),
        );
        let text = if self.stdout {
            summary_text(&summary)
        } else {
            String::new()
        };
        self.write(&rows, &text)?;
        Ok(summary)
    }
}

const TOOLS_CALLED: &str = "tools_called";

/// One JSONL line: `row` (an object built without its `tools_called`) with
/// `calls` serialized straight into it. The calls carry the arguments and
/// results (often kilobytes of JSON each): turning them into a `Value` first
/// would copy all of it, and that copy cost as much as extraction itself.
fn push_row_with_calls(out: &mut Vec<u8>, mut row: Value, calls: &[ToolCall]) {
    let Some(obj) = row.as_object_mut() else {
        return push_row(out, &row);
    };
    obj.remove(TOOLS_CALLED);
    let start = out.len();
    let _ = serde_json::to_writer(&mut *out, &row);
    if out.len() < start + 2 || out.last() != Some(&b'}') {
        out.truncate(start);
        row[TOOLS_CALLED] = serde_json::to_value(calls).unwrap_or(Value::Null);
        return push_row(out, &row);
    }
    out.pop();
    if out.len() > start + 1 {
        out.push(b',');
    }
    let _ = serde_json::to_writer(&mut *out, TOOLS_CALLED);
    out.push(b':');
    let _ = serde_json::to_writer(&mut *out, calls);
    out.extend_from_slice(b"}\n");
}

/// One JSONL line.
fn push_row(out: &mut Vec<u8>, row: &Value) {
    // Writing a `Value` to a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *out, row);
    out.push(b'\n');
}

fn rejected_row(r: &Rejected) -> Value {
    json!({
        "type": "rejected",
        "source": r.source,
        "position": r.position.to_string().trim_start_matches([':', ' ']),
        "reason": r.reason,
    })
}

/// One stdout line: verdict, trace, revision, case, every metric's score, why.
fn evaluation_line(e: &Evaluation, revision: u32) -> String {
    let scores: Vec<String> = e
        .results
        .iter()
        .map(|r| match (r.outcome.score, &r.outcome.error) {
            (_, Some(_)) => format!("{}=error", r.metric),
            (Some(s), None) => format!("{}={s:.3}", r.metric),
            (None, None) => format!("{}=-", r.metric),
        })
        .collect();
    let why = e
        .headline()
        .map(|h| {
            h.outcome
                .error
                .clone()
                .unwrap_or_else(|| h.outcome.reason.clone())
        })
        .unwrap_or_default();
    let subject = match &e.session {
        Some(s) => format!(
            "session {} ({} traces)",
            ellipsize(&s.id, 32),
            s.trace_ids.len()
        ),
        None => e.trace_id.to_string(),
    };
    format!(
        "{}  {}  r{}  {}  {}  {}\n",
        if e.passed() { "pass" } else { "FAIL" },
        subject,
        revision,
        ellipsize(&e.case_id, 32),
        scores.join(" "),
        ellipsize(&why, 100)
    )
}

fn summary_text(s: &ServeSummary) -> String {
    let st = &s.stats;
    let mut out = format!(
        "\n{} span(s), {} trace(s) scored ({} re-score(s)), {} evaluation(s): {} passed, {} failed; {} trace(s) matched no case",
        st.spans, st.traces_scored, st.rescored, s.evaluations, s.passed, s.failed, st.unmatched_traces
    );
    if !s.unmatched_cases.is_empty() {
        out.push_str(&format!(
            "; {} case(s) matched no trace",
            s.unmatched_cases.len()
        ));
    }
    out.push('\n');
    if !s.metrics.is_empty() && s.evaluations > 0 {
        let w = s
            .metrics
            .iter()
            .map(|m| m.metric.len())
            .max()
            .unwrap_or(6)
            .max(6);
        out.push_str(&format!(
            "{:w$}  {:>5}  {:>6}  {:>6}  {:>6}  {:>10}\n",
            "METRIC", "EVALS", "PASSED", "FAILED", "ERRORS", "MEAN SCORE"
        ));
        for m in &s.metrics {
            let mean = m.mean_score.map_or("-".to_string(), |v| format!("{v:.3}"));
            out.push_str(&format!(
                "{:w$}  {:>5}  {:>6}  {:>6}  {:>6}  {:>10}\n",
                m.metric,
                m.evaluations,
                m.passed,
                m.evaluations - m.passed,
                m.errors,
                mean
            ));
        }
    }
    out
}

/// The expectation for traces no case matches: a JSON array of expected
/// tools, or one case object whose `trace_id`/`match` are ignored.
fn load_default_case(path: &Path, opts: &FixtureOptions) -> Result<Case, ServeError> {
    let label = path.display().to_string();
    let bad = |reason: String| ServeError::DefaultExpected {
        path: label.clone(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let mut case = match value {
        Value::Array(tools) => json!({"id": "default", "expected_tools": tools}),
        Value::Object(mut m) => {
            m.remove("trace_id");
            m.remove("match");
            m.entry("id").or_insert_with(|| json!("default"));
            Value::Object(m)
        }
        _ => return Err(bad("expected a JSON array of tools or a case object".into())),
    };
    // The fixture parser wants a join; this one is never used.
    case["match"] = json!({"traceval.default": "true"});
    let (cases, rejected) = expect::parse_with(&case.to_string(), &label, opts);
    match (cases.into_iter().next(), rejected.first()) {
        (Some(c), None) => Ok(c),
        (_, Some(r)) => Err(bad(r.reason.clone())),
        (None, None) => Err(bad("no case found".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_get_their_calls_without_a_copy() {
        let mut out = Vec::new();
        push_row_with_calls(&mut out, json!({"type": "x", "tools_called": []}), &[]);
        push_row_with_calls(&mut out, json!({}), &[]);
        let text = String::from_utf8(out).unwrap();
        let rows: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows[0], json!({"type": "x", "tools_called": []}));
        assert_eq!(rows[1], json!({"tools_called": []}));
    }

    #[test]
    fn default_case_from_array_or_object() {
        let dir = std::env::temp_dir().join(format!("traceval-default-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("d.json");
        std::fs::write(&p, r#"["a", {"name": "b", "args": {"x": 1}}]"#).unwrap();
        let c = load_default_case(&p, &FixtureOptions::default()).unwrap();
        assert_eq!((c.id.as_str(), c.expected.len()), ("default", 2));
        std::fs::write(
            &p,
            r#"{"id": "fallback", "trace_id": "00", "expected_tools": ["a"], "threshold": 0.9}"#,
        )
        .unwrap();
        let c = load_default_case(&p, &FixtureOptions::default()).unwrap();
        assert_eq!((c.id.as_str(), c.threshold), ("fallback", Some(0.9)));
        std::fs::write(&p, r#"{"expected_tools": 3}"#).unwrap();
        assert!(load_default_case(&p, &FixtureOptions::default()).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
