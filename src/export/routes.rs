//! The fleet's routes as GeoJSON: each route a LineString, each stop a Point.
//!
//! Owns the document `flota rutas ver --geojson` writes: one FeatureCollection, pretty-printed,
//! with the readable routes of the folder (a broken file is left out and counted by the
//! caller). Coordinates are `[lon, lat]` as stored in the polylines.

use serde_json::json;

use crate::geometry::route_files::Stored;

/// Every readable route in `stored` with its stops, in one FeatureCollection.
pub fn routes_geojson(stored: &[Stored]) -> String {
    let mut features = Vec::new();
    for (file, route) in stored.iter().filter_map(|s| s.route.as_ref().ok()) {
        let line: Vec<[f64; 2]> = route.points.iter().map(|p| [p.lon, p.lat]).collect();
        features.push(json!({
            "type": "Feature",
            "geometry": {"type": "LineString", "coordinates": line},
            "properties": {
                "tipo": "ruta",
                "nombre": file.nombre,
                "fuente": file.fuente,
                "distancia_m": file.distancia_m,
                "duracion_s": file.duracion_s,
                "paradas": file.paradas.len(),
            }
        }));
        for (i, stop) in route.stops.iter().enumerate() {
            features.push(json!({
                "type": "Feature",
                "geometry": {"type": "Point", "coordinates": [stop.position.lon, stop.position.lat]},
                "properties": {
                    "tipo": "parada",
                    "ruta": file.nombre,
                    "nombre": stop.name,
                    "orden": i + 1,
                    "km_en_ruta": (stop.along_m / 10.0).round() / 100.0,
                }
            }));
        }
    }
    let collection = json!({"type": "FeatureCollection", "features": features});
    // A `Value` built above always serialises.
    let text = serde_json::to_string_pretty(&collection).unwrap_or_default();
    text + "\n"
}
