//! A flattened user message whose content is the JSON text of Anthropic's
//! block list (docs/conventions.md, "The conversation witness").
//!
//! Anthropic's Messages API answers a call in a `user` message whose
//! content is a list of blocks, `{"type": "tool_result", "tool_use_id",
//! "content", "is_error"}`. OpenLLMetry's Anthropic instrumentation before
//! its OTel GenAI messages (0.48, as Keywords AI's tracing bundles it)
//! flattens such a message as `gen_ai.prompt.<i>.role` `user` and
//! `gen_ai.prompt.<i>.content` the JSON text of that list: no role `tool`,
//! no `tool_call_id`. The list is read as the message's parts, so each
//! `tool_result` block answers its `tool_use_id` as in a JSON request
//! (with `is_error`). Only a user message's text that parses to a list of
//! typed blocks, one of them a `tool_result` naming its call, is read so;
//! any other text stays the text it is.

use serde_json::{Map, Value};

/// The role of the message that carries Anthropic's results.
const ROLE: &str = "user";
/// Anthropic's result block type, and the key of the call it answers.
const RESULT_BLOCK: &str = "tool_result";
const USE_ID: &str = "tool_use_id";

/// Replaces `message`'s text content by the block list it holds when the
/// message is as the module's doc says.
pub(super) fn read_blocks(message: &mut Map<String, Value>) {
    let Some(Value::String(text)) = message.get("content") else {
        return;
    };
    // The cheap tests first: most contents are prose.
    let t = text.trim_start();
    if !t.starts_with('[')
        || memchr::memmem::find(t.as_bytes(), RESULT_BLOCK.as_bytes()).is_none()
        || message.get("role").and_then(Value::as_str) != Some(ROLE)
    {
        return;
    }
    let Ok(Value::Array(blocks)) = serde_json::from_str::<Value>(t) else {
        return;
    };
    let typed = |b: &Value| b.get("type").is_some_and(Value::is_string);
    let answers = |b: &Value| {
        b.get("type").and_then(Value::as_str) == Some(RESULT_BLOCK)
            && b.get(USE_ID)
                .and_then(Value::as_str)
                .is_some_and(|id| !id.is_empty())
    };
    if blocks.iter().all(typed) && blocks.iter().any(answers) {
        message.insert("content".into(), Value::Array(blocks));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Map, Value};

    use super::read_blocks;
    use crate::extract::conversation::{flat_messages, read_request, OPENLLMETRY_IN};
    use crate::extract::tests::sp;

    fn message(role: &str, content: &str) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("role".into(), json!(role));
        m.insert("content".into(), json!(content));
        m
    }

    #[test]
    fn only_a_user_list_of_typed_blocks_with_a_named_result_is_read() {
        let blocks = r#"[{"type": "tool_result", "tool_use_id": "tu_1", "content": "dry"}, {"type": "text", "text": "next?"}]"#;
        let mut m = message("user", blocks);
        read_blocks(&mut m);
        assert!(m["content"].is_array(), "{m:?}");
        for (role, text) in [
            // Another role's text; a result block naming no call; an
            // untyped item; text that only mentions the block; no JSON.
            ("assistant", blocks),
            ("user", r#"[{"type": "tool_result", "content": "dry"}]"#),
            (
                "user",
                r#"[{"type": "tool_result", "tool_use_id": "", "content": "dry"}]"#,
            ),
            (
                "user",
                r#"[{"type": "tool_result", "tool_use_id": "tu_1"}, "and"]"#,
            ),
            ("user", r#"["tool_result", "tu_1"]"#),
            ("user", "[tool_result] was empty"),
            ("user", r#"{"type": "tool_result", "tool_use_id": "tu_1"}"#),
        ] {
            let mut m = message(role, text);
            read_blocks(&mut m);
            assert_eq!(m["content"], json!(text), "{role}: {text}");
        }
    }

    #[test]
    fn a_result_block_for_a_call_no_model_asked_for_reads_no_call() {
        use crate::assemble::{Trace, TraceId};
        use crate::extract::Extractor;
        let chat = |id: u8, attrs: &[(&str, &str)]| {
            let t = u64::from(id) * 10;
            let mut all = vec![
                ("gen_ai.system", "Anthropic"),
                ("llm.request.type", "completion"),
            ];
            all.extend_from_slice(attrs);
            sp(id, None, (t, t + 5), "anthropic.chat", &all)
        };
        let stranger = json!([{"type": "tool_result", "tool_use_id": "tu_9", "content": "dry"}]);
        let stranger = stranger.to_string();
        let spans = vec![
            chat(
                1,
                &[
                    ("gen_ai.prompt.0.role", "user"),
                    ("gen_ai.prompt.0.content", "Tide?"),
                    ("gen_ai.completion.0.role", "assistant"),
                    ("gen_ai.completion.0.tool_calls.0.id", "tu_1"),
                    ("gen_ai.completion.0.tool_calls.0.name", "tide"),
                    ("gen_ai.completion.0.tool_calls.0.arguments", "{}"),
                ],
            ),
            chat(
                2,
                &[
                    ("gen_ai.prompt.0.role", "user"),
                    ("gen_ai.prompt.0.content", "Tide?"),
                    ("gen_ai.prompt.1.role", "user"),
                    ("gen_ai.prompt.1.content", &stranger),
                    ("gen_ai.completion.0.role", "assistant"),
                    ("gen_ai.completion.0.content", "Dry."),
                ],
            ),
        ];
        let a = Extractor::default().analyze(&Trace::new(TraceId([4; 16]), spans, 0));
        assert!(a.calls.is_empty(), "{:?}", a.calls);
    }

    #[test]
    fn flattened_result_blocks_answer_their_calls_with_is_error() {
        let results = json!([
            {"type": "tool_result", "tool_use_id": "tu_1", "content": "{\"tide\": \"low\"}"},
            {"type": "tool_result", "tool_use_id": "tu_2", "content": "berth shut", "is_error": true},
        ])
        .to_string();
        let s = sp(
            1,
            None,
            (0, 5),
            "anthropic.chat",
            &[
                ("gen_ai.prompt.0.role", "user"),
                ("gen_ai.prompt.0.content", "Tide and berth?"),
                ("gen_ai.prompt.1.role", "assistant"),
                ("gen_ai.prompt.1.tool_calls.0.id", "tu_1"),
                ("gen_ai.prompt.1.tool_calls.0.name", "tide"),
                ("gen_ai.prompt.1.tool_calls.0.arguments", "{}"),
                ("gen_ai.prompt.1.tool_calls.1.id", "tu_2"),
                ("gen_ai.prompt.1.tool_calls.1.name", "berth"),
                ("gen_ai.prompt.1.tool_calls.1.arguments", "{}"),
                ("gen_ai.prompt.2.role", "user"),
                ("gen_ai.prompt.2.content", &results),
            ],
        );
        let messages = flat_messages(&s, &OPENLLMETRY_IN).unwrap_or_default();
        let r = read_request(&messages, "openllmetry");
        let got: Vec<(Option<&str>, Option<&Value>)> = r
            .answers
            .iter()
            .map(|a| (a.id.as_deref(), a.content.as_ref()))
            .collect();
        assert_eq!(
            got,
            [
                (Some("tu_1"), Some(&json!("{\"tide\": \"low\"}"))),
                (Some("tu_2"), Some(&json!("berth shut"))),
            ]
        );
        use crate::extract::conversation::ai_sdk_output::Outcome;
        assert_eq!(r.answers[0].outcome, Outcome::Ran);
        assert_eq!(r.answers[1].outcome, Outcome::Failed("berth shut".into()));
        assert_eq!(r.last_turn.len(), 2);
    }
}
