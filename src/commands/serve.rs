//! `flota servir`: builds the fleet's MCP [`Service`] and hands it to the protocol core.
//!
//! Owns the wiring between the generic core (`mcp`) and the fleet: which database, which
//! tools, what the `initialize` instructions say. It never writes to stdout itself; `main`
//! passes the process's stdin and stdout through to [`crate::mcp::serve_stdio`].

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::NaiveDateTime;

use crate::cli::{DEFAULT_DB, ServeArgs};
use crate::fleet::Fleet;
use crate::fleet::places::{Geocoder, Service};
use crate::log_info;
use crate::mcp::{self, ServeOptions, ServerInfo};
use crate::tools;

/// The database to serve: `--db`, else `FLOTA_DB`, else `MCP_FLOTA_DB` (the reference's
/// variable), else `datos/flota.db`.
pub fn db_path(flag: Option<&Path>) -> PathBuf {
    flag.map(Path::to_path_buf)
        .or_else(|| std::env::var_os("FLOTA_DB").map(PathBuf::from))
        .or_else(|| std::env::var_os("MCP_FLOTA_DB").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DB))
}

pub fn server_info() -> ServerInfo {
    ServerInfo {
        name: "flota".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        title: "flota — telemetría GPS de la flota".into(),
    }
}

/// "Now" for the server: `--ahora`, else `FLOTA_AHORA`, else the data set's own.
pub fn ahora(flag: Option<NaiveDateTime>) -> anyhow::Result<Option<NaiveDateTime>> {
    if flag.is_some() {
        return Ok(flag);
    }
    match std::env::var("FLOTA_AHORA") {
        Ok(text) if !text.trim().is_empty() => crate::commands::simulate::parse_ahora(&text)
            .map(Some)
            .map_err(|e| anyhow::anyhow!("FLOTA_AHORA: {e}")),
        _ => Ok(None),
    }
}

/// The fleet service: identity, guidance for the model, and the seven tools.
pub fn service(fleet: &Arc<Fleet>) -> mcp::Service {
    mcp::Service {
        info: server_info(),
        instructions: Some(instructions(fleet)),
        tools: tools::all(fleet),
    }
}

/// What the model should know before calling anything: the fleet, its zone, the data window,
/// today's date, and how to name things.
pub fn instructions(fleet: &Fleet) -> String {
    let usage = "Las herramientas calculan todo en la máquina del operador a partir de las \
        posiciones; solo devuelven agregados. Las placas aceptan minúsculas y espacios \
        (p123bcd = P-123BCD). Las fechas aceptan AAAA-MM-DD, hoy, ayer, anteayer o un día de la \
        semana (el más reciente). Las horas de las respuestas son locales de la flota.";
    match fleet.snapshot() {
        Ok(snapshot) => {
            let active = snapshot.vehicles.iter().filter(|v| v.active).count();
            let mut plates: Vec<&str> = snapshot
                .vehicles
                .iter()
                .filter(|v| v.active)
                .map(|v| v.plate.as_str())
                .collect();
            let shown = if plates.len() > 30 {
                plates.truncate(30);
                format!("{}…", plates.join(", "))
            } else {
                plates.join(", ")
            };
            let fences: Vec<&str> = snapshot
                .fences
                .iter()
                .map(|f| f.fence.name.as_str())
                .take(30)
                .collect();
            let now = crate::fleet::dates::local(snapshot.zone(), snapshot.now_utc);
            format!(
                "Flota de {active} unidades activas ({shown}). Geocercas: {}. Zona horaria: {}. \
                 Datos desde {} hasta {}. Ahora (hora de la flota) es {} {}, {}. {usage}",
                fences.join(", "),
                snapshot.zone_name(),
                snapshot
                    .meta
                    .from_date
                    .map_or("?".into(), |d| d.to_string()),
                now.format("%Y-%m-%d %H:%M"),
                crate::fleet::dates::weekday_es(snapshot.today),
                snapshot.today,
                now.format("%H:%M"),
            )
        }
        Err(err) => format!(
            "Servidor de telemetría GPS de una flota. Por ahora no hay datos: {err} {usage}"
        ),
    }
}

/// Serves until stdin ends (or the client hangs up while not reading, or SIGTERM/SIGINT).
pub fn serve(
    args: &ServeArgs,
    stdin: io::Stdin,
    stdout: impl Write + Send + 'static,
) -> anyhow::Result<()> {
    if args.verbose {
        crate::plumbing::log::set_level(crate::plumbing::log::Level::Debug);
    }
    let db = db_path(args.db.as_deref());
    let ahora = ahora(args.ahora)?;
    log_info!(
        "flota servir {} (base de datos {})",
        env!("CARGO_PKG_VERSION"),
        db.display()
    );
    let geocoder = Geocoder::new(Service::from_env());
    if let Some(service) = geocoder.service() {
        log_info!("direcciones en línea: {}", service.name());
    }
    let fleet = Arc::new(Fleet::new(&db, ahora, geocoder));
    let limit = match args.limite_llamada {
        Some(seconds) => seconds,
        None => match std::env::var("FLOTA_LIMITE_LLAMADA_S") {
            Ok(text) => crate::cli::parse_limit(&text)
                .map_err(|e| anyhow::anyhow!("FLOTA_LIMITE_LLAMADA_S: {e}"))?,
            Err(_) => 30.0,
        },
    };
    let options = ServeOptions {
        verbose: args.verbose,
        call_timeout: (limit > 0.0).then(|| std::time::Duration::from_secs_f64(limit)),
        ..ServeOptions::default()
    };
    mcp::serve_stdio(service(&fleet), stdin, stdout, options)?;
    Ok(())
}
