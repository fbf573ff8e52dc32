//! A writing session on a live database: batches of positions in, each committed with the
//! analysis that covers it.
//!
//! Owns the transaction discipline shared by `flota recibir` and `flota importar`. A session
//! starts by making the stored detections current for every vehicle (re-analysing what was
//! written behind their back, recreating what is unusable) and loading every vehicle's
//! engine; then each [`Session::write`] is one transaction: positions inserted (repeats of a
//! unit's fix time dropped), engines advanced, the touched vehicles published at "now", the
//! change log emptied; and each [`Session::publish_all`] republishes every vehicle at "now"
//! and records what the analysis covers. If another process committed to the file since the
//! session's last commit (`flota analizar`, an import while receiving), the transaction is
//! abandoned untouched and the caller starts a new session ([`Flow::Resync`]), which re-reads
//! everything from the file. Knows no SQL and no HTTP.

use crate::engine::Fix;
use crate::ingest::live::{Contexts, LiveFleet, Reference};
use crate::plumbing::clock::Clock;
use crate::store::{AnalysisState, Covered, LiveTx, Store, StoreError, StoredRow};

/// Who a position belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Unit {
    /// A vehicle of the database, by id.
    Vehicle(i64),
    /// A tracker nobody declared, to be registered as a vehicle with this plate.
    Register(String),
}

/// One position to store.
#[derive(Debug, Clone, PartialEq)]
pub struct Position {
    pub unit: Unit,
    pub ts_utc: i64,
    pub row: StoredRow,
}

/// What became of a position written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Stored, for the vehicle with this id.
    Stored(i64),
    /// The vehicle already had a fix at that time: left as it was.
    Duplicate(i64),
}

/// Whether the session goes on.
#[derive(Debug)]
pub enum Flow<T> {
    Done(T),
    /// Someone else wrote to the file: start a new session.
    Resync,
}

/// How a session found the detections when it started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    Current,
    /// Positions were written since the last analysis: those vehicles were re-analysed.
    Behind(Vec<i64>),
    /// The detections were unusable (the reason): every vehicle was re-analysed.
    Redone(String),
}

pub struct Session<'c> {
    store: &'c Store,
    clock: &'c Clock,
    fleet: LiveFleet<'c>,
    /// The file's `data_version` after this session's last commit.
    seen: i64,
    /// How the session found the detections.
    pub start: Start,
}

/// Runs `body` in sessions on `store`, starting a new one each time it asks to resync.
pub fn run<T>(
    store: &Store,
    clock: &Clock,
    mut body: impl FnMut(&mut Session<'_>) -> Result<Flow<T>, StoreError>,
) -> Result<T, StoreError> {
    loop {
        let reference = Reference::load(store)?;
        let contexts = reference.contexts();
        let mut session = Session::start(store, &contexts, clock)?;
        match body(&mut session)? {
            Flow::Done(value) => return Ok(value),
            Flow::Resync => crate::log_info!(
                "otro proceso escribió en {}: se vuelve a leer la base",
                store.path()
            ),
        }
    }
}

impl<'c> Session<'c> {
    fn start(
        store: &'c Store,
        contexts: &'c Contexts<'c>,
        clock: &'c Clock,
    ) -> Result<Session<'c>, StoreError> {
        let mut fleet = LiveFleet::new(contexts);
        let tx = store.begin_live()?;
        let vehicles: Vec<i64> = store.vehicles()?.iter().map(|v| v.id).collect();
        let start = match tx.analysis_state()? {
            AnalysisState::Current => Start::Current,
            AnalysisState::Behind(changed) => {
                Start::Behind(changed.into_iter().map(|(id, _)| id).collect())
            }
            AnalysisState::Unusable(why) => Start::Redone(why.to_string()),
        };
        let redo = matches!(start, Start::Redone(_));
        if redo {
            tx.restart_analysis()?;
        }
        fleet.load_all(&tx, &vehicles, !redo)?;
        let now_utc = clock.now_utc();
        fleet.publish_all(&tx, now_utc)?;
        let seen = tx.data_version()?;
        tx.commit(Some(&Covered {
            config: fleet.config(),
            until_utc: now_utc,
            fixes: fleet.fixes(),
        }))?;
        Ok(Session {
            store,
            clock,
            fleet,
            seen,
            start,
        })
    }

    /// Begins a transaction, unless someone else committed since this session's last one.
    fn begin(&self) -> Result<Option<LiveTx<'c>>, StoreError> {
        let tx = self.store.begin_live()?;
        Ok((tx.data_version()? == self.seen).then_some(tx))
    }

    /// Writes `positions` and the analysis of the vehicles they touch, in one transaction.
    pub fn write(&mut self, positions: &[Position]) -> Result<Flow<Vec<Outcome>>, StoreError> {
        let Some(tx) = self.begin()? else {
            return Ok(Flow::Resync);
        };
        let mut registered: Vec<(String, i64)> = Vec::new();
        let mut outcomes = Vec::with_capacity(positions.len());
        let mut touched: Vec<(i64, Vec<Fix>)> = Vec::new();
        for position in positions {
            let vehicle_id = match &position.unit {
                Unit::Vehicle(id) => *id,
                Unit::Register(plate) => match registered.iter().find(|(p, _)| p == plate) {
                    Some((_, id)) => *id,
                    None => {
                        let id = tx.register_vehicle(
                            plate,
                            self.fleet.default_limit_kmh(),
                            self.fleet.fleet_zone(),
                        )?;
                        registered.push((plate.clone(), id));
                        id
                    }
                },
            };
            if tx.insert(vehicle_id, position.ts_utc, &position.row)? {
                let fix = position.row.to_fix(position.ts_utc);
                match touched.iter_mut().find(|(id, _)| *id == vehicle_id) {
                    Some((_, fixes)) => fixes.push(fix),
                    None => touched.push((vehicle_id, vec![fix])),
                }
                outcomes.push(Outcome::Stored(vehicle_id));
            } else {
                outcomes.push(Outcome::Duplicate(vehicle_id));
            }
        }
        let now_utc = self.clock.now_utc();
        for (vehicle_id, fixes) in &mut touched {
            self.fleet.advance(&tx, *vehicle_id, fixes)?;
            self.fleet.publish(&tx, *vehicle_id, now_utc)?;
        }
        tx.commit(None)?;
        Ok(Flow::Done(outcomes))
    }

    /// Republishes every vehicle at the clock's "now" (open stops, losses still going on,
    /// long stops) and records the analysis as covering everything up to it.
    pub fn publish_all(&mut self) -> Result<Flow<()>, StoreError> {
        let Some(tx) = self.begin()? else {
            return Ok(Flow::Resync);
        };
        let now_utc = self.clock.now_utc();
        self.fleet.publish_all(&tx, now_utc)?;
        tx.commit(Some(&Covered {
            config: self.fleet.config(),
            until_utc: now_utc,
            fixes: self.fleet.fixes(),
        }))?;
        Ok(Flow::Done(()))
    }
}
