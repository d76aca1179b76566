//! Processor mode (issue 6): every span forwarded downstream unchanged and
//! in order, results sent along as logs and spans, and the forward queue
//! bounded through a downstream outage.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{
    LogsService, LogsServiceServer,
};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use toolscore::serve::CancellationToken;

use super::{get, gzip, parse_prometheus, post, start, trace_id, weather, Framing, JSON, PROTOBUF};
use crate::util::poll_until;

/// A plain OTLP/gRPC receiver standing in for the downstream backend: it
/// keeps every trace and log request it gets.
#[derive(Clone, Default)]
pub(super) struct Capture(
    pub(super) Arc<std::sync::Mutex<Vec<ExportTraceServiceRequest>>>,
    pub(super) Arc<std::sync::Mutex<Vec<ExportLogsServiceRequest>>>,
);

#[tonic::async_trait]
impl LogsService for Capture {
    async fn export(
        &self,
        request: tonic::Request<ExportLogsServiceRequest>,
    ) -> Result<tonic::Response<ExportLogsServiceResponse>, tonic::Status> {
        self.1.lock().unwrap().push(request.into_inner());
        Ok(tonic::Response::new(ExportLogsServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl TraceService for Capture {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.0.lock().unwrap().push(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

impl Capture {
    /// Every received span but toolscore's own evaluation spans,
    /// protobuf-encoded, sorted.
    fn span_bytes(&self) -> Vec<Vec<u8>> {
        let mut reqs = self.0.lock().unwrap().clone();
        for r in &mut reqs {
            for rs in &mut r.resource_spans {
                for ss in &mut rs.scope_spans {
                    ss.spans.retain(|s| s.name != "toolscore.evaluation");
                }
            }
        }
        sorted_span_bytes(reqs.iter())
    }

    /// toolscore's `toolscore.evaluation` spans.
    fn evaluation_spans(&self) -> Vec<Span> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .flat_map(|r| &r.resource_spans)
            .flat_map(|rs| &rs.scope_spans)
            .flat_map(|ss| &ss.spans)
            .filter(|s| s.name == "toolscore.evaluation")
            .cloned()
            .collect()
    }
}

fn sorted_span_bytes<'a>(
    reqs: impl Iterator<Item = &'a ExportTraceServiceRequest>,
) -> Vec<Vec<u8>> {
    let mut out = span_bytes_in_order(reqs);
    out.sort();
    out
}

/// Starts the capture receiver on `listener` in `rt`; cancel `stop` to end it.
pub(super) fn start_capture(
    rt: &tokio::runtime::Runtime,
    listener: std::net::TcpListener,
    capture: Capture,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    listener.set_nonblocking(true).unwrap();
    rt.spawn(async move {
        let l = tokio::net::TcpListener::from_std(listener).unwrap();
        let incoming = tonic::transport::server::TcpIncoming::from(l);
        let _ = tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(capture.clone()))
            .add_service(LogsServiceServer::new(capture))
            .serve_with_incoming_shutdown(incoming, stop.cancelled_owned())
            .await;
    })
}

/// The six evaluation results arrived downstream as
/// `gen_ai.evaluation.result` log records and as `toolscore.evaluation`
/// spans, each in its evaluated trace.
fn evaluations_arrived_downstream(capture: &Capture) {
    // Evaluation results arrive downstream as gen_ai.evaluation.result logs,
    // parented to each evaluated trace's root span.
    let records = poll_until("six evaluation logs", Duration::from_secs(15), || {
        let recs: Vec<_> = capture
            .1
            .lock()
            .unwrap()
            .iter()
            .flat_map(|r| &r.resource_logs)
            .flat_map(|rl| &rl.scope_logs)
            .flat_map(|sl| sl.log_records.clone())
            .collect();
        (recs.len() >= 6).then_some(recs)
    });
    assert_eq!(records.len(), 6);
    let mut trace_ids: Vec<Vec<u8>> = records.iter().map(|r| r.trace_id.clone()).collect();
    trace_ids.sort();
    let mut want_ids: Vec<Vec<u8>> = (1..=6).map(trace_id).collect();
    want_ids.sort();
    assert_eq!(trace_ids, want_ids);
    for r in &records {
        assert_eq!(r.event_name, "gen_ai.evaluation.result");
        assert_eq!(r.span_id.len(), 8, "parented to the root span");
        let attr = |k: &str| {
            r.attributes
                .iter()
                .find(|kv| kv.key == k)
                .and_then(|kv| kv.value.clone())
                .and_then(|v| v.value)
        };
        assert_eq!(
            attr("gen_ai.evaluation.name"),
            Some(any_value::Value::StringValue("tool_correctness".into()))
        );
        assert_eq!(
            attr("gen_ai.evaluation.score.label"),
            Some(any_value::Value::StringValue("pass".into()))
        );
        assert_eq!(
            attr("gen_ai.evaluation.score.value"),
            Some(any_value::Value::DoubleValue(1.0))
        );
        assert_eq!(
            attr("toolscore.revision"),
            Some(any_value::Value::IntValue(1))
        );
    }
    // And as `toolscore.evaluation` spans inside the evaluated traces.
    poll_until("six evaluation spans", Duration::from_secs(15), || {
        capture.evaluation_spans().len() >= 6
    });
    let spans = capture.evaluation_spans();
    assert_eq!(spans.len(), 6);
    for s in &spans {
        let t = s.trace_id[15];
        assert_eq!(s.trace_id, trace_id(t));
        assert_eq!(
            s.parent_span_id,
            vec![t, 0, 0, 0, 0, 0, 0, 1],
            "child of the root"
        );
        assert_eq!(s.events.len(), 1);
        assert_eq!(s.events[0].name, "gen_ai.evaluation.result");
        assert!(s
            .attributes
            .iter()
            .any(|kv| kv.key == "gen_ai.evaluation.score.label"));
    }
}

#[test]
fn forwards_every_span_unchanged_and_metrics_add_up() {
    let downstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down_addr = downstream.local_addr().unwrap();
    let server = start("forward", |c, dir| {
        c.forward = Some(format!("grpc://{down_addr}"));
        c.results_spans = true;
        let default = dir.join("default.json");
        std::fs::write(&default, r#"["get_weather", "get_weather"]"#).unwrap();
        c.default_expected = Some(default);
    });
    let capture = Capture::default();
    let stop = CancellationToken::new();
    let cap_task = start_capture(&server.rt, downstream, capture.clone(), stop.clone());

    let sent: Vec<ExportTraceServiceRequest> = (1..=6).map(weather).collect();
    let mut client = server.grpc_client();
    for r in &sent {
        server.grpc_export(&mut client, r.clone()).expect("export");
    }
    let want = sorted_span_bytes(sent.iter());
    poll_until("every span downstream", Duration::from_secs(15), || {
        capture.span_bytes().len() >= want.len()
    });
    assert_eq!(
        capture.span_bytes(),
        want,
        "downstream got every span byte for byte"
    );
    server.wait_for("all traces scored", |s| s.traces_scored == 6);
    // A span is counted once the downstream's answer is back, which comes
    // after the capture holds it: wait for the count, not for the capture.
    server.wait_for("every span counted as forwarded", |s| {
        s.spans_forwarded >= want.len() as u64
    });

    let (status, text) = get(server.admin.unwrap(), "/metrics");
    assert_eq!(status, 200);
    let m = parse_prometheus(&text);
    assert_eq!(m["toolscore_spans_received_total"], want.len() as f64);
    assert_eq!(m["toolscore_spans_forwarded_total"], want.len() as f64);
    assert_eq!(m["toolscore_spans_forward_dropped_total"], 0.0);
    assert_eq!(m["toolscore_traces_scored_total"], 6.0);
    let verdicts: f64 = m
        .iter()
        .filter(|(k, _)| k.starts_with("toolscore_evaluations_total{metric=\"tool_correctness\""))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(verdicts, 6.0, "{text}");

    evaluations_arrived_downstream(&capture);
    assert_eq!(get(server.admin.unwrap(), "/healthz").0, 200);
    assert_eq!(get(server.admin.unwrap(), "/readyz").0, 200);

    let (summary, _) = server.stop();
    assert_eq!(summary.stats.traces_scored, 6);
    // The evaluation spans and records went downstream too, and are not
    // counted as forwarded: those counts are of what serve received.
    assert_eq!(
        (
            summary.stats.spans_forwarded,
            summary.stats.log_records_forwarded
        ),
        (want.len() as u64, 0)
    );
    stop.cancel();
    drop(cap_task);
}

#[test]
fn downstream_outage_gives_503_then_everything_arrives() {
    // Reserve a port, then free it: the downstream is down at first.
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down_addr = probe.local_addr().unwrap();
    drop(probe);
    let server = start("outage", |c, _| {
        c.forward = Some(format!("grpc://{down_addr}"));
        c.forward_queue = 2;
    });
    // Send over HTTP until the queue is full and upstream is told to retry.
    let mut accepted = Vec::new();
    let mut refused = 0;
    for t in 1..=20u8 {
        let req = weather(t);
        let r = post(
            server.http,
            &[("Content-Type", "application/x-protobuf")],
            &req.encode_to_vec(),
            Framing::Length,
        );
        match r.status {
            200 => accepted.push(req),
            503 => {
                refused += 1;
                assert!(r
                    .headers
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case("retry-after")));
            }
            other => panic!("unexpected status {other}"),
        }
    }
    assert!(refused > 0, "a full forward queue must refuse with 503");
    assert!(!accepted.is_empty());
    assert_eq!(get(server.admin.unwrap(), "/readyz").0, 503);

    // The downstream comes back on the same port.
    let listener = std::net::TcpListener::bind(down_addr).expect("rebind downstream port");
    let capture = Capture::default();
    let stop = CancellationToken::new();
    let _task = start_capture(&server.rt, listener, capture.clone(), stop.clone());
    let want = sorted_span_bytes(accepted.iter());
    poll_until(
        "every accepted span downstream",
        Duration::from_secs(30),
        || capture.span_bytes().len() >= want.len(),
    );
    assert_eq!(
        capture.span_bytes(),
        want,
        "every accepted span arrives once the downstream is back"
    );
    // And upstream is accepted again.
    let r = post(
        server.http,
        &[("Content-Type", "application/x-protobuf")],
        &weather(99).encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 200);
    server.stop();
    stop.cancel();
}

/// Every span of `reqs`, protobuf-encoded, in order.
fn span_bytes_in_order<'a>(
    reqs: impl Iterator<Item = &'a ExportTraceServiceRequest>,
) -> Vec<Vec<u8>> {
    reqs.flat_map(|r| &r.resource_spans)
        .flat_map(|rs| &rs.scope_spans)
        .flat_map(|ss| &ss.spans)
        .map(|s| s.encode_to_vec())
        .collect()
}

#[test]
fn forwarding_keeps_order_across_encodings_and_leaves_out_rejected_spans() {
    let downstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down_addr = downstream.local_addr().unwrap();
    let server = start("forward-order", |c, _| {
        c.forward = Some(format!("grpc://{down_addr}"));
        // One request at a time: arrival order is request order.
        c.forward_concurrency = 1;
    });
    let capture = Capture::default();
    let stop = CancellationToken::new();
    // The downstream starts late, so the queue holds several requests and
    // the forwarder joins them.
    let mut client = server.grpc_client();
    let mut sent = Vec::new();
    for t in 1..=8u8 {
        let mut req = weather(t);
        let bad = t % 3 == 0;
        if bad {
            req.resource_spans[0].scope_spans[0].spans[0].trace_id = vec![7; 5];
        }
        match t % 4 {
            0 => {
                server.grpc_export(&mut client, req.clone()).expect("grpc");
            }
            1 => {
                let r = post(
                    server.http,
                    &[PROTOBUF, ("Content-Encoding", "gzip")],
                    &gzip(&req.encode_to_vec()),
                    Framing::Chunked,
                );
                assert_eq!(r.status, 200);
            }
            2 => {
                let r = post(
                    server.http,
                    &[JSON],
                    &serde_json::to_vec(&req).unwrap(),
                    Framing::Length,
                );
                assert_eq!(r.status, 200);
            }
            _ => {
                let r = post(
                    server.http,
                    &[PROTOBUF],
                    &req.encode_to_vec(),
                    Framing::Length,
                );
                assert_eq!(r.status, 200);
            }
        }
        if bad {
            req.resource_spans[0].scope_spans[0].spans.remove(0);
        }
        sent.push(req);
    }
    let _task = start_capture(&server.rt, downstream, capture.clone(), stop.clone());
    let want = span_bytes_in_order(sent.iter());
    let got = || span_bytes_in_order(capture.0.lock().unwrap().iter());
    poll_until(
        "every kept span downstream",
        Duration::from_secs(30),
        || got().len() >= want.len(),
    );
    assert_eq!(
        got(),
        want,
        "every kept span, unchanged and in request order"
    );
    let downstream_requests = capture.0.lock().unwrap().len();
    assert!(
        downstream_requests < sent.len(),
        "queued requests are joined ({downstream_requests} downstream requests for {})",
        sent.len()
    );
    // Resources and scopes travel with their spans.
    for r in capture.0.lock().unwrap().iter() {
        for rs in &r.resource_spans {
            assert!(rs.resource.is_some());
            assert!(rs.scope_spans.iter().all(|ss| !ss.spans.is_empty()));
        }
    }
    server.stop();
    stop.cancel();
}

#[test]
fn forward_queue_is_bounded_in_bytes_too() {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down_addr = probe.local_addr().unwrap();
    drop(probe);
    let server = start("queue-bytes", |c, _| {
        c.forward = Some(format!("grpc://{down_addr}"));
        c.forward_queue = 1000;
        c.forward_queue_bytes = 1;
    });
    let send = |t: u8| {
        post(
            server.http,
            &[PROTOBUF],
            &weather(t).encode_to_vec(),
            Framing::Length,
        )
    };
    // A request alone in the queue always fits; the next one is over the cap.
    assert_eq!(send(1).status, 200);
    let r = send(2);
    assert_eq!(r.status, 503, "over the byte cap");
    let (_, text) = get(server.admin.unwrap(), "/metrics");
    let m = parse_prometheus(&text);
    assert_eq!(
        m["toolscore_forward_queue_bytes"],
        weather(1).encoded_len() as f64,
        "{text}"
    );
    // The downstream comes up: the queue drains and requests fit again.
    let listener = std::net::TcpListener::bind(down_addr).expect("rebind downstream port");
    let capture = Capture::default();
    let stop = CancellationToken::new();
    let _task = start_capture(&server.rt, listener, capture.clone(), stop.clone());
    let want = sorted_span_bytes([weather(1)].iter());
    poll_until(
        "the queued span downstream",
        Duration::from_secs(30),
        || {
            let got = capture.span_bytes();
            if got == want {
                Ok(())
            } else {
                Err(got)
            }
        },
    );
    poll_until(
        "a request to be accepted again",
        Duration::from_secs(10),
        || send(3).status == 200,
    );
    server.stop();
    stop.cancel();
}

/// What was accepted and never delivered is counted, never silent: with
/// the downstream down through the shutdown deadline, the queued spans and
/// log records are counted as dropped and the run ends in an error.
#[test]
fn what_the_shutdown_deadline_abandons_is_counted_as_dropped() {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down_addr = probe.local_addr().unwrap();
    drop(probe);
    let server = start("forward-abandoned", |c, _| {
        c.forward = Some(format!("grpc://{down_addr}"));
        c.results_otlp = Some("off".into());
        c.shutdown_timeout = Duration::from_secs(1);
    });
    let spans = weather(1);
    let r = post(
        server.http,
        &[PROTOBUF],
        &spans.encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 200);
    let logs = ExportLogsServiceRequest {
        resource_logs: vec![opentelemetry_proto::tonic::logs::v1::ResourceLogs {
            scope_logs: vec![opentelemetry_proto::tonic::logs::v1::ScopeLogs {
                log_records: vec![Default::default(); 3],
                ..Default::default()
            }],
            ..Default::default()
        }],
    };
    let r = super::post_to(
        server.http,
        "/v1/logs",
        &[PROTOBUF],
        &logs.encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 200);
    server.token.cancel();
    let ended = server
        .rt
        .block_on(async { tokio::time::timeout(Duration::from_secs(60), server.handle).await })
        .expect("serve stops within 60 s")
        .expect("server task");
    let err = ended.expect_err("abandoned data makes the run an error");
    assert!(err.to_string().contains("not delivered"), "{err}");
    let s = server.stats.snapshot();
    let sent = sorted_span_bytes([spans].iter()).len() as u64;
    assert_eq!(
        (
            s.spans_forwarded,
            s.spans_forward_dropped,
            s.log_records_forwarded,
            s.log_records_forward_dropped
        ),
        (0, sent, 0, 3)
    );
}
