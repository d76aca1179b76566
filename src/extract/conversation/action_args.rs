//! A tool span's arguments as the framework's action object around the
//! model's (docs/conventions.md, "The conversation witness", the call-id
//! join). Some frameworks turn the model's call into an object of their
//! own before running the tool and trace that object: the OpenHands SDK
//! names the span after the Action class and records `{"action": {<the
//! model's arguments>, "kind": "FindHotelAction"}}`. When the span's call
//! id joins it to the model's call, arguments that are one key around an
//! object holding the model's arguments exactly, plus only fields naming
//! the span itself (the class discriminator), are the model's arguments.

use serde_json::Value;

use crate::extract::CallArgs;

/// Whether `args` (a tool span's, on span `span_name`) are one key around
/// the model's arguments `asked` and fields whose value is `span_name`.
pub(super) fn wraps_asked(args: &CallArgs, asked: &Value, span_name: &str) -> bool {
    let parsed;
    let v = match args {
        CallArgs::Text(t) => {
            let Ok(v) = serde_json::from_str::<Value>(t) else {
                return false;
            };
            parsed = v;
            &parsed
        }
        other => match other.value() {
            Some(v) => v,
            None => return false,
        },
    };
    let asked = match asked {
        Value::String(t) => match serde_json::from_str::<Value>(t) {
            Ok(v) => v,
            Err(_) => return false,
        },
        other => other.clone(),
    };
    let (Some(outer), Some(asked)) = (v.as_object(), asked.as_object()) else {
        return false;
    };
    let Some(Value::Object(inner)) = outer.values().next().filter(|_| outer.len() == 1) else {
        return false;
    };
    let names_span = |x: &Value| x.as_str() == Some(span_name);
    // The wrapper's own fields name the span; every other is the model's.
    let (own, rest): (Vec<_>, Vec<_>) = inner.iter().partition(|(_, x)| names_span(x));
    !own.is_empty()
        && rest.len() == asked.len()
        && rest.iter().all(|(k, x)| {
            asked
                .get(k.as_str())
                .is_some_and(|a| crate::value::json_eq(a, x))
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn args(v: Value) -> CallArgs {
        CallArgs::Value(v)
    }

    #[test]
    fn an_action_around_the_model_arguments_is_them() {
        let span = args(json!({"step": {"kite": "red", "type": "FlyKiteStep"}}));
        assert!(wraps_asked(&span, &json!({"kite": "red"}), "FlyKiteStep"));
        let none = args(json!({"step": {"type": "NowStep"}}));
        assert!(wraps_asked(&none, &json!("{}"), "NowStep"));
    }

    #[test]
    fn other_fields_or_no_discriminator_are_no_action() {
        let more = args(json!({"step": {"kite": "red", "n": 2, "type": "FlyKiteStep"}}));
        assert!(!wraps_asked(&more, &json!({"kite": "red"}), "FlyKiteStep"));
        let plain = args(json!({"step": {"kite": "red"}}));
        assert!(!wraps_asked(&plain, &json!({"kite": "red"}), "FlyKiteStep"));
        let other = args(json!({"step": {"kite": "blue", "type": "FlyKiteStep"}}));
        assert!(!wraps_asked(&other, &json!({"kite": "red"}), "FlyKiteStep"));
        let two = args(json!({"a": {"type": "FlyKiteStep"}, "b": 1}));
        assert!(!wraps_asked(&two, &json!({}), "FlyKiteStep"));
    }
}
