//! The text of a call's error written as its `error.type` (docs/conventions.md,
//! "Failure").
//!
//! The semantic conventions' `error.type` names the error's class or code
//! (`ValueError`, `tool_error`, `500`): a word. OpenLIT writes the raised
//! error's text there instead in several of its instrumentations (Agno's
//! tool spans: `error.type = "cannot hold 12 units ..."` under the fixed
//! status message `Tool execution failed`), so the text the tool raised is
//! in no other field of the span. A failed span's `error.type` that holds
//! whitespace is such a text, never a class: the call's message holds it,
//! after the span's own message when that does not hold it already.

use crate::assemble::SpanRecord;

/// The message of failed call span `s`, `message` as read so far, with the
/// error text its `error.type` holds (see the module's doc).
pub(crate) fn joined(message: Option<String>, s: &SpanRecord, key: &str) -> Option<String> {
    // The cheap test first: most failed spans have no `error.type`, or a word.
    let Some(text) = s
        .attr_str(key)
        .map(str::trim)
        .filter(|t| t.contains(char::is_whitespace))
    else {
        return message;
    };
    Some(match message {
        Some(m) if m.contains(text) => m,
        Some(m) => format!("{m}: {text}"),
        None => text.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use crate::assemble::{Trace, TraceId};
    use crate::extract::{CallStatus, Extractor, ToolCall};

    /// The call read from an `execute_tool` span with status ERROR and
    /// message `status`, beside the attributes `more`.
    fn call(status: &str, more: &[(&'static str, &'static str)]) -> ToolCall {
        let mut attrs = vec![
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "pour_concrete"),
            ("gen_ai.tool.call.arguments", r#"{"m3": 9}"#),
        ];
        attrs.extend_from_slice(more);
        let mut s =
            crate::extract::tests::sp(1, None, (0, 5), "execute_tool pour_concrete", &attrs);
        s.span.status = Some(opentelemetry_proto::tonic::trace::v1::Status {
            code: 2,
            message: status.into(),
        });
        let t = Trace::new(TraceId([5; 16]), vec![s], 0);
        Extractor::default().analyze(&t).calls.remove(0)
    }

    const TEXT: &str = "the mixer holds at most 8 m3";

    #[test]
    fn a_sentence_as_the_error_type_is_the_error_s_text() {
        let c = call("Tool execution failed", &[("error.type", TEXT)]);
        assert_eq!(c.status, CallStatus::Error);
        assert_eq!(
            c.error_message.as_deref(),
            Some("Tool execution failed: the mixer holds at most 8 m3")
        );
        // No message of the span's own: the text alone.
        let c = call("", &[("error.type", TEXT)]);
        assert_eq!(c.error_message.as_deref(), Some(TEXT));
        // A message that holds it already stays as it is.
        let c = call(&format!("RuntimeError: {TEXT}"), &[("error.type", TEXT)]);
        assert_eq!(
            c.error_message.as_deref(),
            Some("RuntimeError: the mixer holds at most 8 m3")
        );
    }

    #[test]
    fn a_class_or_code_as_the_error_type_leaves_the_message() {
        for kind in [
            "RuntimeError",
            "openai.BadRequestError",
            "tool_error",
            "500",
        ] {
            let c = call("Tool execution failed", &[("error.type", kind)]);
            assert_eq!(
                c.error_message.as_deref(),
                Some("Tool execution failed"),
                "{kind}"
            );
            assert_eq!(c.error_type.as_deref(), Some(kind));
        }
    }
}
