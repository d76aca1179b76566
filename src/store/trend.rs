//! Per case, how its results moved over a window of runs: the history and
//! a status that says whether it is stable, flaky, or just changed.

use std::collections::HashMap;

use serde::Serialize;

use super::CaseInRun;

/// A case's status over the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Passed in the run before the last, fails in the last, and agreed
    /// with the run before in every earlier run.
    Regressed,
    /// Both passes and fails in the window, beyond a single latest change.
    Flaky,
    StableFail,
    /// Failed in the run before the last, passes in the last (its only change).
    Fixed,
    /// Seen first in the last run.
    New,
    StablePass,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Regressed => "regressed",
            Status::Flaky => "flaky",
            Status::StableFail => "stable-fail",
            Status::Fixed => "fixed",
            Status::New => "new",
            Status::StablePass => "stable-pass",
        }
    }
}

/// One case in one run: its pass (every entry of the case passed) and mean
/// headline score (a missing score counts 0, as in baselines).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Point {
    pub pass: bool,
    pub score: Option<f64>,
}

/// A case over the window, oldest run first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseTrend {
    pub case: String,
    pub status: Status,
    /// One entry per run of the window; `None` where the case was absent.
    pub points: Vec<Option<Point>>,
}

impl CaseTrend {
    /// Passes over the runs the case was in.
    pub fn pass_rate(&self) -> Option<f64> {
        let seen: Vec<&Point> = self.points.iter().flatten().collect();
        (!seen.is_empty())
            .then(|| seen.iter().filter(|p| p.pass).count() as f64 / seen.len() as f64)
    }

    /// `✓✓✗·✓`: a mark per run (`·` where the case was absent).
    pub fn history(&self) -> String {
        self.points
            .iter()
            .map(|p| match p {
                Some(Point { pass: true, .. }) => '✓',
                Some(Point { pass: false, .. }) => '✗',
                None => '·',
            })
            .collect()
    }
}

/// A case's entries in one run: all passed, how many, score sum, any score.
type Tally = (bool, usize, f64, bool);

/// The trends of the cases in `results` over `runs` runs (indices
/// `0..runs`, oldest first), in order of concern (regressed, flaky,
/// stable-fail, fixed, new, stable-pass), then by case. `only`, when not
/// empty, keeps those cases.
pub fn trends(runs: usize, results: &[CaseInRun], only: &[String]) -> Vec<CaseTrend> {
    let mut acc: HashMap<&str, Vec<Option<Tally>>> = HashMap::new();
    for r in results {
        if r.run >= runs || (!only.is_empty() && !only.contains(&r.case)) {
            continue;
        }
        let slots = acc.entry(&r.case).or_insert_with(|| vec![None; runs]);
        let s = slots[r.run].get_or_insert((true, 0, 0.0, false));
        s.0 &= r.pass;
        s.1 += 1;
        s.2 += r.score.unwrap_or(0.0);
        s.3 |= r.score.is_some();
    }
    let mut out: Vec<CaseTrend> = acc
        .into_iter()
        .map(|(case, slots)| {
            let points: Vec<Option<Point>> = slots
                .into_iter()
                .map(|s| {
                    s.map(|(pass, n, sum, any)| Point {
                        pass,
                        score: any.then(|| sum / n as f64),
                    })
                })
                .collect();
            CaseTrend {
                case: case.to_string(),
                status: status(&points),
                points,
            }
        })
        .collect();
    out.sort_by(|a, b| a.status.cmp(&b.status).then_with(|| a.case.cmp(&b.case)));
    out
}

/// The status of a case from its points (oldest first).
pub fn status(points: &[Option<Point>]) -> Status {
    let seen: Vec<bool> = points.iter().flatten().map(|p| p.pass).collect();
    let last_run = points.len().saturating_sub(1);
    let first_seen = points.iter().position(Option::is_some);
    if points.len() > 1 && first_seen == Some(last_run) {
        return Status::New;
    }
    let flips = seen.windows(2).filter(|w| w[0] != w[1]).count();
    let in_last = points.last().is_some_and(Option::is_some);
    match (flips, seen.last()) {
        (0, Some(true)) => Status::StablePass,
        (0, _) => Status::StableFail,
        (1, Some(&now)) if in_last && seen[seen.len() - 2] != now => {
            if now {
                Status::Fixed
            } else {
                Status::Regressed
            }
        }
        _ => Status::Flaky,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(marks: &str) -> Vec<Option<Point>> {
        marks
            .chars()
            .map(|c| match c {
                '+' => Some(Point {
                    pass: true,
                    score: Some(1.0),
                }),
                '-' => Some(Point {
                    pass: false,
                    score: Some(0.0),
                }),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn statuses_follow_the_history() {
        let cases = [
            ("+++", Status::StablePass),
            ("---", Status::StableFail),
            ("++-", Status::Regressed),
            ("--+", Status::Fixed),
            ("+-+", Status::Flaky),
            ("+-+-", Status::Flaky),
            ("-++", Status::Flaky),
            ("..+", Status::New),
            ("..-", Status::New),
            ("+", Status::StablePass),
            ("+.-", Status::Regressed),
            ("++.", Status::StablePass),
            ("+-.", Status::Flaky),
        ];
        for (marks, want) in cases {
            assert_eq!(status(&pts(marks)), want, "{marks}");
        }
    }

    #[test]
    fn a_case_passes_a_run_when_every_entry_passed() {
        let r = |run, case: &str, pass, score| CaseInRun {
            run,
            case: case.into(),
            pass,
            score,
        };
        let results = [
            r(0, "a", true, Some(1.0)),
            r(0, "a", false, Some(0.5)),
            r(1, "a", true, Some(1.0)),
            r(1, "b", true, None),
        ];
        let t = trends(2, &results, &[]);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].case, "a");
        assert_eq!(t[0].status, Status::Fixed);
        assert_eq!(t[0].history(), "✗✓");
        assert_eq!(t[0].points[0].unwrap().score, Some(0.75));
        assert_eq!(t[0].pass_rate(), Some(0.5));
        assert_eq!((t[1].status, t[1].history()), (Status::New, "·✓".into()));
        assert_eq!(t[1].points[1].unwrap().score, None);
        assert_eq!(trends(2, &results, &["b".into()]).len(), 1);
    }
}
