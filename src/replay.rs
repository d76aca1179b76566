//! Replay: trace files -> a [`Report`]. Wires the pure stages together.

use std::path::PathBuf;

use crate::assemble::{session, Assembler, Trace, TraceId};
use crate::expect::{self, Case};
use crate::extract::names::Normalizer;
use crate::extract::{Extractor, ToolCall};
use crate::ingest::{self, files, Limits, Rejected};
use crate::report::{Evaluation, MetricResult, Report, SessionRef, Stats, UnmatchedTrace};
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
    /// Tool names as compared (`--normalize`); off by default.
    pub names: Normalizer,
    /// Keys a `session_id` case looks at (P7).
    pub session_keys: Vec<String>,
}

impl Default for ScoreSettings {
    fn default() -> Self {
        ScoreSettings {
            metrics: vec![crate::score::native::NATIVE_NAME.to_string()],
            options: MetricOptions::default(),
            native: NativeConfig::default(),
            names: Normalizer::off(),
            session_keys: session::default_keys(),
        }
    }
}

impl ScoreSettings {
    /// Whether a metric of the run or of a case compares arguments with
    /// their key order (ragas compares Python `str()` of nested dicts), so
    /// extraction must keep it.
    pub fn wants_ordered_args(&self, cases: Option<&[Case]>) -> bool {
        let ordered = |m: &String| m.starts_with("ragas.");
        self.metrics.iter().any(ordered)
            || cases
                .into_iter()
                .flatten()
                .flat_map(|c| c.metrics.iter().flatten())
                .any(ordered)
    }

    /// Checks every metric name up front, so a typo is a usage error.
    pub fn validate(&self) -> Result<(), ScoreError> {
        for m in &self.metrics {
            self.build(m, None)?;
        }
        Ok(())
    }

    /// Builds a metric from its spec: a name, optionally with per-metric
    /// overrides, `NAME:threshold=0.7,strict=true`. A case's own threshold
    /// wins over the spec's, which wins over the run's.
    fn build(
        &self,
        spec: &str,
        case_threshold: Option<f64>,
    ) -> Result<Box<dyn Metric>, ScoreError> {
        let (name, mut opts) = parse_metric_spec(spec, &self.options)?;
        if case_threshold.is_some() {
            opts.threshold = case_threshold;
        }
        let mut native = self.native.clone();
        if let Some(t) = opts.threshold {
            native.threshold = t;
        }
        registry::lookup(name, &opts, &native)
    }
}

/// Splits `NAME:key=value,...` into the metric name and its options.
pub fn parse_metric_spec<'a>(
    spec: &'a str,
    base: &MetricOptions,
) -> Result<(&'a str, MetricOptions), ScoreError> {
    let mut opts = base.clone();
    let Some((name, rest)) = spec.split_once(':') else {
        return Ok((spec, opts));
    };
    let bad = |reason: String| ScoreError::BadOption {
        metric: name.to_string(),
        reason,
    };
    for part in rest.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once('=').unwrap_or((part, "true"));
        match key.trim() {
            "threshold" => {
                let t: f64 = value
                    .trim()
                    .parse()
                    .map_err(|_| bad(format!("threshold `{value}` is not a number")))?;
                if !(0.0..=1.0).contains(&t) {
                    return Err(bad(format!("threshold {t} is outside 0..=1")));
                }
                opts.threshold = Some(t);
            }
            "strict" => {
                let v: bool = value
                    .trim()
                    .parse()
                    .map_err(|_| bad(format!("strict `{value}` is not true/false")))?;
                opts.strict = Some(v);
            }
            other => return Err(bad(format!("unknown option `{other}` (threshold, strict)"))),
        }
    }
    Ok((name, opts))
}

/// Scores `calls` against `case` with every applicable metric.
pub fn evaluate(
    trace: &Trace,
    calls: Vec<ToolCall>,
    case: &Case,
    settings: &ScoreSettings,
) -> Evaluation {
    evaluate_calls(trace.id, None, calls, case, settings)
}

/// Scores the calls of a session's traces (`members`, by start time) against
/// `case`: all calls, in time order.
pub fn evaluate_session(
    traces: &[Trace],
    members: &[usize],
    id: &str,
    calls: Vec<ToolCall>,
    case: &Case,
    settings: &ScoreSettings,
) -> Evaluation {
    let session = SessionRef {
        id: id.to_string(),
        trace_ids: session::trace_ids(traces, members),
    };
    evaluate_session_calls(session, calls, case, settings)
}

/// Scores the calls of a session (`session.trace_ids` by start time; calls
/// in time order) against `case`.
pub fn evaluate_session_calls(
    session: SessionRef,
    calls: Vec<ToolCall>,
    case: &Case,
    settings: &ScoreSettings,
) -> Evaluation {
    let first = session
        .trace_ids
        .first()
        .copied()
        .unwrap_or(TraceId([0; 16]));
    evaluate_calls(first, Some(session), calls, case, settings)
}

fn evaluate_calls(
    trace_id: TraceId,
    session: Option<SessionRef>,
    calls: Vec<ToolCall>,
    case: &Case,
    settings: &ScoreSettings,
) -> Evaluation {
    let norm = &settings.names;
    let called: Vec<Call> = calls
        .iter()
        .map(|c| {
            let mut call = Call::new(norm.apply(&c.name).into_owned(), c.args.clone());
            call.ordered_args = c.ordered_args.clone();
            call
        })
        .collect();
    let normalized;
    let expected: &[Call] = if norm.is_enabled() {
        normalized = case
            .expected
            .iter()
            .map(|c| {
                let mut c = c.clone();
                c.name = norm.apply(&c.name).into_owned();
                c
            })
            .collect::<Vec<_>>();
        &normalized
    } else {
        &case.expected
    };
    let names = case.metrics.as_ref().unwrap_or(&settings.metrics);
    let results = names
        .iter()
        .map(|name| match settings.build(name, case.threshold) {
            Ok(metric) => MetricResult {
                metric: name.clone(),
                threshold: metric.threshold(),
                outcome: metric.score(&called, expected),
            },
            Err(e) => MetricResult {
                metric: name.clone(),
                threshold: None,
                outcome: crate::score::Outcome::error(e.to_string()),
            },
        })
        .collect();
    Evaluation {
        trace_id,
        session,
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
    let mut calls: Vec<Vec<ToolCall>> = traces.iter().map(|t| extractor.extract(t)).collect();
    report.stats.traces += traces.len();
    report.stats.tool_calls += calls.iter().map(Vec::len).sum::<usize>();
    report.metrics = settings.metrics.clone();
    // An unmatched trace's calls have no other use: move them (serve scores
    // every trace this way; a deep copy of JSON arguments is not free).
    let unmatched = |i: usize, calls: &mut [Vec<ToolCall>]| UnmatchedTrace {
        trace_id: traces[i].id,
        spans: traces[i].spans.len(),
        tools_called: std::mem::take(&mut calls[i]),
    };
    let Some(cases) = cases else {
        report
            .unmatched_traces
            .extend((0..traces.len()).map(|i| unmatched(i, &mut calls)));
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
    let joined = expect::join_with(cases, traces, &settings.session_keys);
    for &(ti, ci) in &joined.pairs {
        report.evaluations.push(evaluate(
            &traces[ti],
            calls[ti].clone(),
            &cases[ci],
            settings,
        ));
    }
    for sj in &joined.sessions {
        let mut all: Vec<ToolCall> = sj
            .traces
            .iter()
            .flat_map(|&ti| calls[ti].iter().cloned())
            .collect();
        // Turns are sequential; order by start time across traces too.
        all.sort_by_key(|c| c.start_time_unix_nano);
        report.evaluations.push(evaluate_session(
            traces,
            &sj.traces,
            &sj.id,
            all,
            &cases[sj.case],
            settings,
        ));
    }
    report.unmatched_traces.extend(
        joined
            .unmatched_traces
            .iter()
            .map(|&i| unmatched(i, &mut calls)),
    );
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
    let traces = assembler.finish();
    // The calls of a parent cycle are kept; say which links were dropped.
    for warning in traces.iter().filter_map(Trace::cycle_warning) {
        eprintln!("traceval: warning: {warning}");
    }
    (traces, rejected, stats)
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
    let ordered;
    let extractor = if settings.wants_ordered_args(cases.as_deref()) && !extractor.ordered_args {
        ordered = extractor.clone().with_ordered_args(true);
        &ordered
    } else {
        extractor
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_spec_options() {
        let base = MetricOptions {
            threshold: Some(0.5),
            strict: None,
        };
        let (name, o) = parse_metric_spec("deepeval.default:threshold=0.7,strict", &base).unwrap();
        assert_eq!(
            (name, o.threshold, o.strict),
            ("deepeval.default", Some(0.7), Some(true))
        );
        let (name, o) = parse_metric_spec("tool_correctness", &base).unwrap();
        assert_eq!((name, o), ("tool_correctness", base.clone()));
        assert!(parse_metric_spec("x:threshold=2", &base).is_err());
        assert!(parse_metric_spec("x:colour=red", &base).is_err());
    }

    #[test]
    fn case_threshold_beats_spec_and_run() {
        let settings = ScoreSettings {
            metrics: vec!["tool_correctness:threshold=0.9".into()],
            ..ScoreSettings::default()
        };
        let m = settings
            .build("tool_correctness:threshold=0.9", None)
            .unwrap();
        assert_eq!(m.threshold(), Some(0.9));
        let m = settings
            .build("tool_correctness:threshold=0.9", Some(0.2))
            .unwrap();
        assert_eq!(m.threshold(), Some(0.2));
    }
}
