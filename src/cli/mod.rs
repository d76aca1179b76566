//! The command line: its flags (what each command takes, and how flags
//! become the library's settings) and [`run`], which the `toolscore` binary
//! and the Python wheel's `toolscore` command both call, so both are one
//! program.

mod calibrate;
mod commands;
pub mod embed;
mod history;
pub(crate) mod progress;

pub use commands::run;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::{Config, TableFormat};
use crate::evaluate::{MetricSpec, ScoreSettings};
use crate::extract::{Extractor, Scope};
use crate::ingest::stream::StreamOptions;
use crate::ingest::Limits;
use crate::judge::{Judge, JudgeConfig, JudgeFlags};
use crate::run::record::RecordJoin;
use crate::run::replay;
use crate::run::{Fixture, Scoring, Setup};
use crate::score::native::{ArgPolicy, Headline, NativeConfig};
use crate::score::MetricOptions;

#[derive(Parser)]
#[command(
    name = "toolscore",
    version,
    about = "Score AI agents on tool correctness from OpenTelemetry traces",
    after_help = "Exit codes: 0 all cases pass, 1 some case failed, 2 usage error, rejected \
                  input, nothing to score or a judge error (could not evaluate)."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Score exported trace files against expected tools.
    #[command(after_help = "Examples:
  toolscore replay traces/ -e expected.jsonl
  toolscore replay traces.jsonl -e expected.jsonl -f junit -o report.xml
  toolscore replay traces/ -e expected.jsonl --baseline last.jsonl --fail-on regression
  toolscore replay traces/ -e goldens.json -m deepeval.default -m tool_correctness")]
    Replay(Box<ReplayArgs>),
    /// Show the tool calls found in trace files.
    #[command(after_help = "Examples:
  toolscore inspect traces/
  toolscore inspect traces.jsonl --format jsonl -o calls.jsonl
  toolscore inspect trace.json --explain     (why each span is, or is not, a tool call)")]
    Inspect(InspectArgs),
    /// Write a fixture from the tool calls of good runs: one case per trace,
    /// ready to edit.
    #[command(after_help = "Examples:
  toolscore record traces/ -o expected.jsonl
  toolscore record traces.jsonl -o expected.jsonl --join user_text
  toolscore record traces/ -o expected.jsonl --join match:session.id --force
  toolscore record trace.json -o -     (the cases on stdout)
Then: toolscore replay traces/ -e expected.jsonl")]
    Record(RecordArgs),
    /// List the available metrics.
    Metrics,
    /// Score tool-call cases (JSONL) without traces, with any metrics.
    Score(ScoreArgs),
    /// Print the active convention rules (built-in plus the config's).
    Conventions(ConventionsArgs),
    /// Receive OTLP (gRPC and HTTP) and score agent traces as they complete.
    #[command(after_help = "Examples:
  toolscore serve -e expected.jsonl --output results.jsonl
  OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 python my_agent.py")]
    Serve(Box<ServeArgs>),
    /// Compare two JSONL reports case by case: improved, regressed,
    /// unchanged, new, gone. Exit 1 when a case regressed beyond --tolerance.
    Diff(DiffArgs),
    /// How often a metric agrees with human labels: accuracy, Cohen's kappa,
    /// agreement on passes and failures with 95% intervals, disagreements.
    /// Exit 0 every metric meets the gate, 1 one falls short, 2 too few labels.
    #[command(after_help = "Examples:
  toolscore calibrate traces/ -e expected.jsonl --labels labels.jsonl -m mlflow.llm_fuzzy --judge-url URL --judge-model M
  toolscore calibrate traces/ -e expected.jsonl --labels labels.csv --min-kappa 0.6 --min-agreement 0.8
  toolscore calibrate traces/ -e expected.jsonl --labels labels.jsonl -f markdown -o calibration.md")]
    Calibrate(Box<calibrate::CalibrateArgs>),
    /// Label evaluations by hand, one key each, in the terminal (blind to the metric).
    #[command(
        after_help = "Keys: p pass, f fail, s skip, u undo, q quit. Each answer is appended at once.
Examples:
  toolscore label traces/ -e expected.jsonl -o labels.jsonl --rater ann
  toolscore label traces/ -e expected.jsonl -o labels.jsonl --sample 40 --seed 1 --balanced"
    )]
    Label(Box<calibrate::LabelArgs>),
    /// The runs saved in the run store, newest first; `runs show RUN`, `runs prune`.
    #[command(after_help = "Examples:
  toolscore runs --limit 5
  toolscore runs --label ci=nightly -f jsonl
  toolscore runs show last -f jsonl
  toolscore runs show last~1
  toolscore runs prune --keep 100")]
    Runs(history::RunsArgs),
    /// Per case, pass/fail over the last runs of a fixture: stable-pass,
    /// stable-fail, flaky, regressed, fixed or new.
    #[command(after_help = "Examples:
  toolscore trend
  toolscore trend --last 20 --fixture expected.jsonl
  toolscore trend checkout-flow refund-flow -f jsonl")]
    Trend(history::TrendArgs),
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FailOn {
    /// Exit 1 when a case fails its threshold (or matched no trace).
    Threshold,
    /// Exit 1 only when a case scored lower than in --baseline by more than --tolerance.
    Regression,
}

#[derive(Args)]
pub(crate) struct DiffArgs {
    /// The earlier run: a JSONL report, or a saved run (`last~1`, an id).
    pub(crate) old: PathBuf,
    /// The later run: a JSONL report, or a saved run (`last`, an id).
    pub(crate) new: PathBuf,
    /// Drop in score a regression must exceed to fail.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) tolerance: f64,
    /// How the comparison is written (the HTML page is `replay --baseline`'s).
    #[arg(long, short, value_enum, default_value = "table")]
    pub(crate) format: DiffFormat,
    /// Write the comparison to this file instead of stdout.
    #[arg(long, short)]
    pub(crate) output: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) store: history::StoreArg,
}

/// What `diff` writes: the report formats but the HTML page, which is
/// `replay`'s (with `--baseline`).
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum DiffFormat {
    Table,
    Jsonl,
    Junit,
    /// A summary for a pull request.
    Markdown,
}

#[derive(Args)]
pub(crate) struct ConfigArg {
    /// Config file (TOML, or YAML for .yaml/.yml): user conventions, session
    /// keys, name normalization. Unknown keys are errors.
    #[arg(long, env = "TOOLSCORE_CONFIG", help_heading = "Input")]
    pub(crate) config: Option<PathBuf>,
}

impl ConfigArg {
    pub(crate) fn load(&self) -> anyhow::Result<Config> {
        Ok(match &self.config {
            Some(p) => Config::load(p)?,
            None => Config::default(),
        })
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ConventionsFormat {
    Table,
    Toml,
    Yaml,
    Json,
}

#[derive(Args)]
pub(crate) struct ConventionsArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    /// `toml`/`yaml`/`json` print `[[conventions.rule]]` entries to paste into a config.
    #[arg(long, short, value_enum, default_value = "table")]
    pub(crate) format: ConventionsFormat,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ReportFormat {
    Table,
    Jsonl,
    Junit,
    /// One self-contained page (replay only).
    Html,
    /// A GitHub-flavoured summary for a pull request or job summary (at most 65,536 characters).
    Markdown,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum InspectFormat {
    Table,
    Jsonl,
}

#[derive(Args)]
pub(crate) struct InputArgs {
    /// Trace files or directories (walked recursively); `-` reads stdin.
    /// Every format read: `--help`.
    #[arg(required = true, long_help = crate::ingest::Format::paths_help())]
    pub(crate) paths: Vec<PathBuf>,
    /// Cap on the inflated size of a gzip input, in MiB.
    #[arg(
        long,
        default_value_t = 512,
        env = "TOOLSCORE_MAX_INFLATED_MIB",
        help_heading = "Tuning"
    )]
    pub(crate) max_inflated_mib: u64,
    /// Score a trace once it has a root span and none of its spans came in
    /// the last N MiB of input, so memory holds only recent traces; `all`
    /// holds every trace to the end of the input.
    #[arg(long, default_value = "8", value_parser = parse_hold, env = "TOOLSCORE_HOLD_WINDOW_MIB", help_heading = "Tuning")]
    pub(crate) hold_window_mib: HoldWindow,
    /// Decoding threads [default: one per core].
    #[arg(long, env = "TOOLSCORE_THREADS", help_heading = "Tuning")]
    pub(crate) threads: Option<usize>,
    /// No progress on stderr, nor the summary lines written there (a report
    /// in a file or not a table: the run's and the baseline comparison's;
    /// record's), so the report and the exit code alone say how it went.
    #[arg(long, short, help_heading = "Output")]
    pub(crate) quiet: bool,
    /// Count retriever spans (MLflow RETRIEVER, Langfuse/LangSmith retriever) as tool calls.
    #[arg(long, env = "TOOLSCORE_RETRIEVERS_AS_TOOLS", help_heading = "Scoring")]
    pub(crate) retrievers_as_tools: bool,
    #[command(flatten)]
    pub(crate) config: ConfigArg,
}

/// `--hold-window-mib`: bytes, or `None` for `all`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HoldWindow(Option<u64>);

pub(crate) fn parse_hold(s: &str) -> Result<HoldWindow, String> {
    if s.eq_ignore_ascii_case("all") {
        return Ok(HoldWindow(None));
    }
    s.parse::<u64>()
        .map(|mib| HoldWindow(Some(mib.saturating_mul(1024 * 1024))))
        .map_err(|_| format!("`{s}` is not a number of MiB or `all`"))
}

impl InputArgs {
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            max_inflated_bytes: self.max_inflated_mib.saturating_mul(1024 * 1024),
        }
    }

    pub(crate) fn read_options(&self) -> replay::ReadOptions {
        let mut stream = StreamOptions::default();
        if let Some(n) = self.threads {
            stream.threads = n.max(1);
        }
        replay::ReadOptions {
            limits: self.limits(),
            stream,
            hold_window: self.hold_window_mib.0,
        }
    }

    /// A path that does not exist is a usage error, before any work.
    pub(crate) fn check_paths(&self) -> anyhow::Result<()> {
        check_paths(&self.paths)
    }

    pub(crate) fn extractor(&self, config: &Config) -> anyhow::Result<Extractor> {
        let x = config.extractor()?;
        let on = x.retrievers_as_tools || self.retrievers_as_tools;
        Ok(x.with_retrievers(on))
    }
}

/// The scoring flags `replay` and `serve` share, so a trace scores the same
/// live as replayed.
#[derive(Args)]
pub(crate) struct ScoringArgs {
    /// Metric to score with (repeatable; `all` for every one). The first is the headline.
    /// Per-metric options: `NAME:threshold=0.7,strict=true`.
    /// Default: tool_correctness (adk.exact for a Google ADK eval set).
    #[arg(long = "metric", short = 'm', help_heading = "Scoring")]
    pub(crate) metrics: Vec<String>,
    /// Pass threshold (cases may override). Default: 0.5 for tool_correctness,
    /// each preset's own otherwise.
    #[arg(long, env = "TOOLSCORE_THRESHOLD", help_heading = "Scoring")]
    pub(crate) threshold: Option<f64>,
    /// Strict mode for presets that have one.
    #[arg(long, help_heading = "Scoring")]
    pub(crate) strict: bool,
    /// tool_correctness argument policy: ignore, exact, subset, superset, fuzzy:T.
    /// Default: subset where an expectation has args.
    #[arg(long = "args", help_heading = "Scoring")]
    pub(crate) args_policy: Option<String>,
    /// tool_correctness headline score.
    #[arg(long = "score", default_value = "f1", value_parser = ["recall", "precision", "f1", "order", "exact"], help_heading = "Scoring")]
    pub(crate) headline: String,
    /// Which calls are scored: `all`, or `top-level` (not those of sub-agents run inside tools).
    #[arg(long, default_value = "all", value_parser = ["all", "top-level"], env = "TOOLSCORE_SCOPE", help_heading = "Scoring")]
    pub(crate) scope: String,
    /// Compare tool names normalized (trim, case, `-`/`_`, known prefixes, the
    /// config's renames).
    #[arg(long, env = "TOOLSCORE_NORMALIZE", help_heading = "Scoring")]
    pub(crate) normalize: bool,
    #[command(flatten)]
    pub(crate) judge: JudgeFlags,
}

/// The run's judge, if the flags or the config ask for one.
fn build_judge(flags: &JudgeFlags, config: &Config) -> anyhow::Result<Option<Arc<Judge>>> {
    let mut c: JudgeConfig = config.judge.clone().unwrap_or_default();
    flags.apply(&mut c)?;
    if !c.is_set() {
        return Ok(None);
    }
    let key = ["TOOLSCORE_JUDGE_API_KEY", "OPENAI_API_KEY"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()));
    Ok(Some(Arc::new(Judge::new(c, key)?)))
}

#[derive(Args)]
pub(crate) struct ReplayArgs {
    /// Fixture file of expected tools (JSONL or a JSON array).
    #[arg(
        long,
        short = 'e',
        env = "TOOLSCORE_EXPECTED",
        help_heading = "Expectations"
    )]
    pub(crate) expected: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) scoring: ScoringArgs,
    /// Output format.
    #[arg(
        long,
        short,
        value_enum,
        default_value = "table",
        help_heading = "Output"
    )]
    pub(crate) format: ReportFormat,
    /// Write the report here instead of stdout.
    #[arg(long, short, help_heading = "Output")]
    pub(crate) output: Option<PathBuf>,
    /// An earlier run's JSONL report, or a saved run (`last`: the newest
    /// of the same fixture, `last~N`, an id): every case is marked
    /// improved, regressed, unchanged, new or gone (table and JSONL output).
    #[arg(long, help_heading = "Output")]
    pub(crate) baseline: Option<PathBuf>,
    /// What exits 1: a failed case, or a regression against --baseline.
    #[arg(long, value_enum, default_value = "threshold", help_heading = "Output")]
    pub(crate) fail_on: FailOn,
    /// Drop in score a regression must exceed to fail (with --fail-on regression).
    #[arg(long, default_value_t = 0.0, help_heading = "Output")]
    pub(crate) tolerance: f64,
    /// When a case that joined several traces (trials) passes: `all` of
    /// them passed, `any` did, or `rate:R`, at least that share did.
    #[arg(long, default_value = "all", help_heading = "Output")]
    pub(crate) trials_pass: crate::evaluate::TrialsPass,
    #[command(flatten)]
    pub(crate) input: InputArgs,
    #[command(flatten)]
    pub(crate) save: history::SaveArgs,
}

#[derive(Args)]
pub(crate) struct InspectArgs {
    #[arg(
        long,
        short,
        value_enum,
        default_value = "table",
        help_heading = "Output"
    )]
    pub(crate) format: InspectFormat,
    #[arg(long, short, help_heading = "Output")]
    pub(crate) output: Option<PathBuf>,
    /// Per span: the convention rule that classified it or, for a span no
    /// rule matched, the rules that almost did and what they missed.
    #[arg(long, help_heading = "Output")]
    pub(crate) explain: bool,
    /// Expectations file (any accepted format): each trace also names the
    /// cases it joins and how (`joined_by`).
    #[arg(long, short = 'e', help_heading = "Expectations")]
    pub(crate) expected: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) input: InputArgs,
}

#[derive(Args)]
pub(crate) struct RecordArgs {
    /// Where the cases go (JSONL); `-` writes them to stdout. An existing
    /// file is not replaced without --force.
    #[arg(long, short, required = true, help_heading = "Output")]
    pub(crate) output: PathBuf,
    /// Replace the output file if it exists.
    #[arg(long, help_heading = "Output")]
    pub(crate) force: bool,
    /// How each case finds its trace: `trace_id` (a case per trace),
    /// `user_text` (a case per distinct user request) or `match:KEY` (a case
    /// per value of attribute KEY; a session key's case covers the session).
    #[arg(
        long,
        default_value = "trace_id",
        value_parser = RecordJoin::from_str,
        help_heading = "Expectations"
    )]
    pub(crate) join: RecordJoin,
    /// The pass threshold written into each case: at 1 (the default) any
    /// change to a recorded call fails its case; lower it to allow some.
    #[arg(long, default_value_t = 1.0, help_heading = "Expectations")]
    pub(crate) threshold: f64,
    #[command(flatten)]
    pub(crate) input: InputArgs,
}

impl ScoringArgs {
    pub(crate) fn scope(&self) -> anyhow::Result<Scope> {
        self.scope.parse().map_err(anyhow::Error::msg)
    }

    pub(crate) fn settings(&self, config: &Config) -> anyhow::Result<ScoreSettings> {
        let mut native = NativeConfig {
            headline: self.headline.parse::<Headline>()?,
            ..NativeConfig::default()
        };
        if let Some(p) = self.args_policy.as_deref() {
            native.args = Some(p.parse::<ArgPolicy>()?);
        }
        if let Some(t) = self.threshold {
            anyhow::ensure!((0.0..=1.0).contains(&t), "--threshold {t} is outside 0..=1");
            native.threshold = t;
        }
        let settings = ScoreSettings {
            metrics: if self.metrics.is_empty() {
                MetricSpec::parse_list(&[crate::score::native::NATIVE_NAME])?
            } else {
                MetricSpec::parse_list(&self.metrics)?
            },
            options: MetricOptions {
                threshold: self.threshold,
                strict: self.strict.then_some(true),
            },
            native,
            names: config.normalizer(self.normalize)?,
            session_keys: config.session_keys(),
            judge: build_judge(&self.judge, config)?,
            custom: Vec::new(),
        };
        Ok(settings)
    }
}

#[derive(Args)]
pub(crate) struct ScoreArgs {
    /// Cases file, one JSON object per line: `{"id", "tools_called": [{"name",
    /// "args"?}], "expected_tools": [...]}` (`input_parameters` is accepted for
    /// `args`, a bare string for a tool without args); `-` reads stdin.
    #[arg(long)]
    pub(crate) cases: PathBuf,
    /// Metric to score with (repeatable; `all` for every one).
    /// Per-metric options: `NAME:threshold=0.7,strict=true`.
    #[arg(long = "metric", short = 'm', default_value = "tool_correctness")]
    pub(crate) metrics: Vec<String>,
    /// Pass threshold for metrics that have one (default: each metric's own).
    #[arg(long)]
    pub(crate) threshold: Option<f64>,
    /// Strict mode for presets that have one (deepeval, cubeo).
    #[arg(long)]
    pub(crate) strict: bool,
    /// Write the JSONL results here instead of stdout.
    #[arg(long, short)]
    pub(crate) output: Option<PathBuf>,
}

#[derive(Args)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    pub(crate) serve: crate::serve::ServeFlags,
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) scoring: ScoringArgs,
    /// Count retriever spans as tool calls.
    #[arg(long, env = "TOOLSCORE_RETRIEVERS_AS_TOOLS")]
    pub(crate) retrievers_as_tools: bool,
    #[command(flatten)]
    pub(crate) save: history::SaveArgs,
}

impl ConventionsFormat {
    pub(crate) fn table_format(self) -> TableFormat {
        match self {
            ConventionsFormat::Table => TableFormat::Text,
            ConventionsFormat::Toml => TableFormat::Toml,
            ConventionsFormat::Yaml => TableFormat::Yaml,
            ConventionsFormat::Json => TableFormat::Json,
        }
    }
}

impl From<InspectFormat> for crate::run::inspect::InspectFormat {
    fn from(f: InspectFormat) -> Self {
        match f {
            InspectFormat::Table => crate::run::inspect::InspectFormat::Table,
            InspectFormat::Jsonl => crate::run::inspect::InspectFormat::Jsonl,
        }
    }
}

impl ScoreArgs {
    /// The run of `score --cases`.
    pub(crate) fn case_run(&self) -> anyhow::Result<crate::run::CaseRun> {
        if let Some(t) = self.threshold {
            anyhow::ensure!((0.0..=1.0).contains(&t), "--threshold {t} is outside 0..=1");
        }
        let opts = MetricOptions {
            threshold: self.threshold,
            strict: self.strict.then_some(true),
        };
        Ok(crate::run::CaseRun::new(
            MetricSpec::parse_list(&self.metrics)?,
            &opts,
        )?)
    }
}

impl ServeArgs {
    /// The scoring flags mean what they mean for `replay` (same settings,
    /// same extractor), so a trace scores the same live as replayed.
    pub(crate) fn scoring(&self, config: &Config) -> anyhow::Result<Scoring> {
        let x = config.extractor()?;
        let retrievers = x.retrievers_as_tools || self.retrievers_as_tools;
        self.scoring.scoring(config, x.with_retrievers(retrievers))
    }
}

impl ScoringArgs {
    /// The run's typed scoring options, with the user's `extractor`
    /// narrowed to `--scope`.
    pub(crate) fn scoring(&self, config: &Config, extractor: Extractor) -> anyhow::Result<Scoring> {
        Ok(Scoring {
            settings: self.settings(config)?,
            metrics_named: !self.metrics.is_empty(),
            extractor: extractor.with_scope(self.scope()?),
        })
    }
}

/// The fixture at `path`, if one was given.
pub(crate) fn fixture(path: Option<&Path>) -> Fixture {
    path.map_or(Fixture::None, |p| Fixture::Path(p.to_path_buf()))
}

/// Prints the setup's notes on stderr, as the command line does.
pub(crate) fn print_notes(setup: &Setup) {
    for note in setup.notes() {
        eprintln!("toolscore: note: {}", crate::report::printable(note.text()));
    }
}

/// Paths that do not exist are a usage error, before any work: the first
/// is named, with how many more.
pub fn check_paths(paths: &[PathBuf]) -> anyhow::Result<()> {
    let missing = crate::ingest::files::missing(paths);
    if let Some(first) = missing.first() {
        anyhow::bail!(
            "{}: no such file or directory{}",
            first.display(),
            match missing.len() {
                1 => String::new(),
                n => format!(" (and {} more missing paths)", n - 1),
            }
        );
    }
    Ok(())
}

pub(crate) fn check_tolerance(t: f64) -> anyhow::Result<()> {
    anyhow::ensure!(
        t.is_finite() && t >= 0.0,
        "--tolerance {t} must be a non-negative number"
    );
    Ok(())
}

/// Where a command writes its report: the file, else stdout.
pub(crate) fn open_output(path: Option<&PathBuf>) -> anyhow::Result<Box<dyn std::io::Write>> {
    Ok(match path {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    })
}
