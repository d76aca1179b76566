//! Opt-in tool-name normalization for scoring (`--normalize`): the user's
//! regex rewrites, then the built-in canonical form
//! ([`crate::score::normalize::normalize_tool_name`]: trim, case-fold, `-` and
//! `_` alike, strip `functions.`, `tools.`, `mcp__<server>__`).
//!
//! Called and expected names go through the same function, so a rewrite
//! written against either spelling works.

use std::borrow::Cow;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::score::normalize::normalize_tool_name;

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
