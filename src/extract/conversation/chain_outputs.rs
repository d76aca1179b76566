//! The model's calls in a LangChain chain's output (docs/conventions.md,
//! "The conversation witness"): OpenLLMetry's LangChain.js instrumentation
//! records the model calls of a LangGraph agent with the request's text
//! and no tool calls, while the chain that ran the model node records its
//! output, LangChain-serialized (`{"lc": 1, "type": "constructor", "id":
//! [..., "AIMessage"], "kwargs": {"tool_calls": [...]}}`), in
//! `traceloop.entity.output` (vocabulary `chain_output_keys`). Such an
//! output is where the model's calls are: the asked calls of a span that
//! is no model call and ran no tool.

use memchr::memmem;

use crate::assemble::SpanRecord;
use crate::extract::borrowed::Json;
use crate::extract::requested::{walk, Asked};
use crate::extract::rules::builtin_list;

/// The form the calls read here are reported under.
pub(crate) const FORM: &str = "chain-output";

/// The class a LangChain-serialized model message names.
const AI_MESSAGE: &[u8] = b"\"AIMessage";

/// The class a LangChain-serialized tool message names.
const TOOL_MESSAGE: &[u8] = b"\"ToolMessage\"";

/// The calls of the AI messages in span `s`'s chain output, in order; none
/// when it records none.
pub(super) fn asked(s: &SpanRecord) -> Vec<Asked> {
    let mut out = Vec::new();
    for key in builtin_list("chain_output_keys") {
        let Some(text) = s.attr_str(key).map(str::trim_start) else {
            continue;
        };
        // Most chain outputs hold no model message: a byte search spares
        // their parse.
        if !text.starts_with('{') || memmem::find(text.as_bytes(), AI_MESSAGE).is_none() {
            continue;
        }
        if let Some(v) = Json::parse(text) {
            let from = out.len();
            walk(&v, None, 0, &mut out);
            // A retold history: the calls its tool messages answer are no
            // asks (`answered_history`). A byte search first.
            if memmem::find(text.as_bytes(), TOOL_MESSAGE).is_some() {
                let mut answered = Vec::new();
                super::answered_history::answered_ids(&v, 0, &mut answered);
                let mut i = 0;
                out.retain(|a| {
                    i += 1;
                    i <= from || !a.id.as_deref().is_some_and(|id| answered.contains(&id))
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::asked;
    use crate::extract::tests::sp;

    fn ai(calls: serde_json::Value) -> serde_json::Value {
        json!({"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", "AIMessage"],
               "kwargs": {"content": "", "tool_calls": calls, "invalid_tool_calls": []}})
    }

    #[test]
    fn an_ai_message_s_calls_in_a_chain_output_are_asked() {
        let output = json!({"messages": [ai(json!([
            {"name": "find_room", "args": {"town": "Oslo"}, "type": "tool_call", "id": "k1"},
            {"name": "get_time", "args": {}, "type": "tool_call", "id": "k2"},
        ]))]})
        .to_string();
        let s = sp(
            1,
            None,
            (0, 1),
            "workflow RunnableSequence",
            &[("traceloop.entity.output", &output)],
        );
        let calls = asked(&s);
        let got: Vec<(Option<&str>, &str)> = calls
            .iter()
            .map(|a| (a.id.as_deref(), a.name.as_str()))
            .collect();
        assert_eq!(got, [(Some("k1"), "find_room"), (Some("k2"), "get_time")]);
        // An output with no model message, or under another key: nothing.
        let plain = json!({"output": "act"}).to_string();
        for attrs in [
            [("traceloop.entity.output", plain.as_str())],
            [("acme.output", output.as_str())],
        ] {
            assert!(asked(&sp(2, None, (0, 1), "chain", &attrs)).is_empty());
        }
    }

    fn tool_message(id: &str, lc: u64) -> serde_json::Value {
        json!({"lc": lc, "type": "constructor", "id": ["langchain_core", "messages", "ToolMessage"],
               "kwargs": {"content": "7", "tool_call_id": id, "name": "find_room"}})
    }

    #[test]
    fn a_history_s_answered_calls_are_not_asked() {
        let asking = ai(json!([
            {"name": "find_room", "args": {"town": "Oslo"}, "type": "tool_call", "id": "k1"},
            {"name": "find_room", "args": {"town": "Bergen"}, "type": "tool_call", "id": "k2"},
        ]));
        let ids = |messages: serde_json::Value| {
            let output = json!({"output": messages}).to_string();
            let attrs = [("traceloop.entity.output", output.as_str())];
            let s = sp(1, None, (0, 1), "workflow RunnableLambda", &attrs);
            let got: Vec<Option<String>> = asked(&s).into_iter().map(|a| a.id).collect();
            got
        };
        // `k1` answered in the same output: retold; `k2` still asked.
        let got = ids(json!([asking.clone(), tool_message("k1", 1)]));
        assert_eq!(got, [Some("k2".to_string())]);
        // A message answering another id, or not serialized so: both asked.
        let both = [Some("k1".to_string()), Some("k2".to_string())];
        assert_eq!(ids(json!([asking.clone(), tool_message("k7", 1)])), both);
        assert_eq!(ids(json!([asking, tool_message("k1", 2)])), both);
    }
}
