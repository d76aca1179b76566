//! Issue 3 end to end: MLflow native JSON, agent runs and scope, sessions,
//! config files (user conventions, normalization), `toolscore conventions`.

use std::fs;

use serde_json::{json, Value};

use crate::util::{data, toolscore, TempDir};

fn jsonl(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSONL line"))
        .collect()
}

fn inspect_rows(args: &[&str]) -> Vec<Value> {
    let mut argv = vec!["inspect", "--format", "jsonl", "-q"];
    argv.extend_from_slice(args);
    let out = toolscore(&argv);
    assert!(
        out.status.success(),
        "inspect {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    jsonl(&out.stdout)
}

fn corpus(rel: &str) -> String {
    data(&format!("corpus/{rel}")).display().to_string()
}

fn write(dir: &TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// `(name, args, span_id)` of one call.
type CallKey = (Value, Value, Value);

/// `trace_id -> [(name, args, span_id)]`.
fn calls_by_trace(rows: &[Value]) -> Vec<(String, Vec<CallKey>)> {
    let mut out: Vec<_> = rows
        .iter()
        .map(|r| {
            let calls = r["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| (c["name"].clone(), c["args"].clone(), c["span_id"].clone()))
                .collect();
            (r["trace_id"].as_str().unwrap().to_string(), calls)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn mlflow_native_json_gives_the_same_calls_as_the_otlp_export() {
    let native = inspect_rows(&["--retrievers-as-tools", &corpus("mlflow/mlflow-native")]);
    let otlp = inspect_rows(&["--retrievers-as-tools", &corpus("mlflow/traces.jsonl")]);
    assert_eq!(native.len(), 6);
    let native = calls_by_trace(&native);
    let otlp = calls_by_trace(&otlp);
    assert_eq!(native, otlp);
    // The native JSON keeps what OTLP lost (dropped roots): roots and the session.
    let rows = inspect_rows(&[&corpus(
        "mlflow/mlflow-native/3db4b55a476481ac5b47aa94caea582a.json",
    )]);
    assert_eq!(
        rows[0]["session"],
        json!({"key": "mlflow.trace.session", "id": "sess-mlflow-42"})
    );
    assert_eq!(rows[0]["orphans"], 0);
    assert_eq!(rows[0]["agent_runs"][0]["name"], "demo_agent");
}

#[test]
fn nested_sub_agent_runs_and_depth_in_every_source() {
    for source in [
        "mlflow",
        "openinference-manual",
        "openinference-langchain",
        "pydantic-ai",
        "strands",
        "google-adk",
        "vercel-ai",
        "galtea",
        "langfuse",
        "traceloop",
    ] {
        let truth = fs::read_to_string(data(&format!("corpus/{source}/truth.jsonl"))).unwrap();
        let nested: Value = truth
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|t| t["scenario"] == "nested_sub_agent")
            .unwrap();
        let rows = inspect_rows(&[&corpus(&format!("{source}/traces.jsonl"))]);
        let row = rows
            .iter()
            .find(|r| r["trace_id"] == nested["trace_id"])
            .unwrap();
        let tools = row["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 2, "{source}: {tools:?}");
        assert_eq!(tools[0]["depth"], 0, "{source}");
        assert_eq!(tools[1]["depth"], 1, "{source}");
        let outer = tools[0]["agent"]["span_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{source}: no agent"));
        let inner = tools[1]["agent"]["span_id"].as_str().unwrap();
        assert_ne!(outer, inner, "{source}: the sub-agent is its own run");
        let inner_name = tools[1]["agent"]["name"].as_str().unwrap();
        assert!(
            inner_name.replace('-', "_").contains("trip_sub_agent"),
            "{source}: {inner_name}"
        );
        // The sub-agent's run sits inside the outer tool call.
        let runs = row["agent_runs"].as_array().unwrap();
        let sub = runs.iter().find(|r| r["span_id"] == inner).unwrap();
        assert_eq!(sub["depth"], 1, "{source}");
    }
}

#[test]
fn inspect_table_prints_the_run_tree_and_retrievers() {
    let out = toolscore(&["inspect", "-q", &corpus("langfuse/traces.jsonl")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("  agent demo_agent  [langfuse-agent;")
            && text.contains("\n    plan_trip {\"destination\":\"Tokyo\"}")
            && text.contains("\n      agent trip_sub_agent")
            && text.contains("\n        get_weather {\"city\":\"Tokyo\"}"),
        "{text}"
    );
    assert!(
        text.contains("search_knowledge_base") && text.contains("retriever, not counted"),
        "{text}"
    );
    let out = toolscore(&[
        "inspect",
        "-q",
        "--retrievers-as-tools",
        &corpus("langfuse/traces.jsonl"),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("[retriever; ok; langfuse-retriever;"),
        "{text}"
    );
}

#[test]
fn scope_top_level_scores_only_the_outer_agent() {
    let dir = TempDir::new("scope");
    let f = write(
        &dir,
        "expected.jsonl",
        r#"{"id":"trip","trace_id":"66b31ef7b5c2881c468d97dc621e6051","expected_tools":["plan_trip"]}"#,
    );
    let run = |scope: &str| {
        let out = toolscore(&[
            "replay",
            &corpus("langfuse/traces.jsonl"),
            "-e",
            &f,
            "--scope",
            scope,
            "--score",
            "exact",
            "--format",
            "jsonl",
            "-q",
        ]);
        let rows = jsonl(&out.stdout);
        let e = rows
            .iter()
            .find(|r| r["type"] == "evaluation")
            .unwrap()
            .clone();
        (out.status.code(), e)
    };
    let (code, e) = run("top-level");
    assert_eq!(code, Some(0), "{e}");
    assert_eq!(e["tools_called"].as_array().unwrap().len(), 1);
    let (code, e) = run("all");
    assert_eq!(code, Some(1), "{e}");
    assert_eq!(e["tools_called"].as_array().unwrap().len(), 2);
}

#[test]
fn a_session_case_expects_the_calls_of_all_its_traces_in_order() {
    let dir = TempDir::new("session");
    let f = write(
        &dir,
        "expected.jsonl",
        &[
            r#"{"id":"by-id","session_id":"sess-lf-42","expected_tools":[{"name":"get_weather","args":{"city":"Berlin"}},"convert_currency"]}"#,
            r#"{"id":"by-match","match":{"session.id":"sess-lf-42"},"expected_tools":["get_weather","convert_currency"]}"#,
            r#"{"id":"by-two-keys","match":{"session.id":"sess-lf-42","langfuse.observation.type":"tool"},"expected_tools":["get_weather"]}"#,
        ]
        .join("\n"),
    );
    let out = toolscore(&[
        "replay",
        &corpus("langfuse/traces.jsonl"),
        "-e",
        &f,
        "--score",
        "exact",
        "--format",
        "jsonl",
        "-q",
    ]);
    let rows = jsonl(&out.stdout);
    let evals: Vec<&Value> = rows.iter().filter(|r| r["type"] == "evaluation").collect();
    let by = |id: &str| {
        evals
            .iter()
            .filter(|e| e["case"] == id)
            .copied()
            .collect::<Vec<_>>()
    };
    for id in ["by-id", "by-match"] {
        let e = by(id);
        assert_eq!(e.len(), 1, "{id}: {evals:?}");
        assert_eq!(e[0]["pass"], true, "{id}: {}", e[0]);
        assert_eq!(
            e[0]["session"],
            json!({"id": "sess-lf-42", "trace_ids": ["48d75dfdea2aa05f4cf785edd381ba1b", "7bf12d6616a2948913dca26dc63b091d"]})
        );
        let names: Vec<&str> = e[0]["tools_called"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, vec!["get_weather", "convert_currency"]);
    }
    // A match with more keys than the session key stays per trace: both
    // turns match, and only the first has exactly [get_weather].
    let per_trace = by("by-two-keys");
    assert_eq!(per_trace.len(), 2);
    assert!(per_trace.iter().all(|e| e.get("session").is_none()));
    // The session's traces are matched, so not listed as unmatched.
    assert!(!rows
        .iter()
        .any(|r| r["type"] == "unmatched_trace"
            && (r["trace_id"] == "48d75dfdea2aa05f4cf785edd381ba1b")));
    let table = toolscore(&["replay", &corpus("langfuse/traces.jsonl"), "-e", &f, "-q"]);
    assert!(String::from_utf8_lossy(&table.stdout).contains("session sess-lf-42 (2 traces)"));
}

#[test]
fn session_keys_come_from_the_config() {
    let dir = TempDir::new("session-keys");
    let cfg = write(
        &dir,
        "c.toml",
        "[sessions]\nkeys = [\"ai.telemetry.metadata.userId\"]\n",
    );
    let f = write(
        &dir,
        "expected.jsonl",
        r#"{"id":"user","session_id":"user-7","expected_tools":["get_weather","convert_currency"]}"#,
    );
    let out = toolscore(&[
        "replay",
        &corpus("vercel-ai/traces.jsonl"),
        "-e",
        &f,
        "--config",
        &cfg,
        "--format",
        "jsonl",
        "-q",
    ]);
    let rows = jsonl(&out.stdout);
    let e = rows
        .iter()
        .find(|r| r["type"] == "evaluation")
        .expect("a session evaluation");
    assert!(
        e["session"]["trace_ids"].as_array().unwrap().len() >= 2,
        "{e}"
    );
}

const ACME_TRACE: &str = r#"{"resourceSpans":[{"resource":{},"scopeSpans":[{"scope":{"name":"acme"},"spans":[
 {"traceId":"0123456789abcdef0123456789abcdef","spanId":"00000000000000a1","name":"agent loop","startTimeUnixNano":"1","endTimeUnixNano":"9",
  "attributes":[{"key":"acme.kind","value":{"stringValue":"agent"}}]},
 {"traceId":"0123456789abcdef0123456789abcdef","spanId":"00000000000000a2","parentSpanId":"00000000000000a1","name":"action:Lookup-Order","startTimeUnixNano":"2","endTimeUnixNano":"3",
  "attributes":[{"key":"acme.kind","value":{"stringValue":"action"}},{"key":"acme.payload","value":{"stringValue":"{\"order\": 42}"}}]},
 {"traceId":"0123456789abcdef0123456789abcdef","spanId":"00000000000000a3","parentSpanId":"00000000000000a1","name":"action:notify","startTimeUnixNano":"4","endTimeUnixNano":"5",
  "attributes":[{"key":"acme.kind","value":{"stringValue":"action"}},{"key":"acme.payload","value":{"stringValue":"plain text"}}],
  "status":{"code":2,"message":"mail server down"}}
]}]}]}"#;

const ACME_TOML: &str = r#"
[[conventions.rule]]
name = "acme"
priority = 5
when = [{ attr = "acme.kind", equals = "action" }]
name_from = [{ span_name = true, pattern = '^action:(.+)$' }]
args = [{ attr = "acme.payload", decode = "json" }]

[[conventions.rule]]
name = "acme-agent"
kind = "agent"
priority = 6
when = [{ attr = "acme.kind", matches = "^agent$" }]
name_from = [{ span_name = true }]

[normalize]
rename = [{ pattern = '^Lookup-', replace = "get_" }]
"#;

const ACME_YAML: &str = r#"
conventions:
  rule:
    - name: acme
      priority: 5
      when: [{ attr: acme.kind, equals: action }]
      name_from: [{ span_name: true, pattern: '^action:(.+)$' }]
      args: [{ attr: acme.payload, decode: json }]
"#;

#[test]
fn an_in_house_convention_defined_only_in_a_config_file_is_extracted() {
    let dir = TempDir::new("acme");
    let trace = write(&dir, "acme.json", ACME_TRACE);
    assert!(inspect_rows(&[&trace])[0]["tools"]
        .as_array()
        .unwrap()
        .is_empty());
    for (name, text) in [("acme.toml", ACME_TOML), ("acme.yaml", ACME_YAML)] {
        let cfg = write(&dir, name, text);
        let rows = inspect_rows(&["--config", &cfg, &trace]);
        let tools = rows[0]["tools"].as_array().unwrap();
        let got: Vec<(Value, Value, Value)> = tools
            .iter()
            .map(|c| (c["name"].clone(), c["args"].clone(), c["status"].clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                (json!("Lookup-Order"), json!({"order": 42}), json!("ok")),
                (json!("notify"), json!("plain text"), json!("error")),
            ],
            "{name}"
        );
        assert!(tools.iter().all(|c| c["convention"] == "acme"));
    }
    // Agent runs and renames from the TOML config; `--normalize` applies them.
    let cfg = write(&dir, "acme.toml", ACME_TOML);
    let rows = inspect_rows(&["--config", &cfg, &trace]);
    assert_eq!(rows[0]["tools"][0]["agent"]["name"], "agent loop");
    let f = write(
        &dir,
        "expected.jsonl",
        r#"{"id":"acme","trace_id":"0123456789abcdef0123456789abcdef","expected_tools":["GET_ORDER","Notify"]}"#,
    );
    let run = |extra: &[&str]| {
        let mut argv = vec![
            "replay",
            trace.as_str(),
            "-e",
            f.as_str(),
            "--config",
            cfg.as_str(),
            "--score",
            "exact",
            "-q",
        ];
        argv.extend_from_slice(extra);
        toolscore(&argv).status.code()
    };
    assert_eq!(run(&[]), Some(1), "names differ without --normalize");
    assert_eq!(run(&["--normalize"]), Some(0));
}

#[test]
fn config_errors_are_usage_errors() {
    let dir = TempDir::new("badcfg");
    let trace = write(&dir, "acme.json", ACME_TRACE);
    for (name, text, needle) in [
        ("a.toml", "[conventions]\nbuiltins = false\n", "unknown field"),
        ("b.yaml", "normalize:\n  renames: []\n", "unknown field"),
        (
            "c.toml",
            "[[conventions.rule]]\nname = \"x\"\nwhen = [{ attr = \"k\", regex = \"v\" }]\nname_from = [{ span_name = true }]\n",
            "unknown field",
        ),
        (
            "d.toml",
            "[[conventions.rule]]\nname = \"x\"\nwhen = [{ span_name = true, matches = \"(\" }]\nname_from = [{ span_name = true }]\n",
            "bad regex",
        ),
    ] {
        let cfg = write(&dir, name, text);
        let out = toolscore(&["inspect", "--config", &cfg, &trace]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(needle) && err.contains(name), "{name}: {err}");
    }
}

#[test]
fn conventions_prints_the_active_rule_table() {
    let out = toolscore(&["conventions"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "otel-genai",
        "openinference",
        "mlflow",
        "vercel-ai",
        "galtea",
        "langfuse",
        "traceloop",
        "langsmith",
        "mlflow-retriever",
        "otel-genai-agent",
    ] {
        assert!(text.contains(needle), "{needle} missing:\n{text}");
    }
    // A config's rules show up, in priority order, and replace built-ins by name.
    let dir = TempDir::new("conv");
    let cfg = write(&dir, "c.toml", ACME_TOML);
    let out = toolscore(&["conventions", "--config", &cfg, "--format", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = v["conventions"]["rule"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(&names[..2], &["acme", "acme-agent"]);
    // Built-ins follow (priority 10 and up), the issue-12 ones listed too.
    assert!(names.contains(&"otel-genai") && names[2] != "acme");
    for added in [
        "koog",
        "any-agent",
        "pydantic-ai-legacy",
        "beeai-events",
        "otel-genai-no-operation",
    ] {
        assert!(names.contains(&added), "{added} missing: {names:?}");
    }
    // The TOML form is a config file that changes nothing.
    let out = toolscore(&["conventions", "--format", "toml"]);
    let printed = write(&dir, "printed.toml", &String::from_utf8_lossy(&out.stdout));
    let a = inspect_rows(&["--config", &printed, &corpus("strands/traces.jsonl")]);
    let b = inspect_rows(&[&corpus("strands/traces.jsonl")]);
    assert_eq!(a, b);
    let out = toolscore(&["conventions", "--format", "yaml"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("name: otel-genai"));
}

#[test]
fn the_readme_config_example_loads() {
    let readme = fs::read_to_string(data("../../README.md")).unwrap();
    let section = &readme[readme.find("## Config file").expect("config section")..];
    let start = section.find("```toml\n").unwrap() + "```toml\n".len();
    let end = start + section[start..].find("```").unwrap();
    let dir = TempDir::new("readme");
    let cfg = write(&dir, "readme.toml", &section[start..end]);
    let out = toolscore(&["conventions", "--config", &cfg]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("acme") && !text.contains("langsmith "),
        "{text}"
    );
}
