//! Overspeed: episodes above the applicable limit, one event each.
//!
//! Owns the hysteresis: an episode opens when the reported speed exceeds the limit by more
//! than the tolerance (so Doppler noise at the limit raises nothing) and closes at the first
//! fix back at or under the limit itself — unless that reading is below half the limit and the
//! fix after it is clearly over again: a unit cannot drop from over the limit to under half of
//! it and back within two reports, so such a reading is an invalid speed (trackers report 0
//! while moving), not two episodes. A reading just under the limit closes the episode: near
//! the limit it is Doppler noise, and bridging it would join noise into false alarms (a unit
//! slowing into a 30 km/h zone). Start and end are back-dated to when the speed
//! crossed the limit, by linear interpolation between the fixes around each crossing.
//! Episodes shorter than the minimum duration, or with fewer than two fixes clearly over the
//! limit, are dropped.

use super::config::DetectionConfig;
use super::evidence::{Evidence, SPEED_LIMIT, Threshold};
use super::{Fix, Overspeed};

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
    /// A fix back at or under the limit, and when the speed crossed it: the end, unless the
    /// next fix is clearly over again (one low reading is a dip or an invalid speed).
    back_under: Option<i64>,
    /// The fixes over the limit: measure, the top speed; threshold, limit plus tolerance.
    evidence: Evidence,
}

/// Fixes clearly over the limit an episode needs: a single fast fix is a glitch or a
/// momentary limit mix-up at a fence edge, not an episode.
const MIN_STRONG_FIXES: u32 = 2;

#[derive(Clone)]
pub struct OverspeedDetector {
    tolerance_kmh: f64,
    min_s: f64,
    open: Option<Open>,
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
            min_s: config.exceso_min_s,
            open: None,
            prev: None,
            episodes: Vec::new(),
        }
    }

    /// `limit_kmh` is the limit that applies at this fix.
    pub fn push(&mut self, fix: &Fix, limit_kmh: f64) {
        match &mut self.open {
            None => {
                if fix.speed_kmh > limit_kmh + self.tolerance_kmh {
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
                let clearly_over = fix.speed_kmh > limit_kmh + self.tolerance_kmh;
                if let Some(end) = open.back_under {
                    if !clearly_over {
                        self.close(end);
                        self.prev = Some((*fix, limit_kmh));
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
                } else if fix.speed_kmh < limit_kmh / 2.0 {
                    open.back_under = Some(crossing(&open.last_above, fix, open.limit_kmh));
                } else {
                    let end = crossing(&open.last_above, fix, open.limit_kmh);
                    self.close(end);
                }
            }
        }
        self.prev = Some((*fix, limit_kmh));
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
        if let Some(end) = self.open.as_ref().and_then(|o| o.back_under) {
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
