//! Calls joined across traces (`extract::carry`) as `replay` joins them:
//! every first-sight pair sent to `serve` line by line gives each trace
//! the calls `replay` gives it; a hand loop's answer, in a later trace, is
//! counted once, there; traces held behind a lone MCP client trace are
//! reported after the hold, or at shutdown.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;
use serde_json::{json, Value};

use super::{
    agent_spans, kv, of_type, post, post_to, request, start, trace_id, Framing, JSON, PROTOBUF,
};
use crate::util::{data, hex, poll_until, TempDir};

/// Each trace's calls in the last row about it: name, arguments, status
/// and where the call was read from.
fn calls_by_trace(rows: &[Value]) -> BTreeMap<String, Vec<Value>> {
    rows.iter()
        .filter(|r| r["type"] == "evaluation" || r["type"] == "unmatched_trace")
        .map(|r| {
            let calls = r["tools_called"]
                .as_array()
                .map(|calls| {
                    calls
                        .iter()
                        .map(|c| json!([c["name"], c["args"], c["status"], c["from"]]))
                        .collect()
                })
                .unwrap_or_default();
            (
                r["trace_id"].as_str().unwrap_or_default().to_string(),
                calls,
            )
        })
        .collect()
}

/// `replay`'s rows for `files`, read together in order (no cases: every
/// trace is listed with its calls).
fn replayed(files: &[&Path]) -> Vec<Value> {
    let files: Vec<PathBuf> = files.iter().map(|f| f.to_path_buf()).collect();
    super::replay_rows(&files, None)
}

/// The first-sight pairs: each span file, with its log records beside it
/// where the instrumentation wrote the messages as logs.
fn firstsight_pairs() -> Vec<(PathBuf, Option<PathBuf>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data("firstsight"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.ends_with(".jsonl") && !name.ends_with(".logs.jsonl")
        })
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let logs = f.with_extension("logs.jsonl");
            let logs = logs.exists().then_some(logs);
            (f, logs)
        })
        .collect()
}

/// Where `serve` and `replay` disagree on a pair's calls, if anywhere.
fn pair_difference(spans: &Path, logs: Option<&Path>) -> Option<String> {
    // A long wait: traces complete at shutdown, in the order they came.
    let srv = start("firstsight", |c, _| {
        c.decision_wait = Duration::from_secs(600);
    });
    let send = |path: &Path, to: &str| {
        let text = std::fs::read_to_string(path).unwrap();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let r = post_to(srv.http, to, &[JSON], line.as_bytes(), Framing::Length);
            assert_eq!(r.status, 200, "{} to {to}", path.display());
        }
    };
    send(spans, "/v1/traces");
    if let Some(logs) = logs {
        send(logs, "/v1/logs");
    }
    let (summary, rows) = srv.stop();
    let mut files = vec![spans];
    files.extend(logs);
    let want = calls_by_trace(&replayed(&files));
    let got = calls_by_trace(&rows);
    (got != want).then(|| {
        let name = spans.file_name().unwrap().to_string_lossy();
        let traces: Vec<String> = want
            .keys()
            .chain(got.keys())
            .filter(|t| got.get(*t) != want.get(*t))
            .map(|t| format!("{t}: serve {:?}, replay {:?}", got.get(t), want.get(t)))
            .collect();
        // The server's counts say where a missing row went: not received,
        // not scored, or not written.
        let s = &summary.stats;
        format!(
            "{name}: {} rows; {} requests, {} spans, {} traces scored, {} unmatched, \
             {} sink errors, {} rows lost: {traces:#?}",
            rows.len(),
            s.requests,
            s.spans,
            s.traces_scored,
            s.unmatched_traces,
            s.sink_errors,
            s.results_lost
        )
    })
}

#[test]
fn every_firstsight_pair_gives_each_trace_the_calls_replay_gives() {
    let pairs = firstsight_pairs();
    assert!(pairs.len() >= 190, "{} pairs", pairs.len());
    // Two at a time: each pair has a server of its own.
    let (even, odd): (Vec<_>, Vec<_>) = pairs.iter().enumerate().partition(|(i, _)| i % 2 == 0);
    let check = |half: Vec<(usize, &(PathBuf, Option<PathBuf>))>| {
        half.into_iter()
            .filter_map(|(_, (spans, logs))| pair_difference(spans, logs.as_deref()))
            .collect::<Vec<_>>()
    };
    let differ: Vec<String> = std::thread::scope(|s| {
        let other = s.spawn(|| check(odd));
        let mut differ = check(even);
        differ.extend(other.join().unwrap());
        differ
    });
    assert!(differ.is_empty(), "serve differs from replay: {differ:#?}");
}

/// One model call of a hand-written loop, its own trace, in the shape
/// OpenLIT's OpenAI integration writes: the request carries the results
/// of the calls the last answer asked for (`results`: call id, result)
/// and not the answer itself; the output asks for `asks` (call id, tool,
/// arguments).
fn model_call(
    t: u8,
    (start, end): (u64, u64),
    results: &[(&str, &str)],
    asks: &[(&str, &str, Value)],
) -> ExportTraceServiceRequest {
    let mut input = vec![
        json!({"role": "user", "parts": [{"type": "text", "content": "Tides at Brest, and a berth for two nights?"}]}),
    ];
    input.extend(results.iter().map(|(id, r)| {
        json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": id, "response": r}]})
    }));
    let parts: Vec<Value> = asks
        .iter()
        .map(|(id, n, a)| json!({"type": "tool_call", "id": id, "name": n, "arguments": a}))
        .collect();
    let output = if parts.is_empty() {
        json!([{"role": "assistant", "parts": [{"type": "text", "content": "Done."}], "finish_reason": "stop"}])
    } else {
        json!([{"role": "assistant", "parts": parts, "finish_reason": "tool_call"}])
    };
    let span = Span {
        trace_id: trace_id(t),
        span_id: vec![t, 0, 0, 0, 0, 0, 0, 1],
        name: "chat tide-model".into(),
        kind: 3,
        start_time_unix_nano: start,
        end_time_unix_nano: end,
        attributes: vec![
            kv("gen_ai.operation.name", "chat"),
            kv("gen_ai.provider.name", "openai"),
            kv("gen_ai.request.model", "tide-model"),
            kv("gen_ai.input.messages", &Value::Array(input).to_string()),
            kv("gen_ai.output.messages", &output.to_string()),
        ],
        ..Default::default()
    };
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![
                    kv("service.name", "harbour-agent"),
                    kv("service.instance.id", "harbour-1"),
                ],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans: vec![span],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// A hand loop: the first model call asks for two tools, the second
/// carries their results (each its own trace, scored apart: the second
/// comes after the first was reported). `replay` counts both calls once,
/// in the second trace; so does `serve`, in the second trace's first
/// report (revision 1), the first trace's row listing none.
#[test]
fn a_later_trace_answering_an_earlier_ones_calls_counts_them_once_there() {
    let tide = json!({"harbor": "Brest"});
    let berth = json!({"harbor": "Brest", "nights": 2});
    let first = model_call(
        0x31,
        (1_000, 2_000),
        &[],
        &[
            ("call_t1", "check_tide", tide.clone()),
            ("call_b1", "book_berth", berth.clone()),
        ],
    );
    let second = model_call(
        0x32,
        (3_000, 4_000),
        &[("call_t1", "{\"high\": \"06:12\"}"), ("call_b1", "booked")],
        &[],
    );
    let dir = TempDir::new("handloop");
    let files = written(&dir, &[&first, &second]);
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let want = calls_by_trace(&replayed(&paths));
    let (t1, t2) = (hex(&trace_id(0x31)), hex(&trace_id(0x32)));
    // The answer counts both calls, in the trace that carries it.
    assert_eq!(want[&t1], Vec::<Value>::new());
    assert_eq!(
        want[&t2],
        [
            json!(["check_tide", tide, "ok", "conversation"]),
            json!(["book_berth", berth, "ok", "conversation"])
        ]
    );
    let srv = start("handloop", |_, _| {});
    let r = post(
        srv.http,
        &[PROTOBUF],
        &first.encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 200);
    poll_until("the first trace reported", Duration::from_secs(15), || {
        calls_by_trace(&srv.rows()).contains_key(&t1)
    });
    let r = post(
        srv.http,
        &[PROTOBUF],
        &second.encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 200);
    poll_until("the second trace reported", Duration::from_secs(15), || {
        calls_by_trace(&srv.rows()).contains_key(&t2)
    });
    let (_, rows) = srv.stop();
    assert_eq!(calls_by_trace(&rows), want);
    // One report each: nothing was re-reported.
    let traces = of_type(&rows, "unmatched_trace");
    assert_eq!(traces.len(), 2, "{rows:#?}");
    assert!(traces.iter().all(|r| r["revision"] == 1));
    // The first trace says its calls are counted where their answer is.
    assert!(traces[0]["warnings"]
        .to_string()
        .contains("listed, not counted"));
}

/// The lone MCP client trace of a pair (its client's spans: the trace
/// that counts its calls, the agent's, is left out) and a trace after it
/// without calls (a trace counting calls would let the held ones go).
fn lone_client_and_another() -> (Vec<u8>, Vec<u8>, String) {
    let text = std::fs::read_to_string(data("firstsight/js-vercel-mcp-openllmetry.jsonl")).unwrap();
    let mut req: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let lone = "f1257516000000000000000000000001";
    for rs in req["resourceSpans"].as_array_mut().unwrap() {
        for ss in rs["scopeSpans"].as_array_mut().unwrap() {
            ss["spans"]
                .as_array_mut()
                .unwrap()
                .retain(|s| s["traceId"] == lone);
        }
    }
    let other = request(agent_spans(0x41, "conv-held", &[])).encode_to_vec();
    (req.to_string().into_bytes(), other, lone.to_string())
}

/// Held behind a lone MCP client trace, a trace is reported at shutdown
/// when the trace counting the client's calls never came.
#[test]
fn traces_held_behind_a_lone_client_trace_are_reported_at_shutdown() {
    let (lone, other, lone_id) = lone_client_and_another();
    let srv = start("held-shutdown", |c, _| {
        c.session_wait = Duration::from_secs(600);
    });
    let r = post(srv.http, &[JSON], &lone, Framing::Length);
    assert_eq!(r.status, 200);
    srv.wait_for("the lone trace scored", |s| s.traces_scored >= 1);
    let r = post(srv.http, &[PROTOBUF], &other, Framing::Length);
    assert_eq!(r.status, 200);
    srv.wait_for("the next trace scored", |s| s.traces_scored >= 2);
    // Both scored, neither reported: held for the trace counting the calls.
    assert!(calls_by_trace(&srv.rows()).is_empty(), "{:?}", srv.rows());
    let (summary, rows) = srv.stop();
    let got = calls_by_trace(&rows);
    let ids: Vec<&String> = got.keys().collect();
    let other_id = hex(&trace_id(0x41));
    assert_eq!(ids.len(), 2, "{rows:#?}");
    assert!(got.contains_key(&lone_id) && got.contains_key(&other_id));
    // Reported in the order they completed, the client's calls its own.
    let order: Vec<&str> = of_type(&rows, "unmatched_trace")
        .iter()
        .map(|r| r["trace_id"].as_str().unwrap())
        .collect();
    assert_eq!(order, [lone_id.as_str(), other_id.as_str()]);
    assert_eq!(got[&lone_id].len(), 2, "{:?}", got[&lone_id]);
    assert_eq!(summary.stats.traces_scored, 2);
}

/// Held behind a lone MCP client trace, a trace is reported once the hold
/// (`--session-wait`) has passed, the server still running.
#[test]
fn traces_held_behind_a_lone_client_trace_are_reported_after_the_hold() {
    let (lone, other, lone_id) = lone_client_and_another();
    let srv = start("held-wait", |c, _| {
        c.session_wait = Duration::from_millis(300);
    });
    let r = post(srv.http, &[JSON], &lone, Framing::Length);
    assert_eq!(r.status, 200);
    let r = post(srv.http, &[PROTOBUF], &other, Framing::Length);
    assert_eq!(r.status, 200);
    let other_id = hex(&trace_id(0x41));
    let got = poll_until("both reported", Duration::from_secs(15), || {
        let got = calls_by_trace(&srv.rows());
        (got.len() == 2).then_some(got)
    });
    assert!(got.contains_key(&lone_id) && got.contains_key(&other_id));
    srv.stop();
}

/// Each trace's warnings in the last row about it.
fn warnings_by_trace(rows: &[Value]) -> BTreeMap<String, Value> {
    of_type(rows, "unmatched_trace")
        .iter()
        .map(|r| {
            let id = r["trace_id"].as_str().unwrap_or_default().to_string();
            (id, r["warnings"].clone())
        })
        .collect()
}

/// A hand loop's two model calls completing together (at shutdown, one
/// batch): as `replay`, `serve` counts the call in the second trace, and
/// the first trace, whose call a later trace counts, warns of nothing.
/// (Completing apart, the first is reported alone with its warning:
/// `a_later_trace_answering_an_earlier_ones_calls_counts_them_once_there`.)
#[test]
fn an_ask_a_later_trace_of_the_batch_counts_is_no_warning_as_in_replay() {
    let quay = json!({"quay": 4});
    let first = model_call(
        0x51,
        (1_000, 2_000),
        &[],
        &[("call_q1", "check_quay", quay)],
    );
    let second = model_call(0x52, (3_000, 4_000), &[("call_q1", "free")], &[]);
    let dir = TempDir::new("asked-later");
    let files = written(&dir, &[&first, &second]);
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let replay_rows = replayed(&paths);
    let want = warnings_by_trace(&replay_rows);
    let t1 = hex(&trace_id(0x51));
    assert_eq!(want.len(), 2, "{replay_rows:#?}");
    assert!(want[&t1].is_null(), "{want:?}");
    // Traces complete at shutdown, in the order they came.
    let srv = start("asked-later", |c, _| {
        c.decision_wait = Duration::from_secs(600);
    });
    for req in [&first, &second] {
        let r = post(srv.http, &[PROTOBUF], &req.encode_to_vec(), Framing::Length);
        assert_eq!(r.status, 200);
    }
    let (_, rows) = srv.stop();
    assert_eq!(warnings_by_trace(&rows), want, "{rows:#?}");
    assert_eq!(calls_by_trace(&rows), calls_by_trace(&replay_rows));
}

/// Writes each request to a file of its own in `dir`, in order (the files
/// `replay` reads).
fn written(dir: &TempDir, requests: &[&ExportTraceServiceRequest]) -> Vec<PathBuf> {
    requests
        .iter()
        .enumerate()
        .map(|(i, req)| {
            let p = dir.path().join(format!("req-{i}.pb"));
            std::fs::write(&p, req.encode_to_vec()).unwrap();
            p
        })
        .collect()
}
