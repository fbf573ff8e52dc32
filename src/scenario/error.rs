//! Scenario errors, in Spanish, each naming its culprit and, where the text says it, its line.
//!
//! Owns turning a `toml` deserialization error into `archivo:línea:columna: mensaje` with the
//! key involved (a duplicate table or key is named), the semantic error type (located the same
//! way when the checks know where the culprit is written), and finding a table or a key in the
//! text for them. The toml crate writes English; the common messages (unknown key, missing key,
//! wrong type, duplicate key) are rendered in Spanish here.

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
    /// The file parses but says something impossible; `at` is the line and column of the
    /// culprit when known.
    #[error("{}: {message}", located(path, *at))]
    Invalid {
        path: PathBuf,
        at: Option<(usize, usize)>,
        message: String,
    },
    #[error(transparent)]
    Route(#[from] RouteError),
}

/// `archivo:línea:columna`, or the file alone.
fn located(path: &std::path::Path, at: Option<(usize, usize)>) -> String {
    match at {
        Some((line, column)) => format!("{}:{line}:{column}", path.display()),
        None => path.display().to_string(),
    }
}

/// Renders a toml error with its position in `text`.
pub fn syntax_error(path: PathBuf, text: &str, err: &toml::de::Error) -> ScenarioError {
    let span = err.span().unwrap_or(0..0);
    let offset = span.start;
    let (line, column) = line_column(text, offset);
    let key = key_on_line(text, offset);
    let mut message = spanish(err.message());
    if message == "clave duplicada" {
        message = duplicate(text, span);
    }
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

/// What a duplicate is: a table header written twice (`tabla duplicada [turno.sabado]`) or a
/// key given twice in one table (`clave duplicada 'dias'`).
fn duplicate(text: &str, span: std::ops::Range<usize>) -> String {
    let name = text
        .get(span.clone())
        .unwrap_or_default()
        .trim()
        .trim_matches('"');
    let start = text
        .get(..span.start)
        .and_then(|t| t.rfind('\n'))
        .map_or(0, |i| i + 1);
    let line = text
        .get(start..)
        .and_then(|t| t.lines().next())
        .unwrap_or_default()
        .trim();
    if line.starts_with('[') {
        let header = line
            .split(']')
            .next()
            .unwrap_or(line)
            .trim_start_matches('[');
        format!(
            "tabla duplicada [{}]: ya se definió antes",
            header.trim_matches(['[', ']']).trim()
        )
    } else if name.is_empty() {
        "clave duplicada".into()
    } else {
        format!("clave duplicada '{name}': ya tiene valor en esta tabla")
    }
}

/// The offset of `[header]` (or `[[header]]`) at the start of a line, the first one.
pub(super) fn find_table(text: &str, header: &str) -> Option<usize> {
    lines(text).find_map(|(offset, line)| {
        let inner = line.trim_start_matches('[').split(']').next()?.trim();
        (line.starts_with('[') && inner == header).then_some(offset)
    })
}

/// The offset of `key = …` in the table whose header (or whose first key, for the document
/// root when `from` is `None`) is at `from`: searched until the next header.
pub(super) fn find_key(text: &str, from: Option<usize>, key: &str) -> Option<usize> {
    let start = from.unwrap_or(0);
    let mut body = lines(text).skip_while(|(offset, _)| *offset < start);
    if from.is_some() {
        body.next(); // the header itself
    }
    body.take_while(|(_, line)| !line.starts_with('['))
        .find_map(|(offset, line)| {
            let (name, _) = line.split_once('=')?;
            let name = name.trim().trim_matches('"');
            (name == key || name.starts_with(&format!("{key}."))).then_some(offset)
        })
}

/// Each line's byte offset (of its first non-blank character) and its trimmed text.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut offset = 0;
    text.split_inclusive('\n').map(move |raw| {
        let start = offset;
        offset += raw.len();
        let indent = raw.len() - raw.trim_start_matches([' ', '\t']).len();
        (start + indent, raw.trim())
    })
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
    fn tables_and_keys_are_found() {
        let text = "nombre = \"x\"\n[turno]\ninicio = [\"06:20\", \"08:20\"]\n\n[turno.sabado]\n  duracion_h = [4, 5]\n[[unidades]]\nplaca = \"A\"\n";
        let at = |offset: Option<usize>| offset.map(|o| line_column(text, o));
        assert_eq!(at(find_table(text, "turno")), Some((2, 1)));
        assert_eq!(at(find_table(text, "turno.sabado")), Some((5, 1)));
        assert_eq!(at(find_table(text, "unidades")), Some((7, 1)));
        assert_eq!(
            at(find_key(text, find_table(text, "turno"), "inicio")),
            Some((3, 1))
        );
        assert_eq!(
            at(find_key(
                text,
                find_table(text, "turno.sabado"),
                "duracion_h"
            )),
            Some((6, 3))
        );
        assert_eq!(at(find_key(text, None, "nombre")), Some((1, 1)));
        assert_eq!(
            find_key(text, find_table(text, "turno"), "duracion_h"),
            None
        );
        assert_eq!(find_table(text, "calendario"), None);
    }

    #[test]
    fn duplicates_are_named() {
        let message = |text: &str| match syntax_error(
            PathBuf::from("e.toml"),
            text,
            &toml::from_str::<toml::Table>(text).unwrap_err(),
        ) {
            ScenarioError::Syntax { line, message, .. } => format!("{line}: {message}"),
            other => other.to_string(),
        };
        assert_eq!(
            message("[turno]\na = 1\n[turno]\nb = 2\n"),
            "3: tabla duplicada [turno]: ya se definió antes"
        );
        assert_eq!(
            message("[turno.sabado]\na = 1\n[turno.sabado]\n"),
            "3: tabla duplicada [turno.sabado]: ya se definió antes"
        );
        assert_eq!(
            message("dias = 1\ndias = 2\n"),
            "2: clave duplicada 'dias': ya tiene valor en esta tabla"
        );
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
