//! `mlflow.llm_no_expectations`: MLflow's `ToolCallCorrectness` without
//! expectations, where its judge decides whether the calls were reasonable
//! and correct for the request, given the tools available. Yes scores 1,
//! no 0; no threshold. The expected calls, if any, are not shown.

use std::sync::Arc;

use super::{context, system, yes_no, NEEDS};
use crate::expect::Call;
use crate::judge::{AnswerKind, Judge};
use crate::score::{Metric, MetricInput, Needs, Outcome};

pub const NAME: &str = "mlflow.llm_no_expectations";

const TASK: &str = "Decide whether the agent's tool calls were appropriate and correct for the \
     request: the right tools among those available, with arguments that fit the request, and \
     no call that the request did not call for. Answer \"yes\" if they were, \"no\" otherwise.";

pub struct LlmNoExpectations {
    pub judge: Arc<Judge>,
}

/// The prompt's user message.
pub fn user(input: &MetricInput<'_>) -> String {
    context(input)
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
        yes_no(
            &self.judge,
            NAME,
            system(TASK, AnswerKind::YesNo),
            user(input),
        )
    }
}
