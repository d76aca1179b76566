//! Per-tool statistics of a run: calls, errors, latency percentiles, and the
//! tokens the traces' LLM spans report.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::extract::{CallStatus, ToolCall};

/// One tool's calls over the run.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ToolStats {
    pub name: String,
    pub calls: usize,
    pub errors: usize,
    /// Span durations (end - start), nearest-rank percentiles, in ms.
    pub p50_ms: f64,
    pub p95_ms: f64,
}

/// Tokens over the traces that report them (docs/conventions.md, token usage).
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct TokenStats {
    /// Traces with at least one token count.
    pub traces: usize,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// (input + output) / traces.
    pub per_trace: f64,
}

/// Collects calls and token counts, trace by trace.
#[derive(Debug, Default)]
pub struct ToolStatsBuilder {
    /// Tool -> (errors, durations in ns).
    tools: BTreeMap<String, (usize, Vec<u64>)>,
    tokens: TokenStats,
}

impl ToolStatsBuilder {
    /// Adds one trace's calls and its token counts (`None`: not reported).
    pub fn add(&mut self, calls: &[ToolCall], tokens: (Option<u64>, Option<u64>)) {
        for c in calls {
            // Look up before inserting: a clone of the name per call costs.
            let e = match self.tools.get_mut(&c.name) {
                Some(e) => e,
                None => self.tools.entry(c.name.clone()).or_default(),
            };
            if c.status == CallStatus::Error {
                e.0 += 1;
            }
            e.1.push(c.end_time_unix_nano.saturating_sub(c.start_time_unix_nano));
        }
        if tokens != (None, None) {
            self.tokens.traces += 1;
            self.tokens.input_tokens += tokens.0.unwrap_or(0);
            self.tokens.output_tokens += tokens.1.unwrap_or(0);
        }
    }

    /// Tools by name; token totals when any trace reported them.
    pub fn finish(self) -> (Vec<ToolStats>, Option<TokenStats>) {
        let tools = self
            .tools
            .into_iter()
            .map(|(name, (errors, mut d))| {
                d.sort_unstable();
                ToolStats {
                    name,
                    calls: d.len(),
                    errors,
                    p50_ms: percentile(&d, 50),
                    p95_ms: percentile(&d, 95),
                }
            })
            .collect();
        let mut t = self.tokens;
        let tokens = (t.traces > 0).then(|| {
            t.per_trace = (t.input_tokens + t.output_tokens) as f64 / t.traces as f64;
            t
        });
        (tools, tokens)
    }
}

/// Nearest-rank percentile of sorted nanoseconds, in ms.
fn percentile(sorted: &[u64], p: usize) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1] as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let d: Vec<u64> = (1..=20).map(|i| i * 1_000_000).collect();
        assert_eq!(percentile(&d, 50), 10.0);
        assert_eq!(percentile(&d, 95), 19.0);
        assert_eq!(percentile(&d[..1], 95), 1.0);
        assert_eq!(percentile(&[], 50), 0.0);
    }
}
