//! Arguments written one attribute per key, typed by the tool's declared
//! schema (docs/conventions.md, "The generic tool-kind rule"): an SDK that
//! writes each argument with `str()` gives `hours = "2"` for the model's
//! `{"hours": 2}`. Where the tool's parameters, as a model request offered
//! them (`facts::offered_tools`), declare a field `integer`, `number` or
//! `boolean`, its text becomes that value; without a schema, or with text
//! that is no such value, the text stays. An SDK that writes each value as
//! its JSON text (Sentry's MCP server wrapper: `"\"Lisbon\""`, `"2"`) has
//! each decoded first ([`json_texts`]).

use serde_json::{Map, Number, Value};

use super::facts;
use super::requested::stringified;
use crate::assemble::Trace;

/// Nesting followed into a schema's object properties (a bound on
/// untrusted schemas; `flat` rebuilds at most 8 levels).
const MAX_DEPTH: usize = 8;

/// Types the text values of `args`, read from a `flat` source for tool
/// `tool`, by the schema the trace offered `tool` with. Looks the offered
/// tools up only when a value is text that reads as a number or boolean.
pub(crate) fn by_schema(args: &mut Value, trace: &Trace, tool: &str) {
    json_texts(args);
    if !stringified(args) {
        return;
    }
    let offered = facts::offered_tools(trace);
    let schema = offered
        .iter()
        .find(|d| d.name == tool)
        .and_then(|d| d.parameters.as_ref());
    if let (Some(schema), Value::Object(fields)) = (schema, args) {
        typed(fields, schema, 0);
    }
}

/// Decodes the values of `args` when they are each a value's JSON text:
/// every value is text that parses as JSON, and one is a JSON string (in
/// quotes). A writer of plain text never quotes a value, and leaves some
/// text that is no JSON (`Lake Orta`); a value that reads as a number or
/// boolean alone is left to the schema.
fn json_texts(args: &mut Value) {
    let Value::Object(fields) = args else {
        return;
    };
    let parsed = |v: &Value| serde_json::from_str::<Value>(v.as_str()?.trim()).ok();
    let mut quoted = false;
    for v in fields.values() {
        match parsed(v) {
            Some(Value::String(_)) => quoted = true,
            Some(_) => {}
            None => return,
        }
    }
    if quoted {
        for v in fields.values_mut() {
            if let Some(decoded) = parsed(v) {
                *v = decoded;
            }
        }
    }
}

/// Types `fields` by the object schema `schema` (its `properties`).
fn typed(fields: &mut Map<String, Value>, schema: &Value, depth: usize) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, value) in fields.iter_mut() {
        let Some(prop) = props.get(key) else { continue };
        match value {
            Value::String(text) => {
                if let Some(v) = as_declared(text, prop) {
                    *value = v;
                }
            }
            Value::Object(inner) if depth < MAX_DEPTH => typed(inner, prop, depth + 1),
            _ => {}
        }
    }
}

/// `text` as the value schema `prop` declares, when it declares a number,
/// an integer or a boolean (alone, or beside `null`) and the text is one.
fn as_declared(text: &str, prop: &Value) -> Option<Value> {
    let types: Vec<&str> = match prop.get("type")? {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    // A field that may be text too keeps its text.
    if types.contains(&"string") {
        return None;
    }
    let t = text.trim();
    types.iter().find_map(|&ty| match ty {
        "integer" => t.parse::<i64>().ok().map(Value::from),
        "number" => t.parse::<i64>().ok().map(Value::from).or_else(|| {
            t.parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map(Value::Number)
        }),
        // Python writes `True`/`False`.
        "boolean" => match t.to_ascii_lowercase().as_str() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn typed_by(mut args: Value, schema: Value) -> Value {
        if let Value::Object(fields) = &mut args {
            typed(fields, &schema, 0);
        }
        args
    }

    #[test]
    fn text_takes_the_type_the_schema_declares() {
        let schema = json!({"type": "object", "properties": {
            "dock": {"type": "string"},
            "nights": {"type": "integer"},
            "budget": {"type": "number"},
            "pets": {"type": "boolean"},
            "floor": {"type": ["integer", "null"]},
            "room": {"type": "object", "properties": {"beds": {"type": "integer"}}}
        }});
        let args = json!({"dock": "7", "nights": "3", "budget": "80.5", "pets": "True",
                          "floor": "2", "room": {"beds": "2"}, "extra": "4"});
        assert_eq!(
            typed_by(args, schema),
            json!({"dock": "7", "nights": 3, "budget": 80.5, "pets": true,
                   "floor": 2, "room": {"beds": 2}, "extra": "4"})
        );
    }

    #[test]
    fn values_each_written_as_json_text_are_decoded() {
        let mut args = json!({"quay": "\"Pier 4\"", "nights": "3", "pets": "false",
                              "room": "{\"beds\": 2}"});
        json_texts(&mut args);
        assert_eq!(
            args,
            json!({"quay": "Pier 4", "nights": 3, "pets": false, "room": {"beds": 2}})
        );
        // Plain text beside them: no value was JSON-encoded.
        let plain = json!({"quay": "Pier 4", "nights": "3"});
        let mut args = plain.clone();
        json_texts(&mut args);
        assert_eq!(args, plain);
        // Nothing quoted: a number's text is left to the schema.
        let bare = json!({"nights": "3"});
        let mut args = bare.clone();
        json_texts(&mut args);
        assert_eq!(args, bare);
    }

    #[test]
    fn text_that_is_no_such_value_stays() {
        let schema = json!({"properties": {
            "nights": {"type": "integer"},
            "pets": {"type": "boolean"},
            "either": {"type": ["integer", "string"]}
        }});
        let args = json!({"nights": "three", "pets": "yes", "either": "5"});
        assert_eq!(typed_by(args.clone(), schema), args);
        // No properties: nothing to go by.
        assert_eq!(typed_by(args.clone(), json!({"type": "object"})), args);
    }
}
