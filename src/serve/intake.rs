//! What both receivers share: id validation, admission into the trace
//! buffer, the counters, and the wake-up of the completion thread.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;
use tracing::{info, warn};

use super::buffer::{Refused, TraceBuffer};
use super::status::{Accepted, ExportError};
use crate::ingest::otlp_json::SpanRejected;
use crate::ingest::{self, Request};

/// Live counters of a running server (read them with [`ServeStats::snapshot`]).
#[derive(Debug, Default)]
pub struct ServeStats {
    requests: AtomicU64,
    spans: AtomicU64,
    invalid_spans: AtomicU64,
    duplicate_spans: AtomicU64,
    refused_requests: AtomicU64,
    traces_scored: AtomicU64,
    rescored: AtomicU64,
    evaluations: AtomicU64,
    unmatched_traces: AtomicU64,
    buffered_spans: AtomicU64,
    buffered_traces: AtomicU64,
    /// Per-metric verdicts and score histograms, and the forwarder's
    /// counters, for `/metrics`.
    pub prometheus: std::sync::Arc<crate::report::prometheus::Metrics>,
    /// Subscribers of the results API (`proto/traceval/results/v1`).
    pub results_hub: crate::results_api::ResultsHub,
    /// Where `gen_ai.evaluation.result` log records go, if anywhere.
    pub results_forward: Mutex<Option<crate::forward::ForwardHandle>>,
}

/// A copy of the counters at one moment.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StatsSnapshot {
    /// Requests accepted (wholly or partly).
    pub requests: u64,
    /// Spans accepted into the buffer.
    pub spans: u64,
    /// Spans rejected for bad ids or values (partial success).
    pub invalid_spans: u64,
    /// Re-sent spans dropped as duplicates.
    pub duplicate_spans: u64,
    /// Requests refused because the buffer was full or closing.
    pub refused_requests: u64,
    /// Traces (revisions included) that completed and were scored.
    pub traces_scored: u64,
    /// Of those, revisions 2 and later.
    pub rescored: u64,
    pub evaluations: u64,
    pub unmatched_traces: u64,
    /// Spans held now (waiting or being scored).
    pub buffered_spans: u64,
    pub buffered_traces: u64,
}

impl ServeStats {
    pub fn snapshot(&self) -> StatsSnapshot {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        StatsSnapshot {
            requests: g(&self.requests),
            spans: g(&self.spans),
            invalid_spans: g(&self.invalid_spans),
            duplicate_spans: g(&self.duplicate_spans),
            refused_requests: g(&self.refused_requests),
            traces_scored: g(&self.traces_scored),
            rescored: g(&self.rescored),
            evaluations: g(&self.evaluations),
            unmatched_traces: g(&self.unmatched_traces),
            buffered_spans: g(&self.buffered_spans),
            buffered_traces: g(&self.buffered_traces),
        }
    }

    pub(crate) fn add_scored(&self, traces: u64, rescored: u64, evaluations: u64, unmatched: u64) {
        self.traces_scored.fetch_add(traces, Ordering::Relaxed);
        self.rescored.fetch_add(rescored, Ordering::Relaxed);
        self.evaluations.fetch_add(evaluations, Ordering::Relaxed);
        self.unmatched_traces
            .fetch_add(unmatched, Ordering::Relaxed);
    }

    pub(crate) fn set_buffered(&self, buf: &TraceBuffer) {
        let u = buf.usage();
        self.buffered_spans
            .store((u.spans + u.scoring_spans) as u64, Ordering::Relaxed);
        self.buffered_traces
            .store(u.traces as u64, Ordering::Relaxed);
    }
}

/// State shared by the receivers and the completion thread.
#[derive(Debug)]
pub(crate) struct Shared {
    buffer: Mutex<TraceBuffer>,
    /// Wakes the completion thread (shutdown).
    pub wake: Condvar,
    pub stats: std::sync::Arc<ServeStats>,
    retry_after: Duration,
    /// Whether the last request was refused for a full buffer (for logging
    /// the transitions only, not every refusal).
    full: AtomicBool,
    /// The downstream, when `--forward` is set (started with the runtime).
    pub forward: Mutex<Option<crate::forward::ForwardHandle>>,
}

impl Shared {
    pub fn new(buffer: TraceBuffer, retry_after: Duration) -> Self {
        Shared {
            buffer: Mutex::new(buffer),
            wake: Condvar::new(),
            stats: Default::default(),
            retry_after,
            full: AtomicBool::new(false),
            forward: Mutex::new(None),
        }
    }

    /// The buffer; a panic elsewhere while it was held does not lose it.
    pub fn lock(&self) -> MutexGuard<'_, TraceBuffer> {
        self.buffer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Validates one decoded request and buffers its spans, or refuses it
    /// whole when the buffer is full. `raw` is the protobuf the request was
    /// decoded from, if it came as protobuf: when no span is rejected it is
    /// forwarded as is instead of re-encoding the request.
    pub fn accept(&self, req: Request, raw: Option<bytes::Bytes>) -> Result<Accepted, ExportError> {
        self.accept_with(req, raw, Vec::new())
    }

    /// [`Shared::accept`] for a request whose decoder already left out
    /// `rejected` spans (OTLP/JSON: bad ids, enum names, numbers); they are
    /// reported in the partial success with the rest.
    pub fn accept_with(
        &self,
        mut req: Request,
        raw: Option<bytes::Bytes>,
        rejected: Vec<SpanRejected>,
    ) -> Result<Accepted, ExportError> {
        let invalid = ingest::validate_ids(&mut req);
        let rejected_spans =
            (rejected.iter().map(|r| r.spans).sum::<usize>() + invalid.len()) as u64;
        let problems: Vec<String> = rejected
            .into_iter()
            .map(|r| r.reason)
            .chain(invalid)
            .collect();
        // Forwarding comes first: a request the downstream queue cannot take
        // is refused whole (503 / UNAVAILABLE) before anything is buffered,
        // so the client's retry neither loses nor doubles data.
        let spans_in = ingest::span_count(&req) as u64;
        let forward = self
            .forward
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let slot = match forward.as_ref().filter(|_| spans_in > 0) {
            None => None,
            Some(f) => {
                let body = match raw {
                    Some(raw) if problems.is_empty() => raw,
                    _ => bytes::Bytes::from(prost::Message::encode_to_vec(&req)),
                };
                match f.reserve(body.len()) {
                    Ok(slot) => Some((slot, body)),
                    Err(_) => {
                        self.stats.refused_requests.fetch_add(1, Ordering::Relaxed);
                        let u = self.lock().usage();
                        return Err(ExportError::Busy {
                            held_spans: u.spans,
                            held_traces: u.traces,
                            retry_after: self.retry_after,
                        });
                    }
                }
            }
        };
        let admitted = if ingest::span_count(&req) == 0 {
            Ok(Default::default())
        } else {
            let mut buf = self.lock();
            let r = buf.admit(req, Instant::now());
            self.stats.set_buffered(&buf);
            r
        };
        match admitted {
            Ok(a) => {
                if let Some((slot, body)) = slot {
                    slot.send(crate::forward::Signal::Traces, body, spans_in);
                }
                let s = &self.stats;
                s.requests.fetch_add(1, Ordering::Relaxed);
                s.spans.fetch_add(a.spans as u64, Ordering::Relaxed);
                s.duplicate_spans
                    .fetch_add(a.duplicates as u64, Ordering::Relaxed);
                s.invalid_spans.fetch_add(rejected_spans, Ordering::Relaxed);
                if self.full.swap(false, Ordering::Relaxed) {
                    info!("Trace buffer has room again; accepting requests.");
                }
                Ok(Accepted {
                    rejected_spans: rejected_spans as i64,
                    message: summarize(rejected_spans, &problems),
                })
            }
            Err(Refused::Full {
                held_spans,
                held_traces,
            }) => {
                self.stats.refused_requests.fetch_add(1, Ordering::Relaxed);
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
                self.stats.refused_requests.fetch_add(1, Ordering::Relaxed);
                Err(ExportError::ShuttingDown {
                    retry_after: self.retry_after,
                })
            }
        }
    }
}

/// One human-readable message for the rejected spans of a request.
fn summarize(spans: u64, problems: &[String]) -> String {
    const SHOWN: usize = 3;
    if problems.is_empty() {
        return String::new();
    }
    let mut msg = format!(
        "{spans} span(s) rejected for invalid ids or values: {}",
        problems[..problems.len().min(SHOWN)].join("; ")
    );
    if problems.len() > SHOWN {
        msg.push_str(&format!("; and {} more", problems.len() - SHOWN));
    }
    msg
}
