//! Extraction on real exports (tests/data/corpus):
//! every trace's tool names and arguments equal `truth.jsonl`, read from the
//! Collector-style `traces.jsonl` and, separately, from the `.pb` requests.

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::Value;
use toolscore::value::json_eq;

use crate::util::{data, toolscore};

/// `trace_id -> [(name, args)]` from `toolscore inspect --format jsonl`.
fn inspect(paths: &[PathBuf], extra: &[&str]) -> HashMap<String, Vec<(String, Value)>> {
    let mut args: Vec<String> = vec!["inspect".into(), "--format".into(), "jsonl".into()];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(paths.iter().map(|p| p.display().to_string()));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = toolscore(&argv);
    assert!(
        out.status.success(),
        "inspect failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let tools = v["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    (
                        t["name"].as_str().unwrap().to_string(),
                        t.get("args").cloned().unwrap_or(Value::Null),
                    )
                })
                .collect();
            (v["trace_id"].as_str().unwrap().to_string(), tools)
        })
        .collect()
}

struct Truth {
    trace_id: String,
    scenario: String,
    tools: Vec<(String, Value)>,
    /// Some tool was typed as a retriever: compare with `--retrievers-as-tools`.
    has_retriever: bool,
}

fn truth(source: &str) -> Vec<Truth> {
    let text = std::fs::read_to_string(data(&format!("corpus/{source}/truth.jsonl"))).unwrap();
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            Truth {
                trace_id: v["trace_id"].as_str().unwrap().to_string(),
                scenario: v["scenario"].as_str().unwrap().to_string(),
                tools: v["tools_in_order"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| {
                        (
                            t["name"].as_str().unwrap().to_string(),
                            t.get("args").cloned().unwrap_or(Value::Null),
                        )
                    })
                    .collect(),
                has_retriever: v["tools_in_order"].as_array().unwrap().iter().any(|t| {
                    ["span_type", "observation_type", "run_type"]
                        .iter()
                        .any(|k| t.get(*k).is_some())
                }),
            }
        })
        .collect()
}

fn pb_files(source: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data(&format!("corpus/{source}/otlp")))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pb"))
        .collect();
    files.sort();
    assert!(files.len() >= 2, "{source}: expected several .pb requests");
    files
}

fn check(source: &str, extra: &[&str]) {
    let truth = truth(source);
    assert!(!truth.is_empty());
    let mut extra = extra.to_vec();
    if truth.iter().any(|t| t.has_retriever) && !extra.contains(&"--retrievers-as-tools") {
        extra.push("--retrievers-as-tools");
    }
    let extra = extra.as_slice();
    let from_jsonl = inspect(&[data(&format!("corpus/{source}/traces.jsonl"))], extra);
    let from_pb = inspect(&pb_files(source), extra);
    for (label, got) in [("traces.jsonl", &from_jsonl), (".pb", &from_pb)] {
        for t in &truth {
            let calls = got
                .get(&t.trace_id)
                .unwrap_or_else(|| panic!("{source} {label}: trace {} missing", t.trace_id));
            let same = calls.len() == t.tools.len()
                && calls
                    .iter()
                    .zip(&t.tools)
                    .all(|((n, a), (m, b))| n == m && json_eq(a, b));
            assert!(
                same,
                "{source} {label}: scenario {} trace {}\n got  {calls:?}\n want {:?}",
                t.scenario, t.trace_id, t.tools
            );
        }
    }
}

#[test]
fn mlflow_matches_truth() {
    // The support scenario's search is a RETRIEVER span.
    check("mlflow", &["--retrievers-as-tools"]);
}

#[test]
fn openinference_manual_matches_truth() {
    check("openinference-manual", &[]);
}

#[test]
fn pydantic_ai_matches_truth() {
    check("pydantic-ai", &[]);
}

#[test]
fn strands_matches_truth() {
    check("strands", &[]);
}

#[test]
fn google_adk_matches_truth() {
    check("google-adk", &[]);
}

#[test]
fn vercel_ai_matches_truth() {
    check("vercel-ai", &[]);
}

#[test]
fn galtea_matches_truth() {
    check("galtea", &[]);
}

#[test]
fn traceloop_matches_truth() {
    check("traceloop", &[]);
}

#[test]
fn openinference_langchain_matches_truth() {
    // Single-parameter tools record a bare `input.value`; the names come from
    // the model span's requested calls.
    check("openinference-langchain", &[]);
}

#[test]
fn langfuse_matches_truth() {
    // The support scenario's search is a retriever; the nested
    // `get_weather("Tokyo")` is positional, named from the generation's
    // requested call.
    check("langfuse", &["--retrievers-as-tools"]);
}

/// Every source folder under tests/data/corpus has its test above.
const CHECKED: &[&str] = &[
    "galtea",
    "google-adk",
    "langfuse",
    "mlflow",
    "openinference-langchain",
    "openinference-manual",
    "pydantic-ai",
    "strands",
    "traceloop",
    "vercel-ai",
];

#[test]
fn every_corpus_source_is_checked() {
    let mut dirs: Vec<String> = std::fs::read_dir(data("corpus"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().join("truth.jsonl").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    assert_eq!(
        dirs, CHECKED,
        "add a `*_matches_truth` test for each new source"
    );
}

#[test]
fn retrievers_are_off_by_default() {
    let got = inspect(&[data("corpus/mlflow/traces.jsonl")], &[]);
    let support = truth("mlflow")
        .into_iter()
        .find(|t| t.scenario == "support_ticket")
        .unwrap();
    let names: Vec<&str> = got[&support.trace_id]
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(names, vec!["create_ticket"]);
}

#[test]
fn errors_carry_status_and_message() {
    let out = toolscore(&[
        "inspect",
        "--format",
        "jsonl",
        data("corpus/mlflow/traces.jsonl").to_str().unwrap(),
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    let failing: Vec<Value> = text
        .lines()
        .flat_map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["tools"]
                .as_array()
                .unwrap()
                .clone()
        })
        .filter(|t| t["status"] == "error")
        .collect();
    assert_eq!(failing.len(), 1, "{failing:?}");
    assert_eq!(failing[0]["name"], "get_stock_price");
    assert!(failing[0]["error_message"]
        .as_str()
        .unwrap()
        .contains("Unknown ticker"));
}

/// Every `req-*.json` (and every line of `traces.jsonl`) under
/// tests/data/corpus decodes with the tolerant decoder exactly as with the
/// serde derives of opentelemetry-proto, and to the same request as its `.pb`.
#[test]
fn tolerant_json_decoder_matches_the_serde_derives_on_the_corpus() {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message;
    use toolscore::ingest::otlp_json;

    let decode_new = |bytes: &[u8], what: &str| {
        let doc = otlp_json::decode(bytes).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(doc.rejected.is_empty(), "{what}: {:?}", doc.rejected);
        assert_eq!(doc.requests.len(), 1, "{what}");
        doc.into_request().0
    };
    let (mut files, mut lines, mut spans) = (0, 0, 0);
    for source in CHECKED {
        let dir = data(&format!("corpus/{source}/otlp"));
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy();
                name.starts_with("req-") && name.ends_with(".json")
            })
            .collect();
        paths.sort();
        for p in paths {
            let what = p.display().to_string();
            let bytes = std::fs::read(&p).unwrap();
            let old: ExportTraceServiceRequest = serde_json::from_slice(&bytes).unwrap();
            let new = decode_new(&bytes, &what);
            assert_eq!(new, old.into(), "{what}");
            // Same as the protobuf of the same request, where there is one.
            if let Ok(pb) = std::fs::read(p.with_extension("pb")) {
                let from_pb = ExportTraceServiceRequest::decode(pb.as_slice()).unwrap();
                assert_eq!(new, from_pb.into(), "{what} vs .pb");
            }
            files += 1;
            spans += toolscore::ingest::span_count(&new);
        }
        let text = std::fs::read(data(&format!("corpus/{source}/traces.jsonl"))).unwrap();
        for (i, line) in text.split(|&b| b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let what = format!("{source}/traces.jsonl:{}", i + 1);
            let old: ExportTraceServiceRequest = serde_json::from_slice(line).unwrap();
            assert_eq!(decode_new(line, &what), old.into(), "{what}");
            lines += 1;
        }
    }
    assert!(files >= 100 && lines >= 100, "{files} files, {lines} lines");
    assert!(spans >= 300, "{spans} spans");
}
