//! Writing the detection engine's output: `eventos` and `resumen_diario`.
//!
//! Owns the mapping from an [`Analysis`] to rows. Used inline by `flota simular` (while the
//! positions are still in memory) and by `flota analizar` (re-reading them from the file,
//! through a [`SqliteRewrite`]); both call the same function, so the tables cannot differ.

use rusqlite::types::Value;
use rusqlite::{Connection, Transaction, TransactionBehavior, params_from_iter};

use super::coverage::{self, Covered, CrossingCounts};
use super::queries::EventRow;
use super::reader::{SqliteStore, StoreError, for_each_fix_in, spanish};
use crate::engine::{Analysis, DayStats, DetectionConfig, EventKind, Evidence, Fix};

/// A re-analysis under way: one transaction that recreates the analysis tables if they are
/// missing, empties them, takes each vehicle's analysis, and on [`SqliteRewrite::commit`] records
/// what it covered. Dropped without committing, it leaves the previous tables as they were.
pub struct SqliteRewrite<'a> {
    tx: Transaction<'a>,
    path: String,
}

impl SqliteStore {
    /// Starts rewriting the analysis tables. The write lock is taken at once, so a
    /// concurrent writer is reported before any work is done.
    pub fn rewrite_analysis(&mut self) -> Result<SqliteRewrite<'_>, StoreError> {
        let path = self.path().to_owned();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| spanish(&path, e))?;
        coverage::unseal(&tx)
            .and_then(|()| clear(&tx))
            .map_err(|e| spanish(&path, e))?;
        Ok(SqliteRewrite { tx, path })
    }
}

impl SqliteRewrite<'_> {
    /// A vehicle's fixes with `from_utc <= ts < to_utc`, as [`SqliteStore::for_each_fix`].
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
        insert(
            &self.tx, vehicle_id, analysis, fence_ids, config, now_utc, None,
        )
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

/// The columns of an `eventos` row, in [`EVENT_VALUES`]'s order, after the id.
pub(super) const EVENT_VALUE_COLUMNS: &str = "vehiculo_id, tipo, inicio_utc, fin_utc, lat, lon, geocerca_id, velocidad_max_kmh, limite_kmh, prolongada, fin_de_jornada, motor_encendido, desde_inicio_datos, primer_reporte_utc, ultimo_reporte_utc, reportes, medida, umbral, umbral_valor";
/// The columns of a `resumen_diario` row, in [`day_values`]'s order.
pub(super) const DAY_VALUE_COLUMNS: &str = "vehiculo_id, fecha, km, km_gps, km_odometro, primer_movimiento_utc, ultimo_movimiento_utc, minutos_en_movimiento, paradas, minutos_detenida, velocidad_max_kmh, reportes, perdidas_senal, excesos_velocidad, primer_reporte_utc, ultimo_reporte_utc";

/// Values in an `eventos` row.
pub(super) const EVENT_VALUES: usize = 19;
/// Values in a `resumen_diario` row.
pub(super) const DAY_VALUES: usize = 16;

/// An event row's values exactly as stored (and as read back): the one mapping both the batch
/// insert and the incremental writer's comparisons use.
pub(super) fn event_values(e: &EventRow) -> [Value; EVENT_VALUES] {
    [
        Value::Integer(e.vehicle_id),
        Value::Text(e.kind.name().to_owned()),
        Value::Integer(e.start_utc),
        e.end_utc.map_or(Value::Null, Value::Integer),
        Value::Real(e.lat),
        Value::Real(e.lon),
        e.fence_id.map_or(Value::Null, Value::Integer),
        e.max_kmh.map_or(Value::Null, Value::Real),
        e.limit_kmh.map_or(Value::Null, Value::Real),
        Value::Integer(i64::from(e.long)),
        Value::Integer(i64::from(e.end_of_day)),
        e.engine_on
            .map_or(Value::Null, |on| Value::Integer(i64::from(on))),
        Value::Integer(i64::from(e.from_data_start)),
        Value::Integer(e.first_fix_utc),
        Value::Integer(e.last_fix_utc),
        Value::Integer(e.fixes),
        Value::Real(e.measure),
        Value::Text(e.threshold.clone()),
        Value::Real(e.threshold_value),
    ]
}

/// A day row's values exactly as stored (and as read back).
pub(super) fn day_values(vehicle_id: i64, d: &DayStats) -> [Value; DAY_VALUES] {
    let integer = |v: Option<i64>| v.map_or(Value::Null, Value::Integer);
    [
        Value::Integer(vehicle_id),
        Value::Text(d.date.to_string()),
        Value::Real(round3(d.km)),
        Value::Real(round3(d.km_gps)),
        d.km_odometer
            .map_or(Value::Null, |k| Value::Real(round3(k))),
        integer(d.first_move_utc),
        integer(d.last_move_utc),
        Value::Real(round3(d.moving_s as f64 / 60.0)),
        Value::Integer(i64::from(d.stops)),
        Value::Real(round3(d.stop_s as f64 / 60.0)),
        Value::Real(d.max_speed_kmh),
        Value::Integer(i64::from(d.fixes)),
        Value::Integer(i64::from(d.gaps)),
        Value::Integer(i64::from(d.overspeeds)),
        Value::Integer(d.first_fix_utc),
        Value::Integer(d.last_fix_utc),
    ]
}

/// Inserts one vehicle's analysis. `fence_ids[i]` is the `geocercas.id` of the engine's
/// fence `i`. `crossings`, when given, counts the event rows as they are stored.
pub(super) fn insert(
    conn: &Connection,
    vehicle_id: i64,
    analysis: &Analysis,
    fence_ids: &[i64],
    config: &DetectionConfig,
    now_utc: i64,
    mut crossings: Option<&mut CrossingCounts>,
) -> rusqlite::Result<()> {
    let mut event = conn.prepare_cached(&format!(
        "INSERT INTO eventos ({EVENT_VALUE_COLUMNS}) VALUES ({})",
        placeholders(EVENT_VALUES)
    ))?;
    for e in event_rows(vehicle_id, analysis, fence_ids, config, now_utc) {
        event.execute(params_from_iter(event_values(&e)))?;
        if let Some(counts) = crossings.as_deref_mut() {
            counts.add(&e);
        }
    }
    let mut day = conn.prepare_cached(&format!(
        "INSERT INTO resumen_diario ({DAY_VALUE_COLUMNS}) VALUES ({})",
        placeholders(DAY_VALUES)
    ))?;
    for d in &analysis.days {
        day.execute(params_from_iter(day_values(vehicle_id, d)))?;
    }
    Ok(())
}

/// `?1, ?2, …, ?n`.
pub(super) fn placeholders(n: usize) -> String {
    (1..=n)
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One vehicle's detections as `eventos` rows, in the order they are stored: stops,
/// overspeeds, signal gaps, geofence visits.
pub(super) fn event_rows<'a>(
    vehicle_id: i64,
    analysis: &'a Analysis,
    fence_ids: &'a [i64],
    config: &'a DetectionConfig,
    now_utc: i64,
) -> impl Iterator<Item = EventRow> + 'a {
    let row = move |kind, start_utc, end_utc, lat, lon, evidence: &Evidence| EventRow {
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
        first_fix_utc: evidence.first_fix_utc,
        last_fix_utc: evidence.last_fix_utc,
        fixes: i64::from(evidence.fixes),
        measure: evidence.measure,
        threshold: evidence.threshold.name.to_owned(),
        threshold_value: evidence.threshold.value,
    };
    let stops = analysis.stops.iter().map(move |s| EventRow {
        long: s.is_long(config, now_utc),
        end_of_day: s.went_off,
        engine_on: Some(s.engine_on),
        from_data_start: s.from_data_start,
        ..row(
            EventKind::Stop,
            s.start_utc,
            s.end_utc,
            s.lat,
            s.lon,
            &s.evidence,
        )
    });
    let overspeeds = analysis.overspeeds.iter().map(move |o| EventRow {
        max_kmh: Some(o.max_kmh),
        limit_kmh: Some(o.limit_kmh),
        ..row(
            EventKind::Overspeed,
            o.start_utc,
            o.end_utc,
            o.lat,
            o.lon,
            &o.evidence,
        )
    });
    let gaps = analysis.gaps.iter().map(move |g| {
        row(
            EventKind::Gap,
            g.from_utc,
            g.to_utc,
            g.lat,
            g.lon,
            &g.evidence,
        )
    });
    // A visit is located at its fence; the fence row holds the coordinates.
    let visits = analysis.visits.iter().map(move |v| EventRow {
        fence_id: fence_ids.get(v.fence).copied(),
        from_data_start: v.from_data_start,
        ..row(
            EventKind::Visit,
            v.entry_utc,
            v.exit_utc,
            0.0,
            0.0,
            &v.evidence,
        )
    });
    stops.chain(overspeeds).chain(gaps).chain(visits)
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Statistics for the query planner on the analysis tables (cheap: positions are left out).
///
/// Only the per-index row counts (`sqlite_stat1`) are kept: with the value samples of
/// `sqlite_stat4` (SQLite is built with them), every statement comparing a bound value with an
/// indexed column is parsed and planned again whenever the value changes, which is every call
/// (a quarter of `mapa_flota`'s instructions on 1,000 units), and the plans are the same
/// without them. So the samples are not even gathered: under an `analysis_limit` SQLite
/// collects none, and a limit no index reaches ([`EXACT_ANALYSIS_LIMIT`] rows) leaves every
/// index read whole, so `sqlite_stat1` is exactly the unlimited `ANALYZE`'s. The samples were
/// 27 % of `ANALYZE`'s instructions on the scale scenario's events, run with both workers
/// idle.
pub(super) fn analyze_tables(conn: &Connection) -> rusqlite::Result<()> {
    let limit: i64 = conn.query_row("PRAGMA analysis_limit", [], |r| r.get(0))?;
    conn.execute_batch(&format!(
        "PRAGMA analysis_limit = {EXACT_ANALYSIS_LIMIT}; ANALYZE eventos; ANALYZE resumen_diario;"
    ))?;
    conn.execute_batch(&format!("PRAGMA analysis_limit = {limit};"))?;
    let has_samples: bool = conn.query_row(
        "SELECT count(*) > 0 FROM sqlite_master WHERE name = 'sqlite_stat4'",
        [],
        |r| r.get(0),
    )?;
    if has_samples {
        conn.execute_batch("DELETE FROM sqlite_stat4;")?;
    }
    Ok(())
}

/// The largest `analysis_limit` SQLite takes (it keeps the low 31 bits). It approximates an
/// index's counts only past this many rows, which the analysis tables never hold.
const EXACT_ANALYSIS_LIMIT: i64 = 0x7fff_ffff;

/// Empties the analysis tables (before a full re-analysis).
fn clear(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("DELETE FROM eventos; DELETE FROM resumen_diario;")
}

#[cfg(test)]
mod planner_tests {
    use rusqlite::{Connection, StatementStatus};

    use super::analyze_tables;
    use crate::store::schema::{ANALYSIS_DDL, DDL};

    /// A statement over the analysis tables is planned once, not again for each new value
    /// bound to it (which value samples in `sqlite_stat4` would make SQLite do).
    #[test]
    fn a_bound_value_does_not_replan_a_statement() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(DDL).unwrap();
        conn.execute_batch(ANALYSIS_DDL).unwrap();
        conn.execute_batch(
            "INSERT INTO vehiculos VALUES (1, 'P-1', 'camion', 'A', 1, 80, '[]', 'UTC');",
        )
        .unwrap();
        for i in 0..500 {
            conn.execute(
                "INSERT INTO eventos (vehiculo_id, tipo, inicio_utc, fin_utc, lat, lon) \
                 VALUES (1, 'parada', ?1, ?2, 0, 0)",
                [i * 600, i * 600 + 300],
            )
            .unwrap();
        }
        analyze_tables(&conn).unwrap();
        drop(conn);
        // A reader opens the finished file, as the server does.
        let conn = Connection::open(&path).unwrap();
        let mut stmt = conn
            .prepare("SELECT count(*) FROM eventos WHERE vehiculo_id = 1 AND inicio_utc >= ?1")
            .unwrap();
        for from in [0, 150_000, 290_000] {
            stmt.query_row([from], |r| r.get::<_, i64>(0)).unwrap();
        }
        assert_eq!(stmt.get_status(StatementStatus::RePrepare), 0);
    }
}

#[cfg(test)]
mod statistics_tests {
    use proptest::prelude::*;
    use rusqlite::Connection;

    use super::analyze_tables;
    use crate::store::schema::{ANALYSIS_DDL, DDL};

    const KINDS: [&str; 5] = [
        "parada",
        "exceso_velocidad",
        "perdida_senal",
        "visita_geocerca",
        "otro",
    ];

    /// One `eventos` row: vehicle, kind, start, end, max speed, long, end of day, from the
    /// data's start.
    type Event = (i64, usize, i64, Option<i64>, Option<f64>, bool, bool, bool);

    fn event() -> impl Strategy<Value = Event> {
        (
            1..6i64,
            0..KINDS.len(),
            // Few distinct times, so prefixes repeat; some before 1970.
            -20..40i64,
            proptest::option::of(-20..60i64),
            proptest::option::of(prop_oneof![Just(55.5), Just(90.0)]),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        )
    }

    /// A file with the schema, these events and `days` daily rows per vehicle, its
    /// statistics gathered by `gather`; returns `sqlite_stat1` in order.
    fn stat1(
        events: &[Event],
        days: i64,
        gather: impl Fn(&Connection),
    ) -> Vec<(String, String, String)> {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("PRAGMA foreign_keys = OFF;").unwrap();
        conn.execute_batch(DDL).unwrap();
        conn.execute_batch(ANALYSIS_DDL).unwrap();
        for (vehicle, kind, start, end, max_kmh, long, end_of_day, from_start) in events {
            conn.execute(
                "INSERT INTO eventos (vehiculo_id, tipo, inicio_utc, fin_utc, lat, lon, \
                 velocidad_max_kmh, limite_kmh, prolongada, fin_de_jornada, desde_inicio_datos) \
                 VALUES (?1, ?2, ?3 * 600, ?4 * 600, 0, 0, ?5, ?5, ?6, ?7, ?8)",
                rusqlite::params![
                    vehicle,
                    KINDS[*kind],
                    start,
                    end,
                    max_kmh,
                    long,
                    end_of_day,
                    from_start
                ],
            )
            .unwrap();
        }
        for vehicle in 1..=3 {
            for day in 0..days {
                conn.execute(
                    "INSERT INTO resumen_diario VALUES (?1, ?2, 1, 1, NULL, NULL, NULL, 0, 0, 0, 0, 1, 0, 0, 0, 0)",
                    rusqlite::params![vehicle, format!("2026-08-{:02}", 1 + day)],
                )
                .unwrap();
            }
        }
        gather(&conn);
        let mut stmt = conn
            .prepare("SELECT tbl, coalesce(idx, ''), stat FROM sqlite_stat1 ORDER BY tbl, idx")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    proptest! {
        /// The statistics the writer gathers (no samples) are exactly those of a plain
        /// `ANALYZE` of the same tables, whatever the rows: the planner sees the same numbers.
        #[test]
        fn the_statistics_are_those_of_a_plain_analyze(
            events in proptest::collection::vec(event(), 0..300),
            days in 0..20i64,
        ) {
            let plain = stat1(&events, days, |c| {
                c.execute_batch("ANALYZE eventos; ANALYZE resumen_diario;").unwrap();
            });
            let written = stat1(&events, days, |c| {
                analyze_tables(c).unwrap();
                // The limit is the connection's own again, and no samples are kept.
                let limit: i64 = c.query_row("PRAGMA analysis_limit", [], |r| r.get(0)).unwrap();
                assert_eq!(limit, 0);
                let samples: i64 = c.query_row("SELECT count(*) FROM sqlite_stat4", [], |r| r.get(0)).unwrap();
                assert_eq!(samples, 0);
            });
            prop_assert_eq!(written, plain);
        }
    }
}
