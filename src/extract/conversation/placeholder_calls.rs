//! Tool spans named after the framework's tool class, not the tool
//! (docs/conventions.md, "Spans named after a wrapper's method"):
//! OpenLLMetry's LangChain.js instrumentation names every tool run
//! `execute_tool DynamicStructuredTool` and finds the tool's own name in the
//! `ToolMessage` the run returned; a tool a graph node invokes with bare
//! arguments returns no such message, so its call is left named after the
//! class (vocabulary `placeholder_tool_names`), with the arguments right.
//! The model asked for the call: a call so named, with no call id, takes
//! the name of the one tool the model asked for with exactly its arguments,
//! among the asked calls no call claims by id. The join then pairs it with
//! the model's call as any call of that tool.
//!
//! A call so named whose call id is none the model gave is an *attempt* of
//! a model call (`attempt_of`): OpenLIT's LangChain.js writes the
//! framework's run id (a uuid) on a run that failed and that a retry
//! middleware ran again under the model's id, with the same arguments. It
//! takes the name of the one model call asked for, before it started, with
//! exactly its arguments, claimed by another span or not: the function ran
//! twice for one ask, and each run is a call of that tool.

use std::collections::HashSet;

use super::{args_of, call_id, AskedAt, Positions};
use crate::assemble::Trace;
use crate::extract::placeholder_names::is_placeholder;
use crate::extract::{Analysis, ToolCall};

/// Whether `call` is named a placeholder and has no call id of its own.
fn is_unnamed(call: &ToolCall) -> bool {
    call.call_id.is_none() && call.from.is_none() && is_placeholder(&call.name)
}

/// Whether `call`, read from a span, is named a placeholder.
fn is_class_named(call: &ToolCall) -> bool {
    call.from.is_none() && is_placeholder(&call.name)
}

/// Names the placeholder-named calls of `out` after the asked calls with
/// their arguments (see the module's doc), noting each.
pub(super) fn name(trace: &Trace, asked: &[AskedAt], out: &mut Analysis) {
    // Most traces have no such call: nothing more is read for them.
    if !out.calls.iter().any(is_class_named) {
        return;
    }
    let index = Positions::of(trace);
    let span_of = |c: &ToolCall| index.get(c.span_id).map(|i| &trace.spans[i]);
    let claimed: HashSet<&str> = out
        .calls
        .iter()
        .filter_map(|c| c.call_id.as_deref())
        .collect();
    let mut named: Vec<(usize, String)> = Vec::new();
    for (k, call) in out.calls.iter().enumerate() {
        if !is_class_named(call) {
            continue;
        }
        let own_id = call.call_id.as_deref().or(span_of(call).and_then(call_id));
        if let Some(id) = own_id {
            // An attempt paused for approval is `pending`'s.
            if !crate::extract::pending::paused(call) {
                named.extend(attempt_of(trace, asked, call, id).map(|t| (k, t)));
            }
            continue;
        }
        if !is_unnamed(call) {
            continue;
        }
        let Some(args) = call.args.parsed().filter(|a| !a.is_null()) else {
            continue;
        };
        let mut tools = asked
            .iter()
            .map(|a| &a.asked)
            .filter(|a| a.id.as_deref().is_none_or(|id| !claimed.contains(id)))
            .filter(|a| !is_placeholder(&a.name) && args_of(&a.args).value() == Some(&*args))
            .map(|a| a.name.as_str());
        let Some(tool) = tools.next() else {
            continue;
        };
        // Two tools asked with these arguments: which ran is unknown.
        if tools.all(|t| t == tool) {
            named.push((k, tool.to_string()));
        }
    }
    for (k, tool) in named {
        let attempt =
            out.calls[k].call_id.is_some() || span_of(&out.calls[k]).and_then(call_id).is_some();
        let call = &mut out.calls[k];
        let placeholder = std::mem::replace(&mut call.name, tool);
        if call.span_name.is_none() {
            let own = span_of(call).map(|s| s.span.name().to_string());
            call.span_name = Some(own.unwrap_or(placeholder.clone()));
        }
        out.notes.push(match attempt {
            false => format!(
                "tool span {} names no tool (`{placeholder}`): the model asked for `{}` with its arguments, and for no other tool so",
                call.span_id, call.name
            ),
            true => format!(
                "tool span {} names no tool (`{placeholder}`) and carries a call id no model call has: it is a run of the one call the model asked for, before it, with its arguments, `{}` (counted: the function ran)",
                call.span_id, call.name
            ),
        });
    }
}

/// The tool of the one model call `call` (its span's call id `id`) is an
/// attempt of (see the module's doc): none when a model call has `id`
/// (the join pairs them), or when no model call, or more than one, asked
/// with exactly its arguments before it started.
fn attempt_of(trace: &Trace, asked: &[AskedAt], call: &ToolCall, id: &str) -> Option<String> {
    if asked.iter().any(|a| a.asked.id.as_deref() == Some(id)) {
        return None;
    }
    let args = call.args.parsed().filter(|a| !a.is_null())?;
    let before = |a: &AskedAt| {
        trace
            .spans
            .get(a.span)
            .is_some_and(|s| s.span.end_time_unix_nano <= call.start_time_unix_nano)
    };
    let mut fits = asked.iter().filter(|a| {
        !is_placeholder(&a.asked.name)
            && before(a)
            && args_of(&a.asked.args).value() == Some(&*args)
    });
    let one = fits.next()?;
    // `asked` holds each model call once (by id and tool): a second
    // fitting call leaves it unknown which one ran.
    fits.next().is_none().then(|| one.asked.name.clone())
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{SpanRecord, Trace, TraceId};
    use crate::extract::tests::sp;
    use crate::extract::{CallStatus, Extractor};

    /// A made-up vendor's model span: the request's messages and the reply.
    fn chat(id: u8, when: (u64, u64), input: Value, output: Value) -> crate::assemble::SpanRecord {
        crate::extract::test_support::genai_chat(id, when, "acme.chat", input, output)
    }

    /// A tool span named after the framework's tool class, with the call's
    /// arguments only; `failed`: status ERROR.
    fn wrapped(id: u8, when: (u64, u64), args: &Value, failed: bool) -> SpanRecord {
        let args = args.to_string();
        let attrs = [
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "StructuredTool"),
            ("gen_ai.tool.call.arguments", args.as_str()),
        ];
        let mut s = sp(id, Some(1), when, "run StructuredTool", &attrs);
        if failed {
            s.span.status = Some(opentelemetry_proto::tonic::trace::v1::Status {
                code: 2,
                message: "dock closed".into(),
            });
        }
        s
    }

    fn asks(calls: &[(&str, &str, &Value)]) -> Value {
        let parts: Vec<Value> = calls
            .iter()
            .map(|(id, name, args)| json!({"type": "tool_call", "id": id, "name": name, "arguments": args}))
            .collect();
        json!([{"role": "assistant", "parts": parts}])
    }

    #[test]
    fn a_call_named_after_the_tool_class_takes_the_asked_tool_with_its_arguments() {
        let user = json!([{"role": "user", "parts": [{"type": "text", "content": "plan"}]}]);
        let (oslo, kayak, none) = (json!({"town": "Oslo"}), json!({"hours": 3}), json!({}));
        let spans = vec![
            sp(1, None, (0, 100), "acme run", &[]),
            chat(
                2,
                (1, 10),
                user,
                asks(&[
                    ("k1", "find_room", &oslo),
                    ("k2", "rent_kayak", &kayak),
                    ("k3", "get_time", &none),
                ]),
            ),
            wrapped(3, (11, 12), &oslo, false),
            wrapped(4, (13, 14), &kayak, true),
            wrapped(5, (15, 16), &none, false),
            // Arguments no asked call has: the call keeps its name.
            wrapped(6, (17, 18), &json!({"hours": 4}), false),
        ];
        let out = Extractor::default().analyze(&Trace::new(TraceId([7; 16]), spans, 0));
        let got: Vec<(&str, Option<&str>, CallStatus)> = out
            .calls
            .iter()
            .map(|c| (c.name.as_str(), c.span_name.as_deref(), c.status.clone()))
            .collect();
        let wrapper = Some("run StructuredTool");
        assert_eq!(
            got,
            [
                ("find_room", wrapper, CallStatus::Ok),
                ("rent_kayak", wrapper, CallStatus::Error),
                ("get_time", wrapper, CallStatus::Ok),
                ("StructuredTool", None, CallStatus::Ok),
            ],
            "{:?}",
            out.notes
        );
        assert!(out.notes.iter().any(|n| n.contains("names no tool")));
    }

    /// [`wrapped`] with call id `call_id` on the span.
    fn with_id(id: u8, when: (u64, u64), args: &Value, failed: bool, call_id: &str) -> SpanRecord {
        let args = args.to_string();
        let attrs = [
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "StructuredTool"),
            ("gen_ai.tool.call.arguments", args.as_str()),
            ("gen_ai.tool.call.id", call_id),
        ];
        let mut s = sp(id, Some(1), when, "run StructuredTool", &attrs);
        if failed {
            s.span.status = Some(opentelemetry_proto::tonic::trace::v1::Status {
                code: 2,
                message: "dock closed".into(),
            });
        }
        s
    }

    #[test]
    fn a_run_under_an_id_no_model_call_has_is_a_run_of_the_call_with_its_arguments() {
        let (oslo, kayak) = (json!({"town": "Oslo"}), json!({"hours": 3}));
        let read = |asked: &[(&str, &str, &Value)], failed: SpanRecord| {
            let spans = vec![
                sp(1, None, (0, 100), "acme run", &[]),
                chat(2, (1, 10), json!([]), asks(asked)),
                failed,
                with_id(4, (15, 16), &oslo, false, "k1"),
            ];
            let out = Extractor::default().analyze(&Trace::new(TraceId([9; 16]), spans, 0));
            let got: Vec<(String, CallStatus)> = out
                .calls
                .iter()
                .map(|c| (c.name.clone(), c.status.clone()))
                .collect();
            (got, out.notes)
        };
        let run_id = "0f1e2d3c-0000-7000-8000-00000000abcd";
        let one = [("k1", "find_room", &oslo), ("k2", "rent_kayak", &kayak)];
        let (got, notes) = read(&one, with_id(3, (11, 12), &oslo, true, run_id));
        assert_eq!(
            got,
            [
                ("find_room".to_string(), CallStatus::Error),
                ("find_room".to_string(), CallStatus::Ok)
            ],
            "{notes:?}"
        );
        assert!(notes.iter().any(|n| n.contains("no model call has")));
        // Two model calls with its arguments, or a run before the asking:
        // this reader leaves it (the join may still pair it with the call
        // left unclaimed, k2 here).
        let two = [("k1", "find_room", &oslo), ("k2", "find_hall", &oslo)];
        let (_, notes) = read(&two, with_id(3, (11, 12), &oslo, true, run_id));
        assert!(
            notes.iter().all(|n| !n.contains("no model call has")),
            "{notes:?}"
        );
        let (got, notes) = read(&one, with_id(3, (5, 12), &oslo, true, run_id));
        assert!(
            notes.iter().all(|n| !n.contains("no model call has")),
            "{notes:?}"
        );
        assert_eq!(got[0].0, "StructuredTool");
    }

    #[test]
    fn arguments_two_tools_were_asked_with_leave_the_name() {
        let same = json!({"id": 7});
        let spans = vec![
            sp(1, None, (0, 100), "acme run", &[]),
            chat(
                2,
                (1, 10),
                json!([]),
                asks(&[("k1", "cancel_room", &same), ("k2", "cancel_kayak", &same)]),
            ),
            wrapped(3, (11, 12), &same, false),
        ];
        let out = Extractor::default().analyze(&Trace::new(TraceId([8; 16]), spans, 0));
        // (The join may still pair the one span with the one call it is
        // left with; this reader does not choose.)
        assert!(
            out.notes.iter().all(|n| !n.contains("names no tool")),
            "{:?}",
            out.notes
        );
    }
}
