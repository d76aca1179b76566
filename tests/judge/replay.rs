//! `replay` with a judge: retries, errors per metric, the cache, dry runs.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{
    eval, fixture, pydantic, rows, summary, verdict, FakeServer, Reply, Seen, MODEL, WEATHER,
};
use crate::util::{toolscore, TempDir};

/// Which judged metric a prompt is from.
fn is_fuzzy(seen: &Seen) -> bool {
    let p = seen.prompt();
    p.contains("Compare `tool_calls`") || p.contains("so compare tools only")
}

fn is_efficiency(seen: &Seen) -> bool {
    seen.prompt().contains("used its tools without waste")
}

fn is_cubeo(seen: &Seen) -> bool {
    seen.prompt()
        .contains("Score from 0 to 1 how well the names")
}

/// The scripted judge of the replay test: fuzzy says yes to the weather
/// trace after a 429, no to the support trace (in a code fence); efficiency
/// gets a 500 then yes on weather and prose on support (no verdict); cubeo
/// scores 0.85 and 0.5.
fn replay_script(seen: &Seen, n: usize) -> Reply {
    let weather = seen
        .prompt()
        .contains("What is the weather in Paris and London?");
    if is_fuzzy(seen) {
        if weather {
            return match n {
                1 => Reply::Status(429, Some("0")),
                _ => verdict(true, "same calls"),
            };
        }
        return Reply::Content(
            "```json\n{\"result\": \"no\", \"rationale\": \"create_ticket priority differs\"}\n```"
                .into(),
        );
    }
    if is_efficiency(seen) {
        if weather {
            return match n {
                1 => Reply::Status(500, None),
                _ => verdict(true, "no redundant call"),
            };
        }
        return Reply::Content("I think it was mostly fine, hard to say.".into());
    }
    if is_cubeo(seen) {
        let score = if weather { 0.85 } else { 0.5 };
        return Reply::Content(
            serde_json::json!({"result": score, "rationale": "compared"}).to_string(),
        );
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
        crate::util::bin()
            .args(replay_args(&server.url, &cache, &f, &trace))
            .env("TOOLSCORE_JUDGE_API_KEY", "sk-test")
            .output()
            .unwrap()
    };
    let out = run();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The support case fails (fuzzy says no), and its efficiency judge gave
    // no verdict: the run could not evaluate everything, exit 2.
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let r = rows(&out.stdout);
    weather_is_judged_right(eval(&r, "weather"));
    support_fails_with_a_judge_error(eval(&r, "support"));

    let seen = server.seen();
    requests_are_well_formed(&seen);
    fuzzy_prompt_shows_the_calls(&seen);
    let requests = seen.len() as u64;
    judge_summary_counts(&r, &seen);

    // A rerun answers from the cache (under the format the answers came
    // in): only the unparseable prompt is asked again.
    let out2 = run();
    assert_eq!(out2.status.code(), Some(2));
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

/// The weather case `w`: every judge said yes after the retries.
fn weather_is_judged_right(w: &Value) {
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
}

/// The support case `s`: fuzzy says no, efficiency has no verdict (an
/// error, not a failure), the other metrics are kept.
fn support_fails_with_a_judge_error(s: &Value) {
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
    assert_eq!(eff["pass"], Value::Null, "a judge error is not a failure");
    assert_eq!(eff["unjudged"], "judge_error");
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
}

/// Request shape: model, one user message holding the whole prompt, no
/// temperature, the token cap, auth and the extra header; a JSON schema
/// asked first (result before rationale), then json_object.
fn requests_are_well_formed(seen: &[Seen]) {
    for q in seen {
        assert_eq!(q.path, "/v1/chat/completions");
        assert_eq!(q.body["model"], MODEL);
        assert_eq!(q.body["messages"].as_array().unwrap().len(), 1, "{}", q.raw);
        assert_eq!(q.body["messages"][0]["role"], "user");
        assert!(q.body.get("temperature").is_none(), "{}", q.raw);
        assert_eq!(q.body["max_tokens"], 4096, "{}", q.raw);
        assert_eq!(q.header("authorization"), Some("Bearer sk-test"));
        assert_eq!(q.header("x-team"), Some("evals"));
    }
    let schema = seen
        .iter()
        .find(|q| q.format() == "json_schema")
        .expect("asked for a schema first");
    let props = &schema.raw[schema.raw.find("\"properties\"").unwrap()..];
    assert!(
        props.find("\"result\"").unwrap() < props.find("\"rationale\"").unwrap(),
        "result before rationale: {}",
        schema.raw
    );
    assert_eq!(
        schema.body["response_format"]["json_schema"]["schema"]["properties"]["result"]["type"],
        "string"
    );
    let answered: Vec<&Seen> = seen
        .iter()
        .filter(|q| q.format() != "json_schema")
        .collect();
    assert!(
        answered.iter().all(|q| q.format() == "json_object"),
        "fell back to json_object"
    );
}

/// The fuzzy prompt of the weather trace holds the request, the tool
/// definitions and both sides' calls, but not the tools' outputs.
fn fuzzy_prompt_shows_the_calls(seen: &[Seen]) {
    let fuzzy_weather = seen
        .iter()
        .find(|q| is_fuzzy(q) && q.prompt().contains("Paris and London"))
        .unwrap();
    let u = fuzzy_weather.prompt();
    for needle in [
        r#""request": "What is the weather in Paris and London?""#,
        r#"{"name":"get_weather","description":"Current weather for a city.""#,
        r#"{"name":"get_weather","arguments":{"city":"Paris"}}"#,
        r#"{"name":"get_weather","arguments":{"city":"London"}}"#,
        r#"{"name":"format_answer"}"#,
        "so compare tools only",
    ] {
        assert!(u.contains(needle), "prompt lacks {needle:?}:\n{u}");
    }
    // The tools' outputs are not judged, so not shown.
    assert!(!u.contains(r#""weather":"18C cloudy""#), "{u}");
}

/// The summary's judge counts match the requests the server saw: 2 traces
/// x 3 judged metrics = 6 prompts; + 1 for the 429, + 1 for the 500, + the
/// 400s that switched the format.
fn judge_summary_counts(r: &[Value], seen: &[Seen]) {
    let sum = summary(r);
    let judge = &sum["judge"];
    let requests = seen.len() as u64;
    assert_eq!(judge["requests"].as_u64(), Some(requests), "{judge}");
    assert_eq!(judge["retries"], 2, "{judge}");
    assert_eq!(judge["errors"], 1, "{judge}");
    assert_eq!(judge["cache_hits"], 0);
    assert!(judge["prompt_tokens"].as_u64().unwrap() > 0);
    assert_eq!(
        judge["models"][MODEL]["prompt_tokens"], judge["prompt_tokens"],
        "{judge}"
    );
    assert_eq!(
        (sum["failed"].as_u64(), sum["judge_errors"].as_u64()),
        (Some(1), Some(1))
    );
    let schema_400s = seen.iter().filter(|q| q.format() == "json_schema").count() as u64;
    assert_eq!(requests, 6 + 2 + schema_400s);
}

#[test]
fn replay_reports_rate_limit_and_timeout_per_metric() {
    // Weather: the judge hangs past the timeout; support: 429 every time.
    let server = FakeServer::start(false, |seen, _| {
        if seen.prompt().contains("Paris and London") {
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
    assert_eq!(out.status.code(), Some(2), "judge errors: {stderr}");
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
        .all(|q| !q.prompt().contains("\"expected_calls\":")));
}

#[test]
fn dry_run_prints_prompts_calls_nothing_and_passes() {
    let dir = TempDir::new("judge-dry");
    let f = fixture(dir.path());
    let args = |format: &'static str| {
        toolscore(&[
            "replay",
            &pydantic(),
            "--expected",
            &f,
            "-m",
            "tool_correctness",
            "-m",
            "mlflow.llm_fuzzy_ordered",
            "--judge-model",
            MODEL,
            "--judge-dry-run",
            "--format",
            format,
            "-q",
        ])
    };
    let out = args("jsonl");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "not judged is no failure: {stderr}"
    );
    assert_eq!(
        stderr
            .matches("=== judge prompt: mlflow.llm_fuzzy_ordered")
            .count(),
        2,
        "{stderr}"
    );
    assert!(
        stderr.contains("one to one and in the same order"),
        "{stderr}"
    );
    assert!(stderr.contains("I cannot log in"), "{stderr}");
    let r = rows(&out.stdout);
    let m = &eval(&r, "weather")["metrics"]["mlflow.llm_fuzzy_ordered"];
    assert_eq!(m["unjudged"], "not_judged", "{m}");
    assert_eq!(
        (m["pass"].clone(), m["error"].clone()),
        (Value::Null, Value::Null)
    );
    assert_eq!(summary(&r)["judge"]["requests"], 0);
    assert_eq!(summary(&r)["not_judged"], 2);
    let table = args("table");
    assert_eq!(table.status.code(), Some(0));
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("not judged") && !text.contains("FAIL"),
        "{text}"
    );
    let junit = String::from_utf8_lossy(&args("junit").stdout).into_owned();
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let root = doc.root_element();
    assert!(root.attribute("skipped").is_none(), "{junit}");
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("skipped"))
            .count(),
        2,
        "{junit}"
    );
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
