//! Compatibility presets: metrics that reproduce a peer library's score.
//!
//! One file per library; each documents the version it matches and the quirks
//! it keeps on purpose (shared/spec/scoring-semantics.md). The 43 oracle modes
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

/// Catalog entry for `traceval metrics` and the README table.
#[derive(Debug, Clone, Copy)]
pub struct PresetInfo {
    pub name: &'static str,
    pub library: &'static str,
    pub version: &'static str,
    pub summary: &'static str,
}

const fn info(
    name: &'static str,
    library: &'static str,
    version: &'static str,
    summary: &'static str,
) -> PresetInfo {
    PresetInfo {
        name,
        library,
        version,
        summary,
    }
}

use adk::{LIBRARY as ADK, VERSION as ADK_V};
use agentevals::{LIBRARY as AGE, VERSION as AGE_V};
use axion::{LIBRARY as AXN, VERSION as AXN_V};
use cubeo::{LIBRARY as CUB, VERSION as CUB_V};
use deepeval::{LIBRARY as DE, VERSION as DE_V};
use eval_lib::{LIBRARY as EL, VERSION as EL_V};
use galtea::{LIBRARY as GAL, VERSION as GAL_V};
use mlflow::{LIBRARY as MLF, VERSION as MLF_V};
use ragas::{LIBRARY as RAG, VERSION as RAG_V};

/// Every preset, in display order.
pub const PRESETS: &[PresetInfo] = &[
    info(
        "deepeval.default",
        DE,
        DE_V,
        "ToolCorrectnessMetric(): share of expected tools matched by name, greedy; identical \
         duplicate calls count once (bug kept); extras free; pass >= 0.5",
    ),
    info(
        "deepeval.exact",
        DE,
        DE_V,
        "should_exact_match: 1 if same names in the same order and length, else 0",
    ),
    info(
        "deepeval.ordering",
        DE,
        DE_V,
        "should_consider_ordering: LCS of names / expected count",
    ),
    info(
        "deepeval.exact_ordering",
        DE,
        DE_V,
        "both flags; exact match wins",
    ),
    info(
        "deepeval.strict",
        DE,
        DE_V,
        "strict_mode: threshold 1, any score below 1 becomes 0",
    ),
    info(
        "deepeval.input_params",
        DE,
        DE_V,
        "INPUT_PARAMETERS: default mode with partial argument credit (equal keys / key union); \
         raises AttributeError when one side's args are absent",
    ),
    info(
        "deepeval.input_params_exact",
        DE,
        DE_V,
        "INPUT_PARAMETERS + exact: names and args (Python ==) equal position by position",
    ),
    info(
        "deepeval.input_params_ordering",
        DE,
        DE_V,
        "INPUT_PARAMETERS + ordering: LCS weighted by argument credit",
    ),
    info(
        "deepeval.input_params_strict",
        DE,
        DE_V,
        "INPUT_PARAMETERS + strict_mode",
    ),
    info(
        "mlflow.exact",
        MLF,
        MLF_V,
        "ToolCallCorrectness(should_exact_match=True): same count and same set of \
         name(sorted-key JSON args); yes=1/no=0; raises on empty expectations",
    ),
    info(
        "mlflow.exact_ordered",
        MLF,
        MLF_V,
        "+ should_consider_ordering: same signature at every position",
    ),
    info(
        "mlflow.exact_names",
        MLF,
        MLF_V,
        "mlflow.exact with name-only expectations (arguments ignored)",
    ),
    info(
        "mlflow.exact_ordered_names",
        MLF,
        MLF_V,
        "mlflow.exact_ordered with name-only expectations",
    ),
    info(
        "eval_lib.default",
        EL,
        EL_V,
        "names only: expected names matched one to one / expected count; nothing expected = 1",
    ),
    info(
        "eval_lib.exact",
        EL,
        EL_V,
        "names only: 1 if the name lists are equal",
    ),
    info(
        "eval_lib.ordering",
        EL,
        EL_V,
        "names only: unweighted LCS / expected count; nothing expected = 1",
    ),
    info(
        "axion.name_only",
        AXN,
        AXN_V,
        "ToolCorrectness(): recall of expected names, first-fit; extras free; pass >= 0.5",
    ),
    info(
        "axion.exact_params",
        AXN,
        AXN_V,
        "recall; a match also needs args == (Python)",
    ),
    info(
        "axion.subset_params",
        AXN,
        AXN_V,
        "recall; expected args must be in the called args (nested dicts recurse)",
    ),
    info(
        "axion.fuzzy_params",
        AXN,
        AXN_V,
        "recall; mean type-strict similarity over expected args >= 0.8 (difflib for strings)",
    ),
    info(
        "axion.strict_order",
        AXN,
        AXN_V,
        "1 if same names at every position, else 0",
    ),
    info(
        "axion.strict_order_exact_params",
        AXN,
        AXN_V,
        "strict order, args == at every position",
    ),
    info(
        "axion.precision",
        AXN,
        AXN_V,
        "scoring='precision': matched / called; nothing called = 1",
    ),
    info(
        "axion.f1",
        AXN,
        AXN_V,
        "scoring='f1': harmonic mean of recall and precision",
    ),
    info(
        "ragas.tool_call_accuracy_strict",
        RAG,
        RAG_V,
        "ToolCallAccuracy(strict_order=True): 0 unless the name sequences are equal, else mean \
         share of reference args whose str() values are equal; no pass/fail",
    ),
    info(
        "ragas.tool_call_accuracy_flexible",
        RAG,
        RAG_V,
        "strict_order=False: both lists sorted by (name, key, str(value)...) first",
    ),
    info(
        "ragas.tool_call_f1",
        RAG,
        RAG_V,
        "ToolCallF1: F1 of the sets of (name, args); two empty lists = 0; rounded to 4 places",
    ),
    info(
        "agentevals.strict.args_exact",
        AGE,
        AGE_V,
        "trajectory strict: same calls in the same order, args ==",
    ),
    info(
        "agentevals.strict.args_ignore",
        AGE,
        AGE_V,
        "strict, args ignored",
    ),
    info(
        "agentevals.strict.args_subset",
        AGE,
        AGE_V,
        "strict, output args within reference args",
    ),
    info(
        "agentevals.strict.args_superset",
        AGE,
        AGE_V,
        "strict, output args contain reference args",
    ),
    info(
        "agentevals.unordered.args_exact",
        AGE,
        AGE_V,
        "unordered: same calls in any order (first-fit both ways), args ==",
    ),
    info(
        "agentevals.unordered.args_ignore",
        AGE,
        AGE_V,
        "unordered, args ignored",
    ),
    info(
        "agentevals.unordered.args_subset",
        AGE,
        AGE_V,
        "unordered, subset args (checked both ways: acts like exact)",
    ),
    info(
        "agentevals.unordered.args_superset",
        AGE,
        AGE_V,
        "unordered, superset args (checked both ways: acts like exact)",
    ),
    info(
        "agentevals.subset.args_exact",
        AGE,
        AGE_V,
        "subset: every output call matches a reference call (first-fit), args ==",
    ),
    info(
        "agentevals.subset.args_ignore",
        AGE,
        AGE_V,
        "subset, args ignored",
    ),
    info(
        "agentevals.subset.args_subset",
        AGE,
        AGE_V,
        "subset; matcher swapped: output args must contain the reference args",
    ),
    info(
        "agentevals.subset.args_superset",
        AGE,
        AGE_V,
        "subset; matcher swapped: output args must be within the reference args",
    ),
    info(
        "agentevals.superset.args_exact",
        AGE,
        AGE_V,
        "superset: every reference call matched by an output call (first-fit), args ==",
    ),
    info(
        "agentevals.superset.args_ignore",
        AGE,
        AGE_V,
        "superset, args ignored",
    ),
    info(
        "agentevals.superset.args_subset",
        AGE,
        AGE_V,
        "superset, output args within reference args",
    ),
    info(
        "agentevals.superset.args_superset",
        AGE,
        AGE_V,
        "superset, output args contain reference args",
    ),
    info(
        "adk.exact",
        ADK,
        ADK_V,
        "tool_trajectory_avg_score EXACT: 1 if same calls (name, args ==) in order; pass >= 1.0",
    ),
    info(
        "adk.in_order",
        ADK,
        ADK_V,
        "IN_ORDER: expected calls appear in order, extras allowed",
    ),
    info(
        "adk.any_order",
        ADK,
        ADK_V,
        "ANY_ORDER: every expected call matched by a distinct call, extras allowed",
    ),
    info(
        "galtea",
        GAL,
        GAL_V,
        "approximation: 1 if the normalized, de-duplicated name sets are equal, else 0",
    ),
    info(
        "cubeo",
        CUB,
        CUB_V,
        "approximation of an LLM judge: F1 of name multisets; threshold 0.8; strict rounds to \
         1/0 at the threshold",
    ),
];

/// Builds the preset called `name`, or `None` if no preset has that name.
pub fn build(name: &str, opts: &MetricOptions) -> Option<Result<Box<dyn Metric>, ScoreError>> {
    type Builder = fn(&str, &MetricOptions) -> Option<Result<Box<dyn Metric>, ScoreError>>;
    const BUILDERS: &[Builder] = &[
        deepeval::build,
        mlflow::build,
        eval_lib::build,
        axion::build,
        ragas::build,
        agentevals::build,
        adk::build,
        galtea::build,
        cubeo::build,
    ];
    BUILDERS.iter().find_map(|b| b(name, opts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalog_entry_builds_under_its_own_name() {
        for p in PRESETS {
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
