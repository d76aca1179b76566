//! Replay: trace files -> a [`Report`]. Reads and assembles every input,
//! then hands each trace to the evaluation core (`evaluate`).

use std::path::PathBuf;

use crate::assemble::{Assembler, Trace};
use crate::evaluate::{in_parallel, Evaluator, Sessions, TraceResult};
use crate::extract::facts::token_usage;
use crate::extract::Extractor;
use crate::ingest::otlp_json::{KeepAll, KeyFilter};
use crate::ingest::stream::{self, StreamOptions};
use crate::ingest::{self, files, Limits, Position, Rejected};
use crate::report::{Report, Stats, Timeline, ToolStatsBuilder, UnmatchedTrace};

/// Extracts and evaluates every trace; sessions are scored once all their
/// traces are in. Fills the report's evaluations, unmatched traces and
/// cases, and counters.
pub fn score_traces(
    traces: &[Trace],
    evaluator: &Evaluator,
    extractor: &Extractor,
    report: &mut Report,
) {
    let mut scorer = Scorer::new(evaluator, extractor, report);
    scorer.add(traces, report);
    scorer.finish(report);
}

/// Scores traces as they are handed out (a batch at a time, as a stream
/// releases them), keeping only per-trace results.
pub struct Scorer<'a> {
    evaluator: &'a Evaluator,
    extractor: &'a Extractor,
    hit: Vec<bool>,
    sessions: Sessions,
    tools: ToolStatsBuilder,
    threads: usize,
}

impl<'a> Scorer<'a> {
    pub fn new(evaluator: &'a Evaluator, extractor: &'a Extractor, report: &mut Report) -> Self {
        report.metrics = evaluator.labels().to_vec();
        report.has_cases = evaluator.has_cases();
        Scorer {
            evaluator,
            extractor,
            hit: vec![false; evaluator.cases().len()],
            sessions: Sessions::default(),
            tools: ToolStatsBuilder::default(),
            // A judged metric waits on HTTP: traces go in parallel, up to
            // the judge's concurrency, so a run does not take N x latency.
            threads: evaluator.judge().map_or(1, |j| j.concurrency()),
        }
    }

    /// Extracts and evaluates a batch of traces.
    pub fn add(&mut self, traces: &[Trace], report: &mut Report) {
        report.stats.traces += traces.len();
        let (evaluator, extractor) = (self.evaluator, self.extractor);
        let timelines = report.timelines.is_some();
        type Scored = (TraceResult, (Option<u64>, Option<u64>), Option<Timeline>);
        let results: Vec<Scored> =
            in_parallel(traces.iter().collect(), self.threads, |t: &Trace| {
                let (calls, runs) = extractor.extract_with_runs(t);
                let timeline = timelines.then(|| Timeline::of(t, &calls, &runs));
                let result = evaluator.evaluate_trace_with_runs(t, calls, &runs);
                let tokens = match &result.facts {
                    Some(f) => (f.input_tokens, f.output_tokens),
                    None => token_usage(t),
                };
                (result, tokens, timeline)
            });
        for (result, tokens, timeline) in results {
            if let (Some(map), Some(t)) = (report.timelines.as_mut(), timeline) {
                map.insert(result.trace_id, t);
            }
            report.stats.tool_calls += result.calls.len();
            self.tools.add(&result.calls, tokens);
            self.sessions.add(&result);
            for m in &result.sessions {
                self.hit[m.case] = true;
            }
            for e in &result.evaluations {
                self.hit[e.case_index] = true;
            }
            if result.unmatched() {
                report.unmatched_traces.push(UnmatchedTrace {
                    trace_id: result.trace_id,
                    spans: result.spans,
                    tools_called: result.calls,
                });
            } else {
                report.evaluations.extend(result.evaluations);
            }
        }
    }

    /// Scores the sessions and names the cases no trace matched.
    pub fn finish(self, report: &mut Report) {
        let evaluator = self.evaluator;
        report.evaluations.extend(self.sessions.evaluate(evaluator));
        (report.tools, report.tokens) = self.tools.finish();
        let hit = self.hit;
        report.unmatched_cases.extend(
            evaluator
                .cases()
                .enumerate()
                .filter(|&(i, _)| !hit[i] && !evaluator.is_default(i))
                .map(|(_, c)| c.id.clone()),
        );
        report.judge = evaluator.judge().map(|j| j.usage());
    }
}

/// Progress of a replay, for people watching long runs.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    pub spans: usize,
    /// On-disk size of the inputs read so far, and of them all (stdin counts 0).
    pub bytes: u64,
    pub total_bytes: u64,
}

/// How inputs are read: size caps, threads, and how long a trace is held.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadOptions {
    pub limits: Limits,
    pub stream: StreamOptions,
    /// Hand a trace out once it has a root and no span of it came in the
    /// last this many bytes of input; `None` holds every trace to the end.
    pub hold_window: Option<u64>,
}

/// Reads every input, streaming: decodes on `options.stream.threads`
/// threads, keeps what `filter` keeps, assembles traces and hands them to
/// `each` in batches, as soon as they are complete (see
/// [`Assembler::release`]) or at the end. Returns the run's rejections and
/// counters.
pub fn stream_traces(
    paths: &[PathBuf],
    options: &ReadOptions,
    filter: &(dyn KeyFilter + Sync),
    mut progress: impl FnMut(Progress),
    mut each: impl FnMut(Vec<Trace>),
) -> (Vec<Rejected>, Stats) {
    let (inputs, mut rejected) = files::expand(paths);
    let mut stats = Stats {
        inputs: inputs.len(),
        ..Stats::default()
    };
    let sizes: Vec<u64> = inputs.iter().map(files::Input::size).collect();
    let total_bytes = sizes.iter().sum();
    let (mut done, mut done_bytes) = (0usize, 0u64);
    let mut assembler = Assembler::new();
    let mut hand_out = |traces: Vec<Trace>| {
        // The calls of a parent cycle are kept; say which links were dropped.
        for warning in traces.iter().filter_map(Trace::cycle_warning) {
            eprintln!("traceval: warning: {warning}");
        }
        // First copy wins; a span id reused with other content is named.
        for warning in traces.iter().filter_map(Trace::conflict_warning) {
            eprintln!("traceval: warning: {warning}");
        }
        if !traces.is_empty() {
            each(traces);
        }
    };
    stream::decode_inputs(&inputs, &options.limits, filter, &options.stream, |piece| {
        let source = inputs[piece.input].label();
        rejected.extend(piece.decoded.rejected);
        for req in piece.decoded.requests {
            stats.requests += 1;
            let added = assembler.add_at(req, piece.position);
            stats.spans += added.spans;
            stats.duplicate_spans += added.duplicates;
            for (trace, spans) in added.late {
                rejected.push(Rejected {
                    source: source.clone(),
                    position: Position::Whole,
                    reason: format!(
                        "{spans} span(s) of trace {trace} came after the trace was scored \
                         (more than --hold-window-mib of input after its root): \
                         raise --hold-window-mib, or `all` to hold every trace"
                    ),
                    spans,
                });
            }
        }
        if let Some(window) = options.hold_window {
            hand_out(assembler.release(piece.position, window));
        }
        let current = if piece.last {
            done += 1;
            done_bytes += sizes[piece.input];
            0
        } else {
            piece.disk_bytes.min(sizes[piece.input])
        };
        progress(Progress {
            done,
            total: inputs.len(),
            spans: stats.spans,
            bytes: done_bytes + current,
            total_bytes,
        });
    });
    hand_out(assembler.finish());
    (rejected, stats)
}

/// Reads every input and returns all its traces at once, with the run's
/// rejections and counters.
pub fn read_traces(
    paths: &[PathBuf],
    limits: &Limits,
    progress: impl FnMut(Progress),
) -> (Vec<Trace>, Vec<Rejected>, Stats) {
    let options = ReadOptions {
        limits: *limits,
        ..ReadOptions::default()
    };
    let mut traces = Vec::new();
    let (rejected, stats) = stream_traces(paths, &options, &KeepAll, progress, |batch| {
        traces.extend(batch)
    });
    (traces, rejected, stats)
}

/// The whole replay: files in, report out. Fixture problems found while
/// loading (`fixture_rejected`) are reported with the input's.
pub fn replay(
    paths: &[PathBuf],
    evaluator: &Evaluator,
    fixture_rejected: Vec<Rejected>,
    extractor: &Extractor,
    options: &ReadOptions,
    filter: &(dyn KeyFilter + Sync),
    progress: impl FnMut(Progress),
) -> Report {
    replay_into(
        Report::default(),
        paths,
        evaluator,
        fixture_rejected,
        extractor,
        options,
        filter,
        progress,
    )
}

/// [`replay`] into a report prepared by the caller (e.g. with
/// `timelines: Some(..)` to keep span timing for the HTML report).
#[allow(clippy::too_many_arguments)]
pub fn replay_into(
    mut report: Report,
    paths: &[PathBuf],
    evaluator: &Evaluator,
    fixture_rejected: Vec<Rejected>,
    extractor: &Extractor,
    options: &ReadOptions,
    filter: &(dyn KeyFilter + Sync),
    progress: impl FnMut(Progress),
) -> Report {
    let configured;
    let needs = evaluator.needs();
    let extractor =
        if (needs.ordered_args && !extractor.ordered_args) || (needs.judge && !extractor.results) {
            // A judge reads each call's result.
            configured = extractor
                .clone()
                .with_ordered_args(needs.ordered_args || extractor.ordered_args)
                .with_results(needs.judge || extractor.results);
            &configured
        } else {
            extractor
        };
    let mut scorer = Scorer::new(evaluator, extractor, &mut report);
    let (rejected, stats) = stream_traces(paths, options, filter, progress, |batch| {
        scorer.add(&batch, &mut report)
    });
    scorer.finish(&mut report);
    report.stats = Stats {
        traces: report.stats.traces,
        tool_calls: report.stats.tool_calls,
        ..stats
    };
    report.rejected = rejected;
    report.rejected.extend(fixture_rejected);
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
