//! Calibration: how often a metric's verdict agrees with people's. Human
//! labels (`labels`) are joined to a run's evaluations by case id (and trace
//! id when a label gives one), and per metric the agreement is measured
//! (`stats`): accuracy, Cohen's kappa, agreement on the human passes and on
//! the human failures with 95% Wilson intervals, the confusion matrix, the
//! disagreements, the threshold that would agree best, and with several
//! raters their agreement with each other. [`gate`] turns the figures into
//! an exit code for CI. The terminal session that collects labels
//! (`toolscore label`) is a driver: `run::label`.

pub mod labels;
pub mod stats;

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::evaluate::{Evaluation, Verdict};
use labels::Label;
use stats::{Confusion, Interval};

/// Why a label (or a labelled evaluation) is left out of a metric's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// No evaluation of the label's case (and trace).
    NoEvaluation,
    /// The case was evaluated on several traces and the label names none.
    AmbiguousTrace,
    /// The label names a metric this run did not compute.
    MetricNotRun,
    /// The case has its own metrics, without this one.
    NotScored,
    /// The judge gave no verdict for this evaluation.
    JudgeError,
    /// A dry run: the judge was not asked.
    NotJudged,
    /// As many raters passed the evaluation as failed it.
    RaterTie,
}

impl Reason {
    pub fn code(self) -> &'static str {
        match self {
            Reason::NoEvaluation => "no_evaluation",
            Reason::AmbiguousTrace => "ambiguous_trace",
            Reason::MetricNotRun => "metric_not_run",
            Reason::NotScored => "not_scored",
            Reason::JudgeError => "judge_error",
            Reason::NotJudged => "not_judged",
            Reason::RaterTie => "rater_tie",
        }
    }

    /// Whether it concerns a label that joins no evaluation at all (else a
    /// labelled evaluation left out of one metric).
    pub fn joins_nothing(self) -> bool {
        matches!(
            self,
            Reason::NoEvaluation | Reason::AmbiguousTrace | Reason::MetricNotRun
        )
    }

    /// As people read it.
    pub fn describe(self) -> &'static str {
        match self {
            Reason::NoEvaluation => "no evaluation of this case (and trace) in the run",
            Reason::AmbiguousTrace => "the case was evaluated on several traces: give trace_id",
            Reason::MetricNotRun => "the run did not compute this metric (add it with -m)",
            Reason::NotScored => "the case's own metrics leave this one out",
            Reason::JudgeError => "the judge gave no verdict",
            Reason::NotJudged => "not judged (dry run)",
            Reason::RaterTie => "the raters are split evenly",
        }
    }
}

/// A label, or a labelled evaluation, left out, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct LeftOut {
    pub case: String,
    pub trace_id: Option<String>,
    /// The metric it was left out of; `None` for a label that joins nothing.
    pub metric: Option<String>,
    /// Lines of the labels file.
    pub lines: Vec<usize>,
    pub reason: Reason,
}

/// A labelled evaluation where the metric and the people disagree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Disagreement {
    pub case: String,
    pub trace_id: String,
    pub score: Option<f64>,
    pub metric_pass: bool,
    /// The metric's reason (a judge's rationale).
    pub reason: String,
    pub human_pass: bool,
    /// The rationales of the raters who gave the human label.
    pub rationale: Vec<String>,
}

/// Two raters' agreement on the evaluations both labelled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RaterAgreement {
    pub a: String,
    pub b: String,
    pub kappa: Option<f64>,
    pub n: usize,
}

/// The figures of one threshold's verdicts against the labels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Agreement {
    pub confusion: Confusion,
    pub accuracy: Option<f64>,
    pub kappa: Option<f64>,
    pub pass: Option<Interval>,
    pub fail: Option<Interval>,
}

impl Agreement {
    pub fn of(confusion: Confusion) -> Agreement {
        Agreement {
            confusion,
            accuracy: confusion.accuracy(),
            kappa: confusion.kappa(),
            pass: stats::wilson(confusion.both_pass, confusion.human_passes()),
            fail: stats::wilson(confusion.both_fail, confusion.human_fails()),
        }
    }
}

/// One metric's calibration.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricCalibration {
    pub metric: String,
    /// At the metric's verdicts as the run gave them.
    pub agreement: Agreement,
    pub disagreements: Vec<Disagreement>,
    /// Counts by reason.
    pub excluded: BTreeMap<Reason, usize>,
    /// The run's threshold, when every labelled evaluation had the same.
    pub threshold: Option<f64>,
    /// The threshold agreeing best with the labels, and its figures.
    pub best: Option<(f64, Agreement)>,
    /// With several raters: every pair's agreement.
    pub raters: Vec<RaterAgreement>,
}

impl MetricCalibration {
    pub fn n(&self) -> usize {
        self.agreement.confusion.n()
    }
}

/// What calibrating a run gave.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Calibration {
    pub metrics: Vec<MetricCalibration>,
    pub left_out: Vec<LeftOut>,
}

/// One rater's say on one evaluation for one metric.
struct Say<'a> {
    label: &'a Label,
}

/// Joins `labels` to `evaluations` and measures each of `metrics` (the
/// run's metric labels, in order).
pub fn calibrate(evaluations: &[Evaluation], metrics: &[String], labels: &[Label]) -> Calibration {
    let mut by_case: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, e) in evaluations.iter().enumerate() {
        by_case.entry(e.case_id.as_str()).or_default().push(i);
    }
    let mut out = Calibration::default();
    let mut joined: Vec<(usize, &Label)> = Vec::new();
    for label in labels {
        let left_out = |reason| LeftOut {
            case: label.case.clone(),
            trace_id: label.trace_id.clone(),
            metric: label.metric.clone(),
            lines: vec![label.line],
            reason,
        };
        if let Some(m) = &label.metric {
            if !metrics.contains(m) {
                out.left_out.push(left_out(Reason::MetricNotRun));
                continue;
            }
        }
        let candidates: Vec<usize> = by_case
            .get(label.case.as_str())
            .map(|evals| {
                evals
                    .iter()
                    .copied()
                    .filter(|&i| match &label.trace_id {
                        Some(t) => traces_of(&evaluations[i]).any(|id| &id == t),
                        None => true,
                    })
                    .collect()
            })
            .unwrap_or_default();
        match candidates[..] {
            [] => out.left_out.push(left_out(Reason::NoEvaluation)),
            [i] => joined.push((i, label)),
            _ => out.left_out.push(left_out(Reason::AmbiguousTrace)),
        }
    }
    let mut per_metric = Vec::new();
    for metric in metrics {
        let (m, left_out) = calibrate_metric(evaluations, metric, &joined, &out.left_out);
        out.metrics.push(m);
        per_metric.extend(left_out);
    }
    out.left_out.extend(per_metric);
    out
}

/// The trace ids an evaluation covers (a session's every trace).
fn traces_of(e: &Evaluation) -> impl Iterator<Item = String> + '_ {
    let session = e.session.iter().flat_map(|s| s.trace_ids.iter());
    std::iter::once(e.trace_id.to_string()).chain(session.skip(1).map(ToString::to_string))
}

/// The human labels of one metric per evaluation: each rater's latest
/// label, one naming the metric before one labelling the whole case.
fn says_of<'a>(
    metric: &str,
    joined: &[(usize, &'a Label)],
) -> BTreeMap<usize, BTreeMap<&'a str, Say<'a>>> {
    let mut says: BTreeMap<usize, BTreeMap<&str, Say>> = BTreeMap::new();
    for &(i, label) in joined {
        let specific = match &label.metric {
            Some(m) if m == metric => true,
            Some(_) => continue,
            None => false,
        };
        let rater = label.rater.as_deref().unwrap_or("");
        let per_eval = says.entry(i).or_default();
        let replace = per_eval
            .get(rater)
            .is_none_or(|old| specific || old.label.metric.is_none());
        if replace {
            per_eval.insert(rater, Say { label });
        }
    }
    says
}

fn calibrate_metric(
    evaluations: &[Evaluation],
    metric: &str,
    joined: &[(usize, &Label)],
    unjoined: &[LeftOut],
) -> (MetricCalibration, Vec<LeftOut>) {
    let says = says_of(metric, joined);
    let mut excluded: BTreeMap<Reason, usize> = BTreeMap::new();
    for l in unjoined {
        // A label naming a metric not run counts for none.
        if l.reason != Reason::MetricNotRun && l.metric.as_deref().is_none_or(|m| m == metric) {
            *excluded.entry(l.reason).or_default() += 1;
        }
    }
    let mut left_out = Vec::new();
    let mut confusion = Confusion::default();
    let mut disagreements = Vec::new();
    let mut scored: Vec<(f64, bool)> = Vec::new();
    let mut thresholds: Vec<Option<f64>> = Vec::new();
    let mut all_scored = true;
    for (&i, per_rater) in &says {
        let e = &evaluations[i];
        let mut leave = |reason| {
            *excluded.entry(reason).or_default() += 1;
            left_out.push(LeftOut {
                case: e.case_id.clone(),
                trace_id: Some(e.trace_id.to_string()),
                metric: Some(metric.to_string()),
                lines: per_rater.values().map(|s| s.label.line).collect(),
                reason,
            });
        };
        let votes: Vec<bool> = per_rater.values().map(|s| s.label.pass).collect();
        let Some(human) = stats::majority(&votes) else {
            leave(Reason::RaterTie);
            continue;
        };
        let Some(result) = e.results.iter().find(|r| r.metric == metric) else {
            leave(Reason::NotScored);
            continue;
        };
        let metric_pass = match result.verdict() {
            Verdict::Pass => true,
            Verdict::Fail => false,
            Verdict::JudgeError => {
                leave(Reason::JudgeError);
                continue;
            }
            Verdict::NotJudged => {
                leave(Reason::NotJudged);
                continue;
            }
        };
        confusion.add((metric_pass, human));
        thresholds.push(result.threshold);
        match result.outcome.score {
            Some(s) if result.outcome.error.is_none() => scored.push((s, human)),
            _ => all_scored = false,
        }
        if metric_pass != human {
            disagreements.push(Disagreement {
                case: e.case_id.clone(),
                trace_id: e.trace_id.to_string(),
                score: result.outcome.score,
                metric_pass,
                reason: result
                    .outcome
                    .error
                    .clone()
                    .unwrap_or_else(|| result.outcome.reason.clone()),
                human_pass: human,
                rationale: per_rater
                    .values()
                    .filter(|s| s.label.pass == human)
                    .filter_map(|s| s.label.rationale.clone())
                    .collect(),
            });
        }
    }
    // The run's threshold when every case has the same. Cases with their
    // own thresholds still get a best single threshold, ties going to the
    // one most cases use.
    let threshold = match thresholds.first() {
        Some(&Some(t)) if thresholds.iter().all(|x| *x == Some(t)) => Some(t),
        _ => None,
    };
    let best = most_common(&thresholds)
        .filter(|_| all_scored)
        .and_then(|t| stats::best_threshold(&scored, t))
        .map(|(t, c)| (t, Agreement::of(c)));
    let calibration = MetricCalibration {
        metric: metric.to_string(),
        agreement: Agreement::of(confusion),
        disagreements,
        excluded,
        threshold,
        best,
        raters: rater_agreement(&says),
    };
    (calibration, left_out)
}

/// The threshold most evaluations had (the lowest among equals); `None`
/// when any had none.
fn most_common(thresholds: &[Option<f64>]) -> Option<f64> {
    let mut ts: Vec<f64> = thresholds.iter().copied().collect::<Option<_>>()?;
    ts.sort_by(f64::total_cmp);
    let mut best: Option<(f64, usize)> = None;
    for chunk in ts.chunk_by(|a, b| a == b) {
        if best.is_none_or(|(_, n)| chunk.len() > n) {
            best = Some((chunk[0], chunk.len()));
        }
    }
    best.map(|(t, _)| t)
}

/// Every pair of named raters' kappa over the evaluations both labelled.
fn rater_agreement(says: &BTreeMap<usize, BTreeMap<&str, Say>>) -> Vec<RaterAgreement> {
    let mut raters: Vec<&str> = says.values().flat_map(|r| r.keys().copied()).collect();
    raters.sort_unstable();
    raters.dedup();
    let mut out = Vec::new();
    if raters.len() < 2 {
        return out;
    }
    for (k, a) in raters.iter().enumerate() {
        for b in &raters[k + 1..] {
            let c = Confusion::of(
                says.values()
                    .filter_map(|r| Some((r.get(a)?.label.pass, r.get(b)?.label.pass))),
            );
            out.push(RaterAgreement {
                a: a.to_string(),
                b: b.to_string(),
                kappa: c.kappa(),
                n: c.n(),
            });
        }
    }
    out
}

/// What the CI gate asks of every metric.
#[derive(Debug, Clone, Copy)]
pub struct Gate {
    pub min_kappa: Option<f64>,
    /// The lower 95% bounds of both class agreements must reach it.
    pub min_agreement: Option<f64>,
    /// Labels of each human class a metric needs before it is judged.
    pub min_labels: usize,
    /// Interval width the labelling plan aims at.
    pub target_width: f64,
}

/// The gate's verdict: an exit code and what explains it.
#[derive(Debug, Clone, PartialEq)]
pub struct GateResult {
    /// 0 every metric meets its bounds, 1 one falls short, 2 too few labels.
    pub code: u8,
    pub messages: Vec<String>,
}

/// More labels of a class so that there are `min` and the interval at the
/// agreement seen so far (0.5 with none) is no wider than `width`; `None`
/// when no count does it.
pub fn more_needed(have: usize, agreed: usize, min: usize, width: f64) -> Option<usize> {
    let p = if have == 0 {
        0.5
    } else {
        agreed as f64 / have as f64
    };
    let n = stats::trials_for_width(p, width)?;
    Some(n.max(min).saturating_sub(have))
}

/// Applies the gate to every metric.
pub fn gate(calibration: &Calibration, gate: &Gate) -> GateResult {
    let mut few = Vec::new();
    let mut short = Vec::new();
    for m in &calibration.metrics {
        let c = m.agreement.confusion;
        let (passes, fails) = (c.human_passes(), c.human_fails());
        // Nothing measured is never a pass, whatever --min-labels says.
        if c.n() == 0 {
            few.push(format!(
                "{}: no labelled evaluation to measure (see the labels left out)",
                m.metric
            ));
            continue;
        }
        if passes < gate.min_labels || fails < gate.min_labels {
            let plan = |have, agreed| match more_needed(
                have,
                agreed,
                gate.min_labels,
                gate.target_width,
            ) {
                Some(n) => n.to_string(),
                None => "too many".to_string(),
            };
            few.push(format!(
                "{}: {passes} human pass(es) and {fails} human failure(s), fewer than --min-labels {} of each; \
                 label {} more pass(es) and {} more failure(s) for at least {} of each and 95% intervals \
                 no wider than {} (at the agreement seen so far)",
                m.metric,
                gate.min_labels,
                plan(passes, c.both_pass),
                plan(fails, c.both_fail),
                gate.min_labels,
                gate.target_width,
            ));
            continue;
        }
        if let Some(k) = gate.min_kappa {
            match m.agreement.kappa {
                Some(kappa) if kappa >= k => {}
                Some(kappa) => short.push(format!("{}: kappa {kappa:.3} is under --min-kappa {k}", m.metric)),
                None => short.push(format!(
                    "{}: kappa is undefined (metric and labels all one class), short of --min-kappa {k}",
                    m.metric
                )),
            }
        }
        if let Some(l) = gate.min_agreement {
            for (name, interval) in [("pass", m.agreement.pass), ("fail", m.agreement.fail)] {
                match interval {
                    Some(i) if i.low >= l => {}
                    Some(i) => short.push(format!(
                        "{}: {name} agreement's 95% lower bound {:.3} is under --min-agreement {l}",
                        m.metric, i.low
                    )),
                    None => short.push(format!(
                        "{}: no human {name} label, so no {name} agreement to reach --min-agreement {l}",
                        m.metric
                    )),
                }
            }
        }
    }
    let code = if !few.is_empty() {
        2
    } else if !short.is_empty() {
        1
    } else {
        0
    };
    few.extend(short);
    GateResult {
        code,
        messages: few,
    }
}
