//! Reading what a chat completions server answers: the response envelope,
//! then the verdict in the message text, strictly. An answer that is not an
//! explicit verdict is an error, never a guess: prose, a `result` that is
//! not `"yes"`/`"no"` (or, for a score, a number in 0..=1), empty content
//! and a truncated answer all are.

use serde_json::Value;

use super::{Answer, AnswerKind, JudgeError, Tokens};

/// The message text and token usage of a response.
pub(super) struct Completion {
    pub content: String,
    pub tokens: Tokens,
}

/// The answer of a chat completions response body. `max_tokens` names the
/// cap in force, for the truncation error.
pub(super) fn completion(body: &str, max_tokens: &str) -> Result<Completion, JudgeError> {
    let v: Value = serde_json::from_str(body).map_err(|e| {
        JudgeError::Unparseable(format!("response is not JSON ({e}): {}", snippet(body)))
    })?;
    let choice = v.pointer("/choices/0").ok_or_else(|| {
        JudgeError::Unparseable(format!("no choices[0] in the response: {}", snippet(body)))
    })?;
    // Cut off mid-answer: whatever it holds is not the model's verdict.
    if choice.get("finish_reason").and_then(Value::as_str) == Some("length") {
        return Err(JudgeError::Truncated {
            max_tokens: max_tokens.to_string(),
        });
    }
    let message = choice.get("message");
    let content = message
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
        .ok_or_else(|| {
            let thought = message
                .and_then(|m| m.get("reasoning_content"))
                .and_then(Value::as_str)
                .is_some_and(|r| !r.trim().is_empty());
            JudgeError::Unparseable(if thought {
                "empty content (the model answered only in reasoning_content, which is not \
                 its verdict)"
                    .to_string()
            } else {
                format!("empty content: {}", snippet(body))
            })
        })?;
    let n = |k: &str| {
        v.pointer(&format!("/usage/{k}"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Ok(Completion {
        content: content.to_string(),
        tokens: Tokens {
            prompt_tokens: n("prompt_tokens"),
            completion_tokens: n("completion_tokens"),
        },
    })
}

/// Whether a 400's body is about the response format (so asking without
/// structured output may work), not about the prompt or a parameter.
pub(super) fn about_format(body: &str) -> bool {
    let b = body.to_ascii_lowercase();
    [
        "response_format",
        "json_schema",
        "json_object",
        "structured output",
    ]
    .iter()
    .any(|k| b.contains(k))
}

/// The verdict in a model's answer text: one JSON object (bare, or alone in
/// a code fence) with `result` and an optional `rationale` string.
pub fn parse_answer(text: &str, kind: AnswerKind) -> Result<Answer, JudgeError> {
    let bad = |why: &str| JudgeError::Unparseable(format!("{why}: {}", snippet(text)));
    let v: Value =
        serde_json::from_str(unfenced(text.trim())).map_err(|_| bad("not one JSON object"))?;
    let Value::Object(o) = v else {
        return Err(bad("not a JSON object"));
    };
    let rationale = match o.get("rationale") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(bad("`rationale` is not a string")),
    };
    let result = o.get("result").ok_or_else(|| bad("no `result`"))?;
    let (verdict, score) = match (kind, result) {
        (AnswerKind::YesNo, Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "yes" => (Some(true), None),
            "no" => (Some(false), None),
            _ => return Err(bad("`result` is neither \"yes\" nor \"no\"")),
        },
        (AnswerKind::YesNo, _) => return Err(bad("`result` is not a string")),
        (AnswerKind::Score, Value::Number(n)) => match n.as_f64() {
            Some(s) if (0.0..=1.0).contains(&s) => (None, Some(s)),
            _ => return Err(bad("`result` is outside 0..=1")),
        },
        (AnswerKind::Score, _) => return Err(bad("`result` is not a number")),
    };
    Ok(Answer {
        verdict,
        score,
        rationale,
        tokens: Tokens::default(),
        cached: false,
    })
}

/// The inside of a text that is one code fence (```` ```json ... ``` ````),
/// else the text.
fn unfenced(t: &str) -> &str {
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let Some(inner) = rest.strip_suffix("```") else {
        return t;
    };
    // The fence's info string (`json`) ends its first line.
    match inner.split_once('\n') {
        Some((info, body)) if !info.contains(['{', '}']) => body,
        _ => inner,
    }
}

/// The start of a long text, for error messages.
pub(super) fn snippet(text: &str) -> String {
    let t = text.trim();
    match t.char_indices().nth(200) {
        Some((i, _)) => format!("{}...", &t[..i]),
        None => t.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yes_no(t: &str) -> Result<Option<bool>, JudgeError> {
        parse_answer(t, AnswerKind::YesNo).map(|a| a.verdict)
    }

    #[test]
    fn only_explicit_verdicts_are_read() {
        let a = parse_answer(r#"{"result": "yes", "rationale": "ok"}"#, AnswerKind::YesNo).unwrap();
        assert_eq!((a.verdict, a.rationale.as_str()), (Some(true), "ok"));
        assert_eq!(
            yes_no("```json\n{\"result\": \"No\"}\n```"),
            Ok(Some(false))
        );
        // Each of these was once read as a verdict; none is one.
        for text in [
            "No issues found. The calls are fine.",
            "Correct tool, but the city does not match.",
            r#"{"result": "true", "rationale": "r"}"#,
            r#"{"result": true}"#,
            r#"{"verdict": "yes"}"#,
            "Here it is: {\"result\": \"yes\"}",
            r#"{"result": "yes", "rationale": 3}"#,
            "",
        ] {
            assert!(yes_no(text).is_err(), "{text:?} read as {:?}", yes_no(text));
        }
        let s = parse_answer(r#"{"result": 0.75, "rationale": "r"}"#, AnswerKind::Score).unwrap();
        assert_eq!(s.score, Some(0.75));
        for text in [
            r#"{"result": 7}"#,
            r#"{"result": "0.5"}"#,
            r#"{"score": 0.5}"#,
        ] {
            assert!(parse_answer(text, AnswerKind::Score).is_err(), "{text}");
        }
    }

    #[test]
    fn envelope_truncation_and_empty_content() {
        let body = r#"{"choices":[{"finish_reason":"stop","message":{"role":"assistant","content":"{\"result\":\"yes\"}"}}],
                       "usage":{"prompt_tokens":120,"completion_tokens":9}}"#;
        let c = completion(body, "4096").unwrap();
        assert_eq!(c.content, r#"{"result":"yes"}"#);
        assert_eq!(
            (c.tokens.prompt_tokens, c.tokens.completion_tokens),
            (120, 9)
        );
        let cut =
            r#"{"choices":[{"finish_reason":"length","message":{"content":"{\"result\":\"y"}}]}"#;
        let e = completion(cut, "4096").err().unwrap().to_string();
        assert!(e.contains("truncated") && e.contains("4096"), "{e}");
        let thinking = r#"{"choices":[{"finish_reason":"stop","message":{"content":"","reasoning_content":"No wait"}}]}"#;
        let e = completion(thinking, "4096").err().unwrap().to_string();
        assert!(e.contains("reasoning_content"), "{e}");
        assert!(completion("<html>", "1").is_err());
        assert!(completion(r#"{"choices":[]}"#, "1").is_err());
    }

    #[test]
    fn format_complaints_are_told_from_other_400s() {
        assert!(about_format(
            r#"{"error":{"message":"Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model."}}"#
        ));
        // llama.cpp's and vLLM's context-length errors.
        assert!(!about_format(
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}"#
        ));
        assert!(!about_format(
            r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#
        ));
        assert!(!about_format(
            r#"{"error":{"message":"Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.","param":"temperature"}}"#
        ));
    }
}
