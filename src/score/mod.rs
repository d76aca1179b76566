//! Scoring: `(tool calls, expected calls) -> Outcome`, per metric.
//!
//! Most metrics are pure functions of what [`MetricInput`] holds: the calls,
//! the expected calls, the case and the trace's facts. The judged metrics
//! (`judged/`) are not: they ask an LLM over HTTP and read and write the
//! judge's answer cache, and say so through [`Needs::judge`]. Our own metric
//! lives in `native.rs`; `presets/` reproduces the peers' libraries. Metrics
//! are looked up by name through `registry`.

pub mod agents;
pub mod budget;
pub mod efficiency;
pub mod handoffs;
pub mod judged;
pub mod native;
pub mod presets;
pub mod registry;

use serde::Serialize;
use serde_json::Value;

use crate::expect::{Call, Case};
use crate::extract::facts::TraceFacts;
use crate::extract::ToolCall;

/// What one metric says about one case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// `None` when the metric raised (see `error`).
    pub score: Option<f64>,
    /// The metric's own verdict; `None` where the library has none (ragas).
    pub pass: Option<bool>,
    pub reason: String,
    /// Set when the reproduced library raises an exception for this input.
    pub error: Option<String>,
    /// Extra components (native metric: recall, precision, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Set when no verdict was reached for a reason outside the agent (the
    /// judge failed, or was not called): such an outcome neither passes nor
    /// fails, and is left out of means and pass rates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unjudged: Option<Unjudged>,
}

/// Why a judged metric has no verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unjudged {
    /// The judge was asked and gave no verdict (HTTP error, timeout,
    /// unparseable or truncated answer): the run could not evaluate.
    JudgeError,
    /// `--judge-dry-run`: the prompt was printed, not sent.
    NotJudged,
}

impl Unjudged {
    /// As reports show it.
    pub fn label(self) -> &'static str {
        match self {
            Unjudged::JudgeError => "judge error",
            Unjudged::NotJudged => "not judged",
        }
    }
}

impl Outcome {
    pub fn scored(score: f64, pass: Option<bool>, reason: impl Into<String>) -> Self {
        Outcome {
            score: Some(score),
            pass,
            reason: reason.into(),
            error: None,
            details: None,
            unjudged: None,
        }
    }

    pub fn error(message: impl Into<String>) -> Self {
        let message = message.into();
        Outcome {
            score: None,
            pass: None,
            reason: message.clone(),
            error: Some(message),
            details: None,
            unjudged: None,
        }
    }

    /// No verdict, for `why` (not the agent's doing); `message` says what
    /// happened. A judge error is the outcome's `error`; a dry run's is
    /// none (nothing went wrong).
    pub fn unjudged(why: Unjudged, message: impl Into<String>) -> Self {
        let mut o = Outcome::error(message);
        o.unjudged = Some(why);
        if why == Unjudged::NotJudged {
            o.error = None;
        }
        o
    }
}

/// Per-run overrides of a metric's defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricOptions {
    pub threshold: Option<f64>,
    pub strict: Option<bool>,
}

/// What a metric needs from the stages before it, declared by the metric
/// (the evaluation core asks, so no stage guesses from metric names).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    /// Arguments with their key order as written ([`Call::ordered_args`]):
    /// ragas compares Python `str()` of dicts, which follows insertion order.
    pub ordered_args: bool,
    /// [`MetricInput::facts`]: what the trace says beyond its calls.
    pub trace_facts: bool,
    /// An LLM judge: the metric blocks on HTTP, so drivers run it off their
    /// hot paths (replay in parallel, serve on the judge queue), and calls
    /// carry their results.
    pub judge: bool,
}

impl std::ops::BitOr for Needs {
    type Output = Needs;
    fn bitor(self, o: Needs) -> Needs {
        Needs {
            ordered_args: self.ordered_args || o.ordered_args,
            trace_facts: self.trace_facts || o.trace_facts,
            judge: self.judge || o.judge,
        }
    }
}

/// Everything a metric may look at for one evaluation (of a trace, or of a
/// session's traces together).
#[derive(Debug, Clone, Copy)]
pub struct MetricInput<'a> {
    /// The calls as compared (names normalized when enabled), in time order.
    pub called: &'a [Call],
    /// The expected calls as compared.
    pub expected: &'a [Call],
    /// The same calls as extracted: status and errors, times, agent, depth,
    /// results (when decoded).
    pub calls: &'a [ToolCall],
    /// The fixture case being scored.
    pub case: &'a Case,
    /// What the trace(s) say beyond their calls; `Some` when a metric of
    /// the run declares [`Needs::trace_facts`].
    pub facts: Option<&'a TraceFacts>,
}

/// A scoring metric. Implementations other than the judged ones are pure:
/// the same input gives the same outcome. A judged metric's outcome is the
/// model's answer (cached per model and prompt), and costs a request.
pub trait Metric: Send + Sync {
    /// The registry name, e.g. `tool_correctness` or `deepeval.default`.
    fn name(&self) -> &str;
    /// The threshold `pass` is judged against, if the metric has one.
    fn threshold(&self) -> Option<f64>;
    /// The score from names and arguments alone (what every peer library
    /// compares).
    fn score(&self, called: &[Call], expected: &[Call]) -> Outcome;
    /// The score from everything in `input`. Metrics that read more than
    /// names and arguments (statuses, times, the trace's facts) override
    /// this; the rest score `called` against `expected`.
    fn evaluate(&self, input: &MetricInput<'_>) -> Outcome {
        self.score(input.called, input.expected)
    }
    /// What this metric needs from the stages before it.
    fn needs(&self) -> Needs {
        Needs::default()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ScoreError {
    #[error("unknown metric `{name}`{}", match suggestion {
        Some(s) => format!(": did you mean `{s}`?"),
        None => " (run `toolscore metrics` for the list)".to_string(),
    })]
    UnknownMetric {
        name: String,
        /// The closest known name, when one is close.
        suggestion: Option<String>,
    },
    #[error("invalid option for metric `{metric}`: {reason}")]
    BadOption { metric: String, reason: String },
    #[error("in fixture case `{case}`")]
    InCase {
        case: String,
        #[source]
        source: Box<ScoreError>,
    },
    #[error("metric `{0}` asks an LLM judge: set --judge-url and --judge-model (or [judge] in the config)")]
    NeedsJudge(String),
}
