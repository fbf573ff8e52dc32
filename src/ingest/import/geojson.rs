//! GeoJSON: `Point` features with a time, as phones' loggers and flota's own export write
//! them.
//!
//! Owns the property names (docs/ingesta.md, "GeoJSON"): time `ts_utc` (Unix seconds), or
//! `hora`/`time`/`timestamp`/`fecha_hora` (ISO 8601; without a zone, in `zone`); unit
//! `placa`/`device`; `velocidad_kmh` (km/h) or `speed` (m/s); `rumbo_grados`/`course`/
//! `bearing`; `ignicion`/`ignition`; `odometro_m`. Features of flota's export that are not
//! positions (`tipo` other than `posicion`: stops, visits) and non-point geometries are
//! skipped and counted.

use std::path::Path;

use chrono_tz::Tz;
use serde_json::Value;

use super::{FileError, Point, Read, Skip};
use crate::ingest::osmand;

pub fn read(path: &Path, bytes: &[u8], zone: Tz) -> Result<Read, FileError> {
    let text =
        std::str::from_utf8(bytes).map_err(|_| FileError::new(path, "", "no es texto UTF-8"))?;
    let parsed: geojson::GeoJson = text.parse().map_err(|e: geojson::Error| match e {
        geojson::Error::MalformedGeoJson(json) => FileError::new(
            path,
            format!("línea {}, columna {}", json.line(), json.column()),
            "JSON mal formado",
        ),
        _ => FileError::new(
            path,
            "",
            "no es GeoJSON válido (se espera una FeatureCollection de puntos)",
        ),
    })?;
    let features = match parsed {
        geojson::GeoJson::FeatureCollection(c) => c.features,
        geojson::GeoJson::Feature(f) => vec![f],
        geojson::GeoJson::Geometry(_) => {
            return Err(FileError::new(
                path,
                "",
                "es una geometría suelta: se esperan Features con la hora en sus propiedades",
            ));
        }
    };
    let mut read = Read::default();
    for (index, feature) in features.iter().enumerate() {
        let place = || format!("elemento features[{index}]");
        let property = |names: &[&str]| {
            names.iter().find_map(|n| {
                feature
                    .properties
                    .as_ref()?
                    .get(*n)
                    .filter(|v| !v.is_null())
            })
        };
        let position = match feature.geometry.as_ref().map(|g| &g.value) {
            Some(geojson::GeometryValue::Point { coordinates: p }) if p.len() >= 2 => (p[1], p[0]),
            _ => {
                read.skip(Skip::NotAPosition);
                continue;
            }
        };
        if property(&["tipo"])
            .and_then(Value::as_str)
            .is_some_and(|t| t != "posicion")
        {
            read.skip(Skip::NotAPosition);
            continue;
        }
        let ts_utc = match (
            property(&["ts_utc"]),
            property(&["hora", "time", "timestamp", "fecha_hora"]),
        ) {
            (Some(Value::Number(n)), _) => n.as_f64().map(|t| t.floor() as i64),
            (_, Some(Value::String(t))) => Some(osmand::parse_time(t, zone).map_err(|_| {
                FileError::new(path, place(), format!("la hora '{t}' no se entiende"))
            })?),
            (_, Some(Value::Number(n))) => n.as_f64().map(|t| t.floor() as i64),
            _ => None,
        };
        let Some(ts_utc) = ts_utc else {
            read.skip(Skip::NoTime);
            continue;
        };
        let number = |names: &[&str]| property(names).and_then(Value::as_f64);
        read.points.push(Point {
            unit: property(&["placa", "device", "dispositivo"]).map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            }),
            speed_kmh: number(&["velocidad_kmh"]).or_else(|| number(&["speed"]).map(|s| s * 3.6)),
            heading_deg: number(&["rumbo_grados", "course", "bearing"])
                .map(|h| h.rem_euclid(360.0)),
            ignition: property(&["ignicion", "ignition"]).and_then(Value::as_bool),
            odometer_m: number(&["odometro_m"]),
            ..Point::at(ts_utc, position.0, position.1)
        });
    }
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geojson(text: &str) -> Result<Read, FileError> {
        read(
            Path::new("t.geojson"),
            text.as_bytes(),
            chrono_tz::America::Guatemala,
        )
    }

    #[test]
    fn points_with_times_and_flotas_own_export() {
        let read = geojson(
            r#"{"type":"FeatureCollection","features":[
              {"type":"Feature","geometry":{"type":"Point","coordinates":[-90.5,14.6]},"properties":{"tipo":"posicion","placa":"P-123BCD","hora":"2026-08-19T15:30:00-06:00","ts_utc":1787175000,"velocidad_kmh":36.0,"rumbo_grados":90,"ignicion":true}},
              {"type":"Feature","geometry":{"type":"Point","coordinates":[-90.5,14.61]},"properties":{"time":"2026-08-19T21:30:15Z","speed":10}},
              {"type":"Feature","geometry":{"type":"Point","coordinates":[-90.5,14.6]},"properties":{"tipo":"parada"}},
              {"type":"Feature","geometry":{"type":"LineString","coordinates":[[-90.5,14.6],[-90.4,14.6]]},"properties":{}},
              {"type":"Feature","geometry":{"type":"Point","coordinates":[-90.5,14.6]},"properties":{}}
            ]}"#,
        )
        .unwrap();
        assert_eq!(read.points.len(), 2);
        assert_eq!(read.points[0].unit.as_deref(), Some("P-123BCD"));
        assert_eq!(
            (
                read.points[0].ts_utc,
                read.points[0].speed_kmh,
                read.points[0].ignition
            ),
            (1_787_175_000, Some(36.0), Some(true))
        );
        assert_eq!(
            (
                read.points[1].ts_utc,
                read.points[1].lat,
                read.points[1].speed_kmh
            ),
            (1_787_175_015, 14.61, Some(36.0))
        );
        assert_eq!(read.skipped.get(&Skip::NotAPosition), Some(&2));
        assert_eq!(read.skipped.get(&Skip::NoTime), Some(&1));
    }

    #[test]
    fn bad_files_say_where() {
        let check = |text: &str, expected: &str| {
            let e = geojson(text).unwrap_err().to_string();
            assert!(e.contains(expected), "{e}");
        };
        check("{\"type\":\n\"FeatureCollection\",", "línea 2");
        check(
            r#"{"type":"Point","coordinates":[1,2]}"#,
            "geometría suelta",
        );
        check(
            r#"{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"hora":"ayer"}}]}"#,
            "features[0]: la hora 'ayer' no se entiende",
        );
    }
}
