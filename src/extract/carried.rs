//! A tool span's call that recorded no result takes the one the next model
//! request carries (`extract::conversation`). What the model was handed is
//! the framework's wrapping of the return value when the framework wraps it
//! (Google ADK hands a value that is no dict on as `{"result": value}`):
//! the rule that read the span names those wrappers
//! (`carried_result_unwrap`), and they come off the carried result as its
//! `result` sources take them off a recorded one, so the call reads the
//! same whichever instrumentation recorded the result.

use std::collections::HashSet;

use serde_json::Value;

use super::rules::Rule;
use super::wrappers;
use super::{CallResult, SpanId, ToolCall};

/// The tool spans' calls without a result, before the conversation is
/// read.
pub(crate) fn lacking(calls: &[ToolCall]) -> HashSet<SpanId> {
    calls
        .iter()
        .filter(|c| c.result.is_none() && c.from.is_none())
        .map(|c| c.span_id)
        .collect()
}

/// Takes the wrappers of each call's rule off the results the calls in
/// `lacking` took from the conversation since, noting each in `notes`.
pub(crate) fn settle(
    rules: &[Rule],
    lacking: &HashSet<SpanId>,
    calls: &mut [ToolCall],
    notes: &mut Vec<String>,
) {
    if lacking.is_empty() {
        return;
    }
    for c in calls.iter_mut() {
        if c.from.is_some() || !lacking.contains(&c.span_id) {
            continue;
        }
        let Some(rule) = rules.iter().find(|r| r.name() == c.convention) else {
            continue;
        };
        let unwraps = &rule.spec.carried_result_unwrap;
        if unwraps.is_empty() {
            continue;
        }
        let Some(result) = c.result.take() else {
            continue;
        };
        let mut v: Value = result.to_value();
        for &u in unwraps {
            v = match wrappers::shape(u, v) {
                Ok(inner) => {
                    notes.push(format!(
                        "the result `{}` took from the next model request came off its framework's wrapping `{}` (rule {})",
                        c.name,
                        u.as_str(),
                        c.convention
                    ));
                    inner
                }
                Err(back) => back,
            };
        }
        c.result = Some(CallResult::Value(v));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{Trace, TraceId};
    use crate::extract::tests::sp;

    /// The made-up framework (`test_support::acme_tool_extractor`) hands a
    /// value that is no object to the model as `{"result": value}`, and
    /// says so in its rule.
    const WRAPPED: &str = r#"carried_result_unwrap = ["adk_result"]"#;

    fn chat(id: u8, when: (u64, u64), input: Value, output: Value) -> crate::assemble::SpanRecord {
        crate::extract::test_support::genai_chat(id, when, "chat", input, output)
    }

    fn tool(id: u8, when: (u64, u64), name: &str, call: &str) -> crate::assemble::SpanRecord {
        sp(
            id,
            Some(1),
            when,
            name,
            &[
                ("acme.step", "tool"),
                ("acme.tool", name),
                ("acme.args", "{}"),
                ("gen_ai.tool.call.id", call),
            ],
        )
    }

    fn results(rule: &str) -> Vec<Value> {
        let user = json!({"role": "user", "parts": [{"type": "text", "content": "go"}]});
        let asks = |id: &str, name: &str| json!({"role": "assistant", "parts": [{"type": "tool_call", "id": id, "name": name, "arguments": {}}]});
        let answer = |id: &str, v: Value| json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": id, "response": v}]});
        let (a, b) = (asks("c1", "ping"), asks("c2", "stats"));
        let (ra, rb) = (
            answer("c1", json!({"result": "pong"})),
            answer("c2", json!({"result": {"n": 1}})),
        );
        let spans = vec![
            sp(1, None, (0, 100), "loop", &[]),
            chat(2, (10, 20), json!([user]), json!([a, b])),
            tool(3, (21, 24), "ping", "c1"),
            tool(4, (25, 28), "stats", "c2"),
            chat(5, (30, 40), json!([user, a, b, ra, rb]), json!([])),
        ];
        let x = crate::extract::test_support::acme_tool_extractor(rule);
        x.analyze(&Trace::new(TraceId([9; 16]), spans, 0))
            .calls
            .iter()
            .map(|c| c.result.as_ref().map(|r| r.to_value()).unwrap_or_default())
            .collect()
    }

    #[test]
    fn a_carried_result_loses_the_wrapping_its_rule_names() {
        // A value that is no object comes out of the wrapper; an object in
        // it is the tool's own (`adk_result` leaves it).
        assert_eq!(
            results(WRAPPED),
            vec![json!("pong"), json!({"result": {"n": 1}})]
        );
        // A rule that names no wrapping keeps what the model was handed.
        assert_eq!(
            results(""),
            vec![json!({"result": "pong"}), json!({"result": {"n": 1}})]
        );
    }
}
