//! Evaluations as OTLP, sent to `--results-otlp` (or the `--forward`
//! downstream): `gen_ai.evaluation.result` log records (docs/otlp.md, GenAI
//! semantic conventions), and with `--results-spans` a `toolscore.evaluation`
//! span in the evaluated trace.
//!
//! One record per metric, correlated with the evaluated trace through its
//! trace id and agent root span id, so backends show it next to the trace.
//! Records go through the exporter's bounded queue without waiting: when the
//! downstream is slow or down and the queue is full, they are counted
//! (`toolscore_results_dropped_total`) and dropped, never blocking scoring.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, ArrayValue, InstrumentationScope, KeyValue,
};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, ResourceSpans, ScopeSpans, Span};

use super::{Batch, Output, Sink};
use crate::assemble::SpanId;
use crate::evaluate::Evaluation;
use crate::serve::forward::{ForwardHandle, Signal};
use crate::serve::telemetry::ServeStats;

pub const EVENT_NAME: &str = "gen_ai.evaluation.result";
/// Explanations are capped like agentevals does, so records stay small.
pub const MAX_EXPLANATION: usize = 2048;
/// OTLP `SEVERITY_NUMBER_INFO` / `SEVERITY_NUMBER_WARN`.
const SEVERITY_INFO: i32 = 9;
const SEVERITY_WARN: i32 = 13;

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

fn string(key: &str, v: impl Into<String>) -> KeyValue {
    kv(key, any_value::Value::StringValue(v.into()))
}

fn strings(key: &str, v: impl IntoIterator<Item = String>) -> KeyValue {
    let values = v
        .into_iter()
        .map(|s| AnyValue {
            value: Some(any_value::Value::StringValue(s)),
        })
        .collect();
    kv(key, any_value::Value::ArrayValue(ArrayValue { values }))
}

fn cap(text: &str) -> String {
    if text.len() <= MAX_EXPLANATION {
        return text.to_string();
    }
    let mut end = MAX_EXPLANATION;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn names_at(details: Option<&serde_json::Value>, key: &str) -> Vec<String> {
    details
        .and_then(|d| d.get(key))
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| {
                    x.as_str()
                        .or_else(|| x.get("name").and_then(|n| n.as_str()))
                })
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The log records for one evaluation: one per metric.
///
/// `root_span` is the agent root span the records are parented to; `revision`
/// counts re-scores of the same trace (1 for the first evaluation).
pub fn evaluation_records(
    e: &Evaluation,
    root_span: Option<SpanId>,
    revision: u32,
    now_unix_nano: u64,
) -> Vec<LogRecord> {
    e.results
        .iter()
        .map(|r| {
            let mut attrs = vec![string("gen_ai.evaluation.name", r.metric.clone())];
            match (&r.outcome.error, r.outcome.score) {
                (Some(err), _) => {
                    // The evaluation itself failed: no score, no label (as agentevals).
                    attrs.push(string("error.type", "toolscore.metric_error"));
                    attrs.push(string("gen_ai.evaluation.explanation", cap(err)));
                }
                (None, score) => {
                    if let Some(s) = score {
                        attrs.push(kv(
                            "gen_ai.evaluation.score.value",
                            any_value::Value::DoubleValue(s),
                        ));
                    }
                    // A judge error or a dry run is not a failure of the agent.
                    attrs.push(string("gen_ai.evaluation.score.label", r.verdict().code()));
                    attrs.push(string(
                        "gen_ai.evaluation.explanation",
                        cap(&r.outcome.reason),
                    ));
                }
            }
            attrs.push(string("toolscore.case.id", e.case_id.clone()));
            attrs.push(kv(
                "toolscore.revision",
                any_value::Value::IntValue(i64::from(revision)),
            ));
            if let Some(t) = r.threshold {
                attrs.push(kv("toolscore.threshold", any_value::Value::DoubleValue(t)));
            }
            let details = r.outcome.details.as_ref();
            attrs.push(strings(
                "toolscore.tools.missing",
                names_at(details, "missing"),
            ));
            attrs.push(strings(
                "toolscore.tools.unexpected",
                names_at(details, "unexpected"),
            ));
            attrs.push(strings(
                "toolscore.tools.called",
                e.tools_called.iter().map(|c| c.name.clone()),
            ));
            if let Some(s) = &e.session {
                // A session case: the record carries the first trace's ids.
                attrs.push(string("session.id", s.id.clone()));
                attrs.push(strings(
                    "toolscore.session.trace_ids",
                    s.trace_ids.iter().map(ToString::to_string),
                ));
            }
            let failed = r.outcome.error.is_some() || !r.passed();
            LogRecord {
                time_unix_nano: now_unix_nano,
                observed_time_unix_nano: now_unix_nano,
                severity_number: if failed { SEVERITY_WARN } else { SEVERITY_INFO },
                severity_text: if failed { "WARN" } else { "INFO" }.to_string(),
                event_name: EVENT_NAME.to_string(),
                body: Some(AnyValue {
                    value: Some(any_value::Value::StringValue(format!(
                        "{} {} for case {}",
                        r.metric,
                        if failed { "failed" } else { "passed" },
                        e.case_id
                    ))),
                }),
                attributes: attrs,
                trace_id: e.trace_id.0.to_vec(),
                span_id: root_span.map(|s| s.0.to_vec()).unwrap_or_default(),
                ..Default::default()
            }
        })
        .collect()
}

/// Name of the span that carries an evaluation inside the evaluated trace.
pub const SPAN_NAME: &str = "toolscore.evaluation";

/// The evaluation as a `toolscore.evaluation` span in the evaluated trace,
/// child of its root span: the headline metric's `gen_ai.evaluation.*`
/// attributes on the span, and every metric's `records` as
/// `gen_ai.evaluation.result` events. Its span id is derived from the trace,
/// case and revision, so a re-sent span is the same span.
pub fn evaluation_span(
    e: &Evaluation,
    records: &[LogRecord],
    root_span: Option<SpanId>,
    revision: u32,
    now_unix_nano: u64,
) -> Span {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (e.trace_id.0, &e.case_id, revision, SPAN_NAME).hash(&mut h);
    let mut span_id = h.finish().to_be_bytes();
    if span_id == [0; 8] {
        span_id[7] = 1;
    }
    let mut attributes = records
        .first()
        .map(|r| {
            r.attributes
                .iter()
                .filter(|kv| kv.key.starts_with("gen_ai.evaluation.") || kv.key == "error.type")
                .cloned()
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    attributes.push(string("toolscore.case.id", e.case_id.clone()));
    attributes.push(kv(
        "toolscore.revision",
        any_value::Value::IntValue(i64::from(revision)),
    ));
    attributes.push(kv(
        "toolscore.pass",
        any_value::Value::BoolValue(e.passed()),
    ));
    attributes.push(string("toolscore.verdict", e.verdict().code()));
    if let Some(s) = &e.session {
        attributes.push(string("session.id", s.id.clone()));
    }
    Span {
        trace_id: e.trace_id.0.to_vec(),
        span_id: span_id.to_vec(),
        parent_span_id: root_span.map(|s| s.0.to_vec()).unwrap_or_default(),
        name: SPAN_NAME.to_string(),
        kind: span::SpanKind::Internal as i32,
        start_time_unix_nano: now_unix_nano,
        end_time_unix_nano: now_unix_nano,
        attributes,
        events: records
            .iter()
            .map(|r| span::Event {
                time_unix_nano: now_unix_nano,
                name: EVENT_NAME.to_string(),
                attributes: r.attributes.clone(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// Wraps evaluation spans in an export request from service `toolscore`.
pub fn spans_request(spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![string("service.name", "toolscore")],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "toolscore".to_string(),
                    version: env!("CARGO_PKG_VERSION").to_string(),
                    ..Default::default()
                }),
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// Wraps records in an export request from service `toolscore`.
pub fn logs_request(records: Vec<LogRecord>) -> ExportLogsServiceRequest {
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(Resource {
                attributes: vec![string("service.name", "toolscore")],
                ..Default::default()
            }),
            scope_logs: vec![ScopeLogs {
                scope: Some(InstrumentationScope {
                    name: "toolscore".to_string(),
                    version: env!("CARGO_PKG_VERSION").to_string(),
                    ..Default::default()
                }),
                log_records: records,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// Exports evaluations as OTLP logs (and spans) without ever waiting.
pub struct OtlpSink {
    exporter: ForwardHandle,
    /// Also a `toolscore.evaluation` span per evaluation.
    spans: bool,
    stats: std::sync::Arc<ServeStats>,
    /// Whether a drop was logged already (logged once per run of drops).
    dropping: std::sync::atomic::AtomicBool,
}

impl OtlpSink {
    pub fn new(exporter: ForwardHandle, spans: bool, stats: std::sync::Arc<ServeStats>) -> Self {
        OtlpSink {
            exporter,
            spans,
            stats,
            dropping: Default::default(),
        }
    }

    fn send(&self, signal: Signal, body: Vec<u8>, records: u64) {
        use std::sync::atomic::Ordering;
        match self.exporter.try_send(signal, body.into(), 0) {
            Ok(()) => {
                if self.dropping.swap(false, Ordering::Relaxed) {
                    tracing::info!("The results exporter takes records again.");
                }
            }
            Err(_) => {
                ServeStats::add(&self.stats.results_dropped, records);
                if !self.dropping.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        records,
                        "The results exporter's queue is full (downstream slow or down); \
                         evaluation records are dropped and counted in toolscore_results_dropped_total."
                    );
                }
            }
        }
    }
}

impl Sink for OtlpSink {
    fn reads_call_args(&self) -> bool {
        false
    }

    fn name(&self) -> &'static str {
        "otlp-results"
    }

    fn record(&self, batch: &Batch) -> std::io::Result<()> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut logs = Vec::new();
        let mut spans = Vec::new();
        for o in &batch.outputs {
            let Output::Evaluation {
                eval,
                revision,
                root,
                ..
            } = o
            else {
                continue;
            };
            let records = evaluation_records(eval, *root, *revision, now);
            if self.spans {
                spans.push(evaluation_span(eval, &records, *root, *revision, now));
            }
            logs.extend(records);
        }
        if !logs.is_empty() {
            let n = logs.len() as u64;
            self.send(
                Signal::Logs,
                prost::Message::encode_to_vec(&logs_request(logs)),
                n,
            );
        }
        if !spans.is_empty() {
            let n = spans.len() as u64;
            self.send(
                Signal::Traces,
                prost::Message::encode_to_vec(&spans_request(spans)),
                n,
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assemble::TraceId;
    use crate::evaluate::MetricResult;
    use crate::expect::Call;
    use crate::score::native::{NativeConfig, NativeMetric};
    use crate::score::{Metric, Outcome};

    fn attr<'a>(r: &'a LogRecord, key: &str) -> Option<&'a any_value::Value> {
        r.attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_ref()?.value.as_ref())
    }

    #[test]
    fn one_record_per_metric_with_semconv_attributes() {
        let m = NativeMetric::new(NativeConfig {
            threshold: 0.9,
            ..NativeConfig::default()
        });
        let outcome = m.score(
            &[Call::new("a", None)],
            &[Call::new("a", None), Call::new("b", None)],
        );
        let e = Evaluation {
            trace_id: TraceId([7; 16]),
            session: None,
            case_id: "c1".into(),
            case_index: 0,
            joined_by: "trace_id",
            tools_called: Vec::new().into(),
            expected: Vec::new().into(),
            warnings: Vec::new().into(),
            results: vec![
                MetricResult {
                    metric: "tool_correctness".into(),
                    threshold: Some(0.9),
                    outcome,
                },
                MetricResult {
                    metric: "x".into(),
                    threshold: None,
                    outcome: Outcome::error("ValueError: boom"),
                },
            ],
        };
        let recs = evaluation_records(&e, Some(SpanId([1; 8])), 2, 5);
        assert_eq!(recs.len(), 2);
        let r = &recs[0];
        assert_eq!(r.event_name, EVENT_NAME);
        assert_eq!(r.trace_id, vec![7; 16]);
        assert_eq!(r.span_id, vec![1; 8]);
        assert_eq!(
            attr(r, "gen_ai.evaluation.score.label"),
            Some(&any_value::Value::StringValue("fail".into()))
        );
        assert!(
            matches!(attr(r, "gen_ai.evaluation.score.value"), Some(any_value::Value::DoubleValue(v)) if (*v - 2.0 / 3.0).abs() < 1e-9)
        );
        assert_eq!(
            attr(r, "toolscore.revision"),
            Some(&any_value::Value::IntValue(2))
        );
        let missing = attr(r, "toolscore.tools.missing");
        assert!(matches!(missing, Some(any_value::Value::ArrayValue(a)) if a.values.len() == 1));
        let err = &recs[1];
        assert!(attr(err, "gen_ai.evaluation.score.label").is_none());
        assert!(attr(err, "error.type").is_some());
    }

    #[test]
    fn explanation_is_capped_on_a_char_boundary() {
        let long = "é".repeat(MAX_EXPLANATION);
        let c = cap(&long);
        assert!(c.len() <= MAX_EXPLANATION + '…'.len_utf8());
    }
}
