//! Writing the detection engine's output: `eventos` and `resumen_diario`.
//!
//! Owns the mapping from an [`Analysis`] to rows. Used inline by `flota simular` (while the
//! positions are still in memory) and by `flota analizar` (re-reading them from the file,
//! through a [`Rewrite`]); both call the same function, so the tables cannot differ.

use rusqlite::{Connection, Transaction, TransactionBehavior, params};

use super::coverage::{self, Covered};
use super::reader::{Store, StoreError, for_each_fix_in, spanish};
use crate::engine::{Analysis, DetectionConfig, Fix};

/// A re-analysis under way: one transaction that recreates the analysis tables if they are
/// missing, empties them, takes each vehicle's analysis, and on [`Rewrite::commit`] records
/// what it covered. Dropped without committing, it leaves the previous tables as they were.
pub struct Rewrite<'a> {
    tx: Transaction<'a>,
    path: String,
}

impl Store {
    /// Starts rewriting the analysis tables. The write lock is taken at once, so a
    /// concurrent writer is reported before any work is done.
    pub fn rewrite_analysis(&mut self) -> Result<Rewrite<'_>, StoreError> {
        let path = self.path().to_owned();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| spanish(&path, e))?;
        coverage::unseal(&tx)
            .and_then(|()| clear(&tx))
            .map_err(|e| spanish(&path, e))?;
        Ok(Rewrite { tx, path })
    }
}

impl Rewrite<'_> {
    /// A vehicle's fixes with `from_utc <= ts < to_utc`, as [`Store::for_each_fix`].
    pub fn for_each_fix(
        &self,
        vehicle_id: i64,
        from_utc: i64,
        to_utc: i64,
        each: impl FnMut(Fix),
    ) -> Result<(), StoreError> {
        for_each_fix_in(&self.tx, &self.path, vehicle_id, from_utc, to_utc, each)
    }

    /// Stores one vehicle's analysis.
    pub fn insert(
        &self,
        vehicle_id: i64,
        analysis: &Analysis,
        fence_ids: &[i64],
        config: &DetectionConfig,
        now_utc: i64,
    ) -> Result<(), StoreError> {
        insert(&self.tx, vehicle_id, analysis, fence_ids, config, now_utc)
            .map_err(|e| spanish(&self.path, e))
    }

    /// Records what was covered, gathers planner statistics and commits; returns the number
    /// of events stored.
    pub fn commit(self, covered: &Covered<'_>) -> Result<i64, StoreError> {
        let path = self.path;
        let tx = self.tx;
        let events = coverage::seal(&tx, covered)
            .and_then(|()| analyze_tables(&tx))
            .and_then(|()| tx.query_row("SELECT count(*) FROM eventos", [], |r| r.get(0)))
            .map_err(|e| spanish(&path, e))?;
        tx.commit().map_err(|e| spanish(&path, e))?;
        Ok(events)
    }
}

/// Inserts one vehicle's analysis. `fence_ids[i]` is the `geocercas.id` of the engine's
/// fence `i`.
pub fn insert(
    conn: &Connection,
    vehicle_id: i64,
    analysis: &Analysis,
    fence_ids: &[i64],
    config: &DetectionConfig,
    now_utc: i64,
) -> rusqlite::Result<()> {
    let mut event = conn.prepare_cached(
        "INSERT INTO eventos (vehiculo_id, tipo, inicio_utc, fin_utc, lat, lon, geocerca_id, velocidad_max_kmh, limite_kmh, prolongada, fin_de_jornada, motor_encendido, desde_inicio_datos)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    )?;
    for stop in &analysis.stops {
        event.execute(params![
            vehicle_id,
            "parada",
            stop.start_utc,
            stop.end_utc,
            stop.lat,
            stop.lon,
            None::<i64>,
            None::<f64>,
            None::<f64>,
            stop.is_long(config, now_utc),
            stop.went_off,
            stop.engine_on,
            stop.from_data_start
        ])?;
    }
    for episode in &analysis.overspeeds {
        event.execute(params![
            vehicle_id,
            "exceso_velocidad",
            episode.start_utc,
            episode.end_utc,
            episode.lat,
            episode.lon,
            None::<i64>,
            episode.max_kmh,
            episode.limit_kmh,
            false,
            false,
            None::<bool>,
            false
        ])?;
    }
    for gap in &analysis.gaps {
        event.execute(params![
            vehicle_id,
            "perdida_senal",
            gap.from_utc,
            gap.to_utc,
            gap.lat,
            gap.lon,
            None::<i64>,
            None::<f64>,
            None::<f64>,
            false,
            false,
            None::<bool>,
            false
        ])?;
    }
    for visit in &analysis.visits {
        // A visit is located at its fence; the fence row holds the coordinates.
        let fence_id = fence_ids.get(visit.fence).copied();
        event.execute(params![
            vehicle_id,
            "visita_geocerca",
            visit.entry_utc,
            visit.exit_utc,
            0.0,
            0.0,
            fence_id,
            None::<f64>,
            None::<f64>,
            false,
            false,
            None::<bool>,
            visit.from_data_start
        ])?;
    }
    let mut day = conn.prepare_cached(
        "INSERT INTO resumen_diario (vehiculo_id, fecha, km, km_gps, km_odometro, primer_movimiento_utc, ultimo_movimiento_utc, minutos_en_movimiento, paradas, minutos_detenida, velocidad_max_kmh, reportes, perdidas_senal, excesos_velocidad, primer_reporte_utc, ultimo_reporte_utc)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
    )?;
    for d in &analysis.days {
        day.execute(params![
            vehicle_id,
            d.date.to_string(),
            round3(d.km),
            round3(d.km_gps),
            d.km_odometer.map(round3),
            d.first_move_utc,
            d.last_move_utc,
            round3(d.moving_s as f64 / 60.0),
            d.stops,
            round3(d.stop_s as f64 / 60.0),
            d.max_speed_kmh,
            d.fixes,
            d.gaps,
            d.overspeeds,
            d.first_fix_utc,
            d.last_fix_utc
        ])?;
    }
    Ok(())
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Statistics for the query planner on the analysis tables (cheap: positions are left out).
pub fn analyze_tables(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("ANALYZE eventos; ANALYZE resumen_diario;")
}

/// Empties the analysis tables (before a full re-analysis).
fn clear(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("DELETE FROM eventos; DELETE FROM resumen_diario;")
}
