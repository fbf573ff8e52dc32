//! `flota simular`: run a scenario and write the positions database and the truth log.
//!
//! Owns the I/O around the sans-IO simulator: loading the scenario, running units on worker
//! threads, writing their reports in unit order (so the output is byte-for-byte deterministic
//! however threads interleave), the progress bar, and replacing the previous files only when
//! both new ones are complete. Before anything is written it refuses a truth log that would
//! overwrite the database or another database ([`PathConflict`], a usage error).

use std::collections::BTreeMap;
use std::io::Read;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::sync_channel;
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::{self, Analysis, DetectionConfig};
use crate::plumbing::output::Staged;
use crate::scenario::{self, Ahora, Source};
use crate::sim::{Report, Simulation, Sink, TruthEvent, TruthHeader};
use crate::store::encoding::fixes_of;
use crate::store::{Covered, Key, SCHEMA_VERSION, Writer};

/// What to simulate and where to put it.
#[derive(Debug, Clone)]
pub struct Options {
    pub scenario: Source,
    pub ahora: Ahora,
    pub db: PathBuf,
    pub truth: PathBuf,
    pub seed: Option<u64>,
    pub progress: bool,
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
    pub db: PathBuf,
    pub truth: PathBuf,
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
            self.db.display(),
            self.db_bytes as f64 / 1e6,
            self.truth.display(),
            self.truth_bytes as f64 / 1e6,
            self.elapsed.as_secs_f64()
        )
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
            default: default_truth_path(db).display().to_string(),
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

/// The truth file that goes with a database: `flota.db` → `flota.verdad.jsonl`.
pub fn default_truth_path(db: &std::path::Path) -> PathBuf {
    let stem = db
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "flota".into());
    db.with_file_name(format!("{stem}.verdad.jsonl"))
}

#[derive(Default)]
struct UnitOutput {
    reports: Vec<Report>,
    truth: Vec<TruthEvent>,
    /// What the detection engine makes of `reports` (and nothing else).
    analysis: Analysis,
    /// Fixes the engine read (duplicates and reports after "now" are not fixes it reads).
    fixes: u64,
}

impl Sink for UnitOutput {
    fn report(&mut self, report: &Report) {
        self.reports.push(*report);
    }
    fn truth(&mut self, event: TruthEvent) {
        self.truth.push(event);
    }
}

pub fn run(options: &Options) -> anyhow::Result<Summary> {
    let started = Instant::now();
    check_paths(&options.db, &options.truth)?;
    let mut world = scenario::load(&options.scenario, options.ahora)?;
    if let Some(seed) = options.seed {
        world.seed = seed;
    }
    let config = match &world.detection {
        Some(table) => DetectionConfig::from_json(&serde_json::to_string(table)?)
            .map_err(|e| anyhow::anyhow!("{}: {e}", options.scenario.display_path().display()))?,
        None => DetectionConfig::default(),
    };
    let simulation = Simulation::new(world);
    let world = &simulation.world;
    let fence_ids: Vec<i64> = (1..=world.fences.len() as i64).collect();
    let units = world.units.len();
    let days = world.days.len();

    // Both places are proved writable before any work: the errors name the user's paths.
    let db_file = Staged::prepare(&options.db)?;
    let truth_file = Staged::prepare(&options.truth)?;
    let mut db = Writer::create(db_file.temp())?;
    db.write_fleet(world)?;
    let truth_out = std::fs::File::create(truth_file.temp())
        .with_context(|| format!("no se pudo escribir {}", options.truth.display()))?;
    let mut truth = BufWriter::new(truth_out);
    serde_json::to_writer(
        &mut truth,
        &TruthHeader::for_world(world, env!("CARGO_PKG_VERSION")),
    )?;
    truth.write_all(b"\n")?;

    let bar = if options.progress {
        let bar = ProgressBar::with_draw_target(
            Some((units * days) as u64),
            ProgressDrawTarget::stderr(),
        );
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} unidades-día {elapsed_precise}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar
    } else {
        ProgressBar::hidden()
    };

    // This thread writes; the other cores simulate. The writer is the slower stage, so it
    // should not share its core.
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let workers = cores.saturating_sub(1).clamp(1, units.max(1));
    let next = AtomicUsize::new(0);
    let (sender, receiver) = sync_channel::<(usize, UnitOutput)>(workers * 2);
    let mut truth_events = 0u64;
    let mut fixes = 0u64;
    let mut write_time = Duration::ZERO;
    let written: anyhow::Result<()> = std::thread::scope(|scope| {
        for _ in 0..workers {
            let sender = sender.clone();
            let next = &next;
            let simulation = &simulation;
            let config = &config;
            scope.spawn(move || {
                loop {
                    let unit = next.fetch_add(1, Ordering::Relaxed);
                    if unit >= units {
                        return;
                    }
                    let mut output = UnitOutput::default();
                    simulation.run_unit(unit, &mut output);
                    // The engine sees the reports exactly as the table will hold them.
                    let ctx = engine::Context {
                        config,
                        fences: &simulation.world.fences,
                        limit_kmh: simulation.world.units[unit].limit_kmh,
                        zone: simulation.world.zone,
                    };
                    let fixes = fixes_of(&output.reports);
                    let now = simulation.world.ahora_utc;
                    output.fixes = fixes.iter().take_while(|f| f.ts_utc <= now).count() as u64;
                    output.analysis = engine::analyze(&ctx, fixes, now);
                    if sender.send((unit, output)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(sender);
        // Write in unit order whatever order units finish in: the files are deterministic.
        let mut waiting: BTreeMap<usize, UnitOutput> = BTreeMap::new();
        let mut expected = 0usize;
        for (unit, output) in receiver {
            waiting.insert(unit, output);
            while let Some(output) = waiting.remove(&expected) {
                let t = Instant::now();
                db.write_positions(expected as i64 + 1, &output.reports)?;
                db.write_analysis(
                    expected as i64 + 1,
                    &output.analysis,
                    &fence_ids,
                    &config,
                    world.ahora_utc,
                )?;
                write_time += t.elapsed();
                fixes += output.fixes;
                for event in &output.truth {
                    serde_json::to_writer(&mut truth, event)?;
                    truth.write_all(b"\n")?;
                    truth_events += 1;
                }
                bar.inc(days as u64);
                expected += 1;
            }
        }
        Ok(())
    });
    written?;
    bar.finish_and_clear();
    crate::log_debug!(
        "simulación y escritura de posiciones: {:?} (escritura {write_time:?})",
        started.elapsed()
    );

    let positions = db.rows;
    db.seal_analysis(&Covered {
        config: &config,
        until_utc: world.ahora_utc,
        fixes,
    })?;
    let first_day = world.days.first().map(ToString::to_string);
    let last_day = world.days.last().map(ToString::to_string);
    let meta: Vec<(Key, String)> = vec![
        (Key::SchemaVersion, SCHEMA_VERSION.to_string()),
        (Key::FlotaVersion, env!("CARGO_PKG_VERSION").to_owned()),
        (Key::Scenario, world.name.clone()),
        (Key::ScenarioDescription, world.description.clone()),
        (Key::ScenarioSha256, world.hash.clone()),
        (Key::Seed, world.seed.to_string()),
        (Key::Zone, world.zone.name().to_owned()),
        (
            Key::AhoraLocal,
            world.ahora_local.format("%Y-%m-%dT%H:%M:%S").to_string(),
        ),
        (Key::AhoraUtc, world.ahora_utc.to_string()),
        (Key::FromDate, first_day.unwrap_or_default()),
        (Key::ToDate, last_day.unwrap_or_default()),
        (Key::IntervalS, world.interval_s.to_string()),
        (Key::FleetLimitKmh, world.fleet_limit_kmh.to_string()),
        (Key::Positions, positions.to_string()),
    ];
    db.write_meta(&meta)?;
    db.finish()?;
    truth.flush()?;
    drop(truth);
    crate::log_debug!("base cerrada: {:?}", started.elapsed());

    // Both files are complete: put them in place (truth first; the database, which the
    // server reads, last).
    let truth_bytes = std::fs::metadata(truth_file.temp())
        .map(|m| m.len())
        .unwrap_or(0);
    let db_bytes = std::fs::metadata(db_file.temp())
        .map(|m| m.len())
        .unwrap_or(0);
    truth_file
        .commit()
        .with_context(|| format!("no se pudo escribir {}", options.truth.display()))?;
    db_file
        .commit()
        .with_context(|| format!("no se pudo escribir {}", options.db.display()))?;
    crate::log_debug!("archivos en su lugar: {:?}", started.elapsed());
    Ok(Summary {
        units,
        days,
        positions,
        truth_events,
        db_bytes,
        truth_bytes,
        elapsed: started.elapsed(),
        db: options.db.clone(),
        truth: options.truth.clone(),
    })
}

/// Parses `--ahora` (local time): `AAAA-MM-DDTHH:MM[:SS]` or with a space.
pub fn parse_ahora(text: &str) -> Result<chrono::NaiveDateTime, String> {
    for format in [
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%d %H:%M:%S",
    ] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(text.trim(), format) {
            return Ok(t);
        }
    }
    Err(format!(
        "'{text}' no es una fecha y hora local AAAA-MM-DDTHH:MM (p. ej. 2026-08-19T15:30)"
    ))
}
