//! Checkpoints of a streaming engine: where a replay can restart when a late fix arrives.
//!
//! Owns [`Checkpoint`] and the two operations on [`VehicleEngine`] that use it. The engine's
//! state is its detectors' running state plus the detections made so far; those lists only
//! ever grow while fixes are pushed (only `finish` edits them, and it consumes the engine), so
//! a checkpoint keeps the running state and the *lengths* of the lists, not the lists: it
//! costs a few kilobytes whatever the history, and restoring it truncates the lists back.
//! Restoring the checkpoint taken before the fixes after `t`, then pushing every fix after
//! `t` in order (the late one among them), gives exactly the engine that pushing all fixes
//! in order from the start would have given: the incremental analysis equals the batch one.

use super::{Gap, Overspeed, Stop, VehicleEngine, Visit};

/// The engine as it was after its fix at [`Checkpoint::last_fix_utc`], without the
/// detections it had made (only how many).
#[derive(Clone)]
pub struct Checkpoint<'a> {
    engine: VehicleEngine<'a>,
    made: [usize; 4],
}

impl Checkpoint<'_> {
    /// The time of the last fix the checkpoint includes (`None`: none, the engine's start).
    pub fn last_fix_utc(&self) -> Option<i64> {
        self.engine.last.map(|f| f.ts_utc)
    }
}

/// The detections an engine has made so far, taken out of it.
struct Made {
    stops: Vec<Stop>,
    overspeeds: Vec<Overspeed>,
    gaps: Vec<Gap>,
    visits: Vec<Visit>,
}

impl Made {
    fn lengths(&self) -> [usize; 4] {
        [
            self.stops.len(),
            self.overspeeds.len(),
            self.gaps.len(),
            self.visits.len(),
        ]
    }

    fn truncate(&mut self, lengths: [usize; 4]) {
        self.stops.truncate(lengths[0]);
        self.overspeeds.truncate(lengths[1]);
        self.gaps.truncate(lengths[2]);
        self.visits.truncate(lengths[3]);
    }
}

impl<'a> VehicleEngine<'a> {
    /// The time of the last fix pushed.
    pub fn last_fix_utc(&self) -> Option<i64> {
        self.last.map(|f| f.ts_utc)
    }

    fn take_made(&mut self) -> Made {
        Made {
            stops: std::mem::take(&mut self.stops.stops),
            overspeeds: std::mem::take(&mut self.overspeed.episodes),
            gaps: std::mem::take(&mut self.gaps.gaps),
            visits: std::mem::take(&mut self.fences.visits),
        }
    }

    fn put_made(&mut self, made: Made) {
        self.stops.stops = made.stops;
        self.overspeed.episodes = made.overspeeds;
        self.gaps.gaps = made.gaps;
        self.fences.visits = made.visits;
    }

    /// A checkpoint of the engine as it is now.
    pub fn checkpoint(&mut self) -> Checkpoint<'a> {
        let made = self.take_made();
        let checkpoint = Checkpoint {
            engine: self.clone(),
            made: made.lengths(),
        };
        self.put_made(made);
        checkpoint
    }

    /// Puts the engine back as it was at `checkpoint`, which must have been taken from this
    /// engine (its detections are the first ones of the engine's lists).
    pub fn restore(&mut self, checkpoint: &Checkpoint<'a>) {
        let mut made = self.take_made();
        made.truncate(checkpoint.made);
        *self = checkpoint.engine.clone();
        self.put_made(made);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Analysis, Context, DetectionConfig, Fix};
    use crate::geometry::earth::{LatLon, offset_m};

    /// A day of fixes every 15 s: drives (some over the limit), stops, a silence.
    fn day_of_fixes() -> Vec<Fix> {
        let origin = LatLon::new(14.6, -90.5);
        let (mut fixes, mut x_m) = (Vec::new(), 0.0);
        let legs: [(f64, i64); 8] = [
            (40.0, 600),
            (0.0, 900),
            (95.0, 300),
            (50.0, 300),
            (0.0, 1200),
            (40.0, 450),
            (0.0, 400),
            (30.0, 600),
        ];
        let mut t = 1_786_644_000;
        for (index, (kmh, secs)) in legs.into_iter().enumerate() {
            for _ in 0..secs / 15 {
                // Leg 6 is silent: the tracker lost its signal while stopped.
                if index != 6 {
                    let p = offset_m(origin, x_m + (t % 7) as f64, 0.0);
                    fixes.push(Fix {
                        ts_utc: t,
                        lat: p.lat,
                        lon: p.lon,
                        speed_kmh: kmh,
                        heading_deg: 90.0,
                        ignition: true,
                        odometer_m: Some(x_m as i64),
                    });
                }
                x_m += kmh / 3.6 * 15.0;
                t += 15;
            }
        }
        fixes
    }

    fn context(config: &DetectionConfig) -> Context<'_> {
        Context {
            config,
            fences: &[],
            limit_kmh: 60.0,
            zone: chrono_tz::America::Guatemala,
        }
    }

    /// What an incremental analysis makes of `fixes` when the one at `late` arrives after all
    /// the others: a checkpoint is taken before the first fix at or after `checkpoint_at`, and
    /// on the late fix the engine goes back to it and replays every fix after it.
    fn replayed(ctx: &Context<'_>, fixes: &[Fix], late: usize, checkpoint_at: i64) -> Analysis {
        let now = fixes[fixes.len() - 1].ts_utc + 60;
        let late = fixes[late];
        let mut engine = VehicleEngine::new(ctx);
        let mut checkpoint = None;
        for fix in fixes.iter().filter(|f| f.ts_utc != late.ts_utc) {
            if checkpoint.is_none() && fix.ts_utc >= checkpoint_at {
                checkpoint = Some(engine.checkpoint());
            }
            engine.push(*fix);
        }
        let Some(checkpoint) = checkpoint else {
            panic!("no checkpoint taken");
        };
        let from = checkpoint.last_fix_utc().unwrap_or(i64::MIN);
        assert!(from < late.ts_utc);
        engine.restore(&checkpoint);
        for fix in fixes.iter().filter(|f| f.ts_utc > from) {
            engine.push(*fix);
        }
        engine.finish(now)
    }

    fn assert_same(replayed: &Analysis, batch: &Analysis) {
        assert_eq!(replayed.stops, batch.stops);
        assert_eq!(replayed.overspeeds, batch.overspeeds);
        assert_eq!(replayed.gaps, batch.gaps);
        assert_eq!(replayed.visits, batch.visits);
        assert_eq!(replayed.days, batch.days);
        assert_eq!(replayed.last_fix, batch.last_fix);
    }

    /// Restoring a checkpoint and pushing the rest, a late fix among them, is the same as
    /// pushing everything in order.
    #[test]
    fn a_replay_from_a_checkpoint_equals_the_batch() {
        let config = DetectionConfig::default();
        let ctx = context(&config);
        let fixes = day_of_fixes();
        let now = fixes[fixes.len() - 1].ts_utc + 60;
        let batch = crate::engine::analyze(&ctx, fixes.iter().copied(), now);
        // Every fix after the first third arrives on time but one, which comes last.
        let late = fixes.len() * 2 / 3;
        let replayed = replayed(&ctx, &fixes, late, fixes[late].ts_utc - 600);
        assert_same(&replayed, &batch);
        assert!(batch.stops.len() >= 2 && !batch.overspeeds.is_empty() && !batch.gaps.is_empty());
    }

    /// The engine holds a fix back until the next one says whether its speed is valid (a
    /// phone's 0 km/h while driving): a checkpoint taken while it holds that 0, and the fix
    /// that decides it arriving late, give the batch's answer — which is the one without
    /// the invalid 0.
    #[test]
    fn a_checkpoint_holding_a_fix_back_replays_to_the_batch() {
        let config = DetectionConfig::default();
        let ctx = context(&config);
        let origin = LatLon::new(40.4, -3.7);
        let mut t = 1_786_644_000;
        let mut fixes = Vec::new();
        // A phone every 10 s: 5 min at 40 km/h, 5 min stopped, 5 min at 40 km/h.
        let mut x_m = 0.0;
        for kmh in [40.0, 0.0, 40.0] {
            for _ in 0..30 {
                let p = offset_m(origin, x_m, 0.0);
                fixes.push(Fix {
                    ts_utc: t,
                    lat: p.lat,
                    lon: p.lon,
                    speed_kmh: kmh,
                    heading_deg: 90.0,
                    ignition: true,
                    odometer_m: None,
                });
                x_m += kmh / 3.6 * 10.0;
                t += 10;
            }
        }
        let now = t + 60;
        let truthful = crate::engine::analyze(&ctx, fixes.iter().copied(), now);
        let zero = 70;
        fixes[zero].speed_kmh = 0.0;
        let batch = crate::engine::analyze(&ctx, fixes.iter().copied(), now);
        assert_same(&batch, &truthful);
        assert_eq!(batch.stops.len(), 1, "{:?}", batch.stops);
        // The checkpoint is taken after the 0 was pushed, and the fix after it comes last.
        let replayed = replayed(&ctx, &fixes, zero + 1, fixes[zero + 2].ts_utc);
        assert_same(&replayed, &batch);
    }
}
