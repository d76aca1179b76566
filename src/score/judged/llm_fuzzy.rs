//! `mlflow.llm_fuzzy` and `mlflow.llm_fuzzy_ordered`: MLflow's
//! `ToolCallCorrectness(should_exact_match=False)` with expectations (its
//! default), where a judge compares the calls made with the expected ones
//! semantically (equivalent tools and arguments count), in order when
//! `should_consider_ordering`. Yes scores 1, no 0; no threshold.
//!
//! As in MLflow, when any expected call lacks arguments the whole
//! comparison is by names, and the judge is asked instead whether the
//! arguments are reasonable for the request and the tools' parameters; and
//! empty expectations are no expectations: the one ground-truth-free prompt
//! (`mlflow.llm_no_expectations`).

use std::sync::Arc;

use super::{data, expected, llm_no_expectations, yes_no, Shown, NEEDS};
use crate::expect::Call;
use crate::judge::Judge;
use crate::score::{Metric, MetricInput, Needs, Outcome};

pub const NAME: &str = "mlflow.llm_fuzzy";
pub const NAME_ORDERED: &str = "mlflow.llm_fuzzy_ordered";

const TASK_UNORDERED: &str = "Compare `tool_calls` with `expected_calls`. Answer \"yes\" when \
     every expected call has a made call of the same tool, or of a tool that clearly does the \
     same job, with arguments of the same meaning (spelling, formatting, units and extra \
     optional arguments may differ), and no made call is left without an expected one. Order \
     does not matter. Otherwise answer \"no\" and say what differs.";

const TASK_ORDERED: &str = "Compare `tool_calls` with `expected_calls`. Answer \"yes\" when the \
     made calls correspond one to one, in the same order, to the expected ones: the same tool, \
     or a tool that clearly does the same job, with arguments of the same meaning (spelling, \
     formatting, units and extra optional arguments may differ). Otherwise answer \"no\" and \
     name the first position that differs.";

const TASK_NAMES_UNORDERED: &str = "Some expected calls do not give arguments, so compare tools \
     only: answer \"yes\" when the agent called the tools in `expected_calls` (or tools that \
     clearly do the same jobs), none missing and none extra, in any order, and each call's \
     arguments are reasonable for the request and for the tool's parameters in \
     `available_tools`. Otherwise answer \"no\" and say what is wrong.";

const TASK_NAMES_ORDERED: &str = "Some expected calls do not give arguments, so compare tools \
     only: answer \"yes\" when the agent called the tools in `expected_calls` (or tools that \
     clearly do the same jobs) one to one and in the same order, and each call's arguments are \
     reasonable for the request and for the tool's parameters in `available_tools`. Otherwise \
     answer \"no\" and name the first position that differs.";

pub struct LlmFuzzy {
    pub judge: Arc<Judge>,
    pub ordered: bool,
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
            return llm_no_expectations::judge_without_expectations(
                &self.judge,
                self.name(),
                input,
            );
        }
        let names_only = input.expected.iter().any(|c| c.args.is_none());
        let task = match (names_only, self.ordered) {
            (false, false) => TASK_UNORDERED,
            (false, true) => TASK_ORDERED,
            (true, false) => TASK_NAMES_UNORDERED,
            (true, true) => TASK_NAMES_ORDERED,
        };
        let mut d = data(input, Shown::Arguments);
        d.expected_calls = Some(expected(input.expected, names_only));
        yes_no(&self.judge, self.name(), task, d)
    }
}
