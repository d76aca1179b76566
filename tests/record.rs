//! `toolscore record`: a fixture recorded from traces replays as passing on
//! them, and fails once a call changes; the joins, and what is refused.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::util::{data, toolscore, TempDir};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn exit_of(out: &Output) -> Option<i32> {
    out.status.code()
}

/// Records `inputs` to `to` with `extra` flags; the run's output.
fn record(inputs: &[&Path], to: &Path, extra: &[&str]) -> Output {
    let mut args: Vec<String> = vec!["record".into(), "-o".into(), to.display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    toolscore(&argv)
}

/// The JSON lines of `path`.
fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

fn write_lines(path: &Path, rows: &[Value]) {
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// `replay -e fixture -f jsonl` on `inputs` with `extra` flags: the exit
/// code and the report's rows.
fn replay(inputs: &[&Path], fixture: &Path, extra: &[&str]) -> (Option<i32>, Vec<Value>) {
    let mut args: Vec<String> = vec![
        "replay".into(),
        "-q".into(),
        "-f".into(),
        "jsonl".into(),
        "-e".into(),
        fixture.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = toolscore(&argv);
    let rows = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    (exit_of(&out), rows)
}

fn of_type<'a>(rows: &'a [Value], kind: &str) -> Vec<&'a Value> {
    rows.iter().filter(|r| r["type"] == kind).collect()
}

/// Every trace source of real exports under tests/data/corpus: each
/// folder's Collector-style `traces.jsonl`, its `.pb` requests, and MLflow's
/// native trace JSON where there is some.
fn real_sources() -> Vec<(String, Vec<PathBuf>)> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(data("corpus"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("traces.jsonl").exists())
        .collect();
    dirs.sort();
    let mut out = Vec::new();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        out.push((
            format!("{name}/traces.jsonl"),
            vec![dir.join("traces.jsonl")],
        ));
        let mut pb: Vec<PathBuf> = std::fs::read_dir(dir.join("otlp"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "pb"))
            .collect();
        pb.sort();
        if !pb.is_empty() {
            out.push((format!("{name}/otlp/*.pb"), pb));
        }
        if dir.join("mlflow-native").is_dir() {
            out.push((
                format!("{name}/mlflow-native"),
                vec![dir.join("mlflow-native")],
            ));
        }
    }
    out
}

#[test]
fn a_recording_replays_as_passing_on_every_real_export() {
    let sources = real_sources();
    assert!(sources.len() >= 20, "{} sources", sources.len());
    let tmp = TempDir::new("record-property");
    for (i, (label, inputs)) in sources.iter().enumerate() {
        let fixture = tmp.path().join(format!("recorded-{i}.jsonl"));
        let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
        let out = record(&inputs, &fixture, &[]);
        assert_eq!(exit_of(&out), Some(0), "{label}: {}", stderr(&out));
        let cases = lines(&fixture);
        assert!(!cases.is_empty(), "{label}: nothing recorded");
        let summary = format!("recorded {} cases", cases.len());
        assert!(stderr(&out).contains(&summary), "{label}: {}", stderr(&out));
        let (code, rows) = replay(&inputs, &fixture, &[]);
        assert_eq!(code, Some(0), "{label}: {rows:?}");
        let evaluations = of_type(&rows, "evaluation");
        assert_eq!(evaluations.len(), cases.len(), "{label}: one per case");
        for e in &evaluations {
            assert_eq!(e["pass"], true, "{label}: {e}");
            assert_eq!(e["joined_by"], "trace_id", "{label}: {e}");
            let case = cases
                .iter()
                .find(|c| c["id"] == e["case"])
                .unwrap_or_else(|| panic!("{label}: no case {}", e["case"]));
            // The case expects exactly the calls the trace made.
            let expected = case["expected_tools"].as_array().unwrap();
            let called = e["tools_called"].as_array().unwrap();
            assert_eq!(expected.len(), called.len(), "{label}: {case}");
            for (x, c) in expected.iter().zip(called) {
                let name = x.get("name").unwrap_or(x);
                assert_eq!(name, &c["name"], "{label}: {case}");
                let args = c.get("args").filter(|a| !a.is_null());
                assert_eq!(x.get("args"), args, "{label}: {case}");
            }
        }
        for kind in ["unmatched_case", "unmatched_trace", "rejected"] {
            assert!(of_type(&rows, kind).is_empty(), "{label}: {kind}: {rows:?}");
        }
    }
}

/// The recording of galtea's traces, and the first case with several calls
/// that all have arguments.
fn galtea_recording(tmp: &TempDir) -> (PathBuf, Vec<Value>, usize) {
    let fixture = tmp.path().join("recorded.jsonl");
    let out = record(&[&data("corpus/galtea/traces.jsonl")], &fixture, &[]);
    assert_eq!(exit_of(&out), Some(0), "{}", stderr(&out));
    let cases = lines(&fixture);
    let at = cases
        .iter()
        .position(|c| {
            let tools = c["expected_tools"].as_array().unwrap();
            tools.len() >= 2 && tools.iter().all(|t| t["args"].is_object())
        })
        .expect("a case with several calls with arguments");
    (fixture, cases, at)
}

/// The one failed evaluation: it is case `id`'s.
fn the_failure<'a>(rows: &'a [Value], id: &Value) -> &'a Value {
    let failed: Vec<&Value> = of_type(rows, "evaluation")
        .into_iter()
        .filter(|e| e["pass"] != true)
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(&failed[0]["case"], id);
    failed[0]
}

#[test]
fn a_changed_argument_or_a_dropped_call_fails_the_changed_case() {
    let tmp = TempDir::new("record-changed");
    let galtea = data("corpus/galtea/traces.jsonl");
    let traces = [galtea.as_path()];
    let (fixture, cases, at) = galtea_recording(&tmp);
    let id = cases[at]["id"].clone();
    // Any change fails: each recorded case carries threshold 1, which
    // overrides the run's default of 0.5.
    assert!(cases.iter().all(|c| c["threshold"] == 1.0), "{cases:?}");
    let strict: [&str; 0] = [];
    let (code, _) = replay(&traces, &fixture, &strict);
    assert_eq!(code, Some(0), "unchanged, it passes");

    // One argument value changed.
    let mut changed = cases.clone();
    let args = changed[at]["expected_tools"][0]["args"]
        .as_object_mut()
        .unwrap();
    let key = args.keys().next().expect("an argument").clone();
    args.insert(key.clone(), Value::from("changed-by-the-test"));
    let tool = changed[at]["expected_tools"][0]["name"].clone();
    let edited = tmp.path().join("changed-arg.jsonl");
    write_lines(&edited, &changed);
    let (code, rows) = replay(&traces, &edited, &strict);
    assert_eq!(code, Some(1));
    let failure = the_failure(&rows, &id);
    let wrong = failure["wrong_args"].as_array().unwrap();
    assert_eq!(wrong.len(), 1, "{failure}");
    assert_eq!(wrong[0]["name"], tool);
    assert_eq!(wrong[0]["expected"][&key], "changed-by-the-test");
    let reason = failure["explanation"].as_str().unwrap();
    assert!(reason.contains("changed-by-the-test"), "{reason}");

    // One call dropped from the case: the trace's call is named as not expected.
    let mut dropped = cases.clone();
    let gone = dropped[at]["expected_tools"]
        .as_array_mut()
        .unwrap()
        .remove(0);
    let edited = tmp.path().join("dropped-call.jsonl");
    write_lines(&edited, &dropped);
    let (code, rows) = replay(&traces, &edited, &strict);
    assert_eq!(code, Some(1));
    let failure = the_failure(&rows, &id);
    assert_eq!(failure["unexpected"], serde_json::json!([gone["name"]]));
}

/// Rewrites OTLP/JSON request lines without the span `span_id` (hex).
fn without_span(from: &Path, to: &Path, span_id: &str) {
    let mut removed = 0;
    let mut rows = lines(from);
    for row in &mut rows {
        for rs in row["resourceSpans"].as_array_mut().into_iter().flatten() {
            for ss in rs["scopeSpans"].as_array_mut().into_iter().flatten() {
                if let Some(spans) = ss["spans"].as_array_mut() {
                    let before = spans.len();
                    spans.retain(|s| {
                        !s["spanId"]
                            .as_str()
                            .is_some_and(|i| i.eq_ignore_ascii_case(span_id))
                    });
                    removed += before - spans.len();
                }
            }
        }
    }
    assert!(removed >= 1, "span {span_id} not found");
    write_lines(to, &rows);
}

#[test]
fn a_call_the_agent_no_longer_makes_is_missing() {
    let tmp = TempDir::new("record-missing");
    let (fixture, cases, at) = galtea_recording(&tmp);
    let trace_id = cases[at]["trace_id"].as_str().unwrap().to_string();
    // The trace's last call (no call starts inside it), as inspect finds it.
    let out = toolscore(&[
        "inspect",
        "-f",
        "jsonl",
        data("corpus/galtea/traces.jsonl").to_str().unwrap(),
    ]);
    let row: Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["trace_id"] == trace_id.as_str())
        .expect("the trace in inspect's rows");
    let last = row["tools"].as_array().unwrap().last().unwrap().clone();
    let traces = tmp.path().join("fewer-calls.jsonl");
    without_span(
        &data("corpus/galtea/traces.jsonl"),
        &traces,
        last["span_id"].as_str().unwrap(),
    );
    let (code, rows) = replay(&[&traces], &fixture, &[]);
    assert_eq!(code, Some(1));
    let failure = the_failure(&rows, &cases[at]["id"]);
    assert_eq!(failure["missing"], serde_json::json!([last["name"]]));
}

#[test]
fn user_text_join_one_case_per_request() {
    let tmp = TempDir::new("record-user-text");
    let fixture = tmp.path().join("by-text.jsonl");
    let mlflow = data("corpus/mlflow/traces.jsonl");
    let out = record(&[&mlflow], &fixture, &["--join", "user_text"]);
    assert_eq!(exit_of(&out), Some(0), "{}", stderr(&out));
    let cases = lines(&fixture);
    assert!(cases.len() >= 2);
    for c in &cases {
        assert!(c.get("trace_id").is_none(), "{c}");
        let text = c["user_text"].as_str().expect("a user text");
        assert!(!text.trim().is_empty());
        let id = c["id"].as_str().unwrap();
        assert!(id.len() <= 40, "{id}");
        assert!(
            id.chars()
                .all(|ch| ch.is_alphanumeric() || ch == '-' || ch == '_'),
            "{id}"
        );
    }
    let (code, rows) = replay(&[&mlflow], &fixture, &[]);
    assert_eq!(code, Some(0), "{rows:?}");
    let evaluations = of_type(&rows, "evaluation");
    assert_eq!(evaluations.len(), cases.len());
    assert!(evaluations
        .iter()
        .all(|e| e["joined_by"] == "user_text" && e["pass"] == true));

    // Another library ran the same requests: the first trace of each text is kept.
    let both = tmp.path().join("both.jsonl");
    let strands = data("corpus/strands/traces.jsonl");
    let out = record(&[&mlflow, &strands], &both, &["--join", "user_text"]);
    assert_eq!(exit_of(&out), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    let repeats = err.matches("has the same user text as trace").count();
    assert!(repeats >= 1, "{err}");
    let read = format!("from {} traces", lines(&both).len() + repeats);
    assert!(err.contains(&read), "every trace is a case or named: {err}");

    // Traces without a user text are named and skipped; none: exit 2, no file.
    let none = tmp.path().join("none.jsonl");
    let out = record(
        &[&data("corpus/galtea/traces.jsonl")],
        &none,
        &["--join", "user_text"],
    );
    assert_eq!(exit_of(&out), Some(2));
    let err = stderr(&out);
    assert!(err.contains("has no user text"), "{err}");
    assert!(err.contains("nothing recorded"), "{err}");
    assert!(!none.exists());
}

#[test]
fn match_join_one_case_per_value_and_a_session_key_covers_the_session() {
    let tmp = TempDir::new("record-match");
    let galtea = data("corpus/galtea/traces.jsonl");
    // A value per trace.
    let fixture = tmp.path().join("by-value.jsonl");
    let key = "galtea.inference_result.id";
    let out = record(&[&galtea], &fixture, &["--join", &format!("match:{key}")]);
    assert_eq!(exit_of(&out), Some(0), "{}", stderr(&out));
    let cases = lines(&fixture);
    assert!(cases.len() >= 2);
    for c in &cases {
        let value = c["match"][key].as_str().expect("the value");
        assert_eq!(c["id"], value, "the id is the value");
        assert_eq!(c["match"].as_object().unwrap().len(), 1);
    }
    let (code, rows) = replay(&[&galtea], &fixture, &[]);
    assert_eq!(code, Some(0), "{rows:?}");
    let evaluations = of_type(&rows, "evaluation");
    assert_eq!(evaluations.len(), cases.len());
    assert!(evaluations
        .iter()
        .all(|e| e["joined_by"] == "match" && e["pass"] == true));

    // A session key: one case for the session, its turns' calls in order.
    let fixture = tmp.path().join("by-session.jsonl");
    let out = record(&[&galtea], &fixture, &["--join", "match:galtea.session.id"]);
    assert_eq!(exit_of(&out), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("has no attribute `galtea.session.id`"),
        "{err}"
    );
    assert!(err.contains("covers the 2 traces"), "{err}");
    let cases = lines(&fixture);
    assert_eq!(cases.len(), 1, "{cases:?}");
    assert_eq!(cases[0]["match"]["galtea.session.id"], "sess-galtea-42");
    let (code, rows) = replay(&[&galtea], &fixture, &[]);
    assert_eq!(code, Some(0), "{rows:?}");
    let evaluations = of_type(&rows, "evaluation");
    assert_eq!(evaluations.len(), 1);
    assert_eq!(evaluations[0]["joined_by"], "session");
    assert_eq!(evaluations[0]["pass"], true);
    let called: Vec<&Value> = evaluations[0]["tools_called"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["name"])
        .collect();
    let expected: Vec<&Value> = cases[0]["expected_tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.get("name").unwrap_or(t))
        .collect();
    assert_eq!(called, expected);
}

#[test]
fn an_existing_file_is_kept_unless_forced_and_written_whole() {
    let tmp = TempDir::new("record-overwrite");
    let galtea = data("corpus/galtea/traces.jsonl");
    let fixture = tmp.path().join("expected.jsonl");
    std::fs::write(&fixture, "hand-edited\n").unwrap();
    let out = record(&[&galtea], &fixture, &[]);
    assert_eq!(exit_of(&out), Some(2));
    let err = stderr(&out);
    assert!(err.contains("exists") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read_to_string(&fixture).unwrap(), "hand-edited\n");

    let out = record(&[&galtea], &fixture, &["--force"]);
    assert_eq!(exit_of(&out), Some(0), "{}", stderr(&out));
    assert!(!lines(&fixture).is_empty());
    // Nothing else is left beside it (the temporary file was moved).
    let names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["expected.jsonl"]);
}

#[test]
fn nothing_recorded_or_a_rejected_input_exits_2() {
    let tmp = TempDir::new("record-bad");
    // No trace at all.
    let empty = tmp.path().join("no-traces.json");
    std::fs::write(&empty, "{\"resourceSpans\": []}\n").unwrap();
    let fixture = tmp.path().join("out.jsonl");
    let out = record(&[&empty], &fixture, &[]);
    assert_eq!(exit_of(&out), Some(2));
    assert!(
        stderr(&out).contains("nothing recorded"),
        "{}",
        stderr(&out)
    );
    assert!(!fixture.exists());

    // A bad input next to a good one: rejected, the good one recorded.
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "this is not a trace\n").unwrap();
    let galtea = data("corpus/galtea/traces.jsonl");
    let out = record(&[&bad, &galtea], &fixture, &[]);
    assert_eq!(exit_of(&out), Some(2));
    let err = stderr(&out);
    assert!(err.contains("toolscore: rejected: "), "{err}");
    let cases = lines(&fixture);
    let (code, rows) = replay(&[&galtea], &fixture, &[]);
    assert_eq!(code, Some(0), "{rows:?}");
    assert_eq!(of_type(&rows, "evaluation").len(), cases.len());
    assert!(
        err.contains(&format!("recorded {} cases", cases.len())),
        "{err}"
    );

    // -o is required.
    let out = toolscore(&[
        "record",
        data("corpus/galtea/traces.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(exit_of(&out), Some(2));
}

#[test]
fn stdout_gets_the_cases_with_dash() {
    let out = toolscore(&[
        "record",
        "-q",
        "-o",
        "-",
        data("corpus/google-adk/traces.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(exit_of(&out), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let id = first["id"].as_str().unwrap();
    let trace = first["trace_id"].as_str().unwrap();
    assert!(id.starts_with(&trace[..8]), "{id}");
    assert!(id.len() > 9, "names the agent: {id}");
    assert!(stderr(&out).is_empty(), "--quiet: {}", stderr(&out));
}
