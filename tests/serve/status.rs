//! The OTLP status rules on both transports: encodings, bad and malformed
//! requests, partial success for invalid spans, size caps.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;
use serde_json::{json, Value};
use tonic::codec::CompressionEncoding;

use super::{gzip, kv, of_type, post, start, status_body, weather, Framing, JSON, PROTOBUF};
use crate::util::hex;

#[test]
fn http_gzip_chunked_and_json_with_numbers() {
    let srv = start("http-enc", |_, _| {});
    // gzip + chunked protobuf.
    let body = gzip(&weather(1).encode_to_vec());
    let r = post(
        srv.http,
        &[PROTOBUF, ("Content-Encoding", "gzip")],
        &body,
        Framing::Chunked,
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/x-protobuf"));
    // JSON as the JS exporter writes it: int64 as numbers, ids as hex.
    let json_body = r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"js"}}]},
      "scopeSpans":[{"scope":{"name":"ai"},"spans":[
        {"traceId":"ABABABABABABABABABABABABABABAB02","spanId":"0200000000000002","parentSpanId":"0200000000000001",
         "name":"execute_tool search","kind":1,"startTimeUnixNano":1000,"endTimeUnixNano":1500,
         "attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},
                       {"key":"gen_ai.tool.name","value":{"stringValue":"search"}},
                       {"key":"gen_ai.tool.call.arguments","value":{"stringValue":"{\"q\":\"x\",\"n\":3}"}},
                       {"key":"retries","value":{"intValue":2}}],
         "status":{"code":0}},
        {"traceId":"ababababababababababababababab02","spanId":"0200000000000001","name":"invoke_agent a","kind":1,
         "startTimeUnixNano":"900","endTimeUnixNano":2000}]}]}]}"#;
    let r = post(srv.http, &[JSON], json_body.as_bytes(), Framing::Length);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.body, b"{}");
    // gzip JSON with a charset parameter.
    let r = post(
        srv.http,
        &[
            ("Content-Type", "application/json; charset=utf-8"),
            ("Content-Encoding", "gzip"),
        ],
        &gzip(&serde_json::to_vec(&weather(3)).unwrap()),
        Framing::Length,
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let (_, rows) = srv.stop();
    let traces = of_type(&rows, "unmatched_trace");
    assert_eq!(traces.len(), 3, "{rows:#?}");
    let js = traces
        .iter()
        .find(|r| r["trace_id"] == "ababababababababababababababab02")
        .unwrap();
    assert_eq!(js["spans"], 2);
    assert_eq!(js["tools_called"][0]["name"], "search");
    assert_eq!(js["tools_called"][0]["args"], json!({"q": "x", "n": 3}));
}

#[test]
fn http_bad_requests_get_the_spec_status() {
    let srv = start("http-bad", |c, _| c.max_request_size = 64 * 1024);
    let good = weather(1).encode_to_vec();

    let r = post(
        srv.http,
        &[("Content-Type", "text/plain")],
        b"hi",
        Framing::Length,
    );
    assert_eq!(r.status, 415);
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert!(v["message"].as_str().unwrap().contains("text/plain"), "{v}");

    let r = post(
        srv.http,
        &[PROTOBUF, ("Content-Encoding", "br")],
        &good,
        Framing::Length,
    );
    assert_eq!(r.status, 415);

    // Truncated protobuf: 400 with a Status in protobuf.
    let r = post(
        srv.http,
        &[PROTOBUF],
        &good[..good.len() - 7],
        Framing::Length,
    );
    assert_eq!(r.status, 400);
    let st = status_body(&r);
    assert_eq!(st.code, tonic::Code::InvalidArgument as i32);
    assert!(st.message.contains("protobuf"), "{}", st.message);

    // Truncated on the wire: the body ends before its Content-Length.
    let r = post(srv.http, &[PROTOBUF], &good[..100], Framing::ShortBy(500));
    assert_eq!(r.status, 400);

    // Broken JSON: 400 with a Status in JSON.
    let r = post(
        srv.http,
        &[JSON],
        br#"{"resourceSpans": [{"#,
        Framing::Length,
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["code"], 3);

    // gzip header on a plain body.
    let r = post(
        srv.http,
        &[PROTOBUF, ("Content-Encoding", "gzip")],
        &good,
        Framing::Length,
    );
    assert_eq!(r.status, 400);

    // Oversized: by Content-Length, by chunked body, and after inflating.
    let big = vec![b'x'; 100 * 1024];
    let r = post(srv.http, &[PROTOBUF], &big, Framing::HeadersOnly);
    assert_eq!(r.status, 413);
    assert_eq!(status_body(&r).code, tonic::Code::ResourceExhausted as i32);
    let r = post(srv.http, &[PROTOBUF], &big, Framing::Chunked);
    assert_eq!(r.status, 413);
    let bomb = gzip(&vec![0u8; 1 << 20]);
    assert!(bomb.len() < 64 * 1024);
    let r = post(
        srv.http,
        &[PROTOBUF, ("Content-Encoding", "gzip")],
        &bomb,
        Framing::Length,
    );
    assert_eq!(r.status, 413);
    assert!(status_body(&r).message.contains("inflated"));

    // Nothing above was kept; a good request still works.
    let r = post(srv.http, &[PROTOBUF], &good, Framing::Length);
    assert_eq!(r.status, 200);
    let st = srv.stats();
    assert_eq!((st.requests, st.spans), (1, 3));
    srv.stop();
}

#[test]
fn invalid_ids_get_partial_success_and_the_rest_is_kept() {
    let srv = start("partial", |_, _| {});
    let mut req = weather(1);
    let spans = &mut req.resource_spans[0].scope_spans[0].spans;
    spans[0].trace_id = vec![1, 2, 3, 4]; // too short
    spans[1].span_id = vec![0; 8]; // all zero
                                   // HTTP, protobuf.
    let r = post(srv.http, &[PROTOBUF], &req.encode_to_vec(), Framing::Length);
    assert_eq!(r.status, 200);
    let resp = ExportTraceServiceResponse::decode(r.body.as_slice()).unwrap();
    let p = resp.partial_success.expect("partial success");
    assert_eq!(p.rejected_spans, 2);
    assert!(
        p.error_message.contains("trace id of 4 bytes"),
        "{}",
        p.error_message
    );
    // HTTP, JSON: rejectedSpans is a string (int64).
    let mut req2 = weather(2);
    req2.resource_spans[0].scope_spans[0].spans[0].trace_id = vec![9; 3];
    let r = post(
        srv.http,
        &[JSON],
        &serde_json::to_vec(&req2).unwrap(),
        Framing::Length,
    );
    assert_eq!(r.status, 200);
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["partialSuccess"]["rejectedSpans"], "1");
    // gRPC.
    let mut client = srv.grpc_client();
    let mut req3 = weather(3);
    req3.resource_spans[0].scope_spans[0].spans[1].parent_span_id = vec![1];
    let resp = srv.grpc_export(&mut client, req3).unwrap();
    assert_eq!(resp.partial_success.unwrap().rejected_spans, 1);
    let st = srv.stats();
    assert_eq!((st.invalid_spans, st.spans), (4, 5));
    let (_, rows) = srv.stop();
    assert_eq!(of_type(&rows, "unmatched_trace").len(), 3);
}

#[test]
fn grpc_gzip_and_size_cap() {
    let srv = start("grpc", |c, _| c.max_request_size = 64 * 1024);
    let mut client = srv.grpc_client().send_compressed(CompressionEncoding::Gzip);
    let resp = srv.grpc_export(&mut client, weather(1)).unwrap();
    assert_eq!(resp.partial_success, None);
    // Empty request: success.
    srv.grpc_export(&mut client, ExportTraceServiceRequest::default())
        .unwrap();
    // Over the cap, compressed it fits but inflated it does not.
    let mut big = weather(2);
    big.resource_spans[0].scope_spans[0].spans[0]
        .attributes
        .push(kv("blob", &"y".repeat(200 * 1024)));
    let err = srv.grpc_export(&mut client, big.clone()).unwrap_err();
    assert_eq!(err.code(), tonic::Code::ResourceExhausted, "{err:?}");
    // Over the cap on the wire (no compression): tonic's OUT_OF_RANGE is
    // answered as RESOURCE_EXHAUSTED, which OTLP clients do not retry.
    let mut plain = srv.grpc_client();
    let err = srv.grpc_export(&mut plain, big).unwrap_err();
    assert_eq!(err.code(), tonic::Code::ResourceExhausted, "{err:?}");
    let st = srv.stats();
    assert_eq!(st.spans, 3);
    srv.stop();
}

// ------------------------------------------- malformed requests (issue 14)

/// Empty requests succeed but say so; a JSON body that is not an export
/// request at all is a 400; both framings at once are refused.
#[test]
fn empty_and_malformed_framings() {
    let srv = start("empty", |_, _| {});
    let r = post(srv.http, &[JSON], b"{}", Framing::Length);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert!(
        v["partialSuccess"]["errorMessage"]
            .as_str()
            .is_some_and(|m| m.contains("no spans")),
        "{v}"
    );
    assert_eq!(v["partialSuccess"]["rejectedSpans"], "0");
    let r = post(srv.http, &[PROTOBUF], b"", Framing::Length);
    assert_eq!(r.status, 200);
    let resp = ExportTraceServiceResponse::decode(r.body.as_slice()).unwrap();
    assert!(resp
        .partial_success
        .unwrap()
        .error_message
        .contains("no spans"));
    for body in [&b"[]"[..], b"3", b"\"x\""] {
        let r = post(srv.http, &[JSON], body, Framing::Length);
        assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(body));
    }
    // Content-Length and chunked together (request smuggling): the parser
    // reads the chunked body, drops the length and closes the connection
    // after answering, so a request hidden behind it is never read.
    let mut s = TcpStream::connect(srv.http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let body = weather(1).encode_to_vec();
    let mut wire = format!(
        "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
        body.len()
    )
    .into_bytes();
    wire.extend_from_slice(&body);
    wire.extend_from_slice(b"\r\n0\r\n\r\n");
    let smuggled = weather(2).encode_to_vec();
    wire.extend_from_slice(
        format!(
            "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\n\r\n",
            smuggled.len()
        )
        .as_bytes(),
    );
    wire.extend_from_slice(&smuggled);
    let _ = s.write_all(&wire);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw);
    assert_eq!(text.matches("HTTP/1.1 ").count(), 1, "one answer: {text}");
    assert!(
        text.to_ascii_lowercase().contains("connection: close"),
        "{text}"
    );
    let (summary, _) = srv.stop();
    assert_eq!(
        summary.stats.spans, 3,
        "the chunked body only, nothing smuggled"
    );
}

/// OTLP/HTTP JSON as Go's protojson (and Tempo's v2 API) write it: base64
/// ids and enum names are read; a span with a bad id is left out with a
/// partial success naming it, and the rest of the request is kept.
#[test]
fn http_json_with_enum_names_and_base64_ids() {
    use crate::util::{base64, protojson_agent_span, protojson_tool_span};
    let srv = start("http-protojson", |_, _| {});
    let (ta, tb) = ([0xd4u8; 16], [0xe5u8; 16]);
    let sid = |t: u8, n: u8| [t, 0, 0, 0, 0, 0, 0, n];
    let body = |wrap: &str, spans: &[String]| {
        let rs = format!(
            r#"[{{"resource":{{}},"scopeSpans":[{{"scope":{{"name":"agent"}},"spans":[{}]}}]}}]"#,
            spans.join(",")
        );
        match wrap {
            "tempo-v2" => format!(r#"{{"trace":{{"resourceSpans":{rs}}}}}"#),
            _ => format!(r#"{{"resourceSpans":{rs}}}"#),
        }
    };
    let mut bad = protojson_tool_span(&ta, &sid(4, 9), &sid(4, 1), "broken", "{}", 1300);
    bad = bad.replace(&base64(&ta), "c29tZXRoaW5n");
    let first = body(
        "otlp",
        &[
            protojson_tool_span(&ta, &sid(4, 2), &sid(4, 1), "lookup", r#"{"id":7}"#, 1000),
            bad,
            protojson_agent_span(&ta, &sid(4, 1), 900),
        ],
    );
    let r = post(srv.http, &[JSON], first.as_bytes(), Framing::Length);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["partialSuccess"]["rejectedSpans"], "1", "{v}");
    let msg = v["partialSuccess"]["errorMessage"].as_str().unwrap();
    for needle in [
        "span `execute_tool broken`",
        "spans[1]",
        "trace id",
        "tried hex",
    ] {
        assert!(msg.contains(needle), "{needle} not in {msg}");
    }
    // Tempo's v2 wrapper, gzip, chunked.
    let second = body(
        "tempo-v2",
        &[
            protojson_agent_span(&tb, &sid(5, 1), 900),
            protojson_tool_span(&tb, &sid(5, 2), &sid(5, 1), "search", r#"{"q":"y"}"#, 1000),
        ],
    );
    let r = post(
        srv.http,
        &[JSON, ("Content-Encoding", "gzip")],
        &gzip(second.as_bytes()),
        Framing::Chunked,
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.body, b"{}");
    // snake_case keys are still refused with the reason.
    let r = post(
        srv.http,
        &[JSON],
        br#"{"resource_spans":[{"scope_spans":[{"spans":[]}]}]}"#,
        Framing::Length,
    );
    assert_eq!(r.status, 400);
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert!(
        v["message"].as_str().unwrap().contains("lowerCamelCase"),
        "{v}"
    );
    let st = srv.stats();
    assert_eq!((st.requests, st.spans, st.invalid_spans), (2, 4, 1));
    let (_, rows) = srv.stop();
    let traces = of_type(&rows, "unmatched_trace");
    let find = |t: &[u8; 16]| {
        traces
            .iter()
            .find(|r| r["trace_id"] == hex(t))
            .unwrap_or_else(|| panic!("{rows:#?}"))
    };
    let a = find(&ta);
    assert_eq!(a["spans"], 2);
    assert_eq!(a["tools_called"][0]["name"], "lookup");
    assert_eq!(a["tools_called"][0]["args"], json!({"id": 7}));
    let b = find(&tb);
    assert_eq!(b["tools_called"][0]["name"], "search");
    assert_eq!(b["tools_called"][0]["args"], json!({"q": "y"}));
}
