//! Writing positions as they arrive, with the analysis kept current in the same transaction.
//!
//! Owns the write path of `flota recibir` and `flota importar`: creating an empty live
//! database, opening one for writing beside readers (WAL, so `flota servir` reads while this
//! writes), the `dispositivos` table (a tracker's own id for a unit), and [`LiveTx`]: one
//! short transaction that inserts positions (a repeat of a unit's fix time is dropped by the
//! primary key), reads a unit's fixes back for a replay, brings that unit's `eventos` and
//! `resumen_diario` rows in line with a new [`Analysis`] by writing only the rows that
//! changed ([`Written`] remembers what is stored), and on commit empties the change log: the
//! writes it logged are this transaction's own, analysed in it, so readers never see the
//! positions ahead of the detections. Which units to analyse, and when, is `src/ingest/`'s.

use std::hash::{Hash, Hasher};
use std::path::Path;

use chrono_tz::Tz;
use rusqlite::types::Value;
use rusqlite::{Connection, Transaction, TransactionBehavior, params, params_from_iter};

use super::analysis::{
    DAY_VALUE_COLUMNS, DAY_VALUES, EVENT_VALUE_COLUMNS, EVENT_VALUES, day_values, event_rows,
    event_values, placeholders,
};
use super::coverage::{self, Covered};
use super::encoding::StoredRow;
use super::meta::{self, Key};
use super::queries::{EVENT_COLUMNS, EventRow, event};
use super::reader::{SqliteStore, StoreError, for_each_fix_in, spanish};
use super::schema::{ANALYSIS_DDL, CHANGE_LOG, CHANGE_LOG_DDL, DDL, DEVICES_DDL, SCHEMA_VERSION};
use crate::engine::{Analysis, DetectionConfig, Fix};

/// What a new, empty live database records about itself.
#[derive(Debug, Clone)]
pub struct NewDatabase {
    pub zone: Tz,
    pub config: DetectionConfig,
    /// The limit of units registered as they first report, km/h.
    pub fleet_limit_kmh: f64,
    /// "Now" for the empty analysis it is sealed with.
    pub now_utc: i64,
}

/// Creates an empty flota database at `path` (a temporary name the caller renames into
/// place): the schema, `meta` without an `ahora` (a live data set's "now" is the clock's), and
/// a sealed empty analysis, so the detections of what is written later are current from the
/// start.
pub fn create(path: &Path, new: &NewDatabase) -> Result<(), StoreError> {
    let shown = path.display().to_string();
    let sqlite = |e| spanish(&shown, e);
    let conn = Connection::open(path).map_err(sqlite)?;
    let tx = conn.unchecked_transaction().map_err(sqlite)?;
    tx.execute_batch(DDL)
        .and_then(|()| tx.execute_batch(ANALYSIS_DDL))
        .and_then(|()| tx.execute_batch(CHANGE_LOG_DDL))
        .and_then(|()| tx.execute_batch(DEVICES_DDL))
        .and_then(|()| tx.pragma_update(None, "user_version", SCHEMA_VERSION))
        .and_then(|()| meta::write(&tx, &meta::of_live_database(new)))
        .and_then(|()| {
            coverage::seal(
                &tx,
                &Covered {
                    config: &new.config,
                    until_utc: new.now_utc,
                    fixes: 0,
                },
            )
        })
        .and_then(|()| tx.commit())
        .map_err(sqlite)?;
    conn.close().map_err(|(_, e)| sqlite(e))
}

impl SqliteStore {
    /// Opens `path` to write positions beside readers: WAL journal (readers see each commit
    /// and never block the writer), `synchronous = FULL` (a commit is on disk before it is
    /// acknowledged, power loss included), and a writer's patience for other writers.
    pub fn open_live(path: &Path) -> Result<SqliteStore, StoreError> {
        let store = SqliteStore::open_read_write(path)?;
        store
            .conn
            .execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")
            .and_then(|()| store.conn.busy_timeout(std::time::Duration::from_secs(10)))
            .and_then(|()| store.conn.execute_batch(DEVICES_DDL))
            .map_err(|e| store.sqlite(e))?;
        Ok(store)
    }

    /// Makes a data set live: its `ahora` keys go, so readers take the clock's "now" from
    /// here on. Returns whether it had one (a simulation's fixed "now").
    pub fn mark_live(&self) -> Result<bool, StoreError> {
        let had = meta::read(&self.conn, Key::AhoraUtc)
            .map_err(|e| self.sqlite(e))?
            .is_some();
        if had {
            meta::remove(&self.conn, &[Key::AhoraUtc, Key::AhoraLocal])
                .map_err(|e| self.sqlite(e))?;
        }
        Ok(had)
    }

    /// The trackers' own ids: `(device id, vehicle id)`.
    pub fn devices(&self) -> Result<Vec<(String, i64)>, StoreError> {
        self.conn
            .prepare("SELECT dispositivo, vehiculo_id FROM dispositivos ORDER BY dispositivo")
            .and_then(|mut stmt| {
                stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            })
            .map_err(|e| self.sqlite(e))
    }

    /// Records that tracker `device` reports for vehicle `vehicle_id` (replacing what it
    /// reported for before).
    pub fn set_device(&self, device: &str, vehicle_id: i64) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO dispositivos (dispositivo, vehiculo_id) VALUES (?1, ?2)",
                params![device, vehicle_id],
            )
            .map(|_| ())
            .map_err(|e| self.sqlite(e))
    }

    /// Starts a live transaction, taking the write lock at once.
    pub fn begin_live(&self) -> Result<LiveTx<'_>, StoreError> {
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|e| self.sqlite(e))?;
        Ok(LiveTx {
            tx,
            store: self,
            unsealed: std::cell::Cell::new(false),
        })
    }
}

/// One live transaction. Dropped without [`LiveTx::commit`], nothing of it is kept.
pub struct LiveTx<'a> {
    tx: Transaction<'a>,
    store: &'a SqliteStore,
    /// The change log's triggers were dropped ([`LiveTx::restart_analysis`]).
    unsealed: std::cell::Cell<bool>,
}

/// What is stored of one vehicle's analysis: each `eventos` row's content hash and id (sorted
/// by hash; 16 bytes a row), each `resumen_diario` row's date and content hash. The next
/// analysis writes only the rows whose content is not there yet and deletes those no longer
/// in it.
#[derive(Debug, Clone, Default)]
pub struct Written {
    events: Vec<(u64, i64)>,
    days: Vec<(String, u64)>,
}

/// Rows one [`LiveTx::write_analysis`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowChanges {
    pub inserted: usize,
    pub deleted: usize,
}

fn hash_values(values: &[Value]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for v in values {
        match v {
            Value::Null => 0u8.hash(&mut h),
            Value::Integer(i) => (1u8, i).hash(&mut h),
            Value::Real(f) => (2u8, f.to_bits()).hash(&mut h),
            Value::Text(t) => (3u8, t).hash(&mut h),
            Value::Blob(b) => (4u8, b).hash(&mut h),
        }
    }
    h.finish()
}

/// An event row's content hash, from its fields as stored (floats by their bits, which SQLite
/// keeps): no allocation, since every publish hashes every row of the vehicle.
fn event_hash(e: &EventRow) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (e.vehicle_id, e.kind.name(), e.start_utc, e.end_utc).hash(&mut h);
    (e.lat.to_bits(), e.lon.to_bits(), e.fence_id).hash(&mut h);
    (e.max_kmh.map(f64::to_bits), e.limit_kmh.map(f64::to_bits)).hash(&mut h);
    (e.long, e.end_of_day, e.engine_on, e.from_data_start).hash(&mut h);
    (
        e.first_fix_utc,
        e.last_fix_utc,
        e.fixes,
        e.measure.to_bits(),
    )
        .hash(&mut h);
    (&e.threshold, e.threshold_value.to_bits()).hash(&mut h);
    h.finish()
}

impl LiveTx<'_> {
    fn sqlite(&self, e: rusqlite::Error) -> StoreError {
        self.store.sqlite(e)
    }

    /// The file's `data_version` as this connection sees it: it moves only when another
    /// connection commits, so a writer that remembers it after its own commit knows at the
    /// next one whether anyone else wrote in between.
    pub fn data_version(&self) -> Result<i64, StoreError> {
        self.tx
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .map_err(|e| self.sqlite(e))
    }

    /// Stores one position; `false` when the vehicle already has a fix at that time (a
    /// duplicate delivery, or a re-import), which is left as it was.
    pub fn insert(
        &self,
        vehicle_id: i64,
        ts_utc: i64,
        row: &StoredRow,
    ) -> Result<bool, StoreError> {
        let mut stmt = self
            .tx
            .prepare_cached(
                "INSERT INTO posiciones (vehiculo_id, ts_utc, secuencia, retraso_s, lat_e6, lon_e6, velocidad_kmh, rumbo_grados, ignicion, odometro_m)
                 VALUES (?1, ?2, 0, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT (vehiculo_id, ts_utc, secuencia) DO NOTHING",
            )
            .map_err(|e| self.sqlite(e))?;
        let changed = stmt
            .execute(params![
                vehicle_id,
                ts_utc,
                row.delay_s,
                row.lat_e6,
                row.lon_e6,
                row.speed_kmh,
                row.heading_deg,
                row.ignition,
                row.odometer_m
            ])
            .map_err(|e| self.sqlite(e))?;
        Ok(changed == 1)
    }

    /// Adds a vehicle that reported before anyone declared it (or finds it, if it was added
    /// meanwhile); returns its id.
    /// Its calendar is `zone`'s (the fleet's: nothing says otherwise).
    pub fn register_vehicle(
        &self,
        plate: &str,
        limit_kmh: f64,
        zone: chrono_tz::Tz,
    ) -> Result<i64, StoreError> {
        self.tx
            .execute(
                "INSERT INTO vehiculos (placa, tipo, conductor, activo, limite_kmh, rutas, zona_horaria) VALUES (?1, 'desconocido', '', 1, ?2, '[]', ?3)
                 ON CONFLICT (placa) DO NOTHING",
                params![plate, limit_kmh, zone.name()],
            )
            .and_then(|_| {
                self.tx
                    .query_row("SELECT id FROM vehiculos WHERE placa = ?1", [plate], |r| {
                        r.get(0)
                    })
            })
            .map_err(|e| self.sqlite(e))
    }

    /// Whether the change log and all its triggers exist.
    fn logged(&self) -> Result<bool, StoreError> {
        let expected = super::schema::change_triggers().len() as i64 + 1;
        self.tx
            .query_row(
                &format!(
                    "SELECT count(*) FROM sqlite_master WHERE (type = 'trigger' AND name LIKE 'cambios_%') OR (type = 'table' AND name = '{CHANGE_LOG}')"
                ),
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n == expected)
            .map_err(|e| self.sqlite(e))
    }

    /// A vehicle's fixes with `from_utc <= ts < to_utc` as they stand in this transaction.
    pub fn for_each_fix(
        &self,
        vehicle_id: i64,
        from_utc: i64,
        to_utc: i64,
        each: impl FnMut(Fix),
    ) -> Result<(), StoreError> {
        for_each_fix_in(
            &self.tx,
            self.store.path(),
            vehicle_id,
            from_utc,
            to_utc,
            each,
        )
    }

    /// What is stored of a vehicle's analysis now.
    pub fn written(&self, vehicle_id: i64) -> Result<Written, StoreError> {
        let mut written = Written::default();
        let mut read = || -> rusqlite::Result<()> {
            let mut events = self.tx.prepare_cached(&format!(
                "SELECT {EVENT_COLUMNS}, id FROM eventos WHERE vehiculo_id = ?1"
            ))?;
            let mut rows = events.query([vehicle_id])?;
            while let Some(r) = rows.next()? {
                written.events.push((event_hash(&event(r)?), r.get(13)?));
            }
            let mut days = self.tx.prepare_cached(&format!(
                "SELECT {DAY_VALUE_COLUMNS} FROM resumen_diario WHERE vehiculo_id = ?1"
            ))?;
            let mut rows = days.query([vehicle_id])?;
            while let Some(r) = rows.next()? {
                let values: Vec<Value> = (0..DAY_VALUES)
                    .map(|i| r.get::<_, Value>(i))
                    .collect::<rusqlite::Result<_>>()?;
                let date: String = r.get(1)?;
                written.days.push((date, hash_values(&values)));
            }
            written.events.sort_unstable();
            written.days.sort_unstable();
            Ok(())
        };
        read().map_err(|e| self.sqlite(e))?;
        Ok(written)
    }

    /// Makes the vehicle's stored analysis `analysis` (finished at `now_utc`), writing only
    /// what differs from `written`, which is updated.
    pub fn write_analysis(
        &self,
        vehicle_id: i64,
        analysis: &Analysis,
        written: &mut Written,
        fence_ids: &[i64],
        config: &DetectionConfig,
        now_utc: i64,
    ) -> Result<RowChanges, StoreError> {
        self.write_rows(vehicle_id, analysis, written, fence_ids, config, now_utc)
            .map_err(|e| self.sqlite(e))
    }

    fn write_rows(
        &self,
        vehicle_id: i64,
        analysis: &Analysis,
        written: &mut Written,
        fence_ids: &[i64],
        config: &DetectionConfig,
        now_utc: i64,
    ) -> rusqlite::Result<RowChanges> {
        let mut changes = RowChanges::default();
        let old = std::mem::take(&mut written.events);
        let mut used = vec![false; old.len()];
        let mut insert = self.tx.prepare_cached(&format!(
            "INSERT INTO eventos ({EVENT_VALUE_COLUMNS}) VALUES ({})",
            placeholders(EVENT_VALUES)
        ))?;
        for row in event_rows(vehicle_id, analysis, fence_ids, config, now_utc) {
            let hash = event_hash(&row);
            let first = old.partition_point(|(h, _)| *h < hash);
            let stored = (first..old.len())
                .take_while(|i| old[*i].0 == hash)
                .find(|i| !used[*i]);
            let id = match stored {
                Some(i) => {
                    used[i] = true;
                    old[i].1
                }
                None => {
                    insert.execute(params_from_iter(event_values(&row)))?;
                    changes.inserted += 1;
                    self.tx.last_insert_rowid()
                }
            };
            written.events.push((hash, id));
        }
        written.events.sort_unstable();
        let mut delete = self
            .tx
            .prepare_cached("DELETE FROM eventos WHERE id = ?1")?;
        for (_, id) in old.iter().zip(&used).filter(|(_, u)| !**u).map(|(e, _)| e) {
            delete.execute([id])?;
            changes.deleted += 1;
        }

        // Days are kept in date order (analyses list them so; ISO dates sort as text).
        let old_days = std::mem::take(&mut written.days);
        let mut put_day = self.tx.prepare_cached(&format!(
            "INSERT OR REPLACE INTO resumen_diario ({DAY_VALUE_COLUMNS}) VALUES ({})",
            placeholders(DAY_VALUES)
        ))?;
        for day in &analysis.days {
            let values = day_values(vehicle_id, day);
            let hash = hash_values(&values);
            let date = day.date.to_string();
            let stored = old_days
                .binary_search_by(|(d, _)| d.as_str().cmp(&date))
                .ok()
                .map(|i| old_days[i].1);
            if stored != Some(hash) {
                put_day.execute(params_from_iter(values))?;
                changes.inserted += 1;
            }
            written.days.push((date, hash));
        }
        let mut delete_day = self
            .tx
            .prepare_cached("DELETE FROM resumen_diario WHERE vehiculo_id = ?1 AND fecha = ?2")?;
        for (date, _) in &old_days {
            if written
                .days
                .binary_search_by(|(d, _)| d.as_str().cmp(date))
                .is_err()
            {
                delete_day.execute(params![vehicle_id, date])?;
                changes.deleted += 1;
            }
        }
        Ok(changes)
    }

    /// Empties the analysis tables and stops the change log, for an analysis of every
    /// vehicle in this transaction (what `flota analizar` does); [`LiveTx::commit`] with a
    /// record then restarts the log.
    pub fn restart_analysis(&self) -> Result<(), StoreError> {
        self.unsealed.set(true);
        coverage::unseal(&self.tx)
            .and_then(|()| {
                self.tx
                    .execute_batch("DELETE FROM eventos; DELETE FROM resumen_diario;")
            })
            .map_err(|e| self.sqlite(e))
    }

    /// Commits. The change log is emptied: every position written in this transaction was
    /// analysed in it. With `record` (an analysis of every vehicle up to its "now"), the
    /// coverage record is rewritten and the log restarted, as `flota analizar` does.
    pub fn commit(self, record: Option<&Covered<'_>>) -> Result<(), StoreError> {
        let clear = |tx: &Transaction<'_>| tx.execute_batch(&format!("DELETE FROM {CHANGE_LOG};"));
        let done = match record {
            // Triggers dropped, or never made (a file from before the log): the full seal.
            Some(covered) if self.unsealed.get() || !self.logged()? => {
                coverage::seal(&self.tx, covered)
            }
            Some(covered) => {
                clear(&self.tx).and_then(|()| meta::write(&self.tx, &meta::of_analysis(covered)))
            }
            None => clear(&self.tx),
        };
        done.and_then(|()| self.tx.commit())
            .map_err(|e| self.store.sqlite(e))
    }

    /// How far the stored detections can be trusted, as this transaction sees them.
    pub fn analysis_state(&self) -> Result<super::AnalysisState, StoreError> {
        let meta = self.store.meta()?;
        self.store.analysis_state(&meta)
    }
}
