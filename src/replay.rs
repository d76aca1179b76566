//! Replay: trace files -> a [`Report`]. Wires the pure stages together.

use std::path::PathBuf;

use crate::assemble::{Assembler, Trace};
use crate::expect::{self, Case};
use crate::extract::{Extractor, ToolCall};
use crate::ingest::{self, files, Limits, Rejected};
use crate::report::{Evaluation, MetricResult, Report, Stats, UnmatchedTrace};
use crate::score::native::NativeConfig;
use crate::score::{registry, Call, Metric, MetricOptions, ScoreError};

/// How a run scores.
#[derive(Debug, Clone)]
pub struct ScoreSettings {
    /// Metric names; the first is the headline. Empty means `tool_correctness`.
    pub metrics: Vec<String>,
    /// Overrides for every metric (`--threshold`, `--strict`).
    pub options: MetricOptions,
    /// `tool_correctness` settings.
    pub native: NativeConfig,
}

impl Default for ScoreSettings {
    fn default() -> Self {
        ScoreSettings {
            metrics: vec![crate::score::native::NATIVE_NAME.to_string()],
            options: MetricOptions::default(),
            native: NativeConfig::default(),
        }
    }
}

impl ScoreSettings {
    /// Checks every metric name up front, so a typo is a usage error.
    pub fn validate(&self) -> Result<(), ScoreError> {
        for m in &self.metrics {
            registry::lookup(m, &self.options, &self.native)?;
        }
        Ok(())
    }

    fn build(
        &self,
        name: &str,
        case_threshold: Option<f64>,
    ) -> Result<Box<dyn Metric>, ScoreError> {
        let mut opts = self.options.clone();
        if case_threshold.is_some() {
            opts.threshold = case_threshold;
        }
        registry::lookup(name, &opts, &self.native)
    }
}

/// Scores `calls` against `case` with every applicable metric.
pub fn evaluate(
    trace: &Trace,
    calls: Vec<ToolCall>,
    case: &Case,
    settings: &ScoreSettings,
) -> Evaluation {
    let called: Vec<Call> = calls
        .iter()
        .map(|c| Call::new(c.name.clone(), c.args.clone()))
        .collect();
    let names = case.metrics.as_ref().unwrap_or(&settings.metrics);
    let results = names
        .iter()
        .map(|name| match settings.build(name, case.threshold) {
            Ok(metric) => MetricResult {
                metric: name.clone(),
                threshold: metric.threshold(),
                outcome: metric.score(&called, &case.expected),
            },
            Err(e) => MetricResult {
                metric: name.clone(),
                threshold: None,
                outcome: crate::score::Outcome::error(e.to_string()),
            },
        })
        .collect();
    Evaluation {
        trace_id: trace.id,
        case_id: case.id.clone(),
        tools_called: calls,
        expected: case.expected.clone(),
        results,
    }
}

/// Joins traces with cases and scores every pair.
pub fn score_traces(
    traces: &[Trace],
    cases: Option<&[Case]>,
    extractor: &Extractor,
    settings: &ScoreSettings,
    report: &mut Report,
) {
    let calls: Vec<Vec<ToolCall>> = traces.iter().map(|t| extractor.extract(t)).collect();
    report.stats.traces += traces.len();
    report.stats.tool_calls += calls.iter().map(Vec::len).sum::<usize>();
    report.metrics = settings.metrics.clone();
    let unmatched = |i: usize| UnmatchedTrace {
        trace_id: traces[i].id,
        spans: traces[i].spans.len(),
        tools_called: calls[i].clone(),
    };
    let Some(cases) = cases else {
        report
            .unmatched_traces
            .extend((0..traces.len()).map(unmatched));
        return;
    };
    report.has_cases = true;
    for c in cases {
        for m in c.metrics.iter().flatten() {
            if !report.metrics.contains(m) {
                report.metrics.push(m.clone());
            }
        }
    }
    let joined = expect::join(cases, traces);
    for &(ti, ci) in &joined.pairs {
        report.evaluations.push(evaluate(
            &traces[ti],
            calls[ti].clone(),
            &cases[ci],
            settings,
        ));
    }
    report
        .unmatched_traces
        .extend(joined.unmatched_traces.iter().map(|&i| unmatched(i)));
    report
        .unmatched_cases
        .extend(joined.unmatched_cases.iter().map(|&i| cases[i].id.clone()));
}

/// Progress of a replay, for people watching long runs.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    pub spans: usize,
}

/// Reads every input, assembles traces and returns them with the run's
/// rejections and counters.
pub fn read_traces(
    paths: &[PathBuf],
    limits: &Limits,
    mut progress: impl FnMut(Progress),
) -> (Vec<Trace>, Vec<Rejected>, Stats) {
    let (inputs, mut rejected) = files::expand(paths);
    let mut stats = Stats {
        inputs: inputs.len(),
        ..Stats::default()
    };
    let mut assembler = Assembler::new();
    for (n, input) in inputs.iter().enumerate() {
        let decoded = files::read_input(input, limits);
        rejected.extend(decoded.rejected);
        for req in decoded.requests {
            stats.requests += 1;
            let added = assembler.add(req);
            stats.spans += added.spans;
            stats.duplicate_spans += added.duplicates;
        }
        progress(Progress {
            done: n + 1,
            total: inputs.len(),
            spans: stats.spans,
        });
    }
    (assembler.finish(), rejected, stats)
}

/// The whole replay: files and fixtures in, report out.
pub fn replay(
    paths: &[PathBuf],
    cases: Option<(Vec<Case>, Vec<Rejected>)>,
    extractor: &Extractor,
    settings: &ScoreSettings,
    limits: &Limits,
    progress: impl FnMut(Progress),
) -> Report {
    let (traces, rejected, stats) = read_traces(paths, limits, progress);
    let mut report = Report {
        stats,
        rejected,
        ..Report::default()
    };
    let cases = cases.map(|(cases, bad)| {
        report.rejected.extend(bad);
        cases
    });
    score_traces(&traces, cases.as_deref(), extractor, settings, &mut report);
    report
}

/// Decodes and assembles in-memory request bodies (benchmarks, tests).
pub fn traces_from_bodies<'a>(
    bodies: impl IntoIterator<Item = &'a [u8]>,
    limits: &Limits,
) -> (Vec<Trace>, Vec<Rejected>) {
    let mut assembler = Assembler::new();
    let mut rejected = Vec::new();
    for (i, body) in bodies.into_iter().enumerate() {
        let d = ingest::decode(body, &format!("request {}", i + 1), limits);
        rejected.extend(d.rejected);
        for r in d.requests {
            assembler.add(r);
        }
    }
    (assembler.finish(), rejected)
}
