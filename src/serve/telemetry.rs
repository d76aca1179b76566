//! The live service's counters: one set, read by the run's summary, the
//! status log and `/metrics` (OpenMetrics text, encoded by prometheus-client).
//!
//! Counters are atomics so the hot path never takes a lock; per-metric
//! evaluation counts and score histograms sit behind one mutex that is taken
//! once per evaluation, not per span. Labels are low-cardinality by design:
//! only the metric name (a small, configured set) and a fixed outcome label.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use serde::Serialize;

use crate::evaluate::{MetricResult, Verdict};

/// Upper bounds of the score histogram buckets (scores are in 0..=1).
pub const SCORE_BUCKETS: [f64; 10] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];

#[derive(Debug, Default, Clone)]
struct PerMetric {
    passed: u64,
    failed: u64,
    errors: u64,
    /// `--judge-dry-run`: neither a pass nor a failure.
    not_judged: u64,
    /// Cumulative counts per bucket of `SCORE_BUCKETS`.
    buckets: [u64; SCORE_BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// Every counter of a running server (read them with [`ServeStats::snapshot`]).
#[derive(Debug, Default)]
pub struct ServeStats {
    /// Requests accepted (wholly or partly).
    pub requests: AtomicU64,
    pub spans_received: AtomicU64,
    /// Spans rejected for bad ids (partial success).
    pub spans_rejected: AtomicU64,
    /// Re-sent spans dropped as duplicates.
    pub duplicate_spans: AtomicU64,
    /// Spans the downstream took (`--forward`).
    pub spans_forwarded: AtomicU64,
    /// Spans accepted and never delivered downstream: refused for good by
    /// it, or still queued at the shutdown deadline.
    pub spans_forward_dropped: AtomicU64,
    /// Log records the downstream took (`--forward`).
    pub log_records_forwarded: AtomicU64,
    /// Log records accepted and never delivered downstream (as for spans),
    /// or not re-encodable for it (OTLP/JSON that only our reader reads).
    pub log_records_forward_dropped: AtomicU64,
    /// Log records taken as events of their spans (`POST /v1/logs`, LogsService).
    pub log_records: AtomicU64,
    /// Log records without span context (not kept).
    pub log_records_without_span: AtomicU64,
    /// Log records of traces already scored (not kept).
    pub log_records_late: AtomicU64,
    /// Log records whose span never came (set by the completion thread).
    pub log_records_unjoined: AtomicU64,
    pub requests_refused: AtomicU64,
    pub forward_retries: AtomicU64,
    pub traces_scored: AtomicU64,
    pub traces_rescored: AtomicU64,
    pub evaluations: AtomicU64,
    pub unmatched_traces: AtomicU64,
    pub sessions_scored: AtomicU64,
    /// Evaluation records (logs or spans) that could not be queued for
    /// export: the results downstream is slow or down. Never blocks scoring.
    pub results_dropped: AtomicU64,
    /// Batches an output (sink) failed to take.
    pub sink_errors: AtomicU64,
    /// 1 while the results file cannot be written (new data is refused).
    pub output_failing: AtomicU64,
    /// Result rows that could not be written before the run ended.
    pub results_lost: AtomicU64,
    /// HTTP connections closed at once because the port had its maximum open.
    pub connections_refused: AtomicU64,
    /// Requests refused for a missing or wrong bearer token (all ports).
    pub requests_unauthenticated: AtomicU64,
    /// TLS connections that failed or did not finish their handshake in time.
    pub tls_handshake_failures: AtomicU64,
    /// HTTP connections open now (OTLP/HTTP and admin).
    pub connections_open: AtomicU64,
    /// Bytes of request bodies held now (as received and inflated).
    pub inflight_bytes: AtomicU64,
    pub inflight_bytes_capacity: AtomicU64,
    pub sessions_waiting: AtomicU64,
    pub buffer_spans: AtomicU64,
    pub buffer_traces: AtomicU64,
    pub buffer_spans_capacity: AtomicU64,
    pub buffer_traces_capacity: AtomicU64,
    pub forward_queue: AtomicU64,
    pub forward_queue_capacity: AtomicU64,
    pub forward_queue_bytes: AtomicU64,
    pub forward_queue_bytes_capacity: AtomicU64,
    per_metric: Mutex<BTreeMap<String, PerMetric>>,
}

/// A copy of the counters at one moment.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StatsSnapshot {
    /// Requests accepted (wholly or partly).
    pub requests: u64,
    /// Spans accepted into the buffer.
    pub spans: u64,
    /// Spans rejected for bad ids (partial success).
    pub invalid_spans: u64,
    /// Re-sent spans dropped as duplicates.
    pub duplicate_spans: u64,
    /// Requests refused because the buffer or a queue was full, or closing.
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
    /// Evaluation records that could not be queued for export.
    pub results_dropped: u64,
    /// Batches an output failed to take.
    pub sink_errors: u64,
    /// Result rows that could not be written before the run ended.
    pub results_lost: u64,
    /// Log records taken as events of their spans.
    #[serde(skip_serializing_if = "is_zero")]
    pub log_records: u64,
    /// Log records not kept: without span context, or late (their trace
    /// already scored).
    #[serde(skip_serializing_if = "is_zero")]
    pub log_records_without_span: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub log_records_late: u64,
    /// Log records whose span never came.
    #[serde(skip_serializing_if = "is_zero")]
    pub log_records_unjoined: u64,
    /// `--forward`: spans and log records the downstream took, and those
    /// accepted and never delivered.
    #[serde(skip_serializing_if = "is_zero")]
    pub spans_forwarded: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub spans_forward_dropped: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub log_records_forwarded: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub log_records_forward_dropped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ServeStats {
    pub fn snapshot(&self) -> StatsSnapshot {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        StatsSnapshot {
            requests: g(&self.requests),
            spans: g(&self.spans_received),
            invalid_spans: g(&self.spans_rejected),
            duplicate_spans: g(&self.duplicate_spans),
            refused_requests: g(&self.requests_refused),
            traces_scored: g(&self.traces_scored),
            rescored: g(&self.traces_rescored),
            evaluations: g(&self.evaluations),
            unmatched_traces: g(&self.unmatched_traces),
            buffered_spans: g(&self.buffer_spans),
            buffered_traces: g(&self.buffer_traces),
            results_dropped: g(&self.results_dropped),
            sink_errors: g(&self.sink_errors),
            results_lost: g(&self.results_lost),
            log_records: g(&self.log_records),
            log_records_without_span: g(&self.log_records_without_span),
            log_records_late: g(&self.log_records_late),
            log_records_unjoined: g(&self.log_records_unjoined),
            spans_forwarded: g(&self.spans_forwarded),
            spans_forward_dropped: g(&self.spans_forward_dropped),
            log_records_forwarded: g(&self.log_records_forwarded),
            log_records_forward_dropped: g(&self.log_records_forward_dropped),
        }
    }

    /// Mirrors the buffer's fill into its gauges.
    pub(crate) fn set_buffered(&self, u: &super::buffer::Usage) {
        Self::set(&self.buffer_spans, (u.spans + u.scoring_spans) as u64);
        Self::set(&self.buffer_traces, u.traces as u64);
        Self::set(&self.log_records_unjoined, u.unjoined_log_records as u64);
    }

    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn set(gauge: &AtomicU64, v: u64) {
        gauge.store(v, Ordering::Relaxed);
    }

    /// Counts one metric's result by the core's verdict: a metric that
    /// errs (a judge error too) counts as an error, a dry run's as not
    /// judged; only scored results go into the histogram.
    pub fn record(&self, result: &MetricResult) {
        let mut map = match self.per_metric.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        let m = map.entry(result.metric.clone()).or_default();
        let error = result.outcome.error.is_some();
        let score = match result.verdict() {
            Verdict::Pass => {
                m.passed += 1;
                result.outcome.score
            }
            Verdict::Fail if !error => {
                m.failed += 1;
                result.outcome.score
            }
            Verdict::Fail | Verdict::JudgeError => {
                m.errors += 1;
                None
            }
            Verdict::NotJudged => {
                m.not_judged += 1;
                None
            }
        };
        if let Some(s) = score.filter(|s| s.is_finite()) {
            m.count += 1;
            m.sum += s;
            for (i, le) in SCORE_BUCKETS.iter().enumerate() {
                if s <= *le {
                    m.buckets[i] += 1;
                }
            }
        }
    }

    /// The OpenMetrics text exposition of every counter (prometheus-client
    /// encodes it; the numbers come from this one counter system).
    pub fn render(&self) -> String {
        let scalars: Vec<Scalar> = SCALARS
            .iter()
            .map(|&(name, counter, help, field)| Scalar {
                // The encoder appends `_total` to a counter's name.
                name: name.strip_suffix("_total").unwrap_or(name),
                help,
                counter,
                value: field(self).load(Ordering::Relaxed),
            })
            .collect();

        let per_metric = match self.per_metric.lock() {
            Ok(m) => m.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Snapshot {
            scalars,
            per_metric,
        }));
        let mut out = String::with_capacity(4096);
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }
}

/// Every counter and gauge of [`ServeStats::render`]: its name, whether it
/// is a counter (else a gauge), its help text and its field.
type ScalarSpec = (
    &'static str,
    bool,
    &'static str,
    fn(&ServeStats) -> &AtomicU64,
);

const SCALARS: &[ScalarSpec] = &[
    (
        "toolscore_spans_received_total",
        true,
        "Spans accepted from OTLP requests.",
        |s| &s.spans_received,
    ),
    (
        "toolscore_spans_rejected_total",
        true,
        "Spans rejected as invalid (partial success).",
        |s| &s.spans_rejected,
    ),
    (
        "toolscore_duplicate_spans_total",
        true,
        "Re-sent spans dropped as duplicates.",
        |s| &s.duplicate_spans,
    ),
    (
        "toolscore_log_records_received_total",
        true,
        "Log records taken as events of the spans they name (POST /v1/logs, LogsService).",
        |s| &s.log_records,
    ),
    (
        "toolscore_log_records_without_span_total",
        true,
        "Log records without span context, dropped.",
        |s| &s.log_records_without_span,
    ),
    (
        "toolscore_log_records_late_total",
        true,
        "Log records of traces already scored, dropped.",
        |s| &s.log_records_late,
    ),
    (
        "toolscore_log_records_unjoined_total",
        true,
        "Log records whose span never came, counted when their trace was scored.",
        |s| &s.log_records_unjoined,
    ),
    (
        "toolscore_results_dropped_total",
        true,
        "Evaluation records not exported because the results queue was full.",
        |s| &s.results_dropped,
    ),
    (
        "toolscore_sink_errors_total",
        true,
        "Result batches an output (file, stdout, exporter) failed to take.",
        |s| &s.sink_errors,
    ),
    (
        "toolscore_output_failing",
        false,
        "1 while the results file cannot be written; new data is refused (503 / UNAVAILABLE).",
        |s| &s.output_failing,
    ),
    (
        "toolscore_results_lost_total",
        true,
        "Result rows that could not be written to the results file before the run ended.",
        |s| &s.results_lost,
    ),
    (
        "toolscore_connections_refused_total",
        true,
        "HTTP connections closed at once because the port had its maximum open.",
        |s| &s.connections_refused,
    ),
    (
        "toolscore_requests_unauthenticated_total",
        true,
        "Requests refused (401 / UNAUTHENTICATED) for a missing or wrong bearer token.",
        |s| &s.requests_unauthenticated,
    ),
    (
        "toolscore_tls_handshake_failures_total",
        true,
        "TLS connections closed because the handshake failed or did not finish within --header-timeout.",
        |s| &s.tls_handshake_failures,
    ),
    (
        "toolscore_connections_open",
        false,
        "HTTP connections open now.",
        |s| &s.connections_open,
    ),
    (
        "toolscore_inflight_bytes",
        false,
        "Bytes of request bodies held now, as received and inflated.",
        |s| &s.inflight_bytes,
    ),
    (
        "toolscore_inflight_bytes_capacity",
        false,
        "Most bytes of request bodies held at once (--max-inflight).",
        |s| &s.inflight_bytes_capacity,
    ),
    (
        "toolscore_spans_forwarded_total",
        true,
        "Spans delivered downstream (--forward).",
        |s| &s.spans_forwarded,
    ),
    (
        "toolscore_spans_forward_dropped_total",
        true,
        "Spans accepted and never delivered downstream: refused for good, or queued at the shutdown deadline.",
        |s| &s.spans_forward_dropped,
    ),
    (
        "toolscore_log_records_forwarded_total",
        true,
        "Log records delivered downstream (--forward).",
        |s| &s.log_records_forwarded,
    ),
    (
        "toolscore_log_records_forward_dropped_total",
        true,
        "Log records accepted and never delivered downstream: refused for good, queued at the shutdown deadline, or OTLP/JSON that could not be re-encoded.",
        |s| &s.log_records_forward_dropped,
    ),
    (
        "toolscore_requests_refused_total",
        true,
        "Requests answered 503/UNAVAILABLE because a buffer or queue was full.",
        |s| &s.requests_refused,
    ),
    (
        "toolscore_forward_retries_total",
        true,
        "Downstream export attempts that were retried.",
        |s| &s.forward_retries,
    ),
    (
        "toolscore_traces_scored_total",
        true,
        "Trace evaluations produced (re-scores included).",
        |s| &s.traces_scored,
    ),
    (
        "toolscore_traces_rescored_total",
        true,
        "Re-scores caused by late spans.",
        |s| &s.traces_rescored,
    ),
    (
        "toolscore_sessions_scored_total",
        true,
        "Session evaluations produced (re-scores after later turns included).",
        |s| &s.sessions_scored,
    ),
    (
        "toolscore_sessions_waiting",
        false,
        "Sessions with traces not yet scored, waiting for --session-wait.",
        |s| &s.sessions_waiting,
    ),
    (
        "toolscore_buffer_spans",
        false,
        "Spans buffered awaiting trace completion.",
        |s| &s.buffer_spans,
    ),
    (
        "toolscore_buffer_spans_capacity",
        false,
        "Most spans the buffer holds.",
        |s| &s.buffer_spans_capacity,
    ),
    (
        "toolscore_buffer_traces",
        false,
        "Traces buffered awaiting completion.",
        |s| &s.buffer_traces,
    ),
    (
        "toolscore_buffer_traces_capacity",
        false,
        "Most traces the buffer holds.",
        |s| &s.buffer_traces_capacity,
    ),
    (
        "toolscore_forward_queue",
        false,
        "Requests queued for the downstream.",
        |s| &s.forward_queue,
    ),
    (
        "toolscore_forward_queue_capacity",
        false,
        "Most requests the forward queue holds.",
        |s| &s.forward_queue_capacity,
    ),
    (
        "toolscore_forward_queue_bytes",
        false,
        "Bytes queued for the downstream or being sent.",
        |s| &s.forward_queue_bytes,
    ),
    (
        "toolscore_forward_queue_bytes_capacity",
        false,
        "Most bytes the forward queue holds.",
        |s| &s.forward_queue_bytes_capacity,
    ),
];

/// One counter or gauge at scrape time.
#[derive(Debug)]
struct Scalar {
    name: &'static str,
    help: &'static str,
    counter: bool,
    value: u64,
}

/// The counters as read at one scrape, encoded by prometheus-client.
#[derive(Debug)]
struct Snapshot {
    scalars: Vec<Scalar>,
    per_metric: BTreeMap<String, PerMetric>,
}

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for s in &self.scalars {
            if s.counter {
                let c = ConstCounter::new(s.value);
                c.encode(encoder.encode_descriptor(s.name, s.help, None, c.metric_type())?)?;
            } else {
                let g = ConstGauge::new(s.value as i64);
                g.encode(encoder.encode_descriptor(s.name, s.help, None, g.metric_type())?)?;
            }
        }
        let mut verdicts = encoder.encode_descriptor(
            "toolscore_evaluations",
            "Metric verdicts by outcome.",
            None,
            MetricType::Counter,
        )?;
        for (name, m) in &self.per_metric {
            let outcomes = [
                ("pass", m.passed),
                ("fail", m.failed),
                ("error", m.errors),
                ("not_judged", m.not_judged),
            ];
            for (outcome, v) in outcomes {
                let labels = [("metric", name.as_str()), ("outcome", outcome)];
                ConstCounter::new(v).encode(verdicts.encode_family(&labels)?)?;
            }
        }
        let mut scores = encoder.encode_descriptor(
            "toolscore_score",
            "Scores by metric.",
            None,
            MetricType::Histogram,
        )?;
        for (name, m) in &self.per_metric {
            // Ours are cumulative; the encoder takes per-bucket counts.
            let mut buckets: Vec<(f64, u64)> = Vec::with_capacity(SCORE_BUCKETS.len() + 1);
            let mut below = 0;
            for (le, cumulative) in SCORE_BUCKETS.iter().zip(m.buckets) {
                buckets.push((*le, cumulative - below));
                below = cumulative;
            }
            buckets.push((f64::INFINITY, m.count.saturating_sub(below)));
            let labels = [("metric", name.as_str())];
            scores
                .encode_family(&labels)?
                .encode_histogram::<NoLabelSet>(m.sum, m.count, &buckets, None)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::score::{Outcome, Unjudged};

    #[test]
    fn renders_counters_and_histograms() {
        let m = ServeStats::default();
        ServeStats::add(&m.spans_received, 42);
        let result = |outcome| MetricResult {
            metric: "tool_correctness".into(),
            threshold: Some(0.5),
            outcome,
        };
        m.record(&result(Outcome::scored(0.95, Some(true), "")));
        m.record(&result(Outcome::scored(0.3, Some(false), "")));
        m.record(&result(Outcome::error("boom")));
        m.record(&result(Outcome::unjudged(Unjudged::NotJudged, "dry run")));
        let text = m.render();
        let samples = parse(&text);
        let get = |name: &str, labels: &[(&str, &str)]| {
            let mut l: Vec<(String, String)> = labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            l.sort();
            samples.get(&(name.to_string(), l)).copied()
        };
        let tc = ("metric", "tool_correctness");
        assert_eq!(
            get("toolscore_spans_received_total", &[]),
            Some(42.0),
            "{text}"
        );
        assert_eq!(
            get("toolscore_evaluations_total", &[tc, ("outcome", "pass")]),
            Some(1.0)
        );
        for outcome in ["fail", "error", "not_judged"] {
            assert_eq!(
                get("toolscore_evaluations_total", &[tc, ("outcome", outcome)]),
                Some(1.0),
                "{outcome}"
            );
        }
        assert_eq!(
            get("toolscore_score_bucket", &[tc, ("le", "0.3")]),
            Some(1.0)
        );
        assert_eq!(
            get("toolscore_score_bucket", &[tc, ("le", "1.0")]),
            Some(2.0)
        );
        assert_eq!(
            get("toolscore_score_bucket", &[tc, ("le", "+Inf")]),
            Some(2.0)
        );
        assert_eq!(get("toolscore_score_count", &[tc]), Some(2.0));
        assert_eq!(get("toolscore_score_sum", &[tc]), Some(1.25));
        assert!(
            text.ends_with("# EOF\n"),
            "an OpenMetrics exposition ends with EOF"
        );
    }

    type Labels = Vec<(String, String)>;

    /// Sample lines `name{k="v",...} value` by (name, sorted labels); every
    /// line is a comment or such a sample, with a numeric value.
    fn parse(text: &str) -> std::collections::HashMap<(String, Labels), f64> {
        let mut out = std::collections::HashMap::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (series, value) = line.rsplit_once(' ').expect(line);
            let value: f64 = value.parse().expect(line);
            let (name, labels) = match series.split_once('{') {
                Some((n, rest)) => (n, rest.strip_suffix('}').expect(line)),
                None => (series, ""),
            };
            let mut l: Labels = labels
                .split(',')
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (k, v) = p.split_once('=').expect(line);
                    (k.to_string(), v.trim_matches('"').to_string())
                })
                .collect();
            l.sort();
            out.insert((name.to_string(), l), value);
        }
        out
    }
}
