//! `flota simular`: run a scenario and write the positions database and the truth log.
//!
//! Owns the I/O around the sans-IO simulator: loading the scenario, running units on worker
//! threads, writing their reports in unit order (so the output is byte-for-byte deterministic
//! however threads interleave), the progress bar, and replacing the previous files only when
//! both new ones are complete. Before anything is written it refuses a truth log that would
//! overwrite the database or another database ([`PathConflict`], a usage error). Ctrl-C (or
//! SIGTERM) stops it between units: the temporary files are removed, the previous ones are
//! left as they were, and it says so ([`Interrupted`], exit 128 + the signal).

use std::collections::VecDeque;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel, sync_channel};
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{Io, Settings};
use crate::cli::SimulateArgs;
use crate::engine::{self, Analysis, DetectionConfig};
use crate::evaluation::truth;
use crate::geometry::geofence::Geofence;
use crate::geometry::route::Route;
use crate::plumbing::clock::Clock;
use crate::plumbing::interrupt::Interrupt;
use crate::plumbing::output::Staged;
use crate::scenario::{self, Ahora, Source, World};
use crate::sim::{
    Report, Roads, RouteRoads, Simulation, Sink, TruthEvent, TruthHeader, Unhonoured,
};
use crate::store::encoding::{PositionRow, fixes_of_rows_into};
use crate::store::writer::BATCH_ROWS;
use crate::store::{Covered, Location, LocationError, Writer};

/// What to simulate and where to put it.
#[derive(Debug, Clone)]
pub struct Options {
    pub scenario: Source,
    pub ahora: Ahora,
    /// A SQLite file or a PostgreSQL database.
    pub db: Location,
    pub truth: PathBuf,
    pub seed: Option<u64>,
    pub progress: bool,
    /// Polled between units: a stop asked for leaves the previous files in place.
    pub interrupt: Interrupt,
    /// Also keep every unit's plate and reports (for `--emitir`).
    pub keep_reports: bool,
    /// Put the database in place (`--sin-base` leaves only the truth log).
    pub write_db: bool,
    /// Threads that simulate and analyse units (`None`: one per core). The files are the
    /// same whatever the number.
    pub workers: Option<usize>,
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct Summary {
    pub units: usize,
    pub days: usize,
    pub positions: u64,
    pub truth_events: u64,
    pub db_bytes: u64,
    pub truth_bytes: u64,
    pub elapsed: Duration,
    pub db: Location,
    pub truth: PathBuf,
    /// Every unit's plate and reports, when asked for.
    pub reports: Vec<(String, Vec<Report>)>,
}

impl Summary {
    /// One Spanish line for stderr.
    pub fn line(&self) -> String {
        format!(
            "{} unidades × {} días: {} posiciones, {} hechos de verdad → {} ({:.1} MB), {} ({:.1} MB) en {:.2} s",
            self.units,
            self.days,
            self.positions,
            self.truth_events,
            self.db,
            self.db_bytes as f64 / 1e6,
            self.truth.display(),
            self.truth_bytes as f64 / 1e6,
            self.elapsed.as_secs_f64()
        )
    }
}

/// A run stopped by a signal before its files were put in place: the temporary files are
/// gone and the previous files, if any, are as they were.
#[derive(Debug, thiserror::Error)]
#[error("simulación interrumpida{}: se borraron los archivos a medio escribir; {kept}", signal_name(*signal))]
pub struct Interrupted {
    pub signal: i32,
    /// What is still there, in words.
    pub kept: String,
}

impl Interrupted {
    fn new(signal: i32, options: &Options) -> Interrupted {
        let shown = |p: &Path| p.display().to_string();
        // A PostgreSQL build is one transaction: whatever was there stays, or nothing was.
        let db = options.db.as_path().is_none_or(Path::exists);
        let (db_shown, truth) = (options.db.to_string(), options.truth.exists());
        let kept = match (db, truth) {
            (true, true) => format!(
                "{} y {} quedan como estaban",
                db_shown,
                shown(&options.truth)
            ),
            (true, false) => format!("{db_shown} queda como estaba"),
            (false, true) => format!("{} queda como estaba", shown(&options.truth)),
            (false, false) => format!(
                "no había {} ni {} antes, y no se crearon",
                db_shown,
                shown(&options.truth)
            ),
        };
        Interrupted { signal, kept }
    }

    /// The shell's convention: 128 + the signal (130 for Ctrl-C).
    pub fn exit_code(&self) -> u8 {
        u8::try_from(128 + self.signal).unwrap_or(1)
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        2 => " (Ctrl-C)",
        15 => " (SIGTERM)",
        _ => "",
    }
}

/// `--salida` and `--verdad` that cannot both be written: a usage error, found before
/// anything is written.
#[derive(Debug, thiserror::Error)]
pub enum PathConflict {
    #[error(
        "--verdad {truth} es el mismo archivo que --salida {db}; el registro de verdad necesita su propio archivo (sin --verdad se escribe en {default})"
    )]
    Same {
        truth: String,
        db: String,
        default: String,
    },
    #[error(
        "--verdad {truth} es una base de datos SQLite, no un registro de verdad; no se sobrescribe: indique otro archivo"
    )]
    TruthIsDatabase { truth: String },
    #[error(
        "--salida {db} existe y no es una base de datos SQLite (¿un registro de verdad u otro archivo?); no se sobrescribe: indique otro archivo o bórrelo antes"
    )]
    DbIsNotDatabase { db: String },
}

/// Refuses a truth path that is the database itself (however spelled: `./`, `..`, symlinks)
/// or an existing SQLite file.
pub fn check_paths(db: &Path, truth: &Path) -> Result<(), PathConflict> {
    if resolved(db) == resolved(truth) {
        return Err(PathConflict::Same {
            truth: truth.display().to_string(),
            db: db.display().to_string(),
            default: truth::default_path(db).display().to_string(),
        });
    }
    if is_sqlite(truth) {
        return Err(PathConflict::TruthIsDatabase {
            truth: truth.display().to_string(),
        });
    }
    // Replacing a database is the point of `simular`; replacing anything else (a truth log
    // given as --salida by a slip of the hand, a document) would destroy user data.
    if is_nonempty_file(db) && !is_sqlite(db) {
        return Err(PathConflict::DbIsNotDatabase {
            db: db.display().to_string(),
        });
    }
    Ok(())
}

/// `path` made absolute with symlinks, `.` and `..` resolved as far as it exists, so that two
/// spellings of one file compare equal even before the file is created.
fn resolved(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut missing = Vec::new();
    let mut head = absolute.as_path();
    loop {
        if let Ok(mut real) = head.canonicalize() {
            real.extend(missing.iter().rev());
            return real;
        }
        match (head.parent(), head.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_owned());
                head = parent;
            }
            _ => return absolute,
        }
    }
}

/// Whether `path` is an existing regular file with something in it.
fn is_nonempty_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > 0)
}

/// Whether `path` is an existing SQLite database (by its 16-byte header).
fn is_sqlite(path: &Path) -> bool {
    let mut header = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut header))
        .is_ok_and(|()| &header == b"SQLite format 3\0")
}

/// What one unit's simulation hands the writer, prepared on the worker that simulated it so
/// that the writer thread, the one stage that cannot run in parallel, only passes rows to the
/// database and bytes to the truth file. In two parts: the rows as soon as the unit is
/// simulated, so the writer stores them while the worker runs the detection engine over
/// them (the first unit's rows start the writer sooner, the last unit's leave it less to do
/// alone), then the rest. A unit the scenario is refused for sends only the rest.
enum UnitPart {
    /// The rows the table stores (the reports with a fix: a record without one is not
    /// stored, as `flota recibir` does not store one), encoded here, in the table's key
    /// order — time, then sequence — so each insert lands at the right edge of the B-tree.
    Rows(Vec<PositionRow>),
    Rest(Box<UnitOutput>),
}

/// The second part of a unit's output.
struct UnitOutput {
    /// Every report the tracker delivered, in delivery order: kept only for `--emitir`.
    delivered: Vec<Report>,
    /// The unit's ground truth as JSON lines, and how many lines.
    truth_lines: Vec<u8>,
    truth_events: u64,
    /// What the detection engine makes of `stored` (and nothing else).
    analysis: Analysis,
    /// Fixes the engine read (duplicates and reports after "now" are not fixes it reads).
    fixes: u64,
    /// Injections the unit's simulated days gave no chance to happen.
    unhonoured: Vec<Unhonoured>,
}

/// What the simulator emits for one unit, as it emits it.
#[derive(Default)]
struct UnitRun {
    reports: Vec<Report>,
    truth: Vec<TruthEvent>,
}

/// The scenario asks for injections its simulated days could not hold: it is refused, naming
/// each and why, and nothing is written.
#[derive(Debug, thiserror::Error)]
#[error("{}", lines(.0))]
pub struct NotHonoured(pub Vec<Unhonoured>);

fn lines(list: &[Unhonoured]) -> String {
    list.iter()
        .map(|u| {
            format!(
                "{}: no pudo ocurrir el {}: {}; elija una hora más temprana o cambie la semilla",
                u.label, u.date, u.reason
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Sink for UnitRun {
    fn report(&mut self, report: &Report) {
        self.reports.push(*report);
    }
    fn truth(&mut self, event: TruthEvent) {
        self.truth.push(event);
    }
}

/// `flota simular`: the summary line on stderr; with `--emitir`, then the playback into the
/// server and its summary (exit 1 if some report was not delivered).
pub fn run(args: SimulateArgs, io: &mut Io, _settings: &Settings) -> anyhow::Result<ExitCode> {
    let emit = args.emitir.clone().map(|url| crate::ingest::emit::Options {
        url,
        speedup: args.acelerar,
        grace: Duration::from_secs(30),
        timeout: Duration::from_secs(10),
    });
    let mut options = Options::from_args(args, io.stderr_is_terminal, &Clock::system())?;
    options.keep_reports = emit.is_some();
    options.interrupt = Interrupt::watch();
    let mut summary = simulate(&options)?;
    if options.write_db {
        writeln!(io.stderr, "{}", summary.line())?;
    }
    let Some(emit) = emit else {
        return Ok(ExitCode::SUCCESS);
    };
    let reports = std::mem::take(&mut summary.reports);
    writeln!(
        io.stderr,
        "enviando {} reportes de {} unidades a {} ({}× el tiempo real)…",
        reports.iter().map(|(_, r)| r.len()).sum::<usize>(),
        reports.len(),
        crate::plumbing::net::public_url(&emit.url),
        emit.speedup
    )?;
    let played = crate::ingest::emit::emit(reports, &emit)?;
    writeln!(io.stderr, "{}", played.lines())?;
    Ok(if played.undelivered > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

impl Options {
    /// The command line's options. Without `--ahora` the period ends at `clock`'s now: the
    /// wall clock is read here, never in the simulator.
    pub fn from_args(
        args: SimulateArgs,
        progress: bool,
        clock: &Clock,
    ) -> Result<Options, LocationError> {
        let ahora = match args.ahora {
            Some(local) => Ahora::Local(local),
            None => Ahora::NowUtc(clock.now_utc()),
        };
        let db = Location::parse(&args.salida)?;
        // A server's database has no folder: its truth log goes to `<database>.verdad.jsonl`
        // here unless `--verdad` says where.
        let default_truth = match &db {
            Location::Sqlite(path) => truth::default_path(path),
            Location::Postgres(url) => PathBuf::from(format!("{}.verdad.jsonl", url.database())),
        };
        Ok(Options {
            scenario: args.escenario.map_or(Source::Embedded, Source::File),
            ahora,
            truth: args.verdad.unwrap_or(default_truth),
            db,
            seed: args.semilla,
            progress,
            interrupt: Interrupt::never(),
            keep_reports: false,
            write_db: !args.sin_base,
            workers: None,
        })
    }
}

/// Simulates, analyses and writes both files; the previous ones stay until both new ones are
/// complete.
pub fn simulate(options: &Options) -> anyhow::Result<Summary> {
    if let Location::Sqlite(db) = &options.db {
        check_paths(db, &options.truth)?;
    }
    let started = Instant::now();
    // The output files (their schema) need nothing of the scenario: made on a thread of their
    // own while it loads, they are ready before the roads are (docs/rendimiento.md, session
    // seventeen). A scenario that cannot be loaded is reported first, as before, and the files
    // begun are removed when dropped. Not a PostgreSQL database: a bad scenario would wait for
    // a server that may take long to answer, and a staging schema would be made for nothing.
    let overlap = matches!(options.db, Location::Sqlite(_));
    let (world, outputs) = std::thread::scope(|scope| {
        let creating = overlap.then(|| {
            scope.spawn(|| {
                let outputs = Outputs::create(options);
                crate::log_debug!("archivos creados: {:?}", started.elapsed());
                outputs
            })
        });
        let world = scenario::load(&options.scenario, options.ahora);
        crate::log_debug!("escenario cargado: {:?}", started.elapsed());
        let outputs = creating.map(|creating| {
            creating
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        (world, outputs)
    });
    run_world(options, world?, outputs)
}

/// [`simulate`] on a scenario already loaded (and perhaps changed: `flota evaluar --matriz`
/// overrides its noise); `options.scenario` only names it in messages.
pub fn simulate_world(options: &Options, world: World) -> anyhow::Result<Summary> {
    if let Location::Sqlite(db) = &options.db {
        check_paths(db, &options.truth)?;
    }
    run_world(options, world, None)
}

/// [`simulate_world`] with the output files perhaps created already (`created`).
fn run_world(
    options: &Options,
    world: World,
    created: Option<anyhow::Result<Outputs>>,
) -> anyhow::Result<Summary> {
    let started = Instant::now();
    let (simulation, config, outputs) = prepare(options, world, created, started)?;
    let world = &simulation.world;
    let mut outputs = outputs?;
    let bar = progress_bar(
        options.progress,
        (world.units.len() * world.days.len()) as u64,
    );
    let mut kept = Vec::new();
    let keep = options.keep_reports.then_some(&mut kept);
    let written = write_units(&simulation, &config, &mut outputs, &bar, options, keep);
    bar.finish_and_clear();
    let Some((fixes, write_time)) = written? else {
        return Err(outputs.abandon(options).into());
    };
    crate::log_debug!(
        "simulación y escritura de posiciones: {:?} (escritura {write_time:?})",
        started.elapsed()
    );
    let positions = outputs.db.rows();
    let truth_events = outputs.truth_events;
    let (db_bytes, truth_bytes) = outputs.close(options, world, &config, fixes, started)?;
    Ok(Summary {
        units: world.units.len(),
        days: world.days.len(),
        positions,
        truth_events,
        db_bytes,
        truth_bytes,
        elapsed: started.elapsed(),
        db: options.db.clone(),
        truth: options.truth.clone(),
        reports: kept,
    })
}

/// The checked scenario (with `--semilla`) ready to run, the detection thresholds it sets,
/// and the output files opened — created ([`Outputs::create`]) unless `created` brings them,
/// and started ([`Outputs::start`]) on a thread of their own while the roads are made:
/// creating two files with the schema and writing the fleet is SQLite's work and file-system
/// calls that needed none of the roads, and it held the workers back (12 ms of the reference
/// week's setup under load, docs/rendimiento.md). Its outcome is returned as it came, so a
/// place that cannot be written is reported as before.
fn prepare(
    options: &Options,
    mut world: World,
    created: Option<anyhow::Result<Outputs>>,
    started: Instant,
) -> anyhow::Result<(Simulation, DetectionConfig, anyhow::Result<Outputs>)> {
    if let Some(seed) = options.seed {
        world.seed = seed;
    }
    let config = match &world.detection {
        Some(table) => DetectionConfig::from_json(&serde_json::to_string(table)?)
            .map_err(|e| anyhow::anyhow!("{}: {e}", options.scenario.display_path().display()))?,
        None => DetectionConfig::default(),
    };
    let workers = options.workers.unwrap_or_else(cores);
    let world_ref = &world;
    let (made, outputs) = std::thread::scope(|scope| {
        let opening = scope.spawn(move || {
            let outputs = created
                .unwrap_or_else(|| Outputs::create(options))
                .and_then(|mut outputs| outputs.start(world_ref).map(|()| outputs));
            crate::log_debug!("archivos abiertos: {:?}", started.elapsed());
            outputs
        });
        let made = roads(&world_ref.routes, &world_ref.fences, workers);
        crate::log_debug!("caminos preparados: {:?}", started.elapsed());
        let outputs = opening
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (made, outputs)
    });
    Ok((Simulation::with_roads(world, |_, _| made), config, outputs))
}

/// The cores this machine offers (2 when it cannot tell).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// The roads (every route's shortened loops and the courses of all), on `workers` threads:
/// route `i`'s share on thread `i % workers`, put back in order. They are most of the setup,
/// which nothing else can overlap.
fn roads(routes: &[Route], fences: &[Geofence], workers: usize) -> Roads {
    let workers = workers.clamp(1, routes.len().max(1));
    if workers == 1 {
        return Roads::new(routes, fences);
    }
    let mut parts: Vec<Vec<RouteRoads>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|first| {
                scope.spawn(move || {
                    (first..routes.len())
                        .step_by(workers)
                        .map(|i| RouteRoads::new(&routes[i], fences))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    let mut ordered = Vec::with_capacity(routes.len());
    let mut drains: Vec<_> = parts.iter_mut().map(|p| p.drain(..)).collect();
    for i in 0..routes.len() {
        if let Some(part) = drains[i % workers].next() {
            ordered.push(part);
        }
    }
    Roads::from_parts(routes, ordered)
}

fn progress_bar(shown: bool, unit_days: u64) -> ProgressBar {
    if !shown {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(unit_days), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} unidades-día {elapsed_precise}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// The two files being written, under their temporary names.
struct Outputs {
    /// The SQLite file's temporary name (none for PostgreSQL, built in a transaction).
    db_file: Option<Staged>,
    truth_file: Staged,
    db: Writer,
    truth: BufWriter<std::fs::File>,
    truth_events: u64,
    /// Puts what is written so far on disk while the writing goes on.
    flusher: Flusher,
}

impl Outputs {
    /// Proves both places writable before any work (the errors name the user's paths): both
    /// files made under their temporary names, the database with its schema.
    fn create(options: &Options) -> anyhow::Result<Outputs> {
        let db_file = match &options.db {
            Location::Sqlite(path) => Some(Staged::prepare(path)?),
            Location::Postgres(_) => None,
        };
        let truth_file = Staged::prepare(&options.truth)?;
        let db = match &db_file {
            Some(staged) => Writer::create(&Location::Sqlite(staged.temp().to_path_buf()))?,
            None => Writer::create(&options.db)?,
        };
        let truth_out = std::fs::File::create(truth_file.temp())
            .with_context(|| format!("no se pudo escribir {}", options.truth.display()))?;
        let truth = BufWriter::new(truth_out);
        let mut staged = vec![truth_file.temp()];
        staged.extend(db_file.as_ref().map(Staged::temp));
        let flusher = Flusher::start(&staged)
            .with_context(|| format!("no se pudo escribir {}", options.truth.display()))?;
        Ok(Outputs {
            db_file,
            truth_file,
            db,
            truth,
            truth_events: 0,
            flusher,
        })
    }

    /// Writes the fleet and the truth header.
    fn start(&mut self, world: &World) -> anyhow::Result<()> {
        self.db.write_fleet(world)?;
        serde_json::to_writer(
            &mut self.truth,
            &TruthHeader::for_world(world, env!("CARGO_PKG_VERSION")),
        )?;
        self.truth.write_all(b"\n")?;
        Ok(())
    }

    /// Positions written so far; asks the flusher for a pass whenever the writer has
    /// committed another batch since `before` rows (what a commit wrote is what it can sync).
    fn committed_since(&self, before: u64) {
        let batch = BATCH_ROWS as u64;
        if self.db.rows() / batch != before / batch {
            self.flusher.poke();
        }
    }

    /// Removes both temporary files (the connection and the truth writer closed first) and
    /// says what was kept.
    fn abandon(self, options: &Options) -> Interrupted {
        // Its error does not matter: both files are thrown away.
        let _ = self.flusher.stop();
        drop(self.db);
        drop(self.truth);
        drop(self.db_file);
        drop(self.truth_file);
        Interrupted::new(options.interrupt.signal().unwrap_or(2), options)
    }

    /// One unit's detections and truth, after its rows, in unit order.
    fn write_unit(
        &mut self,
        unit: usize,
        output: &UnitOutput,
        config: &DetectionConfig,
        world: &World,
    ) -> anyhow::Result<()> {
        let fence_ids: Vec<i64> = (1..=world.fences.len() as i64).collect();
        self.db.write_analysis(
            unit as i64 + 1,
            &output.analysis,
            &fence_ids,
            config,
            world.ahora_utc,
        )?;
        self.truth.write_all(&output.truth_lines)?;
        self.truth_events += output.truth_events;
        Ok(())
    }

    /// Seals the analysis, writes `meta`, closes both files and puts them in place (truth
    /// first; the database, which the server reads, last). Returns their sizes.
    fn close(
        mut self,
        options: &Options,
        world: &World,
        config: &DetectionConfig,
        fixes: u64,
        started: Instant,
    ) -> anyhow::Result<(u64, u64)> {
        // The truth log is complete and so are the positions and detections: their pages go
        // to disk now, while this thread seals, indexes and analyses, so that the fsyncs
        // before the renames below find little left to write.
        self.truth.flush()?;
        drop(self.truth);
        self.flusher.poke();
        self.db.seal_analysis(&Covered {
            config,
            until_utc: world.ahora_utc,
            fixes,
        })?;
        self.db.write_meta(world)?;
        let finished = self.db.finish()?;
        self.flusher
            .stop()
            .with_context(|| format!("no se pudo escribir {}", options.truth.display()))?;
        crate::log_debug!("base cerrada: {:?}", started.elapsed());

        let size = |staged: &Staged| {
            std::fs::metadata(staged.temp())
                .map(|m| m.len())
                .unwrap_or(0)
        };
        let truth_bytes = size(&self.truth_file);
        let db_bytes = match (&self.db_file, finished.bytes) {
            (Some(staged), _) => size(staged),
            (None, bytes) => bytes.unwrap_or(0),
        };
        // The last moment a stop keeps the previous files: the renames below are quick.
        if let Some(signal) = options.interrupt.signal() {
            drop(self.db_file);
            drop(self.truth_file);
            return Err(Interrupted::new(signal, options).into());
        }
        self.truth_file
            .commit()
            .with_context(|| format!("no se pudo escribir {}", options.truth.display()))?;
        if options.write_db {
            finished.commit()?;
            if let Some(db_file) = self.db_file {
                db_file
                    .commit()
                    .with_context(|| format!("no se pudo escribir {}", options.db))?;
            }
        }
        crate::log_debug!("archivos en su lugar: {:?}", started.elapsed());
        Ok((db_bytes, truth_bytes))
    }
}

/// A thread that flushes the temporary files to disk (`fdatasync`) when asked, while the
/// command goes on writing them. The renames still wait for a full `fsync` of each file
/// ([`Staged::commit`]), so nothing about atomicity changes; what changes is when the pages
/// travel: the reference week's final fsyncs and renames took 12–24 ms of the main thread
/// with the workers idle, 0.4 ms with this (docs/rendimiento.md).
/// Asks made while a pass is pending merge into it.
struct Flusher {
    ask: Option<std::sync::mpsc::SyncSender<()>>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl Flusher {
    fn start(paths: &[&Path]) -> std::io::Result<Flusher> {
        let files = paths
            .iter()
            .map(std::fs::File::open)
            .collect::<std::io::Result<Vec<_>>>()?;
        let (ask, asked) = sync_channel::<()>(1);
        let thread = std::thread::Builder::new()
            .name("flota-disco".into())
            .spawn(move || {
                for () in asked.iter() {
                    for file in &files {
                        file.sync_data()?;
                    }
                }
                Ok(())
            })?;
        Ok(Flusher {
            ask: Some(ask),
            thread: Some(thread),
        })
    }

    /// Asks for a pass; one already pending covers this ask too.
    fn poke(&self) {
        if let Some(ask) = &self.ask {
            // Full: a pass is pending. Gone: the thread stopped on an error `stop` reports.
            let _ = ask.try_send(());
        }
    }

    /// Waits for the passes asked for; the first error one of them met.
    fn stop(mut self) -> std::io::Result<()> {
        self.ask = None;
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => Ok(()),
        }
    }
}

impl Drop for Flusher {
    /// On an early return the thread is still waited for: no process outlives its files.
    fn drop(&mut self) {
        self.ask = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Units a worker may have finished and not yet handed to the writer: enough to keep both
/// stages busy, few enough that memory does not grow with the fleet. Each unit is two
/// messages ([`UnitPart`]).
const AHEAD: usize = 2;

/// Simulates units on worker threads and writes them on this one, in unit order whatever
/// order they finish in: the files are deterministic, whatever the number of workers.
/// A worker takes the next unit nobody has taken as soon as it is free, so the workers
/// finish together however the units' sizes fall (taken in turn, `w`, `w + n`…, one worker
/// of the reference week sat idle for the last unit or two of the other, docs/rendimiento.md).
/// A unit is taken only with one of `n × (AHEAD + 1)` credits, which the writer hands back
/// as it writes each unit: at most that many units are held in memory, and since units are
/// taken in order the one the writer waits for is always taken or about to be. Each unit's
/// rows go to the database as soon as they arrive, in the same order of writes as when they
/// came with its detections (so the same bytes). Returns the fixes the engine read and the
/// time spent writing, or `None` when `interrupt` asked for a stop (checked between units;
/// the units being simulated then are finished and dropped).
fn write_units(
    simulation: &Simulation,
    config: &DetectionConfig,
    outputs: &mut Outputs,
    bar: &ProgressBar,
    options: &Options,
    mut keep: Option<&mut Vec<(String, Vec<Report>)>>,
) -> anyhow::Result<Option<(u64, Duration)>> {
    let world = &simulation.world;
    let interrupt = &options.interrupt;
    let units = world.units.len();
    // One worker per core: the writer spends much of its time waiting for the next unit,
    // and while it writes, the workers share what is left.
    let workers = options.workers.unwrap_or_else(cores).clamp(1, units.max(1));
    let keep_delivered = keep.is_some();
    let mut fixes = 0u64;
    let mut write_time = Duration::ZERO;
    let started = Instant::now();
    let started = &started;
    let credits = workers * (AHEAD + 1);
    let (give_back, credit) = sync_channel::<()>(credits);
    for _ in 0..credits {
        // Room for every credit: the channel was made that size.
        let _ = give_back.try_send(());
    }
    let credit = Mutex::new(credit);
    let next = AtomicUsize::new(0);
    // Unbounded: the credits bound what is in it, and a worker never waits to hand a unit in.
    let (sender, receiver) = channel::<(usize, anyhow::Result<UnitPart>)>();
    let shared = Shared {
        simulation,
        config,
        interrupt,
        credit,
        next,
        units,
        started,
        keep_delivered,
        spare_rows: Mutex::new(Vec::new()),
    };
    std::thread::scope(|scope| {
        // Owned by this closure, so that whatever way it returns (a stop, an error) drops
        // them before the workers are waited for: a worker waiting for a credit or handing a
        // unit in then sees the writer gone and stops.
        let (give_back, receiver) = (give_back, receiver);
        for worker in 0..workers {
            let sender = sender.clone();
            let shared = &shared;
            scope.spawn(move || work(shared, worker, &sender));
        }
        drop(sender);
        // Parts of later units that came before the one being written.
        let mut early: Vec<VecDeque<anyhow::Result<UnitPart>>> =
            (0..units).map(|_| VecDeque::new()).collect();
        for unit in 0..units {
            let output = loop {
                let waited = Instant::now();
                let received = match early[unit].pop_front() {
                    Some(part) => Some(part),
                    None => loop {
                        match receiver.recv() {
                            Ok((from, part)) if from == unit => break Some(part),
                            Ok((from, part)) => early[from].push_back(part),
                            // Every worker hung up: only when they saw the stop asked for.
                            Err(_) => break None,
                        }
                    },
                };
                crate::log_debug!(
                    "escritor: unidad {unit} esperada {:?} hasta {:?}",
                    waited.elapsed(),
                    started.elapsed()
                );
                if interrupt.asked() {
                    return Ok(None);
                }
                let Some(part) = received else {
                    return Ok(None);
                };
                match part? {
                    UnitPart::Rows(rows) => {
                        let t = Instant::now();
                        let before = outputs.db.rows();
                        outputs.db.write_positions(unit as i64 + 1, &rows)?;
                        outputs.committed_since(before);
                        write_time += t.elapsed();
                        if let Ok(mut spare) = shared.spare_rows.lock() {
                            spare.push(rows);
                        }
                    }
                    UnitPart::Rest(output) => break output,
                }
            };
            // The unit is no longer held: a worker may take another. (Full cannot happen:
            // there are never more credits than the channel holds.)
            let _ = give_back.try_send(());
            if !output.unhonoured.is_empty() {
                return Err(NotHonoured(output.unhonoured).into());
            }
            let t = Instant::now();
            outputs.write_unit(unit, &output, config, world)?;
            write_time += t.elapsed();
            fixes += output.fixes;
            if let Some(kept) = keep.as_deref_mut() {
                kept.push((world.units[unit].plate.clone(), output.delivered));
            }
            bar.inc(world.days.len() as u64);
        }
        if interrupt.asked() {
            return Ok(None);
        }
        Ok(Some((fixes, write_time)))
    })
}

/// What the workers of [`write_units`] share: the simulation, the credits that bound how far
/// ahead of the writer they run, and the next unit to take.
struct Shared<'a> {
    simulation: &'a Simulation,
    config: &'a DetectionConfig,
    interrupt: &'a Interrupt,
    credit: Mutex<Receiver<()>>,
    next: AtomicUsize,
    units: usize,
    started: &'a Instant,
    keep_delivered: bool,
    /// Units' row buffers the writer is done with, for the workers' next units: a unit's rows
    /// (~0.7 MB for a week) were otherwise taken fresh from the system for every unit, page
    /// by page (docs/rendimiento.md, session seventeen).
    spare_rows: Mutex<Vec<Vec<PositionRow>>>,
}

/// One worker of [`write_units`]: takes the next unit whenever it holds a credit, and hands
/// its rows, then the rest of it, to the writer; stops at a stop asked for, when the units
/// run out, or when the writer is gone.
fn work(shared: &Shared<'_>, worker: usize, sender: &Sender<(usize, anyhow::Result<UnitPart>)>) {
    let started = shared.started;
    // One unit's reports and fixes, kept from unit to unit: grown once, not doubled and
    // copied from empty for every unit (2.3 % of a worker's instructions), nor their pages
    // taken fresh from the system.
    let mut buffers = Buffers::default();
    loop {
        if shared.interrupt.asked() {
            return;
        }
        // Gone: the writer stopped (a stop asked for, or an error).
        let taken = shared.credit.lock().map(|credit| credit.recv().is_ok());
        if !matches!(taken, Ok(true)) {
            return;
        }
        let unit = shared.next.fetch_add(1, Ordering::Relaxed);
        if unit >= shared.units {
            return;
        }
        let begun = started.elapsed();
        let rows = |rows| {
            crate::log_debug!(
                "unidad {unit} (hilo {worker}): simulada {begun:?} → {:?}",
                started.elapsed()
            );
            sender.send((unit, Ok(UnitPart::Rows(rows)))).is_ok()
        };
        let spare = shared
            .spare_rows
            .lock()
            .ok()
            .and_then(|mut spare| spare.pop())
            .unwrap_or_default();
        let output = match simulate_unit(
            shared.simulation,
            shared.config,
            unit,
            shared.keep_delivered,
            (&mut buffers, spare),
            rows,
        ) {
            Ok(Some(output)) => {
                crate::log_debug!(
                    "unidad {unit} (hilo {worker}): analizada → {:?}",
                    started.elapsed()
                );
                Ok(UnitPart::Rest(Box::new(output)))
            }
            // The writer hung up.
            Ok(None) => return,
            Err(e) => Err(e),
        };
        if sender.send((unit, output)).is_err() {
            return;
        }
    }
}

/// A worker's buffers, kept from unit to unit.
#[derive(Default)]
struct Buffers {
    reports: Vec<Report>,
    fixes: Vec<engine::Fix>,
}

/// One unit simulated, what the detection engine makes of its reports exactly as the table
/// will hold them, and its truth written out: everything the writer needs, made here on a
/// worker. Its rows go to `rows` before the engine runs (unless the scenario is refused for
/// the unit); `None` when `rows` says the writer is gone. `keep_delivered`: also keep the
/// reports as delivered (for `--emitir`). `buffers` lends the unit a worker's buffers
/// (whatever they hold is cleared), and the unit's rows are put in `spare_rows` (emptied
/// first), a buffer the writer is done with.
fn simulate_unit(
    simulation: &Simulation,
    config: &DetectionConfig,
    unit: usize,
    keep_delivered: bool,
    (buffers, mut spare_rows): (&mut Buffers, Vec<PositionRow>),
    rows: impl FnOnce(Vec<PositionRow>) -> bool,
) -> anyhow::Result<Option<UnitOutput>> {
    let world = &simulation.world;
    let mut run = UnitRun {
        reports: std::mem::take(&mut buffers.reports),
        truth: Vec::new(),
    };
    run.reports.clear();
    let unhonoured = simulation.run_unit(unit, &mut run);
    if !unhonoured.is_empty() {
        return Ok(Some(UnitOutput {
            delivered: Vec::new(),
            truth_lines: Vec::new(),
            truth_events: 0,
            analysis: Analysis::default(),
            fixes: 0,
            unhonoured,
        }));
    }
    let (delivered, mut stored) = if keep_delivered {
        let stored = run.reports.iter().filter(|r| r.valid).copied().collect();
        (run.reports, stored)
    } else {
        let mut stored = run.reports;
        stored.retain(|r| r.valid);
        (Vec::new(), stored)
    };
    // Stable, and linear on the mostly ordered delivery (only store-and-forward backlogs
    // arrive late).
    stored.sort_by_key(|r| (r.ts_utc, r.sequence));
    let ctx = engine::Context {
        config,
        fences: &world.fences,
        limit_kmh: world.units[unit].limit_kmh,
        zone: world.units[unit].zone,
    };
    // Encoded once, here: the engine reads its fixes from the values the writer stores.
    spare_rows.clear();
    spare_rows.extend(stored.iter().map(PositionRow::from));
    stored.clear();
    buffers.reports = stored;
    let stored = spare_rows;
    let fixes = &mut buffers.fixes;
    fixes_of_rows_into(&stored, fixes);
    if !rows(stored) {
        return Ok(None);
    }
    let now = world.ahora_utc;
    let fix_count = fixes.iter().take_while(|f| f.ts_utc <= now).count() as u64;
    let analysis = engine::analyze(&ctx, fixes.iter().copied(), now);
    let mut truth_lines = Vec::with_capacity(run.truth.len() * 160);
    for event in &run.truth {
        serde_json::to_writer(&mut truth_lines, event)?;
        truth_lines.push(b'\n');
    }
    Ok(Some(UnitOutput {
        delivered,
        truth_lines,
        truth_events: run.truth.len() as u64,
        analysis,
        fixes: fix_count,
        unhonoured,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both files of the shipped `minimo` scenario simulated with `workers` threads.
    fn files_with(workers: usize) -> (Vec<u8>, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let (db, truth) = (dir.path().join("f.db"), dir.path().join("f.verdad.jsonl"));
        let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("escenarios/minimo.toml");
        let ahora = crate::cli::parse_ahora("2026-08-19T15:30").unwrap();
        let options = Options {
            scenario: Source::File(scenario),
            ahora: Ahora::Local(ahora),
            db: Location::Sqlite(db.clone()),
            truth: truth.clone(),
            seed: None,
            progress: false,
            interrupt: Interrupt::never(),
            keep_reports: false,
            write_db: true,
            workers: Some(workers),
        };
        let summary = simulate(&options).unwrap();
        assert_eq!(summary.units, 3);
        (std::fs::read(db).unwrap(), std::fs::read(truth).unwrap())
    }

    /// The flusher opens its files before any work (a place it cannot read fails the run at
    /// once, like an unwritable one) and `stop` returns once the passes asked for are done.
    #[test]
    fn the_flusher_opens_its_files_up_front_and_stops_after_its_passes() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, b"uno").unwrap();
        std::fs::write(&b, b"dos").unwrap();
        let missing = dir.path().join("no-existe");
        assert!(Flusher::start(&[&a, &missing]).is_err());
        let flusher = Flusher::start(&[&a, &b]).unwrap();
        for _ in 0..3 {
            flusher.poke();
        }
        flusher.stop().unwrap();
        // Dropped without `stop` (an early return): the thread is waited for, not left.
        let flusher = Flusher::start(&[&a]).unwrap();
        flusher.poke();
        drop(flusher);
        assert_eq!(std::fs::read(&a).unwrap(), b"uno");
    }

    /// Units finish in any order on several workers; the files are written in unit order, so
    /// they are the same bytes whatever the number of workers.
    #[test]
    fn the_files_are_the_same_whatever_the_number_of_workers() {
        let (db_one, truth_one) = files_with(1);
        for workers in [2, 3] {
            let (db, truth) = files_with(workers);
            assert!(
                truth == truth_one,
                "truth log differs with {workers} workers"
            );
            assert!(db == db_one, "database differs with {workers} workers");
        }
    }
}
