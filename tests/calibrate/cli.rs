//! `toolscore calibrate` on the real binary: a scripted judge on 127.0.0.1
//! with known verdicts, labels that agree with it on 18 of 20, the gate's
//! exit codes, judge errors left out and counted; and a deterministic
//! metric whose best threshold is known.

use std::path::Path;

use serde_json::{json, Value};

use crate::judge::{agent_trace, verdict, FakeServer, Reply, Seen, MODEL};
use crate::util::{json_rows, TempDir};

/// Traces 0..22; calls by `i % 4`: both expected calls (tool_correctness
/// 1.0), the weather call only (2/3), a wrong city (0.5), none (0).
pub(crate) fn trace_id(i: usize) -> String {
    format!("{:032x}", 0xca1_1b00 + i)
}

fn request(i: usize) -> String {
    format!("Weather please, ticket q{i:02}x")
}

pub(crate) fn write_run(dir: &Path, n: usize) -> (String, String) {
    let mut traces = String::new();
    let mut cases = String::new();
    for i in 0..n {
        let city = format!("{{\"city\":\"c{i}\"}}");
        let calls: Vec<(&str, &str)> = match i % 4 {
            0 => vec![("get_weather", &city), ("format_answer", "{}")],
            1 => vec![("get_weather", &city)],
            2 => vec![
                ("get_weather", "{\"city\":\"elsewhere\"}"),
                ("format_answer", "{}"),
            ],
            _ => vec![],
        };
        traces += &agent_trace(&trace_id(i), &request(i), &json!([]), &calls);
        traces.push('\n');
        cases += &json!({"id": format!("c{i:02}"), "trace_id": trace_id(i), "expected_tools": [
            {"name": "get_weather", "args": {"city": format!("c{i}")}}, "format_answer"]})
        .to_string();
        cases.push('\n');
    }
    let (t, f) = (dir.join("traces.jsonl"), dir.join("expected.jsonl"));
    std::fs::write(&t, traces).unwrap();
    std::fs::write(&f, cases).unwrap();
    (t.display().to_string(), f.display().to_string())
}

fn write_labels(dir: &Path, name: &str, rows: &[Value]) -> String {
    let p = dir.join(name);
    let text: Vec<String> = rows.iter().map(Value::to_string).collect();
    std::fs::write(&p, text.join("\n") + "\n").unwrap();
    p.display().to_string()
}

/// Which trace a prompt is about.
fn ticket(seen: &Seen) -> Option<usize> {
    let p = seen.prompt();
    let at = p.find("ticket q")? + "ticket q".len();
    p.get(at..at + 2)?.parse().ok()
}

/// The judge: yes to 0..=8 and 10, no to 9 and 11..=19; a 500 to 20, 21.
fn script(seen: &Seen, _n: usize) -> Reply {
    match ticket(seen) {
        Some(20 | 21) => Reply::Status(500, None),
        Some(i) => verdict(i <= 8 || i == 10, &format!("judged q{i:02}")),
        None => Reply::Status(418, None),
    }
}

fn calibrate(server: &FakeServer, cache: &str, args: &[&str]) -> (Option<i32>, Vec<Value>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolscore"))
        .args([
            "calibrate",
            "-m",
            "mlflow.llm_fuzzy",
            "--judge-url",
            &server.url,
        ])
        .args([
            "--judge-model",
            MODEL,
            "--judge-cache",
            cache,
            "--judge-retries",
            "0",
        ])
        .args(["-f", "jsonl", "-q"])
        .args(args)
        .env("TOOLSCORE_JUDGE_API_KEY", "sk-test")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), json_rows(&out.stdout), stderr)
}

fn row<'a>(rows: &'a [Value], ty: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["type"] == ty)
        .unwrap_or_else(|| panic!("no {ty} row: {rows:?}"))
}

fn near(v: &Value, want: f64, what: &str) {
    let got = v.as_f64().unwrap_or_else(|| panic!("{what}: {v}"));
    assert!((got - want).abs() < 5e-4, "{what}: {got}, want {want}");
}

#[test]
fn a_judge_agreeing_on_18_of_20_and_the_gate() {
    let server = FakeServer::start(false, script);
    let dir = TempDir::new("calibrate-judge");
    let (traces, fixture) = write_run(dir.path(), 22);
    let cache = dir.path().join("cache").display().to_string();
    // People pass 0..10 and fail 10..20; 20 and 21 are labelled too.
    let rows: Vec<Value> = (0..22)
        .map(|i| {
            json!({"case": format!("c{i:02}"), "label": if i < 10 || i == 20 {"pass"} else {"fail"},
                        "rationale": format!("human on q{i:02}")})
        })
        .collect();
    let labels = write_labels(dir.path(), "labels.jsonl", &rows);
    let base = [
        "--labels",
        labels.as_str(),
        "-e",
        fixture.as_str(),
        traces.as_str(),
    ];

    let (code, out, stderr) = calibrate(&server, &cache, &base);
    assert_eq!(code, Some(0), "{stderr}");
    let first_requests = server.seen().len();
    let c = row(&out, "calibration");
    assert_eq!(c["metric"], "mlflow.llm_fuzzy");
    assert_eq!(c["n"], 20, "{c}");
    // Figures by hand: 18 of 20 agree; po 0.9, pe 0.5, kappa 0.8; 9 of
    // 10 on each class, Wilson 95% interval [0.5958, 0.9821].
    near(&c["accuracy"], 0.9, "accuracy");
    near(&c["kappa"], 0.8, "kappa");
    for class in ["pass", "fail"] {
        near(&c[format!("{class}_agreement")], 0.9, class);
        near(&c[format!("{class}_agreement_low")], 0.5958, class);
        near(&c[format!("{class}_agreement_high")], 0.9821, class);
    }
    assert_eq!(
        c["confusion"],
        json!({"both_pass": 9, "metric_pass_human_fail": 1, "metric_fail_human_pass": 1, "both_fail": 9})
    );
    let d: Vec<(&str, &str)> = c["disagreements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["case"].as_str().unwrap(), d["trace_id"].as_str().unwrap()))
        .collect();
    let (t9, t10) = (trace_id(9), trace_id(10));
    assert_eq!(d, vec![("c09", t9.as_str()), ("c10", t10.as_str())]);
    let reason = c["disagreements"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("judged q09"), "{reason}");
    assert_eq!(c["disagreements"][0]["rationale"], json!(["human on q09"]));
    // The judge's two errors: left out, counted, said.
    assert_eq!(c["excluded"], json!({"judge_error": 2}), "{c}");
    assert!(
        stderr.contains("2 labelled evaluation(s) left out: the judge gave no verdict"),
        "{stderr}"
    );
    let keys: Vec<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "accuracy",
            "best_threshold",
            "confusion",
            "disagreements",
            "excluded",
            "fail_agreement",
            "fail_agreement_high",
            "fail_agreement_low",
            "kappa",
            "metric",
            "n",
            "pass_agreement",
            "pass_agreement_high",
            "pass_agreement_low",
            "threshold",
            "type",
        ]
    );

    // The gate. A re-run is answered from the cache: only the two prompts
    // that failed are asked again.
    let (code, _, stderr) = calibrate(
        &server,
        &cache,
        &[&base[..], &["--min-kappa", "0.9"]].concat(),
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("mlflow.llm_fuzzy: kappa 0.800 is under --min-kappa 0.9"),
        "{stderr}"
    );
    assert_eq!(server.seen().len(), first_requests + 2);
    let (code, _, stderr) = calibrate(
        &server,
        &cache,
        &[&base[..], &["--min-agreement", "0.6"]].concat(),
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("pass agreement's 95% lower bound 0.596 is under --min-agreement 0.6"),
        "{stderr}"
    );
    let pass_args = ["--min-kappa", "0.75", "--min-agreement", "0.55"];
    let (code, _, stderr) = calibrate(&server, &cache, &[&base[..], &pass_args].concat());
    assert_eq!(code, Some(0), "{stderr}");
    // Too few labels: 2 whatever the bounds, with the plan (at 0.9
    // agreement, 37 labels of a class give an interval 0.2 wide).
    let (code, out, stderr) = calibrate(
        &server,
        &cache,
        &[&base[..], &pass_args, &["--min-labels", "11"]].concat(),
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("label 27 more pass(es) and 27 more failure(s)"),
        "{stderr}"
    );
    assert_eq!(row(&out, "calibration_summary")["exit_code"], 2);
}

#[test]
fn a_deterministic_metric_gets_its_best_threshold() {
    let dir = TempDir::new("calibrate-tc");
    let (traces, fixture) = write_run(dir.path(), 20);
    // People pass the full runs and those missing only the final answer.
    let mut rows: Vec<Value> = (0..20)
        .map(|i| json!({"case": format!("c{i:02}"), "trace_id": trace_id(i), "label": i % 4 < 2}))
        .collect();
    rows.push(json!({"case": "c99", "label": "pass"}));
    rows.push(json!({"case": "c01", "metric": "nope", "label": "pass"}));
    let labels = write_labels(dir.path(), "labels.jsonl", &rows);
    let out = crate::util::toolscore(&[
        "calibrate",
        &traces,
        "-e",
        &fixture,
        "--labels",
        &labels,
        "-m",
        "tool_correctness",
        "-f",
        "jsonl",
        "-q",
        "--min-labels",
        "5",
    ]);
    let rows = json_rows(&out.stdout);
    let c = row(&rows, "calibration");
    // At 0.5 the wrong-city runs (score 0.5) pass: 15 of 20 agree, kappa 0.5.
    assert_eq!(c["threshold"], 0.5, "{c}");
    near(&c["kappa"], 0.5, "kappa");
    near(&c["best_threshold"]["threshold"], 2.0 / 3.0, "best");
    near(&c["best_threshold"]["kappa"], 1.0, "best kappa");
    near(&c["best_threshold"]["accuracy"], 1.0, "best accuracy");
    // Labels joining nothing are listed, not dropped.
    let left: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| r["type"] == "label_left_out")
        .map(|r| (r["case"].as_str().unwrap(), r["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(left, [("c99", "no_evaluation"), ("c01", "metric_not_run")]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_bad_label_row_is_rejected_and_the_rest_used() {
    let dir = TempDir::new("calibrate-csv");
    let (traces, fixture) = write_run(dir.path(), 8);
    let mut csv = String::from("case,trace_id,label,rater,rationale\n");
    for i in 0..8 {
        csv += &format!(
            "c{i:02},{},{},ann,\"fine, I think\"\n",
            trace_id(i),
            if i % 4 < 2 { "pass" } else { "fail" }
        );
    }
    csv += "c01,,perhaps,bob,\n";
    let labels = dir.path().join("labels.csv");
    std::fs::write(&labels, csv).unwrap();
    let out = crate::util::toolscore(&[
        "calibrate",
        &traces,
        "-e",
        &fixture,
        "--labels",
        labels.to_str().unwrap(),
        "-f",
        "jsonl",
        "-q",
        "--min-labels",
        "1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("labels.csv:10: `label` is `perhaps`"),
        "{stderr}"
    );
    let rows = json_rows(&out.stdout);
    assert_eq!(row(&rows, "calibration")["n"], 8);
}

#[test]
fn raters_are_compared_and_their_ties_left_out() {
    let dir = TempDir::new("calibrate-raters");
    let (traces, fixture) = write_run(dir.path(), 4);
    let says = [("ann", "ppff"), ("bob", "pfff"), ("cy", "p-pf")];
    let mut rows = Vec::new();
    for (rater, labels) in says {
        for (i, l) in labels.chars().enumerate() {
            if l != '-' {
                rows.push(json!({"case": format!("c{i:02}"), "rater": rater, "label": l == 'p'}));
            }
        }
    }
    let labels = write_labels(dir.path(), "labels.jsonl", &rows);
    let args = [
        "calibrate",
        &traces,
        "-e",
        &fixture,
        "--labels",
        &labels,
        "-q",
        "--min-labels",
        "1",
    ];
    let out = crate::util::toolscore(&[&args[..], &["-f", "jsonl"]].concat());
    let rows = json_rows(&out.stdout);
    let c = row(&rows, "calibration");
    // c01 is split (ann pass, bob fail): left out, listed; the rest by majority.
    assert_eq!(c["n"], 3, "{c}");
    assert_eq!(c["excluded"], json!({"rater_tie": 1}));
    let tie = row(&rows, "label_left_out");
    assert_eq!(
        (&tie["case"], &tie["reason"]),
        (&json!("c01"), &json!("rater_tie"))
    );
    // By hand: ann/bob agree on 3 of 4, po 0.75, pe 0.5: 0.5; ann/cy and
    // bob/cy on 2 of 3, po 2/3, pe 4/9: 0.4.
    let pairs: Vec<(String, String, f64, u64)> = c["rater_agreement"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["a"].as_str().unwrap().into(),
                p["b"].as_str().unwrap().into(),
                p["kappa"].as_f64().unwrap(),
                p["n"].as_u64().unwrap(),
            )
        })
        .collect();
    let want = [
        ("ann", "bob", 0.5, 4),
        ("ann", "cy", 0.4, 3),
        ("bob", "cy", 0.4, 3),
    ];
    assert_eq!(pairs.len(), want.len(), "{pairs:?}");
    for (got, want) in pairs.iter().zip(want) {
        assert_eq!(
            (got.0.as_str(), got.1.as_str(), got.3),
            (want.0, want.1, want.3)
        );
        assert!((got.2 - want.2).abs() < 1e-9, "{got:?}");
    }
    // The markdown summary: one table row per metric and the gate's verdict.
    let md = crate::util::toolscore(&[&args[..], &["-f", "markdown"]].concat());
    let text = String::from_utf8_lossy(&md.stdout);
    assert!(text.contains("| `tool_correctness` | 3 |"), "{text}");
    assert!(text.contains("**Gate: passed.**"), "{text}");
    assert_eq!(
        md.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&md.stderr)
    );
}
