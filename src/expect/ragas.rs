//! Ragas samples (`MultiTurnSample`, as `EvaluationDataset` writes them):
//! `user_input` (a list of messages, or text), `reference_tool_calls`
//! (`ToolCall`: `name`, `args`). A sample joins the trace whose user request
//! is its first human message (docs/formats.md).

use serde_json::Value;

use super::read::{calls, case, field, kind, list, user_text_join, Ctx};
use super::Case;

pub(super) fn sample(v: &Value, ctx: &Ctx) -> Result<Vec<Case>, String> {
    if !v.is_object() {
        return Err(format!("a sample must be an object, not {}", kind(v)));
    }
    let tools = list(v, &["reference_tool_calls"], "")?
        .ok_or_else(|| "`reference_tool_calls` is missing".to_string())?;
    let expected = calls(tools, "reference_tool_calls", &["name"], &["args"])?;
    let user = match field(v, &["user_input"]) {
        Some((_, Value::String(s))) => s.clone(),
        Some((_, Value::Array(messages))) => messages
            .iter()
            .find(|m| m.get("type").and_then(Value::as_str) == Some("human"))
            .and_then(|m| m.get("content").and_then(Value::as_str))
            .ok_or_else(|| "`user_input` has no human message with text `content`".to_string())?
            .to_string(),
        Some((_, other)) => {
            return Err(format!(
                "`user_input` must be a list of messages or a string, not {}",
                kind(other)
            ))
        }
        None => return Err("`user_input` is missing".into()),
    };
    let join = user_text_join(&user, "user_input")?;
    Ok(vec![case(ctx.default_id(), join, expected)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expect::Join;
    use serde_json::json;

    #[test]
    fn first_human_message_joins() {
        let ctx = Ctx {
            stem: "s".into(),
            n: 3,
        };
        let v = json!({"user_input": [
            {"content": "I cannot log in", "type": "human"},
            {"content": "", "type": "ai", "tool_calls": [{"name": "search_knowledge_base", "args": {"query": "x"}}]}],
            "reference_tool_calls": [{"name": "search_knowledge_base", "args": {"query": "cannot log in"}}]});
        let c = &sample(&v, &ctx).unwrap()[0];
        assert_eq!(c.id, "s#3");
        assert_eq!(c.join, Join::UserText("i cannot log in".into()));
        let e = sample(&json!({"user_input": [], "reference_tool_calls": []}), &ctx).unwrap_err();
        assert!(e.contains("user_input"), "{e}");
    }
}
