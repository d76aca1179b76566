//! A failure's message with the causes a framework chained below it.

/// The status message instead of `message` when it holds `message` with
/// more lines below it: the causes a framework chained under its own
/// wrapper (BeeAI: `ToolError: Tool "x" has occurred an error!` over
/// `Error: room is under maintenance`, its exception only the first).
pub(super) fn with_causes(message: String, status: Option<&str>) -> String {
    let Some(status) = status else {
        return message;
    };
    let below = status
        .find(message.as_str())
        .map(|at| &status[at + message.len()..]);
    match below {
        Some(rest) if rest.starts_with('\n') && !rest.trim().is_empty() => status.to_string(),
        _ => message,
    }
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
    }
}
