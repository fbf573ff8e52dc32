//! Stops: when a unit stood still, where, and for how long — robust to jitter and drift.
//!
//! Owns the stop state machine. A fix is *still* when its reported (Doppler) speed is under a
//! threshold; a run of still fixes within a radius of their running centre becomes a
//! candidate, confirmed once it has lasted the minimum stop time. Unlike Traccar's new logic,
//! which confirms about three minutes late at the current position, the stop's start is
//! back-dated to when the unit really halted: the last moving fix's speed and a braking rate
//! give the instant it reached zero. A stop ends on two moving fixes in a row (one clearly fast
//! fix is enough) or three still fixes far from the centre (a tracker without Doppler speed);
//! its end is back-dated the same way from the first moving fix. Single outlier fixes, drift
//! within the radius, and silences after which the unit is still in place do not end a stop.

use super::config::DetectionConfig;
use super::{Fix, Stop};
use crate::geometry::earth::{LatLon, distance_m};

/// One fix this fast is a departure by itself, km/h.
const CLEARLY_MOVING_KMH: f64 = 15.0;
/// Speed and road detour assumed for a drive that happened entirely during a silence.
const TYPICAL_MS: f64 = 35.0 / 3.6;
const DETOUR: f64 = 1.3;

#[derive(Debug, Clone, Copy)]
struct Centre {
    lat_sum: f64,
    lon_sum: f64,
    n: f64,
}

impl Centre {
    fn new(fix: &Fix) -> Self {
        Centre {
            lat_sum: fix.lat,
            lon_sum: fix.lon,
            n: 1.0,
        }
    }
    fn add(&mut self, fix: &Fix) {
        self.lat_sum += fix.lat;
        self.lon_sum += fix.lon;
        self.n += 1.0;
    }
    fn point(&self) -> LatLon {
        LatLon::new(self.lat_sum / self.n, self.lon_sum / self.n)
    }
}

#[derive(Debug, Clone)]
struct Open {
    start_utc: i64,
    from_data_start: bool,
    centre: Centre,
    fixes: u32,
    went_off: bool,
    last_ignition: bool,
    last_still: Fix,
    /// Consecutive moving fixes, and the first of them.
    leaving: u8,
    first_moving: Option<Fix>,
    /// Consecutive still fixes beyond the radius, and the first of them.
    far: u8,
    first_far: Option<Fix>,
}

#[derive(Clone)]
pub struct StopDetector {
    radius_m: f64,
    still_kmh: f64,
    min_s: f64,
    gap_s: f64,
    brake_ms2: f64,
    accel_ms2: f64,
    open: Option<Open>,
    prev: Option<Fix>,
    pub stops: Vec<Stop>,
}

impl StopDetector {
    pub fn new(config: &DetectionConfig) -> Self {
        StopDetector {
            radius_m: config.parada_radio_m,
            still_kmh: config.velocidad_detenida_kmh,
            min_s: config.parada_min_s,
            gap_s: config.perdida_senal_s,
            brake_ms2: config.frenado_ms2,
            accel_ms2: config.aceleracion_ms2,
            open: None,
            prev: None,
            stops: Vec::new(),
        }
    }

    /// When the unit reached zero between the last moving fix and the first still one: the
    /// time to cover the distance between them at the last speed, braking at the end. Without
    /// a silence that is about `v / a` after the moving fix; across one it still lands where
    /// the unit really halted, not at the last fix heard.
    fn halt_time(&self, last_moving: Option<&Fix>, first_still: &Fix) -> (i64, bool) {
        let Some(moving) = last_moving else {
            return (first_still.ts_utc, true);
        };
        let v = moving.speed_kmh / 3.6;
        let span = (first_still.ts_utc - moving.ts_utc) as f64;
        if v <= 0.0 {
            return (moving.ts_utc, false);
        }
        let braking_m = v * v / (2.0 * self.brake_ms2);
        let d = distance_m(moving.point(), first_still.point());
        let travel_s = (d - braking_m).max(0.0) / v + v / self.brake_ms2;
        (moving.ts_utc + travel_s.min(span).round() as i64, false)
    }

    /// When the unit started moving between the last still fix and the first moving one:
    /// the time to reach the first moving fix's speed and position from the stop's centre.
    fn departure_time(&self, last_still: &Fix, first_moving: &Fix, centre: LatLon) -> i64 {
        let v = first_moving.speed_kmh / 3.6;
        let span = (first_moving.ts_utc - last_still.ts_utc) as f64;
        if v <= 0.0 {
            return last_still.ts_utc;
        }
        let accelerating_m = v * v / (2.0 * self.accel_ms2);
        let d = distance_m(centre, first_moving.point());
        let travel_s = (d - accelerating_m).max(0.0) / v + v / self.accel_ms2;
        first_moving.ts_utc - travel_s.min(span).round() as i64
    }

    fn start(&mut self, fix: &Fix) {
        let (start_utc, from_data_start) = self.halt_time(self.prev.as_ref(), fix);
        self.open = Some(Open {
            start_utc,
            from_data_start,
            centre: Centre::new(fix),
            fixes: 1,
            went_off: !fix.ignition,
            last_ignition: fix.ignition,
            last_still: *fix,
            leaving: 0,
            first_moving: None,
            far: 0,
            first_far: None,
        });
    }

    /// Closes the open stop at `end_utc`, keeping it if it lasted long enough.
    fn close(&mut self, end_utc: i64) {
        if let Some(open) = self.open.take() {
            let end_utc = end_utc.max(open.start_utc);
            if (end_utc - open.start_utc) as f64 >= self.min_s {
                self.stops.push(to_stop(&open, Some(end_utc)));
            }
        }
    }

    pub fn push(&mut self, fix: &Fix) {
        let still = fix.speed_kmh < self.still_kmh;
        let prev = self.prev;
        let after_gap = prev.is_some_and(|p| (fix.ts_utc - p.ts_utc) as f64 > self.gap_s);
        let radius = self.radius_m;

        let Some(mut open) = self.open.take() else {
            if still {
                self.start(fix);
            }
            self.prev = Some(*fix);
            return;
        };
        let near = distance_m(open.centre.point(), fix.point()) <= radius;
        if after_gap && !near {
            // The unit left during a silence. Moving now: date the departure from the speed
            // and distance. Standing somewhere else: it drove from one stop to the other in
            // the middle of the silence, at a typical urban speed.
            let last = open.last_still;
            let centre = open.centre.point();
            // A halt not yet long enough to be a stop when the silence began is not stretched
            // into one: nobody saw it last.
            let seen_long_enough = (last.ts_utc - open.start_utc) as f64 >= self.min_s;
            self.open = Some(open);
            if still {
                let silence = (fix.ts_utc - last.ts_utc) as f64;
                let travel = (distance_m(centre, fix.point()) * DETOUR / TYPICAL_MS).min(silence);
                let middle = last.ts_utc as f64 + silence / 2.0;
                let end = if seen_long_enough {
                    (middle - travel / 2.0).round() as i64
                } else {
                    last.ts_utc
                };
                self.close(end);
                self.start(fix);
                if let Some(next) = &mut self.open {
                    next.start_utc = (middle + travel / 2.0).round() as i64;
                }
            } else {
                let end = self.departure_time(&last, fix, centre);
                self.close(end);
            }
            self.prev = Some(*fix);
            return;
        }
        if still && near {
            open.centre.add(fix);
            open.fixes += 1;
            open.last_still = *fix;
            open.leaving = 0;
            open.first_moving = None;
            open.far = 0;
            open.first_far = None;
            open.went_off |= !fix.ignition;
            open.last_ignition = fix.ignition;
            self.open = Some(open);
        } else if still {
            open.far += 1;
            let first_far = *open.first_far.get_or_insert(*fix);
            if open.far >= 3 {
                // Not an outlier: the unit moved without Doppler speed. It left at the
                // first far fix.
                self.open = Some(open);
                self.close(first_far.ts_utc);
                self.start(&first_far);
                if let Some(restarted) = &mut self.open {
                    restarted.start_utc = first_far.ts_utc;
                }
            } else {
                self.open = Some(open);
            }
        } else {
            open.leaving += 1;
            let first_moving = *open.first_moving.get_or_insert(*fix);
            if open.leaving >= 2 || fix.speed_kmh >= CLEARLY_MOVING_KMH {
                let end = self.departure_time(&open.last_still, &first_moving, open.centre.point());
                self.open = Some(open);
                self.close(end);
            } else {
                self.open = Some(open);
            }
        }
        self.prev = Some(*fix);
    }

    /// At the end of the data: a stop still going on stays open (no end time).
    pub fn finish(&mut self, now_utc: i64) {
        if let Some(open) = self.open.take() {
            let leaving = open.leaving > 0;
            if leaving {
                if let Some(first_moving) = open.first_moving {
                    let end =
                        self.departure_time(&open.last_still, &first_moving, open.centre.point());
                    self.open = Some(open);
                    self.close(end);
                }
                return;
            }
            if (now_utc - open.start_utc) as f64 >= self.min_s {
                self.stops.push(to_stop(&open, None));
            }
        }
    }
}

fn to_stop(open: &Open, end_utc: Option<i64>) -> Stop {
    let centre = open.centre.point();
    Stop {
        start_utc: open.start_utc,
        end_utc,
        lat: centre.lat,
        lon: centre.lon,
        fixes: open.fixes,
        engine_on: open.last_ignition,
        went_off: open.went_off,
        from_data_start: open.from_data_start,
        last_fix_utc: open.last_still.ts_utc,
    }
}
