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
        about = "Simula un escenario y escribe las posiciones (SQLite) y el registro de verdad"
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
    /// Export one unit's day as GeoJSON, GPX or PNG.
    #[command(
        about = "Exporta el día de una unidad: GeoJSON (QGIS, geojson.io), GPX 1.1 o el mapa PNG"
    )]
    Exportar(ExportArgs),
    /// Regenerate, create and summarise route files.
    #[command(
        subcommand,
        about = "Rutas (rutas/*.json): regenerarlas o crearlas con Google Directions u OSRM, y resumirlas"
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
    pub ahora: Option<chrono::NaiveDateTime>,
    #[arg(long, value_name = "RUTA", default_value = DEFAULT_DB, help = "Base de datos de salida")]
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
        help = "Semilla aleatoria (reemplaza la del escenario)"
    )]
    pub semilla: Option<u64>,
}

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    #[arg(value_name = "BASE", default_value = DEFAULT_DB, help = "Base de datos a analizar")]
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
    #[arg(long, help = "Imprime el resultado como JSON")]
    pub json: bool,
    #[arg(
        long,
        value_name = "SEGUNDOS",
        default_value_t = crate::evaluation::DEFAULT_TOLERANCE_S,
        value_parser = clap::value_parser!(u32).range(0..=86_400),
        help = "Error máximo, al inicio y al final, de una detección que acierta"
    )]
    pub tolerancia: u32,
    #[arg(
        long = "f1-minimo",
        value_name = "X",
        value_parser = parse_fraction,
        help = "Termina con código 1 si el F1 de algún tipo queda por debajo de X (0 a 1): una barrera para CI"
    )]
    pub f1_minimo: Option<f64>,
}

/// A number between 0 and 1.
pub fn parse_fraction(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| (0.0..=1.0).contains(v))
        .ok_or_else(|| format!("'{text}' no es un número entre 0 y 1"))
}

/// Parses `--ahora` (local time): `AAAA-MM-DDTHH:MM[:SS]` or with a space.
pub fn parse_ahora(text: &str) -> Result<chrono::NaiveDateTime, String> {
    for format in [
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%d %H:%M:%S",
    ] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(text.trim(), format) {
            return Ok(t);
        }
    }
    Err(format!(
        "'{text}' no es una fecha y hora local AAAA-MM-DDTHH:MM (p. ej. 2026-08-19T15:30)"
    ))
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[arg(
        long,
        value_name = "RUTA",
        help = "Base de datos SQLite (por defecto $FLOTA_DB, $MCP_FLOTA_DB o datos/flota.db)"
    )]
    pub db: Option<PathBuf>,
    #[arg(
        long,
        value_name = "AAAA-MM-DDTHH:MM",
        value_parser = parse_ahora,
        help = "Instante 'ahora' de la flota, hora local (por defecto $FLOTA_AHORA o el fin de los datos)"
    )]
    pub ahora: Option<chrono::NaiveDateTime>,
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
    pub ahora: Option<chrono::NaiveDateTime>,
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
    /// Create a route file from stops.
    #[command(about = "Crea un archivo de ruta a partir de sus paradas, en orden")]
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
    Google,
    Osrm,
}

/// How to reach a directions service.
#[derive(Debug, Args)]
pub struct ProviderArgs {
    #[arg(
        long,
        value_enum,
        value_name = "PROVEEDOR",
        help = "google (por defecto si GOOGLE_MAPS_API_KEY está definida) u osrm"
    )]
    pub proveedor: Option<ProviderChoice>,
    #[arg(
        long,
        value_name = "URL",
        help = "Servidor OSRM (por defecto $FLOTA_OSRM_URL), o el endpoint de Directions con google"
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
        value_parser = clap::value_parser!(u64).range(1..=600),
        help = "Tiempo máximo por solicitud"
    )]
    pub tiempo_limite: u64,
    #[arg(
        long,
        value_name = "N",
        default_value_t = 3,
        value_parser = clap::value_parser!(u32).range(0..=10),
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
        required = true,
        value_parser = parse_stop,
        help = "Parada, en orden; la primera es la salida y la última la llegada (repita la primera para volver al depósito)"
    )]
    pub paradas: Vec<StopFile>,
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
                _ => Parsed::Fail(spanish_error(&err)),
            };
        }
    };
    match Cli::from_arg_matches(&matches) {
        Ok(cli) => Parsed::Run(cli),
        Err(err) => Parsed::Fail(spanish_error(&err)),
    }
}

const TEMPLATE: &str = "\
{before-help}{about-with-newline}
Uso: {usage}

{all-args}{after-help}";

/// Rewrites clap's English scaffolding (headings, help/version flags, usage) in Spanish, for
/// the command and every subcommand.
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
        arg.help_heading(heading)
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
    command
}

/// A Spanish rendering of a clap error, naming the culprit.
pub fn spanish_error(err: &clap::Error) -> String {
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
            let valid = get(ContextKind::ValidValue);
            let mut text = format!(
                "valor inválido '{}' para {arg}",
                get(ContextKind::InvalidValue)
            );
            if !valid.is_empty() {
                text.push_str(&format!(" (valores posibles: {valid})"));
            }
            if let Some(source) = std::error::Error::source(err) {
                text.push_str(&format!(": {source}"));
            }
            text
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
        _ => format!("argumentos inválidos: {}", err.kind()),
    };
    format!("error: {message}\nUse 'flota --help' para ver la ayuda.\n")
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
}
