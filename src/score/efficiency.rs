//! `tool_efficiency`: how much of a trace's tool use was wasted, from the
//! calls alone (no expectations needed).
//!
//! Findings, each named in the explanation (docs/scoring.md):
//! - redundant: a call with the same name and arguments as an earlier call
//!   that succeeded, with no call to another tool in between. A call to
//!   another tool is the simple stand-in for "the state may have changed";
//!   calls to the same tool with other arguments (two cities) are reads.
//! - loop: a cycle of two or more calls (same names and arguments) repeated
//!   back to back, e.g. A B A B A B; every call after the first cycle is
//!   wasted.
//! - retry: a call to a tool whose previous call failed (a recovery, not
//!   waste in itself: the failure already counts).
//! - error: a call that failed.
//!
//! Score: 1 - wasted / calls, where a call is wasted when it is redundant,
//! repeats a loop's cycle, or failed (each call counted once). No calls
//! score 1.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::{Metric, MetricInput, Outcome};
use crate::expect::Call;
use crate::extract::{CallStatus, ToolCall};

pub const NAME: &str = "tool_efficiency";
const DEFAULT_THRESHOLD: f64 = 0.5;
/// Longest loop cycle looked for; longer repeats are rare and costly to find.
const MAX_PERIOD: usize = 8;
/// Findings named in the explanation; the rest are counted.
const MAX_NAMED: usize = 5;

pub struct Efficiency {
    threshold: f64,
}

impl Efficiency {
    pub fn new(threshold: Option<f64>) -> Self {
        Efficiency {
            threshold: threshold.unwrap_or(DEFAULT_THRESHOLD),
        }
    }
}

/// A back-to-back repeat of a cycle of calls.
#[derive(Debug, Clone, PartialEq)]
pub struct Loop {
    /// Index of the first call of the first cycle.
    pub start: usize,
    /// Calls per cycle.
    pub period: usize,
    /// How many times the cycle ran (at least 2).
    pub cycles: usize,
}

/// What `tool_efficiency` found in one list of calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Findings {
    /// (index, index of the earlier identical call).
    pub redundant: Vec<(usize, usize)>,
    pub loops: Vec<Loop>,
    /// (index, index of the failed call it follows).
    pub retries: Vec<(usize, usize)>,
    pub errors: Vec<usize>,
    /// Calls counted as wasted (each once).
    pub wasted: usize,
}

fn failed(c: &ToolCall) -> bool {
    c.status == CallStatus::Error
}

/// Finds redundant calls, loops, retries and errors. `called` are the calls
/// as compared (names normalized when enabled), `calls` the same calls as
/// extracted (statuses).
pub fn find(called: &[Call], calls: &[ToolCall]) -> Findings {
    let n = called.len();
    let status_failed = |i: usize| calls.get(i).is_some_and(failed);
    let mut f = Findings::default();
    let mut wasted = vec![false; n];
    // Linear in the calls (a trace may hold thousands): the last call of
    // each tool, and the calls of the current run of one tool by arguments.
    let mut last_of: HashMap<&str, usize> = HashMap::new();
    let mut run: HashMap<String, usize> = HashMap::new();
    for i in 0..n {
        if status_failed(i) {
            f.errors.push(i);
            wasted[i] = true;
        }
        let name = called[i].name.as_str();
        if i > 0 && called[i - 1].name != name {
            run.clear();
        }
        let key = called[i]
            .args
            .as_ref()
            .map_or_else(String::new, |a| format!("={a}"));
        if let Some(&j) = run.get(&key) {
            if !status_failed(j) {
                f.redundant.push((i, j));
                wasted[i] = true;
            }
        }
        run.insert(key, i);
        if let Some(&j) = last_of.get(name) {
            if status_failed(j) {
                f.retries.push((i, j));
            }
        }
        last_of.insert(name, i);
    }
    let mut i = 0;
    while i < n {
        let found = (2..=MAX_PERIOD.min((n - i) / 2)).find_map(|p| {
            let cycle = &called[i..i + p];
            // A cycle of one call repeated is a redundant run, not a loop.
            if cycle.iter().all(|c| *c == cycle[0]) {
                return None;
            }
            let mut cycles = 1;
            while i + (cycles + 1) * p <= n
                && called[i + cycles * p..i + (cycles + 1) * p] == *cycle
            {
                cycles += 1;
            }
            (cycles >= 2).then_some(Loop {
                start: i,
                period: p,
                cycles,
            })
        });
        match found {
            Some(l) => {
                for w in &mut wasted[l.start + l.period..l.start + l.period * l.cycles] {
                    *w = true;
                }
                i = l.start + l.period * l.cycles;
                f.loops.push(l);
            }
            None => i += 1,
        }
    }
    f.wasted = wasted.iter().filter(|w| **w).count();
    f
}

/// `name {args}` for the explanation.
fn label(c: &Call) -> String {
    match &c.args {
        Some(a) => format!("{} {}", c.name, a),
        None => c.name.clone(),
    }
}

/// "a, b, c and 2 more".
fn named(items: Vec<String>) -> String {
    let more = items.len().saturating_sub(MAX_NAMED);
    let mut out = items
        .into_iter()
        .take(MAX_NAMED)
        .collect::<Vec<_>>()
        .join("; ");
    if more > 0 {
        out.push_str(&format!("; and {more} more"));
    }
    out
}

impl Metric for Efficiency {
    fn name(&self) -> &str {
        NAME
    }

    fn threshold(&self) -> Option<f64> {
        Some(self.threshold)
    }

    /// Without statuses every call counts as successful.
    fn score(&self, called: &[Call], _expected: &[Call]) -> Outcome {
        self.outcome(called, &[])
    }

    fn evaluate(&self, input: &MetricInput<'_>) -> Outcome {
        self.outcome(input.called, input.calls)
    }
}

impl Efficiency {
    fn outcome(&self, called: &[Call], calls: &[ToolCall]) -> Outcome {
        let f = find(called, calls);
        let n = called.len();
        let score = if n == 0 {
            1.0
        } else {
            1.0 - f.wasted as f64 / n as f64
        };
        let mut parts = Vec::new();
        if !f.redundant.is_empty() {
            parts.push(format!(
                "{} redundant: {}",
                f.redundant.len(),
                named(
                    f.redundant
                        .iter()
                        .map(|&(i, j)| format!(
                            "#{} {} repeats #{}",
                            i + 1,
                            label(&called[i]),
                            j + 1
                        ))
                        .collect()
                )
            ));
        }
        if !f.loops.is_empty() {
            parts.push(format!(
                "{} loop(s): {}",
                f.loops.len(),
                named(
                    f.loops
                        .iter()
                        .map(|l| format!(
                            "{} x{} from #{}",
                            called[l.start..l.start + l.period]
                                .iter()
                                .map(|c| c.name.as_str())
                                .collect::<Vec<_>>()
                                .join(" -> "),
                            l.cycles,
                            l.start + 1
                        ))
                        .collect()
                )
            ));
        }
        if !f.retries.is_empty() {
            parts.push(format!(
                "{} retr{}: {}",
                f.retries.len(),
                if f.retries.len() == 1 { "y" } else { "ies" },
                named(
                    f.retries
                        .iter()
                        .map(|&(i, j)| format!(
                            "#{} {} after #{} failed",
                            i + 1,
                            called[i].name,
                            j + 1
                        ))
                        .collect()
                )
            ));
        }
        if !f.errors.is_empty() {
            parts.push(format!(
                "error rate {}/{}: {}",
                f.errors.len(),
                n,
                named(
                    f.errors
                        .iter()
                        .map(|&i| {
                            let msg = calls.get(i).and_then(|c| c.error_message.as_deref());
                            match msg {
                                Some(m) => format!("#{} {} ({})", i + 1, called[i].name, m),
                                None => format!("#{} {}", i + 1, called[i].name),
                            }
                        })
                        .collect()
                )
            ));
        }
        let reason = if n == 0 {
            "no tool calls".to_string()
        } else if parts.is_empty() {
            format!("{n} call(s), none redundant, looping, retried or failed")
        } else {
            format!("{} of {n} call(s) wasted; {}", f.wasted, parts.join("; "))
        };
        let error_rate = if n == 0 {
            0.0
        } else {
            f.errors.len() as f64 / n as f64
        };
        let details: Value = json!({
            "calls": n,
            "wasted": f.wasted,
            "redundant": f.redundant.len(),
            "loops": f.loops.len(),
            "retries": f.retries.len(),
            "errors": f.errors.len(),
            "error_rate": error_rate,
        });
        let mut out = Outcome::scored(score, Some(score >= self.threshold), reason);
        out.details = Some(details);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn c(name: &str, arg: i64) -> Call {
        Call::new(name, Some(json!({ "x": arg })))
    }

    #[test]
    fn redundant_only_without_another_tool_between() {
        let called = vec![c("a", 1), c("a", 2), c("a", 1), c("b", 0), c("a", 1)];
        let f = find(&called, &[]);
        assert_eq!(f.redundant, vec![(2, 0)]);
        assert!(f.loops.is_empty());
        assert_eq!(f.wasted, 1);
    }

    #[test]
    fn loops_of_two_and_three() {
        let called = vec![
            c("a", 1),
            c("b", 1),
            c("a", 1),
            c("b", 1),
            c("a", 1),
            c("b", 1),
            c("z", 0),
            c("p", 0),
            c("q", 0),
            c("r", 0),
            c("p", 0),
            c("q", 0),
            c("r", 0),
        ];
        let f = find(&called, &[]);
        assert_eq!(
            f.loops,
            vec![
                Loop {
                    start: 0,
                    period: 2,
                    cycles: 3
                },
                Loop {
                    start: 7,
                    period: 3,
                    cycles: 2
                }
            ]
        );
        assert_eq!(f.wasted, 4 + 3);
        let o = Efficiency::new(None).score(&called, &[]);
        assert!(o.reason.contains("a -> b x3 from #1"), "{}", o.reason);
        assert!((o.score.unwrap() - (1.0 - 7.0 / 13.0)).abs() < 1e-9);
    }

    #[test]
    fn no_calls_scores_one() {
        let o = Efficiency::new(None).score(&[], &[]);
        assert_eq!((o.score, o.pass), (Some(1.0), Some(true)));
    }
}
