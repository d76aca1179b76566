//! `mlflow.llm_efficiency`: MLflow's `ToolCallEfficiency`, LLM-only: were
//! any calls redundant or unnecessary for the request? "yes" (efficient)
//! scores 1, "no" 0; no threshold.

use std::sync::Arc;

use super::{context, system, yes_no, NEEDS};
use crate::expect::Call;
use crate::judge::{AnswerKind, Judge};
use crate::score::{Metric, MetricInput, Needs, Outcome};

pub const NAME: &str = "mlflow.llm_efficiency";

const TASK: &str = "Decide whether the agent used its tools efficiently. Look for redundant \
     calls (the same tool with the same or equivalent arguments when nothing changed), calls \
     whose results were never needed for the request, and several calls where one available \
     tool would have done. Answer \"yes\" if the calls were efficient, \"no\" if any call was \
     redundant or unnecessary (name it in the rationale).";

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
            system(TASK, AnswerKind::YesNo),
            context(input),
        )
    }
}
