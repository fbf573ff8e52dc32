//! Scenario errors, in Spanish, each naming its culprit.
//!
//! Owns turning a `toml` deserialization error into `archivo:línea:columna: mensaje` with the
//! key involved, and the semantic error type. The toml crate writes English; the common
//! messages (unknown key, missing key, wrong type) are rendered in Spanish here.

use std::path::PathBuf;

use crate::geometry::route::RouteError;

#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("{path}: no se pudo leer: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not valid TOML or does not fit the format.
    #[error("{path}:{line}:{column}: {message}")]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// The file parses but says something impossible.
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error(transparent)]
    Route(#[from] RouteError),
}

/// Renders a toml error with its position in `text`.
pub fn syntax_error(path: PathBuf, text: &str, err: &toml::de::Error) -> ScenarioError {
    let offset = err.span().map_or(0, |span| span.start);
    let (line, column) = line_column(text, offset);
    let key = key_on_line(text, offset);
    let mut message = spanish(err.message());
    if let Some(key) = key.filter(|k| !message.contains(&format!("'{k}'"))) {
        message = format!("{message} (clave '{key}')");
    }
    ScenarioError::Syntax {
        path,
        line,
        column,
        message,
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = text
        .get(line_start..offset)
        .map_or(1, |s| s.chars().count() + 1);
    (line, column)
}

/// The `key = …` written on the line holding `offset`, if any.
fn key_on_line(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let start = text.get(..offset)?.rfind('\n').map_or(0, |i| i + 1);
    let end = text
        .get(offset..)?
        .find('\n')
        .map_or(text.len(), |i| offset + i);
    let line = text.get(start..end)?;
    let (key, _) = line.split_once('=')?;
    let key = key.trim().trim_matches('"');
    (!key.is_empty() && !key.starts_with('[') && !key.starts_with('#')).then(|| key.to_owned())
}

/// Translates toml/serde's English messages; unknown shapes keep their text after a prefix.
fn spanish(message: &str) -> String {
    let message = message.trim();
    if let Some(rest) = message.strip_prefix("unknown field ") {
        let (field, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        let field = unquote(field);
        let expected = expected
            .trim_start_matches("one of ")
            .split(", ")
            .map(unquote)
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(", ");
        return if expected.is_empty() {
            format!("clave desconocida '{field}'")
        } else {
            format!("clave desconocida '{field}'; se admiten: {expected}")
        };
    }
    if let Some(rest) = message.strip_prefix("missing field ") {
        return format!("falta la clave obligatoria '{}'", unquote(rest));
    }
    if let Some(rest) = message.strip_prefix("invalid type: ") {
        let (got, expected) = rest.split_once(", expected ").unwrap_or((rest, "?"));
        return format!(
            "tipo inválido: se recibió {}, se esperaba {}",
            kind(got),
            kind(expected)
        );
    }
    if let Some(rest) = message.strip_prefix("invalid length ") {
        return format!("longitud inválida {rest}");
    }
    if let Some(rest) = message.strip_prefix("invalid value: ") {
        return format!("valor inválido: {rest}");
    }
    if message.starts_with("duplicate key") {
        return "clave duplicada".into();
    }
    if let Some(rest) = message.strip_prefix("input contains invalid characters") {
        return format!("fecha inválida{rest}");
    }
    format!("TOML inválido: {message}")
}

fn unquote(text: &str) -> String {
    text.trim().trim_matches('`').to_owned()
}

/// Spanish names for serde's type descriptions.
fn kind(text: &str) -> String {
    let text = text.trim();
    let table = [
        ("a string", "un texto"),
        ("string", "un texto"),
        ("integer", "un entero"),
        ("i64", "un entero"),
        ("u32", "un entero no negativo"),
        ("u64", "un entero no negativo"),
        ("f64", "un número"),
        ("float", "un número"),
        ("a boolean", "un booleano"),
        ("boolean", "un booleano"),
        ("a sequence", "una lista"),
        ("sequence", "una lista"),
        ("array", "una lista"),
        ("a map", "una tabla"),
        ("map", "una tabla"),
        ("struct", "una tabla"),
        ("a date", "una fecha AAAA-MM-DD"),
        ("local date", "una fecha AAAA-MM-DD"),
    ];
    for (english, spanish) in table {
        if text == english || text.starts_with(&format!("{english} ")) {
            let detail = text[english.len()..].trim();
            return if detail.is_empty() {
                spanish.to_owned()
            } else {
                format!("{spanish} {detail}")
            };
        }
    }
    if text.starts_with("an array of length") || text.starts_with("array of length") {
        return text
            .replace("an array of length", "una lista de longitud")
            .replace("array of length", "una lista de longitud");
    }
    text.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based() {
        let text = "a = 1\nbb = 2\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        assert_eq!(line_column(text, 11), (2, 6));
    }

    #[test]
    fn messages_are_spanish() {
        assert_eq!(
            spanish("unknown field `foo`, expected one of `a`, `b`"),
            "clave desconocida 'foo'; se admiten: a, b"
        );
        assert_eq!(
            spanish("missing field `placa`"),
            "falta la clave obligatoria 'placa'"
        );
        assert_eq!(
            spanish("invalid type: string \"x\", expected f64"),
            "tipo inválido: se recibió un texto \"x\", se esperaba un número"
        );
    }
}
