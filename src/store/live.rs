//! Writing positions as they arrive, and the analysis that follows them.
//!
//! Owns the write path of `flota recibir` and `flota importar`: creating an empty live
//! database, opening one for writing beside readers (WAL, so `flota servir` reads while this
//! writes; checkpoints on their own thread, [`Checkpointer`], so a commit never waits for
//! one), the `dispositivos` table (a tracker's own id for a unit), and [`LiveTx`]: one
//! short transaction that inserts positions (a repeat of a unit's fix time is dropped by the
//! primary key; the change log's triggers name the unit), reads a unit's fixes back for a
//! replay, brings that unit's `eventos` and `resumen_diario` rows in line with a new
//! [`Analysis`] by writing only the rows that changed ([`Written`] remembers what is
//! stored) and clears that unit's change-log entries. Positions committed before their
//! analysis stay in the change log, so readers see those units as behind, never a stale
//! analysis as current. Which units to analyse, and when, is `src/ingest/`'s.

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
    /// and never block the writer), `synchronous = NORMAL` (in WAL mode a commit survives
    /// the process dying at any point, SIGKILL included, and costs no `fsync`; only a power
    /// loss or an OS crash may take the last commits back, never corrupting the file), a
    /// writer's patience for other writers, and checkpoints on a [`Checkpointer`] thread, so
    /// a commit does not wait for pages to be copied back. This connection checkpoints only
    /// as a backstop, once the log holds [`BACKSTOP_FRAMES`]: a checkpointer starved of CPU
    /// or slowed by the disk then costs some commits a copy, never an unbounded log.
    pub fn open_live(path: &Path) -> Result<SqliteStore, StoreError> {
        let mut store = SqliteStore::open_read_write(path)?;
        let present = store
            .conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
            .and_then(|mut stmt| stmt.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| store.sqlite(e))?;
        super::schema::require_base_tables(store.path(), &present)?;
        store
            .conn
            .execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA journal_size_limit = 134217728;",
            )
            .and_then(|()| store.conn.busy_timeout(std::time::Duration::from_secs(10)))
            .and_then(|()| store.conn.execute_batch(DEVICES_DDL))
            .map_err(|e| store.sqlite(e))?;
        match Checkpointer::start(path) {
            Ok(checkpointer) => {
                store
                    .conn
                    .pragma_update(None, "wal_autocheckpoint", BACKSTOP_FRAMES)
                    .map_err(|e| store.sqlite(e))?;
                store.checkpointer = Some(checkpointer);
            }
            // Without the thread, commits checkpoint as SQLite does by default.
            Err(e) => crate::log_warn!("sin hilo de checkpoints para {}: {e}", store.path()),
        }
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

    /// Lets the write-ahead log start over, between two of this writer's transactions, once
    /// the [`Checkpointer`] has copied it all back and it holds [`RESTART_FRAMES`] or more: a
    /// passive checkpoint on this connection copies what was committed since (a fraction of
    /// a second's frames), so the next transaction begins with the whole log copied and
    /// SQLite writes it from the start. Without this the log never restarts under a steady
    /// stream of commits (see [`Checkpointer`]). Returns whether it checkpointed; never
    /// blocks on readers (one still reading the old log only postpones the restart).
    pub fn restart_log(&self) -> Result<bool, StoreError> {
        use std::sync::atomic::Ordering::Relaxed;
        let Some(checkpointer) = &self.checkpointer else {
            return Ok(false);
        };
        if checkpointer.log.frames.load(Relaxed) < RESTART_FRAMES
            || !checkpointer.log.copied.swap(false, Relaxed)
        {
            return Ok(false);
        }
        passive_checkpoint(&self.conn).map_err(|e| self.sqlite(e))?;
        Ok(true)
    }

    /// Starts a live transaction, taking the write lock at once.
    pub fn begin_live(&self) -> Result<SqliteLiveTx<'_>, StoreError> {
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|e| self.sqlite(e))?;
        Ok(SqliteLiveTx {
            tx,
            store: self,
            unsealed: std::cell::Cell::new(false),
        })
    }
}

/// One live transaction. Dropped without [`LiveTx::commit`], nothing of it is kept.
pub struct SqliteLiveTx<'a> {
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

pub(super) fn hash_values(values: &[Value]) -> u64 {
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

impl SqliteLiveTx<'_> {
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
                written
                    .events
                    .push((event_hash(&event(r)?), r.get(EVENT_VALUES)?));
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
        let mut sink = SqliteRows { tx: &self.tx };
        let rows = AnalysisRows {
            vehicle_id,
            analysis,
            fence_ids,
            config,
            now_utc,
        };
        rows.apply(written, &mut sink)
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
    /// Returns the file's `data_version` as this connection sees it (its own commits do not
    /// move it; another connection's next commit will).
    pub fn commit(self, record: Option<&Covered<'_>>) -> Result<i64, StoreError> {
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
        let version = self.data_version()?;
        done.and_then(|()| self.tx.commit())
            .map_err(|e| self.store.sqlite(e))?;
        Ok(version)
    }

    /// Commits, leaving the change log as it is: positions written here and not yet
    /// analysed stay named in it ([`LiveTx::forget_changes`] clears a vehicle once it is).
    pub fn commit_logged(self) -> Result<i64, StoreError> {
        let version = self.data_version()?;
        self.tx.commit().map_err(|e| self.store.sqlite(e))?;
        Ok(version)
    }

    /// Clears a vehicle's change-log entries: its analysis was just written in this
    /// transaction from everything stored for it.
    pub fn forget_changes(&self, vehicle_id: i64) -> Result<(), StoreError> {
        self.tx
            // By the whole key (table, vehicle), not a scan of the log per vehicle.
            .prepare_cached(&format!(
                "DELETE FROM {CHANGE_LOG} WHERE tabla IN ('posiciones', 'eventos', 'resumen_diario') AND vehiculo_id = ?1"
            ))
            .and_then(|mut stmt| stmt.execute([vehicle_id]))
            .map(|_| ())
            .map_err(|e| self.sqlite(e))
    }

    /// How far the stored detections can be trusted, as this transaction sees them.
    pub fn analysis_state(&self) -> Result<super::AnalysisState, StoreError> {
        let meta = self.store.meta()?;
        self.store.analysis_state(&meta)
    }
}

/// How often the [`Checkpointer`] copies the write-ahead log back into the database.
#[cfg(not(test))]
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_secs(1);
#[cfg(test)]
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(50);
/// Passes one round of checkpoints may take to catch up with the writer.
const CATCH_UP_PASSES: u32 = 20;

/// A thread with its own connection that copies the write-ahead log back into the database
/// every [`CHECKPOINT_EVERY`] with passive checkpoints, which never block the writer or the
/// readers, so no commit pays for them. A round repeats the pass, each copying only what was
/// committed during the last, until one finds nothing left or [`CATCH_UP_PASSES`] were made.
/// SQLite reuses the log from its start (cutting it back to `journal_size_limit`) only in a
/// write transaction that *began* with every frame copied back; under a steady stream of
/// commits the writer is always inside one when a round ends, so the log grew without end
/// (2 GB in 60 s at 5,500 positions a second). The writer closes that gap itself
/// ([`SqliteStore::restart_log`]). Stops when dropped (after a last round).
pub struct Checkpointer {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The thread's last word on the log, for the writer ([`SqliteStore::restart_log`]).
    log: std::sync::Arc<LogState>,
}

/// What the checkpointer last saw of the log.
#[derive(Default)]
struct LogState {
    /// Its last round copied every frame back (taken by the writer).
    copied: std::sync::atomic::AtomicBool,
    /// Frames in the log then.
    frames: std::sync::atomic::AtomicI64,
}

/// The writer starts the log over once it holds this many frames (64 MiB of 4 KiB pages):
/// each restart costs the writer a checkpoint of what was committed since the last round
/// (two `fsync`s), so not more often than that. The log grows about a round's frames past
/// it before a restart, so `journal_size_limit` (128 MiB, [`SqliteStore::open_live`]) is set
/// above: a restarted log is rewritten in place, not cut back and grown into new blocks.
#[cfg(not(test))]
const RESTART_FRAMES: i64 = 16_384;
#[cfg(test)]
const RESTART_FRAMES: i64 = 256;

/// Frames at which the writer's own commit checkpoints (SQLite's `wal_autocheckpoint`): the
/// [`Checkpointer`] fell behind (a busy machine once left it 20 passes short round after
/// round and the log reached 98 MB in a test meant to keep it near 1 MB), so the writer
/// copies the log back itself and its next transaction starts it over. Twice the restart
/// mark: in steady running the thread and [`SqliteStore::restart_log`] keep the log below it,
/// and no commit pays.
const BACKSTOP_FRAMES: i64 = 2 * RESTART_FRAMES;

/// What one passive checkpoint reported: frames in the log, frames copied back.
fn passive_checkpoint(conn: &Connection) -> rusqlite::Result<(i64, i64)> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
        Ok((r.get(1)?, r.get(2)?))
    })
}

/// One round: passive checkpoints until every frame of the log is copied back, at most
/// [`CATCH_UP_PASSES`]; what the last one saw goes to `state`. Returns the passes made and
/// whether the last one copied every frame.
fn checkpoint_round(conn: &Connection, state: &LogState) -> (u32, bool) {
    use std::sync::atomic::Ordering::Relaxed;
    for pass in 1..=CATCH_UP_PASSES {
        match passive_checkpoint(conn) {
            Ok((log, copied)) if log <= copied => {
                state.frames.store(log, Relaxed);
                state.copied.store(true, Relaxed);
                return (pass, true);
            }
            Ok(_) => {}
            Err(e) => {
                crate::log_debug!("checkpoint: {e}");
                return (pass, false);
            }
        }
    }
    (CATCH_UP_PASSES, false)
}

impl Checkpointer {
    fn start(path: &Path) -> std::io::Result<Checkpointer> {
        let conn = Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .and_then(|c| c.execute_batch("PRAGMA cache_size = -256;").map(|()| c))
        .map_err(std::io::Error::other)?;
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let log = std::sync::Arc::new(LogState::default());
        let state = std::sync::Arc::clone(&log);
        let thread = std::thread::Builder::new()
            .name("checkpoints".into())
            .spawn(move || {
                let (mut rounds, mut caught_up, mut passes) = (0u32, 0u32, 0u32);
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(CHECKPOINT_EVERY)
                {
                    let (made, all) = checkpoint_round(&conn, &state);
                    rounds += 1;
                    passes += made;
                    caught_up += u32::from(all);
                }
                checkpoint_round(&conn, &state);
                crate::log_debug!(
                    "checkpoints: {rounds} rondas, {passes} pasadas, {caught_up} rondas copiaron todo el registro"
                );
            })?;
        Ok(Checkpointer {
            stop: Some(stop),
            thread: Some(thread),
            log,
        })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Where [`AnalysisRows::apply`] writes: one backend's statements for the rows of one
/// vehicle's analysis.
pub(super) trait RowSink {
    type Error;
    /// Inserts an `eventos` row; returns its id.
    fn insert_event(&mut self, values: &[Value; EVENT_VALUES]) -> Result<i64, Self::Error>;
    fn delete_event(&mut self, id: i64) -> Result<(), Self::Error>;
    /// Inserts or replaces a `resumen_diario` row.
    fn put_day(&mut self, values: &[Value; DAY_VALUES]) -> Result<(), Self::Error>;
    fn delete_day(&mut self, vehicle_id: i64, date: &str) -> Result<(), Self::Error>;
}

/// One vehicle's analysis finished at `now_utc`, as rows.
pub(super) struct AnalysisRows<'a> {
    pub vehicle_id: i64,
    pub analysis: &'a Analysis,
    pub fence_ids: &'a [i64],
    pub config: &'a DetectionConfig,
    pub now_utc: i64,
}

impl AnalysisRows<'_> {
    /// Makes the stored rows these, writing only what differs from `written` (updated),
    /// on either backend.
    pub(super) fn apply<S: RowSink>(
        &self,
        written: &mut Written,
        sink: &mut S,
    ) -> Result<RowChanges, S::Error> {
        let vehicle_id = self.vehicle_id;
        let mut changes = RowChanges::default();
        let old = std::mem::take(&mut written.events);
        let mut used = vec![false; old.len()];
        for row in event_rows(
            vehicle_id,
            self.analysis,
            self.fence_ids,
            self.config,
            self.now_utc,
        ) {
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
                    changes.inserted += 1;
                    sink.insert_event(&event_values(&row))?
                }
            };
            written.events.push((hash, id));
        }
        written.events.sort_unstable();
        for (_, id) in old.iter().zip(&used).filter(|(_, u)| !**u).map(|(e, _)| e) {
            sink.delete_event(*id)?;
            changes.deleted += 1;
        }

        // Days are kept in date order (analyses list them so; ISO dates sort as text).
        let old_days = std::mem::take(&mut written.days);
        for day in &self.analysis.days {
            let values = day_values(vehicle_id, day);
            let hash = hash_values(&values);
            let date = day.date.to_string();
            let stored = old_days
                .binary_search_by(|(d, _)| d.as_str().cmp(&date))
                .ok()
                .map(|i| old_days[i].1);
            if stored != Some(hash) {
                sink.put_day(&values)?;
                changes.inserted += 1;
            }
            written.days.push((date, hash));
        }
        for (date, _) in &old_days {
            if written
                .days
                .binary_search_by(|(d, _)| d.as_str().cmp(date))
                .is_err()
            {
                sink.delete_day(vehicle_id, date)?;
                changes.deleted += 1;
            }
        }
        Ok(changes)
    }
}

impl Written {
    /// What is stored, from each `eventos` row and its id, and each `resumen_diario` row's
    /// values (as [`day_values`] gives them), read by either backend.
    pub(super) fn from_rows(
        events: impl Iterator<Item = (EventRow, i64)>,
        days: impl Iterator<Item = [Value; DAY_VALUES]>,
    ) -> Written {
        let mut written = Written {
            events: events.map(|(e, id)| (event_hash(&e), id)).collect(),
            days: days
                .map(|values| {
                    let date = match &values[1] {
                        Value::Text(t) => t.clone(),
                        _ => String::new(),
                    };
                    (date, hash_values(&values))
                })
                .collect(),
        };
        written.events.sort_unstable();
        written.days.sort_unstable();
        written
    }
}

/// SQLite's statements for [`AnalysisRows::apply`].
struct SqliteRows<'t, 'c> {
    tx: &'t Transaction<'c>,
}

impl RowSink for SqliteRows<'_, '_> {
    type Error = rusqlite::Error;

    fn insert_event(&mut self, values: &[Value; EVENT_VALUES]) -> rusqlite::Result<i64> {
        self.tx
            .prepare_cached(&format!(
                "INSERT INTO eventos ({EVENT_VALUE_COLUMNS}) VALUES ({})",
                placeholders(EVENT_VALUES)
            ))?
            .execute(params_from_iter(values))?;
        Ok(self.tx.last_insert_rowid())
    }

    fn delete_event(&mut self, id: i64) -> rusqlite::Result<()> {
        self.tx
            .prepare_cached("DELETE FROM eventos WHERE id = ?1")?
            .execute([id])
            .map(|_| ())
    }

    fn put_day(&mut self, values: &[Value; DAY_VALUES]) -> rusqlite::Result<()> {
        self.tx
            .prepare_cached(&format!(
                "INSERT OR REPLACE INTO resumen_diario ({DAY_VALUE_COLUMNS}) VALUES ({})",
                placeholders(DAY_VALUES)
            ))?
            .execute(params_from_iter(values))
            .map(|_| ())
    }

    fn delete_day(&mut self, vehicle_id: i64, date: &str) -> rusqlite::Result<()> {
        self.tx
            .prepare_cached("DELETE FROM resumen_diario WHERE vehiculo_id = ?1 AND fecha = ?2")?
            .execute(params![vehicle_id, date])
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A live database of 64 units, with the thread-less checkpointer `log` reports to, and
    /// the path of its write-ahead log.
    fn live_store(dir: &Path, log: &std::sync::Arc<LogState>) -> (SqliteStore, Vec<i64>) {
        let path = dir.join("vivo.db");
        create(
            &path,
            &NewDatabase {
                zone: chrono_tz::UTC,
                config: DetectionConfig::default(),
                fleet_limit_kmh: 90.0,
                now_utc: 1_800_000_000,
            },
        )
        .unwrap();
        let mut store = SqliteStore::open_live(&path).unwrap();
        // The test is the checkpointer (rounds when it says), so nothing hangs on timing.
        store.checkpointer = Some(Checkpointer {
            stop: None,
            thread: None,
            log: std::sync::Arc::clone(log),
        });
        let tx = store.begin_live().unwrap();
        let vehicles = (0..64)
            .map(|i| {
                tx.register_vehicle(&format!("P-{i:03}"), 90.0, chrono_tz::UTC)
                    .unwrap()
            })
            .collect();
        tx.commit_logged().unwrap();
        (store, vehicles)
    }

    /// One commit as `flota recibir` makes them at thousands of positions a second: a
    /// position for each unit, each unit's rows on their own pages; `meanwhile` runs inside
    /// the transaction, as another thread's work would.
    fn commit_second(store: &SqliteStore, vehicles: &[i64], ts: i64, meanwhile: impl FnOnce()) {
        let row = StoredRow {
            delay_s: 0,
            lat_e6: 14_600_000,
            lon_e6: -90_500_000,
            speed_kmh: 40.0,
            heading_deg: 90,
            ignition: true,
            odometer_m: 1_000,
        };
        let tx = store.begin_live().unwrap();
        for id in vehicles {
            tx.insert(*id, ts, &row).unwrap();
        }
        meanwhile();
        tx.commit_logged().unwrap();
    }

    /// The log file's size in frames: its high-water mark, as `journal_size_limit` keeps a
    /// restarted log's file at its size.
    fn frames_in(wal: &Path) -> i64 {
        std::fs::metadata(wal).map_or(0, |m| m.len() as i64) / (4096 + 24)
    }

    /// Commits that write many times the restart mark: 750 of 64 units' positions.
    const COMMITS: i64 = 750;

    /// The most frames one such commit writes: a position per unit dirties its leaf (at a
    /// split also a sibling and a parent) and the change log's pages.
    const COMMIT_FRAMES_MAX: i64 = 3 * 64;

    /// Under a steady stream of commits the checkpointer's round ends while the writer is
    /// inside its next transaction, which began with frames not yet copied, so SQLite never
    /// starts the log over by itself (it grew to 2 GB in a minute that way). Played here in
    /// order: each round runs inside a transaction. The writer starts the log over each time
    /// it holds the restart mark, so it never grows much past it.
    #[test]
    fn the_writer_starts_over_the_log_a_checkpointer_copied_back() {
        let dir = tempfile::tempdir().unwrap();
        let log = std::sync::Arc::new(LogState::default());
        let (store, vehicles) = live_store(dir.path(), &log);
        // The restarts alone: no backstop.
        store
            .conn
            .pragma_update(None, "wal_autocheckpoint", 0)
            .unwrap();
        let rounds = Connection::open(dir.path().join("vivo.db")).unwrap();
        let wal = dir.path().join("vivo.db-wal");
        let (mut largest, mut restarts) = (0, 0);
        for second in 0..COMMITS {
            commit_second(&store, &vehicles, 1_800_000_000 + second, || {
                assert!(
                    checkpoint_round(&rounds, &log).1,
                    "a round copies what was committed"
                );
            });
            restarts += i64::from(store.restart_log().unwrap());
            largest = largest.max(frames_in(&wal));
        }
        assert!(
            restarts >= COMMITS * 64 / RESTART_FRAMES / 2,
            "{restarts} restarts in {COMMITS} commits"
        );
        assert!(
            largest <= RESTART_FRAMES + COMMIT_FRAMES_MAX,
            "the log reached {largest} frames ({restarts} restarts)"
        );
    }

    /// A checkpointer that never gets to run (a starved thread, a slow disk): the writer's
    /// own backstop keeps the log near [`BACKSTOP_FRAMES`], and it never restarts the log
    /// on the thread's word, which never came.
    #[test]
    fn a_checkpointer_that_falls_behind_leaves_the_log_to_the_backstop() {
        let dir = tempfile::tempdir().unwrap();
        let log = std::sync::Arc::new(LogState::default());
        let (store, vehicles) = live_store(dir.path(), &log);
        let wal = dir.path().join("vivo.db-wal");
        let mut largest = 0;
        for second in 0..COMMITS {
            commit_second(&store, &vehicles, 1_800_000_000 + second, || {});
            assert!(
                !store.restart_log().unwrap(),
                "restarted at commit {second}"
            );
            largest = largest.max(frames_in(&wal));
        }
        assert!(
            largest <= BACKSTOP_FRAMES + COMMIT_FRAMES_MAX,
            "the log reached {largest} frames"
        );
    }
}
