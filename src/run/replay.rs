//! Replay: trace files -> a [`Report`]. Reads and assembles every input,
//! then hands each trace to the per-trace pipeline ([`Pipeline`]).

use std::cell::RefCell;

use crate::assemble::{Assembler, Trace, TraceId, Unbuilt};
use crate::evaluate::{Pipeline, Sessions, TraceOutcome, TraceResult};
use crate::extract::carry::{Carry, Left, OpenAsk, Spent};
use crate::extract::facts::token_usage;
use crate::ingest::files::{self, Source};
use crate::ingest::projection::KeyFilter;
use crate::ingest::stream::{self, StreamOptions};
use crate::ingest::{self, Limits, Position, Rejected};
use crate::parallel::{in_parallel, ordered_map};
use crate::report::{Report, Stats, Timeline, ToolStatsBuilder};

/// Runs the pipeline on every trace; sessions are scored once all their
/// traces are in. Fills the report's evaluations, unmatched traces and
/// cases, and counters.
pub fn score_traces(traces: &[Trace], pipeline: &Pipeline, report: &mut Report) {
    let mut scorer = Collector::new(pipeline, report);
    scorer.add(traces, report);
    scorer.finish(report);
}

/// Collects the results of traces as they are handed out (a batch at a
/// time, as a stream releases them), keeping only per-trace results. The
/// per-trace work ([`BatchRun`]) can run on other threads; the results are
/// folded in here, in order.
pub struct Collector<'a> {
    per_trace: BatchRun<'a>,
    /// Calls earlier traces left open, and traces held behind a lone MCP
    /// client trace (`extract::carry`).
    carry: Carry<Folded>,
    hit: Vec<bool>,
    sessions: Sessions,
    tools: ToolStatsBuilder,
}

/// The per-trace part of a [`Collector`]: the pipeline and what the report
/// keeps of each trace besides its result, shareable between threads.
#[derive(Clone, Copy)]
pub struct BatchRun<'a> {
    pipeline: &'a Pipeline,
    threads: usize,
    timelines: bool,
}

/// A batch of traces, scored.
pub struct Scored(Vec<ScoredTrace>);

/// What the report folds in of a trace: its result, (input, output)
/// tokens and timeline.
type Folded = (TraceResult, (Option<u64>, Option<u64>), Option<Timeline>);

/// A trace's result, its (input, output) tokens, its timeline, and what it
/// leaves open for the traces after it (with the trace itself while it may
/// answer a call an earlier trace left open: then it is scored again).
type ScoredTrace = (
    TraceResult,
    (Option<u64>, Option<u64>),
    Option<Timeline>,
    Option<Left>,
);

impl BatchRun<'_> {
    /// Runs the pipeline on a batch of traces.
    pub fn score(&self, traces: &[Trace]) -> Scored {
        Scored(in_parallel(
            traces.iter().collect(),
            self.threads,
            |t: &Trace| self.score_one(t, &[]),
        ))
    }

    /// Runs the pipeline on one trace, with the calls earlier traces left
    /// open.
    fn score_one(&self, t: &Trace, carried: &[OpenAsk]) -> ScoredTrace {
        let (result, runs, open) = self.pipeline.run_carried(t, carried);
        let timeline = self
            .timelines
            .then(|| Timeline::of(t, &result.calls, &runs));
        let tokens = match &result.facts {
            Some(f) => (f.input_tokens, f.output_tokens),
            None => token_usage(t),
        };
        (result, tokens, timeline, Left::of(open, || t.clone()))
    }
}

impl<'a> Collector<'a> {
    pub fn new(pipeline: &'a Pipeline, report: &mut Report) -> Self {
        let evaluator = pipeline.evaluator();
        report.metrics = evaluator.labels().to_vec();
        report.has_cases = evaluator.has_cases();
        Collector {
            per_trace: BatchRun {
                pipeline,
                // A judged metric waits on HTTP: traces go in parallel, up
                // to the judge's concurrency, so a run does not take N x
                // latency.
                threads: evaluator.judge().map_or(1, |j| j.concurrency()),
                timelines: report.timelines.is_some(),
            },
            carry: Carry::handing_back(),
            hit: vec![false; evaluator.cases().len()],
            sessions: Sessions::default(),
            tools: ToolStatsBuilder::default(),
        }
    }
    /// The per-trace work, to run on any thread.
    pub fn per_trace(&self) -> BatchRun<'a> {
        self.per_trace
    }

    /// Extracts and evaluates a batch of traces.
    pub fn add(&mut self, traces: &[Trace], report: &mut Report) {
        let scored = self.per_trace.score(traces);
        self.add_scored(scored, report);
        drop(self.spent());
    }

    /// The traces kept for a second scoring that the carry is done with
    /// (for the caller to drop where it likes).
    pub fn spent(&mut self) -> Spent {
        self.carry.spent()
    }

    /// Folds in a batch scored by [`BatchRun::score`]: what the core's
    /// per-trace pipeline decided each trace gives goes into the report.
    pub fn add_scored(&mut self, scored: Scored, report: &mut Report) {
        // A batch's assembly warnings come before what folding it says (a
        // session over the cap), as when they were printed on reading.
        for (result, ..) in &scored.0 {
            result
                .assembly_warnings
                .iter()
                .for_each(super::print_warning);
        }
        report.stats.traces += scored.0.len();
        for (result, tokens, timeline, left) in scored.0 {
            // A trace that answers a call an earlier one left open is
            // scored again with it.
            let per_trace = self.per_trace;
            let due = self
                .carry
                .settle((result, tokens, timeline), left, |t, carried| {
                    let (result, tokens, timeline, left) = per_trace.score_one(t, carried);
                    ((result, tokens, timeline), left.map(Left::into_open))
                });
            for folded in due {
                self.fold(folded, report);
            }
        }
    }

    /// Folds one trace's result into the report.
    fn fold(&mut self, (result, tokens, timeline): Folded, report: &mut Report) {
        if let (Some(map), Some(t)) = (report.timelines.as_mut(), timeline) {
            map.insert(result.trace_id, t);
        }
        report.stats.tool_calls += result.calls.len();
        self.tools.add(&result.calls, tokens);
        self.sessions
            .add(&result)
            .iter()
            .for_each(super::print_warning);
        for case in result.cases_hit() {
            self.hit[case] = true;
        }
        match result.into_outcome() {
            TraceOutcome::Unmatched(trace) => report.unmatched_traces.push(trace),
            TraceOutcome::Evaluated { evaluations, .. } => report.evaluations.extend(evaluations),
        }
    }

    /// Scores the sessions and names the cases no trace matched.
    pub fn finish(mut self, report: &mut Report) {
        for folded in self.carry.finish() {
            self.fold(folded, report);
        }
        let evaluator = self.per_trace.pipeline.evaluator();
        report.evaluations.extend(self.sessions.evaluate(evaluator));
        (report.tools, report.tokens) = self.tools.finish();
        report
            .unmatched_cases
            .extend(evaluator.unmatched(&self.hit));
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
/// threads, keeps what `filter` keeps, assembles traces and hands them in
/// batches, as soon as they are complete (see [`Assembler::release`]) or
/// at the end, to `map` on as many workers, then `map`'s results to `each`
/// in input order. What `each` is done with (traces, calls), put in its
/// [`Spent`], is dropped on a worker with the next batch: this thread is
/// the one every other waits for, and a trace's drop frees each span's
/// parts. Returns
/// the run's rejections and counters. It prints nothing: what a trace
/// warns of comes from the per-trace stage ([`crate::evaluate::Warning`]),
/// for the driver to say.
pub fn stream_traces<R: Send>(
    sources: &[Source],
    options: &ReadOptions,
    filter: &(dyn KeyFilter + Sync),
    mut progress: impl FnMut(Progress),
    map: impl Fn(Vec<Trace>) -> R + Sync,
    mut each: impl FnMut(R, &mut Spent),
) -> (Vec<Rejected>, Stats) {
    let (inputs, mut rejected) = files::expand(sources);
    let mut stats = Stats {
        inputs: inputs.len(),
        ..Stats::default()
    };
    let sizes: Vec<u64> = inputs.iter().map(files::TraceInput::size).collect();
    let total_bytes = sizes.iter().sum();
    let (mut done, mut done_bytes) = (0usize, 0u64);
    let mut assembler = Assembler::new();
    // Traces are built (spans put in order, indexed) and dropped on the
    // workers: this thread assembles every trace in turn, so it does the
    // least it can.
    let build_and_map = |(batch, spent): (Vec<Unbuilt>, Spent)| {
        drop(spent);
        map(batch.into_iter().map(Unbuilt::build).collect())
    };
    // What `each` is done with, until the next batch goes out.
    let spent = RefCell::new(Spent::default());
    ordered_map(
        options.stream.threads,
        build_and_map,
        |submit| {
            // A big release (the end of the input lets every held trace go
            // at once) is cut in batches, so that every worker takes part.
            let mut submit = |mut traces: Vec<Unbuilt>| {
                while !traces.is_empty() {
                    let mut spans = 0;
                    let cut = traces
                        .iter()
                        .position(|t| {
                            spans += t.span_count();
                            spans > BATCH_SPANS
                        })
                        .map_or(traces.len(), |i| i.max(1));
                    let rest = traces.split_off(cut);
                    // Taken before the submit, which may hand results to
                    // `each` (that borrows `spent` again).
                    let done = std::mem::take(&mut *spent.borrow_mut());
                    submit((std::mem::replace(&mut traces, rest), done));
                }
            };
            stream::decode_inputs(&inputs, &options.limits, filter, &options.stream, |piece| {
                let source = inputs[piece.input].label();
                rejected.extend(piece.decoded.rejected);
                let logs = piece.decoded.logs;
                stats.logs_without_span += logs.without_span;
                if !logs.events.is_empty() {
                    let added = assembler.add_events(logs.events, piece.position);
                    stats.log_events += added.events;
                    for (trace, n) in added.late {
                        rejected.push(late(&source, trace, n, "log record(s)", 0));
                    }
                }
                for req in piece.decoded.requests {
                    stats.requests += 1;
                    let added = assembler.add_at(req, piece.position);
                    stats.spans += added.spans;
                    stats.duplicate_spans += added.duplicates;
                    for (trace, spans) in added.late {
                        rejected.push(late(&source, trace, spans, "span(s)", spans));
                    }
                }
                if let Some(window) = options.hold_window {
                    submit(assembler.release_unbuilt(piece.position, window));
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
            let (traces, unjoined) = assembler.finish_unbuilt();
            stats.logs_unjoined = unjoined;
            submit(traces);
        },
        |r| each(r, &mut spent.borrow_mut()),
    );
    (rejected, stats)
}

/// Spans in one batch of the per-trace stage, about (a trace is never cut).
const BATCH_SPANS: usize = 512;

/// The whole replay: files in, report out. `report` may come prepared
/// (e.g. `timelines: Some(..)` keeps span timing for the HTML report).
/// Fixture problems found while loading (`fixture_rejected`) are reported
/// with the input's.
pub fn replay(
    mut report: Report,
    sources: &[Source],
    pipeline: &Pipeline,
    fixture_rejected: Vec<Rejected>,
    options: &ReadOptions,
    progress: impl FnMut(Progress),
) -> Report {
    let mut scorer = Collector::new(pipeline, &mut report);
    let per_trace = scorer.per_trace();
    let (rejected, stats) = stream_traces(
        sources,
        options,
        &pipeline.projection(),
        progress,
        |batch| per_trace.score(&batch),
        |scored, spent| {
            scorer.add_scored(scored, &mut report);
            spent.append(&mut scorer.spent());
        },
    );
    scorer.finish(&mut report);
    report.stats = Stats {
        traces: report.stats.traces,
        tool_calls: report.stats.tool_calls,
        ..stats
    };
    report.rejected = rejected;
    report.rejected.extend(fixture_rejected);
    report.hint = pipeline
        .extractor()
        .no_calls_hint(report.stats.spans, report.stats.tool_calls);
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

/// The rejection of what came for trace `trace` after it was scored: `n`
/// `what` (spans or log records), `spans` of them spans.
fn late(source: &str, trace: TraceId, n: usize, what: &str, spans: usize) -> Rejected {
    Rejected {
        source: source.to_string(),
        position: Position::Whole,
        reason: format!(
            "{n} {what} of trace {trace} came after the trace was scored (more than \
             --hold-window-mib of input after its root): raise --hold-window-mib, or `all` to \
             hold every trace"
        ),
        spans,
    }
}
