//! The run store: every run's metadata and report rows, kept so that runs
//! can be listed, shown again, compared and followed over time.
//!
//! A store is a SQLite file (the default, `.toolscore/runs.db` under the
//! current directory). Its schema is versioned ([`schema`]): migrations run
//! on open, and a store written by a newer toolscore is refused rather than
//! changed. A run is saved in one transaction, so it is listed whole or not
//! at all.

mod meta;
mod parts;
mod postgres;
pub mod schema;
mod sqlite;
pub mod trend;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use meta::{git_info, hash_file, now_ms, run_id, utc_text, GitInfo};
pub use parts::{PartWriter, Parts};

use crate::report::baseline::Entry;

/// Where runs are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    /// A `postgres://` (or `postgresql://`) connection URL.
    Postgres(String),
}

/// The store a command uses, and whether the user named it (a store the
/// user asked for must work; the default one may fail with a warning).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// `None`: nothing is saved (`--no-store`, `TOOLSCORE_STORE=off`).
    pub location: Option<Location>,
    pub explicit: bool,
}

/// The default store, relative to the current directory.
pub const DEFAULT_DIR: &str = ".toolscore";
pub const DEFAULT_FILE: &str = "runs.db";

impl Choice {
    /// From `--store`/`TOOLSCORE_STORE` (clap merges the two) and
    /// `--no-store`. `off` (any case) turns the store off.
    pub fn new(store: Option<&str>, no_store: bool) -> Result<Choice, StoreError> {
        if no_store {
            return Ok(Choice {
                location: None,
                explicit: true,
            });
        }
        match store.map(str::trim) {
            None | Some("") => Ok(Choice {
                location: Some(Location::Sqlite(Path::new(DEFAULT_DIR).join(DEFAULT_FILE))),
                explicit: false,
            }),
            Some(s) if s.eq_ignore_ascii_case("off") => Ok(Choice {
                location: None,
                explicit: true,
            }),
            Some(s) if s.starts_with("postgres://") || s.starts_with("postgresql://") => {
                Ok(Choice {
                    location: Some(Location::Postgres(s.to_string())),
                    explicit: true,
                })
            }
            Some(s) => Ok(Choice {
                location: Some(Location::Sqlite(PathBuf::from(s))),
                explicit: true,
            }),
        }
    }

    fn is_default(&self) -> bool {
        !self.explicit
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(url) => write!(f, "{}", without_password(url)),
        }
    }
}

/// A connection URL with its password (if any) masked, to print.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => match rest[..at].split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***{}", &rest[at..]),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("run store {store}: {source}")]
    Sqlite {
        store: String,
        source: rusqlite::Error,
    },
    #[error("run store {store}: {source}")]
    Postgres {
        store: String,
        source: ::postgres::Error,
    },
    /// A PostgreSQL server that refused, failed or did not answer in
    /// time (10 s unless the URL sets `connect_timeout`).
    #[error("run store {store}: cannot connect to {host}: {reason}")]
    Connect {
        store: String,
        host: String,
        reason: String,
        /// Whether trying again later may work (see [`StoreError::is_transient`]).
        transient: bool,
    },
    #[error("run store {store}: cannot create {dir}: {source}")]
    Dir {
        store: String,
        dir: String,
        source: std::io::Error,
    },
    #[error(
        "run store {store} was written by a newer toolscore (schema version {found}; this \
         toolscore knows up to {known}): upgrade toolscore, or pick another store with --store"
    )]
    Newer {
        store: String,
        found: i64,
        known: i64,
    },
    #[error("run store {store}: {reason}")]
    Corrupt { store: String, reason: String },
    #[error("run store {0} does not exist yet: no run was saved there")]
    Missing(String),
    #[error("run store {store}: no run {run}{hint}")]
    NoRun {
        store: String,
        run: String,
        hint: String,
    },
}

impl StoreError {
    /// Whether trying again, on a store opened anew, may work: the server
    /// went away or restarted, the connection dropped, the database was
    /// busy. Not so for a refused statement, a damaged or newer store, or
    /// a run deleted meanwhile.
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::Postgres { source, .. } => {
                // The connection closed or failed (refused, reset: an I/O
                // error), or the server said so: 08 connection exceptions,
                // 57P0x shutting down or starting, 40001/40P01
                // serialization failure, deadlock.
                let io =
                    std::error::Error::source(source).is_some_and(|e| e.is::<std::io::Error>());
                source.is_closed()
                    || io
                    || source.code().is_some_and(|code| {
                        let c = code.code();
                        c.starts_with("08") || c.starts_with("57P0") || c == "40001" || c == "40P01"
                    })
            }
            StoreError::Connect { transient, .. } => *transient,
            StoreError::Sqlite { source, .. } => matches!(
                source.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            ),
            _ => false,
        }
    }
}

/// What a run was, besides its rows.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunMeta {
    pub id: String,
    pub started_ms: i64,
    pub ended_ms: Option<i64>,
    /// False while a run is still being written (or never ended).
    pub finished: bool,
    pub version: String,
    pub command: Vec<String>,
    pub git_commit: Option<String>,
    pub git_branch: Option<String>,
    /// The fixture's path as given on the command line.
    pub fixture: Option<String>,
    pub fixture_hash: Option<String>,
    pub config_hash: Option<String>,
    /// Metrics, thresholds and the other scoring flags, as a JSON object.
    pub settings: serde_json::Value,
    pub labels: Vec<(String, String)>,
    pub inputs: u64,
    pub traces: u64,
    pub spans: u64,
    pub rejected: u64,
    /// Evaluations and cases that matched no trace.
    pub cases: u64,
    pub passed: u64,
    pub failed: u64,
    /// Mean headline score over the cases (a missing score counts 0).
    pub mean_score: Option<f64>,
    pub exit_code: Option<i64>,
}

/// A run as listed.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    #[serde(rename = "run")]
    pub id: String,
    pub started: String,
    #[serde(skip)]
    pub started_ms: i64,
    pub finished: bool,
    pub commit: Option<String>,
    pub branch: Option<String>,
    pub fixture: Option<String>,
    pub cases: u64,
    pub passed: u64,
    pub failed: u64,
    pub pass_rate: Option<f64>,
    pub mean_score: Option<f64>,
    pub labels: serde_json::Map<String, serde_json::Value>,
}

/// Which runs `runs` lists.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub limit: usize,
    pub fixture: Option<String>,
    pub labels: Vec<(String, String)>,
}

/// One case's entries in one run, for trends.
#[derive(Debug, Clone)]
pub struct CaseInRun {
    /// Index of the run in the window, oldest first.
    pub run: usize,
    pub case: String,
    pub pass: bool,
    pub score: Option<f64>,
}

/// An open store.
pub struct Store {
    location: Location,
    inner: Backend,
}

enum Backend {
    Sqlite(sqlite::Sqlite),
    Postgres(postgres::Postgres),
}

/// Calls the same method on whichever backend is open.
macro_rules! on_backend {
    ($self:ident, $method:ident ( $($arg:expr),* )) => {
        match &mut $self.inner {
            Backend::Sqlite(b) => b.$method($($arg),*),
            Backend::Postgres(b) => b.$method($($arg),*),
        }
    };
}

impl Store {
    /// Opens (creating it if `create`) and migrates the store.
    pub fn open(location: &Location, create: bool) -> Result<Store, StoreError> {
        let inner = match location {
            Location::Sqlite(p) => Backend::Sqlite(sqlite::Sqlite::open(p, create)?),
            Location::Postgres(url) => {
                Backend::Postgres(postgres::Postgres::open(url, &location.to_string())?)
            }
        };
        Ok(Store {
            location: location.clone(),
            inner,
        })
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Saves a whole run in one transaction: its metadata, the report's
    /// JSONL as compressed parts ([`PartWriter`]) and each case's result.
    pub fn save(
        &mut self,
        meta: &RunMeta,
        report: &Parts,
        results: &[Entry],
    ) -> Result<(), StoreError> {
        on_backend!(self, save(meta, report, results))
    }

    pub fn list(&mut self, filter: &Filter) -> Result<Vec<RunSummary>, StoreError> {
        on_backend!(self, list(filter))
    }

    /// The run `spec` names: an id, `last` or `last~N` (N runs before the
    /// last), among runs of `fixture` when given.
    pub fn resolve(
        &mut self,
        spec: &str,
        fixture: Option<&str>,
        branch: Option<&str>,
    ) -> Result<RunMeta, StoreError> {
        let back = match spec {
            "last" => Some(0),
            s => s
                .strip_prefix("last~")
                .map(|n| {
                    n.parse::<usize>().map_err(|_| StoreError::NoRun {
                        store: self.location.to_string(),
                        run: spec.into(),
                        hint: ": `last~N` takes a whole number".into(),
                    })
                })
                .transpose()?,
        };
        let found = match back {
            Some(n) => on_backend!(self, nth_last(n, fixture, branch))?,
            None => on_backend!(self, by_id(spec))?,
        };
        found.ok_or_else(|| StoreError::NoRun {
            store: self.location.to_string(),
            run: spec.into(),
            hint: match fixture {
                Some(f) if back.is_some() => format!(" of fixture {f}"),
                _ if back.is_some() => String::new(),
                _ => " (ids are listed by `toolscore runs`)".into(),
            },
        })
    }

    /// The JSONL report of run `id`, as the run wrote it.
    pub fn report(&mut self, id: &str) -> Result<Vec<u8>, StoreError> {
        on_backend!(self, report(id))
    }

    /// The case results of the last `last` finished runs of `fixture`
    /// (oldest first) and those runs.
    pub fn history(
        &mut self,
        fixture: Option<&str>,
        last: usize,
    ) -> Result<(Vec<RunSummary>, Vec<CaseInRun>), StoreError> {
        on_backend!(self, history(fixture, last))
    }

    /// Deletes runs: all but the newest `keep`, or those started before
    /// `before_ms`. Returns how many went.
    pub fn prune(
        &mut self,
        keep: Option<usize>,
        before_ms: Option<i64>,
    ) -> Result<usize, StoreError> {
        on_backend!(self, prune(keep, before_ms))
    }
}

/// A run saved as it goes (`serve`): created unfinished with no rows
/// ([`Store::begin_run`]), then its rows appended batch by batch, each
/// append one transaction, the last one marking it finished
/// ([`Store::append_run`]). A process killed on the way leaves the run
/// listed, unfinished, with every append committed before.
#[derive(Debug)]
pub struct OpenRun {
    seq: i64,
    /// Rows and case results saved so far (the next ones' numbers).
    rows: i64,
    results: i64,
    /// Sum of the headline scores saved so far (a missing one counts 0).
    score_sum: f64,
    /// The run as saved so far.
    meta: RunMeta,
    /// The last result of the recently saved cases, for revisions.
    latest: Latest,
    /// The last append failed, perhaps after its commit (a connection lost
    /// on the way): the next one first looks whether that batch is there.
    unsure: bool,
}

/// A case result already saved: its number, pass and score.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prior {
    pub n: i64,
    pub pass: bool,
    pub score: Option<f64>,
}

/// How many (case, target) pairs a run saved as it goes remembers the last
/// result of; a revision of an older one is looked up in the store.
const LATEST_KEPT: usize = 1 << 16;

/// The last result saved of each recent (case, target) pair, oldest
/// dropped first past [`LATEST_KEPT`].
#[derive(Debug)]
struct Latest {
    /// How many pairs to keep ([`LATEST_KEPT`]; fewer in tests).
    kept: usize,
    by_key: HashMap<(String, String), Prior>,
    /// Keys in the order they were saved, with the result's number (a key
    /// saved again is here twice: only its newest entry drops it).
    order: VecDeque<((String, String), i64)>,
}

impl Default for Latest {
    fn default() -> Self {
        Latest {
            kept: LATEST_KEPT,
            by_key: HashMap::new(),
            order: VecDeque::new(),
        }
    }
}

impl Latest {
    fn get(&self, case: &str, target: &str) -> Option<Prior> {
        // Owned key: the map is small per batch; a borrowed lookup would need a custom key type.
        self.by_key
            .get(&(case.to_string(), target.to_string()))
            .copied()
    }

    fn put(&mut self, key: (String, String), prior: Prior) {
        self.order.push_back((key.clone(), prior.n));
        self.by_key.insert(key, prior);
        while self.order.len() > self.kept {
            let Some((key, n)) = self.order.pop_front() else {
                break;
            };
            if self.by_key.get(&key).is_some_and(|p| p.n == n) {
                self.by_key.remove(&key);
            }
        }
    }
}

impl OpenRun {
    pub fn meta(&self) -> &RunMeta {
        &self.meta
    }
}

/// How a run saved as it goes ended (what the last append records).
#[derive(Debug, Clone, Default)]
pub struct RunEnd {
    pub ended_ms: i64,
    pub exit_code: Option<i64>,
    pub inputs: u64,
    pub traces: u64,
    pub spans: u64,
}

impl Store {
    /// Saves `meta` as a new run, unfinished and without rows yet.
    pub fn begin_run(&mut self, meta: RunMeta) -> Result<OpenRun, StoreError> {
        let meta = RunMeta {
            finished: false,
            ended_ms: None,
            cases: 0,
            passed: 0,
            failed: 0,
            mean_score: None,
            ..meta
        };
        self.save(&meta, &Parts::default(), &[])?;
        let seq = on_backend!(self, seq_of(&meta.id))?.ok_or_else(|| StoreError::Corrupt {
            store: self.location.to_string(),
            reason: format!("run {} is not there right after it was saved", meta.id),
        })?;
        Ok(OpenRun {
            seq,
            rows: 0,
            results: 0,
            score_sum: 0.0,
            meta,
            latest: Latest::default(),
            unsure: false,
        })
    }

    /// Appends whole JSONL rows and their case results to `run` and brings
    /// its counts up to date, in one transaction; `end` marks it finished.
    /// `revises[i]` says result `i` is a revision: it replaces the run's
    /// earlier result of the same case and target (the run counts each
    /// once, by its last result). A run deleted meanwhile (`runs prune`) is
    /// an error, and nothing is written. After an append that failed, the
    /// same batch may be appended again (on this store or one opened anew):
    /// if the failed one did commit, it is not written twice.
    pub fn append_run(
        &mut self,
        run: &mut OpenRun,
        jsonl: &[u8],
        results: &[Entry],
        revises: &[bool],
        end: Option<&RunEnd>,
    ) -> Result<(), StoreError> {
        let mut next = run.meta.clone();
        let mut score_sum = run.score_sum;
        let mut superseded = Vec::new();
        // This batch's results by key: a revision may follow its first
        // result in the same batch.
        let mut staged: HashMap<(&str, &str), Prior> = HashMap::new();
        for (i, e) in results.iter().enumerate() {
            let key = (e.case.as_str(), e.target.as_str());
            if revises.get(i).copied().unwrap_or(false) {
                let prior = match staged.get(&key) {
                    Some(p) => Some(*p),
                    None => match run.latest.get(key.0, key.1) {
                        Some(p) => Some(p),
                        None => on_backend!(self, last_result(run.seq, key.0, key.1))?,
                    },
                };
                if let Some(p) = prior {
                    superseded.push(p.n);
                    next.cases -= 1;
                    if p.pass {
                        next.passed -= 1;
                    } else {
                        next.failed -= 1;
                    }
                    score_sum -= p.score.unwrap_or(0.0);
                }
            }
            let n = run.results + i as i64;
            staged.insert(
                key,
                Prior {
                    n,
                    pass: e.pass,
                    score: e.score,
                },
            );
            next.cases += 1;
            if e.pass {
                next.passed += 1;
            } else {
                next.failed += 1;
            }
            score_sum += e.score.unwrap_or(0.0);
        }
        next.mean_score = (next.cases > 0).then(|| score_sum / next.cases as f64);
        if let Some(end) = end {
            next.finished = true;
            next.ended_ms = Some(end.ended_ms);
            next.exit_code = end.exit_code;
            next.inputs = end.inputs;
            next.traces = end.traces;
            next.spans = end.spans;
        }
        let at = Appended {
            seq: run.seq,
            first_row: run.rows,
            first_result: run.results,
            superseded,
            resumed: run.unsure,
        };
        run.unsure = true;
        let rows = on_backend!(self, append(&at, jsonl, results, &next))?;
        run.unsure = false;
        // In order, so the oldest are dropped first.
        for (i, e) in results.iter().enumerate() {
            let prior = Prior {
                n: run.results + i as i64,
                pass: e.pass,
                score: e.score,
            };
            run.latest.put((e.case.clone(), e.target.clone()), prior);
        }
        run.rows += rows;
        run.results += results.len() as i64;
        run.score_sum = score_sum;
        run.meta = next;
        Ok(())
    }
}

/// Where an append goes: the run, and the numbers of its first row and
/// case result.
struct Appended {
    seq: i64,
    first_row: i64,
    first_result: i64,
    /// Earlier case results of the run that this append's revisions
    /// replace: deleted after the new ones are inserted.
    superseded: Vec<i64>,
    /// The append before failed: this batch may be there already (its
    /// first row is), and then is not written again.
    resumed: bool,
}

/// Opens the store at `location` to save a run in: the default store
/// (`default`) gets its directory first, as [`save_run`] does.
pub fn open_to_save(location: &Location, default: bool) -> Result<Store, StoreError> {
    if default {
        prepare_default_dir(location)?;
    }
    Store::open(location, true)
}

/// The outcome of saving a run, for the command to report.
pub enum Saved {
    /// Saved: the run's id and where.
    Yes(String, Location),
    /// Saving is off.
    Off,
    /// It failed: why, and whether the user asked for that store.
    Failed(StoreError, bool),
}

/// Saves a finished run (its JSONL report as `report`'s parts) where
/// `choice` says: the default store gets its directory (with a
/// `.gitignore`, so a checkout never commits it) on first use.
pub fn save_run(choice: &Choice, meta: &RunMeta, report: &Parts, results: &[Entry]) -> Saved {
    let Some(location) = &choice.location else {
        return Saved::Off;
    };
    let saved = (|| {
        if choice.is_default() {
            prepare_default_dir(location)?;
        }
        let mut store = Store::open(location, true)?;
        store.save(meta, report, results)
    })();
    match saved {
        Ok(()) => Saved::Yes(meta.id.clone(), location.clone()),
        Err(e) => Saved::Failed(e, choice.explicit),
    }
}

fn prepare_default_dir(location: &Location) -> Result<(), StoreError> {
    let Location::Sqlite(path) = location else {
        return Ok(());
    };
    let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(());
    };
    let err = |source| StoreError::Dir {
        store: location.to_string(),
        dir: dir.display().to_string(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(err)?;
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        std::fs::write(
            &ignore,
            "# The toolscore run store: local, never committed.\n*\n",
        )
        .map_err(err)?;
    }
    Ok(())
}

impl RunMeta {
    /// The run as `runs` lists it.
    pub fn summary(&self) -> RunSummary {
        RunSummary {
            id: self.id.clone(),
            started: utc_text(self.started_ms),
            started_ms: self.started_ms,
            finished: self.finished,
            commit: self.git_commit.clone(),
            branch: self.git_branch.clone(),
            fixture: self.fixture.clone(),
            cases: self.cases,
            passed: self.passed,
            failed: self.failed,
            pass_rate: (self.cases > 0).then(|| self.passed as f64 / self.cases as f64),
            mean_score: self.mean_score,
            labels: self
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(case: &str, pass: bool, score: f64) -> Entry {
        Entry {
            case: case.into(),
            target: "t".into(),
            score: Some(score),
            pass,
        }
    }

    /// A new SQLite store in a directory of its own, with one run begun.
    fn new_run(tag: &str) -> (std::path::PathBuf, Store, String, OpenRun) {
        let dir = std::env::temp_dir().join(format!(
            "toolscore-{tag}-{}-{}",
            std::process::id(),
            now_ms()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut store = Store::open(&Location::Sqlite(dir.join("runs.db")), true).unwrap();
        let id = run_id(now_ms());
        let run = store
            .begin_run(RunMeta {
                id: id.clone(),
                ..RunMeta::default()
            })
            .unwrap();
        (dir, store, id, run)
    }

    #[test]
    fn a_revision_of_a_result_no_longer_remembered_is_found_in_the_store() {
        let (dir, mut store, id, mut run) = new_run("latest");
        run.latest.kept = 1;
        let (a, b) = (entry("a", false, 0.0), entry("b", true, 1.0));
        store
            .append_run(&mut run, b"1\n2\n", &[a, b], &[false, false], None)
            .unwrap();
        // `a` was dropped from memory when `b` came: looked up, replaced.
        assert!(run.latest.get("a", "t").is_none());
        store
            .append_run(&mut run, b"3\n", &[entry("a", true, 0.5)], &[true], None)
            .unwrap();
        let meta = store.resolve(&id, None, None).unwrap();
        assert_eq!((meta.cases, meta.passed, meta.failed), (2, 2, 0));
        assert_eq!(meta.mean_score, Some(0.75));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_server_not_there_is_worth_another_try_and_a_pruned_run_is_not() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let url = format!("postgres://nobody@127.0.0.1:{port}/db");
        let refused = Store::open(&Location::Postgres(url), false).err().unwrap();
        assert!(refused.is_transient(), "{refused}");
        let gone = StoreError::NoRun {
            store: "s".into(),
            run: "r".into(),
            hint: String::new(),
        };
        assert!(!gone.is_transient());
    }

    #[test]
    fn a_batch_appended_again_after_a_failure_that_had_committed_is_not_written_twice() {
        let (dir, mut store, id, mut run) = new_run("resume");
        store
            .append_run(&mut run, b"1\n", &[entry("a", true, 1.0)], &[false], None)
            .unwrap();
        // The next batch commits, but its caller is told it failed (a
        // connection lost after the commit): as the run was before it.
        let (rows, results, score_sum, meta) =
            (run.rows, run.results, run.score_sum, run.meta.clone());
        let batch = [entry("b", false, 0.0)];
        store
            .append_run(&mut run, b"2\n3\n", &batch, &[false], None)
            .unwrap();
        (run.rows, run.results, run.score_sum, run.meta) = (rows, results, score_sum, meta);
        run.unsure = true;
        store
            .append_run(&mut run, b"2\n3\n", &batch, &[false], None)
            .unwrap();
        store
            .append_run(&mut run, b"4\n", &[entry("c", true, 1.0)], &[false], None)
            .unwrap();
        assert_eq!(store.report(&id).unwrap(), b"1\n2\n3\n4\n");
        let meta = store.resolve(&id, None, None).unwrap();
        assert_eq!((meta.cases, meta.passed, meta.failed), (3, 2, 1));
        let _ = std::fs::remove_dir_all(dir);
    }
}
