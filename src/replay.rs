//! Replay: trace files -> a [`Report`]. Reads and assembles every input,
//! then hands each trace to the evaluation core (`evaluate`).

use std::path::PathBuf;

use crate::assemble::{Assembler, Trace};
use crate::evaluate::{in_parallel, Evaluator, Sessions, TraceResult};
use crate::extract::facts::token_usage;
use crate::extract::Extractor;
use crate::ingest::{self, files, Limits, Rejected};
use crate::report::{Report, Stats, ToolStatsBuilder, UnmatchedTrace};

/// Extracts and evaluates every trace; sessions are scored once all their
/// traces are in. Fills the report's evaluations, unmatched traces and
/// cases, and counters.
pub fn score_traces(
    traces: &[Trace],
    evaluator: &Evaluator,
    extractor: &Extractor,
    report: &mut Report,
) {
    report.metrics = evaluator.labels().to_vec();
    report.has_cases = evaluator.has_cases();
    report.stats.traces += traces.len();
    let mut hit = vec![false; evaluator.cases().len()];
    let mut sessions = Sessions::default();
    // A judged metric waits on HTTP: traces go in parallel, up to the
    // judge's concurrency, so a run does not take N x latency.
    let threads = evaluator.judge().map_or(1, |j| j.concurrency());
    type Scored = (TraceResult, (Option<u64>, Option<u64>));
    let results: Vec<Scored> = in_parallel(traces.iter().collect(), threads, |t: &Trace| {
        let (calls, runs) = extractor.extract_with_runs(t);
        let result = evaluator.evaluate_trace_with_runs(t, calls, &runs);
        let tokens = match &result.facts {
            Some(f) => (f.input_tokens, f.output_tokens),
            None => token_usage(t),
        };
        (result, tokens)
    });
    let mut tools = ToolStatsBuilder::default();
    for (result, tokens) in results {
        report.stats.tool_calls += result.calls.len();
        tools.add(&result.calls, tokens);
        sessions.add(&result);
        for m in &result.sessions {
            hit[m.case] = true;
        }
        for e in &result.evaluations {
            hit[e.case_index] = true;
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
    report.evaluations.extend(sessions.evaluate(evaluator));
    (report.tools, report.tokens) = tools.finish();
    report.unmatched_cases.extend(
        evaluator
            .cases()
            .enumerate()
            .filter(|&(i, _)| !hit[i] && !evaluator.is_default(i))
            .map(|(_, c)| c.id.clone()),
    );
    report.judge = evaluator.judge().map(|j| j.usage());
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
    let sizes: Vec<u64> = inputs.iter().map(files::Input::size).collect();
    let (mut bytes, total_bytes) = (0, sizes.iter().sum());
    let mut assembler = Assembler::new();
    for (n, input) in inputs.iter().enumerate() {
        let decoded = files::read_input(input, limits);
        bytes += sizes[n];
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
            bytes,
            total_bytes,
        });
    }
    let traces = assembler.finish();
    // The calls of a parent cycle are kept; say which links were dropped.
    for warning in traces.iter().filter_map(Trace::cycle_warning) {
        eprintln!("traceval: warning: {warning}");
    }
    // First copy wins; a span id reused with other content is named.
    for warning in traces.iter().filter_map(Trace::conflict_warning) {
        eprintln!("traceval: warning: {warning}");
    }
    (traces, rejected, stats)
}

/// The whole replay: files in, report out. Fixture problems found while
/// loading (`fixture_rejected`) are reported with the input's.
pub fn replay(
    paths: &[PathBuf],
    evaluator: &Evaluator,
    fixture_rejected: Vec<Rejected>,
    extractor: &Extractor,
    limits: &Limits,
    progress: impl FnMut(Progress),
) -> Report {
    let (traces, rejected, stats) = read_traces(paths, limits, progress);
    let mut report = Report {
        stats,
        rejected,
        ..Report::default()
    };
    report.rejected.extend(fixture_rejected);
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
    score_traces(&traces, evaluator, extractor, &mut report);
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
