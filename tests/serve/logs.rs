//! Calls written as OTel log events: a model client instrumented the OTel
//! GenAI way records its spans and, apart, its messages as log records tied
//! to the spans. The real opentelemetry-otlp span and log exporters send
//! them to `serve` separately, over both transports, in either order; the
//! trace is scored with the calls its conversation holds.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, LoggerProvider as _};
use opentelemetry::trace::{Span as _, TraceContextExt, TraceFlags, Tracer, TracerProvider as _};
use opentelemetry::{Context, Key, KeyValue as Kv};
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde_json::{json, Value};

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue as OtlpValue, KeyValue as OtlpKv,
};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::resource::v1::Resource;

use super::forward::{start_capture, Capture};
use super::{of_type, post_to, start, Framing, TestServer, JSON, PROTOBUF};
use crate::util::poll_until;

fn map(pairs: Vec<(&'static str, AnyValue)>) -> AnyValue {
    AnyValue::Map(Box::new(
        pairs
            .into_iter()
            .map(|(k, v)| (Key::from_static_str(k), v))
            .collect::<HashMap<_, _>>(),
    ))
}

fn text(s: &str) -> AnyValue {
    AnyValue::from(s.to_string())
}

/// The model's request for `get_weather(city)`, as the OpenAI client
/// instrumentation writes a tool call in a message body.
fn tool_calls(city: &str) -> AnyValue {
    AnyValue::ListAny(Box::new(vec![map(vec![
        ("id", text("call_w1")),
        ("type", text("function")),
        (
            "function",
            map(vec![
                ("name", text("get_weather")),
                ("arguments", text(&json!({ "city": city }).to_string())),
            ]),
        ),
    ])]))
}

/// One model call: a `chat` span under `parent` and its message events as
/// log records naming it.
fn model_call(
    tracer: &opentelemetry_sdk::trace::SdkTracer,
    logger: &opentelemetry_sdk::logs::SdkLogger,
    parent: &Context,
    events: Vec<(&'static str, AnyValue)>,
) {
    let span = tracer
        .span_builder("chat some-model")
        .with_attributes([
            Kv::new("gen_ai.operation.name", "chat"),
            Kv::new("gen_ai.system", "openai"),
        ])
        .start_with_context(tracer, parent);
    let sc = span.span_context().clone();
    for (name, body) in events {
        let mut r = logger.create_log_record();
        r.set_event_name(name);
        r.set_trace_context(sc.trace_id(), sc.span_id(), Some(TraceFlags::SAMPLED));
        r.add_attribute("gen_ai.system", "openai");
        r.set_body(body);
        logger.emit(r);
    }
    let mut span = span;
    span.end();
}

/// A hand-written tool loop around an instrumented model client: the model
/// asks for `get_weather(Paris)`, the loop runs it (no span) and sends the
/// result back. Also one record without span context. Returns the trace id.
fn tool_loop(tp: &SdkTracerProvider, lp: &SdkLoggerProvider, conv: &str) -> String {
    let tracer = tp.tracer("e2e-loop");
    let logger = lp.logger("opentelemetry.instrumentation.openai_v2");
    let root = tracer
        .span_builder("agent loop")
        .with_attributes([Kv::new("test.run", conv.to_string())])
        .start(&tracer);
    let cx = Context::current_with_span(root);
    let ask = text("What is the weather in Paris?");
    model_call(
        &tracer,
        &logger,
        &cx,
        vec![
            ("gen_ai.user.message", map(vec![("content", ask.clone())])),
            (
                "gen_ai.choice",
                map(vec![
                    ("index", AnyValue::Int(0)),
                    ("finish_reason", text("tool_calls")),
                    (
                        "message",
                        map(vec![
                            ("role", text("assistant")),
                            ("tool_calls", tool_calls("Paris")),
                        ]),
                    ),
                ]),
            ),
        ],
    );
    model_call(
        &tracer,
        &logger,
        &cx,
        vec![
            ("gen_ai.user.message", map(vec![("content", ask)])),
            (
                "gen_ai.assistant.message",
                map(vec![("tool_calls", tool_calls("Paris"))]),
            ),
            (
                "gen_ai.tool.message",
                map(vec![("id", text("call_w1")), ("content", text("sunny"))]),
            ),
            (
                "gen_ai.choice",
                map(vec![
                    ("index", AnyValue::Int(0)),
                    ("finish_reason", text("stop")),
                    (
                        "message",
                        map(vec![
                            ("role", text("assistant")),
                            ("content", text("Sunny.")),
                        ]),
                    ),
                ]),
            ),
        ],
    );
    let mut spanless = logger.create_log_record();
    spanless.set_event_name("gen_ai.user.message");
    spanless.set_body(text("no span context"));
    logger.emit(spanless);
    let id = cx.span().span_context().trace_id().to_string();
    cx.span().end();
    id
}

fn fixture(dir: &Path, conv: &str) -> PathBuf {
    let p = dir.join("expected.jsonl");
    let case = json!({
        "id": conv,
        "match": {"test.run": conv},
        "expected_tools": [{"name": "get_weather", "args": {"city": "Paris"}}],
    });
    std::fs::write(&p, case.to_string()).unwrap();
    p
}

/// Records sent with their spans: 6; one more without span context.
const RECORDS: u64 = 6;

fn assert_scored(srv: &TestServer, trace: &str, conv: &str) {
    let rows = srv.rows();
    let evals = of_type(&rows, "evaluation");
    assert_eq!(evals.len(), 1, "{rows:#?}");
    let e = evals[0];
    assert_eq!((&e["trace_id"], &e["case"]), (&json!(trace), &json!(conv)));
    assert_eq!(e["spans"], 3, "{e}");
    assert_eq!(e["pass"], true, "{e}");
    let called: Vec<(&str, Value)> = e["tools_called"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["args"].clone()))
        .collect();
    assert_eq!(called, [("get_weather", json!({"city": "Paris"}))], "{e}");
    let s = srv.stats.snapshot();
    assert_eq!(
        (
            s.log_records,
            s.log_records_without_span,
            s.log_records_unjoined,
            s.log_records_late
        ),
        (RECORDS, 1, 0, 0)
    );
    let (status, text) = super::get(srv.admin.unwrap(), "/metrics");
    assert_eq!(status, 200);
    let m = super::parse_prometheus(&text);
    assert_eq!(m["toolscore_log_records_received_total"], RECORDS as f64);
    assert_eq!(m["toolscore_log_records_without_span_total"], 1.0);
    assert_eq!(m["toolscore_log_records_late_total"], 0.0);
}

/// The decision wait: long enough that the second signal's flush, right
/// after the first's, always lands before the trace is scored.
const WAIT: Duration = Duration::from_secs(2);

#[test]
fn otlp_http_spans_and_logs_sent_apart_are_joined() {
    use opentelemetry_otlp::WithExportConfig;
    let conv = "conv-logs-http";
    let srv = start("logs-http", |c, dir| {
        c.expected = Some(fixture(dir, conv));
        c.decision_wait = WAIT;
    });
    let spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(format!("http://{}/v1/traces", srv.http))
        .build()
        .unwrap();
    let logs = opentelemetry_otlp::LogExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(format!("http://{}/v1/logs", srv.http))
        .build()
        .unwrap();
    let tp = SdkTracerProvider::builder()
        .with_batch_exporter(spans)
        .build();
    let lp = SdkLoggerProvider::builder()
        .with_batch_exporter(logs)
        .build();
    let trace = tool_loop(&tp, &lp, conv);
    // The log records first: they wait in the buffer for their spans.
    lp.force_flush().unwrap();
    srv.wait_for("the log records", |s| s.log_records >= RECORDS);
    tp.force_flush().unwrap();
    srv.wait_for("the trace to be scored", |s| s.evaluations >= 1);
    lp.shutdown().unwrap();
    tp.shutdown().unwrap();
    assert_scored(&srv, &trace, conv);
    srv.stop();
}

#[test]
fn otlp_grpc_spans_and_logs_sent_apart_are_joined() {
    use opentelemetry_otlp::WithExportConfig;
    let conv = "conv-logs-grpc";
    let srv = start("logs-grpc", |c, dir| {
        c.expected = Some(fixture(dir, conv));
        c.decision_wait = WAIT;
    });
    let (tp, lp) = {
        // tonic's channels run on the server's runtime.
        let _guard = srv.rt.enter();
        let spans = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(format!("http://{}", srv.grpc))
            .build()
            .unwrap();
        let logs = opentelemetry_otlp::LogExporter::builder()
            .with_tonic()
            .with_endpoint(format!("http://{}", srv.grpc))
            .build()
            .unwrap();
        (
            SdkTracerProvider::builder()
                .with_batch_exporter(spans)
                .build(),
            SdkLoggerProvider::builder()
                .with_batch_exporter(logs)
                .build(),
        )
    };
    let trace = tool_loop(&tp, &lp, conv);
    // The spans first: the records join the trace while it waits.
    tp.force_flush().unwrap();
    srv.wait_for("the spans", |s| s.spans >= 3);
    lp.force_flush().unwrap();
    srv.wait_for("the trace to be scored", |s| s.evaluations >= 1);
    lp.shutdown().unwrap();
    tp.shutdown().unwrap();
    assert_scored(&srv, &trace, conv);
    srv.stop();
}

/// A hand-made logs request: a record of span `t` of trace `t`, a record
/// without span context, and, when `bad`, a record whose trace id is 5
/// bytes long (rejected).
fn logs_request(t: u8, bad: bool) -> ExportLogsServiceRequest {
    let record = |trace_id: Vec<u8>, span_id: Vec<u8>, body: &str| LogRecord {
        time_unix_nano: 1_700_000_000_000_000_000 + u64::from(t),
        severity_number: 9,
        severity_text: "INFO".into(),
        event_name: "gen_ai.user.message".into(),
        body: Some(OtlpValue {
            value: Some(any_value::Value::StringValue(body.into())),
        }),
        trace_id,
        span_id,
        ..Default::default()
    };
    let mut records = vec![
        record(vec![t; 16], vec![t; 8], "with span"),
        record(Vec::new(), Vec::new(), "without span"),
    ];
    if bad {
        records.push(record(vec![t; 5], vec![t; 8], "bad ids"));
    }
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(Resource {
                attributes: vec![OtlpKv {
                    key: "service.name".into(),
                    value: Some(OtlpValue {
                        value: Some(any_value::Value::StringValue(format!("svc-{t}"))),
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            scope_logs: vec![ScopeLogs {
                log_records: records,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// Every log record of `reqs`, protobuf-encoded, sorted.
fn record_bytes<'a>(reqs: impl Iterator<Item = &'a ExportLogsServiceRequest>) -> Vec<Vec<u8>> {
    use prost::Message;
    let mut out: Vec<Vec<u8>> = reqs
        .flat_map(|r| &r.resource_logs)
        .flat_map(|rl| &rl.scope_logs)
        .flat_map(|sl| &sl.log_records)
        .map(|r| r.encode_to_vec())
        .collect();
    out.sort();
    out
}

/// The OpenTelemetry SDK's span exporter (OTLP/HTTP) and log exporter
/// (OTLP/gRPC when `grpc`, else OTLP/HTTP), both pointed at `srv`.
fn sdk_exporters(srv: &TestServer, grpc: bool) -> (SdkTracerProvider, SdkLoggerProvider) {
    use opentelemetry_otlp::WithExportConfig;
    let _guard = srv.rt.enter();
    let logs = if grpc {
        opentelemetry_otlp::LogExporter::builder()
            .with_tonic()
            .with_endpoint(format!("http://{}", srv.grpc))
            .build()
    } else {
        opentelemetry_otlp::LogExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(format!("http://{}/v1/logs", srv.http))
            .build()
    };
    let spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(format!("http://{}/v1/traces", srv.http))
        .build()
        .unwrap();
    (
        SdkTracerProvider::builder()
            .with_batch_exporter(spans)
            .build(),
        SdkLoggerProvider::builder()
            .with_batch_exporter(logs.unwrap())
            .build(),
    )
}

/// The event names of the log records `capture` received, sorted: those the
/// SDK sent (`sent_by_sdk`) or the hand-made ones.
fn event_names(capture: &Capture, sent_by_sdk: bool) -> Vec<String> {
    let mut names: Vec<String> = capture
        .1
        .lock()
        .unwrap()
        .iter()
        .flat_map(|r| &r.resource_logs)
        .filter(|rl| {
            let svc = format!("{:?}", rl.resource);
            sent_by_sdk != svc.contains("svc-")
        })
        .flat_map(|rl| &rl.scope_logs)
        .flat_map(|sl| &sl.log_records)
        .map(|r| r.event_name.clone())
        .collect();
    names.sort();
    names
}

/// Processor mode forwards log requests as a processor must (issue 37):
/// hand-made requests in protobuf and OTLP/JSON, and the real OTLP log
/// exporters' over HTTP and gRPC, reach a real downstream receiver with
/// every record they brought (those without span context too; the one
/// rejected for bad ids left out), counted on `/metrics` and in the
/// summary; nothing dropped.
#[test]
fn forward_sends_log_records_downstream() {
    use prost::Message;
    let downstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = downstream.local_addr().unwrap();
    let conv = "conv-logs-forward";
    let srv = start("logs-forward", |c, dir| {
        c.expected = Some(fixture(dir, conv));
        c.forward = Some(format!("grpc://{down}"));
        c.results_otlp = Some("off".into());
    });
    let capture = Capture::default();
    let stop = toolscore::serve::CancellationToken::new();
    let _task = start_capture(&srv.rt, downstream, capture.clone(), stop.clone());

    let (plain, with_bad, json) = (
        logs_request(1, false),
        logs_request(2, true),
        logs_request(3, false),
    );
    let r = post_to(
        srv.http,
        "/v1/logs",
        &[PROTOBUF],
        &plain.encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 200);
    let r = post_to(
        srv.http,
        "/v1/logs",
        &[PROTOBUF],
        &with_bad.encode_to_vec(),
        Framing::Chunked,
    );
    assert_eq!(r.status, 200, "a partial success");
    let body = serde_json::to_vec(&json).unwrap();
    let r = post_to(srv.http, "/v1/logs", &[JSON], &body, Framing::Length);
    assert_eq!(r.status, 200);
    let mut kept = logs_request(2, false);
    kept.resource_logs[0].scope_logs[0].log_records.truncate(2);
    let hand_made = record_bytes([&plain, &kept, &json].into_iter());
    assert_eq!(hand_made.len(), 6);

    // The real exporters, over OTLP/HTTP and OTLP/gRPC.
    for grpc in [false, true] {
        let (tp, lp) = sdk_exporters(&srv, grpc);
        tool_loop(&tp, &lp, conv);
        lp.shutdown().unwrap();
        tp.shutdown().unwrap();
    }
    // Per loop: 6 records that name a span, one that does not; 3 spans.
    let want = hand_made.len() as f64 + 2.0 * (RECORDS as f64 + 1.0);
    let metrics = || super::parse_prometheus(&super::get(srv.admin.unwrap(), "/metrics").1);
    poll_until(
        "every record counted as forwarded",
        Duration::from_secs(30),
        || {
            let m = metrics();
            let n = (
                m["toolscore_log_records_forwarded_total"],
                m["toolscore_spans_forwarded_total"],
            );
            if n == (want, 6.0) {
                Ok(())
            } else {
                Err(n)
            }
        },
    );
    let got = record_bytes(capture.1.lock().unwrap().iter());
    assert_eq!(got.len(), want as usize, "every record once");
    let missing: Vec<_> = hand_made.iter().filter(|r| !got.contains(r)).collect();
    assert!(missing.is_empty(), "hand-made records arrive byte for byte");
    let mut each_loop = vec![
        "gen_ai.choice",
        "gen_ai.choice",
        "gen_ai.user.message",
        "gen_ai.user.message",
        "gen_ai.user.message",
        "gen_ai.assistant.message",
        "gen_ai.tool.message",
    ];
    each_loop.extend(each_loop.clone());
    each_loop.sort();
    assert_eq!(event_names(&capture, true), each_loop);
    let m = metrics();
    assert_eq!(m["toolscore_log_records_forward_dropped_total"], 0.0);
    assert_eq!(m["toolscore_spans_forward_dropped_total"], 0.0);
    let (summary, _) = srv.stop();
    assert_eq!(summary.stats.log_records_forwarded, want as u64);
    stop.cancel();
}

/// An OTLP/HTTP downstream given as a `/v1/traces` URL (another serve, a
/// real receiver) gets the log requests at its `/v1/logs`.
#[test]
fn forward_over_http_sends_logs_to_v1_logs() {
    use prost::Message;
    let down = start("logs-forward-down", |_, _| {});
    let up = start("logs-forward-up", |c, _| {
        c.forward = Some(format!("http://{}/v1/traces", down.http));
    });
    let r = post_to(
        up.http,
        "/v1/logs",
        &[PROTOBUF],
        &logs_request(4, false).encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 200);
    down.wait_for("the downstream to read the records", |s| {
        (s.log_records, s.log_records_without_span) == (1, 1)
    });
    up.wait_for("the records counted as forwarded", |s| {
        s.log_records_forwarded == 2
    });
    up.stop();
    down.stop();
}
