//! The `flota` binary: parse the command line, run one verb, map the outcome to an exit code.
//!
//! Thin on purpose. The environment is read once into [`Settings`]; the process's stdin,
//! stdout and stderr, which nothing else may grab, are handed to the verb in an [`Io`]; every
//! verb in `src/commands/` has the same shape. Exit codes: 0 ok, 1 failure, 2 bad usage.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use flota::cli::{self, Parsed, Verb};
use flota::commands::{self, Forgiving, Io, PipeWatch, Settings, Stdin};
use flota::plumbing::{log, net, spanish};

fn main() -> ExitCode {
    let settings = Settings::from_env();
    if let Some(level) = settings.log_level {
        log::set_level(level);
    }
    net::set_contact(settings.contact.as_deref());
    match cli::parse(std::env::args_os()) {
        Parsed::Print(text) => {
            // A reader that stopped early (`flota --help | head -1`) is not a failure.
            let _ = std::io::stdout().write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        Parsed::Fail(text) => {
            let _ = std::io::stderr().write_all(text.as_bytes());
            ExitCode::from(2)
        }
        Parsed::Run(cli) => {
            let stdout_closed = Arc::new(AtomicBool::new(false));
            let mut io = Io {
                stdin: Stdin::Process(std::io::stdin()),
                stdout: Box::new(PipeWatch::new(std::io::stdout(), stdout_closed.clone())),
                stderr: Box::new(Forgiving(std::io::stderr())),
                stdin_is_terminal: std::io::stdin().is_terminal(),
                stdout_is_terminal: std::io::stdout().is_terminal(),
                stderr_is_terminal: std::io::stderr().is_terminal(),
            };
            let outcome = run(cli.command, &mut io, &settings);
            let _ = io.stdout.flush();
            match outcome {
                Ok(code) => code,
                // Whoever read our output stopped reading (`| head`): nothing went wrong.
                Err(err)
                    if stdout_closed.load(Ordering::Relaxed)
                        && spanish::is_broken_pipe(err.as_ref()) =>
                {
                    flota::log_debug!("la salida estándar se cerró; fin sin error");
                    ExitCode::SUCCESS
                }
                Err(err) => {
                    let _ = writeln!(std::io::stderr(), "error: {}", spanish::chain(err.as_ref()));
                    commands::exit_code(&err)
                }
            }
        }
    }
}

fn run(verb: Verb, io: &mut Io, settings: &Settings) -> anyhow::Result<ExitCode> {
    match verb {
        Verb::Simular(args) => commands::simulate::run(args, io, settings),
        Verb::Analizar(args) => commands::analyze::run(args, io, settings),
        Verb::Evaluar(args) => commands::evaluate::run(args, io, settings),
        Verb::Servir(args) => commands::serve::run(args, io, settings),
        Verb::Recibir(args) => commands::receive::run(args, io, settings),
        Verb::Importar(args) => commands::import::run(args, io, settings),
        Verb::Exportar(args) => commands::export::run(args, io, settings),
        Verb::Rutas(verb) => commands::routes::run(verb, io, settings),
        Verb::Cliente(args) => commands::client::run(args, io, settings),
        Verb::Config(verb) => commands::config::run(verb, io, settings),
    }
}
