//! `flota importar`: position files into a live database, with the analysis kept current.
//!
//! Owns the verb: which database (created empty when missing), each file's format (flag or
//! extension) and unit (`--placa`, or the file's own column), one transaction per file for
//! its positions (a bad file leaves nothing behind, a re-import adds nothing) and then the
//! analysis of the units they touched (until it commits the change log says those units'
//! detections are behind), a summary per file on stderr, and exit 1 when a file was
//! refused. The readers are `crate::ingest::import`'s; the session `crate::ingest::session`'s.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use chrono_tz::Tz;

use super::{Io, Settings};
use crate::cli::{ImportArgs, ImportFormat};
use crate::ingest::devices::Devices;
use crate::ingest::import::{self, FileError, Format, Point};
use crate::ingest::session::{self, Flow, Outcome, Position, Unit};
use crate::plumbing::clock::Clock;
use crate::store::{Reading, Store, StoredRow};

/// What became of one file.
#[derive(Debug, Default)]
struct Summary {
    read: usize,
    stored: usize,
    already: usize,
    repeated: usize,
    skipped: Vec<(&'static str, usize)>,
    units: BTreeMap<String, usize>,
    /// Units the database did not have, added by this file (named in its line, so that a
    /// device id never seen, or a plate written another way, does not pass unnoticed).
    new_units: std::collections::BTreeSet<String>,
    span: Option<(i64, i64)>,
}

/// Imports every file; exit 1 if any was refused.
pub fn run(args: ImportArgs, io: &mut Io, settings: &Settings) -> anyhow::Result<ExitCode> {
    let db = settings.db_location(args.db.as_deref())?;
    let clock = Clock::system();
    super::receive::ensure_database(&db, args.zona, &clock)?;
    let store = Store::open_live(db)?;
    store.mark_live()?;
    let zone = args.zona.unwrap_or(store.meta()?.zone);
    let mut devices = Devices::new(&store.vehicles()?, &store.devices()?);
    let mut lines: Vec<String> = Vec::new();
    let mut failed = false;
    let mut next = 0usize;
    session::run(&store, &clock, |session| {
        while let Some(path) = args.archivos.get(next) {
            match prepare(path, &args, zone, &devices, clock.now_utc()) {
                Err(e) => {
                    lines.push(format!("error: {e}"));
                    failed = true;
                }
                Ok((positions, mut summary)) => {
                    let Flow::Done(outcomes) = session.write(&positions)? else {
                        return Ok(Flow::Resync);
                    };
                    tally(&mut summary, &positions, &outcomes, &mut devices);
                    lines.push(describe(path, &summary, zone));
                }
            }
            next += 1;
        }
        session.publish_all()
    })?;
    for line in lines {
        writeln!(io.stderr, "{line}")?;
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Reads a file into positions (one per unit and second), or says why it is refused.
fn prepare(
    path: &Path,
    args: &ImportArgs,
    zone: Tz,
    devices: &Devices,
    now_utc: i64,
) -> Result<(Vec<Position>, Summary), FileError> {
    let format = match args.formato {
        Some(ImportFormat::Gpx) => Format::Gpx,
        Some(ImportFormat::Csv) => Format::Csv,
        Some(ImportFormat::Geojson) => Format::GeoJson,
        Some(ImportFormat::Nmea) => Format::Nmea,
        None => Format::of(path).ok_or_else(|| {
            FileError::new(
                path,
                "",
                "no se sabe el formato por la extensión: use --formato gpx, csv, geojson o nmea",
            )
        })?,
    };
    let read = import::read(path, format, zone, now_utc)?;
    let mut summary = Summary {
        read: read.points.len(),
        skipped: read.skipped.iter().map(|(s, n)| (s.reason(), *n)).collect(),
        ..Summary::default()
    };
    let mut seen = std::collections::HashSet::new();
    let mut positions = Vec::with_capacity(read.points.len());
    for point in &read.points {
        let plate = point
            .unit
            .as_deref()
            .or(args.placa.as_deref())
            .ok_or_else(|| {
                FileError::new(
                    path,
                    "",
                    "el archivo no dice de qué unidad son las posiciones: indíquela con --placa",
                )
            })?;
        let unit = match devices.find(plate) {
            Some(id) => Unit::Vehicle(id),
            None => Unit::Register(plate.trim().to_owned()),
        };
        if !seen.insert((unit.clone(), point.ts_utc)) {
            summary.repeated += 1;
            continue;
        }
        positions.push(Position {
            unit,
            ts_utc: point.ts_utc,
            row: StoredRow::encode(&reading(point), 0),
        });
    }
    Ok((positions, summary))
}

fn reading(point: &Point) -> Reading {
    Reading {
        lat: point.lat,
        lon: point.lon,
        speed_kmh: point.speed_kmh.unwrap_or(0.0),
        heading_deg: point.heading_deg.unwrap_or(0.0),
        // A file that does not say is taken as ignition on, as the receiver does.
        ignition: point.ignition.unwrap_or(true),
        odometer_m: point.odometer_m,
    }
}

fn tally(
    summary: &mut Summary,
    positions: &[Position],
    outcomes: &[Outcome],
    devices: &mut Devices,
) {
    for (position, outcome) in positions.iter().zip(outcomes) {
        let id = match outcome {
            Outcome::Stored(id) => {
                summary.stored += 1;
                *id
            }
            Outcome::Duplicate(id) => {
                summary.already += 1;
                *id
            }
        };
        let name = match &position.unit {
            Unit::Register(plate) => {
                devices.add(plate, id);
                summary.new_units.insert(plate.clone());
                plate.clone()
            }
            Unit::Vehicle(id) => format!("id {id}"),
        };
        *summary.units.entry(name).or_default() += 1;
        let t = position.ts_utc;
        summary.span = Some(summary.span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
    }
}

/// One Spanish line: reports, span, units, new, already there, skipped and why.
fn describe(path: &Path, s: &Summary, zone: Tz) -> String {
    let local = |t: i64| {
        chrono::DateTime::from_timestamp(t, 0)
            .map(|d| d.with_timezone(&zone).format("%Y-%m-%d %H:%M").to_string())
            .unwrap_or_default()
    };
    let span = s
        .span
        .map(|(a, b)| format!(" del {} al {} ({})", local(a), local(b), zone.name()))
        .unwrap_or_default();
    let mut skipped: Vec<String> = s
        .skipped
        .iter()
        .map(|(why, n)| format!("{n} {why}"))
        .collect();
    if s.repeated > 0 {
        skipped.push(format!("{} repetidas en el archivo", s.repeated));
    }
    let skipped = if skipped.is_empty() {
        String::new()
    } else {
        format!("; omitidas: {}", skipped.join(", "))
    };
    let added = if s.new_units.is_empty() {
        String::new()
    } else {
        let names: Vec<&str> = s.new_units.iter().map(String::as_str).collect();
        format!(
            "; unidades dadas de alta (no estaban en la base, tipo desconocido): {}",
            names.join(", ")
        )
    };
    format!(
        "{}: {} posiciones{span}, {} unidades; {} nuevas, {} ya estaban{skipped}{added}",
        path.display(),
        s.read,
        s.units.len(),
        s.stored,
        s.already
    )
}
