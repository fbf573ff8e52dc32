//! Writing the detection engine's output: `eventos` and `resumen_diario`.
//!
//! Owns the mapping from an [`Analysis`] to rows. Used inline by `flota simular` (while the
//! positions are still in memory) and by `flota analizar` (re-reading them from the file,
//! through a [`Rewrite`]); both call the same function, so the tables cannot differ.

use rusqlite::{Connection, Transaction, TransactionBehavior, params};

use super::coverage::{self, Covered};
use super::queries::EventRow;
use super::reader::{Store, StoreError, for_each_fix_in, spanish};
use crate::engine::{Analysis, DetectionConfig, EventKind, Fix};

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
pub(super) fn insert(
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
    for e in event_rows(vehicle_id, analysis, fence_ids, config, now_utc) {
        event.execute(params![
            e.vehicle_id,
            e.kind,
            e.start_utc,
            e.end_utc,
            e.lat,
            e.lon,
            e.fence_id,
            e.max_kmh,
            e.limit_kmh,
            e.long,
            e.end_of_day,
            e.engine_on,
            e.from_data_start
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

/// One vehicle's detections as `eventos` rows, in the order they are stored: stops,
/// overspeeds, signal gaps, geofence visits.
fn event_rows<'a>(
    vehicle_id: i64,
    analysis: &'a Analysis,
    fence_ids: &'a [i64],
    config: &'a DetectionConfig,
    now_utc: i64,
) -> impl Iterator<Item = EventRow> + 'a {
    let row = move |kind, start_utc, end_utc, lat, lon| EventRow {
        vehicle_id,
        kind,
        start_utc,
        end_utc,
        lat,
        lon,
        fence_id: None,
        max_kmh: None,
        limit_kmh: None,
        long: false,
        end_of_day: false,
        engine_on: None,
        from_data_start: false,
    };
    let stops = analysis.stops.iter().map(move |s| EventRow {
        long: s.is_long(config, now_utc),
        end_of_day: s.went_off,
        engine_on: Some(s.engine_on),
        from_data_start: s.from_data_start,
        ..row(EventKind::Stop, s.start_utc, s.end_utc, s.lat, s.lon)
    });
    let overspeeds = analysis.overspeeds.iter().map(move |o| EventRow {
        max_kmh: Some(o.max_kmh),
        limit_kmh: Some(o.limit_kmh),
        ..row(EventKind::Overspeed, o.start_utc, o.end_utc, o.lat, o.lon)
    });
    let gaps = analysis
        .gaps
        .iter()
        .map(move |g| row(EventKind::Gap, g.from_utc, g.to_utc, g.lat, g.lon));
    // A visit is located at its fence; the fence row holds the coordinates.
    let visits = analysis.visits.iter().map(move |v| EventRow {
        fence_id: fence_ids.get(v.fence).copied(),
        from_data_start: v.from_data_start,
        ..row(EventKind::Visit, v.entry_utc, v.exit_utc, 0.0, 0.0)
    });
    stops.chain(overspeeds).chain(gaps).chain(visits)
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Statistics for the query planner on the analysis tables (cheap: positions are left out).
pub(super) fn analyze_tables(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("ANALYZE eventos; ANALYZE resumen_diario;")
}

/// Empties the analysis tables (before a full re-analysis).
fn clear(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("DELETE FROM eventos; DELETE FROM resumen_diario;")
}
