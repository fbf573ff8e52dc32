//! The detection engine: a vehicle's fixes in, stops, overspeeds, signal losses, geofence
//! visits and daily aggregates out.
//!
//! **Invariant:** it sees only what a tracker sends — [`Fix`]es — and never the simulator or
//! the truth log (it does not import `sim`; `sim` does not import it). Pure: no I/O, no clock;
//! "now" is passed in.
//!
//! Streaming: [`VehicleEngine::push`] takes one fix at a time in fix-time order, so the same
//! code analyses a whole data set or new positions as they arrive; [`VehicleEngine::finish`]
//! closes the books at "now", leaving what is still going on open (no end time). Each detector
//! lives in its own file; thresholds come from [`DetectionConfig`] (docs/deteccion.md).

mod checkpoint;
pub mod config;
mod daily;
mod distance;
mod event_kind;
pub mod evidence;
mod fences;
mod gaps;
mod noise;
mod overspeed;
mod speed_check;
mod stops;

use chrono_tz::Tz;

pub use checkpoint::Checkpoint;
pub use config::DetectionConfig;
pub use daily::{DayStats, day_bounds};
pub use distance::GpsDistance;
pub use event_kind::{EventKind, LONG_STOP};
pub use evidence::{Evidence, Threshold};
pub use speed_check::SpeedCheck;

use crate::geometry::earth::LatLon;
use crate::geometry::geofence::{Geofence, applicable_limit_kmh};

/// One position as a tracker reported it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fix {
    pub ts_utc: i64,
    pub lat: f64,
    pub lon: f64,
    pub speed_kmh: f64,
    pub heading_deg: f64,
    pub ignition: bool,
    pub odometer_m: Option<i64>,
}

impl Fix {
    pub fn point(&self) -> LatLon {
        LatLon::new(self.lat, self.lon)
    }
}

/// A detected stop. `end_utc` is `None` while it goes on.
#[derive(Debug, Clone, PartialEq)]
pub struct Stop {
    pub start_utc: i64,
    pub end_utc: Option<i64>,
    /// Centre of the stop's fixes.
    pub lat: f64,
    pub lon: f64,
    pub fixes: u32,
    /// Ignition at the stop's last fix.
    pub engine_on: bool,
    /// The ignition went off during the stop: the end-of-day parking.
    pub went_off: bool,
    /// The data starts inside this stop, so its real start is unknown.
    pub from_data_start: bool,
    pub last_fix_utc: i64,
    pub evidence: Evidence,
}

impl Stop {
    pub fn duration_s(&self, now_utc: i64) -> i64 {
        self.end_utc.unwrap_or(now_utc) - self.start_utc
    }

    /// A long stop worth an alert: long enough, and not the parking that ends a day.
    pub fn is_long(&self, config: &DetectionConfig, now_utc: i64) -> bool {
        !self.went_off && self.duration_s(now_utc) as f64 >= config.parada_prolongada_min * 60.0
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Overspeed {
    pub start_utc: i64,
    pub end_utc: Option<i64>,
    pub max_kmh: f64,
    pub limit_kmh: f64,
    pub lat: f64,
    pub lon: f64,
    pub evidence: Evidence,
}

/// A silence while the ignition was on: `from_utc` is the last fix before it, `to_utc` the
/// first after it (`None` if still silent at "now").
#[derive(Debug, Clone, PartialEq)]
pub struct Gap {
    pub from_utc: i64,
    pub to_utc: Option<i64>,
    pub lat: f64,
    pub lon: f64,
    pub evidence: Evidence,
    /// The unit was stopped through the silence: slow before it and in the same place after.
    pub stopped: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Visit {
    /// Index into the fence list the engine was given.
    pub fence: usize,
    pub entry_utc: i64,
    pub exit_utc: Option<i64>,
    /// Inside at the data's first fix: the real entry is earlier.
    pub from_data_start: bool,
    pub evidence: Evidence,
}

/// Everything detected for one vehicle.
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    pub stops: Vec<Stop>,
    pub overspeeds: Vec<Overspeed>,
    pub gaps: Vec<Gap>,
    pub visits: Vec<Visit>,
    pub days: Vec<DayStats>,
    pub last_fix: Option<Fix>,
}

/// What the engine needs to know about the world around a vehicle.
pub struct Context<'a> {
    pub config: &'a DetectionConfig,
    pub fences: &'a [Geofence],
    /// The vehicle's limit outside fences with their own.
    pub limit_kmh: f64,
    pub zone: Tz,
}

/// One vehicle's detectors, fed fix by fix. A clone is an independent copy: finishing it
/// leaves the original streaming (what incremental analysis does at each commit).
#[derive(Clone)]
pub struct VehicleEngine<'a> {
    ctx: &'a Context<'a>,
    stops: stops::StopDetector,
    overspeed: overspeed::OverspeedDetector,
    gaps: gaps::GapDetector,
    fences: fences::FenceDetector,
    days: daily::DayAccumulator,
    inside: Vec<bool>,
    speeds: speed_check::SpeedCheck,
    /// The last fix pushed (its speed not decided yet: see `push`).
    last: Option<Fix>,
    /// The last fix the detectors have seen, its speed checked.
    analysed: Option<Fix>,
    /// The cosines of the latitudes the detectors measure from: each fix's own (wanted by the
    /// stop detector, the fence depth and the distance rule, which each took it anew) and a
    /// stop's centre (by the fence detector at one fix, by the stop detector at the next).
    cosines: distance::Cosines,
}

impl<'a> VehicleEngine<'a> {
    pub fn new(ctx: &'a Context<'a>) -> Self {
        VehicleEngine {
            ctx,
            stops: stops::StopDetector::new(ctx.config),
            overspeed: overspeed::OverspeedDetector::new(ctx.config),
            gaps: gaps::GapDetector::new(ctx.config),
            fences: fences::FenceDetector::new(ctx.config, ctx.fences.len()),
            days: daily::DayAccumulator::new(
                ctx.zone,
                ctx.config.usar_odometro,
                ctx.config.odometro_tolerancia_pct,
                GpsDistance::new(ctx.config),
            ),
            inside: vec![false; ctx.fences.len()],
            speeds: speed_check::SpeedCheck::new(ctx.config),
            last: None,
            analysed: None,
            cosines: distance::Cosines::default(),
        }
    }

    /// Takes the next fix. Fixes must come in fix-time order; a repeat of the last fix time
    /// (a duplicate delivery) is ignored; a speed the positions cannot support is replaced
    /// by the last valid one (`speed_check.rs`). Whether a still speed is valid takes the fix
    /// after it, so the detectors see each fix when the next one is pushed (the last one at
    /// `finish`): the engine holds one fix back, and a checkpoint holds it too.
    pub fn push(&mut self, fix: Fix) {
        if let Some(last) = &self.last
            && fix.ts_utc <= last.ts_utc
        {
            return;
        }
        self.last = Some(fix);
        // Two fixes of one place lie this far apart at most, but once in a hundred: three
        // scales of the difference of two, √2 times the unit's parked noise scale (the stop
        // radius holds four of those).
        let noise_m = 3.0 * std::f64::consts::SQRT_2 * self.stops.noise_scale_m();
        if let Some((checked, measured)) = self.speeds.push(fix, noise_m) {
            self.analyse(checked, measured);
        }
    }

    /// Hands one fix, its speed checked, to the detectors. `measured`: the speed is a reading,
    /// not the last valid one repeated in place of an invalid one — which must not count twice
    /// as evidence of speeding (two absurd readings after one noisy high one).
    fn analyse(&mut self, fix: Fix, measured: bool) {
        let cos_lat = self.cosines.of(fix.lat);
        self.stops.push(&fix, cos_lat, &mut self.cosines);
        // A parked unit is where its stop's centre is: drift and jumps around it at a fence
        // edge neither cross the fence nor change the limit. Parked means halted for as long
        // as a stop: a traffic light at a fence edge is a crossing the fixes themselves date
        // better than a centre of two or three of them.
        let mut place = fix;
        let min_stop_s = self.ctx.config.parada_min_s;
        let parked = self
            .stops
            .parked_at()
            .filter(|(_, since)| (fix.ts_utc - since) as f64 >= min_stop_s);
        if let Some((centre, _)) = parked {
            (place.lat, place.lon) = (centre.lat, centre.lon);
        }
        let mut in_any = false;
        for (index, fence) in self.ctx.fences.iter().enumerate() {
            let inside = fence.contains(place.point());
            self.inside[index] = inside;
            in_any |= inside;
        }
        // Outside every fence (most fixes), no fence's limit applies: the vehicle's own (what
        // `applicable_limit_kmh` gives for no fence), without walking the fences again.
        let limit = if in_any {
            applicable_limit_kmh(
                self.ctx.limit_kmh,
                self.ctx
                    .fences
                    .iter()
                    .zip(&self.inside)
                    .filter(|(fence, inside)| {
                        // Only a fence with a limit of its own can change it: the others are
                        // not measured (the eight-point test is the costly part).
                        **inside
                            && fence.speed_limit_kmh.is_some()
                            && overspeed::surely_inside(
                                fence,
                                place.point(),
                                self.ctx.config.parada_radio_m,
                            )
                    })
                    .filter_map(|(fence, _)| fence.speed_limit_kmh),
            )
        } else {
            self.ctx.limit_kmh
        };
        if measured {
            self.overspeed.push(&fix, limit);
        }
        self.gaps.push(&fix);
        self.fences.push(
            &place,
            &self.inside,
            self.ctx.fences,
            parked.map(|p| p.1),
            &mut self.cosines,
        );
        self.days.push(&fix, Some(cos_lat));
        self.analysed = Some(fix);
    }

    /// Closes the analysis at `now_utc`.
    pub fn finish(mut self, now_utc: i64) -> Analysis {
        if let Some((checked, measured)) = self.speeds.flush() {
            self.analyse(checked, measured);
        }
        let asleep_now = self.gaps.finish(now_utc);
        self.stops.finish(now_utc, asleep_now);
        self.overspeed.finish();
        self.fences.finish(now_utc);
        let last_fix_utc = self.analysed.map_or(now_utc, |f| f.ts_utc);
        let days = self.days.finish(
            &self.stops.stops,
            &self.gaps.gaps,
            &self.overspeed.episodes,
            last_fix_utc,
        );
        Analysis {
            stops: self.stops.stops,
            overspeeds: self.overspeed.episodes,
            gaps: self.gaps.gaps,
            visits: self.fences.visits,
            days,
            last_fix: self.analysed,
        }
    }
}

/// Analyses a vehicle's fixes (sorted by time) up to `now_utc`.
pub fn analyze(ctx: &Context<'_>, fixes: impl IntoIterator<Item = Fix>, now_utc: i64) -> Analysis {
    let mut engine = VehicleEngine::new(ctx);
    for fix in fixes {
        if fix.ts_utc > now_utc {
            break;
        }
        engine.push(fix);
    }
    engine.finish(now_utc)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_noisy;
