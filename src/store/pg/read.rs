//! Reading a flota database on PostgreSQL: the same typed answers as the SQLite reader
//! (src/store/reader.rs, queries.rs, coverage.rs), from the same tables.
//!
//! Owns every PostgreSQL query that reads. Where SQLite returns rows in an index's order
//! without saying so (ties broken by rowid), the query here spells that order out (ties broken
//! by `eventos.id`, which both backends assign in the same insertion order), so both backends
//! answer row for row alike.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use chrono::NaiveDate;
use postgres::types::ToSql;
use postgres::{Client, Row, Statement};

use super::schema::{PARTITION_S, whole_days};
use super::{CallFlag, Canceller, connect, error};
use crate::engine::{EventKind, Fix};
use crate::geometry::earth::LatLon;
use crate::geometry::geofence::{Geofence, Shape, ShapeColumns};
use crate::store::coverage::{self, AnalysisState};
use crate::store::encoding::StoredRow;
use crate::store::location::PgUrl;
use crate::store::meta::{Key, Meta};
use crate::store::queries::EVENT_COLUMNS;
use crate::store::queries::{AlertKey, DayKm, DayRow, EventRow, KmRow};
use crate::store::reader::{StoreError, StoredFence, StoredRoute, Vehicle};
use crate::store::schema::SCHEMA_VERSION;

type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// A connection to a flota database on PostgreSQL (read-only unless opened for the
/// analysis). The client sits in a `RefCell`: the store's methods take `&self`, and a store
/// is used by one thread at a time.
pub struct PgStore {
    client: RefCell<Client>,
    url: PgUrl,
    canceller: Canceller,
    flag: Option<CallFlag>,
    /// Every statement this connection has prepared, by its text: run again, a statement
    /// is one round trip (bind and execute) instead of two (parse and describe first). The
    /// texts are few: values are always bound, never written in.
    statements: RefCell<HashMap<String, Statement>>,
}

const STOP: &str = EventKind::Stop.name();
const VISIT: &str = EventKind::Visit.name();

const FIX_COLUMNS: &str =
    "ts_utc, lat_e6, lon_e6, velocidad_kmh, rumbo_grados, ignicion, odometro_m";
const DAY_COLUMNS: &str = "vehiculo_id, fecha, km, primer_movimiento_utc, ultimo_movimiento_utc, minutos_en_movimiento, paradas, minutos_detenida, velocidad_max_kmh, reportes, perdidas_senal, excesos_velocidad";

impl PgStore {
    /// Opens read-only: every transaction on this connection is `READ ONLY`.
    pub fn open(url: &PgUrl) -> Result<PgStore, StoreError> {
        Self::open_with(url, true)
    }

    /// Opens for `flota analizar`, which rewrites the analysis tables.
    pub fn open_read_write(url: &PgUrl) -> Result<PgStore, StoreError> {
        Self::open_with(url, false)
    }

    fn open_with(url: &PgUrl, read_only: bool) -> Result<PgStore, StoreError> {
        let client = connect(url, read_only)?;
        let store = PgStore {
            client: RefCell::new(client),
            url: url.clone(),
            canceller: Canceller::new(),
            flag: None,
            statements: RefCell::default(),
        };
        // A prepared statement is still planned for its values on every run, as an unnamed
        // one was (a generic plan could not prune `posiciones`' partitions at plan time).
        store.batch("SET plan_cache_mode = force_custom_plan")?;
        store.check_version()?;
        Ok(store)
    }

    pub fn path(&self) -> &str {
        self.url.shown()
    }

    /// Cancels the running statement when the flag `flag` returns goes up.
    pub fn interrupt_when(&mut self, flag: CallFlag) {
        self.flag = Some(flag);
    }

    /// Ends any statement that runs longer than `limit` (`None`: no limit).
    pub fn set_statement_timeout(&self, limit: Option<Duration>) -> Result<(), StoreError> {
        let ms = limit.map_or(0, |l| l.as_millis().max(1));
        self.batch(&format!("SET statement_timeout = {ms}"))
    }

    /// Whether the connection is gone (the server restarted or dropped it): such a store is
    /// thrown away and a new one opened.
    pub fn is_broken(&self) -> bool {
        self.client.borrow().is_closed()
    }

    pub(in crate::store) fn with_client<T>(
        &self,
        run: impl FnOnce(&mut Client) -> Result<T, postgres::Error>,
    ) -> Result<T, StoreError> {
        let mut client = self.client.borrow_mut();
        let _watch = self
            .flag
            .and_then(|flag| flag())
            .map(|flag| self.canceller.watch(flag, &client));
        run(&mut client).map_err(|e| error(&self.url, &e))
    }

    fn batch(&self, sql: &str) -> Result<(), StoreError> {
        self.with_client(|c| c.batch_execute(sql))
    }

    /// `sql` prepared on `client`, once per connection.
    fn prepared(&self, client: &mut Client, sql: &str) -> Result<Statement, postgres::Error> {
        if let Some(statement) = self.statements.borrow().get(sql) {
            return Ok(statement.clone());
        }
        let statement = client.prepare(sql)?;
        (self.statements.borrow_mut()).insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    fn rows(&self, sql: &str, params: Params<'_>) -> Result<Vec<Row>, StoreError> {
        self.with_client(|c| {
            let statement = self.prepared(c, sql)?;
            c.query(&statement, params)
        })
    }

    fn map<T>(
        &self,
        sql: &str,
        params: Params<'_>,
        each: impl Fn(&Row) -> Result<T, postgres::Error>,
    ) -> Result<Vec<T>, StoreError> {
        self.with_client(|c| {
            let statement = self.prepared(c, sql)?;
            c.query(&statement, params)?.iter().map(each).collect()
        })
    }

    /// Starts the read transaction of [`crate::store::Store::read_consistently`]: one snapshot
    /// for every query in it.
    pub(in crate::store) fn begin_read(&self) -> Result<(), StoreError> {
        self.batch("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    }

    pub(in crate::store) fn end_read(&self, ok: bool) -> Result<(), StoreError> {
        self.batch(if ok { "COMMIT" } else { "ROLLBACK" })
    }

    /// Changes whenever any transaction commits on the server since the last look (the
    /// snapshot's upper bound): a reader reloads the fleet's fixed data then.
    pub fn data_version(&self) -> Result<i64, StoreError> {
        let rows = self.rows(
            "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint",
            &[],
        )?;
        self.with_client(|_| rows[0].try_get(0))
    }

    fn check_version(&self) -> Result<(), StoreError> {
        let found = match self.meta_values() {
            Ok(values) => values
                .get(Key::SchemaVersion.name())
                .and_then(|v| v.parse::<i64>().ok())
                .unwrap_or(0),
            Err(StoreError::MissingTable { table, .. }) if table == "meta" => {
                return Err(StoreError::NoTables {
                    path: self.path().to_owned(),
                });
            }
            Err(e) => return Err(e),
        };
        if found != SCHEMA_VERSION {
            return Err(StoreError::Version {
                path: self.path().to_owned(),
                found,
                expected: SCHEMA_VERSION,
            });
        }
        Ok(())
    }

    fn meta_values(&self) -> Result<HashMap<String, String>, StoreError> {
        self.map("SELECT clave, valor FROM meta", &[], |r| {
            Ok((r.try_get(0)?, r.try_get(1)?))
        })
        .map(|pairs| pairs.into_iter().collect())
    }

    pub fn meta(&self) -> Result<Meta, StoreError> {
        let values = self.meta_values()?;
        Meta::parse(|key| values.get(key.name()).cloned()).map_err(|e| StoreError::Server {
            path: self.path().to_owned(),
            message: e.to_string(),
        })
    }

    pub fn vehicles(&self) -> Result<Vec<Vehicle>, StoreError> {
        self.map(
            "SELECT id, placa, tipo, conductor, activo, limite_kmh, rutas, zona_horaria FROM vehiculos ORDER BY id",
            &[],
            |r| {
                let routes: String = r.try_get(6)?;
                let zone: String = r.try_get(7)?;
                Ok(Vehicle {
                    id: r.try_get(0)?,
                    plate: r.try_get(1)?,
                    kind: r.try_get(2)?,
                    driver: r.try_get(3)?,
                    active: r.try_get::<_, i64>(4)? != 0,
                    limit_kmh: r.try_get(5)?,
                    routes: serde_json::from_str(&routes).unwrap_or_default(),
                    zone: zone.parse().unwrap_or(chrono_tz::UTC),
                })
            },
        )
    }

    pub fn fences(&self) -> Result<Vec<StoredFence>, StoreError> {
        let rows = self.rows(
            "SELECT id, nombre, tipo, forma, centro_lat, centro_lon, medio_lado_m, radio_m, poligono_wkt, limite_kmh FROM geocercas ORDER BY id",
            &[],
        )?;
        let mut fences = Vec::new();
        for r in &rows {
            let fence = self.with_client(|_| {
                let form: String = r.try_get(3)?;
                let wkt: String = r.try_get(8)?;
                let columns = ShapeColumns {
                    form: &form,
                    centre: LatLon::new(r.try_get(4)?, r.try_get(5)?),
                    half_side_m: r.try_get(6)?,
                    radius_m: r.try_get(7)?,
                    wkt: &wkt,
                };
                Ok((
                    r.try_get::<_, i64>(0)?,
                    Shape::from_columns(&columns),
                    r.try_get::<_, String>(1)?,
                    r.try_get::<_, String>(2)?,
                    r.try_get::<_, Option<f64>>(9)?,
                ))
            })?;
            let (id, shape, name, kind, limit) = fence;
            let Some(shape) = shape else {
                return Err(StoreError::Server {
                    path: self.path().to_owned(),
                    message: format!("la geocerca {id} tiene una forma ilegible"),
                });
            };
            fences.push(StoredFence {
                id,
                fence: Geofence::new(name, kind, shape, limit),
            });
        }
        Ok(fences)
    }

    pub fn routes(&self) -> Result<Vec<StoredRoute>, StoreError> {
        let heads: Vec<(i64, String, String)> = self.map(
            "SELECT id, nombre, polilinea FROM rutas ORDER BY id",
            &[],
            |r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)),
        )?;
        let stops: Vec<(i64, String, LatLon)> = self.map(
            "SELECT ruta_id, nombre, lat, lon FROM paradas ORDER BY ruta_id, orden",
            &[],
            |r| {
                Ok((
                    r.try_get(0)?,
                    r.try_get(1)?,
                    LatLon::new(r.try_get(2)?, r.try_get(3)?),
                ))
            },
        )?;
        Ok(heads
            .into_iter()
            .map(|(id, name, polyline)| StoredRoute {
                name,
                polyline,
                stops: stops
                    .iter()
                    .filter(|(route, _, _)| *route == id)
                    .map(|(_, name, at)| (name.clone(), *at))
                    .collect(),
            })
            .collect())
    }

    /// A vehicle's fixes with `from_utc <= ts < to_utc`, in time order, duplicates dropped.
    pub fn fixes(
        &self,
        vehicle_id: i64,
        from_utc: i64,
        to_utc: i64,
    ) -> Result<Vec<Fix>, StoreError> {
        let mut out = Vec::new();
        self.for_each_fix(vehicle_id, from_utc, to_utc, |fix| out.push(fix))?;
        Ok(out)
    }

    /// Streams a vehicle's fixes (as [`Self::fixes`]) without collecting them.
    pub fn for_each_fix(
        &self,
        vehicle_id: i64,
        from_utc: i64,
        to_utc: i64,
        mut each: impl FnMut(Fix),
    ) -> Result<(), StoreError> {
        let sql = format!(
            "SELECT {FIX_COLUMNS} FROM posiciones WHERE vehiculo_id = $1 AND ts_utc >= $2 AND ts_utc < $3 AND secuencia = 0 ORDER BY ts_utc"
        );
        self.with_client(|c| {
            let statement = self.prepared(c, &sql)?;
            let mut rows = c.query_raw(&statement, [vehicle_id, from_utc, to_utc])?;
            while let Some(r) = postgres::fallible_iterator::FallibleIterator::next(&mut rows)? {
                each(fix(&r)?);
            }
            Ok(())
        })
    }

    /// The vehicle's last fix at or before `at_utc`.
    /// The vehicle's newest fix at or before `at_utc`. Looked for in the last day first
    /// (the partitions of that day alone: a unit that reports is found there), then in
    /// everything before it: over every day's partition at once, the server merges one
    /// index probe per day (1.5 ms a unit at 30 days, a second for `unidades_detenidas`).
    pub fn last_fix(&self, vehicle_id: i64, at_utc: i64) -> Result<Option<Fix>, StoreError> {
        let recent = format!(
            "SELECT {FIX_COLUMNS} FROM posiciones WHERE vehiculo_id = $1 AND ts_utc <= $2 AND ts_utc > $3 ORDER BY ts_utc DESC, secuencia DESC LIMIT 1"
        );
        let since = at_utc.saturating_sub(PARTITION_S);
        if let Some(found) = self
            .map(&recent, &[&vehicle_id, &at_utc, &since], fix)?
            .into_iter()
            .next()
        {
            return Ok(Some(found));
        }
        let older = format!(
            "SELECT {FIX_COLUMNS} FROM posiciones WHERE vehiculo_id = $1 AND ts_utc <= $2 ORDER BY ts_utc DESC, secuencia DESC LIMIT 1"
        );
        Ok(self
            .map(&older, &[&vehicle_id, &since], fix)?
            .into_iter()
            .next())
    }

    /// Every vehicle's last fix at or before `at_utc`, by vehicle id: [`Self::last_fix`]'s
    /// two probes for the whole fleet, each a `LATERAL` subquery over `vehiculos`. The days
    /// before the last are asked about in a second statement, only for the vehicles the
    /// last day had no fix of: one statement whose arm over every day's partition never ran
    /// still cost its planning on every call (a custom plan over 30 partitions: 1.6 ms against
    /// 0.25 ms for the last day's alone, warm, at load 11).
    pub fn last_fixes(&self, at_utc: i64) -> Result<Vec<(i64, Fix)>, StoreError> {
        let recent = format!(
            "SELECT v.id, f.* FROM vehiculos v LEFT JOIN LATERAL (
                SELECT {FIX_COLUMNS} FROM posiciones WHERE vehiculo_id = v.id AND ts_utc <= $1 AND ts_utc > $2
                ORDER BY ts_utc DESC, secuencia DESC LIMIT 1) f ON true
             ORDER BY v.id"
        );
        let since = at_utc.saturating_sub(PARTITION_S);
        let mut found = Vec::new();
        let mut silent: Vec<i64> = Vec::new();
        let rows = self.map(&recent, &[&at_utc, &since], |r| {
            let ts: Option<i64> = r.try_get(1)?;
            Ok((r.try_get(0)?, ts.map(|_| fix_at(r, 1)).transpose()?))
        })?;
        for (id, fix) in rows {
            match fix {
                Some(fix) => found.push((id, fix)),
                None => silent.push(id),
            }
        }
        if silent.is_empty() {
            return Ok(found);
        }
        let older = format!(
            "SELECT v.id, f.* FROM unnest($2::bigint[]) v(id) CROSS JOIN LATERAL (
                SELECT {FIX_COLUMNS} FROM posiciones WHERE vehiculo_id = v.id AND ts_utc <= $1
                ORDER BY ts_utc DESC, secuencia DESC LIMIT 1) f"
        );
        found.extend(self.map(&older, &[&since, &silent], |r| {
            Ok((r.try_get(0)?, fix_at(r, 1)?))
        })?);
        found.sort_by_key(|(id, _)| *id);
        Ok(found)
    }

    /// The stop each vehicle is in at `at_utc`, by vehicle id, in one statement:
    /// [`Self::stop_at`] for the whole fleet.
    pub fn stops_under_way(&self, at_utc: i64) -> Result<Vec<EventRow>, StoreError> {
        let sql = format!(
            "SELECT DISTINCT ON (vehiculo_id) {EVENT_COLUMNS} FROM eventos WHERE tipo = '{STOP}' AND inicio_utc <= $1
             AND (fin_utc IS NULL OR fin_utc > $1) ORDER BY vehiculo_id, inicio_utc DESC, id DESC"
        );
        self.map(&sql, &[&at_utc], event)
    }

    /// When each vehicle's last stop ended, among stops ending in `(from_utc, at_utc]`, by
    /// vehicle id, in one statement: [`Self::last_stop_end`] per vehicle as a `LATERAL`
    /// subquery (a backwards probe of `eventos_paradas_por_fin`).
    pub fn last_stop_ends(
        &self,
        from_utc: i64,
        at_utc: i64,
    ) -> Result<Vec<(i64, i64)>, StoreError> {
        let sql = format!(
            "SELECT v.id, e.fin_utc FROM vehiculos v CROSS JOIN LATERAL (
                SELECT fin_utc FROM eventos WHERE vehiculo_id = v.id AND tipo = '{STOP}'
                AND fin_utc > $1 AND fin_utc <= $2 AND inicio_utc <= $2 ORDER BY fin_utc DESC LIMIT 1) e
             ORDER BY v.id"
        );
        self.map(&sql, &[&from_utc, &at_utc], |r| {
            Ok((r.try_get(0)?, r.try_get(1)?))
        })
    }

    pub fn stop_at(&self, vehicle_id: i64, at_utc: i64) -> Result<Option<EventRow>, StoreError> {
        let sql = format!(
            "SELECT {EVENT_COLUMNS} FROM eventos WHERE vehiculo_id = $1 AND tipo = '{STOP}' AND inicio_utc <= $2
             AND (fin_utc IS NULL OR fin_utc > $2) ORDER BY inicio_utc DESC, id DESC LIMIT 1"
        );
        Ok(self
            .map(&sql, &[&vehicle_id, &at_utc], event)?
            .into_iter()
            .next())
    }

    pub fn last_stop_end(
        &self,
        vehicle_id: i64,
        from_utc: i64,
        at_utc: i64,
    ) -> Result<Option<i64>, StoreError> {
        let sql = format!(
            "SELECT fin_utc FROM eventos WHERE vehiculo_id = $1 AND tipo = '{STOP}'
             AND fin_utc > $2 AND fin_utc <= $3 AND inicio_utc <= $3 ORDER BY fin_utc DESC LIMIT 1"
        );
        Ok(self
            .map(&sql, &[&vehicle_id, &from_utc, &at_utc], |r| r.try_get(0))?
            .into_iter()
            .next())
    }

    pub fn alert_keys(
        &self,
        kind: EventKind,
        from_utc: i64,
        to_utc: i64,
    ) -> Result<Vec<AlertKey>, StoreError> {
        // The kind spelled, not bound: the partial index `eventos_alertas` serves only a
        // plan that knows the kind is one of its own.
        let sql = format!(
            "SELECT id, vehiculo_id, inicio_utc, fin_utc, velocidad_max_kmh, limite_kmh FROM eventos
             WHERE tipo = '{}' AND inicio_utc >= $1 AND inicio_utc < $2
             ORDER BY inicio_utc, vehiculo_id, desde_inicio_datos, id",
            kind.name()
        );
        self.map(&sql, &[&from_utc, &to_utc], alert_key)
    }

    pub fn long_stop_keys(&self, from_utc: i64, to_utc: i64) -> Result<Vec<AlertKey>, StoreError> {
        let sql = format!(
            "SELECT id, vehiculo_id, inicio_utc, fin_utc, NULL::DOUBLE PRECISION, NULL::DOUBLE PRECISION FROM eventos
             WHERE tipo = '{STOP}' AND fin_de_jornada = 0 AND (prolongada = 1 OR fin_utc IS NULL)
             AND inicio_utc >= $1 AND inicio_utc < $2 ORDER BY inicio_utc, id"
        );
        self.map(&sql, &[&from_utc, &to_utc], alert_key)
    }

    pub fn events_by_id(&self, ids: &[i64]) -> Result<Vec<EventRow>, StoreError> {
        let sql = format!("SELECT {EVENT_COLUMNS}, id FROM eventos WHERE id = ANY($1)");
        let found: HashMap<i64, EventRow> = self
            .map(&sql, &[&ids], |r| Ok((r.try_get(19)?, event(r)?)))?
            .into_iter()
            .collect();
        Ok(ids.iter().filter_map(|id| found.get(id).cloned()).collect())
    }

    pub fn stops_at(&self, at_utc: i64) -> Result<Vec<EventRow>, StoreError> {
        let sql = format!(
            "(SELECT {EVENT_COLUMNS} FROM eventos WHERE tipo = '{STOP}' AND fin_utc IS NULL AND inicio_utc <= $1 ORDER BY vehiculo_id, id)
             UNION ALL
             (SELECT {EVENT_COLUMNS} FROM eventos WHERE tipo = '{STOP}' AND fin_utc > $1 AND inicio_utc <= $1 ORDER BY fin_utc, vehiculo_id, id)"
        );
        self.map(&sql, &[&at_utc], event)
    }

    pub fn vehicle_events(
        &self,
        vehicle_id: i64,
        kind: EventKind,
        from_utc: i64,
        to_utc: i64,
    ) -> Result<Vec<EventRow>, StoreError> {
        let sql = format!(
            "SELECT {EVENT_COLUMNS} FROM eventos WHERE vehiculo_id = $1 AND tipo = $2 AND inicio_utc < $4
             AND (fin_utc IS NULL OR fin_utc > $3) ORDER BY inicio_utc, id"
        );
        self.map(
            &sql,
            &[&vehicle_id, &kind.name(), &from_utc, &to_utc],
            event,
        )
    }

    /// Geofence entries or exits per vehicle in `[from_utc, to_utc)`: the whole UTC days
    /// summed from `cruces_por_dia`, the partial days at the ends counted from `eventos`
    /// (src/store/pg/schema.rs, `CROSSINGS_DDL`); all from `eventos` in a database without
    /// that table or its triggers.
    pub fn crossings_by_vehicle(
        &self,
        exits: bool,
        from_utc: i64,
        to_utc: i64,
    ) -> Result<Vec<(i64, usize)>, StoreError> {
        if self.counts_crossings_per_day()? {
            let (ts, entries_only) = if exits {
                ("fin_utc", "")
            } else {
                ("inicio_utc", " AND desde_inicio_datos = 0")
            };
            let column = if exits { "salidas" } else { "entradas" };
            let crossings =
                format!("SELECT vehiculo_id, 1 FROM eventos WHERE tipo = '{VISIT}'{entries_only}");
            let sql = format!(
                "SELECT vehiculo_id, sum(n)::bigint FROM (
                   SELECT vehiculo_id, {column} AS n FROM cruces_por_dia WHERE dia_utc >= $1 AND dia_utc < $2
                   UNION ALL {crossings} AND {ts} >= $3 AND {ts} < $4
                   UNION ALL {crossings} AND {ts} >= $5 AND {ts} < $6
                 ) c GROUP BY vehiculo_id HAVING sum(n) > 0 ORDER BY vehiculo_id"
            );
            // No whole day: the range alone from `eventos`, the days and second end empty.
            let (first, end) = whole_days(from_utc, to_utc).unwrap_or((to_utc, to_utc));
            let bounds = [first, end, from_utc, first, end, to_utc];
            let params: Vec<&(dyn ToSql + Sync)> =
                bounds.iter().map(|b| b as &(dyn ToSql + Sync)).collect();
            return self.map(&sql, &params, |r| {
                Ok((r.try_get(0)?, r.try_get::<_, i64>(1)? as usize))
            });
        }
        let sql = if exits {
            format!(
                "SELECT vehiculo_id, count(*) FROM eventos WHERE tipo = '{VISIT}' AND fin_utc >= $1 AND fin_utc < $2 GROUP BY vehiculo_id ORDER BY vehiculo_id"
            )
        } else {
            format!(
                "SELECT vehiculo_id, count(*) FROM eventos WHERE tipo = '{VISIT}' AND inicio_utc >= $1 AND inicio_utc < $2 AND desde_inicio_datos = 0 GROUP BY vehiculo_id ORDER BY vehiculo_id"
            )
        };
        self.map(&sql, &[&from_utc, &to_utc], |r| {
            Ok((r.try_get(0)?, r.try_get::<_, i64>(1)? as usize))
        })
    }

    /// Whether `cruces_por_dia` is there with its three triggers enabled (a database written
    /// by an older flota has neither; a disabled trigger would leave the counts behind). Asked on every count: a long-lived reader may see the
    /// database replaced by one of either kind.
    fn counts_crossings_per_day(&self) -> Result<bool, StoreError> {
        let rows = self.rows(
            "SELECT to_regclass('cruces_por_dia') IS NOT NULL
                    AND (SELECT count(*) FROM pg_trigger WHERE tgrelid = to_regclass('eventos')
                         AND tgname IN ('cruces_insercion', 'cruces_borrado', 'cruces_actualizacion')
                         AND tgenabled <> 'D') = 3",
            &[],
        )?;
        self.with_client(|_| rows[0].try_get(0))
    }

    pub fn first_crossings(
        &self,
        exits: bool,
        from_utc: i64,
        to_utc: i64,
        limit: usize,
    ) -> Result<Vec<EventRow>, StoreError> {
        let sql = if exits {
            format!(
                "SELECT {EVENT_COLUMNS} FROM eventos WHERE tipo = '{VISIT}' AND fin_utc >= $1 AND fin_utc < $2 ORDER BY fin_utc, vehiculo_id, id LIMIT $3"
            )
        } else {
            format!(
                "SELECT {EVENT_COLUMNS} FROM eventos WHERE tipo = '{VISIT}' AND inicio_utc >= $1 AND inicio_utc < $2 AND desde_inicio_datos = 0 ORDER BY inicio_utc, vehiculo_id, desde_inicio_datos, id LIMIT $3"
            )
        };
        self.map(&sql, &[&from_utc, &to_utc, &(limit as i64)], event)
    }

    pub fn long_stops(&self, from_utc: i64, to_utc: i64) -> Result<Vec<EventRow>, StoreError> {
        let sql = format!(
            "SELECT {EVENT_COLUMNS} FROM eventos
             WHERE tipo = '{STOP}' AND fin_de_jornada = 0 AND (prolongada = 1 OR fin_utc IS NULL)
             AND inicio_utc >= $1 AND inicio_utc < $2 ORDER BY inicio_utc, id"
        );
        self.map(&sql, &[&from_utc, &to_utc], event)
    }

    pub fn day(&self, vehicle_id: i64, date: NaiveDate) -> Result<Option<DayRow>, StoreError> {
        let sql = format!(
            "SELECT {DAY_COLUMNS} FROM resumen_diario WHERE vehiculo_id = $1 AND fecha = $2"
        );
        Ok(self
            .map(&sql, &[&vehicle_id, &date.to_string()], day)?
            .into_iter()
            .next())
    }

    pub fn km_by_vehicle(
        &self,
        from_date: NaiveDate,
        to_date: NaiveDate,
    ) -> Result<Vec<KmRow>, StoreError> {
        // Summed in the key's order (a vehicle's days by date), as SQLite sums them: the same
        // additions in the same order give the same last bits.
        self.map(
            "SELECT vehiculo_id, sum(km ORDER BY fecha), count(*), sum(minutos_en_movimiento ORDER BY fecha) FROM resumen_diario
             WHERE fecha >= $1 AND fecha <= $2 AND reportes > 0 GROUP BY vehiculo_id ORDER BY vehiculo_id",
            &[&from_date.to_string(), &to_date.to_string()],
            |r| {
                Ok(KmRow {
                    vehicle_id: r.try_get(0)?,
                    km: r.try_get(1)?,
                    days: r.try_get(2)?,
                    moving_min: r.try_get(3)?,
                })
            },
        )
    }

    pub fn count_fixes(
        &self,
        vehicle_id: i64,
        from_utc: i64,
        to_utc: i64,
    ) -> Result<i64, StoreError> {
        let rows = self.rows(
            "SELECT count(*) FROM posiciones WHERE vehiculo_id = $1 AND ts_utc >= $2 AND ts_utc < $3 AND secuencia = 0",
            &[&vehicle_id, &from_utc, &to_utc],
        )?;
        self.with_client(|_| rows[0].try_get(0))
    }

    /// Every event of every vehicle, for `flota evaluar`; kinds flota does not know are left
    /// out.
    pub fn every_event(&self) -> Result<Vec<EventRow>, StoreError> {
        let known: Vec<&str> = EventKind::ALL.iter().map(|k| k.name()).collect();
        let sql = format!(
            "SELECT {EVENT_COLUMNS} FROM eventos WHERE tipo = ANY($1) ORDER BY vehiculo_id, inicio_utc, id"
        );
        self.map(&sql, &[&known], event)
    }

    pub fn every_day_km(&self) -> Result<Vec<DayKm>, StoreError> {
        self.map(
            "SELECT vehiculo_id, fecha, km, km_gps FROM resumen_diario ORDER BY vehiculo_id, fecha",
            &[],
            |r| {
                Ok(DayKm {
                    vehicle_id: r.try_get(0)?,
                    date: r.try_get(1)?,
                    km: r.try_get(2)?,
                    km_gps: r.try_get(3)?,
                })
            },
        )
    }

    /// How far the detections can be trusted (the same rules as SQLite's).
    pub fn analysis_state(&self, meta: &Meta) -> Result<AnalysisState, StoreError> {
        let present: BTreeSet<String> = self
            .map(
                "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()
                 UNION ALL
                 SELECT t.tgname::text FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
                 WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal",
                &[],
                |r| r.try_get(0),
            )?
            .into_iter()
            .collect();
        coverage::state_of(&present, meta, || {
            self.map(
                "SELECT tabla, vehiculo_id, filas FROM cambios_desde_analisis ORDER BY vehiculo_id, tabla",
                &[],
                |r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)),
            )
        })
    }
}

fn fix(r: &Row) -> Result<Fix, postgres::Error> {
    fix_at(r, 0)
}

/// [`fix`] for [`FIX_COLUMNS`] selected from column `at` on.
fn fix_at(r: &Row, at: usize) -> Result<Fix, postgres::Error> {
    let row = StoredRow {
        delay_s: 0,
        lat_e6: r.try_get(at + 1)?,
        lon_e6: r.try_get(at + 2)?,
        speed_kmh: r.try_get(at + 3)?,
        heading_deg: r.try_get(at + 4)?,
        ignition: r.try_get::<_, i64>(at + 5)? != 0,
        odometer_m: r.try_get(at + 6)?,
    };
    Ok(row.to_fix(r.try_get(at)?))
}

fn alert_key(r: &Row) -> Result<AlertKey, postgres::Error> {
    Ok(AlertKey {
        id: r.try_get(0)?,
        vehicle_id: r.try_get(1)?,
        start_utc: r.try_get(2)?,
        end_utc: r.try_get(3)?,
        max_kmh: r.try_get(4)?,
        limit_kmh: r.try_get(5)?,
    })
}

pub(super) fn event(r: &Row) -> Result<EventRow, postgres::Error> {
    let kind: String = r.try_get(1)?;
    Ok(EventRow {
        vehicle_id: r.try_get(0)?,
        // Rows of an unknown kind are filtered out by the one query that could meet them.
        kind: EventKind::from_name(&kind).unwrap_or(EventKind::Stop),
        start_utc: r.try_get(2)?,
        end_utc: r.try_get(3)?,
        lat: r.try_get(4)?,
        lon: r.try_get(5)?,
        fence_id: r.try_get(6)?,
        max_kmh: r.try_get(7)?,
        limit_kmh: r.try_get(8)?,
        long: r.try_get::<_, i64>(9)? != 0,
        end_of_day: r.try_get::<_, i64>(10)? != 0,
        engine_on: r.try_get::<_, Option<i64>>(11)?.map(|v| v != 0),
        from_data_start: r.try_get::<_, i64>(12)? != 0,
        first_fix_utc: r.try_get(13)?,
        last_fix_utc: r.try_get(14)?,
        fixes: r.try_get(15)?,
        measure: r.try_get(16)?,
        threshold: r.try_get(17)?,
        threshold_value: r.try_get(18)?,
    })
}

fn day(r: &Row) -> Result<DayRow, postgres::Error> {
    Ok(DayRow {
        vehicle_id: r.try_get(0)?,
        date: r.try_get(1)?,
        km: r.try_get(2)?,
        first_move_utc: r.try_get(3)?,
        last_move_utc: r.try_get(4)?,
        moving_min: r.try_get(5)?,
        stops: r.try_get(6)?,
        stop_min: r.try_get(7)?,
        max_speed_kmh: r.try_get(8)?,
        fixes: r.try_get(9)?,
        gaps: r.try_get(10)?,
        overspeeds: r.try_get(11)?,
    })
}
