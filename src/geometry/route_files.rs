//! The route folder (`rutas/`) as `flota rutas` works on it: which files a command means,
//! each read and checked as `flota simular` checks it, and written whole or not at all.
//!
//! Owns naming (`NOMBRE` or `NOMBRE.json` in the folder, else every file there), reading one
//! route file into its text and checked [`RouteFile`], loading every named route without one
//! broken file stopping the others ([`Stored`]), and the atomic write. The format and its
//! geometry are `route.rs`'s; fetching new geometry is `directions`'s. Errors are Spanish
//! sentences naming the file.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::geometry::route::{self, Route, RouteFile};
use crate::plumbing::output::Staged;
use crate::plumbing::spanish;

/// A path's file name without `.json`: the route's name.
pub fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The routes to work on: `names` (with or without `.json`), else every file in `dir`. An
/// unknown name is kept, to be reported with its reason without stopping the others.
pub fn targets(dir: &Path, names: &[String]) -> Result<Vec<(String, PathBuf)>, String> {
    if names.is_empty() {
        let paths = route::route_paths(dir).map_err(|e| e.to_string())?;
        return Ok(paths.into_iter().map(|p| (stem(&p), p)).collect());
    }
    Ok(names
        .iter()
        .map(|n| {
            let stem = n.strip_suffix(".json").unwrap_or(n).to_owned();
            let path = dir.join(format!("{stem}.json"));
            (stem, path)
        })
        .collect())
}

/// The route file at `path`: its text and its parsed form, whose `nombre` matches the file.
/// A missing file lists the routes that do exist beside it.
pub fn read(path: &Path) -> Result<(String, RouteFile), String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            let known = route::route_paths(path.parent().unwrap_or(Path::new(".")))
                .map(|paths| paths.iter().map(|p| stem(p)).collect::<Vec<_>>().join(", "))
                .unwrap_or_default();
            format!("no existe {}; rutas disponibles: {known}", path.display())
        } else {
            unreadable(path, &e)
        }
    })?;
    let file = parse(&text, path)?;
    Ok((text, file))
}

fn unreadable(path: &Path, e: &std::io::Error) -> String {
    format!("{}: no se pudo leer: {}", path.display(), spanish::io(e))
}

/// `text` as the route file at `path`: it parses and its `nombre` is the file's.
fn parse(text: &str, path: &Path) -> Result<RouteFile, String> {
    let file = RouteFile::parse(text, path).map_err(|e| e.to_string())?;
    route::check_stem(path, &file.nombre).map_err(|e| e.to_string())?;
    Ok(file)
}

/// One stored route, loaded or not.
pub struct Stored {
    pub name: String,
    pub path: PathBuf,
    /// The file and its checked geometry, or why it could not be had.
    pub route: Result<(RouteFile, Route), String>,
}

/// Every route in `dir`, or only `name`; a broken file is a [`Stored`] with its reason.
pub fn load(dir: &Path, name: Option<&str>) -> Result<Vec<Stored>, String> {
    let names: Vec<String> = name.map(|n| vec![n.to_owned()]).unwrap_or_default();
    Ok(targets(dir, &names)?
        .into_iter()
        .map(|(name, path)| {
            let route = std::fs::read_to_string(&path)
                .map_err(|e| unreadable(&path, &e))
                .and_then(|text| parse(&text, &path))
                .and_then(|file| {
                    let route = Route::from_file(file.clone(), &path).map_err(|e| e.to_string())?;
                    Ok((file, route))
                });
            Stored { name, path, route }
        })
        .collect())
}

/// Writes `text` to `path` through a temporary file: a failure leaves the previous file.
pub fn save(path: &Path, text: &str) -> Result<(), String> {
    let fail = |e: std::io::Error| {
        format!(
            "{}: no se pudo escribir: {}",
            path.display(),
            spanish::io(&e)
        )
    };
    // `prepare` says why a place cannot be written (a file where a folder goes…).
    let staged = Staged::prepare(path).map_err(|e| e.to_string())?;
    let mut file = std::fs::File::create(staged.temp()).map_err(fail)?;
    file.write_all(text.as_bytes()).map_err(fail)?;
    drop(file);
    staged.commit().map_err(fail)
}
