//! MLflow's semantics of the judged metrics, judge errors that are not
//! agent failures, and requests that work on every server (issue 29).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use toolscore::judge::{parse_answer, AnswerKind, Judge, JudgeConfig, JudgeError, Prompt};

use super::{eval, fixture, pydantic, rows, summary, verdict, FakeServer, Reply, Seen, MODEL};
use crate::util::{poll_until, TempDir};

fn replay(fixture: &str, metrics: &[&str], url: &str, extra: &[&str]) -> std::process::Output {
    replay_trace(&pydantic(), fixture, metrics, url, extra)
}

fn replay_trace(
    trace: &str,
    fixture: &str,
    metrics: &[&str],
    url: &str,
    extra: &[&str],
) -> std::process::Output {
    let mut c = crate::util::bin();
    c.args(["replay", trace, "--expected", fixture]);
    for m in metrics {
        c.args(["-m", m]);
    }
    c.args(["--judge-url", url, "--judge-model", MODEL]);
    c.args(extra);
    c.output().unwrap()
}

/// The JSON data block of a prompt.
fn data_of(seen: &Seen) -> Value {
    let p = seen.prompt();
    let start = p.find("BEGIN DATA\n").expect("data block") + "BEGIN DATA\n".len();
    let end = p.find("\nEND DATA").expect("data block end");
    serde_json::from_str(&p[start..end]).expect("JSON data")
}

/// A 401 on one case, a truncated answer on the other: judge errors, not
/// failures. The cases neither pass nor fail, means leave them out, the
/// run exits 2, and the summary and JUnit show them apart from failures.
#[test]
fn judge_errors_are_not_agent_failures() {
    let server = FakeServer::start(false, |seen, _| {
        if seen.prompt().contains("Paris and London") {
            Reply::StatusBody(
                401,
                r#"{"error":{"message":"Incorrect API key provided"}}"#.into(),
            )
        } else {
            Reply::Finished("{\"result\": \"ye".into(), "length")
        }
    });
    let dir = TempDir::new("judge-not-failures");
    let f = fixture(dir.path());
    let metrics = ["tool_correctness", "mlflow.llm_fuzzy"];
    let out = replay(&f, &metrics, &server.url, &["--format", "jsonl", "-q"]);
    assert_eq!(out.status.code(), Some(2), "could not evaluate");
    let r = rows(&out.stdout);
    let w = eval(&r, "weather");
    let m = &w["metrics"]["mlflow.llm_fuzzy"];
    assert_eq!(
        (m["pass"].clone(), m["unjudged"].clone()),
        (Value::Null, json!("judge_error"))
    );
    assert!(m["error"].as_str().unwrap().contains("HTTP 401"), "{m}");
    assert_eq!(
        w["pass"],
        Value::Null,
        "the case neither passes nor fails: {w}"
    );
    let s = &eval(&r, "support")["metrics"]["mlflow.llm_fuzzy"];
    let err = s["error"].as_str().unwrap_or_default();
    assert!(
        err.contains("truncated") && err.contains("finish_reason `length`"),
        "{s}"
    );
    let sum = summary(&r);
    assert_eq!(
        (
            sum["passed"].as_u64(),
            sum["failed"].as_u64(),
            sum["judge_errors"].as_u64()
        ),
        (Some(0), Some(0), Some(2)),
        "{sum}"
    );
    let table = replay(&f, &metrics, &server.url, &["-q"]);
    assert_eq!(table.status.code(), Some(2));
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(!text.contains("FAIL"), "{text}");
    assert!(text.contains("judge error"), "{text}");
    assert!(text.contains("0 failed, 2 with judge errors"), "{text}");
    let junit = replay(&f, &metrics, &server.url, &["--format", "junit", "-q"]);
    let xml = String::from_utf8_lossy(&junit.stdout).into_owned();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let count = |tag: &str| doc.descendants().filter(|n| n.has_tag_name(tag)).count();
    assert_eq!((count("failure"), count("error")), (0, 2), "{xml}");
    let error = doc.descendants().find(|n| n.has_tag_name("error")).unwrap();
    assert_eq!(error.attribute("type"), Some("judge error"));
}

/// Serve the same script from two origins: a verdict that differs.
fn two_servers() -> (FakeServer, FakeServer) {
    (
        FakeServer::start(false, |_, _| verdict(true, "server A")),
        FakeServer::start(false, |_, _| verdict(false, "server B")),
    )
}

/// Two servers behind one model name (`local`): the cache key holds the
/// endpoint, so the second server is asked, not answered from the first's
/// cache; the same server again is answered from the cache.
#[test]
fn cache_key_holds_the_endpoint_and_what_shapes_the_answer() {
    let (a, b) = two_servers();
    let dir = TempDir::new("judge-two-servers");
    let f = fixture(dir.path());
    let cache = dir.path().join("cache").display().to_string();
    let run = |url: &str, extra: &[&str]| {
        let mut args = vec!["--judge-cache", cache.as_str(), "--format", "jsonl", "-q"];
        args.extend_from_slice(extra);
        rows(&replay(&f, &["mlflow.llm_no_expectations"], url, &args).stdout)
    };
    let reason = |r: &[Value]| {
        eval(r, "weather")["metrics"]["mlflow.llm_no_expectations"]["reason"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(reason(&run(&a.url, &[])), "yes: server A");
    assert_eq!(reason(&run(&b.url, &[])), "no: server B");
    assert_eq!((a.seen().len(), b.seen().len()), (2, 2));
    let again = run(&a.url, &[]);
    assert_eq!(reason(&again), "yes: server A");
    assert_eq!(summary(&again)["judge"]["cache_hits"], 2);
    assert_eq!(a.seen().len(), 2, "answered from the cache");
    // A temperature or a token cap changes the answer: asked again.
    run(&a.url, &["--judge-temperature", "0.3"]);
    run(&a.url, &["--judge-max-tokens", "100"]);
    assert_eq!(a.seen().len(), 6);
    let sent = a.seen();
    assert_eq!(sent[2].body["temperature"], 0.3, "{}", sent[2].raw);
    assert_eq!(sent[4].body["max_tokens"], 100, "{}", sent[4].raw);
}

/// A 400 for the context length (llama.cpp's and vLLM's real shapes) is
/// that prompt's error: structured output stays on for the others.
#[test]
fn context_length_400_keeps_structured_output() {
    const LLAMA: &str = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":4096}}"#;
    const VLLM: &str = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 9000 tokens (8000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#;
    let server = FakeServer::start(false, |seen, _| {
        let p = seen.prompt();
        if p.contains("used its tools without waste") {
            verdict(true, "fine")
        } else if p.contains("Paris and London") {
            Reply::StatusBody(400, LLAMA.into())
        } else {
            Reply::StatusBody(400, VLLM.into())
        }
    });
    let dir = TempDir::new("judge-ctx");
    let f = fixture(dir.path());
    let out = replay(
        &f,
        &["mlflow.llm_fuzzy", "mlflow.llm_efficiency"],
        &server.url,
        &["--judge-concurrency", "1", "--format", "jsonl", "-q"],
    );
    let r = rows(&out.stdout);
    for (case, says) in [
        ("weather", "exceeds the available context"),
        ("support", "maximum context length"),
    ] {
        let m = &eval(&r, case)["metrics"]["mlflow.llm_fuzzy"];
        let err = m["error"].as_str().unwrap_or_default();
        assert!(err.contains("HTTP 400") && err.contains(says), "{m}");
        assert_eq!(
            eval(&r, case)["metrics"]["mlflow.llm_efficiency"]["score"],
            1.0
        );
    }
    let seen = server.seen();
    assert!(
        seen.iter().all(|q| q.format() == "json_schema"),
        "structured output kept"
    );
}

/// Connection refused and 503 "loading model" are retried; 501 is not.
#[test]
fn what_is_retried() {
    let dir = TempDir::new("judge-retried");
    let f = fixture(dir.path());
    // A port nobody listens on: bound, then closed.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let url = format!("http://127.0.0.1:{port}/v1");
    let retries = ["--judge-retries", "1", "--format", "jsonl", "-q"];
    let r = rows(&replay(&f, &["mlflow.llm_efficiency"], &url, &retries).stdout);
    let err = eval(&r, "weather")["metrics"]["mlflow.llm_efficiency"]["error"].clone();
    assert!(
        err.as_str()
            .unwrap_or_default()
            .contains("unreachable after 2 attempt(s)"),
        "{err}"
    );
    assert_eq!(
        summary(&r)["judge"]["requests"],
        4,
        "two prompts, each sent twice"
    );

    let server = FakeServer::start(false, |seen, n| {
        match (seen.prompt().contains("Paris and London"), n) {
            (true, 1) => Reply::StatusBody(
                503,
                r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#
                    .into(),
            ),
            (true, _) => verdict(true, "loaded"),
            (false, _) => Reply::Status(501, None),
        }
    });
    let r = rows(&replay(&f, &["mlflow.llm_efficiency"], &server.url, &retries).stdout);
    let m = |case: &str| eval(&r, case)["metrics"]["mlflow.llm_efficiency"].clone();
    assert_eq!(m("weather")["score"], 1.0, "{}", m("weather"));
    assert_eq!(
        m("support")["error"],
        "judge server error (HTTP 501) after 1 attempt(s)"
    );
    assert_eq!(server.seen().len(), 3);
}

/// Identical prompts in flight at once are sent once; both callers get the
/// answer.
#[test]
fn identical_prompts_in_flight_are_sent_once() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let g = Arc::clone(&gate);
    let server = FakeServer::start(false, move |_, _| {
        Reply::Gate(
            Arc::clone(&g),
            json!({"result": "yes", "rationale": "r"}).to_string(),
        )
    });
    let judge = Arc::new(
        Judge::new(
            JudgeConfig {
                url: Some(server.url.clone()),
                model: Some(MODEL.into()),
                concurrency: 4,
                ..JudgeConfig::default()
            },
            None,
        )
        .unwrap(),
    );
    let prompt = Prompt {
        metric: "m".into(),
        text: "same".into(),
        kind: AnswerKind::YesNo,
    };
    let asks: Vec<_> = (0..2)
        .map(|_| {
            let (judge, prompt) = (Arc::clone(&judge), prompt.clone());
            std::thread::spawn(move || judge.ask(&prompt))
        })
        .collect();
    poll_until(
        "one request and one waiter",
        Duration::from_secs(10),
        || server.seen().len() == 1 && judge.usage().deduplicated == 1,
    );
    gate.add_permits(1);
    for a in asks {
        assert_eq!(a.join().unwrap().unwrap().verdict, Some(true));
    }
    assert_eq!(server.seen().len(), 1);
    let u = judge.usage();
    assert_eq!(
        (u.requests, u.deduplicated, u.completion_tokens),
        (1, 1, 20)
    );
}

/// Answers that are not an explicit verdict are errors, never guesses:
/// prose (whatever its first word), `"true"`, `true`, empty content, and
/// an answer cut off in `reasoning_content`.
#[test]
fn answers_are_parsed_strictly() {
    for text in [
        "No issues found. The agent called the right tools.",
        "Correct tool, but the city argument does not match.",
        r#"{"result": "true", "rationale": "r"}"#,
        r#"{"result": true, "rationale": "r"}"#,
        "",
    ] {
        let r = parse_answer(text, AnswerKind::YesNo);
        assert!(
            matches!(r, Err(JudgeError::Unparseable(_))),
            "{text}: {r:?}"
        );
    }
    let server = FakeServer::start(false, |_, _| {
        Reply::Envelope(json!({"choices": [{"finish_reason": "length",
            "message": {"content": "", "reasoning_content": "No wait, the"}}]}))
    });
    let dir = TempDir::new("judge-strict");
    let f = fixture(dir.path());
    let out = replay(
        &f,
        &["mlflow.llm_efficiency"],
        &server.url,
        &["--format", "jsonl", "-q"],
    );
    let r = rows(&out.stdout);
    let m = &eval(&r, "weather")["metrics"]["mlflow.llm_efficiency"];
    assert_eq!(m["score"], Value::Null, "no verdict: {m}");
    assert!(
        m["error"]
            .as_str()
            .unwrap_or_default()
            .contains("truncated"),
        "{m}"
    );
}

/// The request is the root span's input: the conversation up to this turn
/// (the sample's pydantic-currency trace asks "Convert 100 EUR to USD"
/// after a turn about Berlin's weather), not the first user message.
#[test]
fn request_is_the_conversation_up_to_this_turn() {
    let server = FakeServer::start(false, |_, _| verdict(true, "ok"));
    let dir = TempDir::new("judge-conversation");
    let f = dir.path().join("currency.jsonl");
    std::fs::write(
        &f,
        json!({"id": "currency", "trace_id": "4b3c362aef21d6f80c97988a8580894d",
               "expected_tools": [{"name": "convert_currency",
                                   "args": {"amount": 100, "src": "EUR", "dst": "USD"}}]})
        .to_string(),
    )
    .unwrap();
    let trace = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sample-traces/pydantic-ai/traces.jsonl");
    let out = replay_trace(
        &trace.display().to_string(),
        &f.display().to_string(),
        &["mlflow.llm_fuzzy"],
        &server.url,
        &["--format", "jsonl", "-q"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    let request = &data_of(&seen[0])["request"];
    let turns = request.as_array().expect("a conversation");
    let text = |m: &Value| m["parts"][0]["content"].as_str().unwrap_or("").to_string();
    assert_eq!(text(&turns[0]), "Weather in Berlin?");
    assert_eq!(text(turns.last().unwrap()), "Convert 100 EUR to USD");
}

/// MLflow's rules, in our prompts: names only when an expectation lacks
/// arguments; efficiency sees failures and calls a retry after a temporary
/// failure no waste; one ground-truth-free prompt; tools' outputs never
/// shown; no tools recorded is null.
#[test]
fn prompts_follow_mlflows_rules() {
    let server = FakeServer::start(false, |_, _| verdict(true, "ok"));
    let dir = TempDir::new("judge-rules");
    let f = fixture(dir.path());
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(
        &empty,
        json!({"id": "open", "trace_id": super::SUPPORT, "expected_tools": []}).to_string(),
    )
    .unwrap();
    replay(
        &f,
        &["mlflow.llm_fuzzy", "mlflow.llm_efficiency"],
        &server.url,
        &["--format", "jsonl", "-q"],
    );
    replay(
        &empty.display().to_string(),
        &["mlflow.llm_fuzzy", "mlflow.llm_no_expectations"],
        &server.url,
        &["--format", "jsonl", "-q"],
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 6);
    let weather_fuzzy = seen
        .iter()
        .find(|q| q.prompt().contains("so compare tools only"))
        .expect("names only: format_answer has no arguments");
    let d = data_of(weather_fuzzy);
    assert!(
        d["expected_calls"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c.get("arguments").is_none()),
        "{d}"
    );
    assert!(weather_fuzzy
        .prompt()
        .contains("reasonable for the request"));
    let eff = seen
        .iter()
        .find(|q| q.prompt().contains("without waste"))
        .unwrap();
    assert!(eff.prompt().contains("temporary error"), "{}", eff.prompt());
    for q in &seen {
        let p = q.prompt();
        assert!(p.contains("Do not judge whether the tools' outputs"), "{p}");
        let outputs = [r#""weather":"18C cloudy""#, "KB-12"];
        assert!(!outputs.iter().any(|o| p.contains(o)), "outputs shown: {p}");
    }
    // Both ground-truth-free asks are one prompt.
    let free: Vec<String> = seen[4..].iter().map(Seen::prompt).collect();
    assert_eq!(free[0], free[1]);
    assert!(free[0].contains("No expected calls are given"));
}

/// Token totals per model, and a cost from the config's price table.
#[test]
fn token_totals_per_model_and_cost() {
    let server = FakeServer::start(false, |_, _| verdict(true, "ok"));
    let dir = TempDir::new("judge-cost");
    let f = fixture(dir.path());
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        format!(
            "[judge]\n[judge.prices.\"{MODEL}\"]\nprompt_per_million = 2.0\ncompletion_per_million = 10.0\n"
        ),
    )
    .unwrap();
    let out = replay(
        &f,
        &["mlflow.llm_efficiency"],
        &server.url,
        &[
            "--config",
            &config.display().to_string(),
            "--format",
            "jsonl",
            "-q",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = rows(&out.stdout);
    let m = &summary(&r)["judge"]["models"][MODEL];
    let (p, c) = (
        m["prompt_tokens"].as_f64().unwrap(),
        m["completion_tokens"].as_f64().unwrap(),
    );
    assert_eq!(c, 40.0, "{m}");
    let cost = m["cost"].as_f64().unwrap();
    assert!((cost - (p * 2.0 + c * 10.0) / 1e6).abs() < 1e-12, "{m}");
}
