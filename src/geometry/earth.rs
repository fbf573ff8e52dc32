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
    LatLon::new(
        p.lat + north_m / M_PER_DEG_LAT,
        p.lon + east_m / (M_PER_DEG_LAT * p.lat.to_radians().cos()),
    )
}

/// East/north metres of `p` relative to `origin` (equirectangular, for short distances).
pub fn local_m(origin: LatLon, p: LatLon) -> (f64, f64) {
    let east = (p.lon - origin.lon) * M_PER_DEG_LAT * origin.lat.to_radians().cos();
    let north = (p.lat - origin.lat) * M_PER_DEG_LAT;
    (east, north)
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
