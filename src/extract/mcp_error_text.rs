//! The message of a failed call whose span names only its error's type,
//! when its result is an MCP error result, and the failure of a call whose
//! result is one (docs/conventions.md, "Failure").
//!
//! Google ADK fails the tool span of an MCP tool whose `CallToolResult`
//! says `isError`, with the status message and `error.type` both the code
//! `MCP_TOOL_ERROR`: the error's text is only in the result's content
//! (`{"content": [{"type": "text", "text": ...}], "isError": true}`), under
//! ADK's keys or OpenInference's output (there one level down, in the
//! function response: `{"id", "name", "response": {...}}`). A failed call
//! whose message is absent or only repeats its error type takes the text
//! blocks of such a result, from its rule's result sources, as its
//! message. The raw sources are read, not the call's result: the message
//! is the same whether results are read or not. An error object in the
//! same places (`{"error": "<text>"}`: what ADK's `on_tool_error_callback`
//! answers for a tool that raised, the span failed with `TOOL_ERROR`)
//! gives its text the same way. A call whose span says nothing failed
//! (status OK or unset) and whose result is itself an MCP error result
//! failed, with that text: the AI SDK's tool span of an MCP tool keeps the
//! server's `isError` in `ai.toolCall.result` only (held-out set 38; IQ
//! AI's ADK in `adk.tool_response`, JSON text of the result's JSON text,
//! held-out set 49).

use serde_json::{Map, Value};

use super::rules::Rule;
use super::{source, CallStatus, ToolCall};
use crate::assemble::SpanRecord;

/// The keys of an MCP result's error flag (1.x's and 2.x's dumps).
const FLAGS: [&str; 2] = ["isError", "is_error"];

/// Gives failed call `call` of span `s`, read by `rule`, its MCP error
/// result's text as its message; see the module's doc.
pub(crate) fn mark(rule: &Rule, s: &SpanRecord, call: &mut ToolCall) {
    if call.status != CallStatus::Error {
        // A span that says nothing failed around an MCP result that says
        // it did (the AI SDK's tool span of an MCP tool: status OK).
        let flagged = raw_results(rule, s).find_map(|raw| mcp_text(raw, false));
        if let Some(text) = flagged {
            call.status = CallStatus::Error;
            call.error_message = Some(text);
        }
        return;
    }
    let says_nothing = call.error_message.as_deref().is_none_or(|m| {
        let m = m.trim();
        m.is_empty() || call.error_type.as_deref() == Some(m)
    });
    if !says_nothing {
        return;
    }
    let text = raw_results(rule, s).find_map(error_text);
    if let Some(text) = text {
        call.error_message = Some(text);
    }
}

/// The raw text at each of `rule`'s result sources on span `s`: what a
/// failure's readers look at, the same whether results are read or not.
pub(crate) fn raw_results<'a>(rule: &'a Rule, s: &'a SpanRecord) -> impl Iterator<Item = &'a str> {
    rule.result
        .iter()
        .filter_map(move |src| source::raw_string(&src.field, s))
}

/// The text of the MCP error result `raw` holds (itself or one of its
/// values), its text blocks joined by lines; or of the error object it
/// holds (`{"error": "<text>"}`, the whole object or one of its values).
fn error_text(raw: &str) -> Option<String> {
    // The cheap look first: most results are no error.
    if !raw.contains(ERROR_KEY) {
        return mcp_text(raw, true);
    }
    let v: Value = serde_json::from_str(raw).ok()?;
    let o = v.as_object()?;
    error_object(o)
        .or_else(|| {
            o.values()
                .filter_map(Value::as_object)
                .find_map(error_object)
        })
        .or_else(|| mcp_text(raw, true))
}

/// The text of the MCP error result `raw` holds: itself, or (`nested`)
/// one of its values; its text blocks joined by lines.
fn mcp_text(raw: &str, nested: bool) -> Option<String> {
    if !FLAGS.iter().any(|f| raw.contains(f)) {
        return None;
    }
    let v: Value = match serde_json::from_str(raw).ok()? {
        // JSON text of JSON text (IQ AI's ADK encodes its function
        // response once more: `adk.tool_response`).
        Value::String(inner) => serde_json::from_str(&inner).ok()?,
        v => v,
    };
    let o = v.as_object()?;
    let record = if flagged(o) {
        o
    } else if nested {
        o.values()
            .filter_map(Value::as_object)
            .find(|r| flagged(r))?
    } else {
        return None;
    };
    let blocks = record.get("content")?.as_array()?;
    let texts: Option<Vec<&str>> = blocks
        .iter()
        .map(|b| {
            let b = b.as_object()?;
            (b.get("type")?.as_str()? == "text").then_some(())?;
            b.get("text")?.as_str()
        })
        .collect();
    let text = texts?.join("\n");
    (!text.trim().is_empty()).then_some(text)
}

/// The key of an error object: ADK's `on_tool_error_callback` answers the
/// model `{"error": "<text>"}` for a tool that raised.
const ERROR_KEY: &str = "\"error\"";

/// The text of `o` when it is an error object: one key, `error`, and
/// text that says something.
fn error_object(o: &Map<String, Value>) -> Option<String> {
    lone_text(o, |k| k == "error")
}

/// The text under `o`'s one key when `key` takes that key and the text
/// says something (an error object: here, and a loop's answer in
/// `error_frames`).
pub(crate) fn lone_text(o: &Map<String, Value>, key: impl Fn(&str) -> bool) -> Option<String> {
    let (k, v) = o.iter().next().filter(|_| o.len() == 1)?;
    let text = v.as_str().filter(|t| key(k) && !t.trim().is_empty())?;
    Some(text.to_string())
}

/// Whether `o` is an MCP result flagged as an error (also a failed
/// framework record: `own_records`).
pub(crate) fn flagged(o: &Map<String, Value>) -> bool {
    FLAGS.iter().any(|f| o.get(*f) == Some(&Value::Bool(true)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::error_text;
    use crate::extract::CallStatus;

    #[test]
    fn an_error_result_s_text_blocks_are_its_message() {
        let own = json!({"content": [{"type": "text", "text": "dock closed"}], "isError": true});
        assert_eq!(error_text(&own.to_string()).as_deref(), Some("dock closed"));
        let wrapped = json!({"id": "c-1", "name": "moor", "response": {
            "content": [{"type": "text", "text": "dock closed"}, {"type": "text", "text": "tide low"}],
            "is_error": true}});
        let want = Some("dock closed\ntide low");
        assert_eq!(error_text(&wrapped.to_string()).as_deref(), want);
        // JSON text of the result's JSON text.
        let twice = serde_json::Value::String(own.to_string()).to_string();
        assert_eq!(
            super::mcp_text(&twice, false).as_deref(),
            Some("dock closed")
        );
    }

    #[test]
    fn a_result_not_flagged_or_not_all_text_gives_no_message() {
        let ok = json!({"content": [{"type": "text", "text": "moored"}], "isError": false});
        assert_eq!(error_text(&ok.to_string()), None);
        let image = json!({"content": [{"type": "image", "data": "AA=="}], "isError": true});
        assert_eq!(error_text(&image.to_string()), None);
        // A tool's own dict that says `is_error` beside no content.
        let own = json!({"is_error": true, "reason": "tide"});
        assert_eq!(error_text(&own.to_string()), None);
    }

    #[test]
    fn an_error_object_s_text_is_its_message_alone_or_one_level_down() {
        let own = json!({"error": "feed timed out"});
        assert_eq!(
            error_text(&own.to_string()).as_deref(),
            Some("feed timed out")
        );
        let wrapped =
            json!({"id": "c-1", "name": "status", "response": {"error": "feed timed out"}});
        let want = Some("feed timed out");
        assert_eq!(error_text(&wrapped.to_string()).as_deref(), want);
        // More keys than `error`, no text, or blank text: a tool's own value.
        for other in [
            json!({"error": "feed timed out", "retry": true}),
            json!({"error": {"code": 504}}),
            json!({"error": " "}),
            json!({"response": {"errors": "feed timed out"}}),
        ] {
            assert_eq!(error_text(&other.to_string()), None, "{other}");
        }
    }

    /// A failed OTel GenAI tool span `moor`: status message `message`,
    /// `error.type` `MCP_TOOL_ERROR`, an MCP error result `dock closed`.
    fn failed(message: &str) -> crate::assemble::SpanRecord {
        let out = json!({"content": [{"type": "text", "text": "dock closed"}], "isError": true});
        let out = out.to_string();
        let attrs = [
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "moor"),
            ("gen_ai.tool.call.result", out.as_str()),
            ("error.type", "MCP_TOOL_ERROR"),
        ];
        let mut s = crate::extract::tests::sp(1, None, (0, 5), "execute_tool moor", &attrs);
        s.span.status = Some(opentelemetry_proto::tonic::trace::v1::Status {
            code: 2,
            message: message.into(),
        });
        s
    }

    fn message(s: crate::assemble::SpanRecord) -> Option<String> {
        let trace = crate::assemble::Trace::new(crate::assemble::TraceId([7; 16]), vec![s], 0);
        let calls = crate::extract::Extractor::default().extract(&trace);
        calls.into_iter().next().and_then(|c| c.error_message)
    }

    #[test]
    fn a_message_that_is_the_error_type_gives_way_to_the_result_s_text() {
        assert_eq!(
            message(failed("MCP_TOOL_ERROR")).as_deref(),
            Some("dock closed")
        );
    }

    #[test]
    fn a_tool_error_code_gives_way_to_the_error_object_s_text() {
        let out = json!({"id": "c-1", "name": "flight", "response": {"error": "feed timed out"}});
        let out = out.to_string();
        let attrs = [
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "flight"),
            ("gen_ai.tool.call.result", out.as_str()),
            ("error.type", "TOOL_ERROR"),
        ];
        let mut s = crate::extract::tests::sp(1, None, (0, 5), "execute_tool flight", &attrs);
        s.span.status = Some(opentelemetry_proto::tonic::trace::v1::Status {
            code: 2,
            message: "TOOL_ERROR".into(),
        });
        assert_eq!(message(s).as_deref(), Some("feed timed out"));
    }

    /// An OK OTel GenAI tool span `convert` whose result is `out`.
    fn ok_with(out: &serde_json::Value) -> crate::assemble::SpanRecord {
        let out = out.to_string();
        let attrs = [
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "convert"),
            ("gen_ai.tool.call.result", out.as_str()),
        ];
        crate::extract::tests::sp(1, None, (0, 5), "execute_tool convert", &attrs)
    }

    fn status_and_message(s: crate::assemble::SpanRecord) -> (CallStatus, Option<String>) {
        let trace = crate::assemble::Trace::new(crate::assemble::TraceId([7; 16]), vec![s], 0);
        let calls = crate::extract::Extractor::default().extract(&trace);
        let c = calls.into_iter().next().expect("one call");
        (c.status, c.error_message)
    }

    #[test]
    fn an_mcp_error_result_fails_a_call_its_span_says_nothing_of() {
        let flagged =
            json!({"content": [{"type": "text", "text": "needs a dealer quote"}], "isError": true});
        let (status, message) = status_and_message(ok_with(&flagged));
        assert_eq!(status, CallStatus::Error);
        assert_eq!(message.as_deref(), Some("needs a dealer quote"));
        // Not flagged, flagged one level down, or an error object: the
        // span's word stands.
        for kept in [
            json!({"content": [{"type": "text", "text": "4500 PLN = 1040 EUR"}], "isError": false}),
            json!({"response": flagged.clone()}),
            json!({"error": "needs a dealer quote"}),
        ] {
            let (status, _) = status_and_message(ok_with(&kept));
            assert_eq!(status, CallStatus::Ok, "{kept}");
        }
    }

    #[test]
    fn a_message_of_its_own_stays() {
        let own = "harbour master refused";
        assert_eq!(message(failed(own)).as_deref(), Some(own));
    }
}
