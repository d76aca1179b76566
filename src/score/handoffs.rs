//! `handoffs`: the order agents ran in, against the case's `handoffs` list.
//!
//! The observed order is the agent runs by start time, a run of the same
//! agent right after itself counted once (frameworks nest spans of one
//! agent). Score: the longest common subsequence of expected and observed
//! over the expected count, the share of the expected order that was
//! followed, so the reason's "k/n in order" is the score's k/n. It passes
//! when the expected agents all ran in that order (LCS = expected). Agents
//! that ran beyond the expected order (a framework's root agent, say) do not
//! lower the score: they are named in the reason (`also ran`), and `exact`
//! says whether the two sequences are equal.

use serde_json::json;

use super::{Metric, MetricInput, Needs, Outcome};
use crate::expect::Call;

pub const NAME: &str = "handoffs";

pub struct Handoffs;

fn lcs(a: &[&str], b: &[&str]) -> usize {
    let mut prev = vec![0usize; b.len() + 1];
    for x in a {
        let mut cur = vec![0usize; b.len() + 1];
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = if x == y {
                prev[j] + 1
            } else {
                prev[j + 1].max(cur[j])
            };
        }
        prev = cur;
    }
    prev[b.len()]
}

impl Metric for Handoffs {
    fn name(&self) -> &str {
        NAME
    }

    fn threshold(&self) -> Option<f64> {
        None
    }

    fn score(&self, _called: &[Call], _expected: &[Call]) -> Outcome {
        Outcome::scored(1.0, Some(true), "no handoffs expected")
    }

    fn evaluate(&self, input: &MetricInput<'_>) -> Outcome {
        let Some(want) = input.case.handoffs() else {
            return Outcome::scored(1.0, Some(true), "no handoffs expected");
        };
        let want: Vec<&str> = want.iter().map(String::as_str).collect();
        let mut seen: Vec<&str> = Vec::new();
        for (_, name) in input.facts.map(|f| f.runs.as_slice()).unwrap_or_default() {
            if seen.last() != Some(&name.as_str()) {
                seen.push(name);
            }
        }
        let common = lcs(&want, &seen);
        let score = if want.is_empty() {
            1.0
        } else {
            common as f64 / want.len() as f64
        };
        let exact = want == seen;
        let pass = common == want.len();
        let missing: Vec<&str> = want.iter().copied().filter(|w| !seen.contains(w)).collect();
        let mut reason = format!(
            "expected {}; ran {}; {common}/{} in order{}",
            want.join(" -> "),
            if seen.is_empty() {
                "no agents".to_string()
            } else {
                seen.join(" -> ")
            },
            want.len(),
            if exact { ", exact" } else { "" }
        );
        if !missing.is_empty() {
            reason.push_str(&format!("; never ran: {}", missing.join(", ")));
        }
        let mut extra: Vec<&str> = seen.iter().copied().filter(|s| !want.contains(s)).collect();
        extra.dedup();
        if !extra.is_empty() {
            reason.push_str(&format!("; also ran: {}", extra.join(", ")));
        }
        let mut out = Outcome::scored(score, Some(pass), reason);
        out.details = Some(json!({
            "lcs": common,
            "exact": exact,
            "ran": seen,
        }));
        out
    }

    fn needs(&self) -> Needs {
        Needs {
            trace_facts: true,
            ..Needs::default()
        }
    }
}
