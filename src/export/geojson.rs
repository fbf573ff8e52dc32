//! A unit's day as GeoJSON (RFC 7946, through the `geojson` crate), ready for QGIS and
//! geojson.io.
//!
//! Owns the feature list: the track as a LineString, every report as a Point with its time and
//! speed, the day's stops, speeding episodes, signal losses, geofence visits (as the fence's
//! shape: the stored visit has no position of its own) and the fleet's geofences. Every feature has a `tipo` property saying what it is; coordinates are
//! `[lon, lat]` in WGS84, rounded to six decimals (about 10 cm).

use geojson::{Feature, FeatureCollection, Geometry, GeometryValue, JsonObject, Position};
use serde_json::{Value, json};

use crate::engine::{EventKind, Fix};
use crate::fleet::{DayTrack, Snapshot, dates};
use crate::geometry::earth::LatLon;
use crate::geometry::geofence::Geofence;

/// The day as a GeoJSON FeatureCollection.
pub fn geojson(track: &DayTrack, snapshot: &Snapshot) -> String {
    let day = Day { track, snapshot };
    let mut features = vec![day.track_line()];
    features.extend(day.positions());
    features.extend(day.stops());
    features.extend(day.speeding());
    features.extend(day.gaps());
    features.extend(day.visits());
    features.extend(fences(snapshot));
    let collection = FeatureCollection {
        bbox: None,
        features,
        foreign_members: None,
    };
    collection.to_string()
}

/// What every feature of the day is drawn from.
struct Day<'a> {
    track: &'a DayTrack,
    snapshot: &'a Snapshot,
}

impl Day<'_> {
    /// Local time with offset.
    fn iso(&self, t: i64) -> String {
        dates::iso(self.track.zone, t)
    }

    fn plate(&self) -> &str {
        &self.track.vehicle.plate
    }

    fn track_line(&self) -> Feature {
        let (track, fixes) = (self.track, &self.track.fixes);
        let line = fixes.iter().map(|f| position(f.lat, f.lon)).collect();
        // A LineString needs two positions; one report is a point.
        let geometry = line_or_point(line, fixes[0].lat, fixes[0].lon);
        feature(
            geometry,
            json!({
                "tipo": "recorrido",
                "placa": self.plate(),
                "conductor": track.vehicle.driver,
                "fecha": track.date.to_string(),
                "zona_horaria": self.track.zone.name(),
                "kilometros": (track.day.km * 10.0).round() / 10.0,
                "reportes": fixes.len(),
                "desde": self.iso(fixes[0].ts_utc),
                "hasta": self.iso(fixes[fixes.len() - 1].ts_utc),
                "velocidad_max_kmh": track.day.max_speed_kmh,
            }),
        )
    }

    fn positions(&self) -> Vec<Feature> {
        let fixes = &self.track.fixes;
        fixes
            .iter()
            .map(|fix| {
                feature(
                    point(fix.lat, fix.lon),
                    json!({
                        "tipo": "posicion",
                        "placa": self.plate(),
                        "hora": self.iso(fix.ts_utc),
                        "ts_utc": fix.ts_utc,
                        "velocidad_kmh": fix.speed_kmh,
                        "rumbo_grados": fix.heading_deg,
                        "ignicion": fix.ignition,
                    }),
                )
            })
            .collect()
    }

    fn stops(&self) -> Vec<Feature> {
        let now = self.snapshot.now_utc;
        let places = &self.snapshot.places;
        self.track
            .working_stops()
            .map(|stop| {
                let end = stop.end_utc.unwrap_or(now);
                feature(
                    point(stop.lat, stop.lon),
                    json!({
                        "tipo": EventKind::Stop.name(),
                        "placa": self.plate(),
                        "inicio": self.iso(stop.start_utc),
                        "fin": stop.end_utc.map(|t| self.iso(t)),
                        "minutos": ((end - stop.start_utc) as f64 / 6.0).round() / 10.0,
                        "prolongada": self.snapshot.is_long_stop(stop),
                        "lugar": places.phrase(LatLon::new(stop.lat, stop.lon)),
                    }),
                )
            })
            .collect()
    }

    /// Each episode as the stretch of track it covers (a point when it is one report).
    fn speeding(&self) -> Vec<Feature> {
        let now = self.snapshot.now_utc;
        let fixes = &self.track.fixes;
        self.track
            .speeding
            .iter()
            .map(|event| {
                let to = event.end_utc.unwrap_or(now);
                let stretch = fixes
                    .iter()
                    .filter(|f| f.ts_utc >= event.start_utc && f.ts_utc <= to)
                    .map(|f| position(f.lat, f.lon))
                    .collect();
                feature(
                    line_or_point(stretch, event.lat, event.lon),
                    json!({
                        "tipo": EventKind::Overspeed.name(),
                        "placa": self.plate(),
                        "inicio": self.iso(event.start_utc),
                        "fin": event.end_utc.map(|t| self.iso(t)),
                        "segundos": to - event.start_utc,
                        "velocidad_max_kmh": event.max_kmh,
                        "limite_kmh": event.limit_kmh,
                    }),
                )
            })
            .collect()
    }

    /// Each signal loss as the jump between the last report before it and the first after.
    fn gaps(&self) -> Vec<Feature> {
        let now = self.snapshot.now_utc;
        let fixes = &self.track.fixes;
        let at = |t: i64| {
            fixes
                .binary_search_by_key(&t, |f| f.ts_utc)
                .ok()
                .map(|i| &fixes[i])
        };
        self.track
            .gaps
            .iter()
            .map(|gap| {
                let geometry = match (at(gap.start_utc), gap.end_utc.and_then(at)) {
                    (Some(a), Some(b)) => Geometry::new(GeometryValue::LineString {
                        coordinates: vec![position(a.lat, a.lon), position(b.lat, b.lon)],
                    }),
                    _ => point(gap.lat, gap.lon),
                };
                let seconds = gap.end_utc.unwrap_or(now) - gap.start_utc;
                feature(
                    geometry,
                    json!({
                        "tipo": EventKind::Gap.name(),
                        "placa": self.plate(),
                        "desde": self.iso(gap.start_utc),
                        "hasta": gap.end_utc.map(|t| self.iso(t)),
                        "minutos": (seconds as f64 / 6.0).round() / 10.0,
                    }),
                )
            })
            .collect()
    }

    /// Each geofence visit as the fence's shape (the stored event has no position of its
    /// own), or, for a fence no longer known, the reports taken during the visit.
    fn visits(&self) -> Vec<Feature> {
        let now = self.snapshot.now_utc;
        self.track
            .visits
            .iter()
            .filter_map(|visit| {
                let fence = visit
                    .fence_id
                    .and_then(|id| self.snapshot.fences.iter().find(|f| f.id == id));
                let geometry = match fence {
                    Some(fence) => fence_polygon(&fence.fence),
                    None => {
                        let to = visit.end_utc.unwrap_or(now);
                        let inside: Vec<&Fix> = self
                            .track
                            .fixes
                            .iter()
                            .filter(|f| f.ts_utc >= visit.start_utc && f.ts_utc <= to)
                            .collect();
                        let first = inside.first()?;
                        let line = inside.iter().map(|f| position(f.lat, f.lon)).collect();
                        line_or_point(line, first.lat, first.lon)
                    }
                };
                Some(feature(
                    geometry,
                    json!({
                        "tipo": EventKind::Visit.name(),
                        "placa": self.plate(),
                        "geocerca": visit.fence_id.and_then(|id| self.snapshot.fence_name(id)),
                        "entrada": (!visit.from_data_start).then(|| self.iso(visit.start_utc)),
                        "salida": visit.end_utc.map(|t| self.iso(t)),
                    }),
                ))
            })
            .collect()
    }
}

/// The fleet's geofences as closed polygons.
fn fences(snapshot: &Snapshot) -> Vec<Feature> {
    snapshot
        .fences
        .iter()
        .map(|fence| {
            feature(
                fence_polygon(&fence.fence),
                json!({
                    "tipo": "geocerca",
                    "nombre": fence.fence.name,
                    "clase": fence.fence.kind,
                }),
            )
        })
        .collect()
}

/// A geofence's outline as a closed polygon.
fn fence_polygon(fence: &Geofence) -> Geometry {
    let mut ring: Vec<Position> = fence
        .outline()
        .iter()
        .map(|p| position(p.lat, p.lon))
        .collect();
    if ring.first() != ring.last()
        && let Some(first) = ring.first().cloned()
    {
        ring.push(first);
    }
    Geometry::new(GeometryValue::Polygon {
        coordinates: vec![ring],
    })
}

/// `[lon, lat]`, as GeoJSON orders them.
fn position(lat: f64, lon: f64) -> Position {
    Position::from([round6(lon), round6(lat)])
}

fn point(lat: f64, lon: f64) -> Geometry {
    Geometry::new(GeometryValue::Point {
        coordinates: position(lat, lon),
    })
}

/// A LineString through `line`, or a point at `lat, lon` when it has fewer than two positions.
fn line_or_point(line: Vec<Position>, lat: f64, lon: f64) -> Geometry {
    if line.len() >= 2 {
        Geometry::new(GeometryValue::LineString { coordinates: line })
    } else {
        point(lat, lon)
    }
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
