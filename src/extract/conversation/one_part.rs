//! A message whose content is one part object rather than a list of parts
//! (docs/conventions.md, "The conversation witness"): Sentry's
//! `googleGenAIIntegration` records a chat session's `sendMessage` input as
//! `{"role": "user", "content": {"functionResponse": {...}}}`, the one part
//! the application passed. A part alone reads as a list of that one part.

use serde_json::Value;

/// A message's parts: a list as it is, one part object as a list of one.
pub(super) fn listed(parts: Option<&Value>) -> Option<&[Value]> {
    match parts? {
        Value::Array(items) => Some(items),
        one @ Value::Object(_) => Some(std::slice::from_ref(one)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::extract::unwrap_tests::{span, trace};
    use crate::extract::{CallResult, Extractor};

    #[test]
    fn one_part_object_reads_as_a_list_of_one() {
        let part = json!({"functionResponse": {"id": "k1", "name": "moor", "response": {}}});
        assert_eq!(listed(Some(&part)), Some(std::slice::from_ref(&part)));
        let list = json!([part.clone(), part.clone()]);
        assert_eq!(listed(Some(&list)).map(<[Value]>::len), Some(2));
        assert_eq!(listed(Some(&json!("text"))), None);
        assert_eq!(listed(None), None);
    }

    /// A model span of a made-up vendor: its input and output bodies.
    fn model(id: u8, input: &Value, output: &Value) -> crate::assemble::SpanRecord {
        let (i, o) = (input.to_string(), output.to_string());
        span(
            id,
            Some(1),
            "quill.generate",
            &[
                ("quill.span_type", "LLM"),
                ("quill.input", &i),
                ("quill.output", &o),
            ],
        )
    }

    #[test]
    fn a_result_in_one_part_object_answers_its_call() {
        let ask = json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"id": "q1", "name": "moor", "args": {"pier": "B"}}}]}}]});
        let user = json!({"role": "user", "parts": [{"text": "moor at B"}]});
        let asked = json!({"role": "model", "parts": [
            {"functionCall": {"id": "q1", "name": "moor", "args": {"pier": "B"}}}]});
        let answer = |content: Value| json!({"contents": [user, asked, {"role": "user", "content": content}]});
        let part =
            json!({"functionResponse": {"id": "q1", "name": "moor", "response": {"berth": 4}}});
        for content in [part.clone(), json!([part])] {
            let t = trace(vec![
                span(1, None, "loop", &[]),
                model(2, &json!({"contents": [user]}), &ask),
                model(3, &answer(content), &json!({"candidates": []})),
            ]);
            let calls = Extractor::default().analyze(&t).calls;
            let results: Vec<Value> = calls
                .iter()
                .filter_map(|c| c.result.as_ref().map(CallResult::to_value))
                .collect();
            assert_eq!(results, vec![json!({"berth": 4})]);
        }
    }
}
