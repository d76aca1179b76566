//! Where serve's results go. Every consumer of a result (the JSONL file,
//! stdout lines, OTLP logs/spans, the results API, the per-metric counters
//! of `/metrics`) is a [`Sink`]; [`Outputs`] hands each scored batch to every
//! sink and keeps the run's totals. The run store is fed by the JSONL sink
//! (its rows are that file's), and written on a thread of its own ([`store`]).
//!
//! Adding an output is one file with a `Sink` impl plus a line in
//! [`Outputs::build`] (or, for an output that needs the runtime, in
//! `Server::serve`).
//!
//! Sinks are called on the scoring threads with `&self`: each formats its
//! output there (in parallel) and takes its own lock, if it has one, only to
//! write. A sink must never wait on anything outside the process (a
//! downstream, a subscriber): what it cannot deliver now it counts and drops.

pub mod html;
pub mod jsonl;
pub mod metrics;
pub mod otlp;
pub mod results_api;
pub mod stdout;
pub mod store;

use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use tracing::error;

use super::telemetry::{ServeStats, StatsSnapshot};
use super::{ServeConfig, ServeError};
use crate::assemble::SpanId;
use crate::evaluate::Evaluator;
use crate::evaluate::{Evaluation, UnmatchedCase, UnmatchedTrace};
use crate::ingest::Rejected;

/// One scored result, as every sink sees it.
#[derive(Debug)]
pub enum Output {
    Evaluation {
        eval: Evaluation,
        /// 1 for the first evaluation of a trace (or session), then 2, 3, ...
        revision: u32,
        /// Spans of the trace (not for sessions).
        spans: Option<usize>,
        /// Root span of the trace (first trace of a session).
        root: Option<SpanId>,
        /// Scored against `--default-expected`.
        defaulted: bool,
    },
    /// A trace that no case took.
    Unmatched {
        trace: UnmatchedTrace,
        revision: u32,
    },
}

/// One scoring round: its results and the traces it scored.
#[derive(Debug, Default)]
pub struct Batch {
    pub outputs: Vec<Output>,
    /// Traces scored (revisions included).
    pub traces: u64,
    /// Of those, revisions 2 and later.
    pub rescored: u64,
    /// Sessions scored.
    pub sessions: u64,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.outputs.is_empty() && self.traces == 0
    }
}

/// A consumer of results.
pub trait Sink: Send + Sync {
    /// For logs.
    fn name(&self) -> &'static str;

    /// Takes one batch, on the calling (scoring) thread. Must not wait on
    /// anything outside the process.
    fn record(&self, batch: &Batch) -> io::Result<()>;

    /// After the last batch, with the run's summary.
    fn finish(&self, _summary: &ServeSummary) -> io::Result<()> {
        Ok(())
    }

    /// Whether this sink shows each call's result (else extraction skips
    /// decoding them).
    fn shows_call_results(&self) -> bool {
        false
    }

    /// Whether this sink reads calls' arguments as values (else, when no
    /// metric reads them either, extraction keeps them as JSON text:
    /// `ToolCall::args_json`, which the JSONL rows write as is). Asked of
    /// the sinks built with [`Outputs::build`].
    fn reads_call_args(&self) -> bool {
        true
    }

    /// Called now and then while outputs are failing: retry what is owed.
    fn retry(&self) {}
}

/// Unmatched cases by id, as the summary has always listed them.
fn case_ids<S: serde::Serializer>(cases: &[UnmatchedCase], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(cases.iter().map(UnmatchedCase::id))
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Totals of one metric over the run.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct MetricSummary {
    pub metric: String,
    pub evaluations: u64,
    pub passed: u64,
    pub errors: u64,
    /// `--judge-dry-run`: neither passed nor failed (written when some are).
    #[serde(skip_serializing_if = "is_zero")]
    pub not_judged: u64,
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
    #[serde(serialize_with = "case_ids")]
    pub unmatched_cases: Vec<UnmatchedCase>,
    pub metrics: Vec<MetricSummary>,
    /// Batches some output failed to take.
    pub write_errors: u64,
    /// Whether a fixture was given.
    pub has_cases: bool,
    /// What the LLM judge cost, when a metric asked one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<crate::judge::JudgeUsage>,
}

/// The run's totals, as batches come in.
#[derive(Debug)]
struct Tally {
    evaluations: u64,
    passed: u64,
    /// Failed evaluations (a judge error is no failure).
    failed: u64,
    /// One per label of the evaluator, in its order.
    metrics: Vec<MetricSummary>,
    /// How many of `metrics` are the run's own (always listed).
    run_metrics: usize,
    cases_hit: Vec<bool>,
    write_errors: u64,
}

/// Every sink, and the run's totals.
pub struct Outputs {
    sinks: Vec<Box<dyn Sink>>,
    tally: Mutex<Tally>,
    stats: Arc<ServeStats>,
    evaluator: Arc<Evaluator>,
    /// The results file's, on SIGHUP.
    reopen: Option<jsonl::Reopen>,
}

impl Outputs {
    /// The sinks `config` asks for that need no runtime (file, stdout,
    /// results API, counters). `rejected`: fixture problems, reported first.
    /// `store`: the run store's feed, when the run is saved (the JSONL rows
    /// go there, with or without `--output`).
    pub fn build(
        config: &ServeConfig,
        evaluator: Arc<Evaluator>,
        stats: Arc<ServeStats>,
        hub: &results_api::ResultsHub,
        rejected: &[Rejected],
        store: Option<store::Feed>,
    ) -> Result<Outputs, ServeError> {
        let mut sinks: Vec<Box<dyn Sink>> = Vec::new();
        let mut reopen = None;
        if let Some(path) = &config.output {
            let (sink, handle) = jsonl::JsonlSink::open(path, rejected, Arc::clone(&stats), store)?;
            sinks.push(Box::new(sink));
            reopen = Some(handle);
        } else if let Some(feed) = store {
            let sink = jsonl::JsonlSink::store_only(rejected, Arc::clone(&stats), feed)?;
            sinks.push(Box::new(sink));
        }
        if let Some(path) = &config.html {
            sinks.push(Box::new(html::HtmlSink::open(path, rejected)?));
        }
        if !config.quiet {
            sinks.push(Box::new(stdout::StdoutSink));
        }
        sinks.push(Box::new(results_api::ResultsApiSink::new(hub.clone())));
        sinks.push(Box::new(metrics::MetricsSink::new(Arc::clone(&stats))));
        let labels = evaluator.labels();
        let tally = Tally {
            evaluations: 0,
            passed: 0,
            failed: 0,
            metrics: labels
                .iter()
                .map(|l| MetricSummary {
                    metric: l.clone(),
                    ..MetricSummary::default()
                })
                .collect(),
            run_metrics: evaluator.run_metrics(),
            cases_hit: vec![false; evaluator.cases().len()],
            write_errors: 0,
        };
        Ok(Outputs {
            sinks,
            tally: Mutex::new(tally),
            stats,
            evaluator,
            reopen,
        })
    }

    /// What reopens the output files at their paths (log rotation), if
    /// there are any: the results file (`--output`; the HTML page is
    /// written whole at shutdown, and logs go to stderr).
    pub fn reopen(&self) -> Option<jsonl::Reopen> {
        self.reopen.clone()
    }

    /// Adds a sink (one that needs the runtime, e.g. an exporter).
    pub fn add(&mut self, sink: Box<dyn Sink>) {
        self.sinks.push(sink);
    }

    /// Whether an output cannot take results now (see `ServeStats::output_failing`).
    pub fn failing(&self) -> bool {
        self.stats
            .output_failing
            .load(std::sync::atomic::Ordering::Relaxed)
            != 0
    }

    /// Lets failing sinks retry what they owe.
    pub fn retry(&self) {
        for sink in &self.sinks {
            sink.retry();
        }
    }

    /// Whether any sink shows call results.
    pub fn shows_call_results(&self) -> bool {
        self.sinks.iter().any(|s| s.shows_call_results())
    }

    pub fn reads_call_args(&self) -> bool {
        self.sinks.iter().any(|s| s.reads_call_args())
    }

    /// Counts `batch` and hands it to every sink. A sink that fails is
    /// counted and logged; the others still get the batch.
    pub fn record(&self, batch: &Batch) {
        if batch.is_empty() {
            return;
        }
        let s = &self.stats;
        let mut evaluations = 0;
        let mut unmatched = 0;
        {
            let mut t = self.tally.lock().unwrap_or_else(PoisonError::into_inner);
            for o in &batch.outputs {
                match o {
                    Output::Evaluation { eval, .. } => {
                        evaluations += 1;
                        t.add(eval, self.evaluator.labels());
                    }
                    Output::Unmatched { .. } => unmatched += 1,
                }
            }
        }
        let mut failed = false;
        for sink in &self.sinks {
            if let Err(e) = sink.record(batch) {
                failed = true;
                ServeStats::add(&s.sink_errors, 1);
                error!(sink = sink.name(), error = %e, traces = batch.traces, "Cannot write results; this batch is lost for that output.");
            }
        }
        // Counted once the sinks have the batch: whoever sees a trace
        // counted as scored (tests, /metrics) finds its rows written.
        ServeStats::add(&s.traces_scored, batch.traces);
        ServeStats::add(&s.traces_rescored, batch.rescored);
        ServeStats::add(&s.sessions_scored, batch.sessions);
        ServeStats::add(&s.evaluations, evaluations);
        ServeStats::add(&s.unmatched_traces, unmatched);
        if failed {
            self.tally
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .write_errors += 1;
        }
    }

    /// The run's summary, given to every sink (the JSONL file's last rows,
    /// the stdout table).
    pub fn finish(self) -> ServeSummary {
        let t = self
            .tally
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let evaluator = &self.evaluator;
        let unmatched_cases = evaluator.unmatched(&t.cases_hit);
        let metrics = t
            .metrics
            .into_iter()
            .enumerate()
            .filter(|(i, m)| *i < t.run_metrics || m.evaluations > 0)
            .map(|(_, mut m)| {
                m.mean_score = (m.scored > 0).then(|| m.score_sum / m.scored as f64);
                m
            })
            .collect();
        let summary = ServeSummary {
            stats: self.stats.snapshot(),
            evaluations: t.evaluations,
            passed: t.passed,
            failed: t.failed,
            unmatched_cases,
            metrics,
            write_errors: t.write_errors,
            has_cases: evaluator.has_cases(),
            judge: evaluator.judge().map(|j| j.usage()),
        };
        for sink in &self.sinks {
            if let Err(e) = sink.finish(&summary) {
                ServeStats::add(&self.stats.sink_errors, 1);
                error!(sink = sink.name(), error = %e, "Cannot write the run's summary.");
            }
        }
        // What the sinks could not deliver at the end counts too.
        ServeSummary {
            stats: self.stats.snapshot(),
            ..summary
        }
    }
}

impl Tally {
    fn add(&mut self, e: &Evaluation, labels: &[String]) {
        self.evaluations += 1;
        self.passed += u64::from(e.passed());
        self.failed += u64::from(e.verdict() == crate::evaluate::Verdict::Fail);
        if let Some(hit) = self.cases_hit.get_mut(e.case_index) {
            *hit = true;
        }
        for r in &e.results {
            let Some(i) = labels.iter().position(|l| *l == r.metric) else {
                continue;
            };
            let m = &mut self.metrics[i];
            m.evaluations += 1;
            m.passed += u64::from(r.passed());
            m.errors += u64::from(r.outcome.error.is_some());
            m.not_judged += u64::from(r.verdict() == crate::evaluate::Verdict::NotJudged);
            if let Some(s) = r.outcome.score {
                m.score_sum += s;
                m.scored += 1;
            }
        }
    }
}
