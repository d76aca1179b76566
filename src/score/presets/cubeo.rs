//! Cubeo AI "Tool Correctness - Generic Metric" (docs.cubeo.ai,
//! `evaluations/metrics/generic/tool-correctness`). An approximation: Cubeo's
//! platform asks an LLM to compare the called tools with `expected_tools`, so
//! there is no algorithm to copy.
//!
//! Kept from the documentation: names only (`expected_tools` is a list of
//! strings), `threshold` 0.8, pass if `score >= threshold`, and `strict_mode`
//! rounds the score to 1.0 or 0.0 at the threshold (unlike deepeval's, which
//! only zeroes low scores).
//!
//! Our deterministic score, which penalizes both missing and unexpected tools:
//! the F1 of the name multisets, `2 * matched / (expected + called)`, where
//! `matched` pairs equal names one to one; 1.0 when both lists are empty.

use super::common::{names_list, threshold};
use crate::score::{Call, Metric, MetricOptions, Outcome, ScoreError};

pub const LIBRARY: &str = "cubeo";
pub const VERSION: &str = "docs (approx.)";

/// The one mode: (name, summary for `traceval metrics`).
const MODES: &[(&str, &str)] = &[(
    "cubeo",
    "approximation of an LLM judge: F1 of name multisets; threshold 0.8; strict rounds to \
         1/0 at the threshold",
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
        let score = match (self.strict, raw >= self.threshold) {
            (false, _) => raw,
            (true, true) => 1.0,
            (true, false) => 0.0,
        };
        let reason = format!(
            "{matched} of {} expected tools called, {} unexpected call(s) (F1 {raw}); expected {}, called {}",
            expected.len(),
            called.len() - matched,
            names_list(expected),
            names_list(called)
        );
        Outcome::scored(score, Some(score >= self.threshold), reason)
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
