//! A framework's outcome record on the bare output key of a span its
//! instrumentation marks as that framework's own tool span
//! (docs/conventions.md, "Framework frames").
//!
//! Netra's Agno instrumentation writes Agno's `FunctionExecutionResult`
//! (`extract::outcome_record`) as the tool span's `output`, its `None`
//! fields dropped: `{"status": "failure", "error": "<the raised text>"}`
//! for a call that raised (span status OK), `{"status": "success",
//! "result": <value>}` otherwise. The span is `gen_ai.tool.name` without an
//! operation name (rule `otel-genai-no-operation`), whose sources hold no
//! bare `output`: the failure was lost and the result came from the next
//! model request. The three lists of `[vocabulary]` say where such a
//! record is: `framework_record_marks`, the keys whose value names the
//! framework (`gen_ai.system = agno`); `framework_record_frameworks`, the
//! frameworks whose record `outcome_record` declares; and
//! `framework_record_outputs`, the keys holding it. On such a span a call
//! that has no result, or whose result its rule read from one of those
//! keys, reads as the record says (`outcome_record::on_marked_span` decides
//! the shape: the record's `str()`, its dump, or its dump with the `None`
//! fields dropped): a failure is a failed call with the record's error as
//! its message; a success gives its value. The mark is what tells a
//! dropped-`None` record from a tool's own `{"status", "error"}` dict,
//! which stays a result on any span without it (and, with it, sits in the
//! record's `result`). Any other text on such a span is left alone. A
//! marked span's record is read even when results are not (the value is
//! then dropped): the call fails alike whatever the output format.

use super::rules::{builtin_list, Field, Source};
use super::ToolCall;
use crate::assemble::SpanRecord;

/// Reads call `call` of span `s` (its rule's result, if any, from `from`)
/// as the framework's record on `s` says; see the module's doc.
pub(crate) fn mark(from: Option<&Source>, s: &SpanRecord, call: &mut ToolCall) {
    let outputs = builtin_list("framework_record_outputs");
    // A result read from another key is the rule's: left alone.
    let read_here = |src: &Source| matches!(&src.field, Field::Attr(k) if outputs.contains(k));
    if call.result.is_some() && !from.is_some_and(read_here) {
        return;
    }
    if !marked(s) {
        return;
    }
    let Some(said) = outputs
        .iter()
        .filter_map(|k| s.attr_str(k))
        .find_map(super::outcome_record::on_marked_span)
    else {
        return;
    };
    super::outcome_record::apply(call, said);
}

/// Whether span `s` carries a framework's mark (`framework_record_marks`
/// naming one of `framework_record_frameworks`): one attribute looked up
/// per key. The extractor asks it before a result it would otherwise skip
/// (results off), so the record's status is read whatever the output.
pub(crate) fn marked(s: &SpanRecord) -> bool {
    let frameworks = builtin_list("framework_record_frameworks");
    builtin_list("framework_record_marks").iter().any(|k| {
        s.attr_str(k)
            .is_some_and(|v| frameworks.iter().any(|f| f == v))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{Trace, TraceId};
    use crate::extract::{CallResult, CallStatus, Extractor, ToolCall};

    /// The call read from a GenAI tool span without an operation name
    /// whose `output` is `output`, beside the attributes `more`.
    fn call(output: &str, more: &[(&'static str, &'static str)]) -> ToolCall {
        call_with(Extractor::default(), output, more)
    }

    /// [`call`] read by `extractor`.
    fn call_with(
        extractor: Extractor,
        output: &str,
        more: &[(&'static str, &'static str)],
    ) -> ToolCall {
        let mut attrs = vec![
            ("gen_ai.tool.name", "weigh_crate"),
            ("gen_ai.tool.call_id", "call_w1"),
            ("input", r#"{"crate": 12}"#),
            ("output", output),
        ];
        attrs.extend_from_slice(more);
        let s = crate::extract::tests::sp(1, None, (0, 5), "weigh_crate", &attrs);
        let t = Trace::new(TraceId([9; 16]), vec![s], 0);
        let a = extractor.analyze(&t);
        a.calls.into_iter().next().expect("one call")
    }

    const MARK: [(&str, &str); 2] = [("gen_ai.system", "agno"), ("gen_ai.entity", "tool")];

    fn result(c: &ToolCall) -> Option<Value> {
        c.result.as_ref().map(CallResult::to_value)
    }

    #[test]
    fn a_failed_record_with_its_none_fields_dropped_is_a_failed_call() {
        let c = call(
            r#"{"status": "failure", "error": "crate 12 is over the scale's limit"}"#,
            &MARK,
        );
        assert_eq!(
            (c.status.clone(), c.error_message.as_deref(), result(&c)),
            (
                CallStatus::Error,
                Some("crate 12 is over the scale's limit"),
                None
            )
        );
        // The record's `str()` and its whole dump read the same there.
        let c = call(
            "status='failure' result=None error='scale offline' images=None",
            &MARK,
        );
        assert_eq!(c.error_message.as_deref(), Some("scale offline"));
    }

    #[test]
    fn with_results_off_the_record_s_failure_is_read_and_its_value_dropped() {
        // Results are off unless a judge or JSONL output needs them: the
        // call's status must not depend on the output format.
        let off = || Extractor::default().with_results(false);
        let c = call_with(
            off(),
            r#"{"status": "failure", "error": "no crate 12"}"#,
            &MARK,
        );
        assert_eq!(
            (c.status.clone(), c.error_message.as_deref(), result(&c)),
            (CallStatus::Error, Some("no crate 12"), None)
        );
        let c = call_with(off(), r#"{"status": "success", "result": 41.5}"#, &MARK);
        assert_eq!((c.status.clone(), result(&c)), (CallStatus::Ok, None));
        // Without the mark, nothing is read either way.
        let c = call_with(off(), r#"{"status": "failure", "error": "x"}"#, &[]);
        assert_eq!(c.status, CallStatus::Ok);
    }

    #[test]
    fn a_record_of_success_gives_its_value() {
        let c = call(r#"{"status": "success", "result": {"kg": 41.5}}"#, &MARK);
        assert_eq!(
            (c.status.clone(), result(&c)),
            (CallStatus::Ok, Some(json!({"kg": 41.5})))
        );
        let c = call(r#"{"status": "success", "result": "41.5 kg"}"#, &MARK);
        assert_eq!(result(&c), Some(json!("41.5 kg")));
    }

    #[test]
    fn near_misses_stay() {
        let own = r#"{"status": "failure", "error": "crate 12 is over the scale's limit"}"#;
        // A tool's own dict of the record's words on a span no framework
        // marks, or one another framework marks: no result read from it
        // (no rule reads a bare `output` there), and the call not failed.
        for more in [&[][..], &[("gen_ai.system", "openai")][..]] {
            let c = call(own, more);
            assert_eq!(
                (c.status.clone(), result(&c)),
                (CallStatus::Ok, None),
                "{more:?}"
            );
        }
        // With the mark: a key outside the record, no status, a failure
        // without error text, text that is no record.
        for kept in [
            r#"{"status": "failure", "error": "x", "crate": 12}"#,
            r#"{"error": "crate 12 is over the scale's limit"}"#,
            r#"{"status": "failure"}"#,
            r#"{"status": "failure", "result": "half", "error": "x"}"#,
            "41.5 kg",
        ] {
            let c = call(kept, &MARK);
            assert_eq!(
                (c.status.clone(), result(&c)),
                (CallStatus::Ok, None),
                "{kept}"
            );
        }
    }

    #[test]
    fn a_tool_s_own_failure_dict_on_another_rule_s_span_is_its_result() {
        // Netra's own tool span (`netra.span.type = TOOL`, rule
        // `tool-kind`): a tool returning the record's words is a result.
        let own = r#"{"status": "failure", "error": "crate 12 is over the scale's limit"}"#;
        let attrs = [
            ("netra.span.type", "TOOL"),
            ("input", r#"{"crate": 12}"#),
            ("output", own),
        ];
        let s = crate::extract::tests::sp(1, None, (0, 5), "weigh_crate", &attrs);
        let t = Trace::new(TraceId([9; 16]), vec![s], 0);
        let c = Extractor::default().analyze(&t).calls.remove(0);
        assert_eq!(c.status, CallStatus::Ok);
        assert_eq!(result(&c), Some(serde_json::from_str(own).expect("JSON")));
    }
}
