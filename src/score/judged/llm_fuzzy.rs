//! `mlflow.llm_fuzzy` and `mlflow.llm_fuzzy_ordered`: MLflow's
//! `ToolCallCorrectness(should_exact_match=False)` with expectations (its
//! default), where a judge compares the calls made with the expected ones
//! semantically (equivalent tools and arguments count), in order when
//! `should_consider_ordering`. Yes scores 1, no 0; no threshold.
//!
//! As in MLflow, empty expectations are no expectations: the calls are
//! judged against the request and the tools instead
//! (`mlflow.llm_no_expectations`).

use std::sync::Arc;

use super::{context, expected, llm_no_expectations, system, yes_no, NEEDS};
use crate::expect::Call;
use crate::judge::{AnswerKind, Judge};
use crate::score::{Metric, MetricInput, Needs, Outcome};

pub const NAME: &str = "mlflow.llm_fuzzy";
pub const NAME_ORDERED: &str = "mlflow.llm_fuzzy_ordered";

const TASK_UNORDERED: &str = "Compare the calls the agent made with the expected calls. They \
     match when every expected call has a made call of the same tool (or one that clearly does \
     the same job) with arguments that mean the same (different spelling, formatting, units or \
     extra optional arguments are fine), and no made call is missing from the expectations. \
     Order does not matter. Where an expected call does not specify arguments, compare the tool \
     only. Answer \"yes\" if they match, \"no\" otherwise, naming what differs.";

const TASK_ORDERED: &str = "Compare the calls the agent made with the expected calls. They \
     match when the made calls correspond one to one, in the same order, to the expected ones: \
     the same tool (or one that clearly does the same job) with arguments that mean the same \
     (different spelling, formatting, units or extra optional arguments are fine). Where an \
     expected call does not specify arguments, compare the tool only. Answer \"yes\" if they \
     match, \"no\" otherwise, naming the first position that differs.";

const NO_EXPECTATIONS_TASK: &str = "No expected calls were given. Decide whether the agent's \
     tool calls were appropriate and correct for the request with the tools available. Answer \
     \"yes\" if they were, \"no\" otherwise.";

pub struct LlmFuzzy {
    pub judge: Arc<Judge>,
    pub ordered: bool,
}

impl LlmFuzzy {
    /// The prompt's user message when there are expectations.
    pub fn user(&self, input: &MetricInput<'_>) -> String {
        let mut s = context(input);
        s.push_str(&expected(input.expected, self.ordered));
        s
    }
}

impl Metric for LlmFuzzy {
    fn name(&self) -> &str {
        if self.ordered {
            NAME_ORDERED
        } else {
            NAME
        }
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
        if input.expected.is_empty() {
            return yes_no(
                &self.judge,
                self.name(),
                system(NO_EXPECTATIONS_TASK, AnswerKind::YesNo),
                llm_no_expectations::user(input),
            );
        }
        let task = if self.ordered {
            TASK_ORDERED
        } else {
            TASK_UNORDERED
        };
        yes_no(
            &self.judge,
            self.name(),
            system(task, AnswerKind::YesNo),
            self.user(input),
        )
    }
}
