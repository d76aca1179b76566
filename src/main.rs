//! The `traceval` command line: parses flags, calls the library, maps errors to
//! exit codes (0 pass, 1 some case failed, 2 usage or input error).

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};

use traceval::extract::Extractor;
use traceval::ingest::Limits;
use traceval::replay::{self, Progress, ScoreSettings};
use traceval::report::{self, exit};
use traceval::score::native::{ArgPolicy, Headline, NativeConfig};
use traceval::score::{registry, MetricOptions};

#[derive(Parser)]
#[command(
    name = "traceval",
    version,
    about = "Score AI agents on tool correctness from OpenTelemetry traces",
    after_help = "Exit codes: 0 all cases pass, 1 some case failed, 2 usage error or rejected input."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Score exported trace files against expected tools.
    Replay(ReplayArgs),
    /// Show the tool calls found in trace files.
    Inspect(InspectArgs),
    /// List the available metrics.
    Metrics,
    /// Score tool-call cases (JSONL) without traces, with any metrics.
    Score(ScoreArgs),
}

#[derive(Clone, Copy, ValueEnum)]
enum ReportFormat {
    Table,
    Jsonl,
    Junit,
}

#[derive(Clone, Copy, ValueEnum)]
enum InspectFormat {
    Table,
    Jsonl,
}

#[derive(Args)]
struct InputArgs {
    /// Trace files or directories (walked recursively); `-` reads stdin.
    /// OTLP/JSON, JSON lines, OTLP protobuf, gzip of any of them.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Cap on the inflated size of a gzip input, in MiB.
    #[arg(long, default_value_t = 512, env = "TRACEVAL_MAX_INFLATED_MIB")]
    max_inflated_mib: u64,
    /// No progress on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// Count retriever spans (MLflow RETRIEVER, Langfuse/LangSmith retriever) as tool calls.
    #[arg(long, env = "TRACEVAL_RETRIEVERS_AS_TOOLS")]
    retrievers_as_tools: bool,
}

impl InputArgs {
    fn limits(&self) -> Limits {
        Limits {
            max_inflated_bytes: self.max_inflated_mib.saturating_mul(1024 * 1024),
        }
    }

    fn extractor(&self) -> Extractor {
        Extractor::default().with_retrievers(self.retrievers_as_tools)
    }
}

#[derive(Args)]
struct ReplayArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Fixture file of expected tools (JSONL or a JSON array).
    #[arg(long, short = 'e', env = "TRACEVAL_EXPECTED")]
    expected: Option<PathBuf>,
    /// Metric to score with (repeatable; `all` for every one). The first is the headline.
    #[arg(long = "metric", short = 'm', default_value = "tool_correctness")]
    metrics: Vec<String>,
    /// Pass threshold (cases may override). Default: 0.5 for tool_correctness,
    /// each preset's own otherwise.
    #[arg(long, env = "TRACEVAL_THRESHOLD")]
    threshold: Option<f64>,
    /// Strict mode for presets that have one.
    #[arg(long)]
    strict: bool,
    /// tool_correctness argument policy: ignore, exact, subset, superset, fuzzy:T.
    /// Default: subset where an expectation has args.
    #[arg(long = "args")]
    args_policy: Option<String>,
    /// tool_correctness headline score.
    #[arg(long = "score", default_value = "f1", value_parser = ["recall", "precision", "f1", "order", "exact"])]
    headline: String,
    /// Output format.
    #[arg(long, short, value_enum, default_value = "table")]
    format: ReportFormat,
    /// Write the report here instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct InspectArgs {
    #[command(flatten)]
    input: InputArgs,
    #[arg(long, short, value_enum, default_value = "table")]
    format: InspectFormat,
    #[arg(long, short)]
    output: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Replay(args) => cmd_replay(args),
        Command::Inspect(args) => cmd_inspect(args),
        Command::Metrics => cmd_metrics(),
        Command::Score(args) => cmd_score(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("traceval: error: {err:#}");
            ExitCode::from(exit::INPUT)
        }
    }
}

fn open_output(path: Option<&PathBuf>) -> anyhow::Result<Box<dyn Write>> {
    Ok(match path {
        Some(p) => Box::new(BufWriter::new(
            File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
        None => Box::new(BufWriter::new(io::stdout().lock())),
    })
}

/// Progress on stderr when a person is watching (a terminal) and not `--quiet`.
fn progress_printer(quiet: bool) -> impl FnMut(Progress) {
    let show = !quiet && io::stderr().is_terminal();
    let mut last = std::time::Instant::now();
    move |p: Progress| {
        if !show || (p.done < p.total && last.elapsed().as_millis() < 200) {
            return;
        }
        last = std::time::Instant::now();
        eprint!(
            "\rreading {}/{} input(s), {} span(s)",
            p.done, p.total, p.spans
        );
        if p.done == p.total {
            eprintln!();
        }
    }
}

fn score_settings(args: &ReplayArgs) -> anyhow::Result<ScoreSettings> {
    let mut native = NativeConfig {
        headline: args.headline.parse::<Headline>()?,
        ..NativeConfig::default()
    };
    if let Some(p) = &args.args_policy {
        native.args = Some(p.parse::<ArgPolicy>()?);
    }
    if let Some(t) = args.threshold {
        anyhow::ensure!((0.0..=1.0).contains(&t), "--threshold {t} is outside 0..=1");
        native.threshold = t;
    }
    let mut metrics = Vec::new();
    for m in &args.metrics {
        if m == "all" {
            metrics.extend(registry::all_names().into_iter().map(String::from));
        } else if !metrics.contains(m) {
            metrics.push(m.clone());
        }
    }
    let settings = ScoreSettings {
        metrics,
        options: MetricOptions {
            threshold: args.threshold,
            strict: args.strict.then_some(true),
        },
        native,
    };
    settings.validate()?;
    Ok(settings)
}

fn cmd_replay(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    let settings = score_settings(&args)?;
    let cases = match &args.expected {
        Some(p) => Some(traceval::expect::load(p)?),
        None => None,
    };
    let report = replay::replay(
        &args.input.paths,
        cases,
        &args.input.extractor(),
        &settings,
        &args.input.limits(),
        progress_printer(args.input.quiet),
    );
    let mut out = open_output(args.output.as_ref())?;
    match args.format {
        ReportFormat::Table => report::write_table(&report, &mut out),
        ReportFormat::Jsonl => report::write_jsonl(&report, &mut out),
        ReportFormat::Junit => report::write_junit(&report, &mut out),
    }
    .and_then(|()| out.flush())
    .context("cannot write the report")?;
    // Machine formats on stdout stay clean; people still see what was rejected.
    if !matches!(args.format, ReportFormat::Table) || args.output.is_some() {
        for r in &report.rejected {
            eprintln!("traceval: rejected: {r}");
        }
        if !args.input.quiet {
            eprintln!("{}", report.summary_line());
        }
    }
    Ok(ExitCode::from(report.exit_code()))
}

fn cmd_inspect(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let (traces, rejected, _stats) = replay::read_traces(
        &args.input.paths,
        &args.input.limits(),
        progress_printer(args.input.quiet),
    );
    let extractor = args.input.extractor();
    let mut out = open_output(args.output.as_ref())?;
    for t in &traces {
        let calls = extractor.extract(t);
        match args.format {
            InspectFormat::Jsonl => {
                let row = serde_json::json!({
                    "trace_id": t.id.to_string(),
                    "spans": t.spans.len(),
                    "orphans": t.orphans.len(),
                    "tools": calls,
                });
                writeln!(out, "{row}")?;
            }
            InspectFormat::Table => {
                writeln!(
                    out,
                    "trace {}  ({} spans, {} tool calls)",
                    t.id,
                    t.spans.len(),
                    calls.len()
                )?;
                for c in &calls {
                    let args = c
                        .args
                        .as_ref()
                        .map_or_else(|| "-".to_string(), |a| a.to_string());
                    let status = match &c.error_message {
                        Some(m) => format!("error: {}", report_line(m)),
                        None => format!("{:?}", c.status).to_lowercase(),
                    };
                    let indent = "  ".repeat(c.depth + 1);
                    writeln!(
                        out,
                        "{indent}{} {}  [{}; {}; span {}]",
                        c.name, args, status, c.convention, c.span_id
                    )?;
                }
            }
        }
    }
    out.flush()?;
    for r in &rejected {
        eprintln!("traceval: rejected: {r}");
    }
    Ok(ExitCode::from(if rejected.is_empty() {
        exit::PASS
    } else {
        exit::INPUT
    }))
}

/// First line of a possibly multi-line message (tracebacks), shortened.
fn report_line(m: &str) -> String {
    let first = m.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    first.chars().take(120).collect()
}

fn cmd_metrics() -> anyhow::Result<ExitCode> {
    let mut out = open_output(None)?;
    let rows = registry::catalog();
    let w = rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
    let lw = rows
        .iter()
        .map(|r| r.library.len() + r.version.len() + 1)
        .max()
        .unwrap_or(0);
    for r in rows {
        let lib = format!("{} {}", r.library, r.version);
        writeln!(out, "{:w$}  {:lw$}  {}", r.name, lib, r.summary)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
struct ScoreArgs {
    /// Cases file, one JSON object per line: `{"id", "tools_called": [{"name",
    /// "args"?}], "expected_tools": [...]}` (`input_parameters` is accepted for
    /// `args`, a bare string for a tool without args); `-` reads stdin.
    #[arg(long)]
    cases: PathBuf,
    /// Metric to score with (repeatable; `all` for every one).
    #[arg(long = "metric", short = 'm', default_value = "tool_correctness")]
    metrics: Vec<String>,
    /// Pass threshold for metrics that have one (default: each metric's own).
    #[arg(long)]
    threshold: Option<f64>,
    /// Strict mode for presets that have one (deepeval, cubeo).
    #[arg(long)]
    strict: bool,
    /// Write the JSONL results here instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
}

fn cmd_score(args: ScoreArgs) -> anyhow::Result<ExitCode> {
    use traceval::score::cases;
    if let Some(t) = args.threshold {
        anyhow::ensure!((0.0..=1.0).contains(&t), "--threshold {t} is outside 0..=1");
    }
    let opts = MetricOptions {
        threshold: args.threshold,
        strict: args.strict.then_some(true),
    };
    let metrics = cases::build_metrics(&args.metrics, &opts, &NativeConfig::default())?;
    let label = args.cases.display().to_string();
    let input: Box<dyn io::BufRead> = if label == "-" {
        Box::new(io::stdin().lock())
    } else {
        let file = File::open(&args.cases).with_context(|| format!("cannot open {label}"))?;
        Box::new(io::BufReader::new(file))
    };
    let mut out = open_output(args.output.as_ref())?;
    let summary = cases::score_lines(input, &metrics, &mut out, |bad| {
        eprintln!("traceval: rejected: {label}: {bad}");
    })
    .and_then(|s| out.flush().map(|()| s))
    .with_context(|| format!("scoring {label}"))?;
    Ok(ExitCode::from(if summary.rejected.is_empty() {
        exit::PASS
    } else {
        exit::INPUT
    }))
}
