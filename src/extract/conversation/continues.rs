//! The request that continues a conversation, past requests of another
//! one (docs/conventions.md, "The conversation witness", "A model call
//! between the ask and its results").
//!
//! A tool may call a model itself (langchain's `createAgent` with a tool
//! that runs `ChatOpenAI.invoke`): that call is a request of another
//! conversation, one fresh user message, between the request whose answer
//! asked for the calls and the request that carries their results. When
//! the first later request carries no result at all, the results are
//! sought in the first later request of the same conversation: one that
//! opens with the asking request's first user message (an agent's
//! requests each repeat its history from the start; the next
//! [`MAX_LOOKED`] requests are looked at). A request that opens
//! otherwise (the tool's own question, a sub-agent's task) lends nothing,
//! and neither does a conversation whose opening is not recorded.

use super::{has_any_input, Request};
use crate::assemble::Trace;
use crate::extract::facts::opening_of;

/// The request after `first` (the first request that started after span
/// `s`'s answer ended) that carries the results of the calls `s` asked
/// for: when `first` carries no results, the first later request that
/// opens as `s`'s does, if `fits` it (see the module's doc).
pub(super) fn next_of(
    trace: &Trace,
    requests: &[Request],
    s: usize,
    first: usize,
    fits: impl Fn(usize) -> bool,
) -> Option<usize> {
    // A request with results of its own is the next one (they are not
    // this turn's, or not by order): nothing is sought past it.
    if !requests.get(first)?.answers.is_empty() {
        return None;
    }
    let opening = opening_of(&trace.spans[s])?;
    let start = |i: usize| trace.spans[i].span.start_time_unix_nano;
    let answered = trace.spans[s].span.end_time_unix_nano;
    let mut later: Vec<usize> = (0..trace.spans.len())
        .filter(|&j| j != s && start(j) >= answered)
        .filter(|&j| has_any_input(&trace.spans[j]))
        .collect();
    later.sort_by_key(|&j| (start(j), j));
    let same = |j: usize| opening_of(&trace.spans[j]).is_some_and(|o| o == opening);
    // Each look parses a request: a bounded number per asking span.
    later
        .into_iter()
        .take(MAX_LOOKED)
        .find(|&j| same(j))
        .filter(|&j| fits(j))
}

/// How many later requests are looked at for the conversation's next one:
/// a tool's own model calls, or a sub-agent's turns, in between.
const MAX_LOOKED: usize = 16;

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{Trace, TraceId};
    use crate::extract::tests::sp;
    use crate::extract::Extractor;

    /// A made-up vendor's model span: GenAI messages in and out.
    fn chat(id: u8, when: (u64, u64), input: Value, output: Value) -> crate::assemble::SpanRecord {
        crate::extract::test_support::genai_chat(id, when, "acme.llm", input, output)
    }

    fn user(text: &str) -> Value {
        json!({"role": "user", "parts": [{"type": "text", "content": text}]})
    }

    fn says(text: &str) -> Value {
        json!({"role": "assistant", "parts": [{"type": "text", "content": text}]})
    }

    /// The model's turn asking for `calls` (an id each, or none).
    fn asks(calls: &[(Option<&str>, &str, Value)]) -> Value {
        let parts: Vec<Value> = calls
            .iter()
            .map(|(id, name, args)| {
                let mut p = json!({"type": "tool_call", "name": name, "arguments": args});
                if let Some(id) = id {
                    p["id"] = json!(id);
                }
                p
            })
            .collect();
        json!({"role": "assistant", "parts": parts})
    }

    fn bare(text: &str) -> Value {
        json!({"role": "tool", "parts": [{"type": "text", "content": text}]})
    }

    /// The calls read from a trace of `asking`, a tool's own model call,
    /// then a request opening with `then` that carries two bare results.
    fn read(ids: [Option<&str>; 2], then: &str) -> Vec<(String, Value)> {
        let turn = asks(&[
            (ids[0], "find_room", json!({"town": "Tromso"})),
            (ids[1], "rent_sled", json!({"dogs": 6})),
        ]);
        let spans = vec![
            sp(1, None, (0, 100), "loop", &[]),
            chat(2, (10, 20), json!([user("plan my stay")]), json!([turn])),
            // The tool's own question, a conversation of its own.
            chat(
                3,
                (25, 35),
                json!([user("Pick one room")]),
                json!([says("Room 9")]),
            ),
            chat(
                4,
                (40, 50),
                json!([
                    user(then),
                    says(""),
                    bare("{\"room\":\"9\"}"),
                    bare("booked")
                ]),
                json!([says("done")]),
            ),
        ];
        let got = Extractor::default().analyze(&Trace::new(TraceId([5; 16]), spans, 0));
        got.calls
            .iter()
            .map(|c| {
                let r = c.result.as_ref().map(|r| r.to_value());
                (c.name.clone(), r.unwrap_or_default())
            })
            .collect()
    }

    fn both_answered() -> Vec<(String, Value)> {
        vec![
            ("find_room".to_string(), json!({"room": "9"})),
            ("rent_sled".to_string(), json!("booked")),
        ]
    }

    #[test]
    fn results_pair_past_a_model_call_of_another_conversation() {
        assert_eq!(
            read([Some("k1"), Some("k2")], "plan my stay"),
            both_answered()
        );
    }

    #[test]
    fn calls_without_ids_pair_past_it_too() {
        assert_eq!(read([None, None], "plan my stay"), both_answered());
    }

    #[test]
    fn a_request_of_another_conversation_lends_no_results() {
        // The later request opens otherwise (a sub-agent's task): its
        // results are not this turn's.
        for ids in [[Some("k1"), Some("k2")], [None, None]] {
            let got = read(ids, "find a sled");
            assert!(got.iter().all(|(_, r)| r.is_null()), "{got:?}");
        }
    }
}
