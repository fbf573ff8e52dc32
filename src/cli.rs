//! The command line: verbs, flags and their Spanish help, and Spanish parse errors.
//!
//! Owns argument *parsing* only (ripgrep's "low args"): nothing here touches files, the
//! network or the database, and every value parser lives here (`--ahora`, `--parada`,
//! seconds, fractions). It imports no verb: `src/commands/` takes what this produces. clap's
//! own strings are English, so the built command is rewritten once ([`localise`]) and its
//! errors are translated ([`spanish_error`]).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Arg, ArgAction, Args, Command, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::calendar::WallTime;
use crate::geometry::route::StopFile;

/// Default database path, relative to the working directory.
pub const DEFAULT_DB: &str = "datos/flota.db";

#[derive(Debug, Parser)]
#[command(
    name = "flota",
    version,
    about = "Telemetría GPS de flotas: simulador, motor de detección y servidor MCP",
    long_about = None,
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Verb,
}

#[derive(Debug, Subcommand)]
pub enum Verb {
    /// Run a scenario: positions database plus ground-truth log.
    #[command(
        about = "Simula un escenario y escribe las posiciones (SQLite o PostgreSQL) y el registro de verdad"
    )]
    Simular(SimulateArgs),
    /// Re-run the detection engine over a database.
    #[command(
        about = "Vuelve a ejecutar el motor de detección sobre una base (eventos y resúmenes diarios)"
    )]
    Analizar(AnalyzeArgs),
    /// Compare detections with the ground truth.
    #[command(
        about = "Compara las detecciones de una base con su registro de verdad: precisión, exhaustividad, F1, km"
    )]
    Evaluar(EvaluateArgs),
    /// Serve the fleet tools over MCP (stdio).
    #[command(about = "Sirve las herramientas de la flota por MCP sobre stdio (JSON-RPC 2.0)")]
    Servir(ServeArgs),
    /// Receive positions over the OsmAnd protocol.
    #[command(
        about = "Recibe posiciones de rastreadores y teléfonos por el protocolo OsmAnd (HTTP, puerto 5055 de Traccar) y las analiza al vuelo"
    )]
    Recibir(ReceiveArgs),
    /// Import position files.
    #[command(
        about = "Importa posiciones de archivos GPX, CSV, GeoJSON o NMEA y actualiza el análisis"
    )]
    Importar(ImportArgs),
    /// Export one unit's day as GeoJSON, GPX or PNG.
    #[command(
        about = "Exporta el día de una unidad: GeoJSON (QGIS, geojson.io), GPX 1.1 o el mapa PNG"
    )]
    Exportar(ExportArgs),
    /// Regenerate, create and summarise route files.
    #[command(
        subcommand,
        about = "Rutas (rutas/*.json): crearlas sin conexión desde un GPX, GeoJSON o KML, regenerarlas o crearlas con Google (Routes API) u OSRM, y resumirlas"
    )]
    Rutas(RoutesVerb),
    /// Talk to an MCP server by hand, run the demo tour or replay a file.
    #[command(
        about = "Cliente MCP: interactivo, recorrido de demostración (--demo) o reproducción (--replay)"
    )]
    Cliente(ClientArgs),
    /// Print configuration snippets for MCP clients.
    #[command(subcommand, about = "Muestra la configuración para clientes MCP")]
    Config(ConfigVerb),
}

#[derive(Debug, Args)]
pub struct SimulateArgs {
    #[arg(
        value_name = "ESCENARIO",
        help = "Archivo TOML del escenario (por defecto la semana de referencia integrada)"
    )]
    pub escenario: Option<PathBuf>,
    #[arg(
        long,
        value_name = "AAAA-MM-DDTHH:MM",
        value_parser = parse_ahora,
        help = "Fin de los datos, hora local de la zona del escenario (por defecto: ahora, al minuto)"
    )]
    pub ahora: Option<WallTime>,
    #[arg(long, value_name = "RUTA", default_value = DEFAULT_DB, help = "Base de datos de salida: un archivo SQLite o una URL postgres://usuario:clave@servidor/base")]
    pub salida: PathBuf,
    #[arg(
        long,
        value_name = "RUTA",
        help = "Registro de verdad (por defecto junto a la base: <nombre>.verdad.jsonl)"
    )]
    pub verdad: Option<PathBuf>,
    #[arg(
        long,
        value_name = "N",
        value_parser = parse_seed,
        help = "Semilla aleatoria (reemplaza la del escenario)"
    )]
    pub semilla: Option<u64>,
    #[arg(
        long,
        value_name = "URL",
        help = "Envía cada reporte a un servidor del protocolo OsmAnd (flota recibir, Traccar…) como lo harían los rastreadores, p. ej. http://127.0.0.1:5055"
    )]
    pub emitir: Option<String>,
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1.0,
        value_parser = parse_speedup,
        requires = "emitir",
        help = "Con --emitir: N segundos simulados por segundo real (1 = tiempo real)"
    )]
    pub acelerar: f64,
    #[arg(
        long = "sin-base",
        requires = "emitir",
        help = "Con --emitir: no escribe la base local (solo el registro de verdad)"
    )]
    pub sin_base: bool,
}

/// A positive speed-up factor.
pub fn parse_speedup(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0 && *v <= 1e9)
        .ok_or_else(|| format!("'{text}' no es un factor positivo (p. ej. 60)"))
}

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    #[arg(value_name = "BASE", default_value = DEFAULT_DB, help = "Base de datos a analizar (archivo SQLite o URL postgres://…)")]
    pub db: PathBuf,
}

#[derive(Debug, Args)]
pub struct EvaluateArgs {
    #[arg(value_name = "BASE", default_value = DEFAULT_DB, help = "Base de datos con las detecciones")]
    pub db: PathBuf,
    #[arg(
        long,
        value_name = "ARCHIVO",
        help = "Registro de verdad (por defecto <base>.verdad.jsonl junto a la base)"
    )]
    pub verdad: Option<PathBuf>,
    #[arg(
        long,
        value_name = "ARCHIVO.csv",
        requires = "verdad",
        help = "Evalúa las detecciones exportadas por otra plataforma (CSV: placa, tipo, inicio, fin…) en vez de las de una base; requiere --verdad"
    )]
    pub detecciones: Option<PathBuf>,
    #[arg(long, help = "Imprime el resultado como JSON")]
    pub json: bool,
    #[arg(
        long,
        value_name = "SEGUNDOS",
        default_value_t = crate::evaluation::DEFAULT_TOLERANCE_S,
        value_parser = integer_in(0u32, 86_400),
        help = "Error máximo, al inicio y al final, de una detección que acierta"
    )]
    pub tolerancia: u32,
    #[arg(
        long = "f1-minimo",
        value_name = "X",
        value_parser = parse_fraction,
        help = "Termina con código 1 si el F1 de algún tipo queda por debajo de X (0 a 1; con --matriz, el de la peor semilla de cada punto, nombrándolos): una barrera para CI"
    )]
    pub f1_minimo: Option<f64>,
    /// Boxed: the grid's flags would make every `Verb` as large as they are.
    #[command(flatten)]
    pub matriz: Box<GridArgs>,
}

/// `flota evaluar --matriz`: the fidelity grid (docs/deteccion.md). Every noise list given is
/// a dimension of the grid; a key not given keeps each scenario's own `[ruido]` value.
#[derive(Debug, Args)]
pub struct GridArgs {
    #[arg(
        long = "matriz",
        value_name = "ESCENARIO.toml",
        conflicts_with_all = ["detecciones", "verdad"],
        help = "Modo matriz: simula el escenario (repetible) en cada punto de la matriz de ruido y cada semilla, puntúa cada ejecución y escribe la tabla, matriz.json y los gráficos PNG en --salida"
    )]
    pub escenarios: Vec<PathBuf>,
    #[arg(
        long,
        value_name = "AAAA-MM-DDTHH:MM",
        value_parser = parse_ahora,
        requires = "escenarios",
        help = "Con --matriz: fin de los datos, hora local de la zona de cada escenario (por defecto: ahora, al minuto)"
    )]
    pub ahora: Option<WallTime>,
    #[arg(long, value_name = "M,…", value_parser = parse_metres_list, requires = "escenarios", help = "Con --matriz: ruido blanco de posición, metros (p. ej. 5,15,25)")]
    pub sigma: Option<Levels>,
    #[arg(long, value_name = "M,…", value_parser = parse_metres_list, requires = "escenarios", help = "Con --matriz: deriva correlacionada, metros (p. ej. 0,10,20)")]
    pub deriva: Option<Levels>,
    #[arg(long, value_name = "S,…", value_parser = parse_seconds_list, requires = "escenarios", help = "Con --matriz: tiempo de correlación de la deriva, segundos (p. ej. 120)")]
    pub tau: Option<Levels>,
    #[arg(long, value_name = "P,…", value_parser = parse_probability_list, requires = "escenarios", help = "Con --matriz: probabilidad de salto por reporte, de 0 a 1 o en % (p. ej. 0,0.5%,1%)")]
    pub saltos: Option<Levels>,
    #[arg(long = "salto-m", value_name = "M,…", value_parser = parse_metres_list, requires = "escenarios", help = "Con --matriz: tamaño de un salto, metros (p. ej. 200)")]
    pub salto_m: Option<Levels>,
    #[arg(long, value_name = "P,…", value_parser = parse_probability_list, requires = "escenarios", help = "Con --matriz: probabilidad de reporte duplicado (p. ej. 3%)")]
    pub duplicados: Option<Levels>,
    #[arg(long, value_name = "P,…", value_parser = parse_probability_list, requires = "escenarios", help = "Con --matriz: probabilidad de reporte entregado tarde (p. ej. 5%)")]
    pub retrasados: Option<Levels>,
    #[arg(long, value_name = "S-S", value_parser = parse_delay, requires = "escenarios", help = "Con --matriz: retraso de un reporte tardío, segundos (rango, p. ej. 30-600)")]
    pub retraso: Option<[f64; 2]>,
    #[arg(
        long,
        value_name = "N-M,…",
        value_parser = parse_seeds,
        requires = "escenarios",
        help = "Con --matriz: semillas (lista y rangos: 1-20 o 1,4,10; por defecto 1-5)"
    )]
    pub semillas: Option<Seeds>,
    #[arg(
        long,
        value_name = "NOMBRE,…",
        value_parser = parse_tracker_names,
        requires = "escenarios",
        help = "Con --matriz: perfiles de rastreador que llevan todas las unidades, uno por punto (los [rastreadores.*] del escenario o, si no define ninguno, los integrados: fijo, comercial, telefono, economico)"
    )]
    pub rastreadores: Option<TrackerNames>,
    #[arg(
        long,
        value_name = "CARPETA",
        default_value = "matriz",
        requires = "escenarios",
        help = "Con --matriz: carpeta de matriz.json y los gráficos (f1_ruido.png, error_km.png, km_fantasma.png)"
    )]
    pub salida: PathBuf,
}

/// One noise key's levels on the grid, as given (`--sigma 5,15,25`).
#[derive(Debug, Clone, PartialEq)]
pub struct Levels(pub Vec<f64>);

/// The grid's seeds, as given (`--semillas 1-20`).
#[derive(Debug, Clone, PartialEq)]
pub struct Seeds(pub Vec<u64>);

/// The grid's tracker profiles, by name, as given (`--rastreadores comercial,telefono`).
#[derive(Debug, Clone, PartialEq)]
pub struct TrackerNames(pub Vec<String>);

/// A comma-separated list of profile names, none empty or twice; whether each exists is for
/// the scenario to say.
pub fn parse_tracker_names(text: &str) -> Result<TrackerNames, String> {
    let mut names: Vec<String> = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(format!(
                "'{text}' tiene un elemento vacío: escriba nombres separados por comas, p. ej. comercial,telefono"
            ));
        }
        if names.iter().any(|n| n == item) {
            return Err(format!("'{item}' está repetido en '{text}'"));
        }
        names.push(item.to_owned());
    }
    if names.len() > MAX_LEVELS {
        return Err(format!("'{text}' tiene más de {MAX_LEVELS} perfiles"));
    }
    Ok(TrackerNames(names))
}

/// Most values one grid list may hold, and most seeds: a slip (`1-2000000`) is refused
/// rather than run for days.
const MAX_LEVELS: usize = 50;
const MAX_SEEDS: usize = 10_000;

/// A comma-separated list of non-negative numbers, each checked by `one`, none twice.
fn parse_list(text: &str, one: impl Fn(&str) -> Result<f64, String>) -> Result<Levels, String> {
    let mut values = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(format!(
                "'{text}' tiene un elemento vacío: escriba valores separados por comas, p. ej. 5,15,25"
            ));
        }
        let value = one(item)?;
        if values.contains(&value) {
            return Err(format!("'{item}' está repetido en '{text}'"));
        }
        values.push(value);
    }
    if values.len() > MAX_LEVELS {
        return Err(format!(
            "'{text}' tiene {} valores: como mucho {MAX_LEVELS}",
            values.len()
        ));
    }
    Ok(Levels(values))
}

/// A finite number from 0 to `max`, named `what` in the error.
fn bounded(item: &str, max: f64, what: &str) -> Result<f64, String> {
    match item.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=max).contains(&v) => Ok(v),
        Ok(_) => Err(format!(
            "'{item}' está fuera de rango: use {what} de 0 a {max}"
        )),
        Err(_) => Err(format!("'{item}' no es un número ({what} de 0 a {max})")),
    }
}

/// Metres of noise: `5,15,25`.
pub fn parse_metres_list(text: &str) -> Result<Levels, String> {
    parse_list(text, |item| bounded(item, 10_000.0, "metros"))
}

/// Seconds: `60,120`. A correlation time of 0 means nothing: at least 1 s.
pub fn parse_seconds_list(text: &str) -> Result<Levels, String> {
    parse_list(text, |item| {
        let v = bounded(item, 86_400.0, "segundos")?;
        if v < 1.0 {
            return Err(format!(
                "'{item}' está fuera de rango: use segundos de 1 a 86400"
            ));
        }
        Ok(v)
    })
}

/// Probabilities, as fractions or percentages: `0,0.005,1%`.
pub fn parse_probability_list(text: &str) -> Result<Levels, String> {
    parse_list(text, |item| match item.strip_suffix('%') {
        Some(percent) => bounded(percent.trim(), 100.0, "un porcentaje").map(|v| v / 100.0),
        None => bounded(item, 1.0, "una probabilidad"),
    })
}

/// A delay range in seconds: `30-600`.
pub fn parse_delay(text: &str) -> Result<[f64; 2], String> {
    let Some((low, high)) = text.split_once('-') else {
        return Err(format!(
            "'{text}' no es un rango de segundos MIN-MAX (p. ej. 30-600)"
        ));
    };
    let (low, high) = (
        bounded(low.trim(), 86_400.0, "segundos")?,
        bounded(high.trim(), 86_400.0, "segundos")?,
    );
    if low > high {
        return Err(format!(
            "'{text}' va al revés: el mínimo va primero (p. ej. 30-600)"
        ));
    }
    Ok([low, high])
}

/// Seeds as a list of numbers and ranges: `1-20`, `1,4,10`, `1-5,9`; none twice.
pub fn parse_seeds(text: &str) -> Result<Seeds, String> {
    let mut seeds: Vec<u64> = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        let number = |t: &str| {
            t.trim().parse::<u64>().map_err(|_| {
                format!(
                    "'{}' no es una semilla (un número entero no negativo)",
                    t.trim()
                )
            })
        };
        let (first, last) = match item.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None if item.is_empty() => {
                return Err(format!(
                    "'{text}' tiene un elemento vacío: escriba semillas y rangos separados por comas, p. ej. 1-20 o 1,4,10"
                ));
            }
            None => {
                let n = number(item)?;
                (n, n)
            }
        };
        if first > last {
            return Err(format!(
                "el rango '{item}' va al revés: escriba {last}-{first}"
            ));
        }
        if last - first >= MAX_SEEDS as u64 || seeds.len() + (last - first) as usize >= MAX_SEEDS {
            return Err(format!(
                "'{text}' son demasiadas semillas: como mucho {MAX_SEEDS}"
            ));
        }
        for seed in first..=last {
            if seeds.contains(&seed) {
                return Err(format!("la semilla {seed} está repetida en '{text}'"));
            }
            seeds.push(seed);
        }
    }
    Ok(Seeds(seeds))
}

/// An integer from `low` to `high`, refused in Spanish (clap's own integer parsers answer
/// in English).
pub fn integer_in<T>(low: T, high: T) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy + Send + Sync,
{
    move |text: &str| match text.trim().parse::<T>() {
        Ok(n) if n >= low && n <= high => Ok(n),
        Ok(_) => Err(format!(
            "'{text}' está fuera de rango: use de {low} a {high}"
        )),
        Err(_) => Err(format!(
            "'{text}' no es un número entero (use de {low} a {high})"
        )),
    }
}

/// A seed: any non-negative 64-bit integer.
pub fn parse_seed(text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<u64>()
        .map_err(|_| format!("'{text}' no es un número entero no negativo"))
}

/// A number between 0 and 1.
pub fn parse_fraction(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| (0.0..=1.0).contains(v))
        .ok_or_else(|| format!("'{text}' no es un número entre 0 y 1"))
}

/// Parses `--ahora` (local time): `AAAA-MM-DDTHH:MM[:SS]` or with a space, optionally with
/// the offset that picks one of a repeated hour (`2026-10-25T02:30+01:00`). Whether the time
/// exists in the zone is the calendar's to say, once the zone is known.
pub fn parse_ahora(text: &str) -> Result<WallTime, String> {
    WallTime::parse(text).ok_or_else(|| {
        format!(
            "'{text}' no es una fecha y hora local AAAA-MM-DDTHH:MM (p. ej. 2026-08-19T15:30, o 2026-10-25T02:30+01:00 para la segunda vez que el reloj marca esa hora)"
        )
    })
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[arg(
        long,
        value_name = "RUTA",
        help = "Base de datos: archivo SQLite o URL postgres://… (por defecto $FLOTA_DB, $MCP_FLOTA_DB o datos/flota.db)"
    )]
    pub db: Option<PathBuf>,
    #[arg(
        long,
        value_name = "AAAA-MM-DDTHH:MM",
        value_parser = parse_ahora,
        help = "Instante 'ahora' de la flota, hora local (por defecto $FLOTA_AHORA o el fin de los datos)"
    )]
    pub ahora: Option<WallTime>,
    #[arg(
        long = "limite-llamada",
        value_name = "SEGUNDOS",
        value_parser = parse_limit,
        help = "Tiempo máximo por llamada a una herramienta; 0 = sin límite (por defecto $FLOTA_LIMITE_LLAMADA_S o 30)"
    )]
    pub limite_llamada: Option<f64>,
    #[arg(short, long, help = "Registra en stderr cada mensaje que entra y sale")]
    pub verbose: bool,
    #[command(flatten)]
    pub http: HttpArgs,
}

/// `flota servir --http`: the remote endpoint and who may reach it.
#[derive(Debug, Args, Default)]
pub struct HttpArgs {
    #[arg(
        long,
        value_name = "DIRECCIÓN",
        help = "Sirve por HTTP (Streamable HTTP, ruta /mcp) en vez de stdio, p. ej. 127.0.0.1:8765; un puerto solo = local"
    )]
    pub http: Option<String>,
    #[arg(
        long,
        value_name = "TOKEN",
        requires = "http",
        help = "Token Bearer exigido en cada petición (por defecto $FLOTA_TOKEN, o uno generado que se muestra una vez)"
    )]
    pub token: Option<String>,
    #[arg(
        long = "sin-token",
        requires = "http",
        conflicts_with = "token",
        help = "Sin token (solo en una dirección local; p. ej. para el Inspector o la suite de conformidad)"
    )]
    pub sin_token: bool,
    #[arg(
        long = "url-publica",
        value_name = "URL",
        requires = "http",
        help = "URL pública del servicio detrás de un proxy inverso con TLS, p. ej. https://flota.ejemplo.org/mcp"
    )]
    pub url_publica: Option<String>,
    #[arg(
        long = "origen",
        value_name = "URL",
        requires = "http",
        help = "Origen de navegador permitido además de los locales (repetible)"
    )]
    pub origen: Vec<String>,
    #[arg(
        long = "servidor-autorizacion",
        value_name = "URL",
        requires = "http",
        help = "Servidor de autorización OAuth que se anuncia en los metadatos RFC 9728 (repetible)"
    )]
    pub servidor_autorizacion: Vec<String>,
}

/// Seconds: a non-negative number, at most a day.
pub fn parse_limit(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && (0.0..=86_400.0).contains(v))
        .ok_or_else(|| format!("'{text}' no es un número de segundos entre 0 y 86400"))
}

/// The unit of the query form's `speed` (Traccar's `osmand.speed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SpeedChoice {
    Nudos,
    Kmh,
    Mps,
    Mph,
}

#[derive(Debug, Args)]
pub struct ReceiveArgs {
    #[arg(
        long,
        value_name = "RUTA",
        help = "Base de datos (por defecto $FLOTA_DB, $MCP_FLOTA_DB o datos/flota.db); se crea si no existe"
    )]
    pub db: Option<PathBuf>,
    #[arg(
        long,
        value_name = "DIRECCION:PUERTO",
        default_value = "127.0.0.1:5055",
        help = "Dónde escuchar (por defecto solo este equipo)"
    )]
    pub escuchar: std::net::SocketAddr,
    #[arg(
        long = "permitir-red",
        help = "Permite escuchar en una dirección que no es local: el protocolo no tiene autenticación (ver docs/ingesta.md)"
    )]
    pub permitir_red: bool,
    #[arg(
        long = "registrar-desconocidas",
        help = "Da de alta como unidad nueva a un rastreador desconocido en vez de rechazarlo"
    )]
    pub registrar_desconocidas: bool,
    #[arg(
        long = "dispositivo",
        value_name = "ID=PLACA",
        value_parser = parse_device,
        help = "El rastreador ID (p. ej. su IMEI) informa por la unidad PLACA; se guarda en la base (repetible)"
    )]
    pub dispositivos: Vec<(String, String)>,
    #[arg(
        long,
        value_enum,
        value_name = "UNIDAD",
        default_value = "nudos",
        help = "Unidad de 'speed' en la forma de consulta (como osmand.speed de Traccar); el JSON siempre es m/s"
    )]
    pub velocidad: SpeedChoice,
    #[arg(
        long,
        value_name = "ZONA",
        value_parser = parse_zone,
        help = "Zona horaria de una base nueva (p. ej. America/Guatemala; por defecto UTC)"
    )]
    pub zona: Option<chrono_tz::Tz>,
    #[arg(
        long,
        value_name = "N",
        default_value_t = 10_000,
        value_parser = clap::value_parser!(u32).range(1..=1_000_000),
        help = "Posiciones en espera de escritura como máximo; llena, se responde 503"
    )]
    pub cola: u32,
    #[arg(
        long = "tiempo-limite",
        value_name = "SEGUNDOS",
        default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(1..=600),
        help = "Tiempo para enviar los encabezados, y otro tanto para el cuerpo; un cliente más lento se desconecta"
    )]
    pub tiempo_limite: u64,
}

/// Parses `--dispositivo ID=PLACA`.
pub fn parse_device(text: &str) -> Result<(String, String), String> {
    let (id, plate) = text
        .split_once('=')
        .ok_or_else(|| format!("'{text}' no es ID=PLACA (p. ej. 356938035643809=P-123BCD)"))?;
    let (id, plate) = (id.trim(), plate.trim());
    if id.is_empty() || plate.is_empty() {
        return Err(format!("'{text}': falta el id o la placa"));
    }
    Ok((id.to_owned(), plate.to_owned()))
}

/// Parses an IANA time zone name.
pub fn parse_zone(text: &str) -> Result<chrono_tz::Tz, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("'{text}' no es una zona horaria IANA (p. ej. America/Guatemala)"))
}

/// A file format `flota importar` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ImportFormat {
    Gpx,
    Csv,
    Geojson,
    Nmea,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    #[arg(value_name = "ARCHIVO", required = true, help = "Archivos a importar")]
    pub archivos: Vec<PathBuf>,
    #[arg(
        long,
        value_name = "RUTA",
        help = "Base de datos (por defecto $FLOTA_DB, $MCP_FLOTA_DB o datos/flota.db); se crea si no existe"
    )]
    pub db: Option<PathBuf>,
    #[arg(
        long,
        value_name = "PLACA",
        help = "Unidad de las posiciones de archivos sin placa (GPX, NMEA, GeoJSON sin 'placa'); se da de alta si no existe"
    )]
    pub placa: Option<String>,
    #[arg(
        long,
        value_enum,
        value_name = "FORMATO",
        help = "Formato de los archivos (por defecto por la extensión)"
    )]
    pub formato: Option<ImportFormat>,
    #[arg(
        long,
        value_name = "ZONA",
        value_parser = parse_zone,
        help = "Zona de las horas sin zona de un CSV (por defecto la de la base), y de una base nueva"
    )]
    pub zona: Option<chrono_tz::Tz>,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[arg(
        long,
        value_name = "PLACA",
        help = "Placa de la unidad, p. ej. P-456DEF"
    )]
    pub placa: String,
    #[arg(
        long,
        value_name = "FECHA",
        help = "Día: AAAA-MM-DD, DD/MM/AAAA, hoy, ayer, anteayer o un día de la semana"
    )]
    pub fecha: String,
    #[arg(long, value_name = "FORMATO", help = "geojson, gpx o png")]
    pub formato: crate::export::Format,
    #[arg(
        long,
        value_name = "ARCHIVO",
        help = "Archivo de salida (por defecto PLACA_FECHA.ext; '-' = salida estándar)"
    )]
    pub salida: Option<PathBuf>,
    #[arg(
        long,
        value_name = "RUTA",
        help = "Base de datos (por defecto $FLOTA_DB, $MCP_FLOTA_DB o datos/flota.db)"
    )]
    pub db: Option<PathBuf>,
    #[arg(
        long,
        value_name = "AAAA-MM-DDTHH:MM",
        value_parser = parse_ahora,
        help = "Instante 'ahora' de la flota para hoy/ayer (por defecto $FLOTA_AHORA o el fin de los datos)"
    )]
    pub ahora: Option<WallTime>,
}

#[derive(Debug, Args)]
pub struct ClientArgs {
    #[arg(
        long,
        conflicts_with = "replay",
        help = "Recorrido guiado que termina con tres casos de error"
    )]
    pub demo: bool,
    #[arg(
        long,
        value_name = "ARCHIVO.jsonl",
        help = "Envía cada línea del archivo e imprime las respuestas"
    )]
    pub replay: Option<PathBuf>,
    #[arg(
        long,
        value_name = "RUTA",
        help = "Base de datos para el 'flota servir' que se lanza por defecto"
    )]
    pub db: Option<PathBuf>,
    #[arg(
        long,
        help = "Muestra también los mensajes JSON-RPC (→ enviados, ← recibidos)"
    )]
    pub protocolo: bool,
    #[arg(
        short,
        long,
        help = "Muestra también los registros del servidor (su stderr)"
    )]
    pub verbose: bool,
    #[arg(
        long,
        value_name = "CARPETA",
        help = "Carpeta donde se guardan las imágenes (mapas) de las respuestas (por defecto la actual)"
    )]
    pub imagenes: Option<PathBuf>,
    #[arg(long, help = "Abre cada imagen guardada con el visor del sistema")]
    pub abrir: bool,
    #[arg(
        last = true,
        value_name = "COMANDO",
        help = "Servidor a lanzar (por defecto: este mismo binario con 'servir')"
    )]
    pub command: Vec<OsString>,
}

#[derive(Debug, Subcommand)]
pub enum RoutesVerb {
    /// Re-request each route's geometry, keeping its stops.
    #[command(
        about = "Vuelve a pedir la geometría de cada ruta (o de las nombradas) conservando sus paradas"
    )]
    Regenerar(RegenerateArgs),
    /// Create a route file from stops, or from a drawn line.
    #[command(
        about = "Crea un archivo de ruta desde una línea dibujada (--desde ARCHIVO, sin conexión) o desde sus paradas, en orden"
    )]
    Nueva(NewRouteArgs),
    /// Summarise routes, or export them as GeoJSON.
    #[command(
        about = "Resume las rutas (longitud, paradas, caja, fuente) o las exporta como GeoJSON"
    )]
    Ver(ShowRoutesArgs),
}

/// Which directions service the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProviderChoice {
    /// Google's Routes API.
    Google,
    /// Google's legacy Directions API.
    GoogleDirections,
    Osrm,
}

/// How to reach a directions service.
#[derive(Debug, Args)]
pub struct ProviderArgs {
    #[arg(
        long,
        value_enum,
        value_name = "PROVEEDOR",
        help = "google (Routes API; por defecto si GOOGLE_MAPS_API_KEY está definida), google-directions (la Directions API heredada) u osrm"
    )]
    pub proveedor: Option<ProviderChoice>,
    #[arg(
        long,
        value_name = "URL",
        help = "Servidor OSRM (por defecto $FLOTA_OSRM_URL), o el endpoint de Google con google o google-directions"
    )]
    pub url: Option<String>,
    #[arg(
        long,
        value_name = "PERFIL",
        default_value = "driving",
        help = "Perfil de OSRM"
    )]
    pub perfil: String,
    #[arg(
        long = "tiempo-limite",
        value_name = "SEGUNDOS",
        default_value_t = 20,
        value_parser = integer_in(1u64, 600),
        help = "Tiempo máximo por solicitud"
    )]
    pub tiempo_limite: u64,
    #[arg(
        long,
        value_name = "N",
        default_value_t = 3,
        value_parser = integer_in(0u32, 10),
        help = "Reintentos ante 429, 5xx o cuota excedida (con espera creciente)"
    )]
    pub reintentos: u32,
}

#[derive(Debug, Args)]
pub struct RegenerateArgs {
    #[arg(value_name = "NOMBRE", help = "Rutas a regenerar (por defecto todas)")]
    pub nombres: Vec<String>,
    #[arg(
        long,
        value_name = "CARPETA",
        default_value = "rutas",
        help = "Carpeta de las rutas"
    )]
    pub dir: PathBuf,
    #[command(flatten)]
    pub proveedor: ProviderArgs,
}

#[derive(Debug, Args)]
pub struct NewRouteArgs {
    #[arg(
        value_name = "NOMBRE",
        help = "Nombre de la ruta (y del archivo NOMBRE.json)"
    )]
    pub nombre: String,
    #[arg(
        long = "parada",
        value_name = "NOMBRE:LAT,LON",
        required_unless_present = "desde",
        value_parser = parse_stop,
        help = "Parada, en orden; la primera es la salida y la última la llegada (repita la primera para volver al depósito). Con --desde, sustituye a los puntos con nombre del archivo"
    )]
    pub paradas: Vec<StopFile>,
    #[arg(
        long,
        value_name = "ARCHIVO",
        help = "Crea la ruta sin conexión desde una línea dibujada: GPX (trk o rte), GeoJSON (LineString) o KML (LineString); las paradas son sus puntos con nombre, o las de --parada"
    )]
    pub desde: Option<PathBuf>,
    #[arg(
        long,
        value_name = "KM/H",
        default_value_t = 30.0,
        value_parser = parse_speed,
        requires = "desde",
        help = "Con --desde: velocidad media supuesta para la duración de la ruta"
    )]
    pub velocidad: f64,
    #[arg(
        long,
        value_name = "CARPETA",
        default_value = "rutas",
        help = "Carpeta de las rutas"
    )]
    pub dir: PathBuf,
    #[arg(long, help = "Reemplaza el archivo si ya existe")]
    pub sobrescribir: bool,
    #[command(flatten)]
    pub proveedor: ProviderArgs,
}

/// Parses `--velocidad`: an average speed a delivery vehicle can keep, km/h.
pub fn parse_speed(text: &str) -> Result<f64, String> {
    text.trim()
        .replace(',', ".")
        .parse::<f64>()
        .ok()
        .filter(|v| (5.0..=130.0).contains(v))
        .ok_or_else(|| format!("velocidad '{text}' no válida: use km/h entre 5 y 130"))
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

#[derive(Debug, Args)]
pub struct ShowRoutesArgs {
    #[arg(
        value_name = "NOMBRE",
        help = "Una ruta en detalle (por defecto, tabla de todas)"
    )]
    pub nombre: Option<String>,
    #[arg(
        long,
        value_name = "CARPETA",
        default_value = "rutas",
        help = "Carpeta de las rutas"
    )]
    pub dir: PathBuf,
    #[arg(
        long,
        value_name = "ARCHIVO",
        help = "Exporta las rutas y sus paradas como GeoJSON ('-' = salida estándar)"
    )]
    pub geojson: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ConfigVerb {
    /// The `claude_desktop_config.json` entry for this binary.
    #[command(about = "Imprime la entrada de claude_desktop_config.json con rutas absolutas")]
    Claude(ClaudeArgs),
}

#[derive(Debug, Args)]
pub struct ClaudeArgs {
    #[arg(
        long,
        value_name = "RUTA",
        help = "Base de datos que servirá (por defecto datos/flota.db)"
    )]
    pub db: Option<PathBuf>,
}

/// What parsing produced: a command to run, or text to print and an exit code.
pub enum Parsed {
    Run(Cli),
    /// Help or version text for stdout, exit 0.
    Print(String),
    /// A Spanish error for stderr, exit 2.
    Fail(String),
}

pub fn parse(args: impl IntoIterator<Item = OsString>) -> Parsed {
    let command = localise(Cli::command());
    let args = help_verb(&command, args.into_iter().collect());
    let failed_in = command_path(&command, &args);
    let matches = match command.try_get_matches_from(args) {
        Ok(matches) => matches,
        Err(err) => {
            return match err.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    Parsed::Print(err.render().to_string())
                }
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    Parsed::Fail(err.render().to_string())
                }
                _ => Parsed::Fail(spanish_error(&err, &failed_in)),
            };
        }
    };
    match Cli::from_arg_matches(&matches) {
        Ok(cli) => Parsed::Run(cli),
        Err(err) => Parsed::Fail(spanish_error(&err, &failed_in)),
    }
}

/// `flota help [VERBO…]` (and `flota rutas help ver`) as the same words followed by
/// `--help`: clap's own help subcommand would speak English.
fn help_verb(command: &Command, mut args: Vec<OsString>) -> Vec<OsString> {
    let mut here = command;
    for at in 1..args.len() {
        if args[at] == "help" && here.has_subcommands() {
            let mut rest: Vec<OsString> = args
                .split_off(at + 1)
                .into_iter()
                .filter(|a| a != "-h" && a != "--help")
                .collect();
            args.pop();
            args.append(&mut rest);
            args.push("--help".into());
            return args;
        }
        match args[at]
            .to_str()
            .and_then(|name| here.find_subcommand(name))
        {
            Some(sub) => here = sub,
            None => break,
        }
    }
    args
}

/// The verbs named on the command line, as far as they exist (`flota rutas ver`): where a
/// usage error happened, so its message can point at that verb's help.
fn command_path(command: &Command, args: &[OsString]) -> String {
    let mut path = vec![command.get_name().to_owned()];
    let mut here = command;
    for arg in args.iter().skip(1) {
        match arg.to_str().and_then(|name| here.find_subcommand(name)) {
            Some(sub) => {
                path.push(sub.get_name().to_owned());
                here = sub;
            }
            None => break,
        }
    }
    path.join(" ")
}

const TEMPLATE: &str = "\
{before-help}{about-with-newline}
Uso: {usage}

{all-args}{after-help}";

/// Rewrites clap's English scaffolding (headings, help/version flags, usage, defaults and
/// possible values) in Spanish, for the command and every subcommand.
pub fn localise(command: Command) -> Command {
    localise_under(command, "")
}

fn localise_under(command: Command, parent: &str) -> Command {
    let mut command = command
        .help_template(TEMPLATE)
        .disable_help_flag(true)
        .disable_help_subcommand(true)
        .subcommand_help_heading("Comandos")
        .subcommand_value_name("COMANDO")
        .arg(
            Arg::new("ayuda")
                .short('h')
                .long("help")
                .action(ArgAction::Help)
                .help("Muestra esta ayuda"),
        );
    if command.get_version().is_some() {
        command = command.disable_version_flag(true).arg(
            Arg::new("version")
                .short('V')
                .long("version")
                .action(ArgAction::Version)
                .help("Muestra la versión"),
        );
    }
    command = command.mut_args(|arg| {
        let heading = if arg.is_positional() {
            "Argumentos"
        } else {
            "Opciones"
        };
        spanish_values(arg.help_heading(heading))
    });
    let usage = command
        .render_usage()
        .to_string()
        .trim_start_matches("Usage: ")
        .replace("[OPTIONS]", "[OPCIONES]")
        .replace("<COMMAND>", "<COMANDO>");
    // A subcommand renders its usage without its parents' names; put them back.
    let path = if parent.is_empty() {
        String::new()
    } else {
        format!("{parent} ")
    };
    command = command.override_usage(format!("{path}{usage}"));
    let here = format!("{path}{}", command.get_name());
    let names: Vec<String> = command
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    for name in names {
        command = command.mut_subcommand(name, |sub| localise_under(sub, &here));
    }
    if command.has_subcommands() {
        // Listed only: `parse` turns `help X` into `X --help` before clap sees it.
        command = command.subcommand(Command::new("help").about(format!(
            "Muestra la ayuda de un comando ({here} help COMANDO)"
        )));
    }
    command
}

/// clap's `[default: …]` and `[possible values: …]` written into the help text in Spanish.
fn spanish_values(arg: Arg) -> Arg {
    if !arg.get_action().takes_values() {
        return arg;
    }
    let mut notes = Vec::new();
    let values: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_owned())
        .collect();
    let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
    // A help text that already names every value need not list them again.
    if !values.is_empty() && !values.iter().all(|v| help.contains(v.as_str())) {
        notes.push(format!("valores: {}", values.join(", ")));
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    if !defaults.is_empty() && !arg.is_hide_default_value_set() {
        notes.push(format!("por defecto: {}", defaults.join(", ")));
    }
    let arg = arg.hide_possible_values(true).hide_default_value(true);
    if notes.is_empty() {
        return arg;
    }
    let notes = notes.join("; ");
    let long = arg.get_long_help().map(|h| format!("{h} ({notes})"));
    let arg = arg.help(format!("{help} ({notes})").trim_start().to_owned());
    match long {
        Some(long) => arg.long_help(long),
        None => arg,
    }
}

/// A Spanish rendering of a clap error, naming the culprit and the help of the verb where it
/// happened (`command`, as [`command_path`] found it).
pub fn spanish_error(err: &clap::Error, command: &str) -> String {
    let get = |kind: ContextKind| match err.get(kind) {
        Some(ContextValue::String(s)) => s.clone(),
        Some(ContextValue::Strings(list)) => list.join(", "),
        Some(ContextValue::StyledStr(s)) => s.to_string(),
        Some(ContextValue::StyledStrs(list)) => list
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        Some(ContextValue::Number(n)) => n.to_string(),
        Some(ContextValue::Bool(b)) => b.to_string(),
        _ => String::new(),
    };
    let arg = get(ContextKind::InvalidArg);
    let message = match err.kind() {
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
            // Every value parser here explains itself in Spanish, naming the value.
            if let Some(source) = std::error::Error::source(err) {
                format!("valor inválido para {arg}: {source}")
            } else {
                let mut text = format!(
                    "valor inválido '{}' para {arg}",
                    get(ContextKind::InvalidValue)
                );
                let valid = get(ContextKind::ValidValue);
                if !valid.is_empty() {
                    text.push_str(&format!(" (valores posibles: {valid})"));
                }
                text
            }
        }
        ErrorKind::UnknownArgument => format!("argumento inesperado '{arg}'"),
        ErrorKind::InvalidSubcommand => {
            let mut text = format!(
                "comando desconocido '{}'",
                get(ContextKind::InvalidSubcommand)
            );
            let suggested = get(ContextKind::SuggestedSubcommand);
            if !suggested.is_empty() {
                text.push_str(&format!("; ¿quiso decir '{suggested}'?"));
            }
            text
        }
        ErrorKind::MissingRequiredArgument if arg.contains(", ") => {
            format!("faltan los argumentos obligatorios {arg}")
        }
        ErrorKind::MissingRequiredArgument => format!("falta el argumento obligatorio {arg}"),
        ErrorKind::MissingSubcommand => "falta el comando".to_owned(),
        ErrorKind::ArgumentConflict => format!(
            "{arg} no se puede usar junto con {}",
            get(ContextKind::PriorArg)
        ),
        ErrorKind::TooManyValues | ErrorKind::WrongNumberOfValues | ErrorKind::TooFewValues => {
            format!("número de valores incorrecto para {arg}")
        }
        ErrorKind::NoEquals => format!("{arg} requiere un valor con '='"),
        ErrorKind::InvalidUtf8 => "un argumento no es texto UTF-8 válido".to_owned(),
        _ => "argumentos inválidos".to_owned(),
    };
    format!("error: {message}\nConsulte '{command} --help'.\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_strs(args: &[&str]) -> Parsed {
        parse(args.iter().map(OsString::from))
    }

    #[test]
    fn help_is_spanish() {
        let Parsed::Print(help) = parse_strs(&["flota", "--help"]) else {
            panic!("help was not printed");
        };
        for word in ["Uso:", "Comandos", "servir", "Muestra esta ayuda"] {
            assert!(help.contains(word), "missing {word:?} in:\n{help}");
        }
        for english in ["Usage:", "Options:", "Commands:", "Print help"] {
            assert!(!help.contains(english), "English {english:?} in:\n{help}");
        }
        let Parsed::Print(help) = parse_strs(&["flota", "servir", "--help"]) else {
            panic!("help was not printed");
        };
        assert!(help.contains("Opciones") && help.contains("--db"), "{help}");
        assert!(!help.contains("Options:"), "{help}");
    }

    #[test]
    fn errors_are_spanish_and_name_the_culprit() {
        let Parsed::Fail(text) = parse_strs(&["flota", "servir", "--nada"]) else {
            panic!("expected an error");
        };
        assert!(text.contains("argumento inesperado '--nada'"), "{text}");
        let Parsed::Fail(text) = parse_strs(&["flota", "servri"]) else {
            panic!("expected an error");
        };
        assert!(text.contains("comando desconocido 'servri'"), "{text}");
        assert!(text.contains("servir"), "{text}");
    }

    #[test]
    fn help_verb_shows_a_verbs_help() {
        let help = |args: &[&str]| match parse_strs(args) {
            Parsed::Print(text) => text,
            _ => panic!("{args:?}: help was not printed"),
        };
        assert_eq!(help(&["flota", "help"]), help(&["flota", "--help"]));
        assert_eq!(
            help(&["flota", "help", "simular"]),
            help(&["flota", "simular", "--help"])
        );
        assert_eq!(
            help(&["flota", "rutas", "help", "ver"]),
            help(&["flota", "rutas", "ver", "--help"])
        );
        assert_eq!(
            help(&["flota", "help", "rutas", "ver"]),
            help(&["flota", "rutas", "ver", "--help"])
        );
        assert!(help(&["flota", "--help"]).contains("flota help COMANDO"));
    }

    #[test]
    fn usage_errors_point_at_the_verbs_help() {
        let check = |args: &[&str], pointer: &str| {
            let Parsed::Fail(text) = parse_strs(args) else {
                panic!("{args:?}: expected an error");
            };
            assert!(
                text.contains(&format!("Consulte '{pointer} --help'")),
                "{text}"
            );
        };
        check(&["flota", "simular", "--xyz"], "flota simular");
        check(&["flota", "rutas", "ver", "--xyz"], "flota rutas ver");
        check(&["flota", "rutas", "nueva"], "flota rutas nueva");
        check(&["flota", "nada"], "flota");
    }

    #[test]
    fn defaults_and_values_are_written_in_spanish() {
        let Parsed::Print(help) = parse_strs(&["flota", "rutas", "regenerar", "--help"]) else {
            panic!("help was not printed");
        };
        assert!(help.contains("(por defecto: 20)"), "{help}");
        assert!(
            !help.contains("[default:") && !help.contains("ossible values"),
            "{help}"
        );
        let Parsed::Fail(text) = parse_strs(&["flota", "evaluar", "--tolerancia", "99999"]) else {
            panic!("expected an error");
        };
        assert!(
            text.contains("'99999' está fuera de rango: use de 0 a 86400"),
            "{text}"
        );
    }

    #[test]
    fn client_takes_a_command_after_double_dash() {
        let Parsed::Run(cli) = parse_strs(&["flota", "cliente", "--", "python3", "-u", "x.py"])
        else {
            panic!("did not parse");
        };
        let Verb::Cliente(args) = cli.command else {
            panic!("wrong verb");
        };
        assert_eq!(args.command, vec!["python3", "-u", "x.py"]);
    }

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

    #[test]
    fn grid_lists_parse_and_bad_ones_name_the_culprit() {
        let check =
            |parser: fn(&str) -> Result<Levels, String>, text: &str, want: Result<&[f64], &str>| {
                match (parser(text), want) {
                    (Ok(got), Ok(want)) => assert_eq!(got.0, want, "{text}"),
                    (Err(e), Err(needle)) => assert!(e.contains(needle), "{text}: {e}"),
                    (got, want) => panic!("{text}: {got:?} vs {want:?}"),
                }
            };
        check(parse_metres_list, "5,15,25", Ok(&[5.0, 15.0, 25.0]));
        check(parse_metres_list, " 0 , 10,20 ", Ok(&[0.0, 10.0, 20.0]));
        check(parse_metres_list, "7.5", Ok(&[7.5]));
        check(
            parse_metres_list,
            "5,,25",
            Err("'5,,25' tiene un elemento vacío"),
        );
        check(
            parse_metres_list,
            "5,quince",
            Err("'quince' no es un número"),
        );
        check(parse_metres_list, "-5", Err("'-5' está fuera de rango"));
        check(parse_metres_list, "5,NaN", Err("'NaN' está fuera de rango"));
        check(
            parse_metres_list,
            "5,15,5",
            Err("'5' está repetido en '5,15,5'"),
        );
        check(
            parse_probability_list,
            "0,0.005,0.01",
            Ok(&[0.0, 0.005, 0.01]),
        );
        check(
            parse_probability_list,
            "0,0.5%,1 %",
            Ok(&[0.0, 0.005, 0.01]),
        );
        check(parse_probability_list, "3%", Ok(&[0.03]));
        check(
            parse_probability_list,
            "1.5",
            Err("'1.5' está fuera de rango: use una probabilidad"),
        );
        check(
            parse_probability_list,
            "150%",
            Err("'150' está fuera de rango: use un porcentaje"),
        );
        check(parse_probability_list, "x%", Err("'x' no es un número"));
        check(parse_seconds_list, "60,120", Ok(&[60.0, 120.0]));
        check(
            parse_seconds_list,
            "0",
            Err("'0' está fuera de rango: use segundos de 1"),
        );
        let many: String = (0..51).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
        check(
            parse_metres_list,
            &many,
            Err("tiene 51 valores: como mucho 50"),
        );
    }

    #[test]
    fn grid_seeds_and_delays_parse_and_bad_ones_name_the_culprit() {
        let check = |text: &str, want: Result<&[u64], &str>| match (parse_seeds(text), want) {
            (Ok(got), Ok(want)) => assert_eq!(got.0, want, "{text}"),
            (Err(e), Err(needle)) => assert!(e.contains(needle), "{text}: {e}"),
            (got, want) => panic!("{text}: {got:?} vs {want:?}"),
        };
        check("1-5", Ok(&[1, 2, 3, 4, 5]));
        check("3", Ok(&[3]));
        check("1,4,10", Ok(&[1, 4, 10]));
        check("1-3, 9", Ok(&[1, 2, 3, 9]));
        check("7-7", Ok(&[7]));
        check("20-1", Err("el rango '20-1' va al revés: escriba 1-20"));
        check("1-x", Err("'x' no es una semilla"));
        check("-3", Err("'' no es una semilla"));
        check("1,,2", Err("'1,,2' tiene un elemento vacío"));
        check("1-5,3", Err("la semilla 3 está repetida en '1-5,3'"));
        check("1-2000000", Err("demasiadas semillas"));
        check("0-18446744073709551615", Err("demasiadas semillas"));
        assert_eq!(parse_delay("30-600"), Ok([30.0, 600.0]));
        assert_eq!(parse_delay(" 0 - 0 "), Ok([0.0, 0.0]));
        for (text, needle) in [
            ("600-30", "'600-30' va al revés"),
            ("30", "'30' no es un rango de segundos"),
            ("30-mucho", "'mucho' no es un número"),
        ] {
            let e = parse_delay(text).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}
