//! `toolscore serve` ingest: sustained OTLP/gRPC Export on loopback with 4
//! requests in flight (one HTTP/2 channel), scoring on, using
//! `toolscore::fake::agent_traces` payloads (100 agent traces x 20 spans per
//! round, 500 spans per request). Every round gets fresh trace ids, so the
//! server assembles, completes (decision wait 100 ms) and scores every trace.
//!
//! The allocator is mimalloc, as in the `toolscore` binary, wrapped in a
//! counter, with the options `toolscore serve` sets. Printed before criterion runs:
//! * memory per buffered span: bytes held after admitting decoded requests
//!   into the trace buffer, per span, next to the span's protobuf size
//!   (bytes asked of the allocator; the same with glibc-style per-chunk
//!   overhead; and the process RSS growth);
//! * scoring alone (extract, join, score, JSONL rows) on one thread;
//! * ingest with scoring deferred (the receivers and the buffer alone);
//! * scoring on: spans/s from the first request until the last trace is
//!   scored (decision wait subtracted), and spans per process CPU-second,
//!   which stays meaningful when other processes load the machine.
//!
//! * side by side: `toolscore serve` against a tonic receiver that only
//!   decodes, the same load generator driving both (whole traces, 50 per
//!   request, 4 in flight; `TOOLSCORE_BENCH_SPANS`, default 600,000, sets
//!   the spans per run): both spans/s and their ratio;
//! * stages: on the same load, one thread, the nanoseconds per span of each
//!   stage serve runs (decode, admit, take, extract and evaluate, rows,
//!   free) next to the decode-only receiver's prost decode.
//!
//! Run: `cargo bench --bench serve` (add `-- --quick` for a shorter run);
//! `TOOLSCORE_BENCH_SERVE=side_by_side` (or `stages`, `sustained`, `memory`,
//! `forwarding`) runs that part alone; `serve_alone` runs only serve's side
//! of the side-by-side load (for a profiler).

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use tonic::transport::Channel;

#[path = "support/ten_keys.rs"]
mod ten_keys;
use ten_keys::{TenKeys, KEPT};
use toolscore::serve::{
    BufferLimits, CancellationToken, Listeners, Scoring, ServeConfig, ServeStats, Server,
    TraceBuffer,
};

// ------------------------------------------------------ counting allocator

struct Counting;
static MI: mimalloc::MiMalloc = mimalloc::MiMalloc;

static LIVE: AtomicUsize = AtomicUsize::new(0);
/// Live bytes with glibc malloc's overhead: 8-byte header, 16-byte
/// granularity, 32-byte minimum chunk.
static LIVE_GLIBC: AtomicUsize = AtomicUsize::new(0);

fn glibc_chunk(size: usize) -> usize {
    ((size + 8 + 15) & !15).max(32)
}

/// Counting is on only while memory is measured: the shared counters would
/// otherwise slow every allocation of the throughput runs.
static COUNTING: AtomicBool = AtomicBool::new(false);

fn count(add: usize, sub: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        LIVE.fetch_add(add, Ordering::Relaxed);
        LIVE.fetch_sub(sub, Ordering::Relaxed);
        LIVE_GLIBC.fetch_add(
            if add > 0 { glibc_chunk(add) } else { 0 },
            Ordering::Relaxed,
        );
        LIVE_GLIBC.fetch_sub(
            if sub > 0 { glibc_chunk(sub) } else { 0 },
            Ordering::Relaxed,
        );
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count(l.size(), 0);
        MI.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        count(0, l.size());
        MI.dealloc(p, l)
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        count(l.size(), 0);
        MI.alloc_zeroed(l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        count(new, l.size());
        MI.realloc(p, l, new)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

// ---------------------------------------------------------------- payloads

const TRACES_PER_ROUND: usize = 100;
const TOOLS: usize = 8; // 1 + 2 * 8 + 3 = 20 spans per trace
const REQUESTS_PER_ROUND: usize = 4; // 500 spans per request
const IN_FLIGHT: usize = 4;

fn base_round() -> (Vec<ExportTraceServiceRequest>, usize) {
    let g = toolscore::fake::agent_traces(TRACES_PER_ROUND, TOOLS, REQUESTS_PER_ROUND, 7);
    (g.requests, g.spans)
}

/// The base round with trace ids made unique for `round`.
fn round(base: &[ExportTraceServiceRequest], round: u64) -> Vec<ExportTraceServiceRequest> {
    let mut reqs = base.to_vec();
    for r in &mut reqs {
        for rs in &mut r.resource_spans {
            for ss in &mut rs.scope_spans {
                for s in &mut ss.spans {
                    let tag = round.to_be_bytes();
                    for (b, t) in s.trace_id[8..].iter_mut().zip(tag) {
                        *b ^= t;
                    }
                }
            }
        }
    }
    reqs
}

/// CPU time of this process (all threads), from /proc/self/stat (Linux;
/// zero elsewhere). Rates per CPU-second hold steady when other processes
/// load the machine, unlike wall-clock rates.
/// Resident set size of this process, from /proc/self/status (0 elsewhere).
fn rss_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // After `(comm)`: field 3 (state) comes first; utime and stime are 14 and 15.
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: u64 = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10) // CLK_TCK is 100 on Linux
}

// ------------------------------------------------------------------ memory

fn memory_per_span() {
    let (base, spans_per_round) = base_round();
    let rounds = 20u64;
    let bodies: Vec<Vec<u8>> = (0..rounds)
        .flat_map(|n| round(&base, n + 1))
        .map(|r| r.encode_to_vec())
        .collect();
    let pb_bytes: usize = bodies.iter().map(Vec::len).sum();
    let spans = spans_per_round * rounds as usize;
    let mut buffer = TraceBuffer::new(BufferLimits {
        decision_wait: Duration::from_secs(3600),
        max_spans: usize::MAX,
        max_traces: usize::MAX,
        remember_completed: 10_000,
    });
    let now = Instant::now();
    // Only this thread allocates while counting (the server is not started yet).
    let rss0 = rss_bytes();
    COUNTING.store(true, Ordering::SeqCst);
    let (live0, glibc0) = (
        LIVE.load(Ordering::Relaxed),
        LIVE_GLIBC.load(Ordering::Relaxed),
    );
    for b in &bodies {
        let req = toolscore::ingest::otlp_proto::decode(b).expect("decode");
        buffer.admit(req, now).expect("admit");
    }
    let (live1, glibc1) = (
        LIVE.load(Ordering::Relaxed),
        LIVE_GLIBC.load(Ordering::Relaxed),
    );
    COUNTING.store(false, Ordering::SeqCst);
    let rss = rss_bytes().saturating_sub(rss0);
    assert_eq!(buffer.usage().spans, spans);
    let per = |bytes: usize| bytes as f64 / spans as f64;
    let pb = per(pb_bytes);
    eprintln!(
        "memory: {spans} buffered spans; protobuf {pb:.0} B/span; held (bytes asked of the \
         allocator) {:.0} B/span ({:.2}x); with glibc-style chunk overhead {:.0} B/span ({:.2}x); \
         RSS growth (mimalloc) {:.0} B/span ({:.2}x)",
        per(live1 - live0),
        per(live1 - live0) / pb,
        per(glibc1 - glibc0),
        per(glibc1 - glibc0) / pb,
        per(rss),
        per(rss) / pb,
    );
    drop(buffer);
}

// ------------------------------------------------------ scoring, alone

/// The completion thread's work per trace, without the server: extract,
/// join and score (`replay::score_traces`, the evaluation core), one thread.
fn scoring_cost() {
    use toolscore::run::replay;
    let (base, spans) = base_round();
    let bodies: Vec<Vec<u8>> = (0..10)
        .flat_map(|n| round(&base, n + 1))
        .map(|r| r.encode_to_vec())
        .collect();
    let (traces, rejected) = replay::traces_from_bodies(
        bodies.iter().map(Vec::as_slice),
        &toolscore::ingest::Limits::default(),
    );
    assert!(rejected.is_empty());
    let scoring = Scoring::default();
    let start = Instant::now();
    let mut calls = 0;
    for t in &traces {
        calls += scoring.extractor.extract(t).len();
    }
    let extract = start.elapsed();
    let start = Instant::now();
    let mut report = toolscore::report::Report::default();
    let evaluator =
        toolscore::evaluate::Evaluator::new(scoring.settings.clone(), None, None).expect("metrics");
    // As the extractor comes by default: results decoded, arguments parsed.
    let outputs = toolscore::evaluate::OutputNeeds {
        call_results: true,
        call_args: true,
    };
    let pipeline = toolscore::evaluate::Pipeline::new(
        std::sync::Arc::new(evaluator),
        scoring.extractor.clone(),
        outputs,
    );
    replay::score_traces(&traces, &pipeline, &mut report);
    let scored = start.elapsed();
    // JSONL rows: through a `Value` copy (report::unmatched_trace_row), and
    // with the calls serialized straight from the extracted data (what serve does).
    let start = Instant::now();
    let mut bytes = 0;
    for u in &report.unmatched_traces {
        let mut row = toolscore::report::unmatched_trace_row(u);
        row["tools_called"] = serde_json::to_value(&*u.tools_called).expect("value");
        bytes += row.to_string().len();
    }
    let rows_value = start.elapsed();
    let start = Instant::now();
    let mut buf = Vec::new();
    for u in &report.unmatched_traces {
        buf.clear();
        toolscore::report::push_row_with_calls(
            &mut buf,
            &toolscore::report::unmatched_trace_row(u),
            &u.tools_called,
        );
        std::hint::black_box(&buf);
    }
    let rows_direct = start.elapsed();
    let n = (spans * 10) as f64;
    eprintln!(
        "scoring alone: {} traces, {n} spans, {calls} tool calls: extract {:.0} spans/s; \
         extract + join + score (score_traces, no fixtures) {:.0} spans/s; \
         JSONL rows ({bytes} bytes) via Value {:.0} spans/s, direct {:.0} spans/s",
        traces.len(),
        n / extract.as_secs_f64(),
        n / scored.as_secs_f64(),
        n / rows_value.as_secs_f64(),
        n / rows_direct.as_secs_f64(),
    );
}

// -------------------------------------------------------------- ingest

struct Bench {
    rt: tokio::runtime::Runtime,
    client: TraceServiceClient<Channel>,
    stats: Arc<ServeStats>,
    token: CancellationToken,
    handle: tokio::task::JoinHandle<
        Result<toolscore::serve::ServeSummary, toolscore::serve::ServeError>,
    >,
    output: Option<std::path::PathBuf>,
    base: Vec<ExportTraceServiceRequest>,
    spans_per_round: usize,
    next_round: u64,
    retries: Arc<AtomicU64>,
}

const DECISION_WAIT: Duration = Duration::from_millis(100);

fn start(decision_wait: Duration) -> Bench {
    start_with(decision_wait, None)
}

fn start_with(decision_wait: Duration, forward: Option<String>) -> Bench {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let config = ServeConfig {
        grpc_endpoint: "127.0.0.1:0".into(),
        http_endpoint: "off".into(),
        admin_endpoint: "off".into(),
        decision_wait,
        forward,
        // As the binary's flag: `TOOLSCORE_FORWARD_CONCURRENCY=1` for strict order.
        forward_concurrency: std::env::var("TOOLSCORE_FORWARD_CONCURRENCY")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(ServeConfig::default().forward_concurrency),
        quiet: true,
        status_interval: Duration::from_secs(3600),
        // Results are written as in real use (one JSONL row per trace).
        output: Some(std::env::temp_dir().join(format!(
            "toolscore-bench-serve-{}-{}.jsonl",
            std::process::id(),
            decision_wait.as_millis()
        ))),
        ..ServeConfig::default()
    };
    let output = config.output.clone();
    let server = Server::new(config.clone(), Scoring::default()).expect("server");
    let stats = server.stats();
    let listeners = rt.block_on(Listeners::bind(&config)).expect("bind");
    let addr = listeners.grpc_addr().expect("grpc addr");
    let token = CancellationToken::new();
    let handle = rt.spawn(server.serve(listeners, token.clone()));
    let client = rt
        .block_on(TraceServiceClient::connect(format!("http://{addr}")))
        .expect("connect")
        .max_encoding_message_size(usize::MAX);
    let (base, spans_per_round) = base_round();
    Bench {
        rt,
        client,
        stats,
        token,
        handle,
        output,
        base,
        spans_per_round,
        next_round: 1_000,
        retries: Arc::new(AtomicU64::new(0)),
    }
}

impl Bench {
    /// Sends `rounds` rounds with `IN_FLIGHT` requests in flight; returns the
    /// time spent sending (payloads are built before the clock starts).
    fn send(&mut self, rounds: u64) -> Duration {
        self.send_measured(rounds).0
    }

    /// [`Bench::send`], also returning the process CPU time spent sending.
    fn send_measured(&mut self, rounds: u64) -> (Duration, Duration) {
        // (round, index in round, request): a refused request is rebuilt
        // from its round rather than cloned up front for every request.
        type Item = (u64, usize, ExportTraceServiceRequest);
        let mut lanes: Vec<Vec<Item>> = (0..IN_FLIGHT).map(|_| Vec::new()).collect();
        for _ in 0..rounds {
            self.next_round += 1;
            for (i, r) in round(&self.base, self.next_round).into_iter().enumerate() {
                lanes[i % IN_FLIGHT].push((self.next_round, i, r));
            }
        }
        let client = self.client.clone();
        let retries = Arc::clone(&self.retries);
        let base = Arc::new(self.base.clone());
        self.rt.block_on(async move {
            let start = Instant::now();
            let cpu0 = process_cpu();
            let mut tasks = tokio::task::JoinSet::new();
            for lane in lanes {
                let mut c = client.clone();
                let retries = Arc::clone(&retries);
                let base = Arc::clone(&base);
                tasks.spawn(async move {
                    for (n, i, req) in lane {
                        let mut req = Some(req);
                        // Bounded retries on a full buffer (UNAVAILABLE).
                        for tries in 0.. {
                            let r = req.take().unwrap_or_else(|| round(&base, n).swap_remove(i));
                            match c.export(r).await {
                                Ok(_) => break,
                                Err(s) if s.code() == tonic::Code::Unavailable && tries < 1000 => {
                                    retries.fetch_add(1, Ordering::Relaxed);
                                    tokio::time::sleep(Duration::from_millis(10)).await;
                                }
                                Err(s) => panic!("export failed: {s}"),
                            }
                        }
                    }
                });
            }
            while let Some(r) = tasks.join_next().await {
                r.expect("lane");
            }
            (start.elapsed(), process_cpu().saturating_sub(cpu0))
        })
    }

    /// Graceful shutdown; waits until everything buffered is scored.
    fn stop(self) {
        self.token.cancel();
        self.rt
            .block_on(self.handle)
            .expect("serve task")
            .expect("serve");
        if let Some(p) = &self.output {
            let _ = std::fs::remove_file(p);
        }
    }

    fn wait_scored(&self, traces: u64, limit: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            if self.stats.snapshot().traces_scored >= traces {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }
}

/// The receiver and buffer alone: scoring deferred to shutdown by a long
/// decision wait.
fn ingest_only() {
    let mut b = start(Duration::from_secs(3600));
    b.send(5);
    let rounds = 100u64;
    let (sending, cpu) = b.send_measured(rounds);
    let spans = (rounds as usize * b.spans_per_round) as f64;
    eprintln!(
        "ingest only (scoring deferred): {spans} spans over gRPC, {IN_FLIGHT} in flight: {:.0} spans/s ({:.2} s); \
         {:.0} spans per process CPU-second (bench client included)",
        spans / sending.as_secs_f64(),
        sending.as_secs_f64(),
        spans / cpu.as_secs_f64(),
    );
    b.stop();
}

/// A downstream that accepts and counts: the forwarding target.
#[derive(Clone, Default)]
struct CountingSink(Arc<AtomicU64>);

#[tonic::async_trait]
impl opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::TraceService
    for CountingSink
{
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<
        tonic::Response<
            opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse,
        >,
        tonic::Status,
    > {
        let n: usize = request
            .get_ref()
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .map(|s| s.spans.len())
            .sum();
        self.0.fetch_add(n as u64, Ordering::Relaxed);
        Ok(tonic::Response::new(Default::default()))
    }
}

/// A downstream that takes the request bytes without decoding them: the
/// cost of a real backend, on another machine, is not charged to us.
#[derive(Clone, Default)]
struct ByteSink(Arc<AtomicU64>);

impl tonic::server::NamedService for ByteSink {
    const NAME: &'static str = "opentelemetry.proto.collector.trace.v1.TraceService";
}

struct CountBytes(Arc<AtomicU64>);

impl tonic::server::UnaryService<bytes::Bytes> for CountBytes {
    type Response = bytes::Bytes;
    type Future = std::future::Ready<Result<tonic::Response<bytes::Bytes>, tonic::Status>>;

    fn call(&mut self, request: tonic::Request<bytes::Bytes>) -> Self::Future {
        self.0
            .fetch_add(request.get_ref().len() as u64, Ordering::Relaxed);
        // An empty ExportTraceServiceResponse encodes to no bytes.
        std::future::ready(Ok(tonic::Response::new(bytes::Bytes::new())))
    }
}

impl tonic::codegen::Service<tonic::codegen::http::Request<tonic::body::Body>> for ByteSink {
    type Response = tonic::codegen::http::Response<tonic::body::Body>;
    type Error = std::convert::Infallible;
    type Future = tonic::codegen::BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: tonic::codegen::http::Request<tonic::body::Body>) -> Self::Future {
        let count = CountBytes(Arc::clone(&self.0));
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(toolscore::serve::forward::RawCodec)
                .apply_max_message_size_config(Some(usize::MAX), None);
            Ok(grpc.unary(count, req).await)
        })
    }
}

/// Which downstream the forwarding bench sends to.
#[derive(Clone, Copy, PartialEq)]
enum Downstream {
    /// Counts bytes (see [`ByteSink`]).
    Bytes,
    /// Decodes every request (tonic + prost), on the same two cores.
    Decoding,
}

/// The two downstreams of [`forwarding`] on `rt`: one counting bytes, one
/// decoding every request; their addresses, in that order.
fn forwarding_sinks(
    rt: &tokio::runtime::Runtime,
    bytes_in: &ByteSink,
    decoded: &CountingSink,
) -> Vec<std::net::SocketAddr> {
    let mut addrs = Vec::new();
    for which in [Downstream::Bytes, Downstream::Decoding] {
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind sink");
        addrs.push(listener.local_addr().expect("addr"));
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        let router = if which == Downstream::Bytes {
            tonic::transport::Server::builder().add_service(bytes_in.clone())
        } else {
            tonic::transport::Server::builder().add_service(
                opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::TraceServiceServer::new(decoded.clone())
                    .max_decoding_message_size(usize::MAX),
            )
        };
        rt.spawn(async move {
            let _ = router.serve_with_incoming(incoming).await;
        });
    }
    addrs
}

/// Ingest with and without `--forward` to a local OTLP/gRPC receiver.
/// With `scoring`, as in production: decision wait 100 ms, timed until every
/// trace is scored (and forwarded); without, scoring is deferred to
/// shutdown, so the difference is the forwarding alone, but the buffer then
/// grows by every span sent, and page faults make the figures noisier.
fn forwarding(scoring: bool) {
    let mode = if scoring {
        "scoring on"
    } else {
        "scoring deferred"
    };
    let sink_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let decoded = CountingSink::default();
    let bytes_in = ByteSink::default();
    let addrs = forwarding_sinks(&sink_rt, &bytes_in, &decoded);
    let rounds = 60u64;
    // One unreported run first: the first run of the process also pays for
    // the allocator's growth (page faults of a few hundred MB). Then three
    // rounds of the three set-ups, interleaved; medians are reported.
    let configs = [
        (None, "off"),
        (
            Some((Downstream::Bytes, addrs[0])),
            "on, downstream counts bytes",
        ),
        (
            Some((Downstream::Decoding, addrs[1])),
            "on, downstream decodes every request",
        ),
    ];
    let runs = std::iter::once((usize::MAX, configs[0]))
        .chain((0..3).flat_map(|_| configs.iter().copied().enumerate()));
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    for (which, (downstream, label)) in runs {
        let forward = downstream.map(|(_, addr)| format!("grpc://{addr}"));
        let wait = if scoring {
            DECISION_WAIT
        } else {
            Duration::from_secs(3600)
        };
        let mut b = start_with(wait, forward);
        let round_bytes: u64 = b.base.iter().map(|r| r.encoded_len() as u64).sum();
        b.send(3);
        if scoring {
            assert!(
                b.wait_scored(3 * TRACES_PER_ROUND as u64, Duration::from_secs(60)),
                "warm-up not scored"
            );
        }
        // Forwarding joins queued requests, so the downstream is counted
        // in spans (decoding sink) or bytes (byte sink), not requests.
        let (counter, per_round) = match downstream {
            Some((Downstream::Bytes, _)) => (Some(&bytes_in.0), round_bytes),
            Some((Downstream::Decoding, _)) => (Some(&decoded.0), b.spans_per_round as u64),
            None => (None, 0),
        };
        if let Some(c) = counter {
            // Let the warm-up reach the downstream first.
            let t = Instant::now();
            while c.load(Ordering::Relaxed) % per_round != 0
                && t.elapsed() < Duration::from_secs(30)
            {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let before = counter.map_or(0, |c| c.load(Ordering::Relaxed));
        let start = Instant::now();
        let cpu0 = process_cpu();
        b.send(rounds);
        if scoring {
            assert!(
                b.wait_scored(
                    (3 + rounds) * TRACES_PER_ROUND as u64,
                    Duration::from_secs(300)
                ),
                "not all traces were scored"
            );
        }
        if let Some(c) = counter {
            // Count until the downstream has everything.
            while c.load(Ordering::Relaxed) < before + rounds * per_round
                && start.elapsed() < Duration::from_secs(120)
            {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let spans = rounds * b.spans_per_round as u64;
        let elapsed = if scoring {
            start.elapsed().saturating_sub(DECISION_WAIT)
        } else {
            start.elapsed()
        };
        let rate = spans as f64 / elapsed.as_secs_f64();
        let cpu = process_cpu().saturating_sub(cpu0);
        let label = if which == usize::MAX {
            "off (warm-up, not counted)"
        } else {
            label
        };
        eprintln!(
            "[{mode}] forwarding {label}: {spans} spans over gRPC, {IN_FLIGHT} in flight: {rate:.0} spans/s{}; {:.0} spans per process CPU-second",
            match (scoring, downstream.is_some()) {
                (true, true) => " (until every trace is scored and every span is downstream; decision wait subtracted)",
                (true, false) => " (until every trace is scored; decision wait subtracted)",
                (false, true) => " (until the downstream received every span)",
                (false, false) => "",
            },
            spans as f64 / cpu.as_secs_f64(),
        );
        if let Some(r) = rates.get_mut(which) {
            r.push(rate);
        }
        b.stop();
    }
    let labels: Vec<&str> = configs.iter().map(|c| c.1).collect();
    report_forwarding(mode, &labels, rates);
}

/// The median rate of each forwarding set-up (`labels`, the first without
/// forwarding), and the share of the first each other keeps.
fn report_forwarding(mode: &str, labels: &[&str], mut rates: Vec<Vec<f64>>) {
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let med: Vec<f64> = rates.iter_mut().map(median).collect();
    for (label, m) in labels.iter().zip(&med) {
        eprintln!("[{mode}] forwarding {label}: median {m:.0} spans/s");
    }
    eprintln!(
        "[{mode}] forwarding keeps {:.0}% of the no-forward ingest rate with a downstream that counts bytes, \
         {:.0}% with one that decodes on the same cores",
        100.0 * med[1] / med[0],
        100.0 * med[2] / med[0]
    );
}

// ------------------------------------ side by side with a decode-only receiver

/// Whole traces per request of the side-by-side load.
const SBS_TRACES_PER_REQUEST: usize = 50;

/// The side-by-side load generator: one encoded request of
/// `SBS_TRACES_PER_REQUEST` whole agent traces (20 spans each, ~1.4 KB per
/// span), sent again and again with fresh trace ids patched into the bytes
/// (so generating the load costs a copy, not an encode).
struct Load {
    base: Vec<u8>,
    /// Where each span's trace id starts in `base`.
    id_at: Vec<usize>,
    spans_per_request: usize,
}

fn load() -> Load {
    let g = toolscore::fake::agent_traces(SBS_TRACES_PER_REQUEST, TOOLS, 1, 11);
    let req = &g.requests[0];
    let ids: std::collections::HashSet<Vec<u8>> = req
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans)
        .map(|s| s.trace_id.clone())
        .collect();
    let base = req.encode_to_vec();
    // A span's trace id is field 1, 16 bytes: 0x0a 0x10 then the id.
    let id_at: Vec<usize> = (0..base.len().saturating_sub(18))
        .filter(|&i| base[i] == 0x0a && base[i + 1] == 0x10 && ids.contains(&base[i + 2..i + 18]))
        .map(|i| i + 2)
        .collect();
    assert_eq!(id_at.len(), g.spans, "every trace id found in the encoding");
    Load {
        base,
        id_at,
        spans_per_request: g.spans,
    }
}

impl Load {
    /// Request `n`: the base with trace ids unique to `n`.
    fn body(&self, n: u64) -> bytes::Bytes {
        let mut b = self.base.clone();
        for &at in &self.id_at {
            for (x, t) in b[at + 8..at + 16].iter_mut().zip(n.to_be_bytes()) {
                *x ^= t;
            }
        }
        bytes::Bytes::from(b)
    }
}

/// Sends requests `first..first + count` to `addr`, `IN_FLIGHT` at a time
/// over one HTTP/2 channel, retrying refusals (UNAVAILABLE) after 10 ms.
/// Returns the retries.
async fn drive(addr: std::net::SocketAddr, load: Arc<Load>, first: u64, count: u64) -> u64 {
    let channel = Channel::from_shared(format!("http://{addr}"))
        .expect("uri")
        .connect()
        .await
        .expect("connect");
    let retries = Arc::new(AtomicU64::new(0));
    let mut lanes = tokio::task::JoinSet::new();
    for lane in 0..IN_FLIGHT as u64 {
        let channel = channel.clone();
        let load = Arc::clone(&load);
        let retries = Arc::clone(&retries);
        lanes.spawn(async move {
            let mut grpc = tonic::client::Grpc::new(channel);
            let path = tonic::codegen::http::uri::PathAndQuery::from_static(
                "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            );
            let mut n = first + lane;
            while n < first + count {
                let body = load.body(n);
                for tries in 0.. {
                    grpc.ready().await.expect("ready");
                    let req = tonic::Request::new(body.clone());
                    match grpc
                        .unary(req, path.clone(), toolscore::serve::forward::RawCodec)
                        .await
                    {
                        Ok(_) => break,
                        Err(s) if s.code() == tonic::Code::Unavailable && tries < 1000 => {
                            retries.fetch_add(1, Ordering::Relaxed);
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                        Err(s) => panic!("export failed: {s}"),
                    }
                }
                n += IN_FLIGHT as u64;
            }
        });
    }
    while let Some(r) = lanes.join_next().await {
        r.expect("lane");
    }
    retries.load(Ordering::Relaxed)
}

/// One measured run: spans/s from the first request until `done`, and
/// spans per process CPU-second (the load generator's share included).
struct Run {
    rate: f64,
    per_cpu: f64,
    retries: u64,
    /// Most spans held at once (waiting or being scored), sampled every ms.
    peak_held: u64,
}

/// A tonic receiver on `rt` that decodes each request and counts its spans
/// in `decoded`; its address.
fn decode_only_receiver(
    rt: &tokio::runtime::Runtime,
    decoded: &CountingSink,
) -> std::net::SocketAddr {
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let sink_addr = listener.local_addr().expect("addr");
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let router = tonic::transport::Server::builder().add_service(
        opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::TraceServiceServer::new(decoded.clone())
            .max_decoding_message_size(64 << 20),
    );
    rt.spawn(async move {
        let _ = router.serve_with_incoming(incoming).await;
    });
    sink_addr
}

/// What each run of [`side_by_side`] sends: the load, its client runtime
/// and the counts.
struct SideLoad<'a> {
    client: &'a tokio::runtime::Runtime,
    load: Arc<Load>,
    warm: u64,
    requests: u64,
    traces: u64,
    spans: u64,
}

/// One run of `toolscore serve` under [`side_by_side`]'s load (with
/// `projected`, decoding with [`TenKeys`]).
fn serve_run(x: &SideLoad<'_>, round: &mut u64, projected: bool) -> Run {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("serve runtime");
    let config = ServeConfig {
        grpc_endpoint: "127.0.0.1:0".into(),
        http_endpoint: "off".into(),
        admin_endpoint: "off".into(),
        decision_wait: DECISION_WAIT,
        quiet: true,
        status_interval: Duration::from_secs(3600),
        output: Some(std::env::temp_dir().join(format!(
            "toolscore-bench-side-by-side-{}.jsonl",
            std::process::id()
        ))),
        ..ServeConfig::default()
    };
    let mut server = Server::new(config.clone(), Scoring::default()).expect("server");
    if projected {
        server = server.with_filter(Box::new(TenKeys));
    }
    let stats = server.stats();
    let listeners = rt.block_on(Listeners::bind(&config)).expect("bind");
    let addr = listeners.grpc_addr().expect("grpc addr");
    let token = CancellationToken::new();
    let handle = rt.spawn(server.serve(listeners, token.clone()));
    // Polls with a deadline; the 1 ms sleep is the polling interval.
    let wait_scored = |n: u64| {
        let t = Instant::now();
        while stats.snapshot().traces_scored < n {
            assert!(
                t.elapsed() < Duration::from_secs(600),
                "not all traces were scored"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    x.client
        .block_on(drive(addr, Arc::clone(&x.load), *round, x.warm));
    *round += x.warm;
    wait_scored(x.warm * SBS_TRACES_PER_REQUEST as u64);
    let start = Instant::now();
    let cpu0 = process_cpu();
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (stats, sampling) = (stats.clone(), Arc::clone(&sampling));
        std::thread::spawn(move || {
            let mut peak = 0;
            // Every 1 ms: the sampling interval, not a wait.
            while sampling.load(Ordering::Relaxed) {
                peak = peak.max(stats.snapshot().buffered_spans);
                std::thread::sleep(Duration::from_millis(1));
            }
            peak
        })
    };
    let retries = x
        .client
        .block_on(drive(addr, Arc::clone(&x.load), *round, x.requests));
    *round += x.requests;
    wait_scored((x.warm * SBS_TRACES_PER_REQUEST as u64) + x.traces);
    let elapsed = start.elapsed().saturating_sub(DECISION_WAIT);
    let cpu = process_cpu().saturating_sub(cpu0);
    sampling.store(false, Ordering::Relaxed);
    let peak_held = sampler.join().expect("sampler");
    token.cancel();
    rt.block_on(handle).expect("serve task").expect("serve");
    if let Some(p) = &config.output {
        let _ = std::fs::remove_file(p);
    }
    Run {
        rate: x.spans as f64 / elapsed.as_secs_f64(),
        per_cpu: x.spans as f64 / cpu.as_secs_f64(),
        retries,
        peak_held,
    }
}

/// `toolscore serve` (scoring on, `--output` written, decision wait 100 ms,
/// subtracted) against a tonic receiver that only decodes (tonic's prost
/// codec, spans counted), driven by the same load generator: the ratio is
/// the measure. Also serve decoding with [`TenKeys`], to show
/// what projection at decode gains. `TOOLSCORE_BENCH_SPANS` sets the spans
/// per run (default 600,000; smaller for a quick run); two interleaved runs
/// of each set-up, means reported. On a loaded machine the spans per
/// process CPU-second (load generator included) are the steadier figure.
fn side_by_side(serve_alone: bool) {
    let total: usize = std::env::var("TOOLSCORE_BENCH_SPANS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600_000);
    let load = Arc::new(load());
    let requests = (total / load.spans_per_request).max(1) as u64;
    let spans = requests * load.spans_per_request as u64;
    let traces = requests * SBS_TRACES_PER_REQUEST as u64;
    let warm = 10u64;
    let client = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("client runtime");
    // The decode-only receiver, on its own runtime as serve has its own.
    let sink_rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("receiver runtime");
    let decoded = CountingSink::default();
    let sink_addr = decode_only_receiver(&sink_rt, &decoded);
    let mut round = 1u64 << 32;
    let decode_only = |round: &mut u64| -> Run {
        client.block_on(drive(sink_addr, Arc::clone(&load), *round, warm));
        *round += warm;
        let before = decoded.0.load(Ordering::Relaxed);
        let start = Instant::now();
        let cpu0 = process_cpu();
        let retries = client.block_on(drive(sink_addr, Arc::clone(&load), *round, requests));
        *round += requests;
        let elapsed = start.elapsed();
        let cpu = process_cpu().saturating_sub(cpu0);
        assert_eq!(decoded.0.load(Ordering::Relaxed) - before, spans);
        Run {
            rate: spans as f64 / elapsed.as_secs_f64(),
            per_cpu: spans as f64 / cpu.as_secs_f64(),
            retries,
            peak_held: 0,
        }
    };
    let x = SideLoad {
        client: &client,
        load: Arc::clone(&load),
        warm,
        requests,
        traces,
        spans,
    };
    let serve = |round: &mut u64, projected: bool| serve_run(&x, round, projected);
    let bytes = load.base.len();
    eprintln!(
        "side by side: {spans} spans per run in {requests} requests of {SBS_TRACES_PER_REQUEST} \
         traces ({} spans, {bytes} bytes, {} B/span), {IN_FLIGHT} in flight, one load generator",
        load.spans_per_request,
        bytes / load.spans_per_request
    );
    if serve_alone {
        // For a profiler: serve's runs only, nothing else in the process.
        for _ in 0..2 {
            let r = serve(&mut round, false);
            eprintln!(
                "  toolscore serve alone: {:.0} spans/s; {:.0} spans per process CPU-second; \
                 at most {} spans held",
                r.rate, r.per_cpu, r.peak_held
            );
        }
        return;
    }
    let (mut d, mut s, mut p) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..2 {
        let r = decode_only(&mut round);
        eprintln!(
            "  decode-only tonic receiver: {:.0} spans/s; {:.0} spans per process CPU-second",
            r.rate, r.per_cpu
        );
        d.push(r);
        let r = serve(&mut round, false);
        eprintln!(
            "  toolscore serve (scoring on, --output written, until every trace is scored, \
             decision wait subtracted): {:.0} spans/s; {:.0} spans per process CPU-second; \
             UNAVAILABLE retries: {}; at most {} spans held",
            r.rate, r.per_cpu, r.retries, r.peak_held
        );
        s.push(r);
        let r = serve(&mut round, true);
        eprintln!(
            "  toolscore serve, decoding with a projection of {} span keys: {:.0} spans/s; \
             {:.0} spans per process CPU-second; UNAVAILABLE retries: {}",
            KEPT.len(),
            r.rate,
            r.per_cpu,
            r.retries
        );
        p.push(r);
    }
    let mean = |v: &[Run], f: fn(&Run) -> f64| v.iter().map(f).sum::<f64>() / v.len() as f64;
    let (dr, sr) = (mean(&d, |r| r.rate), mean(&s, |r| r.rate));
    let (dc, sc) = (mean(&d, |r| r.per_cpu), mean(&s, |r| r.per_cpu));
    let (pr, pc) = (mean(&p, |r| r.rate), mean(&p, |r| r.per_cpu));
    eprintln!(
        "side by side (mean of 2): decode-only {dr:.0} spans/s, serve {sr:.0} spans/s: ratio {:.2} \
         (per CPU-second: {dc:.0} vs {sc:.0}, ratio {:.2}); serve with the projection \
         {pr:.0} spans/s: ratio {:.2} (per CPU-second {pc:.0}, ratio {:.2})",
        sr / dr,
        sc / dc,
        pr / dr,
        pc / dc
    );
}

// ------------------------------------------- serve's stages, one at a time

/// Nanoseconds per span of each stage serve runs on the side-by-side load,
/// one thread, no sockets: the decode-only receiver's work (prost into
/// `opentelemetry_proto`, then dropped) next to serve's decode (with its
/// projection), admission into the buffer and taking whole traces,
/// extraction and evaluation, the JSONL rows, and freeing the traces. Tells
/// where a side-by-side ratio goes.
fn stages() {
    use toolscore::evaluate::Evaluator;
    use toolscore::ingest::{self, Wire};
    let load = load();
    let n = 100u64;
    let spans = (n as usize * load.spans_per_request) as f64;
    let scoring = Scoring::default();
    let evaluator = Evaluator::new(scoring.settings.clone(), None, None).expect("metrics");
    let extractor = scoring
        .extractor
        .clone()
        .with_results(true)
        .with_args_text(true);
    let projection = extractor.projection(evaluator.join_keys());
    let per = |d: Duration| d.as_nanos() as f64 / spans;
    let mut buffer = TraceBuffer::new(BufferLimits {
        decision_wait: Duration::ZERO,
        max_spans: usize::MAX,
        max_traces: usize::MAX,
        remember_completed: 10_000,
    });
    let mut rows = Vec::new();
    for round in 0..3 {
        let bodies: Vec<bytes::Bytes> = (0..n).map(|i| load.body(1 + round * n + i)).collect();
        // Request by request, as serve streams them (memory stays flat).
        let mut t = [Duration::ZERO; 7];
        let mut row_bytes = 0;
        let mut lap = |i: usize, since: &mut Instant| {
            let now = Instant::now();
            t[i] += now - *since;
            *since = now;
        };
        for b in &bodies {
            let mut at = Instant::now();
            let r = ExportTraceServiceRequest::decode(b.as_ref()).expect("decode");
            drop(std::hint::black_box(r));
            lap(0, &mut at);
            let mut req = ingest::decode_request_with(b, Wire::Protobuf, &projection)
                .expect("decode")
                .0;
            lap(1, &mut at);
            ingest::validate_ids(&mut req);
            buffer.admit(req, Instant::now()).expect("admit");
            lap(2, &mut at);
            let traces = buffer.take_any(usize::MAX);
            buffer.scored(traces.iter().map(|c| c.trace.spans.len()).sum());
            lap(3, &mut at);
            let results: Vec<_> = traces
                .iter()
                .map(|c| {
                    let (calls, runs) = extractor.extract_with_runs(&c.trace);
                    evaluator.evaluate_trace_with_runs(&c.trace, calls, &runs)
                })
                .collect();
            lap(4, &mut at);
            rows.clear();
            for r in &results {
                let u = toolscore::evaluate::UnmatchedTrace {
                    trace_id: r.trace_id,
                    spans: r.spans,
                    tools_called: Arc::clone(&r.calls),
                    warnings: Arc::clone(&r.warnings),
                };
                toolscore::report::push_row_with_calls(
                    &mut rows,
                    &toolscore::report::unmatched_trace_row(&u),
                    &u.tools_called,
                );
            }
            row_bytes += rows.len();
            lap(5, &mut at);
            drop(traces);
            drop(results);
            lap(6, &mut at);
        }
        let serve: Duration = t[1..].iter().sum();
        eprintln!(
            "stages {round}: ns/span: decode-only receiver (prost, dropped) {:.0} | serve: \
             decode {:.0}, admit {:.0}, take {:.0}, extract+evaluate {:.0}, rows {:.0} \
             ({:.0} B/span), free {:.0}; serve total {:.0} = {:.2}x prost",
            per(t[0]),
            per(t[1]),
            per(t[2]),
            per(t[3]),
            per(t[4]),
            per(t[5]),
            row_bytes as f64 / spans,
            per(t[6]),
            per(serve),
            serve.as_secs_f64() / t[0].as_secs_f64(),
        );
    }
}

fn sustained(b: &mut Bench) {
    // Warm up, then a fixed run of 100 rounds (200,000 spans).
    b.send(5);
    let before = b.stats.snapshot().traces_scored + 5 * TRACES_PER_ROUND as u64;
    assert!(
        b.wait_scored(before, Duration::from_secs(60)),
        "warm-up not scored"
    );
    let rounds = 100u64;
    let target = before + rounds * TRACES_PER_ROUND as u64;
    let (sending, send_cpu) = b.send_measured(rounds);
    // From the first request until the last trace is scored (building the
    // payloads before the first request is not counted).
    let sent = Instant::now();
    let cpu0 = process_cpu().saturating_sub(send_cpu);
    assert!(
        b.wait_scored(target, Duration::from_secs(300)),
        "not all traces were scored"
    );
    let total = sending + sent.elapsed();
    let cpu = process_cpu().saturating_sub(cpu0);
    let spans = (rounds as usize * b.spans_per_round) as f64;
    let scored_in = total.saturating_sub(DECISION_WAIT);
    eprintln!(
        "scoring on: {} spans over gRPC, {IN_FLIGHT} in flight: ingest {:.0} spans/s ({:.2} s); \
         all traces scored after {:.2} s => {:.0} spans/s end to end (decision wait {} ms subtracted); \
         {:.0} spans per process CPU-second; UNAVAILABLE retries: {}",
        spans,
        spans / sending.as_secs_f64(),
        sending.as_secs_f64(),
        total.as_secs_f64(),
        spans / scored_in.as_secs_f64(),
        DECISION_WAIT.as_millis(),
        spans / cpu.as_secs_f64(),
        b.retries.load(Ordering::Relaxed),
    );
}

fn bench(c: &mut Criterion) {
    // As `toolscore serve` sets it at start.
    // SAFETY: the bench's first step, before it starts any thread of its own.
    unsafe { toolscore::serve::keep_freed_memory() };
    if std::env::var("TOOLSCORE_BENCH_SERVE").as_deref() == Ok("sustained") {
        let mut b = start(DECISION_WAIT);
        sustained(&mut b);
        b.stop();
        return;
    }
    if std::env::var("TOOLSCORE_BENCH_SERVE").as_deref() == Ok("side_by_side") {
        side_by_side(false);
        return;
    }
    if std::env::var("TOOLSCORE_BENCH_SERVE").as_deref() == Ok("serve_alone") {
        side_by_side(true);
        return;
    }
    if std::env::var("TOOLSCORE_BENCH_SERVE").as_deref() == Ok("stages") {
        stages();
        return;
    }
    if std::env::var("TOOLSCORE_BENCH_SERVE").as_deref() == Ok("memory") {
        memory_per_span();
        return;
    }
    if std::env::var("TOOLSCORE_BENCH_SERVE").as_deref() == Ok("forwarding") {
        forwarding(true);
        forwarding(false);
        return;
    }
    // Memory first: RSS growth only means something in a fresh process.
    memory_per_span();
    side_by_side(false);
    stages();
    forwarding(true);
    forwarding(false);
    scoring_cost();
    ingest_only();
    let mut b = start(DECISION_WAIT);
    sustained(&mut b);
    let mut group = c.benchmark_group("serve");
    // Protobuf bytes of one round: the requests as sent.
    let round_bytes: usize = b.base.iter().map(|r| r.encoded_len()).sum();
    group.throughput(Throughput::ElementsAndBytes {
        elements: b.spans_per_round as u64,
        bytes: round_bytes as u64,
    });
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("grpc_ingest_scored_spans", |bch| {
        bch.iter_custom(|iters| b.send(iters))
    });
    group.finish();
    let snap = b.stats.snapshot();
    eprintln!(
        "after criterion: {} spans accepted, {} traces scored, {} requests refused (UNAVAILABLE)",
        snap.spans, snap.traces_scored, snap.refused_requests
    );
    b.stop();
}

criterion_group!(benches, bench);
criterion_main!(benches);
