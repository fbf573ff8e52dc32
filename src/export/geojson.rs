//! `flota exportar`: one unit's day to a file — GeoJSON, GPX 1.1 or the map PNG.
//!
//! Owns the two interchange formats. GeoJSON (RFC 7946, through the `geojson` crate) holds the
//! track as a LineString, every report as a Point with its time and speed, the day's stops,
//! speeding episodes, signal losses and geofence visits, and the fleet's geofences: it opens
//! in QGIS and geojson.io as is. GPX 1.1 holds the track (one segment per stretch between
//! signal losses) with UTC times, and the stops as waypoints; speed and heading go in the
//! Garmin TrackPointExtension that most tools read, since GPX 1.1 has no speed element. The
//! data comes from the same read-only fleet context as the server's tools; files appear whole
//! or not at all.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use chrono::NaiveDateTime;
use geojson::{Feature, FeatureCollection, Geometry, GeometryValue, JsonObject, Position};
use serde_json::{Value, json};

use crate::fleet::places::Geocoder;
use crate::fleet::{DayTrack, Fleet, Snapshot, dates};
use crate::map::{self, Scene, TileConfig, TileFetcher};
use crate::mcp::ToolError;
use crate::plumbing::output::Staged;

/// What `flota exportar` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Geojson,
    Gpx,
    Png,
}

impl Format {
    pub fn extension(self) -> &'static str {
        match self {
            Format::Geojson => "geojson",
            Format::Gpx => "gpx",
            Format::Png => "png",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    pub db: PathBuf,
    pub placa: String,
    pub fecha: String,
    pub format: Format,
    /// `None`: `<PLACA>_<fecha>.<ext>` in the working directory; `-`: the bytes are returned
    /// for `main` to print.
    pub output: Option<PathBuf>,
    pub ahora: Option<NaiveDateTime>,
    pub tiles: TileConfig,
}

/// What an export produced.
#[derive(Debug)]
pub struct Exported {
    /// The file written, or `None` when the bytes go to stdout.
    pub path: Option<PathBuf>,
    pub bytes: Vec<u8>,
    pub summary: String,
    /// Set when the unit's positions changed after the analysis: the detections drawn or
    /// listed may be stale.
    pub aviso: Option<String>,
}

pub fn run(options: &Options) -> anyhow::Result<Exported> {
    let fleet = Arc::new(Fleet::new(&options.db, options.ahora, Geocoder::new(None)));
    let spanish = |e: ToolError| anyhow::anyhow!("{e}");
    let snapshot = fleet.snapshot().map_err(spanish)?;
    let track = fleet
        .day_track(&snapshot, &options.placa, &options.fecha)
        .map_err(spanish)?;
    let (bytes, what) = match options.format {
        Format::Geojson => (
            geojson(&track, &snapshot).into_bytes(),
            format!(
                "{} reportes, {} paradas",
                track.fixes.len(),
                track.working_stops().count()
            ),
        ),
        Format::Gpx => (
            gpx(&track, &snapshot).into_bytes(),
            format!(
                "{} puntos, {} paradas como waypoints",
                track.fixes.len(),
                track.working_stops().count()
            ),
        ),
        Format::Png => {
            let scene = Scene::from_day(&track, &snapshot);
            let fetcher = TileFetcher::new(options.tiles.clone());
            let rendered = map::render(&scene, &fetcher, &|_, _| {}, &|| false)?;
            let what = format!(
                "{}×{} px, {}",
                rendered.width,
                rendered.height,
                rendered.background.describe()
            );
            (rendered.png, what)
        }
    };
    let summary = format!(
        "{} {}: {} ({what})",
        track.vehicle.plate,
        track.date,
        options.format.extension().to_uppercase()
    );
    let path = match &options.output {
        Some(p) if p == Path::new("-") => None,
        Some(p) => Some(p.clone()),
        None => Some(PathBuf::from(format!(
            "{}_{}.{}",
            track.vehicle.plate,
            track.date,
            options.format.extension()
        ))),
    };
    if let Some(path) = &path {
        let staged = Staged::prepare(path)?;
        std::fs::write(staged.temp(), &bytes)
            .with_context(|| format!("no se pudo escribir {}", staged.temp().display()))?;
        staged
            .commit()
            .with_context(|| format!("no se pudo escribir {}", path.display()))?;
    }
    Ok(Exported {
        path,
        bytes,
        summary,
        aviso: track.aviso.clone(),
    })
}

fn point(lat: f64, lon: f64) -> Geometry {
    Geometry::new(GeometryValue::Point {
        coordinates: Position::from([round6(lon), round6(lat)]),
    })
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

fn feature(geometry: Geometry, properties: Value) -> Feature {
    let properties: Option<JsonObject> = match properties {
        Value::Object(map) => Some(map),
        _ => None,
    };
    Feature {
        bbox: None,
        geometry: Some(geometry),
        id: None,
        properties,
        foreign_members: None,
    }
}

/// The day as a GeoJSON FeatureCollection (coordinates `[lon, lat]`, WGS84, as RFC 7946
/// requires). Every feature has a `tipo` property saying what it is.
pub fn geojson(track: &DayTrack, snapshot: &Snapshot) -> String {
    let zone = snapshot.zone();
    let iso = |t: i64| dates::iso(zone, t);
    let plate = &track.vehicle.plate;
    let mut features = Vec::new();
    let line: Vec<Position> = track
        .fixes
        .iter()
        .map(|f| Position::from([round6(f.lon), round6(f.lat)]))
        .collect();
    let line_geometry = if line.len() >= 2 {
        Geometry::new(GeometryValue::LineString { coordinates: line })
    } else {
        // A LineString needs two positions; one report is a point.
        point(track.fixes[0].lat, track.fixes[0].lon)
    };
    features.push(feature(
        line_geometry,
        json!({
            "tipo": "recorrido",
            "placa": plate,
            "conductor": track.vehicle.driver,
            "fecha": track.date.to_string(),
            "zona_horaria": zone.name(),
            "kilometros": (track.day.km * 10.0).round() / 10.0,
            "reportes": track.fixes.len(),
            "desde": iso(track.fixes[0].ts_utc),
            "hasta": iso(track.fixes[track.fixes.len() - 1].ts_utc),
            "velocidad_max_kmh": track.day.max_speed_kmh,
        }),
    ));
    for fix in &track.fixes {
        features.push(feature(
            point(fix.lat, fix.lon),
            json!({
                "tipo": "posicion",
                "placa": plate,
                "hora": iso(fix.ts_utc),
                "ts_utc": fix.ts_utc,
                "velocidad_kmh": fix.speed_kmh,
                "rumbo_grados": fix.heading_deg,
                "ignicion": fix.ignition,
            }),
        ));
    }
    let now = snapshot.now_utc;
    for stop in track.working_stops() {
        let end = stop.end_utc.unwrap_or(now);
        features.push(feature(
            point(stop.lat, stop.lon),
            json!({
                "tipo": "parada",
                "placa": plate,
                "inicio": iso(stop.start_utc),
                "fin": stop.end_utc.map(iso),
                "minutos": ((end - stop.start_utc) as f64 / 6.0).round() / 10.0,
                "prolongada": stop.long,
                "lugar": snapshot.places.phrase(crate::geometry::earth::LatLon::new(stop.lat, stop.lon)),
            }),
        ));
    }
    for event in &track.speeding {
        let to = event.end_utc.unwrap_or(now);
        let stretch: Vec<Position> = track
            .fixes
            .iter()
            .filter(|f| f.ts_utc >= event.start_utc && f.ts_utc <= to)
            .map(|f| Position::from([round6(f.lon), round6(f.lat)]))
            .collect();
        let geometry = if stretch.len() >= 2 {
            Geometry::new(GeometryValue::LineString {
                coordinates: stretch,
            })
        } else {
            point(event.lat, event.lon)
        };
        features.push(feature(
            geometry,
            json!({
                "tipo": "exceso_velocidad",
                "placa": plate,
                "inicio": iso(event.start_utc),
                "fin": event.end_utc.map(iso),
                "segundos": to - event.start_utc,
                "velocidad_max_kmh": event.max_kmh,
                "limite_kmh": event.limit_kmh,
            }),
        ));
    }
    for gap in &track.gaps {
        let at = |t: i64| {
            track
                .fixes
                .binary_search_by_key(&t, |f| f.ts_utc)
                .ok()
                .map(|i| &track.fixes[i])
        };
        let geometry = match (at(gap.start_utc), gap.end_utc.and_then(at)) {
            (Some(a), Some(b)) => Geometry::new(GeometryValue::LineString {
                coordinates: vec![
                    Position::from([round6(a.lon), round6(a.lat)]),
                    Position::from([round6(b.lon), round6(b.lat)]),
                ],
            }),
            _ => point(gap.lat, gap.lon),
        };
        features.push(feature(
            geometry,
            json!({
                "tipo": "perdida_senal",
                "placa": plate,
                "desde": iso(gap.start_utc),
                "hasta": gap.end_utc.map(iso),
                "minutos": ((gap.end_utc.unwrap_or(now) - gap.start_utc) as f64 / 6.0).round() / 10.0,
            }),
        ));
    }
    for visit in &track.visits {
        features.push(feature(
            point(visit.lat, visit.lon),
            json!({
                "tipo": "visita_geocerca",
                "placa": plate,
                "geocerca": visit.fence_id.and_then(|id| snapshot.fence_name(id)),
                "entrada": (!visit.from_data_start).then(|| iso(visit.start_utc)),
                "salida": visit.end_utc.map(iso),
            }),
        ));
    }
    for fence in &snapshot.fences {
        let mut ring: Vec<Position> = fence
            .fence
            .outline()
            .iter()
            .map(|p| Position::from([round6(p.lon), round6(p.lat)]))
            .collect();
        if ring.first() != ring.last()
            && let Some(first) = ring.first().cloned()
        {
            ring.push(first);
        }
        features.push(feature(
            Geometry::new(GeometryValue::Polygon {
                coordinates: vec![ring],
            }),
            json!({
                "tipo": "geocerca",
                "nombre": fence.fence.name,
                "clase": fence.fence.kind,
            }),
        ));
    }
    let collection = FeatureCollection {
        bbox: None,
        features,
        foreign_members: None,
    };
    collection.to_string()
}

/// XML text with the five special characters escaped.
fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

fn utc(ts: i64) -> String {
    chrono::DateTime::from_timestamp(ts, 0)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The day as GPX 1.1: stops as waypoints, the track split at signal losses, UTC times, and
/// speed (m/s) and course in Garmin's TrackPointExtension v2.
pub fn gpx(track: &DayTrack, snapshot: &Snapshot) -> String {
    use std::fmt::Write;
    let name = format!("{} {}", track.vehicle.plate, track.date);
    let mut out = String::with_capacity(track.fixes.len() * 220 + 1024);
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(
        "<gpx version=\"1.1\" creator=\"flota\" xmlns=\"http://www.topografix.com/GPX/1/1\" \
         xmlns:gpxtpx=\"http://www.garmin.com/xmlschemas/TrackPointExtension/v2\" \
         xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
         xsi:schemaLocation=\"http://www.topografix.com/GPX/1/1 http://www.topografix.com/GPX/1/1/gpx.xsd\">\n",
    );
    let _ = writeln!(
        out,
        "  <metadata>\n    <name>{}</name>\n    <desc>{}</desc>\n    <time>{}</time>\n  </metadata>",
        xml(&name),
        xml(&format!(
            "{} · {} · {:.1} km · hora local {}",
            track.vehicle.driver,
            dates::long_es(track.date),
            track.day.km,
            snapshot.zone().name()
        )),
        utc(track.fixes[0].ts_utc)
    );
    let zone = snapshot.zone();
    let now = snapshot.now_utc;
    for stop in track.working_stops() {
        let minutes = (stop.end_utc.unwrap_or(now) - stop.start_utc) as f64 / 60.0;
        let label = format!(
            "Parada {} ({:.0} min){}",
            dates::clock_hm(zone, stop.start_utc),
            minutes,
            if stop.long { ", prolongada" } else { "" }
        );
        let _ = writeln!(
            out,
            "  <wpt lat=\"{:.6}\" lon=\"{:.6}\">\n    <time>{}</time>\n    <name>{}</name>\n    <desc>{}</desc>\n    <type>parada</type>\n  </wpt>",
            stop.lat,
            stop.lon,
            utc(stop.start_utc),
            xml(&label),
            xml(&snapshot
                .places
                .phrase(crate::geometry::earth::LatLon::new(stop.lat, stop.lon)))
        );
    }
    let _ = writeln!(
        out,
        "  <trk>\n    <name>{}</name>\n    <trkseg>",
        xml(&name)
    );
    let gap_starts: Vec<i64> = track.gaps.iter().map(|g| g.start_utc).collect();
    for (i, fix) in track.fixes.iter().enumerate() {
        if i > 0 && gap_starts.contains(&track.fixes[i - 1].ts_utc) {
            out.push_str("    </trkseg>\n    <trkseg>\n");
        }
        let _ = writeln!(
            out,
            "      <trkpt lat=\"{:.6}\" lon=\"{:.6}\"><time>{}</time><extensions><gpxtpx:TrackPointExtension><gpxtpx:speed>{:.2}</gpxtpx:speed><gpxtpx:course>{:.0}</gpxtpx:course></gpxtpx:TrackPointExtension></extensions></trkpt>",
            fix.lat,
            fix.lon,
            utc(fix.ts_utc),
            fix.speed_kmh / 3.6,
            fix.heading_deg
        );
    }
    out.push_str("    </trkseg>\n  </trk>\n</gpx>\n");
    out
}
