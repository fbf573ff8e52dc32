//! The roads a simulation drives: every route of the world, and for each, its shortened
//! loops — out to one of its delivery stops and back the same way — with their courses.
//!
//! Owns building those out-and-back routes once per simulation, so that a unit whose shift has
//! no time left for a whole loop can still serve the first stops of its next one and return to
//! the depot (`agent/loops.rs` decides when). A shortened loop is an ordinary [`Route`] to the
//! agent: its positions, headings, fences and limits come from the same geometry, so the
//! truth's kilometres, stops and visits stay consistent. It must not touch scenario checks or
//! route files.

use super::course::Course;
use crate::geometry::earth::{LatLon, bearing_deg, distance_m};
use crate::geometry::geofence::Geofence;
use crate::geometry::route::{Route, RouteStop};

/// The world's routes first (same indices), then the shortened loops.
pub struct Roads {
    pub routes: Vec<Route>,
    pub courses: Vec<Course>,
    /// Per world route: `(k, index)` of the route serving its first `k` delivery stops and
    /// returning, for `k` from 1 to one less than its deliveries, shortest first.
    pub shortened: Vec<Vec<(usize, usize)>>,
}

impl Roads {
    pub fn new(routes: &[Route], fences: &[Geofence]) -> Roads {
        let mut all: Vec<Route> = routes.to_vec();
        let mut shortened = Vec::with_capacity(routes.len());
        for route in routes {
            let deliveries = route.stops.len().saturating_sub(2);
            let mut indices = Vec::new();
            for served in 1..deliveries {
                if let Some(partial) = out_and_back(route, served) {
                    indices.push((served, all.len()));
                    all.push(partial);
                }
            }
            shortened.push(indices);
        }
        let courses = all.iter().map(|r| Course::new(r, fences)).collect();
        Roads {
            routes: all,
            courses,
            shortened,
        }
    }
}

/// `route` driven from its depot to its delivery stop number `served` (1-based), serving the
/// stops before it on the way, then back to the depot along the same streets. `None` when the
/// stop sits at the depot itself.
pub fn out_and_back(route: &Route, served: usize) -> Option<Route> {
    let turn = route.stops.get(served)?;
    let turn_m = turn.along_m;
    if turn_m <= 0.0 {
        return None;
    }
    let index = route.segment_index(turn_m);
    let mut outward: Vec<LatLon> = route.points[..=index].to_vec();
    outward.push(route.at(turn_m).0);
    outward.dedup();
    if outward.len() < 2 {
        return None;
    }
    let half_m: f64 = outward.windows(2).map(|p| distance_m(p[0], p[1])).sum();
    let mut points = outward.clone();
    points.extend(outward.iter().rev().skip(1));
    let mut cum_m = Vec::with_capacity(points.len());
    let mut total = 0.0;
    cum_m.push(0.0);
    for pair in points.windows(2) {
        total += distance_m(pair[0], pair[1]);
        cum_m.push(total);
    }
    let headings = points.windows(2).map(|p| bearing_deg(p[0], p[1])).collect();
    let share = total / route.length_m();
    let depot = &route.stops[0];
    let mut stops: Vec<RouteStop> = route.stops[..=served].to_vec();
    // The turn is exactly half-way, whatever the rounding of the point placed there.
    stops[served].along_m = half_m;
    stops.push(RouteStop {
        along_m: total,
        ..depot.clone()
    });
    Some(Route {
        name: format!("{} (hasta {})", route.name, turn.name),
        source: route.source.clone(),
        polyline: String::new(),
        points,
        cum_m,
        headings,
        stops,
        routed_distance_m: route.routed_distance_m * share,
        routed_duration_s: route.routed_duration_s * share,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::embedded;

    #[test]
    fn an_out_and_back_turns_at_its_stop_and_ends_at_the_depot() {
        let (name, text) = embedded::ROUTES[0];
        let route = Route::parse(text, std::path::Path::new(name)).unwrap();
        let route = &route;
        let deliveries = route.stops.len() - 2;
        assert!(deliveries >= 2, "{}", route.name);
        for served in 1..deliveries {
            let partial = out_and_back(route, served).unwrap();
            let turn_m = route.stops[served].along_m;
            assert!((partial.length_m() - 2.0 * turn_m).abs() < 1.0, "{served}");
            assert_eq!(partial.stops.len(), served + 2);
            assert_eq!(partial.stops[served].name, route.stops[served].name);
            let end = partial.at(partial.length_m()).0;
            assert!(distance_m(end, route.depot()) < 0.01);
            let far = partial.at(turn_m).0;
            assert!(distance_m(far, route.at(turn_m).0) < 0.01);
            let speed = partial.base_speed_kmh() - route.base_speed_kmh();
            assert!(speed.abs() < 1e-9);
        }
    }
}
