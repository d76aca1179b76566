//! A model turn whose calls come back under other ids (docs/conventions.md,
//! "The conversation witness", "Two ids for one call").
//!
//! OpenLLMetry's Responses wrapper writes the calls a response asked for
//! under the `function_call` items' ids (`fc_...`); fast-agent's next
//! request echoes the turn, each call in an assistant message of its own
//! and under an id of its own making, then the results under the calls'
//! `call_id`s. No id of the output meets one of the request. Real item ids
//! are random and unrelated to call ids, so their spelling says nothing:
//! the turn itself does. Two steps:
//!
//! - model messages one after the other that each ask for calls are one
//!   turn ([`one_turn`]): no API takes a model turn after calls that were
//!   not answered, so the second is the same turn written in two messages;
//!   the results after it then take the echoed calls' ids by order
//!   ([`super::item_ids`]);
//! - a model output whose calls, all with ids, no request answers or
//!   repeats under those ids, is the turn that the first later request
//!   echoes ([`rekey`]) when that request's last turn asks for the same
//!   calls (same count, and in order the same names and arguments) under
//!   ids no output asked for, each answered in it. The request's ids for
//!   them then become the output's, in it and every request after it.
//!   Anything else (another count, a name or arguments that differ, an
//!   echoed id some output asked for) re-keys nothing.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::{AskedAt, Request};
use crate::assemble::Trace;
use crate::extract::requested::Asked;

/// Whether model message `calls`, right after a model message that asked
/// for `before`, continues its turn: both ask for calls.
pub(super) fn one_turn(before: &[Asked], calls: &[Asked]) -> bool {
    !before.is_empty() && !calls.is_empty()
}

/// The pairings of results that do not go by call id, noted in `notes`:
/// results without ids by order ([`super::order::pair_noting`]), then
/// turns echoed under other ids ([`rekey`], whose re-keyed calls it
/// returns).
pub(super) fn pair_noting(
    trace: &Trace,
    asked: &[AskedAt],
    requests: &mut [Request],
    notes: &mut Vec<String>,
) -> Vec<(String, String)> {
    super::order::pair_noting(trace, asked, requests, notes);
    rekey(trace, asked, requests, notes)
}

/// Gives the calls each output in `asked` asked for the results that the
/// first later request carries for its echo of them under other ids (see
/// the module's doc), noting it in `notes`. Returns each such call's
/// output id with the id its result answers: another trace of the process
/// may record the call under that id (`Analysis::echoed_ids`).
fn rekey(
    trace: &Trace,
    asked: &[AskedAt],
    requests: &mut [Request],
    notes: &mut Vec<String>,
) -> Vec<(String, String)> {
    let (answered, repeated) = seen_ids(requests);
    let asked_ids: HashSet<&str> = asked.iter().filter_map(|a| a.asked.id.as_deref()).collect();
    let mut renames: Vec<(usize, HashMap<String, String>)> = Vec::new();
    for turn in asked.chunk_by(|a, b| a.span == b.span) {
        let unmet = turn.iter().all(|a| {
            a.asked.id.as_deref().is_some_and(|id| {
                !answered.contains(id) && !repeated.contains(id) && !super::idless::is_made(id)
            })
        });
        if !unmet {
            continue;
        }
        let span = turn[0].span;
        let start = trace.spans[span].span.start_time_unix_nano;
        // The first later request that records any model turn.
        let next = (span + 1..requests.len()).find(|&i| {
            !requests[i].history.is_empty() && trace.spans[i].span.start_time_unix_nano >= start
        });
        let Some(i) = next else { continue };
        let r = &requests[i];
        let echoes = r.last_turn.len() == turn.len()
            && r.last_turn.iter().zip(turn).all(|(e, a)| {
                e.name == a.asked.name
                    && same_args(&e.args, &a.asked.args)
                    && e.id.as_deref().is_some_and(|id| {
                        !asked_ids.contains(id)
                            && r.answers.iter().any(|x| x.id.as_deref() == Some(id))
                    })
            });
        if !echoes {
            continue;
        }
        let map = r
            .last_turn
            .iter()
            .zip(turn)
            .filter_map(|(e, a)| Some((e.id.clone()?, a.asked.id.clone()?)))
            .collect();
        renames.push((i, map));
        notes.push(format!(
            "{} call(s) asked for in span {} are echoed under other ids in the request of span {} (the same names and arguments, in order): its results answer them",
            turn.len(),
            trace.spans[span].span_id,
            trace.spans[i].span_id
        ));
    }
    let mut ids = Vec::new();
    for (from, map) in renames {
        ids.extend(map.iter().map(|(echo, own)| (own.clone(), echo.clone())));
        for r in &mut requests[from..] {
            let ids = r.answers.iter_mut().map(|a| &mut a.id);
            let calls = r.history.iter_mut().chain(r.last_turn.iter_mut());
            for id in ids.chain(calls.map(|c| &mut c.id)).flatten() {
                if let Some(new) = map.get(id.as_str()) {
                    *id = new.clone();
                }
            }
        }
    }
    ids
}

/// The call ids the requests answer, and those their histories repeat.
fn seen_ids(requests: &[Request]) -> (HashSet<&str>, HashSet<&str>) {
    let answered = requests.iter().flat_map(|r| &r.answers);
    let repeated = requests.iter().flat_map(|r| &r.history);
    (
        answered.filter_map(|a| a.id.as_deref()).collect(),
        repeated.filter_map(|a| a.id.as_deref()).collect(),
    )
}

/// Arguments equal as values (`merge::same_args`), either side maybe text
/// of JSON or a literal.
fn same_args(a: &Value, b: &Value) -> bool {
    let parsed = |v: &Value| match v {
        Value::String(t) => crate::extract::source::parse_json_or_literal(t),
        other => other.clone(),
    };
    a == b || crate::extract::merge::same_args(&parsed(a), &parsed(b))
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::{
        genai_asks as asks, genai_result as result, genai_user as user, in_process,
    };
    use crate::extract::tests::sp;
    use crate::extract::{Analysis, Extractor};

    /// A made-up vendor's two model calls in one trace: the first asks
    /// for `asked`, the second's request is `input`.
    fn trace(asked: &Value, input: &Value) -> Analysis {
        let call = |id: u8, when: (u64, u64), input: &Value, output: &Value| {
            let (input, output) = (input.to_string(), output.to_string());
            let attrs = [
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.input.messages", input.as_str()),
                ("gen_ai.output.messages", output.as_str()),
            ];
            in_process(sp(id, None, when, "acme.respond", &attrs), "p")
        };
        let done = json!([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}]);
        let spans = vec![
            call(1, (0, 10), &json!([user()]), &json!([asked])),
            call(2, (20, 30), input, &done),
        ];
        Extractor::default().analyze(&Trace::new(TraceId([7; 16]), spans, 0))
    }

    fn got(a: &Analysis) -> Vec<(String, Value)> {
        let result = |c: &crate::extract::ToolCall| c.result.as_ref().map(|r| r.to_value());
        a.calls
            .iter()
            .map(|c| (c.name.clone(), result(c).unwrap_or_default()))
            .collect()
    }

    #[test]
    fn a_turn_echoed_under_other_ids_takes_the_results_that_follow_the_echo() {
        let (tide, berth) = (json!({"port": "Brest"}), json!({"nights": 2}));
        let asked = asks(&[
            ("item_7q", "tide", tide.clone()),
            ("item_k2", "berth", berth.clone()),
        ]);
        // Each echoed call in a message of its own, under ids of the
        // framework's making; the results under the calls' own ids.
        let input = json!([
            user(),
            asks(&[("echo_1", "tide", tide.clone())]),
            asks(&[("echo_2", "berth", berth.clone())]),
            result("cid_1", "06:12"),
            result("cid_2", "booked"),
        ]);
        let read = trace(&asked, &input);
        let want = vec![
            ("tide".to_string(), json!("06:12")),
            ("berth".to_string(), json!("booked")),
        ];
        assert_eq!(got(&read), want, "{:?}", read.warnings);
        assert!(
            read.notes
                .iter()
                .any(|n| n.contains("echoed under other ids")),
            "{:?}",
            read.notes
        );
    }

    #[test]
    fn an_echo_that_differs_from_the_turn_re_keys_nothing() {
        let (tide, berth) = (json!({"port": "Brest"}), json!({"nights": 2}));
        let asked = asks(&[
            ("item_7q", "tide", tide.clone()),
            ("item_k2", "berth", berth.clone()),
        ]);
        let results = [result("cid_1", "06:12"), result("cid_2", "booked")];
        let echo = |calls: &[(&str, &str, Value)]| {
            let mut m = vec![user()];
            m.extend(calls.iter().map(|c| asks(std::slice::from_ref(c))));
            m.extend(results.iter().cloned());
            Value::Array(m)
        };
        for input in [
            // Other arguments; another order; one call fewer.
            echo(&[
                ("e1", "tide", json!({"port": "Sète"})),
                ("e2", "berth", berth.clone()),
            ]),
            echo(&[("e1", "berth", berth.clone()), ("e2", "tide", tide.clone())]),
            echo(&[("e1", "tide", tide.clone())]),
        ] {
            // The output's calls stay asked and unanswered (what the
            // request's history holds is its own record).
            let read = trace(&asked, &input);
            let echoed = |n: &String| n.contains("echoed under other ids");
            assert!(!read.notes.iter().any(echoed), "{input}: {:?}", read.notes);
            let open =
                |w: &String| w.contains("(call id item_") && w.contains("listed, not counted");
            assert_eq!(
                read.warnings.iter().filter(|w| open(w)).count(),
                2,
                "{input}"
            );
        }
    }
}
