//! `toolscore calibrate` (a metric's verdicts against human labels, with a
//! gate for CI) and `toolscore label` (the terminal session that collects
//! the labels). Both get their evaluations as `replay` does, through
//! [`replay_evaluations`].

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};

use super::progress::progress_printer;
use super::{InputArgs, ScoringArgs};
use crate::calibrate::{self, labels, Gate};
use crate::evaluate::OutputNeeds;
use crate::ingest::files::Source;
use crate::report::{self, exit, CalibrationReport};
use crate::run::label as session;
use crate::run::replay;
use crate::run::{Options, Setup};

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum CalibrateFormat {
    Table,
    Jsonl,
    /// One self-contained page: confusion matrices and disagreements.
    Html,
    /// A summary for a pull request.
    Markdown,
}

#[derive(Args)]
pub(crate) struct CalibrateArgs {
    /// Fixture file of expected tools (JSONL or a JSON array).
    #[arg(
        long,
        short = 'e',
        env = "TOOLSCORE_EXPECTED",
        help_heading = "Expectations"
    )]
    pub(crate) expected: PathBuf,
    /// Human labels, JSONL or CSV (`.csv`): `case`, `trace_id`?, `metric`?,
    /// `label` (pass/fail), `rater`?, `rationale`?.
    #[arg(long, help_heading = "Expectations")]
    pub(crate) labels: PathBuf,
    #[command(flatten)]
    pub(crate) scoring: ScoringArgs,
    /// Exit 1 when a metric's Cohen's kappa is under K.
    #[arg(long, value_name = "K", help_heading = "Gate")]
    pub(crate) min_kappa: Option<f64>,
    /// Exit 1 when the 95% lower bound of a metric's agreement on human
    /// passes or on human failures is under L.
    #[arg(long, value_name = "L", help_heading = "Gate")]
    pub(crate) min_agreement: Option<f64>,
    /// Exit 2 when a metric has fewer than N labels of either class.
    #[arg(long, value_name = "N", default_value_t = 10, help_heading = "Gate")]
    pub(crate) min_labels: usize,
    /// The 95% interval width the labelling plan aims at (how many more
    /// labels of each class).
    #[arg(long, value_name = "W", default_value_t = 0.2, help_heading = "Gate")]
    pub(crate) target_width: f64,
    #[arg(
        long,
        short,
        value_enum,
        default_value = "table",
        help_heading = "Output"
    )]
    pub(crate) format: CalibrateFormat,
    /// Write the report here instead of stdout.
    #[arg(long, short, help_heading = "Output")]
    pub(crate) output: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) input: InputArgs,
}

#[derive(Args)]
pub(crate) struct LabelArgs {
    /// Fixture file of expected tools (JSONL or a JSON array).
    #[arg(long, short = 'e', env = "TOOLSCORE_EXPECTED")]
    pub(crate) expected: PathBuf,
    /// The labels file answers are appended to (JSONL), created if missing.
    #[arg(long, short)]
    pub(crate) output: PathBuf,
    /// Your name, written into each row; a rerun skips what this rater labelled.
    #[arg(long)]
    pub(crate) rater: Option<String>,
    /// Label a random subset of N evaluations.
    #[arg(long, value_name = "N")]
    pub(crate) sample: Option<usize>,
    /// Seed of the random subset (the same seed picks the same subset).
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Half the subset from the metric's passes, half from its failures
    /// (the --metric given, else tool_correctness).
    #[arg(long)]
    pub(crate) balanced: bool,
    // `--metric M` labels for metric M only (written into each row; at
    // most one); without it a row labels the case as a whole.
    #[command(flatten)]
    pub(crate) scoring: ScoringArgs,
    #[command(flatten)]
    pub(crate) input: InputArgs,
}

/// The evaluations `replay` gives for these flags (the same settings,
/// fixture, extractor and reading), with each trace's request kept. This is
/// the one place the calibration commands reach the replay path.
fn replay_evaluations(
    input: &InputArgs,
    scoring: &ScoringArgs,
    expected: &std::path::Path,
) -> anyhow::Result<report::Report> {
    input.check_paths()?;
    let config = input.config.load()?;
    let extractor = input.extractor(&config)?;
    let mut setup = Setup::new(Options {
        scoring: scoring.scoring(&config, extractor)?,
        fixture: super::fixture(Some(expected)),
        ..Options::default()
    })?;
    super::print_notes(&setup);
    // The session shows each call's arguments and result.
    let pipeline = setup.pipeline(OutputNeeds {
        call_results: true,
        call_args: true,
    });
    let prepared = report::Report {
        timelines: Some(Default::default()),
        ..Default::default()
    };
    Ok(replay::replay(
        prepared,
        &Source::paths(&input.paths),
        &pipeline,
        setup.take_rejected(),
        &input.read_options(),
        progress_printer(input.quiet),
    ))
}

pub(crate) fn cmd_calibrate(args: CalibrateArgs) -> anyhow::Result<u8> {
    let gate = Gate {
        min_kappa: args.min_kappa,
        min_agreement: args.min_agreement,
        min_labels: args.min_labels,
        target_width: args.target_width,
    };
    for (flag, v) in [
        ("--min-kappa", gate.min_kappa),
        ("--min-agreement", gate.min_agreement),
    ] {
        if let Some(v) = v {
            anyhow::ensure!((-1.0..=1.0).contains(&v), "{flag} {v} is outside -1..=1");
        }
    }
    anyhow::ensure!(
        gate.target_width > 0.0 && gate.target_width <= 1.0,
        "--target-width {} is outside (0, 1]",
        gate.target_width
    );
    // Read first: a missing labels file is a usage error before any judge call.
    let labels = labels::read(&args.labels)?;
    let run = replay_evaluations(&args.input, &args.scoring, &args.expected)?;
    let calibration = calibrate::calibrate(&run.evaluations, &run.metrics, &labels.labels);
    let mut rejected = run.rejected.clone();
    rejected.extend(labels.rejected);
    let mut result = calibrate::gate(&calibration, &gate);
    if !rejected.is_empty() {
        result.code = exit::INPUT;
    }
    let r = CalibrationReport {
        calibration: &calibration,
        rejected: &rejected,
        gate: &result,
        labels: labels.labels.len(),
    };
    let mut out = super::open_output(args.output.as_ref())?;
    match args.format {
        CalibrateFormat::Table => report::write_calibration_table(&r, &mut out),
        CalibrateFormat::Jsonl => report::write_calibration_jsonl(&r, &mut out),
        CalibrateFormat::Html => report::write_calibration_html(&r, &mut out),
        CalibrateFormat::Markdown => report::write_calibration_markdown(&r, &mut out),
    }
    .and_then(|()| out.flush())
    .context("cannot write the calibration report")?;
    for rej in &rejected {
        eprintln!(
            "toolscore: rejected: {}",
            report::printable(&rej.to_string())
        );
    }
    let judge_errors: usize = calibration
        .metrics
        .iter()
        .filter_map(|m| m.excluded.get(&calibrate::Reason::JudgeError))
        .sum();
    if judge_errors > 0 {
        eprintln!(
            "toolscore: {judge_errors} labelled evaluation(s) left out: the judge gave no verdict"
        );
    }
    for msg in &result.messages {
        eprintln!("toolscore: gate: {}", report::printable(msg));
    }
    Ok(result.code)
}

pub(crate) fn cmd_label(args: LabelArgs) -> anyhow::Result<u8> {
    anyhow::ensure!(
        args.scoring.metrics.len() <= 1,
        "`label` labels one metric at a time; {} --metric flags given",
        args.scoring.metrics.len()
    );
    if args.balanced {
        anyhow::ensure!(args.sample.is_some(), "--balanced needs --sample N");
    }
    let run = replay_evaluations(&args.input, &args.scoring, &args.expected)?;
    for rej in &run.rejected {
        eprintln!(
            "toolscore: rejected: {}",
            report::printable(&rej.to_string())
        );
    }
    anyhow::ensure!(
        !run.evaluations.is_empty(),
        "nothing to label: no trace joined a case of {}",
        args.expected.display()
    );
    // The metric labelled is the one computed: its label as results name it.
    let metric = if args.scoring.metrics.is_empty() {
        None
    } else {
        run.metrics.first().cloned()
    };
    let plan = session::Plan {
        metric,
        rater: args.rater.clone(),
        sample: args.sample,
        seed: args.seed,
        balanced: args.balanced,
    };
    let done = session::run(&run, &plan, &args.output)?;
    eprintln!("{done}");
    Ok(if run.rejected.is_empty() {
        exit::PASS
    } else {
        exit::INPUT
    })
}
