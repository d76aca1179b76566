//! The run store on the command line: where `replay` saves its run
//! (`--store`, `--no-store`, `--label`), and the commands that read the
//! store (`runs`, `runs show`, `runs prune`, `trend`; run ids for `diff`
//! and `replay --baseline`).

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{json, Value};

use super::open_output;
use crate::report::{self, baseline, exit, Report};
use crate::store::{self, trend, Choice, Filter, Parts, RunMeta, Saved, Store};

/// `--store`, for the commands that read the store and for those that save
/// a run (in [`SaveArgs`]).
#[derive(Args, Clone)]
pub(crate) struct StoreArg {
    /// The run store: a SQLite file or a `postgres://` URL [default:
    /// .toolscore/runs.db under the current directory].
    ///
    /// `replay` and `serve` save their run there unless it is `off` (or
    /// --no-store is given); a run that cannot write to a store named here
    /// exits 2, its report still written.
    #[arg(
        long,
        env = "TOOLSCORE_STORE",
        // A postgres:// URL may hold a password: --help does not print it.
        hide_env_values = true,
        value_name = "PATH",
        help_heading = "Run store"
    )]
    pub(crate) store: Option<String>,
}

/// Where `replay` saves its run.
#[derive(Args, Clone)]
pub(crate) struct SaveArgs {
    #[command(flatten)]
    pub(crate) store: StoreArg,
    /// Save nothing.
    #[arg(long, help_heading = "Run store")]
    pub(crate) no_store: bool,
    /// A label saved with the run, `K=V` (repeatable); `runs --label K=V` selects by it.
    #[arg(long = "label", value_name = "K=V", value_parser = parse_label, help_heading = "Run store")]
    pub(crate) labels: Vec<(String, String)>,
}

pub(crate) fn parse_label(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .and_then(|(k, v)| label(k, v))
        .ok_or_else(|| format!("`{s}` is not K=V"))
}

/// A label as saved: its key trimmed, which must not be empty; the value
/// as given. `None` for an empty key.
pub fn label(key: &str, value: &str) -> Option<(String, String)> {
    let key = key.trim();
    (!key.is_empty()).then(|| (key.to_string(), value.to_string()))
}

impl StoreArg {
    /// The store to read; it must exist.
    fn open(&self) -> anyhow::Result<Store> {
        let choice = Choice::new(self.store.as_deref(), false)?;
        let Some(location) = choice.location else {
            anyhow::bail!("the run store is off (TOOLSCORE_STORE=off): there is nothing to read");
        };
        Ok(Store::open(&location, false)?)
    }
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct RunsArgs {
    #[command(subcommand)]
    pub(crate) action: Option<RunsAction>,
    /// How many runs to list, newest first.
    #[arg(long, default_value_t = 20)]
    pub(crate) limit: usize,
    /// Only runs of this fixture (its path as given to `replay --expected`).
    #[arg(long)]
    pub(crate) fixture: Option<String>,
    /// Only runs with this label (repeatable: all must match).
    #[arg(long = "label", value_name = "K=V", value_parser = parse_label)]
    pub(crate) labels: Vec<(String, String)>,
    #[arg(long, short, value_enum, default_value = "table")]
    pub(crate) format: ListFormat,
    #[command(flatten)]
    pub(crate) store: StoreArg,
}

#[derive(Subcommand)]
pub(crate) enum RunsAction {
    /// A saved run's report again (its JSONL is the bytes the run wrote).
    Show(ShowArgs),
    /// Delete old runs.
    Prune(PruneArgs),
}

#[derive(Args)]
pub(crate) struct ShowArgs {
    /// A run id, `last`, or `last~N` (N runs before the last).
    pub(crate) run: String,
    #[arg(long, short, value_enum, default_value = "table")]
    pub(crate) format: ShowFormat,
    #[arg(long, short)]
    pub(crate) output: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) store: StoreArg,
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("what").required(true).multiple(true)))]
pub(crate) struct PruneArgs {
    /// Keep the newest N runs.
    #[arg(long, group = "what")]
    pub(crate) keep: Option<usize>,
    /// Delete runs started longer ago than this: `30d`, `12h`, `90m`.
    #[arg(long, group = "what", value_parser = parse_age)]
    pub(crate) older_than: Option<i64>,
    #[command(flatten)]
    pub(crate) store: StoreArg,
}

/// An age in milliseconds from `30d`, `12h`, `90m`, `45s`.
fn parse_age(s: &str) -> Result<i64, String> {
    let (n, unit) = s.split_at(s.trim_end_matches(char::is_alphabetic).len());
    let ms: i64 = match unit {
        "d" => 86_400_000,
        "h" => 3_600_000,
        "m" => 60_000,
        "s" => 1000,
        _ => return Err(format!("`{s}` is not an age such as 30d, 12h, 90m or 45s")),
    };
    n.parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .and_then(|n| n.checked_mul(ms))
        .ok_or_else(|| format!("`{s}` is not an age such as 30d, 12h, 90m or 45s"))
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ListFormat {
    Table,
    Jsonl,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ShowFormat {
    Table,
    Jsonl,
    /// A GitHub-flavoured summary (at most 65,536 characters).
    Markdown,
    /// JUnit XML, as the run wrote it.
    Junit,
    /// The HTML page, from the saved rows (no span timelines: a run does not keep its spans).
    Html,
}

#[derive(Args)]
pub(crate) struct TrendArgs {
    /// Only these cases [default: every case].
    pub(crate) cases: Vec<String>,
    /// How many runs, the newest.
    #[arg(long, default_value_t = 10)]
    pub(crate) last: usize,
    /// The fixture whose runs to follow [default: the last run's].
    #[arg(long)]
    pub(crate) fixture: Option<String>,
    #[arg(long, short, value_enum, default_value = "table")]
    pub(crate) format: TrendFormat,
    #[arg(long, short)]
    pub(crate) output: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) store: StoreArg,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum TrendFormat {
    Table,
    Jsonl,
    /// A GitHub-flavoured summary of the cases that are not stable passes.
    Markdown,
    /// A self-contained page: the pass rate over the runs and a runs x cases grid, flaky cases first.
    Html,
}

/// What a run knows about itself before it is saved.
pub struct RunStart {
    pub(crate) choice: Choice,
    pub(crate) started_ms: i64,
    pub(crate) git: store::GitInfo,
    pub(crate) command: Vec<String>,
}

impl RunStart {
    pub(crate) fn new(args: &SaveArgs, argv: &[OsString]) -> anyhow::Result<RunStart> {
        let choice = Choice::new(args.store.store.as_deref(), args.no_store)?;
        Ok(RunStart::with(choice, redacted(argv)))
    }

    /// A run saved where `choice` says, started now by `command` (as the
    /// saved run records it).
    pub fn with(choice: Choice, command: Vec<String>) -> RunStart {
        RunStart {
            git: if choice.location.is_some() {
                store::git_info()
            } else {
                store::GitInfo::default()
            },
            choice,
            started_ms: store::now_ms(),
            command,
        }
    }

    pub fn saving(&self) -> bool {
        self.choice.location.is_some()
    }

    /// The run as it starts: a new id, where and how it ran; no results yet.
    pub(crate) fn meta(&self, facts: &RunFacts) -> RunMeta {
        let hash = |p: Option<&Path>| p.and_then(|p| store::hash_file(p).ok());
        RunMeta {
            id: store::run_id(self.started_ms),
            started_ms: self.started_ms,
            version: env!("CARGO_PKG_VERSION").to_string(),
            command: self.command.clone(),
            git_commit: self.git.commit.clone(),
            git_branch: self.git.branch.clone(),
            fixture: facts.fixture.map(|p| p.display().to_string()),
            fixture_hash: hash(facts.fixture),
            config_hash: hash(facts.config),
            settings: facts.settings.clone(),
            labels: facts.labels.to_vec(),
            ..RunMeta::default()
        }
    }
}

/// The command line as saved: values of `--judge-header` (API keys, tokens)
/// are masked.
fn redacted(argv: &[OsString]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut mask_next = false;
    for a in argv {
        let a = a.to_string_lossy().into_owned();
        let mask = |kv: &str| match kv.split_once('=') {
            Some((k, _)) => format!("{k}=***"),
            None => "***".into(),
        };
        if mask_next {
            out.push(mask(&a));
            mask_next = false;
        } else if let Some(kv) = a.strip_prefix("--judge-header=") {
            out.push(format!("--judge-header={}", mask(kv)));
        } else {
            mask_next = a == "--judge-header";
            out.push(a);
        }
    }
    out
}

/// What the saved run records of the run's settings.
pub struct RunFacts<'a> {
    /// The fixture file, as given.
    pub fixture: Option<&'a Path>,
    /// The config file, as given.
    pub config: Option<&'a Path>,
    pub settings: Value,
    pub labels: &'a [(String, String)],
}

/// Saves a finished replay (its JSONL report as `parts`) and says on
/// stderr where it went. Returns the exit code to use instead of the run's
/// when a store the user named could not be written.
pub(crate) fn save_replay(
    start: &RunStart,
    facts: &RunFacts,
    report: &Report,
    parts: &Parts,
    code: u8,
) -> Option<u8> {
    match save_run(start, facts, report, parts, code) {
        Saved::Yes(id, at) => {
            eprintln!("toolscore: run {id} saved to {at}");
            None
        }
        Saved::Off => None,
        Saved::Failed(e, true) => {
            eprintln!("toolscore: error: run not saved: {e:#}");
            Some(exit::INPUT)
        }
        Saved::Failed(e, false) => {
            eprintln!(
                "toolscore: warning: run not saved: {e:#} (the report is complete; --store PATH \
                 saves elsewhere, --no-store saves nothing)"
            );
            None
        }
    }
}

/// Saves a finished run: its metadata, its JSONL report as `parts` (the
/// bytes [`report::write_jsonl`] wrote, through a [`store::PartWriter`])
/// and each case's result, with `code` as the run's exit code.
pub fn save_run(
    start: &RunStart,
    facts: &RunFacts,
    report: &Report,
    parts: &Parts,
    code: u8,
) -> Saved {
    let entries = baseline::entries_of(report);
    let mean = (!entries.is_empty()).then(|| {
        entries.iter().map(|e| e.score.unwrap_or(0.0)).sum::<f64>() / entries.len() as f64
    });
    let meta = RunMeta {
        ended_ms: Some(store::now_ms()),
        finished: true,
        inputs: report.stats.inputs as u64,
        traces: report.stats.traces as u64,
        spans: report.stats.spans as u64,
        rejected: report.rejected.len() as u64,
        cases: entries.len() as u64,
        passed: entries.iter().filter(|e| e.pass).count() as u64,
        failed: entries.iter().filter(|e| !e.pass).count() as u64,
        mean_score: mean,
        exit_code: Some(i64::from(code)),
        ..start.meta(facts)
    };
    store::save_run(&start.choice, &meta, parts, &entries)
}

/// `RUN` names a run in the store rather than a file: `last`, `last~N`, or
/// an id (`YYYYMMDD-HHMMSS-xxxxxx`), when no file has that name.
fn names_a_run(spec: &Path) -> bool {
    let Some(s) = spec.to_str() else {
        return false;
    };
    !spec.exists() && (s == "last" || s.starts_with("last~") || looks_like_id(s))
}

fn looks_like_id(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 22
        && b[8] == b'-'
        && b[15] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 8 || i == 15 || c.is_ascii_hexdigit())
}

/// A baseline: a JSONL report file, or a run in the store (`last` is the
/// newest run of the same fixture, on the same branch when known and one
/// exists). When the store holds no such run yet (a first run), the run
/// goes on without a comparison and says so: it then passes or fails on
/// its thresholds alone.
pub(crate) fn load_baseline(
    spec: &Path,
    store_arg: &StoreArg,
    fixture: Option<&Path>,
    branch: Option<&str>,
) -> anyhow::Result<Option<Vec<baseline::Entry>>> {
    if !names_a_run(spec) {
        return Ok(Some(baseline::load(spec)?));
    }
    let name = spec.to_string_lossy();
    let relative = name == "last" || name.starts_with("last~");
    let opened = store_arg.open();
    let mut store = match opened {
        Err(e) if relative && is_missing(&e) => {
            eprintln!("toolscore: warning: --baseline {name}: {e:#}; nothing to compare with");
            return Ok(None);
        }
        other => other.with_context(|| format!("--baseline {name}"))?,
    };
    let fixture = fixture.map(|p| p.display().to_string());
    let found = match branch {
        Some(b) => store
            .resolve(&name, fixture.as_deref(), Some(b))
            .or_else(|_| store.resolve(&name, fixture.as_deref(), None)),
        None => store.resolve(&name, fixture.as_deref(), None),
    };
    let run = match found {
        Err(e @ store::StoreError::NoRun { .. }) if relative => {
            eprintln!("toolscore: warning: --baseline {name}: {e}; nothing to compare with");
            return Ok(None);
        }
        other => other.with_context(|| format!("--baseline {name}"))?,
    };
    Ok(Some(stored_entries(&mut store, &run)?))
}

fn is_missing(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<store::StoreError>(),
        Some(store::StoreError::Missing(_))
    )
}

fn stored_entries(store: &mut Store, run: &RunMeta) -> anyhow::Result<Vec<baseline::Entry>> {
    let jsonl = store.report(&run.id)?;
    let text = String::from_utf8_lossy(&jsonl);
    Ok(baseline::parse(&text, &format!("run {}", run.id))?)
}

/// `diff`'s sides: a file, or a run in the store.
pub(crate) fn load_side(spec: &Path, store_arg: &StoreArg) -> anyhow::Result<Vec<baseline::Entry>> {
    if !names_a_run(spec) {
        return Ok(baseline::load(spec)?);
    }
    let mut store = store_arg.open()?;
    let run = store.resolve(&spec.to_string_lossy(), None, None)?;
    stored_entries(&mut store, &run)
}

pub(crate) fn cmd_runs(args: RunsArgs) -> anyhow::Result<u8> {
    match args.action {
        Some(RunsAction::Show(a)) => return cmd_show(a),
        Some(RunsAction::Prune(a)) => return cmd_prune(a),
        None => {}
    }
    let mut store = args.store.open()?;
    let runs = store.list(&Filter {
        limit: args.limit,
        fixture: args.fixture.clone(),
        labels: args.labels.clone(),
    })?;
    let mut out = open_output(None)?;
    match args.format {
        ListFormat::Jsonl => {
            for r in &runs {
                writeln!(out, "{}", serde_json::to_string(r)?)?;
            }
        }
        ListFormat::Table => write_runs_table(&runs, &mut out)?,
    }
    out.flush()?;
    Ok(exit::PASS)
}

fn opt_score(s: Option<f64>) -> String {
    s.map_or_else(|| "-".into(), |s| format!("{s:.3}"))
}

fn write_runs_table(runs: &[store::RunSummary], out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "{:<22}  {:<20}  {:<10}  {:<10}  {:<24}  {:>5}  {:>6}  {:>6}  {:>9}  {:>10}  LABELS",
        "RUN",
        "STARTED",
        "STATE",
        "COMMIT",
        "FIXTURE",
        "CASES",
        "PASSED",
        "FAILED",
        "PASS RATE",
        "MEAN SCORE"
    )?;
    for r in runs {
        let labels: Vec<String> = r
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
            .collect();
        writeln!(
            out,
            "{:<22}  {:<20}  {:<10}  {:<10}  {:<24}  {:>5}  {:>6}  {:>6}  {:>9}  {:>10}  {}",
            report::ellipsize(&r.id, 22),
            r.started,
            if r.finished { "finished" } else { "UNFINISHED" },
            report::ellipsize(r.commit.as_deref().unwrap_or("-"), 10),
            report::ellipsize(r.fixture.as_deref().unwrap_or("-"), 24),
            r.cases,
            r.passed,
            r.failed,
            r.pass_rate
                .map_or_else(|| "-".into(), |p| format!("{:.1}%", p * 100.0)),
            opt_score(r.mean_score),
            report::printable(&labels.join(" ")),
        )?;
    }
    if runs.is_empty() {
        writeln!(out, "(no runs)")?;
    }
    if runs.iter().any(|r| !r.finished) {
        writeln!(
            out,
            "UNFINISHED: a `serve` still running, or a process that stopped without \
             finishing its run; its rows so far are kept, `trend` and `--baseline last` skip it"
        )?;
    }
    Ok(())
}

fn cmd_show(args: ShowArgs) -> anyhow::Result<u8> {
    let mut store = args.store.open()?;
    let run = store.resolve(&args.run, None, None)?;
    let jsonl = store.report(&run.id)?;
    let mut out = open_output(args.output.as_ref())?;
    match args.format {
        ShowFormat::Jsonl => out.write_all(&jsonl)?,
        ShowFormat::Table => write_stored_table(&run, &jsonl, &mut out)?,
        ShowFormat::Markdown => report::markdown::write_run(
            &format!("run {}", run.id),
            &report::markdown::rows_of(&jsonl),
            None,
            &mut out,
        )?,
        ShowFormat::Junit => report::write_junit(&stored_report(&run, &jsonl)?, &mut out)?,
        ShowFormat::Html => report::write_html(&stored_report(&run, &jsonl)?, None, &mut out)?,
    }
    out.flush().context("cannot write the report")?;
    Ok(exit::PASS)
}

/// A saved run's report rebuilt from its rows, its metrics in the run's order.
fn stored_report(run: &RunMeta, jsonl: &[u8]) -> anyhow::Result<Report> {
    let metrics: Vec<String> = run
        .settings
        .get("metrics")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.as_str().map(String::from))
        .collect();
    Ok(report::report_of_rows(
        jsonl,
        &metrics,
        &format!("run {}", run.id),
    )?)
}

/// A saved run as a table, read from its JSONL rows.
fn write_stored_table(run: &RunMeta, jsonl: &[u8], out: &mut dyn Write) -> anyhow::Result<()> {
    let s = run.summary();
    writeln!(
        out,
        "run {} started {}{}{}{}",
        s.id,
        s.started,
        if s.finished { "" } else { " (UNFINISHED)" },
        s.commit.as_deref().map_or(String::new(), |c| format!(
            ", commit {}",
            report::printable(c)
        )),
        s.fixture.as_deref().map_or(String::new(), |f| format!(
            ", fixture {}",
            report::printable(f)
        )),
    )?;
    writeln!(
        out,
        "{:<30}  {:<32}  {:<10}  {:>6}  {:<4}  DETAILS",
        "CASE", "TRACE", "JOINED BY", "SCORE", "PASS"
    )?;
    for line in String::from_utf8_lossy(jsonl).lines() {
        let row: Value = serde_json::from_str(line)
            .with_context(|| format!("run {}: a stored row is not JSON", run.id))?;
        let text = |k: &str| {
            row.get(k)
                .and_then(Value::as_str)
                .unwrap_or("-")
                .to_string()
        };
        let (trace, pass) = match row.get("type").and_then(Value::as_str) {
            Some("evaluation") => (
                row.pointer("/session/id")
                    .and_then(Value::as_str)
                    .map_or_else(|| text("trace_id"), |s| format!("session {s}")),
                match row.get("pass").and_then(Value::as_bool) {
                    Some(true) => "pass",
                    Some(false) => "FAIL",
                    None => "-",
                },
            ),
            Some("unmatched_case") => ("(no trace)".into(), "FAIL"),
            _ => continue,
        };
        writeln!(
            out,
            "{:<30}  {:<32}  {:<10}  {:>6}  {:<4}  {}",
            report::ellipsize(&text("case"), 30),
            report::ellipsize(&trace, 32),
            report::ellipsize(&text("joined_by"), 10),
            opt_score(row.get("score").and_then(Value::as_f64)),
            pass,
            report::ellipsize(&text("explanation"), 100),
        )?;
    }
    writeln!(
        out,
        "{} case(s): {} passed, {} failed; mean score {}",
        s.cases,
        s.passed,
        s.failed,
        opt_score(s.mean_score)
    )?;
    Ok(())
}

fn cmd_prune(args: PruneArgs) -> anyhow::Result<u8> {
    let mut store = args.store.open()?;
    let before = args
        .older_than
        .map(|age| store::now_ms().saturating_sub(age));
    let n = store.prune(args.keep, before)?;
    eprintln!("toolscore: pruned {n} run(s) from {}", store.location());
    Ok(exit::PASS)
}

pub(crate) fn cmd_trend(args: TrendArgs) -> anyhow::Result<u8> {
    anyhow::ensure!(args.last > 0, "--last must be at least 1");
    let mut store = args.store.open()?;
    let fixture = match &args.fixture {
        Some(f) => Some(f.clone()),
        None => {
            store
                .resolve("last", None, None)
                .map_err(|_| anyhow::anyhow!("no finished run in {}", store.location()))?
                .fixture
        }
    };
    let (runs, results) = store.history(fixture.as_deref(), args.last)?;
    let trends = trend::trends(runs.len(), &results, &args.cases);
    let mut out = open_output(args.output.as_ref())?;
    match args.format {
        TrendFormat::Table => write_trend_table(&runs, &trends, fixture.as_deref(), &mut out)?,
        TrendFormat::Markdown => {
            let lines: Vec<report::markdown::TrendLine> = trends
                .iter()
                .map(|t| report::markdown::TrendLine {
                    case: &t.case,
                    status: t.status.as_str(),
                    history: t.history(),
                    pass_rate: t.pass_rate(),
                })
                .collect();
            let title = format!(
                "{} run(s) of {}",
                runs.len(),
                fixture.as_deref().unwrap_or("(no fixture)")
            );
            report::markdown::write_trend(&title, &lines, &mut out)?;
        }
        TrendFormat::Html => {
            let title = format!(
                "{} run(s) of fixture {}, oldest first",
                runs.len(),
                fixture.as_deref().unwrap_or("(none)")
            );
            let page_runs: Vec<report::TrendRun> = runs
                .iter()
                .map(|r| report::TrendRun {
                    id: &r.id,
                    started: &r.started,
                    commit: r.commit.as_deref(),
                    cases: r.cases,
                    passed: r.passed,
                })
                .collect();
            let rows: Vec<report::TrendRow> = trends
                .iter()
                .map(|t| report::TrendRow {
                    case: &t.case,
                    status: t.status.as_str(),
                    points: t.points.iter().map(|p| p.map(|p| p.pass)).collect(),
                })
                .collect();
            report::write_trend_html(&title, &page_runs, &rows, &mut out)?;
        }
        TrendFormat::Jsonl => {
            let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
            for t in &trends {
                let row = json!({
                    "case": t.case,
                    "status": t.status,
                    "pass_rate": t.pass_rate(),
                    "runs": ids,
                    "passes": t.points.iter().map(|p| p.map(|p| p.pass)).collect::<Vec<_>>(),
                    "scores": t.points.iter().map(|p| p.and_then(|p| p.score)).collect::<Vec<_>>(),
                });
                writeln!(out, "{row}")?;
            }
        }
    }
    out.flush().context("cannot write the trend")?;
    Ok(exit::PASS)
}

fn write_trend_table(
    runs: &[store::RunSummary],
    trends: &[trend::CaseTrend],
    fixture: Option<&str>,
    out: &mut dyn Write,
) -> io::Result<()> {
    writeln!(
        out,
        "{} run(s) of fixture {}, oldest first{}",
        runs.len(),
        report::printable(fixture.unwrap_or("(none)")),
        match (runs.first(), runs.last()) {
            (Some(a), Some(b)) => format!(": {} .. {}", a.id, b.id),
            _ => String::new(),
        }
    )?;
    writeln!(
        out,
        "{:<30}  {:<11}  {:<w$}  {:>9}  LAST SCORE",
        "CASE",
        "STATUS",
        "HISTORY",
        "PASS RATE",
        w = runs.len().max(7)
    )?;
    for t in trends {
        let last = t.points.iter().rev().flatten().next().and_then(|p| p.score);
        writeln!(
            out,
            "{:<30}  {:<11}  {:<w$}  {:>9}  {}",
            report::ellipsize(&t.case, 30),
            t.status.as_str(),
            t.history(),
            t.pass_rate()
                .map_or_else(|| "-".into(), |p| format!("{:.1}%", p * 100.0)),
            opt_score(last),
            w = runs.len().max(7)
        )?;
    }
    let count = |s: trend::Status| trends.iter().filter(|t| t.status == s).count();
    writeln!(
        out,
        "{} case(s): {} regressed, {} flaky, {} stable-fail, {} fixed, {} new, {} stable-pass",
        trends.len(),
        count(trend::Status::Regressed),
        count(trend::Status::Flaky),
        count(trend::Status::StableFail),
        count(trend::Status::Fixed),
        count(trend::Status::New),
        count(trend::Status::StablePass),
    )
}
