//! A byte look at JSON text before it is parsed for the calls a model
//! asked for: most outputs name no call, or name their lists of calls only
//! to leave them empty (`"tool_calls": []`), and are not parsed.

use std::sync::OnceLock;

use memchr::memmem::Finder;

use crate::extract::requested::{self, Named, Stem};

/// Whether JSON text may hold a tool call (a cheap look before parsing):
/// it names one of the words of calls other than as the key of an empty
/// list ([`requested::named`]), or it names them only so and has a call
/// written otherwise.
pub(super) fn may_hold_calls(text: &str) -> bool {
    match call_words(text.as_bytes()) {
        Named::Otherwise => true,
        Named::EmptyLists => written_otherwise(text.as_bytes()),
        Named::Not => false,
    }
}

/// Whether [`requested::walk`] may find a call in the tree JSON text
/// `text` parses into: [`may_hold_calls`], and also for text that names no
/// word of calls but has a call written otherwise.
pub(super) fn may_hold_any_call(text: &str) -> bool {
    let bytes = text.as_bytes();
    call_words(bytes) == Named::Otherwise || written_otherwise(bytes)
}

/// How text names the words of calls ([`requested::named`]).
fn call_words(bytes: &[u8]) -> Named {
    static WORDS: OnceLock<[Stem; 2]> = OnceLock::new();
    let words = WORDS.get_or_init(|| {
        [
            // `tool_call`, `toolCall`, `tool_use`, `toolRequest`, and
            // Bedrock Converse's `toolUse`.
            Stem::new("tool", &["_call", "Call", "_use", "Request", "Use"]),
            // And Gemini's `functionCall`.
            Stem::new("function", &["_call", "Call"]),
        ]
    });
    requested::named(bytes, words)
}

/// Whether text has a call [`call_words`] does not see: Vercel's
/// (`toolName`), or a word behind a `\u` escape.
fn written_otherwise(bytes: &[u8]) -> bool {
    static FINDERS: OnceLock<[Finder<'static>; 2]> = OnceLock::new();
    let finders = FINDERS.get_or_init(|| [Finder::new(b"toolName"), Finder::new(b"\\u")]);
    finders.iter().any(|f| f.find(bytes).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::borrowed::Json;

    fn calls(text: &str) -> usize {
        let mut out = Vec::new();
        if let Some(v) = Json::parse(text) {
            requested::walk(&v, None, 0, &mut out);
        }
        out.len()
    }

    /// Text whose lists of calls are all empty is not parsed; a call
    /// anywhere else in it still is, and the look never hides a call the
    /// parse finds.
    #[test]
    fn empty_lists_of_calls_are_no_calls() {
        let empty = [
            r#"{"kwargs": {"tool_calls": [], "invalid_tool_calls": []}}"#,
            r#"{"tool_calls" : [ ], "toolCalls":[]}"#,
            r#"{"text": "done"}"#,
        ];
        for t in empty {
            assert_eq!(calls(t), 0, "{t}");
            assert!(!may_hold_calls(t), "{t}");
            assert!(!may_hold_any_call(t), "{t}");
        }
        let held = [
            r#"{"tool_calls": [], "message": {"tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]}}"#,
            r#"{"tool_calls": [], "parts": [{"type": "tool_call", "id": "c1", "name": "f", "arguments": {}}]}"#,
            r#"{"tool_calls": [], "calls": [{"toolName": "f", "toolCallId": "c1", "input": {}}]}"#,
            r#"{"tool_calls": [], "tool\u005fuse": [{"name": "f", "input": {}}], "x": [{"type": "tool\u005fuse", "id": "c2", "name": "g", "input": {}}]}"#,
            r#"{"tool_calls": "[]", "toolCalls": "[{\"toolName\": \"f\", \"toolCallId\": \"c1\", \"args\": {}}]"}"#,
        ];
        for t in held {
            assert!(calls(t) > 0, "{t}");
            assert!(may_hold_calls(t), "{t}");
            assert!(may_hold_any_call(t), "{t}");
        }
        // A call without a word of calls: only the look that sees every
        // call says so (named forms need a word, as before).
        let vercel = r#"[{"toolName": "f", "input": {"city": "Paris"}}]"#;
        assert!(calls(vercel) > 0);
        assert!(!may_hold_calls(vercel));
        assert!(may_hold_any_call(vercel));
    }
}
