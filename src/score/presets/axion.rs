//! axion (github.com/ax-foundry/axion at commit 7ab96dc9, not the registry
//! package of that name), `axion.metrics.ToolCorrectness`
//! (`axion/metrics/tool/tool_correctness.py`; pass rule from
//! `axion/runners/metric.py`: `score >= threshold`, 0.5).
//!
//! Kept on purpose:
//! * first-fit matching (each expected tool takes the first remaining called
//!   tool that matches), not an optimal assignment;
//! * extras are free in recall scoring; precision is 1.0 when nothing was called;
//! * the fuzzy parameter mode is type-strict (`1` vs `1.0`, `True` vs `1`
//!   score 0), strings use `difflib.SequenceMatcher.ratio()`, numbers
//!   `1 - |a-b| / max(|a|, |b|)`, and it averages over the expected keys only.

use std::collections::HashMap;

use super::common::{dict_args, py_list, threshold};
use crate::expect::Call;
use crate::score::{Metric, MetricOptions, Outcome, ScoreError};
use crate::value::{py_eq, py_repr, PyValue};

pub const LIBRARY: &str = "axion";
pub const VERSION: &str = "git 7ab96dc9";

const FUZZY_THRESHOLD: f64 = 0.8;

#[derive(Clone, Copy, PartialEq)]
enum Params {
    Off,
    Exact,
    Subset,
    Fuzzy,
}

#[derive(Clone, Copy, PartialEq)]
enum Scoring {
    Recall,
    Precision,
    F1,
}

impl Scoring {
    fn label(self) -> &'static str {
        match self {
            Scoring::Recall => "recall",
            Scoring::Precision => "precision",
            Scoring::F1 => "f1",
        }
    }
}

/// (name, parameter check, strict order, scoring)
/// Every mode: (name, settings..., summary for `toolscore metrics`). This one
/// list is both the lookup table and the catalog.
const MODES: &[(&str, Params, bool, Scoring, &str)] = &[
    (
        "axion.name_only",
        Params::Off,
        false,
        Scoring::Recall,
        "ToolCorrectness(): recall of expected names, first-fit; extras free; pass >= 0.5",
    ),
    (
        "axion.exact_params",
        Params::Exact,
        false,
        Scoring::Recall,
        "recall; a match also needs args == (Python)",
    ),
    (
        "axion.subset_params",
        Params::Subset,
        false,
        Scoring::Recall,
        "recall; expected args must be in the called args (nested dicts recurse)",
    ),
    (
        "axion.fuzzy_params",
        Params::Fuzzy,
        false,
        Scoring::Recall,
        "recall; mean type-strict similarity over expected args >= 0.8 (difflib for strings)",
    ),
    (
        "axion.strict_order",
        Params::Off,
        true,
        Scoring::Recall,
        "1 if same names at every position, else 0",
    ),
    (
        "axion.strict_order_exact_params",
        Params::Exact,
        true,
        Scoring::Recall,
        "strict order, args == at every position",
    ),
    (
        "axion.precision",
        Params::Off,
        false,
        Scoring::Precision,
        "scoring='precision': matched / called; nothing called = 1",
    ),
    (
        "axion.f1",
        Params::Off,
        false,
        Scoring::F1,
        "scoring='f1': harmonic mean of recall and precision",
    ),
];

/// (name, summary) of every mode.
pub(super) fn modes() -> impl Iterator<Item = (&'static str, &'static str)> {
    MODES.iter().map(|m| (m.0, m.4))
}

pub(super) fn build(
    name: &str,
    opts: &MetricOptions,
) -> Option<Result<Box<dyn Metric>, ScoreError>> {
    let &(name, params, strict_order, scoring, _) = MODES.iter().find(|m| m.0 == name)?;
    Some(threshold(name, opts, 0.5).map(|threshold| {
        Box::new(Axion {
            name,
            params,
            strict_order,
            scoring,
            threshold,
        }) as Box<dyn Metric>
    }))
}

struct Axion {
    name: &'static str,
    params: Params,
    strict_order: bool,
    scoring: Scoring,
    threshold: f64,
}

/// axion's `ToolCall`: `args: Dict[str, Any]` is required (absent -> `{}`).
struct Tool<'a> {
    name: &'a str,
    args: std::borrow::Cow<'a, PyValue>,
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

impl Metric for Axion {
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
        let (score, reason) = if e.is_empty() && c.is_empty() {
            (
                1.0,
                "Correct: No tools were expected and none were called.".to_string(),
            )
        } else if e.is_empty() {
            (
                0.0,
                format!(
                    "Incorrect: No tools were expected, but {} were called.",
                    c.len()
                ),
            )
        } else if self.strict_order {
            self.strict(&c, &e)
        } else {
            self.flexible(&c, &e)
        };
        Outcome::scored(score, Some(score >= self.threshold), reason)
    }
}

impl Axion {
    fn strict(&self, c: &[Tool], e: &[Tool]) -> (f64, String) {
        if c.len() != e.len() {
            return (
                0.0,
                format!("Tool count mismatch: expected {}, got {}", e.len(), c.len()),
            );
        }
        for (i, (ct, et)) in c.iter().zip(e).enumerate() {
            if !self.tools_match(ct, et) {
                let with_args = if self.params != Params::Off {
                    format!(" with args {}", py_repr(&ct.args))
                } else {
                    String::new()
                };
                let reason = format!(
                    "Tool mismatch at position {i}: expected '{}', got '{}'{with_args}",
                    et.name, ct.name
                );
                return (0.0, reason);
            }
        }
        (
            1.0,
            format!("All {} tools called correctly in order.", e.len()),
        )
    }

    fn flexible(&self, c: &[Tool], e: &[Tool]) -> (f64, String) {
        let mut remaining: Vec<&Tool> = c.iter().collect();
        let mut matched: Vec<&str> = Vec::new();
        let mut missing: Vec<&Tool> = Vec::new();
        for et in e {
            match remaining.iter().position(|ct| self.tools_match(ct, et)) {
                Some(i) => {
                    remaining.remove(i);
                    matched.push(et.name);
                }
                None => missing.push(et),
            }
        }
        let recall = matched.len() as f64 / e.len() as f64;
        let precision = if c.is_empty() {
            1.0
        } else {
            matched.len() as f64 / c.len() as f64
        };
        let score = match self.scoring {
            Scoring::Recall => recall,
            Scoring::Precision => precision,
            Scoring::F1 if recall == 0.0 || precision == 0.0 => 0.0,
            Scoring::F1 => 2.0 * precision * recall / (precision + recall),
        };
        let mut parts = Vec::new();
        if !matched.is_empty() {
            parts.push(format!("Correctly called: {}", py_list(matched)));
        }
        if !missing.is_empty() {
            if self.params != Params::Off {
                let details: Vec<String> = missing
                    .iter()
                    .map(|t| format!("{}({})", t.name, py_repr(&t.args)))
                    .collect();
                parts.push(format!(
                    "Missing/incorrect calls: {}",
                    py_list(details.iter().map(String::as_str))
                ));
            } else {
                parts.push(format!(
                    "Missing tools: {}",
                    py_list(missing.iter().map(|t| t.name))
                ));
            }
        }
        if !remaining.is_empty() {
            parts.push(format!(
                "Unexpected tools: {}",
                py_list(remaining.iter().map(|t| t.name))
            ));
        }
        let body = if parts.is_empty() {
            "All expected tools were called correctly.".to_string()
        } else {
            parts.join("; ")
        };
        (score, format!("[{}] {body}", self.scoring.label()))
    }

    fn tools_match(&self, called: &Tool, expected: &Tool) -> bool {
        if called.name != expected.name {
            return false;
        }
        match self.params {
            Params::Off => true,
            Params::Exact => py_eq(&called.args, &expected.args),
            Params::Subset => subset_match(&called.args, &expected.args),
            Params::Fuzzy => fuzzy_match(&called.args, &expected.args),
        }
    }
}

/// Every expected key is in `called` with an equal value; nested dicts recurse.
fn subset_match(called: &PyValue, expected: &PyValue) -> bool {
    let (Some(c), Some(e)) = (called.as_dict(), expected.as_dict()) else {
        return false;
    };
    e.iter()
        .all(|(k, ev)| match c.iter().find(|(k2, _)| k2 == k) {
            None => false,
            Some((_, cv)) if ev.as_dict().is_some() && cv.as_dict().is_some() => {
                subset_match(cv, ev)
            }
            Some((_, cv)) => py_eq(cv, ev),
        })
}

/// Mean similarity over the expected keys, against the fuzzy threshold.
fn fuzzy_match(called: &PyValue, expected: &PyValue) -> bool {
    let (Some(c), Some(e)) = (called.as_dict(), expected.as_dict()) else {
        return false;
    };
    if e.is_empty() {
        return true;
    }
    let mut total = 0.0;
    for (k, ev) in e {
        let cv = c
            .iter()
            .find(|(k2, _)| k2 == k)
            .map(|(_, v)| v)
            .unwrap_or(&PyValue::None);
        total += similarity(cv, ev);
    }
    total / e.len() as f64 >= FUZZY_THRESHOLD
}

/// `_calculate_similarity`: 0 for a missing value or a type mismatch.
fn similarity(a: &PyValue, b: &PyValue) -> f64 {
    use PyValue as P;
    match (a, b) {
        (P::None, _) | (_, P::None) => 0.0,
        (P::Str(x), P::Str(y)) => sequence_ratio(x, y),
        (P::Int(x), P::Int(y)) => {
            if *x == 0 && *y == 0 {
                1.0
            } else if *x == 0 || *y == 0 {
                0.0
            } else {
                // Python divides the exact integers, correctly rounded.
                let diff = x.abs_diff(*y) as f64;
                1.0 - diff / x.unsigned_abs().max(y.unsigned_abs()) as f64
            }
        }
        (P::Float(x), P::Float(y)) => {
            if *x == 0.0 && *y == 0.0 {
                1.0
            } else if *x == 0.0 || *y == 0.0 {
                0.0
            } else {
                1.0 - (x - y).abs() / x.abs().max(y.abs())
            }
        }
        (P::Dict(x), P::Dict(y)) => {
            let shared: Vec<(&PyValue, &PyValue)> = x
                .iter()
                .filter_map(|(k, v)| y.iter().find(|(k2, _)| k2 == k).map(|(_, w)| (v, w)))
                .collect();
            let union = x.len() + y.len() - shared.len();
            if union == 0 {
                return 1.0;
            }
            let key_similarity = shared.len() as f64 / union as f64;
            let mut value_similarity = 0.0;
            if !shared.is_empty() {
                for (v, w) in &shared {
                    value_similarity += similarity(v, w);
                }
                value_similarity /= shared.len() as f64;
            }
            (key_similarity + value_similarity) / 2.0
        }
        // bool (an int subclass, but its own type), lists: plain equality.
        _ if std::mem::discriminant(a) == std::mem::discriminant(b) && py_eq(a, b) => 1.0,
        _ => 0.0,
    }
}

/// `difflib.SequenceMatcher(None, a, b).ratio()` over code points, including
/// the "popular element" autojunk rule for `b` of 200 items or more.
pub(crate) fn sequence_ratio(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let total = a.len() + b.len();
    if total == 0 {
        return 1.0;
    }
    let mut b2j: HashMap<char, Vec<usize>> = HashMap::new();
    for (j, ch) in b.iter().enumerate() {
        b2j.entry(*ch).or_default().push(j);
    }
    if b.len() >= 200 {
        let ntest = b.len() / 100 + 1;
        b2j.retain(|_, idxs| idxs.len() <= ntest);
    }
    let matches = matched_chars(&a, &b, &b2j, 0, a.len(), 0, b.len());
    2.0 * matches as f64 / total as f64
}

/// Sum of the sizes of `get_matching_blocks()` within the given ranges.
fn matched_chars(
    a: &[char],
    b: &[char],
    b2j: &HashMap<char, Vec<usize>>,
    alo: usize,
    ahi: usize,
    blo: usize,
    bhi: usize,
) -> usize {
    let (i, j, k) = find_longest_match(a, b, b2j, alo, ahi, blo, bhi);
    if k == 0 {
        return 0;
    }
    let mut total = k;
    if alo < i && blo < j {
        total += matched_chars(a, b, b2j, alo, i, blo, j);
    }
    if i + k < ahi && j + k < bhi {
        total += matched_chars(a, b, b2j, i + k, ahi, j + k, bhi);
    }
    total
}

/// `SequenceMatcher.find_longest_match` with no junk function: the longest
/// block earliest in `a` (then `b`), extended over popular elements.
fn find_longest_match(
    a: &[char],
    b: &[char],
    b2j: &HashMap<char, Vec<usize>>,
    alo: usize,
    ahi: usize,
    blo: usize,
    bhi: usize,
) -> (usize, usize, usize) {
    let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
    let mut j2len: HashMap<usize, usize> = HashMap::new();
    for (i, ch) in a.iter().enumerate().take(ahi).skip(alo) {
        let mut newj2len: HashMap<usize, usize> = HashMap::new();
        if let Some(js) = b2j.get(ch) {
            for &j in js {
                if j < blo {
                    continue;
                }
                if j >= bhi {
                    break;
                }
                let k = j
                    .checked_sub(1)
                    .and_then(|p| j2len.get(&p))
                    .copied()
                    .unwrap_or(0)
                    + 1;
                newj2len.insert(j, k);
                if k > bestsize {
                    besti = i + 1 - k;
                    bestj = j + 1 - k;
                    bestsize = k;
                }
            }
        }
        j2len = newj2len;
    }
    // Popular characters are not junk, so equal neighbours extend the block.
    while besti > alo && bestj > blo && a[besti - 1] == b[bestj - 1] {
        besti -= 1;
        bestj -= 1;
        bestsize += 1;
    }
    while besti + bestsize < ahi
        && bestj + bestsize < bhi
        && a[besti + bestsize] == b[bestj + bestsize]
    {
        bestsize += 1;
    }
    (besti, bestj, bestsize)
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
    fn sequence_matcher_ratio_matches_difflib() {
        // Values from CPython 3.11 difflib.
        assert_eq!(
            sequence_ratio("weather in Paris", "weather in paris"),
            0.9375
        );
        assert_eq!(sequence_ratio("abcd", "bcde"), 0.75);
        assert_eq!(sequence_ratio("", ""), 1.0);
        assert_eq!(sequence_ratio("abc", ""), 0.0);
        let r = sequence_ratio("weather in Paris", "stock price");
        assert!((r - 0.2962962962962963).abs() < 1e-12, "{r}");
        // autojunk: characters in more than 1% of a b of 200+ are dropped from
        // the index (values from CPython), yet equal neighbours still extend.
        let fox = "the quick brown fox jumps over the lazy dog ".repeat(6);
        let cat = "the quick brown cat jumps over the lazy dog ".repeat(6);
        assert_eq!(sequence_ratio(&fox, &cat), 0.06060606060606061);
        let (a, b) = ("abcabcabc".repeat(30), "abcabdabc".repeat(30));
        assert_eq!(sequence_ratio(&a, &b), 0.018518518518518517);
        let (x, y) = ("ab".repeat(150) + "x", "ab".repeat(150) + "y");
        assert_eq!(sequence_ratio(&x, &y), 0.9966777408637874);
        assert_eq!(
            sequence_ratio("Zürich", "Zu\u{308}rich"),
            0.7692307692307693
        );
        let long: String = "ab".repeat(150);
        assert!((sequence_ratio(&long, &long) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn fuzzy_is_type_strict_and_numeric() {
        let m = metric("axion.fuzzy_params");
        assert_eq!(
            m.score(&[a("s", json!({"n": 1}))], &[a("s", json!({"n": 1.0}))])
                .score,
            Some(0.0)
        );
        assert_eq!(
            m.score(&[a("b", json!({"n": 100}))], &[a("b", json!({"n": 90}))])
                .score,
            Some(1.0)
        );
        assert_eq!(
            m.score(&[a("b", json!({"n": 100}))], &[a("b", json!({"n": 70}))])
                .score,
            Some(0.0)
        );
    }

    #[test]
    fn subset_recurses_and_null_counts_as_present() {
        let m = metric("axion.subset_params");
        let called = [a("s", json!({"filter": {"a": 1, "b": 2}, "q": "x"}))];
        assert_eq!(
            m.score(&called, &[a("s", json!({"filter": {"a": 1}}))])
                .score,
            Some(1.0)
        );
        assert_eq!(
            m.score(&[a("s", json!({"q": null}))], &[a("s", json!({}))])
                .score,
            Some(1.0)
        );
    }

    #[test]
    fn precision_and_f1() {
        let n = |s: &str| Call::new(s, None);
        assert_eq!(
            metric("axion.precision").score(&[], &[n("a")]).score,
            Some(1.0)
        );
        let f1 = metric("axion.f1").score(
            &[n("a"), n("b"), n("x"), n("c"), n("y")],
            &[n("a"), n("b"), n("c")],
        );
        assert_eq!(f1.score, Some(0.7499999999999999));
    }
}
