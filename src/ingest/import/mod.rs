//! Position files in: GPX, CSV, GeoJSON and NMEA, read into [`Point`]s.
//!
//! Owns what the formats share: the [`Point`] a reader produces (UTC fix time, coordinates,
//! and whatever the file says of speed, heading, ignition, odometer and unit), the reasons a
//! point is left out ([`Skip`], counted per file), the Spanish error that refuses a whole
//! file ([`FileError`], naming the line or element), the format by extension, and filling
//! in speed and heading from the positions for files that do not carry them (the engine
//! needs speed to tell a stop from a drive). One reader per format, one file each; none
//! touches the database.

pub mod csv;
pub mod geojson;
pub mod gpx;
pub mod nmea;

use std::collections::BTreeMap;
use std::path::Path;

use chrono_tz::Tz;

use crate::geometry::earth::{LatLon, bearing_deg, distance_m};

/// A file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Gpx,
    Csv,
    GeoJson,
    Nmea,
}

impl Format {
    /// By the file's extension.
    pub fn of(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "gpx" => Some(Format::Gpx),
            "csv" | "txt" => Some(Format::Csv),
            "geojson" | "json" => Some(Format::GeoJson),
            "nmea" | "log" => Some(Format::Nmea),
            _ => None,
        }
    }
}

/// One position read from a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The unit, when the file names it (CSV, GeoJSON).
    pub unit: Option<String>,
    pub ts_utc: i64,
    pub lat: f64,
    pub lon: f64,
    pub speed_kmh: Option<f64>,
    pub heading_deg: Option<f64>,
    pub ignition: Option<bool>,
    pub odometer_m: Option<f64>,
}

impl Point {
    pub fn at(ts_utc: i64, lat: f64, lon: f64) -> Point {
        Point {
            unit: None,
            ts_utc,
            lat,
            lon,
            speed_kmh: None,
            heading_deg: None,
            ignition: None,
            odometer_m: None,
        }
    }
}

/// Why a point of a readable file was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Skip {
    NoTime,
    NoFix,
    Checksum,
    NotAPosition,
    /// At 0, 0: what a tracker without a fix writes.
    NullIsland,
    /// Before 2000: a tracker without a clock.
    Before2000,
    /// Ahead of the importer's clock by more than the receiver allows: a wrong clock or a
    /// local time written as UTC.
    Future,
}

impl Skip {
    pub fn reason(self) -> &'static str {
        match self {
            Skip::NoTime => "sin hora",
            Skip::NoFix => "sin fix válido",
            Skip::Checksum => "suma de control errónea",
            Skip::NotAPosition => "no son posiciones",
            Skip::NullIsland => "en la posición 0, 0 (sin fix)",
            Skip::Before2000 => "con hora anterior al año 2000 (rastreador sin reloj)",
            Skip::Future => {
                "con hora en el futuro (más de 10 min por delante del reloj: hora local escrita como UTC o reloj mal)"
            }
        }
    }
}

/// What a reader made of a file.
#[derive(Debug, Clone, Default)]
pub struct Read {
    pub points: Vec<Point>,
    pub skipped: BTreeMap<Skip, usize>,
}

impl Read {
    pub fn skip(&mut self, why: Skip) {
        *self.skipped.entry(why).or_default() += 1;
    }
}

/// A file refused whole: where, and what is wrong, in Spanish.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: {place}{message}")]
pub struct FileError {
    pub file: String,
    /// "línea 12: ", "elemento <trkpt>: " or nothing.
    pub place: String,
    pub message: String,
}

impl FileError {
    pub fn new(file: &Path, place: impl Into<String>, message: impl Into<String>) -> FileError {
        let place = place.into();
        FileError {
            file: file.display().to_string(),
            place: if place.is_empty() {
                place
            } else {
                format!("{place}: ")
            },
            message: message.into(),
        }
    }

    pub fn at_line(file: &Path, line: usize, message: impl Into<String>) -> FileError {
        FileError::new(file, format!("línea {line}"), message)
    }
}

/// Reads `path` as `format`; `zone` is the zone of times written without one (CSV). Points
/// the receiver would refuse although the file is readable — at 0, 0, before 2000, or
/// ahead of `now_utc` by more than it allows — are left out and counted, so that one bad
/// point does not cost the good ones.
pub fn read(path: &Path, format: Format, zone: Tz, now_utc: i64) -> Result<Read, FileError> {
    let bytes = std::fs::read(path).map_err(|e| {
        FileError::new(
            path,
            "",
            match e.kind() {
                std::io::ErrorKind::NotFound => "no existe".to_owned(),
                std::io::ErrorKind::PermissionDenied => "no hay permiso para leerlo".to_owned(),
                std::io::ErrorKind::IsADirectory => "es una carpeta, no un archivo".to_owned(),
                _ => "no se pudo leer".to_owned(),
            },
        )
    })?;
    let mut read = match format {
        Format::Gpx => gpx::read(path, &bytes)?,
        Format::Csv => csv::read(path, &bytes, zone)?,
        Format::GeoJson => geojson::read(path, &bytes, zone)?,
        Format::Nmea => nmea::read(path, &bytes)?,
    };
    for p in &read.points {
        check_coordinates(path, p)?;
    }
    let mut kept = Vec::with_capacity(read.points.len());
    for point in std::mem::take(&mut read.points) {
        match implausible(&point, now_utc) {
            Some(why) => read.skip(why),
            None => kept.push(point),
        }
    }
    read.points = kept;
    // After leaving out what is implausible, so that no speed comes from a jump to 0, 0.
    derive_motion(&mut read.points);
    Ok(read)
}

/// Why the receiver would refuse `point` (its rules, `ingest::osmand`), if it would.
fn implausible(point: &Point, now_utc: i64) -> Option<Skip> {
    use crate::ingest::osmand::{Refusal, check_position, check_time};
    if check_position(point.lat, point.lon).is_err() {
        return Some(Skip::NullIsland);
    }
    match check_time(point.ts_utc, now_utc) {
        Ok(()) => None,
        Err(Refusal::Before2000) => Some(Skip::Before2000),
        Err(_) => Some(Skip::Future),
    }
}

fn check_coordinates(path: &Path, p: &Point) -> Result<(), FileError> {
    if !(-90.0..=90.0).contains(&p.lat) || !(-180.0..=180.0).contains(&p.lon) {
        return Err(FileError::new(
            path,
            "",
            format!(
                "la posición {}, {} está fuera de rango (latitud −90..90, longitud −180..180)",
                p.lat, p.lon
            ),
        ));
    }
    Ok(())
}

/// Fills missing speeds and headings from the positions: per unit in time order, the
/// distance and bearing from the previous point (from the next one for the first). A point
/// closer than a metre to its neighbour keeps the previous heading.
pub fn derive_motion(points: &mut [Point]) {
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|a, b| {
        (&points[*a].unit, points[*a].ts_utc).cmp(&(&points[*b].unit, points[*b].ts_utc))
    });
    let mut heading = 0.0;
    for (k, &i) in order.iter().enumerate() {
        let same_unit = |j: usize| points[j].unit == points[i].unit;
        let neighbour = if k > 0 && same_unit(order[k - 1]) {
            Some((order[k - 1], i))
        } else {
            order.get(k + 1).filter(|j| same_unit(**j)).map(|j| (i, *j))
        };
        if k == 0 || !same_unit(order[k - 1]) {
            heading = 0.0;
        }
        let Some((a, b)) = neighbour else {
            points[i].speed_kmh.get_or_insert(0.0);
            points[i].heading_deg.get_or_insert(heading);
            continue;
        };
        let (pa, pb) = (
            LatLon::new(points[a].lat, points[a].lon),
            LatLon::new(points[b].lat, points[b].lon),
        );
        let metres = distance_m(pa, pb);
        let seconds = (points[b].ts_utc - points[a].ts_utc) as f64;
        if metres >= 1.0 {
            heading = bearing_deg(pa, pb);
        }
        let point = &mut points[i];
        point.speed_kmh.get_or_insert(if seconds > 0.0 {
            metres / seconds * 3.6
        } else {
            0.0
        });
        point.heading_deg.get_or_insert(heading);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implausible_points_are_left_out_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.csv");
        let now = 1_796_181_287;
        let rows = [
            format!("{},47.53,-52.76", now - 60),
            format!("{},0,0", now - 50),
            format!("{},0.000000,0.000000", now - 40),
            format!("{},47.5301,-52.7601", now - 30),
            format!("{},47.5302,-52.7602", now + 90),
            format!("{},47.5303,-52.7603", now + 6 * 3600),
            "1970-01-01T00:00:00Z,47.5304,-52.7604".to_owned(),
        ];
        std::fs::write(&path, format!("ts_utc,lat,lon\n{}\n", rows.join("\n"))).unwrap();
        let read = read(&path, Format::Csv, chrono_tz::UTC, now).unwrap();
        let times: Vec<i64> = read.points.iter().map(|p| p.ts_utc).collect();
        assert_eq!(times, [now - 60, now - 30, now + 90]);
        let skipped: Vec<(Skip, usize)> = read.skipped.into_iter().collect();
        assert_eq!(
            skipped,
            [
                (Skip::NullIsland, 2),
                (Skip::Before2000, 1),
                (Skip::Future, 1)
            ]
        );
        // No speed from a jump to 0, 0: the kept points are metres apart.
        assert!(read.points.iter().all(|p| p.speed_kmh.unwrap() < 10.0));
    }

    #[test]
    fn missing_speed_and_heading_come_from_the_positions() {
        // 100 m north in 10 s, then standing; a given speed is kept.
        let mut points = vec![
            Point::at(10, 14.600_899_3, -90.5),
            Point::at(0, 14.6, -90.5),
            Point {
                speed_kmh: Some(5.0),
                ..Point::at(20, 14.600_899_3, -90.5)
            },
        ];
        derive_motion(&mut points);
        let kmh: Vec<f64> = points
            .iter()
            .map(|p| (p.speed_kmh.unwrap() * 10.0).round() / 10.0)
            .collect();
        assert_eq!(kmh, [36.0, 36.0, 5.0]);
        let headings: Vec<f64> = points
            .iter()
            .map(|p| p.heading_deg.unwrap().round())
            .collect();
        assert_eq!(headings, [0.0, 0.0, 0.0]);
    }
}
