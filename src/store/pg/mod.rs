//! The PostgreSQL backend: connecting, PostgreSQL's failures in Spanish, and the reads
//! ([`PgStore`]), the bulk writer of `flota simular` and the re-analysis of `flota analizar`
//! (`write.rs`). Same tables and answers as the SQLite backend; the store's `Store`,
//! `Writer` and `Rewrite` choose between the two (src/store/backend.rs).
//!
//! Owns every PostgreSQL statement. A reader's connection is read-only
//! (`default_transaction_read_only`), its statements end at the per-call limit
//! (`statement_timeout`), and a cancelled call cancels its running statement through the
//! server (a watcher thread sends the cancel request: the querying thread is blocked in it).

pub mod live;
pub mod read;
pub mod schema;
mod streams;
pub mod write;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use postgres::error::SqlState;
use postgres::{CancelToken, Client, NoTls};

use super::location::PgUrl;
use super::reader::StoreError;

pub use read::PgStore;
pub use write::{PgRewrite, PgWriter};

/// How long a connection attempt may take before the server counts as down.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connects to `url` with flota's tables first on the search path.
pub(super) fn connect(url: &PgUrl, read_only: bool) -> Result<Client, StoreError> {
    let shown = url.shown();
    let mut config: postgres::Config = url.secret().parse().map_err(|e| StoreError::Server {
        path: shown.to_owned(),
        message: words(&e),
    })?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    config.application_name("flota");
    let mut client = config.connect(NoTls).map_err(|e| error(url, &e))?;
    let mut setup = format!("SET search_path = {}; SET TIME ZONE 'UTC';", schema::SCHEMA);
    if read_only {
        setup.push_str(" SET default_transaction_read_only = on;");
    }
    client.batch_execute(&setup).map_err(|e| error(url, &e))?;
    Ok(client)
}

/// A PostgreSQL failure in Spanish: the cases a user can act on are named (server down or
/// gone, refused credentials, a missing database, schema or table, read-only, a full disk);
/// the rest are worded by class ([`words`]).
pub(super) fn error(url: &PgUrl, e: &postgres::Error) -> StoreError {
    let path = url.shown().to_owned();
    let Some(code) = e.code() else {
        if e.is_closed() || std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>()) {
            return StoreError::Down { path };
        }
        return StoreError::Server {
            path,
            message: words(e),
        };
    };
    match code {
        c if *c == SqlState::INVALID_CATALOG_NAME => StoreError::NoDatabase {
            path,
            database: url.database().to_owned(),
        },
        c if *c == SqlState::INVALID_PASSWORD
            || *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION =>
        {
            StoreError::Denied { path }
        }
        c if *c == SqlState::UNDEFINED_TABLE => StoreError::MissingTable {
            path,
            table: missing_relation(e),
        },
        c if *c == SqlState::INVALID_SCHEMA_NAME => StoreError::NotFlota { path },
        c if *c == SqlState::READ_ONLY_SQL_TRANSACTION => StoreError::ReadOnly { path },
        c if *c == SqlState::DISK_FULL => StoreError::DiskFull { path },
        c if *c == SqlState::ADMIN_SHUTDOWN
            || *c == SqlState::CRASH_SHUTDOWN
            || *c == SqlState::CANNOT_CONNECT_NOW =>
        {
            StoreError::Down { path }
        }
        _ => StoreError::Server {
            path,
            message: words(e),
        },
    }
}

/// The relation PostgreSQL says is missing (only its English message names it).
fn missing_relation(e: &postgres::Error) -> String {
    let message = e.as_db_error().map(|d| d.message()).unwrap_or_default();
    message
        .split('"')
        .nth(1)
        .map(|name| name.rsplit('.').next().unwrap_or(name).to_owned())
        .unwrap_or_else(|| "?".to_owned())
}

/// What went wrong in PostgreSQL, in Spanish, by its SQLSTATE class (its English text only
/// at `debug`).
pub(super) fn words(e: &postgres::Error) -> String {
    let class = e.code().map(|c| c.code().get(..2).unwrap_or("").to_owned());
    let words = match (e.code(), class.as_deref()) {
        (Some(c), _) if *c == SqlState::QUERY_CANCELED => "consulta interrumpida",
        (Some(c), _) if *c == SqlState::INSUFFICIENT_PRIVILEGE => {
            "sin permiso (el usuario no puede leer o escribir esas tablas)"
        }
        (Some(c), _) if *c == SqlState::T_R_SERIALIZATION_FAILURE => {
            "otra sesión escribió a la vez; reintente"
        }
        (Some(c), _) if *c == SqlState::OUT_OF_MEMORY => "memoria insuficiente en el servidor",
        (_, Some("08")) => "se perdió la conexión con el servidor",
        (_, Some("22")) => "un dato no tiene el tipo o el rango esperado",
        (_, Some("23")) => "los datos no cumplen una restricción de la base",
        (_, Some("42")) => "la base no tiene la forma que flota espera",
        (_, Some("53")) => "el servidor se quedó sin recursos",
        (_, Some("57")) => "el servidor detuvo la operación",
        _ => "PostgreSQL no pudo completar la operación",
    };
    format!("{words}{}", crate::plumbing::spanish::original(e))
}

/// The flag of the call a statement runs for, when there is one: the reader cancels its
/// statement when the flag goes up.
pub type CallFlag = fn() -> Option<Arc<AtomicBool>>;

/// A statement being watched: the call's flag and the token that cancels it.
struct Watched {
    flag: Arc<AtomicBool>,
    token: CancelToken,
}

type Slot = Mutex<Option<Watched>>;

/// Every reader's slot, seen by one watcher thread that cancels the statements of cancelled
/// calls (the thread starts with the first watched statement and polls every 20 ms).
fn watcher() -> &'static Mutex<Vec<Weak<Slot>>> {
    static SLOTS: OnceLock<Mutex<Vec<Weak<Slot>>>> = OnceLock::new();
    SLOTS.get_or_init(|| {
        let spawned = std::thread::Builder::new()
            .name("flota-pg-cancel".into())
            .spawn(|| {
                loop {
                    std::thread::sleep(Duration::from_millis(20));
                    cancel_flagged();
                }
            });
        if let Err(e) = spawned {
            crate::log_warn!("no se pudo vigilar las cancelaciones: {e}");
        }
        Mutex::new(Vec::new())
    })
}

fn cancel_flagged() {
    let slots: Vec<Arc<Slot>> = {
        let mut all = crate::plumbing::mutex::lock(watcher());
        all.retain(|w| w.strong_count() > 0);
        all.iter().filter_map(Weak::upgrade).collect()
    };
    for slot in slots {
        let fire = {
            let mut watched = crate::plumbing::mutex::lock(&slot);
            match watched.as_ref() {
                Some(w) if w.flag.load(Ordering::Relaxed) => watched.take(),
                _ => None,
            }
        };
        if let Some(w) = fire {
            // The statement may have ended meanwhile: a late cancel request is ignored.
            let _ = w.token.cancel_query(NoTls);
        }
    }
}

/// Watches the statements of one reader: [`Canceller::watch`] for the duration of each.
pub(super) struct Canceller {
    slot: Arc<Slot>,
}

impl Canceller {
    pub(super) fn new() -> Canceller {
        let slot = Arc::new(Mutex::new(None));
        crate::plumbing::mutex::lock(watcher()).push(Arc::downgrade(&slot));
        Canceller { slot }
    }

    /// Until the guard drops, `flag` going up cancels the statement running on `client`.
    pub(super) fn watch(&self, flag: Arc<AtomicBool>, client: &Client) -> WatchGuard<'_> {
        *crate::plumbing::mutex::lock(&self.slot) = Some(Watched {
            flag,
            token: client.cancel_token(),
        });
        WatchGuard { slot: &self.slot }
    }
}

pub(super) struct WatchGuard<'a> {
    slot: &'a Slot,
}

impl Drop for WatchGuard<'_> {
    fn drop(&mut self) {
        *crate::plumbing::mutex::lock(self.slot) = None;
    }
}
