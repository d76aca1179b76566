//! The corpus sent to `serve` scores like `replay` of the same files: over
//! each transport, and split by trace id across two instances.

use std::path::{Path, PathBuf};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use serde_json::{json, Value};

use super::{keyed, of_type, post, replay_rows, start, Framing, PROTOBUF};
use crate::util::{data, TempDir};

const SOURCES: &[&str] = &[
    "mlflow",
    "openinference-manual",
    "openinference-langchain",
    "pydantic-ai",
    "vercel-ai",
    "galtea",
    "langfuse",
    "traceloop",
    "strands",
    "google-adk",
];

fn pb_files(source: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data(&format!("corpus/{source}/otlp")))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pb"))
        .collect();
    files.sort(); // req-NNNN: arrival order
    files
}

/// Fixtures from every source's truth: one case per trace.
fn truth_fixture(dir: &Path) -> PathBuf {
    let mut lines = Vec::new();
    for source in SOURCES {
        let text = std::fs::read_to_string(data(&format!("corpus/{source}/truth.jsonl"))).unwrap();
        for l in text.lines() {
            let t: Value = serde_json::from_str(l).unwrap();
            lines.push(
                json!({
                    "id": format!("{source}/{}", t["scenario"].as_str().unwrap()),
                    "trace_id": t["trace_id"],
                    "expected_tools": t["tools_in_order"],
                })
                .to_string(),
            );
        }
    }
    // A case with no trace, to check unmatched cases are reported at the end.
    lines.push(
        r#"{"id":"ghost","trace_id":"00000000000000000000000000000001","expected_tools":["x"]}"#
            .into(),
    );
    let p = dir.join("truth-cases.jsonl");
    std::fs::write(&p, lines.join("\n")).unwrap();
    p
}

fn corpus_matches_replay(over_grpc: bool) {
    let fixture_dir = TempDir::new("truth");
    let fixture = truth_fixture(fixture_dir.path());
    // A long wait: traces complete at shutdown (the drain), so a slow
    // machine cannot split them; the timer path is tested elsewhere.
    let srv = start(
        if over_grpc {
            "corpus-grpc"
        } else {
            "corpus-http"
        },
        |c, _| {
            c.expected = Some(fixture.clone());
            c.decision_wait = Duration::from_secs(600);
        },
    );
    let mut client = over_grpc.then(|| srv.grpc_client());
    let mut all_files = Vec::new();
    for source in SOURCES {
        let files = pb_files(source);
        for f in &files {
            let body = std::fs::read(f).unwrap();
            match &mut client {
                Some(c) => {
                    let req = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
                    let resp = srv.grpc_export(c, req).unwrap();
                    assert_eq!(resp.partial_success, None, "{}", f.display());
                }
                None => {
                    let r = post(srv.http, &[PROTOBUF], &body, Framing::Length);
                    assert_eq!(r.status, 200, "{}", f.display());
                    assert!(r.body.is_empty(), "full success has no partial_success");
                }
            }
        }
        all_files.extend(files);
    }
    let (summary, rows) = srv.stop();
    let expected = replay_rows(&all_files, Some(&fixture));
    let (got, want) = (keyed(&rows), keyed(&expected));
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (k, w) in &want {
        assert_eq!(&got[k], w, "trace/case {k}");
    }
    assert!(want.len() >= 55, "{} rows", want.len());
    let ids: Vec<&str> = summary.unmatched_cases.iter().map(|c| c.id()).collect();
    assert_eq!(ids, ["ghost"]);
    assert!(of_type(&rows, "evaluation")
        .iter()
        .all(|r| r["revision"] == 1));
    let last = rows.last().unwrap();
    assert_eq!(last["type"], "summary");
    assert_eq!(
        last["metrics"]["tool_correctness"]["evaluations"],
        summary.evaluations
    );
}

#[test]
fn corpus_over_http_scores_like_replay() {
    corpus_matches_replay(false);
}

#[test]
fn corpus_over_grpc_scores_like_replay() {
    corpus_matches_replay(true);
}

/// Two instances behind a trace-id router (the Collector's `loadbalancing`
/// exporter with `routing_key: traceID`) give exactly one instance's results.
#[test]
fn splitting_by_trace_id_across_two_instances_matches_one() {
    let fixture_dir = TempDir::new("split");
    let fixture = truth_fixture(fixture_dir.path());
    let start_one = |tag: &str| {
        start(tag, |c, _| {
            c.expected = Some(fixture.clone());
            c.decision_wait = Duration::from_secs(600);
        })
    };
    let (a, b) = (start_one("split-a"), start_one("split-b"));
    let (mut ca, mut cb) = (a.grpc_client(), b.grpc_client());
    let mut all_files = Vec::new();
    for source in SOURCES {
        let files = pb_files(source);
        for f in &files {
            let req =
                ExportTraceServiceRequest::decode(std::fs::read(f).unwrap().as_slice()).unwrap();
            // Route every span by its trace id, like a consistent-hash ring.
            let (mut to_a, mut to_b) = (req.clone(), req);
            for (side, keep_even) in [(&mut to_a, true), (&mut to_b, false)] {
                for rs in &mut side.resource_spans {
                    for ss in &mut rs.scope_spans {
                        ss.spans.retain(|s| {
                            (s.trace_id.iter().map(|&x| x as u32).sum::<u32>() % 2 == 0)
                                == keep_even
                        });
                    }
                }
            }
            a.grpc_export(&mut ca, to_a).unwrap();
            b.grpc_export(&mut cb, to_b).unwrap();
        }
        all_files.extend(files);
    }
    let (_, rows_a) = a.stop();
    let (_, rows_b) = b.stop();
    let mut got = keyed(&rows_a);
    let from_b = keyed(&rows_b);
    assert!(
        !got.is_empty() && !from_b.is_empty(),
        "both instances got traces"
    );
    for (k, v) in from_b {
        assert!(
            got.insert(k.clone(), v).is_none(),
            "{k} scored by both instances"
        );
    }
    let want = keyed(&replay_rows(&all_files, Some(&fixture)));
    assert_eq!(got, want);
}
