//! Geofences: named areas (square, circle, polygon) and whether a point lies inside.
//!
//! Owns the shapes and their containment and distance rules, shared by the simulator (truth
//! visits), the store (persisted shapes) and the detection engine. A square is kept as the
//! reference defined it (centre + half side in metres, axis-aligned in degrees) so its stored
//! corners match; circles use great-circle distance; polygons use planar ray casting in
//! degrees, exact for areas of a few kilometres.

use geo::{Contains, Coord, LineString, Polygon};

use crate::geometry::earth::{EARTH_RADIUS_M, LatLon, M_PER_DEG_LAT, distance_m, norm_m};

/// The shape of a geofence.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    Square { centre: LatLon, half_side_m: f64 },
    Circle { centre: LatLon, radius_m: f64 },
    Polygon { vertices: Vec<LatLon> },
}

/// A shape as the database stores it (`geocercas` columns).
#[derive(Debug, Clone, Copy)]
pub struct ShapeColumns<'a> {
    /// `cuadrado`, `circulo` or `poligono`.
    pub form: &'a str,
    pub centre: LatLon,
    pub half_side_m: Option<f64>,
    pub radius_m: Option<f64>,
    pub wkt: &'a str,
}

impl Shape {
    /// Rebuilds a shape from its stored columns; `None` if they do not describe one.
    pub fn from_columns(columns: &ShapeColumns<'_>) -> Option<Shape> {
        Some(
            match (columns.form, columns.half_side_m, columns.radius_m) {
                ("cuadrado", Some(half_side_m), _) => Shape::Square {
                    centre: columns.centre,
                    half_side_m,
                },
                ("circulo", _, Some(radius_m)) => Shape::Circle {
                    centre: columns.centre,
                    radius_m,
                },
                ("poligono", _, _) => Shape::Polygon {
                    vertices: parse_wkt_ring(columns.wkt)?,
                },
                _ => return None,
            },
        )
    }
}

/// A named geofence.
#[derive(Debug, Clone)]
pub struct Geofence {
    pub name: String,
    /// `bodega`, `centro_distribucion`, `zona_cliente`… (free text, Spanish).
    pub kind: String,
    pub shape: Shape,
    /// Speed limit inside, if any.
    pub speed_limit_kmh: Option<f64>,
    polygon: Option<Polygon<f64>>,
    /// Latitude and longitude bounds no inside point can pass (see [`Bounds`]).
    bounds: Bounds,
}

/// A box in degrees that holds every point a fence contains: `contains` answers `false` for a
/// point outside it without the exact test (a winding number with robust orientation per
/// side, or a haversine), which most fixes of a fleet, far from most fences, would otherwise
/// pay for every fence. Only ever a shortcut to the same answer: a point inside the box still
/// gets the exact test — but for a square, whose polygon is that very box.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    south: f64,
    north: f64,
    west: f64,
    east: f64,
    /// The shape is the box itself (a square, axis-aligned in degrees): a point is inside
    /// exactly when it is strictly inside the box, as the winding number says of a rectangle
    /// (a point on a side is on the boundary, which `contains` does not count).
    is_the_shape: bool,
}

impl Bounds {
    fn of(shape: &Shape, polygon: Option<&Polygon<f64>>) -> Bounds {
        match (shape, polygon) {
            (Shape::Circle { centre, radius_m }, _) => {
                // A great-circle distance is never shorter than its change of latitude (the
                // haversine's first term alone), so a point further north or south than the
                // radius is outside; the slack keeps rounding on the outside. No bound on
                // longitude, whose degrees shrink towards the poles.
                let dlat = (radius_m / EARTH_RADIUS_M).to_degrees() * (1.0 + 1e-6) + 1e-9;
                Bounds {
                    south: centre.lat - dlat,
                    north: centre.lat + dlat,
                    west: f64::NEG_INFINITY,
                    east: f64::INFINITY,
                    is_the_shape: false,
                }
            }
            (_, Some(polygon)) => {
                // The ring's own extremes: a point beyond them crosses no side (winding number
                // zero) and lies on none.
                let ring = polygon.exterior();
                let fold = |f: fn(f64, f64) -> f64, start: f64, axis: fn(&Coord<f64>) -> f64| {
                    ring.coords().map(axis).fold(start, f)
                };
                Bounds {
                    south: fold(f64::min, f64::INFINITY, |c| c.y),
                    north: fold(f64::max, f64::NEG_INFINITY, |c| c.y),
                    west: fold(f64::min, f64::INFINITY, |c| c.x),
                    east: fold(f64::max, f64::NEG_INFINITY, |c| c.x),
                    is_the_shape: matches!(shape, Shape::Square { .. }),
                }
            }
            (_, None) => Bounds {
                south: f64::INFINITY,
                north: f64::NEG_INFINITY,
                west: f64::INFINITY,
                east: f64::NEG_INFINITY,
                is_the_shape: false,
            },
        }
    }

    /// Whether `p` may be inside (`false`: surely outside). NaN is never outside: the exact
    /// test decides it.
    #[inline]
    fn may_hold(&self, p: LatLon) -> bool {
        !(p.lat < self.south || p.lat > self.north || p.lon < self.west || p.lon > self.east)
    }

    /// `Some(inside)` when the box alone decides.
    #[inline]
    fn decide(&self, p: LatLon) -> Option<bool> {
        if !self.may_hold(p) {
            return Some(false);
        }
        self.is_the_shape.then_some(
            self.south < p.lat && p.lat < self.north && self.west < p.lon && p.lon < self.east,
        )
    }
}

impl Geofence {
    pub fn new(name: String, kind: String, shape: Shape, speed_limit_kmh: Option<f64>) -> Self {
        let polygon = match &shape {
            Shape::Square { .. } | Shape::Polygon { .. } => Some(to_polygon(&ring(&shape))),
            Shape::Circle { .. } => None,
        };
        let bounds = Bounds::of(&shape, polygon.as_ref());
        Geofence {
            name,
            kind,
            shape,
            speed_limit_kmh,
            polygon,
            bounds,
        }
    }

    #[inline]
    pub fn contains(&self, p: LatLon) -> bool {
        self.bounds
            .decide(p)
            .unwrap_or_else(|| self.contains_exactly(p))
    }

    /// The containment rule itself, without the shortcut of [`Bounds`].
    fn contains_exactly(&self, p: LatLon) -> bool {
        match (&self.shape, &self.polygon) {
            (Shape::Circle { centre, radius_m }, _) => distance_m(*centre, p) <= *radius_m,
            (_, Some(polygon)) => polygon.contains(&p.point()),
            (_, None) => false,
        }
    }

    /// How far `p` lies from the fence's edge, metres (inside or out): a circle's from its
    /// radius, a square's or polygon's from the nearest side.
    pub fn edge_distance_m(&self, p: LatLon) -> f64 {
        self.edge_distance_m_at(p, crate::geometry::earth::cos_lat(p))
    }

    /// [`Geofence::edge_distance_m`] with `p`'s `earth::cos_lat` already known (the same
    /// metres): a caller measuring one point against several fences computes it once.
    pub fn edge_distance_m_at(&self, p: LatLon, cos_lat: f64) -> f64 {
        if let Shape::Circle { centre, radius_m } = &self.shape {
            return circle_edge_m(*centre, *radius_m, p);
        }
        // The polygon's ring is the outline (built from it at `new`): read in place, not
        // rebuilt for every fix the engine measures. The same metres as from `outline()`.
        let Some(polygon) = &self.polygon else {
            return f64::INFINITY;
        };
        polygon
            .exterior()
            .0
            .windows(2)
            .map(|side| {
                let vertex = |c: &Coord<f64>| LatLon::new(c.y, c.x);
                segment_distance_m(p, cos_lat, vertex(&side[0]), vertex(&side[1]))
            })
            .fold(f64::INFINITY, f64::min)
    }

    /// Whether the outline reaches past longitude ±180° or has a side spanning more than 180°
    /// of longitude (one whose short way crosses the antimeridian). Containment, edge
    /// distances and the bounds shortcut all work in plain longitudes that never wrap, so such
    /// a fence would hold points on one side only, or the wrong half of the world: the
    /// scenario refuses it.
    pub fn crosses_antimeridian(&self) -> bool {
        let outline = self.outline();
        outline.iter().any(|p| p.lon.abs() > 180.0)
            || outline
                .windows(2)
                .any(|side| (side[1].lon - side[0].lon).abs() > 180.0)
    }

    /// Bounding box of the outline: (south-west, north-east).
    pub fn bbox(&self) -> (LatLon, LatLon) {
        let outline = self.outline();
        let lats = outline.iter().map(|p| p.lat);
        let lons = outline.iter().map(|p| p.lon);
        (
            LatLon::new(
                lats.clone().fold(f64::INFINITY, f64::min),
                lons.clone().fold(f64::INFINITY, f64::min),
            ),
            LatLon::new(
                lats.fold(f64::NEG_INFINITY, f64::max),
                lons.fold(f64::NEG_INFINITY, f64::max),
            ),
        )
    }

    /// The centre (centroid of the vertices for polygons).
    pub fn centre(&self) -> LatLon {
        match &self.shape {
            Shape::Square { centre, .. } | Shape::Circle { centre, .. } => *centre,
            Shape::Polygon { vertices } => {
                let n = vertices.len().max(1) as f64;
                LatLon::new(
                    vertices.iter().map(|v| v.lat).sum::<f64>() / n,
                    vertices.iter().map(|v| v.lon).sum::<f64>() / n,
                )
            }
        }
    }

    /// The outline as a closed ring of vertices (a 64-gon for circles), for maps and WKT.
    pub fn outline(&self) -> Vec<LatLon> {
        ring(&self.shape)
    }

    /// Standard WKT in lon-lat order (the outline for every shape).
    pub fn wkt(&self) -> String {
        let points: Vec<String> = self
            .outline()
            .iter()
            .map(|p| format!("{} {}", p.lon, p.lat))
            .collect();
        format!("POLYGON (({}))", points.join(", "))
    }

    pub fn shape_name(&self) -> &'static str {
        match self.shape {
            Shape::Square { .. } => "cuadrado",
            Shape::Circle { .. } => "circulo",
            Shape::Polygon { .. } => "poligono",
        }
    }
}

fn ring(shape: &Shape) -> Vec<LatLon> {
    let mut ring = match shape {
        Shape::Square {
            centre,
            half_side_m,
        } => {
            let dlat = half_side_m / M_PER_DEG_LAT;
            let dlon = half_side_m / (M_PER_DEG_LAT * centre.lat.to_radians().cos());
            vec![
                LatLon::new(centre.lat - dlat, centre.lon - dlon),
                LatLon::new(centre.lat - dlat, centre.lon + dlon),
                LatLon::new(centre.lat + dlat, centre.lon + dlon),
                LatLon::new(centre.lat + dlat, centre.lon - dlon),
            ]
        }
        Shape::Circle { centre, radius_m } => (0..64)
            .map(|i| {
                crate::geometry::earth::destination(*centre, i as f64 * 360.0 / 64.0, *radius_m)
            })
            .collect(),
        Shape::Polygon { vertices } => vertices.clone(),
    };
    if ring.first() != ring.last()
        && let Some(first) = ring.first().copied()
    {
        ring.push(first);
    }
    ring
}

/// The vertices of `POLYGON ((lon lat, …))` (the closing vertex dropped).
fn parse_wkt_ring(wkt: &str) -> Option<Vec<LatLon>> {
    let inner = wkt
        .trim()
        .strip_prefix("POLYGON")?
        .trim()
        .strip_prefix("((")?
        .strip_suffix("))")?;
    let mut points: Vec<LatLon> = inner
        .split(',')
        .map(|pair| {
            let mut numbers = pair.split_whitespace().map(str::parse::<f64>);
            match (numbers.next(), numbers.next()) {
                (Some(Ok(lon)), Some(Ok(lat))) => Some(LatLon::new(lat, lon)),
                _ => None,
            }
        })
        .collect::<Option<_>>()?;
    if points.len() > 1 && points.first() == points.last() {
        points.pop();
    }
    (points.len() >= 3).then_some(points)
}

fn to_polygon(ring: &[LatLon]) -> Polygon<f64> {
    let coords: Vec<Coord<f64>> = ring.iter().map(|p| Coord { x: p.lon, y: p.lat }).collect();
    Polygon::new(LineString::from(coords), Vec::new())
}

/// The speed limit that applies to a vehicle whose own limit is `vehicle_kmh`, given the
/// limits of the fences it is inside: the strictest fence limit, else its own. The engine
/// flags overspeed by this rule and the map colours the track by it.
pub fn applicable_limit_kmh(vehicle_kmh: f64, inside: impl IntoIterator<Item = f64>) -> f64 {
    inside.into_iter().reduce(f64::min).unwrap_or(vehicle_kmh)
}

/// Twice the signed area of a ring in squared degrees; zero means degenerate.
pub fn ring_area_deg2(vertices: &[LatLon]) -> f64 {
    let n = vertices.len();
    (0..n)
        .map(|i| {
            let (a, b) = (vertices[i], vertices[(i + 1) % n]);
            a.lon * b.lat - b.lon * a.lat
        })
        .sum::<f64>()
        .abs()
}

/// How far `p` lies from the edge of the circle around `centre`, metres. Not inlined: inlined
/// into a loop over fences, the haversine's cosine of `p`'s latitude is hoisted before the
/// loop and computed for every point the caller sees, even when no fence asks for a depth.
#[inline(never)]
fn circle_edge_m(centre: LatLon, radius_m: f64, p: LatLon) -> f64 {
    (radius_m - distance_m(centre, p)).abs()
}

/// Distance from `p` to the segment `a`–`b`, metres, on a local plane around `p` (exact for
/// the sides of fences a few kilometres across). `cos_lat` is the cosine of `p`'s latitude,
/// computed once for all sides: the same arithmetic as `local_m(p, a)`.
fn segment_distance_m(p: LatLon, cos_lat: f64, a: LatLon, b: LatLon) -> f64 {
    let local = |q: LatLon| {
        (
            (q.lon - p.lon) * M_PER_DEG_LAT * cos_lat,
            (q.lat - p.lat) * M_PER_DEG_LAT,
        )
    };
    let (ax, ay) = local(a);
    let (bx, by) = local(b);
    let (dx, dy) = (bx - ax, by - ay);
    let length2 = dx * dx + dy * dy;
    let t = if length2 > 0.0 {
        (-(ax * dx + ay * dy) / length2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    norm_m(ax + t * dx, ay + t * dy)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::geometry::earth::lerp;

    /// The CEDIS Zona 12 depot of the shipped scenarios: a square, for tests elsewhere too.
    pub(crate) fn cedis() -> Geofence {
        Geofence::new(
            "CEDIS Zona 12".into(),
            "bodega".into(),
            Shape::Square {
                centre: LatLon::new(14.585, -90.545),
                half_side_m: 260.0,
            },
            None,
        )
    }

    #[test]
    fn square_matches_the_flat_degree_corners() {
        let ring = cedis().outline();
        // With 111,320 m to the degree: lon -90.547413…-90.542587, lat 14.582664…14.587336;
        // the mean-sphere figure differs by under a metre.
        assert!((ring[0].lat - 14.582664).abs() < 1e-5, "{:?}", ring[0]);
        assert!((ring[0].lon - -90.547413).abs() < 1e-5, "{:?}", ring[0]);
        assert_eq!(ring.first(), ring.last());
    }

    #[test]
    fn stored_polygons_round_trip_exactly() {
        let vertices = vec![
            LatLon::new(14.6001234567, -90.51),
            LatLon::new(14.61, -90.5),
            LatLon::new(14.59, -90.49),
        ];
        let fence = Geofence::new(
            "p".into(),
            "x".into(),
            Shape::Polygon {
                vertices: vertices.clone(),
            },
            None,
        );
        let wkt = fence.wkt();
        let columns = ShapeColumns {
            form: "poligono",
            centre: fence.centre(),
            half_side_m: None,
            radius_m: None,
            wkt: &wkt,
        };
        assert_eq!(
            Shape::from_columns(&columns),
            Some(Shape::Polygon { vertices })
        );
        assert_eq!(
            Shape::from_columns(&ShapeColumns {
                wkt: "POINT (1 2)",
                ..columns
            }),
            None
        );
    }

    #[test]
    fn containment_for_each_shape() {
        let fence = cedis();
        assert!(fence.contains(LatLon::new(14.585, -90.545)));
        assert!(fence.contains(LatLon::new(14.5871, -90.5426)));
        assert!(!fence.contains(LatLon::new(14.5880, -90.545)));
        let circle = Geofence::new(
            "c".into(),
            "x".into(),
            Shape::Circle {
                centre: LatLon::new(14.6, -90.5),
                radius_m: 100.0,
            },
            None,
        );
        assert!(circle.contains(crate::geometry::earth::offset_m(
            LatLon::new(14.6, -90.5),
            0.0,
            99.0
        )));
        assert!(!circle.contains(crate::geometry::earth::offset_m(
            LatLon::new(14.6, -90.5),
            0.0,
            101.0
        )));
        let triangle = Geofence::new(
            "t".into(),
            "x".into(),
            Shape::Polygon {
                vertices: vec![
                    LatLon::new(0.0, 0.0),
                    LatLon::new(0.0, 1.0),
                    LatLon::new(1.0, 0.0),
                ],
            },
            None,
        );
        assert!(triangle.contains(LatLon::new(0.2, 0.2)));
        assert!(!triangle.contains(LatLon::new(0.8, 0.8)));
        assert_eq!(triangle.wkt(), "POLYGON ((0 0, 1 0, 0 1, 0 0))");
    }

    /// The bounding-box shortcut never changes an answer: points around each shape — on a
    /// grid, on and next to every vertex and side, and at the circle's north and south edge
    /// where the latitude bound is tightest — are inside exactly when the full test says so.
    #[test]
    fn the_bounds_shortcut_answers_as_the_exact_test() {
        use crate::geometry::earth::{destination, offset_m};
        let centre = LatLon::new(14.6, -90.5);
        let fences = [
            cedis(),
            Geofence::new(
                "c".into(),
                "x".into(),
                Shape::Circle {
                    centre,
                    radius_m: 300.0,
                },
                None,
            ),
            Geofence::new(
                "l".into(),
                "x".into(),
                Shape::Polygon {
                    vertices: vec![
                        offset_m(centre, -200.0, -200.0),
                        offset_m(centre, 200.0, -200.0),
                        offset_m(centre, 200.0, -50.0),
                        offset_m(centre, 0.0, 0.0),
                        offset_m(centre, -50.0, 200.0),
                        offset_m(centre, -200.0, 150.0),
                    ],
                },
                None,
            ),
        ];
        let mut checked = 0;
        let mut inside = 0;
        for fence in &fences {
            let mut points: Vec<LatLon> = Vec::new();
            let middle = fence.centre();
            for i in -40..=40 {
                for j in -40..=40 {
                    points.push(offset_m(middle, f64::from(i) * 10.0, f64::from(j) * 10.0));
                }
            }
            let outline = fence.outline();
            for side in outline.windows(2) {
                for k in 0..=8 {
                    points.push(lerp(side[0], side[1], f64::from(k) / 8.0));
                }
            }
            if let Shape::Circle { centre, radius_m } = fence.shape {
                for bearing in [0.0, 180.0] {
                    for shift_m in [-1e-3, -1e-6, 0.0, 1e-6, 1e-3] {
                        points.push(destination(centre, bearing, radius_m + shift_m));
                    }
                }
            }
            let nudged: Vec<LatLon> = points
                .iter()
                .flat_map(|p| {
                    [
                        *p,
                        LatLon::new(p.lat.next_up(), p.lon),
                        LatLon::new(p.lat.next_down(), p.lon),
                        LatLon::new(p.lat, p.lon.next_up()),
                        LatLon::new(p.lat, p.lon.next_down()),
                    ]
                })
                .collect();
            for p in nudged {
                let exact = fence.contains_exactly(p);
                assert_eq!(fence.contains(p), exact, "{} at {p:?}", fence.name);
                checked += 1;
                inside += usize::from(exact);
            }
        }
        assert!(
            inside > 1_000 && checked - inside > 1_000,
            "{inside} of {checked}"
        );
    }

    /// The metres to the edge are bit for bit those of the plain rule — the nearest side of
    /// the outline on the plane of `local_m` around the point — as detections store them.
    #[test]
    fn edge_distance_is_the_outlines_to_the_bit() {
        use crate::geometry::earth::{local_m, offset_m};
        let plain = |fence: &Geofence, p: LatLon| {
            fence
                .outline()
                .windows(2)
                .map(|side| {
                    let (ax, ay) = local_m(p, side[0]);
                    let (bx, by) = local_m(p, side[1]);
                    let (dx, dy) = (bx - ax, by - ay);
                    let length2 = dx * dx + dy * dy;
                    let t = if length2 > 0.0 {
                        (-(ax * dx + ay * dy) / length2).clamp(0.0, 1.0)
                    } else {
                        0.0
                    };
                    norm_m(ax + t * dx, ay + t * dy)
                })
                .fold(f64::INFINITY, f64::min)
        };
        let centre = LatLon::new(14.6419, -90.5133);
        let shapes = [
            cedis(),
            Geofence::new(
                "t".into(),
                "x".into(),
                Shape::Polygon {
                    vertices: vec![
                        offset_m(centre, -300.0, -100.0),
                        offset_m(centre, 250.0, -180.0),
                        offset_m(centre, 20.0, 400.0),
                    ],
                },
                None,
            ),
        ];
        for fence in &shapes {
            for i in -30..=30 {
                for j in -30..=30 {
                    let p = offset_m(fence.centre(), f64::from(i) * 13.7, f64::from(j) * 11.3);
                    let (fast, slow) = (fence.edge_distance_m(p), plain(fence, p));
                    assert_eq!(fast.to_bits(), slow.to_bits(), "{p:?}: {fast} {slow}");
                }
            }
        }
    }

    #[test]
    fn edge_distance_is_to_the_nearest_side() {
        use crate::geometry::earth::offset_m;
        let depot = cedis();
        let centre = LatLon::new(14.585, -90.545);
        // 260 m half side: 100 m east of the centre is 160 m from the east side.
        let inside = depot.edge_distance_m(offset_m(centre, 100.0, 0.0));
        assert!((inside - 160.0).abs() < 1.0, "{inside}");
        let outside = depot.edge_distance_m(offset_m(centre, 0.0, 300.0));
        assert!((outside - 40.0).abs() < 1.0, "{outside}");
        let circle = Geofence::new(
            "c".into(),
            "x".into(),
            Shape::Circle {
                centre,
                radius_m: 200.0,
            },
            None,
        );
        let near_centre = circle.edge_distance_m(offset_m(centre, 50.0, 0.0));
        assert!((near_centre - 150.0).abs() < 1.0, "{near_centre}");
    }
}
