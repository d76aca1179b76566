//! `toolscore serve` on real sockets (127.0.0.1:0): the opentelemetry-otlp
//! exporters, corpus replays over both transports compared with `replay`,
//! the OTLP status rules, limits and backpressure, scoring live, the
//! outputs, processor mode, and SIGTERM on the real binary. Decision waits
//! are short; every wait is bounded. This file is the shared harness.

mod corpus;
mod exporters;
mod files;
mod forward;
mod joins;
mod lifecycle;
mod limits;
mod logs;
mod outputs;
mod scoring;
mod setup;
mod status;
mod store;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;
use serde_json::{json, Value};

use toolscore::serve::{
    CancellationToken, Listeners, RpcStatus, Scoring, ServeConfig, ServeError, ServeStats,
    ServeSummary, Server, StatsSnapshot,
};

use crate::util::{poll_until, toolscore, TempDir};

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
    start_scoring(tag, Scoring::default(), tweak)
}

/// [`start`] with the scoring settings of `scoring`.
pub(crate) fn start_scoring(
    tag: &str,
    scoring: Scoring,
    tweak: impl FnOnce(&mut ServeConfig, &Path),
) -> TestServer {
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
    let server = Server::new(config.clone(), scoring).unwrap();
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

    /// Waits (at most 15 s) until `done` holds of the stats; a timeout
    /// shows the last ones.
    fn wait_for(&self, what: &str, done: impl Fn(&StatsSnapshot) -> bool) {
        poll_until(what, Duration::from_secs(15), || {
            let stats = self.stats();
            if done(&stats) {
                Ok(())
            } else {
                Err(Box::new(stats))
            }
        })
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

/// The `google.rpc.Status` of an error reply.
fn status_body(r: &Reply) -> RpcStatus {
    assert_eq!(r.header("content-type"), Some("application/x-protobuf"));
    RpcStatus::decode(r.body.as_slice()).expect("google.rpc.Status body")
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

/// One POST to `/v1/traces` on its own connection, with exact control of
/// the framing.
pub(crate) fn post(
    addr: SocketAddr,
    headers: &[(&str, &str)],
    body: &[u8],
    framing: Framing,
) -> Reply {
    post_to(addr, "/v1/traces", headers, body, framing)
}

/// [`post`] to `path`.
pub(crate) fn post_to(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    framing: Framing,
) -> Reply {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let mut head = format!("POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
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
pub(crate) const JSON: (&str, &str) = ("Content-Type", "application/json");

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

// ------------------------- serve == replay (here and in tests/properties.rs)

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

/// `replay`'s JSONL rows for `files`, read together in order, against
/// `fixture` (without one every trace is listed with its calls, and exit
/// code 2 says nothing was scored).
pub(crate) fn replay_rows(files: &[PathBuf], fixture: Option<&Path>) -> Vec<Value> {
    let mut args: Vec<String> = vec![
        "replay".into(),
        "--format".into(),
        "jsonl".into(),
        "-q".into(),
    ];
    if let Some(f) = fixture {
        args.extend(["--expected".into(), f.display().to_string()]);
    }
    args.extend(files.iter().map(|p| p.display().to_string()));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = toolscore(&argv);
    let ok = if fixture.is_some() { 0..=1 } else { 0..=2 };
    assert!(
        out.status.code().is_some_and(|c| ok.contains(&c)),
        "replay failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

// ------------------------------------------------------------ admin port

/// The value of an unlabelled sample in a Prometheus exposition.
fn metric_value(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(f64::NAN)
}

/// One GET on the admin port: status and body.
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
