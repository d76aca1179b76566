//! The LLM judge against an OpenAI-compatible server started here on
//! 127.0.0.1:0: it checks each request's shape and answers scripted
//! verdicts (good ones, a malformed one, 429 with Retry-After, 500s, a
//! 400 for structured output, a hang past the timeout). `replay` runs on the
//! real binary; `serve` in process, with a slow judge.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use toolscore::evaluate::{MetricSpec, ScoreSettings};
use toolscore::judge::{Judge, JudgeConfig};
use toolscore::serve::{CancellationToken, Listeners, Scoring, ServeConfig, Server};

use crate::util::{data, poll_until, toolscore, TempDir};

const WEATHER: &str = "31d90f5c8edb6ba92f3e6727a8ad96ea";
const SUPPORT: &str = "8a7f18c6fa42f9918229342ebb4c78f8";
const MODEL: &str = "judge-model-x";

/// What the fake server answers.
enum Reply {
    /// 200 with this message content and usage.
    Content(String),
    Status(u16, Option<&'static str>),
    /// Sleeps, then answers this content.
    Hang(Duration, String),
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
struct Seen {
    body: Value,
    auth: Option<String>,
    team: Option<String>,
}

impl Seen {
    fn system(&self) -> &str {
        self.body["messages"][0]["content"].as_str().unwrap_or("")
    }
    fn user(&self) -> &str {
        self.body["messages"][1]["content"].as_str().unwrap_or("")
    }
    fn format(&self) -> &str {
        self.body["response_format"]["type"]
            .as_str()
            .unwrap_or("none")
    }
}

type Script = dyn Fn(&Seen, usize) -> Reply + Send + Sync;

struct Fake {
    seen: Mutex<Vec<Seen>>,
    /// Answers per prompt so far (by user message), for "fail once" scripts.
    tries: Mutex<std::collections::HashMap<String, usize>>,
    script: Box<Script>,
    /// Reject `json_schema` response formats with 400 (a server without
    /// structured output).
    no_schema: bool,
}

struct FakeServer {
    url: String,
    fake: Arc<Fake>,
    rt: Option<tokio::runtime::Runtime>,
}

impl FakeServer {
    fn start(
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
        let app = axum::Router::new()
            .route("/v1/chat/completions", axum::routing::post(chat))
            .with_state(Arc::clone(&fake));
        rt.spawn(async move { axum::serve(listener, app).await });
        FakeServer {
            url: format!("http://{addr}/v1"),
            fake,
            rt: Some(rt),
        }
    }

    fn seen(&self) -> Vec<Seen> {
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

async fn chat(State(fake): State<Arc<Fake>>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |k: &str| {
        headers
            .get(k)
            .and_then(|v| v.to_str().ok())
            .map(String::from)
    };
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let seen = Seen {
        body,
        auth: header("authorization"),
        team: header("x-team"),
    };
    fake.seen.lock().unwrap().push(seen.clone());
    if fake.no_schema && seen.format() == "json_schema" {
        return (
            StatusCode::BAD_REQUEST,
            r#"{"error":"response_format json_schema unsupported"}"#,
        )
            .into_response();
    }
    let n = {
        let mut tries = fake.tries.lock().unwrap();
        let n = tries.entry(seen.user().to_string()).or_insert(0);
        *n += 1;
        *n
    };
    let content = match (fake.script)(&seen, n) {
        Reply::Content(c) => c,
        Reply::Status(code, retry_after) => {
            let mut r = (StatusCode::from_u16(code).unwrap(), "try later").into_response();
            if let Some(s) = retry_after {
                r.headers_mut().insert("retry-after", s.parse().unwrap());
            }
            return r;
        }
        Reply::Hang(d, c) => {
            tokio::time::sleep(d).await;
            c
        }
    };
    let reply = json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": seen.body["model"],
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": seen.user().len() / 4, "completion_tokens": 20,
                  "total_tokens": seen.user().len() / 4 + 20},
    });
    (
        StatusCode::OK,
        [("content-type", "application/json")],
        reply.to_string(),
    )
        .into_response()
}

fn verdict(yes: bool, why: &str) -> Reply {
    Reply::Content(json!({"rationale": why, "verdict": if yes {"yes"} else {"no"}}).to_string())
}

fn pydantic() -> String {
    data("corpus/pydantic-ai/traces.jsonl")
        .display()
        .to_string()
}

fn fixture(dir: &Path) -> String {
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

fn rows(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSONL line"))
        .collect()
}

fn eval<'a>(rows: &'a [Value], case: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["type"] == "evaluation" && r["case"] == case)
        .unwrap_or_else(|| panic!("no evaluation of {case}: {rows:?}"))
}

fn summary(rows: &[Value]) -> &Value {
    rows.iter()
        .find(|r| r["type"] == "summary")
        .expect("summary row")
}

/// The scripted judge of the replay test: fuzzy says yes to the weather
/// trace after a 429, no to the support trace (in a code fence with prose);
/// efficiency gets a 500 then yes on weather and a malformed answer on
/// support; cubeo scores 0.85 and 0.5.
fn replay_script(seen: &Seen, n: usize) -> Reply {
    let weather = seen
        .user()
        .contains("What is the weather in Paris and London?");
    let sys = seen.system();
    if sys.contains("Compare the calls the agent made") {
        if weather {
            return match n {
                1 => Reply::Status(429, Some("0")),
                _ => verdict(true, "same calls"),
            };
        }
        return Reply::Content(
            "Here is my verdict:\n```json\n{\"verdict\": \"no\", \"rationale\": \"create_ticket priority differs\"}\n```".into(),
        );
    }
    if sys.contains("used its tools efficiently") {
        if weather {
            return match n {
                1 => Reply::Status(500, None),
                _ => verdict(true, "no redundant call"),
            };
        }
        return Reply::Content("I think it was mostly fine, hard to say.".into());
    }
    if sys.contains("score how well they agree") {
        let score = if weather { 0.85 } else { 0.5 };
        return Reply::Content(json!({"rationale": "compared", "score": score}).to_string());
    }
    Reply::Status(418, None)
}

fn replay_args<'a>(
    server: &'a str,
    cache: &'a str,
    fixture: &'a str,
    trace: &'a str,
) -> Vec<&'a str> {
    vec![
        "replay",
        trace,
        "--expected",
        fixture,
        "-m",
        "mlflow.llm_fuzzy",
        "-m",
        "mlflow.llm_efficiency",
        "-m",
        "cubeo:strict",
        "-m",
        "tool_correctness",
        "--judge-url",
        server,
        "--judge-model",
        MODEL,
        "--judge-header",
        "x-team=evals",
        "--judge-cache",
        cache,
        "--judge-retries",
        "2",
        "--judge-timeout",
        "5",
        "--judge-concurrency",
        "2",
        "--format",
        "jsonl",
        "-q",
    ]
}

#[test]
fn replay_scores_with_retries_errors_and_cache() {
    let server = FakeServer::start(true, replay_script);
    let dir = TempDir::new("judge-replay");
    let cache = dir.path().join("cache").display().to_string();
    let f = fixture(dir.path());
    let trace = pydantic();
    let run = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_toolscore"))
            .args(replay_args(&server.url, &cache, &f, &trace))
            .env("TOOLSCORE_JUDGE_API_KEY", "sk-test")
            .output()
            .unwrap()
    };
    let out = run();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The support case fails (fuzzy says no): exit 1, not an error.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let r = rows(&out.stdout);

    let w = eval(&r, "weather");
    assert_eq!(w["metrics"]["mlflow.llm_fuzzy"]["score"], 1.0, "{w}");
    assert_eq!(
        w["metrics"]["mlflow.llm_fuzzy"]["reason"],
        "yes: same calls"
    );
    assert_eq!(w["metrics"]["mlflow.llm_efficiency"]["score"], 1.0, "{w}");
    // strict: 0.85 >= 0.8 rounds to 1.
    assert_eq!(w["metrics"]["cubeo:strict"]["score"], 1.0, "{w}");
    assert_eq!(w["metrics"]["tool_correctness"]["score"], 1.0);
    assert_eq!(w["metrics"]["mlflow.llm_fuzzy"]["judge"]["cached"], false);
    assert!(
        w["metrics"]["mlflow.llm_fuzzy"]["judge"]["prompt_tokens"]
            .as_u64()
            .unwrap()
            > 50
    );

    let s = eval(&r, "support");
    let fuzzy = &s["metrics"]["mlflow.llm_fuzzy"];
    assert_eq!(
        (fuzzy["score"].as_f64(), fuzzy["pass"].as_bool()),
        (Some(0.0), Some(false))
    );
    assert!(
        fuzzy["reason"]
            .as_str()
            .unwrap()
            .contains("priority differs"),
        "{fuzzy}"
    );
    let eff = &s["metrics"]["mlflow.llm_efficiency"];
    assert_eq!(eff["score"], Value::Null);
    assert!(
        eff["error"].as_str().unwrap().contains("unparseable"),
        "{eff}"
    );
    assert_eq!(
        s["metrics"]["cubeo:strict"]["score"], 0.0,
        "0.5 rounds to 0"
    );
    assert!(
        s["metrics"]["tool_correctness"]["score"].is_number(),
        "other metrics kept"
    );

    // Request shape: model, messages, auth and extra header; the prompt
    // shows the request, the tools offered, the calls and the expectations.
    let seen = server.seen();
    for q in &seen {
        assert_eq!(q.body["model"], MODEL);
        assert_eq!(q.body["messages"][0]["role"], "system");
        assert_eq!(q.body["messages"][1]["role"], "user");
        assert_eq!(q.auth.as_deref(), Some("Bearer sk-test"));
        assert_eq!(q.team.as_deref(), Some("evals"));
    }
    assert!(
        seen.iter().any(|q| q.format() == "json_schema"),
        "asked for a schema first"
    );
    let answered: Vec<&Seen> = seen
        .iter()
        .filter(|q| q.format() != "json_schema")
        .collect();
    assert!(
        answered.iter().all(|q| q.format() == "json_object"),
        "fell back to json_object"
    );
    let fuzzy_weather = seen
        .iter()
        .find(|q| q.system().contains("Compare the calls") && q.user().contains("Paris and London"))
        .unwrap();
    let u = fuzzy_weather.user();
    for needle in [
        "What is the weather in Paris and London?",
        "get_weather: Current weather for a city.",
        r#"get_weather({"city":"Paris"})"#,
        r#"get_weather({"city":"London"})"#,
        "## Expected tool calls (order does not matter)",
        "format_answer (arguments not specified)",
        "->",
    ] {
        assert!(u.contains(needle), "prompt lacks {needle:?}:\n{u}");
    }

    // Counted: 2 traces x 3 judged metrics = 6 prompts; + 1 for the 429,
    // + 1 for the 500, + the 400s that switched the format.
    let sum = summary(&r);
    let judge = &sum["judge"];
    let requests = seen.len() as u64;
    assert_eq!(judge["requests"].as_u64(), Some(requests), "{judge}");
    assert_eq!(judge["retries"], 2, "{judge}");
    assert_eq!(judge["errors"], 1, "{judge}");
    assert_eq!(judge["cache_hits"], 0);
    assert!(judge["prompt_tokens"].as_u64().unwrap() > 0);
    let schema_400s = seen.iter().filter(|q| q.format() == "json_schema").count() as u64;
    assert_eq!(requests, 6 + 2 + schema_400s);

    // A rerun answers from the cache: only the unparseable prompt is asked
    // again.
    let out2 = run();
    assert_eq!(out2.status.code(), Some(1));
    let r2 = rows(&out2.stdout);
    let judge2 = &summary(&r2)["judge"];
    assert_eq!(judge2["cache_hits"], 5, "{judge2}");
    // The one prompt asked again: its 400 for the schema, then the answer.
    assert_eq!(judge2["requests"], 2, "{judge2}");
    assert_eq!(server.seen().len() as u64, requests + 2);
    let w2 = eval(&r2, "weather");
    assert_eq!(w2["metrics"]["mlflow.llm_fuzzy"]["score"], 1.0);
    assert_eq!(w2["metrics"]["mlflow.llm_fuzzy"]["judge"]["cached"], true);
}

#[test]
fn replay_reports_rate_limit_and_timeout_per_metric() {
    // Weather: the judge hangs past the timeout; support: 429 every time.
    let server = FakeServer::start(false, |seen, _| {
        if seen.user().contains("Paris and London") {
            Reply::Hang(Duration::from_secs(10), "{}".into())
        } else {
            Reply::Status(429, Some("0"))
        }
    });
    let dir = TempDir::new("judge-errors");
    let f = fixture(dir.path());
    let started = Instant::now();
    let out = toolscore(&[
        "replay",
        &pydantic(),
        "--expected",
        &f,
        "-m",
        "tool_correctness",
        "-m",
        "mlflow.llm_no_expectations",
        "--judge-url",
        &server.url,
        "--judge-model",
        MODEL,
        "--judge-timeout",
        "0.5",
        "--judge-retries",
        "1",
        "--format",
        "jsonl",
        "-q",
    ]);
    assert!(
        started.elapsed() < Duration::from_secs(9),
        "the hang was cut"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let r = rows(&out.stdout);
    let w = eval(&r, "weather");
    let m = &w["metrics"]["mlflow.llm_no_expectations"];
    assert_eq!(m["error"], "judge timed out after 2 attempt(s)", "{m}");
    assert_eq!(
        w["metrics"]["tool_correctness"]["score"], 1.0,
        "other results kept"
    );
    let s = eval(&r, "support");
    assert_eq!(
        s["metrics"]["mlflow.llm_no_expectations"]["error"],
        "judge rate limited (HTTP 429) after 2 attempt(s)"
    );
    // No-expectations prompts carry no expected calls.
    assert!(server
        .seen()
        .iter()
        .all(|q| !q.user().contains("Expected tool calls")));
}

#[test]
fn dry_run_prints_prompts_and_calls_nothing() {
    let dir = TempDir::new("judge-dry");
    let f = fixture(dir.path());
    let out = toolscore(&[
        "replay",
        &pydantic(),
        "--expected",
        &f,
        "-m",
        "mlflow.llm_fuzzy_ordered",
        "--judge-model",
        MODEL,
        "--judge-dry-run",
        "--format",
        "jsonl",
        "-q",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr
            .matches("=== judge prompt: mlflow.llm_fuzzy_ordered")
            .count(),
        2,
        "{stderr}"
    );
    assert!(
        stderr.contains("## Expected tool calls, in this order"),
        "{stderr}"
    );
    assert!(stderr.contains("I cannot log in"), "{stderr}");
    let r = rows(&out.stdout);
    assert_eq!(
        eval(&r, "weather")["metrics"]["mlflow.llm_fuzzy_ordered"]["error"],
        "judge dry run: not called"
    );
    assert_eq!(summary(&r)["judge"]["requests"], 0);
}

#[test]
fn judged_metric_without_a_judge_is_a_usage_error_and_cubeo_is_labelled() {
    let out = toolscore(&["replay", &pydantic(), "-m", "mlflow.llm_efficiency", "-q"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--judge-url"));
    let dir = TempDir::new("judge-none");
    let f = fixture(dir.path());
    let out = toolscore(&[
        "replay",
        &pydantic(),
        "-e",
        &f,
        "-m",
        "cubeo",
        "--format",
        "jsonl",
        "-q",
    ]);
    let r = rows(&out.stdout);
    let reason = eval(&r, "weather")["metrics"]["cubeo"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.starts_with("approximation (no judge configured)"),
        "{reason}"
    );
}

#[test]
fn inspect_shows_request_and_available_tools() {
    let out = toolscore(&["inspect", &pydantic(), "--format", "jsonl", "-q"]);
    let r = rows(&out.stdout);
    let w = r.iter().find(|r| r["trace_id"] == WEATHER).unwrap();
    assert_eq!(w["request"], "What is the weather in Paris and London?");
    let names: Vec<&str> = w["available_tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"get_weather") && names.contains(&"format_answer"),
        "{names:?}"
    );
    let out = toolscore(&["inspect", &pydantic(), "-q"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("request: What is the weather in Paris and London?"),
        "{table}"
    );
    assert!(table.contains("tools available: get_weather"), "{table}");
}

/// `serve` with a slow judge: ingest answers at once while judged metrics
/// wait on the judge queue; results arrive with every metric.
#[test]
fn serve_judges_off_the_scoring_threads() {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&asked);
    let server = FakeServer::start(false, move |_, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        Reply::Hang(
            Duration::from_millis(3000),
            json!({"rationale": "fine", "verdict": "yes"}).to_string(),
        )
    });
    let dir = TempDir::new("judge-serve");
    let out = dir.path().join("results.jsonl");
    let config = ServeConfig {
        grpc_endpoint: "127.0.0.1:0".into(),
        http_endpoint: "127.0.0.1:0".into(),
        admin_endpoint: "127.0.0.1:0".into(),
        decision_wait: Duration::from_millis(200),
        output: Some(out.clone()),
        expected: Some(fixture(dir.path()).into()),
        quiet: true,
        status_interval: Duration::from_secs(60),
        ..ServeConfig::default()
    };
    let judge = Judge::new(
        JudgeConfig {
            url: Some(server.url.clone()),
            model: Some(MODEL.into()),
            concurrency: 2,
            timeout_secs: 10.0,
            ..JudgeConfig::default()
        },
        None,
    )
    .unwrap();
    let settings = ScoreSettings {
        metrics: MetricSpec::parse_list(&["tool_correctness", "mlflow.llm_no_expectations"])
            .unwrap(),
        judge: Some(Arc::new(judge)),
        ..ScoreSettings::default()
    };
    let scoring = Scoring {
        settings,
        ..Scoring::default()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let srv = Server::new(config.clone(), scoring).unwrap();
    let listeners = rt.block_on(Listeners::bind(&config)).unwrap();
    let http = listeners.http_addr().unwrap();
    let token = CancellationToken::new();
    let handle = rt.spawn(srv.serve(listeners, token.clone()));

    let client = reqwest::blocking::Client::new();
    let lines = std::fs::read_to_string(pydantic()).unwrap();
    let started = Instant::now();
    for line in lines.lines() {
        let resp = client
            .post(format!("http://{http}/v1/traces"))
            .header("content-type", "application/json")
            .body(line.to_string())
            .send()
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
    }
    // Ingest never waited on the judge (each answer takes 3 s).
    assert!(
        started.elapsed() < Duration::from_millis(3000),
        "{:?}",
        started.elapsed()
    );
    let rows = poll_until("two judged results", Duration::from_secs(30), || {
        let rows: Vec<Value> = std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let evals = rows.iter().filter(|r| r["type"] == "evaluation").count();
        if evals >= 2 {
            Ok(rows)
        } else {
            Err(rows)
        }
    });
    for case in ["weather", "support"] {
        let e = eval(&rows, case);
        assert_eq!(
            e["metrics"]["mlflow.llm_no_expectations"]["score"], 1.0,
            "{e}"
        );
        assert!(e["metrics"]["tool_correctness"]["score"].is_number());
    }
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    token.cancel();
    let summary = rt
        .block_on(async { tokio::time::timeout(Duration::from_secs(30), handle).await })
        .expect("server stops")
        .expect("server task")
        .expect("serve ok");
    let usage = summary.judge.expect("judge usage in the summary");
    assert_eq!((usage.requests, usage.errors), (2, 0));
    assert!(usage.prompt_tokens > 0 && usage.completion_tokens == 40);
}

#[test]
fn refusing_scope_answers_overloaded_without_calling() {
    let judge = Judge::new(
        JudgeConfig {
            url: Some("http://127.0.0.1:9/v1".into()),
            model: Some(MODEL.into()),
            ..JudgeConfig::default()
        },
        None,
    )
    .unwrap();
    let prompt = toolscore::judge::Prompt {
        metric: "m".into(),
        system: "s".into(),
        user: "u".into(),
        kind: toolscore::judge::AnswerKind::YesNo,
    };
    let err = toolscore::judge::refusing(|| judge.ask(&prompt)).unwrap_err();
    assert_eq!(err.to_string(), "judge overloaded: its queue is full");
    assert_eq!(judge.usage().requests, 0);
}

/// One agent trace as OTLP/JSON: a root with the user's request and one
/// `execute_tool get_weather` span.
fn weather_trace_json(n: u8) -> String {
    let trace_id = format!("{:032x}", 0xfeed_0000u64 + n as u64);
    let root = format!("{:016x}", 0x1000u64 + n as u64);
    let tool = format!("{:016x}", 0x2000u64 + n as u64);
    let s = |k: &str, v: &str| json!({"key": k, "value": {"stringValue": v}});
    json!({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "t"},
        "spans": [
        {"traceId": trace_id, "spanId": tool, "parentSpanId": root, "name": "execute_tool get_weather",
         "kind": 1, "startTimeUnixNano": "1000", "endTimeUnixNano": "1500",
         "attributes": [s("gen_ai.operation.name", "execute_tool"), s("gen_ai.tool.name", "get_weather"),
                        s("gen_ai.tool.call.arguments", &format!("{{\"city\": \"City{n}\"}}"))]},
        {"traceId": trace_id, "spanId": root, "name": "invoke_agent weather", "kind": 1,
         "startTimeUnixNano": "900", "endTimeUnixNano": "2000",
         "attributes": [s("gen_ai.operation.name", "invoke_agent"),
                        s("gen_ai.input.messages", &format!(
                            "[{{\"role\":\"user\",\"parts\":[{{\"type\":\"text\",\"content\":\"Weather in City{n}?\"}}]}}]"))]}
    ]}]}]})
    .to_string()
}

/// A judge slower than traces arrive: the judge queue (concurrency 1, two
/// jobs waiting) fills, and the next batches are scored at once with the
/// judged metric in error; every trace still gets its results.
#[test]
fn serve_full_judge_queue_gives_overloaded_errors_not_waits() {
    let server = FakeServer::start(false, |_, _| {
        Reply::Hang(
            Duration::from_millis(1500),
            json!({"rationale": "fine", "verdict": "yes"}).to_string(),
        )
    });
    let dir = TempDir::new("judge-overload");
    let out = dir.path().join("results.jsonl");
    let default = dir.path().join("default.json");
    std::fs::write(&default, r#"["get_weather"]"#).unwrap();
    let config = ServeConfig {
        grpc_endpoint: "127.0.0.1:0".into(),
        http_endpoint: "127.0.0.1:0".into(),
        admin_endpoint: "127.0.0.1:0".into(),
        decision_wait: Duration::from_millis(100),
        output: Some(out.clone()),
        default_expected: Some(default),
        quiet: true,
        status_interval: Duration::from_secs(60),
        ..ServeConfig::default()
    };
    let judge = Judge::new(
        JudgeConfig {
            url: Some(server.url.clone()),
            model: Some(MODEL.into()),
            concurrency: 1,
            timeout_secs: 10.0,
            ..JudgeConfig::default()
        },
        None,
    )
    .unwrap();
    let settings = ScoreSettings {
        metrics: MetricSpec::parse_list(&["tool_correctness", "mlflow.llm_efficiency"]).unwrap(),
        judge: Some(Arc::new(judge)),
        ..ScoreSettings::default()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let srv = Server::new(
        config.clone(),
        Scoring {
            settings,
            ..Scoring::default()
        },
    )
    .unwrap();
    let stats = srv.stats();
    let listeners = rt.block_on(Listeners::bind(&config)).unwrap();
    let http = listeners.http_addr().unwrap();
    let token = CancellationToken::new();
    let handle = rt.spawn(srv.serve(listeners, token.clone()));

    let client = reqwest::blocking::Client::new();
    let traces = 5u8;
    for n in 1..=traces {
        let resp = client
            .post(format!("http://{http}/v1/traces"))
            .header("content-type", "application/json")
            .body(weather_trace_json(n))
            .send()
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        // One batch per trace: wait until this one has left the buffer.
        poll_until(
            &format!("trace {n} to leave the buffer"),
            Duration::from_secs(10),
            || {
                let s = stats.snapshot();
                if s.spans >= 2 * n as u64 && s.buffered_traces == 0 {
                    Ok(())
                } else {
                    Err(s)
                }
            },
        );
    }
    let rows = poll_until("every trace's result", Duration::from_secs(30), || {
        let rows: Vec<Value> = std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if rows.iter().filter(|r| r["type"] == "evaluation").count() >= traces as usize {
            Ok(rows)
        } else {
            Err(rows)
        }
    });
    let evals: Vec<&Value> = rows.iter().filter(|r| r["type"] == "evaluation").collect();
    let overloaded = evals
        .iter()
        .filter(|e| {
            e["metrics"]["mlflow.llm_efficiency"]["error"] == "judge overloaded: its queue is full"
        })
        .count();
    let judged = evals
        .iter()
        .filter(|e| e["metrics"]["mlflow.llm_efficiency"]["score"] == 1.0)
        .count();
    // One judging, two waiting, the other two refused.
    assert_eq!((judged, overloaded), (3, 2), "{evals:?}");
    assert!(evals
        .iter()
        .all(|e| e["metrics"]["tool_correctness"]["score"] == 1.0));
    assert_eq!(server.seen().len(), 3);
    token.cancel();
    rt.block_on(async { tokio::time::timeout(Duration::from_secs(30), handle).await })
        .expect("server stops")
        .expect("server task")
        .expect("serve ok");
}
