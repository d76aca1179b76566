//! Scoring live: late spans re-score a trace, sessions are scored when
//! idle and again on later turns, behaviour metrics score as in replay.

use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use serde_json::{json, Value};

use super::{
    agent_spans, get, of_type, parse_prometheus, post, request, start, trace_id, Framing, PROTOBUF,
};
use crate::util::{hex, poll_until};

#[test]
fn late_spans_are_rescored_and_resent_spans_are_duplicates() {
    let srv = start("late", |c, dir| {
        let p = dir.join("default.json");
        std::fs::write(
            &p,
            r#"[{"name": "get_weather", "args": {"city": "Paris"}}]"#,
        )
        .unwrap();
        c.default_expected = Some(p);
    });
    let mut spans = agent_spans(
        7,
        "conv-late",
        &[
            ("get_weather", json!({"city": "Paris"})),
            ("format_answer", json!({})),
        ],
    );
    let late = spans.remove(1);
    let r = post(
        srv.http,
        &[PROTOBUF],
        &request(spans.clone()).encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 200);
    srv.wait_for("revision 1", |s| s.evaluations >= 1);
    // A retrying client re-sends a scored span: dropped as a duplicate.
    let r = post(
        srv.http,
        &[PROTOBUF],
        &request(vec![spans[0].clone()]).encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 200);
    assert_eq!(srv.stats().duplicate_spans, 1);
    // A span that was not there before: revision 2.
    let r = post(
        srv.http,
        &[PROTOBUF],
        &request(vec![late]).encode_to_vec(),
        Framing::Length,
    );
    assert_eq!(r.status, 200);
    srv.wait_for("revision 2", |s| s.evaluations >= 2);
    let (summary, rows) = srv.stop();
    let evals = of_type(&rows, "evaluation");
    assert_eq!(evals.len(), 2, "{rows:#?}");
    assert_eq!(evals[0]["revision"], 1);
    assert_eq!(evals[0]["default_expectation"], true);
    assert_eq!(evals[0]["case"], "default");
    assert_eq!(evals[0]["score"], 1.0);
    assert_eq!(evals[1]["revision"], 2);
    assert_eq!(evals[1]["spans"], 1);
    assert_eq!(evals[1]["tools_called"][0]["name"], "format_answer");
    assert_eq!(summary.stats.rescored, 1);
    assert_eq!(summary.stats.traces_scored, 2);
}

/// One turn of a conversation: trace `t`, shifted `at` ns later.
fn turn(t: u8, session: &str, tool: &str, at: u64) -> ExportTraceServiceRequest {
    let mut spans = agent_spans(t, session, &[(tool, json!({}))]);
    for s in &mut spans {
        s.start_time_unix_nano += at;
        s.end_time_unix_nano += at;
    }
    request(spans)
}

fn session_rows(rows: &[Value]) -> Vec<&Value> {
    of_type(rows, "evaluation")
        .into_iter()
        .filter(|r| r.get("session").is_some())
        .collect()
}

#[test]
fn sessions_are_scored_when_idle_and_rescored_by_later_turns() {
    let server = start("sessions", |c, dir| {
        let fixture = dir.join("expected.jsonl");
        std::fs::write(
            &fixture,
            r#"{"id":"trip","session_id":"sess-1","expected_tools":["search_flights","book_flight","send_email"],"threshold":1.0}
"#,
        )
        .unwrap();
        c.expected = Some(fixture);
        c.session_wait = Duration::from_millis(500);
    });
    let mut client = server.grpc_client();
    // Two turns, each its own trace, in one request: they complete together,
    // so the first evaluation has both however slow the machine is.
    let mut both = turn(1, "sess-1", "search_flights", 0);
    both.resource_spans
        .extend(turn(2, "sess-1", "book_flight", 10_000).resource_spans);
    server.grpc_export(&mut client, both).unwrap();
    // Another conversation that no case asks for.
    server
        .grpc_export(&mut client, turn(3, "sess-2", "search_flights", 0))
        .unwrap();
    server.wait_for("three traces scored", |s| s.traces_scored == 3);
    poll_until("a session evaluation", Duration::from_secs(15), || {
        !session_rows(&server.rows()).is_empty()
    });
    let rows = server.rows();
    let first = session_rows(&rows);
    assert_eq!(first.len(), 1, "one session evaluation: {rows:?}");
    let e = first[0];
    assert_eq!(e["case"], "trip");
    assert_eq!(e["revision"], 1);
    assert_eq!(e["session"]["id"], "sess-1");
    assert_eq!(
        e["session"]["trace_ids"],
        json!([hex(&trace_id(1)), hex(&trace_id(2))])
    );
    let called: Vec<&str> = e["tools_called"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(called, ["search_flights", "book_flight"]);
    assert_eq!(e["pass"], false, "send_email is still missing: {e}");
    // The session's traces are not unmatched; the other conversation is.
    let unmatched: Vec<&str> = of_type(&rows, "unmatched_trace")
        .iter()
        .map(|r| r["trace_id"].as_str().unwrap())
        .collect();
    assert_eq!(unmatched, [hex(&trace_id(3))]);

    // A later turn re-scores the session: revision 2, all three calls.
    server
        .grpc_export(&mut client, turn(4, "sess-1", "send_email", 20_000))
        .unwrap();
    poll_until(
        "the session to be re-scored",
        Duration::from_secs(15),
        || session_rows(&server.rows()).len() >= 2,
    );
    let rows = server.rows();
    let second = session_rows(&rows)[1].clone();
    assert_eq!(second["revision"], 2);
    assert_eq!(second["pass"], true, "{second}");
    assert_eq!(second["session"]["trace_ids"].as_array().unwrap().len(), 3);
    let (_, text) = get(server.admin.unwrap(), "/metrics");
    let m = parse_prometheus(&text);
    assert_eq!(m["toolscore_sessions_scored_total"], 2.0, "{text}");
    assert_eq!(m["toolscore_sessions_waiting"], 0.0, "{text}");

    // A turn still waiting at shutdown is scored before the server exits.
    server
        .grpc_export(&mut client, turn(5, "sess-1", "send_email", 30_000))
        .unwrap();
    let (summary, rows) = server.stop();
    let all = session_rows(&rows);
    assert_eq!(all.len(), 3, "{rows:?}");
    assert_eq!(all[2]["revision"], 3);
    assert_eq!(all[2]["pass"], false, "an extra send_email: {}", all[2]);
    assert!(summary.unmatched_cases.is_empty(), "{summary:?}");
}

/// A behaviour metric scores live as in replay: a repeated call is named
/// redundant and counted in the row.
#[test]
fn tool_efficiency_scores_in_serve() {
    let srv = start("efficiency", |c, dir| {
        let p = dir.join("expected.jsonl");
        let case = json!({
            "id": "eff",
            "match": {"gen_ai.operation.name": "invoke_agent"},
            "expected_tools": [],
            "metrics": ["tool_efficiency"],
        });
        std::fs::write(&p, case.to_string()).unwrap();
        c.expected = Some(p);
    });
    let mut client = srv.grpc_client();
    let req = request(agent_spans(
        41,
        "conv-eff",
        &[
            ("get_weather", json!({"city": "Paris"})),
            ("get_weather", json!({"city": "Paris"})),
        ],
    ));
    srv.grpc_export(&mut client, req).unwrap();
    srv.wait_for("the trace to be scored", |s| s.evaluations >= 1);
    let (_, rows) = srv.stop();
    let evals = of_type(&rows, "evaluation");
    assert_eq!(evals.len(), 1, "{rows:#?}");
    let e = evals[0];
    assert_eq!(
        (e["redundant"].as_u64(), e["wasted"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(e["score"].as_f64(), Some(0.5));
    let why = e["explanation"].as_str().unwrap();
    assert!(
        why.contains("#2 get_weather {\"city\":\"Paris\"} repeats #1"),
        "{why}"
    );
}
