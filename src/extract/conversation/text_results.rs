//! Tool results a framework hands back to the model as plain text
//! (docs/conventions.md, "The conversation witness", "Results as text").
//!
//! Some frameworks and hand-written loops do not send the model tool
//! messages: they write each result into a user message, in a text form of
//! their own (AgentOps' record of an Anthropic loop: `[Tool Result: X]`
//! once per result; smolagents' ReAct transcript: `Observation:` and the
//! result). Such text carries no call id nor tool name, so its results are
//! only ever paired by order with the calls of the model turn before
//! (`order`), under the same conditions as other results without ids. The
//! forms are data, declared once in [`text_results`]; they are read only in
//! a user message of a model request whose whole text is made of them, never
//! in a tool's own result.

use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::extract::rules::builtin_list;

/// One text form of tool results: what opens each result and what closes
/// it (empty: the result runs to the end of the message, one per message).
pub(crate) struct TextForm {
    pub opens: &'static str,
    pub closes: &'static str,
}

/// The text forms read, in the order tried: one or more results in one
/// message (`[Tool Result: A] [Tool Result: B]`), then a ReAct transcript's
/// observation (`Observation:\nA`, one a message; its words are the
/// `react_observation` list of `[vocabulary]`, `react_text`'s too).
pub(crate) fn text_results() -> &'static [TextForm] {
    static FORMS: OnceLock<Vec<TextForm>> = OnceLock::new();
    FORMS.get_or_init(|| {
        let mut forms = vec![TextForm {
            opens: "[Tool Result: ",
            closes: "]",
        }];
        let observations = builtin_list("react_observation").iter();
        forms.extend(observations.map(|w| TextForm {
            opens: w.as_str(),
            closes: "",
        }));
        forms
    })
}

/// The text of a message: its `content` string, or its text parts joined.
fn text_of(o: &Map<String, Value>) -> Option<Value> {
    match o.get("content") {
        Some(Value::String(t)) => Some(Value::String(t.clone())),
        _ => super::order::text_of_parts(o),
    }
}

/// The results in user message `o` when its whole text is made of one
/// text form's results, in order; `None` otherwise.
pub(super) fn results_in(o: &Map<String, Value>) -> Option<Vec<Value>> {
    let text = text_of(o)?;
    let text = text.as_str()?.trim();
    text_results().iter().find_map(|f| split(text, f))
}

/// The results of `n` calls (more than one) in user message `o` when its
/// whole text is one observation (a form without a closing word) of exactly
/// `n` lines: smolagents joins the observations of one turn's calls with
/// newlines, in the calls' order. Any other count pairs nothing.
pub(super) fn lines_in(o: &Map<String, Value>, n: usize) -> Option<Vec<Value>> {
    if n < 2 {
        return None;
    }
    let text = text_of(o)?;
    let text = text.as_str()?.trim();
    let body = text_results()
        .iter()
        .filter(|f| f.closes.is_empty())
        .find_map(|f| text.strip_prefix(f.opens))?;
    let lines: Vec<&str> = body.trim().lines().map(str::trim).collect();
    (lines.len() == n && lines.iter().all(|l| !l.is_empty()))
        .then(|| lines.into_iter().map(value_of).collect())
}

/// `text` cut into the results of form `f`, when it is made of nothing else.
fn split(text: &str, f: &TextForm) -> Option<Vec<Value>> {
    let rest = text.strip_prefix(f.opens)?;
    let pieces: Vec<&str> = if f.closes.is_empty() {
        vec![rest]
    } else {
        rest.split(f.opens).collect()
    };
    let mut out = Vec::with_capacity(pieces.len());
    for (k, piece) in pieces.iter().enumerate() {
        let mut piece = piece.trim();
        if !f.closes.is_empty() {
            piece = piece.strip_suffix(f.closes)?.trim_end();
        } else if k > 0 {
            return None;
        }
        out.push(value_of(piece));
    }
    Some(out)
}

/// A result's text as the value the tool returned: JSON, or a Python
/// literal (`str(dict)`, as ReAct frameworks write it), else the text.
pub(crate) fn value_of(text: &str) -> Value {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        if v.is_object() || v.is_array() {
            return v;
        }
    }
    let t = text.trim_start();
    if t.starts_with('{') || t.starts_with('[') || t.starts_with('(') {
        if let Some(v) = crate::extract::literal::parse(text) {
            return v;
        }
    }
    Value::String(text.to_string())
}

/// A tool message's content that is the Python literal of a list or dict
/// (genai-otel-instrument writes `str()` of an MCP result's content
/// blocks: `[{'type': 'text', 'text': 'rented'}]`) as its value, so that
/// the known result wrappers apply to it; JSON text and any other value
/// as they are.
pub(super) fn python_literal(v: Value) -> Value {
    match v {
        Value::String(t)
            if t.trim_start().starts_with(['[', '{'])
                && serde_json::from_str::<serde::de::IgnoredAny>(&t).is_err() =>
        {
            crate::extract::literal::parse(&t).unwrap_or(Value::String(t))
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::results_in;

    fn read(m: Value) -> Option<Vec<Value>> {
        results_in(m.as_object().unwrap())
    }

    #[test]
    fn each_form_is_cut_into_its_results() {
        let got = read(json!({"role": "user",
            "content": "[Tool Result: {\"seats\": [1, 2]}] [Tool Result: done]"}));
        assert_eq!(got, Some(vec![json!({"seats": [1, 2]}), json!("done")]));
        let got = read(json!({"role": "user", "parts": [{"type": "text",
            "content": "Observation:\n{'room': 12, 'free': True}"}]}));
        assert_eq!(got, Some(vec![json!({"room": 12, "free": true})]));
    }

    #[test]
    fn one_observation_of_several_calls_is_cut_by_lines_only_when_they_match() {
        use super::lines_in;
        let m = json!({"role": "user", "content": "Observation:\n12\n['Bergen', 'Oslo']"});
        let m = m.as_object().unwrap();
        assert_eq!(
            lines_in(m, 2),
            Some(vec![json!("12"), json!(["Bergen", "Oslo"])])
        );
        assert_eq!(lines_in(m, 3), None);
        assert_eq!(lines_in(m, 1), None);
        let bracketed = json!({"role": "user", "content": "[Tool Result: 1]\n[Tool Result: 2]"});
        assert_eq!(lines_in(bracketed.as_object().unwrap(), 2), None);
        let blank = json!({"role": "user", "content": "Observation:\n1\n\n2"});
        assert_eq!(lines_in(blank.as_object().unwrap(), 3), None);
    }

    #[test]
    fn a_python_literal_is_its_value_json_stays_text() {
        let got = super::python_literal(json!("[{'type': 'text', 'text': 'kite', 'n': None}]"));
        assert_eq!(got, json!([{"type": "text", "text": "kite", "n": null}]));
        let json_text = json!("[{\"type\": \"text\"}]");
        assert_eq!(super::python_literal(json_text.clone()), json_text);
        assert_eq!(
            super::python_literal(json!("[not a literal")),
            json!("[not a literal")
        );
    }

    #[test]
    fn other_text_is_no_result() {
        for text in [
            "Please book [Tool Result: x]",
            "[Tool Result: x] and more",
            "[Tool Result: x",
            "observations: none",
            "",
        ] {
            assert_eq!(
                read(json!({"role": "user", "content": text})),
                None,
                "{text}"
            );
        }
        // Parts other than text are no text form.
        let image =
            json!({"role": "user", "parts": [{"type": "image", "content": "Observation: x"}]});
        assert_eq!(read(image), None);
    }
}
