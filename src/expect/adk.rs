//! Google ADK eval sets (`EvalSet` JSON, `*.evalset.json`) and the older
//! `*.test.json` turn lists, as cases: one case per invocation (turn), as
//! ADK scores `tool_trajectory_avg_score` per invocation. Both the snake_case
//! field names and the camelCase aliases ADK's pydantic models write are
//! read. Each invocation joins the trace whose user request is its user text
//! (docs/formats.md).

use serde_json::Value;

use super::read::{calls, case, field, kind, list, text, user_text_join, Ctx};
use super::Case;
use crate::expect::Call;

/// Why an eval case is skipped: a `conversation_scenario` (and no
/// `conversation`) is played live by ADK's user simulator and states no tool
/// calls to compare.
pub(super) fn skipped(v: &Value) -> Option<&'static str> {
    let scenario = field(v, &["conversation_scenario", "conversationScenario"]).is_some();
    let conversation = field(v, &["conversation"]).is_some();
    (scenario && !conversation).then_some(
        "a `conversation_scenario` is played live by ADK's user simulator and states no tool \
         calls to compare",
    )
}

/// One `EvalCase`: `eval_id`, `conversation: [Invocation]`.
pub(super) fn eval_case(v: &Value) -> Result<Vec<Case>, String> {
    if !v.is_object() {
        return Err(format!("an eval case must be an object, not {}", kind(v)));
    }
    let id = text(v, &["eval_id", "evalId"], "")?;
    let Some(conversation) = list(v, &["conversation"], "")? else {
        if field(v, &["conversation_scenario", "conversationScenario"]).is_some() {
            return Err(
                "`conversation` is missing: a `conversation_scenario` is played \
                        live by ADK's user simulator and fixes no tool calls to compare"
                    .into(),
            );
        }
        return Err("`conversation` is missing".into());
    };
    if conversation.is_empty() {
        return Err("`conversation` is empty: no invocation to compare".into());
    }
    let single = conversation.len() == 1;
    let mut out = Vec::with_capacity(conversation.len());
    for (i, inv) in conversation.iter().enumerate() {
        let path = format!("conversation[{i}].");
        if !inv.is_object() {
            return Err(format!(
                "`conversation[{i}]` must be an object, not {}",
                kind(inv)
            ));
        }
        let user = content_text(inv, &path)?;
        let expected = tool_uses(inv, &path)?;
        // One invocation: the eval case's own id; several: one case per turn.
        let case_id = if single {
            id.clone()
        } else {
            format!("{id}#{}", i + 1)
        };
        let join = user_text_join(&user, &format!("{path}user_content"))?;
        out.push(case(case_id, join, expected));
    }
    Ok(out)
}

/// The text of an invocation's `user_content` (a genai `Content`): its text
/// parts joined with a space, as agentevals reads it.
fn content_text(inv: &Value, path: &str) -> Result<String, String> {
    let Some((key, content)) = field(inv, &["user_content", "userContent"]) else {
        return Err(format!("`{path}user_content` is missing"));
    };
    let parts = list(content, &["parts"], &format!("{path}{key}."))?
        .ok_or_else(|| format!("`{path}{key}.parts` is missing"))?;
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .filter(|t| !t.is_empty())
        .collect();
    if texts.is_empty() {
        return Err(format!("`{path}{key}.parts` has no text part"));
    }
    Ok(texts.join(" "))
}

/// The expected calls of an invocation: `intermediate_data.tool_uses`
/// (`IntermediateData`), or the function calls of
/// `intermediate_data.invocation_events` (`InvocationEvents`); none when
/// `intermediate_data` is absent.
fn tool_uses(inv: &Value, path: &str) -> Result<Vec<Call>, String> {
    let Some((key, data)) = field(inv, &["intermediate_data", "intermediateData"]) else {
        return Ok(Vec::new());
    };
    if !data.is_object() {
        return Err(format!(
            "`{path}{key}` must be an object, not {}",
            kind(data)
        ));
    }
    let inner = format!("{path}{key}.");
    if let Some(uses) = list(data, &["tool_uses", "toolUses"], &inner)? {
        let k = field(data, &["tool_uses", "toolUses"]).map_or("tool_uses", |f| f.0);
        return calls(uses, &format!("{inner}{k}"), &["name"], &["args"]);
    }
    if let Some(events) = list(data, &["invocation_events", "invocationEvents"], &inner)? {
        let mut out = Vec::new();
        for (e, event) in events.iter().enumerate() {
            let parts = event
                .get("content")
                .and_then(|c| c.get("parts"))
                .and_then(Value::as_array);
            for (p, part) in parts.into_iter().flatten().enumerate() {
                if let Some((fk, fc)) = field(part, &["function_call", "functionCall"]) {
                    let at = format!("{inner}invocation_events[{e}].content.parts[{p}].{fk}");
                    out.extend(calls(std::slice::from_ref(fc), &at, &["name"], &["args"])?);
                }
            }
        }
        return Ok(out);
    }
    Ok(Vec::new())
}

/// One turn of an old `*.test.json` list: `query`, `expected_tool_use`
/// (`[{tool_name, tool_input}]`), `reference`. ADK reads the whole list as
/// one conversation, so the turns are cases `<file stem>#<n>`.
pub(super) fn test_turn(v: &Value, ctx: &Ctx) -> Result<Vec<Case>, String> {
    if !v.is_object() {
        return Err(format!("a turn must be an object, not {}", kind(v)));
    }
    let query = text(v, &["query"], "")?;
    let uses = list(v, &["expected_tool_use"], "")?
        .ok_or_else(|| "`expected_tool_use` is missing".to_string())?;
    let expected = calls(uses, "expected_tool_use", &["tool_name"], &["tool_input"])?;
    let join = user_text_join(&query, "query")?;
    Ok(vec![case(ctx.default_id(), join, expected)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expect::Join;
    use serde_json::json;

    #[test]
    fn one_case_per_invocation_both_spellings() {
        let v = json!({"evalId": "trip", "conversation": [
            {"invocationId": "a", "userContent": {"role": "user", "parts": [{"text": "Plan  a trip"}]},
             "intermediateData": {"toolUses": [{"name": "get_weather", "args": {"city": "Tokyo"}, "id": "c1"}]}},
            {"invocation_id": "b", "user_content": {"parts": [{"text": "Thanks"}]}}
        ]});
        let cases = eval_case(&v).unwrap();
        assert_eq!(cases.len(), 2);
        assert_eq!(cases[0].id, "trip#1");
        assert_eq!(cases[0].join, Join::UserText("plan a trip".into()));
        assert_eq!(
            cases[0].expected.calls()[0].args,
            Some(json!({"city": "Tokyo"}))
        );
        assert!(cases[1].expected.is_empty());
    }

    #[test]
    fn invocation_events_and_errors() {
        let v = json!({"eval_id": "x", "conversation": [
            {"user_content": {"parts": [{"text": "hi"}]},
             "intermediate_data": {"invocation_events": [
                {"author": "agent", "content": {"parts": [{"function_call": {"name": "f", "args": {}}}]}}]}}]});
        let cases = eval_case(&v).unwrap();
        assert_eq!(cases[0].id, "x");
        assert_eq!(cases[0].expected.calls()[0].name, "f");
        let bad = json!({"eval_id": "x", "conversation": [
            {"user_content": {"parts": [{"text": "hi"}]},
             "intermediate_data": {"tool_uses": [{"args": {}}]}}]});
        let e = eval_case(&bad).unwrap_err();
        assert!(
            e.contains("conversation[0].intermediate_data.tool_uses[0].name"),
            "{e}"
        );
    }
}
