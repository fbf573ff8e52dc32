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

use super::encoding::{FIX_COLUMNS, fix_of_row, fix_of_row_at};
use super::pg::schema::whole_days;
use super::reader::{SqliteStore, StoreError};
use super::schema::{CROSSINGS_TABLE, crossings_triggers};
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

/// What ranks an event among its kind's alerts, without the rest of its row: enough to
/// count it per vehicle and order it by severity, from a covering index; the few shown are
/// then read whole by [`SqliteStore::events_by_id`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AlertKey {
    pub id: i64,
    pub vehicle_id: i64,
    pub start_utc: i64,
    pub end_utc: Option<i64>,
    pub max_kmh: Option<f64>,
    pub limit_kmh: Option<f64>,
}

fn alert_key(r: &Row<'_>) -> rusqlite::Result<AlertKey> {
    Ok(AlertKey {
        id: r.get(0)?,
        vehicle_id: r.get(1)?,
        start_utc: r.get(2)?,
        end_utc: r.get(3)?,
        max_kmh: r.get(4)?,
        limit_kmh: r.get(5)?,
    })
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

/// Rows counted per vehicle id: in a table indexed by the id for the ids vehicles have
/// (small, from 1), in a map for any other. (A hash per row was an eighth of a month's
/// `alertas` on 1,000 units: 373,000 crossings.) Counts are signed only so a day's counter
/// can be added as it is stored; a vehicle is reported when its total is positive.
#[derive(Default)]
struct VehicleCounts {
    dense: Vec<i64>,
    other: std::collections::BTreeMap<i64, i64>,
}

impl VehicleCounts {
    /// Ids below this are counted in the table.
    const DENSE: i64 = 1 << 20;

    fn add(&mut self, vehicle_id: i64) {
        self.add_n(vehicle_id, 1);
    }

    fn add_n(&mut self, vehicle_id: i64, n: i64) {
        match usize::try_from(vehicle_id) {
            Ok(at) if vehicle_id < Self::DENSE => {
                if at >= self.dense.len() {
                    self.dense.resize(at + 1, 0);
                }
                self.dense[at] += n;
            }
            _ => *self.other.entry(vehicle_id).or_default() += n,
        }
    }

    /// `(vehicle id, count)` for every id with a positive count, by id.
    fn into_sorted(self) -> Vec<(i64, usize)> {
        let dense = (self.dense.into_iter().enumerate()).map(|(id, n)| (id as i64, n));
        let mut counts: Vec<(i64, usize)> = dense
            .chain(self.other)
            .filter_map(|(id, n)| Some((id, usize::try_from(n).ok().filter(|n| *n > 0)?)))
            .collect();
        counts.sort_unstable();
        counts
    }
}

/// [`SqliteStore::stop_at`] through `index` (an `INDEXED BY` clause, or nothing).
fn stop_at_sql(index: &str) -> String {
    format!(
        "SELECT {EVENT_COLUMNS}, id FROM eventos {index} WHERE vehiculo_id = ?1 AND tipo = '{STOP}' AND fin_utc IS NULL AND inicio_utc <= ?2
         UNION ALL
         SELECT {EVENT_COLUMNS}, id FROM eventos {index} WHERE vehiculo_id = ?1 AND tipo = '{STOP}' AND fin_utc > ?2 AND inicio_utc <= ?2
         ORDER BY inicio_utc DESC, id DESC LIMIT 1"
    )
}

/// [`SqliteStore::last_stop_end`] through `index` (an `INDEXED BY` clause, or nothing).
fn last_stop_end_sql(index: &str) -> String {
    format!(
        "SELECT fin_utc FROM eventos {index} WHERE vehiculo_id = ?1 AND tipo = '{STOP}'
         AND fin_utc > ?2 AND fin_utc <= ?3 AND inicio_utc <= ?3 ORDER BY fin_utc DESC LIMIT 1"
    )
}

/// [`SqliteStore::last_fix`].
fn last_fix_sql() -> String {
    format!(
        "SELECT {FIX_COLUMNS} FROM posiciones
         WHERE vehiculo_id = ?1 AND ts_utc <= ?2 ORDER BY ts_utc DESC LIMIT 1"
    )
}

/// [`SqliteStore::last_fixes`]: each vehicle's newest fix time at or before `?1` found by
/// one probe of the positions' key, then the row(s) at that time (a duplicate fix has a
/// higher `secuencia`; the per-unit query's backwards scan meets the highest first). `CROSS
/// JOIN` keeps the vehicles outside: with a plain join SQLite chose to scan every position
/// (47 M on the scale database, 890 M steps a call).
fn last_fixes_sql() -> String {
    format!(
        "SELECT p.vehiculo_id, {FIX} FROM vehiculos v CROSS JOIN posiciones p
         ON p.vehiculo_id = v.id AND p.ts_utc = (SELECT ts_utc FROM posiciones
             WHERE vehiculo_id = v.id AND ts_utc <= ?1 ORDER BY ts_utc DESC LIMIT 1)
         ORDER BY p.vehiculo_id, p.secuencia DESC",
        FIX = FIX_COLUMNS
            .split(", ")
            .map(|c| format!("p.{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// [`SqliteStore::stops_under_way`]: every stop under way at `?1` with its id (the caller
/// keeps one per vehicle, as [`stop_at_sql`] does).
fn stops_under_way_sql() -> String {
    format!(
        "SELECT {EVENT_COLUMNS}, id FROM eventos INDEXED BY eventos_por_fin
         WHERE tipo = '{STOP}' AND fin_utc IS NULL AND inicio_utc <= ?1
         UNION ALL
         SELECT {EVENT_COLUMNS}, id FROM eventos INDEXED BY eventos_por_fin
         WHERE tipo = '{STOP}' AND fin_utc > ?1 AND inicio_utc <= ?1"
    )
}

/// [`SqliteStore::last_stop_ends`]: [`last_stop_end_sql`] once per vehicle, in one statement.
fn last_stop_ends_sql(index: &str) -> String {
    format!(
        "SELECT v.id, (SELECT fin_utc FROM eventos {index} WHERE vehiculo_id = v.id AND tipo = '{STOP}'
             AND fin_utc > ?1 AND fin_utc <= ?2 AND inicio_utc <= ?2 ORDER BY fin_utc DESC LIMIT 1)
         FROM vehiculos v ORDER BY v.id"
    )
}

/// Of several stops a vehicle may be under at once, the one [`stop_at_sql`] answers: the
/// latest started (ties: the latest written). `rows` come as `(stop, id)`; one per vehicle
/// goes out, by vehicle id.
pub(super) fn one_stop_per_vehicle(rows: Vec<(EventRow, i64)>) -> Vec<EventRow> {
    let mut best: std::collections::BTreeMap<i64, (EventRow, i64)> = Default::default();
    for (stop, id) in rows {
        match best.get(&stop.vehicle_id) {
            Some((kept, kept_id)) if (kept.start_utc, *kept_id) >= (stop.start_utc, id) => {}
            _ => {
                best.insert(stop.vehicle_id, (stop, id));
            }
        }
    }
    best.into_values().map(|(stop, _)| stop).collect()
}

/// [`SqliteStore::alert_keys`]. The kind spelled, not bound: the partial index
/// `eventos_alertas` serves only a query whose condition implies its own.
fn alert_keys_sql(kind: EventKind) -> String {
    format!(
        "SELECT id, vehiculo_id, inicio_utc, fin_utc, velocidad_max_kmh, limite_kmh FROM eventos
         WHERE tipo = '{}' AND inicio_utc >= ?1 AND inicio_utc < ?2
         ORDER BY inicio_utc, vehiculo_id, desde_inicio_datos, id",
        kind.name()
    )
}

/// [`SqliteStore::crossings_by_vehicle`]'s vehicle column of entries or exits through `index`.
fn crossings_sql(exits: bool, index: &str) -> String {
    if exits {
        format!(
            "SELECT vehiculo_id FROM eventos INDEXED BY {index} WHERE tipo = '{VISIT}' AND fin_utc >= ?1 AND fin_utc < ?2"
        )
    } else {
        format!(
            "SELECT vehiculo_id FROM eventos INDEXED BY {index} WHERE tipo = '{VISIT}' AND inicio_utc >= ?1 AND inicio_utc < ?2 AND desde_inicio_datos = 0"
        )
    }
}

/// [`SqliteStore::first_crossings`] through `index` (an `INDEXED BY` clause, or nothing).
/// Entries go through the partial index of visits (`eventos_entradas`: already in time order,
/// and what the entries count reads, so a file needs no index of every kind by start time for
/// them); ties come in the same order as through the old `(tipo, inicio_utc, vehiculo_id, …)`
/// one, by vehicle then id.
fn first_crossings_sql(exits: bool, index: &str) -> String {
    if exits {
        format!(
            "SELECT {EVENT_COLUMNS} FROM eventos {index} WHERE tipo = '{VISIT}' AND fin_utc >= ?1 AND fin_utc < ?2 ORDER BY fin_utc LIMIT ?3"
        )
    } else {
        format!(
            "SELECT {EVENT_COLUMNS} FROM eventos {index} WHERE tipo = '{VISIT}' AND inicio_utc >= ?1 AND inicio_utc < ?2 AND desde_inicio_datos = 0 ORDER BY inicio_utc LIMIT ?3"
        )
    }
}

/// [`SqliteStore::crossings_by_vehicle`]'s whole days: each vehicle-day's entries or exits
/// in `[?1, ?2)`, days by their first second, off the table's key.
fn crossing_days_sql(exits: bool) -> String {
    let column = if exits { "salidas" } else { "entradas" };
    format!(
        "SELECT vehiculo_id, {column} FROM {CROSSINGS_TABLE} WHERE dia_utc >= ?1 AND dia_utc < ?2"
    )
}

/// [`SqliteStore::counts_crossings_per_day`]: 4 when the table and its three triggers exist.
fn crossings_kept_sql() -> String {
    let triggers = crossings_triggers()
        .iter()
        .map(|(name, _)| format!("'{name}'"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "SELECT count(*) FROM sqlite_master WHERE (type = 'table' AND name = '{CROSSINGS_TABLE}')
         OR (type = 'trigger' AND tbl_name = 'eventos' AND name IN ({triggers}))"
    )
}

impl SqliteStore {
    fn err(&self, e: rusqlite::Error) -> StoreError {
        self.sqlite(e)
    }

    /// The vehicle's last fix at or before `at_utc`.
    pub fn last_fix(&self, vehicle_id: i64, at_utc: i64) -> Result<Option<Fix>, StoreError> {
        self.conn
            .prepare_cached(&last_fix_sql())
            .and_then(|mut stmt| {
                stmt.query_row(params![vehicle_id, at_utc], fix_of_row)
                    .optional()
            })
            .map_err(|e| self.err(e))
    }

    /// A statement through `preferred`, or through `fallback` when the file lacks an index
    /// `preferred` names (`INDEXED BY` an index added after the file was analysed: its
    /// answers are the same, only slower).
    fn prepare_either(
        &self,
        preferred: &str,
        fallback: &str,
    ) -> Result<rusqlite::CachedStatement<'_>, StoreError> {
        self.conn
            .prepare_cached(preferred)
            .or_else(|_| self.conn.prepare_cached(fallback))
            .map_err(|e| self.err(e))
    }

    /// The stop the vehicle is in at `at_utc` (started by then, not ended by then): the open
    /// stop, or one ending after `at_utc`, from the vehicle's stops by end time (a moving
    /// unit's earlier stops are never read).
    pub fn stop_at(&self, vehicle_id: i64, at_utc: i64) -> Result<Option<EventRow>, StoreError> {
        let mut stmt = self.prepare_either(
            &stop_at_sql("INDEXED BY eventos_paradas_por_fin"),
            &stop_at_sql(""),
        )?;
        stmt.query_row(params![vehicle_id, at_utc], event)
            .optional()
            .map_err(|e| self.err(e))
    }

    /// When the vehicle's last stop ended, among stops ending in `(from_utc, at_utc]`.
    pub fn last_stop_end(
        &self,
        vehicle_id: i64,
        from_utc: i64,
        at_utc: i64,
    ) -> Result<Option<i64>, StoreError> {
        let mut stmt = self.prepare_either(
            &last_stop_end_sql("INDEXED BY eventos_paradas_por_fin"),
            &last_stop_end_sql(""),
        )?;
        stmt.query_row(params![vehicle_id, from_utc, at_utc], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Every vehicle's last fix at or before `at_utc`, by vehicle id, in one statement (a
    /// vehicle without one is left out): [`Self::last_fix`] for the whole fleet.
    pub fn last_fixes(&self, at_utc: i64) -> Result<Vec<(i64, Fix)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(&last_fixes_sql())
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![at_utc], |r| {
                let vehicle_id: i64 = r.get(0)?;
                let fix = fix_of_row_at(r, 1)?;
                Ok((vehicle_id, fix))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| self.err(e))?;
        let mut fixes: Vec<(i64, Fix)> = Vec::with_capacity(rows.len());
        for (vehicle_id, fix) in rows {
            // The highest `secuencia` comes first; a duplicate after it is not the answer.
            if fixes.last().is_none_or(|(last, _)| *last != vehicle_id) {
                fixes.push((vehicle_id, fix));
            }
        }
        Ok(fixes)
    }

    /// The stop each vehicle is in at `at_utc`, by vehicle id, in one statement:
    /// [`Self::stop_at`] for the whole fleet.
    pub fn stops_under_way(&self, at_utc: i64) -> Result<Vec<EventRow>, StoreError> {
        let rows = self
            .conn
            .prepare_cached(&stops_under_way_sql())
            .and_then(|mut stmt| {
                stmt.query_map(params![at_utc], |r| Ok((event(r)?, r.get(19)?)))?
                    .collect()
            })
            .map_err(|e| self.err(e))?;
        Ok(one_stop_per_vehicle(rows))
    }

    /// When each vehicle's last stop ended, among stops ending in `(from_utc, at_utc]`, by
    /// vehicle id (vehicles without one left out), in one statement: [`Self::last_stop_end`]
    /// for the whole fleet.
    pub fn last_stop_ends(
        &self,
        from_utc: i64,
        at_utc: i64,
    ) -> Result<Vec<(i64, i64)>, StoreError> {
        let mut stmt = self.prepare_either(
            &last_stop_ends_sql("INDEXED BY eventos_paradas_por_fin"),
            &last_stop_ends_sql(""),
        )?;
        let rows = stmt
            .query_map(params![from_utc, at_utc], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, Option<i64>>(1)?))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| self.err(e))?;
        Ok(rows
            .into_iter()
            .filter_map(|(id, end)| end.map(|end| (id, end)))
            .collect())
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

    /// The keys of every vehicle's events of `kind` starting in `[from_utc, to_utc)`, by start
    /// time (speeding and signal losses: a partial covering index holds just these).
    pub fn alert_keys(
        &self,
        kind: EventKind,
        from_utc: i64,
        to_utc: i64,
    ) -> Result<Vec<AlertKey>, StoreError> {
        self.conn
            .prepare_cached(&alert_keys_sql(kind))
            .and_then(|mut stmt| {
                stmt.query_map(params![from_utc, to_utc], alert_key)?
                    .collect()
            })
            .map_err(|e| self.err(e))
    }

    /// The keys of [`Self::long_stops`], in its order, from its partial index alone.
    pub fn long_stop_keys(&self, from_utc: i64, to_utc: i64) -> Result<Vec<AlertKey>, StoreError> {
        let sql = format!(
            "SELECT id, vehiculo_id, inicio_utc, fin_utc, NULL, NULL FROM eventos INDEXED BY eventos_prolongadas
             WHERE tipo = '{STOP}' AND fin_de_jornada = 0 AND (prolongada = 1 OR fin_utc IS NULL)
             AND inicio_utc >= ?1 AND inicio_utc < ?2 ORDER BY inicio_utc, id"
        );
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| {
                stmt.query_map(params![from_utc, to_utc], alert_key)?
                    .collect()
            })
            .map_err(|e| self.err(e))
    }

    /// The events with these ids, in the order given (an id not found is left out).
    pub fn events_by_id(&self, ids: &[i64]) -> Result<Vec<EventRow>, StoreError> {
        let sql = format!("SELECT {EVENT_COLUMNS} FROM eventos WHERE id = ?1");
        let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| self.err(e))?;
        let mut rows = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(row) = stmt
                .query_row(params![id], event)
                .optional()
                .map_err(|e| self.err(e))?
            {
                rows.push(row);
            }
        }
        Ok(rows)
    }

    /// Geofence entries (`exits == false`: visits starting in range, not already under way
    /// when the data began) or exits (visits ending in range), counted per vehicle: the whole
    /// UTC days summed from `cruces_por_dia`, the partial days at the ends counted from the
    /// covering indexes (all of the range from those in a file without that table or one
    /// of its triggers: src/store/schema.rs, `CROSSINGS_DDL`).
    pub fn crossings_by_vehicle(
        &self,
        exits: bool,
        from_utc: i64,
        to_utc: i64,
    ) -> Result<Vec<(i64, usize)>, StoreError> {
        let mut counts = VehicleCounts::default();
        let days = match whole_days(from_utc, to_utc) {
            Some(days) if self.counts_crossings_per_day()? => Some(days),
            _ => None,
        };
        match days {
            Some((first, end)) => {
                self.count_crossings(&mut counts, exits, from_utc, first)?;
                self.sum_crossing_days(&mut counts, exits, first, end)?;
                self.count_crossings(&mut counts, exits, end, to_utc)?;
            }
            None => self.count_crossings(&mut counts, exits, from_utc, to_utc)?,
        }
        Ok(counts.into_sorted())
    }

    /// Adds the entries or exits in `[from_utc, to_utc)` counted one by one from the
    /// covering indexes.
    fn count_crossings(
        &self,
        counts: &mut VehicleCounts,
        exits: bool,
        from_utc: i64,
        to_utc: i64,
    ) -> Result<(), StoreError> {
        if from_utc >= to_utc {
            return Ok(());
        }
        // Read the vehicle column straight off a covering index and count here: cheaper than
        // SQLite's temporary B-tree for a GROUP BY over a range ordered by time. Entries come
        // from the partial index of visits alone (half the pages of `eventos_por_tipo`, which
        // only files written before it existed have, and which new files no longer have).
        let (preferred, fallback) = if exits {
            let sql = crossings_sql(true, "eventos_por_fin");
            (sql.clone(), sql)
        } else {
            (
                crossings_sql(false, "eventos_entradas"),
                crossings_sql(false, "eventos_por_tipo"),
            )
        };
        let mut stmt = self.prepare_either(&preferred, &fallback)?;
        let mut rows = stmt
            .query(params![from_utc, to_utc])
            .map_err(|e| self.err(e))?;
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            counts.add(row.get(0).map_err(|e| self.err(e))?);
        }
        Ok(())
    }

    /// Adds the entries or exits of the UTC days starting in `[first_day, end_day)` from
    /// `cruces_por_dia`.
    fn sum_crossing_days(
        &self,
        counts: &mut VehicleCounts,
        exits: bool,
        first_day: i64,
        end_day: i64,
    ) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(&crossing_days_sql(exits))
            .map_err(|e| self.err(e))?;
        let mut rows = stmt
            .query(params![first_day, end_day])
            .map_err(|e| self.err(e))?;
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let (vehicle, n) = (row.get(0), row.get(1));
            counts.add_n(
                vehicle.map_err(|e| self.err(e))?,
                n.map_err(|e| self.err(e))?,
            );
        }
        Ok(())
    }

    /// Whether `cruces_por_dia` is there with its three triggers (a file written by an older
    /// flota has neither; an older flota's analysis leaves both, and its writes fire them).
    /// Asked on every count: the server's connection may see the file replaced by one of
    /// either kind.
    fn counts_crossings_per_day(&self) -> Result<bool, StoreError> {
        self.conn
            .prepare_cached(&crossings_kept_sql())
            .and_then(|mut stmt| stmt.query_row([], |r| r.get::<_, i64>(0)))
            .map(|n| n == 4)
            .map_err(|e| self.err(e))
    }

    /// The first `limit` geofence entries or exits in range, in time order.
    pub fn first_crossings(
        &self,
        exits: bool,
        from_utc: i64,
        to_utc: i64,
        limit: usize,
    ) -> Result<Vec<EventRow>, StoreError> {
        let (preferred, fallback) = if exits {
            let sql = first_crossings_sql(true, "");
            (sql.clone(), sql)
        } else {
            (
                first_crossings_sql(false, "INDEXED BY eventos_entradas"),
                first_crossings_sql(false, ""),
            )
        };
        let mut stmt = self.prepare_either(&preferred, &fallback)?;
        stmt.query_map(params![from_utc, to_utc, limit as i64], event)
            .and_then(|rows| rows.collect())
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

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::*;
    use crate::store::schema::{ANALYSIS_DDL, CROSSINGS_DDL, CROSSINGS_FILL, DDL};

    /// How SQLite would run `sql` on a file with every analysis index, one line per step.
    fn plan(sql: &str) -> String {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(DDL).unwrap();
        conn.execute_batch(ANALYSIS_DDL).unwrap();
        conn.execute_batch(CROSSINGS_DDL).unwrap();
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let unbound = vec![rusqlite::types::Null; stmt.parameter_count()];
        let steps: Vec<String> = stmt
            .query_map(rusqlite::params_from_iter(unbound), |r| {
                r.get::<_, String>(3)
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        steps.join("\n")
    }

    /// A cached per-unit statement is compiled once, not again for every unit's values
    /// (SQLite re-prepares a statement whose plan a bound value could change unless plans
    /// are kept stable: 3,002 times in one `mapa_flota` call on 1,000 units).
    #[test]
    fn a_cached_statement_is_not_prepared_again_for_new_values() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(DDL).unwrap();
        conn.execute_batch(ANALYSIS_DDL).unwrap();
        crate::store::reader::stable_plans(&conn);
        for (sql, params) in [
            (last_fix_sql(), vec![1, 100]),
            (
                stop_at_sql("INDEXED BY eventos_paradas_por_fin"),
                vec![1, 100],
            ),
            (
                last_stop_end_sql("INDEXED BY eventos_paradas_por_fin"),
                vec![1, 0, 100],
            ),
        ] {
            for vehicle_id in 1..=5 {
                let mut values = params.clone();
                values[0] = vehicle_id;
                let mut stmt = conn.prepare_cached(&sql).unwrap();
                let mut rows = stmt.query(rusqlite::params_from_iter(values)).unwrap();
                while rows.next().unwrap().is_some() {}
            }
            let stmt = conn.prepare_cached(&sql).unwrap();
            let runs = stmt.get_status(rusqlite::StatementStatus::Run);
            let again = stmt.get_status(rusqlite::StatementStatus::RePrepare);
            assert_eq!((runs, again), (5, 0), "{sql}");
        }
    }

    #[test]
    fn counts_per_vehicle_are_by_id_whatever_the_id() {
        let mut counts = VehicleCounts::default();
        for id in [3, -7, 1, 3, i64::MAX, 3, 0, -7, 1 << 20, 1] {
            counts.add(id);
        }
        assert_eq!(
            counts.into_sorted(),
            [(-7, 2), (0, 1), (1, 2), (3, 3), (1 << 20, 1), (i64::MAX, 1)]
        );
    }

    /// Day counters add as stored; a vehicle whose crossings were all taken back (a visit
    /// deleted after its day was counted) is not reported with zero.
    #[test]
    fn counters_added_per_day_report_positive_totals_only() {
        let mut counts = VehicleCounts::default();
        for (id, n) in [
            (2, 3),
            (5, 1),
            (5, -1),
            (-4, 2),
            (-4, -2),
            (1 << 21, 4),
            (2, 0),
        ] {
            counts.add_n(id, n);
        }
        counts.add(7);
        assert_eq!(counts.into_sorted(), [(2, 3), (7, 1), (1 << 21, 4)]);
    }

    /// The alert view and the fleet map read indexes, not table rows: speeding and signal
    /// losses with what ranks them, geofence crossings from indexes of visits alone, and a
    /// unit's stop under way and last stop end from its stops by end time (without them the
    /// alerts of a month on 1,000 units read 1,300 table pages, and the fleet map every
    /// earlier event of every moving unit).
    #[test]
    fn the_alert_view_and_the_fleet_map_are_served_by_indexes() {
        for kind in [EventKind::Overspeed, EventKind::Gap] {
            let plan = plan(&alert_keys_sql(kind));
            assert!(plan.contains("COVERING INDEX eventos_alertas"), "{plan}");
        }
        for (exits, index) in [(false, "eventos_entradas"), (true, "eventos_por_fin")] {
            let plan = plan(&crossings_sql(exits, index));
            assert!(plan.contains(&format!("COVERING INDEX {index}")), "{plan}");
        }
        for exits in [false, true] {
            let plan = plan(&crossing_days_sql(exits));
            assert!(
                plan.contains("SEARCH cruces_por_dia USING PRIMARY KEY (dia_utc>? AND dia_utc<?)"),
                "{plan}"
            );
        }
        // The first entries (the crossing detail) and the fill's entries half read the
        // partial index of visits: no file written now has an index of every kind by start
        // time, without which the planner took the table or `eventos_por_fin` and a sort.
        let first = plan(&first_crossings_sql(false, "INDEXED BY eventos_entradas"));
        assert!(
            first.contains("USING INDEX eventos_entradas (inicio_utc>? AND inicio_utc<?)"),
            "{first}"
        );
        assert!(!first.contains("TEMP B-TREE"), "{first}");
        let fill = CROSSINGS_FILL
            .split(';')
            .find(|sql| sql.contains("INSERT"))
            .unwrap();
        let fill = plan(fill);
        for index in ["eventos_entradas", "eventos_por_fin"] {
            assert!(fill.contains(&format!("COVERING INDEX {index}")), "{fill}");
        }
        let fixes = plan(&last_fixes_sql());
        assert!(fixes.starts_with("SCAN v"), "{fixes}");
        assert!(
            fixes.contains("SEARCH p USING PRIMARY KEY (vehiculo_id=? AND ts_utc=?)"),
            "{fixes}"
        );
        for sql in [
            stop_at_sql("INDEXED BY eventos_paradas_por_fin"),
            last_stop_end_sql("INDEXED BY eventos_paradas_por_fin"),
            last_stop_ends_sql("INDEXED BY eventos_paradas_por_fin"),
        ] {
            let plan = plan(&sql);
            assert!(
                plan.contains("eventos_paradas_por_fin (vehiculo_id=?"),
                "{plan}"
            );
            // Only the fleet-wide one walks the vehicles; none scans events.
            assert!(!plan.contains("SCAN eventos"), "{plan}");
            assert_eq!(plan.contains("SCAN"), plan.contains("SCAN v"), "{plan}");
        }
    }
}
