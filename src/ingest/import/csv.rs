//! CSV: one position per row, columns named in a header (flota's Spanish names or the
//! leading open-source tracking server's export names).
//!
//! Owns the column names (docs/ingesta.md, "CSV"): unit `placa`/`dispositivo`/`deviceId`;
//! time `fecha_hora`/`hora`/`ts_utc`/`fixTime`/`deviceTime`/`time`; `lat`/`latitud`/`latitude`,
//! `lon`/`longitud`/`longitude`; `velocidad_kmh` (km/h) or `speed` (knots, as Traccar
//! exports it); `rumbo`/`course`; `ignicion`/`ignition`; `odometro_km` or `odometro_m`/
//! `odometer` (metres); Traccar's `attributes` JSON (ignition, odometer) and `valid`. Comma
//! or semicolon separated (by the header). A time without a zone is in `zone`. A row that
//! cannot be read refuses the file, naming its line.

use std::path::Path;

use chrono::NaiveDateTime;
use chrono_tz::Tz;

use super::{FileError, Point, Read, Skip};
use crate::ingest::osmand;

const KNOT_KMH: f64 = 1.852;

/// Which column holds what; `None`: absent.
#[derive(Debug, Default)]
struct Columns {
    unit: Option<usize>,
    time: Option<usize>,
    lat: Option<usize>,
    lon: Option<usize>,
    speed_kmh: Option<usize>,
    speed_knots: Option<usize>,
    heading: Option<usize>,
    ignition: Option<usize>,
    odometer_km: Option<usize>,
    odometer_m: Option<usize>,
    attributes: Option<usize>,
    valid: Option<usize>,
}

impl Columns {
    fn of(header: &csv::StringRecord) -> Columns {
        let find = |names: &[&str]| {
            header.iter().position(|h| {
                let h = h.trim().trim_start_matches('\u{feff}').to_ascii_lowercase();
                names.contains(&h.as_str())
            })
        };
        Columns {
            unit: find(&["placa", "dispositivo", "deviceid", "device", "unidad"]),
            time: find(&[
                "fecha_hora",
                "hora",
                "ts_utc",
                "fixtime",
                "devicetime",
                "time",
                "timestamp",
            ]),
            lat: find(&["lat", "latitud", "latitude"]),
            lon: find(&["lon", "lng", "longitud", "longitude"]),
            speed_kmh: find(&["velocidad_kmh", "velocidad"]),
            speed_knots: find(&["speed"]),
            heading: find(&["rumbo", "rumbo_grados", "course", "bearing", "heading"]),
            ignition: find(&["ignicion", "ignition"]),
            odometer_km: find(&["odometro_km"]),
            odometer_m: find(&["odometro_m", "odometer"]),
            attributes: find(&["attributes"]),
            valid: find(&["valid"]),
        }
    }
}

pub fn read(path: &Path, bytes: &[u8], zone: Tz) -> Result<Read, FileError> {
    let first_line = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    let delimiter = if first_line.contains(&b';') && !first_line.contains(&b',') {
        b';'
    } else {
        b','
    };
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .flexible(true)
        .from_reader(bytes);
    let header = reader.headers().map_err(|e| row_error(path, &e))?.clone();
    let columns = Columns::of(&header);
    let (Some(time), Some(lat), Some(lon)) = (columns.time, columns.lat, columns.lon) else {
        return Err(FileError::at_line(
            path,
            1,
            "faltan columnas: se necesitan una hora (fecha_hora, fixTime…), lat y lon (latitude, longitude)",
        ));
    };
    let mut read = Read::default();
    for record in reader.records() {
        let record = record.map_err(|e| row_error(path, &e))?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        let cell = |i: Option<usize>| {
            i.and_then(|i| record.get(i))
                .map(str::trim)
                .filter(|v| !v.is_empty())
        };
        let number = |i: Option<usize>, name: &str| -> Result<Option<f64>, FileError> {
            cell(i)
                .map(|v| {
                    v.replace(',', ".")
                        .parse::<f64>()
                        .ok()
                        .filter(|x| x.is_finite())
                        .ok_or_else(|| {
                            FileError::at_line(
                                path,
                                line,
                                format!("la columna {name} no es un número: '{v}'"),
                            )
                        })
                })
                .transpose()
        };
        if cell(columns.valid).is_some_and(|v| v.eq_ignore_ascii_case("false") || v == "0") {
            read.skip(Skip::NoFix);
            continue;
        }
        let Some(time_text) = cell(Some(time)) else {
            read.skip(Skip::NoTime);
            continue;
        };
        let ts_utc = parse_time(time_text, zone).ok_or_else(|| {
            FileError::at_line(path, line, format!("la hora '{time_text}' no se entiende"))
        })?;
        let (Some(lat), Some(lon)) = (number(Some(lat), "lat")?, number(Some(lon), "lon")?) else {
            return Err(FileError::at_line(path, line, "faltan lat o lon"));
        };
        let attributes: serde_json::Value = cell(columns.attributes)
            .and_then(|a| serde_json::from_str(a).ok())
            .unwrap_or_default();
        let speed_kmh = match number(columns.speed_kmh, "velocidad_kmh")? {
            Some(kmh) => Some(kmh),
            None => number(columns.speed_knots, "speed")?.map(|kn| kn * KNOT_KMH),
        };
        let odometer_m = match number(columns.odometer_km, "odometro_km")? {
            Some(km) => Some(km * 1000.0),
            None => number(columns.odometer_m, "odometro_m")?
                .or_else(|| attributes["odometer"].as_f64()),
        };
        read.points.push(Point {
            unit: cell(columns.unit).map(str::to_owned),
            speed_kmh: speed_kmh.map(|s| s.max(0.0)),
            heading_deg: number(columns.heading, "rumbo")?.map(|h| h.rem_euclid(360.0)),
            ignition: cell(columns.ignition)
                .map(|v| {
                    matches!(
                        v.to_ascii_lowercase().as_str(),
                        "true" | "1" | "si" | "sí" | "on"
                    )
                })
                .or_else(|| attributes["ignition"].as_bool()),
            odometer_m,
            ..Point::at(ts_utc, lat, lon)
        });
    }
    Ok(read)
}

/// A time: Unix seconds or milliseconds, ISO 8601, `AAAA-MM-DD HH:MM[:SS]` or
/// `DD/MM/AAAA HH:MM[:SS]` (the last two in `zone`).
fn parse_time(text: &str, zone: Tz) -> Option<i64> {
    if let Ok(ts) = osmand::parse_time(text, zone) {
        return Some(ts);
    }
    ["%Y-%m-%d %H:%M", "%d/%m/%Y %H:%M:%S", "%d/%m/%Y %H:%M"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(text, f).ok())
        // A repeated hour is its first occurrence; a skipped one is no time at all.
        .and_then(|local| {
            crate::calendar::instant(zone, crate::calendar::WallTime::naive(local)).ok()
        })
}

fn row_error(path: &Path, e: &csv::Error) -> FileError {
    let line = e.position().map_or(0, |p| p.line() as usize);
    let message = match e.kind() {
        csv::ErrorKind::Utf8 { .. } => "no es texto UTF-8",
        _ => "no es CSV válido",
    };
    FileError::at_line(path, line, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv(text: &str) -> Result<Read, FileError> {
        read(
            Path::new("t.csv"),
            text.as_bytes(),
            chrono_tz::America::Guatemala,
        )
    }

    #[test]
    fn flota_columns_with_local_times() {
        let read = csv(
            "placa,fecha_hora,lat,lon,velocidad_kmh,rumbo,ignicion,odometro_km\n\
             P-123BCD,2026-08-19 15:30:00,14.6,-90.5,36.5,90,true,1000.5\n\
             P-123BCD,19/08/2026 15:30:15,\"14,61\",-90.5,,,0,\n\
             P-123BCD,,14.6,-90.5,,,,\n",
        )
        .unwrap();
        assert_eq!(read.points.len(), 2);
        let p = &read.points[0];
        assert_eq!(
            (p.unit.as_deref(), p.ts_utc, p.speed_kmh),
            (Some("P-123BCD"), 1_787_175_000, Some(36.5))
        );
        assert_eq!((p.ignition, p.odometer_m), (Some(true), Some(1_000_500.0)));
        assert_eq!(
            (
                read.points[1].ts_utc,
                read.points[1].lat,
                read.points[1].ignition
            ),
            (1_787_175_015, 14.61, Some(false))
        );
        assert_eq!(read.skipped.get(&Skip::NoTime), Some(&1));
    }

    #[test]
    fn the_tracking_servers_export_columns() {
        let read = csv(
            "id;attributes;deviceId;protocol;serverTime;deviceTime;fixTime;outdated;valid;latitude;longitude;altitude;speed;course\n\
             1;{\"ignition\":false,\"odometer\":5000};7;osmand;2026-08-19T21:30:05Z;2026-08-19T21:30:00Z;2026-08-19T21:30:00Z;false;true;14.6;-90.5;1500;10;180\n\
             2;{};7;osmand;x;x;2026-08-19T21:31:00Z;false;false;14.6;-90.5;1500;0;0\n",
        )
        .unwrap();
        assert_eq!(read.points.len(), 1);
        let p = &read.points[0];
        assert_eq!(p.unit.as_deref(), Some("7"));
        assert_eq!(
            (p.speed_kmh, p.heading_deg, p.ignition, p.odometer_m),
            (Some(18.52), Some(180.0), Some(false), Some(5000.0))
        );
        assert_eq!(read.skipped.get(&Skip::NoFix), Some(&1));
    }

    #[test]
    fn bad_rows_name_their_line() {
        let check = |text: &str, expected: &str| {
            let e = csv(text).unwrap_err().to_string();
            assert!(e.contains(expected), "{e}");
        };
        check("placa,hora\nA,1787175000\n", "línea 1: faltan columnas");
        check(
            "placa,hora,lat,lon\nA,1787175000,14.6,-90.5\nA,1787175015,norte,-90.5\n",
            "línea 3: la columna lat no es un número: 'norte'",
        );
        check(
            "placa,hora,lat,lon\nA,ayer,14.6,-90.5\n",
            "línea 2: la hora 'ayer' no se entiende",
        );
    }
}
