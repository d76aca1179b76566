//! `serve` with a judge: judged scoring runs off the scoring threads, and
//! a judge slower than the traces come delays results, never changes them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use toolscore::evaluate::{MetricSpec, ScoreSettings};
use toolscore::judge::{Judge, JudgeConfig};
use toolscore::serve::{CancellationToken, Listeners, Scoring, ServeConfig, Server};

use super::{eval, fixture, pydantic, FakeServer, Reply, MODEL};
use crate::util::{poll_until, TempDir};

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
            json!({"result": "yes", "rationale": "fine"}).to_string(),
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
/// jobs waiting) fills, and the scoring thread waits for room (its batch
/// still in the buffer, which pushes back on the receivers when full).
/// Every trace is judged: no result depends on the load.
#[test]
fn serve_full_judge_queue_waits_and_judges_every_trace() {
    let server = FakeServer::start(false, |_, _| {
        Reply::Hang(
            Duration::from_millis(1500),
            json!({"result": "yes", "rationale": "fine"}).to_string(),
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
                    Err(Box::new(s))
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
    assert_eq!(evals.len(), traces as usize);
    for e in &evals {
        let m = &e["metrics"]["mlflow.llm_efficiency"];
        assert_eq!(m["score"], 1.0, "judged, not refused: {e}");
        assert_eq!(m["error"], Value::Null, "{e}");
        assert_eq!(e["metrics"]["tool_correctness"]["score"], 1.0);
    }
    assert_eq!(server.seen().len(), traces as usize);
    token.cancel();
    rt.block_on(async { tokio::time::timeout(Duration::from_secs(30), handle).await })
        .expect("server stops")
        .expect("server task")
        .expect("serve ok");
}
