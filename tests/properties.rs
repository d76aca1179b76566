//! Property tests over generated agent traces (OTel GenAI `execute_tool`
//! spans under an `invoke_agent` root), through the real binary and a real
//! server: the table shows every call the JSONL reports, scoring does not
//! depend on the order spans arrive in, and replay and serve agree.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::{status, Span, Status};
use proptest::prelude::*;
use proptest::sample::{select, Index};
use prost::Message;
use serde_json::{json, Value};

use crate::serve::{keyed, kv, post, replay_rows, request, start, Framing, PROTOBUF};
use crate::util::{hex, toolscore, TempDir};

const TOOLS: &[&str] = &[
    "get_weather",
    "search_flights",
    "book_hotel",
    "convert_currency",
];

/// One generated tool call: its parent is the agent root or an earlier call.
#[derive(Debug, Clone)]
struct Call {
    tool: &'static str,
    arg: u8,
    parent: Index,
    failed: bool,
}

#[derive(Debug, Clone)]
struct GenTrace {
    calls: Vec<Call>,
    /// What the fixture expects of this trace.
    expected: Vec<&'static str>,
}

fn call() -> impl Strategy<Value = Call> {
    (
        select(TOOLS),
        0u8..3,
        any::<Index>(),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(tool, arg, parent, failed)| Call {
            tool,
            arg,
            parent,
            failed,
        })
}

fn gen_trace() -> impl Strategy<Value = GenTrace> {
    (
        prop::collection::vec(call(), 0..6),
        prop::collection::vec(select(TOOLS), 0..4),
    )
        .prop_map(|(calls, expected)| GenTrace { calls, expected })
}

fn trace_id(t: usize) -> Vec<u8> {
    let mut id = vec![0x5e; 16];
    id[15] = t as u8 + 1;
    id
}

fn span_id(t: usize, k: usize) -> Vec<u8> {
    vec![t as u8 + 1, 0, 0, 0, 0, 0, 0, k as u8 + 1]
}

/// The spans of trace `t`: the agent root (span 0), then call `k` as span
/// `k + 1`, in start order.
fn spans(t: usize, g: &GenTrace) -> Vec<Span> {
    let mut out = vec![Span {
        trace_id: trace_id(t),
        span_id: span_id(t, 0),
        name: "invoke_agent planner".into(),
        kind: 1,
        start_time_unix_nano: 1_000,
        end_time_unix_nano: 9_000,
        attributes: vec![
            kv("gen_ai.operation.name", "invoke_agent"),
            kv("gen_ai.agent.name", "planner"),
        ],
        ..Default::default()
    }];
    for (k, c) in g.calls.iter().enumerate() {
        let parent = c.parent.index(k + 1);
        let start = 1_100 + 100 * k as u64;
        out.push(Span {
            trace_id: trace_id(t),
            span_id: span_id(t, k + 1),
            parent_span_id: span_id(t, parent),
            name: format!("execute_tool {}", c.tool),
            kind: 1,
            start_time_unix_nano: start,
            end_time_unix_nano: start + 50,
            attributes: vec![
                kv("gen_ai.operation.name", "execute_tool"),
                kv("gen_ai.tool.name", c.tool),
                // Each call its own arguments: a call directly inside a
                // call of the same tool with equal arguments is the same
                // call recorded twice (docs/conventions.md).
                kv(
                    "gen_ai.tool.call.arguments",
                    &json!({ "n": c.arg, "call": k }).to_string(),
                ),
            ],
            status: c.failed.then(|| Status {
                code: status::StatusCode::Error as i32,
                message: "tool failed".into(),
            }),
            ..Default::default()
        });
    }
    out
}

/// Every span of every trace, in generation order.
fn all_spans(traces: &[GenTrace]) -> Vec<Span> {
    traces
        .iter()
        .enumerate()
        .flat_map(|(t, g)| spans(t, g))
        .collect()
}

/// `spans` in the order `order` gives, cut into requests at `cuts`.
fn requests(spans: &[Span], order: &[usize], cuts: &[Index]) -> Vec<ExportTraceServiceRequest> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c.index(spans.len() + 1)).collect();
    at.push(0);
    at.push(spans.len());
    at.sort_unstable();
    at.dedup();
    at.windows(2)
        .map(|w| {
            request(
                order[w[0]..w[1]]
                    .iter()
                    .map(|&i| spans[i].clone())
                    .collect(),
            )
        })
        .collect()
}

/// Writes each request as a protobuf file.
fn write_requests(dir: &Path, tag: &str, reqs: &[ExportTraceServiceRequest]) -> Vec<PathBuf> {
    reqs.iter()
        .enumerate()
        .map(|(i, r)| {
            let p = dir.join(format!("{tag}-{i:03}.pb"));
            std::fs::write(&p, r.encode_to_vec()).unwrap();
            p
        })
        .collect()
}

fn fixture(dir: &Path, traces: &[GenTrace]) -> PathBuf {
    let lines: Vec<String> = traces
        .iter()
        .enumerate()
        .map(|(t, g)| {
            json!({"id": format!("case-{t}"), "trace_id": hex(&trace_id(t)), "expected_tools": g.expected})
                .to_string()
        })
        .collect();
    let p = dir.join("expected.jsonl");
    std::fs::write(&p, lines.join("\n")).unwrap();
    p
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        // Failures are shown, not saved next to the test sources.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Name -> number of calls.
fn tally<'a>(names: impl Iterator<Item = &'a str>) -> BTreeMap<&'a str, usize> {
    let mut m = BTreeMap::new();
    for n in names {
        *m.entry(n).or_insert(0) += 1;
    }
    m
}

proptest! {
    #![proptest_config(config(24))]

    /// `inspect` prints, as a table, every call its JSONL reports.
    #[test]
    fn the_table_shows_every_call_the_jsonl_reports(traces in prop::collection::vec(gen_trace(), 1..4)) {
        let dir = TempDir::new("prop-table");
        let reqs = [request(all_spans(&traces))];
        let file = write_requests(dir.path(), "all", &reqs).remove(0);
        let file = file.to_str().unwrap();
        let jsonl = toolscore(&["inspect", "--format", "jsonl", file]);
        prop_assert_eq!(jsonl.status.code(), Some(0));
        let rows: Vec<Value> = String::from_utf8_lossy(&jsonl.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let table = toolscore(&["inspect", file]);
        prop_assert_eq!(table.status.code(), Some(0));
        let table = String::from_utf8_lossy(&table.stdout).to_string();
        let reported: Vec<String> = rows
            .iter()
            .flat_map(|r| r["tools"].as_array().cloned().unwrap_or_default())
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect();
        // Every generated call is reported...
        prop_assert_eq!(reported.len(), traces.iter().map(|g| g.calls.len()).sum::<usize>());
        // ...and each is a line of the table that starts with its name.
        let shown = tally(
            table
                .lines()
                .map(|l| l.trim_start().split(' ').next().unwrap_or(""))
                .filter(|w| TOOLS.contains(w)),
        );
        prop_assert_eq!(shown, tally(reported.iter().map(String::as_str)), "table:\n{}", table);
    }

    /// The same spans, in any order and cut into any requests, score the same.
    #[test]
    fn scoring_does_not_depend_on_span_order(
        (traces, order, cuts) in prop::collection::vec(gen_trace(), 1..4).prop_flat_map(|traces| {
            let n = all_spans(&traces).len();
            (Just(traces), Just((0..n).collect::<Vec<_>>()).prop_shuffle(), prop::collection::vec(any::<Index>(), 0..4))
        })
    ) {
        let dir = TempDir::new("prop-order");
        let fixture = fixture(dir.path(), &traces);
        let spans = all_spans(&traces);
        let in_order = write_requests(dir.path(), "a", &[request(spans.clone())]);
        let shuffled = write_requests(dir.path(), "b", &requests(&spans, &order, &cuts));
        let want = keyed(&replay_rows(&in_order, Some(&fixture)));
        let got = keyed(&replay_rows(&shuffled, Some(&fixture)));
        prop_assert_eq!(want.len(), traces.len());
        prop_assert_eq!(got, want);
    }
}

proptest! {
    // Each case starts a server: fewer cases.
    #![proptest_config(config(10))]

    /// What `serve` scores from requests is what `replay` scores from the
    /// same requests as files.
    #[test]
    fn replay_and_serve_agree(
        (traces, order, cuts) in prop::collection::vec(gen_trace(), 1..4).prop_flat_map(|traces| {
            let n = all_spans(&traces).len();
            (Just(traces), Just((0..n).collect::<Vec<_>>()).prop_shuffle(), prop::collection::vec(any::<Index>(), 0..4))
        })
    ) {
        let dir = TempDir::new("prop-serve");
        let fixture = fixture(dir.path(), &traces);
        let reqs = requests(&all_spans(&traces), &order, &cuts);
        let files = write_requests(dir.path(), "r", &reqs);
        let fx = fixture.clone();
        let srv = start("prop-serve", move |c, _| {
            c.expected = Some(fx);
            // Traces complete at shutdown (the drain), never split by a timer.
            c.decision_wait = Duration::from_secs(600);
        });
        for r in &reqs {
            let reply = post(srv.http, &[PROTOBUF], &r.encode_to_vec(), Framing::Length);
            prop_assert_eq!(reply.status, 200);
        }
        let (_, rows) = srv.stop();
        let want = keyed(&replay_rows(&files, Some(&fixture)));
        prop_assert_eq!(want.len(), traces.len());
        prop_assert_eq!(keyed(&rows), want);
    }
}
