//! One place that maps metric names to implementations.

use std::sync::Arc;

use super::judged::{llm_efficiency, llm_fuzzy, llm_no_expectations};
use super::native::{NativeConfig, NativeMetric, NATIVE_NAME};
use super::presets;
use super::{Metric, MetricOptions, ScoreError};
use crate::judge::Judge;

/// A row of `traceval metrics`.
#[derive(Debug, Clone, Copy)]
pub struct MetricInfo {
    pub name: &'static str,
    pub library: &'static str,
    pub version: &'static str,
    pub summary: &'static str,
    /// Asks an LLM judge (so not part of `--metric all`).
    pub judged: bool,
}

/// The metrics that only an LLM judge scores: (name, summary).
const JUDGED: &[(&str, &str)] = &[
    (
        llm_fuzzy::NAME,
        "ToolCallCorrectness(should_exact_match=False), LLM judge: expected vs made calls \
         compared semantically; yes=1/no=0; no expectations -> judged against request and tools",
    ),
    (
        llm_fuzzy::NAME_ORDERED,
        "mlflow.llm_fuzzy + should_consider_ordering",
    ),
    (
        llm_no_expectations::NAME,
        "ToolCallCorrectness without expectations, LLM judge: calls reasonable and correct for \
         the request with the tools available; yes=1/no=0",
    ),
    (
        llm_efficiency::NAME,
        "ToolCallEfficiency, LLM judge: no redundant or unnecessary calls; yes=1/no=0",
    ),
];

/// Every metric, native first.
pub fn catalog() -> Vec<MetricInfo> {
    let mut rows = vec![MetricInfo {
        name: NATIVE_NAME,
        library: "traceval",
        version: env!("CARGO_PKG_VERSION"),
        summary: "optimal one-to-one matching of calls to expectations; recall, precision, F1 \
                  (default score), order (LCS), exact; argument policies ignore/exact/subset/\
                  superset/fuzzy",
        judged: false,
    }];
    rows.push(MetricInfo {
        name: super::efficiency::NAME,
        library: "traceval",
        version: env!("CARGO_PKG_VERSION"),
        summary: "wasted tool use, no expectations needed: redundant calls, loops (A B A B), \
                  retries after a failure, error rate; score 1 - wasted/calls",
        judged: false,
    });
    rows.push(MetricInfo {
        name: super::budget::NAME,
        library: "traceval",
        version: env!("CARGO_PKG_VERSION"),
        summary: "the case's budgets: max_calls, max_calls_per_tool, forbidden_tools, \
                  max_duration_ms, max_tokens; each violated one named",
        judged: false,
    });
    rows.push(MetricInfo {
        name: super::agents::NAME,
        library: "traceval",
        version: env!("CARGO_PKG_VERSION"),
        summary: "per-agent expectations (case `agents`): each agent's own calls scored with \
                  tool_correctness; agents that never ran fail, unnamed ones are listed",
        judged: false,
    });
    rows.push(MetricInfo {
        name: super::handoffs::NAME,
        library: "traceval",
        version: env!("CARGO_PKG_VERSION"),
        summary: "the order agents ran in (case `handoffs`): LCS over the longer sequence, \
                  exact; passes when the expected agents ran in order",
        judged: false,
    });
    rows.extend(presets::catalog().into_iter().map(|p| MetricInfo {
        name: p.name,
        library: p.library,
        version: p.version,
        summary: p.summary,
        judged: false,
    }));
    rows.extend(JUDGED.iter().map(|&(name, summary)| MetricInfo {
        name,
        library: "mlflow",
        version: "3.17.2 (LLM judge)",
        summary,
        judged: true,
    }));
    rows
}

/// Every metric name that `--metric all` expands to: every one that scores
/// without an LLM judge (judged metrics cost money; name them).
pub fn all_names() -> Vec<&'static str> {
    catalog()
        .into_iter()
        .filter(|m| !m.judged)
        .map(|m| m.name)
        .collect()
}

/// Builds the metric called `name`. `native` configures `tool_correctness`;
/// `judge` is the run's LLM judge, if one is configured.
pub fn lookup(
    name: &str,
    opts: &MetricOptions,
    native: &NativeConfig,
    judge: Option<&Arc<Judge>>,
) -> Result<Box<dyn Metric>, ScoreError> {
    if JUDGED.iter().any(|j| j.0 == name) {
        let judge = Arc::clone(judge.ok_or_else(|| ScoreError::NeedsJudge(name.to_string()))?);
        return Ok(match name {
            llm_no_expectations::NAME => Box::new(llm_no_expectations::LlmNoExpectations { judge }),
            llm_efficiency::NAME => Box::new(llm_efficiency::LlmEfficiency { judge }),
            _ => Box::new(llm_fuzzy::LlmFuzzy {
                judge,
                ordered: name == llm_fuzzy::NAME_ORDERED,
            }),
        });
    }
    if let (Some(judge), "cubeo") = (judge, name) {
        return presets::cubeo_judged(opts, Arc::clone(judge));
    }
    if name == NATIVE_NAME {
        let mut config = native.clone();
        if let Some(t) = opts.threshold {
            config.threshold = t;
        }
        return Ok(Box::new(NativeMetric::new(config)));
    }
    if name == super::efficiency::NAME {
        return Ok(Box::new(super::efficiency::Efficiency::new(opts.threshold)));
    }
    if name == super::budget::NAME {
        return Ok(Box::new(super::budget::Budget));
    }
    if name == super::agents::NAME {
        return Ok(Box::new(super::agents::Agents::new(native)));
    }
    if name == super::handoffs::NAME {
        return Ok(Box::new(super::handoffs::Handoffs));
    }
    presets::build(name, opts).unwrap_or_else(|| Err(ScoreError::UnknownMetric(name.to_string())))
}
