//! Scoring completed traces: the completion thread hands idle traces, in
//! batches, to scoring threads that extract their calls and run the
//! evaluation core (`evaluate`), exactly as `toolscore replay` does, then
//! join calls across traces in the order the traces completed (`joined`);
//! session cases collect their traces' calls until the session is idle
//! (`sessions`). Every batch's results go to the sinks (`sinks`).

use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracing::{debug, error, info, warn};

use super::buffer::{Completed, TraceBuffer};
use super::intake::Shared;
use super::joined::{First, Joined, Scored, Turn};
use super::judging::JudgeQueue;
use super::sessions::{DueSession, SessionTracker};
use super::sinks::{Batch, Output, Outputs, ServeSummary};
use super::telemetry::{ServeStats, StatsSnapshot};
use super::{ServeConfig, ServeError};
use crate::evaluate::{Evaluator, Pipeline, TraceOutcome, Warning};
use crate::extract::carry::Left;
use crate::run::{DefaultCase, Fixture, Note, Options, Setup, SetupError};

/// How often a failing results file is retried.
const RETRY_OUTPUT: Duration = Duration::from_millis(500);

/// Traces scored per batch, at most (small enough that several scoring
/// threads share a burst of completions).
const MAX_BATCH: usize = 256;

pub use crate::run::Scoring;

/// The run's setup from `--expected` and `--default-expected`, as every
/// driver builds it. Bad fixture lines are logged (and written as
/// `rejected` rows by the results file); the run goes on without them.
pub(crate) fn setup(config: &ServeConfig, scoring: Scoring) -> Result<Setup, ServeError> {
    let setup = Setup::new(Options {
        scoring,
        fixture: config.expected.clone().map_or(Fixture::None, Fixture::Path),
        default_case: config.default_expected.clone().map(DefaultCase::Path),
        listing: false,
    })
    .map_err(|e| match e {
        SetupError::Scoring(_) | SetupError::CustomName(_) => ServeError::Scoring(e),
        _ => ServeError::Fixtures(e),
    })?;
    for note in setup.notes() {
        if let Note::Skipped(n) = note {
            info!(note = %crate::report::printable(n), "Fixture record skipped.");
        }
    }
    for r in setup.rejected() {
        warn!(source = %r.source, position = %r.position, reason = %r.reason, "Fixture rejected.");
    }
    for note in setup.notes() {
        if let Note::LiteralMatchers(n) = note {
            info!(note = %crate::report::printable(n), "Argument matchers compared literally.");
        }
    }
    Ok(setup)
}

/// Scores batches of completed traces: read-only but for the session
/// tracker, shared by the scoring threads.
pub(crate) struct BatchScorer {
    pipeline: Arc<Pipeline>,
    evaluator: Arc<Evaluator>,
    sessions: Mutex<SessionTracker>,
    stats: Arc<ServeStats>,
    /// Calls joined across traces, in the order traces complete.
    joined: Arc<Joined>,
}

impl BatchScorer {
    pub fn new(pipeline: Arc<Pipeline>, session_wait: Duration, stats: Arc<ServeStats>) -> Self {
        BatchScorer {
            // Held traces wait for the agent's next trace, as a session
            // waits for its next turn.
            joined: Joined::new(session_wait),
            evaluator: Arc::clone(pipeline.evaluator()),
            pipeline,
            sessions: Mutex::new(SessionTracker::new(session_wait)),
            stats,
        }
    }

    /// Extracts and evaluates one batch of completed traces: the core's
    /// per-trace pipeline decides what each trace gives, then, in the
    /// batch's `turn`, the carry joins calls across traces as `replay`
    /// does (`joined`); this adds the clock (arrival for sessions, the
    /// trace's revision) and folds what is due into the sinks' outputs.
    pub fn score(&self, batch: Vec<Completed>, turn: Turn) -> Batch {
        let mut out = Batch {
            traces: batch.len() as u64,
            rescored: batch.iter().filter(|c| c.revision > 1).count() as u64,
            ..Batch::default()
        };
        let firsts: Vec<First> = batch
            .into_iter()
            .map(|c| {
                let (result, _, open) = self.pipeline.run_carried(&c.trace, &[]);
                log_warnings(&result.assembly_warnings);
                ((result, c.revision), Left::of(open, || c.trace))
            })
            .collect();
        let due = self.joined.settle(turn, firsts, |t, carried, revision| {
            let (result, _, open) = self.pipeline.run_carried(t, carried);
            ((result, revision), open)
        });
        self.fold(due, &mut out);
        debug!(
            traces = out.traces,
            outputs = out.outputs.len(),
            rescored = out.rescored,
            "Scored batch."
        );
        out
    }

    /// Folds traces the carry is done with into `out`'s outputs, and their
    /// calls into their sessions.
    fn fold(&self, due: Vec<Scored>, out: &mut Batch) {
        let arrived = Instant::now();
        let mut unmatched = 0usize;
        let mut first_unmatched = None;
        let mut defaulted = false;
        for (result, revision) in due {
            if !result.sessions.is_empty() {
                let mut tracker = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
                let capped = tracker.add(&result, arrived);
                drop(tracker);
                log_warnings(&capped);
            }
            let (trace_id, spans, root) = (result.trace_id, result.spans, result.root);
            let outcome = result.into_outcome();
            if outcome.matched_no_case() {
                unmatched += 1;
                first_unmatched.get_or_insert(trace_id);
            }
            match outcome {
                TraceOutcome::Unmatched(trace) => {
                    out.outputs.push(Output::Unmatched { trace, revision })
                }
                TraceOutcome::Evaluated {
                    evaluations,
                    defaulted: d,
                } => {
                    defaulted |= d;
                    out.outputs
                        .extend(evaluations.into_iter().map(|eval| Output::Evaluation {
                            eval,
                            revision,
                            spans: Some(spans),
                            root,
                            defaulted: d,
                        }));
                }
            }
        }
        if unmatched > 0 && self.evaluator.has_cases() {
            info!(
                traces = unmatched,
                first = ?first_unmatched,
                defaulted,
                "Traces matched no case."
            );
        }
    }

    /// A turn for the next batch, in the order batches are taken.
    pub fn turn(&self) -> Turn {
        self.joined.turn()
    }

    /// When the traces held behind a lone MCP client trace are to be let go.
    pub fn next_release(&self) -> Option<Instant> {
        self.joined.next_release()
    }

    /// The traces held behind a lone MCP client trace for the hold by `now`;
    /// with `all` (shutdown), every one held once every batch taken has
    /// gone through the carry.
    pub fn release_held(&self, now: Instant, all: bool) -> Batch {
        let due = if all {
            self.joined.finish()
        } else {
            self.joined.release(now, false)
        };
        let mut out = Batch::default();
        if !due.is_empty() {
            debug!(traces = due.len(), "Released held traces.");
        }
        self.fold(due, &mut out);
        out
    }

    /// When the next session is due for scoring, if any is waiting.
    pub fn next_session_due(&self) -> Option<Instant> {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .next_due()
    }

    /// Scores the sessions idle for the session wait (every waiting one
    /// when `all`, at shutdown).
    pub fn score_due_sessions(&self, now: Instant, all: bool) -> Batch {
        self.evaluate_sessions(self.take_due_sessions(now, all))
    }

    /// Takes the sessions idle for the session wait (every waiting one when
    /// `all`) out of the tracker, unscored.
    fn take_due_sessions(&self, now: Instant, all: bool) -> Vec<DueSession> {
        let mut tracker = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let due = tracker.take_due(now, all);
        ServeStats::set(&self.stats.sessions_waiting, tracker.waiting() as u64);
        due
    }

    /// Scores sessions taken with [`BatchScorer::take_due_sessions`].
    fn evaluate_sessions(&self, due: Vec<DueSession>) -> Batch {
        let mut out = Batch {
            sessions: due.len() as u64,
            ..Batch::default()
        };
        for d in due {
            let root = d.collected.root;
            out.outputs.push(Output::Evaluation {
                eval: d.collected.evaluate(&self.evaluator),
                revision: d.revision,
                spans: None,
                root,
                defaulted: false,
            });
        }
        if !out.outputs.is_empty() {
            debug!(sessions = out.outputs.len(), "Scored sessions.");
        }
        out
    }
}

/// The completion thread: waits for traces to go idle and hands them, in
/// batches, to `threads` scoring threads (which write through the one sink);
/// logs buffer use; after `close`, drains the buffer and finishes the sink.
pub(crate) fn completion_loop(
    shared: Arc<Shared>,
    scorer: BatchScorer,
    outputs: Arc<Outputs>,
    threads: usize,
    status_every: Duration,
) -> Result<ServeSummary, ServeError> {
    let scorer = Arc::new(scorer);
    let judging = start_judging(&scorer, &outputs)?;
    let ScoringThreads {
        batches: tx,
        workers,
    } = start_scoring_threads(threads, &scorer, &outputs, &shared, judging.as_ref())?;
    let mut schedule = Schedule {
        shared: &shared,
        scorer: &scorer,
        outputs: &outputs,
        judging: judging.as_deref(),
        status_every,
        last_status: Instant::now(),
        last_snapshot: StatsSnapshot::default(),
    };
    loop {
        let batch = schedule.next_batch();
        if batch.is_empty() {
            break; // closed and drained
        }
        // Turns go in the order batches are taken: the order traces complete.
        let sent = match tx.try_send((batch, scorer.turn())) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(batch)) => {
                // Every scoring thread is busy and a batch already waits.
                shared.set_behind(true);
                tx.send(batch).map_err(|_| ())
            }
            Err(TrySendError::Disconnected(_)) => Err(()),
        };
        if sent.is_err() {
            error!("Every scoring thread has stopped; cannot score.");
            break;
        }
    }
    drop(tx);
    stop(workers, scorer, outputs, judging)
}

/// The judge queue, when metrics ask a judge: judged metrics wait on
/// HTTP, so their scoring runs on the queue's threads, never on the
/// scoring threads or the completion thread.
fn start_judging(
    scorer: &BatchScorer,
    outputs: &Arc<Outputs>,
) -> Result<Option<Arc<JudgeQueue>>, ServeError> {
    let Some(judge) = scorer.evaluator.judge() else {
        return Ok(None);
    };
    let queue = JudgeQueue::start(
        judge.concurrency(),
        judge.concurrency() * 2,
        Arc::clone(outputs),
    )
    .map_err(ServeError::Runtime)?;
    Ok(Some(Arc::new(queue)))
}

/// Starts the scoring threads (at least one, or an error).
fn start_scoring_threads(
    threads: usize,
    scorer: &Arc<BatchScorer>,
    outputs: &Arc<Outputs>,
    shared: &Arc<Shared>,
    judging: Option<&Arc<JudgeQueue>>,
) -> Result<ScoringThreads, ServeError> {
    // Bounded: when scoring lags, batches wait in the buffer (where they count
    // against its caps), not in a queue.
    let (tx, rx) = std::sync::mpsc::sync_channel::<(Vec<Completed>, Turn)>(threads);
    let rx = Arc::new(Mutex::new(rx));
    // With a judge, this thread only queues batches for the judge queue,
    // whose jobs wait for their turns: one thread queues them in turn
    // order, so a job never waits for a turn queued behind it.
    let threads = if judging.is_some() { 1 } else { threads };
    let mut workers = Vec::with_capacity(threads);
    for n in 0..threads.max(1) {
        let (scorer, outputs, rx, shared, judging) = (
            Arc::clone(scorer),
            Arc::clone(outputs),
            Arc::clone(&rx),
            Arc::clone(shared),
            judging.cloned(),
        );
        let spawned = std::thread::Builder::new()
            .name(format!("toolscore-score-{n}"))
            .spawn(move || score_batches(&scorer, &outputs, &rx, &shared, judging.as_deref()));
        match spawned {
            Ok(h) => workers.push(h),
            Err(e) if workers.is_empty() => return Err(ServeError::Runtime(e)),
            Err(e) => warn!(error = %e, "Cannot start another scoring thread."),
        }
    }
    Ok(ScoringThreads {
        batches: tx,
        workers,
    })
}

/// The scoring threads and the channel that hands them batches.
struct ScoringThreads {
    batches: SyncSender<(Vec<Completed>, Turn)>,
    workers: Vec<JoinHandle<()>>,
}

/// Once every batch is handed out: waits for the scoring threads, scores
/// the sessions still waiting, finishes the judge queue and the sink.
fn stop(
    workers: Vec<JoinHandle<()>>,
    scorer: Arc<BatchScorer>,
    outputs: Arc<Outputs>,
    judging: Option<Arc<JudgeQueue>>,
) -> Result<ServeSummary, ServeError> {
    for w in workers {
        if w.join().is_err() {
            error!("A scoring thread panicked.");
        }
    }
    // Every batch is scored (or queued for the judge: this waits for
    // it): the traces still held go out, then the sessions still waiting.
    outputs.record(&scorer.release_held(Instant::now(), true));
    score_sessions(&scorer, &outputs, judging.as_deref(), Instant::now(), true);
    if let Some(q) = judging {
        match Arc::try_unwrap(q) {
            Ok(q) => q.finish(),
            Err(_) => error!("The judge queue is still shared; its last jobs may be lost."),
        }
        if let Some(j) = scorer.evaluator.judge() {
            let u = j.usage();
            info!(
                requests = u.requests,
                retries = u.retries,
                cache_hits = u.cache_hits,
                errors = u.errors,
                prompt_tokens = u.prompt_tokens,
                completion_tokens = u.completion_tokens,
                "Judge usage."
            );
        }
    }
    drop(scorer);
    match Arc::try_unwrap(outputs) {
        Ok(outputs) => Ok(outputs.finish()),
        Err(_) => Err(ServeError::Scorer("results still shared".into())),
    }
}

/// The completion thread's scheduler: decides what is scored when.
struct Schedule<'a> {
    shared: &'a Shared,
    scorer: &'a Arc<BatchScorer>,
    outputs: &'a Outputs,
    judging: Option<&'a JudgeQueue>,
    status_every: Duration,
    last_status: Instant,
    last_snapshot: StatsSnapshot,
}

impl Schedule<'_> {
    /// Waits for the next batch of completed traces; meanwhile scores the
    /// sessions that are due, logs buffer use and retries a failing
    /// results file. Empty once the buffer is closed and drained.
    fn next_batch(&mut self) -> Vec<Completed> {
        let (shared, outputs) = (self.shared, self.outputs);
        let mut buf = shared.lock();
        let batch = loop {
            let now = Instant::now();
            if buf.is_closed() {
                shared.set_behind(false);
                break buf.take_any(MAX_BATCH);
            }
            let batch = buf.take_complete(now, MAX_BATCH);
            if batch.len() < MAX_BATCH {
                // Nothing more is due: scoring has caught up.
                shared.set_behind(false);
            }
            if !batch.is_empty() {
                break batch;
            }
            let release = self.scorer.next_release();
            if release.is_some_and(|t| t <= now) {
                drop(buf);
                outputs.record(&self.scorer.release_held(now, false));
                buf = shared.lock();
                continue;
            }
            let session_due = self.scorer.next_session_due();
            if session_due.is_some_and(|t| t <= now) {
                // Sessions hold extracted calls only: scoring them is cheap,
                // so this thread does it, without the buffer's lock.
                drop(buf);
                score_sessions(self.scorer, outputs, self.judging, now, false);
                buf = shared.lock();
                continue;
            }
            if now >= self.last_status + self.status_every {
                let snap = shared.stats.snapshot();
                if snap != self.last_snapshot {
                    log_status(&buf, &snap);
                    self.last_snapshot = snap;
                }
                self.last_status = now;
            }
            if outputs.failing() {
                // Rows are owed: retry (without the buffer's lock) at
                // least every RETRY_OUTPUT.
                drop(buf);
                outputs.retry();
                buf = shared.lock();
            }
            let wake_at = buf
                .next_completion()
                .unwrap_or(now + buf.limits().decision_wait)
                .min(self.last_status + self.status_every)
                .min(session_due.unwrap_or(now + self.status_every))
                .min(release.unwrap_or(now + self.status_every));
            let wake_at = if outputs.failing() {
                wake_at.min(now + RETRY_OUTPUT)
            } else {
                wake_at
            };
            let timeout = wake_at
                .saturating_duration_since(now)
                .max(Duration::from_millis(1));
            buf = shared
                .wake
                .wait_timeout(buf, timeout)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        };
        shared.stats.set_buffered(&buf.usage());
        batch
    }
}

/// A scoring thread: scores batches until the channel closes, writes each
/// through the sink, then releases the batch's spans from the buffer's count.
fn score_batches(
    scorer: &Arc<BatchScorer>,
    outputs: &Outputs,
    rx: &Mutex<std::sync::mpsc::Receiver<(Vec<Completed>, Turn)>>,
    shared: &Shared,
    judging: Option<&JudgeQueue>,
) {
    loop {
        let next = rx.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok((batch, turn)) = next else {
            return;
        };
        let spans: usize = batch.iter().map(|c| c.trace.spans.len()).sum();
        let traces = batch.len();
        if let Some(q) = judging {
            // The batch leaves the buffer's count here: the judge queue is
            // bounded on its own.
            let scorer = Arc::clone(scorer);
            q.submit(Box::new(move || scorer.score(batch, turn)));
        } else {
            let scored = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                scorer.score(batch, turn)
            }));
            match scored {
                Ok(result) => outputs.record(&result),
                Err(_) => error!(traces, "Scoring panicked; this batch is lost."),
            }
        }
        let mut buf = shared.lock();
        buf.scored(spans);
        shared.stats.set_buffered(&buf.usage());
        drop(buf);
        if scorer.next_release().is_some() {
            // The carry holds traces: the completion thread lets them go
            // after the hold, and may be asleep for longer.
            shared.wake.notify_all();
        }
    }
}

/// Scores due sessions: here, or on the judge queue when metrics ask a
/// judge.
fn score_sessions(
    scorer: &Arc<BatchScorer>,
    outputs: &Outputs,
    judging: Option<&JudgeQueue>,
    now: Instant,
    all: bool,
) {
    match judging {
        None => outputs.record(&scorer.score_due_sessions(now, all)),
        Some(q) => {
            let due = scorer.take_due_sessions(now, all);
            if !due.is_empty() {
                let scorer = Arc::clone(scorer);
                q.submit(Box::new(move || scorer.evaluate_sessions(due)));
            }
        }
    }
}

/// Logs what the core warns of (the same warnings `replay` prints).
fn log_warnings(warnings: &[Warning]) {
    for w in warnings {
        warn!(warning = %crate::report::printable(&w.to_string()), "{}", w.title());
    }
}

fn log_status(buf: &TraceBuffer, snap: &StatsSnapshot) {
    let u = buf.usage();
    let l = buf.limits();
    let held = u.spans + u.scoring_spans;
    info!(
        traces = u.traces,
        spans = held,
        max_spans = l.max_spans,
        max_traces = l.max_traces,
        used_pct = (100 * held / l.max_spans.max(1)).max(100 * u.traces / l.max_traces.max(1)),
        accepted_spans = snap.spans,
        scored_traces = snap.traces_scored,
        refused_requests = snap.refused_requests,
        "Buffer use."
    );
}
