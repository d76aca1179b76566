//! The results API (`proto/toolscore/results/v1/results.proto`): a gRPC
//! server stream of evaluations as they are produced, so a CI runner or a
//! dashboard can follow a live run.
//!
//! Publishing never blocks scoring: results go into a bounded broadcast ring;
//! a subscriber that falls behind skips ahead and is told how many it missed.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use super::{Batch, Output, Sink};
use crate::evaluate::Evaluation;

/// Generated from the .proto by build.rs.
pub mod pb {
    #![allow(clippy::all, missing_docs)]
    tonic::include_proto!("toolscore.results.v1");
}

use pb::results_service_server::{ResultsService, ResultsServiceServer};
use pb::{EvaluationResult, MetricScore, SubscribeRequest};

/// Results kept for slow subscribers before they start missing some.
pub const RING: usize = 4096;

/// Where evaluations are published; cheap to clone.
#[derive(Clone, Debug)]
pub struct ResultsHub {
    tx: broadcast::Sender<Arc<EvaluationResult>>,
    /// Ends every stream (server shutdown), so open subscriptions do not
    /// hold the gRPC server's graceful shutdown.
    closed: tokio_util::sync::CancellationToken,
}

impl Default for ResultsHub {
    fn default() -> Self {
        ResultsHub::new(RING)
    }
}

fn names(details: Option<&serde_json::Value>, key: &str) -> Vec<String> {
    details
        .and_then(|d| d.get(key))
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The API form of an evaluation.
pub fn to_message(e: &Evaluation, revision: u32) -> EvaluationResult {
    let headline = e.results.first().and_then(|r| r.outcome.details.as_ref());
    EvaluationResult {
        trace_id: e.trace_id.0.to_vec(),
        case_id: e.case_id.clone(),
        revision,
        pass: e.passed(),
        verdict: e.verdict().code().to_string(),
        scores: e
            .results
            .iter()
            .map(|r| MetricScore {
                metric: r.metric.clone(),
                score: r.outcome.score,
                pass: r.passed(),
                threshold: r.threshold,
                reason: r.outcome.reason.clone(),
                error: r.outcome.error.clone().unwrap_or_default(),
                verdict: r.verdict().code().to_string(),
            })
            .collect(),
        tools_called: e.tools_called.iter().map(|c| c.name.clone()).collect(),
        missing: names(headline, "missing"),
        unexpected: names(headline, "unexpected"),
        time_unix_nano: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
        missed: 0,
        session_id: e.session.as_ref().map(|s| s.id.clone()).unwrap_or_default(),
        session_trace_ids: e
            .session
            .iter()
            .flat_map(|s| &s.trace_ids)
            .map(|t| t.0.to_vec())
            .collect(),
    }
}

impl ResultsHub {
    pub fn new(capacity: usize) -> Self {
        let (tx, _) = broadcast::channel(capacity.max(1));
        ResultsHub {
            tx,
            closed: tokio_util::sync::CancellationToken::new(),
        }
    }

    /// Publishes one evaluation to every subscriber (a no-op without any).
    pub fn publish(&self, e: &Evaluation, revision: u32) {
        if self.tx.receiver_count() > 0 {
            let _ = self.tx.send(Arc::new(to_message(e, revision)));
        }
    }

    /// Ends every subscription; later ones end at once.
    pub fn close(&self) {
        self.closed.cancel();
    }

    /// Current subscriber count.
    pub fn subscribers(&self) -> usize {
        self.tx.receiver_count()
    }

    /// The tonic service, to mount on a gRPC server.
    pub fn service(&self) -> ResultsServiceServer<ResultsHub> {
        ResultsServiceServer::new(self.clone())
    }
}

/// Publishes every evaluation to the results API's subscribers.
pub struct ResultsApiSink {
    hub: ResultsHub,
}

impl ResultsApiSink {
    pub fn new(hub: ResultsHub) -> Self {
        ResultsApiSink { hub }
    }
}

impl Sink for ResultsApiSink {
    fn reads_call_args(&self) -> bool {
        false
    }

    fn name(&self) -> &'static str {
        "results-api"
    }

    fn record(&self, batch: &Batch) -> std::io::Result<()> {
        for o in &batch.outputs {
            if let Output::Evaluation { eval, revision, .. } = o {
                self.hub.publish(eval, *revision);
            }
        }
        Ok(())
    }
}

fn wanted(filter: &SubscribeRequest, r: &EvaluationResult) -> bool {
    (filter.metrics.is_empty() || r.scores.iter().any(|s| filter.metrics.contains(&s.metric)))
        && (!filter.failures_only || !r.pass)
        && (filter.case_id.is_empty() || filter.case_id == r.case_id)
}

#[tonic::async_trait]
impl ResultsService for ResultsHub {
    type SubscribeStream = ReceiverStream<Result<EvaluationResult, tonic::Status>>;

    async fn subscribe(
        &self,
        request: tonic::Request<SubscribeRequest>,
    ) -> Result<tonic::Response<Self::SubscribeStream>, tonic::Status> {
        let filter = request.into_inner();
        let mut rx = self.tx.subscribe();
        let (out, stream) = mpsc::channel(64);
        let closed = self.closed.clone();
        tokio::spawn(async move {
            let mut missed = 0u64;
            let mut closing = false;
            loop {
                // Results first: an evaluation published before `close` (the
                // final drain at shutdown) is still delivered. Once closed,
                // what is already in the ring is sent, then the stream ends.
                let next = if closing {
                    match rx.try_recv() {
                        Ok(r) => Ok(r),
                        Err(broadcast::error::TryRecvError::Lagged(n)) => {
                            Err(broadcast::error::RecvError::Lagged(n))
                        }
                        Err(_) => return,
                    }
                } else {
                    tokio::select! {
                        biased;
                        r = rx.recv() => r,
                        () = closed.cancelled() => {
                            closing = true;
                            continue;
                        }
                    }
                };
                match next {
                    Ok(r) => {
                        if !wanted(&filter, &r) {
                            continue;
                        }
                        let mut msg = (*r).clone();
                        msg.missed = std::mem::take(&mut missed);
                        if out.send(Ok(msg)).await.is_err() {
                            return; // the client went away
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => missed += n,
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        Ok(tonic::Response::new(ReceiverStream::new(stream)))
    }
}
