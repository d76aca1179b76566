//! google-genai's automatic function calling (docs/conventions.md, "The
//! conversation witness", "Automatic function calling").
//!
//! Given Python functions as tools, the google-genai SDK runs the calls the
//! model asks for itself and sends each function's return value back as a
//! `function_response` whose `response` is `{"result": <value>}` (a raised
//! exception: `{"error": <text>}`), for every value, object or not. Two
//! things say a conversation is the SDK's own loop: a request body whose
//! client headers carry the `+afc` usage tag the SDK adds to its user agent
//! when it runs that loop, and a response carrying
//! `automatic_function_calling_history`, the exchange the loop ran (the
//! response of the model's last turn, so the calls and their results sit in
//! the output of the one span that records it). In such a conversation the
//! `result` key is the SDK's, never the tool's, and comes off whatever it
//! holds. Elsewhere a non-object comes off it, and an object in a
//! `function_response` part unless the tool's declared response schema
//! has a `result` property (`declared_results`): google-genai's manual
//! function-calling examples wrap every value so too.

use std::sync::OnceLock;

use memchr::memmem::Finder;
use serde_json::Value;

use super::{read_request, Answer, Request};

/// The response key holding the exchange the SDK's loop ran.
const HISTORY: &str = "automatic_function_calling_history";
/// The usage tag of the loop in the SDK's client headers.
const TAG: &str = "+afc";
/// The client headers that carry [`TAG`].
const HEADERS: [&str; 2] = ["user-agent", "x-goog-api-client"];
/// The form a request read from a response's history is said to come in.
const FORM: &str = "google-genai-afc";

/// Whether request body `v` was sent by the SDK's loop ([`TAG`] in its
/// config's client headers).
pub(super) fn sent_by_loop(v: &Value) -> bool {
    let Some(headers) = v
        .get("config")
        .and_then(|c| c.get("http_options"))
        .and_then(|h| h.get("headers"))
    else {
        return false;
    };
    HEADERS.iter().any(|k| {
        headers
            .get(*k)
            .and_then(Value::as_str)
            .is_some_and(|ua| ua.contains(TAG))
    })
}

/// The results' contents without the SDK's `{"result": ...}` around them.
pub(super) fn unwrap_results(answers: &mut [Answer]) {
    for a in answers {
        if let Some(Value::Object(o)) = &mut a.content {
            if o.len() == 1 {
                if let Some(inner) = o.remove("result") {
                    a.content = Some(inner);
                }
            }
        }
    }
}

/// The exchange a response's text records ([`HISTORY`], a non-empty
/// list), read as a request that carries its calls and results.
pub(super) fn request_in_output(text: &str) -> Option<Request> {
    static FINDER: OnceLock<Finder<'static>> = OnceLock::new();
    let finder = FINDER.get_or_init(|| Finder::new(HISTORY.as_bytes()));
    finder.find(text.as_bytes())?;
    let v: Value = serde_json::from_str(text).ok()?;
    let history = v.get(HISTORY).filter(|h| {
        h.as_array()
            .is_some_and(|l| l.iter().any(|m| m.get("role").is_some()))
    })?;
    let mut r = read_request(history, FORM);
    unwrap_results(&mut r.answers);
    Some(r)
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::assemble::{SpanRecord, Trace, TraceId};
    use crate::extract::test_support::{acme_model, names_and_results};
    use crate::extract::{Analysis, Extractor};

    fn analyze(spans: Vec<SpanRecord>) -> Analysis {
        Extractor::default().analyze(&Trace::new(TraceId([8; 16]), spans, 0))
    }

    fn model(id: u8, when: (u64, u64), input: Value, output: Value) -> SpanRecord {
        acme_model(id, when, "acme.generate", &input, &output)
    }

    fn user() -> Value {
        json!({"role": "user", "parts": [{"text": "plan"}]})
    }

    fn call(name: &str, args: Value) -> Value {
        json!({"role": "model", "parts": [{"function_call": {"name": name, "args": args}}]})
    }

    fn reply(name: &str, response: Value) -> Value {
        json!({"role": "user", "parts": [{"function_response": {"name": name, "response": response}}]})
    }

    fn response(parts: Value, history: Value) -> Value {
        json!({"candidates": [{"content": {"role": "model", "parts": parts}}],
            "automatic_function_calling_history": history})
    }

    /// Two model calls of one conversation; `agent`: the client's user agent.
    fn two_turns(agent: &str) -> Vec<SpanRecord> {
        let config = json!({"http_options": {"headers": {"user-agent": agent}}});
        let look = json!({"town": "Oslo"});
        vec![
            model(
                1,
                (10, 20),
                json!({"contents": [user()], "config": config}),
                response(
                    json!([{"function_call": {"name": "look_up", "args": look}}]),
                    json!(null),
                ),
            ),
            model(
                2,
                (30, 40),
                json!({"contents": [user(), call("look_up", look.clone()),
                    reply("look_up", json!({"result": {"inn": "Fjord"}}))], "config": config}),
                response(json!([{"text": "ok"}]), json!(null)),
            ),
        ]
    }

    #[test]
    fn the_loop_s_result_key_comes_off_an_object_whoever_ran_the_loop() {
        // The SDK's own loop, and a hand-written one following its manual
        // function-calling examples (`declared_results`, no schema).
        for agent in ["sdk/1.0 +afc", "sdk/1.0"] {
            let a = analyze(two_turns(agent));
            assert_eq!(
                names_and_results(&a),
                vec![("look_up".into(), json!({"inn": "Fjord"}))],
                "{agent}"
            );
        }
    }

    #[test]
    fn the_exchange_a_response_records_gives_its_calls_and_results() {
        let (look, walk) = (json!({"town": "Oslo"}), json!({"route": "north"}));
        let history = json!([
            {"parts": [{"text": "plan"}]},
            call("look_up", look.clone()),
            reply("look_up", json!({"result": {"inn": "Fjord"}})),
            call("walk", walk.clone()),
            reply("walk", json!({"result": "done"})),
        ]);
        let out = response(json!([{"text": "Planned."}]), history);
        let a = analyze(vec![model(1, (10, 90), json!({"contents": [user()]}), out)]);
        assert_eq!(
            names_and_results(&a),
            vec![
                ("look_up".into(), json!({"inn": "Fjord"})),
                ("walk".into(), json!("done"))
            ],
            "{:?} {:?}",
            a.notes,
            a.warnings
        );
        let args: Vec<Value> = a
            .calls
            .iter()
            .filter_map(|c| c.args.value().cloned())
            .collect();
        assert_eq!(args, vec![look, walk]);
    }
}
