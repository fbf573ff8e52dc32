//! `flota cliente`: an MCP client for people — interactive, a scripted demo, or a replay.
//!
//! Owns running a mode against a server command. It speaks only through [`Connection`], so it
//! works against any stdio MCP server, not just `flota servir`. Output goes to the writer it
//! is handed; this module never touches stdout directly. Which command and which mode is
//! `flota cliente`'s choice (src/commands/client.rs).

mod connection;
mod demo;
mod interactive;
mod printer;
mod replay;

use std::ffi::OsString;
use std::io::{BufRead, Write};
use std::path::Path;

pub use connection::{Answer, ClientError, Connection};
pub use printer::Printer;

/// What the client does once connected.
#[derive(Debug, Clone, Copy)]
pub enum Mode<'a> {
    /// The guided tour, ending with three error cases.
    Demo,
    /// Send each line of the file and print the answers.
    Replay(&'a Path),
    /// Handshake, then read commands from `input`.
    Interactive,
}

/// Starts `command`, runs `mode` against it and closes it; returns how many protocol problems
/// were seen (0 means all answers were well formed and matched their requests).
pub fn run(
    command: &[OsString],
    mode: Mode<'_>,
    out: &mut dyn Write,
    input: &mut dyn BufRead,
    color: bool,
) -> anyhow::Result<usize> {
    let mut conn = Connection::spawn(command, Printer { color })?;
    let outcome = match mode {
        Mode::Demo => demo::run(&mut conn, out).map_err(anyhow::Error::from),
        Mode::Replay(path) => replay::run(&mut conn, out, path).map_err(anyhow::Error::from),
        Mode::Interactive => conn
            .handshake(out)
            .and_then(|_| interactive::run(&mut conn, out, input))
            .map_err(anyhow::Error::from),
    };
    let problems = conn.problems;
    let exit = conn.close();
    outcome?;
    if matches!(mode, Mode::Demo) && exit != Some(0) {
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
