//! What each command does: wires the library's drivers from the parsed
//! flags, writes the output and picks the exit code (0 pass, 1 some case
//! failed, 2 usage or input error).

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;

use crate::config;
use crate::evaluate::{OutputNeeds, ScoreSettings};
use crate::ingest::files::Source;
use crate::report::{self, baseline, exit};
use crate::run::inspect;
use crate::run::record::{self, RecordJoin, Recording};
use crate::run::replay;
use crate::run::{Options, Scoring, Setup};
use crate::score::registry;
use crate::store::PartWriter;

use super::history::{self, RunFacts, RunStart};
use super::progress::progress_printer;
use super::{
    open_output, Cli, Command, ConventionsArgs, DiffArgs, DiffFormat, FailOn, InspectArgs,
    RecordArgs, ReplayArgs, ReportFormat, ScoreArgs, ScoringArgs, ServeArgs,
};

/// Runs the command line `args` (the program name first, as
/// `std::env::args_os` gives it) and returns the exit code. Usage errors
/// print clap's message and exit the process, as a command line does.
pub fn run<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let argv: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let cli = Cli::parse_from(&argv);
    let result = match cli.command {
        Command::Replay(args) => cmd_replay(*args, &argv),
        Command::Inspect(args) => cmd_inspect(args),
        Command::Record(args) => cmd_record(args),
        Command::Metrics => cmd_metrics(),
        Command::Score(args) => cmd_score(args),
        Command::Conventions(args) => cmd_conventions(args),
        Command::Serve(args) => cmd_serve(*args, &argv),
        Command::Diff(args) => cmd_diff(args),
        Command::Calibrate(args) => super::calibrate::cmd_calibrate(*args),
        Command::Label(args) => super::calibrate::cmd_label(*args),
        Command::Runs(args) => history::cmd_runs(args),
        Command::Trend(args) => history::cmd_trend(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("toolscore: error: {err:#}");
            exit::INPUT
        }
    }
}

fn cmd_replay(args: ReplayArgs, argv: &[OsString]) -> anyhow::Result<u8> {
    args.input.check_paths()?;
    let start = RunStart::new(&args.save, argv)?;
    let config = args.input.config.load()?;
    let extractor = args.input.extractor(&config)?;
    let mut setup = Setup::new(Options {
        scoring: args.scoring.scoring(&config, extractor)?,
        fixture: super::fixture(args.expected.as_deref()),
        ..Options::default()
    })?;
    super::print_notes(&setup);
    anyhow::ensure!(
        args.fail_on == FailOn::Threshold || args.baseline.is_some(),
        "--fail-on regression needs --baseline"
    );
    super::check_tolerance(args.tolerance)?;
    // Read before the run: a bad baseline is a usage error, found early.
    let old = args
        .baseline
        .as_deref()
        .map(|b| {
            history::load_baseline(
                b,
                &args.save.store,
                args.expected.as_deref(),
                start.git.branch.as_deref(),
            )
        })
        .transpose()?
        .flatten();
    let outputs = OutputNeeds {
        // Only JSONL shows each call's result (and the saved run keeps its JSONL).
        call_results: matches!(args.format, ReportFormat::Jsonl) || start.saving(),
        call_args: true,
    };
    let pipeline = setup.pipeline(outputs);
    // The HTML page draws each trace's spans on a timeline.
    let prepared = report::Report {
        timelines: matches!(args.format, ReportFormat::Html).then(Default::default),
        trials_pass: args.trials_pass,
        ..Default::default()
    };
    let report = replay::replay(
        prepared,
        &Source::paths(&args.input.paths),
        &pipeline,
        setup.take_rejected(),
        &args.input.read_options(),
        progress_printer(args.input.quiet),
    );
    let comparison =
        old.map(|old| baseline::compare(&old, &baseline::entries_of(&report), args.tolerance));
    // The saved run keeps the JSONL report, compressed part by part as a
    // JSONL run writes it (the whole of it is never held).
    let mut parts = start.saving().then(PartWriter::new);
    let title = match &args.expected {
        Some(f) => format!("replay of {}", f.display()),
        None => "replay".into(),
    };
    write_replay_report(&args, &report, comparison.as_ref(), parts.as_mut(), &title)?;
    // Machine formats on stdout stay clean; people still see what was rejected.
    if !matches!(args.format, ReportFormat::Table) || args.output.is_some() {
        for r in &report.rejected {
            eprintln!("toolscore: rejected: {}", report::printable(&r.to_string()));
        }
        if !args.input.quiet {
            eprintln!("{}", report.summary_line());
            if let Some(c) = &comparison {
                eprintln!("{}", c.summary_line());
            }
        }
    }
    // Without expectations nothing was scored: a CI job must not pass on it.
    if !report.has_cases {
        eprintln!(
            "toolscore: nothing was scored: no expectations given (--expected FILE or \
             TOOLSCORE_EXPECTED); listing the tool calls in traces is `toolscore inspect`'s job"
        );
        return Ok(exit::INPUT);
    }
    let code = match (&comparison, args.fail_on) {
        (Some(c), FailOn::Regression) if !report.could_not_evaluate() => {
            if c.regressions() > 0 {
                exit::FAIL
            } else {
                exit::PASS
            }
        }
        _ => report.exit_code(),
    };
    if let Some(mut parts) = parts {
        if !matches!(args.format, ReportFormat::Jsonl) {
            // Another format was printed: the JSONL is written for the store
            // alone (a `PartWriter` takes every byte).
            let _ = report::write_jsonl(&report, &mut parts);
        }
        let facts = RunFacts {
            fixture: args.expected.as_deref(),
            config: args.input.config.config.as_deref(),
            settings: run_settings(&args.scoring, args.fail_on, args.tolerance, &report),
            labels: &args.save.labels,
        };
        if let Some(failed) = history::save_replay(&start, &facts, &report, &parts.finish(), code) {
            return Ok(failed);
        }
    }
    Ok(code)
}

/// Writes replay's report where `--output` says; a JSONL report goes to the
/// saved run's parts as it is written.
fn write_replay_report(
    args: &ReplayArgs,
    report: &report::Report,
    comparison: Option<&baseline::Comparison>,
    parts: Option<&mut PartWriter>,
    title: &str,
) -> anyhow::Result<()> {
    let mut out = open_output(args.output.as_ref())?;
    match (parts, args.format) {
        (Some(parts), ReportFormat::Jsonl) => {
            let mut both = Tee {
                out: &mut *out,
                parts,
            };
            report::write_jsonl(report, &mut both)
                .and_then(|()| comparison.map_or(Ok(()), |c| baseline::write_jsonl(c, &mut out)))
        }
        _ => write_report(report, comparison, args.format, title, &mut out),
    }
    .and_then(|()| out.flush())
    .context("cannot write the report")
}

/// Writes each byte to the report's output and to the saved run's parts.
struct Tee<'a> {
    out: &'a mut dyn Write,
    parts: &'a mut PartWriter,
}

impl Write for Tee<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write_all(buf)?;
        self.parts.write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The scoring settings a saved run records (`replay` and Python).
pub(crate) fn run_settings(
    s: &ScoringArgs,
    fail_on: FailOn,
    tolerance: f64,
    report: &report::Report,
) -> serde_json::Value {
    let mut settings = scoring_settings(s);
    settings.insert("metrics".into(), serde_json::json!(report.metrics));
    settings.insert(
        "fail_on".into(),
        serde_json::json!(match fail_on {
            FailOn::Threshold => "threshold",
            FailOn::Regression => "regression",
        }),
    );
    settings.insert("tolerance".into(), serde_json::json!(tolerance));
    serde_json::Value::Object(settings)
}

/// The scoring flags a saved run records (`replay`, Python and `serve`).
fn scoring_settings(s: &ScoringArgs) -> serde_json::Map<String, serde_json::Value> {
    use serde_json::json;
    [
        ("metric_flags", json!(s.metrics)),
        ("threshold", json!(s.threshold)),
        ("strict", json!(s.strict)),
        ("args", json!(s.args_policy)),
        ("score", json!(s.headline)),
        ("scope", json!(s.scope)),
        ("normalize", json!(s.normalize)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

fn write_report(
    report: &report::Report,
    comparison: Option<&baseline::Comparison>,
    format: ReportFormat,
    title: &str,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        ReportFormat::Table => report::write_table(report, out).and_then(|()| match comparison {
            Some(c) => {
                writeln!(out, "\nAgainst the baseline:")?;
                baseline::write_table(c, out)
            }
            None => Ok(()),
        }),
        ReportFormat::Jsonl => report::write_jsonl(report, out)
            .and_then(|()| comparison.map_or(Ok(()), |c| baseline::write_jsonl(c, out))),
        // One XML document: the comparison has its own (`toolscore diff`).
        ReportFormat::Junit => report::write_junit(report, out),
        ReportFormat::Html => report::write_html(report, comparison, out),
        // Built from the JSONL rows, as `runs show -f markdown` builds it.
        ReportFormat::Markdown => {
            let mut jsonl = Vec::new();
            report::write_jsonl(report, &mut jsonl)?;
            let rows = report::markdown::rows_of(&jsonl);
            report::markdown::write_run(title, &rows, comparison, out)
        }
    }
}

fn cmd_diff(args: DiffArgs) -> anyhow::Result<u8> {
    super::check_tolerance(args.tolerance)?;
    let old = history::load_side(&args.old, &args.store)?;
    let new = history::load_side(&args.new, &args.store)?;
    let c = baseline::compare(&old, &new, args.tolerance);
    let mut out = open_output(args.output.as_ref())?;
    match args.format {
        DiffFormat::Table => baseline::write_table(&c, &mut out),
        DiffFormat::Jsonl => baseline::write_jsonl(&c, &mut out),
        DiffFormat::Junit => baseline::write_junit(&c, &mut out),
        DiffFormat::Markdown => report::markdown::write_comparison(
            &format!("{} → {}", args.old.display(), args.new.display()),
            &c,
            &mut out,
        ),
    }
    .and_then(|()| out.flush())
    .context("cannot write the comparison")?;
    Ok(if c.regressions() > 0 {
        exit::FAIL
    } else {
        exit::PASS
    })
}

fn cmd_inspect(args: InspectArgs) -> anyhow::Result<u8> {
    args.input.check_paths()?;
    let config = args.input.config.load()?;
    // Inspect shows each call's arguments and result.
    let outputs = OutputNeeds {
        call_results: true,
        call_args: true,
    };
    let mut setup = listing(&config, args.input.extractor(&config)?, &args.expected)?;
    let pipeline = setup.pipeline(outputs);
    let format = args.format.into();
    let mut out = open_output(args.output.as_ref())?;
    let mut found = inspect::inspect(
        &Source::paths(&args.input.paths),
        &pipeline,
        &args.input.read_options(),
        format,
        args.explain,
        &mut out,
        progress_printer(args.input.quiet),
    )?;
    out.flush()?;
    found.rejected.extend(setup.take_rejected());
    for r in &found.rejected {
        eprintln!("toolscore: rejected: {}", report::printable(&r.to_string()));
    }
    if !args.explain {
        if let Some(hint) = pipeline.extractor().no_calls_hint(found.spans, found.calls) {
            eprintln!("toolscore: hint: {hint}");
        }
    }
    Ok(if found.rejected.is_empty() {
        exit::PASS
    } else {
        exit::INPUT
    })
}

/// The run of a command that scores nothing (`inspect`, `record`): no
/// metric or judge is built; the session keys say which session each trace
/// is in, and a fixture which cases each trace joins.
pub(crate) fn listing(
    config: &crate::config::Config,
    extractor: crate::extract::Extractor,
    expected: &Option<PathBuf>,
) -> anyhow::Result<Setup> {
    let settings = ScoreSettings {
        session_keys: config.session_keys(),
        ..ScoreSettings::default()
    };
    Ok(Setup::new(Options {
        scoring: Scoring {
            settings,
            metrics_named: false,
            extractor,
        },
        fixture: super::fixture(expected.as_deref()),
        default_case: None,
        listing: true,
    })?)
}

/// Records the calls of the traces as fixture cases. Nothing is written
/// when nothing was recorded: an empty fixture would pass every run.
fn cmd_record(args: RecordArgs) -> anyhow::Result<u8> {
    args.input.check_paths()?;
    let to_stdout = args.output.as_os_str() == "-";
    // Refused before the read, not after it.
    if !to_stdout && !args.force {
        record::check_new(&args.output)?;
    }
    let config = args.input.config.load()?;
    // Cases hold arguments as values; results are not recorded.
    let outputs = OutputNeeds {
        call_results: false,
        call_args: true,
    };
    let pipeline = listing(&config, args.input.extractor(&config)?, &None)?.pipeline(outputs);
    anyhow::ensure!(
        (0.0..=1.0).contains(&args.threshold),
        "--threshold {} is outside 0..=1",
        args.threshold
    );
    let mut recording = record::record(
        &Source::paths(&args.input.paths),
        &pipeline,
        &args.input.read_options(),
        &args.join,
        progress_printer(args.input.quiet),
    );
    for case in &mut recording.cases {
        case.threshold = Some(args.threshold);
    }
    for r in &recording.rejected {
        eprintln!("toolscore: rejected: {}", report::printable(&r.to_string()));
    }
    for note in &recording.notes {
        eprintln!("toolscore: note: {}", report::printable(note));
    }
    let target = if to_stdout {
        "stdout".to_string()
    } else {
        args.output.display().to_string()
    };
    if recording.cases.is_empty() {
        eprintln!(
            "toolscore: nothing recorded: {}; {target} was not written",
            nothing_recorded(&recording, &args.join)
        );
        return Ok(exit::INPUT);
    }
    if to_stdout {
        let mut out = BufWriter::new(io::stdout().lock());
        record::write_jsonl(&recording.cases, &mut out)
            .and_then(|()| out.flush())
            .context("cannot write the cases")?;
    } else {
        record::write_file(&args.output, &recording.cases, args.force)?;
    }
    if !args.input.quiet {
        eprintln!(
            "recorded {} cases ({} calls) from {} traces to {target}",
            recording.cases.len(),
            recording.calls(),
            recording.traces
        );
    }
    Ok(if recording.rejected.is_empty() {
        exit::PASS
    } else {
        exit::INPUT
    })
}

/// Why a recording holds no case.
fn nothing_recorded(r: &Recording, join: &RecordJoin) -> String {
    match join {
        _ if r.traces == 0 => "no trace was read".to_string(),
        RecordJoin::UserText => {
            format!("none of the {} traces has a user text to join on", r.traces)
        }
        RecordJoin::Match(k) => format!("none of the {} traces has attribute `{k}`", r.traces),
        RecordJoin::TraceId => "no trace was recorded".to_string(),
    }
}

fn cmd_conventions(args: ConventionsArgs) -> anyhow::Result<u8> {
    let config = args.config.load()?;
    let text = config::render_rules(&config.rule_specs(), args.format.table_format())?;
    let mut out = open_output(None)?;
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(exit::PASS)
}

fn cmd_metrics() -> anyhow::Result<u8> {
    let mut out = open_output(None)?;
    report::write_metrics(&registry::catalog(), &mut out)?;
    out.flush()?;
    Ok(exit::PASS)
}

fn cmd_score(args: ScoreArgs) -> anyhow::Result<u8> {
    let run = args.case_run()?;
    let label = args.cases.display().to_string();
    let input: Box<dyn io::BufRead> = if label == "-" {
        Box::new(io::stdin().lock())
    } else {
        let file = File::open(&args.cases).with_context(|| format!("cannot open {label}"))?;
        Box::new(io::BufReader::new(file))
    };
    let mut out = open_output(args.output.as_ref())?;
    let summary = crate::run::cases::score_lines(input, run.metrics(), &mut out, |bad| {
        eprintln!("toolscore: rejected: {label}: {bad}");
    })
    .and_then(|s| out.flush().map(|()| s))
    .with_context(|| format!("scoring {label}"))?;
    if let Some(note) = run.note(summary.with_matchers) {
        eprintln!("toolscore: note: {note}");
    }
    Ok(if summary.rejected.is_empty() {
        exit::PASS
    } else {
        exit::INPUT
    })
}

/// The scoring flags mean what they mean for `replay` (same settings, same
/// extractor), so a trace scores the same live as replayed. The run is
/// saved as `replay`'s is (`--store`, `--no-store`, `--label`), as it goes.
fn cmd_serve(args: ServeArgs, argv: &[OsString]) -> anyhow::Result<u8> {
    let start = RunStart::new(&args.save, argv)?;
    let config = args.config.load()?;
    let scoring = args.scoring(&config)?;
    // Precedence: flags > environment > the config file's [serve] > defaults.
    let mut serve_config = config.serve.clone().unwrap_or_default();
    args.serve.apply(&mut serve_config);
    let facts = RunFacts {
        fixture: serve_config.expected.as_deref(),
        config: args.config.config.as_deref(),
        settings: serde_json::Value::Object(scoring_settings(&args.scoring)),
        labels: &args.save.labels,
    };
    let save = crate::serve::SaveRun::new(&start.choice, start.meta(&facts));
    crate::serve::run(serve_config, scoring, save)?;
    Ok(exit::PASS)
}
