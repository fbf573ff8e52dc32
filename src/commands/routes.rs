//! `flota rutas`: regenerate route files from a directions service, create new ones from
//! stops or, offline, from a line drawn in a GPX, GeoJSON or KML file, and summarise or export
//! what is stored.
//!
//! Owns the verb: which directions service (the flags, then [`Settings::directions`]), what a
//! regenerated file keeps (name and stops) and what it replaces (polyline, distance, duration,
//! source), the checks new geometry must pass before it may replace the old, and the words:
//! progress and failures on stderr, tables and GeoJSON on stdout, exit 1 when any route
//! failed. One route's failure is reported and the others proceed. The folder's files are
//! `geometry::route_files`'s; the HTTP side is `directions`'s.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use super::{Io, Settings};
use crate::cli::{
    NewRouteArgs, ProviderArgs, ProviderChoice, RegenerateArgs, RoutesVerb, ShowRoutesArgs,
};
use crate::directions::{self, Client, Provider, RetryPolicy};
use crate::export::routes_geojson;
use crate::geometry::earth::LatLon;
use crate::geometry::route::{self, Route, RouteFile, StopFile};
use crate::geometry::route_files::{self, Stored};
use crate::geometry::route_import;
use crate::settings::Directions;

pub fn run(verb: RoutesVerb, io: &mut Io, settings: &Settings) -> anyhow::Result<ExitCode> {
    let failed = match verb {
        RoutesVerb::Regenerar(args) => regenerate(args, io, &settings.directions)?,
        RoutesVerb::Nueva(args) => create(args, io, &settings.directions)?,
        RoutesVerb::Ver(args) => show(args, io)?,
    };
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The provider from the flags and the environment: `--proveedor`, else Google's Routes API
/// when `GOOGLE_MAPS_API_KEY` is set, else OSRM at `--url` or `FLOTA_OSRM_URL`. Without
/// either, a message saying how to get one.
pub fn resolve_provider(args: &ProviderArgs, env: &Directions) -> Result<Provider, String> {
    let url = args.url.as_deref();
    let osrm_url = url.map(str::to_owned).or_else(|| env.osrm_url.clone());
    let endpoint = |configured: &Option<String>, default: &str| {
        url.map(str::to_owned)
            .or_else(|| configured.clone())
            .unwrap_or_else(|| default.to_owned())
    };
    let routes = |key: String| Provider::GoogleRoutes {
        key,
        url: endpoint(&env.google_routes_url, directions::GOOGLE_ROUTES_URL),
    };
    let legacy = |key: String| Provider::GoogleDirections {
        key,
        url: endpoint(&env.google_url, directions::GOOGLE_DIRECTIONS_URL),
    };
    let osrm = |url: String| Provider::Osrm {
        url,
        profile: args.perfil.clone(),
    };
    let no_key = |flag: &str, api: &str| {
        format!(
            "--proveedor {flag} necesita la variable de entorno GOOGLE_MAPS_API_KEY con una \
             clave que tenga habilitada la {api}"
        )
    };
    match (args.proveedor, env.google_key.clone(), osrm_url) {
        (Some(ProviderChoice::Google), Some(key), _) => Ok(routes(key)),
        (Some(ProviderChoice::Google), None, _) => Err(no_key("google", "Routes API")),
        (Some(ProviderChoice::GoogleDirections), Some(key), _) => Ok(legacy(key)),
        (Some(ProviderChoice::GoogleDirections), None, _) => Err(no_key(
            "google-directions",
            "Directions API (heredada; los proyectos nuevos usan la Routes API)",
        )),
        (Some(ProviderChoice::Osrm), _, Some(url)) => Ok(osrm(url)),
        (Some(ProviderChoice::Osrm), _, None) => Err(
            "--proveedor osrm necesita la dirección del servidor: --url URL o la variable \
             FLOTA_OSRM_URL (p. ej. http://localhost:5000)"
                .into(),
        ),
        (None, Some(key), _) => Ok(routes(key)),
        (None, None, Some(url)) => Ok(osrm(url)),
        (None, None, None) => Err(
            "no hay servicio de rutas: defina GOOGLE_MAPS_API_KEY (Google Routes API) o \
             indique un servidor OSRM con --proveedor osrm --url URL (o FLOTA_OSRM_URL); o \
             dibuje la ruta y créela sin conexión con 'flota rutas nueva NOMBRE --desde \
             ARCHIVO' (GPX, GeoJSON o KML). Las rutas guardadas siguen sirviendo sin conexión."
                .into(),
        ),
    }
}

/// How to reach the provider.
#[derive(Debug, Clone)]
struct Connection {
    provider: Provider,
    timeout: Duration,
    retry: RetryPolicy,
}

impl Connection {
    fn new(args: &ProviderArgs, env: &Directions) -> anyhow::Result<Connection> {
        Ok(Connection {
            provider: resolve_provider(args, env).map_err(anyhow::Error::msg)?,
            timeout: Duration::from_secs(args.tiempo_limite),
            retry: RetryPolicy {
                retries: args.reintentos,
                ..Default::default()
            },
        })
    }

    fn client(&self) -> Result<Client, String> {
        Client::new(self.provider.clone(), self.timeout, self.retry).map_err(|e| e.0)
    }
}

/// `flota rutas regenerar`: re-requests each route in the folder (or only the named ones) and
/// rewrites its geometry, one line per route as it finishes. Returns how many failed.
fn regenerate(args: RegenerateArgs, io: &mut Io, env: &Directions) -> anyhow::Result<usize> {
    let connection = Connection::new(&args.proveedor, env)?;
    writeln!(
        io.stderr,
        "Regenerando rutas de {} con {}",
        args.dir.display(),
        connection.provider.describe()
    )?;
    let targets = route_files::targets(&args.dir, &args.nombres).map_err(anyhow::Error::msg)?;
    let client = connection.client().map_err(anyhow::Error::msg)?;
    let (mut written, mut unchanged, mut failed) = (0, 0, 0);
    for (name, path) in targets {
        match regenerate_one(&client, &path) {
            Ok(Some(line)) => {
                written += 1;
                writeln!(io.stderr, "{name}: {line}")?;
            }
            Ok(None) => {
                unchanged += 1;
                writeln!(io.stderr, "{name}: sin cambios")?;
            }
            Err(reason) => {
                failed += 1;
                writeln!(io.stderr, "{name}: error: {reason}")?;
            }
        }
    }
    writeln!(
        io.stderr,
        "{written} reescritas, {unchanged} sin cambios, {failed} con error"
    )?;
    Ok(failed)
}

/// Rewrites one route file with new geometry for its stops; `None` when nothing changed,
/// else what did.
fn regenerate_one(client: &Client, path: &Path) -> Result<Option<String>, String> {
    route::check_name(&route_files::stem(path))?;
    let (text, old) = route_files::read(path)?;
    let old_vertices = Route::from_file(old.clone(), path)
        .map(|r| r.points.len().to_string())
        .unwrap_or_else(|_| "?".into());
    let (new, attempts) = fetch(client, &old.nombre, &old.paradas, path)?;
    let new_text = new.to_json();
    if new_text == text {
        return Ok(None);
    }
    route_files::save(path, &new_text)?;
    let vertices = Route::from_file(new.clone(), path)
        .map(|r| r.points.len())
        .unwrap_or(0);
    Ok(Some(format!(
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

/// `flota rutas nueva`: a route file from a drawn line (`--desde`, offline), or from stops
/// routed by the provider.
fn create(args: NewRouteArgs, io: &mut Io, env: &Directions) -> anyhow::Result<usize> {
    let (path, summary) = match &args.desde {
        Some(source) => create_offline(&args, source),
        None => {
            let connection = Connection::new(&args.proveedor, env)?;
            create_file(&args, &connection)
        }
    }
    .map_err(anyhow::Error::msg)?;
    writeln!(io.stderr, "{summary} → {}", path.display())?;
    Ok(0)
}

/// Where the new route goes, refused when a route is there already.
fn new_route_path(args: &NewRouteArgs) -> Result<PathBuf, String> {
    let name = &args.nombre;
    route::check_name(name)?;
    let path = args.dir.join(format!("{name}.json"));
    if path.exists() && !args.sobrescribir {
        return Err(format!(
            "{} ya existe; use 'flota rutas regenerar {name}' o --sobrescribir",
            path.display()
        ));
    }
    Ok(path)
}

fn create_file(args: &NewRouteArgs, connection: &Connection) -> Result<(PathBuf, String), String> {
    let stops = &args.paradas;
    if stops.len() < 2 {
        return Err(
            "una ruta necesita al menos dos paradas (--parada nombre:lat,lon, la primera es \
             la salida y la última la llegada)"
                .into(),
        );
    }
    let path = new_route_path(args)?;
    let client = connection.client()?;
    let (file, attempts) = fetch(&client, &args.nombre, stops, &path)?;
    route_files::save(&path, &file.to_json())?;
    let route = Route::from_file(file.clone(), &path).map_err(|e| e.to_string())?;
    Ok((path, summary(&file, &route, attempts)))
}

/// A route file from the line drawn in `source`, checked as `flota simular` checks routes
/// before anything is written.
fn create_offline(args: &NewRouteArgs, source: &Path) -> Result<(PathBuf, String), String> {
    let path = new_route_path(args)?;
    let drawn = route_import::read(source)?;
    let wanted = route_import::Wanted {
        name: &args.nombre,
        stops: &args.paradas,
        speed_kmh: args.velocidad,
    };
    let file = route_import::route_file(&drawn, source, &wanted)?;
    let route = Route::from_file(file.clone(), &path).map_err(|e| {
        format!(
            "{}: la ruta no pasa las comprobaciones de flota ({}); no se escribió nada",
            source.display(),
            invalid_reason(e)
        )
    })?;
    route_files::save(&path, &file.to_json())?;
    Ok((path, summary(&file, &route, 1)))
}

/// What a route check found, without the path it names (the caller names the file).
fn invalid_reason(e: route::RouteError) -> String {
    match e {
        route::RouteError::Invalid { message, .. } => message,
        other => other.to_string(),
    }
}

/// "r11: 4 paradas, 12.3 km, 25 min, 480 vértices (osrm)".
fn summary(file: &RouteFile, route: &Route, attempts: u32) -> String {
    format!(
        "{}: {} paradas, {:.1} km, {} min, {} vértices ({}{})",
        file.nombre,
        file.paradas.len(),
        file.distancia_m as f64 / 1000.0,
        minutes(file.duracion_s),
        route.points.len(),
        file.fuente,
        retried(attempts)
    )
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
        format!(
            "la ruta que devolvió {} no pasa las comprobaciones de flota ({}); no se \
             escribió nada",
            client.provider().describe(),
            invalid_reason(e)
        )
    })?;
    Ok((file, directions.attempts))
}

fn minutes(seconds: u64) -> u64 {
    (seconds + 30) / 60
}

/// ", tras 3 intentos" when retries were needed.
fn retried(attempts: u32) -> String {
    if attempts > 1 {
        format!(", tras {attempts} intentos")
    } else {
        String::new()
    }
}

/// `flota rutas ver`: a table of every route, one route in detail, or GeoJSON (to a file or
/// stdout). Returns how many files could not be read.
fn show(args: ShowRoutesArgs, io: &mut Io) -> anyhow::Result<usize> {
    let stored =
        route_files::load(&args.dir, args.nombre.as_deref()).map_err(anyhow::Error::msg)?;
    let broken = stored.iter().filter(|s| s.route.is_err()).count();
    match &args.geojson {
        Some(target) => {
            let text = routes_geojson(&stored);
            if target.as_os_str() == "-" {
                io.stdout.write_all(text.as_bytes())?;
                io.stdout.flush()?;
            } else {
                route_files::save(target, &text).map_err(anyhow::Error::msg)?;
                writeln!(io.stderr, "GeoJSON → {}", target.display())?;
            }
        }
        None if args.nombre.is_some() => write!(io.stdout, "{}", details(&stored))?,
        None => write!(io.stdout, "{}", table(&stored))?,
    }
    Ok(broken)
}

/// What the summaries say of a readable route.
struct Facts {
    km: f64,
    min: u64,
    kmh: f64,
    vertices: usize,
    /// South-west and north-east corners of the line's bounding box.
    sw: LatLon,
    ne: LatLon,
}

impl Facts {
    fn of(file: &RouteFile, route: &Route) -> Facts {
        let mut sw = LatLon::new(90.0, 180.0);
        let mut ne = LatLon::new(-90.0, -180.0);
        for p in &route.points {
            sw = LatLon::new(sw.lat.min(p.lat), sw.lon.min(p.lon));
            ne = LatLon::new(ne.lat.max(p.lat), ne.lon.max(p.lon));
        }
        Facts {
            km: route.length_m() / 1000.0,
            min: minutes(file.duracion_s),
            kmh: route.base_speed_kmh(),
            vertices: route.points.len(),
            sw,
            ne,
        }
    }
}

/// One line per route, then the total.
fn table(stored: &[Stored]) -> String {
    let mut out = format!(
        "{:<28} {:<18} {:>7} {:>8} {:>6} {:>6} {:>8}  {}\n",
        "ruta",
        "fuente",
        "paradas",
        "km",
        "min",
        "km/h",
        "vértices",
        "caja (sur,oeste – norte,este)"
    );
    let (mut total_km, mut broken) = (0.0, 0);
    for s in stored {
        match &s.route {
            Ok((file, route)) => {
                let f = Facts::of(file, route);
                total_km += f.km;
                out.push_str(&row(&s.name, file, &f));
            }
            Err(reason) => {
                broken += 1;
                out.push_str(&format!("{:<28} error: {reason}\n", s.name));
            }
        }
    }
    let errors = if broken > 0 {
        format!("; {broken} con errores")
    } else {
        String::new()
    };
    out.push_str(&format!(
        "{} rutas, {total_km:.1} km en total{errors}\n",
        stored.len() - broken
    ));
    out
}

fn row(name: &str, file: &RouteFile, f: &Facts) -> String {
    let (fuente, stops) = (&file.fuente, file.paradas.len());
    let (sw, ne) = (f.sw, f.ne);
    format!(
        "{name:<28} {fuente:<18} {stops:>7} {:>8.1} {:>6} {:>6.1} {:>8}  {:.4},{:.4} – {:.4},{:.4}\n",
        f.km, f.min, f.kmh, f.vertices, sw.lat, sw.lon, ne.lat, ne.lon
    )
}

/// The named route in detail, or why it could not be read.
fn details(stored: &[Stored]) -> String {
    let mut out = String::new();
    for s in stored {
        match &s.route {
            Ok((file, route)) => out.push_str(&detail(file, route, &s.path)),
            Err(reason) => out.push_str(&format!("{}: error: {reason}\n", s.name)),
        }
    }
    out
}

fn detail(file: &RouteFile, route: &Route, path: &Path) -> String {
    let f = Facts::of(file, route);
    let (sw, ne) = (f.sw, f.ne);
    let service_km = file.distancia_m as f64 / 1000.0;
    let mut out = format!(
        "{} ({})\n  fuente: {}\n  longitud de la polilínea: {:.2} km; distancia del servicio: {service_km:.2} km; \
         duración: {} min ({:.1} km/h)\n  vértices: {}\n  caja: sur {:.5}, oeste {:.5}, norte {:.5}, este {:.5}\n  paradas:\n",
        file.nombre,
        path.display(),
        file.fuente,
        f.km,
        f.min,
        f.kmh,
        f.vertices,
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
