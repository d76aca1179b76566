//! A failure's message with the causes a framework chained below it, from
//! the span's status or from its result.

use super::rules::Rule;
use super::{CallStatus, ToolCall};
use crate::assemble::SpanRecord;

/// The status message instead of `message` when it holds `message` with a
/// chained error below it: the causes a framework chained under its own
/// wrapper (BeeAI: `ToolError: Tool "x" has occurred an error!` over
/// `Error: room is under maintenance`, its exception only the first). The
/// next line must name an error (`<Word>Error:` or `<Word>Exception:`): a
/// stack or any other text below the message is no cause.
pub(super) fn with_causes(message: String, status: Option<&str>) -> String {
    let Some(status) = status else {
        return message;
    };
    let below = status
        .find(message.as_str())
        .map(|at| &status[at + message.len()..]);
    match below.and_then(|rest| rest.strip_prefix('\n')) {
        Some(rest) if names_an_error(rest) => status.to_string(),
        _ => message,
    }
}

/// A failed call's `message` given in full by its result `text`: BeeAI's
/// explained error (its OpenInference span's output), the wrapper's line
/// first, naming the message, and the causes below it, each a line that
/// names an error (`ToolError(beeai_framework.tools.errors): Tool Error`,
/// `Context: {...}`, `  RuntimeError(builtins): sensor offline`), while
/// the exception event and status keep only the wrapper's `Tool Error`.
pub(super) fn in_result(message: &str, text: &str) -> Option<String> {
    let mut lines = text.lines();
    let first = lines.next()?;
    let named = first.split_once(": ").is_some_and(|(name, rest)| {
        rest.trim() == message.trim() && names_an_error(first) && !name.is_empty()
    });
    (named && lines.any(names_an_error)).then(|| text.to_string())
}

/// Gives failed `call` of span `s`, read by `rule`, the whole text of its
/// result as its message when that text explains the message with its
/// causes ([`in_result`]). The raw sources are read, not the call's
/// result: the message is the same whether results are read or not.
pub(super) fn mark_from_result(rule: &Rule, s: &SpanRecord, call: &mut ToolCall) {
    if call.status != CallStatus::Error {
        return;
    }
    let Some(message) = call.error_message.as_deref() else {
        return;
    };
    let full = super::mcp_error_text::raw_results(rule, s).find_map(|t| in_result(message, t));
    if let Some(full) = full {
        call.error_message = Some(full);
    }
}

/// Whether the first line of `text` starts (after blanks) with an error's
/// name and a colon: `Error: ...`, `ValueError: ...`, `IOException: ...`;
/// the name may be followed by its module in brackets, as BeeAI explains
/// errors (`RuntimeError(builtins): ...`).
fn names_an_error(text: &str) -> bool {
    let line = text.lines().next().unwrap_or_default().trim_start();
    let Some((name, rest)) = line.split_once(':') else {
        return false;
    };
    let name = match name.split_once('(') {
        Some((name, module)) if module.ends_with(')') => name,
        _ => name,
    };
    let word = name.rsplit('.').next().unwrap_or_default();
    (word.ends_with("Error") || word.ends_with("Exception"))
        && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !rest.trim().is_empty()
}

#[cfg(test)]
mod tests {
    use super::{in_result, with_causes};

    #[test]
    fn an_explained_error_in_the_result_is_the_message_in_full() {
        let text = "ToolError(beeai_framework.tools.errors): Tool Error\nContext: {\"name\": \"soil\"}\n  RuntimeError(builtins): sensor offline";
        assert_eq!(in_result("Tool Error", text).as_deref(), Some(text));
        // Near misses: another message on the first line, no cause below,
        // a first line that names no error, a stack below.
        let other = text.replace(": Tool Error", ": Other Error");
        assert_eq!(in_result("Tool Error", &other), None);
        let alone = "ToolError(beeai_framework.tools.errors): Tool Error\nContext: {}";
        assert_eq!(in_result("Tool Error", alone), None);
        let plain = "Note: Tool Error\n  RuntimeError(builtins): sensor offline";
        assert_eq!(in_result("Tool Error", plain), None);
        let stack = "ToolError: Tool Error\n    at soil (tools.js:4:11)";
        assert_eq!(in_result("Tool Error", stack), None);
    }

    #[test]
    fn a_status_that_holds_the_message_and_causes_below_it_is_the_message() {
        let wrapper = r#"Tool "dock" has occurred an error!"#;
        let status = format!("ToolError: {wrapper}\n    Error: berth 4 is closed");
        assert_eq!(with_causes(wrapper.into(), Some(&status)), status);
        // Near misses: no status, a status without the message, the message
        // with more on its own line only, or nothing below it.
        assert_eq!(with_causes(wrapper.into(), None), wrapper);
        let other = "Error: timeout\n  at dock";
        assert_eq!(with_causes(wrapper.into(), Some(other)), wrapper);
        let same_line = format!("ToolError: {wrapper} (berth 4)");
        assert_eq!(with_causes(wrapper.into(), Some(&same_line)), wrapper);
        let blank_below = format!("{wrapper}\n   ");
        assert_eq!(with_causes(wrapper.into(), Some(&blank_below)), wrapper);
        // A stack or plain text below the message is no cause.
        let stack = format!("{wrapper}\n    at dock (tools.js:4:11)");
        assert_eq!(with_causes(wrapper.into(), Some(&stack)), wrapper);
        let traceback = format!("{wrapper}\nTraceback (most recent call last):");
        assert_eq!(with_causes(wrapper.into(), Some(&traceback)), wrapper);
        let python = format!("{wrapper}\n  builtins.ValueError: berth 4 is closed");
        assert_eq!(with_causes(wrapper.into(), Some(&python)), python);
    }
}
