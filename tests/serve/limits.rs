//! Limits and backpressure: a full span buffer, idle and slow clients,
//! connection caps and the in-flight byte budget on both ports.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use prost::Message;
use toolscore::serve::RpcStatus;

use super::{get, metric_value, of_type, post, start, status_body, weather, Framing, PROTOBUF};
use crate::util::poll_until;

#[test]
fn full_buffer_refuses_then_recovers_without_losing_data() {
    let srv = start("full", |c, _| {
        // Trace 1 must still be held for the two refusals below (three
        // local requests): 3 s leaves a wide margin on a loaded machine.
        c.decision_wait = Duration::from_secs(3);
        c.max_buffered_spans = 5;
        c.retry_after = Duration::from_secs(2);
    });
    let r = post(
        srv.http,
        &[PROTOBUF],
        &weather(1).encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 200);
    // 3 held + 3 more > 5: refused, retryable, nothing kept.
    let r = post(
        srv.http,
        &[PROTOBUF],
        &weather(2).encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some("2"));
    assert_eq!(status_body(&r).code, tonic::Code::Unavailable as i32);
    let mut client = srv.grpc_client();
    let err = srv.grpc_export(&mut client, weather(3)).unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unavailable);
    let details = RpcStatus::decode(err.details()).expect("status details");
    assert!(details.details[0]
        .type_url
        .ends_with("google.rpc.RetryInfo"));
    assert_eq!(srv.stats().refused_requests, 2);
    // Trace 1 completes after the decision wait; then there is room again.
    srv.wait_for("trace 1 to be scored", |s| s.traces_scored >= 1);
    srv.wait_for("the buffer to empty", |s| s.buffered_spans == 0);
    let r = post(
        srv.http,
        &[PROTOBUF],
        &weather(2).encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 200);
    srv.grpc_export(&mut client, weather(3)).unwrap_err(); // 3 + 3 > 5 again
    let (summary, rows) = srv.stop();
    let ids: Vec<&str> = of_type(&rows, "unmatched_trace")
        .iter()
        .map(|r| r["trace_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    assert_eq!(summary.stats.spans, 6);
}

/// Idle and slow clients cannot hold the server: past `--max-connections`
/// new connections are closed at once (counted), the admin port still
/// answers, an idle connection is closed after `--header-timeout`, and a
/// body that stops arriving gets 408 after `--request-timeout`.
#[test]
fn idle_and_slow_clients_are_bounded() {
    let srv = start("idle", |c, _| {
        c.max_connections = 4;
        c.header_timeout = Duration::from_millis(500);
        c.request_timeout = Duration::from_millis(500);
    });
    let idle: Vec<TcpStream> = (0..4)
        .map(|_| TcpStream::connect(srv.http).unwrap())
        .collect();
    // Wait until the server holds all four.
    let open = || {
        let (_, text) = get(srv.admin.unwrap(), "/metrics");
        metric_value(&text, "toolscore_connections_open")
    };
    poll_until(
        "the server to hold all four",
        Duration::from_secs(15),
        || open() >= 4.0,
    );
    assert_eq!(open(), 4.0);
    // A fifth is closed at once, without a response.
    let mut fifth = TcpStream::connect(srv.http).unwrap();
    fifth
        .set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    let mut buf = [0u8; 64];
    assert!(
        matches!(fifth.read(&mut buf), Ok(0)),
        "closed at once, no response"
    );
    let (status, _) = get(srv.admin.unwrap(), "/healthz");
    assert_eq!(status, 200, "the admin port still answers");
    let (_, text) = get(srv.admin.unwrap(), "/metrics");
    assert!(metric_value(&text, "toolscore_connections_refused_total") >= 1.0);
    // The idle ones are closed after the header timeout (well before the
    // read timeout: an error here is a connection still open).
    for mut s in idle {
        s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        assert!(matches!(s.read(&mut buf), Ok(0)), "idle connection closed");
    }
    poll_until("no connection open", Duration::from_secs(15), || {
        open() == 0.0
    });
    // A body that stops arriving: 408.
    let r = post(
        srv.http,
        &[PROTOBUF],
        &weather(1).encode_to_vec(),
        Framing::HoldBy(100),
    );
    assert_eq!(r.status, 408);
    // And a well-behaved client is served.
    let r = post(
        srv.http,
        &[PROTOBUF],
        &weather(2).encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 200);
    srv.stop();
}

/// Request bodies held at once are bounded in bytes, all clients together:
/// past `--max-inflight` a request is refused, retryable, and nothing it
/// sent is kept; when the held one finishes, requests are taken again.
#[test]
fn inflight_bytes_are_bounded() {
    let srv = start("inflight", |c, _| {
        c.max_inflight = 64 * 1024;
        c.request_timeout = Duration::from_secs(60);
    });
    // One client declares 100 KB and sends 60 KB, then waits.
    let mut holder = TcpStream::connect(srv.http).unwrap();
    holder
        .set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    let head = format!(
        "POST /v1/traces HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\n\r\n",
        100 * 1024
    );
    holder.write_all(head.as_bytes()).unwrap();
    holder.write_all(&vec![0u8; 60 * 1024]).unwrap();
    let held = || {
        let (_, text) = get(srv.admin.unwrap(), "/metrics");
        metric_value(&text, "toolscore_inflight_bytes")
    };
    poll_until(
        "the server to hold what arrived",
        Duration::from_secs(15),
        || held() >= 60.0 * 1024.0,
    );
    // Another client's 20 KB takes the total past 64 KiB: 503, retryable.
    let big = {
        let mut req = weather(3);
        let span = &mut req.resource_spans[0].scope_spans[0].spans[0];
        span.attributes.push(KeyValue {
            key: "pad".into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue("x".repeat(20 * 1024))),
            }),
            ..Default::default()
        });
        req.encode_to_vec()
    };
    let r = post(srv.http, &[PROTOBUF], &big, Framing::Length);
    assert_eq!(r.status, 503, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.header("retry-after").is_some());
    // The holder gives up: its bytes are released, requests fit again.
    drop(holder);
    poll_until(
        "the held bytes to be released",
        Duration::from_secs(15),
        || held() == 0.0,
    );
    let r = post(srv.http, &[PROTOBUF], &big, Framing::Length);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let (summary, _) = srv.stop();
    assert_eq!(summary.stats.spans, 3, "only the accepted request's spans");
}

/// The gRPC port has the same connection cap as the HTTP port: past
/// `--max-connections` a new connection is closed at once and counted, and
/// when one ends a client gets in again.
#[test]
fn grpc_connections_are_capped() {
    let srv = start("grpc-cap", |c, _| c.max_connections = 2);
    let refused = || {
        let (_, text) = get(srv.admin.unwrap(), "/metrics");
        metric_value(&text, "toolscore_connections_refused_total")
    };
    let mut idle: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(srv.grpc).unwrap())
        .collect();
    // Connections beyond the cap are closed without an answer; the first
    // two may still be on their way to the server, so keep opening until
    // one is refused.
    let mut buf = [0u8; 64];
    poll_until(
        "a connection past the cap to be closed at once",
        Duration::from_secs(15),
        || {
            let mut extra = TcpStream::connect(srv.grpc).unwrap();
            extra
                .set_read_timeout(Some(Duration::from_millis(300)))
                .unwrap();
            let closed = matches!(extra.read(&mut buf), Ok(0));
            if !closed {
                idle.push(extra);
            }
            closed
        },
    );
    assert!(refused() >= 1.0, "and counted");
    // Freed places take clients again (the server sees the ends first).
    drop(idle);
    let url = format!("http://{}", srv.grpc);
    poll_until(
        "a place freed to take a client again",
        Duration::from_secs(15),
        || {
            srv.rt.block_on(async {
                let mut client = TraceServiceClient::connect(url.clone()).await.ok()?;
                client.export(weather(1)).await.ok()
            })
        },
    );
    srv.stop();
}

/// A gRPC message is charged to the in-flight budget as its frames arrive,
/// not once tonic has it whole: a client that sends part of a large message
/// and stops holds its bytes against the budget, and another's export that
/// would pass the budget is refused (RESOURCE_EXHAUSTED with RetryInfo).
#[test]
fn grpc_bodies_are_charged_as_they_arrive() {
    let srv = start("inflight-grpc", |c, _| {
        c.max_inflight = 64 * 1024;
        c.request_timeout = Duration::from_secs(60);
    });
    // A worker thread keeps driving the connection after `block_on`.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let addr = srv.grpc;
    // Declares a 100 KB message (the gRPC length prefix), sends 60 KB, waits.
    let (_conn, _stream) = rt.block_on(async move {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (client, conn) = h2::client::handshake(tcp).await.unwrap();
        let conn = tokio::spawn(conn);
        let mut client = client.ready().await.unwrap();
        let req = http::Request::post(format!(
            "http://{addr}/opentelemetry.proto.collector.trace.v1.TraceService/Export"
        ))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
        let (_response, mut stream) = client.send_request(req, false).unwrap();
        let mut data = vec![0u8];
        data.extend_from_slice(&(100u32 * 1024).to_be_bytes());
        data.extend(std::iter::repeat_n(0u8, 60 * 1024));
        stream.reserve_capacity(data.len());
        stream.send_data(data.into(), false).unwrap();
        (conn, stream)
    });
    let held = || {
        let (_, text) = get(srv.admin.unwrap(), "/metrics");
        metric_value(&text, "toolscore_inflight_bytes")
    };
    poll_until(
        "the half-sent message to be charged",
        Duration::from_secs(15),
        || held() >= 60.0 * 1024.0,
    );
    // 20 KB more takes the budget past 64 KiB: refused, retryable.
    let big = {
        let mut req = weather(3);
        let span = &mut req.resource_spans[0].scope_spans[0].spans[0];
        span.attributes.push(KeyValue {
            key: "pad".into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue("x".repeat(20 * 1024))),
            }),
            ..Default::default()
        });
        req
    };
    let mut client = srv.grpc_client();
    let err = srv.grpc_export(&mut client, big.clone()).unwrap_err();
    assert_eq!(err.code(), tonic::Code::ResourceExhausted, "{err:?}");
    assert!(
        String::from_utf8_lossy(err.details()).contains("RetryInfo"),
        "a retry hint: {err:?}"
    );
    // The holder goes away: its bytes are released, the export fits.
    drop(rt);
    poll_until(
        "the held bytes to be released",
        Duration::from_secs(15),
        || held() == 0.0,
    );
    srv.grpc_export(&mut client, big).unwrap();
    let (summary, _) = srv.stop();
    assert_eq!(summary.stats.spans, 3, "only the accepted export's spans");
}
