//! A document that is JSON but failed on a JSON type where a message or
//! list belongs (`"spans": 5`): decoded again unit by unit, so the error
//! costs only the smallest unit holding it (a scope's spans, else a
//! resource's, else a request of an array) and the rest is kept.

use std::collections::BTreeMap;

use serde_json::value::RawValue;

use super::{decode_with, Document, SpanRejected};
use crate::ingest::projection::KeyFilter;

/// The keys a request's resource list may have (OTLP, Tempo's `batches`).
const RESOURCE_LISTS: [&str; 2] = ["resourceSpans", "batches"];
/// The keys a resource's scope list may have (OTLP, before 1.0).
const SCOPE_LISTS: [&str; 2] = ["scopeSpans", "instrumentationLibrarySpans"];
/// Wrappers around a request (Tempo's v2 API, Jaeger's v3 API).
const WRAPPERS: [&str; 2] = ["trace", "result"];

type Object<'a> = BTreeMap<String, &'a RawValue>;

/// `doc` decoded unit by unit, or `None` when it is not JSON at all.
pub fn salvage(doc: &[u8], filter: &dyn KeyFilter) -> Option<Document> {
    let text = std::str::from_utf8(doc).ok()?;
    let top: &RawValue = serde_json::from_str(text).ok()?;
    let mut out = Document::default();
    match serde_json::from_str::<Vec<&RawValue>>(top.get()) {
        Ok(items) => {
            for (n, item) in items.iter().enumerate() {
                request(
                    item,
                    &format!("request #{} of the array: ", n + 1),
                    filter,
                    &mut out,
                );
            }
        }
        Err(_) => request(top, "", filter, &mut out),
    }
    Some(out)
}

/// Decodes `unit`, keeping what it gives; its error otherwise.
fn attempt(unit: &str, filter: &dyn KeyFilter, out: &mut Document) -> Result<(), String> {
    match decode_with(unit.as_bytes(), filter) {
        Ok(d) => {
            out.requests.extend(d.requests);
            out.rejected.extend(d.rejected);
            out.unknown.extend(d.unknown);
            out.containers |= d.containers;
            Ok(())
        }
        // serde_json's position is in the rebuilt unit, not the input.
        Err(e) => Err(e
            .to_string()
            .split(" at line ")
            .next()
            .unwrap_or_default()
            .to_string()),
    }
}

fn lose(out: &mut Document, place: &str, why: &str) {
    out.rejected.push(SpanRejected {
        reason: format!("{place} rejected: not valid OTLP/JSON: {why}"),
        spans: 0,
    });
}

fn request(raw: &RawValue, label: &str, filter: &dyn KeyFilter, out: &mut Document) {
    let Err(why) = attempt(raw.get(), filter, out) else {
        return;
    };
    let Ok(obj) = serde_json::from_str::<Object>(raw.get()) else {
        lose(out, label.trim_end_matches(": "), &why);
        return;
    };
    let list = RESOURCE_LISTS
        .iter()
        .find_map(|k| obj.get(*k).map(|v| (*k, v)));
    let Some((key, list)) = list else {
        match WRAPPERS.iter().find_map(|k| obj.get(*k).map(|v| (*k, v))) {
            Some((w, inner)) => request(inner, &format!("{label}{w}."), filter, out),
            None => lose(out, &format!("{label}request"), &why),
        }
        return;
    };
    let Ok(resources) = serde_json::from_str::<Vec<&RawValue>>(list.get()) else {
        lose(out, &format!("{label}{key}"), &why);
        return;
    };
    for (i, r) in resources.iter().enumerate() {
        let place = format!("{label}{key}[{i}]");
        if let Err(why) = attempt(&format!("{{\"{key}\":[{}]}}", r.get()), filter, out) {
            resource(r, key, &place, &why, filter, out);
        }
    }
}

/// A resource that failed: each of its scopes on its own.
fn resource(
    r: &RawValue,
    key: &str,
    place: &str,
    why: &str,
    filter: &dyn KeyFilter,
    out: &mut Document,
) {
    let Ok(obj) = serde_json::from_str::<Object>(r.get()) else {
        return lose(out, place, why);
    };
    let Some((skey, scopes)) = SCOPE_LISTS
        .iter()
        .find_map(|k| obj.get(*k).map(|v| (*k, v)))
    else {
        return lose(out, place, why);
    };
    let Ok(scopes) = serde_json::from_str::<Vec<&RawValue>>(scopes.get()) else {
        return lose(out, place, why);
    };
    // The resource's other members, written once for every scope.
    let mut rest = String::new();
    for (k, v) in obj.iter().filter(|(k, _)| k.as_str() != skey) {
        let name = serde_json::to_string(k).unwrap_or_default();
        rest.push_str(&format!("{name}:{},", v.get()));
    }
    let mut lost_one = false;
    for (j, s) in scopes.iter().enumerate() {
        let unit = format!("{{\"{key}\":[{{{rest}\"{skey}\":[{}]}}]}}", s.get());
        if let Err(why) = attempt(&unit, filter, out) {
            lose(out, &format!("{place}.{skey}[{j}]"), &why);
            lost_one = true;
        }
    }
    if !lost_one {
        // Every scope decodes alone: the error is in the resource itself.
        lose(out, place, why);
    }
}
