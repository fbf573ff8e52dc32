//! Scenario errors, in Spanish, each naming its culprit and, where the text says it, its line.
//!
//! Owns turning a `toml` deserialization error into `archivo:línea:columna: mensaje` with the
//! key involved (a duplicate table or key is named), the semantic error type (located the same
//! way when the checks know where the culprit is written), and finding a table or a key in the
//! text for them. The toml crate writes English: serde's messages (unknown key, missing key,
//! wrong type) are worded by `plumbing::spanish`, the TOML parser's here, by description; an
//! unknown one says "TOML inválido" (its text only at `debug`).

use std::path::PathBuf;

use crate::geometry::route::RouteError;
use crate::plumbing::spanish;

#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("{path}: no se pudo leer: {}", crate::plumbing::spanish::io(.source))]
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

/// A scenario text's lines, split once for every place the checks name: each line's byte
/// offset (of its first non-blank character) and its trimmed text. A load asks for ~hundreds
/// of places (every table and key a check points at, errors or not), and splitting the text
/// anew for each was a sixth of loading the reference week (docs/rendimiento.md, session
/// seventeen).
pub(super) struct Lines<'a>(Vec<(usize, &'a str)>);

impl<'a> Lines<'a> {
    pub(super) fn of(text: &'a str) -> Lines<'a> {
        Lines(lines(text).collect())
    }

    /// The offset of `[header]` (or `[[header]]`) at the start of a line, the first one.
    pub(super) fn table(&self, header: &str) -> Option<usize> {
        self.0.iter().find_map(|&(offset, line)| {
            let inner = line.trim_start_matches('[').split(']').next()?.trim();
            (line.starts_with('[') && inner == header).then_some(offset)
        })
    }

    /// The offset of `key = …` in the table whose header (or whose first key, for the
    /// document root when `from` is `None`) is at `from`: searched until the next header.
    pub(super) fn key(&self, from: Option<usize>, key: &str) -> Option<usize> {
        let start = from.unwrap_or(0);
        let first = self.0.partition_point(|(offset, _)| *offset < start);
        let mut body = self.0.get(first..).unwrap_or_default().iter();
        if from.is_some() {
            body.next(); // the header itself
        }
        body.take_while(|(_, line)| !line.starts_with('['))
            .find_map(|&(offset, line)| {
                let (name, _) = line.split_once('=')?;
                let name = name.trim().trim_matches('"');
                let dotted = name
                    .strip_prefix(key)
                    .is_some_and(|rest| rest.starts_with('.'));
                (name == key || dotted).then_some(offset)
            })
    }
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

/// Translates toml/serde's English messages: serde's shapes through
/// [`spanish::serde_message`], the TOML parser's by [`toml_description`]. Any other message
/// is a deserializer's own, which flota writes in Spanish, and is kept.
fn spanish(message: &str) -> String {
    let message = message.trim();
    if let Some(text) = spanish::serde_message(message) {
        return text;
    }
    if message.starts_with("duplicate key") {
        return "clave duplicada".into();
    }
    // The parser's messages are "<description>, expected <a>, <b>".
    let (description, expected) = message.split_once(", expected ").unwrap_or((message, ""));
    let Some(what) = toml_description(description) else {
        return message.to_owned();
    };
    let wanted: Option<Vec<String>> = expected
        .split(", ")
        .filter(|e| !e.is_empty() && *e != "nothing")
        .map(toml_expected)
        .filter(|e| e.as_ref().is_none_or(|e| !what.contains(e.as_str())))
        .collect();
    match wanted {
        Some(wanted) if !wanted.is_empty() => {
            format!("{what}; se esperaba {}", wanted.join(" o "))
        }
        // What was expected is not worth saying, or not known in Spanish.
        _ => format!("{what}{}", spanish::original(message)),
    }
}

/// One thing the TOML parser expected: a literal (`` `=` ``, `newline`) or a description.
fn toml_expected(text: &str) -> Option<String> {
    let text = text.trim();
    let said = match text {
        "newline" => "un salto de línea",
        "key" => "una clave",
        "value" => "un valor",
        "numbers" | "digits" => "dígitos",
        "letters" => "letras",
        "literal string" | "basic string" => "un texto entre comillas",
        "multi-line basic string" => "un texto multilínea",
        "unicode hexadecimal value" => "un código Unicode hexadecimal",
        "printable characters"
        | "characters"
        | "non-single-quote visible characters"
        | "non-single-quote characters"
        | "non-double-quote visible characters" => "caracteres imprimibles",
        _ if text.starts_with('`') && text.ends_with('`') && text.len() > 1 => {
            return Some(format!("'{}'", &text[1..text.len() - 1]));
        }
        _ => return datetime_expected(text),
    };
    Some(said.to_owned())
}

/// toml_datetime's "month between 01 and 12" and the like.
fn datetime_expected(text: &str) -> Option<String> {
    let (unit, range) = text.split_once(" between ")?;
    let (low, high) = range.split_once(" and ")?;
    let unit = match unit {
        "month" => "un mes",
        "day" => "un día",
        "hour" | "hours" => "una hora",
        "minute" | "minutes" => "un minuto",
        "second" => "un segundo",
        _ => return None,
    };
    Some(format!("{unit} de {low} a {high}"))
}

/// The TOML parser's (toml_parser, toml, toml_datetime) descriptions of what is wrong.
fn toml_description(description: &str) -> Option<&'static str> {
    Some(match description {
        "carriage return must be followed by newline" => {
            "un retorno de carro debe ir seguido de un salto de línea"
        }
        "missing opening quote" => "falta la comilla de apertura",
        "missing comma between array elements" => "falta una coma entre los elementos de la lista",
        "integers with a radix cannot be signed" => {
            "un entero hexadecimal, octal o binario no lleva signo"
        }
        "radix must be lowercase" => "el prefijo de base va en minúscula (0x, 0o, 0b)",
        "missing assignment between key-value pairs" | "key with no value" => "clave sin valor",
        "missing escaped value" => "falta el carácter tras la barra invertida",
        "unexpected leading zero" => "un número no puede empezar por cero",
        "unclosed array table" => "falta ']]' al final del encabezado",
        "unclosed table" => "falta ']' al final del encabezado",
        "missing key for inline table element" => "falta la clave de un elemento de la tabla { }",
        "missing inline table opening" => "falta '{' al abrir la tabla",
        "missing array opening" => "falta '[' al abrir la lista",
        "invalid unquoted key" | "invalid key" => {
            "clave inválida (use letras, dígitos, '_' o '-', o póngala entre comillas)"
        }
        "unquoted keys cannot be empty" => "falta la clave",
        "cannot recurse further; max recursion depth met" | "recursion limit" => {
            "anidamiento demasiado profundo"
        }
        "invalid multi-line basic string" | "invalid multi-line literal string" => {
            "texto multilínea inválido o sin cerrar"
        }
        "invalid basic string" | "invalid literal string" | "invalid string" => {
            "texto inválido o sin cerrar las comillas"
        }
        "unexpected sign" | "redundant numeric sign" => "signo de más",
        "unexpected key or value" | "unexpected content" => "contenido inesperado",
        "unexpected content between comment and newline" | "invalid comment character" => {
            "carácter no permitido en un comentario"
        }
        "unexpected `=` in array" => "'=' dentro de una lista",
        "unclosed inline table" => "falta '}' al cerrar la tabla",
        "unclosed array" => "falta ']' al cerrar la lista",
        "too few unicode value digits" => "faltan dígitos en el código Unicode",
        "string values must be quoted" => "los textos van entre comillas",
        "redundant integer number prefix" => "prefijo de número de más",
        "missing value" | "missing value for key" | "value is missing" => "falta el valor",
        "missing table open" => "falta '[' al abrir el encabezado",
        "missing comment start" => "falta '#' al empezar el comentario",
        "missing comma between key-value pairs" => "falta una coma entre los pares clave = valor",
        "keys cannot be multi-line literal strings" | "keys cannot be multi-line basic strings" => {
            "una clave no puede ser un texto multilínea"
        }
        "invalid value" => "valor inválido",
        "invalid key-value pair" => "par clave = valor inválido",
        "invalid inline table element" => "elemento inválido en la tabla { }",
        "extra comma in inline table" => "coma de más en la tabla { }",
        "extra comma in array" => "coma de más en la lista",
        "extra assignment between key-value pairs" | "extra `=`" => "'=' de más",
        "`_` may only go between digits" => "'_' solo puede ir entre dígitos",
        "invalid boolean" => "booleano inválido (use true o false)",
        "invalid date-time" | "invalid datetime" => "fecha y hora inválida",
        "invalid date" => "fecha inválida",
        "invalid time" => "hora inválida",
        "invalid offset" => "desfase horario inválido",
        "invalid float" | "invalid exponent" | "invalid fraction" | "invalid mantissa" => {
            "número con decimales inválido"
        }
        "invalid integer number" => "número entero inválido",
        "invalid hexadecimal number" => "número hexadecimal inválido",
        "invalid octal number" => "número octal inválido",
        "invalid binary number" => "número binario inválido",
        "invalid table" => "tabla inválida",
        "integer number overflowed" | "u64 value was too large" => "número entero demasiado grande",
        "floating-point number overflowed" => "número demasiado grande",
        _ => return None,
    })
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
        let lines = Lines::of(text);
        assert_eq!(at(lines.table("turno")), Some((2, 1)));
        assert_eq!(at(lines.table("turno.sabado")), Some((5, 1)));
        assert_eq!(at(lines.table("unidades")), Some((7, 1)));
        assert_eq!(at(lines.key(lines.table("turno"), "inicio")), Some((3, 1)));
        assert_eq!(
            at(lines.key(lines.table("turno.sabado"), "duracion_h")),
            Some((6, 3))
        );
        assert_eq!(at(lines.key(None, "nombre")), Some((1, 1)));
        assert_eq!(lines.key(lines.table("turno"), "duracion_h"), None);
        assert_eq!(lines.table("calendario"), None);
        // A dotted key names its first part; a mere prefix of a name does not.
        let dotted = "calendario.dias = 5\ncalendarios = 1\n";
        let lines = Lines::of(dotted);
        assert_eq!(lines.key(None, "calendario"), Some(0));
        assert_eq!(lines.key(None, "calendarios"), Some(20));
        assert_eq!(lines.key(None, "calen"), None);
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
            "tipo inválido: se recibió el texto \"x\", se esperaba un número"
        );
        assert_eq!(
            spanish("unexpected key or value, expected newline, `#`"),
            "contenido inesperado; se esperaba un salto de línea o '#'"
        );
        assert_eq!(
            spanish("string values must be quoted, expected literal string"),
            "los textos van entre comillas; se esperaba un texto entre comillas"
        );
        assert_eq!(
            spanish("invalid float, expected nothing"),
            "número con decimales inválido"
        );
    }
}
