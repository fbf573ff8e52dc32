//! A writing session on a live database: batches of positions in, each committed with the
//! analysis that covers it.
//!
//! Owns the transaction discipline shared by `flota recibir` and `flota importar`. A session
//! starts by making the stored detections current for every vehicle (re-analysing what was
//! written behind their back, recreating what is unusable) and loading every vehicle's
//! engine; then each [`Session::write`] is one short transaction that inserts positions
//! (repeats of a unit's fix time dropped) and commits them — what an acknowledgement waits
//! for — while their vehicles stay named in the change log; each [`Session::analyse`] is one
//! transaction, bounded in time, that advances the engines of vehicles with positions
//! waiting, publishes them at "now" and clears their change-log entries (readers in between
//! see those vehicles' detections as behind, never as current); and each
//! [`Session::publish_all`] analyses what waits, republishes every vehicle at "now" and
//! records what the analysis covers. If another process committed to the file since the
//! session's last commit (`flota analizar`, an import while receiving), the transaction is
//! abandoned untouched and the caller starts a new session ([`Flow::Resync`]), which re-reads
//! everything from the file. Knows no SQL and no HTTP.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

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
    /// The database's data version after this session's last commit.
    seen: i64,
    /// How the session found the detections.
    pub start: Start,
    /// Where the last [`Session::write`] and [`Session::analyse`] spent their time.
    pub phases: Phases,
    /// Fixes committed but not yet given to their vehicle's engine, by vehicle.
    pending: HashMap<i64, Vec<Fix>>,
    /// The vehicles in `pending`, in the order their first waiting fix was committed.
    waiting: VecDeque<(Instant, i64)>,
    /// Vehicles still to republish at "now" ([`Session::republish`]).
    republish: Vec<i64>,
    /// The "now" a republishing started at, recorded as covered once it is done; and when.
    record_owed: Option<(i64, Instant)>,
}

/// Where the writes spent their time: inserting, committing, and the last analysis
/// (engines advanced, vehicles published, committed).
#[derive(Debug, Clone, Copy, Default)]
pub struct Phases {
    pub insert: Duration,
    pub commit: Duration,
    pub analyse: Duration,
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
        let seen = tx.commit(Some(&Covered {
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
            phases: Phases::default(),
            pending: HashMap::new(),
            waiting: VecDeque::new(),
            republish: Vec::new(),
            record_owed: None,
        })
    }

    /// Begins a transaction, unless someone else committed since this session's last one.
    fn begin(&self) -> Result<Option<LiveTx<'c>>, StoreError> {
        let tx = self.store.begin_live()?;
        Ok((tx.data_version()? == self.seen).then_some(tx))
    }

    /// Writes `positions` in one transaction and commits them; their analysis is left to
    /// [`Session::analyse`] (or [`Session::publish_all`]): until then the change log names
    /// their vehicles, so readers know those detections are behind.
    pub fn write(&mut self, positions: &[Position]) -> Result<Flow<Vec<Outcome>>, StoreError> {
        let began = Instant::now();
        let Some(tx) = self.begin()? else {
            return Ok(Flow::Resync);
        };
        let mut registered: Vec<(String, i64)> = Vec::new();
        let mut rows = Vec::with_capacity(positions.len());
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
            rows.push((vehicle_id, position.ts_utc, &position.row));
        }
        let stored = tx.insert_all(&rows)?;
        let mut outcomes = Vec::with_capacity(positions.len());
        for ((vehicle_id, ts_utc, row), stored) in rows.into_iter().zip(stored) {
            if stored {
                let fix = row.to_fix(ts_utc);
                match self.pending.entry(vehicle_id) {
                    Entry::Occupied(mut fixes) => fixes.get_mut().push(fix),
                    Entry::Vacant(slot) => {
                        slot.insert(vec![fix]);
                        self.waiting.push_back((began, vehicle_id));
                    }
                }
                outcomes.push(Outcome::Stored(vehicle_id));
            } else {
                outcomes.push(Outcome::Duplicate(vehicle_id));
            }
        }
        let inserted = Instant::now();
        self.seen = tx.commit_logged()?;
        self.phases.insert = inserted.duration_since(began);
        self.phases.commit = inserted.elapsed();
        Ok(Flow::Done(outcomes))
    }

    /// Between transactions: lets the database's write-ahead log start over when it is due
    /// (`Store::restart_log`). Whether it did work.
    pub fn restart_log(&self) -> Result<bool, StoreError> {
        self.store.restart_log()
    }

    /// When analysis work is due: vehicles whose first waiting fix was committed
    /// `delay` ago (each is analysed once for everything it received meanwhile), or a
    /// republishing under way (due at once). `None`: nothing waits.
    pub fn work_due(&self, delay: Duration) -> Option<Instant> {
        due(
            self.record_owed.is_some(),
            !self.republish.is_empty(),
            self.waiting.front().map(|(since, _)| *since),
            delay,
            Instant::now(),
        )
    }

    /// Starts republishing every vehicle at "now" (open stops, losses still going on, long
    /// stops), a few at a time in [`Session::analyse`]; the last one records the analysis
    /// as covering everything up to this "now".
    pub fn republish(&mut self) {
        if self.record_owed.is_none() {
            self.republish = self.fleet.vehicle_ids();
            self.record_owed = Some((self.clock.now_utc(), Instant::now()));
        }
    }

    /// One slice of analysis work, in one transaction that ends once `budget` is spent (at
    /// least one vehicle): vehicles whose positions have waited `delay`, oldest first, have
    /// their engines advanced, their detections published at "now" and their change-log
    /// entries cleared; then vehicles being republished are; when nothing is left of
    /// either, the coverage record of the republishing is written. Returns whether work is
    /// left.
    pub fn analyse(&mut self, budget: Duration, delay: Duration) -> Result<Flow<bool>, StoreError> {
        let began = Instant::now();
        let Some(tx) = self.begin()? else {
            return Ok(Flow::Resync);
        };
        let spent = || began.elapsed() >= budget;
        self.analyse_in(&tx, &spent, began.checked_sub(delay))?;
        let now_utc = self.clock.now_utc();
        while !spent() {
            let Some(vehicle_id) = self.republish.pop() else {
                break;
            };
            self.fleet.publish(&tx, vehicle_id, now_utc)?;
        }
        match self.record_owed {
            Some((until_utc, _)) if self.pending.is_empty() && self.republish.is_empty() => {
                self.seen = tx.commit(Some(&Covered {
                    config: self.fleet.config(),
                    until_utc,
                    fixes: self.fleet.fixes(),
                }))?;
                self.record_owed = None;
            }
            _ => self.seen = tx.commit_logged()?,
        }
        self.phases.analyse = began.elapsed();
        Ok(Flow::Done(
            !self.pending.is_empty() || self.record_owed.is_some(),
        ))
    }

    /// Advances and publishes vehicles with positions waiting since `before` or earlier
    /// (all of them with `None`), oldest first, until `spent` (at least one).
    fn analyse_in(
        &mut self,
        tx: &LiveTx<'c>,
        spent: &dyn Fn() -> bool,
        before: Option<Instant>,
    ) -> Result<(), StoreError> {
        let now_utc = self.clock.now_utc();
        while let Some((since, vehicle_id)) = self.waiting.front().copied() {
            if before.is_some_and(|b| since > b) {
                break;
            }
            self.waiting.pop_front();
            let mut fixes = self.pending.remove(&vehicle_id).unwrap_or_default();
            self.fleet.advance(tx, vehicle_id, &mut fixes)?;
            self.fleet.publish(tx, vehicle_id, now_utc)?;
            tx.forget_changes(vehicle_id)?;
            if spent() {
                break;
            }
        }
        Ok(())
    }

    /// Analyses every vehicle with positions waiting, republishes every vehicle at the
    /// clock's "now" (open stops, losses still going on, long stops) and records the
    /// analysis as covering everything up to it.
    pub fn publish_all(&mut self) -> Result<Flow<()>, StoreError> {
        let Some(tx) = self.begin()? else {
            return Ok(Flow::Resync);
        };
        self.analyse_in(&tx, &|| false, None)?;
        let now_utc = self.clock.now_utc();
        self.fleet.publish_all(&tx, now_utc)?;
        self.republish.clear();
        self.record_owed = None;
        self.seen = tx.commit(Some(&Covered {
            config: self.fleet.config(),
            until_utc: now_utc,
            fixes: self.fleet.fixes(),
        }))?;
        Ok(Flow::Done(()))
    }
}

/// When analysis work is due (see [`Session::work_due`]). A republishing owes its record
/// until nothing waits; while vehicles still wait their `delay`, the record is due with
/// them, not at once: "at once" made the writer spin through empty analysis transactions
/// (hundreds of thousands a second) for as long as reports kept arriving.
fn due(
    record_owed: bool,
    republishing: bool,
    first_waiting: Option<Instant>,
    delay: Duration,
    now: Instant,
) -> Option<Instant> {
    let waiting = first_waiting.map(|since| since + delay);
    if republishing || (record_owed && waiting.is_none()) {
        return Some(now);
    }
    waiting
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_is_due_at_once_only_when_it_can_be_done_at_once() {
        let now = Instant::now();
        let delay = Duration::from_millis(250);
        let later = now + delay;
        let check = |owed, republishing, waiting: Option<Instant>, expected: Option<Instant>| {
            assert_eq!(
                due(owed, republishing, waiting, delay, now),
                expected,
                "record owed {owed}, republishing {republishing}, waiting {waiting:?}"
            );
        };
        check(false, false, None, None);
        check(false, false, Some(now), Some(later));
        // Vehicles left to republish: at once.
        check(true, true, Some(now), Some(now));
        check(true, true, None, Some(now));
        // Only the record left, nothing waiting: at once.
        check(true, false, None, Some(now));
        // Only the record left, but vehicles wait their delay: with them.
        check(true, false, Some(now), Some(later));
    }
}
