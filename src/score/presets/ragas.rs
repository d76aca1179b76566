//! ragas 0.4.3, `ToolCallAccuracy` and `ToolCallF1`
//! (`ragas/metrics/collections/tool_call_accuracy/`, `.../tool_call_f1/`;
//! same logic as the legacy `ragas/metrics/_tool_call_accuracy.py`).
//!
//! Kept on purpose:
//! * accuracy scores 0 on any length difference, extra calls included;
//! * accuracy compares `str()` of argument values: `5 == "5"`,
//!   `True == "True"`, but `1 != 1.0` and nested dicts depend on key order;
//! * the flexible mode sorts calls by `(name, key, str(value), ...)`;
//! * F1 works on *sets* of `(name, args)` (duplicates collapse, values compare
//!   with Python equality) and scores two empty lists 0; rounded to 4 places.
//!
//! ragas has no threshold and no verdict: `pass` is null.

use std::borrow::Cow;

use super::common::{dedup_by, dict_args};
use crate::expect::Call;
use crate::score::{Metric, MetricOptions, Needs, Outcome, ScoreError};
use crate::value::{py_eq, py_str, PyValue};

pub const LIBRARY: &str = "ragas";
pub const VERSION: &str = "0.4.3";

#[derive(Clone, Copy)]
enum Mode {
    AccuracyStrict,
    AccuracyFlexible,
    F1,
}

/// Every mode: (name, settings..., summary for `toolscore metrics`). This one
/// list is both the lookup table and the catalog.
const MODES: &[(&str, Mode, &str)] = &[
    (
        "ragas.tool_call_accuracy_strict",
        Mode::AccuracyStrict,
        "ToolCallAccuracy(strict_order=True): 0 unless the name sequences are equal, else mean \
         share of reference args whose str() values are equal; no pass/fail",
    ),
    (
        "ragas.tool_call_accuracy_flexible",
        Mode::AccuracyFlexible,
        "strict_order=False: both lists sorted by (name, key, str(value)...) first",
    ),
    (
        "ragas.tool_call_f1",
        Mode::F1,
        "ToolCallF1: F1 of the sets of (name, args); two empty lists = 0; rounded to 4 places",
    ),
];

/// (name, summary) of every mode.
pub(super) fn modes() -> impl Iterator<Item = (&'static str, &'static str)> {
    MODES.iter().map(|m| (m.0, m.2))
}

pub(super) fn build(
    name: &str,
    _opts: &MetricOptions,
) -> Option<Result<Box<dyn Metric>, ScoreError>> {
    let &(name, mode, _) = MODES.iter().find(|m| m.0 == name)?;
    Some(Ok(Box::new(Ragas { name, mode })))
}

struct Ragas {
    name: &'static str,
    mode: Mode,
}

/// ragas' `ToolCall`: `name: str`, `args: Dict[str, Any]`.
#[derive(Clone)]
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
                args: dict_args(c, LIBRARY)?,
            })
        })
        .collect()
}

impl Metric for Ragas {
    fn name(&self) -> &str {
        self.name
    }

    fn threshold(&self) -> Option<f64> {
        None
    }

    /// ragas compares `str()` of argument dicts: key order matters.
    fn needs(&self) -> Needs {
        Needs {
            ordered_args: true,
            ..Needs::default()
        }
    }

    fn score(&self, called: &[Call], expected: &[Call]) -> Outcome {
        let (pred, refs) = match (tools(called), tools(expected)) {
            (Ok(p), Ok(r)) => (p, r),
            (Err(err), _) | (_, Err(err)) => return Outcome::error(err),
        };
        let (score, reason) = match self.mode {
            Mode::AccuracyStrict => accuracy(pred, refs, true),
            Mode::AccuracyFlexible => accuracy(pred, refs, false),
            Mode::F1 => f1(&pred, &refs),
        };
        Outcome::scored(score, None, reason)
    }
}

fn accuracy(mut pred: Vec<Tool>, mut refs: Vec<Tool>, strict_order: bool) -> (f64, String) {
    if pred.is_empty() && refs.is_empty() {
        return (1.0, "No tool calls expected and none made.".into());
    }
    if pred.is_empty() {
        return (0.0, "No tool calls found in the user input.".into());
    }
    if refs.is_empty() {
        return (
            0.0,
            "Reference tool calls are empty but predictions exist.".into(),
        );
    }
    if !strict_order {
        pred = sorted_by_key(pred);
        refs = sorted_by_key(refs);
    }
    let pred_names: Vec<&str> = pred.iter().map(|t| t.name).collect();
    let ref_names: Vec<&str> = refs.iter().map(|t| t.name).collect();
    let aligned = if strict_order {
        pred_names == ref_names
    } else {
        let (mut p, mut r) = (pred_names.clone(), ref_names.clone());
        p.sort_unstable();
        r.sort_unstable();
        p == r
    };
    let mut score = 0.0;
    for (r, p) in refs.iter().zip(&pred) {
        if r.name == p.name {
            score += arg_score(p.entries(), r.entries());
        }
    }
    score /= refs.len() as f64;
    let compared = pred.len().min(refs.len());
    if compared < refs.len() {
        score *= compared as f64 / refs.len() as f64;
    }
    if aligned {
        (
            score,
            format!("Tool call sequences align; mean argument accuracy {score}."),
        )
    } else {
        let how = if pred.len() != refs.len() {
            "lengths differ"
        } else {
            "names differ"
        };
        (
            0.0,
            format!("Tool call sequences are not aligned ({how}): score 0."),
        )
    }
}

/// Share of reference arguments whose `str()` equals the prediction's.
fn arg_score(pred: &[(String, PyValue)], refs: &[(String, PyValue)]) -> f64 {
    if refs.is_empty() && pred.is_empty() {
        return 1.0;
    }
    if refs.is_empty() {
        return 0.0;
    }
    let mut score = 0.0;
    for (k, rv) in refs {
        if let Some((_, pv)) = pred.iter().find(|(k2, _)| k2 == k) {
            if py_str(pv) == py_str(rv) {
                score += 1.0;
            }
        }
    }
    score / refs.len() as f64
}

/// Python `sorted(tools, key=_sorted_key_for_tool_call)` (stable).
fn sorted_by_key(tools: Vec<Tool>) -> Vec<Tool> {
    let mut keyed: Vec<(Vec<String>, Tool)> =
        tools.into_iter().map(|t| (sort_key(&t), t)).collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    keyed.into_iter().map(|(_, t)| t).collect()
}

/// `_sorted_key_for_tool_call`: name, then each sorted key and `str(value)`.
fn sort_key(t: &Tool) -> Vec<String> {
    let mut entries: Vec<&(String, PyValue)> = t.entries().iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut key = vec![t.name.to_string()];
    for (k, v) in entries {
        key.push(k.clone());
        key.push(py_str(v));
    }
    key
}

fn f1(pred: &[Tool], refs: &[Tool]) -> (f64, String) {
    // Python sets of (name, frozenset(args)): equality is Python `==`.
    let same = |a: &Tool, b: &Tool| a.name == b.name && py_eq(&a.args, &b.args);
    let actual = dedup_by(pred, same);
    let expected = dedup_by(refs, same);
    let tp = actual
        .iter()
        .filter(|a| expected.iter().any(|e| same(a, e)))
        .count();
    let fp = actual.len() - tp;
    let fn_ = expected.len() - tp;
    let precision = if tp + fp > 0 {
        tp as f64 / (tp + fp) as f64
    } else {
        0.0
    };
    let recall = if tp + fn_ > 0 {
        tp as f64 / (tp + fn_) as f64
    } else {
        0.0
    };
    let f1 = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };
    let score = round4(f1);
    (
        score,
        format!("tp={tp} fp={fp} fn={fn_}: precision {precision}, recall {recall}, F1 {score}."),
    )
}

/// Python `round(x, 4)`: correctly rounded, ties to even, as Rust formats.
fn round4(x: f64) -> f64 {
    format!("{x:.4}").parse().unwrap_or(x)
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
    fn ordered(name: &str, text: &str) -> Call {
        Call::from_args_json(name, text).expect("json")
    }

    #[test]
    fn accuracy_compares_str_of_values() {
        let m = metric("ragas.tool_call_accuracy_strict");
        assert_eq!(
            m.score(&[a("s", json!({"n": 5}))], &[a("s", json!({"n": "5"}))])
                .score,
            Some(1.0)
        );
        assert_eq!(
            m.score(
                &[a("s", json!({"f": true}))],
                &[a("s", json!({"f": "True"}))]
            )
            .score,
            Some(1.0)
        );
        assert_eq!(
            m.score(&[a("s", json!({"n": 1}))], &[a("s", json!({"n": 1.0}))])
                .score,
            Some(0.0)
        );
        let o = m.score(
            &[ordered("s", r#"{"f": {"a": 1, "b": 2}}"#)],
            &[ordered("s", r#"{"f": {"b": 2, "a": 1}}"#)],
        );
        assert_eq!(o.score, Some(0.0));
        assert_eq!(o.pass, None);
    }

    #[test]
    fn accuracy_zero_on_any_length_difference() {
        let n = |s: &str| Call::new(s, None);
        let m = metric("ragas.tool_call_accuracy_flexible");
        assert_eq!(
            m.score(&[n("a"), n("b"), n("c")], &[n("a"), n("b")]).score,
            Some(0.0)
        );
        assert_eq!(
            m.score(&[n("b"), n("a")], &[n("a"), n("b")]).score,
            Some(1.0)
        );
    }

    #[test]
    fn flexible_sort_pairs_by_str_key() {
        let m = metric("ragas.tool_call_accuracy_flexible");
        let called = [
            a("f", json!({"a": 1, "b": 2, "c": 3})),
            a("f", json!({"a": 1})),
        ];
        let expected = [
            a("f", json!({"a": 1, "b": 2})),
            a("f", json!({"a": 1, "b": 2, "c": 3})),
        ];
        assert_eq!(m.score(&called, &expected).score, Some(0.75));
    }

    #[test]
    fn f1_is_a_set_metric_and_empty_is_zero() {
        let m = metric("ragas.tool_call_f1");
        assert_eq!(m.score(&[], &[]).score, Some(0.0));
        let n = |s: &str| Call::new(s, None);
        assert_eq!(
            m.score(&[n("a"), n("a"), n("b")], &[n("a"), n("b"), n("b")])
                .score,
            Some(1.0)
        );
        assert_eq!(
            m.score(&[a("s", json!({"n": 1}))], &[a("s", json!({"n": 1.0}))])
                .score,
            Some(1.0)
        );
        assert_eq!(
            m.score(&[n("a"), n("b"), n("c")], &[n("a")]).score,
            Some(0.5)
        );
        assert_eq!(round4(2.0 / 3.0), 0.6667);
        assert_eq!(round4(0.03125), 0.0312);
    }
}
