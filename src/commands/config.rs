//! `flota config claude`: the `claude_desktop_config.json` entry for this installation.
//!
//! Owns the snippet (on stdout) and the advice around it (on stderr): where the file lives,
//! and a warning when the database is a folder or does not exist yet. Claude Desktop may start
//! servers with `/` as working directory and a minimal environment, so every path in the entry
//! is absolute.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Value, json};

use super::{Io, Settings};
use crate::cli::ConfigVerb;

pub fn run(verb: ConfigVerb, io: &mut Io, settings: &Settings) -> anyhow::Result<ExitCode> {
    let ConfigVerb::Claude(args) = verb;
    let exe = std::env::current_exe()?.canonicalize()?;
    let given = settings.db_path(args.db.as_deref());
    // A server's URL is written as given (password included: the entry must connect).
    let db = match crate::store::Location::parse(&given)? {
        crate::store::Location::Postgres(_) => given,
        crate::store::Location::Sqlite(path) => absolute(&path),
    };
    writeln!(
        io.stdout,
        "{}",
        serde_json::to_string_pretty(&entry(&exe, &db))?
    )?;
    writeln!(io.stderr, "{}", locations())?;
    let server = crate::store::Location::parse(&db)?.is_postgres();
    if server {
        // Nothing to look at on disk: the server says at the first call.
    } else if db.is_dir() {
        writeln!(
            io.stderr,
            "Aviso: {} es una carpeta, no una base de datos; indique el archivo, por ejemplo {}",
            db.display(),
            db.join("flota.db").display()
        )?;
    } else if !db.exists() {
        writeln!(
            io.stderr,
            "Aviso: {} todavía no existe; el servidor arrancará igual y cada herramienta dirá \
             cómo generarla.",
            db.display()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The JSON to merge into `claude_desktop_config.json`.
pub fn entry(exe: &Path, db: &Path) -> Value {
    json!({
        "mcpServers": {
            "flota": {
                "command": exe.display().to_string(),
                "args": ["servir", "--db", db.display().to_string()],
            }
        }
    })
}

/// Where Claude Desktop keeps its configuration on each system, for the note on stderr.
pub fn locations() -> String {
    [
        "Pegue esta entrada dentro de claude_desktop_config.json y reinicie Claude Desktop:",
        "  macOS:   ~/Library/Application Support/Claude/claude_desktop_config.json",
        "  Windows: %APPDATA%\\Claude\\claude_desktop_config.json",
        "  Linux:   ~/.config/Claude/claude_desktop_config.json",
        "Los registros del servidor quedan en mcp-server-flota.log, en la carpeta de logs de Claude.",
    ]
    .join("\n")
}

/// Makes `path` absolute against the working directory without requiring it to exist.
pub fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_uses_the_given_absolute_paths() {
        let value = entry(
            Path::new("/opt/flota/bin/flota"),
            Path::new("/datos/flota.db"),
        );
        let server = &value["mcpServers"]["flota"];
        assert_eq!(server["command"], "/opt/flota/bin/flota");
        assert_eq!(server["args"], json!(["servir", "--db", "/datos/flota.db"]));
        assert!(absolute(Path::new("x.db")).is_absolute());
    }
}
