//! What every receiver shares: one decode of a request body (protobuf or
//! JSON) with one mapping of its errors, id validation, admission into the
//! trace buffer (or refusal), the hand-off to the forwarder, and the wake-up
//! of the completion thread.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tracing::{info, warn};

use super::buffer::{Refused, TraceBuffer};
use super::forward::{ForwardHandle, Signal, Slot};
use super::status::{Accepted, Encoding, ExportError};
use super::telemetry::ServeStats;
use crate::ingest::otlp_json::SpanRejected;
use crate::ingest::projection::{KeepAll, KeyFilter};
use crate::ingest::{self, Request, Wire};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;

/// The budget of request bytes held at once by every receiver together
/// (`--max-inflight`): bodies as they arrive and as they are inflated.
#[derive(Debug)]
pub(crate) struct Inflight {
    held: AtomicUsize,
    max: usize,
    stats: Arc<ServeStats>,
    retry_after: Duration,
}

impl Inflight {
    pub fn new(max: usize, retry_after: Duration, stats: Arc<ServeStats>) -> Arc<Inflight> {
        ServeStats::set(&stats.inflight_bytes_capacity, max as u64);
        Arc::new(Inflight {
            held: AtomicUsize::new(0),
            max: max.max(1),
            stats,
            retry_after,
        })
    }

    /// An empty charge for one request, released when dropped.
    pub fn charge(self: &Arc<Self>) -> Charge {
        Charge {
            budget: Arc::clone(self),
            bytes: 0,
        }
    }
}

/// The bytes one request holds of the [`Inflight`] budget.
#[derive(Debug)]
pub(crate) struct Charge {
    budget: Arc<Inflight>,
    bytes: usize,
}

impl Charge {
    /// Adds `n` bytes to this request's share. Fails (and the request must
    /// be refused, retryable) when that takes the budget past its cap,
    /// unless this request is the only one holding bytes: one request up to
    /// the size cap is always served.
    pub fn add(&mut self, n: usize) -> Result<(), ExportError> {
        let b = &self.budget;
        let before = b.held.fetch_add(n, Ordering::Relaxed);
        self.bytes += n;
        ServeStats::set(&b.stats.inflight_bytes, (before + n) as u64);
        if before + n > b.max && before + n > self.bytes {
            return Err(ExportError::Overloaded {
                cap: b.max,
                retry_after: b.retry_after,
            });
        }
        Ok(())
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        let b = &self.budget;
        let now = b
            .held
            .fetch_sub(self.bytes, Ordering::Relaxed)
            .saturating_sub(self.bytes);
        ServeStats::set(&b.stats.inflight_bytes, now as u64);
    }
}

/// State shared by the receivers and the completion thread.
#[derive(Debug)]
pub(crate) struct Shared {
    buffer: Mutex<TraceBuffer>,
    /// Wakes the completion thread (shutdown).
    pub wake: Condvar,
    pub stats: Arc<ServeStats>,
    retry_after: Duration,
    /// Whether the last request was refused for a full buffer (for logging
    /// the transitions only, not every refusal).
    full: AtomicBool,
    /// The downstream, when `--forward` is set (started with the runtime).
    pub forward: Mutex<Option<ForwardHandle>>,
    /// Request bytes held by the receivers.
    pub inflight: Arc<Inflight>,
    /// Which attributes decoding keeps (every one unless set).
    filter: Box<dyn KeyFilter + Send + Sync>,
    /// Set while scoring lags: completed traces wait for a scoring thread
    /// (see [`Shared::pace`]).
    behind: AtomicBool,
    caught_up: tokio::sync::Notify,
    /// [`PACE_WAIT`] (shorter or longer in tests).
    pace_wait: Duration,
}

/// The longest a request waits for scoring to catch up before it is taken
/// anyway ([`Shared::pace`]).
const PACE_WAIT: Duration = Duration::from_millis(50);

impl std::fmt::Debug for dyn KeyFilter + Send + Sync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyFilter")
    }
}

impl Shared {
    pub fn new(
        buffer: TraceBuffer,
        retry_after: Duration,
        max_inflight: usize,
        stats: Arc<ServeStats>,
    ) -> Self {
        Shared {
            buffer: Mutex::new(buffer),
            wake: Condvar::new(),
            inflight: Inflight::new(max_inflight, retry_after, Arc::clone(&stats)),
            stats,
            retry_after,
            full: AtomicBool::new(false),
            forward: Mutex::new(None),
            filter: Box::new(KeepAll),
            behind: AtomicBool::new(false),
            caught_up: tokio::sync::Notify::new(),
            pace_wait: PACE_WAIT,
        }
    }

    /// Waits (at most [`PACE_WAIT`]) while scoring is behind, before a
    /// receiver decodes and admits a request: the receivers, which decode
    /// faster than traces are scored, would otherwise run ahead and the
    /// traces waiting to be scored pile up (memory that is touched once
    /// more for every span, on a machine whose cores are all busy). The
    /// client sees a slower answer, its retries and the buffer's caps do
    /// not come into it.
    pub async fn pace(&self) {
        if !self.behind.load(Ordering::Relaxed) {
            return;
        }
        let caught_up = self.caught_up.notified();
        tokio::pin!(caught_up);
        caught_up.as_mut().enable();
        if self.behind.load(Ordering::Acquire) {
            let _ = tokio::time::timeout(self.pace_wait, caught_up).await;
        }
    }

    /// Says whether scoring is behind (the completion thread's view).
    pub fn set_behind(&self, behind: bool) {
        if self.behind.swap(behind, Ordering::Release) && !behind {
            self.caught_up.notify_waiters();
        }
    }

    /// Decodes request bodies keeping only the attributes `filter` keeps
    /// (the others are skipped undecoded).
    pub fn set_filter(&mut self, filter: Box<dyn KeyFilter + Send + Sync>) {
        self.filter = filter;
    }

    /// The buffer; a panic elsewhere while it was held does not lose it.
    pub fn lock(&self) -> MutexGuard<'_, TraceBuffer> {
        self.buffer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Decodes one request body (already inflated) and accepts it: what
    /// both receivers do with what arrives.
    pub fn accept_body(&self, encoding: Encoding, body: Bytes) -> Result<Accepted, ExportError> {
        self.accept_body_with(encoding, body, &*self.filter)
    }

    /// [`Shared::accept_body`] with another attribute filter than the one set.
    pub fn accept_body_with(
        &self,
        encoding: Encoding,
        body: Bytes,
        filter: &dyn KeyFilter,
    ) -> Result<Accepted, ExportError> {
        let wire = match encoding {
            Encoding::Protobuf => Wire::Protobuf,
            Encoding::Json => Wire::Json,
        };
        let (req, rejected) =
            ingest::decode_request_with(&body, wire, filter).map_err(ExportError::Undecodable)?;
        // Protobuf is forwarded as the bytes that came; JSON is encoded anew.
        let raw = (encoding == Encoding::Protobuf).then_some(body);
        self.accept_with(req, raw, rejected)
    }

    /// Decodes one logs request body (already inflated) and buffers its
    /// records as events of the spans they name (`ingest::logs`), or
    /// refuses it whole when the buffer or the forward queue is full.
    /// Records without span context are counted and not kept; records of a
    /// trace already scored are counted as late. With `--forward`, the
    /// request goes downstream as it came (protobuf: the same bytes), less
    /// the records refused here, whatever was kept of it.
    pub fn accept_logs_body(
        &self,
        encoding: Encoding,
        body: Bytes,
    ) -> Result<Accepted, ExportError> {
        self.refuse_while_output_fails()?;
        let forward = self.forward_handle();
        let (logs, bad, outgoing) = match encoding {
            Encoding::Protobuf => {
                let req =
                    <ExportLogsServiceRequest as prost::Message>::decode(&*body).map_err(|e| {
                        ExportError::Undecodable(format!(
                            "not an OTLP protobuf ExportLogsServiceRequest ({} bytes): {e}",
                            body.len()
                        ))
                    })?;
                let outgoing = forward
                    .as_ref()
                    .map(|_| Outgoing::of(req.clone(), Some(body)));
                let (logs, bad) = ingest::logs::from_proto(req);
                (logs, bad, outgoing)
            }
            Encoding::Json => {
                if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
                    return Err(ExportError::Undecodable(
                        "not OTLP/JSON: an export request is a JSON object".into(),
                    ));
                }
                let (logs, bad) = ingest::logs::decode_json(&body)
                    .map_err(|e| ExportError::Undecodable(format!("not OTLP/JSON logs: {e}")))?;
                let outgoing = forward.as_ref().map(|_| {
                    match serde_json::from_slice::<ExportLogsServiceRequest>(&body) {
                        Ok(req) => Outgoing::of(req, None),
                        Err(e) => Outgoing::Unencodable {
                            records: (logs.events.len() + logs.without_span) as u64,
                            reason: e.to_string(),
                        },
                    }
                });
                (logs, bad, outgoing)
            }
        };
        let slot = match (&forward, &outgoing) {
            (Some(f), Some(Outgoing::Send { body, records })) if *records > 0 => {
                Some(self.reserve_forward(f, body.len())?)
            }
            _ => None,
        };
        let s = &self.stats;
        let admitted = if logs.events.is_empty() {
            Ok(Default::default())
        } else {
            let mut buf = self.lock();
            let r = buf.admit_logs(logs.events, Instant::now());
            self.stats.set_buffered(&buf.usage());
            r
        };
        match admitted {
            Ok(a) => {
                match (slot, outgoing) {
                    (Some(slot), Some(Outgoing::Send { body, records })) => {
                        slot.send(Signal::Logs, body, records);
                    }
                    (_, Some(Outgoing::Unencodable { records, reason })) => {
                        warn!(records, %reason, "OTLP/JSON log records not forwarded: they do not re-encode as protobuf.");
                        ServeStats::add(&s.log_records_forward_dropped, records);
                    }
                    _ => {}
                }
                ServeStats::add(&s.requests, 1);
                ServeStats::add(&s.log_records, a.events as u64);
                ServeStats::add(&s.log_records_late, a.late as u64);
                ServeStats::add(&s.log_records_without_span, logs.without_span as u64);
                let rejected = bad.len() as u64;
                Ok(Accepted {
                    rejected_spans: rejected as i64,
                    message: summarize_records(rejected, &bad),
                    logs: true,
                })
            }
            Err(Refused::Full {
                held_spans,
                held_traces,
            }) => {
                ServeStats::add(&s.requests_refused, 1);
                Err(ExportError::Busy {
                    held_spans,
                    held_traces,
                    retry_after: self.retry_after,
                })
            }
            Err(Refused::Closed) => {
                ServeStats::add(&s.requests_refused, 1);
                Err(ExportError::ShuttingDown {
                    retry_after: self.retry_after,
                })
            }
        }
    }

    /// The downstream, when `--forward` is set.
    fn forward_handle(&self) -> Option<ForwardHandle> {
        self.forward
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A place in the forward queue for a request of `bytes`, or the
    /// refusal (503 / UNAVAILABLE) of the whole request, before anything of
    /// it is buffered: the client's retry neither loses nor doubles data.
    fn reserve_forward<'a>(
        &self,
        forward: &'a ForwardHandle,
        bytes: usize,
    ) -> Result<Slot<'a>, ExportError> {
        forward.reserve(bytes).map_err(|_| {
            ServeStats::add(&self.stats.requests_refused, 1);
            let u = self.lock().usage();
            ExportError::Busy {
                held_spans: u.spans,
                held_traces: u.traces,
                retry_after: self.retry_after,
            }
        })
    }

    /// Refuses a request while the results file cannot be written: nothing
    /// is acknowledged that it could not keep (spans and log records alike).
    fn refuse_while_output_fails(&self) -> Result<(), ExportError> {
        if self.stats.output_failing.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        ServeStats::add(&self.stats.requests_refused, 1);
        Err(ExportError::OutputFailing {
            reason: "the results file cannot be written".into(),
            retry_after: self.retry_after,
        })
    }

    /// Validates one decoded request and buffers its spans, or refuses it
    /// whole when the buffer is full. `raw` is the protobuf the request was
    /// decoded from, if it came as protobuf: when no span is rejected it is
    /// forwarded as is instead of re-encoding the request.
    /// `rejected`: spans the decoder already left out (OTLP/JSON: bad ids),
    /// reported in the partial success with the rest.
    pub fn accept_with(
        &self,
        mut req: Request,
        raw: Option<Bytes>,
        rejected: Vec<SpanRejected>,
    ) -> Result<Accepted, ExportError> {
        self.refuse_while_output_fails()?;
        if ingest::span_count(&req) == 0 && rejected.is_empty() {
            // A success (OTLP: receivers may drop empty requests), but say
            // so: a client that meant to send spans learns it did not.
            ServeStats::add(&self.stats.requests, 1);
            return Ok(Accepted {
                rejected_spans: 0,
                message: "the request holds no spans; nothing was taken".into(),
                logs: false,
            });
        }
        let invalid = ingest::validate_ids(&mut req);
        let rejected_spans =
            (rejected.iter().map(|r| r.spans).sum::<usize>() + invalid.len()) as u64;
        let problems: Vec<String> = rejected
            .into_iter()
            .map(|r| r.reason)
            .chain(invalid)
            .collect();
        // Forwarding comes first (see `reserve_forward`).
        let spans_in = ingest::span_count(&req) as u64;
        let forward = self.forward_handle();
        let slot = match forward.as_ref().filter(|_| spans_in > 0) {
            None => None,
            Some(f) => {
                let body = match raw {
                    Some(raw) if problems.is_empty() => raw,
                    _ => Bytes::from(prost::Message::encode_to_vec(&req.to_proto())),
                };
                Some((self.reserve_forward(f, body.len())?, body))
            }
        };
        let admitted = if ingest::span_count(&req) == 0 {
            Ok(Default::default())
        } else {
            let mut buf = self.lock();
            let r = buf.admit(req, Instant::now());
            self.stats.set_buffered(&buf.usage());
            r
        };
        match admitted {
            Ok(a) => {
                if let Some((slot, body)) = slot {
                    slot.send(Signal::Traces, body, spans_in);
                }
                let s = &self.stats;
                ServeStats::add(&s.requests, 1);
                ServeStats::add(&s.spans_received, a.spans as u64);
                ServeStats::add(&s.duplicate_spans, a.duplicates as u64);
                ServeStats::add(&s.spans_rejected, rejected_spans);
                if self.full.swap(false, Ordering::Relaxed) {
                    info!("Trace buffer has room again; accepting requests.");
                }
                Ok(Accepted {
                    rejected_spans: rejected_spans as i64,
                    message: summarize(rejected_spans, &problems),
                    logs: false,
                })
            }
            Err(Refused::Full {
                held_spans,
                held_traces,
            }) => {
                ServeStats::add(&self.stats.requests_refused, 1);
                if !self.full.swap(true, Ordering::Relaxed) {
                    warn!(
                        held_spans,
                        held_traces,
                        "Trace buffer full; refusing requests (503 / UNAVAILABLE) until traces complete."
                    );
                }
                Err(ExportError::Busy {
                    held_spans,
                    held_traces,
                    retry_after: self.retry_after,
                })
            }
            Err(Refused::Closed) => {
                ServeStats::add(&self.stats.requests_refused, 1);
                Err(ExportError::ShuttingDown {
                    retry_after: self.retry_after,
                })
            }
        }
    }
}

/// What a logs request sends downstream.
enum Outgoing {
    /// The protobuf request and its number of records.
    Send { body: Bytes, records: u64 },
    /// OTLP/JSON that our reader reads and the protobuf types do not
    /// (ids in base64, say): counted as dropped, never silently.
    Unencodable { records: u64, reason: String },
}

impl Outgoing {
    /// `req` less the records refused here; `raw`, the bytes it was
    /// decoded from, go as they are when nothing was left out.
    fn of(mut req: ExportLogsServiceRequest, raw: Option<Bytes>) -> Outgoing {
        let left_out = ingest::logs::retain_accepted(&mut req);
        let records = ingest::logs::record_count(&req) as u64;
        let body = match raw {
            Some(raw) if left_out == 0 => raw,
            _ => Bytes::from(prost::Message::encode_to_vec(&req)),
        };
        Outgoing::Send { body, records }
    }
}

/// One human-readable message for the rejected spans of a request.
fn summarize(spans: u64, problems: &[String]) -> String {
    summarize_what(spans, "span(s)", problems)
}

/// One human-readable message for the rejected log records of a request.
fn summarize_records(records: u64, problems: &[String]) -> String {
    summarize_what(records, "log record(s)", problems)
}

fn summarize_what(n: u64, what: &str, problems: &[String]) -> String {
    const SHOWN: usize = 3;
    if problems.is_empty() {
        return String::new();
    }
    let mut msg = format!(
        "{n} {what} rejected for invalid ids or values: {}",
        problems[..problems.len().min(SHOWN)].join("; ")
    );
    if problems.len() > SHOWN {
        msg.push_str(&format!("; and {} more", problems.len() - SHOWN));
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::projection::AttrsOf;
    use crate::serve::buffer::BufferLimits;
    use prost::Message;

    struct OnlyToolName;
    impl KeyFilter for OnlyToolName {
        fn keep(&self, _: AttrsOf, key: &str) -> bool {
            key == "gen_ai.tool.name"
        }
    }

    /// `pace` returns at once when scoring keeps up, as soon as it
    /// catches up (not at the end of its wait), and at the end of its wait
    /// when it does not.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn requests_wait_while_scoring_is_behind() {
        let limits = BufferLimits {
            decision_wait: Duration::from_secs(1),
            max_spans: 10,
            max_traces: 10,
            remember_completed: 0,
        };
        let stats = Arc::new(ServeStats::default());
        let mut shared = Shared::new(
            TraceBuffer::new(limits),
            Duration::from_secs(1),
            1 << 20,
            stats,
        );
        let deadline = Duration::from_secs(30);
        shared.pace_wait = Duration::from_secs(600);
        let shared = Arc::new(shared);
        tokio::time::timeout(deadline, shared.pace())
            .await
            .expect("not behind: no wait");
        shared.set_behind(true);
        // Scoring catches up once the request waits (`yield_now` lets the
        // request be polled first): it goes on.
        let catch_up = async {
            tokio::task::yield_now().await;
            shared.set_behind(false);
        };
        tokio::time::timeout(deadline, async { tokio::join!(shared.pace(), catch_up) })
            .await
            .expect("woken when scoring caught up");
        let mut shared = Arc::try_unwrap(shared).expect("one owner");
        shared.pace_wait = Duration::from_millis(10);
        shared.set_behind(true);
        tokio::time::timeout(deadline, shared.pace())
            .await
            .expect("the wait is bounded");
    }

    #[test]
    fn bodies_are_decoded_with_the_filter_set() {
        let g = crate::fake::agent_traces(2, 1, 1, 3);
        let body = Bytes::from(g.requests[0].encode_to_vec());
        let limits = BufferLimits {
            decision_wait: Duration::from_secs(3600),
            max_spans: 1000,
            max_traces: 1000,
            remember_completed: 0,
        };
        let attrs = |shared: &Shared| -> Vec<String> {
            let mut keys: Vec<String> = shared
                .lock()
                .take_any(100)
                .iter()
                .flat_map(|c| &c.trace.spans)
                .flat_map(|s| {
                    s.span
                        .attributes()
                        .map(|(k, _)| k.to_string())
                        .collect::<Vec<_>>()
                })
                .collect();
            keys.sort();
            keys.dedup();
            keys
        };
        let stats = Arc::new(ServeStats::default());
        let all = Shared::new(
            TraceBuffer::new(limits),
            Duration::from_secs(1),
            1 << 30,
            Arc::clone(&stats),
        );
        all.accept_body(Encoding::Protobuf, body.clone()).unwrap();
        assert!(attrs(&all).len() > 5);
        let mut some = Shared::new(
            TraceBuffer::new(limits),
            Duration::from_secs(1),
            1 << 30,
            stats,
        );
        some.set_filter(Box::new(OnlyToolName));
        some.accept_body(Encoding::Protobuf, body).unwrap();
        assert_eq!(attrs(&some), ["gen_ai.tool.name"]);
    }
}
