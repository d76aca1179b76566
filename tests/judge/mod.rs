//! The LLM judge against scripted OpenAI-compatible servers started here on
//! 127.0.0.1:0: they check each request's shape and answer what a script
//! says (verdicts in the shapes real models give, 4xx/5xx in real servers'
//! shapes, hangs, endless bodies, redirects). `replay` runs on the real
//! binary; `serve` in process.

mod hostile;
mod replay;
mod semantics;
mod serve;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::util::data;

pub const WEATHER: &str = "31d90f5c8edb6ba92f3e6727a8ad96ea";
pub const SUPPORT: &str = "8a7f18c6fa42f9918229342ebb4c78f8";
pub const MODEL: &str = "judge-model-x";

/// What the fake server answers.
pub enum Reply {
    /// 200 with this message content and usage.
    Content(String),
    /// 200 with this content and `finish_reason`.
    Finished(String, &'static str),
    /// 200 with this whole response body.
    Envelope(Value),
    Status(u16, Option<&'static str>),
    /// This status with this body (a real server's error shape).
    StatusBody(u16, String),
    /// Sleeps, then answers this content (a slow model).
    Hang(Duration, String),
    /// 200 with a body that never ends.
    Endless,
    /// A redirect (`301`, `307`...) to this location.
    Redirect(u16, String),
    /// This status, the request's headers echoed in the body (a proxy
    /// that shows what it received).
    Echo(u16),
    /// Waits until the gate opens, then answers this content.
    Gate(Arc<tokio::sync::Semaphore>, String),
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    /// The body as sent (key order kept).
    pub raw: String,
    pub body: Value,
    pub headers: HashMap<String, String>,
}

impl Seen {
    pub fn header(&self, k: &str) -> Option<&str> {
        self.headers.get(k).map(String::as_str)
    }
    /// Every message's text, in order (the whole prompt).
    pub fn prompt(&self) -> String {
        self.body["messages"]
            .as_array()
            .map(|m| {
                m.iter()
                    .filter_map(|m| m["content"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    }
    pub fn format(&self) -> &str {
        self.body["response_format"]["type"]
            .as_str()
            .unwrap_or("none")
    }
}

type Script = dyn Fn(&Seen, usize) -> Reply + Send + Sync;

pub struct Fake {
    seen: Mutex<Vec<Seen>>,
    /// Answers per prompt so far, for "fail once" scripts.
    tries: Mutex<HashMap<String, usize>>,
    script: Box<Script>,
    /// Reject `json_schema` response formats with a 400 about
    /// `response_format` (a server without structured output).
    no_schema: bool,
}

pub struct FakeServer {
    pub url: String,
    /// `http://127.0.0.1:port`, without the API path.
    pub origin: String,
    pub fake: Arc<Fake>,
    rt: Option<tokio::runtime::Runtime>,
}

impl FakeServer {
    pub fn start(
        no_schema: bool,
        script: impl Fn(&Seen, usize) -> Reply + Send + Sync + 'static,
    ) -> FakeServer {
        let fake = Arc::new(Fake {
            seen: Mutex::new(Vec::new()),
            tries: Mutex::new(Default::default()),
            script: Box::new(script),
            no_schema,
        });
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        // Every path and method is answered (and recorded): a redirect's
        // target must show whatever reached it.
        // No body limit: an oversized prompt must reach the test's checks.
        let app = axum::Router::new()
            .fallback(chat)
            .layer(axum::extract::DefaultBodyLimit::disable())
            .with_state(Arc::clone(&fake));
        rt.spawn(async move { axum::serve(listener, app).await });
        FakeServer {
            url: format!("http://{addr}/v1"),
            origin: format!("http://{addr}"),
            fake,
            rt: Some(rt),
        }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.fake.seen.lock().unwrap().clone()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        // Hanging handlers must not hold the test up.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

async fn chat(
    State(fake): State<Arc<Fake>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let raw = String::from_utf8_lossy(&body).into_owned();
    let body = serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null);
    let seen = Seen {
        path: uri.path().to_string(),
        raw,
        body,
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect(),
    };
    fake.seen.lock().unwrap().push(seen.clone());
    if seen.body.is_null() {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    }
    if fake.no_schema && seen.format() == "json_schema" {
        return (
            StatusCode::BAD_REQUEST,
            r#"{"error":{"message":"response_format json_schema is not supported","type":"invalid_request_error"}}"#,
        )
            .into_response();
    }
    let n = {
        let mut tries = fake.tries.lock().unwrap();
        let n = tries.entry(seen.prompt()).or_insert(0);
        *n += 1;
        *n
    };
    let (content, finish) = match (fake.script)(&seen, n) {
        Reply::Content(c) => (c, "stop"),
        Reply::Finished(c, f) => (c, f),
        Reply::Envelope(v) => return json_response(StatusCode::OK, v.to_string()),
        Reply::Status(code, retry_after) => {
            let mut r = (StatusCode::from_u16(code).unwrap(), "try later").into_response();
            if let Some(s) = retry_after {
                r.headers_mut().insert("retry-after", s.parse().unwrap());
            }
            return r;
        }
        Reply::StatusBody(code, body) => {
            return json_response(StatusCode::from_u16(code).unwrap(), body)
        }
        Reply::Hang(d, c) => {
            tokio::time::sleep(d).await;
            (c, "stop")
        }
        Reply::Endless => return endless(),
        Reply::Redirect(code, to) => {
            return Response::builder()
                .status(code)
                .header("location", to)
                .body(Body::empty())
                .unwrap()
        }
        Reply::Echo(code) => {
            let mut lines: Vec<String> = seen
                .headers
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect();
            lines.sort();
            return (StatusCode::from_u16(code).unwrap(), lines.join("\n")).into_response();
        }
        Reply::Gate(gate, c) => {
            let _ = gate.acquire().await;
            (c, "stop")
        }
    };
    let chars = seen.prompt().len() as u64;
    let reply = json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": seen.body["model"],
        "choices": [{"index": 0, "finish_reason": finish,
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": chars / 4, "completion_tokens": 20,
                  "total_tokens": chars / 4 + 20},
    });
    json_response(StatusCode::OK, reply.to_string())
}

fn json_response(status: StatusCode, body: String) -> Response {
    (status, [("content-type", "application/json")], body).into_response()
}

/// A 200 whose body streams forever (64 KiB chunks of one shared buffer).
fn endless() -> Response {
    let chunk = Bytes::from(vec![b' '; 64 * 1024]);
    let head = Bytes::from_static(br#"{"choices":[{"message":{"content":""#);
    let stream = futures_util::stream::iter(
        std::iter::once(head)
            .chain(std::iter::repeat(chunk))
            .map(Ok::<_, std::io::Error>),
    );
    Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .body(Body::from_stream(stream))
        .unwrap()
}

/// A `{"result", "rationale"}` verdict.
pub fn verdict(yes: bool, why: &str) -> Reply {
    Reply::Content(json!({"result": if yes {"yes"} else {"no"}, "rationale": why}).to_string())
}

pub fn pydantic() -> String {
    data("corpus/pydantic-ai/traces.jsonl")
        .display()
        .to_string()
}

/// Cases for the two pydantic-ai traces.
pub fn fixture(dir: &Path) -> String {
    let p = dir.join("expected.jsonl");
    let lines = [
        json!({"id": "weather", "trace_id": WEATHER, "expected_tools": [
            {"name": "get_weather", "args": {"city": "Paris"}},
            {"name": "get_weather", "args": {"city": "London"}}, "format_answer"]}),
        json!({"id": "support", "trace_id": SUPPORT, "expected_tools": [
            {"name": "search_knowledge_base", "args": {"query": "cannot log in"}},
            {"name": "create_ticket", "args": {"priority": "high"}}]}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&p, text.join("\n")).unwrap();
    p.display().to_string()
}

pub fn rows(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSONL line"))
        .collect()
}

pub fn eval<'a>(rows: &'a [Value], case: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["type"] == "evaluation" && r["case"] == case)
        .unwrap_or_else(|| panic!("no evaluation of {case}: {rows:?}"))
}

pub fn summary(rows: &[Value]) -> &Value {
    rows.iter()
        .find(|r| r["type"] == "summary")
        .expect("summary row")
}

/// One agent trace as OTLP/JSON: an `invoke_agent` root holding the user's
/// `request` as its input messages and `tools` (OpenAI definitions) as the
/// tools offered, and one `execute_tool` span per `(name, arguments)`.
pub fn agent_trace(trace_id: &str, request: &str, tools: &Value, calls: &[(&str, &str)]) -> String {
    let s = |k: &str, v: &str| json!({"key": k, "value": {"stringValue": v}});
    let root = "00000000000000aa";
    let messages = json!([{"role": "user", "parts": [{"type": "text", "content": request}]}]);
    let mut spans = vec![json!({
        "traceId": trace_id, "spanId": root, "name": "invoke_agent planner", "kind": 1,
        "startTimeUnixNano": "1000", "endTimeUnixNano": "9000",
        "attributes": [s("gen_ai.operation.name", "invoke_agent"),
                       s("gen_ai.input.messages", &messages.to_string()),
                       s("gen_ai.tool.definitions", &tools.to_string())]})];
    for (i, (name, args)) in calls.iter().enumerate() {
        spans.push(json!({
            "traceId": trace_id, "spanId": format!("{:016x}", 0x100 + i), "parentSpanId": root,
            "name": format!("execute_tool {name}"), "kind": 1,
            "startTimeUnixNano": (2000 + i * 10).to_string(),
            "endTimeUnixNano": (2005 + i * 10).to_string(),
            "attributes": [s("gen_ai.operation.name", "execute_tool"), s("gen_ai.tool.name", name),
                           s("gen_ai.tool.call.arguments", args)]}));
    }
    json!({"resourceSpans": [{"resource": {"attributes": []},
        "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]})
    .to_string()
}
