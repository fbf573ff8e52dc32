//! `flota evaluar`: the evaluation of a database against its truth log, and the F1 gate.
//!
//! Owns the verb only: whose detections (a database's, or another platform's CSV with
//! `--detecciones`), which truth log (`--verdad`, else the one beside the database), the
//! output (the Spanish table, or JSON with `--json`) and the exit code of `--f1-minimo`. The
//! scoring is `crate::evaluation`'s. With `--matriz` it runs the fidelity grid: each scenario
//! loaded once, each run simulated into a scratch folder inside `--salida` (removed after
//! scoring) through `simulate::simulate_world`, scored in-process, the progress bar, and the
//! table, `matriz.json` and the charts written (`evaluation::grid`, `evaluation::charts`);
//! `--rastreadores` puts every unit of a point on one tracker profile, checked against each
//! scenario's profiles (or the built-in ones) before anything runs.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sha2::{Digest, Sha256};

use super::simulate::{self, Interrupted};
use super::{Io, Settings};
use crate::cli::{EvaluateArgs, GridArgs};
use crate::evaluation::grid::{self, Grid, GridReport, Levels, Point, PointSummary, RunScore};
use crate::evaluation::{self, charts, truth};
use crate::plumbing::clock::Clock;
use crate::plumbing::interrupt::Interrupt;
use crate::plumbing::output::Staged;
use crate::scenario::{self, Ahora, Source, TrackerProfile, World};
use crate::store::Location;

/// Seeds of a grid when `--semillas` is not given.
const DEFAULT_SEEDS: [u64; 5] = [1, 2, 3, 4, 5];

/// Prints the evaluation; exit 1 when `--f1-minimo` is given and some type falls below it.
pub fn run(args: EvaluateArgs, io: &mut Io, _settings: &Settings) -> anyhow::Result<ExitCode> {
    if !args.matriz.escenarios.is_empty() {
        return run_grid(args, io);
    }
    let evaluation = match (&args.detecciones, &args.verdad) {
        (Some(detections), Some(truth)) => {
            evaluation::run_external(detections, truth, args.tolerancia)?
        }
        _ => {
            let db = Location::parse(&args.db)?;
            // A server's database: its truth log is `<database>.verdad.jsonl` here, as
            // `flota simular` writes it, unless `--verdad` says where.
            let default_truth = || match &db {
                Location::Sqlite(path) => truth::default_path(path),
                Location::Postgres(url) => format!("{}.verdad.jsonl", url.database()).into(),
            };
            evaluation::run(&evaluation::Options {
                truth: args.verdad.unwrap_or_else(default_truth),
                db,
                tolerance_s: args.tolerancia,
            })?
        }
    };
    if args.json {
        writeln!(io.stdout, "{}", serde_json::to_string_pretty(&evaluation)?)?;
    } else {
        write!(io.stdout, "{}", evaluation.table())?;
    }
    if let Some(failure) = args.f1_minimo.and_then(|min| evaluation.gate(min)) {
        writeln!(io.stderr, "error: {failure}")?;
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// `--matriz`: every run of the grid, then the table (or JSON), the files and the gate.
fn run_grid(args: EvaluateArgs, io: &mut Io) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let flags = *args.matriz;
    let ahora = match flags.ahora {
        Some(local) => Ahora::Local(local),
        None => Ahora::NowUtc(Clock::system().now_utc()),
    };
    let grid = grid_of(&flags);
    let worlds: Vec<World> = grid
        .scenarios
        .iter()
        .map(|path| scenario::load(&Source::File(path.clone()), ahora))
        .collect::<Result<_, _>>()?;
    let profiles = tracker_profiles(&grid, &worlds)?;
    let points = grid.points();
    let scratch = Scratch::create(&flags.salida)?;
    let interrupt = Interrupt::watch();
    let bar = progress_bar(
        io.stderr_is_terminal,
        (points.len() * grid.seeds.len()) as u64,
    );
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let run_one = |point: &Point, seed: u64| -> anyhow::Result<RunScore> {
        let index = grid
            .scenarios
            .iter()
            .position(|p| *p == point.path)
            .unwrap_or(0);
        let profile = point
            .rastreador
            .as_ref()
            .and_then(|name| profiles.get(&(index, name.clone())));
        one_run(
            &worlds[index],
            profile,
            point,
            seed,
            &scratch,
            &interrupt,
            args.tolerancia,
        )
    };
    let runs = grid::run_all(
        &points,
        &grid.seeds,
        workers,
        run_one,
        &|| bar.inc(1),
        &|| interrupt.asked(),
    );
    bar.finish_and_clear();
    drop(scratch);
    // A run stopped by the signal fails with its own words; the grid says it once.
    let runs = if interrupt.asked() { None } else { runs? };
    let Some(runs) = runs else {
        return Err(Interrupted {
            signal: interrupt.signal().unwrap_or(2),
            kept: format!("no se escribió nada en {}", flags.salida.display()),
        }
        .into());
    };
    let report = GridReport {
        escenarios: worlds.iter().map(|w| w.name.clone()).collect(),
        semillas: grid.seeds.clone(),
        tolerancia_s: args.tolerancia,
        ejecuciones: points.len() * grid.seeds.len(),
        puntos: points
            .into_iter()
            .zip(&runs)
            .map(|(point, runs)| PointSummary::of(point, &grid.seeds, runs))
            .collect(),
    };
    let written = write_grid_files(&report, &flags.salida)?;
    if args.json {
        writeln!(io.stdout, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        write!(io.stdout, "{}", report.table())?;
    }
    writeln!(
        io.stderr,
        "matriz: {} ejecuciones en {:.1} s → {}",
        report.ejecuciones,
        started.elapsed().as_secs_f64(),
        written.join(", ")
    )?;
    if let Some(failure) = args.f1_minimo.and_then(|min| report.gate(min)) {
        writeln!(io.stderr, "error: {failure}")?;
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The grid the flags describe.
fn grid_of(flags: &GridArgs) -> Grid {
    let list =
        |levels: &Option<crate::cli::Levels>| levels.clone().map(|l| l.0).unwrap_or_default();
    Grid {
        scenarios: flags.escenarios.clone(),
        levels: Levels {
            sigma_m: list(&flags.sigma),
            drift_m: list(&flags.deriva),
            tau_s: list(&flags.tau),
            jumps: list(&flags.saltos),
            jump_m: list(&flags.salto_m),
            duplicates: list(&flags.duplicados),
            late: list(&flags.retrasados),
            delay_s: flags.retraso,
        },
        seeds: flags
            .semillas
            .clone()
            .map_or_else(|| DEFAULT_SEEDS.to_vec(), |s| s.0),
        profiles: flags.rastreadores.clone().map_or_else(
            || vec![None],
            |names| names.0.into_iter().map(Some).collect(),
        ),
    }
}

/// `--rastreadores` names a profile a scenario does not have (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("--rastreadores: {0}")]
pub struct UnknownTracker(String);

/// Every profile the grid names, for every scenario (by index): the scenario's own
/// `[rastreadores.*]`, or the built-in ones when it defines none.
fn tracker_profiles(
    grid: &Grid,
    worlds: &[World],
) -> Result<HashMap<(usize, String), TrackerProfile>, UnknownTracker> {
    let mut found = HashMap::new();
    for (index, world) in worlds.iter().enumerate() {
        let (known, whose) = if world.trackers.is_empty() {
            (
                scenario::builtin_profiles(world.interval_s),
                "los integrados, pues el escenario no define [rastreadores.*]",
            )
        } else {
            (world.trackers.clone(), "los del escenario")
        };
        for name in grid.profiles.iter().flatten() {
            let Some(profile) = known.get(name) else {
                let names: Vec<&str> = known.keys().map(String::as_str).collect();
                return Err(UnknownTracker(format!(
                    "el escenario {} no tiene el rastreador '{name}'; use uno de {whose}: {}",
                    world.name,
                    names.join(", ")
                )));
            };
            found.insert((index, name.clone()), profile.clone());
        }
    }
    Ok(found)
}

/// One run: `world` under `point`'s noise with `seed`, simulated into the scratch folder,
/// scored, and its files removed.
fn one_run(
    world: &World,
    profile: Option<&TrackerProfile>,
    point: &Point,
    seed: u64,
    scratch: &Scratch,
    interrupt: &Interrupt,
    tolerance_s: u32,
) -> anyhow::Result<RunScore> {
    let mut world = world.clone();
    point.ruido.apply(&mut world.noise);
    if let Some(profile) = profile {
        for unit in &mut world.units {
            unit.tracker = profile.clone();
        }
    }
    // The files of a grid run are another simulation than the scenario's own: say so in
    // the hash both carry.
    let label = point.label();
    world.hash = format!(
        "{:x}",
        Sha256::new()
            .chain_update(world.hash.as_bytes())
            .chain_update(label.as_bytes())
            .finalize()
    );
    let name = format!("{:x}", Sha256::digest(label.as_bytes()));
    let db = scratch.0.join(format!("{}-{seed}.db", &name[..16]));
    let options = simulate::Options {
        scenario: Source::File(point.path.clone()),
        ahora: Ahora::NowUtc(world.ahora_utc),
        truth: truth::default_path(&db),
        db: Location::Sqlite(db.clone()),
        seed: Some(seed),
        progress: false,
        interrupt: interrupt.clone(),
        keep_reports: false,
        write_db: true,
        // The grid already runs one simulation per core.
        workers: Some(1),
    };
    let result = simulate::simulate_world(&options, world).and_then(|_| {
        evaluation::run(&evaluation::Options {
            db: options.db.clone(),
            truth: options.truth.clone(),
            tolerance_s,
        })
    });
    let _ = std::fs::remove_file(&db);
    let _ = std::fs::remove_file(&options.truth);
    Ok(RunScore::of(&result?))
}

/// The folder the runs write into, inside `--salida`; removed with everything in it when
/// dropped, however the grid ends.
struct Scratch(PathBuf);

impl Scratch {
    fn create(out: &Path) -> anyhow::Result<Scratch> {
        let dir = out.join(format!(".trabajo-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("no se pudo crear la carpeta {}", dir.display()))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn progress_bar(shown: bool, runs: u64) -> ProgressBar {
    if !shown {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(runs), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:40} {pos}/{len} ejecuciones {elapsed_precise} (quedan {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// `matriz.json` and the three charts in `out`, each written whole or not at all; their
/// paths, for the summary line.
fn write_grid_files(report: &GridReport, out: &Path) -> anyhow::Result<Vec<String>> {
    let files: [(&str, Vec<u8>); 4] = [
        ("matriz.json", serde_json::to_vec_pretty(report)?),
        ("f1_ruido.png", charts::f1_chart(report)?),
        ("error_km.png", charts::km_chart(report)?),
        ("km_fantasma.png", charts::phantom_chart(report)?),
    ];
    let mut written = Vec::new();
    for (name, bytes) in files {
        let path = out.join(name);
        let staged = Staged::prepare(&path)?;
        std::fs::write(staged.temp(), &bytes)
            .with_context(|| format!("no se pudo escribir {}", path.display()))?;
        staged
            .commit()
            .with_context(|| format!("no se pudo escribir {}", path.display()))?;
        written.push(path.display().to_string());
    }
    Ok(written)
}
