//! What lies along a route: where it runs inside each geofence, and the speed limits there.
//!
//! Owns precomputing, once per route, the along-route intervals inside every geofence (found
//! by sampling every few metres and bisecting each boundary to centimetres). Vehicles move
//! only forward along routes, so the simulator detects fence crossings and limit changes by
//! comparing distances, never by testing points in polygons on the hot path.

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
    pub spans: Vec<Span>,
    /// Spans of fences that carry a speed limit, with that limit.
    pub limits: Vec<(Span, f64)>,
}

impl Course {
    pub fn new(route: &Route, fences: &[Geofence]) -> Course {
        let mut spans = Vec::new();
        let length = route.length_m();
        let steps = (length / SAMPLE_M).ceil().max(1.0) as usize;
        let along = |step: usize| (step as f64 * SAMPLE_M).min(length);
        let mut cursor = route.cursor();
        let samples: Vec<crate::geometry::earth::LatLon> =
            (0..=steps).map(|k| cursor.at(along(k)).0).collect();
        for (index, fence) in fences.iter().enumerate() {
            // Points outside the bounding box cannot be inside; most samples stop there.
            let (sw, ne) = fence.bbox();
            let inside_point = |p: crate::geometry::earth::LatLon| {
                p.lat >= sw.lat
                    && p.lat <= ne.lat
                    && p.lon >= sw.lon
                    && p.lon <= ne.lon
                    && fence.contains(p)
            };
            let inside = |s: f64| inside_point(route.at(s).0);
            let mut previous = inside_point(samples[0]);
            let mut start = previous.then_some(0.0);
            for (step, point) in samples.iter().enumerate().skip(1) {
                let now = inside_point(*point);
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
            .filter(move |s| s.from_m <= along_m && along_m <= s.to_m)
            .map(|s| s.fence)
    }

    /// The geofence limit at `along_m` (the lowest if several), if any.
    pub fn fence_limit_kmh(&self, along_m: f64) -> Option<f64> {
        self.limits
            .iter()
            .filter(|(s, _)| s.from_m <= along_m && along_m <= s.to_m)
            .map(|(_, limit)| *limit)
            .reduce(f64::min)
    }
}

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
