//! The store's public types, each choosing its backend: [`Store`] (reading, and the live
//! writes), [`Rewrite`] (`flota analizar`'s transaction) and [`Writer`] (`flota simular`'s
//! bulk load), on SQLite or on PostgreSQL.
//!
//! Owns the dispatch and nothing else: every statement is the backend's (SQLite's in
//! reader.rs, queries.rs, coverage.rs, analysis.rs, live.rs and writer.rs; PostgreSQL's in
//! pg/). An enum, not a trait object: the methods that take closures (`read_consistently`,
//! `for_each_fix`) would not be object-safe, there are exactly two backends, and a `match`
//! makes every method answer for both (the compiler says which one is missing).

use std::time::Duration;

use chrono::NaiveDate;

use super::analysis::SqliteRewrite;
use super::coverage::{AnalysisState, Covered};
use super::live::{NewDatabase, RowChanges, SqliteLiveTx, Written};
use super::location::Location;
use super::meta::Meta;
use super::pg::live::PgLiveTx;
use super::pg::{CallFlag, PgRewrite, PgStore, PgWriter};
use super::queries::{AlertKey, DayKm, DayRow, EventRow, KmRow, VehicleEvents};
use super::reader::{SqliteStore, StoreError, StoredFence, StoredRoute, Vehicle};
use super::writer::{SqliteWriter, WriteError};
use crate::engine::{Analysis, DetectionConfig, EventKind, Fix};
use crate::scenario::World;
use crate::store::encoding::PositionRow;

/// A connection to a flota database. The connection stays inside the store: callers get
/// typed methods whose signatures name no backend.
pub struct Store {
    backend: Backend,
}

enum Backend {
    Sqlite(SqliteStore),
    Postgres(Box<PgStore>),
}

/// Runs `$body` with `$s` bound to whichever backend `$store` holds.
macro_rules! each {
    ($store:expr, $s:ident => $body:expr) => {
        match &$store.backend {
            Backend::Sqlite($s) => $body,
            Backend::Postgres($s) => $body,
        }
    };
}

impl Store {
    /// Opens read-only (SQLite: `SQLITE_OPEN_READ_ONLY` and `query_only`; PostgreSQL: every
    /// transaction `READ ONLY`). A missing file or server is an error naming what to do.
    pub fn open(at: impl Into<Location>) -> Result<Store, StoreError> {
        let backend = match at.into() {
            Location::Sqlite(path) => Backend::Sqlite(SqliteStore::open(&path)?),
            Location::Postgres(url) => Backend::Postgres(Box::new(PgStore::open(&url)?)),
        };
        Ok(Store { backend })
    }

    /// Opens for `flota analizar`, which rewrites the analysis tables.
    pub fn open_read_write(at: impl Into<Location>) -> Result<Store, StoreError> {
        let backend = match at.into() {
            Location::Sqlite(path) => Backend::Sqlite(SqliteStore::open_read_write(&path)?),
            Location::Postgres(url) => Backend::Postgres(Box::new(PgStore::open_read_write(&url)?)),
        };
        Ok(Store { backend })
    }

    /// Opens a database to write positions beside readers (src/store/live.rs,
    /// src/store/pg/live.rs).
    pub fn open_live(at: impl Into<Location>) -> Result<Store, StoreError> {
        let backend = match at.into() {
            Location::Sqlite(path) => Backend::Sqlite(SqliteStore::open_live(&path)?),
            Location::Postgres(url) => Backend::Postgres(Box::new(PgStore::open_live(&url)?)),
        };
        Ok(Store { backend })
    }

    /// Creates an empty live database on a PostgreSQL server unless it has flota's tables;
    /// returns whether it did. (An empty SQLite file is made by [`super::live::create`]
    /// under a temporary name the caller renames.)
    pub fn create_live_on_server(at: &Location, new: &NewDatabase) -> Result<bool, StoreError> {
        match at {
            Location::Sqlite(_) => Ok(false),
            Location::Postgres(url) => super::pg::live::create_if_missing(url, new),
        }
    }

    /// The database as shown to people (a URL without its password).
    pub fn path(&self) -> &str {
        each!(self, s => s.path())
    }

    /// Makes running statements stop once the current call is cancelled: SQLite polls
    /// `stop` on the querying thread; PostgreSQL has the server cancel the statement when
    /// the call's `flag` goes up.
    pub fn interrupt_when(&mut self, stop: fn() -> bool, flag: CallFlag) {
        match &mut self.backend {
            Backend::Sqlite(s) => s.interrupt_when(stop),
            Backend::Postgres(s) => s.interrupt_when(flag),
        }
    }

    /// The per-call limit as the server's statement timeout (PostgreSQL; SQLite's reads are
    /// stopped by [`Store::interrupt_when`] alone).
    pub fn set_statement_timeout(&self, limit: Option<Duration>) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sqlite(_) => Ok(()),
            Backend::Postgres(s) => s.set_statement_timeout(limit),
        }
    }

    /// Whether the connection is gone (a restarted server): such a store is replaced.
    pub fn is_broken(&self) -> bool {
        match &self.backend {
            Backend::Sqlite(_) => false,
            Backend::Postgres(s) => s.is_broken(),
        }
    }

    /// Runs `read` in one read transaction: every query in it sees the same state,
    /// whatever another connection commits meanwhile.
    pub fn read_consistently<T>(
        &self,
        read: impl FnOnce(&Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        each!(self, s => s.begin_read())?;
        let result = read(self);
        let ended = each!(self, s => s.end_read(result.is_ok()));
        let value = result?;
        ended?;
        Ok(value)
    }

    /// Changes when another connection commits, and only then (SQLite: its `data_version`;
    /// PostgreSQL: the server's next transaction id).
    pub fn data_version(&self) -> Result<i64, StoreError> {
        each!(self, s => s.data_version())
    }

    pub fn meta(&self) -> Result<Meta, StoreError> {
        each!(self, s => s.meta())
    }

    pub fn vehicles(&self) -> Result<Vec<Vehicle>, StoreError> {
        each!(self, s => s.vehicles())
    }

    pub fn fences(&self) -> Result<Vec<StoredFence>, StoreError> {
        each!(self, s => s.fences())
    }

    pub fn routes(&self) -> Result<Vec<StoredRoute>, StoreError> {
        each!(self, s => s.routes())
    }

    /// A vehicle's fixes with `from_utc <= ts < to_utc`, in time order, duplicates dropped.
    pub fn fixes(
        &self,
        vehicle_id: i64,
        from_utc: i64,
        to_utc: i64,
    ) -> Result<Vec<Fix>, StoreError> {
        each!(self, s => s.fixes(vehicle_id, from_utc, to_utc))
    }

    /// Streams a vehicle's fixes (as [`Self::fixes`]) without collecting them.
    pub fn for_each_fix(
        &self,
        vehicle_id: i64,
        from_utc: i64,
        to_utc: i64,
        each: impl FnMut(Fix),
    ) -> Result<(), StoreError> {
        each!(self, s => s.for_each_fix(vehicle_id, from_utc, to_utc, each))
    }

    /// The vehicle's last fix at or before `at_utc`.
    pub fn last_fix(&self, vehicle_id: i64, at_utc: i64) -> Result<Option<Fix>, StoreError> {
        each!(self, s => s.last_fix(vehicle_id, at_utc))
    }

    /// Every vehicle's last fix at or before `at_utc`, by vehicle id (vehicles without one
    /// left out): [`Self::last_fix`] for the whole fleet, in one statement.
    pub fn last_fixes(&self, at_utc: i64) -> Result<Vec<(i64, Fix)>, StoreError> {
        each!(self, s => s.last_fixes(at_utc))
    }

    /// The stop each vehicle is in at `at_utc`, by vehicle id: [`Self::stop_at`] for the
    /// whole fleet, in one statement.
    pub fn stops_under_way(&self, at_utc: i64) -> Result<Vec<EventRow>, StoreError> {
        each!(self, s => s.stops_under_way(at_utc))
    }

    /// When each vehicle's last stop ended, among stops ending in `(from_utc, at_utc]`, by
    /// vehicle id: [`Self::last_stop_end`] for the whole fleet, in one statement.
    pub fn last_stop_ends(
        &self,
        from_utc: i64,
        at_utc: i64,
    ) -> Result<Vec<(i64, i64)>, StoreError> {
        each!(self, s => s.last_stop_ends(from_utc, at_utc))
    }

    /// The stop the vehicle is in at `at_utc` (started by then, not ended by then).
    pub fn stop_at(&self, vehicle_id: i64, at_utc: i64) -> Result<Option<EventRow>, StoreError> {
        each!(self, s => s.stop_at(vehicle_id, at_utc))
    }

    /// Every stop under way at `at_utc`, all vehicles.
    pub fn stops_at(&self, at_utc: i64) -> Result<Vec<EventRow>, StoreError> {
        each!(self, s => s.stops_at(at_utc))
    }

    /// A vehicle's events of `kind` overlapping `[from_utc, to_utc)`, in time order.
    pub fn vehicle_events(
        &self,
        vehicle_id: i64,
        kind: EventKind,
        from_utc: i64,
        to_utc: i64,
    ) -> Result<Vec<EventRow>, StoreError> {
        each!(self, s => s.vehicle_events(vehicle_id, kind, from_utc, to_utc))
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

    /// The keys of every vehicle's events of `kind` starting in `[from_utc, to_utc)`, by start time.
    pub fn alert_keys(
        &self,
        kind: EventKind,
        from_utc: i64,
        to_utc: i64,
    ) -> Result<Vec<AlertKey>, StoreError> {
        each!(self, s => s.alert_keys(kind, from_utc, to_utc))
    }

    /// The keys of [`Self::long_stops`], in its order.
    pub fn long_stop_keys(&self, from_utc: i64, to_utc: i64) -> Result<Vec<AlertKey>, StoreError> {
        each!(self, s => s.long_stop_keys(from_utc, to_utc))
    }

    /// The events with these ids, in the order given.
    pub fn events_by_id(&self, ids: &[i64]) -> Result<Vec<EventRow>, StoreError> {
        each!(self, s => s.events_by_id(ids))
    }

    /// When the vehicle's last stop ended, among stops ending in `(from_utc, at_utc]`.
    pub fn last_stop_end(
        &self,
        vehicle_id: i64,
        from_utc: i64,
        at_utc: i64,
    ) -> Result<Option<i64>, StoreError> {
        each!(self, s => s.last_stop_end(vehicle_id, from_utc, at_utc))
    }

    /// Geofence entries or exits in range, counted per vehicle, by vehicle id.
    pub fn crossings_by_vehicle(
        &self,
        exits: bool,
        from_utc: i64,
        to_utc: i64,
    ) -> Result<Vec<(i64, usize)>, StoreError> {
        each!(self, s => s.crossings_by_vehicle(exits, from_utc, to_utc))
    }

    /// The first `limit` geofence entries or exits in range, in time order.
    pub fn first_crossings(
        &self,
        exits: bool,
        from_utc: i64,
        to_utc: i64,
        limit: usize,
    ) -> Result<Vec<EventRow>, StoreError> {
        each!(self, s => s.first_crossings(exits, from_utc, to_utc, limit))
    }

    /// Long-stop candidates starting in `[from_utc, to_utc)`.
    pub fn long_stops(&self, from_utc: i64, to_utc: i64) -> Result<Vec<EventRow>, StoreError> {
        each!(self, s => s.long_stops(from_utc, to_utc))
    }

    /// A vehicle's aggregates for one local date.
    pub fn day(&self, vehicle_id: i64, date: NaiveDate) -> Result<Option<DayRow>, StoreError> {
        each!(self, s => s.day(vehicle_id, date))
    }

    /// Kilometres per vehicle over the local dates `[from_date, to_date]`.
    pub fn km_by_vehicle(
        &self,
        from_date: NaiveDate,
        to_date: NaiveDate,
    ) -> Result<Vec<KmRow>, StoreError> {
        each!(self, s => s.km_by_vehicle(from_date, to_date))
    }

    /// How many fixes a vehicle sent in `[from_utc, to_utc)`.
    pub fn count_fixes(
        &self,
        vehicle_id: i64,
        from_utc: i64,
        to_utc: i64,
    ) -> Result<i64, StoreError> {
        each!(self, s => s.count_fixes(vehicle_id, from_utc, to_utc))
    }

    /// Every event of every vehicle, for `flota evaluar`.
    pub fn every_event(&self) -> Result<Vec<EventRow>, StoreError> {
        each!(self, s => s.every_event())
    }

    /// Every vehicle-day's kilometres, reported and GPS-only, for `flota evaluar`.
    pub fn every_day_km(&self) -> Result<Vec<DayKm>, StoreError> {
        each!(self, s => s.every_day_km())
    }

    /// How far the detections can be trusted, given the database's `meta`.
    pub fn analysis_state(&self, meta: &Meta) -> Result<AnalysisState, StoreError> {
        each!(self, s => s.analysis_state(meta))
    }

    /// Starts rewriting the analysis tables (`flota analizar`), the write lock taken at once.
    pub fn rewrite_analysis(&mut self) -> Result<Rewrite<'_>, StoreError> {
        Ok(match &mut self.backend {
            Backend::Sqlite(s) => Rewrite::Sqlite(s.rewrite_analysis()?),
            Backend::Postgres(s) => Rewrite::Postgres(s.rewrite_analysis()?),
        })
    }

    /// Makes a data set live (src/store/live.rs).
    pub fn mark_live(&self) -> Result<bool, StoreError> {
        each!(self, s => s.mark_live())
    }

    /// The trackers' own ids: `(device id, vehicle id)`.
    pub fn devices(&self) -> Result<Vec<(String, i64)>, StoreError> {
        each!(self, s => s.devices())
    }

    /// Records that tracker `device` reports for vehicle `vehicle_id`.
    pub fn set_device(&self, device: &str, vehicle_id: i64) -> Result<(), StoreError> {
        each!(self, s => s.set_device(device, vehicle_id))
    }

    /// Between two live transactions: lets SQLite's write-ahead log start over once it is
    /// long and copied back (src/store/live.rs); nothing on PostgreSQL. Whether it did work.
    pub fn restart_log(&self) -> Result<bool, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => s.restart_log(),
            Backend::Postgres(_) => Ok(false),
        }
    }

    /// Starts a live transaction, taking the write lock at once.
    pub fn begin_live(&self) -> Result<LiveTx<'_>, StoreError> {
        Ok(match &self.backend {
            Backend::Sqlite(s) => LiveTx::Sqlite(s.begin_live()?),
            Backend::Postgres(s) => LiveTx::Postgres(s.begin_live()?),
        })
    }
}

/// One live transaction (src/store/live.rs, src/store/pg/live.rs). Dropped without
/// committing, nothing of it is kept.
pub enum LiveTx<'a> {
    Sqlite(SqliteLiveTx<'a>),
    Postgres(PgLiveTx<'a>),
}

macro_rules! tx {
    ($tx:expr, $t:ident => $call:expr) => {
        match $tx {
            LiveTx::Sqlite($t) => $call,
            LiveTx::Postgres($t) => $call,
        }
    };
}

impl LiveTx<'_> {
    /// Moves when another writer commits: a session that finds it moved since its own last
    /// commit starts over.
    pub fn data_version(&self) -> Result<i64, StoreError> {
        tx!(self, t => t.data_version())
    }

    /// Stores positions `(vehicle id, fix time, row)`; for each, whether it was stored
    /// (`false`: the vehicle already had a fix at that time, stored before or earlier in
    /// `rows`). SQLite inserts them one by one (each statement is a function call); the
    /// server takes them in one statement (each is a round trip).
    pub fn insert_all(
        &self,
        rows: &[(i64, i64, &super::StoredRow)],
    ) -> Result<Vec<bool>, StoreError> {
        match self {
            LiveTx::Sqlite(t) => rows
                .iter()
                .map(|(vehicle_id, ts_utc, row)| t.insert(*vehicle_id, *ts_utc, row))
                .collect(),
            LiveTx::Postgres(t) => t.insert_all(rows),
        }
    }

    /// Adds a vehicle that reported before anyone declared it (or finds it); its id.
    pub fn register_vehicle(
        &self,
        plate: &str,
        limit_kmh: f64,
        zone: chrono_tz::Tz,
    ) -> Result<i64, StoreError> {
        tx!(self, t => t.register_vehicle(plate, limit_kmh, zone))
    }

    /// A vehicle's fixes with `from_utc <= ts < to_utc` as they stand in this transaction.
    pub fn for_each_fix(
        &self,
        vehicle_id: i64,
        from_utc: i64,
        to_utc: i64,
        each: impl FnMut(Fix),
    ) -> Result<(), StoreError> {
        tx!(self, t => t.for_each_fix(vehicle_id, from_utc, to_utc, each))
    }

    /// What is stored of a vehicle's analysis now.
    pub fn written(&self, vehicle_id: i64) -> Result<Written, StoreError> {
        tx!(self, t => t.written(vehicle_id))
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
        tx!(self, t => t.write_analysis(vehicle_id, analysis, written, fence_ids, config, now_utc))
    }

    /// Empties the analysis tables and stops the change log.
    pub fn restart_analysis(&self) -> Result<(), StoreError> {
        tx!(self, t => t.restart_analysis())
    }

    /// Clears a vehicle's change-log entries: its analysis was just written here.
    pub fn forget_changes(&self, vehicle_id: i64) -> Result<(), StoreError> {
        tx!(self, t => t.forget_changes(vehicle_id))
    }

    /// Commits, emptying the change log (with `record`, the coverage record too); returns
    /// the data version this writer's next transaction should find.
    pub fn commit(self, record: Option<&Covered<'_>>) -> Result<i64, StoreError> {
        tx!(self, t => t.commit(record))
    }

    /// Commits, leaving the change log as it is; returns as [`LiveTx::commit`].
    pub fn commit_logged(self) -> Result<i64, StoreError> {
        tx!(self, t => t.commit_logged())
    }

    /// How far the stored detections can be trusted, as this transaction sees them.
    pub fn analysis_state(&self) -> Result<AnalysisState, StoreError> {
        tx!(self, t => t.analysis_state())
    }
}

/// A re-analysis under way (`flota analizar`): one transaction; dropped without committing,
/// it leaves the previous tables as they were.
pub enum Rewrite<'a> {
    Sqlite(SqliteRewrite<'a>),
    Postgres(PgRewrite<'a>),
}

impl Rewrite<'_> {
    /// A vehicle's fixes with `from_utc <= ts < to_utc`, as [`Store::for_each_fix`].
    pub fn for_each_fix(
        &self,
        vehicle_id: i64,
        from_utc: i64,
        to_utc: i64,
        each: impl FnMut(Fix),
    ) -> Result<(), StoreError> {
        match self {
            Rewrite::Sqlite(r) => r.for_each_fix(vehicle_id, from_utc, to_utc, each),
            Rewrite::Postgres(r) => r.for_each_fix(vehicle_id, from_utc, to_utc, each),
        }
    }

    /// Stores one vehicle's analysis.
    pub fn insert(
        &self,
        vehicle_id: i64,
        analysis: &Analysis,
        fence_ids: &[i64],
        config: &DetectionConfig,
        now_utc: i64,
    ) -> Result<(), StoreError> {
        match self {
            Rewrite::Sqlite(r) => r.insert(vehicle_id, analysis, fence_ids, config, now_utc),
            Rewrite::Postgres(r) => r.insert(vehicle_id, analysis, fence_ids, config, now_utc),
        }
    }

    /// Records what was covered, gathers planner statistics and commits; returns the number
    /// of events stored.
    pub fn commit(self, covered: &Covered<'_>) -> Result<i64, StoreError> {
        match self {
            Rewrite::Sqlite(r) => r.commit(covered),
            Rewrite::Postgres(r) => r.commit(covered),
        }
    }
}

/// `flota simular`'s database being written: a SQLite file under a temporary name, or a
/// PostgreSQL schema built in one transaction.
pub enum Writer {
    Sqlite(SqliteWriter),
    Postgres(Box<PgWriter>),
}

/// A written database not yet in place: [`Finished::commit`] puts it there.
pub struct Finished {
    /// Bytes on disk, when the backend can tell before committing.
    pub bytes: Option<u64>,
    pending: Option<Box<PgWriter>>,
}

impl Finished {
    /// PostgreSQL: the schema swap and the commit. SQLite: nothing (the caller renames the
    /// file).
    pub fn commit(self) -> Result<(), WriteError> {
        match self.pending {
            Some(writer) => Ok(writer.commit()?),
            None => Ok(()),
        }
    }
}

impl Writer {
    /// A new database at `at` (for SQLite, a file that must not exist yet).
    pub fn create(at: &Location) -> Result<Writer, WriteError> {
        Ok(match at {
            Location::Sqlite(path) => Writer::Sqlite(SqliteWriter::create(path)?),
            Location::Postgres(url) => Writer::Postgres(Box::new(PgWriter::create(url)?)),
        })
    }

    /// Positions written so far.
    pub fn rows(&self) -> u64 {
        match self {
            Writer::Sqlite(w) => w.rows,
            Writer::Postgres(w) => w.rows,
        }
    }

    /// Vehicles, geofences, routes and stops.
    pub fn write_fleet(&mut self, world: &World) -> Result<(), WriteError> {
        match self {
            Writer::Sqlite(w) => w.write_fleet(world),
            Writer::Postgres(w) => Ok(w.write_fleet(world)?),
        }
    }

    /// One unit's reports.
    pub fn write_positions(
        &mut self,
        vehicle_id: i64,
        reports: &[PositionRow],
    ) -> Result<(), WriteError> {
        match self {
            Writer::Sqlite(w) => w.write_positions(vehicle_id, reports),
            Writer::Postgres(w) => Ok(w.write_positions(vehicle_id, reports)?),
        }
    }

    /// One vehicle's detections.
    pub fn write_analysis(
        &mut self,
        vehicle_id: i64,
        analysis: &Analysis,
        fence_ids: &[i64],
        config: &DetectionConfig,
        now_utc: i64,
    ) -> Result<(), WriteError> {
        match self {
            Writer::Sqlite(w) => w.write_analysis(vehicle_id, analysis, fence_ids, config, now_utc),
            Writer::Postgres(w) => {
                Ok(w.write_analysis(vehicle_id, analysis, fence_ids, config, now_utc)?)
            }
        }
    }

    /// What the simulation of `world` records about itself in `meta`.
    pub fn write_meta(&mut self, world: &World) -> Result<(), WriteError> {
        match self {
            Writer::Sqlite(w) => w.write_meta(world),
            Writer::Postgres(w) => Ok(w.write_meta(world)?),
        }
    }

    /// Records what the analysis covered and starts the change log.
    pub fn seal_analysis(&mut self, covered: &Covered<'_>) -> Result<(), WriteError> {
        match self {
            Writer::Sqlite(w) => w.seal_analysis(covered),
            Writer::Postgres(w) => Ok(w.seal_analysis(covered)?),
        }
    }

    /// Everything but putting the database in place.
    pub fn finish(self) -> Result<Finished, WriteError> {
        match self {
            Writer::Sqlite(w) => {
                w.finish()?;
                Ok(Finished {
                    bytes: None,
                    pending: None,
                })
            }
            Writer::Postgres(mut w) => Ok(Finished {
                bytes: Some(w.finish()?),
                pending: Some(w),
            }),
        }
    }
}
