//! One place that maps metric names to implementations.

use super::native::{NativeConfig, NativeMetric, NATIVE_NAME};
use super::presets;
use super::{Metric, MetricOptions, ScoreError};

/// A row of `traceval metrics`.
#[derive(Debug, Clone, Copy)]
pub struct MetricInfo {
    pub name: &'static str,
    pub library: &'static str,
    pub version: &'static str,
    pub summary: &'static str,
}

/// Every metric, native first.
pub fn catalog() -> Vec<MetricInfo> {
    let mut rows = vec![MetricInfo {
        name: NATIVE_NAME,
        library: "traceval",
        version: env!("CARGO_PKG_VERSION"),
        summary: "optimal one-to-one matching of calls to expectations; recall, precision, F1 \
                  (default score), order (LCS), exact; argument policies ignore/exact/subset/\
                  superset/fuzzy",
    }];
    rows.push(MetricInfo {
        name: super::efficiency::NAME,
        library: "traceval",
        version: env!("CARGO_PKG_VERSION"),
        summary: "wasted tool use, no expectations needed: redundant calls, loops (A B A B), \
                  retries after a failure, error rate; score 1 - wasted/calls",
    });
    rows.push(MetricInfo {
        name: super::budget::NAME,
        library: "traceval",
        version: env!("CARGO_PKG_VERSION"),
        summary: "the case's budgets: max_calls, max_calls_per_tool, forbidden_tools, \
                  max_duration_ms, max_tokens; each violated one named",
    });
    rows.push(MetricInfo {
        name: super::agents::NAME,
        library: "traceval",
        version: env!("CARGO_PKG_VERSION"),
        summary: "per-agent expectations (case `agents`): each agent's own calls scored with \
                  tool_correctness; agents that never ran fail, unnamed ones are listed",
    });
    rows.push(MetricInfo {
        name: super::handoffs::NAME,
        library: "traceval",
        version: env!("CARGO_PKG_VERSION"),
        summary: "the order agents ran in (case `handoffs`): LCS over the longer sequence, \
                  exact; passes when the expected agents ran in order",
    });
    rows.extend(presets::catalog().into_iter().map(|p| MetricInfo {
        name: p.name,
        library: p.library,
        version: p.version,
        summary: p.summary,
    }));
    rows
}

/// Every metric name that `--metric all` expands to.
pub fn all_names() -> Vec<&'static str> {
    catalog().into_iter().map(|m| m.name).collect()
}

/// Builds the metric called `name`. `native` configures `tool_correctness`.
pub fn lookup(
    name: &str,
    opts: &MetricOptions,
    native: &NativeConfig,
) -> Result<Box<dyn Metric>, ScoreError> {
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
