//! Tool-name normalization, shared by extraction, fixtures and scoring.
//!
//! [`normalize_tool_name`] is the canonical form (the `galtea` preset uses it,
//! and `--normalize` ends with it): trim, lowercase, `-` and `_` alike, then
//! strip the OpenAI `functions.` / `tools.` prefixes and Claude's MCP
//! `mcp__<server>__` prefix. No peer library normalizes names (see
//! docs/scoring.md); Galtea says it does without publishing its rules, so
//! these are ours. [`Normalizer`] is `--normalize`: the user's regex rewrites,
//! then the canonical form. Called and expected names go through the same
//! function, so a rewrite written against either spelling works.

use std::borrow::Cow;

use regex::Regex;
use serde::{Deserialize, Serialize};

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

/// One user rewrite: `pattern` (regex) replaced by `replace` (`$1`, `${name}`
/// refer to captures), applied to every match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenameSpec {
    pub pattern: String,
    pub replace: String,
}

#[derive(Debug, thiserror::Error)]
#[error("rename pattern `{pattern}`: {error}")]
pub struct RenameError {
    pub pattern: String,
    pub error: Box<regex::Error>,
}

/// Maps tool names to the form they are compared in.
#[derive(Debug, Clone, Default)]
pub struct Normalizer {
    enabled: bool,
    renames: Vec<(Regex, String)>,
}

impl Normalizer {
    /// Names as they are (the default: no peer library normalizes).
    pub fn off() -> Self {
        Normalizer::default()
    }

    /// The built-in canonical form, after `renames` in order.
    pub fn new(renames: &[RenameSpec]) -> Result<Self, RenameError> {
        let renames = renames
            .iter()
            .map(|r| {
                Regex::new(&r.pattern)
                    .map(|re| (re, r.replace.clone()))
                    .map_err(|e| RenameError {
                        pattern: r.pattern.clone(),
                        error: Box::new(e),
                    })
            })
            .collect::<Result<_, _>>()?;
        Ok(Normalizer {
            enabled: true,
            renames,
        })
    }

    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The compared form of `name`.
    pub fn apply<'a>(&self, name: &'a str) -> Cow<'a, str> {
        if !self.enabled {
            return Cow::Borrowed(name);
        }
        let mut n = Cow::Borrowed(name.trim());
        for (re, rep) in &self.renames {
            if let Cow::Owned(changed) = re.replace_all(&n, rep.as_str()) {
                n = Cow::Owned(changed);
            }
        }
        Cow::Owned(normalize_tool_name(&n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_by_default_and_renames_before_the_canonical_form() {
        assert_eq!(Normalizer::off().apply(" Web-Search "), " Web-Search ");
        let n = Normalizer::new(&[RenameSpec {
            pattern: "^acme_(.*)$".into(),
            replace: "$1".into(),
        }])
        .unwrap();
        assert_eq!(n.apply("acme_Web-Search"), "web_search");
        assert_eq!(n.apply("functions.lookup"), "lookup");
        assert!(Normalizer::new(&[RenameSpec {
            pattern: "(".into(),
            replace: String::new()
        }])
        .is_err());
    }
}

#[cfg(test)]
mod canonical_tests {
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
