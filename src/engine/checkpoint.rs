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
    use crate::engine::{Context, DetectionConfig, Fix};
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

    /// Restoring a checkpoint and pushing the rest, a late fix among them, is the same as
    /// pushing everything in order.
    #[test]
    fn a_replay_from_a_checkpoint_equals_the_batch() {
        let config = DetectionConfig::default();
        let ctx = Context {
            config: &config,
            fences: &[],
            limit_kmh: 60.0,
            zone: chrono_tz::America::Guatemala,
        };
        let fixes = day_of_fixes();
        let now = fixes[fixes.len() - 1].ts_utc + 60;
        let batch = crate::engine::analyze(&ctx, fixes.iter().copied(), now);
        // Every fix after the first third arrives on time but one, which comes last.
        let late = fixes[fixes.len() * 2 / 3];
        let mut engine = VehicleEngine::new(&ctx);
        let mut checkpoint = None;
        for fix in fixes.iter().filter(|f| f.ts_utc != late.ts_utc) {
            if checkpoint.is_none() && fix.ts_utc >= late.ts_utc - 600 {
                checkpoint = Some(engine.checkpoint());
            }
            engine.push(*fix);
        }
        let Some(checkpoint) = checkpoint else {
            panic!("no checkpoint taken");
        };
        let from = checkpoint.last_fix_utc().unwrap_or(i64::MIN);
        engine.restore(&checkpoint);
        for fix in fixes.iter().filter(|f| f.ts_utc > from) {
            engine.push(*fix);
        }
        let replayed = engine.finish(now);
        assert_eq!(replayed.stops, batch.stops);
        assert_eq!(replayed.overspeeds, batch.overspeeds);
        assert_eq!(replayed.gaps, batch.gaps);
        assert_eq!(replayed.days, batch.days);
        assert!(batch.stops.len() >= 2 && !batch.overspeeds.is_empty() && !batch.gaps.is_empty());
    }
}
