//! Writing a flota database on PostgreSQL: `flota simular`'s bulk load and `flota analizar`'s
//! re-analysis.
//!
//! Owns the PostgreSQL write path. [`PgWriter`] builds the whole database in one transaction
//! inside a new schema (positions by binary COPY into day partitions, the detections by
//! binary COPY, then the positions' primary key, the detections' indexes, the change log's
//! triggers and planner statistics) and, on [`PgWriter::commit`], drops the old `flota`
//! schema and renames the new one in its place in that same transaction: readers see the old
//! data or the new, and a crash or a kill at any point before the commit leaves the old data
//! as it was (the server rolls the whole transaction back, build schema included).
//! [`PgRewrite`] is `flota analizar`'s transaction on a [`PgStore`].

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use postgres::Client;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};
use rusqlite::types::Value;

use super::read::PgStore;
use super::schema::{
    ANALYSIS_INDEXES, ANALYSIS_TABLES_DDL, CHANGE_LOG_DDL, CROSSINGS_DDL, CROSSINGS_FILL, DDL,
    PARTITION_S, POSITIONS_KEY, SCHEMA, change_triggers, crossings_triggers, partition_ddl,
};
use super::{connect, error};
use crate::engine::{Analysis, DetectionConfig, Fix};
use crate::scenario::World;
use crate::store::analysis::{
    DAY_VALUE_COLUMNS, DAY_VALUES, EVENT_VALUE_COLUMNS, EVENT_VALUES, day_values, event_rows,
    event_values,
};
use crate::store::coverage::Covered;
use crate::store::encoding::PositionRow;
use crate::store::location::PgUrl;
use crate::store::meta::{self, Key};
use crate::store::reader::StoreError;

const POSITION_COLUMNS: &str = "vehiculo_id, ts_utc, secuencia, retraso_s, lat_e6, lon_e6, velocidad_kmh, rumbo_grados, ignicion, odometro_m";
pub(super) const EVENT_TYPES: [Type; EVENT_VALUES] = [
    Type::INT8,
    Type::TEXT,
    Type::INT8,
    Type::INT8,
    Type::FLOAT8,
    Type::FLOAT8,
    Type::INT8,
    Type::FLOAT8,
    Type::FLOAT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::FLOAT8,
    Type::TEXT,
    Type::FLOAT8,
];
pub(super) const DAY_TYPES: [Type; DAY_VALUES] = [
    Type::INT8,
    Type::TEXT,
    Type::FLOAT8,
    Type::FLOAT8,
    Type::FLOAT8,
    Type::INT8,
    Type::INT8,
    Type::FLOAT8,
    Type::INT8,
    Type::FLOAT8,
    Type::FLOAT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
];

/// Memory for sorting the positions' key after a bulk load (the server's default, 64 MB,
/// spills a scale load's partitions to disk).
const BUILD_MEMORY: &str = "256MB";

/// `flota simular`'s database on PostgreSQL, built in one transaction in schema `build`.
pub struct PgWriter {
    client: Client,
    url: PgUrl,
    build: String,
    days: BTreeSet<i64>,
    pub rows: u64,
    /// The positions' COPY data of one unit, reused from unit to unit.
    buf: Vec<u8>,
    /// Time spent in each phase, for the debug log.
    spent: Phases,
}

/// Where a load spends its time (the debug log shows it, to tell the server's work apart).
#[derive(Default)]
struct Phases {
    positions: Duration,
    analysis: Duration,
}

impl PgWriter {
    /// Connects, starts the transaction and creates the tables in a new schema.
    pub fn create(url: &PgUrl) -> Result<PgWriter, StoreError> {
        let mut client = connect(url, false)?;
        let build = format!(
            "{SCHEMA}_nueva_{}_{}",
            std::process::id(),
            rand::random::<u32>()
        );
        let setup = format!(
            "BEGIN; CREATE SCHEMA {build}; SET LOCAL search_path = {build}; {DDL} {ANALYSIS_TABLES_DDL} {CHANGE_LOG_DDL}"
        );
        client.batch_execute(&setup).map_err(|e| error(url, &e))?;
        Ok(PgWriter {
            client,
            url: url.clone(),
            build,
            days: BTreeSet::new(),
            rows: 0,
            buf: Vec::new(),
            spent: Phases::default(),
        })
    }

    fn err(&self, e: &postgres::Error) -> StoreError {
        error(&self.url, e)
    }

    /// Vehicles, geofences, routes and stops.
    pub fn write_fleet(&mut self, world: &World) -> Result<(), StoreError> {
        let result = write_fleet(&mut self.client, world);
        result.map_err(|e| self.err(&e))
    }

    /// One unit's rows, by binary COPY into their day partitions (created as needed).
    pub fn write_positions(
        &mut self,
        vehicle_id: i64,
        reports: &[PositionRow],
    ) -> Result<(), StoreError> {
        let days: BTreeSet<i64> = reports
            .iter()
            .map(|r| r.ts_utc.div_euclid(PARTITION_S) * PARTITION_S)
            .filter(|d| !self.days.contains(d))
            .collect();
        for day in days {
            let ddl = partition_ddl(day);
            self.client
                .batch_execute(&ddl)
                .map_err(|e| error(&self.url, &e))?;
            self.days.insert(day);
        }
        let started = Instant::now();
        let copied = copy_positions(&mut self.client, &mut self.buf, vehicle_id, reports);
        copied.map_err(|e| self.err(&e))?;
        self.spent.positions += started.elapsed();
        self.rows += reports.len() as u64;
        Ok(())
    }

    /// One vehicle's detections.
    pub fn write_analysis(
        &mut self,
        vehicle_id: i64,
        analysis: &Analysis,
        fence_ids: &[i64],
        config: &DetectionConfig,
        now_utc: i64,
    ) -> Result<(), StoreError> {
        let started = Instant::now();
        let copied = copy_analysis(
            &mut self.client,
            vehicle_id,
            analysis,
            fence_ids,
            config,
            now_utc,
        );
        self.spent.analysis += started.elapsed();
        copied.map_err(|e| self.err(&e))
    }

    /// What the simulation of `world` records about itself in `meta`.
    pub fn write_meta(&mut self, world: &World) -> Result<(), StoreError> {
        let written = write_meta(&mut self.client, &meta::of_world(world, self.rows));
        written.map_err(|e| self.err(&e))
    }

    /// Once everything is loaded: the positions' key, the detections' indexes, the change
    /// log's triggers and the coverage record. The key is sorted in memory
    /// (`maintenance_work_mem` raised for this transaction): one partition's rows are a
    /// few hundred MB at scale.
    pub fn seal_analysis(&mut self, covered: &Covered<'_>) -> Result<(), StoreError> {
        crate::log_debug!(
            "PostgreSQL: {} posiciones copiadas en {:?}, detecciones en {:?}",
            self.rows,
            self.spent.positions,
            self.spent.analysis
        );
        let started = Instant::now();
        let keyed = self.client.batch_execute(&format!(
            "SET LOCAL maintenance_work_mem = '{BUILD_MEMORY}'; {POSITIONS_KEY}"
        ));
        keyed.map_err(|e| self.err(&e))?;
        crate::log_debug!("PostgreSQL: clave de posiciones en {:?}", started.elapsed());
        let started = Instant::now();
        let sealed = self
            .client
            .batch_execute(ANALYSIS_INDEXES)
            .and_then(|()| seal(&mut self.client, covered));
        sealed.map_err(|e| self.err(&e))?;
        crate::log_debug!(
            "PostgreSQL: índices de eventos y registro de cambios en {:?}",
            started.elapsed()
        );
        Ok(())
    }

    /// Planner statistics and the size of what was built, in bytes. Still uncommitted.
    pub fn finish(&mut self) -> Result<u64, StoreError> {
        let sql = format!(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
             WHERE c.relnamespace = '{}'::regnamespace AND c.relkind = 'r'",
            self.build
        );
        let started = Instant::now();
        let sized = self
            .client
            .batch_execute("ANALYZE")
            .and_then(|()| self.client.query_one(&sql, &[]))
            .and_then(|row| row.try_get::<_, i64>(0));
        crate::log_debug!("PostgreSQL: ANALYZE en {:?}", started.elapsed());
        sized.map(|b| b.max(0) as u64).map_err(|e| self.err(&e))
    }

    /// Puts the new schema in the old one's place and commits: one transaction.
    pub fn commit(mut self) -> Result<(), StoreError> {
        let sql = format!(
            "DROP SCHEMA IF EXISTS {SCHEMA} CASCADE; ALTER SCHEMA {} RENAME TO {SCHEMA}; COMMIT;",
            self.build
        );
        let started = Instant::now();
        let done = self.client.batch_execute(&sql);
        crate::log_debug!(
            "PostgreSQL: esquema en su lugar y COMMIT en {:?}",
            started.elapsed()
        );
        done.map_err(|e| self.err(&e))
    }
}

fn write_fleet(client: &mut Client, world: &World) -> Result<(), postgres::Error> {
    let vehicle = client.prepare(
        "INSERT INTO vehiculos (id, placa, tipo, conductor, activo, limite_kmh, rutas, zona_horaria) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )?;
    for (index, unit) in world.units.iter().enumerate() {
        let routes: Vec<&str> = unit
            .routes
            .iter()
            .map(|r| world.routes[*r].name.as_str())
            .collect();
        let routes = serde_json::to_string(&routes).unwrap_or_default();
        client.execute(
            &vehicle,
            &[
                &(index as i64 + 1),
                &unit.plate,
                &unit.kind,
                &unit.driver,
                &i64::from(unit.active),
                &unit.limit_kmh,
                &routes,
                &unit.zone.name(),
            ],
        )?;
    }
    let fence = client.prepare(
        "INSERT INTO geocercas (id, nombre, tipo, forma, centro_lat, centro_lon, medio_lado_m, radio_m, poligono_wkt, limite_kmh) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )?;
    for (index, f) in world.fences.iter().enumerate() {
        let centre = f.centre();
        let (half_side, radius) = match f.shape {
            crate::geometry::geofence::Shape::Square { half_side_m, .. } => {
                (Some(half_side_m), None)
            }
            crate::geometry::geofence::Shape::Circle { radius_m, .. } => (None, Some(radius_m)),
            crate::geometry::geofence::Shape::Polygon { .. } => (None, None),
        };
        client.execute(
            &fence,
            &[
                &(index as i64 + 1),
                &f.name,
                &f.kind,
                &f.shape_name(),
                &centre.lat,
                &centre.lon,
                &half_side,
                &radius,
                &f.wkt(),
                &f.speed_limit_kmh,
            ],
        )?;
    }
    let route = client.prepare(
        "INSERT INTO rutas (id, nombre, fuente, polilinea, distancia_m, duracion_s) VALUES ($1, $2, $3, $4, $5, $6)",
    )?;
    let stop = client.prepare(
        "INSERT INTO paradas (ruta_id, orden, nombre, lat, lon) VALUES ($1, $2, $3, $4, $5)",
    )?;
    for (index, r) in world.routes.iter().enumerate() {
        let id = index as i64 + 1;
        client.execute(
            &route,
            &[
                &id,
                &r.name,
                &r.source,
                &r.polyline,
                &r.routed_distance_m,
                &r.routed_duration_s,
            ],
        )?;
        for (order, s) in r.stops.iter().enumerate() {
            client.execute(
                &stop,
                &[
                    &id,
                    &(order as i64),
                    &s.name,
                    &s.position.lat,
                    &s.position.lon,
                ],
            )?;
        }
    }
    Ok(())
}

/// Binary COPY's header: the signature, no flags, no header extension.
const COPY_HEADER: &[u8; 19] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";
/// Binary COPY's trailer: a tuple of -1 fields.
const COPY_TRAILER: [u8; 2] = (-1i16).to_be_bytes();

/// One unit's `posiciones` rows in binary COPY format, encoded into `buf` by hand (122 bytes a
/// row; the generic writer's per-value calls and 4 KiB messages cost more than the server's
/// work at 47 M rows) and sent as one message.
fn copy_positions(
    client: &mut Client,
    buf: &mut Vec<u8>,
    vehicle_id: i64,
    reports: &[PositionRow],
) -> Result<(), postgres::Error> {
    encode_positions(buf, vehicle_id, reports);
    let mut sink = client.copy_in(&format!(
        "COPY posiciones ({POSITION_COLUMNS}) FROM STDIN BINARY"
    ))?;
    // The writer only buffers this one write; a failure to send shows in `finish`.
    let _ = std::io::Write::write_all(&mut sink, buf);
    sink.finish().map(|_| ())
}

/// `reports` as [`POSITION_COLUMNS`]' binary COPY data, header and trailer included.
fn encode_positions(buf: &mut Vec<u8>, vehicle_id: i64, reports: &[PositionRow]) {
    const FIELDS: i16 = 10;
    const ROW_BYTES: usize = 2 + FIELDS as usize * (4 + 8);
    buf.clear();
    buf.reserve(COPY_HEADER.len() + reports.len() * ROW_BYTES + COPY_TRAILER.len());
    buf.extend_from_slice(COPY_HEADER);
    for r in reports {
        let row = &r.row;
        buf.extend_from_slice(&FIELDS.to_be_bytes());
        for value in [
            vehicle_id,
            r.ts_utc,
            i64::from(r.sequence),
            row.delay_s,
            row.lat_e6,
            row.lon_e6,
        ] {
            field(buf, value.to_be_bytes());
        }
        field(buf, row.speed_kmh.to_bits().to_be_bytes());
        for value in [row.heading_deg, i64::from(row.ignition), row.odometer_m] {
            field(buf, value.to_be_bytes());
        }
    }
    buf.extend_from_slice(&COPY_TRAILER);
}

/// One 8-byte field (`bigint` or `double precision`, big-endian) with its length.
fn field(buf: &mut Vec<u8>, bytes: [u8; 8]) {
    buf.extend_from_slice(&8i32.to_be_bytes());
    buf.extend_from_slice(&bytes);
}

/// A stored value as a PostgreSQL parameter of column type `ty` (a NULL typed by its column).
pub(super) fn cell(value: &Value, ty: &Type) -> Box<dyn ToSql + Sync> {
    match value {
        Value::Integer(i) => Box::new(*i),
        Value::Real(r) => Box::new(*r),
        Value::Text(t) => Box::new(t.clone()),
        Value::Blob(b) => Box::new(b.clone()),
        Value::Null if *ty == Type::FLOAT8 => Box::new(None::<f64>),
        Value::Null if *ty == Type::TEXT => Box::new(None::<String>),
        Value::Null => Box::new(None::<i64>),
    }
}

fn copy_rows<const N: usize>(
    client: &mut Client,
    table: &str,
    columns: &str,
    types: &[Type; N],
    rows: impl Iterator<Item = [Value; N]>,
) -> Result<(), postgres::Error> {
    let sink = client.copy_in(&format!("COPY {table} ({columns}) FROM STDIN BINARY"))?;
    let mut copy = BinaryCopyInWriter::new(sink, types);
    for values in rows {
        let cells: Vec<Box<dyn ToSql + Sync>> = values
            .iter()
            .zip(types)
            .map(|(v, ty)| cell(v, ty))
            .collect();
        let refs: Vec<&(dyn ToSql + Sync)> = cells.iter().map(|c| c.as_ref()).collect();
        copy.write(&refs)?;
    }
    copy.finish().map(|_| ())
}

/// One vehicle's detections by binary COPY, in the order SQLite inserts them (so `eventos.id`
/// breaks ties alike on both).
fn copy_analysis(
    client: &mut Client,
    vehicle_id: i64,
    analysis: &Analysis,
    fence_ids: &[i64],
    config: &DetectionConfig,
    now_utc: i64,
) -> Result<(), postgres::Error> {
    let events = event_rows(vehicle_id, analysis, fence_ids, config, now_utc)
        .map(|e| event_values(&e))
        .collect::<Vec<_>>();
    if !events.is_empty() {
        copy_rows(
            client,
            "eventos",
            EVENT_VALUE_COLUMNS,
            &EVENT_TYPES,
            events.into_iter(),
        )?;
    }
    if !analysis.days.is_empty() {
        copy_rows(
            client,
            "resumen_diario",
            DAY_VALUE_COLUMNS,
            &DAY_TYPES,
            analysis.days.iter().map(|d| day_values(vehicle_id, d)),
        )?;
    }
    Ok(())
}

pub(super) fn write_meta(
    client: &mut Client,
    pairs: &[(Key, String)],
) -> Result<(), postgres::Error> {
    let upsert = client.prepare(
        "INSERT INTO meta (clave, valor) VALUES ($1, $2) ON CONFLICT (clave) DO UPDATE SET valor = excluded.valor",
    )?;
    for (key, value) in pairs {
        client.execute(&upsert, &[&key.name(), value])?;
    }
    Ok(())
}

/// Drops the change log's triggers (an analysis's own writes are not logged) and the
/// crossings' counters' ([`seal`] counts the rows written meanwhile at once).
pub(super) fn unseal(client: &mut Client) -> Result<(), postgres::Error> {
    let mut sql = format!("{ANALYSIS_TABLES_DDL} {ANALYSIS_INDEXES} {CHANGE_LOG_DDL}");
    for ((name, _), table) in change_triggers().iter().zip(triggered_tables()) {
        sql.push_str(&format!(" DROP TRIGGER IF EXISTS {name} ON {table};"));
    }
    for (name, _) in crossings_triggers() {
        sql.push_str(&format!(" DROP TRIGGER IF EXISTS {name} ON eventos;"));
    }
    client.batch_execute(&sql)
}

/// The table each of [`change_triggers`] fires on, in its order.
fn triggered_tables() -> impl Iterator<Item = &'static str> {
    crate::store::schema::LOGGED_TABLES
        .into_iter()
        .flat_map(|t| [t, t, t])
}

/// After an analysis wrote its tables, in the same transaction: records what it covered,
/// counts the crossings per day afresh, starts a fresh change log and puts the triggers back.
pub(super) fn seal(client: &mut Client, covered: &Covered<'_>) -> Result<(), postgres::Error> {
    let mut sql = format!("{CHANGE_LOG_DDL} {CROSSINGS_DDL}");
    for (name, _) in crossings_triggers() {
        sql.push_str(&format!(" DROP TRIGGER IF EXISTS {name} ON eventos;"));
    }
    sql.push_str(CROSSINGS_FILL);
    for (_, create) in crossings_triggers() {
        sql.push_str(create);
    }
    for ((name, create), table) in change_triggers().iter().zip(triggered_tables()) {
        sql.push_str(&format!(
            " DROP TRIGGER IF EXISTS {name} ON {table}; {create}"
        ));
    }
    sql.push_str(" DELETE FROM cambios_desde_analisis;");
    client.batch_execute(&sql)?;
    write_meta(client, &meta::of_analysis(covered))
}

/// `flota analizar` on PostgreSQL: one transaction that recreates the analysis tables if
/// they are missing, empties them, takes each vehicle's analysis, and on
/// [`PgRewrite::commit`] records what it covered. Dropped without committing, it rolls back.
pub struct PgRewrite<'a> {
    store: &'a PgStore,
    open: bool,
}

impl PgStore {
    /// Starts rewriting the analysis tables, locking them against other writers at once.
    pub fn rewrite_analysis(&mut self) -> Result<PgRewrite<'_>, StoreError> {
        self.with_client(|c| {
            c.batch_execute("BEGIN")?;
            unseal(c)?;
            c.batch_execute(
                "LOCK TABLE eventos, resumen_diario IN SHARE ROW EXCLUSIVE MODE;
                 DELETE FROM eventos; DELETE FROM resumen_diario;",
            )
        })?;
        Ok(PgRewrite {
            store: self,
            open: true,
        })
    }
}

impl PgRewrite<'_> {
    pub fn for_each_fix(
        &self,
        vehicle_id: i64,
        from_utc: i64,
        to_utc: i64,
        each: impl FnMut(Fix),
    ) -> Result<(), StoreError> {
        self.store.for_each_fix(vehicle_id, from_utc, to_utc, each)
    }

    pub fn insert(
        &self,
        vehicle_id: i64,
        analysis: &Analysis,
        fence_ids: &[i64],
        config: &DetectionConfig,
        now_utc: i64,
    ) -> Result<(), StoreError> {
        self.store
            .with_client(|c| copy_analysis(c, vehicle_id, analysis, fence_ids, config, now_utc))
    }

    /// Records what was covered, gathers statistics and commits; returns the events stored.
    pub fn commit(mut self, covered: &Covered<'_>) -> Result<i64, StoreError> {
        let events = self.store.with_client(|c| {
            seal(c, covered)?;
            c.batch_execute("ANALYZE eventos; ANALYZE resumen_diario; ANALYZE cruces_por_dia;")?;
            let events: i64 = c
                .query_one("SELECT count(*) FROM eventos", &[])?
                .try_get(0)?;
            c.batch_execute("COMMIT")?;
            Ok(events)
        })?;
        self.open = false;
        Ok(events)
    }
}

impl Drop for PgRewrite<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.store.with_client(|c| c.batch_execute("ROLLBACK"));
        }
    }
}
