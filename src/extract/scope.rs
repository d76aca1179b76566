//! Which calls count for scoring (`--scope`).

/// Which calls count for scoring.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Scope {
    /// Every call, including those of sub-agents run inside tools.
    #[default]
    All,
    /// Only calls made by the top-level agent (depth 0).
    TopLevel,
}

impl std::str::FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "all" => Ok(Scope::All),
            "top-level" | "top_level" => Ok(Scope::TopLevel),
            other => Err(format!("unknown scope `{other}` (all, top-level)")),
        }
    }
}
