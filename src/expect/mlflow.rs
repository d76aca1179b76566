//! MLflow evaluation dataset records (`mlflow.genai.datasets`): `inputs`,
//! `expectations.expected_tool_calls` (`[{name, arguments?}]`), and, for a
//! record made from a trace, `source` / `source_id` naming it. A record joins
//! the trace it was made from when that id is an OTLP trace id (`tr-` and 32
//! hex digits), else the trace whose user request is the request read from
//! `inputs` (docs/formats.md).

use serde_json::Value;

use super::read::{calls, case, field, kind, list, user_text_join, Ctx};
use super::{Case, Join};
use crate::assemble::TraceId;

pub(super) fn record(v: &Value, ctx: &Ctx) -> Result<Vec<Case>, String> {
    if !v.is_object() {
        return Err(format!("a record must be an object, not {}", kind(v)));
    }
    let Some((_, inputs)) = field(v, &["inputs"]) else {
        return Err("`inputs` is missing".into());
    };
    let Some((_, expectations)) = field(v, &["expectations"]) else {
        return Err("`expectations` is missing: the record expects no tool calls".into());
    };
    if !expectations.is_object() {
        return Err(format!(
            "`expectations` must be an object, not {}",
            kind(expectations)
        ));
    }
    let tools = list(expectations, &["expected_tool_calls"], "expectations.")?
        .ok_or_else(|| "`expectations.expected_tool_calls` is missing".to_string())?;
    let expected = calls(
        tools,
        "expectations.expected_tool_calls",
        &["name"],
        &["arguments"],
    )?;
    let id = match field(v, &["dataset_record_id"]) {
        Some((_, Value::String(s))) => s.clone(),
        _ => ctx.default_id(),
    };
    let join = match source_trace(v) {
        Some(t) => Join::TraceId(t),
        None => {
            let text = crate::extract::facts::turn_text(inputs)
                .ok_or_else(|| "`inputs` holds no request text".to_string())?;
            user_text_join(&text, "inputs")?
        }
    };
    Ok(vec![case(id, join, expected)])
}

/// The trace a record was made from, when it names one that is an OTLP
/// trace id (MLflow writes `tr-` before the 32 hex digits).
fn source_trace(v: &Value) -> Option<TraceId> {
    let from_source = v
        .get("source")
        .filter(|s| s.get("source_type").and_then(Value::as_str) == Some("TRACE"))
        .and_then(|s| s.get("source_data"))
        .and_then(|d| d.get("trace_id"))
        .and_then(Value::as_str);
    let from_id = (v.get("source_type").and_then(Value::as_str) == Some("TRACE"))
        .then(|| v.get("source_id").and_then(Value::as_str))
        .flatten();
    let id = from_source.or(from_id)?;
    let hex = id.strip_prefix("tr-")?;
    (hex.len() == 32).then(|| hex.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx() -> Ctx {
        Ctx {
            stem: "ds".into(),
            n: 2,
        }
    }

    #[test]
    fn joins_by_source_trace_else_inputs() {
        let v = json!({"dataset_record_id": "dr-1", "inputs": {"question": "Weather in Paris?"},
            "expectations": {"expected_tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
            "source": {"source_type": "TRACE", "source_data": {"trace_id": "tr-0123456789abcdef0123456789abcdef"}}});
        let c = &record(&v, &ctx()).unwrap()[0];
        assert_eq!(c.id, "dr-1");
        assert!(matches!(c.join, Join::TraceId(_)));
        let v = json!({"inputs": {"question": "Weather in  Paris?"},
            "expectations": {"expected_tool_calls": [{"name": "get_weather"}]}});
        let c = &record(&v, &ctx()).unwrap()[0];
        assert_eq!(c.id, "ds#2");
        assert_eq!(c.join, Join::UserText("weather in paris?".into()));
        assert_eq!(c.expected.calls()[0].args, None);
        let e = record(
            &json!({"inputs": {}, "expectations": {"expected_facts": []}}),
            &ctx(),
        )
        .unwrap_err();
        assert!(e.contains("expectations.expected_tool_calls"), "{e}");
    }
}
