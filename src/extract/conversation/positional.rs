//! A model call's messages recorded as the positional arguments of the
//! call that took them (docs/conventions.md, "Bodies under any key").

use serde_json::Value;

/// The messages of a call's positional arguments, `[messages, config]`:
/// a list of two, the first a non-empty list of objects, the second an
/// object that is no message (no `role`, no `type`). Langtrace records
/// LangChain's `BaseChatModel.invoke(input, config)` so, under
/// `langchain.inputs`.
pub(super) fn messages(list: &[Value]) -> Option<&Vec<Value>> {
    match list {
        [Value::Array(messages), Value::Object(config)]
            if !messages.is_empty()
                && messages.iter().all(Value::is_object)
                && !config.contains_key("role")
                && !config.contains_key("type") =>
        {
            Some(messages)
        }
        _ => None,
    }
}
