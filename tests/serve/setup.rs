//! `serve` builds its run as `replay` does (one setup): a fixture format's
//! own metric, errors with their causes, `/metrics` counting verdicts as
//! the run's summary does, and the warnings of a trace.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use toolscore::evaluate::{MetricSpec, ScoreSettings};
use toolscore::judge::{Judge, JudgeConfig};
use toolscore::serve::{Scoring, ServeConfig, Server};

use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

use super::files::Serve;
use super::{get, keyed, of_type, parse_prometheus, post, replay_rows, start, start_scoring};
use super::{kv, request, Framing, PROTOBUF};
use crate::util::{data, TempDir};

/// The `.pb` requests of a folder, in arrival order.
fn pb_files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pb"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .pb file in {dir}");
    files
}

/// A Google ADK eval set is scored with `adk.exact` live, as replayed.
#[test]
fn adk_eval_set_scores_like_replay() {
    let fixture = data("expect/weather.evalset.json");
    let srv = start("adk-evalset", |c, _| {
        c.expected = Some(fixture.clone());
        // Traces complete at shutdown (the drain).
        c.decision_wait = Duration::from_secs(600);
    });
    let files = pb_files("corpus/google-adk/otlp");
    for f in &files {
        let r = post(
            srv.http,
            &[PROTOBUF],
            &std::fs::read(f).unwrap(),
            Framing::Length,
        );
        assert_eq!(r.status, 200, "{}", f.display());
    }
    let (_, rows) = srv.stop();
    let want = replay_rows(&files, Some(&fixture));
    let evals = of_type(&want, "evaluation");
    assert!(!evals.is_empty(), "replay scored no trace: {want:?}");
    assert!(
        evals.iter().all(|r| r["metric"] == "adk.exact"),
        "replay's headline: {evals:?}"
    );
    let got = of_type(&rows, "evaluation");
    assert!(
        got.iter().all(|r| r["metric"] == "adk.exact"),
        "serve's headline: {got:?}"
    );
    assert_eq!(keyed(&rows), keyed(&want));
}

/// An unknown metric in a fixture case is named, with the suggestion, as
/// `replay` names it.
#[test]
fn unknown_case_metric_is_named_with_its_suggestion() {
    let dir = TempDir::new("bad-metric");
    let fixture = dir.path().join("cases.jsonl");
    std::fs::write(
        &fixture,
        r#"{"id": "c1", "trace_id": "00000000000000000000000000000001", "expected_tools": ["a"], "metrics": ["tool_corectness"]}"#,
    )
    .unwrap();
    let config = ServeConfig {
        expected: Some(fixture.clone()),
        ..ServeConfig::default()
    };
    let err = match Server::new(config, Scoring::default()) {
        Ok(_) => panic!("a fixture with an unknown metric started a server"),
        Err(e) => format!("{:#}", anyhow::Error::from(e)),
    };
    for want in [
        "invalid scoring settings",
        "in fixture case `c1`",
        "unknown metric `tool_corectness`",
        "did you mean `tool_correctness`?",
    ] {
        assert!(err.contains(want), "`{want}` not in: {err}");
    }
    // The same words as replay's error.
    let out = crate::util::toolscore(&[
        "replay",
        "-q",
        "-e",
        fixture.to_str().unwrap(),
        data("corpus/google-adk/otlp").to_str().unwrap(),
    ]);
    let replay_err = String::from_utf8_lossy(&out.stderr);
    assert!(
        replay_err.contains("unknown metric `tool_corectness`: did you mean `tool_correctness`?"),
        "{replay_err}"
    );
}

/// In a dry run the judged metric is "not judged" on `/metrics` as in the
/// summary: no failure of the agent.
#[test]
fn metrics_count_not_judged_as_the_summary_does() {
    let judge = Judge::new(
        JudgeConfig {
            dry_run: true,
            ..JudgeConfig::default()
        },
        None,
    )
    .unwrap();
    let scoring = Scoring {
        settings: ScoreSettings {
            metrics: MetricSpec::parse_list(&["tool_correctness", "mlflow.llm_fuzzy"]).unwrap(),
            judge: Some(Arc::new(judge)),
            ..ScoreSettings::default()
        },
        metrics_named: true,
        ..Scoring::default()
    };
    let fixture = data("../../sample-traces/expected.jsonl");
    let files = pb_files("../../sample-traces/mlflow");
    // How many evaluations the run makes (replay's, which the corpus tests
    // check serve gives).
    let want = of_type(&replay_rows(&files, Some(&fixture)), "evaluation").len() as u64;
    assert!(want > 0);
    let srv = start_scoring("dry-run-metrics", scoring, |c, _| {
        c.expected = Some(fixture.clone());
    });
    for f in &files {
        let r = post(
            srv.http,
            &[PROTOBUF],
            &std::fs::read(f).unwrap(),
            Framing::Length,
        );
        assert_eq!(r.status, 200, "{}", f.display());
    }
    srv.wait_for("every evaluation", |s| s.evaluations >= want);
    let (_, text) = get(srv.admin.unwrap(), "/metrics");
    let (summary, _) = srv.stop();
    assert_eq!(summary.evaluations, want);
    let m = parse_prometheus(&text);
    let count = |metric: &str, outcome: &str| {
        let key =
            format!("toolscore_evaluations_total{{metric=\"{metric}\",outcome=\"{outcome}\"}}");
        *m.get(&key)
            .unwrap_or_else(|| panic!("no {key} in:\n{text}"))
    };
    for ms in &summary.metrics {
        let name = ms.metric.as_str();
        assert_eq!(
            count(name, "pass"),
            ms.passed as f64,
            "{name} passed:\n{text}"
        );
        assert_eq!(
            count(name, "error"),
            ms.errors as f64,
            "{name} errors:\n{text}"
        );
        assert_eq!(
            count(name, "not_judged"),
            ms.not_judged as f64,
            "{name}:\n{text}"
        );
        let all: f64 = ["pass", "fail", "error", "not_judged"]
            .iter()
            .map(|o| count(name, o))
            .sum();
        assert_eq!(all, ms.evaluations as f64, "{name} evaluations:\n{text}");
    }
    // Nothing was judged: no failure of the judged metric, each one "not judged".
    assert_eq!(count("mlflow.llm_fuzzy", "fail"), 0.0, "{text}");
    assert_eq!(
        count("mlflow.llm_fuzzy", "not_judged"),
        want as f64,
        "{text}"
    );
    let fuzzy = summary
        .metrics
        .iter()
        .find(|m| m.metric == "mlflow.llm_fuzzy");
    assert_eq!(fuzzy.map(|m| m.not_judged), Some(want), "{summary:?}");
    // The evaluations that failed are the ones tool_correctness failed.
    assert_eq!(
        count("tool_correctness", "fail"),
        summary.failed as f64,
        "{text}"
    );
}

/// A trace whose parent links form a cycle (`alpha <-> beta`) and that
/// reuses a span id with other content (`first`, then `second`).
fn troubled_trace() -> Vec<u8> {
    let tool = |id: u8, parent: u8, name: &str| Span {
        trace_id: vec![0xcd; 16],
        span_id: vec![0, 0, 0, 0, 0, 0, 0, id],
        parent_span_id: vec![0, 0, 0, 0, 0, 0, 0, parent],
        name: format!("execute_tool {name}"),
        kind: 1,
        start_time_unix_nano: 1_000 + u64::from(id),
        end_time_unix_nano: 2_000,
        attributes: vec![
            kv("gen_ai.operation.name", "execute_tool"),
            kv("gen_ai.tool.name", name),
        ],
        ..Default::default()
    };
    let spans = vec![
        tool(2, 3, "alpha"),
        tool(3, 2, "beta"),
        tool(4, 2, "first"),
        tool(4, 2, "second"),
    ];
    request(spans).encode_to_vec()
}

/// What a trace warns of comes from the core's per-trace stage: `serve`
/// logs the very lines `replay` prints.
#[test]
fn serve_logs_the_warnings_replay_prints() {
    let dir = TempDir::new("serve-warnings");
    let body = troubled_trace();
    let file = dir.path().join("trace.pb");
    std::fs::write(&file, &body).unwrap();
    let replay = crate::util::toolscore(&["replay", "-q", file.to_str().unwrap()]);
    let replay_err = String::from_utf8_lossy(&replay.stderr);
    let warnings: Vec<&str> = replay_err
        .lines()
        .filter_map(|l| l.strip_prefix("toolscore: warning: "))
        .collect();
    assert_eq!(warnings.len(), 2, "{replay_err}");
    assert!(
        warnings[0].contains("parent cycle(s) broken"),
        "{replay_err}"
    );
    assert!(
        warnings[1].contains("came again with the same id"),
        "{replay_err}"
    );

    let out = dir.path().join("results.jsonl");
    // Traces complete at shutdown (the drain), so each is scored once.
    let serve = Serve::start(&["--decision-wait", "10m"], &out);
    let r = post(serve.http, &[PROTOBUF], &body, Framing::Length);
    assert_eq!(r.status, 200);
    let (status, log) = serve.terminate();
    assert!(status.success(), "{log}");
    for (w, title) in warnings.iter().zip([
        "Parent cycle in a trace.",
        "Span id reused with other content.",
    ]) {
        let line = log.lines().find(|l| l.contains(title));
        let line = line.unwrap_or_else(|| panic!("`{title}` not in: {log}"));
        assert!(line.ends_with(&format!("warning={w}")), "{line} vs {w}");
    }
}
