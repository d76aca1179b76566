//! Forwarding: sends accepted OTLP data downstream unchanged through a
//! bounded queue with retries (also how evaluation results are exported).
//!
//! The queue is the backpressure point: when the downstream is down it fills
//! up (in requests or in bytes), `reserve` fails, and the receiver answers
//! 503/UNAVAILABLE so the upstream keeps the data (nothing accepted is
//! dropped). One worker starts sends in queue order, up to `concurrency` at
//! a time: with more than one, a request that is retried can arrive after
//! later ones (`concurrency = 1` keeps arrival order). A retryable failure is
//! retried with exponential backoff, honouring `Retry-After` (HTTP) and
//! `RetryInfo` (gRPC).

use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::telemetry::ServeStats;

/// Wire protocol of the downstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Grpc,
    Http,
}

/// What a queued request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Traces,
    Logs,
}

impl Signal {
    fn grpc_path(self) -> &'static str {
        match self {
            Signal::Traces => "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            Signal::Logs => "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
        }
    }

    fn http_path(self) -> &'static str {
        match self {
            Signal::Traces => "/v1/traces",
            Signal::Logs => "/v1/logs",
        }
    }
}

/// Downstream settings.
#[derive(Debug, Clone)]
pub struct ForwardConfig {
    /// `http://host:port` (gRPC) or `http://host:port` (OTLP/HTTP base URL;
    /// `/v1/traces` and `/v1/logs` are appended unless the URL already ends
    /// with one of them).
    pub endpoint: String,
    pub protocol: Protocol,
    pub gzip: bool,
    /// Extra headers / gRPC metadata (e.g. authorization).
    pub headers: Vec<(String, String)>,
    /// Requests the queue holds before upstream gets 503/UNAVAILABLE.
    pub queue: usize,
    /// Per-attempt timeout.
    pub timeout: Duration,
    /// Cap of the exponential backoff.
    pub max_backoff: Duration,
    /// Queued requests are joined into one downstream request up to this
    /// many bytes (protobuf concatenation of the `resource_spans` lists, so
    /// every span is sent unchanged and in order); 0 sends them one by one.
    pub max_batch_bytes: usize,
    /// Bytes the queue holds (requests waiting or being sent) before
    /// upstream gets 503/UNAVAILABLE.
    pub max_queue_bytes: usize,
    /// Report the queue's fill and what was delivered or dropped on
    /// `/metrics`: the forwarder of received spans and log records does; the
    /// exporter of results, which shares only the retry counter, does not
    /// (its losses are `results_dropped`).
    pub counted: bool,
    /// Requests sent at once. They are started in queue order; with more
    /// than one, a request that is retried can arrive after later ones.
    pub concurrency: usize,
}

/// Bytes the forward queue holds by default.
pub const DEFAULT_MAX_QUEUE_BYTES: usize = 256 * 1024 * 1024;

/// Requests in flight to the downstream by default.
pub const DEFAULT_CONCURRENCY: usize = 4;

/// Joins requests up to 2 MiB: half of the 4 MiB that gRPC servers (the
/// Collector included) accept by default.
pub const DEFAULT_MAX_BATCH_BYTES: usize = 2 * 1024 * 1024;

impl ForwardConfig {
    /// Chooses the protocol from the URL: port 4317 or a `grpc://` scheme
    /// means gRPC, anything else OTLP/HTTP. An explicit protocol wins.
    pub fn new(url: &str, protocol: Option<Protocol>) -> Result<ForwardConfig, ForwardError> {
        let (endpoint, guessed) = if let Some(rest) = url.strip_prefix("grpc://") {
            (format!("http://{rest}"), Protocol::Grpc)
        } else if url.starts_with("http://") {
            let grpc = url.trim_end_matches('/').ends_with(":4317");
            (
                url.to_string(),
                if grpc { Protocol::Grpc } else { Protocol::Http },
            )
        } else if url.starts_with("https://") {
            return Err(ForwardError::Config(format!(
                "`{url}`: TLS is not built in; forward to a local Collector or sidecar over http://"
            )));
        } else {
            return Err(ForwardError::Config(format!(
                "`{url}`: expected http://host:port or grpc://host:port"
            )));
        };
        Ok(ForwardConfig {
            endpoint,
            protocol: protocol.unwrap_or(guessed),
            gzip: false,
            headers: Vec::new(),
            queue: 1024,
            timeout: Duration::from_secs(10),
            max_backoff: Duration::from_secs(30),
            max_batch_bytes: DEFAULT_MAX_BATCH_BYTES,
            max_queue_bytes: DEFAULT_MAX_QUEUE_BYTES,
            counted: true,
            concurrency: DEFAULT_CONCURRENCY,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    #[error("bad forward configuration: {0}")]
    Config(String),
}

/// The queue is full (or the forwarder stopped): answer 503/UNAVAILABLE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the forward queue is full")]
pub struct QueueFull;

#[derive(Debug)]
struct Item {
    signal: Signal,
    /// Protobuf-encoded export request.
    body: Bytes,
    /// Spans or log records in it.
    items: u64,
}

/// Cheap to clone; every receiver holds one.
#[derive(Clone, Debug)]
pub struct ForwardHandle {
    tx: mpsc::Sender<Item>,
    /// The queue gauges.
    metrics: Arc<ServeStats>,
    capacity: usize,
    /// Bytes queued or being sent.
    held: Arc<AtomicUsize>,
    max_bytes: usize,
}

impl ForwardHandle {
    /// Queues a request of `items` spans or log records if there is room
    /// now; never waits (scoring must not block on a downstream). Fails when
    /// the queue is full or stopped.
    pub fn try_send(&self, signal: Signal, body: Bytes, items: u64) -> Result<(), QueueFull> {
        let len = body.len();
        self.reserve(len)?.send(signal, body, items);
        Ok(())
    }

    /// Whether a request can be queued now (room in requests and bytes).
    pub fn has_room(&self) -> bool {
        self.tx.capacity() > 0 && self.held.load(Ordering::Relaxed) < self.max_bytes
    }

    fn hold(&self, bytes: usize) {
        let now = self.held.fetch_add(bytes, Ordering::Relaxed) + bytes;
        ServeStats::set(&self.metrics.forward_queue_bytes, now as u64);
    }

    /// Takes a place in the queue for a request of `bytes`, to fill later: a
    /// receiver reserves before it buffers a request, so a request is either
    /// buffered and forwarded, or refused whole. Fails when the queue is full
    /// in requests, or when the request would take it past its byte cap (a
    /// request alone in the queue always fits).
    pub fn reserve(&self, bytes: usize) -> Result<Slot<'_>, QueueFull> {
        let held = self.held.load(Ordering::Relaxed);
        if held > 0 && held + bytes > self.max_bytes {
            return Err(QueueFull);
        }
        let permit = self.tx.try_reserve().map_err(|_| QueueFull)?;
        self.hold(bytes);
        Ok(Slot {
            permit: Some(permit),
            bytes,
            handle: self,
        })
    }
}

/// A reserved place in the forward queue; dropped unused, it gives its
/// place and bytes back.
pub struct Slot<'a> {
    permit: Option<mpsc::Permit<'a, Item>>,
    bytes: usize,
    handle: &'a ForwardHandle,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if self.permit.is_some() {
            release(&self.handle.held, &self.handle.metrics, self.bytes);
        }
    }
}

fn release(held: &AtomicUsize, metrics: &ServeStats, bytes: usize) {
    let now = held
        .fetch_sub(bytes, Ordering::Relaxed)
        .saturating_sub(bytes);
    ServeStats::set(&metrics.forward_queue_bytes, now as u64);
}

impl Slot<'_> {
    /// Queues the request of `items` spans or log records; `body` is the
    /// size reserved.
    pub fn send(mut self, signal: Signal, body: Bytes, items: u64) {
        let Some(permit) = self.permit.take() else {
            return;
        };
        debug_assert_eq!(body.len(), self.bytes);
        permit.send(Item {
            signal,
            body,
            items,
        });
        let h = self.handle;
        ServeStats::set(
            &h.metrics.forward_queue,
            (h.capacity - h.tx.capacity()) as u64,
        );
    }
}

/// Starts the worker. It stops when every handle is dropped and the queue is
/// drained, or at once when `hard_stop` is cancelled.
pub fn spawn(
    config: ForwardConfig,
    metrics: Arc<ServeStats>,
    hard_stop: CancellationToken,
) -> Result<(ForwardHandle, JoinHandle<()>), ForwardError> {
    let capacity = config.queue.max(1);
    let (tx, rx) = mpsc::channel(capacity);
    let gauges = if config.counted {
        Arc::clone(&metrics)
    } else {
        Arc::new(ServeStats::default())
    };
    ServeStats::set(&gauges.forward_queue_capacity, capacity as u64);
    ServeStats::set(
        &gauges.forward_queue_bytes_capacity,
        config.max_queue_bytes as u64,
    );
    let sender = Sender::new(&config)?;
    let held = Arc::new(AtomicUsize::new(0));
    let max_bytes = config.max_queue_bytes;
    let worker = Worker {
        config: Arc::new(config),
        sender,
        metrics,
        gauges: Arc::clone(&gauges),
        hard_stop,
        held: Arc::clone(&held),
    };
    let join = tokio::spawn(worker.run(rx));
    Ok((
        ForwardHandle {
            tx,
            metrics: gauges,
            capacity,
            held,
            max_bytes,
        },
        join,
    ))
}

/// Why one attempt failed.
enum Failure {
    Retry {
        after: Option<Duration>,
        reason: String,
    },
    Permanent(String),
}

#[derive(Clone)]
enum Sender {
    Grpc(tonic::client::Grpc<tonic::transport::Channel>),
    Http {
        client: hyper_util::client::legacy::Client<
            hyper_util::client::legacy::connect::HttpConnector,
            http_body_util::Full<Bytes>,
        >,
    },
}

impl Sender {
    fn new(config: &ForwardConfig) -> Result<Sender, ForwardError> {
        match config.protocol {
            Protocol::Grpc => {
                let channel = tonic::transport::Endpoint::from_shared(config.endpoint.clone())
                    .map_err(|e| ForwardError::Config(format!("`{}`: {e}", config.endpoint)))?
                    .timeout(config.timeout)
                    .connect_timeout(config.timeout)
                    .tcp_nodelay(true)
                    .connect_lazy();
                let mut grpc = tonic::client::Grpc::new(channel);
                if config.gzip {
                    grpc = grpc.send_compressed(tonic::codec::CompressionEncoding::Gzip);
                }
                Ok(Sender::Grpc(grpc))
            }
            Protocol::Http => {
                let mut connector = hyper_util::client::legacy::connect::HttpConnector::new();
                connector.set_nodelay(true);
                connector.set_connect_timeout(Some(config.timeout));
                let client = hyper_util::client::legacy::Client::builder(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .build(connector);
                Ok(Sender::Http { client })
            }
        }
    }
}

#[derive(Clone)]
struct Worker {
    /// Where the queue gauges and the delivered and dropped counts go (see
    /// [`ForwardConfig::counted`]).
    gauges: Arc<ServeStats>,
    /// Shared with the handles: bytes queued or being sent.
    held: Arc<AtomicUsize>,
    config: Arc<ForwardConfig>,
    sender: Sender,
    metrics: Arc<ServeStats>,
    hard_stop: CancellationToken,
}

impl Worker {
    async fn run(self, mut rx: mpsc::Receiver<Item>) {
        use futures_util::StreamExt;
        let concurrency = self.config.concurrency.max(1);
        // Deliveries run inside this task: a FuturesOrdered polls new ones in
        // the order they were pushed, so requests go out in queue order.
        let mut in_flight = futures_util::stream::FuturesOrdered::new();
        // An item taken from the queue that did not fit the last batch.
        let mut next: Option<Item> = None;
        // A finished delivery that returns false saw the hard stop.
        let stopped = 'queue: loop {
            while in_flight.len() >= concurrency {
                if let Some(false) = in_flight.next().await {
                    break 'queue true;
                }
            }
            let first = match next.take() {
                Some(item) => item,
                None => {
                    let item = loop {
                        tokio::select! {
                            // Queue order first: take what is queued before
                            // polling deliveries again.
                            biased;
                            item = rx.recv() => break item,
                            Some(done) = in_flight.next(), if !in_flight.is_empty() => {
                                if !done {
                                    break 'queue true;
                                }
                            }
                        }
                    };
                    match item {
                        Some(item) => item,
                        None => break false,
                    }
                }
            };
            let batch = self.join_queued(first, &mut rx, &mut next);
            ServeStats::set(&self.gauges.forward_queue, rx.len() as u64);
            let mut worker = self.clone();
            in_flight.push_back(async move {
                let ok = worker.deliver(&batch).await;
                release(&worker.held, &worker.gauges, batch.body.len());
                ok
            });
        };
        // The queue is closed and empty (or the hard stop came): wait for
        // what is still being sent; after a hard stop each delivery ends at
        // once, counting what it drops.
        while in_flight.next().await.is_some() {}
        if stopped {
            rx.close();
            for item in next
                .into_iter()
                .chain(std::iter::from_fn(|| rx.try_recv().ok()))
            {
                self.count(&item, false);
            }
        }
    }

    /// Counts a request delivered or dropped (on the counters of the
    /// forwarder of received data only: see [`ForwardConfig::counted`]).
    fn count(&self, item: &Item, delivered: bool) {
        let g = &self.gauges;
        let counter = match (item.signal, delivered) {
            (Signal::Traces, true) => &g.spans_forwarded,
            (Signal::Traces, false) => &g.spans_forward_dropped,
            (Signal::Logs, true) => &g.log_records_forwarded,
            (Signal::Logs, false) => &g.log_records_forward_dropped,
        };
        ServeStats::add(counter, item.items);
    }

    /// Appends the requests already waiting in the queue to `first`, while
    /// they carry the same signal and the batch stays under the byte cap.
    /// Concatenated protobuf messages decode as one message whose repeated
    /// fields are joined, so the batch is a valid export request.
    fn join_queued(
        &self,
        first: Item,
        rx: &mut mpsc::Receiver<Item>,
        next: &mut Option<Item>,
    ) -> Item {
        let cap = self.config.max_batch_bytes;
        let mut joined: Option<bytes::BytesMut> = None;
        let mut batch = first;
        let mut size = batch.body.len();
        while size < cap {
            let Ok(item) = rx.try_recv() else { break };
            if item.signal != batch.signal || size + item.body.len() > cap {
                *next = Some(item);
                break;
            }
            let buf = joined.get_or_insert_with(|| {
                let mut b = bytes::BytesMut::with_capacity(cap.min(4 * (size + item.body.len())));
                b.extend_from_slice(&batch.body);
                b
            });
            buf.extend_from_slice(&item.body);
            size += item.body.len();
            batch.items += item.items;
        }
        if let Some(j) = joined {
            batch.body = j.freeze();
        }
        batch
    }

    /// Sends one item until it is accepted, refused for good, or we must
    /// stop (false; the item is counted as dropped).
    async fn deliver(&mut self, item: &Item) -> bool {
        let mut backoff = Duration::from_millis(100);
        let hard_stop = self.hard_stop.clone();
        loop {
            let attempt = tokio::select! {
                r = self.attempt(item) => r,
                () = hard_stop.cancelled() => {
                    self.count(item, false);
                    return false;
                }
            };
            match attempt {
                Ok(()) => {
                    self.count(item, true);
                    return true;
                }
                Err(Failure::Permanent(reason)) => {
                    // Retrying cannot help (the downstream said the data is bad).
                    tracing::error!(%reason, items = item.items, signal = ?item.signal, "Downstream refused a request for good; it is dropped.");
                    self.count(item, false);
                    return true;
                }
                Err(Failure::Retry { after, reason }) => {
                    ServeStats::add(&self.metrics.forward_retries, 1);
                    let wait = after.unwrap_or(backoff).min(self.config.max_backoff);
                    tracing::warn!(%reason, wait_ms = wait.as_millis() as u64, "Downstream export failed; retrying.");
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = self.hard_stop.cancelled() => {
                            self.count(item, false);
                            return false;
                        }
                    }
                    backoff = (backoff * 2).min(self.config.max_backoff);
                }
            }
        }
    }

    async fn attempt(&mut self, item: &Item) -> Result<(), Failure> {
        match &mut self.sender {
            Sender::Grpc(grpc) => {
                grpc.ready().await.map_err(|e| Failure::Retry {
                    after: None,
                    reason: format!("connect: {e}"),
                })?;
                let mut request = tonic::Request::new(item.body.clone());
                for (k, v) in &self.config.headers {
                    if let (Ok(k), Ok(v)) = (
                        tonic::metadata::MetadataKey::from_bytes(k.to_ascii_lowercase().as_bytes()),
                        v.parse(),
                    ) {
                        request.metadata_mut().insert(k, v);
                    }
                }
                let path = http::uri::PathAndQuery::from_static(item.signal.grpc_path());
                match grpc.unary(request, path, RawCodec).await {
                    Ok(_) => Ok(()),
                    Err(status) => Err(grpc_failure(&status)),
                }
            }
            Sender::Http { client } => {
                let base = self.config.endpoint.trim_end_matches('/');
                let url = if base.ends_with("/v1/traces") || base.ends_with("/v1/logs") {
                    match item.signal {
                        Signal::Traces => base.replace("/v1/logs", "/v1/traces"),
                        Signal::Logs => base.replace("/v1/traces", "/v1/logs"),
                    }
                } else {
                    format!("{base}{}", item.signal.http_path())
                };
                let mut builder = http::Request::post(url)
                    .header(http::header::CONTENT_TYPE, "application/x-protobuf");
                for (k, v) in &self.config.headers {
                    builder = builder.header(k.as_str(), v.as_str());
                }
                let body = if self.config.gzip {
                    builder = builder.header(http::header::CONTENT_ENCODING, "gzip");
                    gzip(&item.body)
                } else {
                    item.body.clone()
                };
                let request = builder
                    .body(http_body_util::Full::new(body))
                    .map_err(|e| Failure::Permanent(format!("bad request: {e}")))?;
                let response = tokio::time::timeout(self.config.timeout, client.request(request))
                    .await
                    .map_err(|_| Failure::Retry {
                        after: None,
                        reason: "timed out".into(),
                    })?
                    .map_err(|e| Failure::Retry {
                        after: None,
                        reason: format!("{e}"),
                    })?;
                let status = response.status();
                if status.is_success() {
                    return Ok(());
                }
                let after = response
                    .headers()
                    .get(http::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(Duration::from_secs);
                let reason = format!("HTTP {status}");
                match status.as_u16() {
                    429 | 502 | 503 | 504 => Err(Failure::Retry { after, reason }),
                    _ => Err(Failure::Permanent(reason)),
                }
            }
        }
    }
}

fn gzip(body: &[u8]) -> Bytes {
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 4),
        flate2::Compression::fast(),
    );
    // Writing into a Vec cannot fail.
    let _ = enc.write_all(body);
    Bytes::from(enc.finish().unwrap_or_default())
}

/// The OTLP retry rules for gRPC status codes.
fn grpc_failure(status: &tonic::Status) -> Failure {
    use tonic::Code;
    use tonic_types::StatusExt;
    let after = status.get_details_retry_info().and_then(|r| r.retry_delay);
    let reason = format!("gRPC {:?}: {}", status.code(), status.message());
    match status.code() {
        Code::Cancelled
        | Code::DeadlineExceeded
        | Code::Aborted
        | Code::OutOfRange
        | Code::Unavailable
        | Code::DataLoss => Failure::Retry { after, reason },
        // Only retryable when the server says when.
        Code::ResourceExhausted if after.is_some() => Failure::Retry { after, reason },
        _ => Failure::Permanent(reason),
    }
}

/// A gRPC codec that passes messages as protobuf bytes, undecoded: the
/// forwarder sends what it received without re-encoding, and the OTLP/gRPC
/// receiver keeps the bytes it decodes (also the benchmark's byte sink).
#[derive(Debug, Clone, Copy, Default)]
pub struct RawCodec;

impl tonic::codec::Codec for RawCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl tonic::codec::Encoder for RawCodec {
    type Item = Bytes;
    type Error = tonic::Status;

    fn encode(
        &mut self,
        item: Bytes,
        dst: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), tonic::Status> {
        use bytes::BufMut;
        dst.put_slice(&item);
        Ok(())
    }
}

impl tonic::codec::Decoder for RawCodec {
    type Item = Bytes;
    type Error = tonic::Status;

    fn decode(
        &mut self,
        src: &mut tonic::codec::DecodeBuf<'_>,
    ) -> Result<Option<Bytes>, tonic::Status> {
        use bytes::Buf;
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_from_url() {
        let c = ForwardConfig::new("http://127.0.0.1:4317", None).unwrap();
        assert_eq!(c.protocol, Protocol::Grpc);
        let c = ForwardConfig::new("http://127.0.0.1:4318", None).unwrap();
        assert_eq!(c.protocol, Protocol::Http);
        let c = ForwardConfig::new("grpc://collector:9000", None).unwrap();
        assert_eq!(
            (c.protocol, c.endpoint.as_str()),
            (Protocol::Grpc, "http://collector:9000")
        );
        assert!(ForwardConfig::new("https://x", None).is_err());
        assert!(ForwardConfig::new("x:1", None).is_err());
    }
}
