//! GPX 1.0 and 1.1: track points (and route points and waypoints with a time) with the `gpx`
//! crate.
//!
//! Owns the mapping from GPX to [`Point`]s: times are UTC (GPX says so; a time without a zone
//! is read as UTC too), GPX 1.0's `<speed>` is m/s; points without a time are skipped and
//! counted. The crate's errors (English, and without a line for most) become a Spanish
//! sentence naming the element, or the line and column of malformed XML.

use std::path::Path;

use super::{FileError, Point, Read, Skip};

pub fn read(path: &Path, bytes: &[u8]) -> Result<Read, FileError> {
    let gpx = ::gpx::read(bytes).map_err(|e| error(path, &e))?;
    let mut read = Read::default();
    let waypoints = gpx
        .tracks
        .iter()
        .flat_map(|t| t.segments.iter().flat_map(|s| s.points.iter()))
        .chain(gpx.routes.iter().flat_map(|r| r.points.iter()))
        .chain(gpx.waypoints.iter());
    for w in waypoints {
        let Some(time) = w.time else {
            read.skip(Skip::NoTime);
            continue;
        };
        let ts_utc = time::OffsetDateTime::from(time).unix_timestamp();
        let p = w.point();
        read.points.push(Point {
            speed_kmh: w.speed.filter(|s| *s >= 0.0).map(|s| s * 3.6),
            ..Point::at(ts_utc, p.y(), p.x())
        });
    }
    Ok(read)
}

/// The crate's error in Spanish.
fn error(path: &Path, e: &::gpx::errors::GpxError) -> FileError {
    use ::gpx::errors::GpxError as E;
    let element = |name: &str| format!("elemento <{name}>");
    match e {
        E::XmlParseError(xml) => {
            // xml-rs writes "line:column message"; the message itself is English.
            let text = xml.to_string();
            let place = text
                .split_whitespace()
                .next()
                .and_then(|pos| pos.split_once(':'))
                .and_then(|(l, c)| Some((l.parse::<u64>().ok()?, c.parse::<u64>().ok()?)));
            match place {
                Some((line, column)) => FileError::new(
                    path,
                    format!("línea {line}, columna {column}"),
                    "XML mal formado",
                ),
                None => FileError::new(path, "", "XML mal formado"),
            }
        }
        E::InvalidChildElement(child, parent) => FileError::new(
            path,
            element(parent),
            format!("contiene <{child}>, que no admite"),
        ),
        E::InvalidClosingTag(tag, parent) => {
            FileError::new(path, element(parent), format!("se cierra con </{tag}>"))
        }
        E::MissingClosingTag(tag) => FileError::new(path, element(tag), "no se cierra"),
        E::MissingOpeningTag(tag) => {
            FileError::new(path, element(tag), "falta la etiqueta de apertura")
        }
        E::InvalidElementLacksAttribute(attribute, tag) => FileError::new(
            path,
            element(tag),
            format!("le falta el atributo {attribute}"),
        ),
        // The crate names the coordinate in English and not the element (any point: trkpt,
        // rtept or wpt). GPX's longitude runs [-180, 180): the antimeridian is written −180.
        E::LonLatOutOfBoundsError(what, range, value) => {
            let (coordinate, hint) = if what.eq_ignore_ascii_case("longitude") {
                ("la longitud", " (el meridiano 180 se escribe -180)")
            } else {
                ("la latitud", "")
            };
            FileError::new(
                path,
                "un punto",
                format!("{coordinate} {value} está fuera del intervalo de GPX {range}{hint}"),
            )
        }
        E::Iso8601Error(_) => FileError::new(path, element("time"), "la hora no es ISO 8601"),
        E::ParseFloatError(_) => FileError::new(path, "", "un número no es válido"),
        E::UnknownVersionError(_) => FileError::new(
            path,
            element("gpx"),
            "versión de GPX desconocida (se leen 1.0 y 1.1)",
        ),
        E::TagOpenedTwice(tag) => FileError::new(path, element(tag), "aparece dos veces"),
        E::NoStringContent => FileError::new(path, "", "un elemento de texto está vacío"),
        E::EventParsingError(tag) => FileError::new(path, element(tag), "no se pudo leer"),
        _ => FileError::new(path, "", "no es un GPX válido"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpx(body: &str) -> Result<Read, FileError> {
        read(Path::new("t.gpx"), body.as_bytes())
    }

    const HEAD: &str = r#"<?xml version="1.0"?><gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1">"#;

    #[test]
    fn track_points_with_times_in_utc() {
        let body = format!(
            "{HEAD}<trk><trkseg>\
             <trkpt lat=\"14.6\" lon=\"-90.5\"><time>2026-08-19T21:30:00Z</time></trkpt>\
             <trkpt lat=\"14.61\" lon=\"-90.5\"><time>2026-08-19T15:30:15-06:00</time></trkpt>\
             <trkpt lat=\"14.62\" lon=\"-90.5\"></trkpt>\
             </trkseg></trk></gpx>"
        );
        let read = gpx(&body).unwrap();
        let times: Vec<i64> = read.points.iter().map(|p| p.ts_utc).collect();
        assert_eq!(times, [1_787_175_000, 1_787_175_015]);
        assert_eq!(read.skipped.get(&Skip::NoTime), Some(&1));
        assert_eq!((read.points[1].lat, read.points[1].lon), (14.61, -90.5));
    }

    #[test]
    fn gpx_1_0_speed_is_metres_per_second() {
        let body = r#"<?xml version="1.0"?><gpx version="1.0" creator="t"><trk><trkseg><trkpt lat="1" lon="2"><time>2026-08-19T21:30:00Z</time><speed>10</speed></trkpt></trkseg></trk></gpx>"#;
        assert_eq!(gpx(body).unwrap().points[0].speed_kmh, Some(36.0));
    }

    #[test]
    fn bad_files_say_where() {
        let check = |body: &str, expected: &str| {
            let e = gpx(body).unwrap_err().to_string();
            assert!(e.contains(expected), "{e}");
        };
        check(
            &format!("{HEAD}<trk><trkseg><trkpt lat=\"1\" lon=\"2\">\n<time>x"),
            "línea 2",
        );
        check(
            &format!("{HEAD}<trk><trkseg><trkpt lon=\"2\"/></trkseg></trk></gpx>"),
            "le falta el atributo lat",
        );
        check(
            &format!(
                "{HEAD}<trk><trkseg><trkpt lat=\"1\" lon=\"2\"><time>ayer</time></trkpt></trkseg></trk></gpx>"
            ),
            "la hora no es ISO 8601",
        );
        check("no es xml", "elemento <gpx>: falta la etiqueta de apertura");
        // A point on the antimeridian written 180 (GPX wants -180), and a latitude past a
        // pole: the coordinate in Spanish, whichever element holds it.
        check(
            &format!(
                "{HEAD}<wpt lat=\"-16.79\" lon=\"180\"><time>2026-08-19T21:30:00Z</time></wpt></gpx>"
            ),
            "un punto: la longitud 180 está fuera del intervalo de GPX [-180.0, 180.0) (el meridiano 180 se escribe -180)",
        );
        check(
            &format!("{HEAD}<trk><trkseg><trkpt lat=\"91\" lon=\"2\"/></trkseg></trk></gpx>"),
            "un punto: la latitud 91 está fuera del intervalo de GPX",
        );
    }
}
