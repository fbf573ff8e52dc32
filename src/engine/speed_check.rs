//! Reported speeds the positions cannot support: replaced before any detector sees them.
//!
//! Owns [`SpeedCheck`]. Trackers send the odd invalid speed — a glitch of hundreds of km/h, or
//! 0 from a receiver that lost its Doppler solution while the unit drove on. A speed is
//! invalid when it is not a number, negative, over [`MAX_PLAUSIBLE_KMH`], or further from what
//! the positions allow than they can be off: with the previous fix's speed, a steady change
//! would cover more than the chord between them plus [`POSITION_ALLOWANCE_M`]; or it is 0
//! while the chord is longer than the previous speed held throughout could cover plus that
//! allowance. At 15 s between fixes that catches glitches of some 150 km/h or more over the
//! true speed, and zeros above some 70 km/h; smaller ones stay (the overspeed detector's
//! two-fix rule and the stop detector's two-fix departure absorb single ones). An
//! invalid speed is replaced by the last valid one (the Doppler speed holds between fixes far
//! better than anything positions could give). Outlier jumps move positions, never speeds, so
//! they cannot make a speed episode; and they only widen the chord, which excuses more.

use super::Fix;
use crate::geometry::earth::{distance_m, within_m};

/// No vehicle of a road fleet goes faster, km/h.
pub const MAX_PLAUSIBLE_KMH: f64 = 250.0;
/// How far two fixes' positions may be off together: a 200 m outlier jump on one plus four
/// noise scales of a 25 m dense-centre error on both, metres.
pub const POSITION_ALLOWANCE_M: f64 = 300.0;

/// Over longer intervals (a silence) the path may wander far from the chord: only the
/// plausibility bound applies, seconds.
const MAX_CHECK_S: f64 = 60.0;

#[derive(Debug, Clone, Default)]
pub struct SpeedCheck {
    prev: Option<Fix>,
    /// Fixes whose speed was replaced so far.
    pub replaced: u32,
}

impl SpeedCheck {
    /// `fix` with its speed replaced when invalid.
    pub fn check(&mut self, mut fix: Fix) -> Fix {
        if let Some(prev) = self.prev
            && !valid(&prev, &fix)
        {
            fix.speed_kmh = prev.speed_kmh;
            self.replaced += 1;
        } else if self.prev.is_none() && !in_range(fix.speed_kmh) {
            fix.speed_kmh = 0.0;
            self.replaced += 1;
        }
        self.prev = Some(fix);
        fix
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
