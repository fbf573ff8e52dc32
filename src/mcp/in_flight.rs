//! The in-flight table: the one place that decides, under one lock, whether a call may start
//! and whether anything may still be written for it.
//!
//! Owns admission (the count and byte caps, a busy id, how long a call waits for room before
//! it is refused), cancellation by the client, expiry by the watchdog, progress only while a
//! call is live, the end of a call (its answer written unless it was cancelled), and the
//! shutdown's drain and abandon. Every write it allows is handed to the caller's `send` while
//! the lock is held, so a cancellation is either before an answer (none is written) or after
//! it (too late, it is already queued), never in between. It knows no threads, transport or
//! JSON: the server hands it the lines and the way to send them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::{Duration, Instant};

/// How much may be in flight at once, and how long a call waits for room.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// Calls in flight.
    pub calls: usize,
    /// Request bytes in flight (each call counts its line's length). A single call is always
    /// admitted when nothing else runs, whatever its size.
    pub bytes: usize,
    /// How long a call waits for room (the reader blocks: back-pressure) before it is refused.
    pub wait: Duration,
}

impl Limits {
    fn full(&self, calls: &HashMap<String, Entry>, size: usize) -> bool {
        calls.len() >= self.calls || (!calls.is_empty() && queued_bytes(calls) + size > self.bytes)
    }
}

fn queued_bytes(calls: &HashMap<String, Entry>) -> usize {
    calls.values().map(|e| e.bytes).sum()
}

/// What [`InFlight::admit`] decided.
#[derive(Debug)]
pub(super) enum Admission {
    /// The call holds a slot; the flag is its cancellation, shared with the tool.
    Admitted(Arc<AtomicBool>),
    /// Refused, with the reason to tell the client.
    Refused(String),
    /// The session ended while the call waited: it is neither started nor answered.
    Stopped,
}

/// One call in progress.
struct Entry {
    /// Set by `notifications/cancelled` or the watchdog; the tool's answer is then dropped.
    cancelled: Arc<AtomicBool>,
    /// When the watchdog answers for it, with the line it sends.
    deadline: Option<(Instant, String)>,
    /// Length of its request line, for the byte budget.
    bytes: usize,
}

/// Calls in progress, keyed by the raw text of their request id. An entry stays until its
/// worker is done, even after a cancellation or a timeout: the id is still busy, and the
/// in-flight cap counts threads really working.
#[derive(Default)]
pub(super) struct InFlight {
    calls: Mutex<HashMap<String, Entry>>,
    changed: Condvar,
}

type Calls<'a> = MutexGuard<'a, HashMap<String, Entry>>;

impl InFlight {
    fn lock(&self) -> Calls<'_> {
        // A panicking tool never holds this lock, but stay usable even if something did.
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits up to `left` for a call to finish.
    fn wait<'a>(&'a self, calls: Calls<'a>, left: Duration) -> Calls<'a> {
        self.changed
            .wait_timeout(calls, left)
            .map(|(guard, _)| guard)
            .unwrap_or_else(|poisoned| poisoned.into_inner().0)
    }

    /// Decides whether the call `key` (a request line of `size` bytes) starts: waits up to
    /// `limits.wait` for room, then admits it with the watchdog deadline `deadline()` gives,
    /// or refuses it (its id is busy, or there is still no room). `stopping` ends the wait,
    /// and a call that waited through the end of the session is not started.
    pub(super) fn admit(
        &self,
        key: &str,
        size: usize,
        limits: Limits,
        stopping: &AtomicBool,
        deadline: impl FnOnce() -> Option<(Instant, String)>,
    ) -> Admission {
        let mut calls = self.lock();
        let until = Instant::now() + limits.wait;
        while limits.full(&calls, size) && !calls.contains_key(key) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || stopping.load(Ordering::SeqCst) {
                break;
            }
            calls = self.wait(calls, left);
        }
        if stopping.load(Ordering::SeqCst) {
            return Admission::Stopped;
        }
        if calls.contains_key(key) {
            return Admission::Refused(format!("ya hay una llamada en curso con el id {key}"));
        }
        if limits.full(&calls, size) {
            return Admission::Refused(format!(
                "servidor ocupado: {} llamadas en curso ({:.1} MB de solicitudes); \
                 reintente cuando terminen",
                calls.len(),
                queued_bytes(&calls) as f64 / 1e6
            ));
        }
        let cancelled = Arc::new(AtomicBool::new(false));
        calls.insert(
            key.to_owned(),
            Entry {
                cancelled: Arc::clone(&cancelled),
                deadline: deadline(),
                bytes: size,
            },
        );
        Admission::Admitted(cancelled)
    }

    /// The client cancelled `key`: nothing more is written for it. False when no such call
    /// is in flight.
    pub(super) fn cancel(&self, key: &str) -> bool {
        match self.lock().get(key) {
            Some(entry) => {
                entry.cancelled.store(true, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// The watchdog's round: each call past its deadline at `now` is marked cancelled and,
    /// unless it was cancelled already, its timeout line goes to `send` with its key. Once:
    /// the deadline is spent.
    pub(super) fn expire(&self, now: Instant, mut send: impl FnMut(&str, String)) {
        let mut calls = self.lock();
        for (key, entry) in calls.iter_mut() {
            let due = entry
                .deadline
                .as_ref()
                .is_some_and(|(deadline, _)| now >= *deadline);
            if !due {
                continue;
            }
            if let Some((_, line)) = entry.deadline.take()
                && !entry.cancelled.swap(true, Ordering::Relaxed)
            {
                send(key, line);
            }
        }
    }

    /// Runs `send` (a progress notification) only while `key` is in flight and not
    /// cancelled; returns whether it ran.
    pub(super) fn while_live(&self, key: &str, send: impl FnOnce()) -> bool {
        let calls = self.lock();
        let live = calls
            .get(key)
            .is_some_and(|entry| !entry.cancelled.load(Ordering::Relaxed));
        if live {
            send();
        }
        live
    }

    /// The call `key` is over: it leaves the table, and its `answer` (none when it never ran)
    /// goes to `send` unless it was cancelled. Wakes an admission waiting for room.
    pub(super) fn finish(&self, key: &str, answer: Option<String>, send: impl FnOnce(String)) {
        let mut calls = self.lock();
        let cancelled = calls
            .remove(key)
            .is_none_or(|entry| entry.cancelled.load(Ordering::Relaxed));
        if let Some(line) = answer
            && !cancelled
        {
            send(line);
        }
        self.changed.notify_all();
    }

    /// True when no call is in flight. Never waits: a worker may hold the lock while blocked
    /// on a full outbox, and the shutdown must not wait for it (false then).
    fn is_idle(&self) -> bool {
        match self.calls.try_lock() {
            Ok(calls) => calls.is_empty(),
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner().is_empty(),
            Err(TryLockError::WouldBlock) => false,
        }
    }

    /// The shutdown's wait for running calls: until none is in flight, `until` passes, or
    /// `give_up()` says nobody reads the answers any more. Polls, never waiting on the lock.
    pub(super) fn drain(&self, until: Instant, give_up: impl Fn() -> bool) {
        while !self.is_idle() && Instant::now() < until && !give_up() {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Marks every call still running as cancelled (nothing more is written for it); returns
    /// how many there were. Call only once the output accepts no more lines, so no holder of
    /// the lock can be blocked writing.
    pub(super) fn abandon(&self) -> usize {
        let calls = self.lock();
        for entry in calls.values() {
            entry.cancelled.store(true, Ordering::Relaxed);
        }
        calls.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOMY: Limits = Limits {
        calls: 2,
        bytes: 100,
        wait: Duration::ZERO,
    };

    fn admit(table: &InFlight, key: &str, size: usize, limits: Limits) -> Result<(), String> {
        match table.admit(key, size, limits, &AtomicBool::new(false), || None) {
            Admission::Admitted(_) => Ok(()),
            Admission::Refused(reason) => Err(reason),
            Admission::Stopped => Err("stopped".into()),
        }
    }

    /// The answers `finish` lets through.
    fn finish(table: &InFlight, key: &str, answer: &str) -> Vec<String> {
        let mut sent = Vec::new();
        table.finish(key, Some(answer.into()), |line| sent.push(line));
        sent
    }

    #[test]
    fn admission_counts_calls_bytes_and_busy_ids() {
        let table = InFlight::default();
        assert_eq!(admit(&table, "1", 60, ROOMY), Ok(()));
        assert_eq!(
            admit(&table, "1", 1, ROOMY),
            Err("ya hay una llamada en curso con el id 1".into())
        );
        let busy = admit(&table, "2", 41, ROOMY).unwrap_err();
        assert!(
            busy.starts_with("servidor ocupado: 1 llamadas en curso"),
            "{busy}"
        );
        assert_eq!(admit(&table, "2", 40, ROOMY), Ok(()));
        let busy = admit(&table, "3", 0, ROOMY).unwrap_err();
        assert!(
            busy.starts_with("servidor ocupado: 2 llamadas en curso"),
            "{busy}"
        );
        assert_eq!(finish(&table, "1", "a"), ["a"]);
        assert_eq!(finish(&table, "2", "b"), ["b"]);
        // Alone, a call larger than the byte budget still runs.
        assert_eq!(admit(&table, "4", 500, ROOMY), Ok(()));
    }

    #[test]
    fn a_waiting_call_takes_the_slot_a_finished_one_frees() {
        let table = Arc::new(InFlight::default());
        let patient = Limits {
            calls: 1,
            wait: Duration::from_secs(60),
            ..ROOMY
        };
        assert_eq!(admit(&table, "1", 1, patient), Ok(()));
        let finisher = Arc::clone(&table);
        let done = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            finish(&finisher, "1", "a")
        });
        assert_eq!(admit(&table, "2", 1, patient), Ok(()));
        assert_eq!(done.join().unwrap(), ["a"]);
    }

    #[test]
    fn a_call_waiting_at_the_end_of_the_session_is_not_started() {
        let table = InFlight::default();
        let stopping = AtomicBool::new(true);
        let admission = table.admit("1", 1, ROOMY, &stopping, || None);
        assert!(matches!(admission, Admission::Stopped), "{admission:?}");
        assert!(table.is_idle());
    }

    #[test]
    fn nothing_is_written_for_a_cancelled_call() {
        let table = InFlight::default();
        assert!(!table.cancel("1"), "no such call");
        admit(&table, "1", 1, ROOMY).unwrap();
        assert!(table.while_live("1", || {}));
        assert!(table.cancel("1"));
        assert!(!table.while_live("1", || panic!("progress after a cancellation")));
        assert!(finish(&table, "1", "late").is_empty());
        assert!(table.is_idle(), "the slot is free again");
    }

    #[test]
    fn the_watchdog_answers_once_and_the_late_answer_is_dropped() {
        let table = InFlight::default();
        let now = Instant::now();
        let limited = |key: &str, deadline: Instant| {
            let line = format!("timeout {key}");
            table.admit(key, 1, ROOMY, &AtomicBool::new(false), || {
                Some((deadline, line))
            })
        };
        let Admission::Admitted(cancelled) = limited("due", now) else {
            panic!("not admitted");
        };
        limited("later", now + Duration::from_secs(3600));
        let mut sent = Vec::new();
        table.expire(now, |key, line| sent.push(format!("{key}: {line}")));
        table.expire(now, |key, line| sent.push(format!("{key}: {line}")));
        assert_eq!(sent, ["due: timeout due"]);
        assert!(
            cancelled.load(Ordering::Relaxed),
            "the tool is told to stop"
        );
        assert!(finish(&table, "due", "late").is_empty());
        assert_eq!(finish(&table, "later", "on time"), ["on time"]);
    }

    /// Runs `drain` with a deadline an hour away and says whether it returned well before.
    fn drain_returns(table: &Arc<InFlight>, give_up: bool) -> bool {
        let (done, returned) = std::sync::mpsc::channel();
        let table = Arc::clone(table);
        std::thread::spawn(move || {
            table.drain(Instant::now() + Duration::from_secs(3600), move || give_up);
            let _ = done.send(());
        });
        // Generous: a liveness bound, not a performance claim.
        returned.recv_timeout(Duration::from_secs(120)).is_ok()
    }

    #[test]
    fn drain_ends_when_nobody_reads_or_nothing_runs_and_abandon_silences_the_rest() {
        let table = Arc::new(InFlight::default());
        admit(&table, "1", 1, ROOMY).unwrap();
        assert!(drain_returns(&table, true), "nobody reads: no wait");
        assert_eq!(table.abandon(), 1);
        assert!(finish(&table, "1", "after the end").is_empty());
        assert!(drain_returns(&table, false), "nothing runs: no wait");
    }
}
