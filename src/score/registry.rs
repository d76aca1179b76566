//! One place that maps metric names to implementations.

use std::sync::Arc;

use super::judged::{llm_efficiency, llm_fuzzy, llm_no_expectations};
use super::native::{NativeConfig, NativeMetric, NATIVE_NAME};
use super::presets;
use super::{Metric, MetricOptions, ScoreError};
use crate::judge::Judge;

/// A row of `toolscore metrics`.
#[derive(Debug, Clone, Copy)]
pub struct MetricInfo {
    pub name: &'static str,
    pub library: &'static str,
    pub version: &'static str,
    pub summary: &'static str,
    /// Asks an LLM judge (so not part of `--metric all`).
    pub judged: bool,
}

/// The metrics that only an LLM judge scores, each declared once here
/// (name, summary and how it is built with the run's judge), so a judged
/// name cannot be listed without being built. Each says where it still
/// differs from MLflow (docs/scoring.md has the table).
struct Judged {
    name: &'static str,
    summary: &'static str,
    build: fn(Arc<Judge>) -> Box<dyn Metric>,
}

const JUDGED: &[Judged] = &[
    Judged {
        name: llm_fuzzy::NAME,
        summary: "ToolCallCorrectness(should_exact_match=False), LLM judge, our prompt: made vs \
                  expected calls compared semantically, names only (arguments judged \
                  reasonable) when an expectation lacks arguments; yes=1/no=0. Differs: no \
                  tools recorded -> null (MLflow asks the LLM to extract them); the request \
                  ends at this turn's user message; a token cap is sent (docs/scoring.md)",
        build: |judge| {
            Box::new(llm_fuzzy::LlmFuzzy {
                judge,
                ordered: false,
            })
        },
    },
    Judged {
        name: llm_fuzzy::NAME_ORDERED,
        summary: "mlflow.llm_fuzzy + should_consider_ordering",
        build: |judge| {
            Box::new(llm_fuzzy::LlmFuzzy {
                judge,
                ordered: true,
            })
        },
    },
    Judged {
        name: llm_no_expectations::NAME,
        summary: "ToolCallCorrectness without expectations, LLM judge, our prompt: tools and \
                  arguments reasonable for the request and the tools' parameters; yes=1/no=0; \
                  differs as mlflow.llm_fuzzy",
        build: |judge| Box::new(llm_no_expectations::LlmNoExpectations { judge }),
    },
    Judged {
        name: llm_efficiency::NAME,
        summary: "ToolCallEfficiency, LLM judge, our prompt: no redundant or unneeded call; a \
                  retry after a temporary failure is no waste; yes=1/no=0; differs as \
                  mlflow.llm_fuzzy",
        build: |judge| Box::new(llm_efficiency::LlmEfficiency { judge }),
    },
];

/// toolscore's own metrics: each is declared once here (name, summary and
/// how it is built), for both `toolscore metrics` and the lookup.
struct Own {
    name: &'static str,
    summary: &'static str,
    build: fn(&MetricOptions, &NativeConfig) -> Box<dyn Metric>,
}

const OWN: &[Own] = &[
    Own {
        name: NATIVE_NAME,
        summary: "optimal one-to-one matching of calls to expectations; recall, precision, F1 \
                  (default score), order (LCS), exact; argument policies ignore/exact/subset/\
                  superset/fuzzy; argument matchers in expectations ($regex, $type, $approx, \
                  $contains, $any), which the presets compare as literal values",
        build: |opts, native| {
            let mut config = native.clone();
            if let Some(t) = opts.threshold {
                config.threshold = t;
            }
            Box::new(NativeMetric::new(config))
        },
    },
    Own {
        name: super::efficiency::NAME,
        summary: "wasted tool use, no expectations needed: redundant calls, loops (A B A B), \
                  retries after a failure, error rate; score 1 - wasted/calls",
        build: |opts, _| Box::new(super::efficiency::Efficiency::new(opts.threshold)),
    },
    Own {
        name: super::budget::NAME,
        summary: "the case's budgets: max_calls, max_calls_per_tool, forbidden_tools, \
                  max_duration_ms, max_tokens; each violated one named",
        build: |_, _| Box::new(super::budget::Budget),
    },
    Own {
        name: super::agents::NAME,
        summary: "per-agent expectations (case `agents`): each agent's own calls scored with \
                  tool_correctness; agents that never ran fail, unnamed ones are listed",
        build: |_, native| Box::new(super::agents::Agents::new(native)),
    },
    Own {
        name: super::handoffs::NAME,
        summary: "the order agents ran in (case `handoffs`): LCS over the expected count, \
                  exact; passes when the expected agents ran in order; others that ran are named",
        build: |_, _| Box::new(super::handoffs::Handoffs),
    },
];

/// Every metric, ours first.
pub fn catalog() -> Vec<MetricInfo> {
    let mut rows: Vec<MetricInfo> = OWN
        .iter()
        .map(|m| MetricInfo {
            name: m.name,
            library: "toolscore",
            version: env!("CARGO_PKG_VERSION"),
            summary: m.summary,
            judged: false,
        })
        .collect();
    rows.extend(presets::catalog().into_iter().map(|p| MetricInfo {
        name: p.name,
        library: p.library,
        version: p.version,
        summary: p.summary,
        judged: false,
    }));
    rows.extend(JUDGED.iter().map(|j| MetricInfo {
        name: j.name,
        library: "mlflow",
        version: "3.17.2 (LLM judge)",
        summary: j.summary,
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
    if let Some(j) = JUDGED.iter().find(|j| j.name == name) {
        let judge = Arc::clone(judge.ok_or_else(|| ScoreError::NeedsJudge(name.to_string()))?);
        return Ok((j.build)(judge));
    }
    if let (Some(judge), "cubeo") = (judge, name) {
        return presets::cubeo_judged(opts, Arc::clone(judge));
    }
    if let Some(own) = OWN.iter().find(|m| m.name == name) {
        return Ok((own.build)(opts, native));
    }
    presets::build(name, opts).unwrap_or_else(|| {
        Err(ScoreError::UnknownMetric {
            name: name.to_string(),
            suggestion: closest(name),
        })
    })
}

/// The known metric name closest to `name`, if it is close enough to be a
/// typo (Jaro-Winkler similarity, as clap's own suggestions).
fn closest(name: &str) -> Option<String> {
    catalog()
        .into_iter()
        .map(|m| (strsim::jaro_winkler(name, m.name), m.name))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::JudgeConfig;

    /// Every judged name builds the metric of that name (none falls back
    /// to another), and asks for a judge when the run has none.
    #[test]
    fn every_judged_name_builds_its_own_metric() {
        let judge = Arc::new(
            Judge::new(
                JudgeConfig {
                    dry_run: true,
                    ..JudgeConfig::default()
                },
                None,
            )
            .unwrap(),
        );
        let judged: Vec<&str> = catalog()
            .into_iter()
            .filter(|m| m.judged)
            .map(|m| m.name)
            .collect();
        assert_eq!(judged.len(), JUDGED.len());
        let (opts, native) = (MetricOptions::default(), NativeConfig::default());
        for name in judged {
            let m = lookup(name, &opts, &native, Some(&judge)).unwrap();
            assert_eq!(m.name(), name);
            assert!(m.needs().judge, "{name} asks the judge");
            assert!(matches!(
                lookup(name, &opts, &native, None),
                Err(ScoreError::NeedsJudge(n)) if n == name
            ));
        }
    }
}
