//! Small geodesy for fleet work: points, great-circle distances, bearings, local offsets.
//!
//! Owns the numeric conventions every other module shares: WGS84 degrees with `lat`/`lon`
//! named (never bare x/y), distances in metres on a sphere of mean radius (what `geo`'s
//! `Haversine` uses), bearings in degrees clockwise from north. Pure functions, no I/O.

use geo::{Bearing, Destination, Distance, Haversine, Point};

/// Mean Earth radius, metres (what `geo`'s `Haversine` uses).
pub const EARTH_RADIUS_M: f64 = 6_371_008.8;

/// Metres per degree of latitude on the mean sphere (2πR/360).
pub const M_PER_DEG_LAT: f64 = 111_195.08;

/// A WGS84 position in degrees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatLon {
    pub lat: f64,
    pub lon: f64,
}

impl LatLon {
    pub const fn new(lat: f64, lon: f64) -> Self {
        LatLon { lat, lon }
    }

    /// As a `geo` point (x = lon, y = lat).
    pub fn point(self) -> Point<f64> {
        Point::new(self.lon, self.lat)
    }

    pub fn from_point(p: Point<f64>) -> Self {
        LatLon::new(p.y(), p.x())
    }
}

/// Great-circle distance in metres.
pub fn distance_m(a: LatLon, b: LatLon) -> f64 {
    Haversine.distance(a.point(), b.point())
}

/// Initial bearing from `a` to `b`, degrees in [0, 360), 0 = north, clockwise.
pub fn bearing_deg(a: LatLon, b: LatLon) -> f64 {
    Haversine.bearing(a.point(), b.point()).rem_euclid(360.0)
}

/// The point `distance_m` metres from `origin` along `bearing_deg`.
pub fn destination(origin: LatLon, bearing_deg: f64, distance_m: f64) -> LatLon {
    LatLon::from_point(Haversine.destination(origin.point(), bearing_deg, distance_m))
}

/// Moves a point by small east/north offsets in metres (equirectangular; exact enough below
/// a few kilometres, which is all noise and fences need).
pub fn offset_m(p: LatLon, east_m: f64, north_m: f64) -> LatLon {
    offset_m_at(p, cos_lat(p), east_m, north_m)
}

/// The cosine of `p`'s latitude: what [`offset_m_at`] and [`local_m_at`] take, so a caller
/// that offsets or measures around the same point many times computes it once.
pub fn cos_lat(p: LatLon) -> f64 {
    p.lat.to_radians().cos()
}

/// The sine and cosine of `p`'s latitude: what [`bearing_deg_at`] takes (the cosine is
/// [`cos_lat`]'s, bit for bit).
pub fn lat_sin_cos(p: LatLon) -> (f64, f64) {
    let lat = p.lat.to_radians();
    (lat.sin(), lat.cos())
}

/// [`bearing_deg`] with both points' [`lat_sin_cos`] already known: `geo`'s `Haversine`
/// bearing, operation for operation, so the same bits (a line's headings take each point's
/// sine and cosine once instead of twice). `geo` ends with `(degrees + 360) % 360` and
/// [`bearing_deg`] with `rem_euclid(360)`: for degrees in [−180, 180] the sum lies in
/// [180, 540], where both come to this one subtraction, exact (Sterbenz), without two `fmod`s.
pub fn bearing_deg_at(
    a: LatLon,
    (sin_a, cos_a): (f64, f64),
    b: LatLon,
    (sin_b, cos_b): (f64, f64),
) -> f64 {
    let delta_lng = b.lon.to_radians() - a.lon.to_radians();
    let s = cos_b * delta_lng.sin();
    let c = cos_a * sin_b - sin_a * cos_b * delta_lng.cos();
    let turned = s.atan2(c).to_degrees() + 360.0;
    if turned >= 360.0 {
        turned - 360.0
    } else {
        turned
    }
}

/// [`distance_m`] with both points' [`cos_lat`] already known: the haversine of `geo`'s
/// `Haversine`, operation for operation, so the same bits (a caller measuring between the
/// same few points over and over takes each cosine once).
pub fn distance_m_at(a: LatLon, cos_a: f64, b: LatLon, cos_b: f64) -> f64 {
    let delta_theta = (b.lat - a.lat).to_radians();
    let delta_lambda = (b.lon - a.lon).to_radians();
    let h = (delta_theta / 2.0).sin().powi(2) + cos_a * cos_b * (delta_lambda / 2.0).sin().powi(2);
    let c = 2.0 * h.sqrt().asin();
    Haversine.radius() * c
}

/// [`offset_m`] with `p`'s [`cos_lat`] already known: the same arithmetic.
pub fn offset_m_at(p: LatLon, cos_lat: f64, east_m: f64, north_m: f64) -> LatLon {
    LatLon::new(
        p.lat + north_m / M_PER_DEG_LAT,
        p.lon + east_m / (M_PER_DEG_LAT * cos_lat),
    )
}

/// East/north metres of `p` relative to `origin` (equirectangular, for short distances).
pub fn local_m(origin: LatLon, p: LatLon) -> (f64, f64) {
    local_m_at(origin, cos_lat(origin), p)
}

/// [`local_m`] with `origin`'s [`cos_lat`] already known: the same arithmetic.
pub fn local_m_at(origin: LatLon, cos_lat: f64, p: LatLon) -> (f64, f64) {
    let east = (p.lon - origin.lon) * M_PER_DEG_LAT * cos_lat;
    let north = (p.lat - origin.lat) * M_PER_DEG_LAT;
    (east, north)
}

/// Rounding slack of the shortcuts below: far larger than the few ulps the haversine errs
/// by, far smaller than any margin they are compared with.
const SLACK: f64 = 1e-9;

/// How [`distance_m`]`(a, b)` compares with `limit_m`, when cheap bounds settle it: a
/// great-circle distance is at least its change of latitude, R·|Δφ|, and at most the way
/// along a parallel and then a meridian, R·(|Δφ| + |Δλ|). `None` when they do not (or for
/// NaN anywhere): only the haversine can tell.
fn distance_bounds_settle(a: LatLon, b: LatLon, limit_m: f64) -> Option<std::cmp::Ordering> {
    let dlat = (b.lat - a.lat).to_radians().abs();
    let dlon = (b.lon - a.lon).to_radians().abs();
    if EARTH_RADIUS_M * dlat * (1.0 - SLACK) > limit_m {
        return Some(std::cmp::Ordering::Greater);
    }
    if EARTH_RADIUS_M * (dlat + dlon) * (1.0 + SLACK) < limit_m {
        return Some(std::cmp::Ordering::Less);
    }
    None
}

/// `distance_m(a, b) > limit_m`, the same answer, most often without the trigonometry.
pub fn farther_than_m(a: LatLon, b: LatLon, limit_m: f64) -> bool {
    match distance_bounds_settle(a, b, limit_m) {
        Some(order) => order.is_gt(),
        None => distance_m(a, b) > limit_m,
    }
}

/// `distance_m(a, b) <= limit_m`, the same answer, most often without the trigonometry.
pub fn within_m(a: LatLon, b: LatLon, limit_m: f64) -> bool {
    match distance_bounds_settle(a, b, limit_m) {
        Some(order) => order.is_lt(),
        None => distance_m(a, b) <= limit_m,
    }
}

/// The Euclidean norm of an east/north offset in metres, `√(x² + y²)`, without the
/// overflow guard of `f64::hypot` (glibc's `hypot` rescales its operands so that squares of
/// 1e200 or 1e-200 neither overflow nor underflow; it was 7 % of the reference week's cycles,
/// three calls a fix in the distance rule). Metres on a city's or a country's scale square to
/// far inside `f64`'s range (1e-150 to 1e150 m would still be safe), so the plain sum of
/// squares loses nothing: the result differs from `hypot`'s by an ulp or so (the square root
/// halves the relative rounding of the sum; the property test bounds it).
#[inline]
pub fn norm_m(x_m: f64, y_m: f64) -> f64 {
    (x_m * x_m + y_m * y_m).sqrt()
}

/// The east and north metres from `a` to `b` on the plane whose east scale is the mean of
/// their latitudes' cosines (`cos_a`, `cos_b`, from [`cos_lat`]), longitudes compared the short
/// way round (across the antimeridian too). For the short distances it is asked for (a parked
/// unit's fix from its stop's centre, a straight stretch of road: metres to a few kilometres)
/// its norm is within parts per million of the haversine ([`distance_m_at`]), the mean cosine
/// keeping the error of second order in the change of latitude, at a fraction of its
/// trigonometry (two sines and an arcsine).
pub fn plane_offset_m(a: LatLon, cos_a: f64, b: LatLon, cos_b: f64) -> (f64, f64) {
    let mut delta_lon = b.lon - a.lon;
    if delta_lon > 180.0 {
        delta_lon -= 360.0;
    } else if delta_lon < -180.0 {
        delta_lon += 360.0;
    }
    (
        delta_lon * M_PER_DEG_LAT * (cos_a + cos_b) / 2.0,
        (b.lat - a.lat) * M_PER_DEG_LAT,
    )
}

/// The norm of [`plane_offset_m`]: the distance from `a` to `b` on that plane, metres.
pub fn plane_distance_m(a: LatLon, cos_a: f64, b: LatLon, cos_b: f64) -> f64 {
    let (east_m, north_m) = plane_offset_m(a, cos_a, b, cos_b);
    norm_m(east_m, north_m)
}

/// `norm_m(x, y) > limit`.
pub fn hypot_exceeds(x: f64, y: f64, limit: f64) -> bool {
    norm_m(x, y) > limit
}

/// `norm_m(x, y) < limit`.
pub fn hypot_under(x: f64, y: f64, limit: f64) -> bool {
    norm_m(x, y) < limit
}

/// Linear interpolation in degrees between two close points.
pub fn lerp(a: LatLon, b: LatLon, f: f64) -> LatLon {
    LatLon::new(a.lat + (b.lat - a.lat) * f, a.lon + (b.lon - a.lon) * f)
}

/// The 8-point Spanish compass label of a heading: N, NE, E, SE, S, SO, O, NO.
pub fn compass_es(heading_deg: f64) -> &'static str {
    const LABELS: [&str; 8] = ["N", "NE", "E", "SE", "S", "SO", "O", "NO"];
    let sector = ((heading_deg.rem_euclid(360.0) + 22.5) / 45.0).floor() as usize % 8;
    LABELS[sector]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs that try the shortcuts' arithmetic: the same point, close points, far ones, along
    /// a meridian and a parallel, across the antimeridian and the poles, and random points (a
    /// xorshift from `seed`, so the same every run).
    fn awkward_pairs(seed: u64) -> Vec<(LatLon, LatLon)> {
        let mut state = seed;
        let mut next = |span: f64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 * span - span
        };
        let mut pairs = vec![
            (
                LatLon::new(14.6349, -90.5069),
                LatLon::new(14.6349, -90.5069),
            ),
            (
                LatLon::new(14.6349, -90.5069),
                LatLon::new(14.5586, -90.7295),
            ),
            (LatLon::new(0.0, 179.9), LatLon::new(0.1, -179.9)),
            (LatLon::new(89.99, 10.0), LatLon::new(-89.99, -170.0)),
            (LatLon::new(-0.0, 0.0), LatLon::new(0.0, -0.0)),
            (LatLon::new(10.0, 5.0), LatLon::new(11.0, 5.0)),
            (LatLon::new(10.0, 5.0), LatLon::new(9.0, 5.0)),
            (LatLon::new(0.0, 5.0), LatLon::new(0.0, 4.0)),
        ];
        for _ in 0..20_000 {
            let a = LatLon::new(next(90.0), next(180.0));
            let close = LatLon::new(a.lat + next(0.01), a.lon + next(0.01));
            pairs.push((a, close));
            pairs.push((a, LatLon::new(next(90.0), next(180.0))));
        }
        pairs
    }

    /// The haversine with the cosines given is `geo`'s bit for bit.
    #[test]
    fn the_haversine_with_known_cosines_is_geos_bit_for_bit() {
        for (a, b) in awkward_pairs(0x9e37_79b9_7f4a_7c15) {
            let given = distance_m_at(a, cos_lat(a), b, cos_lat(b));
            assert_eq!(given.to_bits(), distance_m(a, b).to_bits(), "{a:?} {b:?}");
        }
    }

    /// The bearing with the sines and cosines given is [`bearing_deg`]'s bit for bit, and the
    /// cosine [`cos_lat`]'s.
    #[test]
    fn the_bearing_with_known_sines_and_cosines_is_the_same_bits() {
        for (a, b) in awkward_pairs(0x2545_f491_4f6c_dd1d) {
            let given = bearing_deg_at(a, lat_sin_cos(a), b, lat_sin_cos(b));
            assert_eq!(given.to_bits(), bearing_deg(a, b).to_bits(), "{a:?} {b:?}");
            assert_eq!(lat_sin_cos(a).1.to_bits(), cos_lat(a).to_bits());
        }
    }

    /// The plane of the mean cosine measures what the haversine does, to parts per million,
    /// from a metre to 5 km in every direction, at the equator, in the tropics, at ±70° and
    /// across the antimeridian.
    #[test]
    fn the_plane_of_the_mean_cosine_is_the_haversine_over_short_distances() {
        let mut worst: f64 = 0.0;
        for (lat, lon) in [
            (0.0, 10.0),
            (14.6, -90.5),
            (52.5, 13.4),
            (70.0, 25.0),
            (-70.0, -60.0),
            (-17.8, 179.9995),
            (10.0, -179.9995),
        ] {
            let a = LatLon::new(lat, lon);
            for metres in [1.0, 30.0, 400.0, 5_000.0] {
                for step in 0..16 {
                    let b = destination(a, f64::from(step) * 22.5, metres);
                    let lon = match b.lon {
                        lon if lon > 180.0 => lon - 360.0,
                        lon if lon < -180.0 => lon + 360.0,
                        lon => lon,
                    };
                    let b = LatLon::new(b.lat, lon);
                    let exact = distance_m(a, b);
                    let plane = plane_distance_m(a, cos_lat(a), b, cos_lat(b));
                    worst = worst.max((plane - exact).abs() / exact);
                }
            }
        }
        assert!(worst < 1e-5, "worst relative error {worst}");
    }

    #[test]
    fn distances_and_bearings() {
        // Guatemala City → Antigua: about 25.4 km as the crow flies.
        let gc = LatLon::new(14.6349, -90.5069);
        let antigua = LatLon::new(14.5586, -90.7295);
        let d = distance_m(gc, antigua);
        assert!((25_300.0..25_500.0).contains(&d), "{d}");
        let b = bearing_deg(gc, antigua);
        assert!((240.0..260.0).contains(&b), "{b}");
        let back = destination(gc, b, d);
        assert!(distance_m(back, antigua) < 1.0);
    }

    #[test]
    fn offsets_round_trip() {
        let origin = LatLon::new(14.585, -90.545);
        let p = offset_m(origin, 120.0, -80.0);
        let (east, north) = local_m(origin, p);
        assert!((east - 120.0).abs() < 0.01 && (north + 80.0).abs() < 0.01);
        assert!((distance_m(origin, p) - (120.0f64.hypot(80.0))).abs() < 0.5);
    }

    /// The shortcuts give the plain comparisons' answers, to the bit of the limit: limits
    /// at, one ulp either side of, and around each distance, over short and long, north-south,
    /// east-west and diagonal pairs, at the equator, the tropics and high latitudes.
    #[test]
    fn the_comparison_shortcuts_answer_as_the_plain_comparisons() {
        let mut settled = 0;
        for origin in [
            LatLon::new(0.0, 0.0),
            LatLon::new(14.6, -90.5),
            LatLon::new(40.4, -3.7),
            LatLon::new(-63.0, 170.0),
        ] {
            for (east, north) in [
                (0.0, 3.0),
                (3.0, 0.0),
                (2.0, 2.0),
                (150.0, 20.0),
                (-20.0, -150.0),
                (700.0, 700.0),
                (0.01, -0.02),
                (30_000.0, 5.0),
            ] {
                let p = offset_m(origin, east, north);
                let d = distance_m(origin, p);
                let (x, y) = local_m(origin, p);
                let h = norm_m(x, y);
                let mut limits = vec![0.0, -1.0, 1e-3, f64::NAN, f64::INFINITY];
                for base in [d, h] {
                    for factor in [0.5, 0.9, 0.999, 1.0, 1.001, 1.1, 2.0] {
                        let l = base * factor;
                        limits.extend([l, l.next_up(), l.next_down()]);
                    }
                }
                for limit in limits {
                    let at = format!("{origin:?} + ({east}, {north}) against {limit}");
                    assert_eq!(farther_than_m(origin, p, limit), d > limit, "{at}");
                    assert_eq!(within_m(origin, p, limit), d <= limit, "{at}");
                    assert_eq!(hypot_exceeds(x, y, limit), h > limit, "{at}");
                    assert_eq!(hypot_under(x, y, limit), h < limit, "{at}");
                    settled += usize::from(distance_bounds_settle(origin, p, limit).is_some());
                }
            }
        }
        // The shortcuts do take over: most comparisons are settled without the haversine.
        assert!(settled > 500, "{settled}");
    }

    /// `norm_m` agrees with `hypot` to a few parts in 1e16 over offsets from a micrometre to
    /// ten thousand kilometres, of either sign, one axis far larger than the other or zero.
    #[test]
    fn the_plain_norm_agrees_with_hypot() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut unit = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut worst = 0.0f64;
        let mut pairs = vec![
            (0.0, 0.0),
            (3.0, 4.0),
            (-0.0, 1e-6),
            (1e7, 0.0),
            (1e-6, 1e7),
        ];
        for _ in 0..200_000 {
            // Magnitudes log-uniform over 1e-6..1e7 m, each axis on its own.
            let mut axis = || {
                let sign = if unit() < 0.5 { -1.0 } else { 1.0 };
                sign * 10f64.powf(-6.0 + 13.0 * unit())
            };
            pairs.push((axis(), axis()));
        }
        for (x, y) in pairs {
            let (plain, guarded) = (norm_m(x, y), x.hypot(y));
            if guarded == 0.0 {
                assert_eq!(plain, 0.0, "{x} {y}");
                continue;
            }
            let relative = (plain - guarded).abs() / guarded;
            worst = worst.max(relative);
            assert!(relative <= 4.0 * f64::EPSILON, "{x} {y}: {plain} {guarded}");
        }
        // The bound is not vacuous: the two do differ in the last bits somewhere.
        assert!(worst > 0.0, "{worst}");
    }

    #[test]
    fn compass_labels() {
        for (h, label) in [
            (0.0, "N"),
            (22.4, "N"),
            (22.5, "NE"),
            (224.0, "SO"),
            (350.0, "N"),
            (270.0, "O"),
        ] {
            assert_eq!(compass_es(h), label, "{h}");
        }
    }
}
