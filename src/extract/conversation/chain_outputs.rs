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
pub(super) const FORM: &str = "chain-output";

/// The class a LangChain-serialized model message names.
const AI_MESSAGE: &[u8] = b"\"AIMessage";

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
            walk(&v, None, 0, &mut out);
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
}
