//! Files that appear whole or not at all.
//!
//! Owns the write-then-rename discipline for user data: content goes to `<file>.parcial`
//! beside the target, is flushed to disk, and is renamed over the target only on success.
//! A crash, Ctrl-C or an error leaves the previous file untouched (a stale `.parcial` is
//! removed on the next run, or by `Drop` when the process unwinds).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

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
}
