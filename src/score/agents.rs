//! `agents`: per-agent expectations in a multi-agent trace. Each agent named
//! in the case's `agents` is scored on its own calls (those whose nearest
//! enclosing agent run has that name) with `tool_correctness`, against its
//! own threshold (default 0.5).
//!
//! Score: the mean of the agents' scores; it passes when every named agent
//! ran and passed. An agent that never ran scores 0 and fails, by name. Agents
//! that ran but are not named are listed, not judged.

use serde_json::{json, Map, Value};

use super::native::{NativeConfig, NativeMetric};
use super::{Metric, MetricInput, Needs, Outcome};
use crate::expect::Call;

pub const NAME: &str = "agents";

pub struct Agents {
    native: NativeConfig,
}

impl Agents {
    /// `native`: the run's `tool_correctness` settings (argument policy,
    /// headline score); thresholds come from each agent's expectation.
    pub fn new(native: &NativeConfig) -> Self {
        Agents {
            native: native.clone(),
        }
    }
}

impl Metric for Agents {
    fn name(&self) -> &str {
        NAME
    }

    fn threshold(&self) -> Option<f64> {
        None
    }

    /// Without a case there are no agents to judge.
    fn score(&self, _called: &[Call], _expected: &[Call]) -> Outcome {
        Outcome::scored(1.0, Some(true), "no agents named")
    }

    fn evaluate(&self, input: &MetricInput<'_>) -> Outcome {
        let want = input.case.agents();
        if want.is_empty() {
            return Outcome::scored(1.0, Some(true), "no agents named");
        }
        // Agents that ran: agent runs found, and agents of calls (a run is
        // known from its calls even without the runs list).
        let mut ran: Vec<&str> = input
            .facts
            .map(|f| f.runs.iter().map(|(_, n)| n.as_str()).collect())
            .unwrap_or_default();
        ran.extend(
            input
                .calls
                .iter()
                .filter_map(|c| c.agent.as_ref().map(|a| a.name.as_str())),
        );
        let mut parts = Vec::new();
        let mut details = Map::new();
        let mut total = 0.0;
        let mut all_pass = true;
        for a in want {
            if !ran.contains(&a.name.as_str()) {
                all_pass = false;
                parts.push(format!("{}: never ran", a.name));
                details.insert(
                    a.name.clone(),
                    json!({"ran": false, "score": 0.0, "pass": false, "calls": 0}),
                );
                continue;
            }
            let mine: Vec<Call> = input
                .calls
                .iter()
                .zip(input.called)
                .filter(|(c, _)| c.agent.as_ref().is_some_and(|x| x.name == a.name))
                .map(|(_, called)| called.clone())
                .collect();
            let mut config = self.native.clone();
            if let Some(t) = a.threshold {
                config.threshold = t;
            }
            let o = NativeMetric::new(config).score(&mine, &a.expected);
            let score = o.score.unwrap_or(0.0);
            let pass = o.pass.unwrap_or(false);
            all_pass &= pass;
            total += score;
            parts.push(format!(
                "{}: {score:.3} {} ({})",
                a.name,
                if pass { "pass" } else { "FAIL" },
                o.reason
            ));
            details.insert(
                a.name.clone(),
                json!({"ran": true, "score": score, "pass": pass, "calls": mine.len()}),
            );
        }
        let mut unnamed: Vec<&str> = ran
            .iter()
            .copied()
            .filter(|r| !want.iter().any(|a| a.name == *r))
            .collect();
        unnamed.sort_unstable();
        unnamed.dedup();
        if !unnamed.is_empty() {
            parts.push(format!("also ran (not named): {}", unnamed.join(", ")));
        }
        let score = total / want.len() as f64;
        let mut out = Outcome::scored(score, Some(all_pass), parts.join("; "));
        out.details = Some(json!({
            "agents": Value::Object(details),
            "unnamed_agents": unnamed,
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
