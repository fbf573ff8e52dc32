//! What lies along a route: where it runs inside each geofence, and the speed limits there.
//!
//! Owns precomputing, once per route, the along-route intervals inside every geofence (found
//! by sampling every few metres and bisecting each boundary to centimetres; the samples a lower
//! bound of the distance along the route keeps outside a fence's box are not tested). Vehicles move
//! only forward along routes, so the simulator detects fence crossings and limit changes by
//! comparing distances, never by testing points in polygons on the hot path.

use crate::geometry::earth::{LatLon, M_PER_DEG_LAT};
use crate::geometry::geofence::Geofence;
use crate::geometry::route::Route;

/// Sampling step when looking for fence boundaries, metres.
const SAMPLE_M: f64 = 4.0;

/// An along-route interval inside one geofence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub fence: usize,
    pub from_m: f64,
    pub to_m: f64,
}

#[derive(Debug, Clone, Default)]
pub struct Course {
    /// Sorted by `from_m` (and each span's `from_m <= to_m`): the readers below and the
    /// simulator's per-step loops stop at the first span starting beyond the point they ask
    /// about, rather than reading every fence the route crosses at every step.
    pub spans: Vec<Span>,
    /// Spans of fences that carry a speed limit, with that limit; sorted like `spans`.
    pub limits: Vec<(Span, f64)>,
}

impl Course {
    pub fn new(route: &Route, fences: &[Geofence]) -> Course {
        let spans = spans_inside(route, fences, true);
        let limits = spans
            .iter()
            .filter_map(|span| {
                fences[span.fence]
                    .speed_limit_kmh
                    .map(|limit| (*span, limit))
            })
            .collect();
        Course { spans, limits }
    }

    /// The fences containing the point `along_m` metres along the route.
    pub fn fences_at(&self, along_m: f64) -> impl Iterator<Item = usize> + '_ {
        self.spans
            .iter()
            .take_while(move |s| s.from_m <= along_m)
            .filter(move |s| along_m <= s.to_m)
            .map(|s| s.fence)
    }

    /// The geofence limit at `along_m` (the lowest if several), if any.
    pub fn fence_limit_kmh(&self, along_m: f64) -> Option<f64> {
        self.limits
            .iter()
            .take_while(|(s, _)| s.from_m <= along_m)
            .filter(|(s, _)| along_m <= s.to_m)
            .map(|(_, limit)| *limit)
            .reduce(f64::min)
    }
}

/// Where the route runs inside each fence, sorted by where each span starts: samples every
/// [`SAMPLE_M`] metres, each boundary bisected to a centimetre. With `skip_far`, the samples
/// that [`metres_outside`] proves outside a fence's box are not tested (the same spans; the
/// test compares both ways).
fn spans_inside(route: &Route, fences: &[Geofence], skip_far: bool) -> Vec<Span> {
    let mut spans = Vec::new();
    let length = route.length_m();
    let steps = (length / SAMPLE_M).ceil().max(1.0) as usize;
    let along = |step: usize| (step as f64 * SAMPLE_M).min(length);
    for (index, fence) in fences.iter().enumerate() {
        // Points outside the bounding box cannot be inside; most samples stop there.
        let (sw, ne) = fence.bbox();
        let inside_point = |p: LatLon| {
            p.lat >= sw.lat
                && p.lat <= ne.lat
                && p.lon >= sw.lon
                && p.lon <= ne.lon
                && fence.contains(p)
        };
        let inside = |s: f64| inside_point(route.at(s).0);
        // A forward cursor gives every sample the same point whichever samples it skipped
        // (`Route::segment_from` finds the same segment from any earlier hint).
        let mut cursor = route.cursor();
        let mut previous = inside_point(cursor.at(along(0)).0);
        let mut start = previous.then_some(0.0);
        let mut step = 1;
        while step <= steps {
            let point = cursor.at(along(step)).0;
            let now = inside_point(point);
            if now != previous {
                let boundary = bisect(&inside, along(step - 1), along(step), previous);
                if now {
                    start = Some(boundary);
                } else if let Some(from) = start.take() {
                    spans.push(Span {
                        fence: index,
                        from_m: from,
                        to_m: boundary,
                    });
                }
                previous = now;
            }
            // Far from the box, the samples within that distance along the route are
            // outside too: the next ones that could be inside are further on.
            step += if now || !skip_far {
                1
            } else {
                (metres_outside(point, sw, ne) / SAMPLE_M).floor().max(1.0) as usize
            };
        }
        if let Some(from) = start {
            spans.push(Span {
                fence: index,
                from_m: from,
                to_m: length,
            });
        }
    }
    spans.sort_by(|a, b| a.from_m.total_cmp(&b.from_m));
    spans
}

/// A lower bound of how far `p` lies outside the box `sw`–`ne` along any route, metres
/// (0 inside it), capped at [`MAX_SKIP_M`]. Along a route's straight lat/lon segments a
/// latitude change of Δφ takes at least R·|Δφ| metres of the route's great-circle length, and
/// a longitude change of Δλ at least (2/π)·R·cos φ·|Δλ| with φ the largest latitude within
/// reach (the cap keeps it within a degree of `p`'s); halved again for rounding. Only for
/// skipping samples: a bound too small costs time, one too large would miss a crossing.
fn metres_outside(p: LatLon, sw: LatLon, ne: LatLon) -> f64 {
    let lat_gap = (sw.lat - p.lat).max(p.lat - ne.lat).max(0.0);
    let lon_gap = (sw.lon - p.lon).max(p.lon - ne.lon).max(0.0);
    let widest = (p.lat.abs() + 1.0).min(89.0).to_radians().cos();
    let lat_m = lat_gap * M_PER_DEG_LAT;
    let lon_m = lon_gap * M_PER_DEG_LAT * widest * std::f64::consts::FRAC_2_PI;
    (0.5 * lat_m.max(lon_m)).min(MAX_SKIP_M)
}

/// The furthest [`metres_outside`] lets [`Course::new`] skip at once: about 0.45° of latitude.
const MAX_SKIP_M: f64 = 50_000.0;

/// The boundary between `lo` (on side `lo_side`) and `hi`, to 1 cm.
fn bisect(inside: &impl Fn(f64) -> bool, mut lo: f64, mut hi: f64, lo_side: bool) -> f64 {
    while hi - lo > 0.01 {
        let mid = (lo + hi) / 2.0;
        if inside(mid) == lo_side {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::earth::LatLon;
    use crate::geometry::geofence::Shape;
    use std::path::PathBuf;

    #[test]
    fn skipping_far_samples_finds_the_spans_every_sample_finds() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let mut paths = crate::geometry::route::route_paths(&root.join("rutas")).unwrap();
        paths.extend(crate::geometry::route::route_paths(&root.join("rutas/espana")).unwrap());
        let mut compared = 0;
        for path in paths {
            let route = Route::parse(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
            // Fences of every shape and size on, beside and across the line: near points
            // along it and offset from them by a few metres to a few kilometres.
            let mut fences = Vec::new();
            for (i, fraction) in [0.0, 0.13, 0.37, 0.5, 0.71, 0.98].into_iter().enumerate() {
                let on_line = route.at(route.length_m() * fraction).0;
                let offset = [0.0, 0.0004, -0.003, 0.02][i % 4];
                let centre = LatLon::new(on_line.lat + offset, on_line.lon - offset / 2.0);
                let size = [15.0, 120.0, 700.0, 2500.0][(i + 1) % 4];
                fences.push(Geofence::new(
                    format!("c{i}"),
                    "zona".into(),
                    Shape::Circle {
                        centre,
                        radius_m: size,
                    },
                    None,
                ));
                fences.push(Geofence::new(
                    format!("s{i}"),
                    "zona".into(),
                    Shape::Square {
                        centre,
                        half_side_m: size,
                    },
                    Some(30.0),
                ));
                let d = size / 111_000.0;
                fences.push(Geofence::new(
                    format!("p{i}"),
                    "zona".into(),
                    Shape::Polygon {
                        vertices: vec![
                            LatLon::new(centre.lat - d, centre.lon - 2.0 * d),
                            LatLon::new(centre.lat - d / 2.0, centre.lon + d),
                            LatLon::new(centre.lat + 2.0 * d, centre.lon + d / 3.0),
                        ],
                    },
                    None,
                ));
            }
            let course = Course::new(&route, &fences);
            let expected = spans_inside(&route, &fences, false);
            assert!(!expected.is_empty(), "{}", path.display());
            assert_eq!(course.spans, expected, "{}", path.display());
            compared += expected.len();
            // The order the readers and the simulator's per-step loops stop early on: the
            // same answers as reading every span.
            assert!(
                course.spans.windows(2).all(|w| w[0].from_m <= w[1].from_m)
                    && course.spans.iter().all(|s| s.from_m <= s.to_m),
                "{}",
                path.display()
            );
            let mut along = 0.0;
            while along <= route.length_m() {
                let inside = |s: &Span| s.from_m <= along && along <= s.to_m;
                let fences: Vec<usize> = course.fences_at(along).collect();
                let all: Vec<usize> = course
                    .spans
                    .iter()
                    .filter(|s| inside(s))
                    .map(|s| s.fence)
                    .collect();
                assert_eq!(fences, all, "{} at {along}", path.display());
                let limit = course
                    .limits
                    .iter()
                    .filter(|(s, _)| inside(s))
                    .map(|(_, l)| *l)
                    .reduce(f64::min);
                assert_eq!(
                    course.fence_limit_kmh(along),
                    limit,
                    "{} at {along}",
                    path.display()
                );
                along += 3.7;
            }
        }
        assert!(compared > 100, "{compared} spans compared");
    }

    #[test]
    fn depot_fence_covers_both_ends_of_a_loop() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("rutas/r01_cedis_z1_z4.json");
        let route = Route::parse(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
        let cedis = Geofence::new(
            "CEDIS".into(),
            "bodega".into(),
            Shape::Square {
                centre: LatLon::new(14.585, -90.545),
                half_side_m: 260.0,
            },
            Some(30.0),
        );
        let course = Course::new(&route, std::slice::from_ref(&cedis));
        assert!(course.spans.len() >= 2, "{:?}", course.spans);
        assert_eq!(course.spans[0].from_m, 0.0);
        assert_eq!(course.spans.last().unwrap().to_m, route.length_m());
        for span in &course.spans {
            // Just inside and just outside each interior boundary.
            if span.to_m < route.length_m() {
                assert!(cedis.contains(route.at(span.to_m - 0.05).0));
                assert!(!cedis.contains(route.at(span.to_m + 0.05).0));
            }
        }
        assert_eq!(course.fence_limit_kmh(1.0), Some(30.0));
        assert_eq!(course.fence_limit_kmh(route.length_m() / 2.0), None);
    }
}
