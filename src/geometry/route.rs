//! Delivery routes: the `rutas/*.json` file format, its validation, and geometry along it.
//!
//! Owns reading and checking a route file (the polyline decodes, stops lie near the line and
//! in order, the first and last stop sit on the line's ends) and answering "where is the point
//! `s` metres along this route, and which way does it face", plus the file's exact text form.
//! Fetching geometry belongs to `directions`, and the folder as `flota rutas` works on it to
//! `route_files.rs`, not here. Format: docs/rutas.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::geometry::earth::{
    LatLon, bearing_deg_at, distance_m, distance_m_at, farther_than_m, lat_sin_cos, lerp,
    local_m_at,
};

/// Polyline precision used by every route file (Google's format, 5 decimals).
pub const POLYLINE_PRECISION: u32 = 5;
/// A stop farther than this from the line is an error. Delivery points may sit off the
/// routed street: in the shipped routes `aeropuerto` is 178 m from its line, `san_cristobal`
/// 162 m.
pub const MAX_STOP_OFFSET_M: f64 = 250.0;
/// The first and last stop must be this close to the line's ends.
pub const MAX_END_OFFSET_M: f64 = 100.0;
/// Routed distance and polyline length may disagree by this fraction at most.
pub const MAX_LENGTH_MISMATCH: f64 = 0.2;

/// A route file as stored (Spanish keys, see docs/rutas.md).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RouteFile {
    pub nombre: String,
    /// Where the geometry came from: `osrm`, `google_directions`, `manual`…
    pub fuente: String,
    pub paradas: Vec<StopFile>,
    pub distancia_m: u64,
    pub duracion_s: u64,
    /// Google encoded polyline, precision 1e-5, lat/lon pairs.
    pub polilinea: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StopFile {
    pub nombre: String,
    pub lat: f64,
    pub lon: f64,
}

/// Why a line crossing the antimeridian (longitude ±180°) is refused, naming the first
/// segment that does, or `None`. Positions along a route are interpolated in degrees
/// (`earth::lerp`) and the whole crate measures and offsets in plain longitudes, none of it
/// wrapping at ±180°, while a great-circle length takes the short way across: a segment from
/// 179.99° to −179.99° would be 2 km long on paper and driven the other way round the world
/// (hundreds of thousands of phantom kilometres). A segment spanning more than 180° of
/// longitude is exactly one whose short way crosses the antimeridian.
pub fn antimeridian_crossing(points: &[LatLon]) -> Option<String> {
    let index = points
        .windows(2)
        .position(|pair| (pair[1].lon - pair[0].lon).abs() > 180.0)?;
    let (a, b) = (points[index], points[index + 1]);
    Some(format!(
        "la polilínea cruza el antimeridiano (longitud ±180°) entre el vértice n.º {} \
         ({:.5}, {:.5}) y el n.º {} ({:.5}, {:.5}); flota no admite rutas que lo crucen \
         (calcula en grados de longitud sin dar la vuelta en ±180°): trace la ruta a un solo \
         lado del meridiano 180",
        index + 1,
        a.lat,
        a.lon,
        index + 2,
        b.lat,
        b.lon
    ))
}

/// A stop placed on its route.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteStop {
    pub name: String,
    pub position: LatLon,
    /// Distance along the route where the vehicle halts for it.
    pub along_m: f64,
    /// How far the stop's coordinates are from the line.
    pub offset_m: f64,
}

/// A polyline's measures: the cumulative great-circle distance at each point, each side's
/// bearing, and each point's latitude cosine. Each point's sine and cosine are taken once, not
/// once for each of the two sides it bounds: the same metres and degrees, bit for bit
/// (`earth::distance_m_at`, `earth::bearing_deg_at`), at a third of the trigonometry. Loading
/// a scenario measures every route and every shortened loop of it before anything else can
/// start (docs/rendimiento.md, session seventeen).
pub struct Line {
    /// `cum_m[0] == 0`.
    pub cum_m: Vec<f64>,
    /// Of each side `[i, i+1]`, degrees.
    pub headings: Vec<f64>,
    pub cosines: Vec<f64>,
}

impl Line {
    pub fn measure(points: &[LatLon]) -> Line {
        let trig: Vec<(f64, f64)> = points.iter().map(|p| lat_sin_cos(*p)).collect();
        let mut cum_m = Vec::with_capacity(points.len());
        let mut headings = Vec::with_capacity(points.len().saturating_sub(1));
        let mut total = 0.0;
        cum_m.push(0.0);
        for i in 1..points.len() {
            let (a, b) = (points[i - 1], points[i]);
            total += distance_m_at(a, trig[i - 1].1, b, trig[i].1);
            cum_m.push(total);
            headings.push(bearing_deg_at(a, trig[i - 1], b, trig[i]));
        }
        Line {
            cum_m,
            headings,
            cosines: trig.into_iter().map(|(_, cos)| cos).collect(),
        }
    }

    pub fn length_m(&self) -> f64 {
        self.cum_m.last().copied().unwrap_or(0.0)
    }
}

/// A decoded, validated route.
#[derive(Debug, Clone)]
pub struct Route {
    pub name: String,
    pub source: String,
    pub polyline: String,
    pub points: Vec<LatLon>,
    /// Cumulative great-circle distance at each point; `cum_m[0] == 0`.
    pub cum_m: Vec<f64>,
    /// Bearing of each segment `[i, i+1]`, degrees.
    pub headings: Vec<f64>,
    pub stops: Vec<RouteStop>,
    pub routed_distance_m: f64,
    pub routed_duration_s: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    #[error("{path}: no se pudo leer: {}", crate::plumbing::spanish::io(.source))]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: JSON inválido: {message}")]
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("{path}: no hay archivos de ruta (*.json)")]
    Empty { path: PathBuf },
}

/// Why an encoded polyline cannot be read, in Spanish (the crate says it in English).
pub fn polyline_problem(err: &polyline::errors::PolylineError) -> String {
    use polyline::errors::PolylineError as P;
    match err {
        P::LatitudeCoordError { coord, idx } => {
            format!("latitud {coord} fuera de rango en la posición {idx}")
        }
        P::LongitudeCoordError { coord, idx } => {
            format!("longitud {coord} fuera de rango en la posición {idx}")
        }
        P::DecodeError { idx } => format!("carácter no válido en la posición {idx}"),
        P::NoLongError { idx } => format!("a la latitud de la posición {idx} le falta la longitud"),
        _ => format!(
            "polilínea no válida{}",
            crate::plumbing::spanish::original(err)
        ),
    }
}

impl RouteFile {
    /// Parses one route file's text (keys and types only; [`Route::from_file`] checks the
    /// geometry).
    pub fn parse(text: &str, path: &Path) -> Result<RouteFile, RouteError> {
        serde_json::from_str(text).map_err(|err| RouteError::Json {
            path: path.to_path_buf(),
            line: err.line(),
            column: err.column(),
            message: crate::plumbing::spanish::json_what(&err),
        })
    }

    /// The file's text as flota writes it (and as the shipped route files are): pretty-printed,
    /// two-space indent, keys in format order, no final newline.
    pub fn to_json(&self) -> String {
        // Serialising plain strings, numbers and lists cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Encodes `points` as this format's polyline.
    pub fn encode(points: &[LatLon]) -> String {
        let line: geo::LineString<f64> = points.iter().map(|p| (p.lon, p.lat)).collect();
        // Encoding only fails for coordinates outside ±90/±180, which callers rule out;
        // an empty string then fails the route's own checks.
        polyline::encode_coordinates(line, POLYLINE_PRECISION).unwrap_or_default()
    }
}

/// Whether `name` can be a route's name and file stem: letters, digits, `_`, `-`, `.`, not
/// starting with a dot, at most 100 characters.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.chars().count() <= 100
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "nombre de ruta inválido '{name}': use letras, dígitos, '_', '-' o '.' \
             (será el nombre del archivo)"
        ))
    }
}

impl Route {
    /// Parses and validates one route file's text.
    pub fn parse(text: &str, path: &Path) -> Result<Route, RouteError> {
        Route::from_file(RouteFile::parse(text, path)?, path)
    }

    pub fn from_file(file: RouteFile, path: &Path) -> Result<Route, RouteError> {
        let invalid = |message: String| RouteError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let line =
            polyline::decode_polyline(&file.polilinea, POLYLINE_PRECISION).map_err(|err| {
                invalid(format!(
                    "la polilínea no se puede decodificar: {}",
                    polyline_problem(&err)
                ))
            })?;
        let mut points: Vec<LatLon> = line.0.iter().map(|c| LatLon::new(c.y, c.x)).collect();
        points.dedup();
        if points.len() < 2 {
            return Err(invalid(
                "la polilínea tiene menos de dos puntos distintos".into(),
            ));
        }
        if let Some(bad) = points
            .iter()
            .find(|p| !(-90.0..=90.0).contains(&p.lat) || !(-180.0..=180.0).contains(&p.lon))
        {
            return Err(invalid(format!(
                "coordenada fuera de rango en la polilínea: {bad:?}"
            )));
        }
        if let Some(problem) = antimeridian_crossing(&points) {
            return Err(invalid(problem));
        }
        let line = Line::measure(&points);
        let total = line.length_m();
        if file.paradas.len() < 2 {
            return Err(invalid(
                "una ruta necesita al menos dos paradas (el depósito al inicio y al final)".into(),
            ));
        }
        if file.distancia_m == 0 || file.duracion_s == 0 {
            return Err(invalid(
                "'distancia_m' y 'duracion_s' deben ser positivos".into(),
            ));
        }
        let mismatch = (total - file.distancia_m as f64).abs() / file.distancia_m as f64;
        if mismatch > MAX_LENGTH_MISMATCH {
            return Err(invalid(format!(
                "'distancia_m' ({} m) no corresponde a la polilínea ({:.0} m)",
                file.distancia_m, total
            )));
        }
        let mut route = Route {
            name: file.nombre.clone(),
            source: file.fuente.clone(),
            polyline: file.polilinea.clone(),
            points,
            cum_m: line.cum_m,
            headings: line.headings,
            stops: Vec::new(),
            routed_distance_m: file.distancia_m as f64,
            routed_duration_s: file.duracion_s as f64,
        };
        route.stops = route
            .place_stops(&file.paradas, &line.cosines)
            .map_err(invalid)?;
        Ok(route)
    }

    /// Places each stop on the line, in order: the first at the start, the last at the end,
    /// each intermediate one at the nearest point after the previous stop (a loop passes the
    /// same street twice; order decides which pass). `cosines`: the cosine of each point's
    /// latitude.
    fn place_stops(&self, stops: &[StopFile], cosines: &[f64]) -> Result<Vec<RouteStop>, String> {
        let last_index = stops.len() - 1;
        let mut placed = Vec::with_capacity(stops.len());
        let mut after_m = 0.0;
        for (index, stop) in stops.iter().enumerate() {
            let position = LatLon::new(stop.lat, stop.lon);
            let (along_m, offset_m) = if index == 0 {
                (0.0, distance_m(position, self.points[0]))
            } else if index == last_index {
                let end = *self.points.last().unwrap_or(&position);
                (self.length_m(), distance_m(position, end))
            } else {
                self.project_after(position, after_m, cosines)
            };
            let limit = if index == 0 || index == last_index {
                MAX_END_OFFSET_M
            } else {
                MAX_STOP_OFFSET_M
            };
            if offset_m > limit {
                let which = if index == 0 {
                    "la primera parada"
                } else if index == last_index {
                    "la última parada"
                } else {
                    "la parada"
                };
                return Err(format!(
                    "{which} '{}' está a {:.0} m de la polilínea (máximo {limit:.0} m)",
                    stop.nombre, offset_m
                ));
            }
            after_m = along_m;
            placed.push(RouteStop {
                name: stop.nombre.clone(),
                position,
                along_m,
                offset_m,
            });
        }
        Ok(placed)
    }

    /// Nearest point on the line at or after `after_m`: (along, distance from the line).
    /// `cosines`: the cosine of each point's latitude.
    fn project_after(&self, p: LatLon, after_m: f64, cosines: &[f64]) -> (f64, f64) {
        let mut best = (after_m, f64::INFINITY);
        for (i, &cos_a) in cosines.iter().enumerate().take(self.points.len() - 1) {
            if self.cum_m[i + 1] < after_m {
                continue;
            }
            let (a, b) = (self.points[i], self.points[i + 1]);
            let (bx, by) = local_m_at(a, cos_a, b);
            let (px, py) = local_m_at(a, cos_a, p);
            let len2 = bx * bx + by * by;
            let t = if len2 > 0.0 {
                ((px * bx + py * by) / len2).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let along = self.cum_m[i] + t * (self.cum_m[i + 1] - self.cum_m[i]);
            if along < after_m {
                continue;
            }
            // Most sides are clearly further than the best so far: cheap bounds say so
            // without the haversine (the same answer, `farther_than_m`).
            let nearest = lerp(a, b, t);
            if farther_than_m(p, nearest, best.1) {
                continue;
            }
            let d = distance_m(p, nearest);
            if d < best.1 {
                best = (along, d);
            }
        }
        best
    }

    pub fn length_m(&self) -> f64 {
        self.cum_m.last().copied().unwrap_or(0.0)
    }

    /// Average speed the directions service planned for this route.
    pub fn base_speed_kmh(&self) -> f64 {
        self.routed_distance_m / self.routed_duration_s * 3.6
    }

    /// The start (first stop) of the route.
    pub fn depot(&self) -> LatLon {
        self.points[0]
    }

    /// Position and heading `along_m` metres along the route (clamped to its ends).
    pub fn at(&self, along_m: f64) -> (LatLon, f64) {
        let index = self.segment_index(along_m);
        self.on_segment(index, along_m)
    }

    /// Index `i` of the segment `[i, i+1]` that holds `along_m`.
    pub fn segment_index(&self, along_m: f64) -> usize {
        let last = self.points.len() - 2;
        match self.cum_m.binary_search_by(|c| c.total_cmp(&along_m)) {
            Ok(i) => i.min(last),
            Err(i) => i.saturating_sub(1).min(last),
        }
    }

    fn on_segment(&self, index: usize, along_m: f64) -> (LatLon, f64) {
        let (a, b) = (self.points[index], self.points[index + 1]);
        let span = self.cum_m[index + 1] - self.cum_m[index];
        let f = if span > 0.0 {
            ((along_m - self.cum_m[index]) / span).clamp(0.0, 1.0)
        } else {
            0.0
        };
        (lerp(a, b, f), self.headings[index])
    }

    /// The segment holding `along_m`, searching forward from `hint` (a cursor kept by the
    /// caller; amortised O(1) for increasing distances). Inlined: the simulator calls it at
    /// every integration step and report, mostly to stay on the same segment.
    #[inline]
    pub fn segment_from(&self, hint: usize, along_m: f64) -> usize {
        let last = self.points.len() - 2;
        let mut index = hint.min(last);
        if along_m < self.cum_m[index] {
            return self.segment_index(along_m);
        }
        while index < last && self.cum_m[index + 1] <= along_m {
            index += 1;
        }
        index
    }

    /// Position and heading on a known segment.
    pub fn at_segment(&self, index: usize, along_m: f64) -> (LatLon, f64) {
        self.on_segment(index, along_m)
    }

    /// A forward-only reader of positions, O(1) amortised for increasing distances.
    pub fn cursor(&self) -> RouteCursor<'_> {
        RouteCursor {
            route: self,
            index: 0,
        }
    }
}

/// Walks a route forwards; moving backwards falls back to a binary search.
pub struct RouteCursor<'a> {
    route: &'a Route,
    index: usize,
}

impl RouteCursor<'_> {
    pub fn at(&mut self, along_m: f64) -> (LatLon, f64) {
        self.index = self.route.segment_from(self.index, along_m);
        self.route.on_segment(self.index, along_m)
    }
}

/// The `*.json` files in `dir`, sorted; none is an error.
pub fn route_paths(dir: &Path) -> Result<Vec<PathBuf>, RouteError> {
    let entries = std::fs::read_dir(dir).map_err(|source| RouteError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(RouteError::Empty {
            path: dir.to_path_buf(),
        });
    }
    Ok(paths)
}

/// A route file's `nombre` must be its file stem.
pub fn check_stem(path: &Path, name: &str) -> Result<(), RouteError> {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    if stem.as_deref() == Some(name) {
        return Ok(());
    }
    Err(RouteError::Invalid {
        path: path.to_path_buf(),
        message: format!(
            "'nombre' es '{name}' pero el archivo se llama '{}'",
            stem.unwrap_or_default()
        ),
    })
}

/// Loads every `*.json` in `dir`, keyed by route name. Names must match their file stems.
pub fn load_dir(dir: &Path) -> Result<BTreeMap<String, Route>, RouteError> {
    let paths = route_paths(dir)?;
    let load = |path: &PathBuf| -> Result<Route, RouteError> {
        let text = std::fs::read_to_string(path).map_err(|source| RouteError::Read {
            path: path.clone(),
            source,
        })?;
        let route = Route::parse(&text, path)?;
        check_stem(path, &route.name)?;
        Ok(route)
    };
    // Parsing and measuring the files was most of a scenario's load (21 of the reference
    // week's 30 M instructions, before any other work can start): file `i` on thread
    // `i % n`, put back in order, so the first error in file order is the one reported, as
    // when they were read one by one.
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, paths.len().max(1));
    let loaded: Vec<Result<Route, RouteError>> = if threads == 1 {
        paths.iter().map(load).collect()
    } else {
        let paths = &paths;
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|first| {
                    scope.spawn(move || {
                        paths
                            .iter()
                            .skip(first)
                            .step_by(threads)
                            .map(load)
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            let mut parts: Vec<_> = handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                        .into_iter()
                })
                .collect();
            (0..paths.len())
                .filter_map(|i| parts[i % threads].next())
                .collect()
        })
    };
    let mut routes = BTreeMap::new();
    for route in loaded {
        let route = route?;
        routes.insert(route.name.clone(), route);
    }
    Ok(routes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped(name: &str) -> Route {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("rutas")
            .join(format!("{name}.json"));
        Route::parse(&std::fs::read_to_string(&path).unwrap(), &path).unwrap()
    }

    #[test]
    fn shipped_files_are_written_back_byte_for_byte() {
        for path in route_paths(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("rutas")).unwrap() {
            let text = std::fs::read_to_string(&path).unwrap();
            let file = RouteFile::parse(&text, &path).unwrap();
            assert_eq!(file.to_json(), text, "{}", path.display());
            // The polyline survives decode and encode.
            let route = Route::from_file(file.clone(), &path).unwrap();
            let again = RouteFile::encode(&route.points);
            let back = Route::from_file(
                RouteFile {
                    polilinea: again,
                    ..file
                },
                &path,
            )
            .unwrap();
            assert_eq!(back.points, route.points, "{}", path.display());
        }
    }

    #[test]
    fn route_names_are_file_stems() {
        for good in ["r01_cedis_z1_z4", "ruta-norte.2", "Zona_18"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "../x", "a/b", ".oculta", "con espacio", "x;rm"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn shipped_routes_load_with_their_recorded_lengths() {
        let routes = load_dir(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("rutas")).unwrap();
        assert_eq!(routes.len(), 10);
        // Great-circle lengths recorded when the routes were drawn (within 0.5 %: that
        // measurement used another mean Earth radius).
        for (name, length) in [
            ("r01_cedis_z1_z4", 18_892.0),
            ("r09_caes_pinula_fraijanes", 56_725.0),
        ] {
            let route = &routes[name];
            assert!(
                (route.length_m() - length).abs() / length < 0.005,
                "{name}: {}",
                route.length_m()
            );
        }
        let r01 = &routes["r01_cedis_z1_z4"];
        assert_eq!(r01.stops.len(), 4);
        assert!(r01.stops.windows(2).all(|w| w[0].along_m < w[1].along_m));
        assert!((r01.base_speed_kmh() - 42.3).abs() < 0.1);
    }

    #[test]
    fn positions_along_the_route() {
        let route = shipped("r02_cedis_z10_cayala");
        let (start, _) = route.at(0.0);
        assert!(distance_m(start, route.depot()) < 1e-6);
        let mut cursor = route.cursor();
        let mut previous = start;
        for step in 1..200 {
            let s = step as f64 * 100.0;
            let (p, heading) = cursor.at(s);
            assert_eq!((p, heading), route.at(s));
            assert!(distance_m(previous, p) <= 100.5, "step {step}");
            previous = p;
        }
        let (end, _) = route.at(route.length_m() + 50.0);
        assert!(distance_m(end, *route.points.last().unwrap()) < 1e-6);
    }

    fn check_invalid(mutate: impl FnOnce(&mut RouteFile), expected: &str) {
        let path = PathBuf::from("rutas/r01_cedis_z1_z4.json");
        let text =
            std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(&path)).unwrap();
        let mut file: RouteFile = serde_json::from_str(&text).unwrap();
        mutate(&mut file);
        let err = Route::from_file(file, &path).unwrap_err().to_string();
        assert!(err.contains(expected), "{err}");
    }

    #[test]
    fn validation_errors_name_the_problem() {
        check_invalid(|f| f.polilinea = "~~~~~".into(), "no se puede decodificar");
        check_invalid(|f| f.paradas.truncate(1), "al menos dos paradas");
        check_invalid(|f| f.paradas[1].lat += 0.01, "la parada 'z1_centro' está a");
        check_invalid(
            |f| f.paradas[0].lon += 0.01,
            "la primera parada 'cedis_z12'",
        );
        check_invalid(|f| f.distancia_m = 5_000, "no corresponde a la polilínea");
        // Taveuni (Fiji), whose coast road crosses the 180th meridian: 6 km on the short way,
        // which is what distancia_m says, so only the crossing check catches it.
        check_invalid(
            |f| {
                let line = [
                    LatLon::new(-16.7700, 179.9850),
                    LatLon::new(-16.7880, 179.9950),
                    LatLon::new(-16.8000, -179.9950),
                    LatLon::new(-16.8150, -179.9850),
                ];
                f.polilinea = RouteFile::encode(&line);
                f.distancia_m = 5_950;
                f.paradas = vec![
                    StopFile {
                        nombre: "matei".into(),
                        lat: -16.77,
                        lon: 179.985,
                    },
                    StopFile {
                        nombre: "somosomo".into(),
                        lat: -16.815,
                        lon: -179.985,
                    },
                ];
            },
            "la polilínea cruza el antimeridiano (longitud ±180°) entre el vértice n.º 2 \
             (-16.78800, 179.99500) y el n.º 3 (-16.80000, -179.99500)",
        );
        let path = PathBuf::from("x.json");
        let err = Route::parse("{\"nombre\": 5}", &path)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("x.json:1:"), "{err}");
    }
}
