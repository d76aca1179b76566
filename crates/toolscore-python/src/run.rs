//! The drivers of `evaluate` and `inspect`: the Python arguments as the
//! library's typed run options, run through [`Setup`] as `toolscore replay`
//! and `toolscore inspect` run theirs, with the settings Python does not
//! pass taken from the environment as the command line takes them.

use std::path::PathBuf;

use anyhow::Context;

use toolscore::cli::embed::{self, Environment, RunFacts, RunStart};
use toolscore::evaluate::{CustomMetric, OutputNeeds};
use toolscore::ingest::files::Source;
use toolscore::ingest::Rejected;
use toolscore::report::{self, exit, InspectRow, Report};
use toolscore::run::inspect;
use toolscore::run::{replay, DefaultCase, Fixture, Options, Setup};
use toolscore::store::{Choice, PartWriter, Saved};

/// What the traces are expected to call.
#[derive(Debug, Clone)]
pub enum Expected {
    /// No expectations: refused (nothing would be scored).
    None,
    /// A fixture file in any format `--expected` reads.
    Path(PathBuf),
    /// Fixture text (our JSONL format or another tool's); `label` names it
    /// in rejections.
    Text { label: String, text: String },
    /// The calls every trace should make: a JSON array of names or
    /// `{"name", "args"}` objects, or one case object.
    Every { label: String, text: String },
}

/// One `evaluate` call, typed.
pub struct Request {
    /// Read first, in order, then `sources`.
    pub paths: Vec<PathBuf>,
    pub sources: Vec<Source>,
    pub expected: Expected,
    /// Metric specs as `--metric` takes them, custom metrics by name.
    pub metrics: Vec<String>,
    pub config: Option<PathBuf>,
    pub custom: Vec<CustomMetric>,
    /// The run store to save the run in (a SQLite path, a `postgres://`
    /// URL, `off`), and the call as the saved run records it.
    pub store: Option<(String, String)>,
    /// `KEY=VALUE` labels saved with the run, as `--label` gives them.
    pub labels: Vec<(String, String)>,
}

/// A finished `evaluate`.
pub struct Evaluated {
    pub report: Report,
    /// `toolscore replay`'s: 0 pass, 1 a case failed, 2 could not evaluate
    /// (rejected input, judge error, a run the store did not take).
    pub exit_code: u8,
    /// What the command line says on stderr besides errors: fixture notes,
    /// the no-calls hint, where the run was saved.
    pub notes: Vec<String>,
    /// The saved run's id.
    pub run_id: Option<String>,
}

/// Scores the traces as `toolscore replay` does. Bad arguments, a missing
/// path and an unreadable fixture are errors; rejected input is in the
/// report (and makes the exit code 2).
pub fn evaluate(request: Request) -> anyhow::Result<Evaluated> {
    let env = Environment::read(request.metrics, request.config)?;
    let labels = request
        .labels
        .iter()
        .map(|(k, v)| {
            embed::label(k, v).ok_or_else(|| anyhow::anyhow!("labels: the key of {v:?} is empty"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    embed::check_paths(&request.paths)?;
    let start = request
        .store
        .map(|(store, command)| -> anyhow::Result<RunStart> {
            Ok(RunStart::with(
                Choice::new(Some(&store), false)?,
                vec![command],
            ))
        })
        .transpose()?;
    let config = env.config()?;
    let mut scoring = env.scoring(&config)?;
    scoring.settings.custom = request.custom;
    let (fixture, default_case) = match request.expected {
        Expected::None => anyhow::bail!(
            "nothing would be scored: no expectations given (a fixture, cases or the expected \
             tools); listing the tool calls in traces is `inspect`'s job"
        ),
        Expected::Path(p) => (Fixture::Path(p), None),
        Expected::Text { label, text } => (Fixture::Text { label, text }, None),
        Expected::Every { label, text } => (Fixture::None, Some(DefaultCase::Text { label, text })),
    };
    let fixture_path = match &fixture {
        Fixture::Path(p) => Some(p.clone()),
        _ => None,
    };
    let every = default_case.is_some();
    let mut setup = Setup::new(Options {
        scoring,
        fixture,
        default_case,
        listing: false,
    })?;
    let mut notes: Vec<String> = setup.notes().iter().map(|n| n.text().to_string()).collect();
    let pipeline = setup.pipeline(OutputNeeds {
        call_results: true,
        call_args: true,
    });
    let mut sources = Source::paths(&request.paths);
    sources.extend(request.sources);
    let mut report = replay::replay(
        Report::default(),
        &sources,
        &pipeline,
        setup.take_rejected(),
        &env.read_options(),
        |_| {},
    );
    // The case for every trace is scored like a fixture's.
    report.has_cases |= every;
    notes.extend(report.hint.clone());
    let mut exit_code = report.exit_code();
    let mut run_id = None;
    if let Some(start) = start.filter(RunStart::saving) {
        // The saved run keeps the JSONL report, as `replay` saves it.
        let mut parts = PartWriter::new();
        report::write_jsonl(&report, &mut parts).context("writing the rows")?;
        let facts = RunFacts {
            fixture: fixture_path.as_deref(),
            config: env.config_path(),
            settings: env.saved_settings(&report),
            labels: &labels,
        };
        match embed::save_run(&start, &facts, &report, &parts.finish(), exit_code) {
            Saved::Yes(id, at) => {
                notes.push(format!("run {id} saved to {at}"));
                run_id = Some(id);
            }
            Saved::Off => {}
            // A store the caller named must work; the report is still whole.
            Saved::Failed(e, _) => {
                notes.push(format!("error: run not saved: {e:#}"));
                exit_code = exit::INPUT;
            }
        }
    }
    Ok(Evaluated {
        report,
        exit_code,
        notes,
        run_id,
    })
}

/// What `toolscore inspect --format jsonl` reads in the traces of `paths`,
/// then `sources`: each trace's row as `row` makes it (on the library's
/// workers), in input order, and the input rejected.
pub fn inspect<R: Send>(
    paths: Vec<PathBuf>,
    sources: Vec<Source>,
    config: Option<PathBuf>,
    row: impl Fn(&InspectRow<'_>) -> R + Sync,
) -> anyhow::Result<(Vec<R>, Vec<Rejected>)> {
    let env = Environment::read(Vec::new(), config)?;
    embed::check_paths(&paths)?;
    let config = env.config()?;
    let pipeline = env.listing(&config)?.pipeline(OutputNeeds {
        call_results: true,
        call_args: true,
    });
    let mut all = Source::paths(&paths);
    all.extend(sources);
    let mut rows = Vec::new();
    let found = inspect::each_row(&all, &pipeline, &env.read_options(), row, |r| {
        rows.push(r);
    });
    Ok((rows, found.rejected))
}
