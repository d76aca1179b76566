//! One run, set up once: every driver (`replay`, `inspect`, `record`,
//! `serve`, the Python module) describes its run with [`Options`] and builds
//! it here, so what a fixture means (its format's default metric, the cases
//! it rejects, the notes it gives) and how the per-trace [`Pipeline`] is
//! built is decided in one place. A driver adds only its own concerns:
//! files, sockets and a clock, its outputs.

use std::path::PathBuf;
use std::sync::Arc;

use crate::evaluate::ScoreSettings;
use crate::evaluate::{
    literal_matchers_note, literal_matchers_note_for, Evaluator, MetricSet, MetricSpec,
    OutputNeeds, Pipeline,
};
use crate::expect::{self, Case, ExpectError, FixtureOptions, Loaded};
use crate::extract::Extractor;
use crate::ingest::Rejected;
use crate::score::native::NativeConfig;
use crate::score::{MetricOptions, ScoreError};

/// How a run scores and extracts: the typed form of the scoring flags
/// (`--metric`, `--threshold`, the judge's, `--scope`, ...), the same for
/// every driver, so a trace scores the same live as replayed.
#[derive(Debug, Clone, Default)]
pub struct Scoring {
    pub settings: ScoreSettings,
    /// The user named the metrics (`--metric`): a fixture format's own
    /// default (`adk.exact` for an ADK eval set) does not replace them.
    pub metrics_named: bool,
    /// The user's extractor (rules, retrievers, scope).
    pub extractor: Extractor,
}

/// Where a run's expectations come from.
#[derive(Debug, Clone, Default)]
pub enum Fixture {
    /// No fixture: traces are listed, not judged (unless a default case
    /// scores them).
    #[default]
    None,
    /// A fixture file in any format `--expected` reads.
    Path(PathBuf),
    /// Fixture text (our JSONL format or another tool's); `label` names it
    /// in rejections.
    Text { label: String, text: String },
}

/// The case for traces no fixture case takes (`--default-expected`, or the
/// Python module's tools every trace should call): a JSON array of names or
/// `{"name", "args"}` objects, or one case object.
#[derive(Debug, Clone)]
pub enum DefaultCase {
    /// A file (`serve --default-expected`).
    Path(PathBuf),
    /// Text; `label` names it in errors.
    Text { label: String, text: String },
}

/// What a driver asks of its run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub scoring: Scoring,
    pub fixture: Fixture,
    pub default_case: Option<DefaultCase>,
    /// Nothing is scored (`inspect`, `record`): the metrics stay as given,
    /// whatever the fixture's format.
    pub listing: bool,
}

/// Something the run's setup says about the fixture (not an error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// A record skipped on purpose, with why (an ADK eval case with no tool
    /// calls, ...).
    Skipped(String),
    /// The fixture's argument matchers are compared literally by some of
    /// the run's metrics.
    LiteralMatchers(String),
}

impl Note {
    pub fn text(&self) -> &str {
        match self {
            Note::Skipped(t) | Note::LiteralMatchers(t) => t,
        }
    }
}

/// Why a run cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Fixture(#[from] ExpectError),
    #[error("bad default expectation {path}: {reason}")]
    DefaultPath { path: String, reason: String },
    #[error("{label}: {reason}")]
    DefaultText { label: String, reason: String },
    #[error("custom metric `{0}` has the name of a built-in metric")]
    CustomName(String),
    #[error(transparent)]
    Scoring(#[from] ScoreError),
}

/// A run, built: the evaluator (metric sets, cases, judge) and the user's
/// extractor, with what the fixture gave besides its cases.
#[derive(Debug)]
pub struct Setup {
    evaluator: Arc<Evaluator>,
    extractor: Extractor,
    notes: Vec<Note>,
    rejected: Vec<Rejected>,
}

impl Setup {
    /// Loads the fixture and the default case, decides the run's metrics
    /// (the user's, else the fixture format's own), and builds every metric
    /// set once. Bad fixture records are kept in [`Setup::rejected`], not
    /// errors.
    pub fn new(options: Options) -> Result<Setup, SetupError> {
        let Options {
            scoring,
            fixture,
            default_case,
            listing,
        } = options;
        let Scoring {
            mut settings,
            metrics_named,
            extractor,
        } = scoring;
        for custom in &settings.custom {
            if crate::score::registry::catalog()
                .iter()
                .any(|m| m.name == custom.name)
            {
                return Err(SetupError::CustomName(custom.name.clone()));
            }
        }
        let opts = FixtureOptions {
            session_keys: settings.session_keys.clone(),
        };
        let loaded = match fixture {
            Fixture::None => None,
            Fixture::Path(p) => Some(expect::load_file(&p, &opts)?),
            Fixture::Text { label, text } => Some(expect::parse_file(&text, &label, &opts)),
        };
        let default = default_case.map(|d| load_default(d, &opts)).transpose()?;
        let mut notes = Vec::new();
        let (cases, rejected) = match loaded {
            Some(Loaded {
                cases,
                rejected,
                notes: skipped,
                format,
            }) => {
                if let (Some(defaults), false) =
                    (format.default_metrics(), metrics_named || listing)
                {
                    settings.metrics = MetricSpec::parse_list(defaults)?;
                }
                notes.extend(skipped.into_iter().map(Note::Skipped));
                if !listing {
                    if let Some(n) = literal_matchers_note(&cases, &settings.metrics) {
                        notes.push(Note::LiteralMatchers(n));
                    }
                }
                (Some(cases), rejected)
            }
            None => (None, Vec::new()),
        };
        let evaluator = Evaluator::new(settings, cases, default)?;
        Ok(Setup {
            evaluator: Arc::new(evaluator),
            extractor,
            notes,
            rejected,
        })
    }

    /// The evaluation core of the run.
    pub fn evaluator(&self) -> &Arc<Evaluator> {
        &self.evaluator
    }

    /// The per-trace pipeline, extracting what the metrics and the driver's
    /// `outputs` read.
    pub fn pipeline(&self, outputs: OutputNeeds) -> Pipeline {
        Pipeline::new(Arc::clone(&self.evaluator), self.extractor.clone(), outputs)
    }

    /// What the fixture's setup says, in order: skipped records, then the
    /// literal-matchers note.
    pub fn notes(&self) -> &[Note] {
        &self.notes
    }

    /// Fixture records rejected (the run goes on without them).
    pub fn rejected(&self) -> &[Rejected] {
        &self.rejected
    }

    /// Takes the rejected fixture records, for a report that lists them.
    pub fn take_rejected(&mut self) -> Vec<Rejected> {
        std::mem::take(&mut self.rejected)
    }
}

/// The run of `score --cases`: tool calls given as data, so no fixture,
/// trace or judge; `tool_correctness` with its defaults.
#[derive(Debug)]
pub struct CaseRun {
    metrics: MetricSet,
    specs: Vec<MetricSpec>,
}

impl CaseRun {
    pub fn new(specs: Vec<MetricSpec>, options: &MetricOptions) -> Result<CaseRun, SetupError> {
        let metrics = MetricSet::build(&specs, options, &NativeConfig::default(), None)?;
        Ok(CaseRun { metrics, specs })
    }

    pub fn metrics(&self) -> &MetricSet {
        &self.metrics
    }

    /// The note for `with_matchers` cases whose argument matchers some of
    /// the metrics compare literally, if any.
    pub fn note(&self, with_matchers: usize) -> Option<String> {
        literal_matchers_note_for(with_matchers, &self.specs)
    }
}

/// The default case, read and parsed.
fn load_default(d: DefaultCase, opts: &FixtureOptions) -> Result<Case, SetupError> {
    match d {
        DefaultCase::Path(path) => {
            let label = path.display().to_string();
            let text = crate::ingest::files::read_text_capped(&path, expect::MAX_FIXTURE_BYTES)
                .map_err(|e| SetupError::DefaultPath {
                    path: label.clone(),
                    reason: e.to_string(),
                })?;
            expect::parse_default(&text, &label, opts).map_err(|reason| SetupError::DefaultPath {
                path: label,
                reason,
            })
        }
        DefaultCase::Text { label, text } => expect::parse_default(&text, &label, opts)
            .map_err(|reason| SetupError::DefaultText { label, reason }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(rel: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(rel)
    }

    fn headline(setup: &Setup) -> &str {
        &setup.evaluator().labels()[0]
    }

    #[test]
    fn a_fixture_format_picks_the_metrics_the_user_did_not_name() {
        let adk = || Fixture::Path(data("expect/weather.evalset.json"));
        let setup = Setup::new(Options {
            fixture: adk(),
            ..Options::default()
        })
        .unwrap();
        assert_eq!(headline(&setup), "adk.exact");
        // Named metrics stay, and a run that only lists calls scores nothing.
        for (metrics_named, listing) in [(true, false), (false, true)] {
            let setup = Setup::new(Options {
                scoring: Scoring {
                    metrics_named,
                    ..Scoring::default()
                },
                fixture: adk(),
                listing,
                ..Options::default()
            })
            .unwrap();
            assert_eq!(headline(&setup), "tool_correctness");
        }
    }

    #[test]
    fn default_case_from_array_or_object() {
        let every = |text: &str| {
            Setup::new(Options {
                default_case: Some(DefaultCase::Text {
                    label: "expected".into(),
                    text: text.into(),
                }),
                ..Options::default()
            })
        };
        let s = every(r#"["a", {"name": "b", "args": {"x": 1}}]"#).unwrap();
        let c = s.evaluator().cases().last().unwrap();
        assert_eq!((c.id.as_str(), c.expected.len()), ("default", 2));
        let s = every(
            r#"{"id": "fallback", "trace_id": "00", "expected_tools": ["a"], "threshold": 0.9}"#,
        )
        .unwrap();
        let c = s.evaluator().cases().last().unwrap();
        assert_eq!((c.id.as_str(), c.threshold), ("fallback", Some(0.9)));
        let err = every(r#"{"expected_tools": 3}"#).unwrap_err();
        assert!(matches!(err, SetupError::DefaultText { .. }), "{err}");
        let err = Setup::new(Options {
            default_case: Some(DefaultCase::Path(data("no-such-file.json"))),
            ..Options::default()
        })
        .unwrap_err();
        assert!(
            err.to_string().starts_with("bad default expectation "),
            "{err}"
        );
    }

    #[test]
    fn notes_and_rejected_records_are_kept() {
        let setup = Setup::new(Options {
            scoring: Scoring {
                settings: ScoreSettings {
                    metrics: MetricSpec::parse_list(&["mlflow.exact"]).unwrap(),
                    ..ScoreSettings::default()
                },
                metrics_named: true,
                ..Scoring::default()
            },
            fixture: Fixture::Text {
                label: "cases".into(),
                text: [
                    r#"{"id": "m", "trace_id": "0123456789abcdef0123456789abcdef", "expected_tools": [{"name": "a", "args": {"x": {"$regex": "^1$"}}}]}"#,
                    r#"{"id": "bad", "expected_tools": 3}"#,
                ]
                .join("\n"),
            },
            ..Options::default()
        })
        .unwrap();
        assert_eq!(setup.rejected().len(), 1, "{:?}", setup.rejected());
        assert!(
            matches!(setup.notes(), [Note::LiteralMatchers(n)] if n.contains("mlflow.exact")),
            "{:?}",
            setup.notes()
        );
    }
}
