//! Results whose call ids answer no call of the history (docs/conventions.md,
//! "The conversation witness", "Two ids for one call").
//!
//! The OpenAI Responses API gives a call two ids: its `function_call` item
//! has an item id (`fc_...`) and a `call_id` (`call_...`), and the
//! `function_call_output` that answers it names the `call_id`. A recorder
//! that keeps only the item's `id` for the call (OpenLLMetry's Responses
//! spans write `{"type": "tool_call", "id": "fc_..."}`) and the `call_id`
//! for the result leaves ids that never meet. A model turn's calls are
//! answered in the order asked, so within one request the results that
//! follow a turn and whose ids no call of the history has answer that
//! turn's calls that no result answers by id, one for one, when both are
//! as many and the tool's name, where a result names one, agrees; they
//! then take the call's id (the one its output asked for). Anything else
//! re-keys nothing.
//!
//! Results with no call id at all after a turn whose calls have ids are
//! paired the same way (OpenLIT for JavaScript writes the tool messages
//! of a request as text parts without ids while the assistant turn before
//! them keeps its calls' ids; Respan's flattened `tool` messages drop
//! `tool_call_id`): the results right after the turn that asked, as many
//! as its calls no result answers by id, in order. This holds on any
//! request, not only the first after the model answered
//! ([`super::order::pair`]), so that a request in the next trace, when
//! each model call is a trace of its own, answers the calls it repeats.

use std::collections::HashSet;
use std::ops::Range;

use super::{idless, Answer, Request};
use crate::assemble::Trace;
use crate::extract::requested::Asked;

/// Notes in `notes` each request whose results took their calls' ids.
pub(super) fn note(trace: &Trace, requests: &[Request], notes: &mut Vec<String>) {
    for (i, r) in requests.iter().enumerate() {
        let (strangers, bare) = r.rekeyed;
        if strangers > 0 {
            notes.push(format!(
                "{strangers} tool result(s) in the request of span {} carry call ids no call has (a Responses call's item id and its call_id): paired by order with the model turn before them",
                trace.spans[i].span_id
            ));
        }
        if bare > 0 {
            notes.push(format!(
                "{bare} tool result(s) in the request of span {} carry no call id: paired by order with the model turn before them",
                trace.spans[i].span_id
            ));
        }
    }
}

/// The model turns of one request as [`super::read_request`] goes through
/// its messages: each turn's calls (positions in the history) and the
/// results right after it (positions in the answers).
#[derive(Debug, Default)]
pub(super) struct Turns {
    turns: Vec<(Range<usize>, Range<usize>)>,
    /// Whether results may still follow the last turn.
    open: bool,
}

impl Turns {
    /// A model message whose calls are `history[calls]`; `continued` when
    /// it is the same turn as the message before (a Responses call item).
    pub(super) fn model(&mut self, calls: Range<usize>, answers: usize, continued: bool) {
        match self.turns.last_mut() {
            Some(last) if continued => last.0.end = calls.end,
            _ => self.turns.push((calls, answers..answers)),
        }
        self.open = true;
    }

    /// Another message, after which the request holds `answers` results
    /// (as many as before it: no result, the turn's results are over).
    pub(super) fn other(&mut self, before: usize, answers: usize) {
        if answers == before {
            self.open = false;
        } else if let Some(last) = self.turns.last_mut().filter(|_| self.open) {
            last.1.end = answers;
        }
    }

    /// Gives each result that answers no call of `history` by id, or has
    /// none, the id of the call of its turn it answers by order (see the
    /// module's doc); returns how many were re-keyed, of those with an id
    /// and of those without.
    pub(super) fn rekey(&self, history: &[Asked], answers: &mut [Answer]) -> (usize, usize) {
        // Most requests' results all answer a call by id: one look.
        let known =
            || -> HashSet<&str> { history.iter().filter_map(|a| a.id.as_deref()).collect() };
        let mut ids: Option<HashSet<&str>> = None;
        let mut rekeyed = (0, 0);
        for (calls, results) in &self.turns {
            let (Some(calls), Some(results)) =
                (history.get(calls.clone()), answers.get_mut(results.clone()))
            else {
                continue;
            };
            if calls.is_empty() || results.is_empty() {
                continue;
            }
            let known = ids.get_or_insert_with(known);
            let stranger = |a: &Answer| {
                a.id.as_deref()
                    .is_none_or(|id| !known.contains(id) && !idless::is_made(id))
            };
            if !results.iter().any(stranger) {
                continue;
            }
            let answered: HashSet<&str> = results.iter().filter_map(|a| a.id.as_deref()).collect();
            let open: Vec<&Asked> = calls
                .iter()
                .filter(|c| {
                    c.id.as_deref()
                        .is_some_and(|id| !idless::is_made(id) && !answered.contains(id))
                })
                .collect();
            let strangers: Vec<usize> = (0..results.len())
                .filter(|&k| stranger(&results[k]))
                .collect();
            let agree = strangers.len() == open.len()
                && strangers
                    .iter()
                    .zip(&open)
                    .all(|(&k, c)| results[k].name.as_deref().is_none_or(|n| n == c.name));
            if !agree {
                continue;
            }
            for (&k, c) in strangers.iter().zip(&open) {
                match results[k].id {
                    Some(_) => rekeyed.0 += 1,
                    None => rekeyed.1 += 1,
                }
                results[k].id = c.id.clone();
            }
        }
        rekeyed
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{SpanRecord, Trace, TraceId};
    use crate::extract::test_support::{
        genai_asks as asks, genai_result as result, genai_user as user, in_process, read_in_order,
    };
    use crate::extract::tests::sp;
    use crate::extract::Analysis;

    /// A made-up vendor's model call, a trace of its own: its request and
    /// output as GenAI messages, the calls under their item ids and the
    /// results under other ids.
    fn model_call(trace: u8, when: (u64, u64), input: Value, output: Value) -> Trace {
        let (input, output) = (input.to_string(), output.to_string());
        let s: SpanRecord = sp(
            1,
            None,
            when,
            "acme.respond",
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.input.messages", &input),
                ("gen_ai.output.messages", &output),
            ],
        );
        Trace::new(TraceId([trace; 16]), vec![in_process(s, "p")], 0)
    }

    fn got(read: &[Analysis]) -> Vec<(String, Value, Value)> {
        read.iter()
            .flat_map(|a| &a.calls)
            .map(|c| {
                let r = c.result.as_ref().map(|r| r.to_value());
                (
                    c.name.clone(),
                    c.args.value().cloned().unwrap_or_default(),
                    r.unwrap_or_default(),
                )
            })
            .collect()
    }

    #[test]
    fn results_under_other_ids_answer_their_turn_by_order() {
        let (tide, berth) = (json!({"port": "Brest"}), json!({"nights": 2}));
        let a = asks(&[
            ("it_1", "tide", tide.clone()),
            ("it_2", "berth", berth.clone()),
        ]);
        let read = read_in_order(vec![
            model_call(1, (0, 10), json!([user()]), json!([a])),
            model_call(
                2,
                (20, 30),
                json!([user(), a, result("cl_1", "06:12"), result("cl_2", "booked")]),
                json!([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}]),
            ),
        ]);
        assert_eq!(
            got(&read),
            vec![
                ("tide".into(), tide, json!("06:12")),
                ("berth".into(), berth, json!("booked"))
            ],
            "{:?}",
            read[1].warnings
        );
        assert!(
            read[1].notes.iter().any(|n| n.contains("paired by order")),
            "{:?}",
            read[1].notes
        );
    }

    #[test]
    fn results_without_ids_answer_the_turn_they_follow_by_order() {
        let (tide, berth) = (json!({"port": "Brest"}), json!({"nights": 2}));
        let a = asks(&[
            ("k_1", "tide", tide.clone()),
            ("k_2", "berth", berth.clone()),
        ]);
        let bare = |v: &str| json!({"role": "tool", "parts": [{"type": "text", "content": v}]});
        let end = json!([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}]);
        let read = read_in_order(vec![
            model_call(1, (0, 10), json!([user()]), json!([a])),
            model_call(
                2,
                (20, 30),
                json!([user(), a, bare("06:12"), bare("booked")]),
                end.clone(),
            ),
        ]);
        assert_eq!(
            got(&read),
            vec![
                ("tide".into(), tide, json!("06:12")),
                ("berth".into(), berth, json!("booked"))
            ],
            "{:?}",
            read[1].warnings
        );
        assert!(
            read[1].notes.iter().any(|n| n.contains("carry no call id")),
            "{:?}",
            read[1].notes
        );
        // One result for two calls: which call it answers is unknown.
        let read = read_in_order(vec![
            model_call(1, (0, 10), json!([user()]), json!([a])),
            model_call(2, (20, 30), json!([user(), a, bare("06:12")]), end),
        ]);
        assert!(got(&read).is_empty(), "{:?}", got(&read));
    }

    #[test]
    fn results_that_do_not_fit_their_turn_re_key_nothing() {
        let a = asks(&[("it_1", "tide", json!({"port": "Brest"}))]);
        let end = json!([]);
        // Two strangers for one call; a stranger naming another tool.
        let two = json!([user(), a, result("cl_1", "x"), result("cl_2", "y")]);
        let named = json!([user(), a, {"role": "tool", "parts": [{"type": "tool_call_response",
            "id": "cl_1", "name": "berth", "response": "x"}]}]);
        for input in [two, named] {
            let read = read_in_order(vec![
                model_call(1, (0, 10), json!([user()]), json!([a])),
                model_call(2, (20, 30), input, end.clone()),
            ]);
            assert!(got(&read).is_empty(), "{:?}", got(&read));
        }
    }
}
