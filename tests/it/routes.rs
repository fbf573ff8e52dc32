//! `flota rutas` against loopback mocks of Google's Routes API, its legacy Directions API and
//! an OSRM server: real HTTP through reqwest, requests checked, files written whole or not at
//! all, every fault reported on its own line while the other routes proceed, and the key never
//! shown; and routes made offline from GPX, GeoJSON and KML files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use flota::geometry::earth::{LatLon, distance_m};
use flota::geometry::route::{Route, RouteFile};
use serde_json::{Value, json};

use crate::http_mock::{Mock, Reply, Request};
use crate::support::flota_bin;

const KEY: &str = "CLAVE-SECRETA-9f3k2";

/// A shipped route: its file and its decoded line.
#[derive(Clone)]
struct Seed {
    file: RouteFile,
    points: Vec<LatLon>,
}

fn shipped() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("rutas")
}

fn seeds() -> Vec<Seed> {
    flota::geometry::route::route_paths(&shipped())
        .unwrap()
        .into_iter()
        .map(|path| {
            let file = RouteFile::parse(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
            let points = Route::from_file(file.clone(), &path).unwrap().points;
            Seed { file, points }
        })
        .collect()
}

/// The seed routed through exactly these stops.
fn seed_for(seeds: &[Seed], stops: &[(f64, f64)]) -> Option<Seed> {
    seeds
        .iter()
        .find(|s| {
            s.file.paradas.len() == stops.len()
                && s.file
                    .paradas
                    .iter()
                    .zip(stops)
                    .all(|(p, (lat, lon))| (p.lat - lat).abs() < 1e-9 && (p.lon - lon).abs() < 1e-9)
        })
        .cloned()
}

/// A temp folder holding copies of the named shipped routes.
fn rutas_dir(names: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rutas");
    std::fs::create_dir_all(&dir).unwrap();
    for name in names {
        std::fs::copy(
            shipped().join(format!("{name}.json")),
            dir.join(format!("{name}.json")),
        )
        .unwrap();
    }
    (tmp, dir)
}

fn flota(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(flota_bin());
    command
        .args(args)
        .env_remove("GOOGLE_MAPS_API_KEY")
        .env_remove("FLOTA_OSRM_URL")
        .env_remove("FLOTA_GOOGLE_ROUTES_URL")
        .env_remove("FLOTA_GOOGLE_DIRECTIONS_URL");
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn read_file(dir: &Path, name: &str) -> RouteFile {
    let path = dir.join(format!("{name}.json"));
    RouteFile::parse(&std::fs::read_to_string(&path).unwrap(), &path).unwrap()
}

fn decoded(file: &RouteFile) -> Vec<LatLon> {
    Route::from_file(file.clone(), Path::new("x.json"))
        .unwrap()
        .points
}

fn encode(points: &[LatLon]) -> String {
    RouteFile::encode(points)
}

fn length_m(points: &[LatLon]) -> f64 {
    points.windows(2).map(|p| distance_m(p[0], p[1])).sum()
}

/// Every file in `dir`, for before/after comparisons; also proves no `.parcial` is left.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&path).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

// --- Google's legacy Directions API ----------------------------------------------------

fn google_stops(request: &Request) -> Vec<(f64, f64)> {
    let pair = |s: &str| {
        let (lat, lon) = s.split_once(',').unwrap();
        (lat.parse().unwrap(), lon.parse().unwrap())
    };
    let mut stops = vec![pair(request.param("origin").unwrap())];
    if let Some(waypoints) = request.param("waypoints") {
        stops.extend(waypoints.split('|').map(pair));
    }
    stops.push(pair(request.param("destination").unwrap()));
    stops
}

/// A documented-shape OK answer: one leg per stretch between stops, each leg's geometry in
/// steps of up to 40 points, integer metres and seconds per leg.
fn google_ok(seed: &Seed) -> (String, u64, u64) {
    let points = &seed.points;
    // Split the line at the vertex nearest each intermediate stop, searching forward.
    let mut cuts = vec![0];
    for stop in &seed.file.paradas[1..seed.file.paradas.len() - 1] {
        let here = LatLon::new(stop.lat, stop.lon);
        let from = *cuts.last().unwrap();
        let best = (from..points.len())
            .min_by(|a, b| distance_m(points[*a], here).total_cmp(&distance_m(points[*b], here)))
            .unwrap();
        cuts.push(best);
    }
    cuts.push(points.len() - 1);
    let (mut total_m, mut total_s) = (0, 0);
    let legs: Vec<Value> = cuts
        .windows(2)
        .map(|w| {
            let leg = &points[w[0]..=w[1]];
            // Steps of up to 40 segments, each starting where the previous ended.
            let steps: Vec<Value> = (0..leg.len() - 1)
                .step_by(40)
                .map(|start| {
                    let part = &leg[start..=(start + 40).min(leg.len() - 1)];
                    json!({"polyline": {"points": encode(part)}, "travel_mode": "DRIVING"})
                })
                .collect();
            let metres = length_m(leg).round() as u64;
            let seconds = (metres as f64 / 11.0).round() as u64;
            total_m += metres;
            total_s += seconds;
            json!({
                "distance": {"text": format!("{:.1} km", metres as f64 / 1000.0), "value": metres},
                "duration": {"text": format!("{} min", seconds / 60), "value": seconds},
                "steps": steps
            })
        })
        .collect();
    let waypoints: Vec<Value> = seed
        .file
        .paradas
        .iter()
        .map(|_| json!({"geocoder_status": "OK", "place_id": "x", "types": ["street_address"]}))
        .collect();
    let body = json!({
        "geocoded_waypoints": waypoints,
        "routes": [{
            "summary": "CA-9",
            "overview_polyline": {"points": encode(&[points[0], points[points.len() - 1]])},
            "legs": legs,
            "warnings": [],
            "waypoint_order": []
        }],
        "status": "OK"
    });
    (body.to_string(), total_m, total_s)
}

fn google_error(status: &str, message: Option<&str>, extra: Value) -> Reply {
    let mut body = json!({"status": status, "routes": [], "geocoded_waypoints": []});
    if let Some(m) = message {
        body["error_message"] = json!(m);
    }
    if let Value::Object(more) = extra {
        for (k, v) in more {
            body[k] = v;
        }
    }
    Reply::Json(200, body.to_string())
}

#[test]
fn google_directions_regenerates_routes_that_simulate_unchanged() {
    let seeds = seeds();
    let for_mock = seeds.clone();
    let mock = Mock::start(move |request| {
        let seed = seed_for(&for_mock, &google_stops(request)).unwrap();
        Reply::Json(200, google_ok(&seed).0)
    });
    let (tmp, dir) = rutas_dir(&[
        "r01_cedis_z1_z4",
        "r02_cedis_z10_cayala",
        "r03_vn_amatitlan",
    ]);
    let endpoint = format!("{}/maps/api/directions/json", mock.url);
    let out = flota(
        &[
            "rutas",
            "regenerar",
            "--dir",
            dir.to_str().unwrap(),
            "--proveedor",
            "google-directions",
        ],
        &[
            ("GOOGLE_MAPS_API_KEY", KEY),
            ("FLOTA_GOOGLE_DIRECTIONS_URL", &endpoint),
        ],
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("3 reescritas, 0 sin cambios, 0 con error"),
        "{err}"
    );
    assert!(!err.contains(KEY), "{err}");

    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(request.method, "GET");
        assert_eq!(request.path, "/maps/api/directions/json");
        assert_eq!(request.param("key"), Some(KEY));
        assert_eq!(request.param("mode"), Some("driving"));
        assert!(
            request.headers["user-agent"].starts_with("flota/"),
            "{request:?}"
        );
    }
    // Coordinates are lat,lon; waypoints are the intermediate stops in order, '|'-joined.
    let r01 = requests
        .iter()
        .find(|r| r.param("waypoints") == Some("14.6419,-90.5133|14.621,-90.516"))
        .expect("r01's request with its two waypoints in order");
    assert_eq!(r01.param("origin"), Some("14.585,-90.545"));
    assert_eq!(r01.param("destination"), Some("14.585,-90.545"));

    for seed in &seeds[..3] {
        let name = &seed.file.nombre;
        let written = read_file(&dir, name);
        let (_, metres, seconds) = google_ok(seed);
        assert_eq!(written.fuente, "google_directions", "{name}");
        assert_eq!(written.paradas, seed.file.paradas, "{name}: stops kept");
        assert_eq!(written.distancia_m, metres, "{name}: legs summed");
        assert_eq!(written.duracion_s, seconds, "{name}");
        // The geometry is every step joined, not the two-point overview.
        assert_eq!(decoded(&written), seed.points, "{name}");
        let raw = std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap();
        assert!(!raw.contains(KEY));
    }

    // The regenerated routes feed the simulator as they are.
    simulate_minimo(tmp.path());
}

/// `minimo` simulated with the routes in `root/rutas`.
fn simulate_minimo(root: &Path) {
    let scenario = root.join("escenarios").join("minimo.toml");
    std::fs::create_dir_all(scenario.parent().unwrap()).unwrap();
    std::fs::copy(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("escenarios/minimo.toml"),
        &scenario,
    )
    .unwrap();
    let db = root.join("flota.db");
    let out = flota(
        &[
            "simular",
            scenario.to_str().unwrap(),
            "--ahora",
            "2026-08-19T15:30",
            "--salida",
            db.to_str().unwrap(),
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(db.exists());
}

#[test]
fn google_statuses_fail_their_route_only_and_write_nothing() {
    let seeds = seeds();
    let for_mock = seeds.clone();
    let mock = Mock::start(move |request| {
        let seed = seed_for(&for_mock, &google_stops(request)).unwrap();
        match seed.file.nombre.as_str() {
            "r01_cedis_z1_z4" => google_error(
                "REQUEST_DENIED",
                Some("The provided API key is invalid."),
                json!({}),
            ),
            "r02_cedis_z10_cayala" => google_error(
                "OVER_QUERY_LIMIT",
                Some("You have exceeded your rate-limit for this API."),
                json!({}),
            ),
            "r03_vn_amatitlan" => google_error("ZERO_RESULTS", None, json!({})),
            "r04_vn_boca_cedis" => google_error(
                "NOT_FOUND",
                None,
                json!({"geocoded_waypoints": [
                    {"geocoder_status": "OK"}, {"geocoder_status": "ZERO_RESULTS"},
                    {"geocoder_status": "OK"}, {"geocoder_status": "OK"}
                ]}),
            ),
            "r05_mixco_sancristobal_z7" => google_error(
                "INVALID_REQUEST",
                Some("Invalid request. Invalid 'waypoints' parameter."),
                json!({}),
            ),
            // What a key of a project created today gets from the legacy service.
            "r07_z18_centro_z4" => google_error(
                "REQUEST_DENIED",
                Some(
                    "You're calling a legacy API, which is not enabled for your project. To get newer features and more functionality, switch to the Places API (New) or Routes API. Learn more: https://developers.google.com/maps/legacy#LegacyApiNotActivatedMapError",
                ),
                json!({}),
            ),
            _ => Reply::Json(200, google_ok(&seed).0),
        }
    });
    let names = [
        "r01_cedis_z1_z4",
        "r02_cedis_z10_cayala",
        "r03_vn_amatitlan",
        "r04_vn_boca_cedis",
        "r05_mixco_sancristobal_z7",
        "r06_mixco_miraflores_z1",
        "r07_z18_centro_z4",
    ];
    let (_tmp, dir) = rutas_dir(&names);
    let before = snapshot(&dir);
    let out = flota(
        &[
            "rutas",
            "regenerar",
            "--dir",
            dir.to_str().unwrap(),
            "--proveedor",
            "google-directions",
            "--url",
            &format!("{}/maps/api/directions/json", mock.url),
            "--reintentos",
            "1",
        ],
        &[("GOOGLE_MAPS_API_KEY", KEY)],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains(KEY), "{err}");
    let line = |name: &str| {
        err.lines()
            .find(|l| l.starts_with(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no line for {name}: {err}"))
            .to_owned()
    };
    for (name, needle) in [
        (
            "r01_cedis_z1_z4",
            "REQUEST_DENIED: The provided API key is invalid.",
        ),
        ("r02_cedis_z10_cayala", "OVER_QUERY_LIMIT"),
        ("r03_vn_amatitlan", "ZERO_RESULTS"),
        ("r04_vn_boca_cedis", "'boca_del_monte'"),
        (
            "r05_mixco_sancristobal_z7",
            "INVALID_REQUEST: Invalid request.",
        ),
        (
            "r07_z18_centro_z4",
            "habilite la Routes API para la clave en la consola de Google Cloud y use el \
             proveedor por defecto (--proveedor google)",
        ),
    ] {
        let l = line(name);
        assert!(l.contains("error:") && l.contains(needle), "{l}");
    }
    assert!(line("r02_cedis_z10_cayala").contains("tras 2 intentos"));
    assert!(line("r06_mixco_miraflores_z1").contains("google_directions"));
    assert!(
        err.contains("1 reescritas, 0 sin cambios, 6 con error"),
        "{err}"
    );

    // Retries are bounded: one retry for the rate-limited route, none for the others.
    let per_route = |name: &str| {
        mock.requests()
            .iter()
            .filter(|r| seed_for(&seeds, &google_stops(r)).unwrap().file.nombre == name)
            .count()
    };
    assert_eq!(per_route("r02_cedis_z10_cayala"), 2);
    assert_eq!(per_route("r01_cedis_z1_z4"), 1);

    // Failed routes are byte-identical; only r06 changed; no temp file left behind.
    let after = snapshot(&dir);
    assert_eq!(after.len(), before.len());
    for ((name, old), (name2, new)) in before.iter().zip(&after) {
        assert_eq!(name, name2);
        assert_eq!(old == new, !name.starts_with("r06"), "{name}");
    }
}

// --- Google's Routes API (computeRoutes) ------------------------------------------------

/// The stops of a `computeRoutes` body: origin, intermediates, destination, as (lat, lon).
fn routes_stops(request: &Request) -> Vec<(f64, f64)> {
    let body = request.json();
    let at = |w: &Value| {
        let ll = &w["location"]["latLng"];
        (
            ll["latitude"].as_f64().unwrap(),
            ll["longitude"].as_f64().unwrap(),
        )
    };
    let mut stops = vec![at(&body["origin"])];
    if let Some(middle) = body["intermediates"].as_array() {
        stops.extend(middle.iter().map(at));
    }
    stops.push(at(&body["destination"]));
    stops
}

/// A documented-shape answer to the field mask flota sends: the route's distance, duration
/// (a protobuf Duration string) and encoded polyline, and one leg per stretch.
fn routes_ok(seed: &Seed) -> (String, u64, u64) {
    let metres = length_m(&seed.points).round() as u64;
    let seconds = (metres as f64 / 11.0).round() as u64;
    let legs: Vec<Value> = (1..seed.file.paradas.len())
        .map(|_| json!({"distanceMeters": metres / (seed.file.paradas.len() as u64 - 1)}))
        .collect();
    let body = json!({"routes": [{
        "legs": legs,
        "distanceMeters": metres,
        "duration": format!("{seconds}s"),
        "polyline": {"encodedPolyline": encode(&seed.points)}
    }]});
    (body.to_string(), metres, seconds)
}

/// A `google.rpc.Status` error as the Routes API sends it.
fn routes_error(code: u16, status: &str, message: &str, reason: Option<&str>) -> Reply {
    let details: Vec<Value> = reason
        .map(|r| {
            json!({"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": r,
                   "domain": "googleapis.com", "metadata": {"service": "routes.googleapis.com"}})
        })
        .into_iter()
        .collect();
    Reply::Json(
        code,
        json!({"error": {"code": code, "message": message, "status": status, "details": details}})
            .to_string(),
    )
}

#[test]
fn google_routes_is_the_default_and_regenerates_routes_that_simulate_unchanged() {
    let seeds = seeds();
    let for_mock = seeds.clone();
    let mock = Mock::start(move |request| {
        let seed = seed_for(&for_mock, &routes_stops(request)).unwrap();
        Reply::Json(200, routes_ok(&seed).0)
    });
    let (tmp, dir) = rutas_dir(&[
        "r01_cedis_z1_z4",
        "r02_cedis_z10_cayala",
        "r03_vn_amatitlan",
    ]);
    let endpoint = format!("{}/directions/v2:computeRoutes", mock.url);
    let out = flota(
        &["rutas", "regenerar", "--dir", dir.to_str().unwrap()],
        &[
            ("GOOGLE_MAPS_API_KEY", KEY),
            ("FLOTA_GOOGLE_ROUTES_URL", &endpoint),
        ],
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("con Google Routes API en"), "{err}");
    assert!(
        err.contains("3 reescritas, 0 sin cambios, 0 con error"),
        "{err}"
    );
    assert!(!err.contains(KEY), "{err}");

    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/directions/v2:computeRoutes");
        assert!(
            request.query.is_empty(),
            "the key is not in the URL: {request:?}"
        );
        assert_eq!(request.headers["x-goog-api-key"], KEY);
        let mask = &request.headers["x-goog-fieldmask"];
        for field in [
            "routes.distanceMeters",
            "routes.duration",
            "routes.polyline.encodedPolyline",
        ] {
            assert!(mask.split(',').any(|f| f == field), "{mask}");
        }
        assert_eq!(request.headers["content-type"], "application/json");
        let body = request.json();
        assert_eq!(body["travelMode"], "DRIVE");
        assert_eq!(body["polylineEncoding"], "ENCODED_POLYLINE");
    }
    // Waypoints are lat/lng objects; the intermediates are the middle stops, in order.
    let r01 = requests
        .iter()
        .find(|r| routes_stops(r).len() == 4 && routes_stops(r)[1] == (14.6419, -90.5133))
        .expect("r01's request");
    assert_eq!(
        routes_stops(r01),
        [
            (14.585, -90.545),
            (14.6419, -90.5133),
            (14.621, -90.516),
            (14.585, -90.545)
        ]
    );

    for seed in &seeds[..3] {
        let name = &seed.file.nombre;
        let written = read_file(&dir, name);
        let (_, metres, seconds) = routes_ok(seed);
        assert_eq!(written.fuente, "google_routes", "{name}");
        assert_eq!(written.paradas, seed.file.paradas, "{name}: stops kept");
        assert_eq!(written.distancia_m, metres, "{name}");
        assert_eq!(written.duracion_s, seconds, "{name}");
        assert_eq!(decoded(&written), seed.points, "{name}");
    }
    simulate_minimo(tmp.path());
}

#[test]
fn google_routes_errors_fail_their_route_only_and_write_nothing() {
    let seeds = seeds();
    let for_mock = seeds.clone();
    let mock = Mock::start(move |request| {
        let seed = seed_for(&for_mock, &routes_stops(request)).unwrap();
        match seed.file.nombre.as_str() {
            "r01_cedis_z1_z4" => routes_error(
                400,
                "INVALID_ARGUMENT",
                "API key not valid. Please pass a valid API key.",
                Some("API_KEY_INVALID"),
            ),
            "r02_cedis_z10_cayala" => routes_error(
                403,
                "PERMISSION_DENIED",
                "Routes API has not been used in project 123456 before or it is disabled.",
                Some("SERVICE_DISABLED"),
            ),
            "r03_vn_amatitlan" => routes_error(
                429,
                "RESOURCE_EXHAUSTED",
                "Quota exceeded for quota metric 'Compute Routes requests'.",
                Some("RATE_LIMIT_EXCEEDED"),
            ),
            // No road joins the stops: the documented empty answer.
            "r04_vn_boca_cedis" => Reply::Json(200, "{}".into()),
            "r05_mixco_sancristobal_z7" => routes_error(
                400,
                "INVALID_ARGUMENT",
                "Invalid JSON payload received.",
                None,
            ),
            _ => Reply::Json(200, routes_ok(&seed).0),
        }
    });
    let names = [
        "r01_cedis_z1_z4",
        "r02_cedis_z10_cayala",
        "r03_vn_amatitlan",
        "r04_vn_boca_cedis",
        "r05_mixco_sancristobal_z7",
        "r06_mixco_miraflores_z1",
    ];
    let (_tmp, dir) = rutas_dir(&names);
    let before = snapshot(&dir);
    let out = flota(
        &[
            "rutas",
            "regenerar",
            "--dir",
            dir.to_str().unwrap(),
            "--proveedor",
            "google",
            "--url",
            &format!("{}/directions/v2:computeRoutes", mock.url),
            "--reintentos",
            "1",
        ],
        &[("GOOGLE_MAPS_API_KEY", KEY)],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains(KEY), "{err}");
    let line = |name: &str| {
        err.lines()
            .find(|l| l.starts_with(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no line for {name}: {err}"))
            .to_owned()
    };
    for (name, needle) in [
        ("r01_cedis_z1_z4", "no aceptó la clave"),
        ("r02_cedis_z10_cayala", "la Routes API no está habilitada"),
        ("r03_vn_amatitlan", "tras 2 intentos"),
        ("r04_vn_boca_cedis", "no encontró una ruta"),
        (
            "r05_mixco_sancristobal_z7",
            "INVALID_ARGUMENT: Invalid JSON payload received.",
        ),
    ] {
        let l = line(name);
        assert!(l.contains("error:") && l.contains(needle), "{l}");
    }
    assert!(line("r06_mixco_miraflores_z1").contains("google_routes"));
    assert!(
        err.contains("1 reescritas, 0 sin cambios, 5 con error"),
        "{err}"
    );
    let per_route = |name: &str| {
        mock.requests()
            .iter()
            .filter(|r| seed_for(&seeds, &routes_stops(r)).unwrap().file.nombre == name)
            .count()
    };
    assert_eq!(per_route("r03_vn_amatitlan"), 2, "one retry");
    assert_eq!(per_route("r01_cedis_z1_z4"), 1, "a bad key is not retried");
    let after = snapshot(&dir);
    assert_eq!(after.len(), before.len());
    for ((name, old), (_, new)) in before.iter().zip(&after) {
        assert_eq!(old == new, !name.starts_with("r06"), "{name}");
    }
}

// --- OSRM ------------------------------------------------------------------------------

fn osrm_stops(request: &Request) -> Vec<(f64, f64)> {
    let coordinates = request.path.rsplit('/').next().unwrap();
    coordinates
        .split(';')
        .map(|pair| {
            // OSRM's order: longitude first.
            let (lon, lat) = pair.split_once(',').unwrap();
            (lat.parse().unwrap(), lon.parse().unwrap())
        })
        .collect()
}

fn osrm_ok(points: &[LatLon]) -> Reply {
    let metres = length_m(points);
    Reply::Json(
        200,
        json!({
            "code": "Ok",
            "routes": [{
                "geometry": encode(points),
                "distance": metres,
                "duration": metres / 12.5,
                "weight": metres / 12.5,
                "weight_name": "routability",
                "legs": []
            }],
            "waypoints": []
        })
        .to_string(),
    )
}

fn osrm_error(code: &str, message: &str) -> Reply {
    Reply::Json(400, json!({"code": code, "message": message}).to_string())
}

#[test]
fn osrm_faults_fail_their_route_only_and_retries_are_bounded() {
    let seeds = seeds();
    let for_mock = seeds.clone();
    let attempts: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let counter = Arc::clone(&attempts);
    let mock = Mock::start(move |request| {
        let seed = seed_for(&for_mock, &osrm_stops(request)).unwrap();
        let name = seed.file.nombre.clone();
        let n = {
            let mut counts = counter.lock().unwrap();
            let n = counts.entry(name.clone()).or_default();
            *n += 1;
            *n
        };
        let retry_now = vec![("Retry-After".to_owned(), "0".to_owned())];
        match name.as_str() {
            "r01_cedis_z1_z4" => osrm_error("NoRoute", "Impossible route between points"),
            "r02_cedis_z10_cayala" => osrm_error(
                "NoSegment",
                "Could not find a matching segment for coordinate 2",
            ),
            "r03_vn_amatitlan" => Reply::Full(
                200,
                vec![],
                b"<html><body>502 Bad Gateway</body></html>".to_vec(),
            ),
            "r04_vn_boca_cedis" => Reply::Full(500, retry_now, b"{}".to_vec()),
            // Silent far past the limit below.
            "r05_mixco_sancristobal_z7" => Reply::Hang(Duration::from_secs(300)),
            // First a 429 with no Retry-After (flota backs off by itself), then one that
            // says "now", then the route.
            "r06_mixco_miraflores_z1" if n == 1 => Reply::Full(429, vec![], Vec::new()),
            "r06_mixco_miraflores_z1" if n == 2 => Reply::Full(429, retry_now, Vec::new()),
            // A connection dropped without an answer (a restarting server) is retried.
            "r07_z18_centro_z4" if n == 1 => Reply::Hang(Duration::ZERO),
            // A route whose line is elsewhere: its stops are kilometres away.
            "r08_z18_cayala_z10" => osrm_ok(&for_mock[0].points),
            _ => osrm_ok(&seed.points),
        }
    });
    let names = [
        "r01_cedis_z1_z4",
        "r02_cedis_z10_cayala",
        "r03_vn_amatitlan",
        "r04_vn_boca_cedis",
        "r05_mixco_sancristobal_z7",
        "r06_mixco_miraflores_z1",
        "r07_z18_centro_z4",
        "r08_z18_cayala_z10",
    ];
    let (_tmp, dir) = rutas_dir(&names);
    let before = snapshot(&dir);
    let out = flota(
        &[
            "rutas",
            "regenerar",
            "--dir",
            dir.to_str().unwrap(),
            // Long enough that no answer of the mock's (in this busy test process) misses
            // it on a slow machine; the silent route waits all of it out.
            "--tiempo-limite",
            "10",
            "--reintentos",
            "2",
        ],
        &[("FLOTA_OSRM_URL", &mock.url)],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("con OSRM en"), "{err}");
    for (name, needle) in [
        (
            "r01_cedis_z1_z4",
            "NoRoute: Impossible route between points",
        ),
        ("r02_cedis_z10_cayala", "NoSegment"),
        ("r03_vn_amatitlan", "no es el JSON esperado"),
        ("r04_vn_boca_cedis", "HTTP 500"),
        ("r05_mixco_sancristobal_z7", "no respondió a tiempo"),
        ("r08_z18_cayala_z10", "no pasa las comprobaciones"),
    ] {
        let l = err
            .lines()
            .find(|l| l.starts_with(&format!("{name}: error: ")))
            .unwrap_or_else(|| panic!("no error line for {name}: {err}"));
        assert!(l.contains(needle), "{l}");
    }
    assert!(
        err.contains("2 reescritas, 0 sin cambios, 6 con error"),
        "{err}"
    );
    let counts = attempts.lock().unwrap().clone();
    assert_eq!(counts["r04_vn_boca_cedis"], 3, "1 + 2 retries");
    assert_eq!(
        counts["r06_mixco_miraflores_z1"], 3,
        "two 429s, then the route"
    );
    assert_eq!(
        counts["r07_z18_centro_z4"], 2,
        "a dropped connection is retried"
    );
    assert_eq!(
        counts["r01_cedis_z1_z4"], 1,
        "a client error is not retried"
    );

    // Coordinates went lon,lat in the path, with full polyline geometry asked for.
    let r07 = mock
        .requests()
        .into_iter()
        .find(|r| seed_for(&seeds, &osrm_stops(r)).unwrap().file.nombre == "r07_z18_centro_z4")
        .unwrap();
    let stops = &seeds[6].file.paradas;
    let expected_path = format!(
        "/route/v1/driving/{}",
        stops
            .iter()
            .map(|s| format!("{},{}", s.lon, s.lat))
            .collect::<Vec<_>>()
            .join(";")
    );
    assert_eq!(r07.path, expected_path);
    assert_eq!(r07.param("overview"), Some("full"));
    assert_eq!(r07.param("geometries"), Some("polyline"));

    let after = snapshot(&dir);
    for ((name, old), (_, new)) in before.iter().zip(&after) {
        let rewritten = name.starts_with("r06") || name.starts_with("r07");
        assert_eq!(old != new, rewritten, "{name}");
    }
    assert_eq!(after.len(), before.len(), "no temp file left");
    let r07 = read_file(&dir, "r07_z18_centro_z4");
    assert_eq!(r07.fuente, "osrm");
    assert_eq!(decoded(&r07), seeds[6].points);
}

#[test]
fn osrm_creates_a_route_that_simulates() {
    let seeds = seeds();
    let for_mock = seeds.clone();
    let mock = Mock::start(
        move |request| match seed_for(&for_mock, &osrm_stops(request)) {
            Some(seed) => osrm_ok(&seed.points),
            None => osrm_error("NoRoute", "Impossible route between points"),
        },
    );
    let (tmp, dir) = rutas_dir(&["r02_cedis_z10_cayala", "r03_vn_amatitlan"]);
    let create = |extra: &[&str]| {
        let mut args = vec![
            "rutas",
            "nueva",
            "r11_prueba",
            "--parada",
            "cedis_z12:14.585,-90.545",
            "--parada",
            "z1_centro:14.6419,-90.5133",
            "--parada",
            "z4:14.621,-90.516",
            "--parada",
            "cedis_z12:14.585,-90.545",
            "--dir",
            dir.to_str().unwrap(),
            "--proveedor",
            "osrm",
            "--url",
            &mock.url,
        ];
        args.extend_from_slice(extra);
        flota(&args, &[])
    };
    let out = create(&[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let file = read_file(&dir, "r11_prueba");
    assert_eq!(file.nombre, "r11_prueba");
    assert_eq!(file.fuente, "osrm");
    assert_eq!(file.paradas, seeds[0].file.paradas);
    assert_eq!(decoded(&file), seeds[0].points);
    assert_eq!(file.distancia_m, length_m(&seeds[0].points).round() as u64);

    // An existing route is never replaced by accident.
    let before = snapshot(&dir);
    let out = create(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("ya existe"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(snapshot(&dir), before);
    assert!(create(&["--sobrescribir"]).status.success());

    // Stops no road joins: nothing is written.
    let out = flota(
        &[
            "rutas",
            "nueva",
            "r12_imposible",
            "--parada",
            "a:14.0,-90.0",
            "--parada",
            "b:14.1,-90.1",
            "--dir",
            dir.to_str().unwrap(),
            "--url",
            &mock.url,
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("NoRoute"),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.join("r12_imposible.json").exists());

    // `flota rutas ver` reads it, and the simulator drives it.
    let out = flota(
        &["rutas", "ver", "r11_prueba", "--dir", dir.to_str().unwrap()],
        &[],
    );
    assert!(out.status.success());
    let shown = text(&out.stdout);
    assert!(
        shown.contains("fuente: osrm") && shown.contains("z1_centro"),
        "{shown}"
    );
    let scenario = tmp.path().join("escenarios").join("minimo.toml");
    std::fs::create_dir_all(scenario.parent().unwrap()).unwrap();
    let toml = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("escenarios/minimo.toml"),
    )
    .unwrap()
    .replace("\"r01_cedis_z1_z4\"", "\"r11_prueba\"");
    assert!(toml.contains("r11_prueba"));
    std::fs::write(&scenario, toml).unwrap();
    let db = tmp.path().join("flota.db");
    let out = flota(
        &[
            "simular",
            scenario.to_str().unwrap(),
            "--ahora",
            "2026-08-19T15:30",
            "--salida",
            db.to_str().unwrap(),
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn without_a_provider_nothing_is_asked_or_written() {
    let (_tmp, dir) = rutas_dir(&["r01_cedis_z1_z4"]);
    let before = snapshot(&dir);
    let d = dir.to_str().unwrap();
    for (args, needle) in [
        (
            vec!["rutas", "regenerar", "--dir", d],
            "GOOGLE_MAPS_API_KEY",
        ),
        (
            vec!["rutas", "regenerar", "--dir", d, "--proveedor", "google"],
            "--proveedor google necesita",
        ),
        (
            vec!["rutas", "regenerar", "--dir", d, "--proveedor", "osrm"],
            "--proveedor osrm necesita",
        ),
        (
            vec![
                "rutas",
                "nueva",
                "x",
                "--parada",
                "a:14,-90",
                "--parada",
                "b:14.1,-90",
                "--dir",
                d,
            ],
            "no hay servicio de rutas",
        ),
    ] {
        let out = flota(&args, &[]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(snapshot(&dir), before);
    }
    // Bad stops are usage errors, before anything else.
    let out = flota(
        &["rutas", "nueva", "x", "--parada", "a:95,-90", "--dir", d],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("la latitud '95'"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn unknown_and_broken_routes_are_named_and_the_rest_proceed() {
    let seeds = seeds();
    let for_mock = seeds.clone();
    let mock = Mock::start(move |request| {
        osrm_ok(&seed_for(&for_mock, &osrm_stops(request)).unwrap().points)
    });
    let (_tmp, dir) = rutas_dir(&["r01_cedis_z1_z4", "r02_cedis_z10_cayala"]);
    std::fs::write(
        dir.join("r02_cedis_z10_cayala.json"),
        "{\"nombre\": \"r02\",",
    )
    .unwrap();
    let out = flota(
        &[
            "rutas",
            "regenerar",
            "r01_cedis_z1_z4",
            "r02_cedis_z10_cayala",
            "r99_no_existe",
            "--dir",
            dir.to_str().unwrap(),
            "--url",
            &mock.url,
        ],
        &[],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("r02_cedis_z10_cayala: error:") && err.contains("JSON inválido"),
        "{err}"
    );
    assert!(
        err.contains("r99_no_existe: error: no existe")
            && err.contains("rutas disponibles: r01_cedis_z1_z4"),
        "{err}"
    );
    assert!(err.contains("1 reescritas"), "{err}");
    assert_eq!(read_file(&dir, "r01_cedis_z1_z4").fuente, "osrm");
    // Asking again with the same answer changes nothing.
    let out = flota(
        &[
            "rutas",
            "regenerar",
            "r01_cedis_z1_z4",
            "--dir",
            dir.to_str().unwrap(),
            "--url",
            &mock.url,
        ],
        &[],
    );
    assert!(out.status.success());
    assert!(
        text(&out.stderr).contains("r01_cedis_z1_z4: sin cambios"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn routes_are_summarised_and_exported() {
    let out = flota(&["rutas", "ver", "--dir", shipped().to_str().unwrap()], &[]);
    assert!(out.status.success());
    let table = text(&out.stdout);
    assert_eq!(table.lines().count(), 12, "{table}");
    assert!(
        table.contains("r09_caes_pinula_fraijanes") && table.contains("10 rutas"),
        "{table}"
    );

    let out = flota(
        &[
            "rutas",
            "ver",
            "--dir",
            shipped().to_str().unwrap(),
            "--geojson",
            "-",
        ],
        &[],
    );
    assert!(out.status.success());
    let collection: Value = serde_json::from_slice(&out.stdout).unwrap();
    let features = collection["features"].as_array().unwrap();
    let lines = features
        .iter()
        .filter(|f| f["geometry"]["type"] == "LineString")
        .count();
    let stops: usize = seeds().iter().map(|s| s.file.paradas.len()).sum();
    assert_eq!(lines, 10);
    assert_eq!(features.len(), 10 + stops);
    let r01 = features
        .iter()
        .find(|f| f["properties"]["nombre"] == "r01_cedis_z1_z4")
        .unwrap();
    assert_eq!(
        r01["geometry"]["coordinates"].as_array().unwrap().len(),
        seeds()[0].points.len()
    );
    // GeoJSON order is lon, lat.
    assert_eq!(
        r01["geometry"]["coordinates"][0][1]
            .as_f64()
            .unwrap()
            .round(),
        15.0
    );
}

// --- Routes made offline from a drawn line ---------------------------------------------------

#[test]
fn routes_round_trip_through_geojson_offline_and_simulate() {
    let tmp = tempfile::tempdir().unwrap();
    let all = tmp.path().join("todas.geojson");
    let out = flota(
        &[
            "rutas",
            "ver",
            "--dir",
            shipped().to_str().unwrap(),
            "--geojson",
            all.to_str().unwrap(),
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let dir = tmp.path().join("rutas");
    std::fs::create_dir_all(&dir).unwrap();
    // No key, no OSRM: nothing but the file.
    let create = |name: &str, from: &Path, into: &Path| {
        let out = flota(
            &[
                "rutas",
                "nueva",
                name,
                "--desde",
                from.to_str().unwrap(),
                "--dir",
                into.to_str().unwrap(),
            ],
            &[],
        );
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        text(&out.stderr)
    };
    for seed in seeds() {
        let name = &seed.file.nombre;
        let said = create(name, &all, &dir);
        assert!(said.contains(&format!("{name}: ")), "{said}");
        let made = read_file(&dir, name);
        // The same route as flota reads it: stops, figures, source and line.
        assert_eq!(made.paradas, seed.file.paradas, "{name}");
        assert_eq!(made.distancia_m, seed.file.distancia_m, "{name}");
        assert_eq!(made.duracion_s, seed.file.duracion_s, "{name}");
        assert_eq!(made.fuente, seed.file.fuente, "{name}");
        assert_eq!(decoded(&made), seed.points, "{name}");
    }
    // A second trip changes nothing, byte for byte.
    let again = tmp.path().join("otra.geojson");
    let out = flota(
        &[
            "rutas",
            "ver",
            "--dir",
            dir.to_str().unwrap(),
            "--geojson",
            again.to_str().unwrap(),
        ],
        &[],
    );
    assert!(out.status.success());
    let second = tmp.path().join("segunda");
    std::fs::create_dir_all(&second).unwrap();
    for seed in seeds() {
        create(&seed.file.nombre, &again, &second);
    }
    assert_eq!(snapshot(&second), snapshot(&dir));
    simulate_minimo(tmp.path());
}

/// A GPX file of `seed`'s line as a track, its stops as named waypoints (the depot once).
fn gpx_of(seed: &Seed) -> String {
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<gpx version=\"1.1\" creator=\"prueba\" \
         xmlns=\"http://www.topografix.com/GPX/1/1\">\n",
    );
    let mut named = Vec::new();
    for stop in &seed.file.paradas {
        if !named.contains(&stop.nombre) {
            out.push_str(&format!(
                "  <wpt lat=\"{}\" lon=\"{}\"><name>{}</name></wpt>\n",
                stop.lat, stop.lon, stop.nombre
            ));
            named.push(stop.nombre.clone());
        }
    }
    out.push_str("  <trk><name>dibujada</name><trkseg>\n");
    for p in &seed.points {
        out.push_str(&format!(
            "    <trkpt lat=\"{}\" lon=\"{}\"/>\n",
            p.lat, p.lon
        ));
    }
    out.push_str("  </trkseg></trk>\n</gpx>\n");
    out
}

/// A KML file of `seed`'s line as a LineString, without stops.
fn kml_of(seed: &Seed) -> String {
    let coordinates: Vec<String> = seed
        .points
        .iter()
        .map(|p| format!("{},{},0", p.lon, p.lat))
        .collect();
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<kml xmlns=\"http://www.opengis.net/kml/2.2\">\
         <Document><name>capa</name><Placemark><name>dibujada</name><LineString><tessellate>1</tessellate>\
         <coordinates>\n{}\n</coordinates></LineString></Placemark></Document></kml>\n",
        coordinates.join(" ")
    )
}

#[test]
fn routes_from_gpx_and_kml_take_their_stops_and_simulate() {
    let seeds = seeds();
    let (tmp, dir) = rutas_dir(&["r02_cedis_z10_cayala", "r03_vn_amatitlan"]);
    let r01 = &seeds[0];
    let gpx = tmp.path().join("r01.gpx");
    std::fs::write(&gpx, gpx_of(r01)).unwrap();
    let out = flota(
        &[
            "rutas",
            "nueva",
            "r01_cedis_z1_z4",
            "--desde",
            gpx.to_str().unwrap(),
            "--dir",
            dir.to_str().unwrap(),
            "--velocidad",
            "36",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let made = read_file(&dir, "r01_cedis_z1_z4");
    // Waypoints in the order the track passes them; the loop returns to its depot.
    assert_eq!(made.paradas, r01.file.paradas);
    assert_eq!(made.fuente, "gpx");
    assert_eq!(decoded(&made), r01.points);
    let metres = length_m(&r01.points);
    assert_eq!(made.distancia_m, metres.round() as u64);
    assert_eq!(made.duracion_s, (metres / 10.0).round() as u64, "36 km/h");

    // A KML line with the stops given on the command line.
    let r02 = &seeds[1];
    let kml = tmp.path().join("r02.kml");
    std::fs::write(&kml, kml_of(r02)).unwrap();
    let mut args: Vec<String> = [
        "rutas",
        "nueva",
        "r02_cedis_z10_cayala",
        "--desde",
        kml.to_str().unwrap(),
        "--dir",
        dir.to_str().unwrap(),
        "--sobrescribir",
    ]
    .map(str::to_owned)
    .to_vec();
    for stop in &r02.file.paradas {
        args.push("--parada".into());
        args.push(format!("{}:{},{}", stop.nombre, stop.lat, stop.lon));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = flota(&args, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let made = read_file(&dir, "r02_cedis_z10_cayala");
    assert_eq!(made.paradas, r02.file.paradas);
    assert_eq!(made.fuente, "kml");
    assert_eq!(decoded(&made), r02.points);
    simulate_minimo(tmp.path());
}

#[test]
fn bad_drawn_routes_are_named_and_nothing_is_written() {
    let seeds = seeds();
    let (tmp, dir) = rutas_dir(&["r01_cedis_z1_z4"]);
    let before = snapshot(&dir);
    let write = |name: &str, text: &str| {
        let path = tmp.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    // The r01 line with one stop moved 2 km away from it.
    let far = gpx_of(&seeds[0]).replace(
        "lat=\"14.6419\" lon=\"-90.5133\"",
        "lat=\"14.66\" lon=\"-90.5133\"",
    );
    let cases: Vec<(std::path::PathBuf, &str)> = vec![
        (tmp.path().join("no_existe.gpx"), "no_existe.gpx: no existe"),
        (
            write("roto.gpx", "<gpx version=\"1.1\"><trk><trkseg>"),
            "roto.gpx: GPX inválido",
        ),
        (
            write("lejos.gpx", &far),
            "lejos.gpx: la ruta no pasa las comprobaciones de flota (la parada 'z1_centro' está a",
        ),
        (
            write(
                "sin_paradas.geojson",
                r#"{"type": "Feature", "properties": {"name": "linea"}, "geometry": {"type": "LineString", "coordinates": [[-90.545, 14.585], [-90.5133, 14.6419]]}}"#,
            ),
            "sin_paradas.geojson: una ruta necesita al menos dos paradas",
        ),
        (
            write(
                "coordenada.kml",
                "<kml><Placemark><name>tramo</name><LineString><coordinates>-90.5 14.6</coordinates></LineString></Placemark></kml>",
            ),
            "coordenada.kml: el Placemark «tramo» tiene una coordenada ilegible «-90.5»",
        ),
        // Taveuni's coast road across the 180th meridian: positions are interpolated in plain
        // degrees, so it would be driven round the world; refused, naming the segment.
        (
            write(
                "antimeridiano.geojson",
                r#"{"type": "FeatureCollection", "features": [
                    {"type": "Feature", "properties": {"name": "costa"}, "geometry": {"type": "LineString",
                     "coordinates": [[179.985, -16.77], [179.995, -16.788], [-179.995, -16.8], [-179.985, -16.815]]}},
                    {"type": "Feature", "properties": {"nombre": "matei"}, "geometry": {"type": "Point", "coordinates": [179.985, -16.77]}},
                    {"type": "Feature", "properties": {"nombre": "somosomo"}, "geometry": {"type": "Point", "coordinates": [-179.985, -16.815]}}]}"#,
            ),
            "antimeridiano.geojson: la ruta no pasa las comprobaciones de flota (la polilínea cruza \
             el antimeridiano (longitud ±180°) entre el vértice n.º 2 (-16.78800, 179.99500) y el \
             n.º 3 (-16.80000, -179.99500)",
        ),
    ];
    for (path, needle) in cases {
        let out = flota(
            &[
                "rutas",
                "nueva",
                "r11_nueva",
                "--desde",
                path.to_str().unwrap(),
                "--dir",
                dir.to_str().unwrap(),
            ],
            &[],
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(needle), "{needle}: {err}");
        assert_eq!(snapshot(&dir), before, "{needle}");
    }
}
