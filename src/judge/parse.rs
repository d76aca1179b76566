//! Reading what a chat completions server answers: the response envelope,
//! then the verdict inside the message text, defensively (models wrap JSON
//! in code fences or prose, or ignore the requested format).

use serde_json::{json, Map, Value};

use super::{Answer, AnswerKind, JudgeError, Tokens};

/// The `response_format` asking for a verdict object of `kind`.
pub(super) fn response_schema(kind: AnswerKind) -> Value {
    let (field, schema) = match kind {
        AnswerKind::YesNo => ("verdict", json!({"type": "string", "enum": ["yes", "no"]})),
        AnswerKind::Score => ("score", json!({"type": "number"})),
    };
    json!({
        "type": "json_schema",
        "json_schema": {
            "name": "verdict",
            "strict": true,
            "schema": {
                "type": "object",
                "properties": {"rationale": {"type": "string"}, field: schema},
                "required": ["rationale", field],
                "additionalProperties": false,
            },
        },
    })
}

/// The message text and token usage of a chat completions response body.
pub(super) fn completion(body: &str) -> Result<(String, Tokens), JudgeError> {
    let v: Value = serde_json::from_str(body).map_err(|e| {
        JudgeError::Unparseable(format!("response is not JSON ({e}): {}", snippet(body)))
    })?;
    let message = v.pointer("/choices/0/message");
    let content = message
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
        // Some reasoning servers leave `content` empty and answer here.
        .or_else(|| {
            message
                .and_then(|m| m.get("reasoning_content"))
                .and_then(Value::as_str)
        })
        .ok_or_else(|| {
            JudgeError::Unparseable(format!("no choices[0].message.content: {}", snippet(body)))
        })?;
    let n = |k: &str| {
        v.pointer(&format!("/usage/{k}"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Ok((
        content.to_string(),
        Tokens {
            prompt_tokens: n("prompt_tokens"),
            completion_tokens: n("completion_tokens"),
        },
    ))
}

/// The verdict in a model's answer text: a JSON object (bare, in a code
/// fence, or inside prose), or a bare `yes`/`no` as the first word.
pub fn parse_answer(text: &str, kind: AnswerKind) -> Result<Answer, JudgeError> {
    let unparseable = || JudgeError::Unparseable(snippet(text));
    let object = json_objects(text).find_map(|o| read_object(&o, kind));
    if let Some(answer) = object {
        return Ok(answer);
    }
    if kind == AnswerKind::YesNo {
        let first = text
            .trim_start()
            .split(|c: char| !c.is_alphanumeric())
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        if let Some(verdict) = yes_no(&first) {
            return Ok(Answer {
                verdict: Some(verdict),
                score: None,
                rationale: text.trim().to_string(),
                tokens: Tokens::default(),
                cached: false,
            });
        }
    }
    Err(unparseable())
}

fn yes_no(word: &str) -> Option<bool> {
    match word.trim().to_ascii_lowercase().as_str() {
        "yes" | "true" | "pass" | "correct" => Some(true),
        "no" | "false" | "fail" | "incorrect" => Some(false),
        _ => None,
    }
}

fn read_object(o: &Map<String, Value>, kind: AnswerKind) -> Option<Answer> {
    let rationale = ["rationale", "reason", "reasoning", "explanation"]
        .iter()
        .find_map(|k| o.get(*k).and_then(Value::as_str))
        .unwrap_or("")
        .to_string();
    let (verdict, score) = match kind {
        AnswerKind::YesNo => {
            let v = ["verdict", "result", "answer", "value"]
                .iter()
                .find_map(|k| o.get(*k))?;
            let verdict = match v {
                Value::Bool(b) => *b,
                Value::String(s) => yes_no(s)?,
                _ => return None,
            };
            (Some(verdict), None)
        }
        AnswerKind::Score => {
            let s = o.get("score")?;
            let score = match s {
                Value::Number(n) => n.as_f64()?,
                Value::String(t) => t.trim().parse().ok()?,
                _ => return None,
            };
            if !(0.0..=1.0).contains(&score) {
                return None;
            }
            (None, Some(score))
        }
    };
    Some(Answer {
        verdict,
        score,
        rationale,
        tokens: Tokens::default(),
        cached: false,
    })
}

/// Every JSON object in `text`, trying each `{` from the left with a
/// streaming parser (which stops at the object's end, so prose after it
/// does not matter).
fn json_objects(text: &str) -> impl Iterator<Item = Map<String, Value>> + '_ {
    text.match_indices('{').filter_map(move |(i, _)| {
        let mut stream = serde_json::Deserializer::from_str(&text[i..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(Value::Object(m))) => Some(m),
            _ => None,
        }
    })
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

    #[test]
    fn verdicts_in_fences_prose_and_bare_words() {
        let a = parse_answer(
            r#"{"rationale": "ok", "verdict": "yes"}"#,
            AnswerKind::YesNo,
        )
        .unwrap();
        assert_eq!((a.verdict, a.rationale.as_str()), (Some(true), "ok"));
        let fenced =
            "Sure.\n```json\n{\"verdict\": \"NO\", \"reason\": \"missing b\"}\n```\nDone {";
        let a = parse_answer(fenced, AnswerKind::YesNo).unwrap();
        assert_eq!(
            (a.verdict, a.rationale.as_str()),
            (Some(false), "missing b")
        );
        let a = parse_answer("Yes. The calls match.", AnswerKind::YesNo).unwrap();
        assert_eq!(a.verdict, Some(true));
        assert!(parse_answer("I cannot decide {maybe}", AnswerKind::YesNo).is_err());
        let a = parse_answer(r#"x {"score": 0.75, "rationale": "r"}"#, AnswerKind::Score).unwrap();
        assert_eq!(a.score, Some(0.75));
        assert!(parse_answer(r#"{"score": 7}"#, AnswerKind::Score).is_err());
    }

    #[test]
    fn completion_envelope() {
        let body = r#"{"choices":[{"message":{"role":"assistant","content":"{\"verdict\":\"yes\"}"}}],
                       "usage":{"prompt_tokens":120,"completion_tokens":9}}"#;
        let (c, t) = completion(body).unwrap();
        assert_eq!(c, r#"{"verdict":"yes"}"#);
        assert_eq!((t.prompt_tokens, t.completion_tokens), (120, 9));
        assert!(matches!(
            completion("<html>"),
            Err(JudgeError::Unparseable(_))
        ));
        assert!(completion(r#"{"choices":[]}"#).is_err());
    }
}
