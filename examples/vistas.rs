//! The map views' documents and data, for the browser test (tests/browser/) and for trying the
//! views by hand, until `flota servir` serves them itself (resources and the `vista` field of
//! `mapa_recorrido`/`mapa_flota` come with the server side of the MCP Apps work).
//!
//! - `vistas html recorrido|flota`: the self-contained document, as `resources/read` will
//!   return it, on stdout.
//! - `vistas datos --db BASE --placa P --fecha F [--ahora AAAA-MM-DDTHH:MM]`: JSON on stdout
//!   with `recorrido` (the `vista` of `mapa_recorrido` for that unit and day), `flota` (the
//!   `vista` of `mapa_flota`) and `unidades_activas` (the plates `mapa_flota` will list). Both
//!   built by `flota::ui::datos` from the database, read-only; tiles as `FLOTA_TILES_URL` says.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, bail};
use chrono::NaiveDateTime;
use flota::fleet::Fleet;
use flota::fleet::places::Geocoder;
use flota::plumbing::clock::Clock;
use flota::settings::Settings;
use flota::ui::{self, datos};
use serde_json::json;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let text = match args.first().map(String::as_str) {
        Some("html") => match args.get(1).map(String::as_str) {
            Some("recorrido") => ui::recorrido_html().to_owned(),
            Some("flota") => ui::flota_html().to_owned(),
            _ => bail!("uso: vistas html recorrido|flota"),
        },
        Some("datos") => data(&args[1..])?,
        _ => bail!(
            "uso: vistas html recorrido|flota | vistas datos --db BASE --placa P --fecha F [--ahora AAAA-MM-DDTHH:MM]"
        ),
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

fn data(args: &[String]) -> anyhow::Result<String> {
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let db = PathBuf::from(value("--db").context("falta --db")?);
    let placa = value("--placa").context("falta --placa")?;
    let fecha = value("--fecha").context("falta --fecha")?;
    let ahora = value("--ahora")
        .map(|t| NaiveDateTime::parse_from_str(&t, "%Y-%m-%dT%H:%M"))
        .transpose()
        .context("--ahora: AAAA-MM-DDTHH:MM")?;
    let fleet = Fleet::new(
        &db,
        ahora.map(flota::calendar::WallTime::naive),
        Geocoder::new(None),
        Clock::system(),
    );
    let snapshot = fleet.snapshot().map_err(|e| anyhow::anyhow!("{e}"))?;
    let track = fleet
        .day_track(&snapshot, &placa, &fecha)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let teselas = datos::Teselas::from_config(&Settings::from_env().tiles);
    let activas: Vec<&str> = snapshot
        .vehicles
        .iter()
        .filter(|v| v.active)
        .map(|v| v.plate.as_str())
        .collect();
    let out = json!({
        "recorrido": datos::vista_recorrido(&track, &snapshot, teselas.clone()),
        "flota": datos::VistaFlota::new(&snapshot, teselas),
        "unidades_activas": activas,
    });
    Ok(serde_json::to_string(&out)?)
}
