//! Metric specs (`NAME:threshold=0.7,strict=true`) and the metric sets built
//! from them, once per run (and once per case that overrides them), never
//! per evaluation.

use std::str::FromStr;
use std::sync::Arc;

use super::MetricResult;
use crate::expect::{Call, Case};
use crate::judge::Judge;
use crate::score::native::NativeConfig;
use crate::score::{registry, Metric, MetricInput, MetricOptions, Needs, Outcome, ScoreError};

/// One `--metric` value: a metric name with optional per-metric options.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSpec {
    /// As written; results are reported under it.
    pub label: String,
    pub name: String,
    pub threshold: Option<f64>,
    pub strict: Option<bool>,
}

impl FromStr for MetricSpec {
    type Err = ScoreError;

    /// `NAME` or `NAME:key=value,...` with the keys `threshold` (0..=1) and
    /// `strict` (a bare `strict` means `strict=true`).
    fn from_str(spec: &str) -> Result<Self, ScoreError> {
        let spec = spec.trim();
        let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
        let bad = |reason: String| ScoreError::BadOption {
            metric: name.to_string(),
            reason,
        };
        let mut out = MetricSpec {
            label: spec.to_string(),
            name: name.to_string(),
            threshold: None,
            strict: None,
        };
        for part in rest.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part.split_once('=').unwrap_or((part, "true"));
            let value = value.trim();
            match key.trim() {
                "threshold" => {
                    let t: f64 = value
                        .parse()
                        .map_err(|_| bad(format!("threshold `{value}` is not a number")))?;
                    if !(0.0..=1.0).contains(&t) {
                        return Err(bad(format!("threshold {t} is outside 0..=1")));
                    }
                    out.threshold = Some(t);
                }
                "strict" => {
                    out.strict = Some(
                        value
                            .parse()
                            .map_err(|_| bad(format!("strict `{value}` is not true/false")))?,
                    );
                }
                other => return Err(bad(format!("unknown option `{other}` (threshold, strict)"))),
            }
        }
        Ok(out)
    }
}

impl MetricSpec {
    /// Parses specs in order, expanding `all` to every metric and dropping
    /// repeats (by label).
    pub fn parse_list<S: AsRef<str>>(specs: &[S]) -> Result<Vec<MetricSpec>, ScoreError> {
        let mut out: Vec<MetricSpec> = Vec::new();
        for spec in specs {
            let spec = spec.as_ref().trim();
            let expanded: Vec<MetricSpec> = if spec == "all" {
                registry::all_names()
                    .into_iter()
                    .map(str::parse)
                    .collect::<Result<_, _>>()?
            } else {
                vec![spec.parse()?]
            };
            for s in expanded {
                if !out.iter().any(|o| o.label == s.label) {
                    out.push(s);
                }
            }
        }
        Ok(out)
    }
}

/// A built metric and the label its results are reported under.
struct Bound {
    label: String,
    metric: Box<dyn Metric>,
}

/// Builds a custom metric with a spec's options (threshold, strict).
pub type BuildMetric = dyn Fn(&MetricOptions) -> Box<dyn Metric> + Send + Sync;

/// A metric the embedding program defines (the Python module's callables),
/// used by name like the registry's and built per spec the same way.
#[derive(Clone)]
pub struct CustomMetric {
    pub name: String,
    pub build: Arc<BuildMetric>,
}

impl std::fmt::Debug for CustomMetric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CustomMetric").field(&self.name).finish()
    }
}

/// What a metric set may be built from besides the registry: the run's LLM
/// judge, for the metrics that ask one, and the run's custom metrics.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extras<'a> {
    pub judge: Option<&'a Arc<Judge>>,
    pub custom: &'a [CustomMetric],
}

/// Metrics ready to score: built once, used for every evaluation.
pub struct MetricSet {
    metrics: Vec<Bound>,
}

impl std::fmt::Debug for MetricSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.metrics.iter().map(|m| &m.label))
            .finish()
    }
}

impl MetricSet {
    /// Builds `specs`. A threshold is taken from, in order: `case_threshold`
    /// (a fixture case's own), the spec's, the run's (`run.threshold`), the
    /// metric's default; `strict` from the spec, then the run.
    pub fn build(
        specs: &[MetricSpec],
        run: &MetricOptions,
        native: &NativeConfig,
        case_threshold: Option<f64>,
    ) -> Result<MetricSet, ScoreError> {
        MetricSet::build_with(specs, run, native, case_threshold, Extras::default())
    }

    /// [`MetricSet::build`] with the run's LLM judge and custom metrics.
    pub fn build_with(
        specs: &[MetricSpec],
        run: &MetricOptions,
        native: &NativeConfig,
        case_threshold: Option<f64>,
        extras: Extras<'_>,
    ) -> Result<MetricSet, ScoreError> {
        let metrics = specs
            .iter()
            .map(|spec| {
                let opts = MetricOptions {
                    threshold: case_threshold.or(spec.threshold).or(run.threshold),
                    strict: spec.strict.or(run.strict),
                };
                let metric = match extras.custom.iter().find(|c| c.name == spec.name) {
                    Some(custom) => (custom.build)(&opts),
                    None => registry::lookup(&spec.name, &opts, native, extras.judge)?,
                };
                Ok(Bound {
                    label: spec.label.clone(),
                    metric,
                })
            })
            .collect::<Result<_, ScoreError>>()?;
        Ok(MetricSet { metrics })
    }

    /// What the metrics of this set need, together.
    pub fn needs(&self) -> Needs {
        self.metrics
            .iter()
            .fold(Needs::default(), |n, m| n | m.metric.needs())
    }

    /// The labels, in order (the first is the headline).
    pub fn labels(&self) -> impl Iterator<Item = &str> {
        self.metrics.iter().map(|m| m.label.as_str())
    }

    /// Each label with the threshold its metric passes at, in order.
    pub fn thresholds(&self) -> impl Iterator<Item = (&str, Option<f64>)> {
        self.metrics
            .iter()
            .map(|m| (m.label.as_str(), m.metric.threshold()))
    }

    pub fn len(&self) -> usize {
        self.metrics.len()
    }

    pub fn is_empty(&self) -> bool {
        self.metrics.is_empty()
    }

    /// Every metric's verdict on one pair of call lists, in order (for
    /// cases without traces: `toolscore score`).
    pub fn score(&self, called: &[Call], expected: &[Call]) -> Vec<MetricResult> {
        self.results(|m| m.score(called, expected))
    }

    /// Every metric's verdict on one evaluation's input, in order.
    pub fn evaluate(&self, input: &MetricInput<'_>) -> Vec<MetricResult> {
        self.results(|m| m.evaluate(input))
    }

    fn results(&self, outcome: impl Fn(&dyn Metric) -> Outcome) -> Vec<MetricResult> {
        self.metrics
            .iter()
            .map(|m| MetricResult {
                metric: m.label.clone(),
                threshold: m.metric.threshold(),
                outcome: outcome(m.metric.as_ref()),
            })
            .collect()
    }
}

/// One note for the run when cases with argument matchers are scored by
/// metrics other than toolscore's own (presets, judged metrics): those keep
/// their libraries' semantics and compare a matcher object as the literal
/// value it is. `run`: the run's metrics, for cases without their own.
pub fn literal_matchers_note(cases: &[Case], run: &[MetricSpec]) -> Option<String> {
    let with_matchers = |c: &&Case| {
        c.expected.has_matchers()
            || c.agents()
                .iter()
                .flat_map(|a| &a.expected)
                .any(|call| call.matchers.is_some())
    };
    let mut literal: Vec<&'static str> = Vec::new();
    let mut count = 0;
    for case in cases.iter().filter(with_matchers) {
        // A case's bad metric list is reported when its metrics are built.
        let own = case.metrics().map(MetricSpec::parse_list);
        let specs = match &own {
            Some(Ok(specs)) => specs.as_slice(),
            Some(Err(_)) => continue,
            // Scored on `agents` / `handoffs` alone (evaluate::Evaluator).
            None if !case.states_tools => continue,
            None => run,
        };
        count += usize::from(add_literal(specs, &mut literal));
    }
    matchers_note(count, &literal)
}

/// [`literal_matchers_note`] for `count` call lists with matchers, all
/// scored by `metrics` (`toolscore score --cases`).
pub fn literal_matchers_note_for(count: usize, metrics: &[MetricSpec]) -> Option<String> {
    let mut literal = Vec::new();
    if !add_literal(metrics, &mut literal) {
        return None;
    }
    matchers_note(count, &literal)
}

/// Adds the metrics of `specs` that compare matchers literally (those of
/// other libraries) to `literal`; whether there was one.
fn add_literal(specs: &[MetricSpec], literal: &mut Vec<&'static str>) -> bool {
    let mut any = false;
    for m in registry::catalog()
        .iter()
        .filter(|m| m.library != "toolscore")
    {
        if specs.iter().any(|s| s.name == m.name) {
            any = true;
            if !literal.contains(&m.name) {
                literal.push(m.name);
            }
        }
    }
    any
}

fn matchers_note(count: usize, literal: &[&str]) -> Option<String> {
    if count == 0 {
        return None;
    }
    const NAMED: usize = 3;
    let mut names = literal[..literal.len().min(NAMED)].join(", ");
    if literal.len() > NAMED {
        names.push_str(&format!(" and {} more", literal.len() - NAMED));
    }
    Some(format!(
        "{count} case(s) with argument matchers ($regex, $type, ...) are scored by {names}: \
         other libraries' metrics keep their semantics and compare a matcher as the literal \
         value it is; only toolscore's own metrics honour matchers (docs/scoring.md, \
         \"Argument matchers\")"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_options() {
        let s: MetricSpec = "deepeval.default:threshold=0.7,strict".parse().unwrap();
        assert_eq!(
            (s.name.as_str(), s.threshold, s.strict),
            ("deepeval.default", Some(0.7), Some(true))
        );
        assert_eq!(s.label, "deepeval.default:threshold=0.7,strict");
        let s: MetricSpec = "tool_correctness".parse().unwrap();
        assert_eq!((s.threshold, s.strict), (None, None));
        assert!("x:threshold=2".parse::<MetricSpec>().is_err());
        assert!("x:colour=red".parse::<MetricSpec>().is_err());
    }

    #[test]
    fn all_expands_once_and_every_metric_builds() {
        let specs = MetricSpec::parse_list(&["all", "deepeval.default"]).unwrap();
        assert_eq!(specs.len(), registry::all_names().len());
        let set = MetricSet::build(
            &specs,
            &MetricOptions::default(),
            &NativeConfig::default(),
            None,
        )
        .unwrap();
        assert_eq!(set.len(), specs.len());
        assert!(set.needs().ordered_args, "ragas is among them");
        let unknown = MetricSpec::parse_list(&["nope"]).unwrap();
        assert!(MetricSet::build(
            &unknown,
            &MetricOptions::default(),
            &NativeConfig::default(),
            None
        )
        .is_err());
    }

    #[test]
    fn case_threshold_beats_spec_and_run() {
        let specs = MetricSpec::parse_list(&["tool_correctness:threshold=0.9"]).unwrap();
        let run = MetricOptions {
            threshold: Some(0.1),
            strict: None,
        };
        let native = NativeConfig::default();
        let set = MetricSet::build(&specs, &run, &native, None).unwrap();
        assert_eq!(set.score(&[], &[])[0].threshold, Some(0.9));
        let set = MetricSet::build(&specs, &run, &native, Some(0.2)).unwrap();
        assert_eq!(set.score(&[], &[])[0].threshold, Some(0.2));
        let plain = MetricSpec::parse_list(&["tool_correctness"]).unwrap();
        let set = MetricSet::build(&plain, &run, &native, None).unwrap();
        assert_eq!(set.score(&[], &[])[0].threshold, Some(0.1));
    }
}
