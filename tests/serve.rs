//! `toolscore serve` on real sockets (127.0.0.1:0): the opentelemetry-otlp
//! exporters, corpus replays over both transports compared with `replay`,
//! the OTLP status rules, backpressure, late spans, and SIGTERM on the real
//! binary. Decision waits are short; every wait is bounded.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;
use serde_json::{json, Value};
use tonic::codec::CompressionEncoding;

use toolscore::serve::{
    CancellationToken, Listeners, RpcStatus, Scoring, ServeConfig, ServeError, ServeStats,
    ServeSummary, Server, StatsSnapshot,
};

use crate::util::{data, poll_until, toolscore, TempDir};

const WAIT: Duration = Duration::from_millis(200);

// ---------------------------------------------------------------- harness

pub(crate) struct TestServer {
    rt: tokio::runtime::Runtime,
    grpc: SocketAddr,
    pub(crate) http: SocketAddr,
    admin: Option<SocketAddr>,
    token: CancellationToken,
    handle: tokio::task::JoinHandle<Result<ServeSummary, ServeError>>,
    stats: Arc<ServeStats>,
    out: PathBuf,
    _dir: TempDir,
}

/// A server on 127.0.0.1:0 writing JSONL to a temp file; `tweak` edits the config.
pub(crate) fn start(tag: &str, tweak: impl FnOnce(&mut ServeConfig, &Path)) -> TestServer {
    let dir = TempDir::new(tag);
    let out = dir.path().join("results.jsonl");
    let mut config = ServeConfig {
        grpc_endpoint: "127.0.0.1:0".into(),
        http_endpoint: "127.0.0.1:0".into(),
        admin_endpoint: "127.0.0.1:0".into(),
        decision_wait: WAIT,
        output: Some(out.clone()),
        quiet: true,
        status_interval: Duration::from_secs(60),
        ..ServeConfig::default()
    };
    tweak(&mut config, dir.path());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = Server::new(config.clone(), Scoring::default()).unwrap();
    let stats = server.stats();
    let listeners = rt.block_on(Listeners::bind(&config)).unwrap();
    let (grpc, http) = (
        listeners.grpc_addr().unwrap(),
        listeners.http_addr().unwrap(),
    );
    let admin = listeners.admin_addr();
    let token = CancellationToken::new();
    let handle = rt.spawn(server.serve(listeners, token.clone()));
    TestServer {
        rt,
        grpc,
        http,
        admin,
        token,
        handle,
        stats,
        out,
        _dir: dir,
    }
}

impl TestServer {
    fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }

    /// Waits (at most 15 s) until `pred` holds; panics with the stats if not.
    fn wait_for(&self, what: &str, pred: impl Fn(&StatsSnapshot) -> bool) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(15) {
            if pred(&self.stats()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("timed out waiting for {what}: {:?}", self.stats());
    }

    /// Rows written so far.
    fn rows(&self) -> Vec<Value> {
        read_rows(&self.out)
    }

    /// Graceful shutdown: returns the summary and every JSONL row.
    pub(crate) fn stop(self) -> (ServeSummary, Vec<Value>) {
        self.token.cancel();
        let summary = self
            .rt
            .block_on(async { tokio::time::timeout(Duration::from_secs(30), self.handle).await })
            .expect("server stops within 30 s")
            .expect("server task")
            .expect("serve ok");
        let rows = read_rows(&self.out);
        (summary, rows)
    }

    fn grpc_client(&self) -> TraceServiceClient<tonic::transport::Channel> {
        let url = format!("http://{}", self.grpc);
        self.rt
            .block_on(TraceServiceClient::connect(url))
            .expect("gRPC connect")
    }

    fn grpc_export(
        &self,
        client: &mut TraceServiceClient<tonic::transport::Channel>,
        req: ExportTraceServiceRequest,
    ) -> Result<ExportTraceServiceResponse, tonic::Status> {
        self.rt
            .block_on(client.export(req))
            .map(tonic::Response::into_inner)
    }
}

fn read_rows(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSONL row"))
        .collect()
}

fn of_type<'a>(rows: &'a [Value], t: &str) -> Vec<&'a Value> {
    rows.iter().filter(|r| r["type"] == t).collect()
}

// ------------------------------------------------------------ raw HTTP/1.1

pub(crate) struct Reply {
    pub(crate) status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub(crate) enum Framing {
    Length,
    Chunked,
    /// Declares `n` bytes more than sent, then half-closes.
    ShortBy(usize),
    /// Declares the length but sends no body.
    HeadersOnly,
    /// Declares `n` bytes more than sent and keeps the connection open.
    HoldBy(usize),
}

/// One POST on its own connection, with exact control of the framing.
pub(crate) fn post(
    addr: SocketAddr,
    headers: &[(&str, &str)],
    body: &[u8],
    framing: Framing,
) -> Reply {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let mut head = format!("POST /v1/traces HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    match framing {
        Framing::Length | Framing::HeadersOnly => {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()))
        }
        Framing::Chunked => head.push_str("Transfer-Encoding: chunked\r\n"),
        Framing::ShortBy(n) | Framing::HoldBy(n) => {
            head.push_str(&format!("Content-Length: {}\r\n", body.len() + n))
        }
    }
    head.push_str("\r\n");
    let mut wire = head.into_bytes();
    match framing {
        Framing::Length | Framing::ShortBy(_) | Framing::HoldBy(_) => wire.extend_from_slice(body),
        Framing::HeadersOnly => {}
        Framing::Chunked => {
            for chunk in body.chunks(1000) {
                wire.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                wire.extend_from_slice(chunk);
                wire.extend_from_slice(b"\r\n");
            }
            wire.extend_from_slice(b"0\r\n\r\n");
        }
    }
    // The server may answer (413) before reading everything: ignore write errors.
    let _ = s.write_all(&wire);
    if matches!(framing, Framing::ShortBy(_)) {
        let _ = s.shutdown(std::net::Shutdown::Write);
    }
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    parse_reply(&raw)
}

fn parse_reply(raw: &[u8]) -> Reply {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP response: {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        let mut out = Vec::new();
        let mut rest = body.as_slice();
        while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
            let n = usize::from_str_radix(std::str::from_utf8(&rest[..eol]).unwrap().trim(), 16)
                .unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&rest[eol + 2..eol + 2 + n]);
            rest = &rest[eol + 4 + n..];
        }
        body = out;
    }
    Reply {
        status,
        headers,
        body,
    }
}

pub(crate) const PROTOBUF: (&str, &str) = ("Content-Type", "application/x-protobuf");
const JSON: (&str, &str) = ("Content-Type", "application/json");

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

// ------------------------------------------------------------- payloads

pub(crate) fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.into())),
        }),
        ..Default::default()
    }
}

fn trace_id(n: u8) -> Vec<u8> {
    let mut id = vec![0xab; 16];
    id[15] = n;
    id
}

/// One agent run: an `invoke_agent` root (span 1) and one `execute_tool`
/// span per tool (spans 2..), children first, as a batching exporter sends.
fn agent_spans(t: u8, conversation: &str, tools: &[(&str, Value)]) -> Vec<Span> {
    let root = vec![t, 0, 0, 0, 0, 0, 0, 1];
    let mut spans = Vec::new();
    for (i, (name, args)) in tools.iter().enumerate() {
        spans.push(Span {
            trace_id: trace_id(t),
            span_id: vec![t, 0, 0, 0, 0, 0, 0, i as u8 + 2],
            parent_span_id: root.clone(),
            name: format!("execute_tool {name}"),
            kind: 1,
            start_time_unix_nano: 1_000 + i as u64 * 10,
            end_time_unix_nano: 1_005 + i as u64 * 10,
            attributes: vec![
                kv("gen_ai.operation.name", "execute_tool"),
                kv("gen_ai.tool.name", name),
                kv("gen_ai.tool.call.arguments", &args.to_string()),
            ],
            ..Default::default()
        });
    }
    spans.push(Span {
        trace_id: trace_id(t),
        span_id: root,
        name: "invoke_agent planner".into(),
        kind: 1,
        start_time_unix_nano: 900,
        end_time_unix_nano: 2_000,
        attributes: vec![
            kv("gen_ai.operation.name", "invoke_agent"),
            kv("gen_ai.conversation.id", conversation),
        ],
        ..Default::default()
    });
    spans
}

pub(crate) fn request(spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Default::default()),
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

fn weather(t: u8) -> ExportTraceServiceRequest {
    request(agent_spans(
        t,
        &format!("conv-{t}"),
        &[
            ("get_weather", json!({"city": "Paris"})),
            ("get_weather", json!({"city": "London"})),
        ],
    ))
}

// ------------------------------------------------- real OTLP exporters

/// Spans an agent run with the OpenTelemetry SDK; returns its trace id.
fn sdk_agent_run(provider: &opentelemetry_sdk::trace::SdkTracerProvider, conv: &str) -> String {
    use opentelemetry::trace::{Span as _, TraceContextExt, Tracer, TracerProvider as _};
    use opentelemetry::KeyValue as Kv;
    let tracer = provider.tracer("e2e-agent");
    let root = tracer
        .span_builder("invoke_agent planner")
        .with_attributes([
            Kv::new("gen_ai.operation.name", "invoke_agent"),
            Kv::new("test.run", conv.to_string()),
        ])
        .start(&tracer);
    let cx = opentelemetry::Context::current_with_span(root);
    for city in ["Paris", "London"] {
        let mut s = tracer
            .span_builder("execute_tool get_weather")
            .with_attributes([
                Kv::new("gen_ai.operation.name", "execute_tool"),
                Kv::new("gen_ai.tool.name", "get_weather"),
                Kv::new(
                    "gen_ai.tool.call.arguments",
                    json!({ "city": city }).to_string(),
                ),
            ])
            .start_with_context(&tracer, &cx);
        s.end();
    }
    let id = cx.span().span_context().trace_id().to_string();
    cx.span().end();
    id
}

fn exporter_fixture(dir: &Path, conv: &str) -> PathBuf {
    let p = dir.join("expected.jsonl");
    let case = json!({
        "id": conv,
        // Not a session key (`gen_ai.conversation.id` would make a session case).
        "match": {"test.run": conv},
        "expected_tools": [
            {"name": "get_weather", "args": {"city": "Paris"}},
            {"name": "get_weather", "args": {"city": "London"}},
            "format_answer",
        ],
    });
    std::fs::write(&p, case.to_string()).unwrap();
    p
}

/// Two of three expected calls, both made with the right args: recall 2/3,
/// precision 1, F1 0.8.
fn assert_exporter_result(rows: &[Value], trace: &str, conv: &str) {
    let evals = of_type(rows, "evaluation");
    assert_eq!(evals.len(), 1, "{rows:#?}");
    let e = evals[0];
    assert_eq!(e["trace_id"], trace);
    assert_eq!(e["case"], conv);
    assert_eq!(e["revision"], 1);
    assert_eq!(e["spans"], 3);
    assert!((e["score"].as_f64().unwrap() - 0.8).abs() < 1e-9, "{e}");
    assert_eq!(e["pass"], true);
    let called: Vec<&str> = e["tools_called"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(called, ["get_weather", "get_weather"]);
}

#[test]
fn otlp_grpc_exporter_with_batch_processor_is_scored() {
    use opentelemetry_otlp::WithExportConfig;
    let conv = "conv-sdk-grpc";
    let srv = start("sdk-grpc", |c, dir| {
        c.expected = Some(exporter_fixture(dir, conv))
    });
    let provider = {
        // tonic's channel runs on the server's runtime; the batch processor's
        // own thread drives the exports.
        let _guard = srv.rt.enter();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(format!("http://{}", srv.grpc))
            .build()
            .unwrap();
        opentelemetry_sdk::trace::SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .build()
    };
    let trace = sdk_agent_run(&provider, conv);
    provider.force_flush().unwrap();
    srv.wait_for("the trace to be scored", |s| s.evaluations >= 1);
    provider.shutdown().unwrap();
    assert_exporter_result(&srv.rows(), &trace, conv);
    let (summary, _) = srv.stop();
    assert_eq!((summary.evaluations, summary.passed), (1, 1));
}

#[test]
fn otlp_http_exporter_with_batch_processor_is_scored() {
    use opentelemetry_otlp::WithExportConfig;
    let conv = "conv-sdk-http";
    let srv = start("sdk-http", |c, dir| {
        c.expected = Some(exporter_fixture(dir, conv))
    });
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(format!("http://{}/v1/traces", srv.http))
        .build()
        .unwrap();
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .build();
    let trace = sdk_agent_run(&provider, conv);
    provider.force_flush().unwrap();
    srv.wait_for("the trace to be scored", |s| s.evaluations >= 1);
    provider.shutdown().unwrap();
    assert_exporter_result(&srv.rows(), &trace, conv);
    srv.stop();
}

// ------------------------------------------- corpus: serve == replay

const SOURCES: &[&str] = &[
    "mlflow",
    "openinference-manual",
    "openinference-langchain",
    "pydantic-ai",
    "vercel-ai",
    "galtea",
    "langfuse",
    "traceloop",
    "strands",
    "google-adk",
];

fn pb_files(source: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data(&format!("corpus/{source}/otlp")))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pb"))
        .collect();
    files.sort(); // req-NNNN: arrival order
    files
}

/// Fixtures from every source's truth: one case per trace.
fn truth_fixture(dir: &Path) -> PathBuf {
    let mut lines = Vec::new();
    for source in SOURCES {
        let text = std::fs::read_to_string(data(&format!("corpus/{source}/truth.jsonl"))).unwrap();
        for l in text.lines() {
            let t: Value = serde_json::from_str(l).unwrap();
            lines.push(
                json!({
                    "id": format!("{source}/{}", t["scenario"].as_str().unwrap()),
                    "trace_id": t["trace_id"],
                    "expected_tools": t["tools_in_order"],
                })
                .to_string(),
            );
        }
    }
    // A case with no trace, to check unmatched cases are reported at the end.
    lines.push(
        r#"{"id":"ghost","trace_id":"00000000000000000000000000000001","expected_tools":["x"]}"#
            .into(),
    );
    let p = dir.join("truth-cases.jsonl");
    std::fs::write(&p, lines.join("\n")).unwrap();
    p
}

/// Per-trace rows with the serve-only fields removed, keyed for comparison.
pub(crate) fn keyed(rows: &[Value]) -> BTreeMap<String, Value> {
    rows.iter()
        .filter(|r| r["type"] == "evaluation" || r["type"] == "unmatched_trace")
        .map(|r| {
            let mut r = r.clone();
            let obj = r.as_object_mut().unwrap();
            obj.remove("revision");
            obj.remove("default_expectation");
            if obj["type"] == "evaluation" {
                obj.remove("spans");
            }
            let key = format!("{} {}", obj["trace_id"], obj["case"]);
            (key, r)
        })
        .collect()
}

pub(crate) fn replay_rows(files: &[PathBuf], fixture: &Path) -> Vec<Value> {
    let mut args: Vec<String> = vec![
        "replay".into(),
        "--format".into(),
        "jsonl".into(),
        "-q".into(),
        "--expected".into(),
        fixture.display().to_string(),
    ];
    args.extend(files.iter().map(|p| p.display().to_string()));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = toolscore(&argv);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "replay failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn corpus_matches_replay(over_grpc: bool) {
    let fixture_dir = TempDir::new("truth");
    let fixture = truth_fixture(fixture_dir.path());
    // A long wait: traces complete at shutdown (the drain), so a slow
    // machine cannot split them; the timer path is tested elsewhere.
    let srv = start(
        if over_grpc {
            "corpus-grpc"
        } else {
            "corpus-http"
        },
        |c, _| {
            c.expected = Some(fixture.clone());
            c.decision_wait = Duration::from_secs(600);
        },
    );
    let mut client = over_grpc.then(|| srv.grpc_client());
    let mut all_files = Vec::new();
    for source in SOURCES {
        let files = pb_files(source);
        for f in &files {
            let body = std::fs::read(f).unwrap();
            match &mut client {
                Some(c) => {
                    let req = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
                    let resp = srv.grpc_export(c, req).unwrap();
                    assert_eq!(resp.partial_success, None, "{}", f.display());
                }
                None => {
                    let r = post(srv.http, &[PROTOBUF], &body, Framing::Length);
                    assert_eq!(r.status, 200, "{}", f.display());
                    assert!(r.body.is_empty(), "full success has no partial_success");
                }
            }
        }
        all_files.extend(files);
    }
    let (summary, rows) = srv.stop();
    let expected = replay_rows(&all_files, &fixture);
    let (got, want) = (keyed(&rows), keyed(&expected));
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (k, w) in &want {
        assert_eq!(&got[k], w, "trace/case {k}");
    }
    assert!(want.len() >= 55, "{} rows", want.len());
    assert_eq!(summary.unmatched_cases, vec!["ghost".to_string()]);
    assert!(of_type(&rows, "evaluation")
        .iter()
        .all(|r| r["revision"] == 1));
    let last = rows.last().unwrap();
    assert_eq!(last["type"], "summary");
    assert_eq!(
        last["metrics"]["tool_correctness"]["evaluations"],
        summary.evaluations
    );
}

#[test]
fn corpus_over_http_scores_like_replay() {
    corpus_matches_replay(false);
}

#[test]
fn corpus_over_grpc_scores_like_replay() {
    corpus_matches_replay(true);
}

// ------------------------------------------------------ HTTP status rules

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

fn status_body(r: &Reply) -> RpcStatus {
    assert_eq!(r.header("content-type"), Some("application/x-protobuf"));
    RpcStatus::decode(r.body.as_slice()).expect("google.rpc.Status body")
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

// ------------------------------------------------ backpressure, late spans

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

#[test]
fn late_spans_are_rescored_and_resent_spans_are_duplicates() {
    let srv = start("late", |c, dir| {
        let p = dir.join("default.json");
        std::fs::write(
            &p,
            r#"[{"name": "get_weather", "args": {"city": "Paris"}}]"#,
        )
        .unwrap();
        c.default_expected = Some(p);
    });
    let mut spans = agent_spans(
        7,
        "conv-late",
        &[
            ("get_weather", json!({"city": "Paris"})),
            ("format_answer", json!({})),
        ],
    );
    let late = spans.remove(1);
    let r = post(
        srv.http,
        &[PROTOBUF],
        &request(spans.clone()).encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 200);
    srv.wait_for("revision 1", |s| s.evaluations >= 1);
    // A retrying client re-sends a scored span: dropped as a duplicate.
    let r = post(
        srv.http,
        &[PROTOBUF],
        &request(vec![spans[0].clone()]).encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 200);
    assert_eq!(srv.stats().duplicate_spans, 1);
    // A span that was not there before: revision 2.
    let r = post(
        srv.http,
        &[PROTOBUF],
        &request(vec![late]).encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 200);
    srv.wait_for("revision 2", |s| s.evaluations >= 2);
    let (summary, rows) = srv.stop();
    let evals = of_type(&rows, "evaluation");
    assert_eq!(evals.len(), 2, "{rows:#?}");
    assert_eq!(evals[0]["revision"], 1);
    assert_eq!(evals[0]["default_expectation"], true);
    assert_eq!(evals[0]["case"], "default");
    assert_eq!(evals[0]["score"], 1.0);
    assert_eq!(evals[1]["revision"], 2);
    assert_eq!(evals[1]["spans"], 1);
    assert_eq!(evals[1]["tools_called"][0]["name"], "format_answer");
    assert_eq!(summary.stats.rescored, 1);
    assert_eq!(summary.stats.traces_scored, 2);
}

// ------------------------------------------------------- the real binary

#[test]
fn sigterm_scores_everything_buffered_and_exits_zero() {
    let dir = TempDir::new("sigterm");
    let out = dir.path().join("results.jsonl");
    let serve = Spawned::start(&["--decision-wait", "10m"], &out);
    for t in 1..=3 {
        let r = post(
            serve.http,
            &[PROTOBUF],
            &weather(t).encode_to_vec(),
            Framing::Length,
        );
        assert_eq!(r.status, 200);
    }
    let (status, log, stdout) = serve.terminate(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{log}");
    let rows = read_rows(&out);
    assert_eq!(of_type(&rows, "unmatched_trace").len(), 3, "{log}");
    assert_eq!(rows.last().unwrap()["type"], "summary");
    assert_eq!(rows.last().unwrap()["stats"]["spans"], 9);
    assert!(log.contains("SIGTERM"), "{log}");
    // One stdout line per trace, then the summary.
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("----")).count(),
        3,
        "{stdout}"
    );
    assert!(stdout.contains("3 trace(s) scored"), "{stdout}");
}

/// Scoring never waits on the results exporter (issue 11: it did, holding
/// the results lock, and SIGTERM then hung for ever). The results
/// downstream is down and its queue holds one request: every trace is still
/// scored and written as it completes, the records that cannot be queued
/// are counted, and SIGTERM ends the run within `--shutdown-timeout` with a
/// non-zero exit and a log line saying what was abandoned.
#[test]
fn results_exporter_down_never_blocks_scoring_or_shutdown() {
    let dir = TempDir::new("results-down");
    let out = dir.path().join("results.jsonl");
    let default = dir.path().join("default.json");
    std::fs::write(&default, r#"["get_weather"]"#).unwrap();
    // A port nothing listens on: connections are refused.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let results = format!("http://{dead}");
    let default_arg = default.to_str().unwrap();
    let serve = Spawned::start(
        &[
            "--default-expected",
            default_arg,
            "--results-otlp",
            &results,
            "--forward-queue",
            "1",
            "--forward-concurrency",
            "1",
            "--decision-wait",
            "100ms",
            "--shutdown-timeout",
            "3s",
        ],
        &out,
    );
    for t in 1..=8u8 {
        let r = post(
            serve.http,
            &[PROTOBUF],
            &weather(t).encode_to_vec(),
            Framing::Length,
        );
        assert_eq!(r.status, 200);
        // Each trace is scored and written before the next is sent.
        let written = || {
            complete_rows(&out)
                .iter()
                .filter(|r| r["type"] == "evaluation")
                .count()
        };
        poll_until(Duration::from_secs(15), || written() >= usize::from(t));
        assert_eq!(written(), usize::from(t), "trace {t} was not scored");
    }
    let dropped = || {
        let (_, text) = get(serve.admin, "/metrics");
        metric_value(&text, "toolscore_results_dropped_total")
    };
    poll_until(Duration::from_secs(15), || dropped() > 0.0);
    assert!(dropped() > 0.0, "dropped records are counted");
    let started = Instant::now();
    let (status, log, _) = serve.terminate(Duration::from_secs(20));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "shutdown took {:?}",
        started.elapsed()
    );
    assert_ne!(status.code(), Some(0), "{log}");
    assert!(log.contains("abandon"), "{log}");
    let rows = read_rows(&out);
    assert_eq!(of_type(&rows, "evaluation").len(), 8, "{log}");
    assert_eq!(rows.last().unwrap()["type"], "summary", "{log}");
}

/// `toolscore serve` as a child process on 127.0.0.1:0 ports, found in its
/// `Listening.` log line.
struct Spawned {
    child: std::process::Child,
    http: SocketAddr,
    admin: SocketAddr,
    log: std::thread::JoinHandle<String>,
}

impl Spawned {
    fn start(args: &[&str], out: &Path) -> Spawned {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolscore"))
            .args([
                "serve",
                "--grpc-endpoint",
                "127.0.0.1:0",
                "--http-endpoint",
                "127.0.0.1:0",
                "--admin-endpoint",
                "127.0.0.1:0",
            ])
            .args(args)
            .arg("--output")
            .arg(out)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start toolscore serve");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let log = std::thread::spawn(move || {
            let mut log = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("Listening.") {
                    let _ = tx.send(line.clone());
                }
                log.push_str(&line);
                log.push('\n');
            }
            log
        });
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("serve logs `Listening.`");
        let addr = |key: &str| -> SocketAddr {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .unwrap_or_else(|| panic!("{key} in {line}"))
                .parse()
                .unwrap()
        };
        Spawned {
            http: addr("http="),
            admin: addr("admin="),
            child,
            log,
        }
    }

    /// Sends SIGTERM and waits (at most `limit`) for the exit: status, log
    /// and stdout.
    fn terminate(mut self, limit: Duration) -> (std::process::ExitStatus, String, String) {
        let pid = self.child.id().to_string();
        let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(killed.success());
        let start = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > limit {
                let _ = self.child.kill();
                panic!("serve did not exit within {limit:?} of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let log = self.log.join().unwrap();
        let mut stdout = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        (status, log, stdout)
    }
}

/// The complete rows of a JSONL file being written (a last line still being
/// written is left out).
fn complete_rows(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSONL row"))
        .collect()
}

/// The value of an unlabelled sample in a Prometheus exposition.
fn metric_value(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(f64::NAN)
}

// ------------------------------------------------- processor mode (issue 6)

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};

use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{
    LogsService, LogsServiceServer,
};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};

/// A plain OTLP/gRPC receiver standing in for the downstream backend: it
/// keeps every trace and log request it gets.
#[derive(Clone, Default)]
struct Capture(
    Arc<std::sync::Mutex<Vec<ExportTraceServiceRequest>>>,
    Arc<std::sync::Mutex<Vec<ExportLogsServiceRequest>>>,
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
fn start_capture(
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

fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect admin");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let r = parse_reply(&raw);
    (r.status, String::from_utf8_lossy(&r.body).into_owned())
}

/// Prometheus text: `name{labels}` -> value; panics on a malformed line.
fn parse_prometheus(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (name, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("bad line {line}"));
        let v: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value in {line}"));
        out.insert(name.to_string(), v);
    }
    out
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
    poll_until(Duration::from_secs(15), || {
        capture.span_bytes().len() >= want.len()
    });
    assert_eq!(
        capture.span_bytes(),
        want,
        "downstream got every span byte for byte"
    );
    server.wait_for("all traces scored", |s| s.traces_scored == 6);

    let (status, text) = get(server.admin.unwrap(), "/metrics");
    assert_eq!(status, 200);
    let m = parse_prometheus(&text);
    assert_eq!(m["toolscore_spans_received_total"], want.len() as f64);
    assert_eq!(m["toolscore_spans_forwarded_total"], want.len() as f64);
    assert_eq!(m["toolscore_traces_scored_total"], 6.0);
    let verdicts: f64 = m
        .iter()
        .filter(|(k, _)| k.starts_with("toolscore_evaluations_total{metric=\"tool_correctness\""))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(verdicts, 6.0, "{text}");

    // Evaluation results arrive downstream as gen_ai.evaluation.result logs,
    // parented to each evaluated trace's root span.
    let start_t = Instant::now();
    let records = loop {
        let recs: Vec<_> = capture
            .1
            .lock()
            .unwrap()
            .iter()
            .flat_map(|r| &r.resource_logs)
            .flat_map(|rl| &rl.scope_logs)
            .flat_map(|sl| sl.log_records.clone())
            .collect();
        if recs.len() >= 6 || start_t.elapsed() > Duration::from_secs(15) {
            break recs;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
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
    poll_until(Duration::from_secs(15), || {
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
    assert_eq!(get(server.admin.unwrap(), "/healthz").0, 200);
    assert_eq!(get(server.admin.unwrap(), "/readyz").0, 200);

    let (summary, _) = server.stop();
    assert_eq!(summary.stats.traces_scored, 6);
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
    poll_until(Duration::from_secs(30), || {
        capture.span_bytes().len() >= want.len()
    });
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

#[test]
fn results_api_streams_evaluations() {
    use toolscore::serve::results_api::pb::results_service_client::ResultsServiceClient;
    use toolscore::serve::results_api::pb::SubscribeRequest;
    let server = start("results-api", |c, dir| {
        let default = dir.join("default.json");
        std::fs::write(&default, r#"["get_weather"]"#).unwrap();
        c.default_expected = Some(default);
    });
    let url = format!("http://{}", server.grpc);
    let mut stream = server.rt.block_on(async {
        let mut client = ResultsServiceClient::connect(url).await.expect("connect");
        client
            .subscribe(SubscribeRequest {
                metrics: vec!["tool_correctness".into()],
                ..Default::default()
            })
            .await
            .expect("subscribe")
            .into_inner()
    });
    let mut client = server.grpc_client();
    server.grpc_export(&mut client, weather(7)).expect("export");
    let got = server
        .rt
        .block_on(async { tokio::time::timeout(Duration::from_secs(15), stream.message()).await })
        .expect("a result within 15 s")
        .expect("stream ok")
        .expect("one message");
    assert_eq!(got.trace_id, trace_id(7));
    // One unexpected extra call: F1 0.667 passes the default 0.5 threshold.
    assert!(got.pass, "{got:?}");
    assert_eq!(got.revision, 1);
    assert_eq!(got.scores[0].metric, "tool_correctness");
    assert_eq!(got.unexpected, vec!["get_weather".to_string()]);

    // A trace still buffered at shutdown: its result reaches the
    // subscriber too, then the stream ends.
    let rest = server.rt.spawn(async move {
        let mut got = Vec::new();
        while let Ok(Some(m)) = stream.message().await {
            got.push(m);
        }
        got
    });
    server.grpc_export(&mut client, weather(8)).expect("export");
    server.token.cancel();
    let rest = server
        .rt
        .block_on(async { tokio::time::timeout(Duration::from_secs(15), rest).await })
        .expect("the stream ends after the final drain")
        .expect("collector task");
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0].trace_id, trace_id(8));
    server.stop();
}

/// Two instances behind a trace-id router (the Collector's `loadbalancing`
/// exporter with `routing_key: traceID`) give exactly one instance's results.
#[test]
fn splitting_by_trace_id_across_two_instances_matches_one() {
    let fixture_dir = TempDir::new("split");
    let fixture = truth_fixture(fixture_dir.path());
    let start_one = |tag: &str| {
        start(tag, |c, _| {
            c.expected = Some(fixture.clone());
            c.decision_wait = Duration::from_secs(600);
        })
    };
    let (a, b) = (start_one("split-a"), start_one("split-b"));
    let (mut ca, mut cb) = (a.grpc_client(), b.grpc_client());
    let mut all_files = Vec::new();
    for source in SOURCES {
        let files = pb_files(source);
        for f in &files {
            let req =
                ExportTraceServiceRequest::decode(std::fs::read(f).unwrap().as_slice()).unwrap();
            // Route every span by its trace id, like a consistent-hash ring.
            let (mut to_a, mut to_b) = (req.clone(), req);
            for (side, keep_even) in [(&mut to_a, true), (&mut to_b, false)] {
                for rs in &mut side.resource_spans {
                    for ss in &mut rs.scope_spans {
                        ss.spans.retain(|s| {
                            (s.trace_id.iter().map(|&x| x as u32).sum::<u32>() % 2 == 0)
                                == keep_even
                        });
                    }
                }
            }
            a.grpc_export(&mut ca, to_a).unwrap();
            b.grpc_export(&mut cb, to_b).unwrap();
        }
        all_files.extend(files);
    }
    let (_, rows_a) = a.stop();
    let (_, rows_b) = b.stop();
    let mut got = keyed(&rows_a);
    let from_b = keyed(&rows_b);
    assert!(
        !got.is_empty() && !from_b.is_empty(),
        "both instances got traces"
    );
    for (k, v) in from_b {
        assert!(
            got.insert(k.clone(), v).is_none(),
            "{k} scored by both instances"
        );
    }
    let want = keyed(&replay_rows(&all_files, &fixture));
    assert_eq!(got, want);
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
    poll_until(Duration::from_secs(30), || got().len() >= want.len());
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

/// One turn of a conversation: trace `t`, shifted `at` ns later.
fn turn(t: u8, session: &str, tool: &str, at: u64) -> ExportTraceServiceRequest {
    let mut spans = agent_spans(t, session, &[(tool, json!({}))]);
    for s in &mut spans {
        s.start_time_unix_nano += at;
        s.end_time_unix_nano += at;
    }
    request(spans)
}

fn session_rows(rows: &[Value]) -> Vec<&Value> {
    of_type(rows, "evaluation")
        .into_iter()
        .filter(|r| r.get("session").is_some())
        .collect()
}

#[test]
fn sessions_are_scored_when_idle_and_rescored_by_later_turns() {
    let server = start("sessions", |c, dir| {
        let fixture = dir.join("expected.jsonl");
        std::fs::write(
            &fixture,
            r#"{"id":"trip","session_id":"sess-1","expected_tools":["search_flights","book_flight","send_email"],"threshold":1.0}
"#,
        )
        .unwrap();
        c.expected = Some(fixture);
        c.session_wait = Duration::from_millis(500);
    });
    let mut client = server.grpc_client();
    // Two turns, each its own trace, in one request: they complete together,
    // so the first evaluation has both however slow the machine is.
    let mut both = turn(1, "sess-1", "search_flights", 0);
    both.resource_spans
        .extend(turn(2, "sess-1", "book_flight", 10_000).resource_spans);
    server.grpc_export(&mut client, both).unwrap();
    // Another conversation that no case asks for.
    server
        .grpc_export(&mut client, turn(3, "sess-2", "search_flights", 0))
        .unwrap();
    server.wait_for("three traces scored", |s| s.traces_scored == 3);
    poll_until(Duration::from_secs(15), || {
        !session_rows(&server.rows()).is_empty()
    });
    let rows = server.rows();
    let first = session_rows(&rows);
    assert_eq!(first.len(), 1, "one session evaluation: {rows:?}");
    let e = first[0];
    assert_eq!(e["case"], "trip");
    assert_eq!(e["revision"], 1);
    assert_eq!(e["session"]["id"], "sess-1");
    assert_eq!(
        e["session"]["trace_ids"],
        json!([hex(&trace_id(1)), hex(&trace_id(2))])
    );
    let called: Vec<&str> = e["tools_called"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(called, ["search_flights", "book_flight"]);
    assert_eq!(e["pass"], false, "send_email is still missing: {e}");
    // The session's traces are not unmatched; the other conversation is.
    let unmatched: Vec<&str> = of_type(&rows, "unmatched_trace")
        .iter()
        .map(|r| r["trace_id"].as_str().unwrap())
        .collect();
    assert_eq!(unmatched, [hex(&trace_id(3))]);

    // A later turn re-scores the session: revision 2, all three calls.
    server
        .grpc_export(&mut client, turn(4, "sess-1", "send_email", 20_000))
        .unwrap();
    poll_until(Duration::from_secs(15), || {
        session_rows(&server.rows()).len() >= 2
    });
    let rows = server.rows();
    let second = session_rows(&rows)[1].clone();
    assert_eq!(second["revision"], 2);
    assert_eq!(second["pass"], true, "{second}");
    assert_eq!(second["session"]["trace_ids"].as_array().unwrap().len(), 3);
    let (_, text) = get(server.admin.unwrap(), "/metrics");
    let m = parse_prometheus(&text);
    assert_eq!(m["toolscore_sessions_scored_total"], 2.0, "{text}");
    assert_eq!(m["toolscore_sessions_waiting"], 0.0, "{text}");

    // A turn still waiting at shutdown is scored before the server exits.
    server
        .grpc_export(&mut client, turn(5, "sess-1", "send_email", 30_000))
        .unwrap();
    let (summary, rows) = server.stop();
    let all = session_rows(&rows);
    assert_eq!(all.len(), 3, "{rows:?}");
    assert_eq!(all[2]["revision"], 3);
    assert_eq!(all[2]["pass"], false, "an extra send_email: {}", all[2]);
    assert!(summary.unmatched_cases.is_empty(), "{summary:?}");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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
    poll_until(Duration::from_secs(30), || capture.span_bytes() == want);
    assert_eq!(capture.span_bytes(), want);
    let start_t = Instant::now();
    while send(3).status != 200 {
        assert!(
            start_t.elapsed() < Duration::from_secs(10),
            "never accepted again"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server.stop();
    stop.cancel();
}

// ------------------------------------------------ hostile clients (issue 14)

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
    poll_until(Duration::from_secs(15), || open() >= 4.0);
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
    poll_until(Duration::from_secs(15), || open() == 0.0);
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
    poll_until(Duration::from_secs(15), || held() >= 60.0 * 1024.0);
    assert!(held() >= 60.0 * 1024.0, "the server holds what arrived");
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
    poll_until(Duration::from_secs(15), || held() == 0.0);
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
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut closed = false;
    while !closed && Instant::now() < deadline {
        let mut extra = TcpStream::connect(srv.grpc).unwrap();
        extra
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        closed = matches!(extra.read(&mut buf), Ok(0));
        if !closed {
            idle.push(extra);
        }
    }
    assert!(closed, "a connection past the cap is closed at once");
    assert!(refused() >= 1.0, "and counted");
    // Freed places take clients again (the server sees the ends first).
    drop(idle);
    let url = format!("http://{}", srv.grpc);
    let deadline = Instant::now() + Duration::from_secs(15);
    let accepted = loop {
        let sent = srv.rt.block_on(async {
            let mut client = TraceServiceClient::connect(url.clone()).await.ok()?;
            client.export(weather(1)).await.ok()
        });
        if sent.is_some() {
            break true;
        }
        if Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(accepted, "a place freed takes a client again");
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
    poll_until(Duration::from_secs(15), || held() >= 60.0 * 1024.0);
    assert!(held() >= 60.0 * 1024.0, "the half-sent message is charged");
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
    poll_until(Duration::from_secs(15), || held() == 0.0);
    srv.grpc_export(&mut client, big).unwrap();
    let (summary, _) = srv.stop();
    assert_eq!(summary.stats.spans, 3, "only the accepted export's spans");
}

/// A results file that cannot be written (a full disk: `/dev/full`) is not
/// acknowledged over: readiness goes 503, new data gets 503 with a retry
/// hint, and the run ends with an error naming the rows it could not write.
#[test]
fn a_failing_results_file_refuses_new_data_and_fails_the_run() {
    let full = Path::new("/dev/full");
    if !full.exists() {
        eprintln!("skipped: no /dev/full on this system");
        return;
    }
    let srv = start("dev-full", |c, _| c.output = Some(full.to_path_buf()));
    let r = post(
        srv.http,
        &[PROTOBUF],
        &weather(1).encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 200, "accepted before anything failed");
    let ready = || get(srv.admin.unwrap(), "/readyz").0;
    poll_until(Duration::from_secs(15), || ready() == 503);
    assert_eq!(ready(), 503);
    let (_, text) = get(srv.admin.unwrap(), "/metrics");
    assert_eq!(metric_value(&text, "toolscore_output_failing"), 1.0);
    let r = post(
        srv.http,
        &[PROTOBUF],
        &weather(2).encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 503);
    assert!(r.header("retry-after").is_some());
    let mut client = srv.grpc_client();
    let err = srv.grpc_export(&mut client, weather(3)).unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unavailable);
    srv.token.cancel();
    let result = srv
        .rt
        .block_on(async { tokio::time::timeout(Duration::from_secs(30), srv.handle).await })
        .expect("stops within 30 s")
        .expect("server task");
    match result {
        Err(ServeError::Abandoned(why)) => assert!(why.contains("row(s)"), "{why}"),
        other => panic!("the run must fail: {other:?}"),
    }
}

/// A behaviour metric scores live as in replay: a repeated call is named
/// redundant and counted in the row.
#[test]
fn tool_efficiency_scores_in_serve() {
    let srv = start("efficiency", |c, dir| {
        let p = dir.join("expected.jsonl");
        let case = json!({
            "id": "eff",
            "match": {"gen_ai.operation.name": "invoke_agent"},
            "expected_tools": [],
            "metrics": ["tool_efficiency"],
        });
        std::fs::write(&p, case.to_string()).unwrap();
        c.expected = Some(p);
    });
    let mut client = srv.grpc_client();
    let req = request(agent_spans(
        41,
        "conv-eff",
        &[
            ("get_weather", json!({"city": "Paris"})),
            ("get_weather", json!({"city": "Paris"})),
        ],
    ));
    srv.grpc_export(&mut client, req).unwrap();
    srv.wait_for("the trace to be scored", |s| s.evaluations >= 1);
    let (_, rows) = srv.stop();
    let evals = of_type(&rows, "evaluation");
    assert_eq!(evals.len(), 1, "{rows:#?}");
    let e = evals[0];
    assert_eq!(
        (e["redundant"].as_u64(), e["wasted"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(e["score"].as_f64(), Some(0.5));
    let why = e["explanation"].as_str().unwrap();
    assert!(
        why.contains("#2 get_weather {\"city\":\"Paris\"} repeats #1"),
        "{why}"
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

/// `--html FILE`: the page is written at shutdown from the latest results,
/// failing the same cases as the JSONL rows.
#[test]
fn html_report_is_written_at_shutdown() {
    // Outside the server's directory, which `stop` removes.
    let keep = TempDir::new("html-page");
    let page = keep.path().join("report.html");
    let server = start("html", |c, dir| {
        let fixture = dir.join("expected.jsonl");
        let case = json!({"id": "weather-rome", "trace_id": crate::util::hex(&trace_id(1)),
            "expected_tools": [{"name": "get_weather", "args": {"city": "Paris"}},
                               {"name": "get_weather", "args": {"city": "Rome"}}],
            "threshold": 0.9});
        std::fs::write(&fixture, format!("{case}\n")).unwrap();
        c.expected = Some(fixture);
        c.html = Some(page.clone());
    });
    // Written at start (a placeholder): a bad path fails before any data.
    assert!(std::fs::read_to_string(&page)
        .unwrap()
        .contains("writes this report when it shuts down"));
    for t in 1..=2 {
        let r = post(
            server.http,
            &[PROTOBUF],
            &weather(t).encode_to_vec(),
            Framing::Length,
        );
        assert_eq!(r.status, 200);
    }
    server.wait_for("both traces scored", |s| s.traces_scored == 2);
    let (summary, rows) = server.stop();
    assert_eq!(summary.failed, 1);
    let html = std::fs::read_to_string(&page).unwrap();
    let data = html
        .split("<script type=\"application/json\" id=\"data\">")
        .nth(1)
        .and_then(|s| s.split("</script>").next())
        .expect("data script");
    let data: Value = serde_json::from_str(data).unwrap();
    let failing: Vec<&Value> = of_type(&rows, "evaluation")
        .into_iter()
        .filter(|r| r["pass"] == json!(false))
        .map(|r| &r["case"])
        .collect();
    let page_failing: Vec<&Value> = data["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["pass"] == json!(false))
        .map(|c| &c["case"])
        .collect();
    assert_eq!(page_failing, failing);
    assert_eq!(page_failing, [&json!("weather-rome")]);
    assert_eq!(data["unmatched_traces"].as_array().unwrap().len(), 1);
    assert!(
        html.contains(
            "<td data-v=\"get_weather\" class=\"name\">get_weather</td><td data-v=\"4\">"
        ),
        "4 calls of get_weather in the tool table"
    );
}
