//! Reported speeds the positions cannot support: replaced before any detector sees them.
//!
//! Owns [`SpeedCheck`]. Trackers send the odd invalid speed — a glitch of hundreds of km/h, or
//! 0 from a receiver that lost its Doppler solution while the unit drove on. A speed is
//! invalid when it is not a number, negative, over [`MAX_PLAUSIBLE_KMH`], or further from what
//! the positions allow than they can be off: with the previous fix's speed, a steady change
//! would cover more than the chord between them plus [`POSITION_ALLOWANCE_M`]; or it is 0
//! while the chord is longer than the previous speed held throughout could cover plus that
//! allowance. At 15 s between fixes that catches glitches of some 150 km/h or more over the
//! true speed, and zeros above some 70 km/h. A smaller zero is caught by the fix after it: a
//! still speed between two moving fixes is invalid when the chord between those two, less the
//! noise of two positions, is longer than any path that halts at the still fix's instant
//! (braking and setting off at the configured rates): the unit never halted. A phone's invalid
//! zeros at 10 s leave a chord of 0.70 or more of what the speeds cover (95 % of them; most
//! 0.98), real halts 0.28 at most; but a ratio alone would also take a real brief halt
//! between records 30 s apart for an invalid zero. So each fix is decided only when the next
//! one comes ([`SpeedCheck::push`] hands on
//! the one before; [`SpeedCheck::flush`] the last, at the end of the data, decided without
//! it). Other single glitches stay (the overspeed detector's two-fix rule and the stop
//! detector's two-fix departure absorb them). An invalid speed is replaced by the last valid
//! one (the Doppler speed holds between fixes far better than anything positions could give).
//! Outlier jumps move positions, never speeds, so they cannot make a speed episode; and they
//! only widen the chord, which excuses more.

use super::Fix;
use super::config::DetectionConfig;
use crate::geometry::earth::{distance_m, farther_than_m, within_m};

/// No vehicle of a road fleet goes faster, km/h.
pub const MAX_PLAUSIBLE_KMH: f64 = 250.0;
/// How far two fixes' positions may be off together: a 200 m outlier jump on one plus four
/// noise scales of a 25 m dense-centre error on both, metres.
pub const POSITION_ALLOWANCE_M: f64 = 300.0;

/// Over longer intervals (a silence) the path may wander far from the chord: only the
/// plausibility bound applies, seconds.
const MAX_CHECK_S: f64 = 60.0;
/// The look-ahead weighs a still fix only between records this close on either side: a
/// tracker's cadence while moving (a phone's 1–10 s, a clock tracker's 15 s). Over longer
/// ones the unit may have driven faster than either end's speed, so no path is bounded by
/// them; and a still record followed by a longer silence is how a tracker that records only
/// while moving shows a halt (those read as never halted, `comercial` in the grid), seconds.
const MAX_LEG_S: f64 = 20.0;

/// Decides each fix's speed once the fix after it is known.
#[derive(Debug, Clone)]
pub struct SpeedCheck {
    /// The last fix handed on, its speed checked.
    prev: Option<Fix>,
    /// The last fix taken, not decided yet.
    held: Option<Fix>,
    rates: Rates,
    /// Fixes whose speed was replaced so far.
    pub replaced: u32,
}

/// What a halt looks like to the check: under `still_kmh` a speed is a still fix's
/// (`velocidad_detenida_kmh`); a unit halts braking at `brake_ms2` (`frenado_ms2`) and sets
/// off at `accel_ms2` (`aceleracion_ms2`).
#[derive(Debug, Clone, Copy)]
struct Rates {
    still_kmh: f64,
    brake_ms2: f64,
    accel_ms2: f64,
}

impl SpeedCheck {
    pub fn new(config: &DetectionConfig) -> Self {
        SpeedCheck {
            prev: None,
            held: None,
            rates: Rates {
                still_kmh: config.velocidad_detenida_kmh,
                brake_ms2: config.frenado_ms2,
                accel_ms2: config.aceleracion_ms2,
            },
            replaced: 0,
        }
    }

    /// Takes the next fix and hands on the one before it (`None` for the first), its speed
    /// replaced when invalid, and whether it was kept (a reading, not a replacement).
    /// `noise_m`: how far apart position noise alone may put two fixes of one place.
    pub fn push(&mut self, fix: Fix, noise_m: f64) -> Option<(Fix, bool)> {
        let held = self.held.replace(fix)?;
        Some(self.decide(held, Some(&fix), noise_m))
    }

    /// The last fix taken, decided without a next one (the end of the data so far).
    pub fn flush(&mut self) -> Option<(Fix, bool)> {
        let held = self.held.take()?;
        Some(self.decide(held, None, 0.0))
    }

    fn decide(&mut self, mut fix: Fix, next: Option<&Fix>, noise_m: f64) -> (Fix, bool) {
        let invalid = match &self.prev {
            Some(prev) => {
                !valid(prev, &fix)
                    || next.is_some_and(|next| kept_moving(prev, &fix, next, self.rates, noise_m))
            }
            None => !in_range(fix.speed_kmh),
        };
        if invalid {
            fix.speed_kmh = self.prev.map_or(0.0, |prev| prev.speed_kmh);
            self.replaced += 1;
        }
        self.prev = Some(fix);
        (fix, !invalid)
    }
}

fn in_range(speed_kmh: f64) -> bool {
    speed_kmh.is_finite() && (0.0..=MAX_PLAUSIBLE_KMH).contains(&speed_kmh)
}

fn valid(prev: &Fix, fix: &Fix) -> bool {
    if !in_range(fix.speed_kmh) {
        return false;
    }
    let dt = (fix.ts_utc - prev.ts_utc) as f64;
    if dt <= 0.0 || dt > MAX_CHECK_S {
        return true;
    }
    if fix.speed_kmh > 0.0 {
        // Speeding up or slowing down steadily between the fixes covers the trapezoid; the
        // positions, off by the allowance at most, must not be that much shorter.
        let trapezoid = (prev.speed_kmh + fix.speed_kmh) / 2.0 / 3.6 * dt;
        // Within the allowance alone whatever the chord (a number, never negative, for
        // finite positions less than a quarter of the globe apart): the same answer without
        // the haversine, for most fixes of a city fleet.
        let near = (fix.lat - prev.lat).abs() < 90.0 && (fix.lon - prev.lon).abs() < 90.0;
        if near && trapezoid <= POSITION_ALLOWANCE_M {
            return true;
        }
        let chord = distance_m(prev.point(), fix.point());
        return trapezoid <= chord + POSITION_ALLOWANCE_M;
    }
    // Stopping from the previous speed covers less than that speed held throughout.
    within_m(
        prev.point(),
        fix.point(),
        prev.speed_kmh / 3.6 * dt + POSITION_ALLOWANCE_M,
    )
}

/// `fix` reads still between two moving fixes, `prev` (checked) and `next`, each within
/// [`MAX_LEG_S`] of it, whose positions say the unit never halted: the chord between them,
/// less `noise_m`, is longer than any path through a halt at `fix` — `prev`'s speed held
/// and braking at `brake_ms2` to stand at `fix`'s instant, then setting off at `accel_ms2`
/// to reach `next`'s speed at its instant — while, plus `noise_m`, neither leg is longer
/// than the faster of the two speeds held over it covers.
fn kept_moving(prev: &Fix, fix: &Fix, next: &Fix, rates: Rates, noise_m: f64) -> bool {
    if fix.speed_kmh >= rates.still_kmh
        || prev.speed_kmh < rates.still_kmh
        || next.speed_kmh < rates.still_kmh
        || !in_range(next.speed_kmh)
        || (fix.ts_utc - prev.ts_utc) as f64 > MAX_LEG_S
        || (next.ts_utc - fix.ts_utc) as f64 > MAX_LEG_S
    {
        return false;
    }
    let halting_m = farthest_m(
        prev.speed_kmh,
        (fix.ts_utc - prev.ts_utc) as f64,
        rates.brake_ms2,
    );
    let leaving_m = farthest_m(
        next.speed_kmh,
        (next.ts_utc - fix.ts_utc) as f64,
        rates.accel_ms2,
    );
    // Nor is a leg longer than the faster speed held over it covers: a position jump on one
    // of the three (a real halt's zero beside a 200 m jump read as never halted, on every
    // tracker profile in the grid).
    let faster_ms = prev.speed_kmh.max(next.speed_kmh) / 3.6;
    let reachable = |a: &Fix, b: &Fix| {
        within_m(
            a.point(),
            b.point(),
            faster_ms * (b.ts_utc - a.ts_utc) as f64 + noise_m,
        )
    };
    farther_than_m(prev.point(), next.point(), halting_m + leaving_m + noise_m)
        && reachable(prev, fix)
        && reachable(fix, next)
}

/// The farthest a unit goes in `dt` seconds between standing still and moving at `kmh`,
/// changing speed at `rate_ms2`: at that speed all along but the speed change (or, with too
/// little time for that rate, at the steady rate that fits).
fn farthest_m(kmh: f64, dt: f64, rate_ms2: f64) -> f64 {
    let v = kmh / 3.6;
    v * dt - (v * v / (2.0 * rate_ms2)).min(v * dt / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::earth::{LatLon, offset_m};

    const T0: i64 = 1_786_644_000;

    /// A fix `x_m` east of the origin at `t` seconds, reporting `kmh`.
    fn fix(t: i64, x_m: f64, kmh: f64) -> Fix {
        let p = offset_m(LatLon::new(40.4, -3.7), x_m, 0.0);
        Fix {
            ts_utc: T0 + t,
            lat: p.lat,
            lon: p.lon,
            speed_kmh: kmh,
            heading_deg: 90.0,
            ignition: true,
            odometer_m: None,
        }
    }

    /// The speeds `fixes` are handed on with, the last one flushed.
    fn checked(fixes: &[Fix], noise_m: f64) -> Vec<(f64, bool)> {
        let mut check = SpeedCheck::new(&DetectionConfig::default());
        let mut out: Vec<_> = fixes
            .iter()
            .filter_map(|f| check.push(*f, noise_m))
            .collect();
        out.extend(check.flush());
        out.iter().map(|(f, kept)| (f.speed_kmh, *kept)).collect()
    }

    #[test]
    fn a_zero_the_unit_drove_through_is_replaced_once_the_next_fix_shows_it() {
        // 36 km/h every 10 s, the middle record 0: 200 m between its neighbours.
        let fixes = [fix(0, 0.0, 36.0), fix(10, 100.0, 0.0), fix(20, 200.0, 36.0)];
        assert_eq!(
            checked(&fixes, 21.0),
            [(36.0, true), (36.0, false), (36.0, true)]
        );
        // Without the fix after it (the end of the data so far) it stands.
        let mut check = SpeedCheck::new(&DetectionConfig::default());
        assert!(check.push(fixes[0], 21.0).is_none());
        assert_eq!(check.push(fixes[1], 21.0), Some((fixes[0], true)));
        assert_eq!(check.flush(), Some((fixes[1], true)));
    }

    #[test]
    fn a_zero_where_the_unit_halted_stays() {
        // 20 km/h, halted, 20 km/h, 10 s apart: 40 m between the moving records (through a
        // halt they could be 95 m apart at most).
        let halt = [fix(0, 0.0, 20.0), fix(10, 20.0, 0.0), fix(20, 40.0, 20.0)];
        assert_eq!(
            checked(&halt, 21.0),
            [(20.0, true), (0.0, true), (20.0, true)]
        );
        // At 15 km/h over 20 s a halt fits in 74 m: a chord of 90 m with 60 m of noise proves
        // nothing, with 10 m it does.
        let slow = [fix(0, 0.0, 15.0), fix(10, 45.0, 0.0), fix(20, 90.0, 15.0)];
        assert_eq!(checked(&slow, 60.0)[1], (0.0, true));
        assert_eq!(checked(&slow, 10.0)[1], (15.0, false));
        // A brief real halt between records half a minute apart: at 40 km/h a path through
        // a halt may be 601 m long; 480 m (of the 667 m the speeds would cover unhalted) is
        // no proof, though far over half of it.
        let brief = [fix(0, 0.0, 40.0), fix(30, 250.0, 0.0), fix(60, 480.0, 40.0)];
        assert_eq!(checked(&brief, 21.0)[1], (0.0, true));
        // A halt 60 m on, and a 200 m jump on the record after it: 320 m in 30 s at 30 km/h
        // is more than any halted path, and more than the speeds cover unhalted too.
        let jumped = [fix(0, 0.0, 30.0), fix(15, 60.0, 0.0), fix(30, 320.0, 30.0)];
        assert_eq!(checked(&jumped, 21.0)[1], (0.0, true));
        // A tracker that records only while moving: braking at 20 km/h, a still record a second
        // later, then nothing for 55 s while the unit stood, and the departure at 9 km/h 190 m
        // on (it drove faster in between than either end says).
        let adaptive = [fix(0, 0.0, 20.5), fix(1, 5.0, 0.0), fix(56, 190.0, 9.2)];
        assert_eq!(checked(&adaptive, 21.0)[1], (0.0, true));
        // Nor across a silence, nor beside a still fix.
        let silence = [fix(0, 0.0, 36.0), fix(40, 400.0, 0.0), fix(80, 800.0, 36.0)];
        assert_eq!(checked(&silence, 21.0)[1], (0.0, true));
        let stopping = [fix(0, 0.0, 36.0), fix(10, 60.0, 0.0), fix(20, 200.0, 0.0)];
        assert_eq!(checked(&stopping, 21.0)[1], (0.0, true));
    }
}
