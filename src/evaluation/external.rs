//! Detections exported by another tracking platform, read from CSV and scored like flota's.
//!
//! Owns the file format of `flota evaluar --detecciones` (docs/ingesta.md, "Evaluar otra
//! plataforma"): a header, then one detection per row — `placa`, `tipo`, `inicio`, `fin`
//! (empty: still going on at "now"), and optionally `geocerca` (visits), `fin_de_jornada`
//! (a stop that is the day's parking: not a long-stop alert) and `desde_inicio_datos`. Types
//! are flota's words (`parada`, `exceso_velocidad`, `perdida_senal`, `visita_geocerca`) or
//! common English ones (`stop`, `overspeed`, `signal_loss`, `geofence`); `viaje`/`trip` rows
//! become the stops between a unit's consecutive trips. Times are Unix seconds or ISO 8601;
//! without a zone, in the unit's (the scenario's unless the truth gives it its own). Comma or semicolon separated.

use std::path::Path;

use chrono::NaiveDateTime;
use chrono_tz::Tz;

use super::intervals::Detected;
use crate::engine::EventKind;

/// A detection file refused: where and why, in Spanish.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct DetectionsError {
    pub file: String,
    pub message: String,
}

/// One row's kind: an event, or a trip (whose gaps are stops).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RowKind {
    Event(EventKind),
    Trip,
}

fn kind(word: &str) -> Option<RowKind> {
    let word = word.trim().to_ascii_lowercase();
    if let Some(kind) = EventKind::from_name(&word) {
        return Some(RowKind::Event(kind));
    }
    Some(match word.as_str() {
        "stop" | "stops" | "parking" => RowKind::Event(EventKind::Stop),
        "overspeed" | "deviceoverspeed" | "exceso" => RowKind::Event(EventKind::Overspeed),
        "signal_loss" | "gap" | "perdida" => RowKind::Event(EventKind::Gap),
        "geofence" | "visit" | "visita" => RowKind::Event(EventKind::Visit),
        "viaje" | "trip" | "trips" => RowKind::Trip,
        _ => return None,
    })
}

/// A time: Unix seconds (or milliseconds), ISO 8601, or `AAAA-MM-DD HH:MM[:SS]` in `zone`.
fn time(text: &str, zone: Tz) -> Option<i64> {
    crate::ingest::osmand::parse_time(text, zone)
        .ok()
        .or_else(|| {
            NaiveDateTime::parse_from_str(text.trim(), "%Y-%m-%d %H:%M")
                .ok()
                // A repeated hour is its first occurrence; a skipped one is no time at all.
                .and_then(|local| {
                    crate::calendar::instant(zone, crate::calendar::WallTime::naive(local)).ok()
                })
        })
}

/// Reads the detections of `path`; `zone_of(plate)` for times written without a zone.
pub fn read(path: &Path, zone_of: &dyn Fn(&str) -> Tz) -> Result<Vec<Detected>, DetectionsError> {
    let fail = |message: String| DetectionsError {
        file: path.display().to_string(),
        message,
    };
    let bytes = std::fs::read(path).map_err(|_| fail("no se pudo leer".to_owned()))?;
    let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    let delimiter = if first.contains(&b';') && !first.contains(&b',') {
        b';'
    } else {
        b','
    };
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .flexible(true)
        .from_reader(bytes.as_slice());
    let header = reader
        .headers()
        .map_err(|_| fail("línea 1: no es CSV válido".to_owned()))?
        .clone();
    let column = |names: &[&str]| {
        header.iter().position(|h| {
            names.contains(
                &h.trim()
                    .trim_start_matches('\u{feff}')
                    .to_ascii_lowercase()
                    .as_str(),
            )
        })
    };
    let (Some(plate), Some(kind_at), Some(start)) = (
        column(&["placa", "plate", "device", "dispositivo"]),
        column(&["tipo", "type", "kind"]),
        column(&["inicio", "start", "desde", "starttime"]),
    ) else {
        return Err(fail(
            "línea 1: faltan columnas: se necesitan placa, tipo, inicio (y fin)".to_owned(),
        ));
    };
    let end = column(&["fin", "end", "hasta", "endtime"]);
    let fence = column(&["geocerca", "geofence"]);
    let end_of_day = column(&["fin_de_jornada"]);
    let from_start = column(&["desde_inicio_datos"]);
    let mut events = Vec::new();
    let mut trips: Vec<(String, i64, Option<i64>)> = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| {
            fail(format!(
                "línea {}: no es CSV válido",
                e.position().map_or(0, |p| p.line())
            ))
        })?;
        let line = record.position().map_or(0, |p| p.line());
        let cell = |i: Option<usize>| {
            i.and_then(|i| record.get(i))
                .map(str::trim)
                .filter(|v| !v.is_empty())
        };
        let flag = |i: Option<usize>| {
            cell(i).is_some_and(|v| {
                matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "si" | "sí")
            })
        };
        let word = cell(Some(kind_at)).unwrap_or_default();
        let row_kind =
            kind(word).ok_or_else(|| fail(format!("línea {line}: tipo desconocido '{word}'")))?;
        let plate = cell(Some(plate))
            .ok_or_else(|| fail(format!("línea {line}: falta la placa")))?
            .to_owned();
        let zone = zone_of(&plate);
        let when = |i: Option<usize>, what: &str| -> Result<Option<i64>, DetectionsError> {
            cell(i)
                .map(|t| {
                    time(t, zone)
                        .ok_or_else(|| fail(format!("línea {line}: {what} '{t}' no se entiende")))
                })
                .transpose()
        };
        let start = when(Some(start), "el inicio")?
            .ok_or_else(|| fail(format!("línea {line}: falta el inicio")))?;
        let end = when(end, "el fin")?;
        match row_kind {
            RowKind::Trip => trips.push((plate, start, end)),
            RowKind::Event(kind) => events.push(Detected {
                plate,
                kind,
                start,
                end,
                fence: cell(fence).unwrap_or_default().to_owned(),
                end_of_day: flag(end_of_day),
                from_data_start: flag(from_start),
            }),
        }
    }
    events.extend(stops_between(trips));
    Ok(events)
}

/// The stops between each unit's consecutive trips.
fn stops_between(mut trips: Vec<(String, i64, Option<i64>)>) -> Vec<Detected> {
    trips.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    trips
        .windows(2)
        .filter(|w| w[0].0 == w[1].0)
        .filter_map(|w| {
            let from = w[0].2?;
            (w[1].1 > from).then(|| Detected {
                plate: w[0].0.clone(),
                kind: EventKind::Stop,
                start: from,
                end: Some(w[1].1),
                fence: String::new(),
                end_of_day: false,
                from_data_start: false,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str) -> Result<Vec<Detected>, DetectionsError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.csv");
        std::fs::write(&path, text).unwrap();
        read(&path, &|_| chrono_tz::America::Guatemala).map_err(|e| DetectionsError {
            file: "d.csv".into(),
            ..e
        })
    }

    #[test]
    fn rows_of_every_kind_and_trips_as_stops() {
        let found = read_text(
            "placa,tipo,inicio,fin,geocerca\n\
             P-1,parada,2026-08-19 10:00:00,2026-08-19T16:20:00Z,\n\
             P-1,overspeed,1787175000,1787175060,\n\
             P-1,visita_geocerca,2026-08-19T10:00:00-06:00,,CEDIS\n\
             P-2,trip,1000,2000,\n\
             P-2,viaje,2600,3000,\n",
        )
        .unwrap();
        let shown: Vec<(&str, EventKind, i64, Option<i64>, &str)> = found
            .iter()
            .map(|d| (d.plate.as_str(), d.kind, d.start, d.end, d.fence.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                (
                    "P-1",
                    EventKind::Stop,
                    1_787_155_200,
                    Some(1_787_156_400),
                    ""
                ),
                (
                    "P-1",
                    EventKind::Overspeed,
                    1_787_175_000,
                    Some(1_787_175_060),
                    ""
                ),
                ("P-1", EventKind::Visit, 1_787_155_200, None, "CEDIS"),
                ("P-2", EventKind::Stop, 2000, Some(2600), ""),
            ]
        );
    }

    #[test]
    fn bad_files_name_their_line() {
        let check = |text: &str, expected: &str| {
            let e = read_text(text).unwrap_err().to_string();
            assert!(e.contains(expected), "{e}");
        };
        check("placa,inicio\nP-1,1\n", "línea 1: faltan columnas");
        check(
            "placa,tipo,inicio,fin\nP-1,parada,1,2\nP-1,frenazo,1,2\n",
            "línea 3: tipo desconocido 'frenazo'",
        );
        check(
            "placa,tipo,inicio,fin\nP-1,parada,ayer,2\n",
            "línea 2: el inicio 'ayer' no se entiende",
        );
    }
}
