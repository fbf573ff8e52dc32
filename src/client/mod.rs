//! `flota cliente`: an MCP client for people — interactive, a scripted demo, or a replay.
//!
//! Owns running a mode against a server command. It speaks only through [`Connection`], so it
//! works against any stdio MCP server, not just `flota servir`. The interactive client shows
//! answers first (the JSON-RPC lines under `--protocolo`, the server's log under `--verbose`);
//! the demo and the replay show the exchange itself. Output goes to the writer it is handed,
//! and what the process's surroundings say (a terminal? `NO_COLOR`? where the history lives?)
//! arrives as an [`Edge`]: this module reads no environment variable and never touches stdout
//! directly. Which command runs is `flota cliente`'s choice (src/commands/client.rs).

mod connection;
mod demo;
mod fields;
mod images;
mod interactive;
mod lines;
mod printer;
mod render;
mod replay;
mod suggestions;

use std::ffi::OsString;
use std::io::{BufRead, Write};
use std::path::PathBuf;

use crate::cli::ClientArgs;

pub use connection::{Answer, ClientError, Connection, ServerLog};
pub use lines::history_file;
pub use printer::{Printer, Style};

/// What the process's surroundings decide, read at the edge (src/commands/client.rs).
#[derive(Debug, Clone, Default)]
pub struct Edge {
    /// Colour allowed: stdout is a terminal and `NO_COLOR` is unset or empty.
    pub color: bool,
    /// stdin and stdout are both terminals: use the line editor.
    pub terminal: bool,
    /// The line editor's history file ([`history_file`]); `None`, no history.
    pub history: Option<PathBuf>,
}

/// Whether `NO_COLOR`'s value (<https://no-color.org>) leaves colour on: only when it is
/// absent or empty.
pub fn colour_allowed(no_color: Option<OsString>) -> bool {
    no_color.is_none_or(|value| value.is_empty())
}

/// Runs the client; returns how many protocol problems were seen (0 means all answers were
/// well formed and matched their requests).
pub fn run(
    command: &[OsString],
    args: &ClientArgs,
    edge: &Edge,
    out: &mut dyn Write,
    input: &mut dyn BufRead,
) -> anyhow::Result<usize> {
    let interactive = !args.demo && args.replay.is_none();
    let printer = Printer {
        color: edge.color,
        protocol: !interactive || args.protocolo,
    };
    let log = if interactive && !args.verbose {
        ServerLog::Kept
    } else {
        ServerLog::Shown
    };
    let mut conn = Connection::spawn(command, printer, log)?;
    let outcome = if args.demo {
        demo::run(&mut conn, out).map_err(anyhow::Error::from)
    } else if let Some(path) = &args.replay {
        replay::run(&mut conn, out, path).map_err(anyhow::Error::from)
    } else {
        converse(&mut conn, args, edge, out, input)
    };
    let problems = conn.problems;
    let exit = conn.close();
    outcome?;
    if args.demo && exit != Some(0) {
        printer.problem(
            out,
            &format!("el servidor no terminó con código 0 al cerrar su entrada ({exit:?})"),
        );
        return Ok(problems + 1);
    }
    Ok(problems)
}

/// The interactive session, with the line editor on a terminal and plain lines otherwise.
fn converse(
    conn: &mut Connection,
    args: &ClientArgs,
    edge: &Edge,
    out: &mut dyn Write,
    input: &mut dyn BufRead,
) -> anyhow::Result<()> {
    let settings = interactive::Settings {
        images: args.imagenes.clone().unwrap_or_else(|| PathBuf::from(".")),
        viewer: args.abrir.then(images::system_viewer),
    };
    let mut plain = lines::Plain { input };
    let mut editor = None;
    if edge.terminal {
        match lines::Editor::new(edge.history.clone(), edge.color) {
            Ok(made) => editor = Some(made),
            Err(why) => conn.printer.line(out, Style::Warning, &why),
        }
    }
    let source: &mut dyn lines::Lines = match editor.as_mut() {
        Some(editor) => editor,
        None => &mut plain,
    };
    let outcome = conn
        .handshake(out)
        .and_then(|init| interactive::run(conn, out, source, &settings, &init));
    if let Err(why) = source.finish() {
        conn.printer.line(out, Style::Warning, &why);
    }
    Ok(outcome?)
}
