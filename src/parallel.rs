//! Ordered parallel maps: items are mapped on a few worker threads and their
//! results consumed on the calling thread in submission order, so output
//! stays deterministic whatever the timing. Replay's per-trace stage
//! ([`ordered_map`]), the streaming reader's decoders
//! ([`ordered_map_ahead`]) and batches of traces or sessions
//! ([`in_parallel`]) all run on the same workers.
//!
//! A panic in `map` is caught on its worker and raised on the calling thread
//! as soon as it comes back; every channel the workers and a producer wait
//! on is dropped on the way out, so they stop, and the panic resumes once
//! they have (that is `std::thread::scope`'s join). A panic never leaves a
//! thread waiting for a result that will not come.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, Scope};

/// Maps every item `produce` submits with `map` on `threads` workers and
/// hands the results to `consume` in submission order, on this thread
/// (`produce` runs here too, and results are consumed while it submits).
/// At most two items per worker are in flight (queued, mapping, or mapped
/// and waiting for their turn), so memory stays bounded when `consume` or
/// the workers are slower than `produce`. A panic in `map` is raised here.
pub fn ordered_map<T: Send, R: Send>(
    threads: usize,
    map: impl Fn(T) -> R + Sync,
    produce: impl FnOnce(&mut dyn FnMut(T)),
    mut consume: impl FnMut(R),
) {
    let threads = threads.max(1);
    let cap = 2 * threads as u64;
    thread::scope(|s| {
        // The channels live in this closure, so a panic here drops them and
        // the workers stop instead of waiting forever.
        let (jobs, mut order) = start_workers(s, threads, &map);
        let mut sent = 0u64;
        produce(&mut |item| {
            while sent - order.next >= cap {
                if !order.take_one(&mut consume) {
                    break;
                }
            }
            if jobs.send((sent, item)).is_err() {
                return;
            }
            sent += 1;
            order.take_ready(&mut consume);
        });
        drop(jobs);
        while order.take_one(&mut consume) {}
    });
}

/// [`ordered_map`] with `produce` on a thread of its own, so producing (say,
/// reading a file) goes on while this thread consumes. `produce`'s submit
/// returns `false` once nothing is consumed any more (stop producing). At
/// most two items per worker are in flight. A panic in `map`, `produce` or
/// `consume` is raised here once every thread has stopped.
pub fn ordered_map_ahead<T: Send, R: Send>(
    threads: usize,
    map: impl Fn(T) -> R + Sync,
    produce: impl FnOnce(&mut dyn FnMut(T) -> bool) + Send,
    mut consume: impl FnMut(R),
) {
    let threads = threads.max(1);
    let cap = 2 * threads;
    thread::scope(|s| {
        let (jobs, mut order) = start_workers(s, threads, &map);
        // One token per item in flight: the producer takes one to submit,
        // and it comes back once the item's result is consumed. Dropping the
        // sender (on a panic here) stops a producer waiting for a token.
        let (tokens, token_rx) = sync_channel::<()>(cap);
        for _ in 0..cap {
            let _ = tokens.send(());
        }
        let producer = s.spawn(move || {
            let mut seq = 0u64;
            produce(&mut |item| {
                if token_rx.recv().is_err() || jobs.send((seq, item)).is_err() {
                    return false;
                }
                seq += 1;
                true
            });
        });
        let mut hand_out = |r| {
            consume(r);
            let _ = tokens.send(());
        };
        while order.take_one(&mut hand_out) {}
        // The producer has stopped (its job sender is gone, so the workers
        // are); joined here, its panic is raised as it was, not as the
        // scope's "a scoped thread panicked".
        if let Err(panic) = producer.join() {
            resume_unwind(panic);
        }
    });
}

/// `f` over `items` on up to `threads` workers ([`ordered_map`]), results
/// in input order (so reports do not depend on timing). One thread or one
/// item: no spawning.
pub fn in_parallel<T: Send, R: Send>(
    items: Vec<T>,
    threads: usize,
    f: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    if threads <= 1 || items.len() <= 1 {
        return items.into_iter().map(f).collect();
    }
    let mut out = Vec::with_capacity(items.len());
    ordered_map(
        threads.min(items.len()),
        f,
        |submit| items.into_iter().for_each(submit),
        |r| out.push(r),
    );
    out
}

/// A job: its sequence number and item.
type Job<T> = (u64, T);
/// A mapped job, or the panic of its `map`.
type Done<R> = (u64, thread::Result<R>);

/// Starts `threads` workers mapping jobs with `map` until the job sender is
/// dropped or the results' receiver is. The job queue holds two jobs per
/// worker: the in-flight cap of the callers, so submitting under the cap
/// never blocks.
fn start_workers<'scope, T: Send + 'scope, R: Send + 'scope>(
    s: &'scope Scope<'scope, '_>,
    threads: usize,
    map: &'scope (impl Fn(T) -> R + Sync),
) -> (SyncSender<Job<T>>, InOrder<R>) {
    let (job_tx, job_rx) = sync_channel::<Job<T>>(2 * threads);
    let job_rx = Arc::new(Mutex::new(job_rx));
    let (res_tx, res_rx) = channel::<Done<R>>();
    for _ in 0..threads {
        let (job_rx, res_tx) = (Arc::clone(&job_rx), res_tx.clone());
        s.spawn(move || loop {
            let job = job_rx.lock().unwrap_or_else(PoisonError::into_inner).recv();
            let Ok((seq, item)) = job else { break };
            let result = catch_unwind(AssertUnwindSafe(|| map(item)));
            if res_tx.send((seq, result)).is_err() {
                break;
            }
        });
    }
    let order = InOrder {
        results: res_rx,
        waiting: BTreeMap::new(),
        next: 0,
    };
    (job_tx, order)
}

/// The results' receiving end: results that came back early are held
/// until their turn; a panic is raised as soon as it comes back.
struct InOrder<R> {
    results: Receiver<Done<R>>,
    waiting: BTreeMap<u64, R>,
    /// The next sequence number to consume (all before it are).
    next: u64,
}

impl<R> InOrder<R> {
    fn put(&mut self, (seq, result): Done<R>, consume: &mut impl FnMut(R)) {
        match result {
            Ok(r) => {
                self.waiting.insert(seq, r);
            }
            Err(panic) => resume_unwind(panic),
        }
        while let Some(r) = self.waiting.remove(&self.next) {
            self.next += 1;
            consume(r);
        }
    }

    /// Waits for one result; false once every worker is gone.
    fn take_one(&mut self, consume: &mut impl FnMut(R)) -> bool {
        match self.results.recv() {
            Ok(done) => {
                self.put(done, consume);
                true
            }
            Err(_) => false,
        }
    }

    /// Takes the results already back, without waiting.
    fn take_ready(&mut self, consume: &mut impl FnMut(R)) {
        while let Ok(done) = self.results.try_recv() {
            self.put(done, consume);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::RecvTimeoutError;
    use std::time::Duration;

    #[test]
    fn results_come_in_submission_order() {
        let mut out = Vec::new();
        ordered_map(
            3,
            |i: u64| {
                // Earlier items take longer, so results come back out of order.
                let work = (50 - i % 50) * 2_000;
                std::hint::black_box((0..work).fold(0u64, |a, x| a.wrapping_add(x)));
                i * 2
            },
            |submit| (0..500).for_each(submit),
            |r| out.push(r),
        );
        assert_eq!(out, (0..500).map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn ahead_results_come_in_submission_order_and_stop_is_heard() {
        let mut out = Vec::new();
        ordered_map_ahead(
            3,
            |i: u64| {
                let work = (50 - i % 50) * 2_000;
                std::hint::black_box((0..work).fold(0u64, |a, x| a.wrapping_add(x)));
                i * 2
            },
            |submit| {
                for i in 0..500 {
                    assert!(submit(i), "the consumer is still there");
                }
            },
            |r| out.push(r),
        );
        assert_eq!(out, (0..500).map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn in_parallel_keeps_input_order() {
        let out = in_parallel((0..100u32).collect(), 4, |i| i + 1);
        assert_eq!(out, (1..=100).collect::<Vec<_>>());
        assert_eq!(in_parallel(vec![7u8], 4, |i| i), [7]);
        assert!(in_parallel(Vec::<u8>::new(), 4, |i| i).is_empty());
    }

    #[test]
    fn nothing_submitted_is_fine() {
        let mut n = 0;
        ordered_map(2, |i: u8| i, |_| {}, |_| n += 1);
        ordered_map_ahead(2, |i: u8| i, |_| {}, |_| n += 1);
        assert_eq!(n, 0);
    }

    /// Runs `call` on a thread and waits (30 s at most) for it to end;
    /// returns its panic message, failing if it did not panic or hangs.
    fn panic_message_of(call: impl FnOnce() + Send + 'static) -> String {
        let (done_tx, done) = std::sync::mpsc::channel::<()>();
        let handle = thread::spawn(move || {
            // Dropped when the call returns or unwinds: that ends the wait.
            let _done = done_tx;
            call();
        });
        let ended = done.recv_timeout(Duration::from_secs(30));
        assert!(
            !matches!(ended, Err(RecvTimeoutError::Timeout)),
            "still running after 30 s: hung"
        );
        let panic = handle.join().expect_err("the call should panic");
        panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default()
    }

    /// A worker panics on item 7 of many (more than are ever in flight).
    fn boom(i: u32) -> u32 {
        assert!(i != 7, "boom in a worker");
        i
    }

    #[test]
    fn a_panic_in_a_worker_reaches_the_caller_of_each_helper() {
        let msg = panic_message_of(|| {
            ordered_map(2, boom, |submit| (0..1000).for_each(submit), |_| {});
        });
        assert_eq!(msg, "boom in a worker");
        let msg = panic_message_of(|| {
            ordered_map_ahead(
                2,
                boom,
                |submit| {
                    for i in 0..1000 {
                        if !submit(i) {
                            return;
                        }
                    }
                },
                |_| {},
            );
        });
        assert_eq!(msg, "boom in a worker");
        let msg = panic_message_of(|| {
            in_parallel((0..1000).collect(), 3, boom);
        });
        assert_eq!(msg, "boom in a worker");
    }

    #[test]
    fn a_panic_in_the_producer_or_consumer_reaches_the_caller() {
        let msg = panic_message_of(|| {
            ordered_map_ahead(
                2,
                |i: u32| i,
                |submit| {
                    for i in 0..1000 {
                        assert!(i != 50, "boom in the producer");
                        submit(i);
                    }
                },
                |_| {},
            );
        });
        assert_eq!(msg, "boom in the producer");
        let msg = panic_message_of(|| {
            ordered_map_ahead(
                2,
                |i: u32| i,
                |submit| {
                    for i in 0..1000 {
                        if !submit(i) {
                            return;
                        }
                    }
                },
                |r| assert!(r != 5, "boom in the consumer"),
            );
        });
        assert_eq!(msg, "boom in the consumer");
    }
}
