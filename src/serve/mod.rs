//! `toolscore serve`: a live OTLP receiver (gRPC and HTTP) that scores agent
//! traces as they complete.
//!
//! ```text
//!  OTLP/gRPC (tonic) ─┐                         completion    scoring threads
//!                     ├─> intake ─> TraceBuffer ─────────────> BatchScorer ─> Outputs
//!  OTLP/HTTP (axum) ──┘  (validate,  (by trace,  idle for the  (the per-trace  (sinks: JSONL,
//!                         admit or    capped)    decision wait  Pipeline, as    stdout, OTLP,
//!                         refuse)                               in replay)      results API)
//! ```
//!
//! The receivers only decode; the buffer is the one bounded queue (a full
//! buffer refuses whole requests with 503 / UNAVAILABLE, which clients
//! retry); scoring runs on its own threads through the same per-trace
//! [`Pipeline`](crate::evaluate::Pipeline) as `replay`, so a trace scores the
//! same here as in `toolscore replay`. This module owns
//! the tokio runtime; nothing below it is async.
//!
//! [`Server::serve`] takes bound listeners and a [`CancellationToken`], so
//! tests bind `127.0.0.1:0`; [`run`] binds the configured endpoints,
//! cancels on SIGINT/SIGTERM and reopens the results file on SIGHUP.
//! Shutdown: stop accepting, finish open requests, score everything still
//! buffered, flush, return the summary.

mod admin;
mod buffer;
mod config;
pub mod forward;
mod grpc;
mod http;
mod intake;
mod joined;
mod judging;
mod listen;
mod scoring;
mod security;
mod sessions;
pub mod sinks;
mod status;
mod telemetry;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::net::TcpListener;
pub use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

pub use buffer::{Admitted, BufferLimits, Completed, Refused, TraceBuffer, Usage};
pub use config::{parse_duration, parse_size, ServeConfig, ServeFlags, OFF};
pub use http::TRACES_PATH;

/// The OTLP/HTTP receiver's request path without a socket: `headers` and a
/// whole `body` in (capped at `max_size`, before and after inflating), the
/// HTTP status out, on a buffer of its own. Fuzzing and tests use it.
#[doc(hidden)]
pub fn http_exchange(headers: &::http::HeaderMap, body: bytes::Bytes, max_size: usize) -> u16 {
    http::exchange(headers, body, max_size)
}
pub use scoring::Scoring;
pub use sinks::results_api;
pub use sinks::store::SaveRun;
pub use sinks::{MetricSummary, ServeSummary};
pub use status::{Accepted, Encoding, ExportError, RpcStatus};
pub use telemetry::{ServeStats, StatsSnapshot};

use crate::evaluate::OutputNeeds;
use intake::Shared;
use scoring::BatchScorer;
use sinks::results_api::ResultsHub;
use sinks::store::{Saved, Saver, Saving};
use sinks::Outputs;

/// mimalloc's `mi_option_purge_delay` (its `mi_option_t` enum in
/// `mimalloc.h` of the bundled v3; the crate names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Tells mimalloc (the binary's allocator) to keep freed memory for reuse
/// instead of returning it to the system. Serve decodes spans on the I/O
/// threads and frees them on the scoring threads, batch after batch: purged
/// pages were faulted back in (and zeroed by the kernel) for the next
/// requests (a fifth of the CPU of a 100K-span run). What is
/// kept is bounded by the trace buffer's caps. `MIMALLOC_PURGE_DELAY` in
/// the environment still decides, when set. Without mimalloc as the global
/// allocator it changes nothing.
///
/// # Safety
///
/// mimalloc's options are not thread-safe: call it before the process has
/// a second thread, that is from a binary's `main` (the `toolscore` binary
/// does, for `serve`), never from a library user such as the Python module,
/// whose host process has threads of its own.
pub unsafe fn keep_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: sets one integer option of mimalloc (-1: never purge); the
    // caller guarantees no other thread exists.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
}

/// How long open connections may take to finish after shutdown starts
/// (within the shutdown deadline).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How long, at least, the run store gets at shutdown to write what it
/// still has queued, even past the shutdown deadline.
const STORE_GRACE: Duration = Duration::from_secs(5);

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
    Fixtures(crate::run::SetupError),
    #[error("cannot open the results file {path}")]
    Output {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write results")]
    Write { source: std::io::Error },
    #[error("invalid scoring settings")]
    Scoring(#[source] crate::run::SetupError),
    #[error("cannot start: {0}")]
    Runtime(std::io::Error),
    #[error("{0} failed")]
    Receiver(String),
    #[error("scoring failed: {0}")]
    Scorer(String),
    #[error("TLS: {0}")]
    Tls(String),
    #[error("bad auth token file {path}: {reason}")]
    AuthToken { path: String, reason: String },
    #[error("shutdown abandoned work: {0}")]
    Abandoned(String),
    /// A run store the user named could not save the whole run.
    #[error("run {run} not saved whole: {reason}")]
    Store { run: String, reason: String },
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
    outputs: Outputs,
    hub: ResultsHub,
    /// `--tls-*`: the receivers and the admin port take TLS only.
    tls: Option<security::Tls>,
    /// `--auth-token-file`.
    auth: Arc<security::Auth>,
    /// The run store's writer, when the run is saved.
    saver: Option<Saver>,
}

/// What runs while the server serves, stopped in order at shutdown.
struct Running {
    /// The completion thread; its result is the run's summary.
    scoring: std::thread::JoinHandle<Result<ServeSummary, ServeError>>,
    /// Stop when shutdown starts (their open requests finish first).
    early: Vec<(&'static str, tokio::task::JoinHandle<()>)>,
    /// Stop after the final drain (the gRPC port also serves the results
    /// API, whose subscribers get the drain's results too).
    late: Vec<(&'static str, tokio::task::JoinHandle<()>)>,
    late_stop: CancellationToken,
    /// Span forwarder and results exporter; they drain their queues once
    /// the last handle is gone.
    exporters: Vec<(&'static str, tokio::task::JoinHandle<()>)>,
    exporters_stop: CancellationToken,
    /// Why a receiver failed, if one did.
    failure: Arc<Mutex<Option<String>>>,
}

impl Server {
    /// Builds the metric sets, loads fixtures and opens the results file.
    pub fn new(config: ServeConfig, scoring: Scoring) -> Result<Server, ServeError> {
        Server::saving(config, scoring, None)
    }

    /// [`Server::new`], saving the run to the run store when `save` says
    /// where: the run is created when serving starts, each batch written to
    /// the results file is appended, and a clean shutdown marks it finished.
    pub fn saving(
        config: ServeConfig,
        scoring: Scoring,
        save: Option<SaveRun>,
    ) -> Result<Server, ServeError> {
        // Bad certificates or token files stop the start, before anything else.
        let tls = security::load_tls(&config)?;
        let stats = Arc::new(ServeStats::default());
        let auth = match &config.auth_token_file {
            Some(path) => security::Auth::load(Some(path), Arc::clone(&stats))?,
            None => security::Auth::open(Arc::clone(&stats)),
        };
        let limits = BufferLimits {
            decision_wait: config.decision_wait,
            max_spans: config.max_buffered_spans.max(1),
            max_traces: config.max_buffered_traces.max(1),
            remember_completed: config.remember_completed,
        };
        ServeStats::set(&stats.buffer_spans_capacity, limits.max_spans as u64);
        ServeStats::set(&stats.buffer_traces_capacity, limits.max_traces as u64);
        let mut shared = Shared::new(
            TraceBuffer::new(limits),
            config.retry_after,
            config.max_inflight,
            Arc::clone(&stats),
        );
        let setup = scoring::setup(&config, scoring)?;
        let evaluator = Arc::clone(setup.evaluator());
        let hub = ResultsHub::default();
        let saver = save
            .map(|s| s.scored_by(&evaluator, setup.rejected().len()))
            .map(Saver::new);
        let outputs = Outputs::build(
            &config,
            Arc::clone(&evaluator),
            Arc::clone(&stats),
            &hub,
            setup.rejected(),
            saver.as_ref().map(Saver::feed),
        )?;
        // Extraction does what the metrics and outputs need, no more (the
        // joins across traces parse arguments kept as text where they
        // compare them: `CallArgs::parsed`).
        let needs = OutputNeeds {
            call_results: outputs.shows_call_results(),
            call_args: outputs.reads_call_args(),
        };
        let pipeline = Arc::new(setup.pipeline(needs));
        // Projection at decode (docs/architecture.md): only when nothing
        // passes the spans on, since a forwarded JSON request is encoded
        // anew from what was decoded.
        if config.forward.is_none() {
            shared.set_filter(Box::new(pipeline.projection()));
        }
        let shared = Arc::new(shared);
        let scorer = BatchScorer::new(pipeline, config.session_wait, stats);
        Ok(Server {
            config,
            shared,
            scorer,
            outputs,
            hub,
            tls,
            auth: Arc::new(auth),
            saver,
        })
    }

    /// Decodes request bodies keeping only the attributes `filter` keeps
    /// (every one by default); set before [`Server::serve`].
    pub fn with_filter(
        mut self,
        filter: Box<dyn crate::ingest::projection::KeyFilter + Send + Sync>,
    ) -> Server {
        // Nothing else holds `shared` until `serve` starts the receivers.
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.set_filter(filter);
        }
        self
    }

    /// What SIGHUP calls to reopen the results file (see [`run`]).
    pub fn reopen(&self) -> Option<sinks::jsonl::Reopen> {
        self.outputs.reopen()
    }

    /// Live counters.
    pub fn stats(&self) -> Arc<ServeStats> {
        Arc::clone(&self.shared.stats)
    }

    /// Serves until `shutdown` is cancelled (or a receiver fails), then
    /// scores everything buffered and returns the run's summary.
    ///
    /// Shutdown, in order, all within `shutdown_timeout`: the HTTP receiver
    /// stops (open requests finish); the buffer closes, so gRPC exports are
    /// answered UNAVAILABLE (retryable); everything buffered is scored and
    /// written; the results API streams end; the gRPC server stops; the
    /// forward and results queues drain. Whatever is still pending at the
    /// deadline is abandoned, logged, and the run is an error.
    pub async fn serve(
        self,
        listeners: Listeners,
        shutdown: CancellationToken,
    ) -> Result<ServeSummary, ServeError> {
        let Server {
            config,
            shared,
            scorer,
            mut outputs,
            hub,
            tls,
            auth,
            saver,
        } = self;
        security::warn_if_exposed(&auth, listeners.grpc_addr(), listeners.admin_addr());
        let security = Security { tls, auth };
        let exporters_stop = CancellationToken::new();
        let exporters = start_exporters(&config, &shared, &mut outputs, &exporters_stop)?;
        let scoring = start_scoring(&config, Arc::clone(&shared), scorer, outputs)?;
        let saving = saver.map(Saver::start);
        let mut running = Running {
            scoring,
            early: Vec::new(),
            late: Vec::new(),
            late_stop: CancellationToken::new(),
            exporters,
            exporters_stop,
            failure: Arc::default(),
        };
        start_receivers(
            &config,
            &shared,
            &hub,
            &security,
            listeners,
            &shutdown,
            &mut running,
        );

        shutdown.cancelled().await;
        let deadline = tokio::time::Instant::now() + config.shutdown_timeout;
        for (what, task) in running.early.drain(..) {
            stop_within(task, what, deadline).await;
        }
        close_buffer(&shared);
        let summary = finish_scoring(running.scoring, deadline).await;
        hub.close();
        running.late_stop.cancel();
        for (what, task) in running.late.drain(..) {
            stop_within(task, what, deadline).await;
        }
        // The last forward handle goes with `shared`: each exporter sends
        // what is queued, then stops.
        drop(shared);
        let drained = drain_exporters(running.exporters, &running.exporters_stop, deadline).await;
        let failure = running
            .failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let result = outcome(summary, drained, failure);
        match saving {
            Some(saving) => finish_saving(saving, result, deadline).await,
            None => result,
        }
    }
}

/// The run's result once everything has stopped.
fn outcome(
    summary: Result<ServeSummary, ServeError>,
    drained: Result<(), ServeError>,
    failure: Option<String>,
) -> Result<ServeSummary, ServeError> {
    let summary = summary?;
    info!(
        traces = summary.stats.traces_scored,
        evaluations = summary.evaluations,
        passed = summary.passed,
        failed = summary.failed,
        "Shut down."
    );
    drained?;
    if summary.stats.results_lost > 0 {
        return Err(ServeError::Abandoned(format!(
            "{} result row(s) could not be written to the results file",
            summary.stats.results_lost
        )));
    }
    match failure {
        Some(reason) => Err(ServeError::Receiver(reason)),
        None => Ok(summary),
    }
}

/// Ends the saved run: finished after a clean shutdown (`result` is a
/// summary), else left unfinished with every row written. A store the user
/// named that could not save the whole run makes the run an error.
async fn finish_saving(
    saving: Saving,
    result: Result<ServeSummary, ServeError>,
    deadline: tokio::time::Instant,
) -> Result<ServeSummary, ServeError> {
    // The run's exit code is what a gate on it gives, as `replay` would:
    // 2 when not everything could be evaluated (no fixture, a judge error;
    // the saver adds rejected fixture lines), else the saver decides from
    // the cases' last results.
    let end = result.as_ref().ok().map(|s| crate::store::RunEnd {
        ended_ms: crate::store::now_ms(),
        exit_code: (!s.has_cases || s.evaluations > s.passed + s.failed)
            .then_some(i64::from(crate::report::exit::INPUT)),
        inputs: s.stats.requests,
        traces: s.stats.traces_scored,
        spans: s.stats.spans,
    });
    let until = deadline
        .max(tokio::time::Instant::now() + STORE_GRACE)
        .into_std();
    let (run, store, explicit) = (
        saving.id().to_string(),
        saving.location().to_string(),
        saving.explicit(),
    );
    let saved = tokio::task::spawn_blocking(move || saving.finish(end, until))
        .await
        .unwrap_or_else(|e| Saved::Failed(format!("run store {store}: {e}")));
    match saved {
        Saved::Finished => info!(run, store, "Run saved to the run store."),
        Saved::Unfinished => {
            warn!(
                run,
                store, "Run saved to the run store unfinished: serve did not shut down cleanly."
            );
        }
        Saved::Failed(reason) if explicit && result.is_ok() => {
            return Err(ServeError::Store { run, reason });
        }
        // Warned when saving stopped.
        Saved::Failed(_) => {}
    }
    result
}

/// Starts the span forwarder (`--forward`) and the results exporter
/// (`--results-otlp`, else the forward downstream), which is a sink.
fn start_exporters(
    c: &ServeConfig,
    shared: &Shared,
    outputs: &mut Outputs,
    stop: &CancellationToken,
) -> Result<Vec<(&'static str, tokio::task::JoinHandle<()>)>, ServeError> {
    let mut started = Vec::new();
    if let Some(url) = &c.forward {
        let (handle, join) = spawn_forwarder(c, url, true, &shared.stats, stop)?;
        *shared
            .forward
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(handle);
        started.push(("forward", join));
        info!(downstream = %url, "Forwarding accepted spans and log records.");
    }
    let results_url = match c.results_otlp.as_deref() {
        Some(off) if off.eq_ignore_ascii_case(OFF) => None,
        Some(url) => Some(url),
        None => c.forward.as_deref(),
    };
    if let Some(url) = results_url {
        let (handle, join) = spawn_forwarder(c, url, false, &shared.stats, stop)?;
        outputs.add(Box::new(sinks::otlp::OtlpSink::new(
            handle,
            c.results_spans,
            Arc::clone(&shared.stats),
        )));
        started.push(("results exporter", join));
        info!(downstream = %url, "Exporting evaluation results as OTLP logs.");
    }
    Ok(started)
}

/// Starts the completion thread and its scoring threads.
fn start_scoring(
    c: &ServeConfig,
    shared: Arc<Shared>,
    scorer: BatchScorer,
    outputs: Outputs,
) -> Result<std::thread::JoinHandle<Result<ServeSummary, ServeError>>, ServeError> {
    let threads = match c.scoring_threads {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    };
    let status_every = c.status_interval.max(Duration::from_millis(100));
    let outputs = Arc::new(outputs);
    std::thread::Builder::new()
        .name("toolscore-complete".into())
        .spawn(move || scoring::completion_loop(shared, scorer, outputs, threads, status_every))
        .map_err(ServeError::Runtime)
}

/// TLS and auth of every port.
struct Security {
    tls: Option<security::Tls>,
    auth: Arc<security::Auth>,
}

/// Starts the receivers and the admin port on their listeners.
fn start_receivers(
    c: &ServeConfig,
    shared: &Arc<Shared>,
    hub: &ResultsHub,
    sec: &Security,
    listeners: Listeners,
    shutdown: &CancellationToken,
    running: &mut Running,
) {
    let max = c.max_request_size;
    let spawn = |what: &'static str, fut: BoxedReceiver| {
        let (failure, shutdown) = (Arc::clone(&running.failure), shutdown.clone());
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
    if let Some(l) = listeners.admin {
        let (shared, token) = (Arc::clone(shared), shutdown.clone());
        let tls = sec.tls.as_ref().map(|t| t.admin.clone());
        let auth = Arc::clone(&sec.auth);
        tokio::spawn(admin::serve(l, shared, c.header_timeout, tls, auth, token));
    }
    let timeout = c.request_timeout;
    if let Some(l) = listeners.http {
        let (shared, token) = (Arc::clone(shared), shutdown.clone());
        let limits = listen::ConnLimits {
            max_connections: c.max_connections,
            header_timeout: c.header_timeout,
            counted: true,
        };
        let tls = sec.tls.as_ref().map(|t| t.otlp.clone());
        let auth = Arc::clone(&sec.auth);
        let task = spawn(
            "HTTP",
            Box::pin(async move {
                http::serve(l, shared, max, timeout, limits, tls, auth, token)
                    .await
                    .map_err(|e| e.to_string())
            }),
        );
        running.early.push(("HTTP", task));
    }
    if let Some(l) = listeners.grpc {
        let (shared, token) = (Arc::clone(shared), running.late_stop.clone());
        let results = hub.service();
        let tls = sec.tls.as_ref().map(|t| t.otlp.clone());
        let (auth, handshake) = (Arc::clone(&sec.auth), c.header_timeout);
        let max_connections = c.max_connections;
        let task = spawn(
            "gRPC",
            Box::pin(async move {
                grpc::serve(
                    l,
                    shared,
                    results,
                    max,
                    timeout,
                    handshake,
                    tls,
                    auth,
                    max_connections,
                    token,
                )
                .await
                .map_err(|e| e.to_string())
            }),
        );
        running.late.push(("gRPC", task));
    }
}

type BoxedReceiver =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send>>;

/// Starts one forwarder to `url` (spans, or evaluation results).
fn spawn_forwarder(
    c: &ServeConfig,
    url: &str,
    counted: bool,
    stats: &Arc<ServeStats>,
    stop: &CancellationToken,
) -> Result<(forward::ForwardHandle, tokio::task::JoinHandle<()>), ServeError> {
    let mut fc =
        forward::ForwardConfig::new(url, None).map_err(|e| ServeError::Forward(e.to_string()))?;
    fc.gzip = c.forward_gzip;
    fc.max_batch_bytes = c.forward_batch_bytes;
    fc.max_queue_bytes = c.forward_queue_bytes;
    fc.counted = counted;
    fc.concurrency = c.forward_concurrency.max(1);
    fc.queue = c.forward_queue.max(1);
    fc.headers = c.forward_headers.clone().into_iter().collect();
    forward::spawn(fc, Arc::clone(stats), stop.clone())
        .map_err(|e| ServeError::Forward(e.to_string()))
}

/// Nothing new is accepted from here on: the rest is scored.
fn close_buffer(shared: &Shared) {
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
}

/// Waits for the completion thread to score and write everything, until
/// `deadline`.
async fn finish_scoring(
    worker: std::thread::JoinHandle<Result<ServeSummary, ServeError>>,
    deadline: tokio::time::Instant,
) -> Result<ServeSummary, ServeError> {
    let joined =
        tokio::time::timeout_at(deadline, tokio::task::spawn_blocking(move || worker.join())).await;
    match joined {
        Err(_) => {
            error!(
                "Shutdown deadline passed while traces were still being scored; abandoning them."
            );
            Err(ServeError::Abandoned(
                "traces still being scored at the shutdown deadline".into(),
            ))
        }
        Ok(Err(e)) => Err(ServeError::Scorer(e.to_string())),
        Ok(Ok(Err(_))) => Err(ServeError::Scorer("panicked".into())),
        Ok(Ok(Ok(summary))) => summary,
    }
}

/// Waits for the exporters to drain their queues until `deadline`, then
/// stops them; what was still queued is abandoned.
async fn drain_exporters(
    exporters: Vec<(&'static str, tokio::task::JoinHandle<()>)>,
    stop: &CancellationToken,
    deadline: tokio::time::Instant,
) -> Result<(), ServeError> {
    let mut abandoned = Vec::new();
    for (what, mut join) in exporters {
        if tokio::time::timeout_at(deadline, &mut join).await.is_err() {
            error!(
                exporter = what,
                "Downstream still not taking data at the shutdown deadline; abandoning the rest of its queue."
            );
            stop.cancel();
            let _ = join.await;
            abandoned.push(what);
        }
    }
    if abandoned.is_empty() {
        Ok(())
    } else {
        Err(ServeError::Abandoned(format!(
            "queued data of the {} not delivered before the shutdown deadline",
            abandoned.join(" and ")
        )))
    }
}

/// Waits for a receiver to finish its open requests after its shutdown
/// signal, until the grace period or `deadline`; then its connections are
/// closed.
async fn stop_within(
    mut task: tokio::task::JoinHandle<()>,
    what: &'static str,
    deadline: tokio::time::Instant,
) {
    let until = deadline.min(tokio::time::Instant::now() + SHUTDOWN_GRACE);
    if tokio::time::timeout_at(until, &mut task).await.is_err() {
        warn!(
            receiver = what,
            "Connections still open after the grace period; closing them."
        );
        task.abort();
        let _ = task.await;
    }
}

/// Logs to stderr; `TOOLSCORE_LOG` (or `RUST_LOG`) filters, default `info`:
/// a level, or `target=level` pairs separated by commas (a `Targets`
/// filter: `EnvFilter` would bring a regex DFA builder that makes every
/// rule regex slower to compile, at every start).
pub fn init_logging() {
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let spec = std::env::var("TOOLSCORE_LOG").or_else(|_| std::env::var("RUST_LOG"));
    let filter = match spec.as_deref().map(str::parse::<Targets>) {
        Ok(Ok(targets)) => targets,
        Ok(Err(e)) => {
            eprintln!(
                "toolscore: warning: TOOLSCORE_LOG/RUST_LOG not understood ({e}); logging at info"
            );
            Targets::new().with_default(tracing::Level::INFO)
        }
        Err(_) => Targets::new().with_default(tracing::Level::INFO),
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .finish()
        .with(filter)
        .try_init();
}

/// The whole command: logging, runtime, listeners, signals, serve (saving
/// the run where `save` says).
pub fn run(
    mut config: ServeConfig,
    scoring: Scoring,
    save: Option<SaveRun>,
) -> Result<ServeSummary, ServeError> {
    init_logging();
    fit_open_files(&mut config);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("toolscore-io")
        .build()
        .map_err(ServeError::Runtime)?;
    runtime.block_on(async move {
        let server = Server::saving(config.clone(), scoring, save)?;
        let listeners = Listeners::bind(&config).await?;
        let token = CancellationToken::new();
        let on_signal = cancel_on_signal(token.clone());
        let on_hangup = reopen_on_hangup(server.reopen(), token.clone());
        let show = |a: Option<SocketAddr>| a.map_or_else(|| OFF.to_string(), |a| a.to_string());
        info!(
            grpc = %show(listeners.grpc_addr()),
            http = %show(listeners.http_addr()),
            admin = %show(listeners.admin_addr()),
            decision_wait_ms = config.decision_wait.as_millis() as u64,
            max_buffered_spans = config.max_buffered_spans,
            max_buffered_traces = config.max_buffered_traces,
            "Listening."
        );
        tokio::spawn(on_signal);
        tokio::spawn(on_hangup);
        server.serve(listeners, token).await
    })
}

/// Raises the open-files limit, where allowed, to fit `--max-connections`
/// (plus the admin port's and a margin for files and downstreams); if it
/// cannot be raised that far, lowers the connection cap to fit it, so the
/// process never runs out of file descriptors.
fn fit_open_files(config: &mut ServeConfig) {
    const MARGIN: usize = 512;
    // The cap applies to each receiver (OTLP/HTTP and OTLP/gRPC).
    let want = config
        .max_connections
        .saturating_mul(2)
        .saturating_add(MARGIN);
    match rlimit::increase_nofile_limit(want as u64) {
        Ok(got) if (got as usize) < want => {
            let fit = ((got as usize).saturating_sub(MARGIN) / 2).max(16);
            warn!(
                open_files_limit = got,
                max_connections = config.max_connections,
                lowered_to = fit,
                "The open-files limit is too low for --max-connections; lowering it."
            );
            config.max_connections = fit;
        }
        Ok(_) => {}
        Err(e) => warn!(error = %e, "Cannot read or raise the open-files limit."),
    }
}

/// Installs the SIGINT/SIGTERM handlers now, so that a signal arriving
/// right after `Listening.` is caught rather than killing the process, and
/// returns the task that cancels `token` on the first one (Ctrl-C elsewhere).
fn cancel_on_signal(
    token: CancellationToken,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let signals = {
        use tokio::signal::unix::{signal, SignalKind};
        (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        )
    };
    async move {
        #[cfg(unix)]
        match signals {
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
        #[cfg(not(unix))]
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = token.cancelled() => return,
        }
        token.cancel();
    }
}

/// Installs the SIGHUP handler now (a HUP would otherwise end the process,
/// losing what is buffered) and returns the task that, on each HUP until
/// shutdown, reopens the results file at its path, as log rotation
/// expects: logrotate moves the file, then sends SIGHUP.
fn reopen_on_hangup(
    reopen: Option<sinks::jsonl::Reopen>,
    token: CancellationToken,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup());
    async move {
        #[cfg(unix)]
        {
            let mut hangups = match hangups {
                Ok(h) => h,
                Err(e) => {
                    warn!(error = %e, "Cannot install the SIGHUP handler: a SIGHUP ends the process.");
                    return;
                }
            };
            loop {
                tokio::select! {
                    got = hangups.recv() => if got.is_none() { return },
                    () = token.cancelled() => return,
                }
                let Some(reopen) = reopen.clone() else {
                    info!(signal = "SIGHUP", "No results file to reopen.");
                    continue;
                };
                info!(signal = "SIGHUP", "Reopening the results file.");
                // Opening a file blocks; so may the sink's lock, during a write.
                let _ = tokio::task::spawn_blocking(move || reopen.reopen()).await;
            }
        }
        #[cfg(not(unix))]
        let _ = (reopen, token);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_purge_delay_option_is_the_one_set() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // SAFETY: reads one option; no other test sets mimalloc options.
        let get = || unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) };
        // mimalloc's default purge delay (1000 ms) identifies the option.
        assert_eq!(get(), 1000);
        // SAFETY: this test binary allocates with the system allocator, so
        // no other thread reads mimalloc's options while this one sets it.
        unsafe { super::keep_freed_memory() };
        assert_eq!(get(), -1);
    }
}
