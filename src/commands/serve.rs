//! `flota servir`: the fleet's MCP service on this process's stdin and stdout.
//!
//! Owns the verb: which database, "now", the geocoder and the map tiles (from the flags and
//! [`Settings`]), the time limit per call, and which transport carries the protocol. Today
//! that is stdio: the streams are taken over from [`Io`] and handed to the core for the rest
//! of the process. The service itself (identity, instructions, tools) is
//! [`crate::tools::service`]'s. Nothing here writes to stdout.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::{Io, Settings, Stdin};
use crate::cli::ServeArgs;
use crate::fleet::Fleet;
use crate::fleet::places::Geocoder;
use crate::log_info;
use crate::mcp::{self, ServeOptions};
use crate::plumbing::clock::Clock;
use crate::plumbing::log::{self, Level};
use crate::tools;

/// Serves until stdin ends (or the client hangs up while not reading, or SIGTERM/SIGINT).
pub fn run(args: ServeArgs, io: &mut Io, settings: &Settings) -> anyhow::Result<ExitCode> {
    if args.verbose {
        log::set_level(Level::Debug);
    }
    let db = settings.db_path(args.db.as_deref());
    let ahora = settings.ahora(args.ahora)?;
    log_info!(
        "flota servir {} (base de datos {})",
        env!("CARGO_PKG_VERSION"),
        db.display()
    );
    let geocoder = Geocoder::new(settings.geocoding.clone());
    if let Some(service) = geocoder.service() {
        log_info!("direcciones en línea: {}", service.name());
    }
    let fleet = Arc::new(Fleet::new(&db, ahora, geocoder, Clock::system()));
    let limit = settings.call_limit_s(args.limite_llamada)?;
    let options = ServeOptions {
        verbose: args.verbose,
        call_timeout: (limit > 0.0).then(|| Duration::from_secs_f64(limit)),
        ..ServeOptions::default()
    };
    let service = tools::service(&fleet, settings.tiles.clone());
    let stdout = io.take_stdout();
    match io.take_stdin() {
        Stdin::Process(stdin) => mcp::serve_stdio(service, stdin, stdout, options)?,
        Stdin::Other(input) => mcp::serve(service, input, stdout, options)?,
    }
    Ok(ExitCode::SUCCESS)
}
