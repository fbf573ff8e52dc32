//! `flota servir`: builds the fleet's MCP [`Service`] and hands it to the protocol core.
//!
//! Owns the wiring between the generic core (`mcp`) and the fleet: which database, which
//! tools, what the `initialize` instructions say. It never writes to stdout itself; `main`
//! passes the process's stdin and stdout through to [`crate::mcp::serve`].

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use crate::cli::{DEFAULT_DB, ServeArgs};
use crate::log_info;
use crate::mcp::{self, ServeOptions, ServerInfo, Service};

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

/// The fleet service. Tools arrive with the detection engine; until then the list is empty.
pub fn service(db: &Path) -> Service {
    let instructions = format!(
        "Servidor de telemetría GPS de una flota, calculado en la máquina del operador a partir \
         de las posiciones de {}. Solo se envían agregados, nunca el historial de posiciones.",
        db.display()
    );
    Service {
        info: server_info(),
        instructions: Some(instructions),
        tools: Vec::new(),
    }
}

/// Serves until `input` ends.
pub fn serve(
    args: &ServeArgs,
    input: impl BufRead,
    output: impl Write + Send + 'static,
) -> anyhow::Result<()> {
    if args.verbose {
        crate::log::set_level(crate::log::Level::Debug);
    }
    let db = db_path(args.db.as_deref());
    log_info!(
        "flota servir {} (base de datos {})",
        env!("CARGO_PKG_VERSION"),
        db.display()
    );
    let options = ServeOptions {
        verbose: args.verbose,
        ..ServeOptions::default()
    };
    mcp::serve(service(&db), input, output, options)?;
    Ok(())
}
