//! The verbs of the `flota` command line, one file each, named after the verb.
//!
//! Owns the edge between the command line and the library: every verb is
//! `run(args, &mut Io, &Settings) -> anyhow::Result<ExitCode>`, takes its parsed arguments
//! from `cli`, its streams from [`Io`] and the environment from [`Settings`], reads the wall
//! clock if it needs one ([`crate::plumbing::clock::Clock::system`]) and hands all of that
//! down as values. Domain code does not live here: a verb wires domain modules together and
//! says what happened in Spanish. `main` maps an error to its exit code with [`exit_code`].
//!
//! | verb | file |
//! |---|---|
//! | `simular` | `simulate.rs` |
//! | `analizar` | `analyze.rs` |
//! | `evaluar` | `evaluate.rs` |
//! | `servir` | `serve.rs` |
//! | `recibir` | `receive.rs` |
//! | `importar` | `import.rs` |
//! | `exportar` | `export.rs` |
//! | `rutas` | `routes.rs` |
//! | `cliente` | `client.rs` |
//! | `config` | `config.rs` |

pub mod analyze;
pub mod client;
pub mod config;
pub mod evaluate;
pub mod export;
pub mod import;
mod io;
pub mod receive;
pub mod routes;
pub mod serve;
pub mod simulate;

use std::process::ExitCode;

pub use io::{Forgiving, Io, PipeWatch, Stdin};

pub use crate::settings::Settings;

/// The exit code of a verb that failed: 2 for options that contradict each other (bad usage,
/// like a parse error), 128 + the signal for a job stopped by one, else 1.
pub fn exit_code(err: &anyhow::Error) -> ExitCode {
    if let Some(stopped) = err.downcast_ref::<simulate::Interrupted>() {
        ExitCode::from(stopped.exit_code())
    } else if err.is::<simulate::PathConflict>()
        || err.is::<receive::ReceiveUsage>()
        || err.is::<crate::mcp::http::policy::Refused>()
        || err.is::<evaluate::UnknownTracker>()
    {
        ExitCode::from(2)
    } else {
        ExitCode::FAILURE
    }
}
