//! `mlflow.llm_efficiency`: MLflow's `ToolCallEfficiency`, LLM-only: were
//! any calls redundant or unnecessary for the request? A call retried after
//! a temporary failure is not (the judge is shown which calls failed).
//! "yes" (efficient) scores 1, "no" 0; no threshold.

use std::sync::Arc;

use super::{data, yes_no, Shown, NEEDS};
use crate::expect::Call;
use crate::judge::Judge;
use crate::score::{Metric, MetricInput, Needs, Outcome};

pub const NAME: &str = "mlflow.llm_efficiency";

const TASK: &str = "Decide whether the agent used its tools without waste. A call is wasted \
     when it repeats an earlier call with the same or equivalent arguments while nothing had \
     changed, or when the request did not need it. Calling a tool again after its earlier call \
     failed with a temporary error (a timeout, a rate limit, a service unavailable) is a \
     reasonable retry, not waste. Answer \"yes\" if no call was wasted, \"no\" otherwise, naming \
     the wasted call.";

pub struct LlmEfficiency {
    pub judge: Arc<Judge>,
}

impl Metric for LlmEfficiency {
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
            TASK,
            data(input, Shown::ArgumentsAndFailures),
        )
    }
}
