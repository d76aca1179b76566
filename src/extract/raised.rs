//! A tool span whose status was left unset, with an `exception` event and
//! no result, records a tool that raised (docs/conventions.md, "The
//! built-in rules": failure).
//!
//! Laminar JS's `observe()` records the exception a wrapped function
//! threw as the span's event and rethrows it, but sets no status and no
//! output. A span that kept a result returned one, whatever it recorded
//! on the way; a span whose status says OK or ERROR says so itself.

use super::{CallStatus, SpanRecord, ToolCall};

/// OTLP's unset status code.
const STATUS_UNSET: i32 = 0;

/// Marks `call` (read from span `s`, its result read) failed when `s`
/// records a tool that raised (see the module's doc).
pub(crate) fn mark(s: &SpanRecord, call: &mut ToolCall) {
    let unset = s
        .span
        .status
        .as_ref()
        .is_none_or(|st| st.code == STATUS_UNSET);
    if call.status != CallStatus::Ok || call.result.is_some() || !unset {
        return;
    }
    let Some(message) = super::exception_text(s, super::EXCEPTION_KEYS[0]) else {
        return;
    };
    call.status = CallStatus::Error;
    call.error_message = Some(message);
    call.error_type = super::exception_text(s, super::EXCEPTION_KEYS[1]);
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::trace::v1::Status;

    use crate::assemble::{SpanRecord, Trace, TraceId};
    use crate::extract::test_support::event;
    use crate::extract::tests::sp;
    use crate::extract::{CallStatus, Extractor};

    /// A made-up vendor's tool span that recorded the exception its tool
    /// threw, `output` its result where given, `code` its status's.
    fn thrown(output: Option<&str>, code: Option<i32>, message: &str) -> SpanRecord {
        let mut attrs = vec![("quux.span.kind", "tool"), ("quux.input", r#"{"bay": 3}"#)];
        attrs.extend(output.map(|o| ("quux.output", o)));
        let mut s = sp(2, Some(1), (10, 20), "open_bay", &attrs);
        s.span.status = code.map(|code| Status {
            code,
            message: String::new(),
        });
        s.span
            .events
            .push(event("exception", "exception.message", message));
        s
    }

    /// (status, message) of the one call read from `tool`.
    fn read(tool: SpanRecord) -> (CallStatus, Option<String>) {
        let spans = vec![sp(1, None, (0, 100), "run", &[]), tool];
        let a = Extractor::default().analyze(&Trace::new(TraceId([4; 16]), spans, 0));
        assert_eq!(a.calls.len(), 1, "{:?}", a.calls);
        (a.calls[0].status.clone(), a.calls[0].error_message.clone())
    }

    #[test]
    fn an_unset_status_with_an_exception_and_no_result_is_a_raised_tool() {
        let failed = (CallStatus::Error, Some("bay 3 is jammed".to_string()));
        assert_eq!(read(thrown(None, None, "bay 3 is jammed")), failed);
        assert_eq!(read(thrown(None, Some(0), "bay 3 is jammed")), failed);
        // Near misses: a result kept, a status that says OK, no message.
        let ok = (CallStatus::Ok, None);
        assert_eq!(read(thrown(Some("opened"), None, "bay 3 is jammed")), ok);
        assert_eq!(read(thrown(None, Some(1), "bay 3 is jammed")), ok);
        assert_eq!(read(thrown(None, None, "")), ok);
    }
}
