//! The AI SDK's typed tool output in a conversation's result part
//! (docs/conventions.md, "The conversation witness", "Typed tool outputs").
//!
//! From version 5 on, the AI SDK hands a tool's result back to the model as
//! a `tool-result` part whose `output` says how it went:
//! `{"type": "json" | "text", "value"}` the value the tool returned,
//! `{"type": "error-text" | "error-json", "value"}` the error it threw,
//! `{"type": "content", "value": [parts]}` content parts, and
//! `{"type": "execution-denied", "reason"}` a call the user's approval
//! denied, which never ran. (Version 4's part has `result`, the bare value.)
//! A call the conversation rebuilds takes the value, a failure as a failed
//! call with the error's text, a denial as the call with its reason.
//!
//! Only the `output` of a `tool-result` part is read so: a tool's own value
//! of that shape anywhere else is the tool's.

use serde_json::{Map, Value};

use crate::extract::wrappers::typed_value;

/// The part type of the AI SDK's tool result.
const RESULT_PART: &str = "tool-result";
/// The key of its typed output.
const OUTPUT: &str = "output";
/// Keys an output may hold besides its type and payload.
const EXTRA_KEYS: [&str; 1] = ["providerOptions"];

/// How the call a result answers went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) enum Outcome {
    /// It ran (or nothing says otherwise): the content is its result.
    #[default]
    Ran,
    /// It threw: the error's text.
    Failed(String),
    /// The user denied it and it never ran; the content is the reason.
    Denied,
}

/// The value and outcome of result part `part` when it is the AI SDK's
/// `tool-result` with a typed `output` (`None`: any other part, read as
/// before). The value is `None` for a failure or a denial without reason.
pub(super) fn of_part(part: &Map<String, Value>) -> Option<(Option<Value>, Outcome)> {
    // The type is compared first: most parts are no AI SDK result.
    if part.get("type").and_then(Value::as_str) != Some(RESULT_PART) {
        return None;
    }
    let output = part.get(OUTPUT)?.as_object()?;
    let kind = output.get("type").and_then(Value::as_str)?;
    let payload = match kind {
        "execution-denied" => "reason",
        _ => "value",
    };
    let known = |k: &String| k == "type" || k == payload || EXTRA_KEYS.contains(&k.as_str());
    if !output.keys().all(known) {
        return None;
    }
    let value = output.get(payload).cloned();
    match kind {
        "json" | "text" => {
            // LangWatch's typed value has the same two keys: one reading.
            let typed = Map::from_iter([
                ("type".to_string(), Value::String(kind.to_string())),
                ("value".to_string(), value?),
            ]);
            let v = typed_value(Value::Object(typed)).ok()?;
            Some((Some(v), Outcome::Ran))
        }
        "content" => match value? {
            v @ Value::Array(_) => Some((Some(v), Outcome::Ran)),
            _ => None,
        },
        "error-text" | "error-json" => {
            let message = match value? {
                Value::String(t) => t,
                other => other.to_string(),
            };
            Some((None, Outcome::Failed(message)))
        }
        "execution-denied" => match value {
            None | Some(Value::Null) => Some((None, Outcome::Denied)),
            Some(reason @ Value::String(_)) => Some((Some(reason), Outcome::Denied)),
            Some(_) => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::{of_part, Outcome};

    fn read(part: Value) -> Option<(Option<Value>, Outcome)> {
        of_part(part.as_object().expect("an object"))
    }

    fn part(output: Value) -> Value {
        json!({"type": "tool-result", "toolCallId": "k1", "toolName": "rent_kayak", "output": output})
    }

    #[test]
    fn a_value_comes_out_of_its_type() {
        let got = read(part(json!({"type": "json", "value": {"kayak": "K-3"}})));
        assert_eq!(got, Some((Some(json!({"kayak": "K-3"})), Outcome::Ran)));
        let got = read(part(json!({"type": "text", "value": "dock 4"})));
        assert_eq!(got, Some((Some(json!("dock 4")), Outcome::Ran)));
        // A provider's options beside it change nothing.
        let got = read(part(
            json!({"type": "json", "value": 7, "providerOptions": {"acme": {"cache": true}}}),
        ));
        assert_eq!(got, Some((Some(json!(7)), Outcome::Ran)));
        let blocks = json!([{"type": "text", "text": "two kayaks"}]);
        let got = read(part(json!({"type": "content", "value": blocks.clone()})));
        assert_eq!(got, Some((Some(blocks), Outcome::Ran)));
    }

    #[test]
    fn an_error_is_a_failure_and_a_denial_keeps_its_reason() {
        let got = read(part(
            json!({"type": "error-text", "value": "Error: dock closed"}),
        ));
        assert_eq!(
            got,
            Some((None, Outcome::Failed("Error: dock closed".into())))
        );
        let got = read(part(json!({"type": "error-json", "value": {"code": 503}})));
        assert_eq!(got, Some((None, Outcome::Failed("{\"code\":503}".into()))));
        let got = read(part(
            json!({"type": "execution-denied", "reason": "ask a ranger"}),
        ));
        assert_eq!(got, Some((Some(json!("ask a ranger")), Outcome::Denied)));
        let got = read(part(json!({"type": "execution-denied"})));
        assert_eq!(got, Some((None, Outcome::Denied)));
    }

    #[test]
    fn other_shapes_are_left_to_the_reader() {
        // Version 4's bare result, and an output of no known type.
        let v4 = json!({"type": "tool-result", "toolCallId": "k1", "result": {"type": "json", "value": 1}});
        assert_eq!(read(v4), None);
        assert_eq!(read(part(json!({"type": "image", "value": 1}))), None);
        // A key the SDK never writes: the tool's own object.
        assert_eq!(
            read(part(json!({"type": "json", "value": 1, "unit": "m"}))),
            None
        );
        assert_eq!(read(part(json!({"type": "text"}))), None);
        assert_eq!(
            read(part(json!({"type": "execution-denied", "reason": 3}))),
            None
        );
        assert_eq!(read(part(json!("plain text"))), None);
        // Another provider's result part with the same output shape.
        let other = json!({"type": "tool_result", "output": {"type": "json", "value": 1}});
        assert_eq!(read(other), None);
    }

    /// The AI SDK's legacy model spans: the first asks for four calls, the
    /// second carries their results and no tool span ran any of them.
    fn rebuilt(results: Value) -> crate::extract::Analysis {
        use crate::assemble::{Trace, TraceId};
        use crate::extract::tests::sp;
        let asks = json!([
            {"toolCallId": "k1", "toolName": "rent_kayak", "input": {"size": 2}},
            {"toolCallId": "k2", "toolName": "rent_sup", "input": {"size": 1}},
            {"toolCallId": "k3", "toolName": "sell_kayak", "input": {"id": "K-9"}},
            {"toolCallId": "k4", "toolName": "weigh_kayak", "input": {"id": "K-1"}},
        ]);
        let calls: Vec<Value> = asks
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| json!({"type": "tool-call", "toolCallId": a["toolCallId"], "toolName": a["toolName"], "input": a["input"]}))
            .collect();
        let messages = json!([
            {"role": "user", "content": [{"type": "text", "text": "two kayaks, one board; sell K-9"}]},
            {"role": "assistant", "content": calls},
            {"role": "tool", "content": results},
        ]);
        let generate = "ai.generateText.doGenerate";
        let spans = vec![
            sp(
                1,
                None,
                (0, 100),
                "ai.generateText",
                &[("ai.operationId", "ai.generateText")],
            ),
            sp(
                2,
                Some(1),
                (10, 20),
                generate,
                &[
                    ("ai.operationId", generate),
                    (
                        "ai.prompt.messages",
                        r#"[{"role": "user", "content": "two kayaks, one board; sell K-9"}]"#,
                    ),
                    ("ai.response.toolCalls", &asks.to_string()),
                ],
            ),
            sp(
                3,
                Some(1),
                (40, 50),
                generate,
                &[
                    ("ai.operationId", generate),
                    ("ai.prompt.messages", &messages.to_string()),
                    ("ai.response.text", "done"),
                ],
            ),
        ];
        crate::extract::Extractor::default().analyze(&Trace::new(TraceId([5; 16]), spans, 0))
    }

    #[test]
    fn calls_rebuilt_from_the_conversation_take_the_output_s_value_and_outcome() {
        use crate::extract::{CallResult, CallStatus};
        let a = rebuilt(json!([
            part(json!({"type": "json", "value": {"kayaks": ["K-2", "K-4"]}})),
            {"type": "tool-result", "toolCallId": "k2", "toolName": "rent_sup",
             "output": {"type": "error-text", "value": "Error: no boards left"}},
            {"type": "tool-result", "toolCallId": "k3", "toolName": "sell_kayak",
             "output": {"type": "execution-denied", "reason": "sales need the owner"}},
            // Near miss: version 4's bare result of the same shape is the tool's.
            {"type": "tool-result", "toolCallId": "k4", "toolName": "weigh_kayak",
             "result": {"type": "json", "value": 23}},
        ]));
        let got: Vec<(&str, Option<Value>, CallStatus, Option<&str>)> = a
            .calls
            .iter()
            .map(|c| {
                let r = c.result.as_ref().map(CallResult::to_value);
                (
                    c.name.as_str(),
                    r,
                    c.status.clone(),
                    c.error_message.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "rent_kayak",
                    Some(json!({"kayaks": ["K-2", "K-4"]})),
                    CallStatus::Ok,
                    None
                ),
                (
                    "rent_sup",
                    None,
                    CallStatus::Error,
                    Some("Error: no boards left")
                ),
                (
                    "sell_kayak",
                    Some(json!("sales need the owner")),
                    CallStatus::Ok,
                    None
                ),
                (
                    "weigh_kayak",
                    Some(json!({"type": "json", "value": 23})),
                    CallStatus::Ok,
                    None
                ),
            ]
        );
        // The denial is said where `inspect --explain` shows the notes.
        let denied = a
            .notes
            .iter()
            .filter(|n| n.contains("was denied before it ran"));
        assert_eq!(denied.count(), 1, "{:?}", a.notes);
    }
}
