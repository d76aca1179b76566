//! The tool run from another program (the Python module): `replay` and
//! `inspect` on paths or bytes in memory, with the command line's flags and
//! messages, handing back the rows and the table the command line writes.

use std::path::PathBuf;

use anyhow::Context;
use clap::{CommandFactory, FromArgMatches, Parser};

use super::{InputArgs, ScoringArgs};
use crate::evaluate::{CustomMetric, OutputNeeds};
use crate::ingest::files::Source;
use crate::report;
use crate::run::inspect::{self, InspectFormat};
use crate::run::replay;
use crate::run::{DefaultCase, Fixture, Options, Setup};

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
    let mut scoring = flags
        .scoring
        .scoring(&config, flags.input.extractor(&config)?)?;
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
    let every = default_case.is_some();
    let mut setup = Setup::new(Options {
        scoring,
        fixture,
        default_case,
        listing: false,
    })?;
    let mut notes: Vec<String> = setup.notes().iter().map(|n| n.text().to_string()).collect();
    let outputs = OutputNeeds {
        call_results: true,
        call_args: true,
    };
    let pipeline = setup.pipeline(outputs);
    let mut sources = Source::paths(&flags.input.paths);
    sources.extend(request.sources);
    let mut report = replay::replay(
        report::Report::default(),
        &sources,
        &pipeline,
        setup.take_rejected(),
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

/// `toolscore inspect --format jsonl`'s rows for the traces of `sources`
/// and the paths among `flags`, and the rejections as rows of their own.
pub fn inspect(sources: Vec<Source>, flags: &[String]) -> anyhow::Result<String> {
    let flags = Flags::parse(flags)?;
    flags.input.check_paths()?;
    let config = flags.input.config.load()?;
    let outputs = OutputNeeds {
        call_results: true,
        call_args: true,
    };
    // As `toolscore inspect`.
    let pipeline = super::commands::listing(&config, flags.input.extractor(&config)?, &None)?
        .pipeline(outputs);
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
