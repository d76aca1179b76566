//! Tool names as an agent SDK spells them to the model (docs/conventions.md,
//! "MCP tool names"). The Claude Agent SDK (and Claude Code) names a tool
//! of an MCP server `mcp__<server>__<tool>`; the tool itself, and whoever
//! expects a call of it, knows it as `<tool>`. Calls read from spans and
//! from the conversation both go through [`normalized`], so the same call
//! has one name whichever witness found it; the full name stays in the
//! call's `span_name` when the span was named so.

/// What starts an MCP tool's namespaced name.
pub const MCP_PREFIX: &str = "mcp__";

/// The server and tool of a namespaced MCP tool name,
/// `mcp__<server>__<tool>`: both non-empty, the server up to the first
/// `__` after the prefix (servers' names are written with single `_`s).
pub fn mcp_parts(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix(MCP_PREFIX)?;
    let (server, tool) = rest.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

/// The server of `name` when it is an MCP tool's namespaced name for
/// `tool` (`hotels` for `mcp__hotels__find_hotel` and `find_hotel`).
pub fn server(name: &str, tool: &str) -> Option<String> {
    mcp_parts(name)
        .filter(|&(_, t)| t == tool)
        .map(|(server, _)| server.to_string())
}

/// The tool's own name: `find_hotel` for `mcp__trip__find_hotel`, any
/// other name as it is.
pub fn normalized(name: &str) -> &str {
    mcp_parts(name).map_or(name, |(_, tool)| tool)
}

/// Whether `display` is a tool's display name for the model's `name`: its
/// words, separated by spaces, are the name's `_`-separated parts, case
/// aside. CrewAI names a tool `Delegate work to coworker` and tells the
/// model `delegate_work_to_coworker` (its name lowercased, spaces as `_`);
/// a tool span records the display name. A display name has a space (a
/// name without one is compared as it is) and no `_`.
pub fn is_display_of(display: &str, name: &str) -> bool {
    if !display.contains(' ') || display.contains('_') || name.contains(' ') {
        return false;
    }
    let mut words = display.split(' ').filter(|w| !w.is_empty());
    let mut parts = name.split('_');
    loop {
        match (words.next(), parts.next()) {
            (None, None) => return true,
            (Some(w), Some(p)) if w.eq_ignore_ascii_case(p) => {}
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_display_name_is_the_models_name_with_spaces() {
        assert!(is_display_of(
            "Delegate work to coworker",
            "delegate_work_to_coworker"
        ));
        assert!(is_display_of("Reserve  Table", "reserve_table"));
        for (display, name) in [
            // One word: compared as it is, elsewhere.
            ("Reserve", "reserve"),
            // Other words, fewer or more of them, another separator.
            ("Reserve a table", "reserve_table"),
            ("Reserve table", "reserve_table_now"),
            ("Reserve table now", "reserve_table"),
            ("Reserve-table now", "reserve_table_now"),
            ("Reserve table_now", "reserve_table_now"),
            ("Reserve table", "reserve__table"),
            ("Reserve table", "Reserve table"),
        ] {
            assert!(!is_display_of(display, name), "{display} / {name}");
        }
    }

    #[test]
    fn an_mcp_name_gives_its_tool_and_other_names_stay() {
        assert_eq!(
            mcp_parts("mcp__trip__find_hotel"),
            Some(("trip", "find_hotel"))
        );
        assert_eq!(mcp_parts("mcp__my_srv__get__x"), Some(("my_srv", "get__x")));
        assert_eq!(normalized("mcp__trip__find_hotel"), "find_hotel");
        for kept in [
            "find_hotel",
            "mcp__trip",
            "mcp____tool",
            "mcp__trip__",
            "mcp_trip__tool",
            "MCP__trip__tool",
        ] {
            assert_eq!(normalized(kept), kept, "{kept}");
        }
    }
}
