//! The judge queue: when a metric asks an LLM judge, scoring waits on HTTP,
//! so scoring threads hand their work here and go back to the buffer. Its
//! own worker threads (as many as the judge's concurrency) score and record
//! each job through the sinks. The queue is bounded: when it is full, the
//! scoring thread waits for room, its batch still counted in the buffer, so
//! a judge slower than the traces come fills the buffer and the receivers
//! push back (503 / RESOURCE_EXHAUSTED with a retry hint) as for any other
//! backlog. Every result is judged: none depends on the load.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use tracing::{error, warn};

use super::sinks::{Batch, Outputs};

/// Work that produces one batch of results (scoring traces or sessions).
pub(crate) type Job = Box<dyn FnOnce() -> Batch + Send>;

pub(crate) struct JudgeQueue {
    tx: SyncSender<Job>,
    workers: Vec<JoinHandle<()>>,
    outputs: Arc<Outputs>,
}

impl JudgeQueue {
    /// Starts `threads` workers over a queue of `capacity` jobs.
    pub fn start(
        threads: usize,
        capacity: usize,
        outputs: Arc<Outputs>,
    ) -> std::io::Result<JudgeQueue> {
        let (tx, rx) = sync_channel::<Job>(capacity.max(1));
        let rx = Arc::new(Mutex::new(rx));
        let mut workers = Vec::new();
        for n in 0..threads.max(1) {
            let (rx, outputs) = (Arc::clone(&rx), Arc::clone(&outputs));
            let spawned = std::thread::Builder::new()
                .name(format!("toolscore-judge-{n}"))
                .spawn(move || work(&rx, &outputs));
            match spawned {
                Ok(h) => workers.push(h),
                Err(e) if workers.is_empty() => return Err(e),
                Err(e) => warn!(error = %e, "Cannot start another judge thread."),
            }
        }
        Ok(JudgeQueue {
            tx,
            workers,
            outputs,
        })
    }

    /// Queues `job`, waiting for room while the queue is full.
    pub fn submit(&self, job: Job) {
        if let Err(failed) = self.tx.send(job) {
            // Every worker is gone (each one panicked): score it here.
            warn!("No judge thread left: scoring this batch on the scoring thread.");
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(failed.0)) {
                Ok(batch) => self.outputs.record(&batch),
                Err(_) => error!("Scoring panicked; this batch is lost."),
            }
        }
    }

    /// Runs every queued job, then stops the workers.
    pub fn finish(self) {
        drop(self.tx);
        for w in self.workers {
            if w.join().is_err() {
                error!("A judge thread panicked.");
            }
        }
    }
}

fn work(rx: &Mutex<Receiver<Job>>, outputs: &Outputs) {
    loop {
        let next = rx.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(job) = next else {
            return;
        };
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)) {
            Ok(batch) => outputs.record(&batch),
            Err(_) => error!("Judged scoring panicked; this batch is lost."),
        }
    }
}
