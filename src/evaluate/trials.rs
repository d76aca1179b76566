//! Repeated trials: a case that joins several traces (the scenario ran k
//! times) is judged as a whole, from its trials' verdicts.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use super::{Evaluation, Verdict};

/// What a case of several trials needs to pass (`--trials-pass`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum TrialsPass {
    /// Every trial passed: a gate should not pass a case that failed one
    /// trial in three.
    #[default]
    All,
    /// At least one trial passed.
    Any,
    /// At least this share of the trials passed (0..=1).
    Rate(f64),
}

impl FromStr for TrialsPass {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "all" => Ok(Self::All),
            "any" => Ok(Self::Any),
            _ => {
                let r = s
                    .strip_prefix("rate:")
                    .ok_or_else(|| format!("`{s}`: expected all, any or rate:R"))?;
                let r: f64 = r
                    .parse()
                    .map_err(|_| format!("`{s}`: the rate `{r}` is not a number"))?;
                if (0.0..=1.0).contains(&r) {
                    Ok(Self::Rate(r))
                } else {
                    Err(format!("`{s}`: the rate {r} is outside 0..=1"))
                }
            }
        }
    }
}

impl fmt::Display for TrialsPass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::All => f.write_str("all"),
            Self::Any => f.write_str("any"),
            Self::Rate(r) => write!(f, "rate:{r}"),
        }
    }
}

/// How a case's trials went, whatever `--trials-pass` asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stability {
    StablePass,
    Flaky,
    StableFail,
}

impl Stability {
    pub fn code(self) -> &'static str {
        match self {
            Self::StablePass => "stable-pass",
            Self::Flaky => "flaky",
            Self::StableFail => "stable-fail",
        }
    }
}

/// A case of more than one trial, summed up.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseTrials {
    pub case_id: String,
    /// The case's index in the run's case list.
    pub case_index: usize,
    /// Its evaluations (one per trace), in report order.
    pub evaluations: Vec<usize>,
    pub trials: usize,
    pub passes: usize,
    /// Trials that were neither a pass nor a failure (judge error, dry run).
    pub not_evaluated: usize,
    /// At least one of the k trials passed.
    pub pass_at_k: bool,
    /// All k trials passed.
    pub pass_all_k: bool,
    pub verdict: Stability,
    /// The case's pass under `--trials-pass`.
    pub pass: bool,
}

impl CaseTrials {
    pub fn pass_rate(&self) -> f64 {
        self.passes as f64 / self.trials as f64
    }
}

/// The cases of `evaluations` that joined more than one trace, in case
/// order. A session is one trial (its traces are one conversation), and so
/// is each trace scored by serve's default case.
pub fn case_trials(evaluations: &[Evaluation], rule: TrialsPass) -> Vec<CaseTrials> {
    let mut by_case: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, e) in evaluations.iter().enumerate() {
        if e.joined_by != "default" {
            by_case.entry(e.case_index).or_default().push(i);
        }
    }
    by_case
        .into_iter()
        .filter(|(_, ix)| ix.len() > 1)
        .map(|(case_index, ix)| {
            let verdicts: Vec<Verdict> = ix.iter().map(|&i| evaluations[i].verdict()).collect();
            let trials = verdicts.len();
            let passes = verdicts.iter().filter(|v| **v == Verdict::Pass).count();
            let fails = verdicts.iter().filter(|v| **v == Verdict::Fail).count();
            let verdict = if passes == trials {
                Stability::StablePass
            } else if passes == 0 {
                Stability::StableFail
            } else {
                Stability::Flaky
            };
            let pass = match rule {
                TrialsPass::All => passes == trials,
                TrialsPass::Any => passes > 0,
                // A share given in decimal (rate:0.6) meets 3 of 5 despite rounding.
                TrialsPass::Rate(r) => passes as f64 / trials as f64 >= r - 1e-9,
            };
            CaseTrials {
                case_id: evaluations[ix[0]].case_id.clone(),
                case_index,
                trials,
                passes,
                not_evaluated: trials - passes - fails,
                pass_at_k: passes > 0,
                pass_all_k: passes == trials,
                verdict,
                pass,
                evaluations: ix,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_and_bad_ones_say_why() {
        assert_eq!("all".parse(), Ok(TrialsPass::All));
        assert_eq!("any".parse(), Ok(TrialsPass::Any));
        assert_eq!("rate:0.6".parse(), Ok(TrialsPass::Rate(0.6)));
        let e = "rate:1.5".parse::<TrialsPass>().unwrap_err();
        assert!(e.contains("outside 0..=1"), "{e}");
        let e = "most".parse::<TrialsPass>().unwrap_err();
        assert!(e.contains("all, any or rate:R"), "{e}");
        let e = "rate:x".parse::<TrialsPass>().unwrap_err();
        assert!(e.contains("not a number"), "{e}");
    }
}
