//! A failure's message with the causes a framework chained below it.

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

/// Whether the first line of `text` starts (after blanks) with an error's
/// name and a colon: `Error: ...`, `ValueError: ...`, `IOException: ...`.
fn names_an_error(text: &str) -> bool {
    let line = text.lines().next().unwrap_or_default().trim_start();
    let Some((name, rest)) = line.split_once(':') else {
        return false;
    };
    let word = name.rsplit('.').next().unwrap_or_default();
    (word.ends_with("Error") || word.ends_with("Exception"))
        && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !rest.trim().is_empty()
}

#[cfg(test)]
mod tests {
    use super::with_causes;

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
