//! The expectation for traces that no case joins ("every trace here"):
//! `serve --default-expected` and the Python module's list of tools.

use serde_json::{json, Value};

use super::{parse_with, Case, FixtureOptions};

/// Parses `text`, a JSON array of expected tools (names or `{"name",
/// "args"}`) or one case object whose `trace_id`/`match` are ignored, into
/// the default case. The error is the reason, for the caller to name the
/// source.
pub fn parse_default(text: &str, label: &str, opts: &FixtureOptions) -> Result<Case, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let mut case = match value {
        Value::Array(tools) => json!({"id": "default", "expected_tools": tools}),
        Value::Object(mut m) => {
            m.remove("trace_id");
            m.remove("match");
            m.entry("id").or_insert_with(|| json!("default"));
            Value::Object(m)
        }
        _ => return Err("expected a JSON array of tools or a case object".into()),
    };
    // The fixture parser wants a join; this one is never used.
    case["match"] = json!({"toolscore.default": "true"});
    let (cases, rejected) = parse_with(&case.to_string(), label, opts);
    match (cases.into_iter().next(), rejected.into_iter().next()) {
        // Scored against every trace that joins no case: parsed once.
        (Some(mut c), None) => {
            c.expected = c.expected.into_parsed();
            Ok(c)
        }
        (_, Some(r)) => Err(r.reason),
        (None, None) => Err("no case found".into()),
    }
}
