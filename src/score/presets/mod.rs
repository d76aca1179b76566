//! Compatibility presets: metrics that reproduce a peer library's score.
//!
//! One file per library; each documents the version it matches and the quirks
//! it keeps on purpose (docs/scoring.md). The 43 oracle modes
//! are checked against the libraries' own results in `tests/presets.rs`.

mod adk;
mod agentevals;
mod axion;
mod common;
mod cubeo;
mod deepeval;
mod eval_lib;
mod galtea;
mod mlflow;
mod ragas;

use super::{Metric, MetricOptions, ScoreError};

/// Catalog entry for `toolscore metrics` and the README table.
#[derive(Debug, Clone, Copy)]
pub struct PresetInfo {
    pub name: &'static str,
    pub library: &'static str,
    pub version: &'static str,
    pub summary: &'static str,
}

type Build = fn(&str, &MetricOptions) -> Option<Result<Box<dyn Metric>, ScoreError>>;

/// One reproduced library: its modes are declared once, in its module's
/// `MODES` (the lookup table `build` searches and the catalog `modes` lists).
struct Library {
    name: &'static str,
    version: &'static str,
    modes: fn() -> Box<dyn Iterator<Item = (&'static str, &'static str)>>,
    build: Build,
}

macro_rules! library {
    ($m:ident) => {
        Library {
            name: $m::LIBRARY,
            version: $m::VERSION,
            modes: || Box::new($m::modes()),
            build: $m::build,
        }
    };
}

/// Every library, in display order.
const LIBRARIES: &[Library] = &[
    library!(deepeval),
    library!(mlflow),
    library!(eval_lib),
    library!(axion),
    library!(ragas),
    library!(agentevals),
    library!(adk),
    library!(galtea),
    library!(cubeo),
];

/// Every preset, in display order.
pub fn catalog() -> Vec<PresetInfo> {
    LIBRARIES
        .iter()
        .flat_map(|lib| {
            (lib.modes)().map(move |(name, summary)| PresetInfo {
                name,
                library: lib.name,
                version: lib.version,
                summary,
            })
        })
        .collect()
}

/// `cubeo` with an LLM judge (the preset without one is the approximation).
pub fn cubeo_judged(
    opts: &MetricOptions,
    judge: std::sync::Arc<crate::judge::Judge>,
) -> Result<Box<dyn Metric>, ScoreError> {
    cubeo::build_judged(opts, judge)
}

/// Builds the preset called `name`, or `None` if no preset has that name.
pub fn build(name: &str, opts: &MetricOptions) -> Option<Result<Box<dyn Metric>, ScoreError>> {
    LIBRARIES.iter().find_map(|lib| (lib.build)(name, opts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalog_entry_builds_under_its_own_name() {
        let presets = catalog();
        assert_eq!(presets.len(), 48, "a mode was added or lost");
        for p in &presets {
            let m = build(p.name, &MetricOptions::default())
                .unwrap_or_else(|| panic!("{} does not build", p.name))
                .unwrap_or_else(|e| panic!("{}: {e}", p.name));
            assert_eq!(m.name(), p.name);
        }
        assert!(build("deepeval.nope", &MetricOptions::default()).is_none());
    }

    #[test]
    fn bad_threshold_is_rejected() {
        let opts = MetricOptions {
            threshold: Some(f64::NAN),
            strict: None,
        };
        assert!(matches!(
            build("eval_lib.default", &opts),
            Some(Err(ScoreError::BadOption { .. }))
        ));
    }
}
