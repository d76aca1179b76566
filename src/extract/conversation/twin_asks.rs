//! One model call recorded by two writers, a span and its parent or child,
//! each keeping another id for the same asked call: OpenLLMetry's
//! `openai.response` span keeps the Responses item id (`fc_...`) while
//! Pydantic AI's `chat` span around it keeps the call id (`call_...`), so
//! every ask came twice and the item-id copy was warned of as a call no
//! tool span shows (held-out set 38). Equal name and arguments on a span
//! and its parent or child, one id an item id and the other not, are one
//! ask (docs/conventions.md, "Two ids for one call"); so is an ask without
//! an id beside a copy of it on the span's parent or child.

use super::AskedAt;
use crate::assemble::{IdSet, SpanRecord, Trace};
use crate::extract::requested::Asked;

/// The (call id, tool) pairs of the asks kept, once there are many.
type KeptIds = IdSet<(String, String)>;

/// Whether `a`, asked on span `i`, is an ask kept in `out` from one of the
/// span's ancestors or descendants under another id: one model call
/// recorded by two writers, one keeping the Responses item id (`fc_...`;
/// OpenLLMetry's `openai.response` under Pydantic AI's `chat` span), the
/// other the call id, or by an agent span above them that repeats its
/// run's conversation (Agent Framework's `invoke_agent`, two levels up).
/// The kept ask takes the call id (what tool spans and results name).
/// `kept`: the asks kept, the set of their ids and tools when built, and
/// whether one of them has an item id (the look is skipped when neither
/// side can be one).
pub(super) fn twin_ask(
    trace: &Trace,
    i: usize,
    a: &Asked,
    (out, ids, items): (&mut [AskedAt], &mut Option<KeptIds>, bool),
) -> bool {
    let Some(id) = a.id.as_deref() else {
        return false;
    };
    if !items && !is_item(id) {
        return false;
    }
    let near = |o: &AskedAt| {
        let above = |low: usize, high: usize| trace.ancestors(low).any(|p| p == high);
        above(i, o.span) || above(o.span, i)
    };
    let twin = out.iter_mut().find(|o| {
        let other = o.asked.id.as_deref().filter(|&k| k != id);
        other.is_some_and(|k| is_item(k) != is_item(id))
            && o.asked.name == a.name
            && o.asked.args == a.args
            && near(o)
    });
    let Some(o) = twin else {
        return false;
    };
    if is_item(o.asked.id.as_deref().unwrap_or_default()) {
        o.asked.id = Some(id.to_string());
        if let Some(ids) = ids {
            ids.insert((id.to_string(), a.name.clone()));
        }
    }
    true
}

/// Whether `a`, asked without an id on span `s`, is an ask kept in `out`:
/// the same model call recorded by the span and its parent or child, one
/// of them maybe keeping the call id, or a copy of a kept ask recorded
/// there (`also`: the asks under an id that repeated one kept, with their
/// spans; OpenLLMetry-JS's id-less `openai.chat` inside a LangChain chain
/// whose output's ask repeats an earlier chain output's).
pub(super) fn bare_repeat(
    trace: &Trace,
    s: &SpanRecord,
    a: &Asked,
    (out, also): (&[AskedAt], &[(usize, Asked)]),
) -> bool {
    let near = |j: usize| {
        let o = &trace.spans[j];
        Some(o.span_id) == s.parent || o.parent == Some(s.span_id)
    };
    let same = |o: &Asked| o.name == a.name && o.args == a.args;
    out.iter().any(|o| same(&o.asked) && near(o.span))
        || also.iter().any(|(j, o)| near(*j) && same(o))
}

/// How an OpenAI Responses item id begins (a `function_call` item's `id`,
/// beside its `call_id`).
const ITEM_ID_PREFIX: &str = "fc_";

/// Whether call id `id` is a Responses item id.
pub(super) fn is_item(id: &str) -> bool {
    id.starts_with(ITEM_ID_PREFIX)
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{SpanId, SpanRecord, Trace, TraceId};
    use crate::extract::tests::sp;
    use crate::extract::{Analysis, Extractor};

    /// A made-up vendor's model span `id` (parent `parent`) asking for
    /// `book` with `args` under call id `call`.
    fn chat(id: u8, parent: u8, start: u64, call: &str, args: &Value) -> SpanRecord {
        let output = json!([{"role": "assistant", "parts": [
            {"type": "tool_call", "id": call, "name": "book", "arguments": args}]}]);
        let output = output.to_string();
        let mut s = sp(
            id,
            Some(1),
            (start, start + 3),
            "chat acme",
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.output.messages", output.as_str()),
            ],
        );
        s.parent = Some(SpanId([parent; 8]));
        s
    }

    fn tool(id: u8, start: u64, call: &str) -> SpanRecord {
        sp(
            id,
            Some(1),
            (start, start + 3),
            "execute_tool book",
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "book"),
                ("gen_ai.tool.call.id", call),
                ("gen_ai.tool.call.arguments", "{\"room\": 4}"),
            ],
        )
    }

    fn analyze(spans: Vec<SpanRecord>) -> Analysis {
        Extractor::default().analyze(&Trace::new(TraceId([5; 16]), spans, 0))
    }

    #[test]
    fn an_ask_under_its_item_id_in_a_nested_record_is_the_same_ask() {
        let room = json!({"room": 4});
        // The call id outside, the item id inside, and the other way round.
        for (outer, inner) in [("call_7", "fc_7"), ("fc_7", "call_7")] {
            let a = analyze(vec![
                sp(1, None, (0, 100), "agent", &[]),
                chat(2, 1, 10, outer, &room),
                chat(3, 2, 11, inner, &room),
                tool(4, 20, "call_7"),
            ]);
            assert_eq!(a.calls.len(), 1, "{:?}", a.calls);
            assert!(a.warnings.is_empty(), "{outer}: {:?}", a.warnings);
        }
    }

    #[test]
    fn an_ask_repeated_by_an_agent_span_two_levels_up_is_the_same_ask() {
        // The agent's record of its run's conversation (call id), the
        // framework's model span under it (call id) and the writer's
        // Responses span under that (item id).
        let room = json!({"room": 4});
        let mut agent = chat(1, 9, 0, "call_7", &room);
        agent.parent = None;
        let a = analyze(vec![
            agent,
            chat(2, 1, 10, "call_7", &room),
            chat(3, 2, 11, "fc_7", &room),
            tool(4, 20, "call_7"),
        ]);
        assert_eq!(a.calls.len(), 1, "{:?}", a.calls);
        assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    }

    #[test]
    fn an_ask_without_an_id_beside_a_copy_under_an_id_is_the_same_ask() {
        // A chain output asks under the call id (kept first), the chain
        // around the model span asks so again, and the model span inside
        // it keeps no id (OpenLLMetry-JS's `openai.chat` under LangChain).
        let room = json!({"room": 4});
        let output = json!([{"role": "assistant", "parts": [
            {"type": "tool_call", "name": "book", "arguments": room}]}]);
        let output = output.to_string();
        let attrs = [
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.output.messages", output.as_str()),
        ];
        let bare = sp(4, Some(3), (12, 15), "chat acme", &attrs);
        let a = analyze(vec![
            sp(1, None, (0, 100), "agent", &[]),
            chat(2, 1, 10, "call_7", &room),
            chat(3, 1, 11, "call_7", &room),
            bare,
            tool(5, 20, "call_7"),
        ]);
        assert_eq!(a.calls.len(), 1, "{:?}", a.calls);
        assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    }

    #[test]
    fn other_arguments_another_span_or_two_call_ids_are_other_asks() {
        let room = json!({"room": 4});
        let cases = [
            // Other arguments.
            (chat(3, 2, 11, "fc_7", &json!({"room": 5})), "fc_7"),
            // Not the parent's child: a sibling.
            (chat(3, 1, 11, "fc_7", &room), "fc_7"),
            // Two call ids (no item id): two calls asked.
            (chat(3, 2, 11, "call_8", &room), "call_8"),
        ];
        for (inner, id) in cases {
            let a = analyze(vec![
                sp(1, None, (0, 100), "agent", &[]),
                chat(2, 1, 10, "call_7", &room),
                inner,
                tool(4, 20, "call_7"),
            ]);
            let warned = a.warnings.iter().any(|w| w.contains(id));
            assert!(warned, "{id}: {:?}", a.warnings);
        }
    }
}
