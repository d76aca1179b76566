//! The per-trace pipeline every driver calls: a trace in, its tool calls
//! extracted and evaluated against the cases it joins. `replay`, `serve`,
//! `inspect` (and the Python module) build one [`Pipeline`] and call it per
//! trace; none of them configures extraction on its own.

use std::sync::Arc;

use crate::assemble::{session, Trace};
use crate::extract::carry::{Open, OpenAsk};
use crate::extract::{AgentRun, Analysis, Extractor};
use crate::ingest::projection::Projection;

use super::{Evaluator, TraceResult};

/// What a driver's outputs read of each trace beyond what the metrics need.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutputNeeds {
    /// An output shows each call's result (JSONL rows).
    pub call_results: bool,
    /// An output reads call arguments as values (tables, HTML, metrics of a
    /// sink). When neither an output nor a case does, arguments are kept as
    /// the JSON text serde_json would write of them, and never parsed.
    pub call_args: bool,
}

/// Extraction set up from what the metrics and outputs need, and the
/// evaluator: built once, then [`Pipeline::run`] per trace, from any thread.
#[derive(Debug)]
pub struct Pipeline {
    evaluator: Arc<Evaluator>,
    extractor: Extractor,
}

impl Pipeline {
    /// `extractor` as configured by the user (rules, retrievers, scope);
    /// what the metrics and `outputs` need is added here, and only here.
    pub fn new(evaluator: Arc<Evaluator>, extractor: Extractor, outputs: OutputNeeds) -> Pipeline {
        let needs = evaluator.needs();
        // Ragas compares Python `str()` of dicts: keys in the order written.
        let ordered = needs.ordered_args;
        // A judge reads each call's result.
        let results = needs.judge || outputs.call_results;
        // Arguments are parsed into values only for a reader.
        let args_read = evaluator.cases().len() > 0 || outputs.call_args;
        let extractor = extractor
            .with_ordered_args(ordered)
            .with_results(results)
            .with_args_text(!args_read);
        Pipeline {
            evaluator,
            extractor,
        }
    }

    /// Extracts and evaluates one trace.
    pub fn run(&self, trace: &Trace) -> TraceResult {
        self.run_with_runs(trace).0
    }

    /// [`Pipeline::run`], and the trace's agent runs (by start time) for
    /// outputs that draw them.
    pub fn run_with_runs(&self, trace: &Trace) -> (TraceResult, Vec<AgentRun>) {
        let (result, runs, _) = self.run_carried(trace, &[]);
        (result, runs)
    }

    /// [`Pipeline::run_with_runs`] with the calls earlier traces left open,
    /// and what this trace leaves open (`extract::carry`).
    pub fn run_carried(
        &self,
        trace: &Trace,
        carried: &[OpenAsk],
    ) -> (TraceResult, Vec<AgentRun>, Option<Box<Open>>) {
        let a = self.extractor.extract_analysis_carried(trace, carried);
        let result = self
            .evaluator
            .evaluate_trace_with_runs(trace, a.calls, &a.runs)
            .with_warnings(a.warnings);
        (result, a.runs, a.open)
    }

    /// What `inspect` shows of a trace: every call and agent run (whatever
    /// the scope), its session and, with cases, the cases it joins.
    pub fn inspect(&self, trace: &Trace) -> Inspected {
        self.inspect_carried(trace, &[])
    }

    /// [`Pipeline::inspect`] of each of `traces`, each stage over all of
    /// them before the next ([`Extractor::analyze_all`]).
    pub fn inspect_all(&self, traces: &[Trace]) -> Vec<Inspected> {
        let analyses = self.extractor.analyze_all(traces);
        traces
            .iter()
            .zip(analyses)
            .map(|(trace, analysis)| Inspected {
                analysis,
                session: session::session_of(trace, self.evaluator.session_keys()),
                joins: self
                    .evaluator
                    .has_cases()
                    .then(|| self.evaluator.joins(trace)),
            })
            .collect()
    }

    /// [`Pipeline::inspect`] with the calls earlier traces left open
    /// (`extract::carry`).
    pub fn inspect_carried(&self, trace: &Trace, carried: &[OpenAsk]) -> Inspected {
        let joins = self
            .evaluator
            .has_cases()
            .then(|| self.evaluator.joins(trace));
        Inspected {
            analysis: self.extractor.analyze_carried(trace, carried),
            session: session::session_of(trace, self.evaluator.session_keys()),
            joins,
        }
    }

    /// The attributes decoders keep for this pipeline: what the rules and
    /// the joins read (docs/architecture.md, projection).
    pub fn projection(&self) -> Projection {
        self.extractor.projection(self.evaluator.join_keys())
    }

    pub fn evaluator(&self) -> &Arc<Evaluator> {
        &self.evaluator
    }

    /// Extraction as set up for the run.
    pub fn extractor(&self) -> &Extractor {
        &self.extractor
    }
}

/// A trace as `inspect` shows it.
#[derive(Debug)]
pub struct Inspected {
    pub analysis: Analysis,
    /// The session the trace belongs to: (key, value) by the configured keys.
    pub session: Option<(String, String)>,
    /// The cases it joins and how, when cases were given.
    pub joins: Option<Vec<(String, &'static str)>>,
}
