//! The receiver's writer thread: the one connection that writes, fed by a bounded queue.
//!
//! Owns group commit and acknowledgement. Requests put a [`Job`] on the queue and wait for
//! its answer; the thread takes everything queued (up to [`MAX_BATCH`]), writes it in one
//! [`Session::write`] transaction, and only then answers each job: an acknowledged position
//! is committed, so nothing acknowledged is lost whatever happens to the process next. While
//! it commits, new jobs queue up and become the next batch: the batch grows with the load
//! and a lone report waits for one commit only. Every [`Options::tick`] (and when the
//! receiver stops) every vehicle is republished at the clock's "now". When the queue's
//! senders are gone it writes what is left, republishes, and ends.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use crate::ingest::devices::Devices;
use crate::ingest::session::{self, Flow, Outcome, Position, Session, Start, Unit};
use crate::plumbing::clock::Clock;
use crate::store::{Store, StoreError};

/// Positions per transaction at most.
pub const MAX_BATCH: usize = 2_000;

/// What a request gets back.
pub type Answer = Result<Outcome, String>;

/// One position waiting to be written, and where its answer goes.
pub struct Job {
    pub position: Position,
    pub reply: tokio::sync::oneshot::Sender<Answer>,
}

#[derive(Clone)]
pub struct Options {
    /// How often every vehicle is republished at "now".
    pub tick: Duration,
}

/// Runs the writer until the queue is closed and drained. `ready` is told once the first
/// session has started (the detections are current and every engine is loaded), or why it
/// could not.
pub fn run(
    store: &Store,
    clock: &Clock,
    jobs: &Receiver<Job>,
    devices: &Arc<RwLock<Devices>>,
    options: &Options,
    ready: std::sync::mpsc::Sender<Result<(), String>>,
) -> Result<(), StoreError> {
    let mut pending: Vec<Job> = Vec::new();
    let mut ready = Some(ready);
    let mut failures = 0u32;
    loop {
        let outcome = session::run(store, clock, |session| {
            if let Some(ready) = ready.take() {
                report_start(&session.start, store.path());
                let _ = ready.send(Ok(()));
            }
            serve(session, jobs, devices, options, &mut pending)
        });
        match outcome {
            Ok(()) => return Ok(()),
            Err(e) => {
                if let Some(ready) = ready.take() {
                    let _ = ready.send(Err(e.to_string()));
                    return Err(e);
                }
                crate::log_error!("no se pudo escribir en la base: {e}");
                for job in pending.drain(..) {
                    let _ = job.reply.send(Err(e.to_string()));
                }
                failures += 1;
                // A full disk or a lock held elsewhere: wait a little, then start over.
                std::thread::sleep(Duration::from_millis(200 * u64::from(failures.min(10))));
            }
        }
    }
}

fn report_start(start: &Start, db: &str) {
    match start {
        Start::Current => {}
        Start::Behind(ids) => crate::log_info!(
            "{} unidades tenían posiciones sin analizar en {db}: analizadas",
            ids.len()
        ),
        Start::Redone(why) => {
            crate::log_info!("las detecciones de {db} no servían ({why}): se rehicieron todas")
        }
    }
}

/// One session's loop: batches until the queue closes, ticks between them.
fn serve(
    session: &mut Session<'_>,
    jobs: &Receiver<Job>,
    devices: &Arc<RwLock<Devices>>,
    options: &Options,
    pending: &mut Vec<Job>,
) -> Result<Flow<()>, StoreError> {
    let mut next_tick = Instant::now() + options.tick;
    let mut closed = false;
    let mut stats = Stats::default();
    loop {
        if pending.is_empty() && !closed {
            let wait = next_tick.saturating_duration_since(Instant::now());
            match jobs.recv_timeout(wait) {
                Ok(job) => pending.push(job),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => closed = true,
            }
        }
        while pending.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(job) => pending.push(job),
                Err(_) => break,
            }
        }
        if !pending.is_empty() {
            let positions: Vec<Position> = pending.iter().map(|j| j.position.clone()).collect();
            let started = Instant::now();
            match session.write(&positions) {
                Ok(Flow::Done(outcomes)) => {
                    answer(pending, outcomes, devices);
                    stats.commit(positions.len(), started.elapsed());
                }
                Ok(Flow::Resync) => return Ok(Flow::Resync),
                Err(e) => return Err(e),
            }
            continue;
        }
        if closed || Instant::now() >= next_tick {
            if let Flow::Resync = session.publish_all()? {
                return Ok(Flow::Resync);
            }
            next_tick = Instant::now() + options.tick;
        }
        if closed {
            return Ok(Flow::Done(()));
        }
    }
}

/// Commits and their durations, logged (debug) every ten seconds.
#[derive(Default)]
struct Stats {
    since: Option<Instant>,
    commits: u32,
    positions: usize,
    slowest: Duration,
    total: Duration,
}

impl Stats {
    fn commit(&mut self, positions: usize, took: Duration) {
        let since = *self.since.get_or_insert_with(Instant::now);
        self.commits += 1;
        self.positions += positions;
        self.slowest = self.slowest.max(took);
        self.total += took;
        if since.elapsed() >= Duration::from_secs(10) {
            crate::log_debug!(
                "escritor: {} transacciones, {} posiciones ({:.0} por transacción), {:.1} ms de media, {:.1} ms la más lenta",
                self.commits,
                self.positions,
                self.positions as f64 / f64::from(self.commits),
                self.total.as_secs_f64() * 1e3 / f64::from(self.commits),
                self.slowest.as_secs_f64() * 1e3
            );
            *self = Stats::default();
        }
    }
}

/// Answers a committed batch; units it registered join the lookup.
fn answer(pending: &mut Vec<Job>, outcomes: Vec<Outcome>, devices: &Arc<RwLock<Devices>>) {
    for (job, outcome) in pending.drain(..).zip(outcomes) {
        if let Unit::Register(plate) = &job.position.unit {
            let id = match outcome {
                Outcome::Stored(id) | Outcome::Duplicate(id) => id,
            };
            let mut lookup = devices
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if lookup.find(plate) != Some(id) {
                crate::log_info!("unidad nueva registrada: {plate} (id {id})");
                lookup.add(plate, id);
            }
        }
        let _ = job.reply.send(Ok(outcome));
    }
}
