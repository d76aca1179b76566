//! DeepEval goldens (`Golden` as `EvaluationDataset` saves them as JSON):
//! `input`, `expected_tools` (`ToolCall`: `name`, `input_parameters`), with
//! the camelCase aliases `expectedTools` / `inputParameters` too. A golden
//! joins the trace whose user request is its `input` (docs/formats.md).

use serde_json::Value;

use super::read::{calls, case, kind, list, text, user_text_join, Ctx};
use super::Case;

/// A golden whose `expected_tools` is null expects no tool.
static NO_TOOLS: Vec<Value> = Vec::new();

pub(super) fn golden(v: &Value, ctx: &Ctx) -> Result<Vec<Case>, String> {
    if !v.is_object() {
        return Err(format!("a golden must be an object, not {}", kind(v)));
    }
    let input = text(v, &["input"], "")?;
    let keys = &["expected_tools", "expectedTools"];
    // `save_as` writes `"expected_tools": null` for a golden with no tools.
    let null = keys.iter().any(|k| v.get(*k).is_some_and(Value::is_null));
    let tools = match list(v, keys, "")? {
        Some(t) => t,
        None if null => &NO_TOOLS,
        None => return Err("`expected_tools` is missing".to_string()),
    };
    let at = if v.get("expected_tools").is_some() {
        "expected_tools"
    } else {
        "expectedTools"
    };
    let expected = calls(
        tools,
        at,
        &["name"],
        &["input_parameters", "inputParameters"],
    )?;
    let id = match v.get("name").and_then(Value::as_str) {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => ctx.default_id(),
    };
    let join = user_text_join(&input, "input")?;
    Ok(vec![case(id, join, expected)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_both_spellings() {
        let ctx = Ctx {
            stem: "goldens".into(),
            n: 1,
        };
        let v = json!({"input": "Price of ACME?", "expectedTools": [
            {"name": "get_stock_price", "inputParameters": {"ticker": "ACME"}}]});
        let c = &golden(&v, &ctx).unwrap()[0];
        assert_eq!(c.id, "goldens#1");
        assert_eq!(c.expected.calls()[0].args, Some(json!({"ticker": "ACME"})));
        let e = golden(
            &json!({"input": "x", "expected_tools": [{"name": 3}]}),
            &ctx,
        )
        .unwrap_err();
        assert!(e.contains("expected_tools[0].name"), "{e}");
    }
}
