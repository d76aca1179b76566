//! A framework's template around a tool's failure, in the form the model
//! was shown (docs/conventions.md, "Framework frames"). LangGraph's tool
//! node hands the model a failed call's error as `Error: <message>` with a
//! last line asking the model to fix its mistakes, and an instrumentation
//! that records only the conversation (Sentry's LangChain integration)
//! keeps that text without the message's error status. A result whose
//! last line is a declared error trailer (`error_trailers` of
//! `builtin.toml`) is the failure it frames: the call failed, with the
//! text before the trailer as its error message.

use super::rules::builtin_list;
use super::{CallResult, CallStatus, ToolCall};

/// The last lines a framework appends to a failed call's error
/// (vocabulary `error_trailers`).
fn trailers() -> &'static [String] {
    builtin_list("error_trailers")
}

/// Marks `c` failed when its result is a failure framed by a declared
/// trailer, the text before it becoming its error message.
pub(crate) fn mark(c: &mut ToolCall) {
    if c.status != CallStatus::Ok {
        return;
    }
    let Some(text) = c.result.as_ref().and_then(result_text) else {
        return;
    };
    let Some((message, last)) = text.trim_end().rsplit_once('\n') else {
        return;
    };
    if !trailers().iter().any(|t| last.trim() == t) || message.trim().is_empty() {
        return;
    }
    c.error_message = Some(message.trim_end().to_string());
    c.status = CallStatus::Error;
    c.result = None;
}

/// A result given as text (a JSON string, or text not parsed).
fn result_text(r: &CallResult) -> Option<&str> {
    match r {
        CallResult::Value(v) => v.as_str(),
        CallResult::Json(t) => (!t.trim_start().starts_with(['{', '[', '"'])).then_some(&**t),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::extract::test_support::ask_and_answer;
    use crate::extract::unwrap_tests::trace;
    use crate::extract::Extractor;

    /// The call read from the model's ask and the conversation's answer
    /// `answer`.
    fn read(answer: &str) -> ToolCall {
        let t = trace(ask_and_answer(Value::from(answer), 2).to_vec());
        let mut calls = Extractor::default().extract(&t);
        assert_eq!(calls.len(), 1, "{calls:?}");
        calls.remove(0)
    }

    #[test]
    fn a_result_ending_in_a_declared_error_trailer_is_the_failure_it_frames() {
        let failed = read("Error: pier B is full\n Please fix your mistakes.");
        assert_eq!(failed.status, CallStatus::Error);
        assert_eq!(
            failed.error_message.as_deref(),
            Some("Error: pier B is full")
        );
        assert!(failed.result.is_none());
        // Text that only mentions the words, or the trailer alone, is a result.
        for kept in [
            "moored; please fix your mistakes.",
            "Please fix your mistakes.",
            "moored\n Please fix your mistakes later.",
        ] {
            let c = read(kept);
            assert_eq!(c.status, CallStatus::Ok, "{kept}");
            let r = c.result.map(|r| r.to_value());
            assert_eq!(r, Some(Value::from(kept)), "{kept}");
        }
    }
}
