//! The read queries behind the fleet tools.
//!
//! Owns the SQL the tools need, each query bounded (by vehicle, time range or an explicit
//! limit) and served by the tables' keys: positions by `(vehiculo_id, ts_utc)`, events by
//! `(vehiculo_id, inicio_utc)` or `(tipo, inicio_utc)`, days by `(vehiculo_id, fecha)`. The
//! evaluation's whole-table reads (`every_event`, `every_day_km`) are the unbounded exception:
//! `flota evaluar` scores everything, offline. Event kinds are stored as [`EventKind::name`].

use chrono::NaiveDate;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use rusqlite::{OptionalExtension, Row, params};

use super::encoding::{FIX_COLUMNS, fix_of_row};
use super::reader::{SqliteStore, StoreError};
use crate::engine::{EventKind, Fix};

/// `eventos.tipo` holds [`EventKind::name`].
impl ToSql for EventKind {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.name()))
    }
}

impl FromSql for EventKind {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let word = value.as_str()?;
        EventKind::from_name(word).ok_or_else(|| {
            FromSqlError::Other(format!("tipo de evento desconocido: {word}").into())
        })
    }
}

/// One row of `eventos`.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    pub vehicle_id: i64,
    pub kind: EventKind,
    pub start_utc: i64,
    pub end_utc: Option<i64>,
    pub lat: f64,
    pub lon: f64,
    pub fence_id: Option<i64>,
    pub max_kmh: Option<f64>,
    pub limit_kmh: Option<f64>,
    pub long: bool,
    pub end_of_day: bool,
    pub engine_on: Option<bool>,
    pub from_data_start: bool,
    /// Why it was detected (`engine::Evidence`, threshold name as stored).
    pub first_fix_utc: i64,
    pub last_fix_utc: i64,
    pub fixes: i64,
    pub measure: f64,
    pub threshold: String,
    pub threshold_value: f64,
}

/// Kinds some queries below spell as SQL literals rather than bind: the partial index
/// `eventos_prolongadas` serves only a query that spells its condition.
const STOP: &str = EventKind::Stop.name();
const VISIT: &str = EventKind::Visit.name();

/// The columns every read of `eventos` selects, in [`super::analysis::EVENT_VALUE_COLUMNS`]'s
/// order (one list, so a new column reaches every reader of both backends at once).
pub(super) const EVENT_COLUMNS: &str = super::analysis::EVENT_VALUE_COLUMNS;

pub(super) fn event(r: &Row<'_>) -> rusqlite::Result<EventRow> {
    Ok(EventRow {
        vehicle_id: r.get(0)?,
        kind: r.get(1)?,
        start_utc: r.get(2)?,
        end_utc: r.get(3)?,
        lat: r.get(4)?,
        lon: r.get(5)?,
        fence_id: r.get(6)?,
        max_kmh: r.get(7)?,
        limit_kmh: r.get(8)?,
        long: r.get::<_, i64>(9)? != 0,
        end_of_day: r.get::<_, i64>(10)? != 0,
        engine_on: r.get::<_, Option<i64>>(11)?.map(|v| v != 0),
        from_data_start: r.get::<_, i64>(12)? != 0,
        first_fix_utc: r.get(13)?,
        last_fix_utc: r.get(14)?,
        fixes: r.get(15)?,
        measure: r.get(16)?,
        threshold: r.get(17)?,
        threshold_value: r.get(18)?,
    })
}

/// One row of `resumen_diario`.
#[derive(Debug, Clone, PartialEq)]
pub struct DayRow {
    pub vehicle_id: i64,
    pub date: String,
    pub km: f64,
    pub first_move_utc: Option<i64>,
    pub last_move_utc: Option<i64>,
    pub moving_min: f64,
    pub stops: i64,
    pub stop_min: f64,
    pub max_speed_kmh: f64,
    pub fixes: i64,
    pub gaps: i64,
    pub overspeeds: i64,
}

fn day(r: &Row<'_>) -> rusqlite::Result<DayRow> {
    Ok(DayRow {
        vehicle_id: r.get(0)?,
        date: r.get(1)?,
        km: r.get(2)?,
        first_move_utc: r.get(3)?,
        last_move_utc: r.get(4)?,
        moving_min: r.get(5)?,
        stops: r.get(6)?,
        stop_min: r.get(7)?,
        max_speed_kmh: r.get(8)?,
        fixes: r.get(9)?,
        gaps: r.get(10)?,
        overspeeds: r.get(11)?,
    })
}

const DAY_COLUMNS: &str = "vehiculo_id, fecha, km, primer_movimiento_utc, ultimo_movimiento_utc, minutos_en_movimiento, paradas, minutos_detenida, velocidad_max_kmh, reportes, perdidas_senal, excesos_velocidad";

/// A vehicle's events overlapping a range, one list per kind, each in time order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VehicleEvents {
    pub stops: Vec<EventRow>,
    pub overspeeds: Vec<EventRow>,
    pub gaps: Vec<EventRow>,
    pub visits: Vec<EventRow>,
}

/// Per-vehicle totals over a range of days.
#[derive(Debug, Clone, PartialEq)]
pub struct KmRow {
    pub vehicle_id: i64,
    pub km: f64,
    pub days: i64,
    pub moving_min: f64,
}

/// One vehicle-day's kilometres: what is reported, and the GPS-only estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct DayKm {
    pub vehicle_id: i64,
    pub date: String,
    pub km: f64,
    pub km_gps: f64,
}

impl SqliteStore {
    fn err(&self, e: rusqlite::Error) -> StoreError {
        self.sqlite(e)
    }

    /// The vehicle's last fix at or before `at_utc`.
    pub fn last_fix(&self, vehicle_id: i64, at_utc: i64) -> Result<Option<Fix>, StoreError> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {FIX_COLUMNS} FROM posiciones
                 WHERE vehiculo_id = ?1 AND ts_utc <= ?2 ORDER BY ts_utc DESC LIMIT 1"
            ))
            .and_then(|mut stmt| {
                stmt.query_row(params![vehicle_id, at_utc], fix_of_row)
                    .optional()
            })
            .map_err(|e| self.err(e))
    }

    /// The stop the vehicle is in at `at_utc` (started by then, not ended by then).
    pub fn stop_at(&self, vehicle_id: i64, at_utc: i64) -> Result<Option<EventRow>, StoreError> {
        let sql = format!(
            "SELECT {EVENT_COLUMNS} FROM eventos WHERE vehiculo_id = ?1 AND tipo = '{STOP}' AND inicio_utc <= ?2
             AND (fin_utc IS NULL OR fin_utc > ?2) ORDER BY inicio_utc DESC LIMIT 1"
        );
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| {
                stmt.query_row(params![vehicle_id, at_utc], event)
                    .optional()
            })
            .map_err(|e| self.err(e))
    }

    /// Every stop under way at `at_utc`, all vehicles (served by the end-time index: open
    /// stops have a NULL end, the rest end after `at_utc`).
    pub fn stops_at(&self, at_utc: i64) -> Result<Vec<EventRow>, StoreError> {
        let sql = format!(
            "SELECT {EVENT_COLUMNS} FROM eventos INDEXED BY eventos_por_fin
             WHERE tipo = '{STOP}' AND fin_utc IS NULL AND inicio_utc <= ?1
             UNION ALL
             SELECT {EVENT_COLUMNS} FROM eventos INDEXED BY eventos_por_fin
             WHERE tipo = '{STOP}' AND fin_utc > ?1 AND inicio_utc <= ?1"
        );
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| stmt.query_map(params![at_utc], event)?.collect())
            .map_err(|e| self.err(e))
    }

    /// A vehicle's events of `kind` overlapping `[from_utc, to_utc)`, in time order.
    pub fn vehicle_events(
        &self,
        vehicle_id: i64,
        kind: EventKind,
        from_utc: i64,
        to_utc: i64,
    ) -> Result<Vec<EventRow>, StoreError> {
        let sql = format!(
            "SELECT {EVENT_COLUMNS} FROM eventos WHERE vehiculo_id = ?1 AND tipo = ?2 AND inicio_utc < ?4
             AND (fin_utc IS NULL OR fin_utc > ?3) ORDER BY inicio_utc"
        );
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| {
                stmt.query_map(params![vehicle_id, kind, from_utc, to_utc], event)?
                    .collect()
            })
            .map_err(|e| self.err(e))
    }

    /// A vehicle's events of every kind overlapping `[from_utc, to_utc)`.
    pub fn vehicle_events_by_kind(
        &self,
        vehicle_id: i64,
        from_utc: i64,
        to_utc: i64,
    ) -> Result<VehicleEvents, StoreError> {
        let of = |kind| self.vehicle_events(vehicle_id, kind, from_utc, to_utc);
        Ok(VehicleEvents {
            stops: of(EventKind::Stop)?,
            gaps: of(EventKind::Gap)?,
            overspeeds: of(EventKind::Overspeed)?,
            visits: of(EventKind::Visit)?,
        })
    }

    /// Every vehicle's events of `kind` starting in `[from_utc, to_utc)`.
    pub fn events_starting(
        &self,
        kind: EventKind,
        from_utc: i64,
        to_utc: i64,
    ) -> Result<Vec<EventRow>, StoreError> {
        let sql = format!(
            "SELECT {EVENT_COLUMNS} FROM eventos WHERE tipo = ?1 AND inicio_utc >= ?2 AND inicio_utc < ?3 ORDER BY inicio_utc"
        );
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| {
                stmt.query_map(params![kind, from_utc, to_utc], event)?
                    .collect()
            })
            .map_err(|e| self.err(e))
    }

    /// Geofence entries (`exits == false`: visits starting in range, not already under way
    /// when the data began) or exits (visits ending in range), counted per vehicle from the
    /// covering indexes alone.
    pub fn crossings_by_vehicle(
        &self,
        exits: bool,
        from_utc: i64,
        to_utc: i64,
    ) -> Result<Vec<(i64, usize)>, StoreError> {
        // Read the vehicle column straight off the covering index and count here: cheaper than
        // SQLite's temporary B-tree for a GROUP BY over a range ordered by time.
        let sql = if exits {
            format!(
                "SELECT vehiculo_id FROM eventos INDEXED BY eventos_por_fin WHERE tipo = '{VISIT}' AND fin_utc >= ?1 AND fin_utc < ?2"
            )
        } else {
            format!(
                "SELECT vehiculo_id FROM eventos INDEXED BY eventos_por_tipo WHERE tipo = '{VISIT}' AND inicio_utc >= ?1 AND inicio_utc < ?2 AND desde_inicio_datos = 0"
            )
        };
        let mut counts: std::collections::HashMap<i64, usize> = std::collections::HashMap::new();
        let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| self.err(e))?;
        let mut rows = stmt
            .query(params![from_utc, to_utc])
            .map_err(|e| self.err(e))?;
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            *counts
                .entry(row.get(0).map_err(|e| self.err(e))?)
                .or_default() += 1;
        }
        let mut counts: Vec<(i64, usize)> = counts.into_iter().collect();
        counts.sort_unstable();
        Ok(counts)
    }

    /// The first `limit` geofence entries or exits in range, in time order.
    pub fn first_crossings(
        &self,
        exits: bool,
        from_utc: i64,
        to_utc: i64,
        limit: usize,
    ) -> Result<Vec<EventRow>, StoreError> {
        let sql = if exits {
            format!(
                "SELECT {EVENT_COLUMNS} FROM eventos WHERE tipo = '{VISIT}' AND fin_utc >= ?1 AND fin_utc < ?2 ORDER BY fin_utc LIMIT ?3"
            )
        } else {
            format!(
                "SELECT {EVENT_COLUMNS} FROM eventos WHERE tipo = '{VISIT}' AND inicio_utc >= ?1 AND inicio_utc < ?2 AND desde_inicio_datos = 0 ORDER BY inicio_utc LIMIT ?3"
            )
        };
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| {
                stmt.query_map(params![from_utc, to_utc, limit as i64], event)?
                    .collect()
            })
            .map_err(|e| self.err(e))
    }

    /// Long-stop candidates starting in `[from_utc, to_utc)`: flagged long, or still going
    /// on (their length depends on "now"), never the end-of-day parking. A partial index holds
    /// just these few rows.
    pub fn long_stops(&self, from_utc: i64, to_utc: i64) -> Result<Vec<EventRow>, StoreError> {
        let sql = format!(
            "SELECT {EVENT_COLUMNS} FROM eventos INDEXED BY eventos_prolongadas
             WHERE tipo = '{STOP}' AND fin_de_jornada = 0 AND (prolongada = 1 OR fin_utc IS NULL)
             AND inicio_utc >= ?1 AND inicio_utc < ?2 ORDER BY inicio_utc"
        );
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| stmt.query_map(params![from_utc, to_utc], event)?.collect())
            .map_err(|e| self.err(e))
    }

    /// A vehicle's aggregates for one local date.
    pub fn day(&self, vehicle_id: i64, date: NaiveDate) -> Result<Option<DayRow>, StoreError> {
        let sql = format!(
            "SELECT {DAY_COLUMNS} FROM resumen_diario WHERE vehiculo_id = ?1 AND fecha = ?2"
        );
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| {
                stmt.query_row(params![vehicle_id, date.to_string()], day)
                    .optional()
            })
            .map_err(|e| self.err(e))
    }

    /// Kilometres per vehicle over the local dates `[from_date, to_date]`.
    pub fn km_by_vehicle(
        &self,
        from_date: NaiveDate,
        to_date: NaiveDate,
    ) -> Result<Vec<KmRow>, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT vehiculo_id, sum(km), count(*), sum(minutos_en_movimiento) FROM resumen_diario
                 WHERE fecha >= ?1 AND fecha <= ?2 AND reportes > 0 GROUP BY vehiculo_id",
            )
            .and_then(|mut stmt| {
                stmt.query_map(params![from_date.to_string(), to_date.to_string()], |r| {
                    Ok(KmRow { vehicle_id: r.get(0)?, km: r.get(1)?, days: r.get(2)?, moving_min: r.get(3)? })
                })?
                .collect()
            })
            .map_err(|e| self.err(e))
    }

    /// How many fixes a vehicle sent in `[from_utc, to_utc)`.
    pub fn count_fixes(
        &self,
        vehicle_id: i64,
        from_utc: i64,
        to_utc: i64,
    ) -> Result<i64, StoreError> {
        self.conn
            .prepare_cached("SELECT count(*) FROM posiciones WHERE vehiculo_id = ?1 AND ts_utc >= ?2 AND ts_utc < ?3 AND secuencia = 0")
            .and_then(|mut stmt| stmt.query_row(params![vehicle_id, from_utc, to_utc], |r| r.get(0)))
            .map_err(|e| self.err(e))
    }

    /// Every event of every vehicle, for `flota evaluar` (the one whole-table reader). Rows
    /// of a kind flota does not know (written by hand) are left out: nothing scores them.
    pub fn every_event(&self) -> Result<Vec<EventRow>, StoreError> {
        let sql = format!("SELECT {EVENT_COLUMNS} FROM eventos ORDER BY vehiculo_id, inicio_utc");
        let known = |r: &Row<'_>| {
            let kind: String = r.get(1)?;
            EventKind::from_name(&kind).map(|_| event(r)).transpose()
        };
        self.conn
            .prepare(&sql)
            .and_then(|mut stmt| {
                stmt.query_map([], known)?
                    .filter_map(Result::transpose)
                    .collect()
            })
            .map_err(|e| self.err(e))
    }

    /// Every vehicle-day's kilometres, reported and GPS-only, for `flota evaluar`.
    pub fn every_day_km(&self) -> Result<Vec<DayKm>, StoreError> {
        self.conn
            .prepare("SELECT vehiculo_id, fecha, km, km_gps FROM resumen_diario")
            .and_then(|mut stmt| {
                stmt.query_map([], |r| {
                    Ok(DayKm {
                        vehicle_id: r.get(0)?,
                        date: r.get(1)?,
                        km: r.get(2)?,
                        km_gps: r.get(3)?,
                    })
                })?
                .collect()
            })
            .map_err(|e| self.err(e))
    }
}
