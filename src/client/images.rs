//! Images in tool results (maps): written to files the operator can open, never over another.
//!
//! Owns naming (tool and arguments, as the server normalised them: `mapa_recorrido_P-456DEF_
//! 2026-08-18.png`), the no-overwrite rule (an existing name gets `-2`, `-3`…), writing whole
//! or not at all (a temporary file in the same folder, flushed, then linked to a free name),
//! and handing a file to the system viewer. Nothing here prints.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use base64::Engine;
use serde_json::{Map, Value};

/// Longest file stem, in characters, before the extension and any `-N`.
const MAX_STEM: usize = 80;

/// The program that opens a file with the user's default application.
pub fn system_viewer() -> OsString {
    if cfg!(target_os = "macos") {
        "open".into()
    } else if cfg!(windows) {
        "explorer".into()
    } else {
        "xdg-open".into()
    }
}

/// A file name stem for an image of `tool` called with `arguments`: each argument's value,
/// preferring the result's own field of the same name (`ayer` → `2026-08-18`, `p123bcd` →
/// `P-123BCD`), reduced to characters every filesystem accepts.
pub fn stem(tool: &str, arguments: &Map<String, Value>, answer: Option<&Value>) -> String {
    let mut parts = vec![tool.to_owned()];
    for (name, value) in arguments {
        let normalised = answer.and_then(|a| a.get(name)).filter(|v| is_word(v));
        let Some(text) = normalised.or(Some(value).filter(|v| is_word(v))) else {
            continue;
        };
        parts.push(match text {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
    }
    let stem: String = parts
        .join("_")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_STEM)
        .collect();
    stem.trim_matches('.').to_owned()
}

fn is_word(value: &Value) -> bool {
    matches!(value, Value::String(s) if !s.is_empty()) || value.is_number()
}

/// The extension for a MIME type.
pub fn extension(mime: &str) -> &'static str {
    match mime {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        _ => "bin",
    }
}

/// Why an image could not be saved, in Spanish.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error("la imagen no es base64 válido")]
    Encoding,
    #[error("no se pudo guardar la imagen en {folder}: {reason}")]
    Io { folder: String, reason: String },
}

/// Decodes `data` (base64) and writes it into `folder` as `stem.ext`, or `stem-2.ext`… if that
/// name is taken; returns the path written. An existing file is never replaced.
pub fn save(folder: &Path, stem: &str, ext: &str, data: &str) -> Result<PathBuf, SaveError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|_| SaveError::Encoding)?;
    let io_error = |err: io::Error| SaveError::Io {
        folder: folder.display().to_string(),
        reason: reason(&err),
    };
    std::fs::create_dir_all(folder).map_err(io_error)?;
    let temp = folder.join(format!(".{stem}.{}.parcial", std::process::id()));
    let written =
        write_synced(&temp, &bytes).and_then(|()| claim_free_name(&temp, folder, stem, ext));
    let _ = std::fs::remove_file(&temp);
    written.map_err(io_error)
}

fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Gives the finished temporary file the first free name. A hard link fails rather than
/// replace, so two clients saving at once cannot overwrite each other; where links are not
/// supported (some removable drives), a file created exclusively takes a copy.
fn claim_free_name(temp: &Path, folder: &Path, stem: &str, ext: &str) -> io::Result<PathBuf> {
    for n in 1..10_000 {
        let name = if n == 1 {
            format!("{stem}.{ext}")
        } else {
            format!("{stem}-{n}.{ext}")
        };
        let target = folder.join(name);
        match std::fs::hard_link(temp, &target) {
            Ok(()) => return Ok(target),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(_) => match OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&target)
            {
                Ok(mut file) => {
                    let copied = std::fs::read(temp)
                        .and_then(|bytes| file.write_all(&bytes))
                        .and_then(|()| file.sync_all());
                    if let Err(err) = copied {
                        let _ = std::fs::remove_file(&target);
                        return Err(err);
                    }
                    return Ok(target);
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(err) => return Err(err),
            },
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "demasiados archivos con el mismo nombre",
    ))
}

/// The system's reason, in Spanish, for the few cases a folder of images meets.
fn reason(err: &io::Error) -> String {
    match err.kind() {
        io::ErrorKind::PermissionDenied => "sin permiso de escritura".into(),
        io::ErrorKind::NotFound => "la carpeta no existe".into(),
        io::ErrorKind::NotADirectory => "una parte de la ruta es un archivo".into(),
        io::ErrorKind::StorageFull => "el disco está lleno".into(),
        io::ErrorKind::ReadOnlyFilesystem => "el sistema de archivos es de solo lectura".into(),
        io::ErrorKind::AlreadyExists => "ya existe un archivo con ese nombre".into(),
        _ => crate::plumbing::spanish::io(err),
    }
}

/// Starts `viewer` on `path` without waiting for it (a viewer may stay open for hours); a
/// thread reaps it when it ends.
pub fn open(viewer: &OsString, path: &Path) -> Result<(), String> {
    let mut child = Command::new(viewer)
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|err| {
            let name = viewer.to_string_lossy();
            match err.kind() {
                io::ErrorKind::NotFound => format!("no se encontró el visor '{name}'"),
                _ => format!("no se pudo lanzar el visor '{name}': {}", reason(&err)),
            }
        })?;
    std::thread::spawn(move || child.wait());
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_prefer_the_servers_normalised_values() {
        let arguments = json!({"placa": "p 456def", "fecha": "ayer", "ancho": 800, "x": null});
        let answer = json!({"placa": "P-456DEF", "fecha": "2026-08-18"});
        assert_eq!(
            stem(
                "mapa_recorrido",
                arguments.as_object().unwrap(),
                Some(&answer)
            ),
            "mapa_recorrido_P-456DEF_2026-08-18_800"
        );
        let odd = json!({"nombre": "Bodega/Mixco ñ ../.."});
        assert_eq!(
            stem("t", odd.as_object().unwrap(), None),
            "t_Bodega_Mixco___.._"
        );
    }

    #[test]
    fn never_overwrites_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("mapas");
        let data = base64::engine::general_purpose::STANDARD.encode(b"uno");
        let first = save(&folder, "mapa", "png", &data).unwrap();
        assert_eq!(first, folder.join("mapa.png"));
        std::fs::write(folder.join("mapa-2.png"), b"ajeno").unwrap();
        let other = base64::engine::general_purpose::STANDARD.encode(b"dos");
        let second = save(&folder, "mapa", "png", &other).unwrap();
        assert_eq!(second, folder.join("mapa-3.png"));
        assert_eq!(std::fs::read(&first).unwrap(), b"uno");
        assert_eq!(std::fs::read(folder.join("mapa-2.png")).unwrap(), b"ajeno");
        assert_eq!(std::fs::read(&second).unwrap(), b"dos");
        let names: Vec<String> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
        assert!(matches!(
            save(&folder, "mapa", "png", "no es base64!"),
            Err(SaveError::Encoding)
        ));
    }

    #[test]
    fn a_file_in_the_way_is_said_in_spanish() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("archivo");
        std::fs::write(&blocker, b"x").unwrap();
        let err = save(&blocker.join("mapas"), "m", "png", "AAAA").unwrap_err();
        assert!(
            err.to_string()
                .contains("una parte de la ruta es un archivo"),
            "{err}"
        );
    }
}
