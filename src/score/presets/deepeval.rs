//! deepeval 4.3.1, `ToolCorrectnessMetric`
//! (`deepeval/metrics/tool_correctness/tool_correctness.py`).
//!
//! Kept on purpose, because deepeval users see them:
//! * the default mode marks called tools as used by *value*, so a second
//!   identical call can never match (`[a, a]` vs `[a, a]` = 0.5);
//! * the default mode is greedy per expected tool, not an optimal assignment;
//! * `INPUT_PARAMETERS` gives partial credit (`compare_dicts`) and raises
//!   `AttributeError` when one side's arguments are absent and the other's a
//!   dict (exact mode compares with `!=` instead and does not raise);
//! * extra calls cost nothing except in exact mode;
//! * `strict_mode` sets the threshold to 1 and zeroes any lower score.
//!
//! `available_tools` (an LLM-judged selection score) is not reproduced.

use std::borrow::Cow;

use super::common::{dedup_by, names_list, optional_dict_args, py_list, threshold};
use crate::expect::Call;
use crate::score::{Metric, MetricOptions, Outcome, ScoreError};
use crate::value::{py_eq, py_json_dumps, DumpsOptions, PyValue};

pub const LIBRARY: &str = "deepeval";
pub const VERSION: &str = "4.3.1";

const NONE_KEYS: &str = "AttributeError: 'NoneType' object has no attribute 'keys'";
const SELECTION_REASON: &str = "No available tools were provided to assess tool selection criteria";

#[derive(Clone, Copy)]
struct Mode {
    exact: bool,
    ordering: bool,
    input_params: bool,
    strict: bool,
}

const fn mode(exact: bool, ordering: bool, input_params: bool, strict: bool) -> Mode {
    Mode {
        exact,
        ordering,
        input_params,
        strict,
    }
}

/// Every mode: (name, settings..., summary for `toolscore metrics`). This one
/// list is both the lookup table and the catalog.
const MODES: &[(&str, Mode, &str)] = &[
    (
        "deepeval.default",
        mode(false, false, false, false),
        "ToolCorrectnessMetric(): share of expected tools matched by name, greedy; identical \
         duplicate calls count once (bug kept); extras free; pass >= 0.5",
    ),
    (
        "deepeval.exact",
        mode(true, false, false, false),
        "should_exact_match: 1 if same names in the same order and length, else 0",
    ),
    (
        "deepeval.ordering",
        mode(false, true, false, false),
        "should_consider_ordering: LCS of names / expected count",
    ),
    (
        "deepeval.exact_ordering",
        mode(true, true, false, false),
        "both flags; exact match wins",
    ),
    (
        "deepeval.strict",
        mode(false, false, false, true),
        "strict_mode: threshold 1, any score below 1 becomes 0",
    ),
    (
        "deepeval.input_params",
        mode(false, false, true, false),
        "INPUT_PARAMETERS: default mode with partial argument credit (equal keys / key union); \
         raises AttributeError when one side's args are absent",
    ),
    (
        "deepeval.input_params_exact",
        mode(true, false, true, false),
        "INPUT_PARAMETERS + exact: names and args (Python ==) equal position by position",
    ),
    (
        "deepeval.input_params_ordering",
        mode(false, true, true, false),
        "INPUT_PARAMETERS + ordering: LCS weighted by argument credit",
    ),
    (
        "deepeval.input_params_strict",
        mode(false, false, true, true),
        "INPUT_PARAMETERS + strict_mode",
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
    let strict = opts.strict.unwrap_or(mode.strict);
    let mode = Mode { strict, ..mode };
    // deepeval: `self.threshold = 1 if strict_mode else threshold`.
    let threshold = match threshold(name, opts, 0.5) {
        Ok(_) if strict => 1.0,
        Ok(t) => t,
        Err(e) => return Some(Err(e)),
    };
    Some(Ok(Box::new(DeepEval {
        name,
        mode,
        threshold,
    })))
}

struct DeepEval {
    name: &'static str,
    mode: Mode,
    threshold: f64,
}

/// A deepeval `ToolCall`: name and `input_parameters: Optional[dict]`.
struct Tool<'a> {
    name: &'a str,
    params: Option<Cow<'a, PyValue>>,
}

impl Tool<'_> {
    fn params(&self) -> Option<&PyValue> {
        self.params.as_deref()
    }
}

/// `ToolCall.__eq__` (name, input_parameters, output; the type is ignored).
fn same_tool(a: &Tool, b: &Tool) -> bool {
    a.name == b.name && params_eq(a.params(), b.params())
}

fn params_eq(a: Option<&PyValue>, b: Option<&PyValue>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => py_eq(x, y),
        _ => false,
    }
}

fn tools(calls: &[Call]) -> Result<Vec<Tool<'_>>, String> {
    calls
        .iter()
        .map(|c| {
            Ok(Tool {
                name: &c.name,
                params: optional_dict_args(c, LIBRARY)?,
            })
        })
        .collect()
}

impl Metric for DeepEval {
    fn name(&self) -> &str {
        self.name
    }

    fn threshold(&self) -> Option<f64> {
        Some(self.threshold)
    }

    fn score(&self, called: &[Call], expected: &[Call]) -> Outcome {
        let (c, e) = match (tools(called), tools(expected)) {
            (Ok(c), Ok(e)) => (c, e),
            (Err(err), _) | (_, Err(err)) => return Outcome::error(err),
        };
        let params = self.mode.input_params;
        let (raw, reason) = if self.mode.exact {
            let s = exact_score(&e, &c, params);
            let verdict = if s == 1.0 {
                "Exact match"
            } else {
                "Not an exact match"
            };
            let reason = format!(
                "{verdict}: expected {}, called {}. See details above.",
                names_list(expected),
                names_list(called)
            );
            (s, reason)
        } else if self.mode.ordering {
            match weighted_lcs(&e, &c, params) {
                Ok((lcs, total)) => {
                    let s = if e.is_empty() && c.is_empty() {
                        1.0
                    } else if e.is_empty() {
                        0.0
                    } else {
                        total / e.len() as f64
                    };
                    (s, ordering_reason(s, &e, &c, &lcs, expected, called))
                }
                Err(err) => return Outcome::error(err),
            }
        } else {
            match default_score(&e, &c, params) {
                Ok(s) => (s, default_reason(s, &e, &c, expected, called)),
                Err(err) => return Outcome::error(err),
            }
        };
        let score = if self.mode.strict && raw < self.threshold {
            0.0
        } else {
            raw
        };
        // The library wraps its reason with the (LLM-free) tool-selection part.
        let mut wrapped = String::with_capacity(reason.len() + SELECTION_REASON.len() + 52);
        wrapped.push_str("[\n\t Tool Calling Reason: ");
        wrapped.push_str(&reason);
        wrapped.push_str("\n\t Tool Selection Reason: ");
        wrapped.push_str(SELECTION_REASON);
        wrapped.push_str("\n]\n");
        Outcome::scored(score, Some(score >= self.threshold), wrapped)
    }
}

/// `should_exact_match`: same length, same name (and arguments) position by
/// position. Arguments compare with `!=`, so absent vs `{}` is a mismatch.
fn exact_score(e: &[Tool], c: &[Tool], params: bool) -> f64 {
    if e.len() != c.len() {
        return 0.0;
    }
    let all = e
        .iter()
        .zip(c)
        .all(|(x, y)| x.name == y.name && (!params || params_eq(x.params(), y.params())));
    if all {
        1.0
    } else {
        0.0
    }
}

/// The default mode: for each expected tool, the best-scoring called tool not
/// yet "matched"; the first strictly better one wins. Matched tools form a
/// set of *values*, so an identical second call counts as already used.
fn default_score(e: &[Tool], c: &[Tool], params: bool) -> Result<f64, &'static str> {
    // Called tools equal by value share a class; "already matched" is per class.
    let class: Vec<usize> = (0..c.len())
        .map(|j| (0..j).find(|&k| same_tool(&c[k], &c[j])).unwrap_or(j))
        .collect();
    let mut matched = vec![false; c.len()];
    let mut total = 0.0;
    for et in e {
        let mut best = 0.0;
        let mut best_c = None;
        for (j, ct) in c.iter().enumerate() {
            if matched[class[j]] {
                continue;
            }
            if et.name == ct.name {
                let mut s = 1.0;
                if params {
                    s *= compare_dicts(et.params(), ct.params())?;
                }
                if s > best {
                    best = s;
                    best_c = Some(j);
                }
            }
        }
        if let (true, Some(j)) = (best > 0.0, best_c) {
            total += best;
            matched[class[j]] = true;
        }
    }
    Ok(if e.is_empty() && c.is_empty() {
        1.0
    } else if e.is_empty() {
        0.0
    } else {
        total / e.len() as f64
    })
}

/// `should_consider_ordering`: LCS where a pair weighs 1, or its
/// `compare_dicts` score with `INPUT_PARAMETERS`. Returns the expected tools
/// on the traced-back path and the sum of their increments.
fn weighted_lcs<'t, 'a>(
    e: &'t [Tool<'a>],
    c: &[Tool<'a>],
    params: bool,
) -> Result<(Vec<&'t Tool<'a>>, f64), &'static str> {
    let (m, n) = (e.len(), c.len());
    let w = n + 1;
    let mut dp = vec![0.0f64; (m + 1) * w];
    for i in 1..=m {
        for j in 1..=n {
            let up = dp[(i - 1) * w + j];
            let left = dp[i * w + j - 1];
            let mut diag = 0.0;
            if e[i - 1].name == c[j - 1].name {
                let mut s = 1.0;
                if params {
                    s *= compare_dicts(e[i - 1].params(), c[j - 1].params())?;
                }
                if s > 0.0 {
                    diag = dp[(i - 1) * w + j - 1] + s;
                }
            }
            dp[i * w + j] = up.max(left).max(diag);
        }
    }
    let (mut i, mut j, mut total) = (m, n, 0.0);
    let mut lcs = Vec::new();
    while i > 0 && j > 0 {
        let here = dp[i * w + j];
        if here == dp[(i - 1) * w + j] {
            i -= 1;
        } else if here == dp[i * w + j - 1] {
            j -= 1;
        } else {
            lcs.push(&e[i - 1]);
            total += here - dp[(i - 1) * w + j - 1];
            i -= 1;
            j -= 1;
        }
    }
    lcs.reverse();
    Ok((lcs, total))
}

/// `_compare_dicts(expected, called)`: 1 if equal, else the share of keys
/// (over the union) whose values are equal, nested dicts giving partial credit.
fn compare_dicts(d1: Option<&PyValue>, d2: Option<&PyValue>) -> Result<f64, &'static str> {
    match (d1, d2) {
        (None, None) => Ok(1.0),
        (Some(a), Some(b)) => Ok(compare_dict_values(a, b)),
        _ => Err(NONE_KEYS),
    }
}

fn compare_dict_values(a: &PyValue, b: &PyValue) -> f64 {
    if py_eq(a, b) {
        return 1.0;
    }
    let (Some(x), Some(y)) = (a.as_dict(), b.as_dict()) else {
        return 0.0;
    };
    let union = x.len()
        + y.iter()
            .filter(|(k, _)| !x.iter().any(|(k2, _)| k == k2))
            .count();
    let n = union as f64;
    let mut s = 0.0;
    for (k, v) in x {
        let Some((_, w)) = y.iter().find(|(k2, _)| k == k2) else {
            continue;
        };
        if py_eq(v, w) {
            s += 1.0 / n;
        } else if v.as_dict().is_some() && w.as_dict().is_some() {
            s += compare_dict_values(v, w) / n;
        }
    }
    s
}

fn default_reason(s: f64, e: &[Tool], c: &[Tool], expected: &[Call], called: &[Call]) -> String {
    if s == 1.0 {
        return format!(
            "All expected tools {} were called (order not considered).",
            names_list(expected)
        );
    }
    // deepeval lists `set(expected) - set(called)` by value, which can be
    // empty below 1.0 when duplicates were involved.
    let missing: Vec<&Tool> = e
        .iter()
        .filter(|et| !c.iter().any(|ct| same_tool(et, ct)))
        .collect();
    let missing = dedup_by(&missing, |a, b| same_tool(a, b));
    let reprs: Vec<String> = missing.iter().map(|t| tool_repr(t)).collect();
    format!(
        "Incomplete tool usage: missing tools [{}]; expected {}, called {}. See more details above.",
        reprs.join(", "),
        names_list(expected),
        names_list(called)
    )
}

fn ordering_reason(
    s: f64,
    e: &[Tool],
    c: &[Tool],
    lcs: &[&Tool],
    expected: &[Call],
    called: &[Call],
) -> String {
    if s == 1.0 {
        return format!(
            "Correct ordering: all expected tools {} were called in the correct order.",
            names_list(expected)
        );
    }
    let expected_names: Vec<&str> =
        dedup_by(&e.iter().map(|t| t.name).collect::<Vec<_>>(), |a, b| a == b);
    let missing = expected_names
        .iter()
        .copied()
        .filter(|n| !c.iter().any(|t| t.name == *n));
    let out_of_order = expected_names
        .iter()
        .copied()
        .filter(|n| !lcs.iter().any(|t| t.name == *n));
    let (missing, out_of_order): (Vec<&str>, Vec<&str>) =
        (missing.collect(), out_of_order.collect());
    let mut issues = Vec::new();
    if !missing.is_empty() {
        issues.push(format!("missing tools {}", py_list(missing)));
    }
    if !out_of_order.is_empty() {
        issues.push(format!("out-of-order tools {}", py_list(out_of_order)));
    }
    format!(
        "Incorrect tool usage: {}; expected {}, called {}. See more details above.",
        issues.join(" and "),
        names_list(expected),
        names_list(called)
    )
}

/// deepeval's multi-line `ToolCall` repr (empty fields left out).
fn tool_repr(t: &Tool) -> String {
    let opts = DumpsOptions {
        indent: Some(4),
        keep_unicode: true,
        ..DumpsOptions::default()
    };
    let mut out = format!(
        "ToolCall(\n    name={},\n    type=\"FUNCTION\"",
        py_json_dumps(&PyValue::Str(t.name.to_string()), opts)
    );
    if let Some(p) = t.params().filter(|p| p.is_truthy()) {
        let json = py_json_dumps(p, opts).replace('\n', "\n    ");
        out.push_str(&format!(",\n    input_parameters={json}"));
    }
    out.push_str("\n)");
    out
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
    fn n(name: &str) -> Call {
        Call::new(name, None)
    }
    fn a(name: &str, args: serde_json::Value) -> Call {
        Call::new(name, Some(args))
    }

    #[test]
    fn identical_duplicates_count_once_in_default_mode() {
        let m = metric("deepeval.default");
        let o = m.score(&[n("a"), n("a")], &[n("a"), n("a")]);
        assert_eq!(o.score, Some(0.5));
        assert!(o.reason.contains("missing tools []"));
        // The ordering mode has no such bug.
        assert_eq!(
            metric("deepeval.ordering")
                .score(&[n("a"), n("a")], &[n("a"), n("a")])
                .score,
            Some(1.0)
        );
    }

    #[test]
    fn greedy_first_strictly_better_match() {
        let m = metric("deepeval.input_params");
        let called = [
            a("f", json!({"a": 1, "b": 2, "c": 3})),
            a("f", json!({"a": 1})),
        ];
        let expected = [
            a("f", json!({"a": 1, "b": 2})),
            a("f", json!({"a": 1, "b": 2, "c": 3})),
        ];
        assert_eq!(m.score(&called, &expected).score, Some(0.5));
    }

    #[test]
    fn absent_vs_dict_arguments_raise_except_in_exact_mode() {
        let called = [a("ping", json!({}))];
        let expected = [n("ping")];
        let o = metric("deepeval.input_params").score(&called, &expected);
        assert_eq!(o.error.as_deref(), Some(NONE_KEYS));
        assert_eq!(o.score, None);
        assert_eq!(
            metric("deepeval.input_params_exact")
                .score(&called, &expected)
                .score,
            Some(0.0)
        );
        // Without INPUT_PARAMETERS the arguments are never looked at.
        assert_eq!(
            metric("deepeval.default").score(&called, &expected).score,
            Some(1.0)
        );
    }

    #[test]
    fn partial_argument_credit_and_python_equality() {
        let m = metric("deepeval.input_params");
        let o = m.score(
            &[a("f", json!({"a": 1, "b": 2, "c": 3}))],
            &[a("f", json!({"a": 1, "b": 9, "d": 4}))],
        );
        assert_eq!(o.score, Some(0.25));
        assert_eq!(o.pass, Some(false));
        let o = m.score(
            &[a("s", json!({"n": 1, "t": true}))],
            &[a("s", json!({"n": 1.0, "t": 1}))],
        );
        assert_eq!(o.score, Some(1.0));
    }

    #[test]
    fn weighted_lcs_uses_argument_weights() {
        let m = metric("deepeval.input_params_ordering");
        let called = [a("a", json!({"x": 1, "y": 2})), a("b", json!({"z": 1}))];
        let expected = [a("a", json!({"x": 1, "y": 3})), a("b", json!({"z": 1}))];
        assert_eq!(m.score(&called, &expected).score, Some(0.75));
    }

    #[test]
    fn strict_mode_zeroes_below_one_and_options_override() {
        let o = metric("deepeval.strict").score(&[n("a")], &[n("a"), n("b")]);
        assert_eq!((o.score, o.pass), (Some(0.0), Some(false)));
        let opts = MetricOptions {
            threshold: Some(0.6),
            strict: Some(false),
        };
        let m = build("deepeval.strict", &opts)
            .and_then(Result::ok)
            .expect("preset");
        let o = m.score(&[n("a")], &[n("a"), n("b")]);
        assert_eq!(
            (o.score, o.pass, m.threshold()),
            (Some(0.5), Some(false), Some(0.6))
        );
    }

    #[test]
    fn non_dict_arguments_fail_validation() {
        let o = metric("deepeval.default").score(&[a("a", json!([1]))], &[n("a")]);
        assert!(o.error.is_some_and(|e| e.starts_with("ValidationError")));
    }
}
