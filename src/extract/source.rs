//! Reading a rule source off a span: the raw attribute or event value at a
//! field, as text or a name, and attribute values as JSON.

use std::borrow::Cow;

use serde_json::{Number, Value};

use super::rules::{Decode, Field, Source};
use super::{canonical, literal};
use crate::assemble::session::is_placeholder_id;
use crate::assemble::{find_attr, SpanRecord, Val};

/// The text of a string attribute source.
pub(crate) fn raw_string<'a>(field: &Field, s: &'a SpanRecord) -> Option<&'a str> {
    raw(field, s)?.as_str()
}

/// The raw value at a field (not for the span name).
pub(crate) fn raw<'a>(field: &Field, s: &'a SpanRecord) -> Option<Val<'a>> {
    match field {
        Field::Attr(k) => s.attr(k),
        Field::Event { event, attr } => s
            .span
            .events
            .iter()
            .filter(|e| e.name == *event)
            .find_map(|e| find_attr(&e.attributes, attr)),
        Field::EventSide(side) => super::event_side::raw(*side, s),
        Field::SpanName => None,
    }
}

/// Applies a source's `pattern`: capture group 1, or the whole match.
pub(crate) fn apply_pattern<'a>(src: &Source, text: Cow<'a, str>) -> Option<Cow<'a, str>> {
    let Some(re) = &src.pattern else {
        return Some(text);
    };
    let caps = re.captures(&text)?;
    let m = caps.get(1).or_else(|| caps.get(0))?;
    Some(match text {
        Cow::Borrowed(t) => Cow::Borrowed(&t[m.range()]),
        Cow::Owned(ref t) => Cow::Owned(t[m.range()].to_string()),
    })
}

/// A source read as text (names, error messages).
pub(crate) fn text_of<'a>(src: &Source, s: &'a SpanRecord) -> Option<Cow<'a, str>> {
    let text = match &src.field {
        Field::SpanName => Cow::Borrowed(s.span.name()),
        f => raw(f, s).and_then(any_text)?,
    };
    apply_pattern(src, text)
}

/// A source read as a name or message: with `decode = "json"`, a JSON
/// string literal is decoded (MLflow's `"\"get_weather\""`).
/// With `in_span_name`, only a value the span's name holds as a whole word.
pub(crate) fn name_of<'a>(src: &Source, s: &'a SpanRecord) -> Option<Cow<'a, str>> {
    let name = decoded_name(src, s)?;
    if src.in_span_name && !has_word(s.span.name(), &name) {
        return None;
    }
    Some(name)
}

/// Whether `word` (not blank) occurs in `text` with no letter, digit or
/// `_` right before or after it.
pub(crate) fn has_word(text: &str, word: &str) -> bool {
    let part = |c: char| c.is_alphanumeric() || c == '_';
    !word.trim().is_empty()
        && text.match_indices(word).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + word.len()..].chars().next();
            !before.is_some_and(part) && !after.is_some_and(part)
        })
}

fn decoded_name<'a>(src: &Source, s: &'a SpanRecord) -> Option<Cow<'a, str>> {
    let text = text_of(src, s)?;
    if src.decode == Decode::Json && text.starts_with('"') {
        if let Ok(decoded) = serde_json::from_str::<String>(&text) {
            return Some(Cow::Owned(decoded));
        }
    }
    Some(text)
}

/// JSON text as a value, or the text itself: also when it nests too deep
/// for a report row to be read back (`canonical::too_deep`).
pub(crate) fn parse_json_or_string(text: &str) -> Value {
    match serde_json::from_str(text) {
        Ok(v) if !canonical::too_deep(text, &v) => v,
        _ => Value::String(text.to_string()),
    }
}

/// [`parse_json_or_string`], but text that is no JSON and is a Python
/// dict, list or tuple literal becomes its value (`literal::parse`). A JSON
/// string stays the string it holds, whatever that holds.
pub(crate) fn parse_json_or_literal(text: &str) -> Value {
    match parse_json_or_string(text) {
        // The text itself: it was no JSON.
        Value::String(t) if t == text => literal::parse(&t).unwrap_or(Value::String(t)),
        v => v,
    }
}

/// An attribute value as text (strings as-is, scalars formatted).
pub fn any_text(v: Val<'_>) -> Option<Cow<'_, str>> {
    Some(match v {
        Val::Empty => return None,
        Val::Str(s) => Cow::Borrowed(s),
        Val::Int(i) => Cow::Owned(i.to_string()),
        Val::Double(d) => Cow::Owned(d.to_string()),
        Val::Bool(b) => Cow::Owned(b.to_string()),
        _ => Cow::Owned(any_to_json(v).to_string()),
    })
}

/// An OTLP attribute value as JSON.
pub fn any_to_json(v: Val<'_>) -> Value {
    match v {
        Val::Empty | Val::Other(_) => Value::Null,
        Val::Str(s) => Value::String(s.to_string()),
        Val::Bool(b) => Value::Bool(b),
        Val::Int(i) => Value::Number(i.into()),
        Val::Double(d) => Number::from_f64(d).map_or(Value::Null, Value::Number),
        Val::Array(a) => Value::Array(a.iter().map(|x| any_to_json(Val::of(x))).collect()),
        Val::Kvlist(kv) => Value::Object(
            kv.iter()
                .map(|p| {
                    (
                        p.key.clone(),
                        p.value
                            .as_ref()
                            .map_or(Value::Null, |v| any_to_json(Val::of(v))),
                    )
                })
                .collect(),
        ),
        Val::Bytes(b) => Value::String(b.iter().map(|x| format!("{x:02x}")).collect()),
    }
}

/// Keys of an execution span that hold the id the model gave the call it
/// executes (OTel GenAI, OpenInference, Vercel AI SDK, VoltAgent, LiveKit
/// Agents, Spring AI).
pub(crate) const CALL_ID_KEYS: [&str; 6] = [
    "gen_ai.tool.call.id",
    "tool_call.id",
    "ai.toolCall.id",
    "tool.call.id",
    "lk.function_tool.id",
    "spring.ai.tool.call.id",
];

/// The spellings of a call id key's last separator: `.id` as
/// [`CALL_ID_KEYS`] write it, `_id` and `Id` as some instrumentations do
/// (Netra's agno spans: `gen_ai.tool.call_id`).
const ID_SPELLINGS: [&str; 3] = [".id", "_id", "Id"];

/// [`CALL_ID_KEYS`] in every spelling of [`ID_SPELLINGS`], one key family:
/// the keys as written first, in their order, then the other spellings.
pub(crate) fn call_id_keys() -> &'static [String] {
    static KEYS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
        ID_SPELLINGS
            .iter()
            .flat_map(|end| {
                CALL_ID_KEYS
                    .iter()
                    .filter_map(move |k| k.strip_suffix(".id").map(|stem| format!("{stem}{end}")))
            })
            .collect()
    });
    &KEYS
}

/// Which of [`call_id_keys`] `key` is (its rank there), if any.
#[inline]
pub(crate) fn call_id_key_rank(key: &[u8]) -> Option<usize> {
    // Every call id key ends `id` or `Id`: most keys are passed at a glance.
    if !(key.ends_with(b"id") || key.ends_with(b"Id")) {
        return None;
    }
    call_id_keys().iter().position(|c| c.as_bytes() == key)
}

/// How many keys [`call_id_keys`] holds.
const CALL_ID_KEY_COUNT: usize = CALL_ID_KEYS.len() * ID_SPELLINGS.len();

/// The model's call id a tool span records, if any: the string value of
/// the first of [`call_id_keys`] the span has (the first attribute of that
/// key), as looking each key up in turn would give, in one pass over the
/// span's keys.
pub(crate) fn tool_call_id(s: &crate::assemble::SpanRecord) -> Option<&str> {
    // Where each key first occurs; where a metadata key first occurs.
    let mut first = [usize::MAX; CALL_ID_KEY_COUNT];
    let mut meta = None;
    for (i, k) in s.span.attr_keys().enumerate() {
        if let Some(rank) = call_id_key_rank(k) {
            if let Some(slot) = first.get_mut(rank).filter(|f| **f == usize::MAX) {
                *slot = i;
            }
        } else if meta.is_none() && is_metadata_call_id(k) {
            meta = Some(i);
        }
    }
    first
        .iter()
        .filter(|&&i| i != usize::MAX)
        .find_map(|&i| s.span.attr_value(i).and_then(Val::as_str))
        .or_else(|| meta.and_then(|i| s.span.attr_value(i).and_then(Val::as_str)))
        .map(str::trim)
        .filter(|id| !id.is_empty() && !is_placeholder_id(id))
}

/// The keys of a call id handed to the tool's run as metadata
/// (`metadata_call_id_keys`), bare or after a namespace ending in `.`.
fn metadata_call_id_keys() -> &'static [String] {
    // Looked up once: every span's keys ending `id` are checked.
    static KEYS: std::sync::OnceLock<&'static [String]> = std::sync::OnceLock::new();
    KEYS.get_or_init(|| super::rules::builtin_list("metadata_call_id_keys"))
}

/// The last dot-separated parts of [`metadata_call_id_keys`] (projection
/// at decode keeps a key so ending).
pub(crate) fn metadata_call_id_tails() -> impl Iterator<Item = String> {
    metadata_call_id_keys()
        .iter()
        .filter_map(|k| k.rsplit('.').next().map(str::to_string))
}

/// Whether `key` is one of [`metadata_call_id_keys`] under any namespace.
#[inline]
fn is_metadata_call_id(key: &[u8]) -> bool {
    // Every such key ends `id`: most keys are passed at a glance.
    key.ends_with(b"id")
        && metadata_call_id_keys().iter().any(|m| {
            let m = m.as_bytes();
            key == m
                || (key.len() > m.len() && key.ends_with(m) && key[key.len() - m.len() - 1] == b'.')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call id handed down as a run's metadata, under a made-up namespace:
    /// read after the call id keys, and only under a `metadata.` part.
    #[test]
    fn a_call_id_in_run_metadata_is_the_call_id() {
        let sp = |attrs: &[(&str, &str)]| crate::extract::tests::sp(1, None, (0, 1), "Step", attrs);
        let meta = sp(&[("acme.run.metadata.tool_call_id", "k9")]);
        assert_eq!(tool_call_id(&meta), Some("k9"));
        let both = sp(&[
            ("acme.run.metadata.tool_call_id", "k9"),
            ("gen_ai.tool.call.id", "k1"),
        ]);
        assert_eq!(tool_call_id(&both), Some("k1"));
        let other = sp(&[("acme.runmetadata.tool_call_id", "k9")]);
        assert_eq!(tool_call_id(&other), None);
    }

    /// A word a writer puts where it does not know the model's call id
    /// (JAF's `unknown`) is no call id.
    #[test]
    fn a_placeholder_word_is_no_call_id() {
        let sp = |id: &str| {
            crate::extract::tests::sp(1, None, (0, 1), "acme-tool", &[("tool.call.id", id)])
        };
        for id in ["unknown", "UNKNOWN", "none", "undefined", "n/a"] {
            assert_eq!(tool_call_id(&sp(id)), None, "{id}");
        }
        for id in ["call_1", "unknown_7"] {
            assert_eq!(tool_call_id(&sp(id)), Some(id));
        }
    }
}
