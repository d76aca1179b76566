//! A span that records one call the model asked for, as a model output
//! (docs/conventions.md, "The conversation witness", "Call records").
//!
//! Some instrumentations write each call the model's response asked for as
//! a span of its own, beside or under the model call's span, while the
//! model call's recorded output keeps no calls: AgentOps' `tool_call.<name>`
//! spans (`agentops.span.kind = AgentOpsSpanKindValues.TOOL`) carry the
//! tool's name, the exact arguments and the call id, and no result. Such a
//! span is no execution (the tool ran elsewhere, maybe under a span of its
//! own): it is the model's request. So a span that no rule took for a tool
//! call and that holds a tool name, a call id and arguments that are a JSON
//! object (not a schema) under the keys below is read as a model output
//! asking for that one call; the witness counts it when a request answers
//! its id, with these arguments rather than a later request's copy (which a
//! framework may rewrite). The keys are the ones the rules read already.

use serde_json::Value;

use crate::assemble::SpanRecord;
use crate::extract::requested::Asked;
use crate::extract::source;

/// The form such calls are read in (`call-record-messages` in rows).
pub(super) const FORM: &str = "call-record";

/// Where a call record names its tool.
const NAME_KEYS: [&str; 3] = ["gen_ai.tool.name", "tool.name", "ai.toolCall.name"];

/// Where it holds the arguments: the GenAI keys, the bare `tool.` ones
/// (AgentOps), Vercel's.
const ARGS_KEYS: [&str; 8] = [
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.arguments",
    "gen_ai.tool.args",
    "tool.parameters",
    "tool.arguments",
    "tool.args",
    "tool.input",
    "ai.toolCall.args",
];

/// The span attributes read here (projection at decode).
pub(crate) fn span_keys() -> impl Iterator<Item = &'static str> {
    NAME_KEYS.into_iter().chain(ARGS_KEYS)
}

/// Whether `key` is one of the call id keys (in every spelling,
/// [`source::call_id_keys`]): the cheap test, made on every span's keys in
/// the witness's one pass over them ([`super::Look`]), before any other.
#[inline]
pub(super) fn is_call_id_key(key: &[u8]) -> bool {
    source::call_id_key_rank(key).is_some()
}

/// The call span `s` records, when it is a call record (see the module's
/// doc; the caller has made the cheap test, [`is_call_id_key`]).
pub(super) fn asked(s: &SpanRecord) -> Option<Asked> {
    let id = source::tool_call_id(s)?;
    let name = NAME_KEYS
        .iter()
        .find_map(|k| s.attr_str(k))
        .map(str::trim)
        .filter(|n| !n.is_empty())?;
    let args = ARGS_KEYS.iter().find_map(|k| s.attr_str(k))?;
    let args: Value = serde_json::from_str(args).ok()?;
    let object = args.as_object()?;
    // A tool's declared parameters are no call's arguments.
    let schema = object.get("type").and_then(Value::as_str) == Some("object")
        && object.get("properties").is_some_and(Value::is_object);
    if schema {
        return None;
    }
    Some(Asked {
        id: Some(id.to_string()),
        name: name.to_string(),
        args,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{Trace, TraceId};
    use crate::extract::tests::sp;
    use crate::extract::Extractor;

    /// A made-up vendor's trace: model calls whose outputs keep no calls,
    /// each call the model asked for a span of its own under the model
    /// call (`record`), the next request retelling the call with a key the
    /// framework added, and its result under the call id.
    fn calls(record: &[(&str, &str)], tool_span: bool) -> Vec<(String, Value, Value)> {
        let retold = json!([
            {"role": "user", "content": "tide at Brest?"},
            {"role": "assistant", "tool_calls": [{"id": "k1", "type": "function",
                "function": {"name": "tide", "arguments": "{\"port\": \"Brest\", \"via\": \"tide\"}"}}]},
            {"role": "tool", "tool_call_id": "k1", "content": "{\"high\": \"06:12\"}"}
        ])
        .to_string();
        let mut spans = vec![
            sp(1, None, (0, 100), "run", &[]),
            sp(
                2,
                Some(1),
                (10, 20),
                "quux.chat",
                &[
                    ("quux.kind", "llm"),
                    ("gen_ai.completion.0.role", "assistant"),
                ],
            ),
            sp(3, Some(2), (18, 19), "quux.request tide", record),
            sp(
                4,
                Some(1),
                (40, 50),
                "quux.chat",
                &[("gen_ai.input.messages", &retold)],
            ),
        ];
        if tool_span {
            spans.push(sp(
                5,
                Some(1),
                (25, 30),
                "execute_tool tide",
                &[
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", "tide"),
                    ("gen_ai.tool.call.id", "k1"),
                ],
            ));
        }
        let a = Extractor::default().analyze(&Trace::new(TraceId([9; 16]), spans, 0));
        a.calls
            .iter()
            .map(|c| {
                let result = c.result.as_ref().map(|r| r.to_value()).unwrap_or_default();
                (
                    c.name.clone(),
                    c.args.value().cloned().unwrap_or_default(),
                    result,
                )
            })
            .collect()
    }

    #[test]
    fn a_span_holding_a_call_s_name_id_and_arguments_is_the_model_s_request() {
        let record = [
            ("quux.span.kind", "Quux.TOOL"),
            ("tool.name", "tide"),
            ("tool.call.id", "k1"),
            ("tool.arguments", "{\"port\": \"Brest\"}"),
        ];
        let want = vec![(
            "tide".to_string(),
            json!({"port": "Brest"}),
            json!({"high": "06:12"}),
        )];
        assert_eq!(calls(&record, false), want);
        // Beside a tool span of the same call: one call, the span's.
        let both = calls(&record, true);
        assert_eq!(both.len(), 1, "{both:?}");
        assert_eq!(both[0].1, json!({"port": "Brest"}));
    }

    #[test]
    fn a_span_without_an_id_or_with_a_schema_is_no_record() {
        let retold = vec![(
            "tide".to_string(),
            json!({"port": "Brest", "via": "tide"}),
            json!({"high": "06:12"}),
        )];
        let no_id = [
            ("tool.name", "tide"),
            ("tool.arguments", "{\"port\": \"Brest\"}"),
        ];
        assert_eq!(calls(&no_id, false), retold);
        let schema = [
            ("tool.name", "tide"),
            ("tool.call.id", "k1"),
            (
                "tool.parameters",
                "{\"type\": \"object\", \"properties\": {\"port\": {}}}",
            ),
        ];
        assert_eq!(calls(&schema, false), retold);
    }
}
