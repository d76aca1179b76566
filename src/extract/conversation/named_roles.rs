//! A tool's result in a message whose role is the tool's name
//! (docs/conventions.md, "The conversation witness", "A result under its
//! tool's name").
//!
//! Langfuse's LangChain.js handler records a `ToolMessage` as `{"content",
//! "role": <the tool's name>}`: no `tool` role and no call id. Such a
//! message after a model turn that asked for a call of that tool answers
//! it: the turn's first call of that name that no result of the request
//! answers yet. A role that names no call of the last turn (a person's, a
//! system's, an agent's) is no result.

use serde_json::{Map, Value};

use super::{answer_of, Answer, Asked};

/// Roles that are never a tool's name: the speakers a request holds.
const SPEAKER_ROLES: [&str; 5] = ["user", "system", "developer", "human", ""];

/// The result message `o` of role `role` carries, when `role` names a call
/// of model turn `turn` that none of `answers` (the request's results so
/// far) answers: that call's id and name, the message's content.
pub(super) fn answer(
    o: &Map<String, Value>,
    role: &str,
    turn: &[Asked],
    answers: &[Answer],
) -> Option<Answer> {
    if SPEAKER_ROLES.contains(&role) {
        return None;
    }
    let answered = |a: &Asked| {
        answers
            .iter()
            .any(|x| x.id.is_some() && x.id == a.id && x.name.as_deref().is_none_or(|n| n == role))
    };
    let call = turn.iter().find(|a| a.name == role && !answered(a))?;
    let mut out = answer_of(o);
    // A message's own `id` (LangChain's message ids) is no call's.
    out.id = call.id.clone();
    out.name = Some(role.to_string());
    out.content.as_ref()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::trace::v1::Status;
    use serde_json::{json, Value};

    use crate::assemble::{SpanRecord, Trace, TraceId};
    use crate::extract::test_support::genai_asks;
    use crate::extract::tests::sp;
    use crate::extract::{Analysis, CallStatus, Extractor};

    /// A made-up vendor's model span: GenAI messages.
    fn chat(id: u8, when: (u64, u64), input: &Value, output: &Value) -> SpanRecord {
        let (input, output) = (input.to_string(), output.to_string());
        let attrs = [
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.input.messages", input.as_str()),
            ("gen_ai.output.messages", output.as_str()),
        ];
        sp(id, Some(1), when, "chat acme", &attrs)
    }

    /// Its tool span: the call's name and arguments, no call id and no
    /// result; failed with its message.
    fn tool(id: u8, when: (u64, u64), name: &str, args: &str, error: Option<&str>) -> SpanRecord {
        let attrs = [
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", name),
            ("gen_ai.tool.call.arguments", args),
        ];
        let mut s = sp(id, Some(1), when, &format!("execute_tool {name}"), &attrs);
        if let Some(m) = error {
            s.span.status = Some(Status {
                code: 2,
                message: m.to_string(),
            });
        }
        s
    }

    fn user() -> Value {
        json!({"role": "user", "parts": [{"type": "text", "content": "Moor the Aurora."}]})
    }

    /// A result message under its tool's name as role, no call id.
    fn named(role: &str, text: &str) -> Value {
        json!({"role": role, "parts": [{"type": "text", "content": text}]})
    }

    fn said() -> Value {
        json!([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}])
    }

    fn analyze(spans: Vec<SpanRecord>) -> Analysis {
        Extractor::default().analyze(&Trace::new(TraceId([7; 16]), spans, 0))
    }

    #[test]
    fn a_message_under_its_tool_s_name_is_the_failed_call_s_result() {
        let turn = genai_asks(&[("call_q1", "moor_ship", json!({"ship": "Aurora"}))]);
        let told = "Error: quay 4 is closed\n Try another quay.";
        let spans = vec![
            sp(1, None, (0, 100), "loop", &[]),
            chat(2, (1, 10), &json!([user()]), &json!([turn])),
            tool(
                3,
                (11, 20),
                "moor_ship",
                r#"{"ship": "Aurora"}"#,
                Some("quay 4 is closed"),
            ),
            chat(
                4,
                (21, 30),
                &json!([user(), turn, named("moor_ship", told)]),
                &said(),
            ),
        ];
        let a = analyze(spans);
        assert_eq!(a.calls.len(), 1, "{:?}", a.warnings);
        let c = &a.calls[0];
        // The status and message stay the span's; the result is the text
        // the model was sent.
        assert_eq!(c.status, CallStatus::Error);
        assert_eq!(c.error_message.as_deref(), Some("quay 4 is closed"));
        assert_eq!(c.result.as_ref().map(|r| r.to_value()), Some(json!(told)));
    }

    #[test]
    fn a_role_of_another_tool_or_a_later_call_is_not_taken() {
        // Near misses: the first call of `moor_ship` failed; the request
        // after it answers a `dock_fee` call under that tool's name, and
        // a later request answers the second `moor_ship` call, of the turn
        // after. Neither is the first call's result.
        let first = genai_asks(&[("call_q1", "moor_ship", json!({"ship": "Aurora"}))]);
        let second = genai_asks(&[("call_q2", "moor_ship", json!({"ship": "Borea"}))]);
        let spans = vec![
            sp(1, None, (0, 100), "loop", &[]),
            chat(2, (1, 10), &json!([user()]), &json!([first])),
            tool(
                3,
                (11, 20),
                "moor_ship",
                r#"{"ship": "Aurora"}"#,
                Some("quay 4 is closed"),
            ),
            chat(
                4,
                (21, 30),
                &json!([user(), first, named("dock_fee", "12 EUR")]),
                &json!([second]),
            ),
            tool(5, (31, 40), "moor_ship", r#"{"ship": "Borea"}"#, None),
            chat(
                6,
                (41, 50),
                &json!([
                    user(),
                    first,
                    named("dock_fee", "12 EUR"),
                    second,
                    named("moor_ship", "moored at 5")
                ]),
                &said(),
            ),
        ];
        let a = analyze(spans);
        assert_eq!(a.calls.len(), 2, "{:?}", a.warnings);
        assert_eq!(a.calls[0].status, CallStatus::Error);
        assert!(a.calls[0].result.is_none(), "{:?}", a.calls[0].result);
        assert_eq!(
            a.calls[1].result.as_ref().map(|r| r.to_value()),
            Some(json!("moored at 5"))
        );
    }
}
