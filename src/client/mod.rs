//! `flota cliente`: an MCP client for people — interactive, a scripted demo, or a replay.
//!
//! Owns choosing the server command and the mode. It speaks only through [`Connection`], so it
//! works against any stdio MCP server, not just `flota servir`. Output goes to the writer
//! `main` hands in; this module never touches stdout directly.

mod connection;
mod demo;
mod interactive;
mod printer;
mod replay;

use std::ffi::OsString;
use std::io::{BufRead, Write};

pub use connection::{Answer, ClientError, Connection};
pub use printer::Printer;

use crate::cli::ClientArgs;

/// Runs the client; returns how many protocol problems were seen (0 means all answers were
/// well formed and matched their requests).
pub fn run(
    args: &ClientArgs,
    out: &mut dyn Write,
    input: &mut dyn BufRead,
    color: bool,
) -> anyhow::Result<usize> {
    let command = server_command(args)?;
    let mut conn = Connection::spawn(&command, Printer { color })?;
    let outcome = if args.demo {
        demo::run(&mut conn, out).map_err(anyhow::Error::from)
    } else if let Some(path) = &args.replay {
        replay::run(&mut conn, out, path).map_err(anyhow::Error::from)
    } else {
        conn.handshake(out)
            .and_then(|_| interactive::run(&mut conn, out, input))
            .map_err(anyhow::Error::from)
    };
    let problems = conn.problems;
    let exit = conn.close();
    outcome?;
    if args.demo && exit != Some(0) {
        conn_problem(out, color, exit);
        return Ok(problems + 1);
    }
    Ok(problems)
}

fn conn_problem(out: &mut dyn Write, color: bool, exit: Option<i32>) {
    Printer { color }.problem(
        out,
        &format!("el servidor no terminó con código 0 al cerrar su entrada ({exit:?})"),
    );
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
