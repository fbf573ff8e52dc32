//! The stdio server's queue of tool calls: a fixed set of worker threads, each call handed to
//! the worker that went idle last.
//!
//! Owns the hand-off only; what a worker does with a call is [`super::server`]'s. Why last-idle
//! first: a client that calls one tool after another (the common case: a chat asks, waits,
//! asks again) then keeps meeting the same thread, whose caches and allocator arena are warm,
//! while the other workers stay asleep and never grow an arena of their own. A shared
//! `Receiver` behind a mutex rotates calls through every worker instead, and the C allocator
//! keeps freed memory per thread: after a few hundred maps each worker held megabytes.
//! Calls queue in order of arrival when every worker is busy.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};

use crate::plumbing::mutex::lock;

/// Jobs of type `T` for `workers` threads, numbered `0..workers`.
pub(super) struct Pool<T> {
    state: Mutex<State<T>>,
    /// One per worker, so a hand-off wakes exactly the worker chosen.
    wake: Vec<Condvar>,
}

struct State<T> {
    queue: VecDeque<T>,
    /// Idle workers, the most recently idle last.
    idle: Vec<usize>,
    closed: bool,
}

/// The pool no longer takes jobs ([`Pool::close`] was called).
#[derive(Debug)]
pub(super) struct Closed;

impl<T> Pool<T> {
    pub(super) fn new(workers: usize) -> Pool<T> {
        Pool {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                idle: Vec::with_capacity(workers),
                closed: false,
            }),
            wake: (0..workers).map(|_| Condvar::new()).collect(),
        }
    }

    /// Queues `job` and wakes the worker that went idle last, if any is idle.
    pub(super) fn submit(&self, job: T) -> Result<(), Closed> {
        let mut state = lock(&self.state);
        if state.closed {
            return Err(Closed);
        }
        state.queue.push_back(job);
        if let Some(worker) = state.idle.pop() {
            self.wake[worker].notify_one();
        }
        Ok(())
    }

    /// Worker `worker`'s next job, waiting while there is none; `None` once the pool is closed
    /// and its queue empty.
    pub(super) fn next(&self, worker: usize) -> Option<T> {
        let wake = self.wake.get(worker)?;
        let mut state = lock(&self.state);
        loop {
            if let Some(job) = state.queue.pop_front() {
                // Woken spuriously with work queued for another: take it, and leave the idle
                // stack without this worker so it is not woken twice.
                state.idle.retain(|&w| w != worker);
                return Some(job);
            }
            if state.closed {
                return None;
            }
            if !state.idle.contains(&worker) {
                state.idle.push(worker);
            }
            state = wake
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Takes no more jobs; workers finish what is queued and their `next` returns `None`.
    pub(super) fn close(&self) {
        lock(&self.state).closed = true;
        for wake in &self.wake {
            wake.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Starts `workers` threads that report, for each job, which worker ran it.
    fn started(workers: usize) -> (Arc<Pool<u32>>, mpsc::Receiver<(u32, usize)>) {
        let pool = Arc::new(Pool::new(workers));
        let (ran, runs) = mpsc::channel();
        for worker in 0..workers {
            let pool = Arc::clone(&pool);
            let ran = ran.clone();
            std::thread::spawn(move || {
                while let Some(job) = pool.next(worker) {
                    ran.send((job, worker)).unwrap();
                }
            });
        }
        // Every worker idle before the first job, as in a server waiting for its client.
        all_idle(&pool, workers);
        (pool, runs)
    }

    /// Waits until `workers` workers are idle; fails after five seconds rather than hang.
    fn all_idle(pool: &Pool<u32>, workers: usize) {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while lock(&pool.state).idle.len() < workers {
            assert!(
                std::time::Instant::now() < deadline,
                "workers never went idle"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn calls_one_after_another_meet_the_same_worker() {
        let (pool, runs) = started(4);
        let mut who = Vec::new();
        for job in 0..20 {
            pool.submit(job).unwrap();
            let (done, worker) = runs.recv_timeout(Duration::from_secs(5)).unwrap();
            assert_eq!(done, job);
            who.push(worker);
            // The worker is idle again before the next call, as after an answer.
            all_idle(&pool, 4);
        }
        assert!(who.iter().all(|&w| w == who[0]), "workers used: {who:?}");
    }

    #[test]
    fn every_job_runs_once_and_close_ends_the_workers() {
        let (pool, runs) = started(3);
        for job in 0..500 {
            pool.submit(job).unwrap();
        }
        let mut done: Vec<u32> = (0..500)
            .map(|_| runs.recv_timeout(Duration::from_secs(5)).unwrap().0)
            .collect();
        done.sort_unstable();
        assert_eq!(done, (0..500).collect::<Vec<_>>());
        pool.close();
        assert!(pool.submit(1).is_err());
        // Every worker's sender dropped: the channel disconnects once all three returned.
        assert!(matches!(
            runs.recv_timeout(Duration::from_secs(5)),
            Err(mpsc::RecvTimeoutError::Disconnected)
        ));
    }

    #[test]
    fn busy_workers_leave_calls_queued_in_order() {
        let pool = Pool::new(1);
        for job in [7, 8, 9] {
            pool.submit(job).unwrap();
        }
        assert_eq!(
            [pool.next(0), pool.next(0), pool.next(0)],
            [Some(7), Some(8), Some(9)]
        );
        pool.close();
        assert_eq!(pool.next(0), None);
        assert_eq!(
            pool.next(5),
            None,
            "a worker number out of range gets nothing"
        );
    }
}
