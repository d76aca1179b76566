//! agentevals 0.0.9 (langchain-ai/agentevals, with openevals 0.2.2),
//! `create_trajectory_match_evaluator(trajectory_match_mode, tool_args_match_mode)`
//! (`agentevals/trajectory/{match,strict,unordered,subset,superset,utils}.py`).
//!
//! Calls are fed as one assistant message per call (a sequential agent), with
//! absent arguments sent as `"{}"`. Kept on purpose:
//! * matching is first-fit, not a bipartite matching;
//! * in trajectory `subset` mode the argument matcher is called with
//!   (reference, output), so `args_subset`/`args_superset` swap meaning there;
//! * `unordered` checks both directions, so subset/superset arguments act like
//!   exact ones;
//! * an empty output is a subset of anything; anything is a superset of an
//!   empty reference.
//!
//! The result is a boolean: score 1/0, `pass` the same; no threshold.

use std::borrow::Cow;

use super::common::py_args;
use crate::score::value::{py_eq, PyValue};
use crate::score::{Call, Metric, MetricOptions, Outcome, ScoreError};

pub const LIBRARY: &str = "agentevals";
pub const VERSION: &str = "0.0.9";

#[derive(Clone, Copy, PartialEq)]
enum Trajectory {
    Strict,
    Unordered,
    Subset,
    Superset,
}

#[derive(Clone, Copy, PartialEq)]
enum ArgsMode {
    Exact,
    Ignore,
    Subset,
    Superset,
}

const MODES: &[(&str, Trajectory, ArgsMode)] = &[
    ("agentevals.strict.args_exact", Trajectory::Strict, ArgsMode::Exact),
    ("agentevals.strict.args_ignore", Trajectory::Strict, ArgsMode::Ignore),
    ("agentevals.strict.args_subset", Trajectory::Strict, ArgsMode::Subset),
    ("agentevals.strict.args_superset", Trajectory::Strict, ArgsMode::Superset),
    ("agentevals.unordered.args_exact", Trajectory::Unordered, ArgsMode::Exact),
    ("agentevals.unordered.args_ignore", Trajectory::Unordered, ArgsMode::Ignore),
    ("agentevals.unordered.args_subset", Trajectory::Unordered, ArgsMode::Subset),
    ("agentevals.unordered.args_superset", Trajectory::Unordered, ArgsMode::Superset),
    ("agentevals.subset.args_exact", Trajectory::Subset, ArgsMode::Exact),
    ("agentevals.subset.args_ignore", Trajectory::Subset, ArgsMode::Ignore),
    ("agentevals.subset.args_subset", Trajectory::Subset, ArgsMode::Subset),
    ("agentevals.subset.args_superset", Trajectory::Subset, ArgsMode::Superset),
    ("agentevals.superset.args_exact", Trajectory::Superset, ArgsMode::Exact),
    ("agentevals.superset.args_ignore", Trajectory::Superset, ArgsMode::Ignore),
    ("agentevals.superset.args_subset", Trajectory::Superset, ArgsMode::Subset),
    ("agentevals.superset.args_superset", Trajectory::Superset, ArgsMode::Superset),
];

pub(super) fn build(
    name: &str,
    _opts: &MetricOptions,
) -> Option<Result<Box<dyn Metric>, ScoreError>> {
    let &(name, trajectory, args) = MODES.iter().find(|m| m.0 == name)?;
    Some(Ok(Box::new(AgentEvals { name, trajectory, args })))
}

struct AgentEvals {
    name: &'static str,
    trajectory: Trajectory,
    args: ArgsMode,
}

/// A tool call after `json.loads` of its `function.arguments`.
struct Tool<'a> {
    name: &'a str,
    args: Cow<'a, PyValue>,
}

fn tools(calls: &[Call]) -> Vec<Tool<'_>> {
    calls
        .iter()
        .map(|c| Tool {
            name: &c.name,
            args: py_args(c).unwrap_or(Cow::Owned(PyValue::Dict(Vec::new()))),
        })
        .collect()
}

impl Metric for AgentEvals {
    fn name(&self) -> &str {
        self.name
    }

    fn threshold(&self) -> Option<f64> {
        None
    }

    fn score(&self, called: &[Call], expected: &[Call]) -> Outcome {
        let (out, refs) = (tools(called), tools(expected));
        let result = match self.trajectory {
            Trajectory::Strict => self.strict(&out, &refs),
            Trajectory::Unordered => {
                self.superset(&out, &refs).and_then(|ok| Ok(ok && self.superset(&refs, &out)?))
            }
            Trajectory::Subset => self.superset(&refs, &out),
            Trajectory::Superset => self.superset(&out, &refs),
        };
        let key = match self.trajectory {
            Trajectory::Strict => "strict",
            Trajectory::Unordered => "unordered",
            Trajectory::Subset => "subset",
            Trajectory::Superset => "superset",
        };
        match result {
            Ok(ok) => {
                let reason = format!("trajectory_{key}_match: {}", if ok { "true" } else { "false" });
                Outcome::scored(if ok { 1.0 } else { 0.0 }, Some(ok), reason)
            }
            Err(err) => Outcome::error(err),
        }
    }
}

impl AgentEvals {
    /// One message per call: same count, then position by position the same
    /// name and `matcher(output_args, reference_args)`.
    fn strict(&self, out: &[Tool], refs: &[Tool]) -> Result<bool, String> {
        if out.len() != refs.len() {
            return Ok(false);
        }
        for (o, r) in out.iter().zip(refs) {
            if o.name != r.name || !self.matcher(&o.args, &r.args)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `_is_trajectory_superset(outputs, references)`: each reference call, in
    /// order, takes the first unused output call with the same name for which
    /// `matcher(output_args, reference_args)` holds.
    fn superset(&self, outputs: &[Tool], references: &[Tool]) -> Result<bool, String> {
        let mut used = vec![false; outputs.len()];
        for r in references {
            let mut found = false;
            for (i, o) in outputs.iter().enumerate() {
                if o.name != r.name || used[i] {
                    continue;
                }
                if self.matcher(&o.args, &r.args)? {
                    used[i] = true;
                    found = true;
                    break;
                }
            }
            if !found {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn matcher(&self, first: &PyValue, second: &PyValue) -> Result<bool, String> {
        match self.args {
            ArgsMode::Exact => Ok(py_eq(first, second)),
            ArgsMode::Ignore => Ok(true),
            // subset: every (k, v) of `first` is in `second`.
            ArgsMode::Subset => contains_all(second, first),
            // superset: every (k, v) of `second` is in `first`.
            ArgsMode::Superset => contains_all(first, second),
        }
    }
}

/// `all(k in big and big[k] == v for k, v in small.items())` (not recursive).
fn contains_all(big: &PyValue, small: &PyValue) -> Result<bool, String> {
    let (Some(big), Some(small)) = (big.as_dict(), small.as_dict()) else {
        let bad = if small.as_dict().is_none() { small } else { big };
        return Err(format!(
            "TypeError: tool arguments must be a JSON object for subset/superset matching, got {}",
            bad.type_name()
        ));
    };
    Ok(small
        .iter()
        .all(|(k, v)| big.iter().any(|(k2, w)| k == k2 && py_eq(v, w))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn metric(name: &str) -> Box<dyn Metric> {
        build(name, &MetricOptions::default()).and_then(Result::ok).expect("preset")
    }
    fn a(name: &str, args: serde_json::Value) -> Call {
        Call::new(name, Some(args))
    }

    #[test]
    fn subset_trajectory_swaps_argument_matchers() {
        let called = [a("s", json!({"q": "x", "limit": 10}))];
        let expected = [a("s", json!({"q": "x"}))];
        let score = |m: &str| metric(m).score(&called, &expected).score;
        assert_eq!(score("agentevals.strict.args_subset"), Some(0.0));
        assert_eq!(score("agentevals.superset.args_subset"), Some(0.0));
        assert_eq!(score("agentevals.subset.args_subset"), Some(1.0));
        assert_eq!(score("agentevals.superset.args_superset"), Some(1.0));
        assert_eq!(score("agentevals.unordered.args_superset"), Some(0.0));
    }

    #[test]
    fn first_fit_misses_valid_assignment() {
        let called = [a("f", json!({"a": 1, "b": 2})), a("f", json!({"a": 1}))];
        let expected = [a("f", json!({"a": 1})), a("f", json!({"a": 1, "b": 2}))];
        let o = metric("agentevals.superset.args_superset").score(&called, &expected);
        assert_eq!((o.score, o.pass), (Some(0.0), Some(false)));
    }

    #[test]
    fn empty_trajectories() {
        let n = |s: &str| Call::new(s, None);
        assert_eq!(metric("agentevals.subset.args_exact").score(&[], &[n("a")]).score, Some(1.0));
        assert_eq!(metric("agentevals.superset.args_exact").score(&[n("a")], &[]).score, Some(1.0));
        assert_eq!(metric("agentevals.strict.args_exact").score(&[], &[]).score, Some(1.0));
    }
}
