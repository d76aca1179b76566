//! Metrics that ask an LLM judge (`crate::judge`): MLflow's semantic modes
//! of `ToolCallCorrectness` and its `ToolCallEfficiency`, and Cubeo's Tool
//! Correctness (in `presets/cubeo.rs`). Each declares `Needs { trace_facts,
//! judge }`; the judge comes with its construction (`registry::lookup`).
//!
//! The prompts are ours. What they show is what MLflow's judges are given:
//! the user request, the tools available, the calls made (with arguments and
//! results) and, where there are any, the expected calls.

pub mod llm_efficiency;
pub mod llm_fuzzy;
pub mod llm_no_expectations;

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::Value;

use crate::expect::Call;
use crate::judge::{AnswerKind, Judge, Prompt};
use crate::score::{MetricInput, Needs, Outcome};

/// What every judged metric needs.
pub const NEEDS: Needs = Needs {
    ordered_args: false,
    trace_facts: true,
    judge: true,
};

/// A call's result longer than this is cut in the prompt.
const MAX_RESULT_CHARS: usize = 600;

/// The shared system message: the judge's role and the answer's shape.
pub fn system(task: &str, kind: AnswerKind) -> String {
    let answer = match kind {
        AnswerKind::YesNo => {
            r#"Answer with one JSON object and nothing else: {"rationale": "<one or two sentences>", "verdict": "yes" or "no"}."#
        }
        AnswerKind::Score => {
            r#"Answer with one JSON object and nothing else: {"rationale": "<one or two sentences>", "score": <a number from 0 to 1>}."#
        }
    };
    format!(
        "You review the tool calls an AI agent made while handling a user's request. {task}\n\
         Judge only from what is shown; do not assume calls or results that are not listed.\n\
         {answer}"
    )
}

/// The request, the tools available and the calls made, as the judge reads
/// them.
pub fn context(input: &MetricInput<'_>) -> String {
    let mut s = String::new();
    s.push_str("## User request\n");
    match input
        .facts
        .map(|f| f.requests.as_slice())
        .unwrap_or_default()
    {
        [] => s.push_str("(not recorded in the trace)\n"),
        [one] => {
            s.push_str(one);
            s.push('\n');
        }
        turns => {
            for (i, t) in turns.iter().enumerate() {
                let _ = writeln!(s, "Turn {}: {t}", i + 1);
            }
        }
    }
    s.push_str("\n## Tools available to the agent\n");
    match input.facts.map(|f| f.tools.as_slice()).unwrap_or_default() {
        [] => s.push_str("(not recorded in the trace)\n"),
        tools => {
            for t in tools {
                let _ = write!(s, "- {}", t.name);
                if let Some(d) = &t.description {
                    let _ = write!(s, ": {}", d.trim());
                }
                if let Some(p) = &t.parameters {
                    // Schemas can be long; the judge needs their gist.
                    let _ = write!(s, " Parameters: {}", cut(&p.to_string()));
                }
                s.push('\n');
            }
        }
    }
    s.push_str("\n## Tool calls the agent made, in order\n");
    if input.called.is_empty() {
        s.push_str("(none)\n");
    }
    for (i, c) in input.called.iter().enumerate() {
        let _ = write!(s, "{}. {}", i + 1, signature(c));
        if let Some(x) = input.calls.get(i) {
            if let Some(r) = &x.result {
                let _ = write!(s, " -> {}", cut(&r.to_value().to_string()));
            }
            if let Some(e) = &x.error_message {
                let _ = write!(s, " [failed: {}]", cut(e));
            }
        }
        s.push('\n');
    }
    s
}

/// The expected calls (names, and arguments where given).
pub fn expected(calls: &[Call], ordered: bool) -> String {
    let mut s = String::from(if ordered {
        "\n## Expected tool calls, in this order\n"
    } else {
        "\n## Expected tool calls (order does not matter)\n"
    });
    for (i, c) in calls.iter().enumerate() {
        let _ = writeln!(s, "{}. {}", i + 1, signature(c));
    }
    s
}

/// `name({"k": v})`, or `name (arguments not specified)`.
pub fn signature(c: &Call) -> String {
    match &c.args {
        Some(Value::Object(m)) if m.is_empty() => format!("{}({{}})", c.name),
        Some(a) => format!("{}({a})", c.name),
        None => format!("{} (arguments not specified)", c.name),
    }
}

fn cut(s: &str) -> String {
    match s.char_indices().nth(MAX_RESULT_CHARS) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// Asks a yes/no question: yes scores 1 and passes, no scores 0; the
/// rationale is the reason; a judge failure is the outcome's error.
pub fn yes_no(judge: &Arc<Judge>, metric: &str, system: String, user: String) -> Outcome {
    let prompt = Prompt {
        metric: metric.to_string(),
        system,
        user,
        kind: AnswerKind::YesNo,
    };
    match judge.ask(&prompt) {
        Ok(a) => {
            let yes = a.verdict.unwrap_or(false);
            let mut o = Outcome::scored(
                if yes { 1.0 } else { 0.0 },
                Some(yes),
                format!("{}: {}", if yes { "yes" } else { "no" }, a.rationale),
            );
            o.details = Some(a.details(judge.model()));
            o
        }
        Err(e) => Outcome::error(e.to_string()),
    }
}
