//! Overspeed: episodes above the applicable limit, one event each.
//!
//! Owns the hysteresis: an episode opens when the reported speed exceeds the limit by more
//! than the tolerance (so Doppler noise at the limit raises nothing) and closes at the first
//! fix back at or under the limit itself — unless that reading is below half the limit and the
//! fix after it is clearly over again, each within [`DIP_MAX_S`] of it: a unit cannot drop
//! from over the limit to under half of it and back within two reports that close, so such a
//! reading is an invalid speed (trackers report 0 while moving), not two episodes. Between
//! reports 30 s apart it can (stop-and-go: 55, 0, 53.5 km/h while the positions advanced 175 m
//! in the minute), and the low reading closes the episode. A reading just under the limit
//! closes the episode: near the limit it is Doppler noise, and bridging it would join noise
//! into false alarms (a unit slowing into a 30 km/h zone). Start and end are back-dated to when the speed
//! crossed the limit, by linear interpolation between the fixes around each crossing.
//! Episodes shorter than the minimum duration, or with fewer than two fixes clearly over the
//! limit, are dropped.
//!
//! "Clearly over" is over the limit by more than the tolerance *and* by more than
//! [`NOISE_SIGMAS`] times the unit's own Doppler speed noise, learned from its fixes: a
//! tracker with 2.5 km/h of speed noise, driven at 93 % of a 30 km/h limit (28 km/h), reads
//! 33+ km/h twice in a row every few thousand fixes, and a 3 km/h tolerance alone calls that
//! an episode. The noise is learned from each moving fix's departure from the straight line
//! between the fixes either side of it (in time), divided by that departure's own spread for
//! noise of σ on all three (√(1 + w² + (1 − w)²), w the middle fix's place between the
//! others): the median of those is 0.674·σ for independent Gaussian noise. A steady
//! acceleration or braking cancels out of it. The change between consecutive fixes, used
//! until `ANALYSIS_VERSION` 18, does not: an adaptive tracker records *because* the speed
//! changed by its `delta_velocidad_kmh`, so while accelerating its consecutive records differ
//! by that much, and one set to 15 km/h with a 500 m distance criterion (few cruising records
//! within 30 s) learned 17.7 km/h of "noise" where the Doppler had 0.5, and a truck held at
//! 108 km/h for 150 s under a 100 km/h limit raised nothing (docs/deteccion.md, "Session
//! sixteen").

use super::config::DetectionConfig;
use super::evidence::{Evidence, SPEED_LIMIT, Threshold};
use super::noise::RayleighScale;
use super::{Fix, Overspeed};
use std::sync::LazyLock;

use crate::geometry::earth::{LatLon, cos_lat, offset_m_at};
use crate::geometry::geofence::Geofence;

/// Whether `p` lies inside `fence` by more than `edge_m` in every direction (eight of them):
/// a fence's own limit applies to a moving unit only then. Within the position noise of its
/// edge a fix may be on either side, and a unit that just left a slow zone and sped up would
/// read as speeding inside it; the benefit of the doubt goes to the driver.
pub fn surely_inside(fence: &Geofence, p: LatLon, edge_m: f64) -> bool {
    if !fence.contains(p) {
        return false;
    }
    // The eight directions' sines and cosines and `p`'s latitude cosine, computed once: the
    // same points as `offset_m` at each angle.
    let cos_lat = cos_lat(p);
    DIRECTIONS
        .iter()
        .all(|(sin, cos)| fence.contains(offset_m_at(p, cos_lat, edge_m * sin, edge_m * cos)))
}

/// Sine and cosine of the eight compass angles k·π/4 that [`surely_inside`] looks along.
static DIRECTIONS: LazyLock<[(f64, f64); 8]> = LazyLock::new(|| {
    std::array::from_fn(|k| {
        let angle = k as f64 * std::f64::consts::FRAC_PI_4;
        (angle.sin(), angle.cos())
    })
});

/// Speed noise standard deviations beyond the limit a reading must be to count as clearly
/// over: two in a row that far are a few in a million by noise alone.
const NOISE_SIGMAS: f64 = 2.0;
/// Median of |x| for x Gaussian of σ, over σ.
const RESIDUAL_MEDIAN_PER_SIGMA: f64 = 0.674_489_75;
/// Speed residuals of moving fixes needed before the noise is trusted.
const MIN_SPEED_CHANGES: u32 = 50;
/// Consecutive fixes further apart than this say nothing of the noise, seconds.
const MAX_CHANGE_S: i64 = 30;
/// Histogram bin of the speed residuals, km/h.
const CHANGE_BIN_KMH: f64 = 0.1;

#[derive(Debug, Clone, Copy)]
struct Open {
    start_utc: i64,
    max_kmh: f64,
    limit_kmh: f64,
    lat: f64,
    lon: f64,
    last_above: Fix,
    /// Fixes beyond limit + tolerance so far: one alone is not evidence enough.
    strong: u32,
    /// A fix back under half the limit (its time), and when the speed crossed the limit: the
    /// end, unless the next fix is clearly over again within [`DIP_MAX_S`] (one low reading is
    /// a dip or an invalid speed).
    back_under: Option<(i64, i64)>,
    /// The fixes over the limit: measure, the top speed; threshold, limit plus tolerance.
    evidence: Evidence,
}

/// A low reading amid speeding is bridged as a dip only when it is at most this far from the
/// fixes either side of it: a tracker's cadence while moving, as the speed check's window for
/// a still reading between moving ones, seconds.
const DIP_MAX_S: i64 = 20;

/// Fixes clearly over the limit an episode needs: a single fast fix is a glitch or a
/// momentary limit mix-up at a fence edge, not an episode.
const MIN_STRONG_FIXES: u32 = 2;

#[derive(Clone)]
pub struct OverspeedDetector {
    tolerance_kmh: f64,
    still_kmh: f64,
    min_s: f64,
    /// Normalised departures of moving fixes' speeds from the line through their neighbours'
    /// (see the module's doc), km/h.
    speed_residuals: RayleighScale,
    open: Option<Open>,
    /// The fix before `prev`: the first of the three the noise is learned from.
    before_prev: Option<Fix>,
    prev: Option<(Fix, f64)>,
    pub episodes: Vec<Overspeed>,
}

/// When speed crossed `limit` between `a` and `b` (clamped to the interval).
fn crossing(a: &Fix, b: &Fix, limit: f64) -> i64 {
    let dv = b.speed_kmh - a.speed_kmh;
    let f = if dv.abs() > 1e-9 {
        ((limit - a.speed_kmh) / dv).clamp(0.0, 1.0)
    } else {
        0.5
    };
    a.ts_utc + (f * (b.ts_utc - a.ts_utc) as f64).round() as i64
}

impl OverspeedDetector {
    pub fn new(config: &DetectionConfig) -> Self {
        OverspeedDetector {
            tolerance_kmh: config.exceso_tolerancia_kmh,
            still_kmh: config.velocidad_detenida_kmh,
            min_s: config.exceso_min_s,
            speed_residuals: RayleighScale::new(CHANGE_BIN_KMH, MIN_SPEED_CHANGES),
            open: None,
            before_prev: None,
            prev: None,
            episodes: Vec::new(),
        }
    }

    /// How far over the limit a reading must be to count as clearly over, km/h.
    fn margin_kmh(&mut self) -> f64 {
        let noise_kmh = self
            .speed_residuals
            .median()
            .map_or(0.0, |median| median / RESIDUAL_MEDIAN_PER_SIGMA);
        self.tolerance_kmh.max(NOISE_SIGMAS * noise_kmh)
    }

    /// Learns from the previous fix, now that the fixes either side of it are known.
    fn learn_noise(&mut self, fix: &Fix) {
        if let (Some(a), Some((b, _))) = (&self.before_prev, &self.prev)
            && b.ts_utc - a.ts_utc <= MAX_CHANGE_S
            && fix.ts_utc - b.ts_utc <= MAX_CHANGE_S
            && fix.ts_utc > a.ts_utc
            && [a, b, fix].iter().all(|f| f.speed_kmh >= self.still_kmh)
        {
            let w = (b.ts_utc - a.ts_utc) as f64 / (fix.ts_utc - a.ts_utc) as f64;
            let on_line_kmh = a.speed_kmh + (fix.speed_kmh - a.speed_kmh) * w;
            let spread = (1.0 + w * w + (1.0 - w) * (1.0 - w)).sqrt();
            self.speed_residuals
                .learn((b.speed_kmh - on_line_kmh).abs() / spread);
        }
    }

    fn advance(&mut self, fix: &Fix, limit_kmh: f64) {
        self.before_prev = self.prev.map(|(prev, _)| prev);
        self.prev = Some((*fix, limit_kmh));
    }

    /// `limit_kmh` is the limit that applies at this fix.
    pub fn push(&mut self, fix: &Fix, limit_kmh: f64) {
        self.learn_noise(fix);
        let margin_kmh = self.margin_kmh();
        match &mut self.open {
            None => {
                if fix.speed_kmh > limit_kmh + margin_kmh {
                    let start_utc = match &self.prev {
                        Some((prev, _)) if prev.speed_kmh <= limit_kmh => {
                            crossing(prev, fix, limit_kmh)
                        }
                        _ => fix.ts_utc,
                    };
                    self.open = Some(Open {
                        start_utc,
                        max_kmh: fix.speed_kmh,
                        limit_kmh,
                        lat: fix.lat,
                        lon: fix.lon,
                        last_above: *fix,
                        strong: 1,
                        back_under: None,
                        evidence: Evidence::from_fix(
                            fix.ts_utc,
                            fix.speed_kmh,
                            Threshold {
                                name: SPEED_LIMIT,
                                value: limit_kmh + self.tolerance_kmh,
                            },
                        ),
                    });
                }
            }
            Some(open) => {
                let clearly_over = fix.speed_kmh > limit_kmh + margin_kmh;
                if let Some((dip_utc, end)) = open.back_under {
                    if !clearly_over || fix.ts_utc - dip_utc > DIP_MAX_S {
                        self.close(end);
                        self.advance(fix, limit_kmh);
                        return;
                    }
                    open.back_under = None;
                }
                if fix.speed_kmh > limit_kmh {
                    if clearly_over {
                        open.strong += 1;
                    }
                    open.max_kmh = open.max_kmh.max(fix.speed_kmh);
                    open.limit_kmh = open.limit_kmh.min(limit_kmh);
                    open.evidence.add(fix.ts_utc, fix.speed_kmh);
                    open.evidence.threshold.value = open.limit_kmh + self.tolerance_kmh;
                    open.last_above = *fix;
                } else if fix.speed_kmh < limit_kmh / 2.0
                    && fix.ts_utc - open.last_above.ts_utc <= DIP_MAX_S
                {
                    let end = crossing(&open.last_above, fix, open.limit_kmh);
                    open.back_under = Some((fix.ts_utc, end));
                } else {
                    let end = crossing(&open.last_above, fix, open.limit_kmh);
                    self.close(end);
                }
            }
        }
        self.advance(fix, limit_kmh);
    }

    fn close(&mut self, end_utc: i64) {
        if let Some(open) = self.open.take()
            && open.strong >= MIN_STRONG_FIXES
            && (end_utc - open.start_utc) as f64 >= self.min_s
        {
            self.episodes.push(Overspeed {
                start_utc: open.start_utc,
                end_utc: Some(end_utc),
                max_kmh: open.max_kmh,
                limit_kmh: open.limit_kmh,
                lat: open.lat,
                lon: open.lon,
                evidence: open.evidence,
            });
        }
    }

    pub fn finish(&mut self) {
        if let Some((_, end)) = self.open.as_ref().and_then(|o| o.back_under) {
            self.close(end);
            return;
        }
        if let Some(open) = self.open.take()
            && open.strong >= MIN_STRONG_FIXES
            && (open.last_above.ts_utc - open.start_utc) as f64 >= self.min_s
        {
            self.episodes.push(Overspeed {
                start_utc: open.start_utc,
                end_utc: None,
                max_kmh: open.max_kmh,
                limit_kmh: open.limit_kmh,
                lat: open.lat,
                lon: open.lon,
                evidence: open.evidence,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fix(ts_utc: i64, speed_kmh: f64) -> Fix {
        Fix {
            ts_utc,
            lat: -38.0,
            lon: 144.5,
            speed_kmh,
            heading_deg: 45.0,
            ignition: true,
            odometer_m: None,
        }
    }

    fn run(speeds: &[(i64, f64)], limit_kmh: f64) -> Vec<Overspeed> {
        let mut detector = OverspeedDetector::new(&DetectionConfig::default());
        for &(t, kmh) in speeds {
            detector.push(&fix(t, kmh), limit_kmh);
        }
        detector.finish();
        detector.episodes
    }

    /// One low reading amid speeding is a dip (an invalid zero) between reports 10 s apart,
    /// and a halt between reports 30 s apart: stop-and-go under a 50 km/h limit read 55, 0,
    /// 53.5 km/h at 30 s (Las Palmas, `economico`, seed 20: one false episode), which the dip
    /// made one episode of two fixes clearly over.
    #[test]
    fn a_low_reading_is_a_dip_only_between_close_reports() {
        let check = |step: i64, want: usize| {
            let speeds: Vec<(i64, f64)> = [45.0, 18.0, 55.0, 0.0, 53.5, 0.0, 48.0]
                .iter()
                .enumerate()
                .map(|(i, &kmh)| (i as i64 * step, kmh))
                .collect();
            let episodes = run(&speeds, 50.0);
            assert_eq!(episodes.len(), want, "every {step} s: {episodes:?}");
        };
        check(10, 1);
        check(30, 0);
    }

    /// An adaptive tracker records on every 15 km/h change of speed (3 s apart while a truck
    /// accelerates or brakes) and only every 40 s while cruising: its consecutive records
    /// differ by 15 km/h although its Doppler speed has no noise at all. 108 km/h for 150 s
    /// under a 100 km/h limit is an episode all the same.
    #[test]
    fn an_adaptive_trackers_speed_steps_are_not_noise() {
        let mut speeds = Vec::new();
        let mut t = 0;
        for _ in 0..40 {
            for step in 0..=6 {
                speeds.push((t, 15.0 * f64::from(step)));
                t += 3;
            }
            for _ in 0..3 {
                t += 40;
                speeds.push((t, 90.0));
            }
            for step in (0..6).rev() {
                t += 3;
                speeds.push((t, 15.0 * f64::from(step)));
            }
            t += 60;
        }
        let start = t;
        speeds.push((t, 90.0));
        for k in 1..=9 {
            speeds.push((t + 17 * k, 108.0));
        }
        t += 17 * 10;
        speeds.push((t, 90.0));
        let episodes = run(&speeds, 100.0);
        assert_eq!(episodes.len(), 1, "{episodes:?}");
        assert!(episodes[0].start_utc - start < 17, "{:?}", episodes[0]);
    }

    /// The other side: a tracker with 2.5 km/h of Doppler noise, every 15 s at 28 km/h under a
    /// 30 km/h limit, crosses 33 km/h twice in a row now and then by noise alone; its learned
    /// noise keeps that from being an episode.
    #[test]
    fn doppler_noise_at_the_limit_is_no_episode() {
        // A fixed pseudo-random sequence (an LCG and Box–Muller): no dependency, same every run.
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut uniform = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let speeds: Vec<(i64, f64)> = (0..20_000)
            .map(|i| {
                let gauss =
                    (-2.0 * uniform().ln()).sqrt() * (2.0 * std::f64::consts::PI * uniform()).cos();
                (15 * i, 28.0 + 2.5 * gauss)
            })
            .collect();
        assert_eq!(run(&speeds, 30.0), vec![]);
    }
}
