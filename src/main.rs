//! The `toolscore` command line: parses flags, calls the library, maps errors to
//! exit codes (0 pass, 1 some case failed, 2 usage or input error).

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use toolscore::assemble::{session, Trace};
use toolscore::config::{self, Config, TableFormat};
use toolscore::evaluate::{Evaluator, MetricSet, MetricSpec, ScoreSettings};
use toolscore::extract::{Extractor, Scope};
use toolscore::ingest::projection::{KeepAll, KeyFilter};
use toolscore::ingest::stream::StreamOptions;
use toolscore::ingest::Limits;
use toolscore::judge::{Judge, JudgeConfig};
use toolscore::replay::{self, Progress};
use toolscore::report::{self, baseline, exit};
use toolscore::score::native::{ArgPolicy, Headline, NativeConfig};
use toolscore::score::{registry, MetricOptions};

/// Spans are decoded on the I/O threads and freed on the scoring threads;
/// mimalloc handles that pattern with far less CPU than glibc malloc.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Decoded spans are short-lived and freed on another thread than the one
/// that made them, so the allocator keeps taking fresh pages; as 2 MiB
/// transparent huge pages each costs a 2 MiB clear, which measured as a
/// quarter of a replay's time. 4 KiB pages cost that only where touched.
fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_THP_DISABLE takes plain integers and only
    // sets a flag of this process; failure (old kernels) changes nothing.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

#[derive(Parser)]
#[command(
    name = "toolscore",
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
    Replay(Box<ReplayArgs>),
    /// Show the tool calls found in trace files.
    Inspect(InspectArgs),
    /// List the available metrics.
    Metrics,
    /// Score tool-call cases (JSONL) without traces, with any metrics.
    Score(ScoreArgs),
    /// Print the active convention rules (built-in plus the config's).
    Conventions(ConventionsArgs),
    /// Receive OTLP (gRPC and HTTP) and score agent traces as they complete.
    Serve(Box<ServeArgs>),
    /// Compare two JSONL reports case by case: improved, regressed,
    /// unchanged, new, gone. Exit 1 when a case regressed beyond --tolerance.
    Diff(DiffArgs),
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FailOn {
    /// Exit 1 when a case fails its threshold (or matched no trace).
    Threshold,
    /// Exit 1 only when a case scored lower than in --baseline by more than --tolerance.
    Regression,
}

#[derive(Args)]
struct DiffArgs {
    /// The earlier run's JSONL report.
    old: PathBuf,
    /// The later run's JSONL report.
    new: PathBuf,
    /// Drop in score a regression must exceed to fail.
    #[arg(long, default_value_t = 0.0)]
    tolerance: f64,
    #[arg(long, short, value_enum, default_value = "table")]
    format: ReportFormat,
    #[arg(long, short)]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct ConfigArg {
    /// Config file (TOML, or YAML for .yaml/.yml): user conventions, session
    /// keys, name normalization. Unknown keys are errors.
    #[arg(long, env = "TOOLSCORE_CONFIG")]
    config: Option<PathBuf>,
}

impl ConfigArg {
    fn load(&self) -> anyhow::Result<Config> {
        Ok(match &self.config {
            Some(p) => Config::load(p)?,
            None => Config::default(),
        })
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum ConventionsFormat {
    Table,
    Toml,
    Yaml,
    Json,
}

#[derive(Args)]
struct ConventionsArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// `toml`/`yaml`/`json` print `[[conventions.rule]]` entries to paste into a config.
    #[arg(long, short, value_enum, default_value = "table")]
    format: ConventionsFormat,
}

#[derive(Clone, Copy, ValueEnum)]
enum ReportFormat {
    Table,
    Jsonl,
    Junit,
    /// One self-contained page (replay only).
    Html,
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
    #[arg(long, default_value_t = 512, env = "TOOLSCORE_MAX_INFLATED_MIB")]
    max_inflated_mib: u64,
    /// Score a trace once it has a root span and none of its spans came in
    /// the last N MiB of input, so memory holds only recent traces; `all`
    /// holds every trace to the end of the input.
    #[arg(long, default_value = "8", value_parser = parse_hold, env = "TOOLSCORE_HOLD_WINDOW_MIB")]
    hold_window_mib: HoldWindow,
    /// Decoding threads [default: one per core].
    #[arg(long, env = "TOOLSCORE_THREADS")]
    threads: Option<usize>,
    /// No progress on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// Count retriever spans (MLflow RETRIEVER, Langfuse/LangSmith retriever) as tool calls.
    #[arg(long, env = "TOOLSCORE_RETRIEVERS_AS_TOOLS")]
    retrievers_as_tools: bool,
    #[command(flatten)]
    config: ConfigArg,
}

/// `--hold-window-mib`: bytes, or `None` for `all`.
#[derive(Clone, Copy, Debug)]
struct HoldWindow(Option<u64>);

fn parse_hold(s: &str) -> Result<HoldWindow, String> {
    if s.eq_ignore_ascii_case("all") {
        return Ok(HoldWindow(None));
    }
    s.parse::<u64>()
        .map(|mib| HoldWindow(Some(mib.saturating_mul(1024 * 1024))))
        .map_err(|_| format!("`{s}` is not a number of MiB or `all`"))
}

impl InputArgs {
    fn limits(&self) -> Limits {
        Limits {
            max_inflated_bytes: self.max_inflated_mib.saturating_mul(1024 * 1024),
        }
    }

    fn read_options(&self) -> replay::ReadOptions {
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

    fn extractor(&self, config: &Config) -> anyhow::Result<Extractor> {
        let x = config.extractor()?;
        let on = x.retrievers_as_tools || self.retrievers_as_tools;
        Ok(x.with_retrievers(on))
    }
}

/// The scoring flags `replay` and `serve` share, so a trace scores the same
/// live as replayed.
#[derive(Args)]
struct ScoringArgs {
    /// Metric to score with (repeatable; `all` for every one). The first is the headline.
    /// Per-metric options: `NAME:threshold=0.7,strict=true`.
    /// Default: tool_correctness (adk.exact for a Google ADK eval set).
    #[arg(long = "metric", short = 'm')]
    metrics: Vec<String>,
    /// Pass threshold (cases may override). Default: 0.5 for tool_correctness,
    /// each preset's own otherwise.
    #[arg(long, env = "TOOLSCORE_THRESHOLD")]
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
    /// Which calls are scored: `all`, or `top-level` (not those of sub-agents run inside tools).
    #[arg(long, default_value = "all", value_parser = ["all", "top-level"], env = "TOOLSCORE_SCOPE")]
    scope: String,
    /// Compare tool names normalized (trim, case, `-`/`_`, known prefixes, the
    /// config's renames).
    #[arg(long, env = "TOOLSCORE_NORMALIZE")]
    normalize: bool,
    #[command(flatten)]
    judge: JudgeArgs,
}

/// The LLM judge (for `mlflow.llm_*` and `cubeo`): any OpenAI-compatible
/// chat completions API. The key is read from `TOOLSCORE_JUDGE_API_KEY`, else
/// `OPENAI_API_KEY`. Flags override the config's `[judge]`.
#[derive(Args)]
struct JudgeArgs {
    /// Base URL of the API; `/chat/completions` is appended
    /// (e.g. https://api.openai.com/v1, http://127.0.0.1:11434/v1 for Ollama).
    #[arg(long, env = "TOOLSCORE_JUDGE_URL")]
    judge_url: Option<String>,
    /// Model name as the server knows it.
    #[arg(long, env = "TOOLSCORE_JUDGE_MODEL")]
    judge_model: Option<String>,
    /// Extra request header `K=V` (repeatable).
    #[arg(long = "judge-header", value_name = "K=V")]
    judge_headers: Vec<String>,
    /// Directory caching answers by (model, prompt): a rerun costs nothing.
    #[arg(long, env = "TOOLSCORE_JUDGE_CACHE")]
    judge_cache: Option<PathBuf>,
    /// Print the judge prompts on stderr instead of calling the judge.
    #[arg(long)]
    judge_dry_run: bool,
    /// Judge requests in flight at once [default: 4].
    #[arg(long)]
    judge_concurrency: Option<usize>,
    /// Per-request timeout in seconds [default: 60].
    #[arg(long)]
    judge_timeout: Option<f64>,
    /// Retries after a 429, a 5xx or a timeout [default: 3].
    #[arg(long)]
    judge_retries: Option<u32>,
}

impl JudgeArgs {
    /// The run's judge, if the flags or the config ask for one.
    fn build(&self, config: &Config) -> anyhow::Result<Option<Arc<Judge>>> {
        let mut c: JudgeConfig = config.judge.clone().unwrap_or_default();
        if let Some(u) = &self.judge_url {
            c.url = Some(u.clone());
        }
        if let Some(m) = &self.judge_model {
            c.model = Some(m.clone());
        }
        for h in &self.judge_headers {
            let (k, v) = h
                .split_once('=')
                .with_context(|| format!("--judge-header `{h}` is not K=V"))?;
            c.headers.insert(k.trim().to_string(), v.trim().to_string());
        }
        if let Some(d) = &self.judge_cache {
            c.cache = Some(d.clone());
        }
        c.dry_run |= self.judge_dry_run;
        if let Some(n) = self.judge_concurrency {
            c.concurrency = n;
        }
        if let Some(t) = self.judge_timeout {
            c.timeout_secs = t;
        }
        if let Some(r) = self.judge_retries {
            c.retries = r;
        }
        if !c.is_set() {
            return Ok(None);
        }
        let key = ["TOOLSCORE_JUDGE_API_KEY", "OPENAI_API_KEY"]
            .iter()
            .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()));
        Ok(Some(Arc::new(Judge::new(c, key)?)))
    }
}

#[derive(Args)]
struct ReplayArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Fixture file of expected tools (JSONL or a JSON array).
    #[arg(long, short = 'e', env = "TOOLSCORE_EXPECTED")]
    expected: Option<PathBuf>,
    #[command(flatten)]
    scoring: ScoringArgs,
    /// Output format.
    #[arg(long, short, value_enum, default_value = "table")]
    format: ReportFormat,
    /// Write the report here instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// An earlier run's JSONL report: every case is marked improved,
    /// regressed, unchanged, new or gone (table and JSONL output).
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// What exits 1: a failed case, or a regression against --baseline.
    #[arg(long, value_enum, default_value = "threshold")]
    fail_on: FailOn,
    /// Drop in score a regression must exceed to fail (with --fail-on regression).
    #[arg(long, default_value_t = 0.0)]
    tolerance: f64,
}

#[derive(Args)]
struct InspectArgs {
    #[command(flatten)]
    input: InputArgs,
    #[arg(long, short, value_enum, default_value = "table")]
    format: InspectFormat,
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Per span: the convention rule that classified it or, for a span no
    /// rule matched, the rules that almost did and what they missed.
    #[arg(long)]
    explain: bool,
    /// Expectations file (any accepted format): each trace also names the
    /// cases it joins and how (`joined_by`).
    #[arg(long, short = 'e')]
    expected: Option<PathBuf>,
}

fn main() -> ExitCode {
    no_huge_pages();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Replay(args) => cmd_replay(*args),
        Command::Inspect(args) => cmd_inspect(args),
        Command::Metrics => cmd_metrics(),
        Command::Score(args) => cmd_score(args),
        Command::Conventions(args) => cmd_conventions(args),
        Command::Serve(args) => cmd_serve(*args),
        Command::Diff(args) => cmd_diff(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("toolscore: error: {err:#}");
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

/// Progress on stderr when a person is watching (a terminal) and not
/// `--quiet`: files, bytes and spans read so far, with a bar over the bytes.
fn progress_printer(quiet: bool) -> impl FnMut(Progress) {
    let show = !quiet && io::stderr().is_terminal();
    let mut bar: Option<ProgressBar> = None;
    move |p: Progress| {
        if !show {
            return;
        }
        // indicatif draws at most 20 times a second, however often it is told.
        let bar = bar.get_or_insert_with(|| progress_bar(&p));
        bar.set_message(format!("{}/{} files, {} spans", p.done, p.total, p.spans));
        bar.set_position(p.bytes);
        if p.done == p.total {
            bar.finish();
        }
    }
}

fn progress_bar(first: &Progress) -> ProgressBar {
    // The counts first: indicatif cuts lines at the terminal's width and the
    // bar takes what is left. Only stdin: no size to measure a bar against.
    let template = if first.total_bytes > 0 {
        "reading {msg}, {binary_bytes}/{binary_total_bytes} {wide_bar} eta {eta}"
    } else {
        "reading {msg} {spinner}"
    };
    // Set up hidden, so that nothing half-made is drawn.
    let bar = ProgressBar::with_draw_target(Some(first.total_bytes), ProgressDrawTarget::hidden());
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.set_draw_target(ProgressDrawTarget::stderr());
    // Redraws skipped by the rate limit, and the clock, catch up while a big
    // file is read.
    bar.enable_steady_tick(std::time::Duration::from_millis(250));
    bar
}

impl ScoringArgs {
    fn settings(&self, config: &Config) -> anyhow::Result<ScoreSettings> {
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
                MetricSpec::parse_list(&[toolscore::score::native::NATIVE_NAME])?
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
            judge: self.judge.build(config)?,
        };
        Ok(settings)
    }
}

fn cmd_replay(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    let config = args.input.config.load()?;
    let mut settings = args.scoring.settings(&config)?;
    let fixture_opts = toolscore::expect::FixtureOptions {
        session_keys: settings.session_keys.clone(),
    };
    let (cases, fixture_rejected) = match &args.expected {
        Some(p) => {
            let loaded = toolscore::expect::load_file(p, &fixture_opts)?;
            // A format's natural metrics (ADK eval sets: `adk.*`) when the
            // user named none.
            if let (Some(defaults), false) =
                (loaded.default_metrics(), !args.scoring.metrics.is_empty())
            {
                settings.metrics = MetricSpec::parse_list(defaults)?;
            }
            (Some(loaded.cases), loaded.rejected)
        }
        None => (None, Vec::new()),
    };
    let evaluator = Evaluator::new(settings, cases, None)?;
    let scope: Scope = args.scoring.scope.parse().map_err(anyhow::Error::msg)?;
    anyhow::ensure!(
        args.fail_on == FailOn::Threshold || args.baseline.is_some(),
        "--fail-on regression needs --baseline"
    );
    check_tolerance(args.tolerance)?;
    // Read before the run: a bad baseline is a usage error, found early.
    let old = args.baseline.as_deref().map(baseline::load).transpose()?;

    let extractor = args
        .input
        .extractor(&config)?
        .with_scope(scope)
        // Only JSONL shows each call's result.
        .with_results(matches!(args.format, ReportFormat::Jsonl));
    // The HTML page draws each trace's spans on a timeline.
    let prepared = report::Report {
        timelines: matches!(args.format, ReportFormat::Html).then(Default::default),
        ..Default::default()
    };
    let mut report = replay::replay_into(
        prepared,
        &args.input.paths,
        &evaluator,
        fixture_rejected,
        &extractor,
        &args.input.read_options(),
        &extractor.projection(evaluator.join_keys()),
        progress_printer(args.input.quiet),
    );
    report.hint = extractor.no_calls_hint(report.stats.spans, report.stats.tool_calls);
    let comparison =
        old.map(|old| baseline::compare(&old, &baseline::entries_of(&report), args.tolerance));
    let mut out = open_output(args.output.as_ref())?;
    match args.format {
        ReportFormat::Table => {
            report::write_table(&report, &mut out).and_then(|()| match &comparison {
                Some(c) => {
                    writeln!(out, "\nAgainst the baseline:")?;
                    baseline::write_table(c, &mut out)
                }
                None => Ok(()),
            })
        }
        ReportFormat::Jsonl => report::write_jsonl(&report, &mut out).and_then(|()| {
            comparison
                .as_ref()
                .map_or(Ok(()), |c| baseline::write_jsonl(c, &mut out))
        }),
        // One XML document: the comparison has its own (`toolscore diff`).
        ReportFormat::Junit => report::write_junit(&report, &mut out),
        ReportFormat::Html => report::write_html(&report, &mut out),
    }
    .and_then(|()| out.flush())
    .context("cannot write the report")?;
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
    let code = match (&comparison, args.fail_on) {
        (Some(c), FailOn::Regression) if report.rejected.is_empty() => {
            if c.regressions() > 0 {
                exit::FAIL
            } else {
                exit::PASS
            }
        }
        _ => report.exit_code(),
    };
    Ok(ExitCode::from(code))
}

fn check_tolerance(t: f64) -> anyhow::Result<()> {
    anyhow::ensure!(
        t.is_finite() && t >= 0.0,
        "--tolerance {t} must be a non-negative number"
    );
    Ok(())
}

fn cmd_diff(args: DiffArgs) -> anyhow::Result<ExitCode> {
    check_tolerance(args.tolerance)?;
    anyhow::ensure!(
        !matches!(args.format, ReportFormat::Html),
        "--format html is for `replay`; `diff` writes table, jsonl or junit"
    );
    let old = baseline::load(&args.old)?;
    let new = baseline::load(&args.new)?;
    let c = baseline::compare(&old, &new, args.tolerance);
    let mut out = open_output(args.output.as_ref())?;
    match args.format {
        ReportFormat::Table => baseline::write_table(&c, &mut out),
        ReportFormat::Jsonl => baseline::write_jsonl(&c, &mut out),
        ReportFormat::Junit => baseline::write_junit(&c, &mut out),
        ReportFormat::Html => Ok(()),
    }
    .and_then(|()| out.flush())
    .context("cannot write the comparison")?;
    Ok(ExitCode::from(if c.regressions() > 0 {
        exit::FAIL
    } else {
        exit::PASS
    }))
}

fn cmd_inspect(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let config = args.input.config.load()?;
    let extractor = args.input.extractor(&config)?;
    let session_keys = config.session_keys();
    let (joiner, fixture_rejected) = match &args.expected {
        Some(p) => {
            let opts = toolscore::expect::FixtureOptions {
                session_keys: session_keys.clone(),
            };
            let loaded = toolscore::expect::load_file(p, &opts)?;
            let settings = ScoreSettings {
                session_keys: session_keys.clone(),
                ..ScoreSettings::default()
            };
            (
                Some(Evaluator::new(settings, Some(loaded.cases), None)?),
                loaded.rejected,
            )
        }
        None => (None, Vec::new()),
    };
    let mut out = open_output(args.output.as_ref())?;
    // Each batch of traces is turned into its output text on a worker;
    // this thread writes the texts in input order.
    let render = |traces: Vec<Trace>| -> std::io::Result<(Vec<u8>, usize, usize)> {
        let mut out = Vec::new();
        let (mut calls, mut spans) = (0, 0);
        for t in &traces {
            spans += t.spans.len();
            if args.explain {
                let rows = extractor.explain(t);
                calls += rows
                    .iter()
                    .filter(|e| e.matched.as_ref().is_some_and(|m| m.call))
                    .count();
                match args.format {
                    InspectFormat::Jsonl => {
                        for e in &rows {
                            writeln!(out, "{}", report::explain_row(t, e))?;
                        }
                    }
                    InspectFormat::Table => report::write_explain(&mut out, t, &rows)?,
                }
                continue;
            }
            let analysis = extractor.analyze(t);
            calls += analysis.calls.len();
            let session = session::session_of(t, &session_keys);
            let joins = joiner.as_ref().map(|e| e.joins(t));
            match args.format {
                InspectFormat::Jsonl => {
                    let row = report::inspect_row(t, &analysis, session.as_ref(), joins.as_deref());
                    writeln!(out, "{row}")?
                }
                InspectFormat::Table => {
                    report::write_inspect_tree(&mut out, t, &analysis, session.as_ref())?;
                    if let Some(j) = &joins {
                        report::write_joins(&mut out, j)?;
                    }
                }
            }
        }
        Ok((out, calls, spans))
    };
    let (mut calls, mut spans) = (0, 0);
    let mut written: std::io::Result<()> = Ok(());
    // An explanation shows near misses, which may name any attribute.
    let join_keys = joiner
        .as_ref()
        .map(Evaluator::join_keys)
        .unwrap_or_default();
    let projection = extractor.projection(session_keys.iter().cloned().chain(join_keys));
    let filter: &(dyn KeyFilter + Sync) = if args.explain { &KeepAll } else { &projection };
    let (mut rejected, _stats) = replay::stream_traces(
        &args.input.paths,
        &args.input.read_options(),
        filter,
        progress_printer(args.input.quiet),
        render,
        |rendered| {
            // After a write error, the rest is read but not written.
            if written.is_ok() {
                written = rendered.and_then(|(text, c, s)| {
                    calls += c;
                    spans += s;
                    out.write_all(&text)
                });
            }
        },
    );
    written?;
    out.flush()?;
    rejected.extend(fixture_rejected);
    for r in &rejected {
        eprintln!("toolscore: rejected: {}", report::printable(&r.to_string()));
    }
    if !args.explain {
        if let Some(hint) = extractor.no_calls_hint(spans, calls) {
            eprintln!("toolscore: hint: {hint}");
        }
    }
    Ok(ExitCode::from(if rejected.is_empty() {
        exit::PASS
    } else {
        exit::INPUT
    }))
}

fn cmd_conventions(args: ConventionsArgs) -> anyhow::Result<ExitCode> {
    let config = args.config.load()?;
    let format = match args.format {
        ConventionsFormat::Table => TableFormat::Text,
        ConventionsFormat::Toml => TableFormat::Toml,
        ConventionsFormat::Yaml => TableFormat::Yaml,
        ConventionsFormat::Json => TableFormat::Json,
    };
    let text = config::render_rules(&config.rule_specs(), format)?;
    let mut out = open_output(None)?;
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
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
    /// Per-metric options: `NAME:threshold=0.7,strict=true`.
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
    use toolscore::score::cases;
    if let Some(t) = args.threshold {
        anyhow::ensure!((0.0..=1.0).contains(&t), "--threshold {t} is outside 0..=1");
    }
    let opts = MetricOptions {
        threshold: args.threshold,
        strict: args.strict.then_some(true),
    };
    let metrics = MetricSet::build(
        &MetricSpec::parse_list(&args.metrics)?,
        &opts,
        &NativeConfig::default(),
        None,
    )?;
    let label = args.cases.display().to_string();
    let input: Box<dyn io::BufRead> = if label == "-" {
        Box::new(io::stdin().lock())
    } else {
        let file = File::open(&args.cases).with_context(|| format!("cannot open {label}"))?;
        Box::new(io::BufReader::new(file))
    };
    let mut out = open_output(args.output.as_ref())?;
    let summary = cases::score_lines(input, &metrics, &mut out, |bad| {
        eprintln!("toolscore: rejected: {label}: {bad}");
    })
    .and_then(|s| out.flush().map(|()| s))
    .with_context(|| format!("scoring {label}"))?;
    Ok(ExitCode::from(if summary.rejected.is_empty() {
        exit::PASS
    } else {
        exit::INPUT
    }))
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    serve: toolscore::serve::ServeFlags,
    #[command(flatten)]
    config: ConfigArg,
    #[command(flatten)]
    scoring: ScoringArgs,
    /// Count retriever spans as tool calls.
    #[arg(long, env = "TOOLSCORE_RETRIEVERS_AS_TOOLS")]
    retrievers_as_tools: bool,
}

/// The scoring flags mean what they mean for `replay` (same settings, same
/// extractor), so a trace scores the same live as replayed.
fn cmd_serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let config = args.config.load()?;
    let settings = args.scoring.settings(&config)?;
    let scope: Scope = args.scoring.scope.parse().map_err(anyhow::Error::msg)?;
    let x = config.extractor()?;
    let retrievers = x.retrievers_as_tools || args.retrievers_as_tools;
    let extractor = x.with_retrievers(retrievers).with_scope(scope);
    let scoring = toolscore::serve::Scoring {
        settings,
        extractor,
    };
    // Precedence: flags > environment > the config file's [serve] > defaults.
    let mut serve_config = config.serve.clone().unwrap_or_default();
    args.serve.apply(&mut serve_config);
    toolscore::serve::keep_freed_memory();
    toolscore::serve::run(serve_config, scoring)?;
    Ok(ExitCode::SUCCESS)
}
