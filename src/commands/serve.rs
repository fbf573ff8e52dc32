//! `flota servir`: the fleet's MCP service on this process's stdin and stdout, or over HTTP.
//!
//! Owns the verb: which database, "now", the geocoder and the map tiles with their deadlines
//! (from the flags and [`Settings`]), the time limit per call, and which transport carries the protocol: stdio
//! (the streams are taken over from [`Io`] and handed to the core for the rest of the
//! process), or Streamable HTTP with `--http` (who may connect is decided by
//! `mcp::http::policy`; a generated token is shown once on stderr). The service itself
//! (identity, instructions, tools, prompts, resources) is [`crate::tools::service`]'s.
//! Nothing here writes to stdout.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::{Io, Settings, Stdin};
use crate::cli::ServeArgs;
use crate::fleet::Fleet;
use crate::fleet::places::Geocoder;
use crate::log_info;
use std::io::Write;

use anyhow::Context;

use crate::mcp::http::policy;
use crate::mcp::{self, HttpOptions, ServeOptions};
use crate::plumbing::clock::Clock;
use crate::plumbing::log::{self, Level};
use crate::tools;

/// Serves until stdin ends (or the client hangs up while not reading, or SIGTERM/SIGINT).
pub fn run(args: ServeArgs, io: &mut Io, settings: &Settings) -> anyhow::Result<ExitCode> {
    if args.verbose {
        log::set_level(Level::Debug);
    }
    let db = settings.db_location(args.db.as_deref())?;
    let ahora = settings.ahora(args.ahora)?;
    log_info!(
        "flota servir {} (base de datos {db})",
        env!("CARGO_PKG_VERSION")
    );
    let mut geocoder = Geocoder::new(settings.geocoding.clone());
    if let Some(timeout) = settings.geocoding_deadline()? {
        geocoder = geocoder.with_timeout(timeout);
    }
    let tiles = settings.tiles()?;
    if let Some(service) = geocoder.service() {
        log_info!("direcciones en línea: {}", service.name());
    }
    let limit = settings.call_limit_s(args.limite_llamada)?;
    let call_timeout = (limit > 0.0).then(|| Duration::from_secs_f64(limit));
    let fleet =
        Arc::new(Fleet::new(db, ahora, geocoder, Clock::system()).with_call_limit(call_timeout));
    // A "now" the clocks skip is refused before serving, as `flota simular` refuses it.
    fleet.ahora_exists().map_err(anyhow::Error::msg)?;
    let options = ServeOptions {
        verbose: args.verbose,
        call_timeout,
        ..ServeOptions::default()
    };
    // The views load online tiles only when the operator named a tile server.
    let view_tiles = settings
        .tiles_chosen
        .then(|| crate::ui::datos::Teselas::from_config(&tiles))
        .flatten();
    let mut service = tools::service(&fleet, tiles, view_tiles);
    // The tasks extension: long calls (the maps) become tasks for clients that declare it.
    service.tasks = Some(mcp::Tasks::new(mcp::TaskSettings::new(Clock::system())));
    if let Some(address) = args.http.http.clone() {
        return serve_http(service, address, &args, io, settings, options);
    }
    let stdout = io.take_stdout();
    match io.take_stdin() {
        Stdin::Process(stdin) => mcp::serve_stdio(service, stdin, stdout, options)?,
        Stdin::Other(input) => mcp::serve(service, input, stdout, options)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `--http`: the address and who may reach it, then the endpoint until SIGTERM/SIGINT.
fn serve_http(
    service: mcp::Service,
    address: String,
    args: &ServeArgs,
    io: &mut Io,
    settings: &Settings,
    options: ServeOptions,
) -> anyhow::Result<ExitCode> {
    let http = &args.http;
    let plan = policy::plan(&policy::Request {
        address,
        token: http.token.clone().or_else(|| settings.token.clone()),
        no_token: http.sin_token,
        public_url: http.url_publica.clone(),
        origins: http.origen.clone(),
        authorization_servers: http.servidor_autorizacion.clone(),
    })
    .map_err(|refused| {
        let hint = match refused {
            policy::Refused::ExposedWithoutToken(_) => "indíquelo con --token o FLOTA_TOKEN",
            policy::Refused::NoTokenExposed(_) => "quite --sin-token o escuche en 127.0.0.1",
            policy::Refused::BadToken => "revise --token o FLOTA_TOKEN",
            _ => "revise --http y --url-publica",
        };
        // Still a `Refused` underneath, so the exit code says it is a usage error.
        anyhow::Error::new(refused).context(format!("no se sirve por HTTP ({hint})"))
    })?;
    let listener = std::net::TcpListener::bind(plan.address)
        .with_context(|| format!("no se pudo escuchar en {}", plan.address))?;
    let local = listener.local_addr().unwrap_or(plan.address);
    if let Some(token) = &plan.generated_token {
        // Shown once: whoever started the server hands it to the clients.
        let _ = writeln!(
            io.stderr,
            "flota servir: token de acceso (se muestra solo ahora): {token}"
        );
    }
    log_info!("MCP por HTTP en http://{local}/mcp");
    let options = HttpOptions {
        guard: plan.guard,
        serve: options,
        ..HttpOptions::default()
    };
    mcp::serve_http(service, listener, options)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use std::io::{Cursor, Write};
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A writer the test can read back after the server thread is done with it.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn serves_whatever_streams_it_is_handed() {
        let input = concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            "\n",
        );
        let out = Shared::default();
        let mut io = Io {
            stdin: Stdin::Other(Box::new(Cursor::new(input))),
            stdout: Box::new(out.clone()),
            ..Io::detached()
        };
        let args = ServeArgs {
            db: Some("/no/existe/flota.db".into()),
            ahora: None,
            limite_llamada: None,
            verbose: false,
            http: crate::cli::HttpArgs::default(),
        };
        let code = run(args, &mut io, &Settings::from_lookup(&|_| None)).unwrap();
        assert_eq!(code, ExitCode::SUCCESS);
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let answers: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(answers.len(), 2, "{text}");
        assert_eq!(answers[0]["result"]["serverInfo"]["name"], "flota");
        let tools = answers[1]["result"]["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 8, "{text}");
    }
}
