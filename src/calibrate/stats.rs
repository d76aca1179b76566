//! Agreement statistics between a metric's verdicts and human labels, and
//! between raters: pure functions over pass/fail pairs. Checked against
//! scikit-learn and statsmodels (tests/data/calibration/, made by
//! scripts/calibration-oracle.py).

use serde::Serialize;

/// The normal quantile of a two-sided 95% interval (statsmodels'
/// `norm.ppf(0.975)`).
pub const Z95: f64 = 1.959_963_984_540_054;

/// A 2x2 table of two pass/fail raters: the metric (first) against the
/// human (second).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Confusion {
    pub both_pass: usize,
    pub metric_pass_human_fail: usize,
    pub metric_fail_human_pass: usize,
    pub both_fail: usize,
}

impl Confusion {
    /// The table of `(metric, human)` pass/fail pairs.
    pub fn of(pairs: impl IntoIterator<Item = (bool, bool)>) -> Confusion {
        let mut c = Confusion::default();
        for pair in pairs {
            c.add(pair);
        }
        c
    }

    pub fn add(&mut self, (metric, human): (bool, bool)) {
        match (metric, human) {
            (true, true) => self.both_pass += 1,
            (true, false) => self.metric_pass_human_fail += 1,
            (false, true) => self.metric_fail_human_pass += 1,
            (false, false) => self.both_fail += 1,
        }
    }

    pub fn n(&self) -> usize {
        self.both_pass + self.metric_pass_human_fail + self.metric_fail_human_pass + self.both_fail
    }

    /// Labels the human passed, and failed.
    pub fn human_passes(&self) -> usize {
        self.both_pass + self.metric_fail_human_pass
    }

    pub fn human_fails(&self) -> usize {
        self.both_fail + self.metric_pass_human_fail
    }

    /// Share of pairs that agree; `None` with no pair.
    pub fn accuracy(&self) -> Option<f64> {
        ratio(self.both_pass + self.both_fail, self.n())
    }

    /// Share of the human's passes the metric also passed (its true
    /// positive rate, a pass being the positive class).
    pub fn pass_agreement(&self) -> Option<f64> {
        ratio(self.both_pass, self.human_passes())
    }

    /// Share of the human's failures the metric also failed.
    pub fn fail_agreement(&self) -> Option<f64> {
        ratio(self.both_fail, self.human_fails())
    }

    /// Cohen's kappa: agreement beyond what the two raters' own pass rates
    /// give by chance, `(po - pe) / (1 - pe)`.
    ///
    /// Undefined (`None`) when chance agreement is already 1, which happens
    /// exactly when both raters gave every pair the same single class (or
    /// there is no pair): nothing is left to agree beyond chance.
    /// scikit-learn's `cohen_kappa_score` returns NaN there; reports print
    /// `null` (JSONL) or `-` (tables), and the gate counts it as short of
    /// any `--min-kappa`.
    pub fn kappa(&self) -> Option<f64> {
        let n = self.n() as f64;
        if self.n() == 0 {
            return None;
        }
        let metric_pass = (self.both_pass + self.metric_pass_human_fail) as f64 / n;
        let human_pass = self.human_passes() as f64 / n;
        let po = (self.both_pass + self.both_fail) as f64 / n;
        let pe = metric_pass * human_pass + (1.0 - metric_pass) * (1.0 - human_pass);
        // pe is 1 only when both marginals are 0 or both are 1: one class
        // for both raters. Compared with counts, not floats.
        let one_class = (self.both_pass == self.n()) || (self.both_fail == self.n());
        if one_class {
            return None;
        }
        Some((po - pe) / (1.0 - pe))
    }
}

fn ratio(k: usize, n: usize) -> Option<f64> {
    (n > 0).then(|| k as f64 / n as f64)
}

/// A proportion with its 95% Wilson score interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

/// The 95% Wilson score interval of `k` successes in `n` trials; `None`
/// when `n` is 0 (no trial, no interval).
pub fn wilson(k: usize, n: usize) -> Option<Interval> {
    if n == 0 || k > n {
        return None;
    }
    let (lo, hi) = wilson_bounds(k as f64 / n as f64, n as f64, Z95);
    Some(Interval {
        value: k as f64 / n as f64,
        low: lo,
        high: hi,
    })
}

/// The Wilson bounds for an observed proportion `p` of `n` trials.
fn wilson_bounds(p: f64, n: f64, z: f64) -> (f64, f64) {
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = z / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((center - half).max(0.0), (center + half).min(1.0))
}

/// How many trials give a 95% Wilson interval no wider than `width` for an
/// observed proportion `p` (the width shrinks as trials grow, so the
/// smallest such count is found by bisection). `None` when `width` is not
/// in (0, 1] or more than `MAX_NEEDED` trials would be needed.
pub fn trials_for_width(p: f64, width: f64) -> Option<usize> {
    if !(width > 0.0 && width <= 1.0 && (0.0..=1.0).contains(&p)) {
        return None;
    }
    let wide = |n: usize| {
        let (lo, hi) = wilson_bounds(p, n as f64, Z95);
        hi - lo > width
    };
    if wide(MAX_NEEDED) {
        return None;
    }
    let (mut lo, mut hi) = (1usize, MAX_NEEDED);
    if !wide(lo) {
        return Some(lo);
    }
    // wide(lo) and !wide(hi) hold throughout.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if wide(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(hi)
}

/// A plan no labelling effort reaches is not a plan.
pub const MAX_NEEDED: usize = 10_000_000;

/// The threshold whose verdicts (`score >= threshold`) agree best with
/// the human labels: highest kappa; among equal kappas, the one nearest
/// `current` (the current one itself when it is among the best). The
/// candidates are `current` and every distinct score. `None` with no pair,
/// or when kappa is undefined at every candidate.
pub fn best_threshold(pairs: &[(f64, bool)], current: f64) -> Option<(f64, Confusion)> {
    let mut candidates: Vec<f64> = pairs
        .iter()
        .map(|p| p.0)
        .filter(|s| s.is_finite())
        .collect();
    candidates.push(current);
    candidates.sort_by(f64::total_cmp);
    candidates.dedup();
    let mut best: Option<(f64, f64, Confusion)> = None;
    for t in candidates {
        let c = Confusion::of(pairs.iter().map(|&(s, h)| (s >= t, h)));
        let Some(k) = c.kappa() else { continue };
        let better = match best {
            None => true,
            Some((bt, bk, _)) => {
                k > bk + KAPPA_TIE
                    || (k >= bk - KAPPA_TIE && (t - current).abs() < (bt - current).abs())
            }
        };
        if better {
            best = Some((t, k, c));
        }
    }
    best.map(|(t, _, c)| (t, c))
}

/// Kappas this close are equal (sums of the same few ratios, computed in
/// different orders).
const KAPPA_TIE: f64 = 1e-12;

/// The label most raters gave; `None` on a tie (as many passes as
/// failures) or with no label.
pub fn majority(labels: &[bool]) -> Option<bool> {
    let passes = labels.iter().filter(|&&l| l).count();
    let fails = labels.len() - passes;
    match passes.cmp(&fails) {
        std::cmp::Ordering::Greater => Some(true),
        std::cmp::Ordering::Less => Some(false),
        std::cmp::Ordering::Equal => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eighteen_of_twenty() {
        // 10 human passes (9 agreed), 10 human failures (9 agreed).
        let c = Confusion {
            both_pass: 9,
            metric_pass_human_fail: 1,
            metric_fail_human_pass: 1,
            both_fail: 9,
        };
        assert_eq!(c.accuracy(), Some(0.9));
        // po 0.9, pe 0.5: (0.9 - 0.5) / 0.5.
        assert!((c.kappa().unwrap() - 0.8).abs() < 1e-12);
        assert_eq!(c.pass_agreement(), Some(0.9));
    }

    #[test]
    fn one_class_has_no_kappa() {
        assert_eq!(Confusion::of([(true, true); 5]).kappa(), None);
        assert_eq!(Confusion::default().kappa(), None);
        // One rater constant, the other not: kappa 0, defined.
        let c = Confusion::of([(true, true), (true, false)]);
        assert_eq!(c.kappa(), Some(0.0));
    }

    #[test]
    fn width_plan_meets_the_width() {
        for p in [0.0, 0.3, 0.5, 0.9, 1.0] {
            let n = trials_for_width(p, 0.2).unwrap();
            let (lo, hi) = wilson_bounds(p, n as f64, Z95);
            assert!(hi - lo <= 0.2);
            let (lo, hi) = wilson_bounds(p, (n - 1) as f64, Z95);
            assert!(hi - lo > 0.2, "{p} {n}");
        }
        assert_eq!(trials_for_width(0.5, 0.0), None);
    }

    #[test]
    fn best_threshold_prefers_the_current_on_ties() {
        // Scores perfectly split at 0.6: any threshold in (0.4, 0.8] agrees.
        let pairs = [(0.2, false), (0.4, false), (0.8, true), (1.0, true)];
        assert_eq!(best_threshold(&pairs, 0.5).unwrap().0, 0.5);
        assert_eq!(best_threshold(&pairs, 0.9).unwrap().0, 0.8);
        assert_eq!(best_threshold(&pairs, 0.1).unwrap().0, 0.8);
    }

    #[test]
    fn majority_leaves_ties_out() {
        assert_eq!(majority(&[true, true, false]), Some(true));
        assert_eq!(majority(&[true, false]), None);
        assert_eq!(majority(&[]), None);
    }
}
