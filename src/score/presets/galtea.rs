//! Galtea (galtea 5.12.0 SDK; platform docs `concepts/metric/tool-correctness`,
//! changelog 2026-01-05), deterministic Tool Correctness. An approximation:
//! Galtea scores on its closed platform, the SDK has no scoring code.
//!
//! Documented: normalize tool identifiers, de-duplicate, then 1 if the set of
//! tools used equals the set expected (nothing missing, nothing extra; order,
//! duplicates and arguments ignored), else 0.
//!
//! Not confirmed, our choices: the normalization rules (we use
//! `normalize_tool_name`: trim, lowercase, `-` = `_`, strip `functions.`,
//! `tools.` and `mcp__<server>__`), that two empty lists score 1, and how the
//! platform takes tool names from spans.
//!
//! Pass: `score >= threshold`, default 1.0.

use super::common::{names_list, py_list, threshold};
use crate::expect::Call;
use crate::names::normalize_tool_name;
use crate::score::{Metric, MetricOptions, Outcome, ScoreError};

pub const LIBRARY: &str = "galtea";
pub const VERSION: &str = "5.12.0 (approx.)";

/// The one mode: (name, summary for `toolscore metrics`).
const MODES: &[(&str, &str)] = &[(
    "galtea",
    "approximation: 1 if the normalized, de-duplicated name sets are equal, else 0",
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
    Some(
        threshold(name, opts, 1.0)
            .map(|threshold| Box::new(Galtea { threshold }) as Box<dyn Metric>),
    )
}

struct Galtea {
    threshold: f64,
}

fn name_set(calls: &[Call]) -> Vec<String> {
    let mut names: Vec<String> = calls.iter().map(|c| normalize_tool_name(&c.name)).collect();
    names.sort_unstable();
    names.dedup();
    names
}

impl Metric for Galtea {
    fn name(&self) -> &str {
        "galtea"
    }

    fn threshold(&self) -> Option<f64> {
        Some(self.threshold)
    }

    fn score(&self, called: &[Call], expected: &[Call]) -> Outcome {
        let used = name_set(called);
        let want = name_set(expected);
        let missing: Vec<&str> = want
            .iter()
            .filter(|n| !used.contains(n))
            .map(String::as_str)
            .collect();
        let extra: Vec<&str> = used
            .iter()
            .filter(|n| !want.contains(n))
            .map(String::as_str)
            .collect();
        let score = if missing.is_empty() && extra.is_empty() {
            1.0
        } else {
            0.0
        };
        let reason = if score == 1.0 {
            format!(
                "Normalized tool sets are equal: {}",
                py_list(want.iter().map(String::as_str))
            )
        } else {
            format!(
                "Normalized tool sets differ: missing {}, unexpected {}; expected {}, called {}",
                py_list(missing),
                py_list(extra),
                names_list(expected),
                names_list(called)
            )
        };
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
    fn normalized_set_equality() {
        let m = build("galtea", &MetricOptions::default())
            .and_then(Result::ok)
            .expect("preset");
        let s = |c: &[&str], e: &[&str]| m.score(&calls(c), &calls(e)).score;
        assert_eq!(
            s(
                &["functions.Search", "mcp__srv__web-fetch", "search"],
                &["web_fetch", "search"]
            ),
            Some(1.0)
        );
        assert_eq!(s(&["search", "log"], &["search"]), Some(0.0));
        assert_eq!(s(&["search"], &["search", "fmt"]), Some(0.0));
        assert_eq!(s(&[], &[]), Some(1.0));
    }
}
