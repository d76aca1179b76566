//! One request's messages read: the tool results it carries (every shape
//! the conversation witness knows), the calls of its last model turn and
//! of its whole history, and the failures told in text after that turn.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::{
    afc, ai_sdk_output, calls_in, echoed, failed_texts, idless, item_ids, named_roles, one_part,
    order, quoteless, react_text, result_records, text_results, turn_roles, Answer, Asked, Request,
    GENAI_RESULT, MAX_DEPTH, MODEL_ROLES, RESPONSES_CALL, RESPONSES_RESULT, RESULT_ID_KEYS,
    RESULT_KEYS, RESULT_PARTS, RESULT_ROLES, TOOL_DEFINITION,
};

/// Keys of a request body's messages: most APIs', the OpenAI Responses
/// API's items, Gemini's contents, Cohere v1's chat history.
// `body`: a recorded HTTP request's (`http`).
const MESSAGE_LIST_KEYS: [&str; 5] = ["messages", "input", "contents", "chat_history", "body"];

/// The messages of a request: a list, LangWatch's typed list, or the list
/// under one of [`MESSAGE_LIST_KEYS`].
pub(super) fn messages_of(v: &Value, depth: usize) -> Option<&Vec<Value>> {
    if depth > MAX_DEPTH {
        return None;
    }
    match v {
        // One message whose content is a whole request body (Langtrace's
        // Gemini prompt: `[{"role": "user", "content": {"contents": [...]}}]`).
        Value::Array(list) => match list.as_slice() {
            [only] => match only.get("content") {
                Some(body @ Value::Object(_)) => messages_of(body, depth + 1).or(Some(list)),
                _ => Some(list),
            },
            _ => Some(super::positional::messages(list).unwrap_or(list)),
        },
        Value::Object(o) => match super::super::wrappers::langwatch_messages(v) {
            Some(list) => list.as_array(),
            None => MESSAGE_LIST_KEYS
                .iter()
                .find_map(|k| o.get(*k).and_then(|m| messages_of(m, depth + 1))),
        },
        _ => None,
    }
}

/// A message's role. A Responses item's type stands for a role; an item
/// typed `function` is a tool's definition, not OpenAI's older function
/// message (a request's offered tools under an input-like key).
fn role_of(o: &Map<String, Value>) -> &str {
    match (o.get("role"), o.get("type")) {
        (Some(r), _) => r.as_str(),
        (None, Some(t)) => t.as_str().filter(|t| *t != TOOL_DEFINITION),
        (None, None) => None,
    }
    .unwrap_or("")
}

pub(super) fn read_request(v: &Value, form: &'static str) -> Request {
    let mut out = Request {
        form,
        ..Request::default()
    };
    // Cohere v1: the results of the last turn beside the history, in the
    // body's own `tool_results`.
    let results = v
        .get(idless::COHERE_RESULTS)
        .filter(|r| r.is_array())
        .map(|r| {
            Value::Object(Map::from_iter([(
                idless::COHERE_RESULTS.to_string(),
                r.clone(),
            )]))
        });
    let messages = match messages_of(v, 0) {
        Some(m) => with_items(m),
        None if results.is_some() => Cow::Owned(Vec::new()),
        None => return out,
    };
    let messages = react_text::converted(turn_roles::converted(messages));
    // The last model turn, while only tool results follow it.
    let mut last_turn: Vec<Asked> = Vec::new();
    // Whether the message before was the model's (a Responses call item
    // after it is the same turn).
    let mut model_spoke = false;
    // Which calls of the last model turn results without ids answered.
    let mut paired: Vec<usize> = Vec::new();
    let mut turns = item_ids::Turns::default();
    // Where the messages after the last model turn begin.
    let mut told_from = 0;
    for (at, m) in messages.iter().chain(&results).enumerate() {
        let Some(o) = m.as_object() else {
            continue;
        };
        let role = role_of(o);
        if MODEL_ROLES.contains(&role) || role == RESPONSES_CALL {
            let mut calls = calls_in(m);
            idless::number_turn(&mut calls, out.history.len());
            let first = out.history.len();
            out.history.extend(calls.iter().cloned());
            let continued =
                model_spoke && (role == RESPONSES_CALL || echoed::one_turn(&last_turn, &calls));
            turns.model(first..out.history.len(), out.answers.len(), continued);
            if continued {
                last_turn.extend(calls);
            } else {
                last_turn = calls;
                paired.clear();
            }
            model_spoke = true;
            out.trailing.clear();
            told_from = at + 1;
            continue;
        }
        model_spoke = false;
        let before = out.answers.len();
        answers_in(o, role, &mut out.answers);
        if out.answers.len() == before {
            // A result under its tool's name as role (`named_roles`).
            out.answers
                .extend(named_roles::answer(o, role, &last_turn, &out.answers));
        }
        if out.answers.len() == before + 1 && role == "user" && out.answers[before].id.is_none() {
            // One observation answering a turn of several calls, a line each.
            if let Some(lines) = text_results::lines_in(o, last_turn.len()) {
                out.answers.truncate(before);
                out.answers.extend(lines.into_iter().map(|content| Answer {
                    content: Some(content),
                    ..Answer::default()
                }));
            }
        }
        idless::pair_after_turn(&last_turn, &mut out.answers, before, &mut paired);
        out.trailing.extend(before..out.answers.len());
        turns.other(before, out.answers.len());
        if out.answers.len() == before {
            // Someone else spoke after the model's turn.
            last_turn.clear();
            out.trailing.clear();
        }
    }
    // A call that raised may be told only in text (`failed_texts`). Only
    // the messages after the last model turn are read: a text before it is
    // history an earlier request told, and a long run's history is not
    // parsed again in each request.
    let after = messages.iter().chain(&results).skip(told_from);
    for o in after.filter_map(Value::as_object) {
        if !matches!(role_of(o), "system" | "developer") {
            failed_texts::note(o, &mut out.failures);
        }
    }
    out.last_turn = last_turn;
    out.rekeyed = turns.rekey(&out.history, &mut out.answers);
    if afc::sent_by_loop(v) {
        afc::unwrap_results(&mut out.answers);
    }
    out
}

/// `messages`, with a message whose only part is the JSON text of a list
/// of Responses API items (`function_call`, `function_call_output`, ...)
/// replaced by those items: OpenLLMetry records a Responses request so, as
/// the text of one user message.
pub(super) fn with_items(messages: &[Value]) -> Cow<'_, [Value]> {
    let items_of = |m: &Value| -> Option<Vec<Value>> {
        let parts = m.get("parts").or_else(|| m.get("content"))?.as_array()?;
        let [part] = parts.as_slice() else {
            return None;
        };
        let text = part
            .get("content")
            .or_else(|| part.get("text"))?
            .as_str()?
            .trim_start();
        if !text.starts_with('[') || !text.contains(RESPONSES_RESULT) {
            return None;
        }
        let items: Vec<Value> = serde_json::from_str(text).ok()?;
        items
            .iter()
            .all(|i| i.get("type").or_else(|| i.get("role")).is_some())
            .then_some(items)
    };
    if !messages.iter().any(|m| items_of(m).is_some()) {
        return Cow::Borrowed(messages);
    }
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        match items_of(m) {
            Some(items) => out.extend(items),
            None => out.push(m.clone()),
        }
    }
    Cow::Owned(out)
}

/// The tool results of one message: a `tool` message (OpenAI), or its
/// parts typed as results (OTel GenAI, Vercel, Anthropic).
pub(super) fn answers_in(o: &Map<String, Value>, role: &str, out: &mut Vec<Answer>) {
    let parts = one_part::listed(o.get("parts").or_else(|| o.get("content")));
    let mut found = false;
    if let Some(parts) = parts {
        for p in parts.iter().filter_map(Value::as_object) {
            let typed = p
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| RESULT_PARTS.contains(&t));
            if typed {
                let mut answer = answer_of(p);
                // The result under `response` is the provider's own; other
                // writers put the tool's value under `result` (Pydantic AI).
                answer.genai_part = p.get("type").and_then(Value::as_str) == Some(GENAI_RESULT)
                    && p.contains_key("response");
                out.push(answer);
                found = true;
            } else if let Some(Value::Object(r)) = p.get("toolResponse") {
                // Genkit: `{"toolResponse": {"name", "ref", "output"}}`.
                out.push(answer_of(r));
                found = true;
            } else if let Some(Value::Object(r)) = p
                .get("functionResponse")
                .or_else(|| p.get("function_response"))
            {
                // Gemini: `{"functionResponse": {"id", "name", "response"}}`
                // (LangChain's Gemini part: `function_response`).
                let mut answer = answer_of(r);
                answer.content = answer
                    .content
                    .map(|c| gemini_unwrapped(c).unwrap_or_else(|c| c));
                answer.gemini_shape = true;
                gemini_error(&mut answer);
                out.push(answer);
                found = true;
            } else if let Some(Value::Object(r)) = p.get("toolResult") {
                // Bedrock Converse: `{"toolResult": {"toolUseId", "content":
                // [{"json": ...} or {"text": ...}]}}`.
                let mut answer = answer_of(r);
                answer.content = answer.content.map(converse_content);
                out.push(answer);
                found = true;
            }
        }
    }
    if found {
        return;
    }
    if let Some(Value::Array(items)) = o.get(idless::COHERE_RESULTS) {
        // Cohere v1's `TOOL` message (or request body).
        let items = items.iter().filter_map(Value::as_object);
        out.extend(items.filter_map(idless::cohere_result));
    } else if RESULT_ROLES.contains(&role) {
        out.push(answer_of(o));
    } else if role == "user" {
        // Results a framework wrote as text (`text_results`).
        for content in text_results::results_in(o).into_iter().flatten() {
            out.push(Answer {
                id: None,
                name: None,
                content: Some(content),
                ..Answer::default()
            });
        }
    } else if role.is_empty() {
        out.extend(idless::cohere_result(o));
    }
}

/// A result the provider takes only as an object (Cohere v1's `outputs`;
/// Gemini's through [`gemini_unwrapped`]): a value that is no object
/// reaches the model under one key, `result` or `output`, and comes off
/// here; an object under the key is the tool's own.
pub(super) fn object_wrapped(content: Value) -> Value {
    use super::super::wrappers::lone_key_around_non_object as lone;
    lone(content, "result")
        .or_else(|c| lone(c, "output"))
        .unwrap_or_else(|c| c)
}

/// The value a Gemini function response wraps (`Err`: the response as it
/// is). Gemini documents `output` as the key of a function's output (and
/// `error` for its failure, [`gemini_error`]): a response of that one key
/// is the output, whatever it holds. Under `result` a value that is no
/// object comes off here ([`object_wrapped`]); an object under it is told
/// by the tools the request offers (`declared_results`).
pub(super) fn gemini_unwrapped(content: Value) -> Result<Value, Value> {
    use super::super::wrappers::lone_key_around_non_object as lone;
    lone(content, "result").or_else(|c| match c {
        Value::Object(mut o) if o.len() == 1 && o.contains_key("output") => {
            Ok(o.remove("output").unwrap_or(Value::Null))
        }
        other => Err(other),
    })
}

/// A Gemini function response whose one key is `error` says the call
/// failed (Gemini's documented key for error details; google-genai's
/// automatic function calling answers a function that raised so): a
/// failed call, its message the error's text. An empty or false `error`
/// says nothing failed. A tool returning `{"error": ...}` as its value
/// reads as failed too: the model was told so in the provider's terms.
pub(super) fn gemini_error(answer: &mut Answer) {
    let Some(Value::Object(o)) = &answer.content else {
        return;
    };
    let (Some(error), 1) = (o.get("error"), o.len()) else {
        return;
    };
    let message = match error {
        Value::String(t) if !t.trim().is_empty() => t.clone(),
        Value::Object(e) if !e.is_empty() => error.to_string(),
        _ => return,
    };
    if answer.outcome == ai_sdk_output::Outcome::Ran {
        answer.outcome = ai_sdk_output::Outcome::Failed(message);
    }
}

/// A Bedrock Converse result's content: the value of its one `json` or
/// `text` block; any other content as it is.
pub(super) fn converse_content(content: Value) -> Value {
    super::super::wrappers::provider_block(content).unwrap_or_else(|c| c)
}

/// How many of `answers` say their call failed.
pub(super) fn failed(answers: &[Answer]) -> usize {
    let failed = |a: &&Answer| matches!(a.outcome, ai_sdk_output::Outcome::Failed(_));
    answers.iter().filter(failed).count()
}

/// LangChain's `ToolMessage` as its dump writes it: `"type": "tool"`, and
/// `"status": "error"` for a call whose tool raised.
const TOOL_MESSAGE_TYPE: &str = "tool";
const TOOL_MESSAGE_ERROR: &str = "error";

pub(super) fn answer_of(o: &Map<String, Value>) -> Answer {
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| o.get(*k).and_then(Value::as_str))
            .filter(|t| !t.is_empty())
            .map(str::to_string)
    };
    // The AI SDK's typed output gives the value (or none) and how it went.
    let (typed, outcome) = match ai_sdk_output::of_part(o) {
        Some((value, outcome)) => (Some(value), outcome),
        None => (None, ai_sdk_output::Outcome::Ran),
    };
    let content = match typed {
        Some(value) => value,
        None => RESULT_KEYS
            .iter()
            .find_map(|k| o.get(*k))
            .cloned()
            .or_else(|| order::text_of_parts(o)),
    };
    let mut answer = Answer {
        id: text(&RESULT_ID_KEYS),
        // Ollama's tool messages: `tool_name`.
        name: text(&["name", "toolName", "tool_name"]),
        content: content
            .map(text_results::python_literal)
            // A provider's or protocol's content blocks around the value
            // the tool returned (docs/conventions.md, "Result wrappers").
            .map(super::super::wrappers::known_result)
            .map(quoteless::restored),
        outcome,
        genai_part: false,
        gemini_shape: false,
    };
    result_records::unwrap(&mut answer);
    // Anthropic's `tool_result` says a call failed by a flag beside its
    // content (the tool's error text, as the model saw it), LangChain's
    // `ToolMessage` by its `status` (as Langtrace dumps the history).
    let flagged = o.get("is_error").and_then(Value::as_bool) == Some(true)
        || o.get("status").and_then(Value::as_str) == Some(TOOL_MESSAGE_ERROR)
            && o.get("type").and_then(Value::as_str) == Some(TOOL_MESSAGE_TYPE);
    if answer.outcome == ai_sdk_output::Outcome::Ran && flagged {
        answer.outcome = ai_sdk_output::Outcome::Failed(match &answer.content {
            Some(Value::String(t)) => t.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        });
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// LangChain's `ToolMessage` dump with `status: error` answers with a
    /// failure, its content the message; the status of another kind of
    /// message, or `success`, says nothing.
    #[test]
    fn a_tool_message_of_status_error_is_a_failure() {
        let failed = |v: Value| {
            let Value::Object(o) = v else {
                unreachable!("an object");
            };
            answer_of(&o).outcome
        };
        let tool = |status: &str| json!({"type": "tool", "content": "car deck system down", "tool_call_id": "c2", "status": status});
        assert_eq!(
            failed(tool("error")),
            ai_sdk_output::Outcome::Failed("car deck system down".into())
        );
        assert_eq!(failed(tool("success")), ai_sdk_output::Outcome::Ran);
        let other =
            json!({"role": "tool", "content": "x", "tool_call_id": "c2", "status": "error"});
        assert_eq!(failed(other), ai_sdk_output::Outcome::Ran);
    }

    /// `[messages, config]` gives the messages; a list of messages, or a
    /// pair whose second item is a message, gives itself.
    #[test]
    fn positional_arguments_give_their_messages() {
        let msgs = json!([{"type": "human", "content": "hi"}]);
        let pair = json!([msgs, {"metadata": {}}]);
        assert_eq!(messages_of(&pair, 0), msgs.as_array());
        let two = json!([{"type": "human", "content": "a"}, {"type": "ai", "content": "b"}]);
        assert_eq!(messages_of(&two, 0), two.as_array());
        let typed = json!([msgs, {"type": "human", "content": "b"}]);
        assert_eq!(messages_of(&typed, 0), typed.as_array());
    }
}
