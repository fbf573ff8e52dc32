//! Scenario errors, in Spanish, each naming its culprit.
//!
//! Owns turning a `toml` deserialization error into `archivo:línea:columna: mensaje` with the
//! key involved, and the semantic error type. The toml crate writes English: serde's messages
//! (unknown key, missing key, wrong type) are worded by `plumbing::spanish`, the TOML parser's
//! here, by description; an unknown one says "TOML inválido" (its text only at `debug`).

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
