//! `traceval serve`: a live OTLP receiver (gRPC and HTTP) that scores agent
//! traces as they complete.
//!
//! ```text
//!  OTLP/gRPC (tonic) ─┐                         completion    scoring threads
//!                     ├─> intake ─> TraceBuffer ─────────────> BatchScorer ─> ResultSink
//!  OTLP/HTTP (axum) ──┘  (validate,  (by trace,  idle for the  (extract, join,  (JSONL,
//!                         admit or    capped)    decision wait  score: replay's  stdout,
//!                         refuse)                               functions)       summary)
//! ```
//!
//! The receivers only decode; the buffer is the one bounded queue (a full
//! buffer refuses whole requests with 503 / UNAVAILABLE, which clients
//! retry); scoring runs on its own thread and reuses `replay`'s pure stages,
//! so a trace scores the same here as in `traceval replay`. This module owns
//! the tokio runtime; nothing below it is async.
//!
//! [`Server::serve`] takes bound listeners and a [`CancellationToken`], so
//! tests bind `127.0.0.1:0`; [`run`] binds the configured endpoints and
//! cancels on SIGINT/SIGTERM. Shutdown: stop accepting, finish open
//! requests, score everything still buffered, flush, return the summary.

mod admin;
mod buffer;
mod config;
mod grpc;
mod http;
mod intake;
mod results;
mod sessions;
mod status;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
pub use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

pub use buffer::{Admitted, BufferLimits, Completed, Refused, TraceBuffer, Usage};
pub use config::{parse_duration, parse_size, ServeConfig, ServeFlags, OFF};
pub use http::TRACES_PATH;
pub use intake::{ServeStats, StatsSnapshot};
pub use results::{MetricSummary, Scoring, ServeSummary};
pub use status::{Accepted, Encoding, ExportError, RpcStatus};

use intake::Shared;
use results::{BatchScorer, ResultSink};

/// Traces scored and written per batch, at most (small enough that several
/// scoring threads share a burst of completions).
const MAX_BATCH: usize = 256;
/// How long open connections may take to finish after shutdown starts.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// How long shutdown waits for the forward queue to drain.
const FORWARD_DRAIN: Duration = Duration::from_secs(30);

/// Errors that stop the server (bad requests never do).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot forward: {0}")]
    Forward(String),
    #[error("bad {what} endpoint `{addr}`: {reason}")]
    Endpoint {
        what: &'static str,
        addr: String,
        reason: String,
    },
    #[error("cannot listen on {what} endpoint {addr}")]
    Bind {
        what: &'static str,
        addr: String,
        source: std::io::Error,
    },
    #[error("both receivers are off: nothing to serve")]
    NoReceiver,
    #[error(transparent)]
    Fixtures(#[from] crate::expect::ExpectError),
    #[error("bad default expectation {path}: {reason}")]
    DefaultExpected { path: String, reason: String },
    #[error("cannot open the results file {path}")]
    Output {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write results")]
    Write { source: std::io::Error },
    #[error("invalid scoring settings: {0}")]
    Scoring(String),
    #[error("cannot start: {0}")]
    Runtime(std::io::Error),
    #[error("{0} failed")]
    Receiver(String),
    #[error("scoring failed: {0}")]
    Scorer(String),
}

/// The bound sockets; `None` for a receiver that is off.
#[derive(Debug, Default)]
pub struct Listeners {
    pub grpc: Option<TcpListener>,
    pub http: Option<TcpListener>,
    /// `/metrics`, `/healthz`, `/readyz`.
    pub admin: Option<TcpListener>,
}

impl Listeners {
    /// Binds the endpoints of `config` (`off` leaves one unbound).
    pub async fn bind(config: &ServeConfig) -> Result<Listeners, ServeError> {
        let grpc = bind_one("gRPC", &config.grpc_endpoint).await?;
        let http = bind_one("HTTP", &config.http_endpoint).await?;
        if grpc.is_none() && http.is_none() {
            return Err(ServeError::NoReceiver);
        }
        let admin = bind_one("admin", &config.admin_endpoint).await?;
        Ok(Listeners { grpc, http, admin })
    }

    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin.as_ref().and_then(|l| l.local_addr().ok())
    }

    pub fn grpc_addr(&self) -> Option<SocketAddr> {
        self.grpc.as_ref().and_then(|l| l.local_addr().ok())
    }

    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http.as_ref().and_then(|l| l.local_addr().ok())
    }
}

async fn bind_one(what: &'static str, addr: &str) -> Result<Option<TcpListener>, ServeError> {
    let addr = addr.trim();
    if addr.is_empty() || addr.eq_ignore_ascii_case(OFF) {
        return Ok(None);
    }
    // `http://127.0.0.1:4318` is what exporters are configured with; accept it.
    let host_port = addr
        .strip_prefix("http://")
        .unwrap_or(addr)
        .trim_end_matches('/');
    let resolved: Vec<SocketAddr> = tokio::net::lookup_host(host_port)
        .await
        .map_err(|e| ServeError::Endpoint {
            what,
            addr: addr.to_string(),
            reason: e.to_string(),
        })?
        .collect();
    let mut last = None;
    for a in resolved {
        match TcpListener::bind(a).await {
            Ok(l) => return Ok(Some(l)),
            Err(e) => last = Some(e),
        }
    }
    Err(ServeError::Bind {
        what,
        addr: addr.to_string(),
        source: last.unwrap_or_else(|| std::io::Error::other("no address")),
    })
}

/// A configured server, ready to serve on listeners.
pub struct Server {
    config: ServeConfig,
    shared: Arc<Shared>,
    scorer: BatchScorer,
    sink: ResultSink,
}

impl Server {
    /// Checks the settings, loads fixtures and opens the results file.
    pub fn new(config: ServeConfig, scoring: Scoring) -> Result<Server, ServeError> {
        scoring
            .settings
            .validate()
            .map_err(|e| ServeError::Scoring(e.to_string()))?;
        let limits = BufferLimits {
            decision_wait: config.decision_wait,
            max_spans: config.max_buffered_spans.max(1),
            max_traces: config.max_buffered_traces.max(1),
            remember_completed: config.remember_completed,
        };
        let shared = Arc::new(Shared::new(TraceBuffer::new(limits), config.retry_after));
        let (scorer, sink) = results::build(&config, scoring, Arc::clone(&shared.stats))?;
        Ok(Server {
            config,
            shared,
            scorer,
            sink,
        })
    }

    /// Live counters.
    pub fn stats(&self) -> Arc<ServeStats> {
        Arc::clone(&self.shared.stats)
    }

    /// Serves until `shutdown` is cancelled (or a receiver fails), then
    /// scores everything buffered and returns the run's summary.
    pub async fn serve(
        self,
        listeners: Listeners,
        shutdown: CancellationToken,
    ) -> Result<ServeSummary, ServeError> {
        let Server {
            config,
            shared,
            scorer,
            sink,
        } = self;
        let worker_shared = Arc::clone(&shared);
        let status_every = config.status_interval.max(Duration::from_millis(100));
        let threads = match config.scoring_threads {
            0 => std::thread::available_parallelism().map_or(1, usize::from),
            n => n,
        };
        let worker = std::thread::Builder::new()
            .name("traceval-complete".into())
            .spawn(move || completion_loop(worker_shared, scorer, sink, threads, status_every))
            .map_err(ServeError::Runtime)?;

        // The forwarder lives as long as `shared` (the receivers and the
        // completion thread hold it); it drains its queue after that.
        let forward_stop = CancellationToken::new();
        let start_forwarder = |url: &str,
                               queue: usize,
                               slot: &std::sync::Mutex<Option<crate::forward::ForwardHandle>>,
                               queue_gauges: bool| {
            let mut fc = crate::forward::ForwardConfig::new(url, None)
                .map_err(|e| ServeError::Forward(e.to_string()))?;
            fc.gzip = config.forward_gzip;
            fc.max_batch_bytes = config.forward_batch_bytes;
            fc.max_queue_bytes = config.forward_queue_bytes;
            fc.queue_gauges = queue_gauges;
            fc.concurrency = config.forward_concurrency.max(1);
            fc.queue = queue.max(1);
            fc.headers = config.forward_headers.clone().into_iter().collect();
            let metrics = Arc::clone(&shared.stats.prometheus);
            let (handle, join) = crate::forward::spawn(fc, metrics, forward_stop.clone())
                .map_err(|e| ServeError::Forward(e.to_string()))?;
            *slot
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(handle);
            Ok::<_, ServeError>(join)
        };
        let mut forward_join = None;
        if let Some(url) = &config.forward {
            forward_join = Some(start_forwarder(
                url,
                config.forward_queue,
                &shared.forward,
                true,
            )?);
            info!(downstream = %url, "Forwarding accepted spans.");
        }
        let results_url = match config.results_otlp.as_deref() {
            Some(off) if off.eq_ignore_ascii_case(OFF) => None,
            Some(url) => Some(url),
            None => config.forward.as_deref(),
        };
        let mut results_join = None;
        if let Some(url) = results_url {
            results_join = Some(start_forwarder(
                url,
                config.forward_queue,
                &shared.stats.results_forward,
                false,
            )?);
            info!(downstream = %url, "Exporting evaluation results as OTLP logs.");
        }
        if let Some(l) = listeners.admin {
            let (shared, token) = (Arc::clone(&shared), shutdown.clone());
            tokio::spawn(admin::serve(l, shared, token));
        }

        // Shutdown, in order: the HTTP receiver stops (open requests
        // finish); the buffer closes, so gRPC exports are answered
        // UNAVAILABLE (retryable) from then on; everything buffered is
        // scored; the results API streams end; then the gRPC server stops.
        // The gRPC server outlives the HTTP one so that subscribers of the
        // results API see the evaluations of the final drain too.
        let max = config.max_request_size;
        let failure: Arc<Mutex<Option<String>>> = Arc::default();
        let grpc_stop = CancellationToken::new();
        let spawn_receiver = |what: &'static str,
                              fut: std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<(), String>> + Send>,
        >| {
            let (failure, shutdown) = (Arc::clone(&failure), shutdown.clone());
            tokio::spawn(async move {
                if let Err(e) = fut.await {
                    error!(receiver = what, error = %e, "Receiver failed; shutting down.");
                    failure
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .get_or_insert(format!("{what} receiver: {e}"));
                    shutdown.cancel();
                }
            })
        };
        let grpc_task = listeners.grpc.map(|l| {
            let (shared, token) = (Arc::clone(&shared), grpc_stop.clone());
            spawn_receiver(
                "gRPC",
                Box::pin(async move {
                    grpc::serve(l, shared, max, token)
                        .await
                        .map_err(|e| e.to_string())
                }),
            )
        });
        let http_task = listeners.http.map(|l| {
            let (shared, token) = (Arc::clone(&shared), shutdown.clone());
            spawn_receiver(
                "HTTP",
                Box::pin(async move {
                    http::serve(l, shared, max, token)
                        .await
                        .map_err(|e| e.to_string())
                }),
            )
        });
        shutdown.cancelled().await;
        if let Some(task) = http_task {
            stop_within(task, "HTTP").await;
        }

        // Nothing new can be accepted from here on. Score the rest.
        {
            let mut buf = shared.lock();
            let u = buf.usage();
            info!(
                traces = u.traces,
                spans = u.spans,
                "Receivers stopped; scoring buffered traces."
            );
            buf.close();
        }
        shared.wake.notify_all();
        let summary = tokio::task::spawn_blocking(move || worker.join())
            .await
            .map_err(|e| ServeError::Scorer(e.to_string()))?
            .map_err(|_| ServeError::Scorer("panicked".into()))??;
        shared.stats.results_hub.close();
        grpc_stop.cancel();
        if let Some(task) = grpc_task {
            stop_within(task, "gRPC").await;
        }
        // The last holder of the forward queue's sender goes: the forwarder
        // sends what is queued, then stops (or is stopped after a deadline).
        // Drop the queues' last senders: each forwarder sends what is
        // queued, then stops (or is stopped after a deadline).
        let take = |m: &std::sync::Mutex<Option<crate::forward::ForwardHandle>>| {
            m.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take()
        };
        drop(take(&shared.forward));
        drop(take(&shared.stats.results_forward));
        drop(shared);
        for join in forward_join.into_iter().chain(results_join) {
            if tokio::time::timeout(FORWARD_DRAIN, join).await.is_err() {
                warn!(
                    deadline_secs = FORWARD_DRAIN.as_secs(),
                    "Downstream still not taking data; giving up on the rest of the forward queue."
                );
                forward_stop.cancel();
            }
        }
        info!(
            traces = summary.stats.traces_scored,
            evaluations = summary.evaluations,
            passed = summary.passed,
            failed = summary.failed,
            "Shut down."
        );
        // Everything accepted was scored either way; a receiver that failed
        // still makes the run a failure.
        let failure = failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match failure {
            Some(reason) => Err(ServeError::Receiver(reason)),
            None => Ok(summary),
        }
    }
}

/// Waits for a receiver to finish its open requests after its shutdown
/// signal; after the grace period its connections are closed.
async fn stop_within(mut task: tokio::task::JoinHandle<()>, what: &'static str) {
    if tokio::time::timeout(SHUTDOWN_GRACE, &mut task)
        .await
        .is_err()
    {
        warn!(
            receiver = what,
            grace_secs = SHUTDOWN_GRACE.as_secs(),
            "Connections still open after the grace period; closing them."
        );
        task.abort();
        let _ = task.await;
    }
}

/// The completion thread: waits for traces to go idle and hands them, in
/// batches, to `threads` scoring threads (which write through the one sink);
/// logs buffer use; after `close`, drains the buffer and finishes the sink.
fn completion_loop(
    shared: Arc<Shared>,
    scorer: BatchScorer,
    sink: ResultSink,
    threads: usize,
    status_every: Duration,
) -> Result<ServeSummary, ServeError> {
    let scorer = Arc::new(scorer);
    let sink = Arc::new(Mutex::new(sink));
    // Bounded: when scoring lags, batches wait in the buffer (where they count
    // against its caps), not in a queue.
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Completed>>(threads);
    let rx = Arc::new(Mutex::new(rx));
    let mut workers = Vec::with_capacity(threads);
    for n in 0..threads.max(1) {
        let (scorer, sink, rx, shared) = (
            Arc::clone(&scorer),
            Arc::clone(&sink),
            Arc::clone(&rx),
            Arc::clone(&shared),
        );
        let spawned = std::thread::Builder::new()
            .name(format!("traceval-score-{n}"))
            .spawn(move || score_batches(&scorer, &sink, &rx, &shared));
        match spawned {
            Ok(h) => workers.push(h),
            Err(e) if workers.is_empty() => return Err(ServeError::Runtime(e)),
            Err(e) => warn!(error = %e, "Cannot start another scoring thread."),
        }
    }

    let mut last_status = Instant::now();
    let mut last_snapshot = StatsSnapshot::default();
    loop {
        let mut buf = shared.lock();
        let batch = loop {
            let now = Instant::now();
            if buf.is_closed() {
                break buf.take_any(MAX_BATCH);
            }
            let batch = buf.take_complete(now, MAX_BATCH);
            if !batch.is_empty() {
                break batch;
            }
            let session_due = scorer.next_session_due();
            if session_due.is_some_and(|t| t <= now) {
                // Sessions hold extracted calls only: scoring them is cheap,
                // so this thread does it, without the buffer's lock.
                drop(buf);
                record(&sink, scorer.score_due_sessions(now, false));
                buf = shared.lock();
                continue;
            }
            if now >= last_status + status_every {
                let snap = shared.stats.snapshot();
                if snap != last_snapshot {
                    log_status(&buf, &snap);
                    last_snapshot = snap;
                }
                last_status = now;
            }
            let wake_at = buf
                .next_completion()
                .unwrap_or(now + buf.limits().decision_wait)
                .min(last_status + status_every)
                .min(session_due.unwrap_or(now + status_every));
            let timeout = wake_at
                .saturating_duration_since(now)
                .max(Duration::from_millis(1));
            buf = shared
                .wake
                .wait_timeout(buf, timeout)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        };
        shared.stats.set_buffered(&buf);
        drop(buf);
        if batch.is_empty() {
            break; // closed and drained
        }
        if tx.send(batch).is_err() {
            error!("Every scoring thread has stopped; cannot score.");
            break;
        }
    }
    drop(tx);
    for w in workers {
        if w.join().is_err() {
            error!("A scoring thread panicked.");
        }
    }
    // Every trace is scored: sessions still waiting are scored now.
    record(&sink, scorer.score_due_sessions(Instant::now(), true));
    let sink = match Arc::try_unwrap(sink) {
        Ok(m) => m.into_inner().unwrap_or_else(PoisonError::into_inner),
        Err(_) => return Err(ServeError::Scorer("results still shared".into())),
    };
    sink.finish().map_err(|source| ServeError::Write { source })
}

/// A scoring thread: scores batches until the channel closes, writes each
/// through the sink, then releases the batch's spans from the buffer's count.
fn score_batches(
    scorer: &BatchScorer,
    sink: &Mutex<ResultSink>,
    rx: &Mutex<std::sync::mpsc::Receiver<Vec<Completed>>>,
    shared: &Shared,
) {
    loop {
        let next = rx.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(batch) = next else {
            return;
        };
        let spans: usize = batch.iter().map(|c| c.trace.spans.len()).sum();
        let traces = batch.len();
        let scored = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| scorer.score(batch)));
        match scored {
            Ok(result) => record(sink, result),
            Err(_) => error!(traces, "Scoring panicked; this batch is lost."),
        }
        let mut buf = shared.lock();
        buf.scored(spans);
        shared.stats.set_buffered(&buf);
    }
}

/// Writes one batch's results through the sink.
fn record(sink: &Mutex<ResultSink>, result: results::BatchResult) {
    if result.is_empty() {
        return;
    }
    let traces = result.traces();
    let mut sink = sink.lock().unwrap_or_else(PoisonError::into_inner);
    if let Err(e) = sink.record(result) {
        sink.write_failed();
        error!(traces, error = %e, "Cannot write results; this batch is lost.");
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

/// Logs to stderr; `TRACEVAL_LOG` (or `RUST_LOG`) filters, default `info`.
pub fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("TRACEVAL_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .try_init();
}

/// The whole command: logging, runtime, listeners, signals, serve.
pub fn run(config: ServeConfig, scoring: Scoring) -> Result<ServeSummary, ServeError> {
    init_logging();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("traceval-io")
        .build()
        .map_err(ServeError::Runtime)?;
    runtime.block_on(async move {
        let server = Server::new(config.clone(), scoring)?;
        let listeners = Listeners::bind(&config).await?;
        let show = |a: Option<SocketAddr>| a.map_or_else(|| OFF.to_string(), |a| a.to_string());
        info!(
            grpc = %show(listeners.grpc_addr()),
            http = %show(listeners.http_addr()),
            decision_wait_ms = config.decision_wait.as_millis() as u64,
            max_buffered_spans = config.max_buffered_spans,
            max_buffered_traces = config.max_buffered_traces,
            "Listening."
        );
        let token = CancellationToken::new();
        tokio::spawn(cancel_on_signal(token.clone()));
        server.serve(listeners, token).await
    })
}

/// Cancels `token` on SIGINT or SIGTERM (Ctrl-C elsewhere).
async fn cancel_on_signal(token: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut int), Ok(mut term)) => {
                let which = tokio::select! {
                    _ = int.recv() => "SIGINT",
                    _ = term.recv() => "SIGTERM",
                    () = token.cancelled() => return,
                };
                info!(
                    signal = which,
                    "Shutting down: no new requests; scoring what is buffered."
                );
            }
            _ => {
                warn!("Cannot install signal handlers; falling back to Ctrl-C only.");
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    () = token.cancelled() => return,
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = token.cancelled() => return,
        }
    }
    token.cancel();
}
