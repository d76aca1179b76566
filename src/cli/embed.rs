//! The tool run from another program (the Python module): `replay` and
//! `inspect` on paths or bytes in memory, with the command line's flags and
//! messages, handing back the rows and the table the command line writes.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{CommandFactory, FromArgMatches, Parser};

use super::{InputArgs, ScoringArgs};
use crate::evaluate::{CustomMetric, Evaluator, MetricSpec, OutputNeeds, Pipeline, ScoreSettings};
use crate::expect::{self, parse_file, Case, FixtureOptions, Loaded};
use crate::ingest::files::Source;
use crate::inspect::{self, InspectFormat};
use crate::replay;
use crate::report;

/// The flags an embedded run takes: `replay`'s scoring and input flags
/// (`--metric`, `--threshold`, `--config`, the judge's, ...), with paths
/// optional since traces may come as bytes.
#[derive(Parser)]
#[command(name = "toolscore", no_binary_name = true)]
struct Flags {
    #[command(flatten)]
    scoring: ScoringArgs,
    #[command(flatten)]
    input: InputArgs,
}

impl Flags {
    fn parse(flags: &[String]) -> anyhow::Result<Flags> {
        let matches = Flags::command()
            .mut_arg("paths", |a| a.required(false))
            .try_get_matches_from(flags)
            .map_err(|e| anyhow::anyhow!("{}", e.render().to_string().trim_end()))?;
        Ok(Flags::from_arg_matches(&matches)?)
    }
}

/// What the traces are expected to call.
#[derive(Debug, Clone)]
pub enum Expected {
    /// No expectations: [`evaluate`] refuses (nothing would be scored).
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

/// One embedded evaluation.
#[derive(Debug, Clone)]
pub struct Request {
    /// Traces as command-line paths (flags' positional arguments) are read
    /// first, then these.
    pub sources: Vec<Source>,
    /// `replay`'s flags, as on the command line.
    pub flags: Vec<String>,
    pub expected: Expected,
    /// Named in `--metric` like any metric.
    pub custom: Vec<CustomMetric>,
}

/// What an embedded evaluation gives back.
#[derive(Debug, Clone)]
pub struct Evaluated {
    /// `replay --format jsonl`'s rows.
    pub jsonl: String,
    /// `replay`'s table.
    pub table: String,
    /// The command line's exit code: 0 pass, 1 a case failed, 2 could not
    /// evaluate (rejected input, judge error).
    pub exit_code: u8,
    /// What the command line says on stderr besides errors: fixture notes,
    /// the no-calls hint, trace warnings are not kept.
    pub notes: Vec<String>,
}

/// Scores the traces of `request` as `toolscore replay` does. Usage
/// errors, a missing path and an unreadable fixture are errors; rejected
/// input is in the rows (and makes the exit code 2).
pub fn evaluate(request: Request) -> anyhow::Result<Evaluated> {
    let flags = Flags::parse(&request.flags)?;
    flags.input.check_paths()?;
    let config = flags.input.config.load()?;
    let mut settings = flags.scoring.settings(&config)?;
    for custom in &request.custom {
        anyhow::ensure!(
            crate::score::registry::catalog()
                .iter()
                .all(|m| m.name != custom.name),
            "custom metric `{}` has the name of a built-in metric",
            custom.name
        );
    }
    settings.custom = request.custom;
    let opts = FixtureOptions {
        session_keys: settings.session_keys.clone(),
    };
    let mut notes = Vec::new();
    let (loaded, default) = load(request.expected, &opts)?;
    let (cases, fixture_rejected) = match loaded {
        Some(loaded) => {
            if let (Some(defaults), true) =
                (loaded.default_metrics(), flags.scoring.metrics.is_empty())
            {
                settings.metrics = MetricSpec::parse_list(defaults)?;
            }
            notes.extend(loaded.notes);
            (Some(loaded.cases), loaded.rejected)
        }
        None => (None, Vec::new()),
    };
    let every = default.is_some();
    let evaluator = Evaluator::new(settings, cases, default)?;
    let extractor = flags
        .input
        .extractor(&config)?
        .with_scope(flags.scoring.scope()?);
    let outputs = OutputNeeds {
        call_results: true,
        call_args: true,
    };
    let pipeline = Pipeline::new(Arc::new(evaluator), extractor, outputs);
    let mut sources = Source::paths(&flags.input.paths);
    sources.extend(request.sources);
    let mut report = replay::replay(
        report::Report::default(),
        &sources,
        &pipeline,
        fixture_rejected,
        &flags.input.read_options(),
        |_| {},
    );
    // The case for every trace is scored like a fixture's.
    report.has_cases |= every;
    notes.extend(report.hint.clone());
    let (mut jsonl, mut table) = (Vec::new(), Vec::new());
    report::write_jsonl(&report, &mut jsonl).context("writing the rows")?;
    report::write_table(&report, &mut table).context("writing the table")?;
    Ok(Evaluated {
        jsonl: String::from_utf8_lossy(&jsonl).into_owned(),
        table: String::from_utf8_lossy(&table).into_owned(),
        exit_code: report.exit_code(),
        notes,
    })
}

/// The fixture, or the case for every trace.
fn load(
    expected: Expected,
    opts: &FixtureOptions,
) -> anyhow::Result<(Option<Loaded>, Option<Case>)> {
    Ok(match expected {
        Expected::None => anyhow::bail!(
            "nothing would be scored: no expectations given (a fixture, cases or the expected \
             tools); listing the tool calls in traces is `inspect`'s job"
        ),
        Expected::Path(p) => (Some(expect::load_file(&p, opts)?), None),
        Expected::Text { label, text } => (Some(parse_file(&text, &label, opts)), None),
        Expected::Every { label, text } => {
            let case = expect::parse_default(&text, &label, opts)
                .map_err(|reason| anyhow::anyhow!("{label}: {reason}"))?;
            (None, Some(case))
        }
    })
}

/// `toolscore inspect --format jsonl`'s rows for the traces of `sources`
/// and the paths among `flags`, and the rejections as rows of their own.
pub fn inspect(sources: Vec<Source>, flags: &[String]) -> anyhow::Result<String> {
    let flags = Flags::parse(flags)?;
    flags.input.check_paths()?;
    let config = flags.input.config.load()?;
    // As `toolscore inspect`: nothing is scored, so no metric or judge is
    // built; the session keys say which session each trace is in.
    let settings = ScoreSettings {
        session_keys: config.session_keys(),
        ..ScoreSettings::default()
    };
    let evaluator = Arc::new(Evaluator::new(settings, None, None)?);
    let outputs = OutputNeeds {
        call_results: true,
        call_args: true,
    };
    let pipeline = Pipeline::new(evaluator, flags.input.extractor(&config)?, outputs);
    let mut all = Source::paths(&flags.input.paths);
    all.extend(sources);
    let mut out = Vec::new();
    let found = inspect::inspect(
        &all,
        &pipeline,
        &flags.input.read_options(),
        InspectFormat::Jsonl,
        false,
        &mut out,
        |_| {},
    )?;
    for r in &found.rejected {
        report::push_row(&mut out, &report::rejected_row(r));
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}
