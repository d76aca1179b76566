//! Metrics that ask an LLM judge (`crate::judge`): MLflow's semantic modes
//! of `ToolCallCorrectness` and its `ToolCallEfficiency`, and Cubeo's Tool
//! Correctness (in `presets/cubeo.rs`). Each declares `Needs { trace_facts,
//! judge }`; the judge comes with its construction (`registry::lookup`).
//!
//! The prompts are ours, in our words; what they follow is MLflow's rules
//! (docs/scoring.md, "Judged metrics side by side"): one user message, the
//! choice of tools and arguments judged (not the tools' outputs), names
//! only when an expectation lacks arguments, retries after temporary
//! failures not counted as waste, the request as the root span's whole
//! input. Everything from the trace sits in one untrusted data block
//! (`prompt`).

pub mod llm_efficiency;
pub mod llm_fuzzy;
pub mod llm_no_expectations;
pub mod prompt;

use std::sync::Arc;

use serde_json::Value;

use crate::expect::Call;
use crate::extract::CallStatus;
use crate::judge::{Answer, AnswerKind, Judge, JudgeError, Prompt};
use crate::score::{MetricInput, Needs, Outcome, Unjudged};
use prompt::{CallView, Data, ExpectedView, ToolView};

/// What every judged metric needs.
pub const NEEDS: Needs = Needs {
    ordered_args: false,
    trace_facts: true,
    judge: true,
};

/// What the data block shows of the calls made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// Names and arguments.
    Arguments,
    /// Names, arguments, and the errors of failed calls (efficiency: a
    /// retry after a failure is no waste).
    ArgumentsAndFailures,
    /// Names only (Cubeo compares names).
    Names,
}

/// The data block of `input`: the request, the tools offered, the calls.
pub fn data(input: &MetricInput<'_>, shown: Shown) -> Data {
    let facts = input.facts;
    let request = match facts.map(|f| f.inputs.as_slice()).unwrap_or_default() {
        [] => facts
            .and_then(|f| f.requests.first())
            .map_or(Value::Null, |r| Value::String(r.clone())),
        [one] => one.clone(),
        several => Value::Array(several.to_vec()),
    };
    let tools = facts.map(|f| f.tools.as_slice()).unwrap_or_default();
    let available_tools = (shown != Shown::Names).then(|| {
        (!tools.is_empty()).then(|| {
            tools
                .iter()
                .map(|t| ToolView {
                    name: t.name.clone(),
                    description: t.description.as_ref().map(|d| d.trim().to_string()),
                    parameters: t.parameters.clone(),
                })
                .collect()
        })
    });
    let tool_calls = input
        .called
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let failed = (shown == Shown::ArgumentsAndFailures)
                .then(|| input.calls.get(i))
                .flatten()
                .filter(|x| x.status == CallStatus::Error || x.error_message.is_some())
                .map(|x| x.error_message.clone().unwrap_or_else(|| "error".into()));
            CallView {
                name: c.name.clone(),
                arguments: (shown != Shown::Names).then(|| c.args.clone().unwrap_or(Value::Null)),
                failed,
            }
        })
        .collect();
    Data {
        request,
        available_tools,
        tool_calls,
        expected_calls: None,
    }
}

/// The expected calls as shown: names, and arguments unless `names_only`.
pub fn expected(calls: &[Call], names_only: bool) -> Vec<ExpectedView> {
    calls
        .iter()
        .map(|c| ExpectedView {
            name: c.name.clone(),
            arguments: if names_only { None } else { c.args.clone() },
        })
        .collect()
}

/// The prompt of `task` over `data`, cut to the judge's cap; and what was
/// cut, if anything.
pub fn build(
    judge: &Judge,
    metric: &str,
    task: &str,
    kind: AnswerKind,
    mut data: Data,
) -> (Prompt, Option<String>) {
    let max = judge.max_prompt_bytes();
    let cut = prompt::fit(&mut data, |d| prompt::render(task, kind, d).len() <= max);
    let text = prompt::render(task, kind, &data);
    (
        Prompt {
            metric: metric.to_string(),
            text,
            kind,
        },
        cut.map(|c| format!("prompt cut to fit {} KiB: {c}", max / 1024)),
    )
}

/// A judge's failure as the metric's outcome: no verdict, not the agent's
/// doing.
pub fn judge_failed(e: &JudgeError) -> Outcome {
    match e {
        JudgeError::DryRun => Outcome::unjudged(
            Unjudged::NotJudged,
            "not judged (--judge-dry-run: the prompt was printed, not sent)",
        ),
        e => Outcome::unjudged(Unjudged::JudgeError, e.to_string()),
    }
}

/// The rationale, and what was cut from the prompt.
pub fn reason(a: &Answer, cut: Option<&str>) -> String {
    match cut {
        Some(c) => format!("{} [{c}]", a.rationale),
        None => a.rationale.clone(),
    }
}

/// Asks a yes/no question: yes scores 1 and passes, no scores 0; the
/// rationale is the reason; a judge failure is no verdict.
pub fn yes_no(judge: &Arc<Judge>, metric: &str, task: &str, data: Data) -> Outcome {
    let (prompt, cut) = build(judge, metric, task, AnswerKind::YesNo, data);
    match judge.ask(&prompt) {
        Ok(a) => {
            let yes = a.verdict.unwrap_or(false);
            let mut o = Outcome::scored(
                if yes { 1.0 } else { 0.0 },
                Some(yes),
                format!(
                    "{}: {}",
                    if yes { "yes" } else { "no" },
                    reason(&a, cut.as_deref())
                ),
            );
            o.details = Some(a.details(judge.model()));
            o
        }
        Err(e) => judge_failed(&e),
    }
}
