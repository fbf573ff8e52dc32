//! NMEA 0183 logs: `RMC` and `GGA` sentences of any talker (`$GPRMC`, `$GNGGA`…).
//!
//! Owns the sentence parsing: checksums (a wrong one skips the sentence and is counted), RMC's
//! UTC date, time, position, speed (knots) and course, its status (`V`: no fix, skipped);
//! GGA's time and position (fix quality 0 skipped), dated by the nearest RMC before it (or
//! the first one, for GGA lines before any RMC; a log without RMC has no dates, and its
//! points are skipped "sin hora"). RMC and GGA of the same second are one point. Other
//! sentences are read past. A malformed RMC or GGA field refuses the file, naming its line.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{NaiveDate, NaiveTime};

use super::{FileError, Point, Read, Skip};

const KNOT_KMH: f64 = 1.852;

/// A sentence's fields, with its checksum checked.
enum Sentence<'a> {
    Rmc(Vec<&'a str>),
    Gga(Vec<&'a str>),
    Other,
    BadChecksum,
}

fn sentence(line: &str) -> Sentence<'_> {
    let Some(body) = line.trim().strip_prefix('$') else {
        return Sentence::Other;
    };
    let (data, checksum) = match body.split_once('*') {
        Some((data, sum)) => (data, Some(sum.trim())),
        None => (body, None),
    };
    if let Some(sum) = checksum {
        let computed = data.bytes().fold(0u8, |acc, b| acc ^ b);
        if u8::from_str_radix(sum, 16).ok() != Some(computed) {
            return Sentence::BadChecksum;
        }
    }
    let fields: Vec<&str> = data.split(',').collect();
    match fields[0].get(2..) {
        Some("RMC") => Sentence::Rmc(fields),
        Some("GGA") => Sentence::Gga(fields),
        _ => Sentence::Other,
    }
}

/// `ddmm.mmmm` with a hemisphere letter, as degrees.
fn coordinate(value: &str, hemisphere: &str, degree_digits: usize) -> Option<f64> {
    if value.len() < degree_digits + 2 {
        return None;
    }
    let degrees: f64 = value.get(..degree_digits)?.parse().ok()?;
    let minutes: f64 = value.get(degree_digits..)?.parse().ok()?;
    let signed = degrees + minutes / 60.0;
    match hemisphere {
        "N" | "E" => Some(signed),
        "S" | "W" => Some(-signed),
        _ => None,
    }
}

fn time_of_day(value: &str) -> Option<NaiveTime> {
    let whole = value.split('.').next()?;
    NaiveTime::parse_from_str(whole, "%H%M%S").ok()
}

pub fn read(path: &Path, bytes: &[u8]) -> Result<Read, FileError> {
    let text = String::from_utf8_lossy(bytes);
    let mut read = Read::default();
    let mut points: BTreeMap<i64, Point> = BTreeMap::new();
    // GGA lines wait for a date: (line, time of day, lat, lon).
    let mut undated: Vec<(NaiveTime, f64, f64, Option<NaiveDate>)> = Vec::new();
    let mut last_date: Option<NaiveDate> = None;
    let mut sentences = 0usize;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let bad = |what: &str| FileError::at_line(path, number, format!("{what} no es válido"));
        match sentence(line) {
            Sentence::Other => {}
            Sentence::BadChecksum => read.skip(Skip::Checksum),
            Sentence::Rmc(f) => {
                sentences += 1;
                if f.len() < 10 {
                    return Err(FileError::at_line(
                        path,
                        number,
                        "la sentencia RMC está incompleta",
                    ));
                }
                if f[2] != "A" {
                    read.skip(Skip::NoFix);
                    continue;
                }
                let time = time_of_day(f[1]).ok_or_else(|| bad("la hora RMC"))?;
                let date =
                    NaiveDate::parse_from_str(f[9], "%d%m%y").map_err(|_| bad("la fecha RMC"))?;
                let lat = coordinate(f[3], f[4], 2).ok_or_else(|| bad("la latitud RMC"))?;
                let lon = coordinate(f[5], f[6], 3).ok_or_else(|| bad("la longitud RMC"))?;
                let optional = |v: &str, what: &str| {
                    if v.is_empty() {
                        Ok(None)
                    } else {
                        v.parse::<f64>().map(Some).map_err(|_| bad(what))
                    }
                };
                let ts = date.and_time(time).and_utc().timestamp();
                points.insert(
                    ts,
                    Point {
                        speed_kmh: optional(f[7], "la velocidad RMC")?.map(|kn| kn * KNOT_KMH),
                        heading_deg: optional(f[8], "el rumbo RMC")?,
                        ..Point::at(ts, lat, lon)
                    },
                );
                last_date = Some(date);
            }
            Sentence::Gga(f) => {
                sentences += 1;
                if f.len() < 7 {
                    return Err(FileError::at_line(
                        path,
                        number,
                        "la sentencia GGA está incompleta",
                    ));
                }
                if f[6] == "0" || f[6].is_empty() {
                    read.skip(Skip::NoFix);
                    continue;
                }
                let time = time_of_day(f[1]).ok_or_else(|| bad("la hora GGA"))?;
                let lat = coordinate(f[2], f[3], 2).ok_or_else(|| bad("la latitud GGA"))?;
                let lon = coordinate(f[4], f[5], 3).ok_or_else(|| bad("la longitud GGA"))?;
                undated.push((time, lat, lon, last_date));
            }
        }
    }
    if sentences == 0 {
        return Err(FileError::new(
            path,
            "",
            "no hay sentencias NMEA RMC ni GGA",
        ));
    }
    let first_date = points
        .values()
        .next()
        .map(|p| chrono::DateTime::from_timestamp(p.ts_utc, 0).map(|d| d.date_naive()));
    for (time, lat, lon, date) in undated {
        let Some(date) = date.or(first_date.flatten()) else {
            read.skip(Skip::NoTime);
            continue;
        };
        let ts = date.and_time(time).and_utc().timestamp();
        points.entry(ts).or_insert_with(|| Point::at(ts, lat, lon));
    }
    read.points = points.into_values().collect();
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nmea(text: &str) -> Result<Read, FileError> {
        read(Path::new("t.nmea"), text.as_bytes())
    }

    /// A sentence with its checksum.
    fn signed(data: &str) -> String {
        let sum = data.bytes().fold(0u8, |acc, b| acc ^ b);
        format!("${data}*{sum:02X}")
    }

    #[test]
    fn rmc_and_gga_as_one_point_per_second() {
        let text = [
            signed("GPGGA,213000,1436.000,N,09030.000,W,1,08,0.9,1500,M,,M,,"),
            signed("GPRMC,213000,A,1436.000,N,09030.000,W,10.0,90.0,190826,,,A"),
            signed("GNGGA,213015,1436.060,N,09030.000,W,1,08,0.9,1500,M,,M,,"),
            signed("GPRMC,213030,V,1436.000,N,09030.000,W,0,0,190826,,,N"),
            "$GPRMC,213045,A,1436.000,N,09030.000,W,0,0,190826,,,A*00".to_owned(),
            signed("GPGSV,3,1,11,01,02,03,04"),
        ]
        .join("\r\n");
        let read = nmea(&text).unwrap();
        let shown: Vec<(i64, f64, f64, Option<f64>)> = read
            .points
            .iter()
            .map(|p| {
                (
                    p.ts_utc,
                    (p.lat * 1e4).round() / 1e4,
                    (p.lon * 1e4).round() / 1e4,
                    p.speed_kmh,
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                (1_787_175_000, 14.6, -90.5, Some(18.52)),
                (1_787_175_015, 14.601, -90.5, None)
            ]
        );
        assert_eq!(read.skipped.get(&Skip::NoFix), Some(&1));
        assert_eq!(read.skipped.get(&Skip::Checksum), Some(&1));
    }

    #[test]
    fn bad_logs_name_their_line() {
        let check = |text: &str, expected: &str| {
            let e = nmea(text).unwrap_err().to_string();
            assert!(e.contains(expected), "{e}");
        };
        check("hola\nmundo\n", "no hay sentencias NMEA");
        check(
            &format!(
                "\n{}",
                signed("GPRMC,213000,A,14x6.000,N,09030.000,W,10.0,90.0,190826,,,A")
            ),
            "línea 2: la latitud RMC no es válido",
        );
        check(
            &signed("GPRMC,213000,A"),
            "línea 1: la sentencia RMC está incompleta",
        );
    }
}
