//! `tool_correctness`: toolscore's own metric.
//!
//! It avoids the peers' known mistakes (docs/scoring.md):
//! calls are paired with expectations by an optimal one-to-one assignment
//! (not first-fit), duplicates count once each, and both missing and
//! unexpected calls cost (the default headline is F1).

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;

use serde_json::{json, Value};

use super::{Metric, Outcome, ScoreError};
use crate::expect::matchers::{contains, Compare, Pattern};
use crate::expect::Call;
use crate::value::json_eq;

pub const NATIVE_NAME: &str = "tool_correctness";

/// How a called tool's arguments are compared with an expectation's.
///
/// An expectation without `args` is always matched by name only. Argument
/// matchers in an expectation (`$regex`, ...) hold or not under every
/// policy; the policy says which keys must be there (docs/scoring.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArgPolicy {
    /// Names only.
    Ignore,
    /// Same keys, equal values.
    Exact,
    /// Every expected key present and equal; extra called keys allowed.
    Subset,
    /// Every called key is expected and equal; expected keys may be missing.
    Superset,
    /// Mean per-key similarity (strings by edit distance) of at least `T`.
    Fuzzy(f64),
}

impl ArgPolicy {
    /// How objects compare under this policy; fuzzy reasons name every
    /// value that is not identical, as `exact` does.
    fn compare(self) -> Compare {
        match self {
            ArgPolicy::Subset | ArgPolicy::Ignore => Compare::Subset,
            ArgPolicy::Superset => Compare::Superset,
            ArgPolicy::Exact | ArgPolicy::Fuzzy(_) => Compare::Exact,
        }
    }
}

impl std::str::FromStr for ArgPolicy {
    type Err = ScoreError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |reason: String| ScoreError::BadOption {
            metric: NATIVE_NAME.into(),
            reason,
        };
        match s {
            "ignore" => Ok(ArgPolicy::Ignore),
            "exact" => Ok(ArgPolicy::Exact),
            "subset" => Ok(ArgPolicy::Subset),
            "superset" => Ok(ArgPolicy::Superset),
            _ => {
                let t = s.strip_prefix("fuzzy:").ok_or_else(|| {
                    bad(format!(
                        "argument policy `{s}`: expected ignore, exact, subset, superset or fuzzy:T"
                    ))
                })?;
                let t: f64 = t
                    .parse()
                    .map_err(|_| bad(format!("fuzzy threshold `{t}` is not a number")))?;
                if !(0.0..=1.0).contains(&t) {
                    return Err(bad(format!("fuzzy threshold {t} is outside 0..=1")));
                }
                Ok(ArgPolicy::Fuzzy(t))
            }
        }
    }
}

/// Which component is the headline score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Headline {
    Recall,
    Precision,
    F1,
    Order,
    Exact,
}

impl std::str::FromStr for Headline {
    type Err = ScoreError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "recall" => Ok(Headline::Recall),
            "precision" => Ok(Headline::Precision),
            "f1" => Ok(Headline::F1),
            "order" => Ok(Headline::Order),
            "exact" => Ok(Headline::Exact),
            _ => Err(ScoreError::BadOption {
                metric: NATIVE_NAME.into(),
                reason: format!("score `{s}`: expected recall, precision, f1, order or exact"),
            }),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct NativeConfig {
    pub threshold: f64,
    /// `None`: `subset` where the expectation has args.
    pub args: Option<ArgPolicy>,
    pub headline: Headline,
}

impl Default for NativeConfig {
    fn default() -> Self {
        NativeConfig {
            threshold: 0.5,
            args: None,
            headline: Headline::F1,
        }
    }
}

/// The components of one evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct Components {
    pub recall: f64,
    pub precision: f64,
    pub f1: f64,
    pub order: f64,
    pub exact: bool,
    /// `(called index, expected index)` pairs, sorted by called index.
    pub matched: Vec<(usize, usize)>,
    /// Expected indices nobody matched and no same-name call was left for.
    pub missing: Vec<usize>,
    /// Called indices that match nothing and share no name with a leftover expectation.
    pub unexpected: Vec<usize>,
    /// `(called, expected)` with the same name but arguments that do not match.
    pub wrong_args: Vec<(usize, usize)>,
    /// Set when some calls were paired greedily (too many of one name for
    /// the exact assignment): the pairing may not be the best one.
    pub note: Option<String>,
    /// The policy the arguments were compared under, for the reasons of
    /// expectations with matchers.
    pub policy: ArgPolicy,
}

pub struct NativeMetric {
    config: NativeConfig,
}

impl NativeMetric {
    pub fn new(config: NativeConfig) -> Self {
        NativeMetric { config }
    }

    pub fn config(&self) -> &NativeConfig {
        &self.config
    }

    /// Does `called` satisfy `expected` under the configured policy?
    fn matches(&self, called: &Call, expected: &Call) -> bool {
        if called.name != expected.name {
            return false;
        }
        let Some(want) = &expected.args else {
            return true;
        };
        let policy = self.config.args.unwrap_or(ArgPolicy::Subset);
        let got = called.args.as_ref();
        if let Some(p) = &expected.matchers {
            return matches_pattern(policy, got, p);
        }
        match policy {
            ArgPolicy::Ignore => true,
            ArgPolicy::Exact => got.is_some_and(|g| json_eq(g, want)),
            ArgPolicy::Subset => got.is_some_and(|g| contains(g, want)),
            ArgPolicy::Superset => match got {
                None => true,
                Some(g) => contains(want, g),
            },
            ArgPolicy::Fuzzy(t) => similarity(got.unwrap_or(&Value::Null), want) >= t,
        }
    }

    /// Whether pairing identical calls and expectations first keeps the
    /// assignment maximum. It does when "matches" chains: `c'` matches `e`
    /// and `e`'s twin `c` matches `e'` imply `c'` matches `e'`. Fuzzy
    /// similarity does not chain, nor does `superset` through a call without
    /// arguments (it matches anything of its name).
    fn identical_first(&self, c: &Call) -> bool {
        match self.config.args.unwrap_or(ArgPolicy::Subset) {
            ArgPolicy::Fuzzy(_) => false,
            ArgPolicy::Superset => c.args.is_some(),
            _ => true,
        }
    }

    pub fn components(&self, called: &[Call], expected: &[Call]) -> Components {
        let (matched, note) = assign(
            called,
            expected,
            |c, e| self.matches(c, e),
            |c| self.identical_first(c),
        );
        let mut call_used = vec![false; called.len()];
        let mut exp_used = vec![false; expected.len()];
        for &(c, e) in &matched {
            call_used[c] = true;
            exp_used[e] = true;
        }
        // Pair leftovers that share a name: these are wrong-argument calls,
        // reported apart from plain missing/unexpected ones. Each leftover
        // expectation takes the first leftover call of its name.
        let mut leftovers_c: HashMap<&str, VecDeque<usize>> = HashMap::new();
        for i in (0..called.len()).filter(|&i| !call_used[i]) {
            leftovers_c.entry(&called[i].name).or_default().push_back(i);
        }
        let leftovers_e: Vec<usize> = (0..expected.len()).filter(|&j| !exp_used[j]).collect();
        let mut wrong_args = Vec::new();
        for j in leftovers_e {
            if let Some(i) = leftovers_c
                .get_mut(expected[j].name.as_str())
                .and_then(VecDeque::pop_front)
            {
                call_used[i] = true;
                exp_used[j] = true;
                wrong_args.push((i, j));
            }
        }
        let missing: Vec<usize> = (0..expected.len()).filter(|&j| !exp_used[j]).collect();
        let unexpected: Vec<usize> = (0..called.len()).filter(|&i| !call_used[i]).collect();

        let m = matched.len() as f64;
        let recall = if expected.is_empty() {
            1.0
        } else {
            m / expected.len() as f64
        };
        let precision = if called.is_empty() {
            1.0
        } else {
            m / called.len() as f64
        };
        let f1 = if recall + precision == 0.0 {
            0.0
        } else {
            2.0 * recall * precision / (recall + precision)
        };
        let order = if expected.is_empty() {
            if called.is_empty() {
                1.0
            } else {
                0.0
            }
        } else {
            lcs(called, expected, |c, e| self.matches(c, e)) as f64 / expected.len() as f64
        };
        let exact = called.len() == expected.len()
            && called.iter().zip(expected).all(|(c, e)| self.matches(c, e));
        Components {
            recall,
            precision,
            f1,
            order,
            exact,
            matched,
            missing,
            unexpected,
            wrong_args,
            note,
            policy: self.config.args.unwrap_or(ArgPolicy::Subset),
        }
    }
}

/// [`NativeMetric::matches`] for expected arguments with matchers. Kept out
/// of line so that the comparison of plain arguments stays as small as
/// before.
#[inline(never)]
fn matches_pattern(policy: ArgPolicy, got: Option<&Value>, want: &Pattern) -> bool {
    match policy {
        ArgPolicy::Ignore => true,
        ArgPolicy::Exact | ArgPolicy::Subset => {
            got.is_some_and(|g| want.holds(g, policy.compare()))
        }
        ArgPolicy::Superset => got.is_none_or(|g| want.holds(g, Compare::Superset)),
        ArgPolicy::Fuzzy(t) => pattern_similarity(got.unwrap_or(&Value::Null), want) >= t,
    }
}

impl Components {
    pub fn headline(&self, h: Headline) -> f64 {
        match h {
            Headline::Recall => self.recall,
            Headline::Precision => self.precision,
            Headline::F1 => self.f1,
            Headline::Order => self.order,
            Headline::Exact => f64::from(u8::from(self.exact)),
        }
    }

    /// Human explanation naming matched, missing, unexpected and wrong-argument calls.
    pub fn explain(&self, called: &[Call], expected: &[Call]) -> String {
        let mut out = String::new();
        let list = |idx: &mut dyn Iterator<Item = &Call>| -> String {
            idx.map(describe).collect::<Vec<_>>().join(", ")
        };
        let _ = write!(
            out,
            "{}/{} expected calls matched, {}/{} calls expected",
            self.matched.len(),
            expected.len(),
            self.matched.len(),
            called.len()
        );
        if !self.missing.is_empty() {
            let _ = write!(
                out,
                "; missing: {}",
                list(&mut self.missing.iter().map(|&j| &expected[j]))
            );
        }
        if !self.unexpected.is_empty() {
            let _ = write!(
                out,
                "; unexpected: {}",
                list(&mut self.unexpected.iter().map(|&i| &called[i]))
            );
        }
        for &(i, j) in &self.wrong_args {
            let reasons = match (&expected[j].matchers, &called[i].args) {
                (Some(p), Some(got)) => p.mismatches(got, self.policy.compare()),
                _ => Vec::new(),
            };
            if reasons.is_empty() {
                let _ = write!(
                    out,
                    "; wrong arguments for {}: expected {}, got {}",
                    expected[j].name,
                    args_text(expected[j].args.as_ref()),
                    args_text(called[i].args.as_ref())
                );
            } else {
                let _ = write!(
                    out,
                    "; wrong arguments for {}: {}",
                    expected[j].name,
                    reasons.join("; ")
                );
            }
        }
        if !self.exact
            && self.missing.is_empty()
            && self.unexpected.is_empty()
            && self.wrong_args.is_empty()
            && self.order < 1.0
        {
            let _ = write!(out, "; order differs (order {:.3})", self.order);
        }
        if let Some(note) = &self.note {
            let _ = write!(out, "; note: {note}");
        }
        out
    }

    pub fn to_json(&self, called: &[Call], expected: &[Call]) -> Value {
        let names = |v: &mut dyn Iterator<Item = &Call>| {
            v.map(|c| Value::String(c.name.clone())).collect::<Vec<_>>()
        };
        let mut v = json!({
            "recall": self.recall,
            "precision": self.precision,
            "f1": self.f1,
            "order": self.order,
            "exact": self.exact,
            "missing": names(&mut self.missing.iter().map(|&j| &expected[j])),
            "unexpected": names(&mut self.unexpected.iter().map(|&i| &called[i])),
            "wrong_args": self.wrong_args.iter().map(|&(i, j)| json!({
                "name": expected[j].name,
                "expected": expected[j].args,
                "called": called[i].args,
            })).collect::<Vec<_>>(),
        });
        if let (Some(note), Some(o)) = (&self.note, v.as_object_mut()) {
            o.insert("note".into(), Value::String(note.clone()));
        }
        v
    }
}

fn describe(c: &Call) -> String {
    match &c.args {
        Some(a) => format!("{}({})", c.name, a),
        None => c.name.clone(),
    }
}

fn args_text(a: Option<&Value>) -> String {
    a.map_or_else(|| "no arguments".to_string(), Value::to_string)
}

impl Metric for NativeMetric {
    fn name(&self) -> &str {
        NATIVE_NAME
    }

    fn threshold(&self) -> Option<f64> {
        Some(self.config.threshold)
    }

    fn score(&self, called: &[Call], expected: &[Call]) -> Outcome {
        let c = self.components(called, expected);
        let score = c.headline(self.config.headline);
        let pass = score >= self.config.threshold;
        Outcome {
            score: Some(score),
            pass: Some(pass),
            reason: c.explain(called, expected),
            error: None,
            details: Some(c.to_json(called, expected)),
            unjudged: None,
        }
    }
}

/// Argument similarity in 0..=1: the mean over the union of keys of a per-key
/// similarity (1 for equal values, edit-distance ratio for two strings, else 0).
fn similarity(got: &Value, want: &Value) -> f64 {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            let keys: std::collections::BTreeSet<&String> = g.keys().chain(w.keys()).collect();
            if keys.is_empty() {
                return 1.0;
            }
            let total: f64 = keys
                .iter()
                .map(|k| match (g.get(*k), w.get(*k)) {
                    (Some(a), Some(b)) => similarity(a, b),
                    _ => 0.0,
                })
                .sum();
            total / keys.len() as f64
        }
        (Value::String(a), Value::String(b)) => string_similarity(a, b),
        _ => f64::from(u8::from(json_eq(got, want))),
    }
}

/// [`similarity`] against expected arguments with matchers: a key whose
/// matcher holds counts as identical (1), one whose matcher fails as 0.
fn pattern_similarity(got: &Value, want: &Pattern) -> f64 {
    match (want, got) {
        (Pattern::Plain(w), _) => similarity(got, w),
        (Pattern::Object(w), Value::Object(g)) => {
            let only_called = g.keys().filter(|k| !w.contains_key(*k)).count();
            let total: f64 = w
                .iter()
                .map(|(k, p)| g.get(k).map_or(0.0, |v| pattern_similarity(v, p)))
                .sum();
            total / (w.len() + only_called) as f64
        }
        _ => f64::from(u8::from(want.holds(got, Compare::Exact))),
    }
}

/// `1 - levenshtein / max_len`, over chars.
fn string_similarity(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let longest = a.len().max(b.len());
    if longest == 0 {
        return 1.0;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    1.0 - prev[b.len()] as f64 / longest as f64
}

/// Largest number of calls, or of expectations, of one name given to the
/// exact assignment, whose augmenting paths cost up to `O(N^3)`.
pub const EXACT_LIMIT: usize = 500;

/// Maximum one-to-one assignment of calls to expectations under `ok`
/// (augmenting paths, Kuhn's algorithm). Candidates are tried in sequence
/// order, so among maximum assignments an in-order pairing is preferred.
///
/// `ok` only holds between equal names, so each name is assigned on its
/// own (the same pairs as one assignment over everything). A name with more
/// than [`EXACT_LIMIT`] calls or expectations first pairs identical calls
/// and expectations in order (still maximum where `twins` allows it, see
/// [`NativeMetric::identical_first`]); what remains goes to the exact
/// assignment if small enough, else is paired greedily in order, which the
/// returned note says.
fn assign(
    called: &[Call],
    expected: &[Call],
    ok: impl Fn(&Call, &Call) -> bool,
    twins: impl Fn(&Call) -> bool,
) -> (Vec<(usize, usize)>, Option<String>) {
    let mut groups: Vec<(Vec<usize>, Vec<usize>)> = Vec::new();
    let mut by_name: HashMap<&str, usize> = HashMap::new();
    for (j, e) in expected.iter().enumerate() {
        let next = groups.len();
        let g = *by_name.entry(e.name.as_str()).or_insert(next);
        if g == next {
            groups.push((Vec::new(), Vec::new()));
        }
        groups[g].1.push(j);
    }
    for (i, c) in called.iter().enumerate() {
        // A call whose name nobody expects matches nothing.
        if let Some(&g) = by_name.get(c.name.as_str()) {
            groups[g].0.push(i);
        }
    }
    let mut pairs = Vec::new();
    let mut greedy: Vec<String> = Vec::new();
    for (calls, exps) in &groups {
        if calls.is_empty() {
            continue;
        }
        if calls.len() <= EXACT_LIMIT && exps.len() <= EXACT_LIMIT {
            pairs.extend(kuhn(called, expected, calls, exps, &ok));
            continue;
        }
        let mut used_c = vec![false; calls.len()];
        // Calls bucketed by the text of their arguments (numbers as f64, so
        // `1` and `1.0` share a bucket), each bucket in call order.
        let mut buckets: HashMap<String, VecDeque<usize>> = HashMap::new();
        for (k, &i) in calls.iter().enumerate() {
            if twins(&called[i]) {
                buckets
                    .entry(args_key(&called[i]))
                    .or_default()
                    .push_back(k);
            }
        }
        let mut rest_e = Vec::new();
        for &j in exps {
            let e = &expected[j];
            let twin = buckets.get_mut(&args_key(e)).and_then(|b| {
                let at = b.iter().position(|&k| identical(&called[calls[k]], e))?;
                b.remove(at)
            });
            match twin {
                Some(k) => {
                    used_c[k] = true;
                    pairs.push((calls[k], j));
                }
                None => rest_e.push(j),
            }
        }
        let rest_c: Vec<usize> = calls
            .iter()
            .zip(&used_c)
            .filter(|(_, &u)| !u)
            .map(|(&i, _)| i)
            .collect();
        if rest_c.is_empty() || rest_e.is_empty() {
            continue;
        }
        if rest_c.len() <= EXACT_LIMIT && rest_e.len() <= EXACT_LIMIT {
            pairs.extend(kuhn(called, expected, &rest_c, &rest_e, &ok));
            continue;
        }
        let mut used = vec![false; rest_c.len()];
        for &j in &rest_e {
            let first = rest_c
                .iter()
                .enumerate()
                .position(|(k, &i)| !used[k] && ok(&called[i], &expected[j]));
            if let Some(k) = first {
                used[k] = true;
                pairs.push((rest_c[k], j));
            }
        }
        greedy.push(format!(
            "{} calls against {} expectations of `{}`",
            rest_c.len(),
            rest_e.len(),
            expected[rest_e[0]].name
        ));
    }
    pairs.sort_unstable();
    let note = (!greedy.is_empty()).then(|| {
        format!(
            "{} were paired greedily in order (more than {EXACT_LIMIT} on a side for the exact \
             assignment), so the pairing may not be the best one",
            greedy.join(", ")
        )
    });
    (pairs, note)
}

/// A text equal for calls with [`identical`] arguments (and usually only
/// for them): the JSON with every number written as an `f64`.
fn args_key(c: &Call) -> String {
    fn canonical(v: &Value) -> Value {
        match v {
            Value::Number(n) => n
                .as_f64()
                .and_then(serde_json::Number::from_f64)
                .map_or(Value::Null, Value::Number),
            Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
            Value::Object(o) => {
                Value::Object(o.iter().map(|(k, v)| (k.clone(), canonical(v))).collect())
            }
            other => other.clone(),
        }
    }
    c.args
        .as_ref()
        .map_or_else(String::new, |a| format!("={}", canonical(a)))
}

/// Same name and equal arguments (or neither has any). Arguments with
/// matchers are never identical to a call's: they are compared, not equal.
fn identical(c: &Call, e: &Call) -> bool {
    c.name == e.name
        && e.matchers.is_none()
        && match (&c.args, &e.args) {
            (None, None) => true,
            (Some(a), Some(b)) => json_eq(a, b),
            _ => false,
        }
}

/// The exact assignment of the calls `calls` to the expectations `exps`
/// (indexes into `called` / `expected`, in order).
fn kuhn(
    called: &[Call],
    expected: &[Call],
    calls: &[usize],
    exps: &[usize],
    ok: &impl Fn(&Call, &Call) -> bool,
) -> Vec<(usize, usize)> {
    let adj: Vec<Vec<usize>> = exps
        .iter()
        .map(|&j| {
            (0..calls.len())
                .filter(|&k| ok(&called[calls[k]], &expected[j]))
                .collect()
        })
        .collect();
    let mut owner: Vec<Option<usize>> = vec![None; calls.len()];
    let mut seen = vec![false; calls.len()];
    for j in 0..exps.len() {
        seen.iter_mut().for_each(|s| *s = false);
        augment(j, &adj, &mut owner, &mut seen);
    }
    owner
        .iter()
        .enumerate()
        .filter_map(|(k, o)| o.map(|j| (calls[k], exps[j])))
        .collect()
}

fn augment(j: usize, adj: &[Vec<usize>], owner: &mut [Option<usize>], seen: &mut [bool]) -> bool {
    for &i in &adj[j] {
        if seen[i] {
            continue;
        }
        seen[i] = true;
        if owner[i].is_none_or(|k| augment(k, adj, owner, seen)) {
            owner[i] = Some(j);
            return true;
        }
    }
    false
}

/// Longest common subsequence length under the `ok` relation.
fn lcs(called: &[Call], expected: &[Call], ok: impl Fn(&Call, &Call) -> bool) -> usize {
    let mut prev = vec![0usize; expected.len() + 1];
    let mut cur = vec![0usize; expected.len() + 1];
    for c in called {
        for (j, e) in expected.iter().enumerate() {
            cur[j + 1] = if ok(c, e) {
                prev[j] + 1
            } else {
                prev[j + 1].max(cur[j])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[expected.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn n(name: &str) -> Call {
        Call::new(name, None)
    }
    fn a(name: &str, args: Value) -> Call {
        Call::new(name, Some(args))
    }
    fn metric() -> NativeMetric {
        NativeMetric::new(NativeConfig::default())
    }

    #[test]
    fn perfect_match_scores_one() {
        let c = metric().components(&[n("a"), n("b")], &[n("a"), n("b")]);
        assert_eq!(
            (c.recall, c.precision, c.f1, c.order, c.exact),
            (1.0, 1.0, 1.0, 1.0, true)
        );
    }

    #[test]
    fn duplicates_count_once_each() {
        // deepeval's bug scores this 0.5; each call pairs with one expectation.
        let c = metric().components(&[n("a"), n("a")], &[n("a"), n("a")]);
        assert_eq!(c.f1, 1.0);
        let c = metric().components(&[n("a")], &[n("a"), n("a")]);
        assert_eq!((c.recall, c.precision), (0.5, 1.0));
        assert_eq!(c.missing, vec![1]);
    }

    #[test]
    fn reordering_keeps_f1_but_not_order_or_exact() {
        let c = metric().components(&[n("b"), n("a")], &[n("a"), n("b")]);
        assert_eq!(c.f1, 1.0);
        assert_eq!(c.order, 0.5);
        assert!(!c.exact);
    }

    #[test]
    fn extras_cost_precision() {
        let c = metric().components(&[n("a"), n("x")], &[n("a")]);
        assert_eq!((c.recall, c.precision), (1.0, 0.5));
        assert_eq!(c.unexpected, vec![1]);
        assert!((c.f1 - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn empty_sides() {
        let m = metric();
        let c = m.components(&[], &[]);
        assert_eq!((c.f1, c.order, c.exact), (1.0, 1.0, true));
        let c = m.components(&[n("a")], &[]);
        assert_eq!((c.recall, c.precision, c.f1), (1.0, 0.0, 0.0));
        let c = m.components(&[], &[n("a")]);
        assert_eq!((c.recall, c.precision, c.f1), (0.0, 1.0, 0.0));
    }

    #[test]
    fn optimal_assignment_beats_first_fit() {
        // First-fit would pair call 0 (x=1,y=2) with expectation 0 ({x:1})
        // and leave expectation 1 ({x:1,y:2}) unmatched.
        let called = [a("f", json!({"x": 1, "y": 2})), a("f", json!({"x": 1}))];
        let expected = [a("f", json!({"x": 1})), a("f", json!({"x": 1, "y": 2}))];
        let c = metric().components(&called, &expected);
        assert_eq!(c.matched.len(), 2);
    }

    #[test]
    fn nested_args_and_number_equality() {
        let called = [a("f", json!({"q": {"n": 1.0, "l": [1, 2]}, "extra": true}))];
        let expected = [a("f", json!({"q": {"l": [1.0, 2], "n": 1}}))];
        assert_eq!(metric().components(&called, &expected).f1, 1.0);
        let exact = NativeMetric::new(NativeConfig {
            args: Some(ArgPolicy::Exact),
            ..Default::default()
        });
        let c = exact.components(&called, &expected);
        assert_eq!(c.f1, 0.0);
        assert_eq!(c.wrong_args, vec![(0, 0)]);
    }

    #[test]
    fn policies() {
        let called = [a("f", json!({"x": 1}))];
        let want = [a("f", json!({"x": 1, "y": 2}))];
        let with = |p| {
            NativeMetric::new(NativeConfig {
                args: Some(p),
                ..Default::default()
            })
            .components(&called, &want)
            .f1
        };
        assert_eq!(with(ArgPolicy::Subset), 0.0);
        assert_eq!(with(ArgPolicy::Superset), 1.0);
        assert_eq!(with(ArgPolicy::Ignore), 1.0);
        assert_eq!(with(ArgPolicy::Fuzzy(0.5)), 1.0);
        assert_eq!(with(ArgPolicy::Fuzzy(0.6)), 0.0);
        assert!("fuzzy:2".parse::<ArgPolicy>().is_err());
        assert_eq!(
            "fuzzy:0.8".parse::<ArgPolicy>().ok(),
            Some(ArgPolicy::Fuzzy(0.8))
        );
    }

    #[test]
    fn names_only_when_expectation_has_no_args() {
        let c = metric().components(&[a("f", json!({"x": 1}))], &[n("f")]);
        assert_eq!(c.f1, 1.0);
    }

    /// `EXACT_LIMIT` identical `f` calls and expectations with arguments,
    /// to push one name over the exact-assignment limit.
    fn padding() -> Vec<Call> {
        (0..EXACT_LIMIT).map(|k| a("f", json!({"k": k}))).collect()
    }

    #[test]
    fn over_the_limit_identical_pairs_first_keeps_the_assignment_maximum() {
        // Under `superset`, a call without arguments matches any `f`: paired
        // first with its identical expectation, it would leave `{x: 1}` with
        // only `{z: 9}`, which it does not contain. The rest stays exact.
        let with = |p| {
            NativeMetric::new(NativeConfig {
                args: Some(p),
                ..Default::default()
            })
        };
        let mut called = padding();
        called.extend([n("f"), a("f", json!({"z": 9}))]);
        let mut expected = padding();
        expected.extend([n("f"), a("f", json!({"x": 1}))]);
        let c = with(ArgPolicy::Superset).components(&called, &expected);
        assert_eq!(c.matched.len(), EXACT_LIMIT + 2);
        assert_eq!(c.note, None);
        // Subset: identical pairs first, then the optimal assignment on the
        // rest finds what first-fit would miss (no pair there is identical).
        let mut called = padding();
        called.extend([
            a("f", json!({"x": 1, "y": 2, "w": 0})),
            a("f", json!({"x": 1})),
        ]);
        let mut expected = vec![a("f", json!({"x": 1})), a("f", json!({"x": 1, "y": 2}))];
        expected.extend(padding());
        let c = with(ArgPolicy::Subset).components(&called, &expected);
        assert_eq!((c.f1, c.note.clone()), (1.0, None));
        assert_eq!(c.matched[..2], [(0, 2), (1, 3)]);
        assert_eq!(
            c.matched[EXACT_LIMIT..],
            [(EXACT_LIMIT, 1), (EXACT_LIMIT + 1, 0)]
        );
    }

    #[test]
    fn over_the_limit_without_identical_pairs_matching_is_greedy_and_noted() {
        // Fuzzy similarity does not chain, so nothing is paired as identical;
        // 501 x 501 is over the limit: paired greedily in order.
        let m = NativeMetric::new(NativeConfig {
            args: Some(ArgPolicy::Fuzzy(0.5)),
            ..Default::default()
        });
        let called: Vec<Call> = (0..=EXACT_LIMIT)
            .map(|k| a("f", json!({"q": format!("ab{k}")})))
            .collect();
        let expected: Vec<Call> = (0..=EXACT_LIMIT)
            .map(|k| a("f", json!({"q": format!("ab{k}")})))
            .collect();
        let out = m.score(&called, &expected);
        assert_eq!(out.score, Some(1.0));
        assert!(
            out.reason
                .contains("; note: 501 calls against 501 expectations of `f` were paired greedily"),
            "{}",
            out.reason
        );
        assert!(out.details.unwrap()["note"].is_string());
        // A name under the limit beside it stays exact and unnoted.
        let c = m.components(&called[..3], &expected[..3]);
        assert_eq!(c.note, None);
    }

    /// An expected call whose arguments may hold matchers.
    fn m(name: &str, args: Value) -> Call {
        Call::expected(name, Some(args), || "args".into()).unwrap()
    }

    fn under(p: ArgPolicy) -> NativeMetric {
        NativeMetric::new(NativeConfig {
            args: Some(p),
            ..Default::default()
        })
    }

    #[test]
    fn matchers_under_each_policy() {
        let want = [m(
            "f",
            json!({"city": {"$regex": "^Par"}, "id": {"$any": true}, "n": {"$approx": 3.1, "$tol": 0.01}}),
        )];
        let f1 = |p, got: Value| under(p).components(&[a("f", got)], &want).f1;
        let same = json!({"city": "Paris", "id": "x-1", "n": 3.105});
        let more = json!({"city": "Paris", "id": 2, "n": 3.1, "extra": true});
        let less = json!({"city": "Paris", "n": 3.1});
        let wrong = json!({"city": "London", "id": 2, "n": 3.1});
        assert_eq!(f1(ArgPolicy::Exact, same.clone()), 1.0);
        assert_eq!(f1(ArgPolicy::Exact, more.clone()), 0.0);
        assert_eq!(f1(ArgPolicy::Subset, more.clone()), 1.0);
        assert_eq!(
            f1(ArgPolicy::Subset, less.clone()),
            0.0,
            "$any wants its key"
        );
        assert_eq!(f1(ArgPolicy::Superset, less.clone()), 1.0);
        assert_eq!(f1(ArgPolicy::Superset, more.clone()), 0.0);
        assert_eq!(f1(ArgPolicy::Ignore, wrong.clone()), 1.0);
        for p in [ArgPolicy::Exact, ArgPolicy::Subset, ArgPolicy::Superset] {
            assert_eq!(f1(p, wrong.clone()), 0.0, "{p:?}");
        }
        // Fuzzy: a key whose matcher holds is identical; 2 of 3 here, 3 of 4
        // with an extra called key.
        assert_eq!(f1(ArgPolicy::Fuzzy(0.66), wrong.clone()), 1.0);
        assert_eq!(f1(ArgPolicy::Fuzzy(0.67), wrong), 0.0);
        assert_eq!(f1(ArgPolicy::Fuzzy(0.75), more.clone()), 1.0);
        assert_eq!(f1(ArgPolicy::Fuzzy(0.76), more), 0.0);
        // Plain values beside matchers keep their edit-distance similarity.
        let want = [m("f", json!({"q": "Paris", "id": {"$type": "string"}}))];
        let c = under(ArgPolicy::Fuzzy(0.9))
            .components(&[a("f", json!({"q": "Pari", "id": "7"}))], &want);
        assert_eq!(c.f1, 1.0);
        // A call without arguments: only superset and ignore take it.
        let none = |p| under(p).components(&[n("f")], &want).f1;
        assert_eq!(none(ArgPolicy::Subset), 0.0);
        assert_eq!(none(ArgPolicy::Superset), 1.0);
    }

    #[test]
    fn wrong_arguments_with_matchers_say_which_value_and_why() {
        let want = [m(
            "get_weather",
            json!({"city": {"$regex": "^Par"}, "units": "metric"}),
        )];
        let called = [a(
            "get_weather",
            json!({"city": "London", "units": "metric"}),
        )];
        let out = metric().score(&called, &want);
        assert!(
            out.reason.ends_with(
                "; wrong arguments for get_weather: city: expected a match of /^Par/, got \"London\""
            ),
            "{}",
            out.reason
        );
        let out = under(ArgPolicy::Exact).score(
            &[a(
                "get_weather",
                json!({"city": "Paris", "units": "si", "x": 1}),
            )],
            &want,
        );
        assert!(
            out.reason.ends_with(
                "wrong arguments for get_weather: units: expected \"metric\", got \"si\"; \
                 x: not expected"
            ),
            "{}",
            out.reason
        );
        // Without matchers, or against a call without arguments: as before.
        let out = metric().score(&[n("get_weather")], &want);
        assert!(
            out.reason.ends_with(
                "wrong arguments for get_weather: expected {\"city\":{\"$regex\":\"^Par\"},\
                 \"units\":\"metric\"}, got no arguments"
            ),
            "{}",
            out.reason
        );
    }

    #[test]
    fn matchers_are_never_paired_as_identical_over_the_limit() {
        // A call whose arguments are the matcher object as written is no
        // twin of the expectation: over the limit it stays unmatched.
        let mut called = padding();
        called.push(a("f", json!({"k": {"$regex": "^x"}})));
        let mut expected = padding();
        expected.push(m("f", json!({"k": {"$regex": "^x"}})));
        let c = metric().components(&called, &expected);
        assert_eq!(c.matched.len(), EXACT_LIMIT);
        assert_eq!(c.wrong_args, vec![(EXACT_LIMIT, EXACT_LIMIT)]);
    }

    #[test]
    fn explanation_names_everything() {
        let m = metric();
        let called = [n("a"), a("b", json!({"x": 2})), n("z")];
        let expected = [n("a"), a("b", json!({"x": 1})), n("c")];
        let out = m.score(&called, &expected);
        assert!(out.reason.contains("missing: c"), "{}", out.reason);
        assert!(out.reason.contains("unexpected: z"), "{}", out.reason);
        assert!(
            out.reason.contains("wrong arguments for b"),
            "{}",
            out.reason
        );
    }
}
