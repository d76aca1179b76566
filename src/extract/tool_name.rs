//! The name of the function behind a namespaced tool name.
//!
//! The Claude Agent SDK (and Claude Code) name an MCP server's tools to the
//! model `mcp__<server>__<tool>`; the function that ran is `<tool>`. Every
//! path that takes a call's name from what the model saw goes through
//! [`function_name`], so a call reads the same however it was found; the
//! recorded name is kept beside it (`span_name`).

/// The prefix of an MCP tool's name as Claude's tools present it.
const MCP_PREFIX: &str = "mcp__";
/// What ends the server's part of such a name.
const MCP_SEPARATOR: &str = "__";

/// `<tool>` of `mcp__<server>__<tool>` (server and tool non-empty); `None`
/// for any other name.
pub fn function_name(name: &str) -> Option<&str> {
    let rest = name.strip_prefix(MCP_PREFIX)?;
    let (server, tool) = rest.split_once(MCP_SEPARATOR)?;
    (!server.is_empty() && !tool.is_empty()).then_some(tool)
}

#[cfg(test)]
mod tests {
    use super::function_name;

    #[test]
    fn only_a_whole_mcp_name_gives_its_tool() {
        assert_eq!(function_name("mcp__trip__find_hotel"), Some("find_hotel"));
        assert_eq!(function_name("mcp__my-srv__a__b"), Some("a__b"));
        for other in [
            "find_hotel",
            "mcp__trip",
            "mcp____x",
            "mcp__x__",
            "MCP__a__b",
        ] {
            assert_eq!(function_name(other), None, "{other}");
        }
    }
}
