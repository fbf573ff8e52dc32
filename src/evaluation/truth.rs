//! Reading the truth log: [`read`] turns `*.verdad.jsonl` into its typed header and events.
//!
//! Owns the file side of the truth format (the types are `sim::truth`'s, which stays sans-IO)
//! and its Spanish errors, naming the file and line. The evaluation and the tests are its only
//! callers: the server and the tools never open the truth.

use std::path::{Path, PathBuf};

use crate::sim::{TruthEvent, TruthHeader};

/// A whole truth log.
#[derive(Debug, Clone, PartialEq)]
pub struct TruthLog {
    pub header: TruthHeader,
    pub events: Vec<TruthEvent>,
}

#[derive(Debug, thiserror::Error)]
pub enum TruthError {
    #[error(
        "no existe el registro de verdad {path}; créelo con flota simular (o indique --verdad)"
    )]
    Missing { path: String },
    #[error("{path} es una carpeta, no un registro de verdad")]
    Folder { path: String },
    #[error("no se pudo leer el registro de verdad {path}: {reason}")]
    Read { path: String, reason: String },
    #[error("el registro de verdad {path} está vacío; regenérelo con flota simular")]
    Empty { path: String },
    #[error("{path}:{line}: {what} (columna {column}); regenere el registro con flota simular")]
    Line {
        path: String,
        line: usize,
        column: usize,
        what: &'static str,
    },
}

/// The truth log that goes with a database unless another is named: `flota.db` →
/// `flota.verdad.jsonl`, beside it.
pub fn default_path(db: &Path) -> PathBuf {
    let stem = db
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "flota".into());
    db.with_file_name(format!("{stem}.verdad.jsonl"))
}

/// Reads and parses the truth log at `path`: a header line, then one event per line.
pub fn read(path: &Path) -> Result<TruthLog, TruthError> {
    let shown = || path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        if path.is_dir() {
            TruthError::Folder { path: shown() }
        } else if e.kind() == std::io::ErrorKind::NotFound {
            TruthError::Missing { path: shown() }
        } else {
            TruthError::Read {
                path: shown(),
                reason: match e.kind() {
                    std::io::ErrorKind::PermissionDenied => "sin permiso de lectura".into(),
                    std::io::ErrorKind::InvalidData => "no es texto UTF-8".into(),
                    _ => format!(
                        "error de entrada/salida (código {})",
                        e.raw_os_error()
                            .map_or_else(|| "?".into(), |c| c.to_string())
                    ),
                },
            }
        }
    })?;
    let mut lines = text.lines().enumerate();
    let Some((_, first)) = lines.next() else {
        return Err(TruthError::Empty { path: shown() });
    };
    let header = parse(first, 1, "no es la cabecera de un registro de verdad", path)?;
    let events = lines
        .map(|(index, line)| parse(line, index + 1, "no es un hecho de verdad", path))
        .collect::<Result<_, _>>()?;
    Ok(TruthLog { header, events })
}

fn parse<T: serde::de::DeserializeOwned>(
    line: &str,
    number: usize,
    not_a: &'static str,
    path: &Path,
) -> Result<T, TruthError> {
    serde_json::from_str(line).map_err(|e| TruthError::Line {
        path: path.display().to_string(),
        line: number,
        column: e.column(),
        what: match e.classify() {
            serde_json::error::Category::Data => not_a,
            _ => "no es JSON válido",
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::StopReason;

    const HEADER: &str = r#"{"tipo":"cabecera","escenario":"minimo","escenario_sha256":"ab","semilla":11,"zona_horaria":"America/Guatemala","ahora_local":"2026-08-19T15:30:00","ahora_utc":1787175000,"desde":"2026-08-18","hasta":"2026-08-19","intervalo_reporte_s":15,"flota_version":"0.1.0"}"#;
    const STOP: &str = r#"{"tipo":"parada","placa":"P-1","inicio_utc":10,"fin_utc":null,"duracion_s":5,"lat":14.5,"lon":-90.5,"lugar":"depósito","motivo":"fin_de_turno","motor_encendido":true,"desde_inicio_datos":true,"inyectada":false}"#;

    fn write(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.verdad.jsonl");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    /// Reading then writing gives back the same bytes: one format, both ways.
    #[test]
    fn lines_round_trip_byte_for_byte() {
        let (_dir, path) = write(&format!("{HEADER}\n{STOP}\n"));
        let log = read(&path).unwrap();
        assert_eq!(log.header.ahora_utc, 1_787_175_000);
        match &log.events[0] {
            TruthEvent::Parada {
                motivo, fin_utc, ..
            } => assert_eq!((*motivo, *fin_utc), (StopReason::FinDeTurno, None)),
            other => panic!("{other:?}"),
        }
        assert_eq!(serde_json::to_string(&log.header).unwrap(), HEADER);
        assert_eq!(serde_json::to_string(&log.events[0]).unwrap(), STOP);
    }

    #[test]
    fn bad_logs_are_named_in_spanish() {
        let check = |text: &str, expected: &str| {
            let (_dir, path) = write(text);
            let message = read(&path).unwrap_err().to_string();
            assert!(message.contains(expected), "{text:?}: {message}");
        };
        check("", "está vacío");
        let dir = tempfile::tempdir().unwrap();
        let message = |path: &Path| read(path).unwrap_err().to_string();
        assert!(message(dir.path()).contains("es una carpeta"));
        assert!(message(&dir.path().join("no.jsonl")).contains("no existe el registro de verdad"));
        check(STOP, ":1: no es la cabecera de un registro de verdad");
        check(
            &format!("{HEADER}\n{HEADER}\n"),
            ":2: no es un hecho de verdad",
        );
        check(
            &format!("{HEADER}\n{{\"tipo\":\"parada\"\n"),
            ":2: no es JSON válido",
        );
        check(
            &format!("{HEADER}\n{{\"tipo\":\"ovni\"}}\n"),
            ":2: no es un hecho de verdad",
        );
    }
}
