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

use crate::expect::Call;
use crate::extract::tool_name::MCP_PREFIX;

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

    /// The compared name of `server`'s tool `tool`: its namespaced name,
    /// both parts in the compared form.
    fn qualified(&self, server: &str, tool: &str) -> String {
        let server = match self.enabled {
            true => Cow::Owned(normalize_tool_name(server)),
            false => Cow::Borrowed(server),
        };
        format!("{MCP_PREFIX}{server}__{}", self.apply(tool))
    }

    /// Expected and called names as compared, with MCP servers
    /// (docs/fixtures.md, "MCP tools"): an expected `mcp__<server>__<tool>`
    /// means that server's tool, and matches only a call of `<tool>` the
    /// trace says came from `<server>`; a call of it from another server
    /// keeps the tool's own name, which a bare expectation matches. When no
    /// call of `<tool>` records a server, the expectation means the tool
    /// (the trace cannot tell servers apart). `written` is the expected
    /// calls as the fixture wrote them, `expected` as compared; `called` is
    /// the calls as compared, `servers` each call's server. Borrowed when
    /// no expected name holds a server, as in most cases.
    pub fn with_servers<'a>(
        &self,
        written: &[Call],
        expected: Cow<'a, [Call]>,
        called: &'a [Call],
        servers: impl Fn(usize) -> Option<&'a str>,
    ) -> (Cow<'a, [Call]>, Cow<'a, [Call]>) {
        let namespaced = |c: &Call| crate::extract::tool_name::mcp_parts(&c.name).is_some();
        if !written.iter().any(namespaced) {
            return (expected, Cow::Borrowed(called));
        }
        // The compared names of the calls of known servers.
        let served: Vec<(usize, String)> = (0..called.len())
            .filter_map(|i| Some((i, self.qualified(servers(i)?, &called[i].name))))
            .collect();
        let mut expected = expected.into_owned();
        let mut wanted: Vec<&str> = Vec::new();
        for (c, w) in expected.iter_mut().zip(written) {
            let Some((server, tool)) = crate::extract::tool_name::mcp_parts(&w.name) else {
                continue;
            };
            let tool_as_called = self.apply(tool);
            let known = served
                .iter()
                .any(|&(i, _)| called[i].name == tool_as_called);
            c.name = match known {
                true => self.qualified(server, tool),
                false => tool_as_called.into_owned(),
            };
        }
        wanted.extend(expected.iter().map(|c| c.name.as_str()));
        let mut calls = called.to_vec();
        for (i, name) in served {
            if wanted.contains(&name.as_str()) {
                calls[i].name = name;
            }
        }
        (Cow::Owned(expected), Cow::Owned(calls))
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

#[cfg(test)]
mod server_tests {
    use std::borrow::Cow;

    use super::Normalizer;
    use crate::expect::Call;

    /// The names compared for expected `written` and calls `called` (name,
    /// server).
    fn resolved(
        norm: &Normalizer,
        written: &[&str],
        called: &[(&str, Option<&str>)],
    ) -> (Vec<String>, Vec<String>) {
        let written: Vec<Call> = written
            .iter()
            .map(|n| Call::new(n.to_string(), None))
            .collect();
        let expected: Vec<Call> = (written.iter())
            .map(|c| Call::new(norm.apply(&c.name).into_owned(), None))
            .collect();
        let calls: Vec<Call> = (called.iter())
            .map(|(n, _)| Call::new(norm.apply(n).into_owned(), None))
            .collect();
        let (e, c) = norm.with_servers(&written, Cow::Borrowed(&expected), &calls, |i| {
            called.get(i).and_then(|&(_, s)| s)
        });
        let names = |v: &[Call]| v.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
        (names(&e), names(&c))
    }

    #[test]
    fn a_full_name_means_its_servers_tool_only() {
        let off = Normalizer::off();
        let called = [("status", Some("dock")), ("status", Some("quay"))];
        assert_eq!(
            resolved(&off, &["mcp__quay__status"], &called),
            (
                vec!["mcp__quay__status".into()],
                vec!["status".into(), "mcp__quay__status".into()]
            )
        );
        // Another server's full name matches neither call.
        let (e, c) = resolved(&off, &["mcp__pier__status"], &called);
        assert!(c.iter().all(|n| *n != e[0]), "{e:?} {c:?}");
        // A bare name, alone, leaves every call its own name.
        assert_eq!(
            resolved(&off, &["status"], &called),
            (
                vec!["status".into()],
                vec!["status".into(), "status".into()]
            )
        );
    }

    #[test]
    fn with_no_server_recorded_a_full_name_means_the_tool() {
        let off = Normalizer::off();
        assert_eq!(
            resolved(&off, &["mcp__quay__status"], &[("status", None)]),
            (vec!["status".into()], vec!["status".into()])
        );
    }

    #[test]
    fn normalized_names_keep_the_server() {
        let norm = Normalizer::new(&[]).unwrap();
        assert_eq!(
            resolved(
                &norm,
                &["mcp__Quay__Get-Status"],
                &[("get_status", Some("quay"))]
            ),
            (
                vec!["mcp__quay__get_status".into()],
                vec!["mcp__quay__get_status".into()]
            )
        );
        let (e, c) = resolved(
            &norm,
            &["mcp__dock__get_status"],
            &[("get_status", Some("quay"))],
        );
        assert_ne!(e, c);
    }
}
