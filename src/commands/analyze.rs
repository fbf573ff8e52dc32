//! `flota analizar DB`: re-run the detection engine over a database's positions.
//!
//! Owns the batch path of the engine on a stored data set: read each vehicle's fixes in time
//! order, analyse up to the data's "now", and replace `eventos` and `resumen_diario` in one
//! transaction (a crash leaves the previous tables), recreating them if they are missing, and
//! recording what the analysis covered (src/store/coverage.rs). Idempotent: running it twice,
//! or after `flota simular` (which analyses in memory), gives the same rows. No SQL here: the
//! store's [`crate::store::analysis::Rewrite`] does the writing, with Spanish errors.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use super::{Io, Settings};
use crate::cli::AnalyzeArgs;
use crate::engine::{self, Context};
use crate::plumbing::clock::Clock;
use crate::store::{Covered, Location, Store};

#[derive(Debug)]
pub struct Summary {
    pub vehicles: usize,
    pub fixes: u64,
    pub events: i64,
    pub elapsed: Duration,
}

/// `flota analizar`: one line on stderr saying what was analysed.
pub fn run(args: AnalyzeArgs, io: &mut Io, _settings: &Settings) -> anyhow::Result<ExitCode> {
    let db = Location::parse(&args.db)?;
    let summary = analyze(&db, &Clock::system())?;
    writeln!(
        io.stderr,
        "{} unidades, {} posiciones analizadas → {} eventos en {} ({:.2} s)",
        summary.vehicles,
        summary.fixes,
        summary.events,
        db,
        summary.elapsed.as_secs_f64()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Re-runs the engine over `db` up to the data's "now", or `clock`'s for a data set that does
/// not say (a live one).
pub fn analyze(db: impl Into<Location>, clock: &Clock) -> anyhow::Result<Summary> {
    let started = Instant::now();
    let mut store = Store::open_read_write(db)?;
    let meta = store.meta()?;
    let vehicles = store.vehicles()?;
    let fences = store.fences()?;
    let fence_list: Vec<_> = fences.iter().map(|f| f.fence.clone()).collect();
    let fence_ids: Vec<i64> = fences.iter().map(|f| f.id).collect();
    let now_utc = meta.ahora_utc.unwrap_or_else(|| clock.now_utc());
    let mut fixes = 0u64;
    let rewrite = store.rewrite_analysis()?;
    for vehicle in &vehicles {
        let ctx = Context {
            config: &meta.config,
            fences: &fence_list,
            limit_kmh: vehicle.limit_kmh,
            zone: vehicle.zone,
        };
        let mut engine = engine::VehicleEngine::new(&ctx);
        rewrite.for_each_fix(vehicle.id, i64::MIN, now_utc + 1, |fix| {
            fixes += 1;
            engine.push(fix);
        })?;
        let result = engine.finish(now_utc);
        rewrite.insert(vehicle.id, &result, &fence_ids, &meta.config, now_utc)?;
    }
    let events = rewrite.commit(&Covered {
        config: &meta.config,
        until_utc: now_utc,
        fixes,
    })?;
    Ok(Summary {
        vehicles: vehicles.len(),
        fixes,
        events,
        elapsed: started.elapsed(),
    })
}
