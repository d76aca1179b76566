//! eval-ai-library 0.8.2 (`eval_lib`), `ToolCorrectnessMetric`
//! (`eval_lib/agent_metrics/tools_correctness_metric/tool_correctness.py`).
//!
//! Tools are plain names; arguments are never compared. Kept on purpose:
//! * nothing expected scores 1.0 even when tools were called (default and
//!   ordering modes);
//! * the ordering mode is a plain (unweighted) LCS over names;
//! * the "Missing tools" reason is a set difference, so it can be empty below 1.
//!
//! `pass` is `score >= threshold` (0.5).

use super::common::{dedup_by, names_list, py_list, threshold};
use crate::expect::Call;
use crate::score::{Metric, MetricOptions, Outcome, ScoreError};

pub const LIBRARY: &str = "eval-ai-library";
pub const VERSION: &str = "0.8.2";

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Default,
    Exact,
    Ordering,
}

/// Every mode: (name, settings..., summary for `toolscore metrics`). This one
/// list is both the lookup table and the catalog.
const MODES: &[(&str, Mode, &str)] = &[
    (
        "eval_lib.default",
        Mode::Default,
        "names only: expected names matched one to one / expected count; nothing expected = 1",
    ),
    (
        "eval_lib.exact",
        Mode::Exact,
        "names only: 1 if the name lists are equal",
    ),
    (
        "eval_lib.ordering",
        Mode::Ordering,
        "names only: unweighted LCS / expected count; nothing expected = 1",
    ),
];

/// (name, summary) of every mode.
pub(super) fn modes() -> impl Iterator<Item = (&'static str, &'static str)> {
    MODES.iter().map(|m| (m.0, m.2))
}

pub(super) fn build(
    name: &str,
    opts: &MetricOptions,
) -> Option<Result<Box<dyn Metric>, ScoreError>> {
    let &(name, mode, _) = MODES.iter().find(|m| m.0 == name)?;
    Some(threshold(name, opts, 0.5).map(|threshold| {
        Box::new(EvalLib {
            name,
            mode,
            threshold,
        }) as Box<dyn Metric>
    }))
}

struct EvalLib {
    name: &'static str,
    mode: Mode,
    threshold: f64,
}

impl Metric for EvalLib {
    fn name(&self) -> &str {
        self.name
    }

    fn threshold(&self) -> Option<f64> {
        Some(self.threshold)
    }

    fn score(&self, called: &[Call], expected: &[Call]) -> Outcome {
        let c: Vec<&str> = called.iter().map(|t| t.name.as_str()).collect();
        let e: Vec<&str> = expected.iter().map(|t| t.name.as_str()).collect();
        let (score, reason) = match self.mode {
            Mode::Exact => {
                if c == e {
                    (
                        1.0,
                        format!(
                            "Exact match: all expected tools {} were called exactly.",
                            names_list(expected)
                        ),
                    )
                } else {
                    (
                        0.0,
                        format!(
                            "Mismatch: expected {}, called {}.",
                            names_list(expected),
                            names_list(called)
                        ),
                    )
                }
            }
            Mode::Ordering => {
                let score = if e.is_empty() {
                    1.0
                } else {
                    lcs_len(&e, &c) as f64 / e.len() as f64
                };
                let reason = if score == 1.0 {
                    "Correct tool usage and order.".to_string()
                } else {
                    format!(
                        "Incomplete or unordered: expected {}, got {}.",
                        names_list(expected),
                        names_list(called)
                    )
                };
                (score, reason)
            }
            Mode::Default => {
                let mut used = vec![false; c.len()];
                let mut matches = 0usize;
                for name in &e {
                    if let Some(i) = (0..c.len()).find(|&i| !used[i] && c[i] == *name) {
                        used[i] = true;
                        matches += 1;
                    }
                }
                let score = if e.is_empty() {
                    1.0
                } else {
                    matches as f64 / e.len() as f64
                };
                let missing: Vec<&str> = e.iter().copied().filter(|n| !c.contains(n)).collect();
                let missing = dedup_by(&missing, |a, b| a == b);
                let reason = if missing.is_empty() {
                    format!("All expected tools {} were called.", names_list(expected))
                } else {
                    format!(
                        "Missing tools {}. Expected {}, got {}.",
                        py_list(missing),
                        names_list(expected),
                        names_list(called)
                    )
                };
                (score, reason)
            }
        };
        Outcome::scored(score, Some(score >= self.threshold), reason)
    }
}

/// Length of the longest common subsequence of two name lists.
fn lcs_len(a: &[&str], b: &[&str]) -> usize {
    let mut prev = vec![0usize; b.len() + 1];
    let mut cur = vec![0usize; b.len() + 1];
    for x in a {
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = if x == y {
                prev[j] + 1
            } else {
                cur[j].max(prev[j + 1])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric(name: &str) -> Box<dyn Metric> {
        build(name, &MetricOptions::default())
            .and_then(Result::ok)
            .expect("preset")
    }
    fn calls(names: &[&str]) -> Vec<Call> {
        names.iter().map(|n| Call::new(*n, None)).collect()
    }

    #[test]
    fn nothing_expected_scores_one_except_exact() {
        let called = calls(&["search"]);
        assert_eq!(
            metric("eval_lib.default").score(&called, &[]).score,
            Some(1.0)
        );
        assert_eq!(
            metric("eval_lib.ordering").score(&called, &[]).score,
            Some(1.0)
        );
        assert_eq!(
            metric("eval_lib.exact").score(&called, &[]).score,
            Some(0.0)
        );
    }

    #[test]
    fn unweighted_lcs_and_multiset_default() {
        let o = metric("eval_lib.ordering")
            .score(&calls(&["a", "b", "a", "b"]), &calls(&["a", "a", "b", "b"]));
        assert_eq!(o.score, Some(0.75));
        let o = metric("eval_lib.default").score(&calls(&["a"]), &calls(&["a", "a"]));
        assert_eq!(o.score, Some(0.5));
        assert!(o.reason.starts_with("All expected tools"), "{}", o.reason);
    }
}
