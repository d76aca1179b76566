//! A framework's own keywords among a tool's arguments (docs/conventions.md,
//! "Keywords that are no parameter").
//!
//! Some instrumentations record the keywords of the framework's call of a
//! tool rather than the tool's arguments: traceAI's smolagents spans hold
//! `{"args": {}, "town": "Lyon", "sanitize_inputs_outputs": true}`, the
//! keywords of `Tool.__call__`, beside the tool's declared inputs. When the
//! span carries the tool's declared parameters (a JSON Schema's
//! `properties`, or smolagents' `inputs` map) and the parameter list is
//! closed, a key that is none of them cannot be an argument the tool took:
//! it comes off. Nothing else does: without a declaration nothing is
//! dropped, an open schema ([`closed`]) keeps every key, and a key the
//! model's own request for the call holds stays (a model that passed an
//! undeclared argument is what a score should see).

use serde_json::{Map, Value};

use super::requested::Requests;
use super::wrappers::parameter_names;

/// `args` without the keys the declared parameters in `schema` do not
/// name, unless the model's nearest request (`asked`, looked up only when
/// a key would come off) holds them. Returns whether a key came off.
pub(crate) fn strip<'r>(
    args: &mut Value,
    schema: &str,
    asked: impl FnOnce() -> Option<&'r Value>,
) -> bool {
    let Value::Object(o) = args else {
        return false;
    };
    // Cheap first: only a key the schema's text does not quote at all
    // can make a key come off, so most calls parse nothing here.
    if o.is_empty() || o.keys().all(|k| quoted_in(schema, k)) || !closed(schema) {
        return false;
    }
    let Some(names) = parameter_names(schema).filter(|n| !n.is_empty()) else {
        return false;
    };
    if o.keys().all(|k| names.contains(k)) {
        return false;
    }
    let asked = asked().and_then(Value::as_object);
    // Positional values no name was found for stay under `args`.
    let positional =
        |k: &String, v: &Value| k == "args" && v.as_array().is_some_and(|a| !a.is_empty());
    let keep = |k: &String, v: &Value| {
        names.contains(k) || positional(k, v) || asked.is_some_and(|a| a.contains_key(k))
    };
    let before = o.len();
    let kept: Map<String, Value> = std::mem::take(o)
        .into_iter()
        .filter(|(k, v)| keep(k, v))
        .collect();
    *o = kept;
    o.len() < before
}

/// Whether `text` holds `key` between quotes (`"key"` or `'key'`).
fn quoted_in(text: &str, key: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices(key).any(|(at, _)| {
        let before = at.checked_sub(1).and_then(|i| bytes.get(i));
        let after = bytes.get(at + key.len());
        matches!(
            (before, after),
            (Some(b'"'), Some(b'"')) | (Some(b'\''), Some(b'\''))
        )
    })
}

/// Whether `schema` is JSON declaring a closed parameter list: smolagents'
/// `inputs` map, or a JSON Schema that does not allow more properties (no
/// `additionalProperties`, or `false`: tool schemas list every parameter,
/// and `true` or a schema there says the tool takes more).
fn closed(schema: &str) -> bool {
    serde_json::from_str::<Value>(schema).is_ok_and(|v| {
        v.get("additionalProperties")
            .is_none_or(|a| a == &Value::Bool(false))
    })
}

/// Where a tool span carries the tool's declared parameters when its
/// rule's source names no schema there (traceAI: `gen_ai.tool.parameters`;
/// OpenInference: `tool.parameters`). Projection at decode.
pub(crate) const SCHEMA_KEYS: [&str; 2] = ["gen_ai.tool.parameters", "tool.parameters"];

/// The declared parameters on span `s` that [`strip`] reads for source
/// `src`: its `schema_attr`, else the first of [`SCHEMA_KEYS`]. A key that
/// holds the arguments themselves in some vendor's spans gives no
/// parameter a recorded key lacks, so nothing comes off then.
pub(crate) fn schema_of<'s>(
    src: &super::rules::Source,
    s: &'s crate::assemble::SpanRecord,
) -> Option<&'s str> {
    src.schema_attr
        .as_deref()
        .and_then(|k| s.attr_str(k))
        .or_else(|| SCHEMA_KEYS.iter().find_map(|k| s.attr_str(k)))
}

/// Strips the framework keywords off the arguments of call span `i` of
/// `tool`, read by `src` (see [`strip`]).
pub(crate) fn strip_read<'t>(
    args: &mut Value,
    src: &super::rules::Source,
    s: &crate::assemble::SpanRecord,
    (i, tool): (usize, &str),
    requests: &mut Option<Requests<'t>>,
    trace: &'t crate::assemble::Trace,
) -> bool {
    let Some(schema) = schema_of(src, s) else {
        return false;
    };
    strip(args, schema, || {
        requests
            .get_or_insert_with(|| Requests::new(trace))
            .nearest(i, tool)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const INPUTS: &str = r#"{"town": {"type": "string", "description": "The town."}}"#;
    const SCHEMA: &str = r#"{"type": "object", "properties": {"town": {"type": "string"}}}"#;

    fn stripped(mut args: Value, schema: &str, asked: Option<Value>) -> Value {
        strip(&mut args, schema, || asked.as_ref());
        args
    }

    #[test]
    fn keywords_the_declaration_does_not_name_come_off() {
        let call = json!({"args": {}, "town": "Lyon", "sanitize_inputs_outputs": true});
        for schema in [INPUTS, SCHEMA] {
            assert_eq!(
                stripped(call.clone(), schema, None),
                json!({"town": "Lyon"}),
                "{schema}"
            );
        }
    }

    #[test]
    fn no_real_argument_is_dropped() {
        let call = json!({"town": "Lyon", "extra": 1});
        // No declaration, an empty one, one that is no schema, an open one.
        for schema in [
            "",
            "{}",
            "not a schema",
            "{'town': {'type': 'string'}}",
            r#"{"type": "object", "properties": {"town": {}}, "additionalProperties": true}"#,
        ] {
            assert_eq!(stripped(call.clone(), schema, None), call, "{schema}");
        }
        // The model asked for the key: it stays.
        assert_eq!(
            stripped(
                call.clone(),
                SCHEMA,
                Some(json!({"town": "Lyon", "extra": 1}))
            ),
            call
        );
        // Every key declared: nothing to do.
        assert_eq!(
            stripped(json!({"town": "Lyon"}), SCHEMA, None),
            json!({"town": "Lyon"})
        );
        // A key the schema's text quotes anywhere is kept unparsed.
        let quoted = json!({"town": "Lyon", "type": "x"});
        assert_eq!(stripped(quoted.clone(), SCHEMA, None), quoted);
        // Positional values no name was found for.
        let positional = json!({"args": ["a", "b"], "sanitize_inputs_outputs": true});
        assert_eq!(
            stripped(positional, SCHEMA, None),
            json!({"args": ["a", "b"]})
        );
        // Not an object.
        assert_eq!(stripped(json!("Lyon"), SCHEMA, None), json!("Lyon"));
    }
}
