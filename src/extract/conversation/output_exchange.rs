//! A model output that lists the exchange the client ran: its calls and
//! the results answering them (docs/conventions.md, "The conversation
//! witness", "Results in an output").
//!
//! Some records of a whole run keep no request at all, only what the run
//! returned: the messages it added to the conversation. Langtrace's
//! wrapper of the AI SDK's `generateText` writes one span whose output
//! event holds the SDK's response messages, an assistant message with
//! `tool-call` parts, then a `tool` message with the `tool-result` parts
//! answering them, turn after turn. Such a list is the exchange the client
//! ran, in the message shapes a request carries: read as a request, its
//! results answer the calls the same output asks for (the span's own
//! request, as [`super::later::carries`] allows, when the request's history
//! holds the call). Google's automatic function calling history is the
//! same thing under a key of its own ([`super::afc`]).
//!
//! Narrow on purpose: only output texts with a result's role or part type
//! in them ([`super::may_hold_results`]) are parsed, and the list counts
//! only when every result in it answers, under its recorded call id, a call
//! the same list made before it. An output echoing an earlier history
//! (results of calls it does not list) or pairing results by order is left
//! to the readers of requests.

use serde_json::Value;

use super::look::Look;
use super::{bodies, content_events, message_text, read_request, Request, OUTPUT_KEYS};
use crate::assemble::SpanRecord;
use crate::extract::sides::Side;

/// The form a request read from an output is said to come in.
pub(super) const FORM: &str = "output-exchange";

/// The output texts of span `s` that may list results: its named output
/// keys, its output events, and (a model call) its output bodies, each a
/// JSON list or object that names a result's role or part type.
fn texts(s: &SpanRecord, look: Look) -> impl Iterator<Item = &str> + '_ {
    // Only the named keys the span has (`look`), and events when it has any.
    let named = OUTPUT_KEYS
        .iter()
        .enumerate()
        .filter(move |(j, _)| look.named_out & (1 << j) != 0)
        .filter_map(move |(_, k)| message_text(s, k));
    let events = (!s.span.events.is_empty())
        .then(|| content_events::output_texts(s))
        .into_iter()
        .flatten();
    let bodies = look
        .model_call
        .then(|| bodies::bodies_of_model_call(s, Side::Output))
        .into_iter()
        .flatten();
    named.chain(events).chain(bodies).filter(|t| {
        let t = t.trim_start();
        // The first byte before the search for the words of results.
        t.starts_with(['[', '{']) && super::may_hold_results(t)
    })
}

/// The exchange span `s`'s output lists, read as a request: of its output
/// texts, the one whose results answer the most calls.
pub(super) fn request(s: &SpanRecord, look: Look) -> Option<Request> {
    let mut best: Option<Request> = None;
    for t in texts(s, look) {
        let Ok(v) = serde_json::from_str::<Value>(t) else {
            continue;
        };
        let r = read_request(&v, FORM);
        if answers_its_own_calls(&r)
            && best
                .as_ref()
                .is_none_or(|b| r.answers.len() > b.answers.len())
        {
            best = Some(r);
        }
    }
    best
}

/// Whether every result of `r` answers, under the id it was recorded with,
/// a call of `r`'s own history of the same tool (when the result names
/// one), and there is at least one.
fn answers_its_own_calls(r: &Request) -> bool {
    // Ids given by order are the request reader's guess: not this list's.
    if r.answers.is_empty() || r.by_order || r.rekeyed != (0, 0) {
        return false;
    }
    r.answers.iter().all(|a| {
        let Some(id) = a.id.as_deref() else {
            return false;
        };
        r.history
            .iter()
            .any(|h| h.id.as_deref() == Some(id) && a.name.as_deref().is_none_or(|n| n == h.name))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::super::read_request;
    use super::answers_its_own_calls;

    fn call(id: &str, name: &str, input: Value) -> Value {
        json!({"role": "assistant", "content": [
            {"type": "tool-call", "toolCallId": id, "toolName": name, "input": input}]})
    }

    fn result(id: &str, name: &str, output: Value) -> Value {
        json!({"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": id, "toolName": name, "output": output}]})
    }

    fn reads(list: Value) -> bool {
        answers_its_own_calls(&read_request(&list, super::FORM))
    }

    #[test]
    fn results_of_the_list_s_own_calls_make_an_exchange() {
        let list = json!([
            call("p1", "pick_pear", json!({"tree": 3})),
            result("p1", "pick_pear", json!({"type": "json", "value": {"pears": 4}})),
            {"role": "assistant", "content": [{"type": "text", "text": "4 pears"}]},
        ]);
        assert!(reads(list));
        // OpenAI chat messages too.
        let chat = json!([
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c7", "type": "function",
                "function": {"name": "weigh", "arguments": "{\"kg\":1}"}}]},
            {"role": "tool", "tool_call_id": "c7", "content": "1.2"},
        ]);
        assert!(reads(chat));
    }

    #[test]
    fn near_misses_are_left_to_the_request_readers() {
        // A result whose call the list does not make (an echoed history).
        let echoed = json!([
            result("p0", "pick_pear", json!({"type": "text", "value": "none"})),
            call("p1", "pick_pear", json!({"tree": 3})),
        ]);
        assert!(!reads(echoed));
        // Calls alone, and a result under another tool's name.
        assert!(!reads(json!([call("p1", "pick_pear", json!({}))])));
        let other = json!([
            call("p1", "pick_pear", json!({"tree": 3})),
            result("p1", "pick_plum", json!({"type": "text", "value": "2"})),
        ]);
        assert!(!reads(other));
        // A result without a call id.
        let idless = json!([
            call("p1", "pick_pear", json!({"tree": 3})),
            {"role": "tool", "content": "2"},
        ]);
        assert!(!reads(idless));
    }

    use crate::assemble::{SpanRecord, Trace, TraceId};
    use crate::extract::test_support::{event, genai_asks, genai_result};
    use crate::extract::{Analysis, CallStatus, Extractor};

    fn analyze(spans: Vec<SpanRecord>) -> Analysis {
        Extractor::default().analyze(&Trace::new(TraceId([6; 16]), spans, 0))
    }

    /// A made-up wrapper's one span of a whole run: no request recorded,
    /// its output event holding the messages `list`.
    fn run_span(list: &Value) -> SpanRecord {
        let attrs = [("gen_ai.operation.name", "chat")];
        let mut s = crate::extract::tests::sp(1, None, (10, 90), "orchard.run", &attrs);
        s.span.events = vec![event("orchard.completion", "completion", &list.to_string())];
        s
    }

    /// `(name, result, status, error message)` of each call of `a`.
    fn outcomes(a: &Analysis) -> Vec<(String, Option<Value>, CallStatus, Option<String>)> {
        let result = |c: &crate::extract::ToolCall| c.result.as_ref().map(|r| r.to_value());
        (a.calls.iter())
            .map(|c| {
                (
                    c.name.clone(),
                    result(c),
                    c.status.clone(),
                    c.error_message.clone(),
                )
            })
            .collect()
    }

    #[test]
    fn a_run_s_output_answers_its_own_asks() {
        let list = json!([
            call("p1", "pick_pear", json!({"tree": "three"})),
            result("p1", "pick_pear", json!({"type": "error-text", "value": "tree must be a number"})),
            call("p2", "pick_pear", json!({"tree": 3})),
            result("p2", "pick_pear", json!({"type": "json", "value": {"pears": 4}})),
            {"role": "assistant", "content": [{"type": "text", "text": "4 pears"}]},
        ]);
        let a = analyze(vec![run_span(&list)]);
        let failed = Some("tree must be a number".to_string());
        assert_eq!(
            outcomes(&a),
            vec![
                ("pick_pear".into(), None, CallStatus::Error, failed),
                (
                    "pick_pear".into(),
                    Some(json!({"pears": 4})),
                    CallStatus::Ok,
                    None
                ),
            ],
            "{:?}",
            a.warnings
        );
        assert!(a.calls.iter().all(|c| c.from == Some("conversation")));
    }

    #[test]
    fn genai_parts_in_an_output_answer_its_asks_too() {
        let out = json!([
            genai_asks(&[("w1", "weigh_crate", json!({"crate": 2}))]),
            genai_result("w1", "18 kg"),
        ]);
        let attrs = [
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.output.messages", &out.to_string()[..]),
        ];
        let s = crate::extract::tests::sp(1, None, (10, 90), "chat", &attrs);
        let a = analyze(vec![s]);
        let got: Vec<_> = outcomes(&a).into_iter().map(|(n, r, ..)| (n, r)).collect();
        assert_eq!(got, vec![("weigh_crate".into(), Some(json!("18 kg")))]);
    }

    #[test]
    fn an_output_echoing_other_results_answers_nothing() {
        // The result of a call the list does not make, before its own ask:
        // the ask stays unanswered (listed, not counted).
        let list = json!([
            result("p0", "pick_pear", json!({"type": "text", "value": "none"})),
            call("p1", "pick_pear", json!({"tree": 3})),
        ]);
        let a = analyze(vec![run_span(&list)]);
        assert!(a.calls.is_empty(), "{:?}", a.calls);
        assert_eq!(a.warnings.len(), 1, "{:?}", a.warnings);
    }
}
