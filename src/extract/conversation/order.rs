//! Results without call ids, paired with the calls they answer by order
//! (docs/conventions.md, "The conversation witness").
//!
//! Some instrumentations record a request's tool results without the call
//! id (OpenLIT for JavaScript writes role `tool` messages whose only parts
//! are text). The model's calls of one turn are answered in the order it
//! asked for them, so the results that end the first request after the
//! model answered are that turn's, one for one, when all of these hold: the
//! turn's calls each have an id; the results after the request's last model
//! message are exactly as many; none of them names a call id or a tool; and
//! the request's last model message asks for those same calls, or for none
//! (some histories lose the calls). A history that keeps no model turn
//! at all (OpenLIT's Mistral stream) carries every earlier turn's results
//! before this turn's: the last results answer this turn when as many come
//! before them as earlier outputs of the trace asked for calls. Anything
//! else pairs nothing. Where
//! the request repeats the turn with its calls, `item_ids` has paired its
//! results already, in that request and any other.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{has_any_input, AskedAt, Request};
use crate::assemble::Trace;
use crate::extract::open::{run_key, Open, OpenAsk};
use crate::extract::{CallResult, CallStatus, ToolCall};

/// The text of a message's parts when every part is a text part
/// (`{"type": "text", "content" | "text": ...}`), joined.
pub(super) fn text_of_parts(o: &Map<String, Value>) -> Option<Value> {
    let parts = o.get("parts").or_else(|| o.get("content"))?.as_array()?;
    let mut text = String::new();
    for p in parts {
        let p = p.as_object()?;
        if p.get("type").and_then(Value::as_str) != Some("text") {
            return None;
        }
        text.push_str(p.get("content").or_else(|| p.get("text"))?.as_str()?);
    }
    (!parts.is_empty()).then_some(Value::String(text))
}

/// Gives the results in `requests` that carry no call id the ids of the
/// calls they answer by order (see the module's doc); returns how many.
pub(super) fn pair(trace: &Trace, asked: &[AskedAt], requests: &mut [Request]) -> usize {
    let mut paired = 0;
    let mut spans: Vec<usize> = asked.iter().map(|a| a.span).collect();
    spans.sort_unstable();
    spans.dedup();
    let start = |s: usize| trace.spans[s].span.start_time_unix_nano;
    for s in spans {
        let ids: Option<Vec<&str>> = asked
            .iter()
            .filter(|a| a.span == s)
            .map(|a| a.asked.id.as_deref())
            .collect();
        let Some(ids) = ids else {
            continue;
        };
        // The calls earlier model outputs asked for: a history without
        // model turns carries their results before this turn's.
        let earlier = asked.iter().filter(|a| start(a.span) < start(s)).count();
        let answered = trace.spans[s].span.end_time_unix_nano;
        // The first request after the model answered.
        let next = (0..trace.spans.len())
            .filter(|&j| j != s && trace.spans[j].span.start_time_unix_nano >= answered)
            .filter(|&j| has_any_input(&trace.spans[j]))
            .min_by_key(|&j| (trace.spans[j].span.start_time_unix_nano, j));
        let Some(mut j) = next.filter(|&j| requests.get(j).is_some()) else {
            continue;
        };
        // Else the first later request of the same conversation (a model
        // call a tool made may lie between: `continues`).
        let mut skip = answers_turn(&requests[j], &ids, earlier);
        if skip.is_none() {
            let fits = |j: usize| answers_turn(&requests[j], &ids, earlier).is_some();
            match super::continues::next_of(trace, requests, s, j, fits) {
                Some(later) => {
                    j = later;
                    skip = answers_turn(&requests[j], &ids, earlier);
                }
                None => continue,
            }
        }
        let r = &mut requests[j];
        for (&k, id) in r.trailing.iter().skip(skip.unwrap_or(0)).zip(&ids) {
            if let Some(a) = r.answers.get_mut(k) {
                a.id = Some((*id).to_string());
                paired += 1;
                r.by_order = true;
            }
        }
    }
    paired
}

/// Whether request `r` ends with bare results for the model turn that
/// asked for `ids`, one for one (see the module's doc): how many results
/// before them answer earlier turns. Those are none, or, in a history
/// that keeps no model turn at all, the `earlier` calls the trace's
/// earlier outputs asked for.
fn answers_turn(r: &Request, ids: &[&str], earlier: usize) -> Option<usize> {
    let turn_ok = r.last_turn.is_empty()
        || r.last_turn
            .iter()
            .map(|a| a.id.as_deref())
            .eq(ids.iter().map(|&i| Some(i)));
    let bare = r.trailing.iter().all(|&k| {
        r.answers
            .get(k)
            .is_some_and(|a| a.id.is_none() && a.name.is_none())
    });
    if !turn_ok || !bare {
        return None;
    }
    let turnless = r.last_turn.is_empty() && r.history.is_empty();
    match r.trailing.len() {
        n if n == ids.len() => Some(0),
        n if turnless && earlier > 0 && n == ids.len() + earlier => Some(earlier),
        _ => None,
    }
}

/// Results without call ids in the next trace (each model call a trace
/// of its own, and a history that lost the model's turns): the results
/// that end the trace's first request, none naming a call id or a tool and
/// no model turn of that request asking for calls, answer by order the
/// calls the last model output of an earlier trace left open, the last
/// results the last calls (earlier results, in a history that keeps
/// growing, answered earlier traces). Read on its own (`carried` empty),
/// the trace says so in `open.bare` for `extract::carry`; read again with
/// those calls, the results take their ids.
pub(super) fn carried_by_order(
    trace: &Trace,
    carried: &[OpenAsk],
    requests: &mut [Request],
    open: &mut Open,
    notes: &mut Vec<String>,
) {
    let start = |i: usize| trace.spans[i].span.start_time_unix_nano;
    let first = (0..trace.spans.len())
        .filter(|&i| has_any_input(&trace.spans[i]))
        .min_by_key(|&i| (start(i), i));
    let Some(f) = first else {
        return;
    };
    let known: HashSet<String> = requests
        .iter()
        .flat_map(|r| &r.answers)
        .filter_map(|a| a.id.clone())
        .collect();
    let Some(r) = requests.get_mut(f) else {
        return;
    };
    let bare = !r.trailing.is_empty()
        && r.last_turn.is_empty()
        && r.trailing.iter().all(|&k| {
            r.answers
                .get(k)
                .is_some_and(|a| a.id.is_none() && a.name.is_none())
        });
    if !bare {
        return;
    }
    if carried.is_empty() {
        open.bare = Some((r.trailing.len(), run_key(&trace.spans[f]), start(f)));
        return;
    }
    let calls: Vec<&OpenAsk> = carried
        .iter()
        .filter(|c| !c.is_echo() && c.form != super::super::open::HISTORY_FORM)
        .filter(|c| c.asked.id.as_ref().is_some_and(|id| !known.contains(id)))
        .collect();
    if calls.is_empty() || calls.len() > r.trailing.len() {
        return;
    }
    let last = &r.trailing[r.trailing.len() - calls.len()..];
    for (&k, c) in last.iter().zip(&calls) {
        if let Some(a) = r.answers.get_mut(k) {
            a.id = c.asked.id.clone();
        }
    }
    notes.push(format!(
        "{} tool result(s) carried without a call id in the request of span {} were paired by order with the call(s) trace {} left open",
        calls.len(),
        trace.spans[f].span_id,
        calls[0].trace_id
    ));
}

/// [`pair`], noting in `notes` how many results it paired, if any.
pub(super) fn pair_noting(
    trace: &Trace,
    asked: &[AskedAt],
    requests: &mut [Request],
    notes: &mut Vec<String>,
) {
    super::item_ids::note(trace, requests, notes);
    let paired = pair(trace, asked, requests);
    if paired > 0 {
        notes.push(format!(
            "{paired} tool result(s) carried without a call id were paired with the calls by order (as many results as the model turn asked for)"
        ));
    }
}

/// Gives the tool spans' calls that have no result (none recorded, or a
/// placeholder), failed or not, the result the conversation carries for
/// the model's call each was joined to (`joined`: an index into `asked`),
/// by call id or by order: what the model was sent. A failed call keeps
/// its span's status and message; one whose span kept no message takes
/// that text as its message too. A failed call no result answers by id
/// takes the text telling its failure (`failed_texts`), when that text
/// tells no other. Notes each.
pub(super) fn fill_results(
    trace: &Trace,
    asked: &[AskedAt],
    joined: &[Option<usize>],
    calls: &mut [ToolCall],
    notes: &mut Vec<String>,
) {
    // A failed call whose span kept no message (the Anthropic SDK's own
    // tool span: an error status and type, no text), or only a status
    // class (Sentry's `internal_error`), takes the text the model was sent
    // as its message.
    let unsaid = |c: &ToolCall| {
        c.status == CallStatus::Error
            && c.error_message
                .as_deref()
                .is_none_or(crate::extract::names_status_class)
    };
    // Only calls without a result look: most traces have none.
    let lacking = |(c, j): (&ToolCall, &Option<usize>)| {
        c.result.is_none() && j.is_some_and(|k| asked[k].asked.id.is_some())
    };
    if !calls.iter().zip(joined).any(lacking) {
        return;
    }
    let start = |i: usize| trace.spans[i].span.start_time_unix_nano;
    // Only requests from the first lacking call's ask on are looked at:
    // a request before it answers none of them (a run's root span may
    // hold the whole conversation, read for nothing).
    let from = calls
        .iter()
        .zip(joined)
        .filter(|&(c, j)| lacking((c, j)))
        .filter_map(|(_, j)| j.map(|k| start(asked[k].span)))
        .min()
        .unwrap_or(0);
    let mut requests = requests_from(trace, from);
    let paired = pair(trace, asked, &mut requests);
    // The failures told in text that calls here took (`failed_texts`).
    let mut told = Vec::new();
    for (c, j) in calls.iter_mut().zip(joined) {
        let Some(at) = j.filter(|&k| lacking((c, &Some(k)))).map(|k| &asked[k]) else {
            continue;
        };
        let Some(id) = at.asked.id.as_deref() else {
            continue;
        };
        let Some(content) = answer_to(trace, &requests, at, id) else {
            if c.status == CallStatus::Error {
                told_failure(trace, at, &requests, &mut told, c, notes);
            }
            continue;
        };
        if unsaid(c) {
            c.error_message = Some(match &content {
                Value::String(t) => t.clone(),
                other => other.to_string(),
            });
            notes.push(format!(
                "tool span {} recorded a failure of `{}` without a message (call id {id}): its message is the text the next model request carries",
                c.span_id, c.name
            ));
        }
        c.result = Some(CallResult::Value(match content {
            Value::String(t) => crate::extract::source::parse_json_or_literal(&t),
            other => other,
        }));
        notes.push(format!(
            "tool span {} recorded no result for `{}` (call id {id}): its result is the one the next model request carries{}",
            c.span_id,
            c.name,
            if paired > 0 { " (paired by order)" } else { "" }
        ));
    }
}

/// The requests of `trace`'s spans that started at `from` or later (the
/// others left empty: a request before an ask answers none of it).
fn requests_from(trace: &Trace, from: u64) -> Vec<Request> {
    let start = |i: usize| trace.spans[i].span.start_time_unix_nano;
    (0..trace.spans.len())
        .map(|i| match start(i) >= from {
            true => super::request_of(&trace.spans[i]),
            false => Request::default(),
        })
        .collect()
}

/// The result the first request after ask `at` carries under its call
/// `id` (and for its tool, when the result names one).
fn answer_to(trace: &Trace, requests: &[Request], at: &AskedAt, id: &str) -> Option<Value> {
    let start = |i: usize| trace.spans[i].span.start_time_unix_nano;
    let found = requests
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != at.span && start(i) >= start(at.span))
        .flat_map(|(i, r)| r.answers.iter().map(move |a| (i, a)))
        .filter(|(_, a)| a.id.as_deref() == Some(id))
        .filter(|(_, a)| a.name.as_deref().is_none_or(|n| n == at.asked.name))
        .min_by_key(|&(i, _)| (start(i), i));
    found.and_then(|(_, a)| a.content.clone())
}

/// The results the requests of `trace` carry for `asks` (each with a
/// call id), in their order: parsed as a result is, `None` where no
/// request answers one.
pub(super) fn answers_to(trace: &Trace, asks: &[&AskedAt]) -> Vec<Option<Value>> {
    let start = |i: usize| trace.spans[i].span.start_time_unix_nano;
    // Only requests from the first ask on can answer them.
    let from = asks.iter().map(|at| start(at.span)).min().unwrap_or(0);
    let requests = requests_from(trace, from);
    let parsed = |v: Value| match v {
        Value::String(t) => crate::extract::source::parse_json_or_literal(&t),
        other => other,
    };
    asks.iter()
        .map(|at| {
            let id = at.asked.id.as_deref()?;
            answer_to(trace, &requests, at, id).map(parsed)
        })
        .collect()
}

/// Failed call `c`, joined to ask `at` that no result answers by id, takes
/// the whole text telling its failure in the next request as its result,
/// when that text tells no other (`failed_texts::told_text`).
fn told_failure(
    trace: &Trace,
    at: &AskedAt,
    requests: &[Request],
    told: &mut Vec<(usize, String, Value)>,
    c: &mut ToolCall,
    notes: &mut Vec<String>,
) {
    let Some(text) = super::failed_texts::told_text(trace, at, requests, told) else {
        return;
    };
    c.result = Some(CallResult::Value(Value::String(text)));
    notes.push(format!(
        "tool span {} recorded no result for failed `{}`: its result is the text the next model request tells its failure in",
        c.span_id, c.name
    ));
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{Trace, TraceId};
    use crate::extract::tests::sp;
    use crate::extract::{Analysis, Extractor};

    /// A made-up vendor's model span: GenAI messages, the request's tool
    /// results as bare text parts (no call id).
    fn chat(id: u8, when: (u64, u64), input: Value, output: Value) -> crate::assemble::SpanRecord {
        chat_with(id, when, input, output, &[])
    }

    /// [`chat`] with more attributes.
    fn chat_with(
        id: u8,
        when: (u64, u64),
        input: Value,
        output: Value,
        more: &[(&str, &str)],
    ) -> crate::assemble::SpanRecord {
        let input = input.to_string();
        let output = output.to_string();
        let mut attrs = vec![
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.input.messages", input.as_str()),
            ("gen_ai.output.messages", output.as_str()),
        ];
        attrs.extend_from_slice(more);
        sp(id, Some(1), when, "chat acme", &attrs)
    }

    fn user() -> Value {
        json!({"role": "user", "parts": [{"type": "text", "content": "plan"}]})
    }

    fn asks(id: &str, name: &str, args: Value) -> Value {
        json!({"role": "assistant", "parts": [{"type": "tool_call", "id": id, "name": name, "arguments": args}]})
    }

    fn bare(text: &str) -> Value {
        json!({"role": "tool", "parts": [{"type": "text", "content": text}]})
    }

    fn analyze(spans: Vec<crate::assemble::SpanRecord>) -> Analysis {
        Extractor::default().analyze(&Trace::new(TraceId([7; 16]), spans, 0))
    }

    fn loop_root() -> crate::assemble::SpanRecord {
        sp(1, None, (0, 100), "loop", &[])
    }

    #[test]
    fn bare_results_pair_with_the_turn_by_order() {
        let a = asks("c1", "find_room", json!({"town": "Oslo"}));
        let b = asks("c2", "rent_kayak", json!({"hours": 2}));
        let spans = vec![
            loop_root(),
            chat(2, (10, 20), json!([user()]), json!([a])),
            chat(
                3,
                (30, 40),
                json!([user(), a, bare("{\"room\":\"12\"}")]),
                json!([b]),
            ),
            chat(
                4,
                (50, 60),
                json!([user(), a, bare("{\"room\":\"12\"}"), b, bare("ok")]),
                json!([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}]),
            ),
        ];
        let got = analyze(spans);
        let calls: Vec<(&str, Value)> = got
            .calls
            .iter()
            .map(|c| {
                (
                    c.name.as_str(),
                    c.result.as_ref().map(|r| r.to_value()).unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            calls,
            vec![
                ("find_room", json!({"room": "12"})),
                ("rent_kayak", json!("ok"))
            ]
        );
        assert!(got.calls.iter().all(|c| c.from == Some("conversation")));
        assert!(
            got.notes
                .iter()
                .any(|n| n.contains("carry no call id: paired by order")),
            "{:?}",
            got.notes
        );
    }

    #[test]
    fn offered_tools_under_an_input_key_are_no_results() {
        // The request's tool definitions sit under an input-like key, many
        // of them, one describing "tool_result"s: they answer nothing, and
        // the messages' bare results still pair by order.
        let a = asks("c1", "find_room", json!({"town": "Oslo"}));
        let offered: Vec<Value> = ["find_room", "ls", "grep", "task"]
            .iter()
            .map(|n| json!({"type": "function", "name": n, "description": "reads tool_result files"}))
            .collect();
        let offered = Value::Array(offered).to_string();
        let more = [("acme.request.available_tools", offered.as_str())];
        let chat = |id, when, input, output| chat_with(id, when, input, output, &more);
        let spans = vec![
            loop_root(),
            chat(2, (10, 20), json!([user()]), json!([a])),
            chat(3, (30, 40), json!([user(), a, bare("12")]), json!([])),
        ];
        let got = analyze(spans);
        let calls: Vec<(&str, Value)> = got
            .calls
            .iter()
            .map(|c| {
                let r = c.result.as_ref().map(|r| r.to_value());
                (c.name.as_str(), r.unwrap_or_default())
            })
            .collect();
        assert_eq!(calls, vec![("find_room", json!(12))], "{:?}", got.warnings);
    }

    /// A history that keeps no model turn: each request lists the user's
    /// message and every result so far (OpenLIT's Mistral stream).
    fn turnless(more_results: &[&str]) -> Vec<crate::assemble::SpanRecord> {
        let a = json!({"role": "assistant", "parts": [
            {"type": "tool_call", "id": "c1", "name": "find_room", "arguments": {"town": "Oslo"}},
            {"type": "tool_call", "id": "c2", "name": "find_room", "arguments": {"town": "Bergen"}}]});
        let b = asks("c3", "rent_kayak", json!({"hours": 2}));
        let done = json!([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}]);
        let mut last = vec![user(), bare("12"), bare("14")];
        last.extend(more_results.iter().map(|r| bare(r)));
        vec![
            loop_root(),
            chat(2, (10, 20), json!([user()]), json!([a])),
            chat(
                3,
                (30, 40),
                json!([user(), bare("12"), bare("14")]),
                json!([b]),
            ),
            chat(4, (50, 60), Value::Array(last), done),
        ]
    }

    #[test]
    fn a_history_without_model_turns_ends_with_the_last_turn_s_results() {
        let results = |spans| {
            let got = analyze(spans);
            let r = |c: &crate::extract::ToolCall| c.result.as_ref().map(|r| r.to_value());
            got.calls
                .iter()
                .map(|c| (c.name.clone(), r(c)))
                .collect::<Vec<_>>()
        };
        let called = |n: &str, v: Value| (n.to_string(), Some(v));
        assert_eq!(
            results(turnless(&["ok"])),
            vec![
                called("find_room", json!(12)),
                called("find_room", json!(14)),
                called("rent_kayak", json!("ok")),
            ]
        );
        // One result too many or too few before the turn's: the last
        // turn's call is listed, not counted.
        for off in [&["x", "ok"][..], &[][..]] {
            let got = results(turnless(off));
            assert_eq!(got.len(), 2, "{off:?}: {got:?}");
        }
    }

    #[test]
    fn counts_that_differ_pair_nothing() {
        // One call asked, two bare results after it: not paired.
        let a = asks("c1", "find_room", json!({"town": "Oslo"}));
        let spans = vec![
            loop_root(),
            chat(2, (10, 20), json!([user()]), json!([a])),
            chat(
                3,
                (30, 40),
                json!([user(), a, bare("x"), bare("y")]),
                json!([]),
            ),
        ];
        let got = analyze(spans);
        assert!(got.calls.is_empty(), "{:?}", got.calls);
        assert!(got
            .warnings
            .iter()
            .any(|w| w.contains("listed, not counted")));
    }

    #[test]
    fn a_tool_span_without_result_takes_the_paired_one() {
        // The tool span is named after a wrapper class and records a
        // placeholder; the history lost the model's calls (empty text).
        let a = asks("c1", "find_room", json!({"town": "Oslo"}));
        let lost = json!({"role": "assistant", "parts": [{"type": "text", "content": ""}]});
        let spans = vec![
            loop_root(),
            chat(2, (10, 20), json!([user()]), json!([a])),
            sp(
                3,
                Some(1),
                (22, 28),
                "execute_tool Wrapper",
                &[
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", "Wrapper"),
                    ("gen_ai.tool.call.id", "c1"),
                    ("gen_ai.tool.call.arguments", "{\"town\":\"Oslo\"}"),
                    ("gen_ai.tool.call.result", "[object ToolMessage]"),
                ],
            ),
            chat(
                4,
                (30, 40),
                json!([user(), lost, bare("{\"room\":\"12\"}")]),
                json!([]),
            ),
        ];
        let got = analyze(spans);
        assert_eq!(got.calls.len(), 1, "{:?}", got.calls);
        let c = &got.calls[0];
        assert_eq!(c.name, "find_room");
        assert_eq!(
            c.result.as_ref().map(|r| r.to_value()),
            Some(json!({"room": "12"}))
        );
        assert!(
            got.notes.iter().any(|n| n.contains("recorded no result")),
            "{:?}",
            got.notes
        );
    }

    /// A made-up vendor's tool span of `hoist_sail`, failed with its own
    /// message, no call id and no result.
    fn failed_hoist(id: u8, when: (u64, u64), args: &str) -> crate::assemble::SpanRecord {
        let attrs = [
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "hoist_sail"),
            ("gen_ai.tool.call.arguments", args),
        ];
        let mut s = sp(id, Some(1), when, "execute_tool hoist_sail", &attrs);
        s.span.status = Some(opentelemetry_proto::tonic::trace::v1::Status {
            code: 2,
            message: "mast 2 is cracked".into(),
        });
        s
    }

    /// The loop's text telling `hoist_sail` failed with `args` (a Python
    /// literal), its own turn dropped from the history.
    fn told(args: &str) -> String {
        format!(
            "Error:\nError executing tool 'hoist_sail' with arguments {args}: ValueError: mast 2 is cracked\nPlease try again or use another tool\n"
        )
    }

    /// The trace: the model asks for `hoist_sail` `{"mast": 2}`, its span
    /// fails, and the next request holds an empty model turn and `text`.
    fn told_trace(text: &str) -> Vec<crate::assemble::SpanRecord> {
        let turn = asks("call_h1", "hoist_sail", json!({"mast": 2}));
        let empty = json!({"role": "assistant", "parts": [{"type": "text", "content": ""}]});
        let said = json!([{"role": "assistant", "parts": [{"type": "text", "content": "no"}]}]);
        vec![
            loop_root(),
            chat(2, (1, 10), json!([user()]), json!([turn])),
            failed_hoist(3, (11, 20), r#"{"mast": 2}"#),
            chat(4, (21, 30), json!([user(), empty, bare_user(text)]), said),
        ]
    }

    fn bare_user(text: &str) -> Value {
        json!({"role": "user", "parts": [{"type": "text", "content": text}]})
    }

    #[test]
    fn a_failed_call_told_in_text_takes_that_text_as_its_result() {
        let text = told("{'mast': 2}");
        let a = analyze(told_trace(&text));
        assert_eq!(a.calls.len(), 1, "{:?}", a.warnings);
        let c = &a.calls[0];
        // The span's status and message; the result is what the model read.
        assert_eq!(c.status, crate::extract::CallStatus::Error);
        assert_eq!(c.error_message.as_deref(), Some("mast 2 is cracked"));
        assert_eq!(
            c.result.as_ref().map(|r| r.to_value()),
            Some(Value::String(text))
        );
    }

    #[test]
    fn a_text_of_other_arguments_or_of_two_failures_is_no_result() {
        // Near misses: the text tells a call with other arguments; a
        // message telling two failures is no one call's result.
        let twice = format!("{}{}", told("{'mast': 2}"), told("{'mast': 3}"));
        for text in [told("{'mast': 3}"), twice] {
            let a = analyze(told_trace(&text));
            assert_eq!(a.calls.len(), 1, "{:?}", a.warnings);
            assert_eq!(a.calls[0].status, crate::extract::CallStatus::Error);
            assert!(
                a.calls[0].result.is_none(),
                "{text}: {:?}",
                a.calls[0].result
            );
        }
    }

    #[test]
    fn a_failed_call_s_result_is_the_one_under_its_own_id_only() {
        let said = json!([{"role": "assistant", "parts": [{"type": "text", "content": "no"}]}]);
        let answer = |id: &str, text: &str| json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": id, "response": text}]});
        let lower = |id: u8, when: (u64, u64)| {
            let attrs = [
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "lower_sail"),
                ("gen_ai.tool.call.arguments", "{}"),
                ("gen_ai.tool.call.result", "\"lowered\""),
            ];
            sp(id, Some(1), when, "execute_tool lower_sail", &attrs)
        };
        // Near miss: the next request answers the turn's other call only.
        let both = json!({"role": "assistant", "parts": [
            {"type": "tool_call", "id": "call_h1", "name": "hoist_sail", "arguments": {"mast": 2}},
            {"type": "tool_call", "id": "call_l1", "name": "lower_sail", "arguments": {}}
        ]});
        let spans = vec![
            loop_root(),
            chat(2, (1, 10), json!([user()]), json!([both])),
            failed_hoist(3, (11, 20), r#"{"mast": 2}"#),
            lower(4, (11, 20)),
            chat(
                5,
                (21, 30),
                json!([user(), both, answer("call_l1", "lowered")]),
                said.clone(),
            ),
        ];
        let a = analyze(spans);
        let hoist = a.calls.iter().find(|c| c.name == "hoist_sail");
        assert!(hoist.is_some_and(|c| c.result.is_none()), "{:?}", a.calls);
        // Near miss: a later call of the same tool, answered under its id.
        let first = asks("call_h1", "hoist_sail", json!({"mast": 2}));
        let second = asks("call_h2", "hoist_sail", json!({"mast": 3}));
        let mut ok = failed_hoist(5, (31, 40), r#"{"mast": 3}"#);
        ok.span.status = None;
        let spans = vec![
            loop_root(),
            chat(2, (1, 10), json!([user()]), json!([first])),
            failed_hoist(3, (11, 20), r#"{"mast": 2}"#),
            chat(4, (21, 30), json!([user(), first]), json!([second])),
            ok,
            chat(
                6,
                (41, 50),
                json!([user(), first, second, answer("call_h2", "hoisted")]),
                said.clone(),
            ),
        ];
        let a = analyze(spans);
        assert_eq!(a.calls.len(), 2, "{:?}", a.warnings);
        assert!(a.calls[0].result.is_none(), "{:?}", a.calls[0].result);
        assert_eq!(
            a.calls[1].result.as_ref().map(|r| r.to_value()),
            Some(json!("hoisted"))
        );
        // Under its own id, the text the model was sent.
        let own = answer("call_h1", "Error: mast 2 is cracked");
        let spans = vec![
            loop_root(),
            chat(2, (1, 10), json!([user()]), json!([first])),
            failed_hoist(3, (11, 20), r#"{"mast": 2}"#),
            chat(4, (21, 30), json!([user(), first, own]), said),
        ];
        let a = analyze(spans);
        let c = &a.calls[0];
        assert_eq!(c.error_message.as_deref(), Some("mast 2 is cracked"));
        assert_eq!(
            c.result.as_ref().map(|r| r.to_value()),
            Some(json!("Error: mast 2 is cracked"))
        );
    }
}
