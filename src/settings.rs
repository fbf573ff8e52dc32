//! Every environment variable flota reads, read once, into a typed [`Settings`].
//!
//! Owns the variables' names, what their values mean (blank, `no`, a default) and the Spanish
//! error when a value is wrong. `main` builds one `Settings` before anything runs and the verbs
//! in `src/commands/` hand its parts down: the log level, the User-Agent contact, the tile
//! source, the geocoder, the directions services, the database, "now", the call limit, the
//! deadlines of the two online services a tool call waits on (tiles, addresses). Nothing
//! below the command line looks at the environment (a tidy test); a variable is added here, to
//! the table in README.md and to the one in ARCHITECTURE.md. A value that cannot be used is
//! kept as an [`Invalid`] and reported only by the verbs that need it, so a bad
//! `FLOTA_AHORA` never stops `flota simular`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::calendar::WallTime;

use crate::cli::{DEFAULT_DB, parse_ahora, parse_limit};
use crate::fleet::places::{self, Service};
use crate::map::TileConfig;
use crate::map::tiles::{OSM_ATTRIBUTION, OSM_TEMPLATE};
use crate::plumbing::log::Level;
use crate::plumbing::net::public_url;

/// A variable whose value cannot be used: `FLOTA_AHORA: '…' no es una fecha…`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}: {reason}")]
pub struct Invalid {
    pub variable: &'static str,
    pub reason: String,
}

/// What the environment says, typed. Not `Debug`: it holds keys and URLs with tokens.
#[derive(Clone)]
pub struct Settings {
    /// `FLOTA_DB`, else `MCP_FLOTA_DB`: the database of a verb not given `--db`, as written.
    /// A path today; kept as text so that another kind of location (a URL) can be told apart
    /// where it is used.
    pub db: Option<OsString>,
    /// `FLOTA_AHORA`: the fleet's "now", local time.
    ahora: Result<Option<WallTime>, Invalid>,
    /// `FLOTA_LIMITE_LLAMADA_S`: seconds per tool call, 0 = none.
    call_limit_s: Result<Option<f64>, Invalid>,
    /// `FLOTA_LOG`: `error`, `warn`, `info` or `debug`; anything else leaves the default.
    pub log_level: Option<Level>,
    /// `FLOTA_CONTACTO`: appended to the User-Agent of every outbound request.
    pub contact: Option<String>,
    /// `FLOTA_TILES_URL`, `FLOTA_TILES_ATRIBUCION`, `FLOTA_TILES_DIR` (and the per-user cache
    /// folder from `XDG_CACHE_HOME`, `HOME` or `LOCALAPPDATA`), with the default deadline:
    /// [`Self::tiles`] applies `FLOTA_TILES_LIMITE_S`.
    tiles: TileConfig,
    /// `FLOTA_TILES_LIMITE_S`: seconds a map waits for its tiles.
    tiles_deadline_s: Result<Option<f64>, Invalid>,
    /// `FLOTA_TILES_URL` names a tile server (not left unset, not switched off): only then do
    /// the interactive map views load online tiles (and declare their origin in the CSP).
    pub tiles_chosen: bool,
    /// `GOOGLE_MAPS_API_KEY` (with `FLOTA_GOOGLE_GEOCODE_URL`), else `FLOTA_GEOCODER_URL`:
    /// the online address service, if any.
    pub geocoding: Option<Service>,
    /// `FLOTA_GEOCODER_LIMITE_S`: seconds an address lookup waits for the service.
    geocoding_deadline_s: Result<Option<f64>, Invalid>,
    /// What `flota rutas` may use to reach a directions service.
    pub directions: Directions,
    /// `NO_COLOR` (<https://no-color.org>) set to anything but empty: no colour.
    pub no_color: bool,
    /// The history file of `flota cliente`'s line editor, from `XDG_STATE_HOME` or `HOME`.
    pub client_history: Option<PathBuf>,
    /// `FLOTA_TOKEN`: the bearer token of `flota servir --http` when `--token` is not given.
    pub token: Option<String>,
}

/// The directions services the environment names; each value trimmed, blank = unset.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Directions {
    /// `GOOGLE_MAPS_API_KEY`.
    pub google_key: Option<String>,
    /// `FLOTA_GOOGLE_ROUTES_URL`: another Routes API endpoint (a proxy, a test server).
    pub google_routes_url: Option<String>,
    /// `FLOTA_GOOGLE_DIRECTIONS_URL`: another legacy Directions endpoint.
    pub google_url: Option<String>,
    /// `FLOTA_OSRM_URL`.
    pub osrm_url: Option<String>,
}

impl std::fmt::Debug for Directions {
    // Never print the key, not even in a debug dump.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Directions")
            .field("google_key", &self.google_key.as_ref().map(|_| "***"))
            .field(
                "google_routes_url",
                &self.google_routes_url.as_deref().map(public_url),
            )
            .field("google_url", &self.google_url.as_deref().map(public_url))
            .field("osrm_url", &self.osrm_url.as_deref().map(public_url))
            .finish()
    }
}

impl Settings {
    /// From this process's environment.
    pub fn from_env() -> Settings {
        Settings::from_lookup(&|name| std::env::var_os(name))
    }

    /// From any source of variables (a test's map).
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<OsString>) -> Settings {
        let vars = Vars(lookup);
        Settings {
            db: vars.raw("FLOTA_DB").or_else(|| vars.raw("MCP_FLOTA_DB")),
            ahora: ahora(&vars),
            call_limit_s: call_limit_s(&vars),
            log_level: log_level(&vars),
            contact: vars.trimmed("FLOTA_CONTACTO"),
            tiles: tiles(&vars),
            tiles_deadline_s: deadline_s(&vars, "FLOTA_TILES_LIMITE_S"),
            tiles_chosen: vars.text("FLOTA_TILES_URL").is_some_and(|v| !disabled(&v)),
            geocoding: geocoding(&vars),
            geocoding_deadline_s: deadline_s(&vars, "FLOTA_GEOCODER_LIMITE_S"),
            directions: Directions {
                google_key: vars.trimmed("GOOGLE_MAPS_API_KEY"),
                google_routes_url: vars.trimmed("FLOTA_GOOGLE_ROUTES_URL"),
                google_url: vars.trimmed("FLOTA_GOOGLE_DIRECTIONS_URL"),
                osrm_url: vars.trimmed("FLOTA_OSRM_URL"),
            },
            no_color: !crate::client::colour_allowed(vars.raw("NO_COLOR")),
            client_history: crate::client::history_file(
                vars.raw("XDG_STATE_HOME"),
                vars.raw("HOME"),
            ),
            token: vars.trimmed("FLOTA_TOKEN"),
        }
    }

    /// The database a verb uses: its `--db` if given, else the environment's, else
    /// `datos/flota.db`.
    pub fn db_path(&self, flag: Option<&Path>) -> PathBuf {
        flag.map(Path::to_path_buf)
            .or_else(|| self.db.clone().map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DB))
    }

    /// The database a verb uses, as [`Self::db_path`], told apart: a `postgres://` URL is
    /// PostgreSQL, anything else a SQLite file. A malformed URL is refused here, in Spanish.
    pub fn db_location(
        &self,
        flag: Option<&Path>,
    ) -> Result<crate::store::Location, crate::store::LocationError> {
        crate::store::Location::parse(&self.db_path(flag))
    }

    /// "Now" for the fleet: `--ahora` if given, else `FLOTA_AHORA`, else `None` (the data
    /// set's own).
    pub fn ahora(&self, flag: Option<WallTime>) -> Result<Option<WallTime>, Invalid> {
        match flag {
            Some(_) => Ok(flag),
            None => self.ahora.clone(),
        }
    }

    /// Seconds per tool call: `--limite-llamada` if given, else `FLOTA_LIMITE_LLAMADA_S`,
    /// else 30.
    pub fn call_limit_s(&self, flag: Option<f64>) -> Result<f64, Invalid> {
        match flag {
            Some(seconds) => Ok(seconds),
            None => Ok(self.call_limit_s.clone()?.unwrap_or(DEFAULT_CALL_LIMIT_S)),
        }
    }

    /// Where map tiles come from and how long a map waits for them: `FLOTA_TILES_LIMITE_S`,
    /// else [`TileConfig::new`]'s deadline.
    pub fn tiles(&self) -> Result<TileConfig, Invalid> {
        let mut tiles = self.tiles.clone();
        if let Some(seconds) = self.tiles_deadline_s.clone()? {
            tiles.deadline = Duration::from_secs_f64(seconds);
        }
        Ok(tiles)
    }

    /// How long an online address lookup may take: `FLOTA_GEOCODER_LIMITE_S`, else `None`
    /// (the geocoder's own default).
    pub fn geocoding_deadline(&self) -> Result<Option<Duration>, Invalid> {
        Ok(self
            .geocoding_deadline_s
            .clone()?
            .map(Duration::from_secs_f64))
    }
}

/// A tool call's time limit when neither the flag nor the variable sets one.
const DEFAULT_CALL_LIMIT_S: f64 = 30.0;

/// The longest deadline `FLOTA_TILES_LIMITE_S` and `FLOTA_GEOCODER_LIMITE_S` accept: an hour
/// is already far beyond any answer worth waiting for inside a tool call.
const MAX_DEADLINE_S: f64 = 3600.0;

/// The variables, looked up by name.
struct Vars<'a>(&'a dyn Fn(&str) -> Option<OsString>);

impl Vars<'_> {
    fn raw(&self, name: &str) -> Option<OsString> {
        (self.0)(name)
    }

    /// The value as text; one that is not Unicode counts as unset.
    fn text(&self, name: &str) -> Option<String> {
        self.raw(name).and_then(|v| v.into_string().ok())
    }

    /// The value unless it is blank, as written.
    fn nonblank(&self, name: &str) -> Option<String> {
        self.text(name).filter(|v| !v.trim().is_empty())
    }

    /// The value trimmed, unless it is blank.
    fn trimmed(&self, name: &str) -> Option<String> {
        self.nonblank(name).map(|v| v.trim().to_owned())
    }

    /// A path-like value unless it is empty (a folder such as `HOME`).
    fn folder(&self, name: &str) -> Option<PathBuf> {
        self.raw(name).filter(|v| !v.is_empty()).map(PathBuf::from)
    }
}

fn ahora(vars: &Vars) -> Result<Option<WallTime>, Invalid> {
    let Some(text) = vars.nonblank("FLOTA_AHORA") else {
        return Ok(None);
    };
    parse_ahora(&text).map(Some).map_err(|reason| Invalid {
        variable: "FLOTA_AHORA",
        reason,
    })
}

/// Set but blank is an error here, unlike elsewhere: the value is checked as the flag's is.
fn call_limit_s(vars: &Vars) -> Result<Option<f64>, Invalid> {
    let Some(text) = vars.text("FLOTA_LIMITE_LLAMADA_S") else {
        return Ok(None);
    };
    parse_limit(&text).map(Some).map_err(|reason| Invalid {
        variable: "FLOTA_LIMITE_LLAMADA_S",
        reason,
    })
}

/// A service's deadline in seconds: more than 0 (a deadline of none would let one silent
/// server hold a tool call forever), at most [`MAX_DEADLINE_S`]. Blank is unset, as for the
/// services' URLs beside it.
fn deadline_s(vars: &Vars, variable: &'static str) -> Result<Option<f64>, Invalid> {
    let Some(text) = vars.nonblank(variable) else {
        return Ok(None);
    };
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0 && *v <= MAX_DEADLINE_S)
        .map(Some)
        .ok_or_else(|| Invalid {
            variable,
            reason: format!(
                "'{text}' no es un número de segundos mayor que 0 y de {MAX_DEADLINE_S} como mucho"
            ),
        })
}

fn log_level(vars: &Vars) -> Option<Level> {
    match vars.text("FLOTA_LOG").as_deref() {
        Some("error") => Some(Level::Error),
        Some("warn") => Some(Level::Warn),
        Some("info") => Some(Level::Info),
        Some("debug") => Some(Level::Debug),
        _ => None,
    }
}

/// Tiles from OpenStreetMap unless `FLOTA_TILES_URL` names another template or switches them
/// off; cached in the per-user cache folder unless `FLOTA_TILES_DIR` says otherwise.
fn tiles(vars: &Vars) -> TileConfig {
    let template = match vars.text("FLOTA_TILES_URL") {
        None => Some(OSM_TEMPLATE.to_owned()),
        Some(v) if disabled(&v) => None,
        Some(v) => Some(v.trim().to_owned()),
    };
    let attribution = vars
        .nonblank("FLOTA_TILES_ATRIBUCION")
        .unwrap_or_else(|| OSM_ATTRIBUTION.to_owned());
    let cache_dir = match vars.text("FLOTA_TILES_DIR") {
        Some(v) if disabled(&v) => None,
        Some(v) => Some(PathBuf::from(v.trim())),
        None => user_cache_dir(vars),
    };
    TileConfig::new(template, attribution, cache_dir)
}

/// A value that switches a feature off.
fn disabled(value: &str) -> bool {
    matches!(
        value.trim().to_lowercase().as_str(),
        "" | "no" | "sin" | "off" | "ninguno" | "0"
    )
}

/// The per-user cache folder: `$XDG_CACHE_HOME` or `~/.cache` on Linux, `~/Library/Caches`
/// on macOS, `%LOCALAPPDATA%` on Windows; `flota/teselas` inside.
fn user_cache_dir(vars: &Vars) -> Option<PathBuf> {
    let base = if cfg!(target_os = "windows") {
        vars.folder("LOCALAPPDATA")
    } else if cfg!(target_os = "macos") {
        vars.folder("HOME")
            .map(|h| h.join("Library").join("Caches"))
    } else {
        vars.folder("XDG_CACHE_HOME")
            .or_else(|| vars.folder("HOME").map(|h| h.join(".cache")))
    };
    base.map(|b| b.join("flota").join("teselas"))
}

/// Google's Geocoding API when there is a key, else a Nominatim-compatible service if one is
/// named. The key is sent as written.
fn geocoding(vars: &Vars) -> Option<Service> {
    if let Some(key) = vars.nonblank("GOOGLE_MAPS_API_KEY") {
        let url = vars
            .nonblank("FLOTA_GOOGLE_GEOCODE_URL")
            .unwrap_or_else(|| places::GOOGLE_GEOCODE_URL.to_owned());
        return Some(Service::Google { key, url });
    }
    vars.nonblank("FLOTA_GEOCODER_URL")
        .map(|url| Service::Nominatim { url })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Settings {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Settings::from_lookup(&move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| OsString::from(v))
        })
    }

    #[test]
    fn nothing_set_gives_the_defaults() {
        let s = settings(&[("HOME", "/home/ana")]);
        assert_eq!(s.db_path(None), PathBuf::from("datos/flota.db"));
        assert_eq!(s.ahora(None), Ok(None));
        assert_eq!(s.call_limit_s(None), Ok(30.0));
        assert_eq!(s.log_level, None);
        assert_eq!(s.contact, None);
        assert_eq!(s.geocoding, None);
        assert_eq!(s.directions, Directions::default());
        assert_eq!(s.tiles.template.as_deref(), Some(OSM_TEMPLATE));
        assert_eq!(s.tiles.attribution, OSM_ATTRIBUTION);
        assert_eq!(s.tiles().map(|t| t.deadline), Ok(Duration::from_secs(4)));
        assert_eq!(s.geocoding_deadline(), Ok(None));
        if cfg!(target_os = "linux") {
            let cache = PathBuf::from("/home/ana/.cache/flota/teselas");
            assert_eq!(s.tiles.cache_dir, Some(cache));
        }
    }

    #[test]
    fn flags_win_over_variables_and_variables_over_defaults() {
        let s = settings(&[
            ("FLOTA_DB", "/a.db"),
            ("MCP_FLOTA_DB", "/b.db"),
            ("FLOTA_AHORA", "2026-08-19T15:30"),
            ("FLOTA_LIMITE_LLAMADA_S", "5"),
        ]);
        assert_eq!(s.db_path(None), PathBuf::from("/a.db"));
        assert_eq!(s.db_path(Some(Path::new("c.db"))), PathBuf::from("c.db"));
        assert_eq!(
            settings(&[("MCP_FLOTA_DB", "/b.db")]).db_path(None),
            PathBuf::from("/b.db")
        );
        let at = |text| parse_ahora(text).ok();
        assert_eq!(s.ahora(None), Ok(at("2026-08-19T15:30")));
        assert_eq!(s.ahora(at("2026-01-01T00:00")), Ok(at("2026-01-01T00:00")));
        assert_eq!(s.call_limit_s(None), Ok(5.0));
        assert_eq!(s.call_limit_s(Some(0.0)), Ok(0.0));
    }

    #[test]
    fn the_services_deadlines_can_be_set() {
        let s = settings(&[
            ("FLOTA_TILES_LIMITE_S", " 0.25 "),
            ("FLOTA_GEOCODER_LIMITE_S", "90"),
            ("FLOTA_TILES_URL", "https://t.example/{z}/{x}/{y}.png"),
        ]);
        let tiles = s.tiles().unwrap();
        assert_eq!(tiles.deadline, Duration::from_millis(250));
        // The deadline changes nothing else about the tiles.
        assert_eq!(
            tiles.template.as_deref(),
            Some("https://t.example/{z}/{x}/{y}.png")
        );
        assert_eq!(s.geocoding_deadline(), Ok(Some(Duration::from_secs(90))));
        // Blank is unset, as for the URLs beside them.
        let s = settings(&[
            ("FLOTA_TILES_LIMITE_S", " "),
            ("FLOTA_GEOCODER_LIMITE_S", ""),
        ]);
        assert_eq!(s.tiles().map(|t| t.deadline), Ok(Duration::from_secs(4)));
        assert_eq!(s.geocoding_deadline(), Ok(None));
    }

    #[test]
    fn a_bad_deadline_names_its_variable() {
        for value in ["0", "-1", "abc", "3601", "inf", "NaN"] {
            let s = settings(&[
                ("FLOTA_TILES_LIMITE_S", value),
                ("FLOTA_GEOCODER_LIMITE_S", value),
            ]);
            let err = s.tiles().unwrap_err().to_string();
            assert_eq!(
                err,
                format!(
                    "FLOTA_TILES_LIMITE_S: '{value}' no es un número de segundos mayor que 0 y de 3600 como mucho"
                )
            );
            let err = s.geocoding_deadline().unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("FLOTA_GEOCODER_LIMITE_S: '{value}' no es")),
                "{err}"
            );
        }
    }

    #[test]
    fn bad_values_are_errors_naming_the_variable_only_where_used() {
        let s = settings(&[("FLOTA_AHORA", "mañana"), ("FLOTA_LIMITE_LLAMADA_S", "")]);
        let err = s.ahora(None).unwrap_err().to_string();
        assert!(
            err.starts_with("FLOTA_AHORA: 'mañana' no es una fecha"),
            "{err}"
        );
        let err = s.call_limit_s(None).unwrap_err().to_string();
        assert!(err.starts_with("FLOTA_LIMITE_LLAMADA_S: '' no es"), "{err}");
        // The flag makes the variable irrelevant.
        assert!(s.ahora(parse_ahora("2026-01-01T00:00").ok()).is_ok());
        assert_eq!(s.call_limit_s(Some(1.0)), Ok(1.0));
        // A blank FLOTA_AHORA is unset, not wrong.
        assert_eq!(settings(&[("FLOTA_AHORA", "  ")]).ahora(None), Ok(None));
    }

    #[test]
    fn only_a_named_tile_server_reaches_the_views() {
        let check = |value: Option<&str>, expected: bool| {
            let s = Settings::from_lookup(&|name| {
                (name == "FLOTA_TILES_URL")
                    .then(|| value.map(OsString::from))
                    .flatten()
            });
            assert_eq!(s.tiles_chosen, expected, "{value:?}");
        };
        check(None, false);
        check(Some("no"), false);
        check(Some(""), false);
        check(Some("https://teselas.example/{z}/{x}/{y}.png"), true);
    }

    #[test]
    fn tiles_can_be_switched_off_or_pointed_elsewhere() {
        for value in ["", "no", "SIN", " off ", "ninguno", "0"] {
            let s = settings(&[("FLOTA_TILES_URL", value), ("FLOTA_TILES_DIR", value)]);
            assert_eq!(s.tiles.template, None, "{value:?}");
            assert_eq!(s.tiles.cache_dir, None, "{value:?}");
        }
        let s = settings(&[
            ("FLOTA_TILES_URL", " https://t.example/{z}/{x}/{y}.png "),
            ("FLOTA_TILES_DIR", " /var/teselas "),
            ("FLOTA_TILES_ATRIBUCION", "© Ejemplo"),
        ]);
        assert_eq!(
            s.tiles.template.as_deref(),
            Some("https://t.example/{z}/{x}/{y}.png")
        );
        assert_eq!(s.tiles.cache_dir, Some(PathBuf::from("/var/teselas")));
        assert_eq!(s.tiles.attribution, "© Ejemplo");
    }

    #[test]
    fn services_come_from_keys_and_urls() {
        let s = settings(&[
            ("GOOGLE_MAPS_API_KEY", " CLAVE "),
            ("FLOTA_GEOCODER_URL", "https://nominatim.example"),
            ("FLOTA_OSRM_URL", " http://localhost:5000 "),
            ("FLOTA_LOG", "debug"),
            ("FLOTA_CONTACTO", " ops@example.org "),
        ]);
        assert_eq!(
            s.geocoding,
            Some(Service::Google {
                key: " CLAVE ".into(),
                url: places::GOOGLE_GEOCODE_URL.into()
            })
        );
        assert_eq!(s.directions.google_key.as_deref(), Some("CLAVE"));
        assert_eq!(
            s.directions.osrm_url.as_deref(),
            Some("http://localhost:5000")
        );
        assert_eq!(s.log_level, Some(Level::Debug));
        assert_eq!(s.contact.as_deref(), Some("ops@example.org"));
        let s = settings(&[
            ("GOOGLE_MAPS_API_KEY", " "),
            ("FLOTA_GEOCODER_URL", "https://nominatim.example"),
            ("FLOTA_LOG", "ruidoso"),
        ]);
        assert_eq!(
            s.geocoding,
            Some(Service::Nominatim {
                url: "https://nominatim.example".into()
            })
        );
        assert_eq!(s.directions.google_key, None);
        assert_eq!(s.log_level, None);
    }

    #[test]
    fn a_debug_dump_shows_no_key() {
        let s = settings(&[
            ("GOOGLE_MAPS_API_KEY", "CLAVE-SECRETA-123"),
            ("FLOTA_OSRM_URL", "http://osrm.example/?token=SECRETO-456"),
            (
                "FLOTA_GOOGLE_ROUTES_URL",
                "http://routes.example/?firma=FIRMA-789",
            ),
        ]);
        let dump = format!("{:?}", s.directions);
        assert!(dump.contains("google_key: Some(\"***\")"), "{dump}");
        assert!(
            !dump.contains("CLAVE-SECRETA")
                && !dump.contains("SECRETO-456")
                && !dump.contains("FIRMA-789"),
            "{dump}"
        );
    }
}
