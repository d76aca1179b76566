//! MCP tools of two servers (docs/fixtures.md, "MCP tools"): a call named
//! `mcp__<server>__<tool>` is the call of `<tool>` with its server kept, and
//! an expectation written with the full name means that server's tool.

use std::fs;

use serde_json::{json, Value};

use crate::util::{base64, json_rows, toolscore, TempDir};

const TRACE: &str = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a";

/// A GenAI `execute_tool` span of tool `name` under the agent's span.
fn tool_span(id: u8, name: &str, args: &str, start: u64) -> Value {
    json!({
        "traceId": base64(&[0x5a; 16]),
        "spanId": base64(&[id; 8]),
        "parentSpanId": base64(&[1; 8]),
        "name": format!("execute_tool {name}"),
        "kind": "SPAN_KIND_INTERNAL",
        "startTimeUnixNano": start.to_string(),
        "endTimeUnixNano": (start + 50).to_string(),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": name}},
            {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": args}},
        ],
        "status": {"code": "STATUS_CODE_OK"}
    })
}

/// Two servers, `inns` and `boats`, each offering `status`; the agent calls
/// `find_inn` of `inns` and `status` of `boats`.
fn two_servers(dir: &TempDir) -> String {
    let root = json!({
        "traceId": base64(&[0x5a; 16]),
        "spanId": base64(&[1; 8]),
        "name": "invoke_agent planner",
        "kind": "SPAN_KIND_SERVER",
        "startTimeUnixNano": "1000",
        "endTimeUnixNano": "9000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
            {"key": "gen_ai.agent.name", "value": {"stringValue": "planner"}},
        ],
        "status": {}
    });
    let spans = vec![
        root,
        tool_span(2, "mcp__inns__find_inn", r#"{"city": "Porto"}"#, 2000),
        tool_span(3, "mcp__boats__status", "{}", 3000),
    ];
    let request = json!({"resourceSpans": [{"resource": {}, "scopeSpans": [
        {"scope": {"name": "planner"}, "spans": spans}
    ]}]});
    let p = dir.path().join("two-servers.json");
    fs::write(&p, request.to_string()).unwrap();
    p.to_string_lossy().into_owned()
}

/// Each case's (pass, missing) from `replay` of the trace against cases
/// expecting `cases` (id, expected names).
fn replayed(extra: &[&str], cases: &[(&str, &[&str])]) -> Vec<(String, bool, Value)> {
    let dir = TempDir::new("mcp-servers");
    let trace = two_servers(&dir);
    let fixture: Vec<String> = cases
        .iter()
        .map(|(id, names)| {
            json!({"id": id, "trace_id": TRACE, "expected_tools": names}).to_string()
        })
        .collect();
    let fx = dir.path().join("f.jsonl");
    fs::write(&fx, fixture.join("\n")).unwrap();
    let fx = fx.to_string_lossy().into_owned();
    let mut argv = vec!["replay", "-q", "-f", "jsonl", &trace, "-e", &fx];
    argv.extend_from_slice(extra);
    let out = toolscore(&argv);
    json_rows(&out.stdout)
        .into_iter()
        .filter(|r| r["type"] == "evaluation")
        .map(|r| {
            let case = r["case"].as_str().unwrap_or("").to_string();
            (case, r["pass"] == true, r["missing"].clone())
        })
        .collect()
}

#[test]
fn a_full_mcp_name_expects_that_servers_tool_and_a_bare_name_either() {
    let cases: &[(&str, &[&str])] = &[
        ("boats", &["mcp__boats__status"]),
        ("inns", &["mcp__inns__status"]),
        ("bare", &["status"]),
        ("both", &["mcp__inns__find_inn", "status"]),
    ];
    for extra in [&[][..], &["--normalize"][..]] {
        let got = replayed(extra, cases);
        let want = vec![
            ("boats".to_string(), true, json!([])),
            ("inns".to_string(), false, json!(["mcp__inns__status"])),
            ("bare".to_string(), true, json!([])),
            ("both".to_string(), true, json!([])),
        ];
        assert_eq!(got, want, "{extra:?}");
    }
}

#[test]
fn the_rows_keep_each_calls_server() {
    let dir = TempDir::new("mcp-rows");
    let trace = two_servers(&dir);
    let out = toolscore(&["inspect", "--format", "jsonl", &trace]);
    let rows = json_rows(&out.stdout);
    let calls: Vec<(Value, Value)> = rows[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|c| (c["name"].clone(), c["mcp_server"].clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            (json!("find_inn"), json!("inns")),
            (json!("status"), json!("boats"))
        ]
    );
    let out = toolscore(&["inspect", "--explain", &trace]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("tool call `status` of MCP server `boats`"),
        "{text}"
    );
}
