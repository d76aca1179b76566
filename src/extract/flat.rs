//! A value written one attribute per key (docs/conventions.md, "The
//! generic tool-kind rule"): some SDKs flatten a call's arguments and
//! result into attributes under one prefix, `ag.data.inputs.town = Lyon`,
//! `honeyhive_outputs.result.stars = 3`. A `flat` source rebuilds the
//! object from them, each value typed as its attribute is.

use serde_json::{Map, Value};

use super::rules::{Field, Rule, Source, ANY, NS};
use super::source::any_to_json;
use crate::assemble::{SpanRecord, Val};
use crate::ingest::projection::Projection;

/// Deeper paths than this are not rebuilt (a bound on untrusted keys; the
/// SDKs seen nest two levels).
const MAX_DEPTH: usize = 8;

/// The object the attributes `prefix.<key>[.<sub>...]` of span `s` write,
/// `None` when there is none. A path that runs into a value already set
/// (`result = "x"` and `result.a = 1`), or has an empty part, is left out:
/// the first attribute wins. A prefix `{any}<rest>` ([`ANY`]) stands for
/// `<rest>` bare or after a namespace ending in `.`: the namespace of the
/// first attribute that has one, so two writers' copies (mcp-agent's
/// `arguments.town` beside `request.params.arguments.town`) are not mixed.
pub(crate) fn object(prefix: &str, s: &SpanRecord) -> Option<Value> {
    match prefix.strip_prefix(ANY) {
        Some(rest) => object_under(&namespaced(rest, s)?, s),
        None => object_under(prefix, s),
    }
}

/// The key a source of key `key` reads on `s`, for `inspect --explain`:
/// an `{any}` prefix as the namespace found (`request.params.arguments`).
pub(crate) fn key_read(key: &str, s: &SpanRecord) -> String {
    key.strip_prefix(ANY)
        .and_then(|rest| namespaced(rest, s))
        .unwrap_or_else(|| key.to_string())
}

/// The prefix `<ns><rest>` of the first attribute key of `s` that holds
/// `<rest>.` at its start or after a `.`.
fn namespaced(rest: &str, s: &SpanRecord) -> Option<String> {
    namespaced_in(
        rest,
        s.span
            .attr_keys()
            .filter_map(|key| std::str::from_utf8(key).ok()),
    )
}

/// [`object`] under one exact prefix.
fn object_under(prefix: &str, s: &SpanRecord) -> Option<Value> {
    object_of(prefix, s.span.attributes())
}

/// The object the attributes `prefix.<key>[.<sub>...]` of span `s`'s first
/// event named `event` write (a tool request's arguments one attribute per
/// key in an event: `tool_request.inputs.town`), as [`object`] reads them
/// on a span. `prefix` is exact (`extract::event_attrs` resolves `{any}`).
pub(crate) fn event_object(event: &str, prefix: &str, s: &SpanRecord) -> Option<Value> {
    let e = s.span.events.iter().find(|e| e.name == event)?;
    let attrs = e
        .attributes
        .iter()
        .map(|kv| (kv.key.as_str(), kv.value.as_ref().map(Val::of)));
    object_of(prefix, attrs)
}

/// The prefix `<ns><rest>` of the first key among `keys` that holds
/// `<rest>.` at its start or after a `.`, with a field after it.
pub(crate) fn namespaced_in<'k>(rest: &str, keys: impl Iterator<Item = &'k str>) -> Option<String> {
    let needle = format!("{rest}.");
    keys.into_iter().find_map(|key| {
        let at = key
            .match_indices(needle.as_str())
            .map(|(at, _)| at)
            .find(|&at| at == 0 || key.as_bytes()[at - 1] == b'.')?;
        (key.len() > at + needle.len()).then(|| key[..at + rest.len()].to_string())
    })
}

/// The object attributes `attrs` write under `prefix`.
fn object_of<'a>(
    prefix: &str,
    attrs: impl Iterator<Item = (&'a str, Option<Val<'a>>)>,
) -> Option<Value> {
    let mut out = Map::new();
    for (key, value) in attrs {
        let Some(path) = key
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix('.'))
        else {
            continue;
        };
        let parts: Vec<&str> = path.split('.').collect();
        if parts.len() > MAX_DEPTH || parts.iter().any(|p| p.is_empty()) {
            continue;
        }
        let value = value.map_or(Value::Null, any_to_json);
        insert(&mut out, &parts, value);
    }
    (!out.is_empty()).then(|| lists(Value::Object(out)))
}

/// `v` with every object whose keys are exactly `0` to `n-1` made a list
/// in that order: how a list is flattened (`result.content.0.text`, MCP's
/// `CallToolResult`), so that a wrapper of the list's shape applies.
fn lists(v: Value) -> Value {
    let Value::Object(map) = v else {
        return v;
    };
    let indexed = (0..map.len()).all(|i| map.contains_key(i.to_string().as_str()));
    if indexed && !map.is_empty() {
        let mut map = map;
        (0..map.len())
            .filter_map(|i| map.remove(i.to_string().as_str()))
            .map(lists)
            .collect()
    } else {
        Value::Object(map.into_iter().map(|(k, x)| (k, lists(x))).collect())
    }
}

/// Sets `parts` in `map` to `value`, unless the path is taken.
fn insert(map: &mut Map<String, Value>, parts: &[&str], value: Value) {
    let Some((&last, above)) = parts.split_last() else {
        return;
    };
    let mut at = map;
    for &part in above {
        let next = at.entry(part).or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(inner) = next else {
            return;
        };
        at = inner;
    }
    at.entry(last).or_insert(value);
}

/// The infixes of the event keys the `{any}` `flat` sources of `rules`
/// may read in span events (`extract::event_attrs`; projection at decode):
/// what follows the placeholder, and a dot (`inputs.`).
pub(crate) fn event_infixes(rules: &[Rule]) -> Vec<String> {
    let mut infixes: Vec<String> = rules
        .iter()
        .flat_map(|r| r.args.iter().chain(&r.result))
        .filter(|s| s.flat)
        .filter_map(any_key)
        .map(|rest| format!("{rest}."))
        .collect();
    infixes.sort();
    infixes.dedup();
    infixes
}

/// What a `flat` source's key says after [`ANY`], if it starts with it.
fn any_key(src: &Source) -> Option<&str> {
    match &src.field {
        Field::Attr(key) => key.strip_prefix(ANY),
        _ => None,
    }
}

/// A projection keeping what the family rules among `rules` read beyond
/// their keys' last parts: the family keys after a namespace ending in `_`
/// (`honeyhive_` of `honeyhive_event_type`), and the keys of their `flat`
/// sources, by the last part of each source key and a dot (`inputs.` of
/// `{ns}data.inputs`); and the keys of any rule's `{any}` sources, by what
/// follows the placeholder and a dot (`arguments.`).
pub(crate) fn family_projection(rules: &[Rule]) -> Projection {
    let mut tails = Vec::new();
    let mut infixes = Vec::new();
    for r in rules {
        let Some(family) = &r.family else { continue };
        // A namespace ending in `_` before a dotted key (`x_span.kind`) is
        // not kept by decoding: the SDKs seen write snake-case keys there.
        // A `names_span` family takes no `_` namespace for its marker; its
        // `untyped` keys take one as the markers of other families do.
        let keys = if family.names_span {
            &family.untyped
        } else {
            &family.keys
        };
        tails.extend(keys.iter().filter(|k| !k.contains('.')).cloned());
        let flat = r.args.iter().chain(&r.result).filter(|s| s.flat);
        for src in flat {
            if let Field::Attr(key) = &src.field {
                if key.starts_with(ANY) {
                    continue; // below, for every rule
                }
                let key = key.rsplit(NS).next().unwrap_or(key);
                let last = key.rsplit('.').next().unwrap_or(key);
                infixes.push(format!("{last}."));
            }
        }
    }
    // Any rule's `{any}` sources, by their whole key after the placeholder.
    let any_ns = rules.iter().flat_map(|r| r.args.iter().chain(&r.result));
    for src in any_ns.filter(|s| s.flat) {
        if let Some(rest) = any_key(src) {
            infixes.push(format!("{rest}."));
        }
    }
    for v in [&mut tails, &mut infixes] {
        v.sort();
        v.dedup();
    }
    Projection::default()
        .span_snake_tails(tails)
        .span_infixes(infixes)
}
