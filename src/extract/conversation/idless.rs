//! Calls and results without call ids (docs/conventions.md, "The
//! conversation witness", "Calls and results without ids").
//!
//! Some providers give no call ids at all (Gemini's `functionCall` /
//! `functionResponse` parts, Cohere v1's `tool_calls` / `tool_results`,
//! Ollama's `tool_calls`), and some instrumentations record an empty id. A
//! result then answers a call by the tool's name where it names one, else
//! by order among the calls still open:
//!
//! - **In a request's history.** Every request repeats the conversation,
//!   so a call without an id is known by its place in it: the `k`-th call
//!   of the history gets the positional id [`positional`]`(k)`, the same in
//!   every request of the conversation, and the results that follow its
//!   model turn take the id of the open call of that turn they name, else
//!   of the first open one. The witness's id machinery (once per call id,
//!   calls counted where a request first shows them) then applies as is.
//! - **From a model's output.** A call the output asked for without an id
//!   is answered by the first request after the model answered that
//!   carries a result without a (real) id naming that tool, not used yet;
//!   failing that, by that request's first unused result after its last
//!   model turn that names neither a call nor a tool.
//! - **Into the next trace.** When each model call is a trace of its own,
//!   such a call left open is carried with the id [`by_name`] of its tool,
//!   which the results ending the next trace's first request that name the
//!   tool and no call also get (`extract::carry` joins them as by id).
//!
//! A result that answers nothing stays unused; a call never answered is
//! listed, not counted.

use serde_json::{Map, Value};

use super::{has_any_input, Answer, AskedAt, Request};
use crate::assemble::Trace;
use crate::extract::requested::Asked;

/// What starts a positional id, and an id by the tool's name: control
/// characters no provider's call id holds, so neither meets a real one.
const MARK: char = '\u{1}';
const NAME_MARK: char = '\u{2}';

/// The positional id of the `k`-th call of a conversation.
pub(super) fn positional(k: usize) -> String {
    format!("{MARK}{k}")
}

/// Whether `id` is a positional id ([`positional`]), not a recorded one.
pub(super) fn is_positional(id: &str) -> bool {
    id.starts_with(MARK)
}

/// The id a call without one, or a result that names its tool and no
/// call, has across traces: the tool's name ([`by_name`]).
pub(super) fn by_name(name: &str) -> String {
    format!("{NAME_MARK}{name}")
}

/// Whether `id` was made here ([`positional`], [`by_name`]).
pub(crate) fn is_made(id: &str) -> bool {
    id.starts_with([MARK, NAME_MARK])
}

/// The tool an id made by its name ([`by_name`]) names.
pub(crate) fn named_tool(id: &str) -> Option<&str> {
    id.strip_prefix(NAME_MARK)
}

/// Gives the results that end the first request of a trace and name a
/// tool but no call their ids by name ([`by_name`]), so that a call an
/// earlier trace's output asked for without an id joins them as a call
/// with an id does (`extract::carry`; each model call a trace of its own).
pub(super) fn key_by_name(trace: &Trace, requests: &mut [Request]) {
    let start = |i: usize| trace.spans[i].span.start_time_unix_nano;
    let first = (0..trace.spans.len())
        .filter(|&i| has_any_input(&trace.spans[i]))
        .min_by_key(|&i| (start(i), i));
    let Some(r) = first.and_then(|f| requests.get_mut(f)) else {
        return;
    };
    for &k in &r.trailing {
        if let Some(a) = r.answers.get_mut(k).filter(|a| a.id.is_none()) {
            a.id = a.name.as_deref().map(by_name);
        }
    }
}

/// Gives the calls of a model turn that have no id their positional ids
/// (`first`: how many calls the history held before this turn).
pub(super) fn number_turn(calls: &mut [Asked], first: usize) {
    for (k, a) in calls.iter_mut().enumerate() {
        if a.id.is_none() {
            a.id = Some(positional(first + k));
        }
    }
}

/// Pairs the results `answers[from..]`, which follow the model turn
/// `turn`, with that turn's calls that had no id (positional ids), by the
/// tool's name where a result names one, else by order; `paired` holds the
/// positions of the turn's calls already answered.
pub(super) fn pair_after_turn(
    turn: &[Asked],
    answers: &mut [Answer],
    from: usize,
    paired: &mut Vec<usize>,
) {
    for ans in answers.iter_mut().skip(from) {
        if ans.id.is_some() {
            continue;
        }
        let open =
            |k: &usize| !paired.contains(k) && turn[*k].id.as_deref().is_some_and(is_positional);
        let k = match ans.name.as_deref() {
            Some(n) => (0..turn.len()).filter(open).find(|&k| turn[k].name == n),
            None => (0..turn.len()).find(open),
        };
        if let Some(k) = k {
            paired.push(k);
            ans.id = turn[k].id.clone();
            ans.name.get_or_insert_with(|| turn[k].name.clone());
        }
    }
}

/// The key of Cohere v1's tool results (a request body's, a `TOOL`
/// message's, or an attribute's list of them).
pub(super) const COHERE_RESULTS: &str = "tool_results";

/// A Cohere v1 tool result: `{"call": {"name", "parameters"}, "outputs":
/// [...]}`, the name of the call it answers and what the tool gave (its one
/// output, else the list).
pub(super) fn cohere_result(o: &Map<String, Value>) -> Option<Answer> {
    let call = o.get("call")?.as_object()?;
    let outputs = o.get("outputs")?;
    let content = match outputs.as_array().map(Vec::as_slice) {
        Some([one]) => super::object_wrapped(one.clone()),
        _ => outputs.clone(),
    };
    Some(Answer {
        id: None,
        name: call
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .map(str::to_string),
        content: Some(content),
        ..Answer::default()
    })
}

/// A result without a recorded id, not used yet, that answers call `at`
/// (asked for without an id): see the module's doc. `used` holds the
/// (request, answer) positions already taken.
pub(super) fn answer_for<'r>(
    trace: &Trace,
    at: &AskedAt,
    requests: &'r [Request],
    used: &mut Vec<(usize, usize)>,
) -> Option<(usize, &'r Answer)> {
    let start = |i: usize| trace.spans[i].span.start_time_unix_nano;
    let answered = trace.spans[at.span].span.end_time_unix_nano;
    // (Or the asking span's own request, when its history holds the call:
    // `later`.)
    let mut later: Vec<usize> = (0..requests.len())
        .filter(|&i| {
            (i != at.span && start(i) >= answered)
                || (i == at.span && super::later::carries(&requests[i], &at.asked))
        })
        .collect();
    later.sort_by_key(|&i| (start(i), i));
    let free = |a: &Answer| a.id.as_deref().is_none_or(is_made);
    let taken = |used: &[(usize, usize)], i: usize, k: usize, a: &Answer| {
        used.contains(&(i, k))
            || a.id
                .as_deref()
                .filter(|id| is_positional(id))
                .is_some_and(|id| {
                    used.iter()
                        .any(|&(j, m)| requests[j].answers[m].id.as_deref() == Some(id))
                })
    };
    let by_name = later.iter().find_map(|&i| {
        let r = &requests[i];
        // The results after the last model turn first: earlier ones repeat
        // the history.
        let order = r
            .trailing
            .iter()
            .copied()
            .chain((0..r.answers.len()).filter(|k| !r.trailing.contains(k)));
        order
            .filter(|&k| {
                let a = &r.answers[k];
                free(a) && a.name.as_deref() == Some(at.asked.name.as_str())
            })
            .find(|&k| !taken(used, i, k, &r.answers[k]))
            .map(|k| (i, k))
    });
    let found = by_name.or_else(|| {
        // The next request, when it is one: its bare results by order
        // (past a request of another conversation: `continues`).
        let &i = later.iter().find(|&&i| has_any_input(&trace.spans[i]))?;
        let bare = |i: usize| {
            let r = &requests[i];
            r.trailing
                .iter()
                .copied()
                .filter(|&k| r.answers[k].id.is_none() && r.answers[k].name.is_none())
                .find(|&k| !used.contains(&(i, k)))
                .map(|k| (i, k))
        };
        bare(i).or_else(|| {
            let fits = |j: usize| bare(j).is_some();
            bare(super::continues::next_of(
                trace, requests, at.span, i, fits,
            )?)
        })
    });
    let (i, k) = found?;
    used.push((i, k));
    Some((i, &requests[i].answers[k]))
}

/// The note of a call asked for without an id and the result that
/// answers it (`answer`: the request's span and the result).
pub(super) fn paired_note(trace: &Trace, at: &AskedAt, (i, answer): (usize, &Answer)) -> String {
    let how = if answer.name.is_some() {
        "by the tool's name"
    } else {
        "by order"
    };
    format!(
        "`{}` asked for in span {} has no call id: its result is the one the request of span {} carries, paired {how}",
        at.asked.name, trace.spans[at.span].span_id, trace.spans[i].span_id
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{Trace, TraceId};
    use crate::extract::tests::sp;
    use crate::extract::{Analysis, Extractor};

    fn analyze(spans: Vec<crate::assemble::SpanRecord>) -> Analysis {
        Extractor::default().analyze(&Trace::new(TraceId([9; 16]), spans, 0))
    }

    fn got(a: &Analysis) -> Vec<(String, Value, Value)> {
        a.calls
            .iter()
            .map(|c| {
                (
                    c.name.clone(),
                    c.args.value().cloned().unwrap_or_default(),
                    c.result.as_ref().map(|r| r.to_value()).unwrap_or_default(),
                )
            })
            .collect()
    }

    /// A made-up vendor's model span: its own input and output keys, the
    /// provider's bodies in them.
    fn model(id: u8, when: (u64, u64), input: Value, output: Value) -> crate::assemble::SpanRecord {
        let (i, o) = (input.to_string(), output.to_string());
        sp(
            id,
            Some(1),
            when,
            "acme.generate",
            &[
                ("acme.span.kind", "LLM"),
                ("acme.request.body", &i),
                ("acme.response.tool_calls", &o),
            ],
        )
    }

    fn root() -> crate::assemble::SpanRecord {
        sp(1, None, (0, 1000), "loop", &[])
    }

    fn user() -> Value {
        json!({"role": "user", "parts": [{"text": "plan"}]})
    }

    fn call(name: &str, args: Value) -> Value {
        json!({"role": "model", "parts": [{"functionCall": {"name": name, "args": args}}]})
    }

    fn reply(name: &str, v: Value) -> Value {
        json!({"role": "user", "parts": [{"functionResponse": {"name": name, "response": v}}]})
    }

    #[test]
    fn gemini_parts_pair_by_name_and_twice_the_same_tool_by_order() {
        let a1 = json!({"town": "Oslo"});
        let a2 = json!({"town": "Bergen"});
        let spans = vec![
            root(),
            model(
                2,
                (10, 20),
                json!({"contents": [user()]}),
                json!([{"name": "find_room", "args": a1}]),
            ),
            model(
                3,
                (30, 40),
                json!({"contents": [user(), call("find_room", a1.clone()), reply("find_room", json!({"room": 1}))]}),
                json!([{"name": "find_room", "args": a2}]),
            ),
            model(
                4,
                (50, 60),
                json!({"contents": [user(), call("find_room", a1.clone()), reply("find_room", json!({"room": 1})),
                    call("find_room", a2.clone()), reply("find_room", json!({"room": 2}))]}),
                json!([]),
            ),
        ];
        let a = analyze(spans);
        assert_eq!(
            got(&a),
            vec![
                ("find_room".into(), a1, json!({"room": 1})),
                ("find_room".into(), a2, json!({"room": 2})),
            ],
            "{:?} {:?}",
            a.notes,
            a.warnings
        );
        assert!(
            a.notes.iter().all(|n| !n.contains('\u{1}')),
            "{:?}",
            a.notes
        );
        assert_eq!(
            a.notes
                .iter()
                .filter(|n| n.contains("paired by the tool's name"))
                .count(),
            2,
            "{:?}",
            a.notes
        );
    }

    #[test]
    fn calls_only_in_the_history_count_once_and_bare_results_pair_by_order() {
        // No output names a call (the completion was dropped); each
        // request carries the calls without ids and the results as bare
        // text; two spans record each model call (one inside the other).
        let m = |id: u8, parent: u8, when: (u64, u64), msgs: Value| {
            let t = msgs.to_string();
            sp(
                id,
                Some(parent),
                when,
                "acme.chat",
                &[("acme.span.kind", "LLM"), ("acme.input", &t)],
            )
        };
        let asks = |name: &str, args: Value| json!({"role": "assistant", "tool_calls": [{"id": "", "function": {"name": name, "arguments": args}}]});
        let bare = |t: &str| json!({"role": "tool", "content": t});
        let u = json!({"role": "user", "content": "plan"});
        let h1 = json!([u, asks("find_room", json!({"town": "Oslo"})), bare("12")]);
        let h2 = json!([
            u,
            asks("find_room", json!({"town": "Oslo"})),
            bare("12"),
            asks("rent_kayak", json!({"hours": 2})),
            bare("ok")
        ]);
        let spans = vec![
            root(),
            m(2, 1, (10, 20), json!([u])),
            m(3, 2, (11, 19), json!([u])),
            m(4, 1, (30, 40), h1.clone()),
            m(5, 4, (31, 39), h1),
            m(6, 1, (50, 60), h2.clone()),
            m(7, 6, (51, 59), h2),
        ];
        let a = analyze(spans);
        assert_eq!(
            got(&a),
            vec![
                ("find_room".into(), json!({"town": "Oslo"}), json!(12)),
                ("rent_kayak".into(), json!({"hours": 2}), json!("ok")),
            ],
            "{:?} {:?}",
            a.notes,
            a.warnings
        );
    }

    #[test]
    fn a_call_without_id_is_answered_by_name_in_the_next_trace() {
        // Each model call a trace of its own; the history keeps no call,
        // only the result naming its tool (LangChain's Gemini parts).
        let chat = |tid: u8, id: u8, when: (u64, u64), input: Value, output: Value| {
            let (i, o) = (input.to_string(), output.to_string());
            let s = sp(
                id,
                None,
                when,
                "acme.chat",
                &[
                    ("acme.span.kind", "llm"),
                    ("acme.prompt", &i),
                    ("acme.completion", &o),
                ],
            );
            Trace::new(TraceId([tid; 16]), vec![s], 0)
        };
        let u = json!({"role": "user", "content": "plan"});
        let asks = json!({"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "find_room", "arguments": "{\"town\":\"Oslo\"}"}}]});
        let answer = json!({"role": "user", "content": [{"type": "function_response",
            "function_response": {"name": "find_room", "response": {"room": 1}}}]});
        let first = chat(1, 2, (10, 20), json!({"messages": [u]}), asks);
        let next = chat(
            2,
            3,
            (30, 40),
            json!({"messages": [u, {"role": "model", "content": ""}, answer]}),
            json!({"role": "assistant", "content": "done"}),
        );
        let x = Extractor::default();
        let a = x.analyze(&first);
        assert!(a.calls.is_empty(), "{:?}", a.calls);
        let open = a.open.expect("the call is left open");
        assert!(a
            .notes
            .iter()
            .chain(&a.warnings)
            .all(|n| !n.contains('\u{2}')));
        // Read alone, the next trace names the result it cannot place.
        let alone = x.analyze(&next);
        assert!(alone.calls.is_empty(), "{:?}", alone.calls);
        assert_eq!(alone.open.map(|o| o.answers.len()), Some(1));
        let b = x.analyze_carried(&next, &open.asks);
        assert_eq!(
            got(&b),
            vec![(
                "find_room".into(),
                json!({"town": "Oslo"}),
                json!({"room": 1})
            )],
            "{:?}",
            b.notes
        );
        // A result of another tool answers nothing.
        let other = chat(
            3,
            4,
            (30, 40),
            json!({"messages": [u, {"role": "model", "content": ""},
                {"role": "user", "content": [{"type": "function_response",
                    "function_response": {"name": "rent_kayak", "response": {}}}]}]}),
            json!({"role": "assistant", "content": "done"}),
        );
        assert!(x.analyze_carried(&other, &open.asks).calls.is_empty());
    }

    #[test]
    fn providers_own_bodies_without_ids_are_read() {
        // A made-up tracer keeping each call's request and response body.
        let body = |id: u8, when: (u64, u64), input: Value, output: Value| {
            let (i, o) = (input.to_string(), output.to_string());
            sp(
                id,
                Some(1),
                when,
                "acme.call",
                &[
                    ("acme.span_type", "LLM"),
                    ("acme.inputs", &i),
                    ("acme.outputs", &o),
                ],
            )
        };
        let find = json!({"name": "find_room", "parameters": {"town": "Oslo"}});
        // Cohere v1: the response repeats the history in `chat_history`;
        // the next request carries the history and the new results.
        let cohere = vec![
            root(),
            body(
                2,
                (10, 20),
                json!({"message": "plan"}),
                json!({"text": "", "tool_calls": [find],
                "chat_history": [{"role": "USER", "message": "plan"}]}),
            ),
            body(
                3,
                (30, 40),
                json!({"message": "", "chat_history": [{"role": "USER", "message": "plan"},
                    {"role": "CHATBOT", "message": "", "tool_calls": [find]}],
                    "tool_results": [{"call": find, "outputs": [{"room": 1}]}]}),
                json!({"text": "done", "chat_history": [{"role": "CHATBOT", "tool_calls": [find]},
                    {"role": "TOOL", "tool_results": [{"call": find, "outputs": [{"room": 1}]}]}]}),
            ),
        ];
        let want = vec![(
            "find_room".to_string(),
            json!({"town": "Oslo"}),
            json!({"room": 1}),
        )];
        let a = analyze(cohere);
        assert_eq!(got(&a), want, "{:?} {:?}", a.notes, a.warnings);
        // OpenAI's older API: `function_call`, answered by a `function`
        // message naming the function.
        let asks = json!({"role": "assistant", "content": null,
            "function_call": {"name": "find_room", "arguments": "{\"town\": \"Oslo\"}"}});
        let legacy = vec![
            root(),
            body(
                2,
                (10, 20),
                json!({"messages": [{"role": "user", "content": "plan"}]}),
                json!({"choices": [{"message": asks}]}),
            ),
            body(
                3,
                (30, 40),
                json!({"messages": [{"role": "user", "content": "plan"}, asks,
                    {"role": "function", "name": "find_room", "content": "{\"room\": 1}"}]}),
                json!({"choices": [{"message": {"role": "assistant", "content": "done"}}]}),
            ),
        ];
        let a = analyze(legacy);
        assert_eq!(got(&a), want, "{:?} {:?}", a.notes, a.warnings);
        // Ollama: no ids; the result names its tool in `tool_name`.
        let asks = json!({"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "find_room", "arguments": {"town": "Oslo"}}}]});
        let ollama = vec![
            root(),
            body(
                2,
                (10, 20),
                json!({"messages": [{"role": "user", "content": "plan"}]}),
                json!({"message": asks}),
            ),
            body(
                3,
                (30, 40),
                json!({"messages": [{"role": "user", "content": "plan"}, asks,
                    {"role": "tool", "tool_name": "find_room", "content": "{\"room\": 1}"}]}),
                json!({"message": {"role": "assistant", "content": "done"}}),
            ),
        ];
        let a = analyze(ollama);
        assert_eq!(got(&a), want, "{:?} {:?}", a.notes, a.warnings);
    }

    #[test]
    fn bare_results_answer_calls_without_ids_by_order() {
        // Two calls without ids in one turn; the history lost them and the
        // results name nothing: the order pairs them.
        let two = json!([{"name": "find_room", "args": {"town": "Oslo"}},
            {"name": "rent_kayak", "args": {"hours": 2}}]);
        let lost = json!({"role": "model", "parts": [{"text": ""}]});
        let bare = |t: &str| json!({"role": "tool", "content": t});
        let spans = vec![
            root(),
            model(2, (10, 20), json!({"contents": [user()]}), two),
            model(
                3,
                (30, 40),
                json!({"contents": [user(), lost, bare("{\"room\": 1}"), bare("ok")]}),
                json!([]),
            ),
        ];
        let a = analyze(spans);
        assert_eq!(
            got(&a),
            vec![
                (
                    "find_room".into(),
                    json!({"town": "Oslo"}),
                    json!({"room": 1})
                ),
                ("rent_kayak".into(), json!({"hours": 2}), json!("ok")),
            ],
            "{:?} {:?}",
            a.notes,
            a.warnings
        );
    }

    #[test]
    fn cohere_results_answer_by_name_and_an_unanswered_call_is_listed() {
        let asked = json!([{"name": "find_room", "parameters": {"town": "Oslo"}},
            {"name": "rent_kayak", "parameters": {"hours": 2}}])
        .to_string();
        let results = json!([{"call": {"name": "find_room", "parameters": {"town": "Oslo"}},
            "outputs": [{"room": 1}]}])
        .to_string();
        let chat = |id: u8, when: (u64, u64), attrs: &[(&str, &str)]| {
            let mut all = vec![("acme.operation.name", "chat")];
            all.extend_from_slice(attrs);
            sp(id, Some(1), when, "acme.chat", &all)
        };
        let spans = vec![
            root(),
            chat(2, (10, 20), &[("acme.response.tool_calls", &asked)]),
            chat(3, (30, 40), &[("acme.request.tool_results", &results)]),
        ];
        let a = analyze(spans);
        assert_eq!(
            got(&a),
            vec![(
                "find_room".into(),
                json!({"town": "Oslo"}),
                json!({"room": 1})
            )],
            "{:?}",
            a.warnings
        );
        assert!(a
            .warnings
            .iter()
            .any(|w| w.contains("`rent_kayak`") && w.contains("listed, not counted")));
    }
}
