//! Tool spans with only a tool's name, filled from the conversation's
//! record of the call (docs/conventions.md, "The conversation witness",
//! "Hollow tool spans").
//!
//! Some instrumentations write a span per tool run with the tool's name and
//! nothing else (Overmind's fork of OpenLLMetry's openai-agents
//! instrumentation: `find_hotel.tool`, no arguments, result or call id),
//! while a later model request's history holds the call whole: an
//! assistant message's tool call (id, name, arguments) answered by a tool
//! message under that id. Such a span's call takes the arguments, result
//! and call id of that record: the trace's calls and the history's
//! answered calls are paired by name in order, one record per call (a
//! call whose span has a call id takes the record under that id).

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::Value;

use super::{args_of, call_id, has_any_input, request_of, Answer, Positions};
use crate::assemble::Trace;
use crate::extract::{Analysis, CallArgs, CallResult, CallStatus, Extractor, ToolCall};

/// A call the history records whole: asked with arguments, answered.
struct Record {
    id: String,
    name: String,
    args: Value,
    result: Option<Value>,
}

/// Whether `call` lacks a result and holds no more than its tool's name
/// and, perhaps, arguments (its span's call id asked apart).
fn is_bare(call: &ToolCall) -> bool {
    call.result.is_none()
        && call.status == CallStatus::Ok
        && call.call_id.is_none()
        && call.from.is_none()
}

/// The answered calls of the trace's requests' histories, once per call id,
/// in the order the requests (by start) first show them.
fn records(trace: &Trace) -> Vec<Record> {
    let mut order: Vec<usize> = (0..trace.spans.len())
        .filter(|&i| has_any_input(&trace.spans[i]))
        .collect();
    order.sort_by_key(|&i| (trace.spans[i].span.start_time_unix_nano, i));
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    for i in order {
        let r = request_of(&trace.spans[i]);
        // A request may answer thousands of calls: its answers by id, once.
        let mut answers: HashMap<&str, &Answer> = HashMap::new();
        for x in &r.answers {
            if let Some(id) = x.id.as_deref() {
                answers.entry(id).or_insert(x);
            }
        }
        for a in r.history.iter().chain(&r.last_turn) {
            let Some(id) = a.id.as_deref() else {
                continue;
            };
            if a.args.is_null() || seen.contains(id) {
                continue;
            }
            let Some(answer) = answers.get(id) else {
                continue;
            };
            seen.insert(id.to_string());
            out.push(Record {
                id: id.to_string(),
                name: a.name.clone(),
                args: a.args.clone(),
                result: answer.content.clone(),
            });
        }
    }
    out
}

/// Fills the bare calls of `out` from the history's records (see the
/// module's doc), noting each.
pub(super) fn fill(x: &Extractor, trace: &Trace, out: &mut Analysis) {
    // Most traces have no bare call: nothing is read for them.
    if !out.calls.iter().any(is_bare) {
        return;
    }
    let index = Positions::of(trace);
    let span_id = |c: &ToolCall| {
        index
            .get(c.span_id)
            .and_then(|i| call_id(&trace.spans[i]))
            .map(str::to_string)
    };
    let bare: Vec<bool> = out
        .calls
        .iter()
        .map(|c| is_bare(c) && span_id(c).is_none())
        .collect();
    if !bare.contains(&true) {
        return;
    }
    let records = records(trace);
    if records.is_empty() {
        return;
    }
    let mut by_name: HashMap<&str, VecDeque<usize>> = HashMap::new();
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    for (k, r) in records.iter().enumerate() {
        by_name.entry(r.name.as_str()).or_default().push_back(k);
        by_id.insert(r.id.as_str(), k);
    }
    let mut used = vec![false; records.len()];
    // The calls with a call id take their records first.
    for call in &out.calls {
        let id = call.call_id.clone().or_else(|| span_id(call));
        if let Some(&k) = id.as_deref().and_then(|id| by_id.get(id)) {
            used[k] = true;
        }
    }
    for (call, bare) in out.calls.iter_mut().zip(bare) {
        if call.call_id.is_some() || span_id(call).is_some() {
            continue;
        }
        let Some(queue) = by_name.get_mut(call.name.as_str()) else {
            continue;
        };
        while queue.front().is_some_and(|&k| used[k]) {
            queue.pop_front();
        }
        // Every call of the tool takes its record in order; the bare ones
        // are filled from it.
        let Some(k) = queue.pop_front() else {
            continue;
        };
        used[k] = true;
        if !bare {
            continue;
        }
        let r = &records[k];
        // Arguments already read (another mechanism may have borrowed them
        // from the same history) must be the record's.
        match &call.args {
            CallArgs::None | CallArgs::Value(Value::Null) => call.args = args_of(&r.args),
            other => {
                let value = match other {
                    CallArgs::Text(t) => serde_json::from_str(t).ok(),
                    v => v.value().cloned(),
                };
                if value.as_ref() != args_of(&r.args).value() {
                    continue;
                }
            }
        }
        if x.results {
            call.result = r.result.as_ref().map(|c| {
                CallResult::Value(match c {
                    Value::String(t) => crate::extract::source::parse_json_or_literal(t),
                    other => other.clone(),
                })
            });
        }
        call.call_id = Some(r.id.clone());
        out.notes.push(format!(
            "tool span {} records no result or call id for `{}`: its arguments and result are those of call id {} in a later model request's history (paired by name, in order)",
            call.span_id, call.name, r.id
        ));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{SpanRecord, Trace, TraceId};
    use crate::extract::tests::sp;
    use crate::extract::{CallArgs, CallResult, Extractor};

    /// A made-up vendor's model span: its request's messages only (the
    /// reply not recorded).
    fn chat(id: u8, when: (u64, u64), input: Value) -> SpanRecord {
        let input = input.to_string();
        let attrs = [
            ("gen_ai.operation.name", "chat"),
            ("acme.vendor", "acme"),
            ("gen_ai.input.messages", input.as_str()),
        ];
        sp(id, Some(1), when, "acme.response", &attrs)
    }

    /// A tool span with the tool's name and nothing else.
    fn tool(id: u8, when: (u64, u64), name: &str) -> SpanRecord {
        let attrs = [
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", name),
        ];
        sp(id, Some(1), when, &format!("{name}.acme_tool"), &attrs)
    }

    fn asks(calls: &[(&str, &str, Value)]) -> Value {
        let parts: Vec<Value> = calls
            .iter()
            .map(|(id, name, args)| json!({"type": "tool_call", "id": id, "name": name, "arguments": args}))
            .collect();
        json!({"role": "assistant", "parts": parts})
    }

    fn answers(id: &str, result: &str) -> Value {
        json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": id, "response": result}]})
    }

    #[test]
    fn bare_tool_spans_take_the_history_records_by_name_in_order() {
        let user = json!({"role": "user", "parts": [{"type": "text", "content": "plan"}]});
        let history = json!([
            user,
            asks(&[
                ("k1", "find_room", json!({"town": "Oslo"})),
                ("k2", "find_room", json!({"town": "Bergen"})),
                ("k3", "rent_kayak", json!({"hours": 3})),
            ]),
            answers("k1", "{'room': 'Fjord Inn', 'beds': 2}"),
            answers("k2", "full"),
            answers("k3", "rented"),
        ]);
        let spans = vec![
            sp(1, None, (0, 100), "acme run", &[]),
            chat(2, (1, 10), json!([user])),
            tool(3, (11, 12), "find_room"),
            tool(4, (13, 14), "find_room"),
            tool(5, (15, 16), "rent_kayak"),
            chat(6, (20, 30), history),
        ];
        let out = Extractor::default().analyze(&Trace::new(TraceId([5; 16]), spans, 0));
        let got: Vec<(&str, Option<&Value>, Option<&CallResult>)> = out
            .calls
            .iter()
            .map(|c| (c.name.as_str(), c.args.value(), c.result.as_ref()))
            .collect();
        assert_eq!(got.len(), 3, "{:?}", out.calls);
        assert_eq!(got[0].1, Some(&json!({"town": "Oslo"})));
        assert_eq!(got[1].1, Some(&json!({"town": "Bergen"})));
        assert_eq!(got[2].1, Some(&json!({"hours": 3})));
        assert!(
            matches!(got[0].2, Some(CallResult::Value(v)) if *v == json!({"room": "Fjord Inn", "beds": 2}))
        );
        assert!(
            matches!(got[2].2, Some(CallResult::Value(v)) if *v == json!("rented")),
            "{:?} {:?}",
            got,
            out.notes
        );
        assert!(out.notes.iter().any(|n| n.contains("call id k2")));
    }

    #[test]
    fn a_tool_span_with_arguments_is_left_as_it_is() {
        let args = json!({"town": "Tromso"}).to_string();
        let spans = vec![
            sp(1, None, (0, 100), "acme run", &[]),
            sp(
                3,
                Some(1),
                (11, 12),
                "find_room.acme_tool",
                &[
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", "find_room"),
                    ("gen_ai.tool.call.arguments", args.as_str()),
                ],
            ),
            chat(
                6,
                (20, 30),
                json!([
                    asks(&[("k1", "find_room", json!({"town": "Oslo"}))]),
                    answers("k1", "full")
                ]),
            ),
        ];
        let out = Extractor::default().analyze(&Trace::new(TraceId([6; 16]), spans, 0));
        assert_eq!(out.calls.len(), 1);
        assert!(
            matches!(&out.calls[0].args, CallArgs::Value(v) if *v == json!({"town": "Tromso"}))
        );
        assert!(out
            .notes
            .iter()
            .all(|n| !n.contains("paired by name, in order")));
    }
}
