//! `budget`: the limits a fixture case sets (`max_calls`,
//! `max_calls_per_tool`, `forbidden_tools`, `max_duration_ms`,
//! `max_tokens`), each violated one named.
//!
//! Score: the share of the case's budgets kept; it passes only when every
//! one is kept. Duration and tokens come from the trace's facts (session
//! cases: all their traces together); a `max_tokens` budget on a trace that
//! reports no token counts is violated, since it cannot be shown to be kept.

use serde_json::json;

use super::{Metric, MetricInput, Needs, Outcome};
use crate::expect::Call;

pub const NAME: &str = "budget";

pub struct Budget;

impl Metric for Budget {
    fn name(&self) -> &str {
        NAME
    }

    /// Pass means every budget was kept; there is no threshold.
    fn threshold(&self) -> Option<f64> {
        None
    }

    /// Without a case there are no budgets.
    fn score(&self, _called: &[Call], _expected: &[Call]) -> Outcome {
        Outcome::scored(1.0, Some(true), "no budgets set")
    }

    fn evaluate(&self, input: &MetricInput<'_>) -> Outcome {
        let b = input.case.budgets();
        let mut checked = 0usize;
        let mut violated: Vec<String> = Vec::new();
        let n = input.called.len() as u64;
        if let Some(max) = b.max_calls {
            checked += 1;
            if n > max {
                violated.push(format!("max_calls {max}: {n} calls"));
            }
        }
        for (tool, max) in &b.max_calls_per_tool {
            checked += 1;
            let k = input.called.iter().filter(|c| c.name == *tool).count() as u64;
            if k > *max {
                violated.push(format!("max_calls_per_tool {tool} {max}: {k} calls"));
            }
        }
        if !b.forbidden_tools.is_empty() {
            checked += 1;
            let used: Vec<&str> = b
                .forbidden_tools
                .iter()
                .filter(|t| input.called.iter().any(|c| c.name == **t))
                .map(String::as_str)
                .collect();
            if !used.is_empty() {
                violated.push(format!("forbidden_tools: called {}", used.join(", ")));
            }
        }
        if let Some(max) = b.max_duration_ms {
            checked += 1;
            match input.facts {
                Some(f) => {
                    let ms = f.duration_nanos() as f64 / 1e6;
                    if ms > max {
                        violated.push(format!("max_duration_ms {max}: took {ms:.1} ms"));
                    }
                }
                None => violated.push(format!("max_duration_ms {max}: no trace times")),
            }
        }
        if let Some(max) = b.max_tokens {
            checked += 1;
            match input.facts.and_then(|f| f.total_tokens()) {
                Some(t) if t > max => violated.push(format!("max_tokens {max}: used {t} tokens")),
                Some(_) => {}
                None => violated.push(format!(
                    "max_tokens {max}: the trace reports no token counts"
                )),
            }
        }
        if checked == 0 {
            return Outcome::scored(1.0, Some(true), "no budgets set");
        }
        let kept = checked - violated.len();
        let score = kept as f64 / checked as f64;
        let reason = if violated.is_empty() {
            format!("all {checked} budget(s) kept")
        } else {
            format!(
                "{} of {checked} budget(s) exceeded: {}",
                violated.len(),
                violated.join("; ")
            )
        };
        let mut out = Outcome::scored(score, Some(violated.is_empty()), reason);
        out.details = Some(json!({
            "budgets": checked,
            "violated": violated.len(),
            "duration_ms": input.facts.map(|f| f.duration_nanos() as f64 / 1e6),
            "tokens": input.facts.and_then(|f| f.total_tokens()),
        }));
        out
    }

    fn needs(&self) -> Needs {
        Needs {
            trace_facts: true,
            ..Needs::default()
        }
    }
}
