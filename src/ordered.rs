//! An ordered parallel map: items submitted on one thread are mapped on a
//! few worker threads and their results consumed on the submitting thread
//! in submission order. Replay uses it for the per-trace stage (extraction,
//! scoring, report rows), so that work leaves the thread that assembles
//! while output stays deterministic.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, sync_channel, Receiver};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;

/// Maps every item `produce` submits with `map` on `threads` workers and
/// hands the results to `consume` in submission order, on this thread.
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
    let map = &map;
    thread::scope(|s| {
        // The channels live in this closure, so a panic here drops the
        // job sender and the workers stop instead of waiting forever.
        let (job_tx, job_rx) = sync_channel::<(u64, T)>(2 * threads);
        let job_rx = Arc::new(Mutex::new(job_rx));
        let (res_tx, res_rx) = channel::<(u64, thread::Result<R>)>();
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
        drop(res_tx);
        let mut order = InOrder {
            waiting: BTreeMap::new(),
            next: 0,
        };
        let mut sent = 0u64;
        produce(&mut |item| {
            while sent - order.next >= cap {
                if !order.take_one(&res_rx, &mut consume) {
                    break;
                }
            }
            if job_tx.send((sent, item)).is_err() {
                return;
            }
            sent += 1;
            while let Ok(done) = res_rx.try_recv() {
                order.put(done, &mut consume);
            }
        });
        drop(job_tx);
        while order.take_one(&res_rx, &mut consume) {}
    });
}

/// Results that came back early, held until their turn.
struct InOrder<R> {
    waiting: BTreeMap<u64, R>,
    next: u64,
}

impl<R> InOrder<R> {
    fn put(&mut self, (seq, result): (u64, thread::Result<R>), consume: &mut impl FnMut(R)) {
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
    fn take_one(
        &mut self,
        results: &Receiver<(u64, thread::Result<R>)>,
        consume: &mut impl FnMut(R),
    ) -> bool {
        match results.recv() {
            Ok(done) => {
                self.put(done, consume);
                true
            }
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_panic_in_map_reaches_the_caller() {
        let caught = catch_unwind(|| {
            ordered_map(
                2,
                |i: u32| {
                    assert!(i != 7, "boom");
                    i
                },
                |submit| (0..100).for_each(submit),
                |_| {},
            )
        });
        assert!(caught.is_err());
    }

    #[test]
    fn nothing_submitted_is_fine() {
        let mut n = 0;
        ordered_map(2, |i: u8| i, |_| {}, |_| n += 1);
        assert_eq!(n, 0);
    }
}
