//! `mlflow.llm_no_expectations`: MLflow's `ToolCallCorrectness` without
//! expectations (its ground-truth-free mode), where the judge decides
//! whether the tools chosen suit the request and their arguments are
//! reasonable for it and for the tools' parameters. Yes scores 1, no 0; no
//! threshold. The expected calls, if any, are not shown. `mlflow.llm_fuzzy`
//! asks this same prompt when a case has no expectations.

use std::sync::Arc;

use super::{data, yes_no, Shown, NEEDS};
use crate::expect::Call;
use crate::judge::Judge;
use crate::score::{Metric, MetricInput, Needs, Outcome};

pub const NAME: &str = "mlflow.llm_no_expectations";

/// The one prompt of the ground-truth-free mode.
pub const TASK: &str = "No expected calls are given. Answer \"yes\" when the agent chose tools \
     from `available_tools` that suit the request and passed each of them arguments that are \
     reasonable for the request and for the tool's parameters. Answer \"no\" when a call the \
     request needs is missing, a call does not fit the request, or its arguments are wrong, \
     and say which.";

pub struct LlmNoExpectations {
    pub judge: Arc<Judge>,
}

/// The ground-truth-free judgement of `input`, reported as `metric`.
pub fn judge_without_expectations(
    judge: &Arc<Judge>,
    metric: &str,
    input: &MetricInput<'_>,
) -> Outcome {
    yes_no(judge, metric, TASK, data(input, Shown::Arguments))
}

impl Metric for LlmNoExpectations {
    fn name(&self) -> &str {
        NAME
    }

    fn threshold(&self) -> Option<f64> {
        None
    }

    fn needs(&self) -> Needs {
        NEEDS
    }

    fn score(&self, _called: &[Call], _expected: &[Call]) -> Outcome {
        Outcome::error("needs the trace (request and tools); not scorable from call lists alone")
    }

    fn evaluate(&self, input: &MetricInput<'_>) -> Outcome {
        judge_without_expectations(&self.judge, NAME, input)
    }
}
