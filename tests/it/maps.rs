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
        Tiles::Hang => Reply::Hang(Duration::from_secs(30)),
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
    let env = [
        ("FLOTA_TILES_URL", template.as_str()),
        ("FLOTA_TILES_DIR", cache.path().to_str().unwrap()),
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
