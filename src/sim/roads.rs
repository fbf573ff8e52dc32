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
use crate::geometry::earth::LatLon;
use crate::geometry::geofence::Geofence;
use crate::geometry::route::{Line, Route, RouteStop};

/// The world's routes first (same indices), then the shortened loops.
pub struct Roads {
    pub routes: Vec<Route>,
    pub courses: Vec<Course>,
    /// Per world route, its shortened loops, longest first.
    pub shortened: Vec<Vec<Shortened>>,
}

/// A shortened loop of a world route.
#[derive(Debug, Clone, PartialEq)]
pub struct Shortened {
    /// Its index in [`Roads::routes`].
    pub route: usize,
    /// The world route's deliveries it serves (0-based, in the world route's order), in the
    /// order it serves them.
    pub deliveries: Vec<usize>,
}

/// One world route's share of the roads, made on its own (so a caller with threads to spare
/// can make the routes' shares side by side: they are most of the setup, and nothing else can
/// start before them): its shortened loops, longest first, with the deliveries each serves,
/// and the courses of the route and of each loop, in that order.
pub struct RouteRoads {
    loops: Vec<(Route, Vec<usize>)>,
    courses: Vec<Course>,
}

impl RouteRoads {
    pub fn new(route: &Route, fences: &[Geofence]) -> RouteRoads {
        let deliveries = route.stops.len().saturating_sub(2);
        let mut loops: Vec<(Route, Vec<usize>)> = Vec::new();
        for served in 1..deliveries {
            loops.extend(out_and_back(route, served));
            loops.extend(back_and_forth(route, served));
        }
        loops.sort_by(|a, b| b.0.length_m().total_cmp(&a.0.length_m()));
        let mut courses = Vec::with_capacity(loops.len() + 1);
        courses.push(Course::new(route, fences));
        courses.extend(
            loops
                .iter()
                .map(|(partial, _)| Course::new(partial, fences)),
        );
        RouteRoads { loops, courses }
    }
}

impl Roads {
    pub fn new(routes: &[Route], fences: &[Geofence]) -> Roads {
        let parts = routes.iter().map(|r| RouteRoads::new(r, fences)).collect();
        Roads::from_parts(routes, parts)
    }

    /// The roads of `routes` from each one's [`RouteRoads`], in the same order.
    pub fn from_parts(routes: &[Route], parts: Vec<RouteRoads>) -> Roads {
        debug_assert_eq!(routes.len(), parts.len());
        let mut all: Vec<Route> = routes.to_vec();
        let mut courses = Vec::with_capacity(routes.len());
        let mut loop_courses = Vec::new();
        let mut shortened = Vec::with_capacity(routes.len());
        for part in parts {
            let mut part_courses = part.courses.into_iter();
            courses.extend(part_courses.next());
            loop_courses.extend(part_courses);
            let mut these = Vec::with_capacity(part.loops.len());
            for (partial, served) in part.loops {
                these.push(Shortened {
                    route: all.len(),
                    deliveries: served,
                });
                all.push(partial);
            }
            shortened.push(these);
        }
        courses.extend(loop_courses);
        Roads {
            routes: all,
            courses,
            shortened,
        }
    }
}

/// `route` driven from its depot to its delivery number `served` (1-based), serving the ones
/// before it on the way, then back to the depot along the same streets; with the deliveries it
/// serves. `None` when that stop sits at the depot itself.
pub fn out_and_back(route: &Route, served: usize) -> Option<(Route, Vec<usize>)> {
    let turn_m = route.stops.get(served)?.along_m;
    let index = route.segment_index(turn_m);
    let mut outward: Vec<LatLon> = route.points[..=index].to_vec();
    outward.push(route.at(turn_m).0);
    let stops = route.stops[1..=served].to_vec();
    let partial = there_and_back(route, outward, stops, &route.stops[0], "hasta")?;
    Some((partial, (0..served).collect()))
}

/// `route` driven backwards from the depot at its end to its last `served` deliveries,
/// serving them from the last, then forwards back to the depot; with the deliveries it serves.
/// `None` when the farthest of them sits at the depot itself.
pub fn back_and_forth(route: &Route, served: usize) -> Option<(Route, Vec<usize>)> {
    let deliveries = route.stops.len().checked_sub(2)?;
    let first = deliveries.checked_sub(served)? + 1;
    let turn_m = route.stops.get(first)?.along_m;
    let length = route.length_m();
    let index = route.segment_index(turn_m);
    let mut outward: Vec<LatLon> = route.points[index + 1..].iter().rev().copied().collect();
    outward.push(route.at(turn_m).0);
    let stops = route.stops[first..=deliveries]
        .iter()
        .rev()
        .map(|stop| RouteStop {
            along_m: length - stop.along_m,
            ..stop.clone()
        })
        .collect();
    let depot = route.stops.last()?;
    let partial = there_and_back(route, outward, stops, depot, "desde el final hasta")?;
    Some((partial, (first - 1..deliveries).rev().collect()))
}

/// The route along `outward` and back, serving `stops` (placed along `outward`; the last one
/// is the turn) between two visits to `depot`.
fn there_and_back(
    route: &Route,
    mut outward: Vec<LatLon>,
    mut stops: Vec<RouteStop>,
    depot: &RouteStop,
    how: &str,
) -> Option<Route> {
    outward.dedup();
    if outward.len() < 2 {
        return None;
    }
    let mut points = outward.clone();
    points.extend(outward.iter().rev().skip(1));
    let line = Line::measure(&points);
    let total = line.length_m();
    // The outward half's own sum: the same additions in the same order.
    let half_m = line.cum_m[outward.len() - 1];
    let share = total / route.length_m();
    let turn = stops.last_mut()?;
    // The turn is exactly half-way, whatever the rounding of the point placed there.
    turn.along_m = half_m;
    let name = format!("{} ({how} {})", route.name, turn.name);
    stops.insert(
        0,
        RouteStop {
            along_m: 0.0,
            ..depot.clone()
        },
    );
    stops.push(RouteStop {
        along_m: total,
        ..depot.clone()
    });
    Some(Route {
        name,
        source: route.source.clone(),
        polyline: String::new(),
        points,
        cum_m: line.cum_m,
        headings: line.headings,
        stops,
        routed_distance_m: route.routed_distance_m * share,
        routed_duration_s: route.routed_duration_s * share,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::earth::distance_m;
    use crate::scenario::embedded;

    fn route(index: usize) -> Route {
        let (name, text) = embedded::ROUTES[index];
        Route::parse(text, std::path::Path::new(name)).unwrap()
    }

    /// A shortened loop goes out to its turn, serves its stops where the route has them, and
    /// comes back to the depot by the same streets.
    fn check(route: &Route, partial: &Route, served: &[usize]) {
        let turn = &route.stops[*served.last().unwrap() + 1];
        assert_eq!(partial.stops.len(), served.len() + 2);
        for (k, d) in served.iter().enumerate() {
            let stop = &partial.stops[k + 1];
            assert_eq!(stop.name, route.stops[d + 1].name);
            let here = partial.at(stop.along_m).0;
            assert!(distance_m(here, route.at(route.stops[d + 1].along_m).0) < 0.5);
        }
        let half = partial.length_m() / 2.0;
        assert!((partial.stops[served.len()].along_m - half).abs() < 0.01);
        assert!(distance_m(partial.at(half).0, route.at(turn.along_m).0) < 0.01);
        let start = partial.at(0.0).0;
        assert!(distance_m(partial.at(partial.length_m()).0, start) < 0.01);
        let speed = partial.base_speed_kmh() - route.base_speed_kmh();
        assert!(speed.abs() < 1e-9);
    }

    #[test]
    fn shortened_loops_turn_at_their_last_stop_and_end_where_they_began() {
        for index in 0..embedded::ROUTES.len() {
            let route = route(index);
            let deliveries = route.stops.len() - 2;
            for served in 1..deliveries {
                let (there, which) = out_and_back(&route, served).unwrap();
                assert_eq!(which, (0..served).collect::<Vec<_>>());
                check(&route, &there, &which);
                assert_eq!(there.at(0.0).0, route.depot());
                let (back, which) = back_and_forth(&route, served).unwrap();
                assert_eq!(which.len(), served);
                assert_eq!(which[0], deliveries - 1);
                check(&route, &back, &which);
                assert_eq!(back.at(0.0).0, *route.points.last().unwrap());
            }
        }
    }

    #[test]
    fn roads_list_each_route_s_shortened_loops_longest_first() {
        let routes: Vec<Route> = (0..embedded::ROUTES.len()).map(route).collect();
        let roads = Roads::new(&routes, &[]);
        assert_eq!(roads.routes.len(), roads.courses.len());
        for (index, route) in routes.iter().enumerate() {
            let deliveries = route.stops.len() - 2;
            let these = &roads.shortened[index];
            assert_eq!(
                these.len(),
                2 * deliveries.saturating_sub(1),
                "{}",
                route.name
            );
            for pair in these.windows(2) {
                let (a, b) = (&roads.routes[pair[0].route], &roads.routes[pair[1].route]);
                assert!(a.length_m() >= b.length_m());
            }
        }
    }
}
