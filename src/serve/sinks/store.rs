//! The run store as one of serve's outputs: each process start saves one
//! run, created unfinished when serving starts, its rows appended as the
//! results file gets them, and marked finished, with its counts, at a clean
//! shutdown. A process killed on the way leaves the run listed unfinished,
//! with every batch committed before.
//!
//! The JSONL sink feeds it ([`Feed`]): the rows are the bytes that sink
//! writes to `--output` (or would, without one), queued in the order the
//! file gets them, so `runs show RUN -f jsonl` gives the file back. A thread
//! of its own writes them, each time what is queued (whole batches, up to
//! [`CHUNK`]) in one transaction. Saving never holds up scoring: a send only
//! queues, the queue is bounded ([`MAX_QUEUED`]). A write that fails for a
//! passing reason is tried again on the store opened anew (`RETRIES`
//! times); when the store still fails, or falls that far behind, saving
//! stops with a warning naming the store; the run then stays unfinished
//! with what was committed.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::json;
use tracing::{info, warn};

use crate::evaluate::Evaluator;
use crate::report::baseline::Entry;
use crate::report::exit;
use crate::store::{self, Choice, Location, OpenRun, RunEnd, RunMeta, Store, StoreError};

/// Bytes queued for the store (rows and case results) past which saving
/// stops rather than hold more in memory.
pub const MAX_QUEUED: usize = 64 << 20;

/// About the most bytes of rows written in one transaction.
pub const CHUNK: usize = 4 << 20;

/// The run a serve process saves, and where.
#[derive(Debug, Clone)]
pub struct SaveRun {
    pub location: Location,
    /// Named by the user (`--store`, `TOOLSCORE_STORE`): a failure to save
    /// makes the process exit 2 at shutdown. The default store warns only.
    pub explicit: bool,
    /// The run as it starts: id, start time, command, fixture, labels.
    pub meta: RunMeta,
}

impl SaveRun {
    /// The run with what the scoring setup resolved: the metrics in column
    /// order and the threshold each passes at (not the flags' text), and
    /// the fixture lines it rejected.
    pub fn scored_by(mut self, evaluator: &Evaluator, rejected: usize) -> SaveRun {
        if let serde_json::Value::Object(settings) = &mut self.meta.settings {
            settings.insert("metrics".into(), json!(evaluator.labels()));
            let thresholds: serde_json::Map<String, serde_json::Value> = evaluator
                .run_thresholds()
                .map(|(label, t)| (label.to_string(), json!(t)))
                .collect();
            settings.insert("thresholds".into(), thresholds.into());
        }
        self.meta.rejected = rejected as u64;
        self
    }

    /// `None` when saving is off.
    pub fn new(choice: &Choice, meta: RunMeta) -> Option<SaveRun> {
        Some(SaveRun {
            location: choice.location.clone()?,
            explicit: choice.explicit,
            meta,
        })
    }
}

/// Case results queued with their rows: each one's entry, and whether it
/// is a revision (it replaces the run's earlier result of its case and
/// target).
#[derive(Debug, Default)]
pub struct Results {
    entries: Vec<Entry>,
    revises: Vec<bool>,
}

impl Results {
    pub fn push(&mut self, entry: Entry, revises: bool) {
        self.entries.push(entry);
        self.revises.push(revises);
    }

    fn append(&mut self, mut more: Results) {
        self.entries.append(&mut more.entries);
        self.revises.append(&mut more.revises);
    }
}

enum Message {
    Rows(Vec<u8>, Results),
    /// A clean shutdown: the run ends. An exit code left `None` is decided
    /// from the run's last results, as a gate on them would.
    End(RunEnd),
}

/// What the feed and the writing thread share.
#[derive(Default)]
struct Shared {
    /// Saving stopped (the store failed, or the queue overflowed): nothing
    /// more is queued.
    stopped: AtomicBool,
    /// Bytes queued and not yet written.
    queued: AtomicUsize,
    /// Why saving stopped.
    why: Mutex<Option<String>>,
}

impl Shared {
    /// Stops saving (the first reason is kept and logged).
    fn stop(&self, store: &Location, run: &str, why: String) -> String {
        let mut slot = self.why.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            warn!(
                store = %store,
                run,
                reason = %why,
                "Cannot save this run to the run store; scoring goes on, saving stops (the run stays unfinished with what was committed)."
            );
            *slot = Some(why);
        }
        self.stopped.store(true, Ordering::Release);
        slot.clone().unwrap_or_default()
    }

    fn stopped(&self) -> Option<String> {
        self.stopped
            .load(Ordering::Acquire)
            .then(|| {
                self.why
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone()
            })
            .flatten()
    }
}

/// Queues rows for the store; cloned into the JSONL sink.
#[derive(Clone)]
pub struct Feed {
    tx: Sender<Message>,
    shared: Arc<Shared>,
    location: Location,
    run: String,
}

impl Feed {
    /// Queues whole rows and their case results, without waiting. Past
    /// [`MAX_QUEUED`] bytes not yet written, saving stops.
    pub fn send(&self, rows: Vec<u8>, results: Results) {
        if self.shared.stopped.load(Ordering::Acquire) || rows.is_empty() {
            return;
        }
        let size = queued_size(&rows, &results);
        let queued = self.shared.queued.fetch_add(size, Ordering::AcqRel) + size;
        if queued > MAX_QUEUED {
            self.shared.stop(
                &self.location,
                &self.run,
                format!(
                    "run store {}: fell behind by more than {} MiB of rows",
                    self.location,
                    MAX_QUEUED >> 20
                ),
            );
            return;
        }
        // The writer gone (it failed) drops what it is sent.
        let _ = self.tx.send(Message::Rows(rows, results));
    }
}

/// The run to save, before serving starts: its feed goes to the JSONL
/// sink, [`Saver::start`] starts writing.
pub struct Saver {
    save: SaveRun,
    tx: Sender<Message>,
    rx: Receiver<Message>,
    shared: Arc<Shared>,
}

/// How saving ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Saved {
    /// Every row written, the run marked finished.
    Finished,
    /// Every row written, the run left unfinished (no clean shutdown).
    Unfinished,
    /// Saving stopped, or did not end in time: why.
    Failed(String),
}

impl Saver {
    pub fn new(save: SaveRun) -> Saver {
        let (tx, rx) = mpsc::channel();
        Saver {
            save,
            tx,
            rx,
            shared: Arc::default(),
        }
    }

    pub fn feed(&self) -> Feed {
        Feed {
            tx: self.tx.clone(),
            shared: Arc::clone(&self.shared),
            location: self.save.location.clone(),
            run: self.save.meta.id.clone(),
        }
    }

    /// Starts the writing thread: it opens the store and creates the run,
    /// then writes what the feeds queue.
    pub fn start(self) -> Saving {
        let Saver {
            save,
            tx,
            rx,
            shared,
        } = self;
        let (done_tx, done) = mpsc::channel();
        let (location, explicit, id) = (save.location.clone(), save.explicit, save.meta.id.clone());
        let writer = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("toolscore-store".into())
            .spawn(move || {
                let _ = done_tx.send(write_run(save, &rx, &writer));
            });
        if let Err(e) = spawned {
            let why = format!("run store {location}: cannot start its thread: {e}");
            shared.stop(&location, &id, why);
        }
        Saving {
            tx,
            done,
            shared,
            location,
            explicit,
            id,
        }
    }
}

/// The run being saved.
pub struct Saving {
    tx: Sender<Message>,
    done: Receiver<Result<bool, String>>,
    shared: Arc<Shared>,
    location: Location,
    explicit: bool,
    id: String,
}

impl Saving {
    pub fn location(&self) -> &Location {
        &self.location
    }

    pub fn explicit(&self) -> bool {
        self.explicit
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// At shutdown, once the sinks have everything: marks the run finished
    /// when `end` is given (a clean shutdown), and waits until `deadline`
    /// for the queue to be written.
    pub fn finish(self, end: Option<RunEnd>, deadline: Instant) -> Saved {
        if let Some(why) = self.shared.stopped() {
            return Saved::Failed(why);
        }
        if let Some(end) = end {
            let _ = self.tx.send(Message::End(end));
        }
        // With the feeds gone too, the writer ends after the last row.
        drop(self.tx);
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.done.recv_timeout(wait) {
            Ok(Ok(true)) => Saved::Finished,
            Ok(Ok(false)) => Saved::Unfinished,
            Ok(Err(why)) => Saved::Failed(why),
            Err(RecvTimeoutError::Timeout) => Saved::Failed(self.shared.stop(
                &self.location,
                &self.id,
                format!(
                    "run store {}: rows still being written at the shutdown deadline",
                    self.location
                ),
            )),
            Err(RecvTimeoutError::Disconnected) => {
                Saved::Failed(self.shared.stopped().unwrap_or_else(|| {
                    format!("run store {}: its thread ended early", self.location)
                }))
            }
        }
    }
}

/// The writing thread: creates the run, then appends what is queued until
/// the end (`Ok(true)`), every sender gone (`Ok(false)`: unfinished) or a
/// failure (saving stops).
fn write_run(save: SaveRun, rx: &Receiver<Message>, shared: &Shared) -> Result<bool, String> {
    let SaveRun {
        location,
        explicit,
        meta,
    } = save;
    let id = meta.id.clone();
    let fail = |e: store::StoreError| shared.stop(&location, &id, format!("{e}"));
    // A store not there yet (a server still starting) is waited for as one
    // that goes away later is.
    let opened = with_retries(
        shared,
        &location,
        &id,
        "The run store cannot be opened; trying again.",
        |_| {
            store::open_to_save(&location, !explicit)
                .and_then(|mut s| s.begin_run(meta.clone()).map(|run| (s, run)))
        },
    );
    let (mut store, mut run) = opened.map_err(fail)?;
    info!(run = %id, store = %location, "Saving this run to the run store as it is scored.");
    loop {
        let Ok(first) = rx.recv() else {
            return Ok(false);
        };
        if let Some(why) = shared.stopped() {
            return Err(why);
        }
        let mut next = Pending::default();
        next.take(first, shared);
        while next.rows.len() < CHUNK && next.end.is_none() {
            match rx.try_recv() {
                Ok(m) => next.take(m, shared),
                Err(_) => break,
            }
        }
        let results = &next.results;
        append_again(&mut store, &mut run, shared, |store, run| {
            store.append_run(run, &next.rows, &results.entries, &results.revises, None)
        })
        .map_err(fail)?;
        let Some(mut end) = next.end else {
            continue;
        };
        // After the last rows: the exit code follows the cases' last results.
        end.exit_code = end.exit_code.or_else(|| Some(gate(run.meta())));
        append_again(&mut store, &mut run, shared, |store, run| {
            store.append_run(run, b"", &[], &[], Some(&end))
        })
        .map_err(fail)?;
        return Ok(true);
    }
}

/// How many times an open or an append that failed for a passing reason
/// (the server starting or restarted, the connection dropped) is tried
/// again, on the store opened anew, before saving stops.
const RETRIES: u32 = 10;

/// The wait before the first retry; each next one waits twice as long, up
/// to [`MAX_RETRY_WAIT`] (about 40 s in all).
const FIRST_RETRY_WAIT: Duration = Duration::from_millis(100);
const MAX_RETRY_WAIT: Duration = Duration::from_secs(8);

/// Runs `append`; when the store fails for a passing reason, opens it
/// again and retries ([`with_retries`]). The store keeps a batch that
/// committed before its failure from being written twice
/// ([`store::Store::append_run`]).
fn append_again(
    store: &mut Store,
    run: &mut OpenRun,
    shared: &Shared,
    mut append: impl FnMut(&mut Store, &mut OpenRun) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let location = store.location().clone();
    let id = run.meta().id.clone();
    let mut reopened = false;
    with_retries(
        shared,
        &location,
        &id,
        "The run store failed; opening it again to go on saving this run.",
        |attempt| {
            if attempt > 0 {
                *store = Store::open(&location, false)?;
                reopened = true;
            }
            append(store, run)
        },
    )?;
    if reopened {
        info!(store = %location, run = %id, "Saving this run again.");
    }
    Ok(())
}

/// Runs `op` (given the number of the attempt, 0 first); when it fails for
/// a passing reason, waits and runs it again, waiting longer each time, up
/// to [`RETRIES`] times. Gives up early when saving stopped meanwhile (the
/// queue overflowed). `what` is the warning of each retry.
fn with_retries<T>(
    shared: &Shared,
    location: &Location,
    run: &str,
    what: &str,
    mut op: impl FnMut(u32) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let mut wait = FIRST_RETRY_WAIT;
    let mut failed = match op(0) {
        Ok(done) => return Ok(done),
        Err(e) => e,
    };
    for attempt in 1..=RETRIES {
        if !failed.is_transient() || shared.stopped.load(Ordering::Acquire) {
            break;
        }
        warn!(store = %location, run, reason = %failed, attempt, "{what}");
        std::thread::sleep(wait);
        wait = (wait * 2).min(MAX_RETRY_WAIT);
        match op(attempt) {
            Ok(done) => return Ok(done),
            Err(e) => failed = e,
        }
    }
    Err(failed)
}

/// What one transaction writes: queued messages taken together.
#[derive(Default)]
struct Pending {
    rows: Vec<u8>,
    results: Results,
    end: Option<RunEnd>,
}

impl Pending {
    fn take(&mut self, m: Message, shared: &Shared) {
        match m {
            Message::Rows(rows, results) => {
                shared
                    .queued
                    .fetch_sub(queued_size(&rows, &results), Ordering::AcqRel);
                if self.rows.is_empty() {
                    self.rows = rows;
                } else {
                    self.rows.extend_from_slice(&rows);
                }
                self.results.append(results);
            }
            Message::End(end) => self.end = Some(end),
        }
    }
}

/// The memory a queued message holds, about.
fn queued_size(rows: &[u8], results: &Results) -> usize {
    rows.len()
        + results
            .entries
            .iter()
            .map(|e| e.case.len() + e.target.len() + std::mem::size_of::<Entry>() + 1)
            .sum::<usize>()
}

/// The exit code a gate gives a run by its results, as `replay` does: 2
/// when fixture lines were rejected, 1 when a case failed, else 0.
fn gate(run: &RunMeta) -> i64 {
    let code = if run.rejected > 0 {
        exit::INPUT
    } else if run.failed > 0 {
        exit::FAIL
    } else {
        exit::PASS
    };
    i64::from(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Filter;

    fn temp_store(tag: &str) -> (std::path::PathBuf, SaveRun) {
        let dir = std::env::temp_dir().join(format!(
            "toolscore-saver-{tag}-{}-{}",
            std::process::id(),
            store::now_ms()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let started = store::now_ms();
        let save = SaveRun {
            location: Location::Sqlite(dir.join("runs.db")),
            explicit: true,
            meta: RunMeta {
                id: store::run_id(started),
                started_ms: started,
                ..RunMeta::default()
            },
        };
        (dir, save)
    }

    /// Case results on one target: (case, pass, score, revises).
    fn results(of: &[(&str, bool, f64, bool)]) -> Results {
        let mut out = Results::default();
        for &(case, pass, score, revises) in of {
            let entry = Entry {
                case: case.into(),
                target: "t".into(),
                score: Some(score),
                pass,
            };
            out.push(entry, revises);
        }
        out
    }

    #[test]
    fn queued_batches_are_saved_in_order_and_the_end_finishes_the_run() {
        let (dir, save) = temp_store("order");
        let (location, id) = (save.location.clone(), save.meta.id.clone());
        let saver = Saver::new(save);
        let feed = saver.feed();
        // Queued before the writer starts, and after.
        feed.send(b"{\"n\":1}\n".to_vec(), results(&[("a", true, 1.0, false)]));
        let saving = saver.start();
        feed.send(
            b"{\"n\":2}\n{\"n\":3}\n".to_vec(),
            results(&[("b", false, 0.5, false)]),
        );
        drop(feed);
        let end = RunEnd {
            ended_ms: store::now_ms(),
            exit_code: Some(0),
            inputs: 4,
            traces: 3,
            spans: 9,
        };
        let deadline = Instant::now() + std::time::Duration::from_secs(60);
        assert_eq!(saving.finish(Some(end), deadline), Saved::Finished);
        let mut store = Store::open(&location, false).unwrap();
        assert_eq!(
            store.report(&id).unwrap(),
            b"{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n"
        );
        let runs = store
            .list(&Filter {
                limit: 10,
                ..Filter::default()
            })
            .unwrap();
        assert_eq!(runs.len(), 1);
        let run = &runs[0];
        assert!(run.finished);
        assert_eq!((run.cases, run.passed, run.failed), (2, 1, 1));
        assert_eq!(run.mean_score, Some(0.75));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_revision_replaces_its_case_result_and_the_exit_code_follows_the_last_ones() {
        let (dir, save) = temp_store("revise");
        let (location, id) = (save.location.clone(), save.meta.id.clone());
        let saver = Saver::new(save);
        let feed = saver.feed();
        let saving = saver.start();
        // `a` fails, then passes; `b` passes, fails, then passes again (its
        // two revisions in one batch, or not: the writer takes what is queued).
        feed.send(
            b"1\n".to_vec(),
            results(&[("a", false, 0.0, false), ("b", true, 1.0, false)]),
        );
        feed.send(
            b"2\n".to_vec(),
            results(&[("a", true, 1.0, true), ("b", false, 0.5, true)]),
        );
        feed.send(b"3\n".to_vec(), results(&[("b", true, 0.8, true)]));
        drop(feed);
        let end = RunEnd {
            ended_ms: store::now_ms(),
            ..RunEnd::default()
        };
        let deadline = Instant::now() + std::time::Duration::from_secs(60);
        assert_eq!(saving.finish(Some(end), deadline), Saved::Finished);
        let mut store = Store::open(&location, false).unwrap();
        let run = store.resolve(&id, None, None).unwrap();
        assert_eq!((run.cases, run.passed, run.failed), (2, 2, 0));
        assert!((run.mean_score.unwrap() - 0.9).abs() < 1e-9, "{run:?}");
        assert_eq!(run.exit_code, Some(0));
        let (_, cases) = store.history(None, 10).unwrap();
        let kept: Vec<(&str, bool, Option<f64>)> = cases
            .iter()
            .map(|c| (c.case.as_str(), c.pass, c.score))
            .collect();
        assert_eq!(kept, [("a", true, Some(1.0)), ("b", true, Some(0.8))]);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_queue_past_its_bound_stops_saving_and_says_why() {
        let (dir, save) = temp_store("bound");
        let location = save.location.clone();
        let saver = Saver::new(save);
        let feed = saver.feed();
        let row = [b"x".repeat((1 << 20) - 1), b"\n".to_vec()].concat();
        for _ in 0..(MAX_QUEUED >> 20) + 1 {
            feed.send(row.clone(), Results::default());
        }
        // Nothing more is queued once saving stopped.
        feed.send(row, Results::default());
        let saving = saver.start();
        let deadline = Instant::now() + std::time::Duration::from_secs(60);
        match saving.finish(Some(RunEnd::default()), deadline) {
            Saved::Failed(why) => assert!(why.contains("fell behind by more than 64 MiB"), "{why}"),
            other => panic!("{other:?}"),
        }
        drop(feed);
        // The run was never finished: whatever the writer did, it is listed unfinished or not at all.
        if let Ok(mut store) = Store::open(&location, false) {
            let runs = store
                .list(&Filter {
                    limit: 10,
                    ..Filter::default()
                })
                .unwrap();
            assert!(runs.iter().all(|r| !r.finished), "{runs:?}");
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}
