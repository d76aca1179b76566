//! A model-side name that is an output item's type, not a function's name
//! (docs/conventions.md, "The conversation witness").
//!
//! The OpenAI Responses API returns a call of a built-in tool as an output
//! item whose `type` says what it is (`computer_call`, `shell_call`, ...)
//! and that has no `name`. A writer that flattens every output item into a
//! chat-style tool call puts the type where the function's name goes:
//! OpenInference's Agents SDK instrumentation records the computer tool's
//! `computer_call` item as `tool_call.function.name = "computer_call"`,
//! arguments `{"action": {...}}`, while its tool span names the tool
//! (`tool.name = "computer"`) and holds the action itself. Joined to that
//! span, the ask keeps the span's name and arguments. The types are data:
//! the vocabulary's `call_item_types` and the provider's own
//! `provider_call_types`.

use crate::extract::rules::builtin_list;

/// Whether `name`, a model-side name, is an output item's type.
pub(super) fn is_item_type(name: &str) -> bool {
    // Every such type ends so: a function name that does not is asked no
    // further.
    name.ends_with("_call")
        && ["call_item_types", "provider_call_types"]
            .iter()
            .any(|list| builtin_list(list).iter().any(|t| t == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_types_are_no_function_names() {
        assert!(is_item_type("computer_call"));
        assert!(is_item_type("shell_call"));
        // A provider-run item's type too.
        assert!(is_item_type("web_search_call"));
        // Function names, near ones included.
        for name in [
            "computer",
            "function_call_log",
            "call",
            "make_call",
            "computer_calls",
        ] {
            assert!(!is_item_type(name), "{name}");
        }
    }
}
