//! Per-metric verdicts and score histograms for `/metrics`.

use std::io;
use std::sync::Arc;

use super::{Batch, Output, Sink};
use crate::serve::telemetry::ServeStats;

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
                self.stats.record(r);
            }
        }
        Ok(())
    }
}
