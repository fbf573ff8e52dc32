//! `flota rutas`: regenerate route files from a directions service, create new ones from
//! stops, and summarise or export what is stored.
//!
//! Owns the files side: which routes to touch, what a regenerated file keeps (name and stops)
//! and what it replaces (polyline, distance, duration, source), the checks a new geometry
//! must pass before it may replace the old one, and the write-then-rename of each file. One
//! route's failure is reported and the others proceed. The HTTP side is `directions`'s; the
//! environment (`GOOGLE_MAPS_API_KEY`, `FLOTA_OSRM_URL`) is read only in [`resolve_provider`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::directions::{self, Client, Provider, RetryPolicy};
use crate::geometry::earth::LatLon;
use crate::geometry::route::{self, Route, RouteFile, StopFile};
use crate::plumbing::output::Staged;

/// Which service the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProviderChoice {
    Google,
    Osrm,
}

/// The provider from the flags and the environment: `--proveedor`, else Google when
/// `GOOGLE_MAPS_API_KEY` is set, else OSRM at `--url` or `FLOTA_OSRM_URL`. Without either, a
/// message saying how to get one.
pub fn resolve_provider(
    choice: Option<ProviderChoice>,
    url: Option<&str>,
    profile: &str,
) -> Result<Provider, String> {
    let var = |name: &str| {
        std::env::var(name)
            .ok()
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let key = var("GOOGLE_MAPS_API_KEY");
    let osrm_url = url.map(str::to_owned).or_else(|| var("FLOTA_OSRM_URL"));
    let google = |key: String| Provider::Google {
        key,
        url: url
            .map(str::to_owned)
            .or_else(|| var("FLOTA_GOOGLE_DIRECTIONS_URL"))
            .unwrap_or_else(|| directions::GOOGLE_DIRECTIONS_URL.to_owned()),
    };
    let osrm = |url: String| Provider::Osrm {
        url,
        profile: profile.to_owned(),
    };
    match (choice, key, osrm_url) {
        (Some(ProviderChoice::Google), Some(key), _) => Ok(google(key)),
        (Some(ProviderChoice::Google), None, _) => Err(
            "--proveedor google necesita la variable de entorno GOOGLE_MAPS_API_KEY con una clave \
             que tenga habilitada la Directions API"
                .into(),
        ),
        (Some(ProviderChoice::Osrm), _, Some(url)) => Ok(osrm(url)),
        (Some(ProviderChoice::Osrm), _, None) => Err(
            "--proveedor osrm necesita la dirección del servidor: --url URL o la variable \
             FLOTA_OSRM_URL (p. ej. http://localhost:5000)"
                .into(),
        ),
        (None, Some(key), _) => Ok(google(key)),
        (None, None, Some(url)) => Ok(osrm(url)),
        (None, None, None) => Err(
            "no hay servicio de rutas: defina GOOGLE_MAPS_API_KEY (Google Directions API) o \
             indique un servidor OSRM con --proveedor osrm --url URL (o FLOTA_OSRM_URL). Las \
             rutas guardadas siguen sirviendo sin conexión."
                .into(),
        ),
    }
}

/// How to reach the provider.
#[derive(Debug, Clone)]
pub struct Connection {
    pub provider: Provider,
    pub timeout: Duration,
    pub retry: RetryPolicy,
}

impl Connection {
    fn client(&self) -> Result<Client, String> {
        Client::new(self.provider.clone(), self.timeout, self.retry).map_err(|e| e.0)
    }
}

/// What happened to each route.
#[derive(Debug, Default)]
pub struct Outcome {
    pub written: usize,
    pub unchanged: usize,
    /// `(route, reason)`.
    pub failed: Vec<(String, String)>,
}

/// `flota rutas regenerar`: re-requests each route in `dir` (or only `names`) and rewrites
/// its geometry. `report` gets one line per route as it finishes.
pub fn regenerate(
    dir: &Path,
    names: &[String],
    connection: &Connection,
    report: &mut dyn FnMut(&str),
) -> Result<Outcome, String> {
    let targets = targets(dir, names)?;
    let client = connection.client()?;
    let mut outcome = Outcome::default();
    for (name, path) in targets {
        match regenerate_one(&client, &path) {
            Ok(Change::Written(line)) => {
                outcome.written += 1;
                report(&format!("{name}: {line}"));
            }
            Ok(Change::Unchanged) => {
                outcome.unchanged += 1;
                report(&format!("{name}: sin cambios"));
            }
            Err(reason) => {
                report(&format!("{name}: error: {reason}"));
                outcome.failed.push((name, reason));
            }
        }
    }
    Ok(outcome)
}

/// The routes to work on: `names` (with or without `.json`), else every file in `dir`. An
/// unknown name is listed with its reason but does not stop the others.
fn targets(dir: &Path, names: &[String]) -> Result<Vec<(String, PathBuf)>, String> {
    if names.is_empty() {
        let paths = route::route_paths(dir).map_err(|e| e.to_string())?;
        return Ok(paths
            .into_iter()
            .map(|p| {
                let stem = p
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (stem, p)
            })
            .collect());
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

enum Change {
    Written(String),
    Unchanged,
}

fn regenerate_one(client: &Client, path: &Path) -> Result<Change, String> {
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    route::check_name(&name)?;
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let known = route::route_paths(path.parent().unwrap_or(Path::new(".")))
                .map(|paths| {
                    paths
                        .iter()
                        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            return Err(format!(
                "no existe {}; rutas disponibles: {known}",
                path.display()
            ));
        }
        Err(e) => return Err(format!("{}: no se pudo leer: {e}", path.display())),
    };
    let old = RouteFile::parse(&text, path).map_err(|e| e.to_string())?;
    route::check_stem(path, &old.nombre).map_err(|e| e.to_string())?;
    let old_vertices = Route::from_file(old.clone(), path)
        .map(|r| r.points.len().to_string())
        .unwrap_or_else(|_| "?".into());
    let (new, attempts) = fetch(client, &old.nombre, &old.paradas, path)?;
    let new_text = new.to_json();
    if new_text == text {
        return Ok(Change::Unchanged);
    }
    write(path, &new_text)?;
    let vertices = Route::from_file(new.clone(), path)
        .map(|r| r.points.len())
        .unwrap_or(0);
    Ok(Change::Written(format!(
        "{:.1} → {:.1} km, {} → {} min, {old_vertices} → {vertices} vértices ({} → {}{})",
        old.distancia_m as f64 / 1000.0,
        new.distancia_m as f64 / 1000.0,
        minutes(old.duracion_s),
        minutes(new.duracion_s),
        old.fuente,
        new.fuente,
        retried(attempts)
    )))
}

fn minutes(seconds: u64) -> u64 {
    (seconds + 30) / 60
}

/// Asks for the road through `stops` and builds the route file, checked as `flota simular`
/// will check it; also returns how many requests it took, for the report.
fn fetch(
    client: &Client,
    name: &str,
    stops: &[StopFile],
    path: &Path,
) -> Result<(RouteFile, u32), String> {
    let directions = client.route(stops).map_err(|e| e.0)?;
    let file = RouteFile {
        nombre: name.to_owned(),
        fuente: client.provider().source().to_owned(),
        paradas: stops.to_vec(),
        distancia_m: directions.distance_m,
        duracion_s: directions.duration_s,
        polilinea: RouteFile::encode(&directions.points),
    };
    Route::from_file(file.clone(), path).map_err(|e| {
        let reason = match e {
            route::RouteError::Invalid { message, .. } => message,
            other => other.to_string(),
        };
        format!(
            "la ruta que devolvió {} no pasa las comprobaciones de flota ({reason}); no se \
             escribió nada",
            client.provider().describe()
        )
    })?;
    Ok((file, directions.attempts))
}

/// ", tras 3 intentos" when retries were needed.
fn retried(attempts: u32) -> String {
    if attempts > 1 {
        format!(", tras {attempts} intentos")
    } else {
        String::new()
    }
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("{}: no se pudo escribir: {e}", path.display());
    let staged = Staged::new(path).map_err(fail)?;
    let mut file = std::fs::File::create(staged.temp()).map_err(fail)?;
    file.write_all(text.as_bytes()).map_err(fail)?;
    drop(file);
    staged.commit().map_err(fail)
}

/// `flota rutas nueva`: a route file from stops, routed by the provider.
pub fn create(
    dir: &Path,
    name: &str,
    stops: &[StopFile],
    overwrite: bool,
    connection: &Connection,
) -> Result<(PathBuf, String), String> {
    route::check_name(name)?;
    if stops.len() < 2 {
        return Err(
            "una ruta necesita al menos dos paradas (--parada nombre:lat,lon, la primera es \
             la salida y la última la llegada)"
                .into(),
        );
    }
    let path = dir.join(format!("{name}.json"));
    if path.exists() && !overwrite {
        return Err(format!(
            "{} ya existe; use 'flota rutas regenerar {name}' o --sobrescribir",
            path.display()
        ));
    }
    let client = connection.client()?;
    let (file, attempts) = fetch(&client, name, stops, &path)?;
    write(&path, &file.to_json())?;
    let route = Route::from_file(file.clone(), &path).map_err(|e| e.to_string())?;
    Ok((
        path,
        format!(
            "{name}: {} paradas, {:.1} km, {} min, {} vértices ({}{})",
            file.paradas.len(),
            file.distancia_m as f64 / 1000.0,
            minutes(file.duracion_s),
            route.points.len(),
            file.fuente,
            retried(attempts)
        ),
    ))
}

/// Parses `--parada nombre:lat,lon`.
pub fn parse_stop(text: &str) -> Result<StopFile, String> {
    let usage = "use nombre:lat,lon, p. ej. cedis_z12:14.585,-90.545";
    let (name, coords) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("parada '{text}' sin ':'; {usage}"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("parada '{text}' sin nombre; {usage}"));
    }
    let (lat, lon) = coords
        .split_once(',')
        .ok_or_else(|| format!("parada '{text}': faltan lat,lon; {usage}"))?;
    let number = |v: &str, what: &str, limit: f64| {
        v.trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && x.abs() <= limit)
            .ok_or_else(|| format!("parada '{text}': {what} '{}' no es válida", v.trim()))
    };
    Ok(StopFile {
        nombre: name.to_owned(),
        lat: number(lat, "la latitud", 90.0)?,
        lon: number(lon, "la longitud", 180.0)?,
    })
}

/// One stored route, loaded or not.
struct Stored {
    name: String,
    path: PathBuf,
    route: Result<(RouteFile, Route), String>,
}

fn load(dir: &Path, name: Option<&str>) -> Result<Vec<Stored>, String> {
    let names: Vec<String> = name.map(|n| vec![n.to_owned()]).unwrap_or_default();
    Ok(targets(dir, &names)?
        .into_iter()
        .map(|(name, path)| {
            let route = std::fs::read_to_string(&path)
                .map_err(|e| format!("{}: no se pudo leer: {e}", path.display()))
                .and_then(|text| RouteFile::parse(&text, &path).map_err(|e| e.to_string()))
                .and_then(|file| {
                    route::check_stem(&path, &file.nombre).map_err(|e| e.to_string())?;
                    let route = Route::from_file(file.clone(), &path).map_err(|e| e.to_string())?;
                    Ok((file, route))
                });
            Stored { name, path, route }
        })
        .collect())
}

fn bounds(points: &[LatLon]) -> (LatLon, LatLon) {
    let mut sw = LatLon::new(90.0, 180.0);
    let mut ne = LatLon::new(-90.0, -180.0);
    for p in points {
        sw = LatLon::new(sw.lat.min(p.lat), sw.lon.min(p.lon));
        ne = LatLon::new(ne.lat.max(p.lat), ne.lon.max(p.lon));
    }
    (sw, ne)
}

/// `flota rutas ver`: a table of every route, or one route in detail. Returns the text and
/// how many files could not be read.
pub fn show(dir: &Path, name: Option<&str>) -> Result<(String, usize), String> {
    let stored = load(dir, name)?;
    let mut out = String::new();
    let mut broken = 0;
    if name.is_some() {
        for s in &stored {
            match &s.route {
                Ok((file, route)) => out.push_str(&detail(file, route, &s.path)),
                Err(reason) => {
                    broken += 1;
                    out.push_str(&format!("{}: error: {reason}\n", s.name));
                }
            }
        }
        return Ok((out, broken));
    }
    out.push_str(&format!(
        "{:<28} {:<18} {:>7} {:>8} {:>6} {:>6} {:>8}  {}\n",
        "ruta",
        "fuente",
        "paradas",
        "km",
        "min",
        "km/h",
        "vértices",
        "caja (sur,oeste – norte,este)"
    ));
    let mut total_km = 0.0;
    for s in &stored {
        match &s.route {
            Ok((file, route)) => {
                let (sw, ne) = bounds(&route.points);
                total_km += route.length_m() / 1000.0;
                out.push_str(&format!(
                    "{:<28} {:<18} {:>7} {:>8.1} {:>6} {:>6.1} {:>8}  {:.4},{:.4} – {:.4},{:.4}\n",
                    s.name,
                    file.fuente,
                    file.paradas.len(),
                    route.length_m() / 1000.0,
                    minutes(file.duracion_s),
                    route.base_speed_kmh(),
                    route.points.len(),
                    sw.lat,
                    sw.lon,
                    ne.lat,
                    ne.lon
                ));
            }
            Err(reason) => {
                broken += 1;
                out.push_str(&format!("{:<28} error: {reason}\n", s.name));
            }
        }
    }
    out.push_str(&format!(
        "{} rutas, {:.1} km en total{}\n",
        stored.len() - broken,
        total_km,
        if broken > 0 {
            format!("; {broken} con errores")
        } else {
            String::new()
        }
    ));
    Ok((out, broken))
}

fn detail(file: &RouteFile, route: &Route, path: &Path) -> String {
    let (sw, ne) = bounds(&route.points);
    let mut out = format!(
        "{} ({})\n  fuente: {}\n  longitud de la polilínea: {:.2} km; distancia del servicio: {:.2} km; \
         duración: {} min ({:.1} km/h)\n  vértices: {}\n  caja: sur {:.5}, oeste {:.5}, norte {:.5}, este {:.5}\n  paradas:\n",
        file.nombre,
        path.display(),
        file.fuente,
        route.length_m() / 1000.0,
        file.distancia_m as f64 / 1000.0,
        minutes(file.duracion_s),
        route.base_speed_kmh(),
        route.points.len(),
        sw.lat,
        sw.lon,
        ne.lat,
        ne.lon
    );
    for (i, stop) in route.stops.iter().enumerate() {
        out.push_str(&format!(
            "    {}. {:<24} {:.5},{:.5}  km {:.2}  a {:.0} m de la línea\n",
            i + 1,
            stop.name,
            stop.position.lat,
            stop.position.lon,
            stop.along_m / 1000.0,
            stop.offset_m
        ));
    }
    out
}

/// `flota rutas ver --geojson`: every readable route as a LineString plus its stops as
/// Points, in one FeatureCollection.
pub fn geojson(dir: &Path, name: Option<&str>) -> Result<(String, usize), String> {
    let stored = load(dir, name)?;
    let mut features = Vec::new();
    let mut broken = 0;
    for s in &stored {
        let Ok((file, route)) = &s.route else {
            broken += 1;
            continue;
        };
        let line: Vec<[f64; 2]> = route.points.iter().map(|p| [p.lon, p.lat]).collect();
        features.push(json!({
            "type": "Feature",
            "geometry": {"type": "LineString", "coordinates": line},
            "properties": {
                "tipo": "ruta",
                "nombre": file.nombre,
                "fuente": file.fuente,
                "distancia_m": file.distancia_m,
                "duracion_s": file.duracion_s,
                "paradas": file.paradas.len(),
            }
        }));
        for (i, stop) in route.stops.iter().enumerate() {
            features.push(json!({
                "type": "Feature",
                "geometry": {"type": "Point", "coordinates": [stop.position.lon, stop.position.lat]},
                "properties": {
                    "tipo": "parada",
                    "ruta": file.nombre,
                    "nombre": stop.name,
                    "orden": i + 1,
                    "km_en_ruta": (stop.along_m / 10.0).round() / 100.0,
                }
            }));
        }
    }
    let collection = json!({"type": "FeatureCollection", "features": features});
    // A `Value` built above always serialises.
    let text = serde_json::to_string_pretty(&collection).unwrap_or_default();
    Ok((text + "\n", broken))
}

/// Writes exported text to `path` atomically.
pub fn save(path: &Path, text: &str) -> Result<(), String> {
    write(path, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_parse_from_the_command_line() {
        let check = |text: &str, want: Result<(&str, f64, f64), &str>| {
            let got = parse_stop(text);
            match (got, want) {
                (Ok(stop), Ok((name, lat, lon))) => {
                    assert_eq!((stop.nombre.as_str(), stop.lat, stop.lon), (name, lat, lon));
                }
                (Err(e), Err(needle)) => assert!(e.contains(needle), "{text}: {e}"),
                (got, want) => panic!("{text}: {got:?} vs {want:?}"),
            }
        };
        check(
            "cedis_z12:14.585,-90.545",
            Ok(("cedis_z12", 14.585, -90.545)),
        );
        check(" z4 : 14.621 , -90.516 ", Ok(("z4", 14.621, -90.516)));
        check(
            "Bodega: Mixco:14.6,-90.6",
            Ok(("Bodega: Mixco", 14.6, -90.6)),
        );
        check("cedis", Err("sin ':'"));
        check(":14.5,-90.5", Err("sin nombre"));
        check("a:14.5", Err("faltan lat,lon"));
        check("a:95,-90.5", Err("la latitud '95'"));
        check("a:14.5,x", Err("la longitud 'x'"));
    }
}
