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

use super::common::dict_args;
use crate::expect::Call;
use crate::score::{Metric, MetricOptions, Outcome, ScoreError};
use crate::value::{py_eq, PyValue};

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

/// Every mode: (name, settings..., summary for `toolscore metrics`). This one
/// list is both the lookup table and the catalog.
const MODES: &[(&str, Trajectory, ArgsMode, &str)] = &[
    (
        "agentevals.strict.args_exact",
        Trajectory::Strict,
        ArgsMode::Exact,
        "trajectory strict: same calls in the same order, args ==",
    ),
    (
        "agentevals.strict.args_ignore",
        Trajectory::Strict,
        ArgsMode::Ignore,
        "strict, args ignored",
    ),
    (
        "agentevals.strict.args_subset",
        Trajectory::Strict,
        ArgsMode::Subset,
        "strict, output args within reference args",
    ),
    (
        "agentevals.strict.args_superset",
        Trajectory::Strict,
        ArgsMode::Superset,
        "strict, output args contain reference args",
    ),
    (
        "agentevals.unordered.args_exact",
        Trajectory::Unordered,
        ArgsMode::Exact,
        "unordered: same calls in any order (first-fit both ways), args ==",
    ),
    (
        "agentevals.unordered.args_ignore",
        Trajectory::Unordered,
        ArgsMode::Ignore,
        "unordered, args ignored",
    ),
    (
        "agentevals.unordered.args_subset",
        Trajectory::Unordered,
        ArgsMode::Subset,
        "unordered, subset args (checked both ways: acts like exact)",
    ),
    (
        "agentevals.unordered.args_superset",
        Trajectory::Unordered,
        ArgsMode::Superset,
        "unordered, superset args (checked both ways: acts like exact)",
    ),
    (
        "agentevals.subset.args_exact",
        Trajectory::Subset,
        ArgsMode::Exact,
        "subset: every output call matches a reference call (first-fit), args ==",
    ),
    (
        "agentevals.subset.args_ignore",
        Trajectory::Subset,
        ArgsMode::Ignore,
        "subset, args ignored",
    ),
    (
        "agentevals.subset.args_subset",
        Trajectory::Subset,
        ArgsMode::Subset,
        "subset; matcher swapped: output args must contain the reference args",
    ),
    (
        "agentevals.subset.args_superset",
        Trajectory::Subset,
        ArgsMode::Superset,
        "subset; matcher swapped: output args must be within the reference args",
    ),
    (
        "agentevals.superset.args_exact",
        Trajectory::Superset,
        ArgsMode::Exact,
        "superset: every reference call matched by an output call (first-fit), args ==",
    ),
    (
        "agentevals.superset.args_ignore",
        Trajectory::Superset,
        ArgsMode::Ignore,
        "superset, args ignored",
    ),
    (
        "agentevals.superset.args_subset",
        Trajectory::Superset,
        ArgsMode::Subset,
        "superset, output args within reference args",
    ),
    (
        "agentevals.superset.args_superset",
        Trajectory::Superset,
        ArgsMode::Superset,
        "superset, output args contain reference args",
    ),
];

/// (name, summary) of every mode.
pub(super) fn modes() -> impl Iterator<Item = (&'static str, &'static str)> {
    MODES.iter().map(|m| (m.0, m.3))
}

pub(super) fn build(
    name: &str,
    _opts: &MetricOptions,
) -> Option<Result<Box<dyn Metric>, ScoreError>> {
    let &(name, trajectory, args, _) = MODES.iter().find(|m| m.0 == name)?;
    Some(Ok(Box::new(AgentEvals {
        name,
        trajectory,
        args,
    })))
}

struct AgentEvals {
    name: &'static str,
    trajectory: Trajectory,
    args: ArgsMode,
}

/// A tool call after `json.loads` of its `function.arguments`. The messages
/// go through langchain's `AIMessage`, whose `tool_calls[].args` must be a
/// dict: absent arguments are sent as `"{}"`, anything else but an object
/// fails validation.
struct Tool<'a> {
    name: &'a str,
    args: Cow<'a, PyValue>,
}

impl Tool<'_> {
    fn entries(&self) -> &[(String, PyValue)] {
        self.args.as_dict().unwrap_or(&[])
    }
}

fn tools(calls: &[Call]) -> Result<Vec<Tool<'_>>, String> {
    calls
        .iter()
        .map(|c| {
            Ok(Tool {
                name: &c.name,
                args: dict_args(c, "langchain AIMessage")?,
            })
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
        let (out, refs) = match (tools(called), tools(expected)) {
            (Ok(o), Ok(r)) => (o, r),
            (Err(err), _) | (_, Err(err)) => return Outcome::error(err),
        };
        let (key, ok) = match self.trajectory {
            Trajectory::Strict => ("strict", self.strict(&out, &refs)),
            Trajectory::Unordered => (
                "unordered",
                self.superset(&out, &refs) && self.superset(&refs, &out),
            ),
            Trajectory::Subset => ("subset", self.superset(&refs, &out)),
            Trajectory::Superset => ("superset", self.superset(&out, &refs)),
        };
        let reason = format!("trajectory_{key}_match: {ok}");
        Outcome::scored(if ok { 1.0 } else { 0.0 }, Some(ok), reason)
    }
}

impl AgentEvals {
    /// One message per call: same count, then position by position the same
    /// name and `matcher(output_args, reference_args)`.
    fn strict(&self, out: &[Tool], refs: &[Tool]) -> bool {
        out.len() == refs.len()
            && out
                .iter()
                .zip(refs)
                .all(|(o, r)| o.name == r.name && self.matcher(o, r))
    }

    /// `_is_trajectory_superset(outputs, references)`: each reference call, in
    /// order, takes the first unused output call with the same name for which
    /// `matcher(output_args, reference_args)` holds.
    fn superset(&self, outputs: &[Tool], references: &[Tool]) -> bool {
        let mut used = vec![false; outputs.len()];
        references.iter().all(|r| {
            let found = (0..outputs.len())
                .find(|&i| !used[i] && outputs[i].name == r.name && self.matcher(&outputs[i], r));
            if let Some(i) = found {
                used[i] = true;
            }
            found.is_some()
        })
    }

    fn matcher(&self, first: &Tool, second: &Tool) -> bool {
        match self.args {
            ArgsMode::Exact => py_eq(&first.args, &second.args),
            ArgsMode::Ignore => true,
            // subset: every (k, v) of `first` is in `second`.
            ArgsMode::Subset => contains_all(second.entries(), first.entries()),
            // superset: every (k, v) of `second` is in `first`.
            ArgsMode::Superset => contains_all(first.entries(), second.entries()),
        }
    }
}

/// `all(k in big and big[k] == v for k, v in small.items())` (not recursive).
fn contains_all(big: &[(String, PyValue)], small: &[(String, PyValue)]) -> bool {
    small
        .iter()
        .all(|(k, v)| big.iter().any(|(k2, w)| k == k2 && py_eq(v, w)))
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
        assert_eq!(
            metric("agentevals.subset.args_exact")
                .score(&[], &[n("a")])
                .score,
            Some(1.0)
        );
        assert_eq!(
            metric("agentevals.superset.args_exact")
                .score(&[n("a")], &[])
                .score,
            Some(1.0)
        );
        assert_eq!(
            metric("agentevals.strict.args_exact").score(&[], &[]).score,
            Some(1.0)
        );
    }
}
