//! GPS-only distance, fix to fix: the Doppler speed integral, corrected by the positions
//! where they prove it wrong beyond the tracker's own noise.
//!
//! Owns [`GpsDistance`], the distance rule of the daily kilometres (and of the evaluation's
//! phantom-kilometre check). The integral of the reported speed (trapezoidal) follows the road
//! between fixes, where straight chords cut every corner, and parked jitter never enters it. Its
//! weakness is what happens between two samples 15 s apart: a traffic halt the samples missed
//! (the speeds say "cruising", the unit stood for half the interval) or a start right after a
//! still sample. The positions see those, so they veto the integral where they are conclusive:
//! a path is never shorter than the chord between its ends, so the estimate is raised to the
//! chord less a noise margin; and where the heading did not change (a straight street) the path
//! is the chord, so the estimate is lowered to the chord plus that margin. The margin is three
//! times the tracker's fix-to-fix noise, learned from the unit's own still fixes (the median of
//! their displacements, robust to outlier jumps); until enough are seen, speeds alone decide.
//! Two still fixes never add distance, whatever their positions say.

use super::Fix;
use super::noise::RayleighScale;
use crate::geometry::earth::{distance_m, local_m};

/// Fix-to-fix noise margins are this many noise scales: below it a disagreement is noise.
const MARGIN_SCALES: f64 = 3.0;
/// Headings closer than this at both ends of a segment mean a straight street between them.
const STRAIGHT_DEG: f64 = 10.0;
/// Still pairs needed before the noise is trusted.
const MIN_STILL_PAIRS: u32 = 20;
/// Still pairs further apart in time than this are not used to learn the noise (drift).
const STILL_PAIR_MAX_S: i64 = 60;
/// Histogram bin of still displacements, metres.
const BIN_M: f64 = 0.5;

/// One vehicle's GPS distance, fed fix by fix in time order.
#[derive(Debug, Clone)]
pub struct GpsDistance {
    gap_s: f64,
    still_kmh: f64,
    noise: RayleighScale,
    prev: Option<Fix>,
}

impl GpsDistance {
    /// `gap_s`: a longer silence is bridged, not integrated; `still_kmh`: below this speed a fix
    /// stands still.
    pub fn new(gap_s: f64, still_kmh: f64) -> Self {
        GpsDistance {
            gap_s,
            still_kmh,
            noise: RayleighScale::new(BIN_M, MIN_STILL_PAIRS),
            prev: None,
        }
    }

    /// Metres driven from the previous fix to `fix` (0 for the first).
    pub fn push(&mut self, fix: &Fix) -> f64 {
        let Some(a) = self.prev.replace(*fix) else {
            return 0.0;
        };
        let b = fix;
        let dt = b.ts_utc - a.ts_utc;
        if dt <= 0 {
            return 0.0;
        }
        let speed_m = by_speed(&a, b);
        if dt as f64 > self.gap_s {
            return across_silence(&a, speed_m, distance_m(a.point(), b.point()));
        }
        // Fixes 15 s apart are close: the flat-earth distance is exact enough, and cheap.
        let (east_m, north_m) = local_m(a.point(), b.point());
        let chord = east_m.hypot(north_m);
        if a.speed_kmh < self.still_kmh && b.speed_kmh < self.still_kmh {
            if dt <= STILL_PAIR_MAX_S {
                self.noise.learn(chord);
            }
            return speed_m;
        }
        let Some(scale) = self.noise.scale_m() else {
            return speed_m;
        };
        let margin = MARGIN_SCALES * scale;
        let mut metres = speed_m.max(chord - margin);
        if heading_change_deg(a.heading_deg, b.heading_deg) < STRAIGHT_DEG {
            metres = metres.min(chord + margin);
        }
        metres
    }
}

/// The trapezoidal integral of the reported speed, metres.
fn by_speed(a: &Fix, b: &Fix) -> f64 {
    (a.speed_kmh + b.speed_kmh) / 2.0 / 3.6 * (b.ts_utc - a.ts_utc) as f64
}

/// Across a silence longer than the gap threshold while the ignition was on, the straight
/// line between the fixes is a lower bound; the speed estimate, capped at 1.5 times that
/// line, is used when larger (the unit may have stopped during the silence).
fn across_silence(a: &Fix, speed_m: f64, chord: f64) -> f64 {
    if !a.ignition {
        return 0.0;
    }
    chord.max(speed_m.min(1.5 * chord))
}

fn heading_change_deg(a: f64, b: f64) -> f64 {
    let d = (b - a).rem_euclid(360.0);
    d.min(360.0 - d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::earth::{LatLon, offset_m};

    const ORIGIN: LatLon = LatLon {
        lat: 14.6,
        lon: -90.5,
    };

    fn fix(t: i64, east_m: f64, north_m: f64, kmh: f64, heading_deg: f64) -> Fix {
        let p = offset_m(ORIGIN, east_m, north_m);
        Fix {
            ts_utc: t,
            lat: p.lat,
            lon: p.lon,
            speed_kmh: kmh,
            heading_deg,
            ignition: true,
            odometer_m: None,
        }
    }

    /// A unit that has stood still for ten minutes with ±5 m of noise, then the two fixes.
    fn after_learning(a: Fix, b: Fix) -> f64 {
        let mut d = GpsDistance::new(120.0, 3.0);
        for i in 0..40 {
            let (e, n) = (((i * 37) % 11) as f64 - 5.0, ((i * 53) % 11) as f64 - 5.0);
            d.push(&fix(i * 15, e - 1e4, n, 0.0, 90.0));
        }
        d.prev = None;
        d.push(&a);
        d.push(&b)
    }

    #[test]
    fn positions_veto_the_speeds_only_beyond_the_noise() {
        // (name, second fix, expected metres, to within)
        #[rustfmt::skip]
        let cases = [
            ("cruising, positions agree", fix(15, 150.0, 0.0, 36.0, 90.0), 150.0, 1e-9),
            ("cruising, positions 10 m off: noise", fix(15, 160.0, 0.0, 36.0, 90.0), 150.0, 1e-9),
            ("a halt the samples missed, straight street", fix(15, 60.0, 0.0, 36.0, 90.0), 60.0, 25.0),
            ("a halt on a corner: the speeds stand", fix(15, 30.0, 30.0, 36.0, 0.0), 150.0, 1e-9),
            ("a start the samples missed", fix(15, 300.0, 0.0, 36.0, 90.0), 300.0, 25.0),
        ];
        for (name, b, expected, within) in cases {
            let got = after_learning(fix(0, 0.0, 0.0, 36.0, 90.0), b);
            assert!((got - expected).abs() <= within, "{name}: {got}");
        }
    }

    #[test]
    fn speeds_alone_until_the_noise_is_known_and_still_fixes_add_nothing() {
        let mut d = GpsDistance::new(120.0, 3.0);
        d.push(&fix(0, 0.0, 0.0, 36.0, 90.0));
        assert_eq!(d.push(&fix(15, 60.0, 0.0, 36.0, 90.0)), 150.0);
        let mut parked = GpsDistance::new(120.0, 3.0);
        let jumps: f64 = (0..200)
            .map(|i| {
                parked.push(&fix(
                    i * 15,
                    if i % 7 == 0 { 120.0 } else { 0.0 },
                    0.0,
                    0.0,
                    0.0,
                ))
            })
            .sum();
        assert_eq!(jumps, 0.0);
    }
}
