//! `flota analizar DB`: re-run the detection engine over a database's positions.
//!
//! Owns the batch path of the engine on a stored data set: read each vehicle's fixes in time
//! order, analyse up to the data's "now", and replace `eventos` and `resumen_diario` in one
//! transaction (a crash leaves the previous tables). Idempotent: running it twice, or after
//! `flota simular` (which analyses in memory), gives the same rows.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::engine::{self, Context};
use crate::store::reader::for_each_fix_in;
use crate::store::{ANALYSIS_VERSION, Store, analysis};

#[derive(Debug)]
pub struct Summary {
    pub vehicles: usize,
    pub fixes: u64,
    pub events: i64,
    pub elapsed: Duration,
}

pub fn run(db: &Path) -> anyhow::Result<Summary> {
    let started = Instant::now();
    let mut store = Store::open_read_write(db)?;
    let meta = store.meta()?;
    let vehicles = store.vehicles()?;
    let fences = store.fences()?;
    let fence_list: Vec<_> = fences.iter().map(|f| f.fence.clone()).collect();
    let fence_ids: Vec<i64> = fences.iter().map(|f| f.id).collect();
    let now_utc = match meta.ahora_utc {
        Some(ahora) => ahora,
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64),
    };
    let mut fixes = 0u64;
    let store_path = &db.display().to_string();
    let tx = store.conn.transaction()?;
    analysis::clear(&tx)?;
    {
        for vehicle in &vehicles {
            let ctx = Context {
                config: &meta.config,
                fences: &fence_list,
                limit_kmh: vehicle.limit_kmh,
                zone: meta.zone,
            };
            let mut engine = engine::VehicleEngine::new(&ctx);
            for_each_fix_in(&tx, store_path, vehicle.id, i64::MIN, now_utc + 1, |fix| {
                fixes += 1;
                engine.push(fix);
            })?;
            let result = engine.finish(now_utc);
            analysis::insert(&tx, vehicle.id, &result, &fence_ids, &meta.config, now_utc)?;
        }
    }
    tx.execute(
        "INSERT OR REPLACE INTO meta (clave, valor) VALUES ('analisis_version', ?1), ('deteccion', ?2)",
        rusqlite::params![ANALYSIS_VERSION.to_string(), meta.config.to_json()],
    )?;
    analysis::analyze_tables(&tx)?;
    let events: i64 = tx.query_row("SELECT count(*) FROM eventos", [], |r| r.get(0))?;
    tx.commit()?;
    Ok(Summary {
        vehicles: vehicles.len(),
        fixes,
        events,
        elapsed: started.elapsed(),
    })
}
