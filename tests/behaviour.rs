//! Behaviour metrics (`tool_efficiency`, `budget`), per-tool statistics and
//! baselines, through the real binary, on corpus traces and on generated
//! traces with known loops, retries and budgets.

use std::fs;

use serde_json::{json, Value};

use crate::util::{data, toolscore, TempDir};

const PYDANTIC_RETRY: &str = "902fd4daea843926bacbbb8f4602eafd";
const PYDANTIC_WEATHER: &str = "31d90f5c8edb6ba92f3e6727a8ad96ea";
const STRANDS_WEATHER: &str = "46a66d85be998c8c37dd6095762299c8";
pub const LOOP_TRACE: &str = "0000000000000000000000000000beef";

fn path(p: &std::path::Path) -> String {
    p.display().to_string()
}

fn write(dir: &TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    fs::write(&p, text).unwrap();
    path(&p)
}

fn jsonl(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSONL line"))
        .collect()
}

fn of_type<'a>(rows: &'a [Value], t: &str) -> Vec<&'a Value> {
    rows.iter().filter(|r| r["type"] == t).collect()
}

fn attr(key: &str, value: Value) -> Value {
    let v = match value {
        Value::String(s) => json!({ "stringValue": s }),
        Value::Number(n) => json!({ "intValue": n.to_string() }),
        other => json!({ "stringValue": other.to_string() }),
    };
    json!({ "key": key, "value": v })
}

/// One OTLP/JSON request holding a generated agent run: an `invoke_agent`
/// root that reports the run's token totals (as pydantic-ai and strands
/// do), two LLM spans (one with GenAI usage keys, one with OpenInference
/// `llm.token_count.*`), and `execute_tool` spans in the order given
/// (`(name, args, failed)`), 10 ms apart, each taking `i + 1` ms.
pub fn generated_run(trace_id: &str, tools: &[(&str, Value, bool)]) -> String {
    let t0: u64 = 1_700_000_000_000_000_000;
    let ms: u64 = 1_000_000;
    let root = "00000000000000aa";
    let mut spans = vec![json!({
        "traceId": trace_id, "spanId": root, "name": "invoke_agent looper", "kind": 1,
        "startTimeUnixNano": t0.to_string(),
        "endTimeUnixNano": (t0 + 500 * ms).to_string(),
        "attributes": [
            attr("gen_ai.operation.name", json!("invoke_agent")),
            attr("gen_ai.agent.name", json!("looper")),
            attr("gen_ai.usage.input_tokens", json!(110)),
            attr("gen_ai.usage.output_tokens", json!(55)),
        ],
    })];
    spans.push(json!({
        "traceId": trace_id, "spanId": "00000000000000b1", "parentSpanId": root,
        "name": "chat model", "kind": 3,
        "startTimeUnixNano": (t0 + ms).to_string(), "endTimeUnixNano": (t0 + 2 * ms).to_string(),
        "attributes": [
            attr("gen_ai.operation.name", json!("chat")),
            attr("gen_ai.usage.input_tokens", json!(100)),
            attr("gen_ai.usage.output_tokens", json!(50)),
        ],
    }));
    spans.push(json!({
        "traceId": trace_id, "spanId": "00000000000000b2", "parentSpanId": root,
        "name": "llm", "kind": 1,
        "startTimeUnixNano": (t0 + 3 * ms).to_string(), "endTimeUnixNano": (t0 + 4 * ms).to_string(),
        "attributes": [
            attr("llm.token_count.prompt", json!(10)),
            attr("llm.token_count.completion", json!(5)),
        ],
    }));
    for (i, (name, args, failed)) in tools.iter().enumerate() {
        let start = t0 + 10 * ms * (i as u64 + 1);
        let mut span = json!({
            "traceId": trace_id, "spanId": format!("{:016x}", 0x100 + i), "parentSpanId": root,
            "name": format!("execute_tool {name}"), "kind": 1,
            "startTimeUnixNano": start.to_string(),
            "endTimeUnixNano": (start + (i as u64 + 1) * ms).to_string(),
            "attributes": [
                attr("gen_ai.operation.name", json!("execute_tool")),
                attr("gen_ai.tool.name", json!(name)),
                attr("gen_ai.tool.call.arguments", json!(args.to_string())),
            ],
        });
        if *failed {
            span["status"] = json!({ "code": 2, "message": format!("{name} failed") });
        }
        spans.push(span);
    }
    json!({ "resourceSpans": [{
        "resource": { "attributes": [attr("service.name", json!("gen"))] },
        "scopeSpans": [{ "scope": { "name": "gen" }, "spans": spans }],
    }]})
    .to_string()
}

/// search/fetch three times over (a loop), then lookup fails, is retried
/// with other arguments, and the retry's call is repeated (redundant).
pub fn loop_run() -> String {
    let s = || ("search", json!({"q": "rust"}), false);
    let f = || ("fetch", json!({"id": 1}), false);
    generated_run(
        LOOP_TRACE,
        &[
            s(),
            f(),
            s(),
            f(),
            s(),
            f(),
            ("lookup", json!({"k": 1}), true),
            ("lookup", json!({"k": 2}), false),
            ("lookup", json!({"k": 2}), false),
        ],
    )
}

fn replay_jsonl(args: &[&str]) -> (Option<i32>, Vec<Value>, String) {
    let mut argv = vec!["replay", "-q", "-f", "jsonl"];
    argv.extend_from_slice(args);
    let out = toolscore(&argv);
    (
        out.status.code(),
        jsonl(&out.stdout),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn efficiency_finds_loop_retry_redundant_and_errors_in_a_generated_run() {
    let dir = TempDir::new("eff-gen");
    let traces = write(&dir, "run.json", &loop_run());
    let fx = write(
        &dir,
        "f.jsonl",
        &format!(
            r#"{{"id":"loop","trace_id":"{LOOP_TRACE}","expected_tools":[],"metrics":["tool_efficiency"]}}"#
        ),
    );
    let (code, rows, err) = replay_jsonl(&[&traces, "-e", &fx]);
    let ev = of_type(&rows, "evaluation");
    assert_eq!(ev.len(), 1, "{err}");
    let e = ev[0];
    // 9 calls: 4 repeat the loop's cycle, 1 failed, 1 redundant.
    assert_eq!(
        (
            e["calls"].as_u64(),
            e["wasted"].as_u64(),
            e["loops"].as_u64()
        ),
        (Some(9), Some(6), Some(1))
    );
    assert_eq!(
        (
            e["redundant"].as_u64(),
            e["retries"].as_u64(),
            e["errors"].as_u64()
        ),
        (Some(1), Some(1), Some(1))
    );
    let score = e["score"].as_f64().unwrap();
    assert!((score - 3.0 / 9.0).abs() < 1e-9, "{score}");
    let why = e["explanation"].as_str().unwrap();
    for want in [
        "search -> fetch x3 from #1",
        "#9 lookup {\"k\":2} repeats #8",
        "#8 lookup after #7 failed",
        "error rate 1/9",
        "lookup failed",
    ] {
        assert!(why.contains(want), "{want:?} not in {why}");
    }
    assert_eq!(e["pass"], false, "1/3 is under the default 0.5");
    assert_eq!(code, Some(1));
}

#[test]
fn efficiency_on_corpus_retry_and_clean_weather() {
    let dir = TempDir::new("eff-corpus");
    let fx = write(
        &dir,
        "f.jsonl",
        &[
            format!(r#"{{"id":"retry","trace_id":"{PYDANTIC_RETRY}","expected_tools":[]}}"#),
            format!(r#"{{"id":"weather","trace_id":"{PYDANTIC_WEATHER}","expected_tools":[]}}"#),
        ]
        .join("\n"),
    );
    let corpus = path(&data("corpus/pydantic-ai/traces.jsonl"));
    let (code, rows, err) = replay_jsonl(&[&corpus, "-e", &fx, "-m", "tool_efficiency"]);
    let ev = of_type(&rows, "evaluation");
    assert_eq!(ev.len(), 2, "{err}");
    let retry = ev.iter().find(|r| r["case"] == "retry").unwrap();
    assert_eq!(
        (retry["retries"].as_u64(), retry["errors"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(retry["score"].as_f64(), Some(0.5));
    let why = retry["explanation"].as_str().unwrap();
    assert!(why.contains("#2 get_stock_price after #1 failed"), "{why}");
    assert!(why.contains("Ticker must be upper-case"), "{why}");
    // Two get_weather calls with different cities are not redundant.
    let weather = ev.iter().find(|r| r["case"] == "weather").unwrap();
    assert_eq!(weather["score"].as_f64(), Some(1.0), "{weather}");
    assert_eq!(weather["redundant"].as_u64(), Some(0));
    assert_eq!(code, Some(0));
}

#[test]
fn budgets_name_each_violation_and_count_tokens_once() {
    let dir = TempDir::new("budget");
    let fx = write(
        &dir,
        "f.jsonl",
        &[
            // No `metrics`: budget is added to the run's tool_correctness.
            format!(
                r#"{{"id":"tight","trace_id":"{PYDANTIC_WEATHER}","expected_tools":["get_weather","get_weather","format_answer"],"max_calls":2,"max_calls_per_tool":{{"get_weather":1}},"forbidden_tools":["format_answer","rm_rf"],"max_duration_ms":1,"max_tokens":263}}"#
            ),
            format!(
                r#"{{"id":"roomy","trace_id":"{PYDANTIC_WEATHER}","expected_tools":["get_weather"],"max_calls":3,"max_tokens":264,"max_duration_ms":60000}}"#
            ),
            // strands repeats the run's totals on its agent and cycle spans.
            format!(
                r#"{{"id":"strands","trace_id":"{STRANDS_WEATHER}","expected_tools":[],"metrics":["budget"],"max_tokens":89}}"#
            ),
            format!(
                r#"{{"id":"gen","trace_id":"{LOOP_TRACE}","expected_tools":[],"metrics":["budget"],"max_tokens":165,"max_calls_per_tool":{{"search":2}}}}"#
            ),
        ]
        .join("\n"),
    );
    let gen = write(&dir, "run.json", &loop_run());
    let (code, rows, err) = replay_jsonl(&[
        &path(&data("corpus/pydantic-ai/traces.jsonl")),
        &path(&data("corpus/strands/traces.jsonl")),
        &gen,
        "-e",
        &fx,
    ]);
    let ev = of_type(&rows, "evaluation");
    assert_eq!(ev.len(), 4, "{err}");
    let get = |id: &str| *ev.iter().find(|r| r["case"] == id).unwrap();
    let tight = &get("tight")["metrics"]["budget"];
    assert_eq!(tight["pass"], false);
    assert_eq!(tight["score"].as_f64(), Some(0.0));
    let why = tight["reason"].as_str().unwrap();
    for want in [
        "max_calls 2: 3 calls",
        "max_calls_per_tool get_weather 1: 2 calls",
        "forbidden_tools: called format_answer",
        "max_duration_ms 1: took",
        "max_tokens 263: used 264 tokens",
    ] {
        assert!(why.contains(want), "{want:?} not in {why}");
    }
    assert!(!why.contains("rm_rf"), "{why}");
    let roomy = get("roomy");
    assert_eq!(roomy["metrics"]["budget"]["pass"], true, "{roomy}");
    assert!(roomy["metrics"]["tool_correctness"]["score"].is_f64());
    let strands = &get("strands")["metrics"]["budget"];
    assert!(
        strands["reason"]
            .as_str()
            .unwrap()
            .contains("used 90 tokens"),
        "{strands}"
    );
    // 100 + 50 (GenAI keys) + 10 + 5 (OpenInference keys); the root's
    // totals are not added again.
    let gen = &get("gen")["metrics"]["budget"];
    assert_eq!(gen["pass"], false, "{gen}");
    assert_eq!(
        gen["reason"],
        "1 of 2 budget(s) exceeded: max_calls_per_tool search 2: 3 calls"
    );
    assert_eq!(code, Some(1));
}

/// Issue 36, §3: a case that fails only on its budget is explained in the
/// table by the budget (named), not by the `tool_correctness` that passed;
/// a case whose first metric decides keeps that metric's text as it was.
#[test]
fn the_table_explains_a_failure_by_the_metric_that_failed() {
    let dir = TempDir::new("budget-table");
    let fx = write(
        &dir,
        "f.jsonl",
        &format!(
            "{{\"id\":\"over\",\"trace_id\":\"{PYDANTIC_WEATHER}\",\"expected_tools\":[\"get_weather\",\"get_weather\",\"format_answer\"],\"max_calls\":2}}\n\
             {{\"id\":\"short\",\"trace_id\":\"{PYDANTIC_WEATHER}\",\"expected_tools\":[\"get_weather\",\"get_weather\",\"format_answer\",\"notify\"],\"threshold\":0.9}}\n"
        ),
    );
    let out = toolscore(&[
        "replay",
        &path(&data("corpus/pydantic-ai/traces.jsonl")),
        "-e",
        &fx,
    ]);
    let table = String::from_utf8(out.stdout).unwrap();
    let row = |id: &str| {
        table
            .lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("no row {id}:\n{table}"))
            .to_string()
    };
    let over = row("over");
    assert!(
        over.contains("1.000")
            && over.contains("FAIL")
            && over.ends_with("budget: 1 of 1 budget(s) exceeded: max_calls 2: 3 calls"),
        "{over}"
    );
    let short = row("short");
    assert!(
        short.contains("FAIL")
            && short.contains("3/4 expected calls matched")
            && !short.contains("budget:"),
        "{short}"
    );
    assert_eq!(out.status.code(), Some(1), "{table}");
}

#[test]
fn bad_budget_field_rejects_that_case_only() {
    let dir = TempDir::new("budget-bad");
    let fx = write(
        &dir,
        "f.jsonl",
        &format!(
            "{{\"id\":\"ok\",\"trace_id\":\"{PYDANTIC_WEATHER}\",\"expected_tools\":[],\"max_calls\":9}}\n{{\"id\":\"bad\",\"trace_id\":\"{PYDANTIC_WEATHER}\",\"expected_tools\":[],\"max_calls_per_tool\":{{\"x\":-1}}}}\n"
        ),
    );
    let corpus = path(&data("corpus/pydantic-ai/traces.jsonl"));
    let (code, rows, _) = replay_jsonl(&[&corpus, "-e", &fx]);
    let rejected = of_type(&rows, "rejected");
    assert_eq!(rejected.len(), 1);
    assert!(rejected[0]["reason"]
        .as_str()
        .unwrap()
        .contains("max_calls_per_tool.x"));
    assert_eq!(of_type(&rows, "evaluation").len(), 1);
    assert_eq!(code, Some(2));
}

#[test]
fn per_tool_statistics_in_the_summary_row_and_table() {
    let dir = TempDir::new("toolstats");
    let gen = write(&dir, "run.json", &loop_run());
    let (code, rows, err) = replay_jsonl(&[&gen]);
    // Without expectations the trace is listed, and the run says nothing was scored.
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("nothing was scored"), "{err}");
    let summary = of_type(&rows, "summary")[0];
    let tools = summary["tools"].as_array().unwrap();
    let row = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap().clone();
    // Call i (0-based) takes i + 1 ms: search 1/3/5, fetch 2/4/6, lookup 7/8/9.
    assert_eq!(
        row("search"),
        json!({"name": "search", "calls": 3, "errors": 0, "p50_ms": 3.0, "p95_ms": 5.0})
    );
    assert_eq!(
        row("lookup"),
        json!({"name": "lookup", "calls": 3, "errors": 1, "p50_ms": 8.0, "p95_ms": 9.0})
    );
    assert_eq!(
        summary["tokens"],
        json!({"traces": 1, "input_tokens": 110, "output_tokens": 55, "per_trace": 165.0})
    );
    let out = toolscore(&["replay", "-q", &gen]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("TOOL    CALLS  ERRORS  P50 MS  P95 MS"),
        "{table}"
    );
    assert!(
        table.contains("Tokens: 110 in, 55 out over 1 trace(s)"),
        "{table}"
    );
}

/// The sample run, saved as JSONL; then the same traces against a fixture
/// where one case expects a call that never happens.
#[test]
fn baseline_flags_the_changed_case_as_a_regression() {
    let dir = TempDir::new("baseline");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let samples = path(&root.join("sample-traces"));
    let original = fs::read_to_string(root.join("sample-traces/expected.jsonl")).unwrap();
    let changed = original.replace(
        r#""expected_tools": ["get_weather", "get_weather", "format_answer"]"#,
        r#""expected_tools": ["get_weather", "get_weather", "format_answer", "notify_user"]"#,
    );
    assert_ne!(changed, original, "the sample fixture changed shape");
    let old_fx = write(&dir, "old.jsonl", &original);
    let new_fx = write(&dir, "new.jsonl", &changed);
    let old_report = path(&dir.path().join("old-report.jsonl"));
    let out = save_report(&samples, &old_fx, &old_report);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the samples include failing cases"
    );

    baseline_gate_fails_on_the_regression(&samples, &old_fx, &new_fx, &old_report);

    // `diff` of the two saved reports says the same, in every format.
    let new_report = path(&dir.path().join("new-report.jsonl"));
    save_report(&samples, &new_fx, &new_report);
    diff_finds_the_regression(&old_report, &new_report);
}

/// `replay` of `samples` against `fixture`, its JSONL report saved to `report`.
fn save_report(samples: &str, fixture: &str, report: &str) -> std::process::Output {
    toolscore(&[
        "replay", "-q", "-f", "jsonl", samples, "-e", fixture, "-o", report,
    ])
}

/// `--baseline old_report --fail-on regression`: passes against the
/// fixture the baseline was made with, fails on the one case `new_fx`
/// changed, and passes again under a tolerance above its drop.
fn baseline_gate_fails_on_the_regression(
    samples: &str,
    old_fx: &str,
    new_fx: &str,
    old_report: &str,
) {
    // Same fixture: nothing regressed, so --fail-on regression passes
    // although some cases fail their thresholds.
    let (code, rows, err) = replay_jsonl(&[
        samples,
        "-e",
        old_fx,
        "--baseline",
        old_report,
        "--fail-on",
        "regression",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let summary = of_type(&rows, "comparison_summary")[0];
    assert_eq!(summary["regressed"], 0);
    assert_eq!(summary["unchanged"], 10);

    let (code, rows, err) = replay_jsonl(&[
        samples,
        "-e",
        new_fx,
        "--baseline",
        old_report,
        "--fail-on",
        "regression",
    ]);
    assert_eq!(code, Some(1), "{err}");
    let cmp = of_type(&rows, "comparison");
    let regressed: Vec<_> = cmp.iter().filter(|r| r["status"] == "regressed").collect();
    assert_eq!(regressed.len(), 1, "{cmp:#?}");
    let r = regressed[0];
    assert_eq!(r["case"], "mlflow-weather-must-format");
    assert_eq!(r["old_score"].as_f64(), Some(1.0));
    let delta = r["delta"].as_f64().unwrap();
    // F1 with 3 of 4 expected calls made: 6/7.
    assert!((delta - (6.0 / 7.0 - 1.0)).abs() < 1e-9, "{delta}");
    assert_eq!(r["beyond_tolerance"], true);

    // A tolerance above the drop lets it through.
    let (code, _, _) = replay_jsonl(&[
        samples,
        "-e",
        new_fx,
        "--baseline",
        old_report,
        "--fail-on",
        "regression",
        "--tolerance",
        "0.2",
    ]);
    assert_eq!(code, Some(0));
}

/// `diff` of the saved reports finds the one regression in JSONL, JUnit and
/// the table, and an improvement the other way round.
fn diff_finds_the_regression(old_report: &str, new_report: &str) {
    let out = toolscore(&["diff", old_report, new_report, "-f", "jsonl"]);
    assert_eq!(out.status.code(), Some(1));
    let rows = jsonl(&out.stdout);
    let diff_regressed: Vec<_> = of_type(&rows, "comparison")
        .into_iter()
        .filter(|r| r["status"] == "regressed")
        .collect();
    assert_eq!(diff_regressed.len(), 1);
    assert_eq!(diff_regressed[0]["case"], "mlflow-weather-must-format");
    let out = toolscore(&["diff", old_report, new_report, "-f", "junit"]);
    let xml = String::from_utf8_lossy(&out.stdout);
    assert!(
        xml.contains(r#"<testsuite name="baseline" tests="10" failures="1">"#),
        "{xml}"
    );
    assert!(
        xml.contains("<failure message=\"regressed: 1.000 (pass) -&gt; 0.857 (pass)"),
        "{xml}"
    );
    let out = toolscore(&["diff", old_report, new_report]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("1 regressed (1 beyond tolerance 0), 9 unchanged"),
        "{table}"
    );
    let out = toolscore(&["diff", new_report, old_report, "-f", "jsonl"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the other way round it improved"
    );
}

#[test]
fn bad_baselines_are_usage_errors() {
    let dir = TempDir::new("baseline-bad");
    let samples = path(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces"));
    let bad = write(&dir, "bad.jsonl", "{\"type\":\"summary\"}\nnot json\n");
    let out = toolscore(&["replay", "-q", &samples, "--baseline", &bad]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.jsonl:2: not JSON"), "{err}");
    let empty = write(&dir, "empty.jsonl", "");
    let out = toolscore(&["diff", &empty, &empty]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no summary row"));
    let out = toolscore(&["replay", "-q", &samples, "--fail-on", "regression"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs --baseline"));
}

const PYDANTIC_NESTED: &str = "f8320a69772db4670295805f8a1a84a0";
const OI_NESTED: &str = "e536fcecf3ba5e6c74b414fdcfdd0d84";

#[test]
fn per_agent_expectations_and_handoffs_on_corpus_sub_agents() {
    let dir = TempDir::new("agents");
    let agents = r#"{"demo_agent":{"expected_tools":["plan_trip"]},"trip_sub_agent":{"expected_tools":[{"name":"get_weather","args":{"city":"Kyoto"}}],"threshold":0.8},"writer":{"expected_tools":["format_answer"]}}"#;
    let fx = write(
        &dir,
        "f.jsonl",
        &[
            // No metrics: agents and handoffs are added to tool_correctness.
            format!(
                r#"{{"id":"pai","trace_id":"{PYDANTIC_NESTED}","expected_tools":["plan_trip","get_weather"],"agents":{agents},"handoffs":["demo_agent","trip_sub_agent"]}}"#
            ),
            format!(
                r#"{{"id":"oi","trace_id":"{OI_NESTED}","expected_tools":[],"metrics":["agents","handoffs"],"agents":{{"demo_agent":{{"expected_tools":["plan_trip"]}}}},"handoffs":["trip_sub_agent","demo_agent","writer"]}}"#
            ),
        ]
        .join("\n"),
    );
    let (code, rows, err) = replay_jsonl(&[
        &path(&data("corpus/pydantic-ai/traces.jsonl")),
        &path(&data("corpus/openinference-manual")),
        "-e",
        &fx,
    ]);
    let ev = of_type(&rows, "evaluation");
    assert_eq!(ev.len(), 2, "{err}");
    let get = |id: &str| *ev.iter().find(|r| r["case"] == id).unwrap();
    let pai = get("pai");
    assert_eq!(pai["metrics"]["tool_correctness"]["pass"], true);
    let a = &pai["metrics"]["agents"];
    assert_eq!(a["pass"], false, "{a}");
    let why = a["reason"].as_str().unwrap();
    assert!(why.contains("demo_agent: 1.000 pass"), "{why}");
    assert!(why.contains("trip_sub_agent: 0.000 FAIL"), "{why}");
    assert!(why.contains("writer: never ran"), "{why}");
    // Mean of 1, 0 (wrong city) and 0 (never ran).
    assert!(
        (a["score"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-9,
        "{a}"
    );
    let h = &pai["metrics"]["handoffs"];
    assert_eq!((&h["pass"], h["score"].as_f64()), (&json!(true), Some(1.0)));
    assert!(
        h["reason"]
            .as_str()
            .unwrap()
            .ends_with("2/2 in order, exact"),
        "{h}"
    );

    let oi = get("oi");
    let a = &oi["metrics"]["agents"];
    assert_eq!(a["pass"], true, "{a}");
    assert!(
        a["reason"]
            .as_str()
            .unwrap()
            .contains("also ran (not named): trip_sub_agent"),
        "{a}"
    );
    assert_eq!(
        oi["unnamed_agents"],
        json!(["trip_sub_agent"]),
        "headline details at top level"
    );
    let h = &oi["metrics"]["handoffs"];
    assert_eq!(h["pass"], false);
    assert_eq!(h["score"].as_f64(), Some(1.0 / 3.0));
    assert!(
        h["reason"].as_str().unwrap().contains("never ran: writer"),
        "{h}"
    );
    assert_eq!(code, Some(1));
}

/// planner, then researcher twice (a nested span of itself), then writer,
/// each a child of one workflow root, with their own tool calls.
fn three_agent_run(trace_id: &str) -> String {
    let t0: u64 = 1_700_000_000_000_000_000;
    let ms: u64 = 1_000_000;
    let span = |id: u64, parent: Option<u64>, name: &str, at: u64, attrs: Vec<Value>| {
        let mut s = json!({
            "traceId": trace_id, "spanId": format!("{id:016x}"), "name": name, "kind": 1,
            "startTimeUnixNano": (t0 + at * ms).to_string(),
            "endTimeUnixNano": (t0 + (at + 5) * ms).to_string(),
            "attributes": attrs,
        });
        if let Some(p) = parent {
            s["parentSpanId"] = json!(format!("{p:016x}"));
        }
        s
    };
    let agent = |name: &str| {
        vec![
            attr("gen_ai.operation.name", json!("invoke_agent")),
            attr("gen_ai.agent.name", json!(name)),
        ]
    };
    let tool = |name: &str| {
        vec![
            attr("gen_ai.operation.name", json!("execute_tool")),
            attr("gen_ai.tool.name", json!(name)),
            attr("gen_ai.tool.call.arguments", json!("{}")),
        ]
    };
    let spans = vec![
        span(1, None, "workflow", 0, vec![attr("app", json!("multi"))]),
        span(2, Some(1), "invoke_agent planner", 10, agent("planner")),
        span(3, Some(2), "execute_tool make_plan", 11, tool("make_plan")),
        span(
            4,
            Some(1),
            "invoke_agent researcher",
            20,
            agent("researcher"),
        ),
        span(
            5,
            Some(4),
            "invoke_agent researcher",
            21,
            agent("researcher"),
        ),
        span(6, Some(5), "execute_tool search", 22, tool("search")),
        span(7, Some(5), "execute_tool search", 23, tool("search")),
        span(8, Some(1), "invoke_agent writer", 30, agent("writer")),
    ];
    json!({ "resourceSpans": [{
        "resource": { "attributes": [] },
        "scopeSpans": [{ "scope": { "name": "gen" }, "spans": spans }],
    }]})
    .to_string()
}

#[test]
fn handoffs_in_a_generated_three_agent_run() {
    let dir = TempDir::new("handoffs");
    let id = "0000000000000000000000000000cafe";
    let traces = write(&dir, "run.json", &three_agent_run(id));
    let fx = write(
        &dir,
        "f.jsonl",
        &[
            format!(
                r#"{{"id":"in-order","trace_id":"{id}","expected_tools":[],"metrics":["handoffs","agents"],"handoffs":["planner","researcher","writer"],"agents":{{"researcher":{{"expected_tools":["search","search"]}},"writer":{{"expected_tools":[]}}}}}}"#
            ),
            format!(
                r#"{{"id":"swapped","trace_id":"{id}","expected_tools":[],"metrics":["handoffs"],"handoffs":["planner","writer","researcher"]}}"#
            ),
        ]
        .join("\n"),
    );
    let (_, rows, err) = replay_jsonl(&[&traces, "-e", &fx]);
    let ev = of_type(&rows, "evaluation");
    assert_eq!(ev.len(), 2, "{err}");
    let ok = ev.iter().find(|r| r["case"] == "in-order").unwrap();
    assert_eq!(ok["pass"], true, "{ok}");
    assert_eq!(ok["exact"], true);
    assert_eq!(ok["ran"], json!(["planner", "researcher", "writer"]));
    // A writer with no calls still ran; planner ran but was not named.
    let a = &ok["metrics"]["agents"];
    assert_eq!(a["pass"], true, "{a}");
    assert!(a["reason"]
        .as_str()
        .unwrap()
        .contains("also ran (not named): planner"));
    let swapped = ev.iter().find(|r| r["case"] == "swapped").unwrap();
    assert_eq!(swapped["pass"], false);
    assert_eq!(swapped["lcs"], 2);
    assert_eq!(swapped["exact"], false);
}
