//! A tool span with a call id and no arguments, whose call no model output
//! in the trace records, takes the arguments the model gave that call as a
//! later request's history records it (docs/conventions.md, "The
//! conversation witness", "Arguments from a request's history").
//!
//! The call-id join ([`super::join`]) reads the model's outputs only. Some
//! agents record one model span per run instead of one per model call (ADK
//! 2.x under OpenInference: one `invoke_agent` span whose request holds
//! the whole exchange), so a call asked for by an earlier turn is in that
//! request's history only. A writer that leaves out an empty argument
//! object leaves it out of the tool span (no `input.value`) and of its
//! flattened messages (a `tool_call` with an id and a name and no
//! `function.arguments`), while the raw request it also records keeps the
//! model's own `"args": {}`. Every form of each request is read here, not
//! only the one [`super::request_of`] keeps for results (that choice counts
//! answered ids, and the forms tie when the flattened one is whole): the
//! call under the span's call id, of the same tool, with arguments
//! recorded, gives them. A form that records no arguments for it gives
//! nothing (absent arguments stay unknown), and records of one id that
//! disagree give nothing.

use serde_json::Value;

use super::{args_of, call_id, each_form, has_any_input, output_exchange, Look, Positions};
use crate::assemble::Trace;
use crate::extract::{Analysis, CallArgs, ToolCall};

/// The call id of `call` (its own, else its span's) when it has no
/// arguments.
fn lacking_id<'a>(trace: &'a Trace, index: &Positions<'_>, call: &'a ToolCall) -> Option<&'a str> {
    if !matches!(call.args, CallArgs::None) {
        return None;
    }
    call.call_id.as_deref().or_else(|| {
        index
            .get(call.span_id)
            .and_then(|i| call_id(&trace.spans[i]))
    })
}

/// What the requests' histories record of one call id for one tool: the
/// arguments, or `Conflict` when two records disagree.
#[derive(Debug, Clone, PartialEq)]
enum Found {
    Args(Value),
    Conflict,
}

/// Fills the calls of `out` that have a call id and no arguments from the
/// records of that call in the trace's requests (see the module's doc).
pub(super) fn fill(trace: &Trace, out: &mut Analysis) {
    // Most calls have arguments: nothing is read for them.
    if !out.calls.iter().any(|c| matches!(c.args, CallArgs::None)) {
        return;
    }
    let index = Positions::of(trace);
    let wanted: Vec<(usize, String, String)> = out
        .calls
        .iter()
        .enumerate()
        .filter_map(|(c, call)| {
            let id = lacking_id(trace, &index, call)?;
            Some((c, id.to_string(), call.name.clone()))
        })
        .collect();
    if wanted.is_empty() {
        return;
    }
    let mut found: Vec<Option<Found>> = vec![None; wanted.len()];
    for s in trace.spans.iter().filter(|s| has_any_input(s)) {
        let mut visit = |r: super::Request| {
            for a in r.history.iter().chain(&r.last_turn) {
                if a.args.is_null() {
                    continue;
                }
                let Some(id) = a.id.as_deref() else {
                    continue;
                };
                let name = crate::extract::tool_name::normalized(&a.name);
                for (k, (_, want_id, want_name)) in wanted.iter().enumerate() {
                    if want_id != id || want_name != name {
                        continue;
                    }
                    found[k] = match found[k].take() {
                        None => Some(Found::Args(a.args.clone())),
                        Some(Found::Args(v)) if v == a.args => Some(Found::Args(v)),
                        Some(_) => Some(Found::Conflict),
                    };
                }
            }
        };
        let look = Look::of_input(s);
        if look.may_input(s) {
            each_form(s, look, &mut visit);
        } else if let Some(r) = output_exchange::request(s, look) {
            visit(r);
        }
    }
    for ((c, id, _), f) in wanted.iter().zip(found) {
        let Some(Found::Args(v)) = f else {
            continue;
        };
        let call = &mut out.calls[*c];
        call.args = args_of(&v);
        out.notes.push(format!(
            "tool span {} records no arguments for `{}`: they are those the model gave call id {} in a model request's history",
            call.span_id, call.name, id
        ));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{SpanRecord, Trace, TraceId};
    use crate::extract::tests::sp;
    use crate::extract::{CallArgs, Extractor};

    /// A tool span of `name` under call id `id`, with a result and no
    /// arguments (as OpenInference writes a call made with `{}`).
    fn tool(n: u8, when: (u64, u64), name: &str, id: &str) -> SpanRecord {
        let output = json!({"id": id, "name": name, "response": {"result": 3}}).to_string();
        let attrs = [
            ("openinference.span.kind", "TOOL"),
            ("tool.name", name),
            ("tool.id", id),
            ("gen_ai.tool.call.id", id),
            ("output.value", output.as_str()),
        ];
        sp(n, Some(1), when, &format!("execute_tool {name}"), &attrs)
    }

    /// One model span for the whole run: a Gemini request in `input.value`
    /// (`raw`, when given) and the same messages flattened (the no-argument
    /// call without `function.arguments`), its reply text only.
    fn run_span(n: u8, when: (u64, u64), raw: Option<Value>, flat: &[(&str, &str)]) -> SpanRecord {
        let raw = raw.map(|v| v.to_string());
        let mut attrs: Vec<(&str, &str)> = vec![
            ("openinference.span.kind", "LLM"),
            ("llm.output_messages.0.message.role", "model"),
            ("llm.output_messages.0.message.content", "done"),
        ];
        if let Some(raw) = raw.as_deref() {
            attrs.push(("input.value", raw));
        }
        attrs.extend_from_slice(flat);
        sp(n, Some(1), when, "invoke_agent desk", &attrs)
    }

    const FLAT: [(&str, &str); 7] = [
        ("llm.input_messages.0.message.role", "user"),
        ("llm.input_messages.0.message.content", "how full?"),
        ("llm.input_messages.1.message.role", "model"),
        (
            "llm.input_messages.1.message.tool_calls.0.tool_call.id",
            "k-7",
        ),
        (
            "llm.input_messages.1.message.tool_calls.0.tool_call.function.name",
            "shelf_count",
        ),
        ("llm.input_messages.2.message.role", "tool"),
        ("llm.input_messages.2.message.tool_call_id", "k-7"),
    ];

    fn gemini(id: &str, name: &str, args: Value) -> Value {
        json!({"contents": [
            {"role": "user", "parts": [{"text": "how full?"}]},
            {"role": "model", "parts": [{"function_call": {"id": id, "args": args, "name": name}}]},
            {"role": "user", "parts": [{"function_response": {"id": id, "name": name, "response": {"result": 3}}}]}
        ]})
    }

    fn read(raw: Option<Value>, tool_name: &str, tool_id: &str) -> CallArgs {
        let spans = vec![
            sp(1, None, (0, 100), "agent_run [desk]", &[]),
            tool(2, (10, 20), tool_name, tool_id),
            run_span(3, (5, 90), raw, &FLAT),
        ];
        let out = Extractor::default().analyze(&Trace::new(TraceId([4; 16]), spans, 0));
        assert_eq!(out.calls.len(), 1, "{:?}", out.calls);
        out.calls[0].args.clone()
    }

    #[test]
    fn the_raw_request_gives_a_call_the_flattened_history_keeps_without_arguments() {
        let got = read(
            Some(gemini("k-7", "shelf_count", json!({}))),
            "shelf_count",
            "k-7",
        );
        assert_eq!(got, CallArgs::Value(json!({})));
        let got = read(
            Some(gemini("k-7", "shelf_count", json!({"aisle": 4}))),
            "shelf_count",
            "k-7",
        );
        assert_eq!(got, CallArgs::Value(json!({"aisle": 4})));
    }

    #[test]
    fn without_a_record_of_the_arguments_they_stay_unknown() {
        // Only the flattened form, which leaves the arguments out.
        assert_eq!(read(None, "shelf_count", "k-7"), CallArgs::None);
        // The id is another call's, or another tool's.
        let raw = || Some(gemini("k-7", "shelf_count", json!({})));
        assert_eq!(read(raw(), "shelf_count", "k-8"), CallArgs::None);
        assert_eq!(read(raw(), "bin_count", "k-7"), CallArgs::None);
    }

    #[test]
    fn records_of_one_call_that_disagree_give_nothing() {
        let mut raw = gemini("k-7", "shelf_count", json!({}));
        let again = json!({"role": "model", "parts": [{"function_call": {"id": "k-7", "args": {"aisle": 2}, "name": "shelf_count"}}]});
        if let Some(list) = raw["contents"].as_array_mut() {
            list.push(again);
        }
        assert_eq!(read(Some(raw), "shelf_count", "k-7"), CallArgs::None);
    }
}
