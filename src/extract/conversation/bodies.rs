//! A model call's request and response bodies under keys no form names
//! (docs/conventions.md, "The conversation witness", "Bodies under any
//! key").
//!
//! Tracers that wrap a model client often record what went in and what
//! came out as JSON under their own input- and output-like keys
//! (`<vendor>.spanInputs`, `<vendor>.entity.output`, `<vendor>.input`,
//! `gen_ai.response.tool_calls`, ...): the provider API's request and
//! response bodies (OpenAI chat completions and Responses, Anthropic
//! Messages, Gemini, Bedrock Converse), or a list of messages. The witness
//! reads those bodies as it reads the named forms, but only on a span that
//! says it is a model call: an attribute whose key ends like a span kind or
//! type (`span.kind`, `spanType`, `observation.type`, `operation.name`, ...)
//! and whose value names a model call (`LLM`, `CHAT_MODEL`, `generation`,
//! `chat`, ...). Other spans' bodies, a tool's input among them, are never
//! parsed here.

pub(crate) use super::http::METHOD_KEYS;
use super::kinds::{kind_like, kind_word};
pub(crate) use super::kinds::{KIND_KEYS, KIND_TAILS};
use super::{message_text, INPUT_KEYS, OUTPUT_KEYS};
use crate::assemble::{SpanRecord, Val};

/// The form calls and results read from such a body are said to come in.
pub(super) const FORM: &str = "model-body";

/// Values of such an attribute that name a model call (without regard to
/// case; a JSON-quoted value is unquoted first).
const MODEL_KINDS: [&str; 8] = [
    "llm",
    "chat_model",
    "chat",
    "generation",
    "completion",
    "text_completion",
    "chat_completion",
    "generate_content",
];

use crate::extract::sides::{side_of, Side};

/// Whether span `s` says it is a model call ([`KIND_ENDINGS`],
/// [`MODEL_KINDS`]), is an HTTP POST of a chat request
/// ([`super::http`]), names its requested model beside a JSON list of
/// messages ([`super::requested_model`]), or holds a body under a key
/// named for one ([`super::named_bodies`]).
pub(crate) fn is_model_call(s: &SpanRecord) -> bool {
    is_kind(s, &MODEL_KINDS)
        || super::http::is_model_call(s)
        || super::requested_model::is_model_call(s)
        || super::named_bodies::is_model_call(s)
}

/// Whether span `s` says it is an agent's run (`AGENT`, in the same
/// attributes as [`is_model_call`]).
pub(super) fn is_agent_run(s: &SpanRecord) -> bool {
    is_kind(s, &["agent"])
}

/// Whether span `s` says it is an agent's or a chain's run (`AGENT`,
/// `CHAIN`, as [`is_agent_run`]): a chain's output may be a graph's final
/// state.
pub(super) fn is_run(s: &SpanRecord) -> bool {
    is_kind(s, &["agent", "chain"])
}

/// Whether an attribute of span `s` whose key ends like a kind
/// ([`KIND_ENDINGS`]) has one of `kinds` for value.
fn is_kind(s: &SpanRecord, kinds: &[&str]) -> bool {
    s.span
        .attr_keys()
        .enumerate()
        .any(|(i, key)| kind_at(s, i, key, kinds))
}

/// Whether attribute `i` of span `s`, whose key is `key`, says the span is
/// a model call ([`is_model_call`], one attribute at a time: for a pass
/// over the keys that asks more of each).
#[inline]
pub(super) fn model_call_at(s: &SpanRecord, i: usize, key: &[u8]) -> bool {
    // The last word first, in the caller's loop: most keys end in none.
    (kind_word(key) && kind_at(s, i, key, &MODEL_KINDS))
        || super::http::model_call_at(s, i, key)
        || super::requested_model::model_call_at(s, i, key)
        || super::named_bodies::model_call_at(s, i, key)
}

/// Whether attribute `i` of span `s`, whose key is `key`, ends like a kind
/// and has one of `kinds` for value. Every key of every span is asked: the
/// key first, as bytes, and the value (by its position, not looked up
/// again) only for a key that ends like a kind.
fn kind_at(s: &SpanRecord, i: usize, key: &[u8], kinds: &[&str]) -> bool {
    kind_like(key)
        && s.span
            .attr_value(i)
            .and_then(Val::as_str)
            .is_some_and(|t| names_kind(t, kinds))
}

fn names_kind(text: &str, kinds: &[&str]) -> bool {
    // Most values are a bare word (`LLM`, `chat`): one that starts and ends
    // with a printable ASCII byte other than a quote is what trimming and
    // unquoting it gives, and is compared as it is.
    let bare = |b: &u8| b.is_ascii_graphic() && *b != b'"';
    let bytes = text.as_bytes();
    if bytes.first().is_some_and(bare) && bytes.last().is_some_and(bare) {
        return kinds.iter().any(|k| text.eq_ignore_ascii_case(k));
    }
    let t = text.trim();
    let t = t
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(t);
    kinds.iter().any(|k| t.eq_ignore_ascii_case(k))
}

/// The JSON texts on model-call span `s` under keys of side `side` that no
/// named form reads there (a named key read under its own form is left to
/// it). For a span already known to be a model call ([`is_model_call`]);
/// an iterator, as most callers want the first text or none.
pub(super) fn bodies_of_model_call(s: &SpanRecord, side: Side) -> impl Iterator<Item = &str> + '_ {
    keyed_bodies_of_model_call(s, side).map(|(_, text)| text)
}

/// [`bodies_of_model_call`], each with its key.
pub(super) fn keyed_bodies_of_model_call(
    s: &SpanRecord,
    side: Side,
) -> impl Iterator<Item = (&str, &str)> + '_ {
    let named = match side {
        Side::Input => &INPUT_KEYS[..],
        Side::Output => &OUTPUT_KEYS[..],
    };
    bodies_besides(s, side, move |j| message_text(s, &named[j]).is_some())
}

/// [`keyed_bodies_of_model_call`], told by `read_as_named` whether the
/// `j`th named key of the side (of [`INPUT_KEYS`] or [`OUTPUT_KEYS`]) is
/// read under its own form on `s`: a caller that has read them knows.
pub(super) fn bodies_besides<'s>(
    s: &'s SpanRecord,
    side: Side,
    read_as_named: impl Fn(usize) -> bool + 's,
) -> impl Iterator<Item = (&'s str, &'s str)> + 's {
    let named = match side {
        Side::Input => &INPUT_KEYS[..],
        Side::Output => &OUTPUT_KEYS[..],
    };
    s.span.attributes().filter_map(move |(key, value)| {
        let text = value.and_then(|v: Val<'_>| v.as_str())?;
        if !text.trim_start().starts_with(['{', '[']) {
            return None;
        }
        // A named key (compared whole, cheaper than its words) first.
        let read = named
            .iter()
            .position(|k| k.0 == key)
            .is_some_and(&read_as_named);
        (!read && side_of(key) == Some(side)).then_some((key, text))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::sides::{for_each_word, INPUT_WORDS, OUTPUT_WORDS};

    #[test]
    fn words_split_at_punctuation_and_case_and_survive_any_text() {
        fn w(k: &str) -> Vec<&str> {
            let mut out = Vec::new();
            for_each_word(k, |w| out.push(w));
            out
        }
        assert_eq!(w("mlflow.spanInputs"), ["mlflow", "span", "Inputs"]);
        assert_eq!(
            w("gen_ai.response.tool_calls"),
            ["gen", "ai", "response", "tool", "calls"]
        );
        assert_eq!(w("v2Output..x"), ["v2", "Output", "x"]);
        assert_eq!(w("ABC"), ["ABC"]);
        assert_eq!(
            w("caf\u{e9}.r\u{e9}sum\u{e9}Input"),
            ["caf", "r", "sum", "Input"]
        );
        assert!(w("..\u{1f600}").is_empty());
        assert_eq!(side_of("\u{e9}t\u{e9}.input"), Some(Side::Input));
    }

    #[test]
    fn sides_come_from_the_words_of_a_key() {
        assert_eq!(side_of("mlflow.spanInputs"), Some(Side::Input));
        assert_eq!(side_of("mlflow.spanOutputs"), Some(Side::Output));
        assert_eq!(side_of("acme.entity.input"), Some(Side::Input));
        assert_eq!(side_of("input.value"), Some(Side::Input));
        assert_eq!(side_of("gen_ai.response.tool_calls"), Some(Side::Output));
        assert_eq!(side_of("raw_llm_response"), Some(Side::Output));
        assert_eq!(side_of("acme.chat.tools"), None);
        assert_eq!(side_of("gen_ai.tool.args"), None);
        // Both sides named: neither is read.
        assert_eq!(side_of("acme.request_response"), None);
        // A word inside another is not that word.
        assert_eq!(side_of("acme.outputformat"), None);
    }

    #[test]
    fn the_quick_look_sees_every_word() {
        // `side_of` compares a word's first letter, lowercased, first.
        for w in INPUT_WORDS.iter().chain(&OUTPUT_WORDS) {
            assert!(*w == w.to_lowercase(), "{w}");
            assert!(
                side_of(&format!("acme.{}", w.to_uppercase())).is_some(),
                "{w}"
            );
        }
    }

    #[test]
    fn model_kinds_are_read_unquoted_and_in_any_case() {
        let model = |t: &str| names_kind(t, &MODEL_KINDS);
        assert!(model("\"CHAT_MODEL\""));
        assert!(model("LLM"));
        assert!(model("generation"));
        assert!(!model("TOOL"));
        assert!(!model("\"AGENT\""));
        // Bare words and padded or quoted ones read alike.
        for t in [
            " chat",
            "chat\u{a0}",
            "\u{3000}LLM\n",
            "\"llm\"",
            "llm",
            "x-llm",
            "\"llm",
        ] {
            let whole = t.trim();
            let whole = whole
                .strip_prefix('"')
                .and_then(|w| w.strip_suffix('"'))
                .unwrap_or(whole);
            let expected = MODEL_KINDS.iter().any(|k| whole.eq_ignore_ascii_case(k));
            assert_eq!(model(t), expected, "{t:?}");
        }
        assert!(model("chat\u{a0}") && model(" chat") && !model("x-llm"));
    }
}
