//! Incremental analysis: each vehicle's streaming engine kept alive between commits.
//!
//! Owns [`LiveFleet`]. Every vehicle has a [`VehicleEngine`] that has read all its fixes in
//! time order, plus a few [`Checkpoint`]s of it at earlier fix times. New positions are
//! inserted first; then, per vehicle they touched:
//!
//! - all after the engine's last fix (the usual case): they are pushed, in order;
//! - one at or before it (a late or out-of-order report): the engine goes back to the latest
//!   checkpoint taken before that fix and replays every stored fix after the checkpoint, the
//!   late one now among them; with no such checkpoint it starts over from the vehicle's
//!   first fix. Either way it ends as the engine that read every fix in order.
//!
//! Publishing a vehicle finishes a *copy* of its engine at "now" and writes the difference
//! with what is stored. So after a commit the vehicle's rows are exactly what a batch
//! `flota analizar` at that "now" writes (docs/ingesta.md, "Análisis incremental"). Knows no
//! SQL: the store's [`LiveTx`] reads and writes.

use std::collections::HashMap;

use chrono_tz::Tz;

use crate::engine::{Checkpoint, Context, DetectionConfig, Fix, VehicleEngine};
use crate::geometry::geofence::Geofence;
use crate::store::{LiveTx, RowChanges, Store, StoreError, Written};

/// A checkpoint is taken when a fix comes this long (fix time) after the last one.
const CHECKPOINT_EVERY_S: i64 = 300;
/// Age buckets of checkpoints, each keeping one: under 5 minutes, then 5–10, 10–20, 20–40
/// minutes… up to 21–43 hours. A report older than every checkpoint (a tracker's backlog
/// after more than a day out of coverage) replays the vehicle's whole history.
const MAX_CHECKPOINTS: usize = 10;

/// What the engines need from the database: thresholds, fences, zone, limits.
#[derive(Debug, Clone)]
pub struct Reference {
    pub config: DetectionConfig,
    pub fences: Vec<Geofence>,
    pub fence_ids: Vec<i64>,
    /// The fleet's zone: the calendar of a vehicle registered after this was read.
    pub zone: Tz,
    /// Each vehicle's limit, km/h, and the zone of its calendar, by id.
    pub units: Vec<(i64, f64, Tz)>,
    /// The limit of a vehicle registered after this was read.
    pub default_limit_kmh: f64,
}

/// A unit's limit when neither it nor the fleet says (the scenarios' default).
pub const DEFAULT_LIMIT_KMH: f64 = 80.0;

impl Reference {
    pub fn load(store: &Store) -> Result<Reference, StoreError> {
        let meta = store.meta()?;
        let fences = store.fences()?;
        Ok(Reference {
            fence_ids: fences.iter().map(|f| f.id).collect(),
            fences: fences.into_iter().map(|f| f.fence).collect(),
            zone: meta.zone,
            units: store
                .vehicles()?
                .iter()
                .map(|v| (v.id, v.limit_kmh, v.zone))
                .collect(),
            default_limit_kmh: meta.fleet_limit_kmh.unwrap_or(DEFAULT_LIMIT_KMH),
            config: meta.config,
        })
    }

    /// One engine context per distinct limit and zone (vehicles share them).
    pub fn contexts(&self) -> Contexts<'_> {
        let mut kinds: Vec<(f64, Tz)> = self.units.iter().map(|(_, l, z)| (*l, *z)).collect();
        kinds.push((self.default_limit_kmh, self.zone));
        kinds.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.name().cmp(b.1.name())));
        kinds.dedup();
        Contexts {
            reference: self,
            by_kind: kinds
                .into_iter()
                .map(|(limit_kmh, zone)| Context {
                    config: &self.config,
                    fences: &self.fences,
                    limit_kmh,
                    zone,
                })
                .collect(),
        }
    }
}

/// The engines' contexts, one per limit and zone.
pub struct Contexts<'r> {
    reference: &'r Reference,
    by_kind: Vec<Context<'r>>,
}

impl<'r> Contexts<'r> {
    fn of(&self, vehicle_id: i64) -> &Context<'r> {
        let reference = self.reference;
        let (limit, zone) = reference
            .units
            .iter()
            .find(|(id, _, _)| *id == vehicle_id)
            .map_or(
                (reference.default_limit_kmh, reference.zone),
                |(_, l, z)| (*l, *z),
            );
        self.by_kind
            .iter()
            .find(|c| c.limit_kmh == limit && c.zone == zone)
            .unwrap_or(&self.by_kind[0])
    }
}

struct LiveVehicle<'c> {
    engine: VehicleEngine<'c>,
    /// Checkpoints by fix time, with the fixes read by then. Boxed: a checkpoint is a copy
    /// of the engine (nearly 2 KB), and a vector's spare slots would each cost as much.
    checkpoints: Vec<(Box<Checkpoint<'c>>, u64)>,
    fixes: u64,
    written: Written,
}

impl<'c> LiveVehicle<'c> {
    fn new(ctx: &'c Context<'c>, written: Written) -> Self {
        LiveVehicle {
            engine: VehicleEngine::new(ctx),
            checkpoints: Vec::new(),
            fixes: 0,
            written,
        }
    }

    /// Pushes one fix (after the engine's last), checkpointing first when it is time.
    fn push(&mut self, fix: Fix) {
        if let Some(last) = self.engine.last_fix_utc() {
            if fix.ts_utc <= last {
                return;
            }
            let since = self
                .checkpoints
                .last()
                .and_then(|(c, _)| c.last_fix_utc())
                .unwrap_or(i64::MIN);
            if fix.ts_utc.saturating_sub(since) >= CHECKPOINT_EVERY_S {
                self.checkpoints
                    .push((Box::new(self.engine.checkpoint()), self.fixes));
                thin(&mut self.checkpoints, fix.ts_utc);
            }
        }
        self.engine.push(fix);
        self.fixes += 1;
    }

    /// Goes back to the latest checkpoint before `before_utc`, returning the fix time to
    /// replay from (exclusive); `None`: no checkpoint is early enough.
    fn rewind(&mut self, before_utc: i64) -> Option<i64> {
        let keep = self
            .checkpoints
            .iter()
            .rposition(|(c, _)| c.last_fix_utc().is_some_and(|t| t < before_utc))?;
        self.checkpoints.truncate(keep + 1);
        let (checkpoint, fixes) = &self.checkpoints[keep];
        self.engine.restore(checkpoint);
        self.fixes = *fixes;
        checkpoint.last_fix_utc()
    }
}

/// The age bucket of a checkpoint `age_s` old: 0 under [`CHECKPOINT_EVERY_S`], then one per
/// doubling; `None` past the last.
fn bucket(age_s: i64) -> Option<usize> {
    let steps = age_s / CHECKPOINT_EVERY_S;
    let bucket = if steps == 0 {
        0
    } else {
        steps.ilog2() as usize + 1
    };
    (bucket < MAX_CHECKPOINTS).then_some(bucket)
}

/// Keeps the newest checkpoint of each age bucket (ages from `now_utc`, the last fix): the
/// kept ones are about 5, 10, 20, 40… minutes apart, so a report `d` late replays at most
/// about `2d` of fixes. Past the last bucket (about 43 hours) they are dropped.
fn thin(checkpoints: &mut Vec<(Box<Checkpoint<'_>>, u64)>, now_utc: i64) {
    let mut seen = [false; MAX_CHECKPOINTS];
    let mut keep: Vec<bool> = checkpoints
        .iter()
        .rev()
        .map(|(c, _)| {
            let age = now_utc.saturating_sub(c.last_fix_utc().unwrap_or(i64::MIN));
            bucket(age).is_some_and(|b| !std::mem::replace(&mut seen[b], true))
        })
        .collect();
    keep.reverse();
    let mut flags = keep.into_iter();
    checkpoints.retain(|_| flags.next().unwrap_or(false));
}

/// Every vehicle's live engine.
pub struct LiveFleet<'c> {
    contexts: &'c Contexts<'c>,
    /// Boxed: the table keeps about twice as many slots as vehicles, each as large as its
    /// value.
    vehicles: HashMap<i64, Box<LiveVehicle<'c>>>,
}

impl<'c> LiveFleet<'c> {
    pub fn new(contexts: &'c Contexts<'c>) -> Self {
        LiveFleet {
            contexts,
            vehicles: HashMap::new(),
        }
    }

    fn reference(&self) -> &Reference {
        self.contexts.reference
    }

    /// Fixes read by every engine.
    pub fn fixes(&self) -> u64 {
        self.vehicles.values().map(|v| v.fixes).sum()
    }

    /// Reads a vehicle's whole history into a fresh engine; `written`: what is stored of its
    /// analysis.
    fn load(
        &mut self,
        tx: &LiveTx<'_>,
        vehicle_id: i64,
        written: Written,
    ) -> Result<(), StoreError> {
        let mut vehicle = Box::new(LiveVehicle::new(self.contexts.of(vehicle_id), written));
        tx.for_each_fix(vehicle_id, i64::MIN, i64::MAX, |fix| vehicle.push(fix))?;
        self.vehicles.insert(vehicle_id, vehicle);
        Ok(())
    }

    /// Loads every vehicle in `vehicle_ids`; `stored`: whether their stored analysis rows
    /// stand (else the tables were just emptied).
    pub fn load_all(
        &mut self,
        tx: &LiveTx<'_>,
        vehicle_ids: &[i64],
        stored: bool,
    ) -> Result<(), StoreError> {
        for id in vehicle_ids {
            let written = if stored {
                tx.written(*id)?
            } else {
                Written::default()
            };
            self.load(tx, *id, written)?;
        }
        Ok(())
    }

    /// After `fixes` of `vehicle_id` were inserted in `tx` (new ones only, any order): brings
    /// its engine up to date with everything stored.
    pub fn advance(
        &mut self,
        tx: &LiveTx<'_>,
        vehicle_id: i64,
        fixes: &mut [Fix],
    ) -> Result<(), StoreError> {
        let Some(vehicle) = self.vehicles.get_mut(&vehicle_id) else {
            let written = tx.written(vehicle_id)?;
            return self.load(tx, vehicle_id, written);
        };
        fixes.sort_by_key(|f| f.ts_utc);
        let Some(earliest) = fixes.first().map(|f| f.ts_utc) else {
            return Ok(());
        };
        if vehicle
            .engine
            .last_fix_utc()
            .is_none_or(|last| earliest > last)
        {
            for fix in fixes.iter() {
                vehicle.push(*fix);
            }
            return Ok(());
        }
        match vehicle.rewind(earliest) {
            Some(from) => tx.for_each_fix(vehicle_id, from + 1, i64::MAX, |fix| vehicle.push(fix)),
            None => {
                let written = std::mem::take(&mut vehicle.written);
                self.load(tx, vehicle_id, written)
            }
        }
    }

    /// Writes a vehicle's analysis finished at `now_utc` (only what changed).
    pub fn publish(
        &mut self,
        tx: &LiveTx<'_>,
        vehicle_id: i64,
        now_utc: i64,
    ) -> Result<RowChanges, StoreError> {
        let contexts = self.contexts;
        let Some(vehicle) = self.vehicles.get_mut(&vehicle_id) else {
            return Ok(RowChanges::default());
        };
        let analysis = vehicle.engine.clone().finish(now_utc);
        let reference = contexts.reference;
        tx.write_analysis(
            vehicle_id,
            &analysis,
            &mut vehicle.written,
            &reference.fence_ids,
            &reference.config,
            now_utc,
        )
    }

    /// Publishes every vehicle at `now_utc`.
    pub fn publish_all(&mut self, tx: &LiveTx<'_>, now_utc: i64) -> Result<RowChanges, StoreError> {
        let mut ids: Vec<i64> = self.vehicles.keys().copied().collect();
        ids.sort_unstable();
        let mut total = RowChanges::default();
        for id in ids {
            let changes = self.publish(tx, id, now_utc)?;
            total.inserted += changes.inserted;
            total.deleted += changes.deleted;
        }
        Ok(total)
    }

    /// Every vehicle with an engine, by id.
    pub fn vehicle_ids(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self.vehicles.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// The limit of a vehicle registered now.
    pub fn default_limit_kmh(&self) -> f64 {
        self.reference().default_limit_kmh
    }

    /// The calendar of a vehicle registered now: the fleet's.
    pub fn fleet_zone(&self) -> chrono_tz::Tz {
        self.reference().zone
    }

    /// The thresholds the engines run with.
    pub fn config(&self) -> &DetectionConfig {
        &self.reference().config
    }
}
