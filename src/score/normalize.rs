//! Tool-name normalization: the opt-in canonical form used by the `galtea`
//! preset and by extraction's `--normalize`.
//!
//! No peer library normalizes names (shared/spec/scoring-semantics.md); Galtea
//! says it does ("sanitize formatting and strip equivalent prefixes") without
//! publishing the rules, so these are our rules: trim, lowercase, `-` and `_`
//! alike, then strip the OpenAI `functions.` / `tools.` prefixes and Claude's
//! MCP `mcp__<server>__` prefix.

/// The canonical form of a tool name.
///
/// `" Functions.Web-Search "` -> `"web_search"`, `"mcp__github__create_issue"`
/// -> `"create_issue"`. A name that would become empty after stripping a
/// prefix keeps the prefix (`"functions."` stays `"functions."`).
pub fn normalize_tool_name(name: &str) -> String {
    // Unicode lowercase rather than Python's casefold (differs only for a few
    // characters such as `ß`).
    let mut n = name.trim().to_lowercase().replace('-', "_");
    for prefix in ["functions.", "tools."] {
        if let Some(rest) = n.strip_prefix(prefix) {
            if !rest.is_empty() {
                n = rest.to_string();
            }
            break;
        }
    }
    if let Some(rest) = n.strip_prefix("mcp__") {
        // mcp__<server>__<tool>: the server is up to the next `__`.
        if let Some((server, tool)) = rest.split_once("__") {
            if !server.is_empty() && !tool.is_empty() {
                n = tool.to_string();
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::normalize_tool_name as norm;

    #[test]
    fn trims_folds_and_unifies_separators() {
        assert_eq!(norm("  Search "), "search");
        assert_eq!(norm("web-search"), norm("WEB_SEARCH"));
    }

    #[test]
    fn strips_known_prefixes() {
        assert_eq!(norm("functions.search"), "search");
        assert_eq!(norm("tools.search"), "search");
        assert_eq!(norm("mcp__server__search"), "search");
        assert_eq!(norm("mcp__my-server__web_search"), "web_search");
        assert_eq!(norm("functions.mcp__srv__get"), "get");
    }

    #[test]
    fn keeps_names_that_only_look_like_prefixes() {
        assert_eq!(norm("functions."), "functions.");
        assert_eq!(norm("mcp__server"), "mcp__server");
        assert_eq!(norm("mcp____x"), "mcp____x");
        assert_eq!(norm("toolset.search"), "toolset.search");
        assert_eq!(norm(""), "");
    }
}
