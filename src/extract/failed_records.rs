//! A call its tool span shows as run that a record of the run says failed
//! (docs/conventions.md, "Call records in a runtime's messages").
//!
//! AutoGen AgentChat catches a tool's exception and hands its text to the
//! model as the result: OpenInference's tool span for it is OK, the text
//! its output, and the failure is marked only in AutoGen's
//! `FunctionExecutionResult` record (`{"content", "name", "call_id",
//! "is_error": true}`), in the team run's output (a
//! `ToolCallExecutionEvent`) and, when the model is asked again, in the
//! next request. The same list of records holds the model's requests
//! (`{"id", "name", "arguments"}`). A call read OK from a span of the trace
//! is failed, with the record's content as its message, when exactly one
//! failed record is of it: the record's call id is the call's, or (the
//! span naming no call id) the record's request names the call's tool
//! with equal arguments. Its result stays. Arguments, not the result, make
//! the join: a call's status is the same whether results are read or not.
//! Only the tool span's ancestors are read for records (the team run holds
//! them all), not every span of the trace.

use std::collections::HashMap;

use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde_json::Value;

use super::open::Witnessed;
use super::{CallStatus, ToolCall};
use crate::assemble::Trace;
use crate::value::json_eq;

/// Fails the calls of `calls` (of `trace`) that a failed record in the
/// trace's spans is of; see the module's doc.
pub(crate) fn settle(trace: &Trace, calls: &mut [ToolCall]) {
    if !calls.iter().any(|c| c.status == CallStatus::Ok) {
        return;
    }
    let (asked, failed) = records(trace, &holders(trace, calls));
    for (id, record) in &failed {
        let asked = asked.get(id);
        let of_record = |c: &ToolCall| {
            c.status == CallStatus::Ok
                && c.from.is_none()
                && record.name.as_deref().is_none_or(|n| n == c.name)
                && match c.call_id.as_deref() {
                    Some(own) => own == id,
                    None => asked.is_some_and(|a| same_ask(a, c)),
                }
        };
        let mut found = calls.iter().enumerate().filter(|(_, c)| of_record(c));
        let (Some((at, _)), None) = (found.next(), found.next()) else {
            continue;
        };
        let call = &mut calls[at];
        call.status = CallStatus::Error;
        call.error_message = record.result.as_ref().map(|v| match v {
            Value::String(t) => t.clone(),
            other => other.to_string(),
        });
    }
}

/// Whether `c` is the call `asked` requested: same tool, equal arguments.
fn same_ask(asked: &Witnessed, c: &ToolCall) -> bool {
    asked.name.as_deref() == Some(c.name.as_str())
        && match (asked.args.as_ref(), c.args.parsed()) {
            (Some(a), Some(b)) => json_eq(a, &b),
            _ => false,
        }
}

/// The spans that may hold a record of a call of `calls` read OK from a
/// span: that span's ancestors (a team's run records its members' calls
/// in its output), in trace order. Only these are read: every string of
/// every span would cost a look at each byte of the trace.
fn holders(trace: &Trace, calls: &[ToolCall]) -> Vec<usize> {
    let at = trace.positions();
    let mut seen = vec![false; trace.spans.len()];
    let ok = calls
        .iter()
        .filter(|c| c.status == CallStatus::Ok && c.from.is_none());
    for i in ok.filter_map(|c| at.get(c.span_id)) {
        // A walk stops at a span seen: its ancestors are in already, so a
        // deep chain of calls is read in linear time.
        for a in trace.ancestors(i) {
            if std::mem::replace(&mut seen[a], true) {
                break;
            }
        }
    }
    (0..seen.len()).filter(|&i| seen[i]).collect()
}

/// The requests (`{"id", "name", "arguments"}`) and the failed result
/// records of the spans `at` of the trace, each by call id (a record
/// repeats in several spans and several events of one list).
fn records(
    trace: &Trace,
    at: &[usize],
) -> (HashMap<String, Witnessed>, HashMap<String, Witnessed>) {
    let mut asked = HashMap::new();
    let mut failed = HashMap::new();
    for s in at.iter().filter_map(|&i| trace.spans.get(i)) {
        for (_, value) in s.span.attributes() {
            let Some(text) = value.and_then(|v| v.as_str()) else {
                continue;
            };
            if !flags_a_failure(text) {
                continue;
            }
            let Ok(v) = serde_json::from_str::<Value>(text) else {
                continue;
            };
            for w in super::witness_records::in_lists(&v) {
                if w.args.is_some() {
                    asked.insert(w.id.clone(), w);
                } else if w.error {
                    failed.insert(w.id.clone(), w);
                }
            }
        }
    }
    (asked, failed)
}

/// Whether `text` may hold a failed result record (a cheap look first:
/// every string attribute of a trace passes here, so the finder is built
/// once).
fn flags_a_failure(text: &str) -> bool {
    static KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"is_error\""));
    let b = text.as_bytes();
    KEY.find_iter(b).any(|at| {
        let rest = b[at + KEY.needle().len()..].trim_ascii_start();
        rest.strip_prefix(b":")
            .is_some_and(|v| v.trim_ascii_start().starts_with(b"true"))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::flags_a_failure;
    use crate::extract::tests::sp;

    /// A made-up team run's output: a request for `ring_bell` and its
    /// result record, failed or not.
    fn run_output(failed: bool) -> String {
        json!({"messages": [
            {"type": "ToolCallRequestEvent", "content": [
                {"id": "k-1", "name": "ring_bell", "arguments": "{\"tower\": \"North\"}"}]},
            {"type": "ToolCallExecutionEvent", "content": [
                {"content": "rope snapped", "name": "ring_bell", "call_id": "k-1", "is_error": failed}]}
        ]})
        .to_string()
    }

    fn tool(id: u8, args: &str) -> crate::assemble::SpanRecord {
        let attrs = [
            ("acme.span.kind", "TOOL"),
            ("acme.input", args),
            ("acme.output", "rope snapped"),
        ];
        sp(id, Some(9), (10, 20), "ring_bell", &attrs)
    }

    fn read(spans: Vec<crate::assemble::SpanRecord>) -> Vec<(String, String, Option<String>)> {
        let trace = crate::assemble::Trace::new(crate::assemble::TraceId([7; 16]), spans, 0);
        crate::extract::Extractor::default()
            .extract(&trace)
            .iter()
            .map(|c| {
                (
                    c.name.clone(),
                    format!("{:?}", c.status),
                    c.error_message.clone(),
                )
            })
            .collect()
    }

    #[test]
    fn a_failed_record_of_the_run_fails_the_span_s_call() {
        let out = run_output(true);
        let run = sp(9, None, (0, 30), "Team.run", &[("acme.output", &out)]);
        let got = read(vec![run, tool(1, r#"{"tower": "North"}"#)]);
        let want = (
            "ring_bell".to_string(),
            "Error".to_string(),
            Some("rope snapped".to_string()),
        );
        assert_eq!(got, [want]);
    }

    #[test]
    fn a_record_of_success_or_of_other_arguments_changes_nothing() {
        let ok = run_output(false);
        let run = sp(9, None, (0, 30), "Team.run", &[("acme.output", &ok)]);
        let got = read(vec![run, tool(1, r#"{"tower": "North"}"#)]);
        assert_eq!(got[0].1, "Ok");
        // Failed, but its request asked for another tower: not this call.
        let failed = run_output(true);
        let run = sp(9, None, (0, 30), "Team.run", &[("acme.output", &failed)]);
        let got = read(vec![run, tool(1, r#"{"tower": "South"}"#)]);
        assert_eq!(got[0].1, "Ok");
    }

    #[test]
    fn the_cheap_look_takes_a_true_flag_only() {
        for text in [
            r#"{"is_error": true}"#,
            r#"{"is_error":true}"#,
            r#"{"is_error" :  true, "x": 1}"#,
            r#"{"is_error": false, "y": {"is_error": true}}"#,
        ] {
            assert!(flags_a_failure(text), "{text}");
        }
        for text in [
            r#"{"is_error": false}"#,
            r#"{"is_error": "true"}"#,
            r#"is_error: true"#,
            r#"{"is_error""#,
        ] {
            assert!(!flags_a_failure(text), "{text}");
        }
    }
}
