//! Writing the detection engine's output: `eventos` and `resumen_diario`.
//!
//! Owns the mapping from an [`Analysis`] to rows. Used inline by `flota simular` (while the
//! positions are still in memory) and by `flota analizar` (re-reading them from the file);
//! both call the same function, so the tables cannot differ.

use rusqlite::{Connection, params};

use crate::engine::{Analysis, DetectionConfig};

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
pub fn clear(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("DELETE FROM eventos; DELETE FROM resumen_diario;")
}
