//! Google ADK (google/adk-python, `src/google/adk/evaluation/trajectory_evaluator.py`,
//! as of ADK 1.x/2.x, the engine behind agentevals-cli 0.11), metric
//! `tool_trajectory_avg_score` with `match_type` EXACT, IN_ORDER or ANY_ORDER.
//!
//! One case is one invocation, so the score is 1.0 or 0.0 (ADK averages it
//! over the invocations of an eval case). A call equals another when the names
//! are equal and the `args` dicts are Python-equal; absent arguments are
//! `None` there, so they do not equal `{}`. `ignore_args` is not exposed.
//!
//! Pass: `score >= threshold`, default 1.0 (ADK's default criterion).

use std::borrow::Cow;

use super::common::{names_list, py_args, threshold};
use crate::expect::Call;
use crate::score::{Metric, MetricOptions, Outcome, ScoreError};
use crate::value::{py_eq, PyValue};

pub const LIBRARY: &str = "google-adk";
pub const VERSION: &str = "2.13.0";

#[derive(Clone, Copy, PartialEq)]
enum MatchType {
    Exact,
    InOrder,
    AnyOrder,
}

/// Every mode: (name, settings..., summary for `toolscore metrics`). This one
/// list is both the lookup table and the catalog.
const MODES: &[(&str, MatchType, &str)] = &[
    (
        "adk.exact",
        MatchType::Exact,
        "tool_trajectory_avg_score EXACT: 1 if same calls (name, args ==) in order; pass >= 1.0",
    ),
    (
        "adk.in_order",
        MatchType::InOrder,
        "IN_ORDER: expected calls appear in order, extras allowed",
    ),
    (
        "adk.any_order",
        MatchType::AnyOrder,
        "ANY_ORDER: every expected call matched by a distinct call, extras allowed",
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
    let &(name, match_type, _) = MODES.iter().find(|m| m.0 == name)?;
    Some(threshold(name, opts, 1.0).map(|threshold| {
        Box::new(Adk {
            name,
            match_type,
            threshold,
        }) as Box<dyn Metric>
    }))
}

struct Adk {
    name: &'static str,
    match_type: MatchType,
    threshold: f64,
}

/// A `genai.types.FunctionCall`: `name`, `args: Optional[dict]`.
struct FnCall<'a> {
    name: &'a str,
    args: Option<Cow<'a, PyValue>>,
}

impl FnCall<'_> {
    fn equals(&self, other: &FnCall) -> bool {
        self.name == other.name
            && match (&self.args, &other.args) {
                (None, None) => true,
                (Some(a), Some(b)) => py_eq(a, b),
                _ => false,
            }
    }
}

impl Metric for Adk {
    fn name(&self) -> &str {
        self.name
    }

    fn threshold(&self) -> Option<f64> {
        Some(self.threshold)
    }

    fn score(&self, called: &[Call], expected: &[Call]) -> Outcome {
        let (actual, expect) = (fn_calls(called), fn_calls(expected));
        let matched = match self.match_type {
            MatchType::Exact => {
                actual.len() == expect.len() && actual.iter().zip(&expect).all(|(a, e)| a.equals(e))
            }
            MatchType::InOrder => in_order(&actual, &expect),
            MatchType::AnyOrder => any_order(&actual, &expect),
        };
        let label = match self.match_type {
            MatchType::Exact => "EXACT",
            MatchType::InOrder => "IN_ORDER",
            MatchType::AnyOrder => "ANY_ORDER",
        };
        let score = if matched { 1.0 } else { 0.0 };
        let reason = format!(
            "{label} trajectory {}: expected {}, actual {}",
            if matched { "matches" } else { "does not match" },
            names_list(expected),
            names_list(called)
        );
        Outcome::scored(score, Some(score >= self.threshold), reason)
    }
}

fn fn_calls(calls: &[Call]) -> Vec<FnCall<'_>> {
    calls
        .iter()
        .map(|c| FnCall {
            name: &c.name,
            args: py_args(c),
        })
        .collect()
}

/// Expected calls appear in `actual` in order, other calls in between allowed
/// (greedy subsequence).
fn in_order(actual: &[FnCall], expected: &[FnCall]) -> bool {
    let mut next = expected.iter().peekable();
    for a in actual {
        if next.peek().is_some_and(|e| a.equals(e)) {
            next.next();
        }
    }
    next.peek().is_none()
}

/// Every expected call matched by a distinct actual call (first fit).
fn any_order(actual: &[FnCall], expected: &[FnCall]) -> bool {
    let mut used = vec![false; actual.len()];
    expected.iter().all(
        |e| match (0..actual.len()).find(|&i| !used[i] && actual[i].equals(e)) {
            Some(i) => {
                used[i] = true;
                true
            }
            None => false,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn metric(name: &str) -> Box<dyn Metric> {
        build(name, &MetricOptions::default())
            .and_then(Result::ok)
            .expect("preset")
    }
    fn a(name: &str, args: serde_json::Value) -> Call {
        Call::new(name, Some(args))
    }

    #[test]
    fn agentevals_cli_table() {
        // peers.md §1.1: expected get_weather{city:Paris} then get_forecast{city:Paris,days:1}.
        let w = |c: &str| a("get_weather", json!({"city": c}));
        let f = a("get_forecast", json!({"city": "Paris", "days": 1}));
        let expected = [w("Paris"), f.clone()];
        let extra = [a("search_web", json!({})), w("Paris"), f.clone()];
        let swapped = [f.clone(), w("Paris")];
        let wrong = [w("London"), f.clone()];
        let rows: [(&[Call], [f64; 3]); 4] = [
            (&expected, [1.0, 1.0, 1.0]),
            (&extra, [0.0, 1.0, 1.0]),
            (&swapped, [0.0, 0.0, 1.0]),
            (&wrong, [0.0, 0.0, 0.0]),
        ];
        for (called, want) in rows {
            for (m, w) in ["adk.exact", "adk.in_order", "adk.any_order"]
                .iter()
                .zip(want)
            {
                assert_eq!(metric(m).score(called, &expected).score, Some(w), "{m}");
            }
        }
    }

    #[test]
    fn empty_expected_and_absent_args() {
        let n = |s: &str| Call::new(s, None);
        assert_eq!(
            metric("adk.in_order").score(&[n("a")], &[]).score,
            Some(1.0)
        );
        assert_eq!(metric("adk.exact").score(&[n("a")], &[]).score, Some(0.0));
        assert_eq!(metric("adk.exact").score(&[], &[]).score, Some(1.0));
        assert_eq!(
            metric("adk.any_order")
                .score(&[a("p", json!({}))], &[n("p")])
                .score,
            Some(0.0)
        );
        assert_eq!(
            metric("adk.any_order")
                .score(&[a("p", json!({"n": 1.0}))], &[a("p", json!({"n": 1}))])
                .score,
            Some(1.0)
        );
    }
}
