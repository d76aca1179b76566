//! A byte look at a request's JSON text before it is parsed for the tool
//! results it carries ([`may_hold_results`]).

use std::sync::OnceLock;

use super::text_results;
use crate::extract::any_word::AnyWord;

/// Whether a request's JSON text may hold a tool result: the key or part
/// type of a result in one of the shapes [`super::messages::answers_in`] reads (a request's
/// tool definitions alone do not make it parsed).
pub(super) fn may_hold_results(text: &str) -> bool {
    // One pass over the text for every word (a multi-literal search); a
    // search per word read a request without results whole once per word.
    static WORDS: OnceLock<AnyWord> = OnceLock::new();
    WORDS
        .get_or_init(|| AnyWord::new(words()))
        .is_in(text.as_bytes())
}

/// Every word [`may_hold_results`] looks for: a result's key or part type
/// ([`RESULT_WORDS`]), and what opens a result written as text
/// ([`text_results::text_results`]), and what opens a failed call told in
/// text (`failed_texts`).
fn words() -> impl Iterator<Item = &'static str> {
    let opens = text_results::text_results().iter().map(|f| f.opens);
    // A failed call told in text, maybe the request's only answer.
    let failed = super::failed_texts::openings();
    RESULT_WORDS.iter().copied().chain(opens).chain(failed)
}

/// The keys and part types of results [`may_hold_results`] looks for.
const RESULT_WORDS: [&str; 15] = [
    "tool_call_id",
    // Gemini and Bedrock Converse bodies.
    "functionResponse",
    "function_response",
    // Cohere v1's `tool_results` items (`idless`).
    "\"outputs\"",
    "toolResult",
    "tool_call_response",
    "tool-result",
    "tool_result",
    "toolResponse",
    super::RESPONSES_RESULT,
    // A role `tool` message with no call id (`order`).
    "\"tool\"",
    // OpenAI's older function messages.
    "\"role\":\"function\"",
    "\"role\": \"function\"",
    // A model turn's calls, which a result under its tool's name as role
    // follows (`named_roles`): OpenAI's list, OTel GenAI's parts.
    "\"tool_calls\"",
    "\"tool_call\"",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The one search says what a search per word says: each word found
    /// wherever it is, and a text with none of them is not parsed.
    #[test]
    fn one_search_finds_each_word() {
        for w in words() {
            for text in [
                w.to_string(),
                format!("[{{\"k\": 1}}, {w} x"),
                format!("x{w}"),
            ] {
                assert!(may_hold_results(&text), "{text}");
            }
        }
        let none = r#"[{"role": "user", "content": "tools: tool, function"}, {"role": "toolx"}]"#;
        assert!(!words().any(|w| none.contains(w)));
        assert!(!may_hold_results(none));
    }
}
