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
use crate::ingest::waits::{Activity, Timeline, Waits};
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
    /// When it was queued: its wait inside the writer is measured from here (debug).
    pub queued: Instant,
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
    let mut stats = Stats::new();
    loop {
        let due = session.work_due(ANALYSIS_DELAY);
        if pending.is_empty() && !closed {
            let until = due.map_or(next_tick, |d| d.min(next_tick));
            let idle = Instant::now();
            match jobs.recv_timeout(until.saturating_duration_since(idle)) {
                Ok(job) => pending.push(job),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => closed = true,
            }
            // A job that was already there is no idle time worth remembering.
            let waited = Instant::now();
            if waited.duration_since(idle) >= Duration::from_micros(50) {
                stats.timeline.record(Activity::Idle, idle, waited);
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
            let probe = Probe::start(stats.detailed);
            let Flow::Done(outcomes) = session.write(&positions)? else {
                return Ok(Flow::Resync);
            };
            let took = probe.finish();
            stats
                .timeline
                .record(Activity::Positions, took.started, took.ended);
            answer(pending, outcomes, devices, |queued, answered| {
                stats.waits.add(answered.saturating_duration_since(queued));
                stats.timeline.wait(queued, took.started, answered);
            });
            stats.commit(positions.len(), took, session.phases);
            let probe = Probe::start(stats.detailed);
            if session.restart_log()? {
                let took = probe.finish();
                stats
                    .timeline
                    .record(Activity::Log, took.started, took.ended);
                stats.run_restarts.add(&took);
            }
        }
        if closed {
            stats.log_run();
            return session.publish_all();
        }
        if due.is_some_and(|d| Instant::now() >= d) {
            let probe = Probe::start(stats.detailed);
            let Flow::Done(_) = session.analyse(ANALYSIS_SLICE, ANALYSIS_DELAY)? else {
                return Ok(Flow::Resync);
            };
            let took = probe.finish();
            stats
                .timeline
                .record(Activity::Analysis, took.started, took.ended);
            stats.analysis(took);
        } else if Instant::now() >= next_tick {
            session.republish();
            next_tick = Instant::now() + options.tick;
        }
    }
}

/// A transaction counts as slow from this long: its time is split (debug level).
const SLOW: Duration = Duration::from_millis(10);
/// Upper bounds of the duration buckets, milliseconds (the last bucket is everything above).
const BUCKETS_MS: [u64; 7] = [1, 2, 5, 10, 20, 50, 100];

/// How long one piece of the writer's work took, and, when measured, where the thread's time
/// went meanwhile.
struct Took {
    started: Instant,
    ended: Instant,
    wall: Duration,
    /// On a CPU and waiting for one (`plumbing::schedstat`); the rest of `wall` the thread
    /// was blocked (I/O, locks, page faults on a busy disk).
    sched: Option<(Duration, Duration)>,
}

/// The start of a timed piece of work.
struct Probe {
    started: Instant,
    sched: Option<crate::plumbing::schedstat::ThreadTimes>,
}

impl Probe {
    fn start(detailed: bool) -> Probe {
        Probe {
            sched: detailed.then(crate::plumbing::schedstat::current).flatten(),
            started: Instant::now(),
        }
    }

    fn finish(self) -> Took {
        let ended = Instant::now();
        let wall = ended.duration_since(self.started);
        let sched = self
            .sched
            .zip(crate::plumbing::schedstat::current())
            .map(|(a, b)| {
                (
                    Duration::from_nanos(b.on_cpu_ns.saturating_sub(a.on_cpu_ns)),
                    Duration::from_nanos(b.waiting_ns.saturating_sub(a.waiting_ns)),
                )
            });
        Took {
            started: self.started,
            ended,
            wall,
            sched,
        }
    }
}

/// Durations of one kind of transaction: by bucket, and the slow ones' time split.
#[derive(Default, Clone, Copy)]
struct Durations {
    buckets: [u32; BUCKETS_MS.len() + 1],
    slow: u32,
    slow_wall: Duration,
    slow_cpu: Duration,
    slow_waiting: Duration,
    slowest: Duration,
}

impl Durations {
    fn add(&mut self, took: &Took) {
        let ms = took.wall.as_millis();
        let bucket = BUCKETS_MS
            .iter()
            .position(|b| ms < u128::from(*b))
            .unwrap_or(BUCKETS_MS.len());
        self.buckets[bucket] += 1;
        self.slowest = self.slowest.max(took.wall);
        if took.wall >= SLOW
            && let Some((cpu, waiting)) = took.sched
        {
            self.slow += 1;
            self.slow_wall += took.wall;
            self.slow_cpu += cpu;
            self.slow_waiting += waiting;
        }
    }

    /// "<1 ms: 2400, 1–2: 30, …; the 12 of 10 ms or more: 40 % on a CPU, 35 % waiting for
    /// one, 25 % blocked".
    fn text(&self) -> String {
        let mut parts = Vec::new();
        let mut low = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            let label = match BUCKETS_MS.get(i) {
                Some(high) if low == 0 => format!("<{high} ms"),
                Some(high) => format!("{low}–{high}"),
                None => format!("≥{low}"),
            };
            if *n > 0 {
                parts.push(format!("{label}: {n}"));
            }
            low = BUCKETS_MS.get(i).copied().unwrap_or(low);
        }
        let mut text = parts.join(", ");
        text.push_str(&format!(
            "; la más lenta {:.1} ms",
            self.slowest.as_secs_f64() * 1e3
        ));
        if self.slow > 0 {
            let share = |d: Duration| 100.0 * d.as_secs_f64() / self.slow_wall.as_secs_f64();
            let blocked = self
                .slow_wall
                .saturating_sub(self.slow_cpu + self.slow_waiting);
            text.push_str(&format!(
                "; las {} de {} ms o más: {:.0} % en CPU, {:.0} % esperando CPU, {:.0} % bloqueadas",
                self.slow,
                SLOW.as_millis(),
                share(self.slow_cpu),
                share(self.slow_waiting),
                share(blocked)
            ));
        }
        text
    }
}

/// Commits and their durations, logged (debug) every ten seconds, and over the whole run
/// when the queue closes.
struct Stats {
    /// Debug logging is on: slow transactions' time is split too.
    detailed: bool,
    since: Option<Instant>,
    commits: u32,
    positions: usize,
    slowest: Duration,
    total: Duration,
    phases: session::Phases,
    analyses: u32,
    slowest_analysis: Duration,
    run_positions: Durations,
    run_analyses: Durations,
    /// The write-ahead log's restarts (`Session::restart_log`).
    run_restarts: Durations,
    /// Every position's wait from its job being queued to its answer being sent.
    waits: Waits,
    /// What the thread did, and where the slow waits' time went.
    timeline: Timeline,
}

/// A position's wait counts as slow, and is split between the writer's activities, from
/// this long.
const SLOW_WAIT: Duration = Duration::from_millis(20);

impl Stats {
    fn new() -> Stats {
        Stats {
            detailed: crate::plumbing::log::enabled(crate::plumbing::log::Level::Debug),
            since: None,
            commits: 0,
            positions: 0,
            slowest: Duration::ZERO,
            total: Duration::ZERO,
            phases: session::Phases::default(),
            analyses: 0,
            slowest_analysis: Duration::ZERO,
            run_positions: Durations::default(),
            run_analyses: Durations::default(),
            run_restarts: Durations::default(),
            waits: Waits::new(),
            timeline: Timeline::new(SLOW_WAIT),
        }
    }

    fn analysis(&mut self, took: Took) {
        self.analyses += 1;
        self.phases.analyse += took.wall;
        self.slowest_analysis = self.slowest_analysis.max(took.wall);
        self.run_analyses.add(&took);
    }

    fn commit(&mut self, positions: usize, took: Took, phases: session::Phases) {
        self.run_positions.add(&took);
        if took.wall >= SLOW && self.detailed {
            self.log_slow(positions, &took, phases);
        }
        let since = *self.since.get_or_insert_with(Instant::now);
        self.commits += 1;
        self.positions += positions;
        self.slowest = self.slowest.max(took.wall);
        self.total += took.wall;
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
            self.since = None;
            self.commits = 0;
            self.positions = 0;
            self.slowest = Duration::ZERO;
            self.total = Duration::ZERO;
            self.phases = session::Phases::default();
            self.analyses = 0;
            self.slowest_analysis = Duration::ZERO;
        }
    }

    /// One slow positions transaction: what it wrote, where its time went, what the thread
    /// did just before it (debug).
    fn log_slow(&self, positions: usize, took: &Took, phases: session::Phases) {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let split = took.sched.map_or(String::new(), |(cpu, waiting)| {
            format!(
                "; en CPU {:.1}, esperando CPU {:.1}, bloqueada {:.1}",
                ms(cpu),
                ms(waiting),
                ms(took.wall.saturating_sub(cpu + waiting))
            )
        });
        let before = match self.timeline.previous() {
            Some((Activity::Analysis, d)) => {
                format!("tras una porción de análisis de {:.1} ms", ms(d))
            }
            Some((Activity::Positions, d)) => format!("tras otra de posiciones de {:.1} ms", ms(d)),
            Some((Activity::Idle, d)) => format!("tras {:.1} ms sin trabajo", ms(d)),
            Some((Activity::Log, d)) => {
                format!("tras reiniciar el registro WAL en {:.1} ms", ms(d))
            }
            None => "la primera".to_owned(),
        };
        crate::log_debug!(
            "escritor: transacción de posiciones lenta: {positions} posiciones en {:.1} ms (inserción {:.1}, confirmación {:.1}{split}), {before}",
            ms(took.wall),
            ms(phases.insert),
            ms(phases.commit),
        );
    }

    /// The whole run's durations by bucket (debug).
    fn log_run(&self) {
        crate::log_debug!(
            "escritor, toda la sesión: transacciones de posiciones {}; porciones de análisis {}; reinicios del registro WAL {}",
            self.run_positions.text(),
            self.run_analyses.text(),
            self.run_restarts.text()
        );
        crate::log_debug!(
            "escritor, esperas de cola a respuesta: {}; {}",
            self.waits.text(),
            self.timeline.text()
        );
    }
}

/// Answers a committed batch; units it registered join the lookup. `answered` is told each
/// job's queueing time and when its answer went.
fn answer(
    pending: &mut Vec<Job>,
    outcomes: Vec<Outcome>,
    devices: &Arc<RwLock<Devices>>,
    mut answered: impl FnMut(Instant, Instant),
) {
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
        answered(job.queued, Instant::now());
    }
}
