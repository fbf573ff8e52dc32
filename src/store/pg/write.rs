//! Writing a flota database on PostgreSQL: `flota simular`'s bulk load and `flota analizar`'s
//! re-analysis.
//!
//! Owns the PostgreSQL write path. [`PgWriter`] builds the whole database in a new staging
//! schema, created and committed first: positions by binary COPY into day partitions over
//! several connections at once (`streams.rs`), the detections by binary COPY on the writer's
//! own connection, then each partition's primary key (several at once) while the detections'
//! indexes are built, the parent's key, the change log's triggers and planner statistics.
//! [`PgWriter::commit`] drops the old `flota` schema and renames the staging one in its place
//! in one transaction: readers see the old data or the new, and a load that dies at any point
//! before that commit leaves the old data as it was (its staging schema is dropped by the next
//! load). [`PgRewrite`] is `flota analizar`'s transaction on a [`PgStore`].

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use postgres::Client;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};
use rusqlite::types::Value;

use super::read::PgStore;
use super::schema::{
    ANALYSIS_INDEXES, ANALYSIS_TABLES_DDL, CHANGE_LOG_DDL, CROSSINGS_DDL, CROSSINGS_FILL, DDL,
    OTHER_PARTITION, PARTITION_S, POSITIONS_KEY, POSITIONS_KEY_COLUMNS, SCHEMA, change_triggers,
    crossings_triggers, partition_ddl, partition_name,
};
use super::streams::{self, Job, Streams};
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

/// Memory for sorting a partition's key after a bulk load, per connection (the server's
/// default, 64 MB, spills a scale load's partitions to disk).
const BUILD_MEMORY: &str = "256MB";

/// The advisory lock class a load holds for as long as its staging schema is being built
/// (`pg_advisory_lock(LOAD_LOCK, token)`): a schema whose lock nobody holds is a dead load's.
const LOAD_LOCK: i32 = 0x666c_6f74;

/// Autovacuum off for the staging schema's bulk-loaded tables until the swap (partitions as
/// they are created): it would vacuum them while they are still being written.
const QUIET: &str = "ALTER TABLE posiciones_otras SET (autovacuum_enabled = false);
ALTER TABLE eventos SET (autovacuum_enabled = false);
ALTER TABLE resumen_diario SET (autovacuum_enabled = false);";

/// The prefix of a staging schema's name; its last part is the load's token.
fn staging_prefix() -> String {
    format!("{SCHEMA}_nueva_")
}

/// `flota simular`'s database on PostgreSQL, built in a staging schema and swapped in.
///
/// The staging schema and its tables are created and committed first, so that several
/// connections ([`Streams`]) can `COPY` into them at once, each unit's rows committed on their
/// own; nothing in it is visible under the name readers use. [`PgWriter::commit`] drops the
/// old `flota` schema and renames the staging one in its place in one transaction: readers
/// see the old data or the new. A load that dies leaves the old data as it was and its staging
/// schema behind; the writer holds an advisory lock for it ([`LOAD_LOCK`]) while alive, and
/// the next load drops every staging schema whose lock is free ([`drop_dead_loads`]). A
/// writer dropped without committing (an error, an interruption) drops its schema itself.
pub struct PgWriter {
    client: Client,
    url: PgUrl,
    build: String,
    days: BTreeSet<i64>,
    pub rows: u64,
    streams: Streams,
    /// Time spent in each phase, for the debug log.
    spent: Phases,
    /// Swapped in: nothing to clean up.
    committed: bool,
}

/// Where a load spends its time (the debug log shows it, to tell the server's work apart).
#[derive(Default)]
struct Phases {
    /// The writer waiting for a stream to take a unit's rows.
    waiting: Duration,
    analysis: Duration,
}

impl PgWriter {
    /// Connects, drops dead loads' staging schemas, and creates and commits the tables in a
    /// new one.
    pub fn create(url: &PgUrl) -> Result<PgWriter, StoreError> {
        let mut client = connect(url, false)?;
        let token = rand::random::<u32>();
        let build = format!("{}{}_{token}", staging_prefix(), std::process::id());
        // The lock before the schema exists: another load never sees it unlocked.
        let locked = client
            .batch_execute(&format!(
                "SET synchronous_commit = off; SELECT pg_advisory_lock({LOAD_LOCK}, {});",
                token as i32
            ))
            .and_then(|()| drop_dead_loads(&mut client));
        locked.map_err(|e| error(url, &e))?;
        let streams = Streams::connect(
            url,
            streams::count(),
            &format!(
                "SET search_path = {build}; SET synchronous_commit = off; SET maintenance_work_mem = '{BUILD_MEMORY}';"
            ),
        )?;
        let created = client.batch_execute(&format!(
            "BEGIN; CREATE SCHEMA {build}; SET LOCAL search_path = {build}; {DDL} {ANALYSIS_TABLES_DDL} {CHANGE_LOG_DDL} {QUIET} COMMIT;
             SET search_path = {build};"
        ));
        created.map_err(|e| error(url, &e))?;
        Ok(PgWriter {
            client,
            url: url.clone(),
            build,
            days: BTreeSet::new(),
            rows: 0,
            streams,
            spent: Phases::default(),
            committed: false,
        })
    }

    fn err(&self, e: &postgres::Error) -> StoreError {
        error(&self.url, e)
    }

    /// Vehicles, geofences, routes and stops.
    pub fn write_fleet(&mut self, world: &World) -> Result<(), StoreError> {
        let result = self
            .client
            .batch_execute("BEGIN")
            .and_then(|()| write_fleet(&mut self.client, world))
            .and_then(|()| self.client.batch_execute("COMMIT"));
        result.map_err(|e| self.err(&e))
    }

    /// One unit's rows, handed to a stream for its binary COPY; their day partitions are
    /// created first (committed: the streams' connections must see them).
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
            // Autovacuum would vacuum and analyze each partition while it is still being
            // copied into (every unit commits): the server's time, spent twice.
            let ddl = format!(
                "{} ALTER TABLE {} SET (autovacuum_enabled = false);",
                partition_ddl(day),
                partition_name(day)
            );
            self.client
                .batch_execute(&ddl)
                .map_err(|e| error(&self.url, &e))?;
            self.days.insert(day);
        }
        let started = Instant::now();
        self.streams.send(Job::Copy {
            vehicle_id,
            rows: reports.to_vec(),
        })?;
        self.spent.waiting += started.elapsed();
        self.rows += reports.len() as u64;
        Ok(())
    }

    /// One vehicle's detections (on the writer's own connection, in order: `eventos.id`
    /// follows SQLite's).
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
    /// log's triggers and the coverage record. Each partition's key is built on a stream (as
    /// many at once as there are streams, `maintenance_work_mem` raised on their sessions: a
    /// partition is a few hundred MB at scale) while the writer's connection builds the
    /// detections' indexes; then the parent's key, which takes the partitions' as they are.
    pub fn seal_analysis(&mut self, covered: &Covered<'_>) -> Result<(), StoreError> {
        let copying = self.streams.finish()?;
        crate::log_debug!(
            "PostgreSQL: {} posiciones copiadas ({:?} de trabajo en los flujos, {:?} de espera del escritor), detecciones en {:?}",
            self.rows,
            copying,
            self.spent.waiting,
            self.spent.analysis
        );
        let started = Instant::now();
        let partitions = self
            .days
            .iter()
            .map(|day| partition_name(*day))
            .chain([OTHER_PARTITION.to_owned()]);
        for partition in partitions {
            self.streams.send(Job::Sql(format!(
                "ALTER TABLE {partition} ADD PRIMARY KEY {POSITIONS_KEY_COLUMNS};"
            )))?;
        }
        let indexed = self.client.batch_execute(ANALYSIS_INDEXES);
        indexed.map_err(|e| self.err(&e))?;
        crate::log_debug!("PostgreSQL: índices de eventos en {:?}", started.elapsed());
        self.streams.finish()?;
        let keyed = self.client.batch_execute(POSITIONS_KEY);
        keyed.map_err(|e| self.err(&e))?;
        crate::log_debug!("PostgreSQL: clave de posiciones en {:?}", started.elapsed());
        let started = Instant::now();
        let sealed = self
            .client
            .batch_execute("BEGIN")
            .and_then(|()| seal(&mut self.client, covered))
            .and_then(|()| self.client.batch_execute("COMMIT"));
        sealed.map_err(|e| self.err(&e))?;
        crate::log_debug!(
            "PostgreSQL: registro de cambios y cruces por día en {:?}",
            started.elapsed()
        );
        Ok(())
    }

    /// Planner statistics (the positions' on a stream while the writer's connection vacuums
    /// and analyzes the other tables) and the size of what was built, in bytes. Not yet in
    /// place.
    pub fn finish(&mut self) -> Result<u64, StoreError> {
        let started = Instant::now();
        self.streams
            .send(Job::Sql("ANALYZE posiciones;".to_owned()))?;
        let tables: Vec<String> = {
            let listed = self.client.query(
                "SELECT c.relname::text FROM pg_class c
                 WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
                   AND c.relispartition = false",
                &[],
            );
            listed
                .map_err(|e| self.err(&e))?
                .iter()
                .filter_map(|row| row.try_get::<_, String>(0).ok())
                .collect()
        };
        // VACUUM as well, now that the tables are committed (it cannot run in a transaction):
        // their visibility maps are set before the first reader, so the index-only scans of
        // `eventos` and `vehiculos` (every fleet-wide statement joins it) read no table pages.
        // `posiciones` is left to autovacuum after the swap: a full pass over it would cost as
        // much as its key.
        let analyzed = if tables.is_empty() {
            Ok(())
        } else {
            self.client
                .batch_execute(&format!("VACUUM (ANALYZE) {};", tables.join(", ")))
        };
        analyzed.map_err(|e| self.err(&e))?;
        self.streams.finish()?;
        crate::log_debug!("PostgreSQL: ANALYZE en {:?}", started.elapsed());
        let sized = self
            .client
            .query_one(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
                 WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'",
                &[],
            )
            .and_then(|row| row.try_get::<_, i64>(0));
        sized.map(|b| b.max(0) as u64).map_err(|e| self.err(&e))
    }

    /// Puts the new schema in the old one's place, autovacuum back on for its tables: one
    /// transaction, committed durably (the load's own commits were asynchronous; this one's
    /// flush covers them all).
    pub fn commit(mut self) -> Result<(), StoreError> {
        let quiet = self.client.query(
            "SELECT c.relname::text FROM pg_class c
             WHERE c.relnamespace = current_schema()::regnamespace
               AND 'autovacuum_enabled=false' = ANY (c.reloptions)",
            &[],
        );
        let reset: String = quiet
            .map_err(|e| self.err(&e))?
            .iter()
            .filter_map(|row| row.try_get::<_, String>(0).ok())
            .map(|table| format!("ALTER TABLE {table} RESET (autovacuum_enabled); "))
            .collect();
        let sql = format!(
            "BEGIN; SET LOCAL synchronous_commit = on; {reset} DROP SCHEMA IF EXISTS {SCHEMA} CASCADE; ALTER SCHEMA {} RENAME TO {SCHEMA}; COMMIT;",
            self.build
        );
        let started = Instant::now();
        let done = self.client.batch_execute(&sql);
        crate::log_debug!(
            "PostgreSQL: esquema en su lugar y COMMIT en {:?}",
            started.elapsed()
        );
        done.map_err(|e| self.err(&e))?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for PgWriter {
    /// A load that ends without its swap drops its staging schema (best effort: if the
    /// server is gone, the next load drops it).
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        let _ = self.streams.finish();
        let _ = self.client.batch_execute(&format!(
            "ROLLBACK; DROP SCHEMA IF EXISTS {} CASCADE;",
            self.build
        ));
    }
}

/// Drops the staging schemas of loads that died (killed, crashed, their server restarted):
/// those whose advisory lock nobody holds. A live load's lock is held, so its schema stays.
fn drop_dead_loads(client: &mut Client) -> Result<(), postgres::Error> {
    let prefix = staging_prefix();
    let schemas = client.query(
        "SELECT nspname::text FROM pg_namespace WHERE starts_with(nspname, $1)",
        &[&prefix],
    )?;
    for row in schemas {
        let name: String = row.try_get(0)?;
        // `flota_nueva_<pid>_<token>`; anything else under the prefix is not a load's.
        let Some(token) = name.rsplit('_').next().and_then(|t| t.parse::<u32>().ok()) else {
            continue;
        };
        let free: bool = client
            .query_one(
                "SELECT pg_try_advisory_lock($1, $2)",
                &[&LOAD_LOCK, &(token as i32)],
            )?
            .try_get(0)?;
        if free {
            crate::log_info!("PostgreSQL: se borra el esquema {name} de una carga interrumpida");
            client.batch_execute(&format!(
                "DROP SCHEMA IF EXISTS \"{name}\" CASCADE; SELECT pg_advisory_unlock({LOAD_LOCK}, {});",
                token as i32
            ))?;
        }
    }
    Ok(())
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
pub(super) fn copy_positions(
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
