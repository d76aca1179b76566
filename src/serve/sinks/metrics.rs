//! Per-metric verdicts and score histograms for `/metrics`.

use std::io;
use std::sync::Arc;

use super::{Batch, Output, Sink};
use crate::serve::telemetry::{ServeStats, Verdict};

pub struct MetricsSink {
    stats: Arc<ServeStats>,
}

impl MetricsSink {
    pub fn new(stats: Arc<ServeStats>) -> Self {
        MetricsSink { stats }
    }
}

impl Sink for MetricsSink {
    fn reads_call_args(&self) -> bool {
        false
    }

    fn name(&self) -> &'static str {
        "metrics"
    }

    fn record(&self, batch: &Batch) -> io::Result<()> {
        for o in &batch.outputs {
            let Output::Evaluation { eval, .. } = o else {
                continue;
            };
            for r in &eval.results {
                let verdict = match (r.outcome.error.is_some(), r.passed()) {
                    (true, _) => Verdict::Error,
                    (false, true) => Verdict::Pass(r.outcome.score),
                    (false, false) => Verdict::Fail(r.outcome.score),
                };
                self.stats.record(&r.metric, verdict);
            }
        }
        Ok(())
    }
}
