//! `flota exportar`: one unit's day to a file, or to stdout with `--salida -`.
//!
//! Owns the verb: the fleet context over the database (read-only, no online geocoding), which
//! day of which unit, the file name (`PLACA_FECHA.ext` by default) written whole or not at
//! all, and the summary and warning on stderr. The formats are `crate::export`'s.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;

use super::{Io, Settings};
use crate::cli::ExportArgs;
use crate::export;
use crate::fleet::Fleet;
use crate::fleet::places::Geocoder;
use crate::map::TileConfig;
use crate::mcp::ToolError;
use crate::plumbing::clock::Clock;
use crate::plumbing::output::Staged;

pub fn run(args: ExportArgs, io: &mut Io, settings: &Settings) -> anyhow::Result<ExitCode> {
    let db = settings.db_location(args.db.as_deref())?;
    let ahora = settings.ahora(args.ahora)?;
    let fleet = Arc::new(Fleet::new(db, ahora, Geocoder::new(None), Clock::system()));
    let spanish = |e: ToolError| anyhow::anyhow!("{e}");
    let snapshot = fleet.snapshot().map_err(spanish)?;
    let track = fleet
        .day_track(&snapshot, &args.placa, &args.fecha)
        .map_err(spanish)?;
    // Only a picture fetches tiles, so only a picture cares about a bad FLOTA_TILES_LIMITE_S.
    let tiles = match args.formato {
        export::Format::Png => settings.tiles()?,
        export::Format::Geojson | export::Format::Gpx => TileConfig::offline(),
    };
    let (bytes, what) = export::render(args.formato, &track, &snapshot, tiles)?;
    let summary = format!(
        "{} {}: {} ({what})",
        track.vehicle.plate,
        track.date,
        args.formato.extension().to_uppercase()
    );
    let default_name = || {
        let extension = args.formato.extension();
        PathBuf::from(format!(
            "{}_{}.{extension}",
            track.vehicle.plate, track.date
        ))
    };
    match args.salida {
        Some(path) if path == Path::new("-") => {
            io.stdout.write_all(&bytes)?;
            io.stdout.flush()?;
            writeln!(io.stderr, "{summary}")?;
        }
        salida => {
            let path = salida.unwrap_or_else(default_name);
            write_whole(&path, &bytes)?;
            writeln!(io.stderr, "{summary} → {}", path.display())?;
        }
    }
    if let Some(aviso) = &track.aviso {
        writeln!(io.stderr, "aviso: {aviso}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `bytes` at `path`, or nothing there (and the previous file intact) if writing fails.
fn write_whole(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let staged = Staged::prepare(path)?;
    std::fs::write(staged.temp(), bytes)
        .with_context(|| format!("no se pudo escribir {}", staged.temp().display()))?;
    staged
        .commit()
        .with_context(|| format!("no se pudo escribir {}", path.display()))?;
    Ok(())
}
