//! Files that appear whole or not at all.
//!
//! Owns the write-then-rename discipline for user data: content goes to `<file>.parcial`
//! beside the target, is flushed to disk, and is renamed over the target only on success.
//! A crash, Ctrl-C or an error leaves the previous file untouched (a stale `.parcial` is
//! removed on the next run, or by `Drop` when the process unwinds). When a target cannot be
//! written, [`Staged::prepare`] says why in one Spanish sentence naming the path the user gave
//! (never the temporary name, never the system's English). Cache files, which several writers
//! may race on and which need not survive a crash, take the lighter [`write_cache_file`].

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A target that cannot be written, and why, in Spanish.
#[derive(Debug, thiserror::Error)]
#[error("no se puede escribir {target}: {reason}")]
pub struct Unwritable {
    pub target: String,
    pub reason: String,
}

impl Unwritable {
    fn new(target: &Path, err: &io::Error) -> Unwritable {
        Unwritable {
            target: target.display().to_string(),
            reason: reason(target, err),
        }
    }
}

/// A target file being produced under a temporary name.
#[derive(Debug)]
pub struct Staged {
    target: PathBuf,
    temp: PathBuf,
    committed: bool,
}

impl Staged {
    /// Prepares `target`: creates its folder and clears a stale temporary file.
    pub fn new(target: &Path) -> io::Result<Staged> {
        if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let mut name = target
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_default();
        name.push(".parcial");
        let temp = target.with_file_name(name);
        match std::fs::remove_file(&temp) {
            Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
            _ => {}
        }
        Ok(Staged {
            target: target.to_path_buf(),
            temp,
            committed: false,
        })
    }

    /// Like [`Staged::new`], and proves the place writable by creating the (empty) temporary
    /// file, before any work is spent on the content.
    pub fn prepare(target: &Path) -> Result<Staged, Unwritable> {
        if target.is_dir() {
            return Err(Unwritable {
                target: target.display().to_string(),
                reason: "es una carpeta; indique un archivo dentro de ella".into(),
            });
        }
        let staged = Staged::new(target).map_err(|e| Unwritable::new(target, &e))?;
        File::create(&staged.temp).map_err(|e| Unwritable::new(target, &e))?;
        Ok(staged)
    }

    /// Where to write.
    pub fn temp(&self) -> &Path {
        &self.temp
    }

    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes the temporary file to disk and renames it over the target.
    pub fn commit(mut self) -> io::Result<()> {
        File::open(&self.temp)?.sync_all()?;
        std::fs::rename(&self.temp, &self.target)?;
        if let Some(parent) = self.target.parent().filter(|p| !p.as_os_str().is_empty()) {
            // Make the rename itself durable; not every platform can open a folder.
            if let Ok(dir) = File::open(parent) {
                let _ = dir.sync_all();
            }
        }
        self.committed = true;
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Replaces `target` (creating its folder) with `bytes` through a temporary file and a rename,
/// so a reader sees the old file or the new one, never part of one. For caches: the
/// temporary name is unique to this write (threads and processes may store the same file at
/// once), nothing is flushed to disk (a crash may lose the file, not corrupt it), and the
/// temporary file is removed when anything fails.
pub fn write_cache_file(target: &Path, bytes: &[u8]) -> io::Result<()> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let mut name = OsString::from(".");
    name.push(target.file_name().unwrap_or_default());
    let write = WRITES.fetch_add(1, Ordering::Relaxed);
    name.push(format!(".{}.{write}.parcial", std::process::id()));
    let temp = target.with_file_name(name);
    let written = std::fs::write(&temp, bytes).and_then(|()| std::fs::rename(&temp, target));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// The folder `target` goes in, as the user would name it.
fn folder_of(target: &Path) -> &Path {
    match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Why `target` could not be created, judged from the filesystem rather than from the
/// system's (English) message: which part of the path is missing, a file, or not writable.
fn reason(target: &Path, err: &io::Error) -> String {
    let folder = folder_of(target);
    // The nearest part of the path that exists decides what went wrong.
    let mut existing = Some(folder);
    while let Some(part) = existing {
        if part.as_os_str().is_empty() || std::fs::symlink_metadata(part).is_ok() {
            break;
        }
        existing = part.parent();
    }
    let existing = existing
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if existing.exists() && !existing.is_dir() {
        return format!("{} es un archivo, no una carpeta", existing.display());
    }
    let missing = existing != folder && !folder.exists();
    match err.kind() {
        io::ErrorKind::PermissionDenied if missing => format!(
            "la carpeta {} no existe y no hay permiso para crearla en {}",
            folder.display(),
            existing.display()
        ),
        io::ErrorKind::PermissionDenied => format!(
            "no hay permiso para escribir en la carpeta {}",
            folder.display()
        ),
        io::ErrorKind::ReadOnlyFilesystem => format!(
            "la carpeta {} está en un sistema de archivos de solo lectura",
            folder.display()
        ),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => {
            "no queda espacio en el disco".into()
        }
        io::ErrorKind::NotFound => format!("la carpeta {} no existe", folder.display()),
        io::ErrorKind::IsADirectory => "es una carpeta; indique un archivo dentro de ella".into(),
        io::ErrorKind::NotADirectory => {
            format!(
                "una parte de {} es un archivo, no una carpeta",
                folder.display()
            )
        }
        _ => match err.raw_os_error() {
            Some(code) => format!("el sistema lo impidió (código {code})"),
            None => "el sistema lo impidió".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_only_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("sub").join("a.txt");
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(&target, "viejo").unwrap();
        {
            let staged = Staged::new(&target).unwrap();
            std::fs::write(staged.temp(), "a medias").unwrap();
            // Dropped without commit: the old content stays, the temporary file goes.
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "viejo");
        assert!(!dir.path().join("sub/a.txt.parcial").exists());
        let staged = Staged::new(&target).unwrap();
        std::fs::write(staged.temp(), "nuevo").unwrap();
        staged.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "nuevo");
    }

    #[test]
    fn cache_files_are_replaced_whole_and_leave_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("15").join("7").join("9.png");
        write_cache_file(&target, b"uno").unwrap();
        write_cache_file(&target, b"dos").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"dos");
        // A target that cannot be replaced (a folder): an error, and no temporary file.
        let folder = dir.path().join("15").join("7").join("8.png");
        std::fs::create_dir(&folder).unwrap();
        assert!(write_cache_file(&folder, b"tres").is_err());
        let mut left: Vec<String> = std::fs::read_dir(dir.path().join("15").join("7"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["8.png", "9.png"]);
    }
}
