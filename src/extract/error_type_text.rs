//! The text of a call's error written as its `error.type` (docs/conventions.md,
//! "Failure").
//!
//! The semantic conventions' `error.type` names the error's class or code
//! (`ValueError`, `tool_error`, `500`): a word. OpenLIT writes the raised
//! error's text there instead in several of its instrumentations (Agno's
//! tool spans: `error.type = "cannot hold 12 units ..."` under the fixed
//! status message `Tool execution failed`), so the text the tool raised is
//! in no other field of the span. A failed span's `error.type` that holds
//! whitespace is read as such a text, and then is no error type, unless:
//!
//! - an `exception` event names the type (`exception.type`): the span has
//!   its class, and `error.type` is left as it was;
//! - it is a class name that holds spaces: Python's `str()` of a class
//!   (`<class 'ValueError'>`, any text wrapped in `<...>`) or a .NET
//!   assembly-qualified name (`..., Version=1.0.0.0, Culture=...`).
//!
//! The text joins the call's message, compared with whitespace collapsed:
//! a message that holds it stays; a message that opens the text (its first
//! line, say) gives way to it; any other message is followed by it.

use crate::assemble::SpanRecord;

/// The message and error type of failed call span `s`: `message` as read
/// so far and `kind`, the type its `exception` event names, with the error
/// text `error.type` (`key`) may hold; see the module's doc.
pub(crate) fn read(
    message: Option<String>,
    kind: Option<String>,
    s: &SpanRecord,
    key: &str,
) -> (Option<String>, Option<String>) {
    if kind.is_some() {
        return (message, kind);
    }
    let Some(value) = s.attr_str(key) else {
        return (message, None);
    };
    match raised_text(value) {
        Some(text) => (Some(joined(message, text)), None),
        None => (message, Some(value.to_string())),
    }
}

/// `value` as a raised error's text, when it is one: it holds whitespace
/// and is no class name that holds spaces.
fn raised_text(value: &str) -> Option<&str> {
    // The cheap test first: most values are a word.
    let t = value.trim();
    if !t.contains(char::is_whitespace) {
        return None;
    }
    let class_str = t.starts_with('<') && t.ends_with('>');
    let assembly_qualified = t.contains(", Version=");
    (!class_str && !assembly_qualified).then_some(t)
}

/// `message` with `text` (see the module's doc).
fn joined(message: Option<String>, text: &str) -> String {
    let Some(m) = message.filter(|m| !m.trim().is_empty()) else {
        return text.to_string();
    };
    // Exact first; whitespace collapsed only when that fails.
    if m.contains(text) {
        return m;
    }
    if text.starts_with(m.trim()) {
        return text.to_string();
    }
    let (nm, nt) = (collapsed(&m), collapsed(text));
    if nm.contains(&nt) {
        m
    } else if nt.starts_with(&nm) {
        text.to_string()
    } else {
        format!("{m}: {text}")
    }
}

/// `t` with each run of whitespace one space, trimmed (failed spans with
/// a text as `error.type` only).
fn collapsed(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    for w in t.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::assemble::{SpanRecord, Trace, TraceId};
    use crate::extract::{CallStatus, Extractor, ToolCall};

    /// The call read from an `execute_tool` span with status ERROR and
    /// message `status`, beside the attributes `more`.
    fn call(status: &str, more: &[(&'static str, &'static str)]) -> ToolCall {
        read(failed_span(status, more))
    }

    /// [`call`] with an `exception` event of type `ValueError` whose
    /// message is [`TEXT`].
    fn call_with_exception(status: &str, more: &[(&'static str, &'static str)]) -> ToolCall {
        use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
        use opentelemetry_proto::tonic::trace::v1::span::Event;
        let kv = |k: &str, v: &str| KeyValue {
            key: k.into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(v.into())),
            }),
            ..Default::default()
        };
        let mut s = failed_span(status, more);
        s.span.events.push(Event {
            name: "exception".into(),
            attributes: vec![
                kv("exception.type", "ValueError"),
                kv("exception.message", TEXT),
            ],
            ..Default::default()
        });
        read(s)
    }

    /// An `execute_tool` span with status ERROR and message `status`.
    fn failed_span(status: &str, more: &[(&'static str, &'static str)]) -> SpanRecord {
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
        s
    }

    /// The one call of a trace of span `s`.
    fn read(s: SpanRecord) -> ToolCall {
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
    fn the_text_read_is_no_error_type() {
        let c = call("Tool execution failed", &[("error.type", TEXT)]);
        assert_eq!(c.error_type, None);
    }

    #[test]
    fn a_message_that_opens_the_text_or_holds_it_spaced_otherwise_is_not_doubled() {
        // The span's message is the text's first line: the whole text.
        let long = "the mixer holds at most 8 m3\nasked for 9 m3";
        let c = call("the mixer holds at most 8 m3", &[("error.type", long)]);
        assert_eq!(c.error_message.as_deref(), Some(long));
        // The message holds the text with other spacing: kept as it is.
        let spaced = "Tool execution failed: the mixer holds at most  8 m3";
        let c = call(spaced, &[("error.type", TEXT)]);
        assert_eq!(c.error_message.as_deref(), Some(spaced));
    }

    #[test]
    fn class_names_with_spaces_and_a_span_with_an_exception_type_are_left() {
        for kind in [
            "<class 'ValueError'>",
            "System.ServiceModel.FaultException`1[[Yard.MixerFault, Yard, Version=2.1.0.0, \
             Culture=neutral, PublicKeyToken=null]]",
        ] {
            let c = call("the pour was refused", &[("error.type", kind)]);
            assert_eq!(
                (c.error_message.as_deref(), c.error_type.as_deref()),
                (Some("the pour was refused"), Some(kind)),
                "{kind}"
            );
        }
        // An `exception` event names the type: `error.type` is not read as
        // the text, and the event's type is the call's.
        let c = call_with_exception("", &[("error.type", "<class 'ValueError'>")]);
        assert_eq!(
            (c.error_message.as_deref(), c.error_type.as_deref()),
            (Some(TEXT), Some("ValueError"))
        );
        let c = call_with_exception("", &[("error.type", "a text beside the event")]);
        assert_eq!(
            (c.error_message.as_deref(), c.error_type.as_deref()),
            (Some(TEXT), Some("ValueError"))
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
