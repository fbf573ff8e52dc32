//! `flota cliente`: talk to an MCP server by hand, run the demo tour, or replay a file.
//!
//! Owns the verb: which server to start (the command after `--`, else this binary with
//! `servir`), colour when stdout is a terminal and `NO_COLOR` allows it, the line editor when
//! both ends are a terminal, and exit 1 when the server's answers broke the protocol. The client itself is `crate::client`'s.

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use super::{Io, Settings};
use crate::cli::ClientArgs;
use crate::client::{self, Edge};

pub fn run(args: ClientArgs, io: &mut Io, settings: &Settings) -> anyhow::Result<ExitCode> {
    let command = server_command(&args)?;
    let edge = Edge {
        color: io.stdout_is_terminal && !settings.no_color,
        terminal: io.stdout_is_terminal && io.stdin_is_terminal,
        history: settings.client_history.clone(),
    };
    let problems = client::run(
        &command,
        &args,
        &edge,
        &mut io.stdout,
        &mut io.stdin.reader(),
    )?;
    io.stdout.flush()?;
    if problems > 0 {
        writeln!(
            io.stderr,
            "error: {problems} problemas de protocolo en las respuestas del servidor"
        )?;
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The command after `--`, or this very binary with `servir` (and `--db` if given).
fn server_command(args: &ClientArgs) -> anyhow::Result<Vec<OsString>> {
    if !args.command.is_empty() {
        return Ok(args.command.clone());
    }
    let exe = std::env::current_exe()?;
    let mut command = vec![exe.into_os_string(), OsString::from("servir")];
    if let Some(db) = &args.db {
        command.push("--db".into());
        command.push(db.clone().into_os_string());
    }
    Ok(command)
}
