//! A model request's messages written as one text of `role: content` lines,
//! for the conversation witness (docs/conventions.md, "Calls written as
//! span events"). OpenLIT's older instrumentations and their forks (tmam)
//! flatten the request into the `gen_ai.prompt` attribute of a
//! `gen_ai.content.prompt` event: `user: ...\nassistant: None\ntool: ...`,
//! one line a message, the model's calls left out and the results by
//! position, without call ids.
//!
//! Read by the shape, not the vendor: an event whose name says the request
//! side, an attribute whose key says it too, whose text opens with a role of
//! the `transcript_line_roles` vocabulary and `: `. Each such line starts a
//! message; a line that does not continues the one before (a result written
//! over several lines). `None` (Python's `str(None)`) is no content. The
//! results are tool messages without ids; what they answer is settled by
//! position where the witness pairs id-less results (`conversation::order`:
//! as many results as calls left open, in order).

use serde_json::{json, Value};

use super::rules::builtin_list;
use super::sides::Side;
use crate::assemble::SpanRecord;

/// The roles a line may open with.
fn roles() -> &'static [String] {
    static ROLES: std::sync::OnceLock<&'static [String]> = std::sync::OnceLock::new();
    ROLES.get_or_init(|| builtin_list("transcript_line_roles"))
}

/// The role `line` opens with (`<role>: `), if one of [`roles`].
fn role_of(line: &str) -> Option<&'static str> {
    let (head, _) = line.split_once(": ")?;
    roles()
        .iter()
        .find(|r| r.as_str() == head)
        .map(String::as_str)
}

/// The texts of side `side` in `s`'s events that are role lines.
fn texts(s: &SpanRecord, side: Side) -> impl Iterator<Item = &str> + '_ {
    super::sides::event_texts(s, side, |_, t| role_of(t).is_some().then_some(t))
}

/// Whether span `s` has role lines of side `side`.
pub(super) fn has(s: &SpanRecord, side: Side) -> bool {
    texts(s, side).next().is_some()
}

/// The messages of side `side` of span `s`, as chat messages (the first
/// event's that holds role lines).
pub(super) fn messages(s: &SpanRecord, side: Side) -> Option<Value> {
    texts(s, side).next().map(parse)
}

/// `text`'s role lines as chat messages, in order.
fn parse(text: &str) -> Value {
    let mut out: Vec<(&str, String)> = Vec::new();
    for line in text.split('\n') {
        match role_of(line) {
            Some(role) => {
                let content = &line[role.len() + 2..];
                out.push((role, content.to_string()));
            }
            None => {
                if let Some((_, content)) = out.last_mut() {
                    content.push('\n');
                    content.push_str(line);
                }
            }
        }
    }
    Value::Array(
        out.into_iter()
            .map(|(role, content)| {
                let content = match content.as_str() {
                    "None" | "" => Value::Null,
                    _ => Value::String(content),
                };
                json!({"role": role, "content": content})
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assemble::{Trace, TraceId};
    use crate::extract::test_support::event;
    use crate::extract::Extractor;

    /// A made-up vendor's model spans: the calls a Python literal under a
    /// `tool_calls` key, the next request a transcript of role lines whose
    /// results follow a model turn that lost its calls.
    #[test]
    fn results_in_role_lines_answer_literal_calls_by_position() {
        let calls = "[{'id': 'k1', 'function': {'arguments': '{}', 'name': 'kite_count'}, \
                     'type': 'function'}, {'id': 'k2', 'function': {'arguments': \
                     '{\"field\": \"north\"}', 'name': 'wind_at'}, 'type': 'function'}]";
        let model = |id: u8, start: u64, out: &str, prompt: &str| {
            let attrs = [
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.response.model", "m-1"),
                ("acme.response.tool_calls", out),
            ];
            let mut s = crate::extract::tests::sp(id, None, (start, start + 5), "chat m-1", &attrs);
            s.span.events = vec![event("acme.content.prompt", "acme.prompt", prompt)];
            s
        };
        let asks = model(1, 10, calls, "user: How windy?");
        let answers = model(
            2,
            20,
            "None",
            "user: How windy?\nassistant: None\ntool: 3\ntool: {'knots': 12}",
        );
        let a = Extractor::default().analyze(&Trace::new(TraceId([5; 16]), vec![asks, answers], 0));
        let got: Vec<(&str, Option<&Value>, Option<Value>)> = a
            .calls
            .iter()
            .map(|c| {
                (
                    c.name.as_str(),
                    c.args.value(),
                    c.result.as_ref().map(|r| r.to_value()),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("kite_count", Some(&json!({})), Some(json!(3))),
                (
                    "wind_at",
                    Some(&json!({"field": "north"})),
                    Some(json!({"knots": 12}))
                ),
            ]
        );
    }

    #[test]
    fn role_lines_become_messages_and_other_lines_continue_them() {
        let got = parse("system: Be brief.\nuser: Two kites?\nassistant: None\ntool: {\n  \"kites\": 2\n}\ntool: done");
        assert_eq!(
            got,
            json!([
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Two kites?"},
                {"role": "assistant", "content": null},
                {"role": "tool", "content": "{\n  \"kites\": 2\n}"},
                {"role": "tool", "content": "done"},
            ])
        );
    }

    #[test]
    fn text_not_opening_with_a_role_is_no_transcript() {
        assert_eq!(role_of("Translate: hello"), None);
        assert_eq!(role_of("user:no space"), None);
        assert_eq!(role_of("tool: 42"), Some("tool"));
    }
}
