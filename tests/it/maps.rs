//! `mapa_recorrido` and `flota exportar`: the PNG decodes and shows the track where the
//! positions project; tiles come from a loopback server (drawn, cached, with progress), and a
//! server that hangs, errs or sends garbage still yields a map; GeoJSON and GPX parse back
//! with the day's positions.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use base64::Engine;
use flota::geometry::earth::LatLon;
use flota::map::projection::{View, world_px};
use rusqlite::Connection;
use serde_json::{Value, json};

use crate::ground_truth::fixture;
use crate::http_mock::{Mock, Reply};
use crate::support::{Server, flota_bin};

const PLATE: &str = "P-456DEF";
const DATE: &str = "2026-08-18";
/// The colour of the mock server's tiles.
const TILE_RGB: [u8; 3] = [170, 211, 223];

/// A decoded picture.
struct Picture {
    width: usize,
    height: usize,
    rgb: Vec<u8>,
}

impl Picture {
    fn decode(bytes: &[u8]) -> Picture {
        let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        decoder.set_transformations(png::Transformations::EXPAND);
        let mut reader = decoder.read_info().unwrap();
        let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buffer).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgb, "expanded to RGB");
        Picture {
            width: info.width as usize,
            height: info.height as usize,
            rgb: buffer[..info.buffer_size()].to_vec(),
        }
    }

    fn at(&self, x: i64, y: i64) -> Option<[u8; 3]> {
        if x < 0 || y < 0 || x as usize >= self.width || y as usize >= self.height {
            return None;
        }
        let i = (y as usize * self.width + x as usize) * 3;
        Some([self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]])
    }
}

fn near(a: [u8; 3], b: (u8, u8, u8), tolerance: i32) -> bool {
    (i32::from(a[0]) - i32::from(b.0)).abs() <= tolerance
        && (i32::from(a[1]) - i32::from(b.1)).abs() <= tolerance
        && (i32::from(a[2]) - i32::from(b.2)).abs() <= tolerance
}

fn track_coloured(pixel: [u8; 3]) -> bool {
    (0..4).any(|band| near(pixel, flota::map::band_rgb(band), 24))
}

/// The day's stored positions (duplicates dropped, up to the fleet's now), with speeds.
fn positions_with_speed(db: &Path, date: &str) -> Vec<(LatLon, f64)> {
    let zone: chrono_tz::Tz = "America/Guatemala".parse().unwrap();
    let date = chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d").unwrap();
    let (from, to) = flota::engine::day_bounds(zone, date);
    let conn = Connection::open(db).unwrap();
    let ahora: i64 = conn
        .query_row(
            "SELECT valor FROM meta WHERE clave = 'ahora_utc'",
            [],
            |r| r.get::<_, String>(0),
        )
        .unwrap()
        .parse()
        .unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT lat, lon, velocidad_kmh FROM vista_posiciones WHERE placa = ?1 AND secuencia = 0
             AND ts_utc >= ?2 AND ts_utc < ?3 AND ts_utc <= ?4 ORDER BY ts_utc",
        )
        .unwrap();
    stmt.query_map(rusqlite::params![PLATE, from, to, ahora], |r| {
        Ok((LatLon::new(r.get(0)?, r.get(1)?), r.get(2)?))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// Where the engine put the unit's stops (the map draws a marker over each).
fn stop_positions(db: &Path) -> Vec<LatLon> {
    let conn = Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT e.lat, e.lon FROM eventos e JOIN vehiculos v ON v.id = e.vehiculo_id
             WHERE v.placa = ?1 AND e.tipo = 'parada'",
        )
        .unwrap();
    stmt.query_map([PLATE], |r| Ok(LatLon::new(r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn positions(db: &Path, date: &str) -> Vec<LatLon> {
    positions_with_speed(db, date)
        .into_iter()
        .map(|(p, _)| p)
        .collect()
}

/// Calls `mapa_recorrido` and returns the structured output and the PNG bytes, after
/// checking the result's shape.
fn map_call(server: &mut Server, id: i64) -> (Value, Vec<u8>) {
    let answer = server.call(
        id,
        "mapa_recorrido",
        json!({"placa": "p456def", "fecha": DATE}),
    );
    decode_result(&answer)
}

fn decode_result(answer: &Value) -> (Value, Vec<u8>) {
    let result = &answer["result"];
    assert_ne!(result["isError"], true, "{answer}");
    let content = result["content"].as_array().unwrap();
    assert_eq!(content.len(), 2, "text then image");
    let text: Value = serde_json::from_str(content[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, result["structuredContent"]);
    assert_eq!(content[1]["type"], "image");
    assert_eq!(content[1]["mimeType"], "image/png");
    let png = base64::engine::general_purpose::STANDARD
        .decode(content[1]["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(text["imagen"]["bytes"], png.len());
    // Far below the 1 MB clients accept, base64 included.
    assert!(
        png.len() <= flota::map::PNG_BUDGET_BYTES,
        "{} bytes",
        png.len()
    );
    assert!(answer.to_string().len() < 600_000);
    (text, png)
}

/// The view the picture was drawn in, rebuilt from its `encuadre`.
fn view_of(output: &Value) -> View {
    let frame = &output["encuadre"];
    let zoom = frame["zoom"].as_u64().unwrap() as u8;
    let (left, top) = world_px(
        LatLon::new(
            frame["norte"].as_f64().unwrap(),
            frame["oeste"].as_f64().unwrap(),
        ),
        zoom,
    );
    View {
        zoom,
        left: left.round(),
        top: top.round(),
        width: 800,
        height: 600,
    }
}

#[test]
fn offline_map_shows_the_track_where_the_positions_project() {
    let fixture = fixture("minimo");
    let mut server = Server::spawn(
        flota_bin(),
        &["servir", "--db", fixture.db.to_str().unwrap()],
    );
    server.initialize("2025-11-25");
    let (output, png) = map_call(&mut server, 1);
    assert_eq!(output["placa"], PLATE);
    assert_eq!(output["fondo"], "sin conexión");
    assert!(
        output["fondo_detalle"]
            .as_str()
            .unwrap()
            .contains("desactivadas"),
        "{output}"
    );
    assert_eq!(
        output["excesos_de_velocidad"], 1,
        "the injected speeding: {output}"
    );
    let picture = Picture::decode(&png);
    assert_eq!((picture.width, picture.height), (800, 600));

    let fixes = positions(&fixture.db, DATE);
    assert_eq!(output["reportes_del_dia"], fixes.len());
    let drawn = output["reportes_dibujados"].as_u64().unwrap() as usize;
    assert!(
        drawn >= 10 && drawn < fixes.len() / 2,
        "simplified: {drawn} of {}",
        fixes.len()
    );
    let view = view_of(&output);
    let projected: Vec<(f64, f64)> = fixes.iter().map(|p| view.project(*p)).collect();
    // Every position lies inside the picture, below the title band.
    assert!(
        projected
            .iter()
            .all(|(x, y)| (0.0..800.0).contains(x) && (48.0..600.0).contains(y)),
        "positions outside the frame"
    );
    // Track-coloured pixels sit on the projected track: nearly every report taken while
    // moving, away from the stop markers drawn over the line, has one within two pixels (the
    // few others lie under labels; measured: 93 %)...
    let stops: Vec<(f64, f64)> = stop_positions(&fixture.db)
        .into_iter()
        .map(|p| view.project(p))
        .collect();
    let moving: Vec<(f64, f64)> = positions_with_speed(&fixture.db, DATE)
        .into_iter()
        .filter(|(_, speed)| *speed >= 10.0)
        .map(|(p, _)| view.project(p))
        .filter(|(x, y)| stops.iter().all(|(sx, sy)| (x - sx).hypot(y - sy) > 22.0))
        .collect();
    let on_track = moving
        .iter()
        .filter(|(x, y)| {
            (-2..=2).any(|dy| {
                (-2..=2).any(|dx| {
                    picture
                        .at(x.round() as i64 + dx, y.round() as i64 + dy)
                        .is_some_and(track_coloured)
                })
            })
        })
        .count();
    assert!(moving.len() > 400, "{}", moving.len());
    assert!(
        on_track * 100 >= moving.len() * 90,
        "{on_track} of {} moving reports on a track-coloured pixel",
        moving.len()
    );
    // ...and away from the track there are almost none (the legend's samples only).
    let mut far = 0usize;
    let mut far_coloured = 0usize;
    for y in (50..600).step_by(3) {
        for x in (0..800).step_by(3) {
            let (fx, fy) = (f64::from(x), f64::from(y));
            if projected
                .iter()
                .any(|(px, py)| (px - fx).hypot(py - fy) < 25.0)
            {
                continue;
            }
            far += 1;
            if picture
                .at(i64::from(x), i64::from(y))
                .is_some_and(track_coloured)
            {
                far_coloured += 1;
            }
        }
    }
    assert!(far > 10_000, "{far}");
    assert!(
        far_coloured * 200 < far,
        "{far_coloured} of {far} pixels away from the track look like track"
    );

    // The export renders the very same picture.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mapa.png");
    let out = export(&fixture.db, "png", &file);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&file).unwrap(), png, "tool and export differ");
}

/// How the mock tile server answers.
#[derive(Clone, Copy, PartialEq)]
enum Tiles {
    Png,
    Hang,
    Garbage,
    Status(u16),
}

pub(crate) fn solid_tile() -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, 256, 256);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().unwrap();
        writer
            .write_image_data(&TILE_RGB.repeat(256 * 256))
            .unwrap();
    }
    out
}

/// A loopback tile server; returns its URL template and the mock (its `lines()` are the
/// requests with their User-Agent). One thread per connection: the fetcher asks for several
/// tiles at once.
fn tile_server(mode: Tiles) -> (String, Mock) {
    let tile = solid_tile();
    let png = || vec![("Content-Type".to_owned(), "image/png".to_owned())];
    let mock = Mock::start(move |_| match mode {
        Tiles::Png => Reply::Full(200, png(), tile.clone()),
        Tiles::Garbage => Reply::Full(200, png(), b"<html>demasiadas solicitudes</html>".to_vec()),
        Tiles::Status(code) => Reply::Full(code, vec![], Vec::new()),
        // Longer than any test waits: the deadline, never the mock, ends the fetch.
        Tiles::Hang => Reply::Hang(Duration::from_secs(600)),
    });
    (format!("{}/{{z}}/{{x}}/{{y}}.png", mock.url), mock)
}

#[test]
fn tiles_from_a_server_are_drawn_cached_and_reported_as_progress() {
    let fixture = fixture("minimo");
    let (template, seen) = tile_server(Tiles::Png);
    let cache = tempfile::tempdir().unwrap();
    let env = [
        ("FLOTA_TILES_URL", template.as_str()),
        ("FLOTA_TILES_DIR", cache.path().to_str().unwrap()),
    ];
    let db = fixture.db.to_str().unwrap();
    let mut server = Server::spawn_with_env(flota_bin(), &["servir", "--db", db], &env);
    server.initialize("2025-11-25");
    server.send_json(&json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "mapa_recorrido", "arguments": {"placa": PLATE, "fecha": DATE},
                   "_meta": {"progressToken": "mapa-1"}}
    }));
    let mut progress = Vec::new();
    let answer = loop {
        let message = server.recv();
        if message["method"] == "notifications/progress" {
            assert_eq!(message["params"]["progressToken"], "mapa-1");
            progress.push(message["params"].clone());
        } else {
            break message;
        }
    };
    assert_eq!(answer["id"], 7);
    let (output, png) = decode_result(&answer);
    assert_eq!(output["fondo"], "teselas de mapa", "{output}");
    let requests = seen.lines();
    let tiles = view_of(&output).tiles().len();
    assert_eq!(requests.len(), tiles, "{requests:?}");
    assert!(
        requests
            .iter()
            .all(|r| r.starts_with("GET /") && r.to_lowercase().contains("user-agent: flota/")),
        "{requests:?}"
    );
    // Progress counts tiles up to the total, never going back.
    assert!(!progress.is_empty());
    let values: Vec<f64> = progress
        .iter()
        .map(|p| p["progress"].as_f64().unwrap())
        .collect();
    assert!(values.windows(2).all(|w| w[1] > w[0]), "{values:?}");
    assert_eq!(progress.last().unwrap()["total"], tiles as f64);
    assert_eq!(*values.last().unwrap(), tiles as f64);
    // Most of the picture is the tiles' colour, exactly.
    let picture = Picture::decode(&png);
    let background = picture
        .rgb
        .chunks_exact(3)
        .filter(|p| *p == TILE_RGB)
        .count();
    assert!(background * 2 > 800 * 600, "{background} background pixels");

    // A new server process draws from the disk cache without asking again.
    drop(server);
    let mut again = Server::spawn_with_env(flota_bin(), &["servir", "--db", db], &env);
    again.initialize("2025-11-25");
    again.send(r#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#);
    let listed = again.recv();
    let map_tool = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mapa_recorrido")
        .unwrap()
        .clone();
    assert_eq!(
        map_tool["annotations"]["openWorldHint"], true,
        "tiles come from outside"
    );
    let (second, second_png) = map_call(&mut again, 1);
    assert_eq!(second["fondo"], "teselas de mapa");
    assert_eq!(seen.lines().len(), tiles, "served from the cache");
    assert_eq!(second_png, png);
}

fn offline_detail(mode: Tiles) -> String {
    let fixture = fixture("minimo");
    let (template, seen) = tile_server(mode);
    let cache = tempfile::tempdir().unwrap();
    // A short deadline, set here (the harness raises it for every other test): a hanging
    // server is given up on by it alone.
    let env = [
        ("FLOTA_TILES_URL", template.as_str()),
        ("FLOTA_TILES_DIR", cache.path().to_str().unwrap()),
        ("FLOTA_TILES_LIMITE_S", "0.5"),
    ];
    let mut server = Server::spawn_with_env(
        flota_bin(),
        &["servir", "--db", fixture.db.to_str().unwrap()],
        &env,
    );
    server.initialize("2025-11-25");
    let (output, png) = map_call(&mut server, 1);
    assert_eq!(output["fondo"], "sin conexión", "{output}");
    assert_eq!(Picture::decode(&png).width, 800);
    assert!(!seen.lines().is_empty(), "the server was asked");
    // A second map within the minute does not wait for the failing server again.
    let before = seen.lines().len();
    let (second, _) = map_call(&mut server, 2);
    assert_eq!(second["fondo"], "sin conexión");
    assert!(
        second["fondo_detalle"]
            .as_str()
            .unwrap()
            .contains("menos de un minuto")
    );
    assert_eq!(seen.lines().len(), before);
    // Nothing broken was cached.
    let cached = walk(cache.path());
    assert!(cached.is_empty(), "{cached:?}");
    output["fondo_detalle"].as_str().unwrap().to_owned()
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(walk(&path));
            } else {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn a_hanging_tile_server_still_yields_a_map() {
    let detail = offline_detail(Tiles::Hang);
    assert!(
        detail.contains("tiempo") || detail.contains("sin respuesta"),
        "{detail}"
    );
}

#[test]
fn garbage_or_refusals_from_the_tile_server_still_yield_a_map() {
    let detail = offline_detail(Tiles::Garbage);
    assert!(detail.contains("PNG"), "{detail}");
    let detail = offline_detail(Tiles::Status(429));
    assert!(detail.contains("HTTP 429"), "{detail}");
}

fn export(db: &Path, format: &str, file: &Path) -> std::process::Output {
    std::process::Command::new(flota_bin())
        .args([
            "exportar",
            "--db",
            db.to_str().unwrap(),
            "--placa",
            PLATE,
            "--fecha",
            DATE,
        ])
        .args(["--formato", format, "--salida", file.to_str().unwrap()])
        .env("FLOTA_TILES_URL", "no")
        .output()
        .unwrap()
}

fn bounds(points: impl IntoIterator<Item = (f64, f64)>) -> [f64; 4] {
    points.into_iter().fold(
        [f64::MAX, f64::MAX, f64::MIN, f64::MIN],
        |[a, b, c, d], (lat, lon)| [a.min(lat), b.min(lon), c.max(lat), d.max(lon)],
    )
}

fn assert_bounds(got: [f64; 4], expected: [f64; 4], what: &str) {
    for (g, e) in got.iter().zip(expected) {
        assert!((g - e).abs() < 1e-6, "{what}: {got:?} ≠ {expected:?}");
    }
}

#[test]
fn geojson_and_gpx_exports_round_trip_the_positions() {
    let fixture = fixture("minimo");
    let fixes = positions(&fixture.db, DATE);
    let expected = bounds(fixes.iter().map(|p| (p.lat, p.lon)));
    let dir = tempfile::tempdir().unwrap();

    let file = dir.path().join("dia.geojson");
    let out = export(&fixture.db, "geojson", &file);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let collection: geojson::FeatureCollection = text
        .parse::<geojson::GeoJson>()
        .unwrap()
        .try_into()
        .unwrap();
    let kind = |f: &geojson::Feature| {
        f.properties.as_ref().unwrap()["tipo"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let points: Vec<(f64, f64)> = collection
        .features
        .iter()
        .filter(|f| kind(f) == "posicion")
        .map(|f| match &f.geometry.as_ref().unwrap().value {
            geojson::GeometryValue::Point { coordinates } => (coordinates[1], coordinates[0]),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(points.len(), fixes.len());
    assert_bounds(bounds(points), expected, "GeoJSON points");
    let line = collection
        .features
        .iter()
        .find(|f| kind(f) == "recorrido")
        .unwrap();
    let geojson::GeometryValue::LineString { coordinates } = &line.geometry.as_ref().unwrap().value
    else {
        panic!("the track is a LineString")
    };
    assert_eq!(coordinates.len(), fixes.len());
    assert_bounds(
        bounds(coordinates.iter().map(|c| (c[1], c[0]))),
        expected,
        "GeoJSON line",
    );
    let stops = collection
        .features
        .iter()
        .filter(|f| kind(f) == "parada")
        .count();
    assert!(stops > 0);
    assert!(
        collection
            .features
            .iter()
            .any(|f| kind(f) == "exceso_velocidad")
    );
    assert_eq!(
        collection
            .features
            .iter()
            .filter(|f| kind(f) == "geocerca")
            .count(),
        3
    );

    let file = dir.path().join("dia.gpx");
    let out = export(&fixture.db, "gpx", &file);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut text = String::new();
    std::fs::File::open(&file)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let parsed = gpx::read(text.as_bytes()).unwrap();
    assert_eq!(parsed.version, gpx::GpxVersion::Gpx11);
    let track_points: Vec<&gpx::Waypoint> = parsed.tracks[0]
        .segments
        .iter()
        .flat_map(|s| s.points.iter())
        .collect();
    assert_eq!(track_points.len(), fixes.len());
    assert!(track_points.iter().all(|p| p.time.is_some()));
    assert_bounds(
        bounds(track_points.iter().map(|p| (p.point().y(), p.point().x()))),
        expected,
        "GPX",
    );
    assert_eq!(parsed.waypoints.len(), stops);
}

#[test]
fn exports_explain_bad_input_and_write_nothing() {
    let fixture = fixture("minimo");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.gpx");
    let out = std::process::Command::new(flota_bin())
        .args([
            "exportar",
            "--db",
            fixture.db.to_str().unwrap(),
            "--placa",
            "P-999ZZZ",
        ])
        .args([
            "--fecha",
            DATE,
            "--formato",
            "gpx",
            "--salida",
            file.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("No existe la placa 'P-999ZZZ'"), "{stderr}");
    assert!(!file.exists());
    let out = std::process::Command::new(flota_bin())
        .args([
            "exportar",
            "--placa",
            PLATE,
            "--fecha",
            DATE,
            "--formato",
            "kml",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("kml"), "{stderr}");
}

// --- What the tools count is what the picture shows ----------------------------------------

/// The fleet's "now" for the drawing checks: later than the data's end (15:30), so the unit
/// stopped since 14:49 with its engine on is a long stop by then, as `alertas` says.
const LATER: &str = "2026-08-19T15:45";

/// Unit-days to draw: every unit and day of `minimo`, and the `semana` units stopped at
/// "now" (one for 95 minutes), on both of their last days.
fn drawn_days() -> Vec<(&'static str, &'static str, &'static str)> {
    let mut days = Vec::new();
    for plate in ["P-123BCD", "P-456DEF", "P-789GHJ"] {
        for date in ["2026-08-18", "2026-08-19"] {
            days.push(("minimo", plate, date));
        }
    }
    for plate in ["P-123BCD", "P-234KLM", "P-345VWX"] {
        for date in ["2026-08-18", "2026-08-19"] {
            days.push(("semana", plate, date));
        }
    }
    days
}

/// Whether some pixel within `radius` of `at` is `rgb` (give or take `tolerance`).
fn colour_near(picture: &Picture, at: (f64, f64), radius: f64, rgb: (u8, u8, u8)) -> bool {
    let r = radius.max(1.0).ceil() as i64;
    let (cx, cy) = (at.0.round() as i64, at.1.round() as i64);
    (-r..=r).any(|dy| {
        (-r..=r).any(|dx| {
            (dx * dx + dy * dy) as f64 <= radius.max(1.0).powi(2) + 0.5
                && picture
                    .at(cx + dx, cy + dy)
                    .is_some_and(|p| near(p, rgb, 40))
        })
    })
}

/// The map drawn in-process with its marks, for one unit-day of a served fixture.
fn drawn(db: &Path, plate: &str, date: &str) -> flota::map::Rendered {
    use flota::fleet::{Fleet, places::Geocoder};
    let ahora = chrono::NaiveDateTime::parse_from_str(LATER, "%Y-%m-%dT%H:%M").unwrap();
    let fleet = Fleet::new(
        db,
        Some(flota::calendar::WallTime::naive(ahora)),
        Geocoder::new(None),
        flota::plumbing::clock::Clock::fixed(0),
    );
    let snapshot = fleet.snapshot().unwrap();
    let track = fleet.day_track(&snapshot, plate, date).unwrap();
    let scene = flota::map::Scene::from_day(&track, &snapshot);
    let tiles = flota::map::TileFetcher::new(flota::map::TileConfig::offline());
    flota::map::render(&scene, &tiles, &|_, _| {}, &|| false).unwrap()
}

#[test]
fn every_element_the_map_counts_is_drawn_where_it_says() {
    use flota::map::MarkKind;
    let mut problems = Vec::new();
    // Marks seen per kind over all the days: the check must have met each kind.
    let mut seen = [0usize; 5];
    let mut servers: std::collections::HashMap<&str, Server> = Default::default();
    for (id, (scenario, plate, date)) in drawn_days().into_iter().enumerate() {
        let db = &fixture(scenario).db;
        let server = servers.entry(scenario).or_insert_with(|| {
            let mut server = Server::spawn(
                flota_bin(),
                &["servir", "--db", db.to_str().unwrap(), "--ahora", LATER],
            );
            server.initialize("2025-11-25");
            server
        });
        let id = id as i64 * 2;
        let answer = server.call(id, "mapa_recorrido", json!({"placa": plate, "fecha": date}));
        let (output, png) = decode_result(&answer);
        let alerts = server.call(
            id + 1,
            "alertas",
            json!({"tipo": "parada_prolongada", "fecha_inicio": date, "fecha_fin": date}),
        );
        let alerts = &alerts["result"]["structuredContent"];
        let rendered = drawn(db, plate, date);
        let case = format!("{scenario} {plate} {date}");
        assert_eq!(rendered.png, png, "{case}: the tool drew another picture");
        let picture = Picture::decode(&png);
        let marks = &rendered.marks;
        let count = |f: &dyn Fn(&MarkKind) -> bool| marks.iter().filter(|m| f(&m.kind)).count();
        let figures = [
            ("paradas", count(&|k| matches!(k, MarkKind::Stop { .. }))),
            (
                "paradas_prolongadas",
                count(&|k| matches!(k, MarkKind::Stop { long: true, .. })),
            ),
            (
                "perdidas_de_senal",
                count(&|k| matches!(k, MarkKind::Gap { .. })),
            ),
            (
                "excesos_de_velocidad",
                count(&|k| matches!(k, MarkKind::Speeding { .. })),
            ),
        ];
        for (field, drawn) in figures {
            if output[field] != drawn {
                problems.push(format!(
                    "{case}: {field} {} but {drawn} drawn",
                    output[field]
                ));
            }
        }
        // Long stops as `alertas` reports them for that unit and day.
        let alerted = alerts["por_unidad"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["placa"] == plate)
            .map_or(0, |u| u["por_tipo"]["parada_prolongada"].as_u64().unwrap());
        if output["paradas_prolongadas"] != alerted {
            problems.push(format!(
                "{case}: {} long stops on the map, {alerted} in alertas",
                output["paradas_prolongadas"]
            ));
        }
        // Every visited geofence is named on the picture.
        let mut visited: Vec<&str> = output["geocercas_visitadas"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let mut named: Vec<&str> = marks
            .iter()
            .filter(|m| matches!(m.kind, MarkKind::Fence { visited: true, .. }))
            .filter_map(|m| m.label.as_deref())
            .collect();
        visited.sort_unstable();
        named.sort_unstable();
        if visited != named {
            problems.push(format!("{case}: visited {visited:?}, named {named:?}"));
        }
        for mark in marks {
            let slot = match mark.kind {
                MarkKind::Stop { long: false, .. } => 0,
                MarkKind::Stop { long: true, .. } => 1,
                MarkKind::Gap { .. } => 2,
                MarkKind::Speeding { .. } => 3,
                MarkKind::Fence { visited, .. } => {
                    if !visited {
                        continue;
                    }
                    4
                }
            };
            seen[slot] += 1;
        }
        // Each mark's colour is in the picture where it was recorded.
        for mark in marks
            .iter()
            .filter(|m| m.label.is_some() || !matches!(m.kind, MarkKind::Fence { .. }))
        {
            if !colour_near(&picture, mark.at, mark.radius_px, mark.rgb) {
                problems.push(format!("{case}: {mark:?} not in the picture"));
            }
            if let MarkKind::Stop { .. } = mark.kind {
                // The dark ring around a stop disc (the fill could be a white road).
                let ring = mark.radius_px + 0.75;
                let ringed = (0..16).any(|i| {
                    let a = f64::from(i) * std::f64::consts::PI / 8.0;
                    let at = (mark.at.0 + ring * a.cos(), mark.at.1 + ring * a.sin());
                    colour_near(&picture, at, 0.5, (0x1a, 0x1a, 0x1a))
                });
                if !ringed {
                    problems.push(format!("{case}: {mark:?} has no ring"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        seen.iter().all(|n| *n > 0),
        "stops, long stops, losses, speeding, visits: {seen:?}"
    );
}

/// South, west, north, east of a unit's stored positions on a local day, up to the data's now.
fn track_bounds(db: &Path, plate: &str, date: &str) -> [f64; 4] {
    let zone: chrono_tz::Tz = "America/Guatemala".parse().unwrap();
    let day = chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d").unwrap();
    let (from, to) = flota::engine::day_bounds(zone, day);
    let conn = Connection::open(db).unwrap();
    conn.query_row(
        "SELECT MIN(lat), MIN(lon), MAX(lat), MAX(lon) FROM vista_posiciones
         WHERE placa = ?1 AND ts_utc >= ?2 AND ts_utc < ?3
         AND ts_utc <= (SELECT CAST(valor AS INTEGER) FROM meta WHERE clave = 'ahora_utc')",
        rusqlite::params![plate, from, to],
        |r| Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?]),
    )
    .unwrap()
}

/// The union of two south-west-north-east boxes.
fn union(a: [f64; 4], b: [f64; 4]) -> [f64; 4] {
    [
        a[0].min(b[0]),
        a[1].min(b[1]),
        a[2].max(b[2]),
        a[3].max(b[3]),
    ]
}

fn export_day(db: &Path, plate: &str, date: &str, format: &str) -> String {
    let out = std::process::Command::new(flota_bin())
        .args(["exportar", "--db", db.to_str().unwrap(), "--placa", plate])
        .args(["--fecha", date, "--formato", format, "--salida", "-"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Every position in a GeoJSON geometry, as (lat, lon).
fn geometry_points(value: &geojson::GeometryValue) -> Vec<(f64, f64)> {
    use geojson::GeometryValue as G;
    let of = |p: &geojson::Position| (p[1], p[0]);
    match value {
        G::Point { coordinates } => vec![of(coordinates)],
        G::MultiPoint { coordinates } | G::LineString { coordinates } => {
            coordinates.iter().map(of).collect()
        }
        G::MultiLineString { coordinates } | G::Polygon { coordinates } => {
            coordinates.iter().flatten().map(of).collect()
        }
        G::MultiPolygon { coordinates } => coordinates.iter().flatten().flatten().map(of).collect(),
        G::GeometryCollection { geometries } => geometries
            .iter()
            .flat_map(|g| geometry_points(&g.value))
            .collect(),
    }
}

#[test]
fn every_exported_feature_lies_on_the_day_or_its_geofences() {
    let mut problems = Vec::new();
    let mut features_seen = std::collections::BTreeMap::<String, usize>::new();
    for (scenario, plate, date) in drawn_days() {
        let db = &fixture(scenario).db;
        let fleet = flota::fleet::Fleet::new(
            db,
            None,
            flota::fleet::places::Geocoder::new(None),
            flota::plumbing::clock::Clock::fixed(0),
        );
        let fences = fleet
            .snapshot()
            .unwrap()
            .fences
            .iter()
            .map(|f| {
                let (sw, ne) = f.fence.bbox();
                [sw.lat, sw.lon, ne.lat, ne.lon]
            })
            .reduce(union)
            .unwrap();
        let allowed = union(track_bounds(db, plate, date), fences);
        let inside = |(lat, lon): (f64, f64)| {
            let e = 1e-6;
            lat >= allowed[0] - e
                && lon >= allowed[1] - e
                && lat <= allowed[2] + e
                && lon <= allowed[3] + e
        };
        let case = format!("{scenario} {plate} {date}");
        let collection: geojson::FeatureCollection = export_day(db, plate, date, "geojson")
            .parse::<geojson::GeoJson>()
            .unwrap()
            .try_into()
            .unwrap();
        for feature in &collection.features {
            let kind = feature.properties.as_ref().unwrap()["tipo"]
                .as_str()
                .unwrap()
                .to_owned();
            let points = geometry_points(&feature.geometry.as_ref().unwrap().value);
            if let Some(p) = points.iter().find(|p| !inside(**p)) {
                problems.push(format!(
                    "{case}: GeoJSON {kind} at {p:?}, outside {allowed:?}"
                ));
            }
            *features_seen.entry(kind).or_default() += 1;
        }
        let gpx = gpx::read(export_day(db, plate, date, "gpx").as_bytes()).unwrap();
        let points = gpx.waypoints.iter().chain(
            gpx.tracks
                .iter()
                .flat_map(|t| &t.segments)
                .flat_map(|s| &s.points),
        );
        for point in points {
            let p = (point.point().y(), point.point().x());
            if !inside(p) {
                problems.push(format!("{case}: GPX point at {p:?}, outside {allowed:?}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    for kind in [
        "recorrido",
        "posicion",
        "parada",
        "exceso_velocidad",
        "perdida_senal",
        "visita_geocerca",
        "geocerca",
    ] {
        assert!(
            features_seen.contains_key(kind),
            "no {kind}: {features_seen:?}"
        );
    }
}
