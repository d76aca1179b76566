//! Call records written one span attribute per call (docs/conventions.md,
//! "The conversation witness", "Call records").
//!
//! An agent framework's own span may list the calls of its run as one
//! attribute per call, under a key that names a tool call and ends in the
//! call's id or position, each value the framework's record of the call as
//! JSON: Langtrace's phidata wrapper writes `phidata.agent.tool_call.<call
//! id>` = `{"id", "name", "arguments", "start_time"}` on `Agent.run` and
//! `Agent._run` (with `result`, `error` and `end_time` only on the calls it
//! saw finish). The model call's own record may be mangled (a streamed turn
//! recorded as its argument deltas run together), so these records are the
//! calls' names and arguments. Like a span of one call record
//! ([`super::records`]), such a record says the model asked for the call:
//! the witness counts it when a later request of the trace answers its id,
//! with that request's result, and a record no request answers is no call.
//!
//! The key shapes and the record's field names are the vocabularies
//! `call_record_parts`, `call_record_id_keys`, `call_record_name_keys` and
//! `call_record_args_keys` (`vocabulary.toml`).

use std::collections::HashSet;
use std::sync::OnceLock;

use serde_json::Value;

use crate::assemble::{SpanRecord, Val};
use crate::extract::requested::Asked;
use crate::extract::rules::builtin_list;

/// The form such calls are read in (`call-attribute-messages` in rows).
pub(super) const FORM: &str = "call-attribute";

/// A vocabulary list of `vocabulary.toml`.
fn words(name: &str) -> &'static [String] {
    builtin_list(name)
}

/// The key parts that name a tool call (vocabulary `call_record_parts`),
/// with the infixes that keep keys holding one at decode.
fn parts() -> &'static [String] {
    words("call_record_parts")
}

/// The key infixes of the records (projection at decode): each part
/// followed by a dot (the id or position after it).
pub(crate) fn key_infixes() -> impl Iterator<Item = String> {
    parts().iter().map(|p| format!("{p}."))
}

/// Whether `key` may be a call record's: its last dot-separated part
/// follows a part that names a tool call (`<ns>.tool_call.<id>`), or is
/// one (`<ns>.tool_call`). Asked of every key of the spans that may hold
/// records ([`asked`]): one walk back to the last dot, then a test of the
/// byte before it and of the parts' endings.
#[inline]
pub(super) fn is_record_key(key: &[u8]) -> bool {
    // The parts as bytes, kept once (the vocabulary is looked up by name).
    static PARTS: OnceLock<Vec<&'static [u8]>> = OnceLock::new();
    let parts = PARTS.get_or_init(|| parts().iter().map(String::as_bytes).collect());
    // `bytes` ends with part `p`, which starts it or follows a dot.
    let ends_with_part = |bytes: &[u8]| {
        parts.iter().any(|p| {
            bytes.last() == p.last()
                && bytes.ends_with(p)
                && (bytes.len() == p.len() || bytes[bytes.len() - p.len() - 1] == b'.')
        })
    };
    let Some(at) = key.iter().rposition(|&b| b == b'.') else {
        return ends_with_part(key);
    };
    let (head, last) = (&key[..at], &key[at + 1..]);
    ends_with_part(key) || (!last.is_empty() && ends_with_part(head))
}

/// The calls span `s` records one attribute each (see the module's doc),
/// in attribute order; none when it holds no such record. Asked of the
/// spans that are neither a model call nor a call a rule read.
pub(super) fn asked(s: &SpanRecord) -> Vec<Asked> {
    let mut out: Vec<Asked> = Vec::new();
    // Records seen (id, tool): a span may hold thousands.
    let mut seen: HashSet<(Option<String>, String)> = HashSet::new();
    for (i, k) in s.span.attr_keys().enumerate() {
        let Some(text) = s.span.attr_value(i).and_then(Val::as_str) else {
            continue;
        };
        // The value first: few are JSON objects (a record is written
        // without leading space), and the key's test costs more than a
        // look at a first byte.
        if text.as_bytes().first() != Some(&b'{') || !is_record_key(k) {
            continue;
        }
        let Some(a) = record(k, text) else { continue };
        // The same call recorded twice on one span is one request.
        if seen.insert((a.id.clone(), a.name.clone())) {
            out.push(a);
        }
    }
    out
}

/// The call a record of key `key` and JSON text `text` asks for: an object
/// naming a tool, with arguments that are an object (or its JSON text) and
/// no schema, and a call id (its own, else the key's last part when that
/// is no position).
fn record(key: &[u8], text: &str) -> Option<Asked> {
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(text) else {
        return None;
    };
    let field = |list: &str| {
        words(list)
            .iter()
            .find_map(|k| o.get(k.as_str()).filter(|v| !v.is_null()))
    };
    let name = field("call_record_name_keys")?.as_str()?.trim();
    if name.is_empty() {
        return None;
    }
    let args = match field("call_record_args_keys")? {
        Value::String(t) => serde_json::from_str::<Value>(t).ok()?,
        v => v.clone(),
    };
    let object = args.as_object()?;
    // A tool's declared parameters are no call's arguments.
    let schema = object.get("type").and_then(Value::as_str) == Some("object")
        && object.get("properties").is_some_and(Value::is_object);
    if schema {
        return None;
    }
    let own_id = field("call_record_id_keys")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|id| !id.is_empty());
    let id = match own_id {
        Some(id) => id.to_string(),
        None => key_id(key)?,
    };
    Some(Asked {
        id: Some(id),
        name: name.to_string(),
        args,
    })
}

/// The call id a record's key ends in: its last part, unless that names
/// the call itself or is a position (`tool_calls.0`).
fn key_id(key: &[u8]) -> Option<String> {
    let last = memchr::memrchr(b'.', key).map_or(key, |at| &key[at + 1..]);
    let last = std::str::from_utf8(last).ok()?.trim();
    let named = parts().iter().any(|p| p == last);
    let position = last.bytes().all(|b| b.is_ascii_digit());
    (!last.is_empty() && !named && !position).then(|| last.to_string())
}

#[cfg(test)]
mod tests;
