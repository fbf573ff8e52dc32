//! Reading a flota database: opening it (read-only for the server), its metadata, fleet
//! tables and positions.
//!
//! Owns every query that reads; `SqliteStore::open` opens with `SQLITE_OPEN_READ_ONLY` and
//! `query_only`, so the server provably cannot write. Errors say in Spanish what is wrong and
//! what to do about it.

use std::path::Path;

use rusqlite::{Connection, OpenFlags, params};

use super::encoding::{FIX_COLUMNS, fix_of_row};
use super::meta::{self, Key, Meta};
use super::schema::SCHEMA_VERSION;
use crate::engine::Fix;
use crate::geometry::earth::LatLon;
use crate::geometry::geofence::{Geofence, Shape, ShapeColumns};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("la base de datos {path} no existe; créela con: flota simular --salida {path}")]
    Missing { path: String },
    #[error(
        "{path} es una carpeta, no una base de datos; indique el archivo, por ejemplo {example}"
    )]
    Folder { path: String, example: String },
    #[error("no se pudo abrir {path}: {message}")]
    Open { path: String, message: String },
    #[error("{path} no es una base de datos de flota (le falta la tabla meta)")]
    NotFlota { path: String },
    #[error(
        "{path} tiene el esquema {found}, pero esta versión de flota lee el {expected}{}; regenérela con flota simular",
        schema_change(*found)
    )]
    Version {
        path: String,
        found: i64,
        expected: i64,
    },
    #[error(
        "{path} está bloqueada por un proceso que escribe en ella (¿flota simular o flota analizar en curso?); reintente en unos segundos"
    )]
    Busy { path: String },
    #[error(
        "{path} está dañada o incompleta (¿se copió a medias o falló el disco?); regenérela con: flota simular --salida {path}"
    )]
    Corrupt { path: String },
    #[error("{path} no tiene la tabla {table}; regenérela con: flota simular --salida {path}")]
    MissingTable { path: String, table: String },
    #[error("no se puede escribir en {path}: el archivo o su carpeta son de solo lectura")]
    ReadOnly { path: String },
    #[error("no queda espacio en el disco para escribir en {path}")]
    DiskFull { path: String },
    #[error("{path}: {message}")]
    Sqlite { path: String, message: String },
    #[error(
        "no se pudo conectar con el servidor PostgreSQL de {path} (¿está en marcha y acepta conexiones en esa dirección y puerto?)"
    )]
    Down { path: String },
    #[error("el servidor PostgreSQL de {path} rechazó el usuario o la contraseña")]
    Denied { path: String },
    #[error(
        "la base de datos {database} no existe en el servidor de {path}; créela (createdb {database}) y luego: flota simular --salida {path}"
    )]
    NoDatabase { path: String, database: String },
    #[error(
        "{path} no tiene las tablas de flota (el esquema flota); créelas con: flota simular --salida {path}"
    )]
    NoTables { path: String },
    #[error("{path}: {message}")]
    Server { path: String, message: String },
    #[error(
        "{path} no es una base de flota completa: le faltan las tablas {tables} (¿es de una versión anterior de flota o de otro programa?); no se escribió nada en ella"
    )]
    Incomplete { path: String, tables: String },
}

/// What changed since an older schema, for the message that refuses it.
fn schema_change(found: i64) -> &'static str {
    if found == 1 {
        " (desde el esquema 2 cada unidad guarda su zona horaria)"
    } else {
        ""
    }
}

/// A SQLite failure in Spanish: the cases a user can act on are named (a writer's lock, a
/// damaged file, a missing table, no permission, a full disk); the rest are worded by their
/// code ([`sqlite_words`]).
pub(super) fn spanish(path: &str, e: rusqlite::Error) -> StoreError {
    let path = path.to_owned();
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            return StoreError::Busy { path };
        }
        Some(rusqlite::ErrorCode::DatabaseCorrupt) => return StoreError::Corrupt { path },
        Some(rusqlite::ErrorCode::ReadOnly) => return StoreError::ReadOnly { path },
        Some(rusqlite::ErrorCode::DiskFull) => return StoreError::DiskFull { path },
        _ => {}
    }
    let message = e.to_string();
    // SQLite says which table is missing only in its English message (read, never shown).
    if let Some(at) = message.find("no such table: ") {
        let table = message[at + "no such table: ".len()..]
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .trim_start_matches("main.")
            .to_owned();
        return StoreError::MissingTable { path, table };
    }
    StoreError::Sqlite {
        path,
        message: sqlite_words(&e),
    }
}

/// What went wrong in SQLite, in Spanish, by its result code (its English text only at
/// `debug`).
pub(super) fn sqlite_words(e: &rusqlite::Error) -> String {
    use rusqlite::ErrorCode as C;
    let words = match e.sqlite_error_code() {
        Some(C::CannotOpen) => "no se pudo abrir el archivo",
        Some(C::PermissionDenied) => "sin permiso",
        Some(C::ReadOnly) => "el archivo o su carpeta son de solo lectura",
        Some(C::DiskFull) => "no queda espacio en el disco",
        Some(C::SystemIoFailure) => "error de entrada/salida del disco",
        Some(C::NotADatabase) => "no es una base de datos SQLite",
        Some(C::DatabaseCorrupt) => "la base está dañada o incompleta",
        Some(C::DatabaseBusy | C::DatabaseLocked) => "la base está bloqueada por otro proceso",
        Some(C::FileLockingProtocolFailed) => "no se pudo bloquear el archivo",
        Some(C::OutOfMemory) => "memoria insuficiente",
        Some(C::OperationInterrupted) => "consulta interrumpida",
        Some(C::OperationAborted) => "operación cancelada",
        Some(C::ConstraintViolation) => "los datos no cumplen una restricción de la base",
        Some(C::TooBig) => "un dato es demasiado grande",
        Some(C::SchemaChanged) => "el esquema de la base cambió durante la consulta",
        Some(C::TypeMismatch) => "un dato no tiene el tipo esperado",
        Some(C::NoLargeFileSupport) => "el sistema no admite archivos tan grandes",
        Some(_) => "SQLite no pudo completar la operación",
        None => match e {
            rusqlite::Error::QueryReturnedNoRows => "falta un dato esperado en la base",
            rusqlite::Error::InvalidColumnType(..)
            | rusqlite::Error::FromSqlConversionFailure(..)
            | rusqlite::Error::IntegralValueOutOfRange(..) => {
                "un dato de la base no tiene el tipo esperado"
            }
            _ => "SQLite no pudo completar la operación",
        },
    };
    format!("{words}{}", crate::plumbing::spanish::original(e))
}

#[derive(Debug, Clone, PartialEq)]
pub struct Vehicle {
    pub id: i64,
    pub plate: String,
    pub kind: String,
    pub driver: String,
    pub active: bool,
    pub limit_kmh: f64,
    pub routes: Vec<String>,
    /// The zone of the unit's calendar: its days, shifts and local times.
    pub zone: chrono_tz::Tz,
}

#[derive(Debug, Clone)]
pub struct StoredFence {
    pub id: i64,
    pub fence: Geofence,
}

#[derive(Debug, Clone)]
pub struct StoredRoute {
    pub name: String,
    pub polyline: String,
    pub stops: Vec<(String, LatLon)>,
}

/// A connection to a flota database. The connection itself stays inside the store: callers
/// get typed methods, so every statement is written here and a future backend can answer
/// the same calls.
pub struct SqliteStore {
    pub(super) conn: Connection,
    path: String,
    /// A live writer's checkpoints, on their own thread (src/store/live.rs).
    pub(super) checkpointer: Option<super::live::Checkpointer>,
}

/// Plans that do not depend on the values bound: SQLite (built with STAT4) otherwise marks a
/// statement whose plan a bound value could change — a range on an indexed column, a
/// `LIMIT` — and prepares it again on every new value, so a cached statement run for each
/// unit was compiled anew each time (3,002 re-prepares in one `mapa_flota` call on 1,000
/// units). flota's queries choose their indexes by their shape (kinds spelled, `INDEXED BY`),
/// never by the values. Every statement cached also stays cached: there are more distinct
/// statements than rusqlite's default 16.
pub(super) fn stable_plans(conn: &Connection) {
    // Neither fails on an open connection; a plan that is merely re-prepared is still right.
    let _ = conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    );
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
}

/// Page cache of a read-only connection, KiB. The server pools up to eight of them and each
/// kept SQLite's default 2,000 KiB once filled: 2.7 MB of the 3.1 MB a server still held
/// after 200 maps (heaptrack). The tools read a few index paths per call, whose upper pages
/// fit in this; the rest come from the operating system's page cache either way.
const READER_CACHE_KIB: i64 = 512;

/// Statements kept prepared per connection: more than the store's distinct SQL texts.
const STATEMENT_CACHE: usize = 64;

impl SqliteStore {
    /// Opens read-only. A missing file is an error naming the command that creates it.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        Self::open_with(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            true,
        )
    }

    /// Opens for `flota analizar`, which rewrites the analysis tables.
    pub fn open_read_write(path: &Path) -> Result<SqliteStore, StoreError> {
        Self::open_with(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            false,
        )
    }

    fn open_with(
        path: &Path,
        flags: OpenFlags,
        query_only: bool,
    ) -> Result<SqliteStore, StoreError> {
        let shown = path.display().to_string();
        if !path.exists() {
            return Err(StoreError::Missing { path: shown });
        }
        // SQLite would answer "disk I/O error" (read-only) or "unable to open" (read-write).
        if path.is_dir() {
            return Err(StoreError::Folder {
                path: shown,
                example: path.join("flota.db").display().to_string(),
            });
        }
        let conn = Connection::open_with_flags(path, flags).map_err(|e| StoreError::Open {
            path: shown.clone(),
            message: sqlite_words(&e),
        })?;
        if query_only {
            conn.pragma_update(None, "query_only", true)
                .map_err(|e| StoreError::Open {
                    path: shown.clone(),
                    message: sqlite_words(&e),
                })?;
            // Failing leaves SQLite's default, which is only more memory.
            let _ = conn.pragma_update(None, "cache_size", -READER_CACHE_KIB);
        }
        // Wait a little for a writer instead of failing at once.
        let _ = conn.busy_timeout(std::time::Duration::from_millis(2000));
        stable_plans(&conn);
        let store = SqliteStore {
            conn,
            path: shown,
            checkpointer: None,
        };
        store.check_version()?;
        Ok(store)
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// Makes running statements stop with an "interrupted" error once `stop` returns true;
    /// it is polled every few thousand SQLite instructions, on the querying thread.
    pub fn interrupt_when(&mut self, stop: fn() -> bool) {
        // Registering a handler on an open connection cannot fail.
        let _ = self.conn.progress_handler(10_000, Some(stop));
    }

    /// A SQLite failure in Spanish ([`spanish`]).
    pub(super) fn sqlite(&self, e: rusqlite::Error) -> StoreError {
        spanish(&self.path, e)
    }

    /// Starts the read transaction of [`crate::store::Store::read_consistently`]: every
    /// query in it sees the same state of the file, whatever another connection commits.
    pub(super) fn begin_read(&self) -> Result<(), StoreError> {
        self.conn.execute_batch("BEGIN").map_err(|e| self.sqlite(e))
    }

    pub(super) fn end_read(&self, ok: bool) -> Result<(), StoreError> {
        self.conn
            .execute_batch(if ok { "COMMIT" } else { "ROLLBACK" })
            .map_err(|e| self.sqlite(e))
    }

    /// SQLite's `data_version` on this connection: it changes when another connection
    /// commits a change to the file, and only then (cheap: one look at the file header).
    pub fn data_version(&self) -> Result<i64, StoreError> {
        self.conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .map_err(|e| self.sqlite(e))
    }

    fn check_version(&self) -> Result<(), StoreError> {
        let has_meta: bool = self
            .conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n > 0)
            .map_err(|e| match e {
                rusqlite::Error::SqliteFailure(f, _)
                    if f.code == rusqlite::ErrorCode::NotADatabase =>
                {
                    StoreError::NotFlota {
                        path: self.path.clone(),
                    }
                }
                other => self.sqlite(other),
            })?;
        if !has_meta {
            return Err(StoreError::NotFlota {
                path: self.path.clone(),
            });
        }
        let found = self
            .meta_value(Key::SchemaVersion)?
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(0);
        if found != SCHEMA_VERSION {
            return Err(StoreError::Version {
                path: self.path.clone(),
                found,
                expected: SCHEMA_VERSION,
            });
        }
        Ok(())
    }

    fn meta_value(&self, key: Key) -> Result<Option<String>, StoreError> {
        meta::read(&self.conn, key).map_err(|e| self.sqlite(e))
    }

    pub fn meta(&self) -> Result<Meta, StoreError> {
        let mut failure = None;
        let meta = Meta::parse(|key| {
            self.meta_value(key).unwrap_or_else(|e| {
                failure.get_or_insert(e);
                None
            })
        });
        if let Some(e) = failure {
            return Err(e);
        }
        meta.map_err(|e| StoreError::Sqlite {
            path: self.path.clone(),
            message: e.to_string(),
        })
    }

    pub fn vehicles(&self) -> Result<Vec<Vehicle>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, placa, tipo, conductor, activo, limite_kmh, rutas, zona_horaria FROM vehiculos ORDER BY id")
            .map_err(|e| self.sqlite(e))?;
        let rows = stmt
            .query_map([], |r| {
                let routes: String = r.get(6)?;
                let zone: String = r.get(7)?;
                Ok(Vehicle {
                    id: r.get(0)?,
                    plate: r.get(1)?,
                    kind: r.get(2)?,
                    driver: r.get(3)?,
                    active: r.get::<_, i64>(4)? != 0,
                    limit_kmh: r.get(5)?,
                    routes: serde_json::from_str(&routes).unwrap_or_default(),
                    zone: zone.parse().unwrap_or(chrono_tz::UTC),
                })
            })
            .map_err(|e| self.sqlite(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sqlite(e))
    }

    pub fn fences(&self) -> Result<Vec<StoredFence>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, nombre, tipo, forma, centro_lat, centro_lon, medio_lado_m, radio_m, poligono_wkt, limite_kmh FROM geocercas ORDER BY id",
            )
            .map_err(|e| self.sqlite(e))?;
        let rows = stmt
            .query_map([], |r| {
                let form: String = r.get(3)?;
                let wkt: String = r.get(8)?;
                let columns = ShapeColumns {
                    form: &form,
                    centre: LatLon::new(r.get(4)?, r.get(5)?),
                    half_side_m: r.get(6)?,
                    radius_m: r.get(7)?,
                    wkt: &wkt,
                };
                let fence = Shape::from_columns(&columns).map(|shape| {
                    Geofence::new(
                        r.get(1).unwrap_or_default(),
                        r.get(2).unwrap_or_default(),
                        shape,
                        r.get(9).unwrap_or_default(),
                    )
                });
                Ok((r.get::<_, i64>(0)?, fence))
            })
            .map_err(|e| self.sqlite(e))?;
        let mut fences = Vec::new();
        for row in rows {
            let (id, fence) = row.map_err(|e| self.sqlite(e))?;
            match fence {
                Some(fence) => fences.push(StoredFence { id, fence }),
                None => {
                    return Err(StoreError::Sqlite {
                        path: self.path.clone(),
                        message: format!("la geocerca {id} tiene una forma ilegible"),
                    });
                }
            }
        }
        Ok(fences)
    }

    pub fn routes(&self) -> Result<Vec<StoredRoute>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, nombre, polilinea FROM rutas ORDER BY id")
            .map_err(|e| self.sqlite(e))?;
        let heads: Vec<(i64, String, String)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(|e| self.sqlite(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.sqlite(e))?;
        let mut stops = self
            .conn
            .prepare("SELECT nombre, lat, lon FROM paradas WHERE ruta_id = ?1 ORDER BY orden")
            .map_err(|e| self.sqlite(e))?;
        let mut routes = Vec::new();
        for (id, name, polyline) in heads {
            let list = stops
                .query_map([id], |r| {
                    Ok((r.get::<_, String>(0)?, LatLon::new(r.get(1)?, r.get(2)?)))
                })
                .map_err(|e| self.sqlite(e))?
                .collect::<Result<_, _>>()
                .map_err(|e| self.sqlite(e))?;
            routes.push(StoredRoute {
                name,
                polyline,
                stops: list,
            });
        }
        Ok(routes)
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
        each: impl FnMut(Fix),
    ) -> Result<(), StoreError> {
        for_each_fix_in(&self.conn, &self.path, vehicle_id, from_utc, to_utc, each)
    }
}

/// [`SqliteStore::for_each_fix`] on any connection (a transaction, for `flota analizar`).
pub(super) fn for_each_fix_in(
    conn: &Connection,
    path: &str,
    vehicle_id: i64,
    from_utc: i64,
    to_utc: i64,
    mut each: impl FnMut(Fix),
) -> Result<(), StoreError> {
    let sqlite = |e: rusqlite::Error| spanish(path, e);
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {FIX_COLUMNS}
             FROM posiciones WHERE vehiculo_id = ?1 AND ts_utc >= ?2 AND ts_utc < ?3 AND secuencia = 0
             ORDER BY ts_utc"
        ))
        .map_err(sqlite)?;
    let mut rows = stmt
        .query(params![vehicle_id, from_utc, to_utc])
        .map_err(sqlite)?;
    while let Some(r) = rows.next().map_err(sqlite)? {
        each(fix_of_row(r).map_err(sqlite)?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::store::schema::DDL;

    static STOP: AtomicBool = AtomicBool::new(false);

    #[test]
    fn sqlite_failures_are_worded_by_code() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("basura.db");
        std::fs::write(&path, vec![b'x'; 4096]).unwrap();
        let conn = Connection::open(&path).unwrap();
        let err = conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap_err();
        assert_eq!(sqlite_words(&err), "no es una base de datos SQLite");
        assert_eq!(
            sqlite_words(&rusqlite::Error::QueryReturnedNoRows),
            "falta un dato esperado en la base"
        );
        let StoreError::Sqlite { message, .. } = spanish("x.db", err) else {
            panic!("not a generic SQLite error");
        };
        assert_eq!(message, "no es una base de datos SQLite");
    }

    /// A read-only connection keeps a small page cache (the server pools several); one that
    /// writes keeps SQLite's default.
    #[test]
    fn read_only_connections_keep_a_small_page_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(DDL).unwrap();
        meta::write(&conn, &[(Key::SchemaVersion, SCHEMA_VERSION.to_string())]).unwrap();
        let default: i64 = conn
            .query_row("PRAGMA cache_size", [], |r| r.get(0))
            .unwrap();
        drop(conn);
        let cache = |store: &SqliteStore| -> i64 {
            store
                .conn
                .query_row("PRAGMA cache_size", [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(cache(&SqliteStore::open(&path).unwrap()), -READER_CACHE_KIB);
        assert!(-READER_CACHE_KIB > default, "{default}");
        assert_eq!(
            cache(&SqliteStore::open_read_write(&path).unwrap()),
            default
        );
    }

    #[test]
    fn a_stop_signal_interrupts_a_running_query() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(DDL).unwrap();
        meta::write(&conn, &[(Key::SchemaVersion, SCHEMA_VERSION.to_string())]).unwrap();
        drop(conn);
        let mut store = SqliteStore::open(&path).unwrap();
        store.interrupt_when(|| STOP.load(Ordering::Relaxed));
        // Long enough to be stopped many times over: a hundred million rows.
        let long = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n \
                    WHERE i < 100000000) SELECT count(*) FROM n";
        STOP.store(true, Ordering::Relaxed);
        let err = store
            .conn
            .query_row(long, [], |r| r.get::<_, i64>(0))
            .unwrap_err();
        assert!(err.to_string().contains("interrupt"), "{err}");
        // The connection stays usable once the signal is down.
        STOP.store(false, Ordering::Relaxed);
        assert_eq!(
            store.meta_value(Key::SchemaVersion).unwrap(),
            Some(SCHEMA_VERSION.to_string())
        );
    }
}
