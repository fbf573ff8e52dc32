//! `flota cliente --replay FILE.jsonl`: send each line of a file, print the answers.
//!
//! Owns the pairing rule: a line with an `id` waits for the answer bearing that id; a line
//! that is not a JSON object (deliberately broken input) waits for one answer with `id: null`;
//! a notification waits for nothing, and anything that arrives for it is a problem.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::connection::{ClientError, Connection};

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("no se pudo leer {path}: {}", crate::plumbing::spanish::io(.source))]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Client(#[from] ClientError),
}

pub fn run(conn: &mut Connection, out: &mut dyn Write, path: &Path) -> Result<(), ReplayError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReplayError::Read {
        path: path.display().to_string(),
        source,
    })?;
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        conn.send_line(out, line)?;
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(message)) => match message.get("id") {
                Some(id) => {
                    let method = message
                        .get("method")
                        .and_then(Value::as_str)
                        .unwrap_or("(sin método)")
                        .to_owned();
                    if let Some(result) = conn.wait_for(out, id, &method)?.result()
                        && result.get("content").is_some()
                    {
                        conn.printer.tool_result(out, result);
                    }
                }
                None => {
                    let stray = conn.drain(out, Duration::from_millis(100));
                    if stray.iter().any(|m| m.get("method").is_none()) {
                        conn.problems += 1;
                        conn.printer
                            .problem(out, "llegó una respuesta a una notificación");
                    }
                }
            },
            _ => {
                conn.wait_for(out, &Value::Null, "(línea inválida)")?;
            }
        }
    }
    Ok(())
}
