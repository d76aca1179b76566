//! The value in a JSON content block (`{"json": v}`: Bedrock Converse's
//! tool result block, which Strands keeps as its own), with the object a
//! framework puts around a value the block cannot hold taken off
//! (docs/conventions.md, "Result wrappers").
//!
//! Bedrock takes only an object as a `json` block, so Strands TS
//! (`FunctionTool`, 1.x) puts a tool's list return under one key:
//! `{"json": {"$value": [...]}}` (a string, number or boolean goes in a
//! text block instead, an object as it is). The key is vocabulary
//! (`json_block_value_keys`). Only that shape comes off: an object of that
//! key alone around a list. A tool's own object, even one with that key
//! (`{"$value": 3, "unit": "kg"}`, `{"$value": 3}`), is the value.

use serde_json::Value;

use super::rules::builtin_list;

/// The keys a framework puts a list under in a JSON block (vocabulary
/// `json_block_value_keys`).
fn value_keys() -> &'static [String] {
    builtin_list("json_block_value_keys")
}

/// The value a JSON block's content `v` stands for: the list of an object
/// of one [`value_keys`] key around a list, else `v` as it is.
pub(crate) fn block_value(v: Value) -> Value {
    // One key first: most blocks are a tool's own object of several.
    let wrapped = match &v {
        Value::Object(o) if o.len() == 1 => o
            .iter()
            .next()
            .is_some_and(|(k, x)| x.is_array() && value_keys().contains(k)),
        _ => false,
    };
    match v {
        Value::Object(o) if wrapped => o.into_iter().next().map_or(Value::Null, |(_, x)| x),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::block_value;

    #[test]
    fn a_list_under_the_lone_key_is_the_value() {
        assert_eq!(
            block_value(json!({"$value": ["berth 4", "berth 7"]})),
            json!(["berth 4", "berth 7"])
        );
        assert_eq!(block_value(json!({"$value": []})), json!([]));
    }

    #[test]
    fn a_json_block_gives_the_list() {
        use crate::extract::wrappers::provider_block;
        let block = |v| json!([{ "json": v }]);
        assert_eq!(
            provider_block(block(json!({"$value": [4, 5]}))),
            Ok(json!([4, 5]))
        );
        let own = json!({"$value": 3, "unit": "kg"});
        assert_eq!(provider_block(block(own.clone())), Ok(own));
    }

    #[test]
    fn a_tools_own_object_stays() {
        for v in [
            json!({"$value": 3, "unit": "kg"}),
            json!({"$value": [1], "unit": "kg"}),
            json!({"$value": 3}),
            json!({"$value": {"a": [1]}}),
            json!({"value": [1, 2]}),
            json!([{"$value": [1]}]),
            json!("$value"),
        ] {
            assert_eq!(block_value(v.clone()), v);
        }
    }
}
