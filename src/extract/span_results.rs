//! A call span's result at one of its rule's sources, and the cheap looks
//! that decide how to read it: JSON text kept as is where no unwrapping
//! could change it.

use std::sync::OnceLock;

use serde_json::Value;

use super::rules::{Decode, Rule, Source, Unwrap};
use super::source::{self, raw_string};
use super::wrappers::{self, value_of};
use super::{canonical, failed_message, framework_record, outcome_record, undeclared, CallResult};
use crate::assemble::SpanRecord;

/// A call's result from the first of `rule`'s own result sources that
/// gives one, and that source.
pub(super) fn own_result<'r>(rule: &'r Rule, s: &SpanRecord) -> Option<(CallResult, &'r Source)> {
    rule.result
        .iter()
        .find_map(|src| result_of(src, s).map(|r| (r, src)))
}

/// A call's result from `src`: the JSON text as is when the source only
/// decodes JSON (no pattern, no unwrapping), otherwise decoded as usual.
pub(super) fn result_of(src: &Source, s: &SpanRecord) -> Option<CallResult> {
    // JavaScript's `String(object)` is no result (`[object ToolMessage]`):
    // the conversation may carry the real one.
    if raw_string(&src.field, s).is_some_and(wrappers::is_js_placeholder) {
        return None;
    }
    if src.decode == Decode::Json && src.pattern.is_none() && !src.unwrapped_only {
        // A line break in JSON text is whitespace; kept verbatim, it would
        // split a JSONL row, so such text is parsed instead.
        let text = raw_string(&src.field, s)
            .map(str::trim)
            .filter(|t| memchr::memchr2(b'\n', b'\r', t.as_bytes()).is_none())
            .filter(|t| !unwrap_may_apply(src, t));
        if let Some(text) = text {
            if let Some(v) = wrappers::known_unwrapped(src, text)
                .or_else(|| wrappers::repr_in_json_string(src, text))
            {
                return Some(CallResult::Value(v));
            }
            // Text serde_json would not read back (a lone surrogate, a
            // number past f64) goes out as a string, as text that is not
            // JSON does: every report row stays JSON to any reader.
            return Some(if canonical::is_json(text) {
                CallResult::Json(text.into())
            } else if src.literal {
                // Not JSON: a Python literal's value, else the text itself.
                CallResult::Value(
                    wrappers::literal_of(src, text)
                        .unwrap_or_else(|| Value::String(text.to_string())),
                )
            } else {
                // Not JSON: the text itself, as `parse_json_or_string` does.
                CallResult::Value(Value::String(text.to_string()))
            });
        }
    }
    if let Some(r) = json_mime_result(src, s) {
        return Some(r);
    }
    value_of(src, s).map(CallResult::Value)
}

/// [`result_of`] at a source typed JSON by the span's MIME attribute
/// (OpenInference's `output.mime_type`) when no wrapper may apply: the
/// text as serde_json writes the value parsed from it (`canonical`), the
/// row's bytes without the value built, written and dropped. `None`: the
/// source is read the usual way.
fn json_mime_result(src: &Source, s: &SpanRecord) -> Option<CallResult> {
    if src.decode != Decode::JsonIfMime
        || src.flat
        || src.pattern.is_some()
        || src.unwrapped_only
        || src.not_schema
    {
        return None;
    }
    let text = raw_string(&src.field, s)?.trim();
    // A JSON string may hold a Python literal (`repr_in_string`).
    if (src.literal && text.starts_with('"'))
        || unwrap_may_apply(src, text)
        || (!src.known.is_empty() && wrappers::known_may_apply(text))
        || !wrappers::is_json_mime(s, src.mime_attr.as_ref())
    {
        return None;
    }
    canonical::canonical(text).map(|c| CallResult::Json(c.into()))
}

/// The arguments at `src` as [`ToolCall::args_json`], when they are JSON
/// text that [`value_of`] would take as is (no pattern or unwrapping, and
/// with `named` not a value that [`unnamed`] would have named).
pub(super) fn args_as_json(src: &Source, s: &SpanRecord, named: bool) -> Option<Box<str>> {
    if src.decode != Decode::Json || src.pattern.is_some() || src.not_schema || src.unwrapped_only {
        return None;
    }
    // Keys the tool does not declare may come off (`undeclared`).
    if undeclared::schema_of(src, s).is_some() {
        return None;
    }
    let text = raw_string(&src.field, s)?;
    if unwrap_may_apply(src, text.trim())
        || wrappers::known_unwrapped(src, text).is_some()
        || wrappers::repr_in_json_string(src, text.trim()).is_some()
    {
        return None;
    }
    let json = canonical::canonical(text)?;
    // Arguments that could be named from the request are parsed as usual.
    if named && (!json.starts_with('{') || contains(&json, Needle::Args)) {
        return None;
    }
    Some(json.into_boxed_str())
}

/// Whether one of `src`'s unwrappings could change the JSON `text` (a
/// cheap look at its text; `false` means it surely would not).
fn unwrap_may_apply(src: &Source, text: &str) -> bool {
    let object = text.starts_with('{');
    let blocks = || text.starts_with('[');
    let message = || object && contains(text, Needle::Type) && contains(text, Needle::Data);
    src.unwrap.iter().any(|u| match u {
        Unwrap::ContentBlocks => blocks(),
        Unwrap::ToolMessage => message(),
        Unwrap::LangchainCallback => {
            object && (contains(text, Needle::InputStr) || contains(text, Needle::Output))
        }
        Unwrap::ArgsKwargs => {
            object && (contains(text, Needle::Args) || contains(text, Needle::Kwargs))
        }
        Unwrap::LlamaIndexOutput => object && contains(text, Needle::RawOutput),
        Unwrap::BeeaiRun => object && contains(text, Needle::Options),
        Unwrap::AdkFunctionResponse => object && contains(text, Needle::Response),
        // AG2's result is `[success, {...}]`.
        Unwrap::Ag2Function => {
            (object && contains(text, Needle::Arguments))
                || (blocks()
                    && matches!(text[1..].trim_start().as_bytes().first(), Some(b't' | b'f')))
        }
        // MCP's result is `[{"type": "text", ...}]`.
        Unwrap::McpToolCall => {
            (object && contains(text, Needle::ToolName))
                || (blocks() && contains(text, Needle::Type))
        }
        Unwrap::LangchainMessage | Unwrap::TypedValue => object && contains(text, Needle::Type),
        Unwrap::McpContent => (object || blocks()) && contains(text, Needle::Type),
        Unwrap::McpClientResult => object && contains(text, Needle::Result),
        Unwrap::AdkResult => {
            object && (contains(text, Needle::Result) || contains(text, Needle::Results))
        }
        Unwrap::LangsmithOutputs => object && contains(text, Needle::Outputs),
        Unwrap::LangchainMessageRepr => text.trim_start_matches('"').starts_with("content="),
        Unwrap::AgnoResult => text.starts_with(wrappers::AGNO_RESULT_START),
        Unwrap::ProviderBlock => blocks(),
        Unwrap::AiSdkExecute => object && contains(text, Needle::Args),
        Unwrap::TextEnvelope => object || blocks() || text.starts_with("\"content="),
        Unwrap::NamedCall => object,
        Unwrap::LoneToolMessage => blocks() || object,
        Unwrap::AiSdkPart => object && contains(text, Needle::Type),
        Unwrap::JsonText => text.starts_with('"'),
        Unwrap::LoneJsonText => text.starts_with('['),
    }) || src
        .unwrap_key
        .as_ref()
        .is_some_and(|k| object && memchr::memmem::find(text.as_bytes(), k.as_bytes()).is_some())
}

/// The keys looked for in every call's JSON text.
#[derive(Clone, Copy)]
enum Needle {
    Args,
    Type,
    Data,
    InputStr,
    Output,
    ToolName,
    Kwargs,
    RawOutput,
    Options,
    Response,
    Arguments,
    Result,
    Outputs,
    Results,
}

/// Whether `text` holds `needle`, with searchers built once (building one
/// per search cost more than searching a kilobyte).
fn contains(text: &str, needle: Needle) -> bool {
    use memchr::memmem::Finder;
    static FINDERS: OnceLock<[Finder<'static>; 14]> = OnceLock::new();
    let finders = FINDERS.get_or_init(|| {
        [
            Finder::new(b"\"args\":"),
            Finder::new(b"\"type\""),
            Finder::new(b"\"data\""),
            Finder::new(b"\"input_str\""),
            Finder::new(b"\"output\""),
            Finder::new(b"\"tool_name\""),
            Finder::new(b"\"kwargs\":"),
            Finder::new(b"\"raw_output\""),
            Finder::new(b"\"options\""),
            Finder::new(b"\"response\""),
            Finder::new(b"\"arguments\""),
            Finder::new(b"\"result\""),
            Finder::new(b"\"outputs\""),
            Finder::new(b"\"results\""),
        ]
    });
    finders[needle as usize].find(text.as_bytes()).is_some()
}

/// `args` in the key order of `text`, when `text` is exactly that JSON
/// (not named, unwrapped or otherwise rebuilt on the way).
pub(super) fn ordered(
    text: Option<&str>,
    args: Option<&Value>,
) -> Option<std::sync::Arc<crate::value::PyValue>> {
    let (text, args) = (text?, args?);
    if !matches!(args, Value::Object(_) | Value::Array(_)) {
        return None;
    }
    let parsed = crate::value::PyValue::parse(text).ok()?;
    (parsed.to_json() == *args).then(|| std::sync::Arc::new(parsed))
}

/// Whether a record that states call span `s`'s status may be among its
/// rule's result sources: a framework's mark on `s` (`framework_record`),
/// or a source's text that may be an outcome record or a failed LangChain
/// message (`failed_message`). Each is a necessary condition of its
/// reader, so when this is false no reader would change the call: with
/// results off the extractor reads the result only when it is true, and
/// a call's status is the same whatever the output format.
pub(super) fn status_may_be_in_result(rule: &Rule, s: &SpanRecord) -> bool {
    framework_record::marked(s)
        || rule.result.iter().any(|src| {
            source::raw_string(&src.field, s).is_some_and(|t| {
                outcome_record::may_be_record(t) || failed_message::may_be_failed(t)
            })
        })
}
