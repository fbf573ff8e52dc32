//! The receiver's writer thread: the one connection that writes, fed by a bounded queue.
//!
//! Owns group commit, acknowledgement and when analysis runs. Requests put a [`Job`] on the
//! queue and wait for its answer; the thread takes everything queued (up to [`MAX_BATCH`]),
//! writes the positions in one [`Session::write`] transaction, and only then answers each
//! job: an acknowledged position is committed (durable across a crash of the process: WAL,
//! src/store/live.rs), so nothing acknowledged is lost whatever happens to the process
//! next — Traccar's meaning of its answer. While it commits, new jobs queue up and become
//! the next batch. The analysis of what was written is not on that path: a vehicle is
//! analysed [`ANALYSIS_DELAY`] after its first unanalysed position (once for all it got
//! meanwhile), in slices of [`ANALYSIS_SLICE`] ([`Session::analyse`]) between batches, so
//! a batch waits at most one slice and a flood cannot starve the analysis; meanwhile
//! readers see those units' detections as behind. Every [`Options::tick`] every vehicle is
//! republished at the clock's "now", in the same slices. When the queue's senders are gone
//! it writes what is left, analyses and republishes everything, and ends.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use crate::ingest::devices::Devices;
use crate::ingest::session::{self, Flow, Outcome, Position, Session, Start, Unit};
use crate::plumbing::clock::Clock;
use crate::store::{Store, StoreError};

/// Positions per transaction at most.
pub const MAX_BATCH: usize = 2_000;
/// Time one analysis transaction may take before it commits and lets positions in.
pub const ANALYSIS_SLICE: Duration = Duration::from_millis(4);
/// How long a vehicle's first unanalysed position waits before its analysis: what it
/// receives meanwhile is analysed in the same pass.
pub const ANALYSIS_DELAY: Duration = Duration::from_millis(250);

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

/// One session's loop until the queue closes: batches of positions written and answered;
/// between them, analysis in slices of [`ANALYSIS_SLICE`] once it is due; every tick, a
/// republishing.
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
        let due = session.work_due(ANALYSIS_DELAY);
        if pending.is_empty() && !closed {
            let until = due.map_or(next_tick, |d| d.min(next_tick));
            match jobs.recv_timeout(until.saturating_duration_since(Instant::now())) {
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
            let Flow::Done(outcomes) = session.write(&positions)? else {
                return Ok(Flow::Resync);
            };
            answer(pending, outcomes, devices);
            stats.commit(positions.len(), started.elapsed(), session.phases);
        }
        if closed {
            return session.publish_all();
        }
        if due.is_some_and(|d| Instant::now() >= d) {
            let Flow::Done(_) = session.analyse(ANALYSIS_SLICE, ANALYSIS_DELAY)? else {
                return Ok(Flow::Resync);
            };
            stats.analysis(session.phases.analyse);
        } else if Instant::now() >= next_tick {
            session.republish();
            next_tick = Instant::now() + options.tick;
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
    phases: session::Phases,
    analyses: u32,
    slowest_analysis: Duration,
}

impl Stats {
    fn analysis(&mut self, took: Duration) {
        self.analyses += 1;
        self.phases.analyse += took;
        self.slowest_analysis = self.slowest_analysis.max(took);
    }

    fn commit(&mut self, positions: usize, took: Duration, phases: session::Phases) {
        let since = *self.since.get_or_insert_with(Instant::now);
        self.commits += 1;
        self.positions += positions;
        self.slowest = self.slowest.max(took);
        self.total += took;
        self.phases.insert += phases.insert;
        self.phases.commit += phases.commit;
        if since.elapsed() >= Duration::from_secs(10) {
            let ms = |d: Duration, n: u32| d.as_secs_f64() * 1e3 / f64::from(n.max(1));
            crate::log_debug!(
                "escritor: {} transacciones de posiciones, {} posiciones ({:.0} por transacción), {:.1} ms de media (inserción {:.1}, confirmación {:.1}), {:.1} ms la más lenta; {} de análisis, {:.1} ms de media, {:.1} ms la más lenta",
                self.commits,
                self.positions,
                self.positions as f64 / f64::from(self.commits),
                ms(self.total, self.commits),
                ms(self.phases.insert, self.commits),
                ms(self.phases.commit, self.commits),
                ms(self.slowest, 1),
                self.analyses,
                ms(self.phases.analyse, self.analyses),
                ms(self.slowest_analysis, 1),
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
