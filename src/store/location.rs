//! Where a flota database lives: a file path (SQLite) or a `postgres://`/`postgresql://` URL
//! (PostgreSQL).
//!
//! Owns telling the two apart and checking a URL once, at the edge (the verbs turn every
//! `--db`, `--salida` and `FLOTA_DB` into a [`Location`]), and how a location is shown: a URL
//! never with its password. Knows nothing of connections: the store opens what this names.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// A database: a SQLite file or a PostgreSQL server's database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    Postgres(PgUrl),
}

/// A checked PostgreSQL URL: the text to connect with and the text to show.
#[derive(Clone, PartialEq, Eq)]
pub struct PgUrl {
    url: String,
    shown: String,
    database: String,
}

impl fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

/// A URL that cannot name a database, in Spanish (the URL shown without its password).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "la dirección {shown} no es una URL de PostgreSQL válida ({reason}); la forma es postgres://usuario:clave@servidor:puerto/base"
)]
pub struct LocationError {
    pub shown: String,
    pub reason: String,
}

const SCHEMES: [&str; 2] = ["postgres://", "postgresql://"];

impl Location {
    /// A `postgres://` or `postgresql://` URL (checked) is PostgreSQL; anything else is a
    /// SQLite file, as it always was.
    pub fn parse(text: &Path) -> Result<Location, LocationError> {
        let Some(raw) = text.to_str() else {
            return Ok(Location::Sqlite(text.to_path_buf()));
        };
        let lower = raw
            .get(..SCHEMES[1].len())
            .unwrap_or(raw)
            .to_ascii_lowercase();
        if !SCHEMES.iter().any(|s| lower.starts_with(s)) {
            return Ok(Location::Sqlite(text.to_path_buf()));
        }
        PgUrl::parse(raw).map(Location::Postgres)
    }

    /// The file, for a SQLite location.
    pub fn as_path(&self) -> Option<&Path> {
        match self {
            Location::Sqlite(path) => Some(path),
            Location::Postgres(_) => None,
        }
    }

    pub fn is_postgres(&self) -> bool {
        matches!(self, Location::Postgres(_))
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(path) => write!(f, "{}", path.display()),
            Location::Postgres(url) => f.write_str(&url.shown),
        }
    }
}

impl From<&Path> for Location {
    fn from(path: &Path) -> Location {
        Location::Sqlite(path.to_path_buf())
    }
}

impl From<&PathBuf> for Location {
    fn from(path: &PathBuf) -> Location {
        Location::Sqlite(path.clone())
    }
}

impl From<PathBuf> for Location {
    fn from(path: PathBuf) -> Location {
        Location::Sqlite(path)
    }
}

impl From<&Location> for Location {
    fn from(location: &Location) -> Location {
        location.clone()
    }
}

impl PgUrl {
    fn parse(raw: &str) -> Result<PgUrl, LocationError> {
        // The client's parser takes the scheme in lower case only.
        let raw = &match raw.split_once("://") {
            Some((scheme, rest)) => format!("{}://{rest}", scheme.to_ascii_lowercase()),
            None => raw.to_owned(),
        };
        let shown = redact(raw);
        let fail = |reason: &str| LocationError {
            shown: shown.clone(),
            reason: reason.to_owned(),
        };
        let config = postgres::Config::from_str(raw).map_err(|e| fail(&url_words(&e)))?;
        if config.get_hosts().is_empty() {
            return Err(fail("falta el servidor"));
        }
        let Some(database) = config.get_dbname().map(str::to_owned) else {
            return Err(fail("falta el nombre de la base, tras la última barra"));
        };
        if config.get_user().is_none() {
            return Err(fail("falta el usuario, antes de @"));
        }
        Ok(PgUrl {
            url: raw.to_owned(),
            shown,
            database,
        })
    }

    /// The text to connect with (with its password).
    pub(super) fn secret(&self) -> &str {
        &self.url
    }

    /// The URL without its password.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The database's name on the server.
    pub fn database(&self) -> &str {
        &self.database
    }
}

/// The URL parser's complaint in Spanish (its English only at `debug`).
fn url_words(e: &postgres::Error) -> String {
    // The parser's own words are in the error's cause.
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    let words = if text.contains("port") {
        "el puerto no es un número"
    } else if text.contains("percent") || text.contains("UTF-8") || text.contains("utf-8") {
        "tiene un carácter mal codificado"
    } else if text.contains("unknown option") || text.contains("invalid value") {
        "tiene una opción desconocida o con un valor inválido"
    } else {
        "no se entiende"
    };
    format!("{words}{}", crate::plumbing::spanish::original(text))
}

/// `scheme://user:password@rest` → `scheme://user:***@rest`; a `password=` option too.
fn redact(raw: &str) -> String {
    let Some((scheme, rest)) = raw.split_once("://") else {
        return raw.to_owned();
    };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => format!("{userinfo}@{host}"),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => {
                        format!("{key}=***")
                    }
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Location, LocationError> {
        Location::parse(Path::new(text))
    }

    #[test]
    fn paths_stay_sqlite_and_urls_are_postgres() {
        let check = |text: &str, postgres: bool| {
            let location = parse(text).unwrap();
            assert_eq!(location.is_postgres(), postgres, "{text}");
        };
        check("datos/flota.db", false);
        check("postgres.db", false);
        check("./postgres://x", false);
        check("postgres://flota@127.0.0.1:5432/flota", true);
        check("PostgreSQL://flota@localhost/flota", true);
    }

    #[test]
    fn passwords_are_never_shown() {
        let location = parse("postgres://ana:s3creta@db.example:5432/flota?password=otra").unwrap();
        let shown = location.to_string();
        assert_eq!(
            shown,
            "postgres://ana:***@db.example:5432/flota?password=***"
        );
        assert!(!format!("{location:?}").contains("s3creta"));
    }

    #[test]
    fn bad_urls_are_refused_in_spanish() {
        let check = |text: &str, reason: &str| {
            let err = parse(text).unwrap_err();
            assert!(err.reason.starts_with(reason), "{text}: {err}");
            assert!(!err.to_string().contains("clave123"), "{err}");
        };
        check("postgres://ana:clave123@servidor:puerto/flota", "el puerto");
        check(
            "postgres://ana:clave123@servidor:5432",
            "falta el nombre de la base",
        );
        check("postgres://servidor:5432/flota", "falta el usuario");
    }
}
