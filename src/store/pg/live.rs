//! Writing positions as they arrive on PostgreSQL: `flota recibir` and `flota importar`.
//!
//! Owns the live write path on PostgreSQL, the same typed operations as SQLite's
//! (src/store/live.rs): creating an empty live database (schema `flota` with the positions'
//! key and the detections' indexes already built, `meta`, a sealed empty analysis), the
//! `dispositivos` table, and [`PgLiveTx`]. Several writers may share one database: every
//! live transaction first takes one advisory lock ([`WRITERS_LOCK`]), so writers take turns
//! as SQLite's single write lock makes them, and commits a bump of the sequence
//! `escrituras_en_vivo`; a writer that finds the sequence moved since its own last commit
//! knows another wrote in between and starts over from the database (`Flow::Resync` in
//! src/ingest/session.rs), which keeps every writer's incremental analysis equal to a batch
//! one. Repeats are dropped by the positions' primary key. Each UTC day's partition is
//! created, under that lock, before its first position.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashSet};

use postgres::Client;
use postgres::types::{ToSql, Type};
use rusqlite::types::Value;

use super::read::{PgStore, event};
use super::schema::{
    ANALYSIS_INDEXES, ANALYSIS_TABLES_DDL, CHANGE_LOG_DDL, DDL, PARTITION_S, POSITIONS_KEY, SCHEMA,
    partition_ddl,
};
use super::write::{DAY_TYPES, cell, seal, unseal, write_meta};
use super::{connect, error};
use crate::engine::{Analysis, DetectionConfig, Fix};
use crate::store::analysis::{DAY_VALUE_COLUMNS, DAY_VALUES, EVENT_VALUE_COLUMNS, EVENT_VALUES};
use crate::store::coverage::{AnalysisState, Covered};
use crate::store::encoding::StoredRow;
use crate::store::live::{AnalysisRows, NewDatabase, RowChanges, RowSink, Written};
use crate::store::location::PgUrl;
use crate::store::meta::{self, Key};
use crate::store::queries::EVENT_COLUMNS;
use crate::store::reader::StoreError;

/// The advisory lock every live transaction holds: one writer at a time per database.
const WRITERS_LOCK: i64 = 0x666c_6f74_6131;

/// What a live writer needs beside the tables `flota simular` makes.
const LIVE_DDL: &str = r#"
CREATE TABLE IF NOT EXISTS dispositivos (
    dispositivo TEXT COLLATE "C" PRIMARY KEY,
    vehiculo_id BIGINT NOT NULL REFERENCES vehiculos(id)
);
CREATE SEQUENCE IF NOT EXISTS escrituras_en_vivo;
"#;

/// Creates an empty live flota database at `url` unless its schema exists; returns whether
/// it did. One transaction under the writers' lock: two receivers starting at once make
/// one database.
pub fn create_if_missing(url: &PgUrl, new: &NewDatabase) -> Result<bool, StoreError> {
    let mut client = connect(url, false)?;
    let created = create_in(&mut client, new);
    created.map_err(|e| error(url, &e))
}

fn create_in(client: &mut Client, new: &NewDatabase) -> Result<bool, postgres::Error> {
    client.batch_execute(&format!(
        "BEGIN; SELECT pg_advisory_xact_lock({WRITERS_LOCK});"
    ))?;
    let exists: bool = client
        .query_one(
            "SELECT to_regnamespace($1) IS NOT NULL",
            &[&SCHEMA.to_owned()],
        )?
        .try_get(0)?;
    if exists {
        client.batch_execute("COMMIT")?;
        return Ok(false);
    }
    client.batch_execute(&format!(
        "CREATE SCHEMA {SCHEMA}; SET LOCAL search_path = {SCHEMA}; {DDL} {POSITIONS_KEY} {ANALYSIS_TABLES_DDL} {ANALYSIS_INDEXES} {CHANGE_LOG_DDL} {LIVE_DDL}"
    ))?;
    write_meta(client, &meta::of_live_database(new))?;
    seal(
        client,
        &Covered {
            config: &new.config,
            until_utc: new.now_utc,
            fixes: 0,
        },
    )?;
    client.batch_execute("COMMIT")?;
    Ok(true)
}

impl PgStore {
    /// Opens `url` to write positions: read-write, with the live writer's tables.
    pub fn open_live(url: &PgUrl) -> Result<PgStore, StoreError> {
        let store = PgStore::open_read_write(url)?;
        let present = store.with_client(|c| {
            c.query(
                "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()",
                &[],
            )?
            .iter()
            .map(|r| r.try_get(0))
            .collect()
        })?;
        crate::store::schema::require_base_tables(store.path(), &present)?;
        store.with_client(|c| c.batch_execute(LIVE_DDL))?;
        Ok(store)
    }

    /// Makes a data set live: its `ahora` keys go. Returns whether it had one.
    pub fn mark_live(&self) -> Result<bool, StoreError> {
        let removed = self.with_client(|c| {
            c.execute(
                "DELETE FROM meta WHERE clave IN ($1, $2)",
                &[&Key::AhoraUtc.name(), &Key::AhoraLocal.name()],
            )
        })?;
        Ok(removed > 0)
    }

    /// The trackers' own ids: `(device id, vehicle id)`.
    pub fn devices(&self) -> Result<Vec<(String, i64)>, StoreError> {
        self.with_client(|c| {
            c.query(
                "SELECT dispositivo, vehiculo_id FROM dispositivos ORDER BY dispositivo",
                &[],
            )?
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect()
        })
    }

    /// Records that tracker `device` reports for vehicle `vehicle_id`.
    pub fn set_device(&self, device: &str, vehicle_id: i64) -> Result<(), StoreError> {
        self.with_client(|c| {
            c.execute(
                "INSERT INTO dispositivos (dispositivo, vehiculo_id) VALUES ($1, $2)
                 ON CONFLICT (dispositivo) DO UPDATE SET vehiculo_id = excluded.vehiculo_id",
                &[&device, &vehicle_id],
            )
            .map(|_| ())
        })
    }

    /// Starts a live transaction, waiting for the writers' lock.
    pub fn begin_live(&self) -> Result<PgLiveTx<'_>, StoreError> {
        self.with_client(|c| {
            c.batch_execute(&format!(
                "BEGIN; SELECT pg_advisory_xact_lock({WRITERS_LOCK});"
            ))
        })?;
        Ok(PgLiveTx {
            store: self,
            open: Cell::new(true),
            unsealed: Cell::new(false),
            days: RefCell::new(BTreeSet::new()),
            insert: RefCell::new(None),
        })
    }
}

/// A batch of positions as one statement: a column array each, `secuencia` 0 (a live fix
/// is one per vehicle and second); the keys that were new come back.
const INSERT_ALL: &str = "INSERT INTO posiciones (vehiculo_id, ts_utc, secuencia, retraso_s, lat_e6, lon_e6, velocidad_kmh, rumbo_grados, ignicion, odometro_m)
     SELECT v, t, 0, d, la, lo, s, h, i, o
     FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::double precision[], $7::bigint[], $8::bigint[], $9::bigint[])
          AS u(v, t, d, la, lo, s, h, i, o)
     ON CONFLICT (vehiculo_id, ts_utc, secuencia) DO NOTHING
     RETURNING vehiculo_id, ts_utc";

/// The columns of [`INSERT_ALL`] for a batch, each key once (its first occurrence: a repeat
/// within the batch is a duplicate, as it would be one statement later).
struct Batch {
    /// Per row of the batch: whether it is its key's first occurrence (and so sent).
    first: Vec<bool>,
    vehicle: Vec<i64>,
    ts: Vec<i64>,
    delay: Vec<i64>,
    lat: Vec<i64>,
    lon: Vec<i64>,
    speed: Vec<f64>,
    heading: Vec<i64>,
    ignition: Vec<i64>,
    odometer: Vec<i64>,
}

impl Batch {
    fn of(rows: &[(i64, i64, &StoredRow)]) -> Batch {
        let mut seen = HashSet::with_capacity(rows.len());
        let mut batch = Batch {
            first: Vec::with_capacity(rows.len()),
            vehicle: Vec::with_capacity(rows.len()),
            ts: Vec::with_capacity(rows.len()),
            delay: Vec::with_capacity(rows.len()),
            lat: Vec::with_capacity(rows.len()),
            lon: Vec::with_capacity(rows.len()),
            speed: Vec::with_capacity(rows.len()),
            heading: Vec::with_capacity(rows.len()),
            ignition: Vec::with_capacity(rows.len()),
            odometer: Vec::with_capacity(rows.len()),
        };
        for (vehicle_id, ts_utc, row) in rows {
            let first = seen.insert((*vehicle_id, *ts_utc));
            batch.first.push(first);
            if first {
                batch.vehicle.push(*vehicle_id);
                batch.ts.push(*ts_utc);
                batch.delay.push(row.delay_s);
                batch.lat.push(row.lat_e6);
                batch.lon.push(row.lon_e6);
                batch.speed.push(row.speed_kmh);
                batch.heading.push(row.heading_deg);
                batch.ignition.push(i64::from(row.ignition));
                batch.odometer.push(row.odometer_m);
            }
        }
        batch
    }

    fn columns(&self) -> [&(dyn ToSql + Sync); 9] {
        [
            &self.vehicle,
            &self.ts,
            &self.delay,
            &self.lat,
            &self.lon,
            &self.speed,
            &self.heading,
            &self.ignition,
            &self.odometer,
        ]
    }
}

/// One live transaction on PostgreSQL. Dropped without committing, it rolls back.
pub struct PgLiveTx<'a> {
    store: &'a PgStore,
    open: Cell<bool>,
    unsealed: Cell<bool>,
    /// Partitions made sure of in this transaction.
    days: RefCell<BTreeSet<i64>>,
    /// The insert of a batch of positions, prepared once per transaction.
    insert: RefCell<Option<postgres::Statement>>,
}

impl PgLiveTx<'_> {
    fn run<T>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<T, postgres::Error>,
    ) -> Result<T, StoreError> {
        self.store.with_client(f)
    }

    /// The writers' sequence: moves with every live commit, this writer's included (its
    /// own commit returns the value it moved it to).
    pub fn data_version(&self) -> Result<i64, StoreError> {
        self.run(|c| {
            c.query_one("SELECT last_value FROM escrituras_en_vivo", &[])?
                .try_get(0)
        })
    }

    /// Stores positions `(vehicle id, fix time, row)` in one statement; for each, whether it
    /// was stored (`false`: the vehicle already had a fix at that time, stored before or
    /// earlier in `rows`). One round trip whatever the batch's size, and the change log's
    /// statement trigger fires once.
    pub fn insert_all(&self, rows: &[(i64, i64, &StoredRow)]) -> Result<Vec<bool>, StoreError> {
        let new_days: Vec<i64> = rows
            .iter()
            .map(|(_, ts_utc, _)| ts_utc.div_euclid(PARTITION_S) * PARTITION_S)
            .filter(|day| self.days.borrow_mut().insert(*day))
            .collect();
        if !new_days.is_empty() {
            let ddl: String = new_days.into_iter().map(partition_ddl).collect();
            self.run(|c| c.batch_execute(&ddl))?;
        }
        let batch = Batch::of(rows);
        if batch.first.iter().all(|first| !first) {
            return Ok(batch.first);
        }
        let mut prepared = self.insert.borrow_mut();
        let stored = self.run(|c| {
            let statement = match prepared.as_ref() {
                Some(statement) => statement.clone(),
                None => prepared.insert(c.prepare(INSERT_ALL)?).clone(),
            };
            let returned = c.query(&statement, &batch.columns())?;
            returned
                .iter()
                .map(|r| Ok((r.try_get::<_, i64>(0)?, r.try_get::<_, i64>(1)?)))
                .collect::<Result<HashSet<(i64, i64)>, postgres::Error>>()
        })?;
        Ok(rows
            .iter()
            .zip(batch.first)
            .map(|((vehicle_id, ts_utc, _), first)| {
                first && stored.contains(&(*vehicle_id, *ts_utc))
            })
            .collect())
    }

    /// Adds a vehicle that reported before anyone declared it (or finds it); returns its id.
    pub fn register_vehicle(
        &self,
        plate: &str,
        limit_kmh: f64,
        zone: chrono_tz::Tz,
    ) -> Result<i64, StoreError> {
        self.run(|c| {
            c.execute(
                "INSERT INTO vehiculos (id, placa, tipo, conductor, activo, limite_kmh, rutas, zona_horaria)
                 SELECT coalesce(max(id), 0) + 1, $1, 'desconocido', '', 1, $2, '[]', $3 FROM vehiculos
                 ON CONFLICT (placa) DO NOTHING",
                &[&plate, &limit_kmh, &zone.name()],
            )?;
            c.query_one("SELECT id FROM vehiculos WHERE placa = $1", &[&plate])?
                .try_get(0)
        })
    }

    /// A vehicle's fixes with `from_utc <= ts < to_utc` as they stand in this transaction.
    pub fn for_each_fix(
        &self,
        vehicle_id: i64,
        from_utc: i64,
        to_utc: i64,
        each: impl FnMut(Fix),
    ) -> Result<(), StoreError> {
        self.store.for_each_fix(vehicle_id, from_utc, to_utc, each)
    }

    /// What is stored of a vehicle's analysis now.
    pub fn written(&self, vehicle_id: i64) -> Result<Written, StoreError> {
        self.run(|c| {
            let events = c.query(
                &format!("SELECT {EVENT_COLUMNS}, id FROM eventos WHERE vehiculo_id = $1"),
                &[&vehicle_id],
            )?;
            let events = events
                .iter()
                .map(|r| Ok((event(r)?, r.try_get::<_, i64>(EVENT_VALUES)?)))
                .collect::<Result<Vec<_>, postgres::Error>>()?;
            let days = c.query(
                &format!("SELECT {DAY_VALUE_COLUMNS} FROM resumen_diario WHERE vehiculo_id = $1"),
                &[&vehicle_id],
            )?;
            let days = days
                .iter()
                .map(day_values)
                .collect::<Result<Vec<_>, postgres::Error>>()?;
            Ok(Written::from_rows(events.into_iter(), days.into_iter()))
        })
    }

    /// Makes the vehicle's stored analysis `analysis`, writing only what differs.
    pub fn write_analysis(
        &self,
        vehicle_id: i64,
        analysis: &Analysis,
        written: &mut Written,
        fence_ids: &[i64],
        config: &DetectionConfig,
        now_utc: i64,
    ) -> Result<RowChanges, StoreError> {
        let rows = AnalysisRows {
            vehicle_id,
            analysis,
            fence_ids,
            config,
            now_utc,
        };
        self.run(|c| rows.apply(written, &mut PgRows { client: c }))
    }

    /// Empties the analysis tables and stops the change log (every vehicle is analysed in
    /// this transaction); [`PgLiveTx::commit`] with a record restarts it.
    pub fn restart_analysis(&self) -> Result<(), StoreError> {
        self.unsealed.set(true);
        self.run(|c| {
            unseal(c)?;
            c.batch_execute("DELETE FROM eventos; DELETE FROM resumen_diario;")
        })
    }

    /// Clears a vehicle's change-log entries: its analysis was just written here.
    pub fn forget_changes(&self, vehicle_id: i64) -> Result<(), StoreError> {
        self.run(|c| {
            c.execute(
                "DELETE FROM cambios_desde_analisis WHERE vehiculo_id = $1",
                &[&vehicle_id],
            )
            .map(|_| ())
        })
    }

    /// Whether the change log and all its triggers exist.
    fn logged(c: &mut Client) -> Result<bool, postgres::Error> {
        let expected = super::schema::change_triggers().len() as i64;
        let row = c.query_one(
            "SELECT to_regclass('cambios_desde_analisis') IS NOT NULL,
                    (SELECT count(DISTINCT t.tgname) FROM pg_trigger t JOIN pg_class k ON k.oid = t.tgrelid
                     WHERE k.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal
                       AND t.tgname LIKE 'cambios\\_%')",
            &[],
        )?;
        Ok(row.try_get::<_, bool>(0)? && row.try_get::<_, i64>(1)? == expected)
    }

    /// Commits, emptying the change log (with `record`, the coverage record too, as
    /// SQLite's). Returns the writers' sequence as this commit left it.
    pub fn commit(self, record: Option<&Covered<'_>>) -> Result<i64, StoreError> {
        let unsealed = self.unsealed.get();
        self.finish(|c| match record {
            Some(covered) if unsealed || !Self::logged(c)? => seal(c, covered),
            Some(covered) => {
                c.batch_execute("DELETE FROM cambios_desde_analisis")?;
                write_meta(c, &meta::of_analysis(covered))
            }
            None => c.batch_execute("DELETE FROM cambios_desde_analisis"),
        })
    }

    /// Commits, leaving the change log as it is.
    pub fn commit_logged(self) -> Result<i64, StoreError> {
        self.finish(|_| Ok(()))
    }

    fn finish(
        self,
        before: impl FnOnce(&mut Client) -> Result<(), postgres::Error>,
    ) -> Result<i64, StoreError> {
        let version = self.run(|c| {
            before(c)?;
            let version: i64 = c
                .query_one("SELECT nextval('escrituras_en_vivo')", &[])?
                .try_get(0)?;
            c.batch_execute("COMMIT")?;
            Ok(version)
        })?;
        self.open.set(false);
        Ok(version)
    }

    /// How far the stored detections can be trusted, as this transaction sees them.
    pub fn analysis_state(&self) -> Result<AnalysisState, StoreError> {
        let meta = self.store.meta()?;
        self.store.analysis_state(&meta)
    }
}

impl Drop for PgLiveTx<'_> {
    fn drop(&mut self) {
        if self.open.get() {
            let _ = self.store.with_client(|c| c.batch_execute("ROLLBACK"));
        }
    }
}

/// A `resumen_diario` row as the values [`crate::store::analysis::day_values`] gives.
fn day_values(r: &postgres::Row) -> Result<[Value; DAY_VALUES], postgres::Error> {
    let mut values: [Value; DAY_VALUES] = std::array::from_fn(|_| Value::Null);
    for (i, ty) in DAY_TYPES.iter().enumerate() {
        values[i] = if *ty == Type::TEXT {
            r.try_get::<_, Option<String>>(i)?
                .map_or(Value::Null, Value::Text)
        } else if *ty == Type::FLOAT8 {
            r.try_get::<_, Option<f64>>(i)?
                .map_or(Value::Null, Value::Real)
        } else {
            r.try_get::<_, Option<i64>>(i)?
                .map_or(Value::Null, Value::Integer)
        };
    }
    Ok(values)
}

/// PostgreSQL's statements for [`AnalysisRows::apply`].
struct PgRows<'c> {
    client: &'c mut Client,
}

fn params<const N: usize>(values: &[Value; N], types: &[Type]) -> Vec<Box<dyn ToSql + Sync>> {
    values.iter().zip(types).map(|(v, t)| cell(v, t)).collect()
}

fn placeholders(n: usize) -> String {
    (1..=n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl RowSink for PgRows<'_> {
    type Error = postgres::Error;

    fn insert_event(&mut self, values: &[Value; EVENT_VALUES]) -> Result<i64, postgres::Error> {
        let cells = params(values, &super::write::EVENT_TYPES);
        let refs: Vec<&(dyn ToSql + Sync)> = cells.iter().map(|c| c.as_ref()).collect();
        self.client
            .query_one(
                &format!(
                    "INSERT INTO eventos ({EVENT_VALUE_COLUMNS}) VALUES ({}) RETURNING id",
                    placeholders(EVENT_VALUES)
                ),
                &refs,
            )?
            .try_get(0)
    }

    fn delete_event(&mut self, id: i64) -> Result<(), postgres::Error> {
        self.client
            .execute("DELETE FROM eventos WHERE id = $1", &[&id])
            .map(|_| ())
    }

    fn put_day(&mut self, values: &[Value; DAY_VALUES]) -> Result<(), postgres::Error> {
        let cells = params(values, &DAY_TYPES);
        let refs: Vec<&(dyn ToSql + Sync)> = cells.iter().map(|c| c.as_ref()).collect();
        let updates = DAY_VALUE_COLUMNS
            .split(", ")
            .skip(2)
            .map(|c| format!("{c} = excluded.{c}"))
            .collect::<Vec<_>>()
            .join(", ");
        self.client
            .execute(
                &format!(
                    "INSERT INTO resumen_diario ({DAY_VALUE_COLUMNS}) VALUES ({}) ON CONFLICT (vehiculo_id, fecha) DO UPDATE SET {updates}",
                    placeholders(DAY_VALUES)
                ),
                &refs,
            )
            .map(|_| ())
    }

    fn delete_day(&mut self, vehicle_id: i64, date: &str) -> Result<(), postgres::Error> {
        self.client
            .execute(
                "DELETE FROM resumen_diario WHERE vehiculo_id = $1 AND fecha = $2",
                &[&vehicle_id, &date],
            )
            .map(|_| ())
    }
}
