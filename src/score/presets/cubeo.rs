//! Cubeo AI "Tool Correctness - Generic Metric" (docs.cubeo.ai,
//! `evaluations/metrics/generic/tool-correctness`). An approximation: Cubeo's
//! platform asks an LLM to compare the called tools with `expected_tools`, so
//! there is no algorithm to copy, and its prompt is not published.
//!
//! Kept from the documentation: the inputs (the user's input, the agent's
//! response, the names of the tools called, `expected_tools` as a list of
//! exact names), `threshold` 0.8, pass if `score >= threshold`, and
//! `strict_mode` rounds the score to 1.0 or 0.0 at the threshold (unlike
//! deepeval's, which only zeroes low scores).
//!
//! With a judge configured (`crate::judge`), an LLM scores in 0..=1 how well
//! the names of the tools called agree with the expected names, given the
//! request. The agent's response is not shown: traces do not record it in a
//! form we extract. Without a judge, our deterministic score, which
//! penalizes both missing and unexpected tools: the F1 of the name
//! multisets, `2 * matched / (expected + called)`, where `matched` pairs
//! equal names one to one; 1.0 when both lists are empty. Its reason says it
//! is the approximation.

use std::sync::Arc;

use super::common::{names_list, threshold};
use crate::expect::Call;
use crate::judge::{AnswerKind, Judge};
use crate::score::judged::{self, Shown};
use crate::score::{Metric, MetricInput, MetricOptions, Needs, Outcome, ScoreError};

pub const LIBRARY: &str = "cubeo";
pub const VERSION: &str = "docs (approx.)";

/// The one mode: (name, summary for `toolscore metrics`).
const MODES: &[(&str, &str)] = &[(
    "cubeo",
    "approximation (Cubeo's prompt is not published). With --judge-url: an LLM scores 0..1 \
         how the tool names called agree with expected_tools (exact names), given the request; \
         the agent's response is not shown. Without: F1 of name multisets. Threshold 0.8; \
         strict rounds to 1/0 at the threshold",
)];

/// (name, summary) of every mode.
pub(super) fn modes() -> impl Iterator<Item = (&'static str, &'static str)> {
    MODES.iter().copied()
}

pub(super) fn build(
    name: &str,
    opts: &MetricOptions,
) -> Option<Result<Box<dyn Metric>, ScoreError>> {
    if MODES.iter().all(|m| m.0 != name) {
        return None;
    }
    let strict = opts.strict.unwrap_or(false);
    Some(
        threshold(name, opts, 0.8)
            .map(|threshold| Box::new(Cubeo { threshold, strict }) as Box<dyn Metric>),
    )
}

struct Cubeo {
    threshold: f64,
    strict: bool,
}

impl Metric for Cubeo {
    fn name(&self) -> &str {
        "cubeo"
    }

    fn threshold(&self) -> Option<f64> {
        Some(self.threshold)
    }

    fn score(&self, called: &[Call], expected: &[Call]) -> Outcome {
        let mut used = vec![false; called.len()];
        let mut matched = 0usize;
        for e in expected {
            if let Some(i) = (0..called.len()).find(|&i| !used[i] && called[i].name == e.name) {
                used[i] = true;
                matched += 1;
            }
        }
        let total = expected.len() + called.len();
        let raw = if total == 0 {
            1.0
        } else {
            2.0 * matched as f64 / total as f64
        };
        let score = self.rounded(raw);
        let reason = format!(
            "approximation (no judge configured): {matched} of {} expected tools called, {} unexpected call(s) (F1 {raw}); expected {}, called {}",
            expected.len(),
            called.len() - matched,
            names_list(expected),
            names_list(called)
        );
        Outcome::scored(score, Some(score >= self.threshold), reason)
    }
}

impl Cubeo {
    /// `strict_mode`: 1 or 0 at the threshold.
    fn rounded(&self, raw: f64) -> f64 {
        match (self.strict, raw >= self.threshold) {
            (false, _) => raw,
            (true, true) => 1.0,
            (true, false) => 0.0,
        }
    }
}

const JUDGE_TASK: &str = "Score from 0 to 1 how well the names of the tools the agent called \
     (`tool_calls`) agree with the expected tool names (`expected_calls`), given the request: 1 \
     when exactly the expected tools were called, none missing and none extra; lower for each \
     expected tool not called and for each call of a tool not expected. Names must match \
     exactly; arguments are not compared.";

/// Builds `cubeo` scored by `judge`: threshold 0.8 unless overridden,
/// `strict` rounding to 1/0 at the threshold.
pub(super) fn build_judged(
    opts: &MetricOptions,
    judge: Arc<Judge>,
) -> Result<Box<dyn Metric>, ScoreError> {
    let threshold = threshold("cubeo", opts, 0.8)?;
    Ok(Box::new(CubeoJudged {
        approx: Cubeo {
            threshold,
            strict: opts.strict.unwrap_or(false),
        },
        judge,
    }))
}

struct CubeoJudged {
    approx: Cubeo,
    judge: Arc<Judge>,
}

impl Metric for CubeoJudged {
    fn name(&self) -> &str {
        "cubeo"
    }

    fn threshold(&self) -> Option<f64> {
        Some(self.approx.threshold)
    }

    fn needs(&self) -> Needs {
        judged::NEEDS
    }

    /// Call lists alone (`toolscore score`): the approximation.
    fn score(&self, called: &[Call], expected: &[Call]) -> Outcome {
        self.approx.score(called, expected)
    }

    fn evaluate(&self, input: &MetricInput<'_>) -> Outcome {
        let mut data = judged::data(input, Shown::Names);
        data.expected_calls = Some(judged::expected(input.expected, true));
        let (prompt, cut) =
            judged::build(&self.judge, "cubeo", JUDGE_TASK, AnswerKind::Score, data);
        match self.judge.ask(&prompt) {
            Ok(a) => {
                let raw = a.score.unwrap_or(0.0);
                let score = self.approx.rounded(raw);
                let mut o = Outcome::scored(
                    score,
                    Some(score >= self.approx.threshold),
                    format!(
                        "approximation, judge score {raw}: {}",
                        judged::reason(&a, cut.as_deref())
                    ),
                );
                o.details = Some(a.details(self.judge.model()));
                o
            }
            Err(e) => judged::judge_failed(&e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(names: &[&str]) -> Vec<Call> {
        names.iter().map(|n| Call::new(*n, None)).collect()
    }

    #[test]
    fn penalizes_missing_and_extra_and_strict_rounds() {
        let m = build("cubeo", &MetricOptions::default())
            .and_then(Result::ok)
            .expect("preset");
        assert_eq!(
            m.score(&calls(&["a", "b"]), &calls(&["a", "b"])).score,
            Some(1.0)
        );
        let o = m.score(&calls(&["a", "b", "c"]), &calls(&["a", "b"]));
        assert_eq!((o.score, o.pass), (Some(0.8), Some(true)));
        assert_eq!(
            m.score(&calls(&["a"]), &calls(&["a", "b"])).score,
            Some(2.0 / 3.0)
        );
        let strict = MetricOptions {
            threshold: None,
            strict: Some(true),
        };
        let m = build("cubeo", &strict)
            .and_then(Result::ok)
            .expect("preset");
        assert_eq!(
            m.score(&calls(&["a", "b", "c"]), &calls(&["a", "b"])).score,
            Some(1.0)
        );
        assert_eq!(
            m.score(&calls(&["a"]), &calls(&["a", "b"])).score,
            Some(0.0)
        );
    }
}
