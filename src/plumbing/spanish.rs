//! Library and system errors in Spanish: the system's I/O errors by kind, serde's and
//! serde_json's messages by shape, and the original English only when diagnostics are at
//! `debug`.
//!
//! Owns the sentences a person reads when a library fails under flota: every place that shows
//! an `io::Error`, a serde message or a `serde_json::Error` goes through here rather than
//! printing the library's text. It knows no file format of its own (the TOML parser's
//! messages are the scenario's, SQLite's the store's) and decides nothing: it only words.

use std::io;

use super::log::{self, Level};

/// `" [original: …]"` when diagnostics are at `debug` (`FLOTA_LOG=debug`, `--verbose`),
/// else nothing: the library's own words are kept for whoever debugs, never shown by default.
pub fn original(text: impl std::fmt::Display) -> String {
    if log::enabled(Level::Debug) {
        format!(" [original: {text}]")
    } else {
        String::new()
    }
}

/// Why an I/O operation failed, as a short Spanish phrase ("no existe", "sin permiso"…), with
/// the system's text only under `debug`.
pub fn io(err: &io::Error) -> String {
    format!("{}{}", io_reason(err), original(err))
}

/// The phrase of [`io`], without the original.
fn io_reason(err: &io::Error) -> String {
    use io::ErrorKind as K;
    let text = match err.kind() {
        K::NotFound => "no existe",
        K::PermissionDenied => "sin permiso",
        K::IsADirectory => "es una carpeta, no un archivo",
        K::NotADirectory => "una parte de la ruta es un archivo, no una carpeta",
        K::AlreadyExists => "ya existe",
        K::DirectoryNotEmpty => "la carpeta no está vacía",
        K::ReadOnlyFilesystem => "el sistema de archivos es de solo lectura",
        K::StorageFull => "no queda espacio en el disco",
        K::QuotaExceeded => "se agotó la cuota de disco",
        K::FileTooLarge => "el archivo es demasiado grande",
        K::InvalidData => "el contenido no es válido (¿no es texto UTF-8?)",
        K::InvalidFilename => "el nombre del archivo no es válido",
        K::BrokenPipe => "el otro extremo cerró la conexión",
        K::UnexpectedEof => "el archivo terminó antes de tiempo",
        K::Interrupted => "interrumpido",
        K::TimedOut => "se agotó el tiempo de espera",
        K::WouldBlock => "la operación se bloquearía",
        K::OutOfMemory => "memoria insuficiente",
        K::Unsupported => "operación no admitida en este sistema",
        K::ConnectionRefused => "conexión rechazada",
        K::ConnectionReset | K::ConnectionAborted => "la conexión se cortó",
        K::NotConnected => "sin conexión",
        K::AddrInUse => "la dirección ya está en uso",
        K::ResourceBusy => "el recurso está ocupado",
        K::ExecutableFileBusy => "el archivo se está ejecutando",
        K::CrossesDevices => "no se puede mover entre discos distintos",
        K::TooManyLinks => "demasiados enlaces",
        K::Deadlock => "bloqueo mutuo",
        K::ArgumentListTooLong => "lista de argumentos demasiado larga",
        K::InvalidInput => "dato de entrada inválido",
        _ => {
            return match err.raw_os_error() {
                Some(code) => format!("error de entrada/salida (código {code})"),
                None => "error de entrada/salida".into(),
            };
        }
    };
    text.to_owned()
}

/// An error and the errors it wraps, joined by `": "` as anyhow's `{:#}` does, with the
/// system's and serde_json's errors worded in Spanish and a link left out when what it says
/// is already said (an error that names its cause's reason need not be followed by it).
pub fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut link = Some(err);
    while let Some(e) = link {
        let text = if let Some(io) = e.downcast_ref::<io::Error>() {
            self::io(io)
        } else if let Some(json) = e.downcast_ref::<serde_json::Error>() {
            self::json(json)
        } else {
            e.to_string()
        };
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        link = e.source();
    }
    parts.join(": ")
}

/// Whether `err`, or any error it wraps, is a write to a closed pipe.
pub fn is_broken_pipe(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut link = Some(err);
    while let Some(e) = link {
        // serde_json hides the io::Error it wraps from `source`, but tells its kind.
        let kind = e
            .downcast_ref::<io::Error>()
            .map(io::Error::kind)
            .or_else(|| e.downcast_ref::<serde_json::Error>()?.io_error_kind());
        if kind == Some(io::ErrorKind::BrokenPipe) {
            return true;
        }
        link = e.source();
    }
    false
}

/// A `serde_json` error in Spanish: what is wrong and, for syntax, where (`línea L, columna
/// C`).
pub fn json(err: &serde_json::Error) -> String {
    let what = json_what(err);
    if err.line() == 0 {
        what
    } else {
        format!("línea {}, columna {}: {what}", err.line(), err.column())
    }
}

/// What is wrong in a `serde_json` error, without where (for JSON that flota made itself,
/// whose lines the user never saw).
pub fn json_what(err: &serde_json::Error) -> String {
    if let Some(kind) = err.io_error_kind() {
        return format!("{}{}", io_reason(&io::Error::from(kind)), original(err));
    }
    let text = err.to_string();
    // serde_json appends its position in English.
    let message = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(head, _)| head);
    json_syntax(message)
        .map(str::to_owned)
        .or_else(|| serde_message(message))
        .unwrap_or_else(|| message.to_owned())
}

/// serde_json's own syntax messages.
fn json_syntax(message: &str) -> Option<&'static str> {
    Some(match message {
        "EOF while parsing a list" => "el texto termina dentro de una lista (falta ']')",
        "EOF while parsing an object" => "el texto termina dentro de un objeto (falta '}')",
        "EOF while parsing a string" => "el texto termina dentro de un texto (falta '\"')",
        "EOF while parsing a value" => "el texto termina donde se esperaba un valor",
        "expected `:`" => "se esperaba ':'",
        "expected `,` or `]`" => "se esperaba ',' o ']'",
        "expected `,` or `}`" => "se esperaba ',' o '}'",
        "expected ident" => "palabra desconocida (¿true, false o null?)",
        "expected value" => "se esperaba un valor JSON",
        "expected `\"`" => "se esperaba '\"'",
        "invalid escape" => "secuencia de escape inválida",
        "invalid number" => "número inválido",
        "number out of range" => "número fuera de rango",
        "invalid unicode code point" => "carácter Unicode inválido",
        "control character (\\u0000-\\u001F) found while parsing a string" => {
            "carácter de control dentro de un texto"
        }
        "key must be a string" => "las claves van entre comillas",
        "lone leading surrogate in hex escape" | "unexpected end of hex escape" => {
            "escape Unicode incompleto"
        }
        "trailing comma" => "coma de más al final",
        "trailing characters" => "texto de más tras el final del JSON",
        "recursion limit exceeded" => "anidamiento demasiado profundo",
        _ => return None,
    })
}

/// serde's own messages (`invalid type: …, expected …`, `missing field …` and the rest, as
/// any serde format writes them) in Spanish; `None` for a message of another shape (a
/// deserializer's own, which flota writes in Spanish).
pub fn serde_message(message: &str) -> Option<String> {
    let message = message.trim();
    if let Some(rest) = message.strip_prefix("unknown field ") {
        let (field, expected) = rest.split_once(", ").unwrap_or((rest, ""));
        return Some(match admitted(expected) {
            Some(list) => format!("clave desconocida '{}'; se admiten: {list}", unquote(field)),
            None => format!("clave desconocida '{}'", unquote(field)),
        });
    }
    if let Some(rest) = message.strip_prefix("unknown variant ") {
        let (variant, expected) = rest.split_once(", ").unwrap_or((rest, ""));
        return Some(match admitted(expected) {
            Some(list) => format!(
                "valor desconocido '{}'; se admiten: {list}",
                unquote(variant)
            ),
            None => format!("valor desconocido '{}'", unquote(variant)),
        });
    }
    if let Some(rest) = message.strip_prefix("missing field ") {
        return Some(format!("falta la clave obligatoria '{}'", unquote(rest)));
    }
    if let Some(rest) = message.strip_prefix("duplicate field ") {
        return Some(format!("la clave '{}' aparece dos veces", unquote(rest)));
    }
    if let Some(rest) = message.strip_prefix("invalid type: ") {
        let (got, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        return Some(format!(
            "tipo inválido: se recibió {}, se esperaba {}",
            unexpected(got),
            expectation(expected)
        ));
    }
    if let Some(rest) = message.strip_prefix("invalid value: ") {
        let (got, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        return Some(format!(
            "valor inválido: se recibió {}, se esperaba {}",
            unexpected(got),
            expectation(expected)
        ));
    }
    if let Some(rest) = message.strip_prefix("invalid length ") {
        let (length, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        return Some(format!(
            "longitud inválida: {length} elementos, se esperaba {}",
            expectation(expected)
        ));
    }
    if message.starts_with("data did not match any variant") {
        return Some("el valor no tiene ninguna de las formas admitidas".into());
    }
    chrono_message(message).map(str::to_owned)
}

/// chrono's parse errors, which reach serde through date and time fields.
fn chrono_message(message: &str) -> Option<&'static str> {
    Some(match message {
        "input is out of range" => "fecha u hora fuera de rango",
        "no possible date and time matching input" => "esa fecha u hora no existe",
        "input is not enough for unique date and time" => "fecha u hora incompleta",
        "input contains invalid characters" => "fecha u hora con caracteres inválidos",
        "premature end of input" => "fecha u hora incompleta",
        "trailing input" => "texto de más tras la fecha u hora",
        _ => return None,
    })
}

/// serde's `expected one of `a`, `b``: the list, in plain words; `None` when there is none.
fn admitted(expected: &str) -> Option<String> {
    let list = expected
        .trim()
        .trim_start_matches("expected one of ")
        .trim_start_matches("expected ");
    if list.is_empty() || list.starts_with("there are no") {
        return None;
    }
    Some(
        list.split(", ")
            .map(unquote)
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(", "),
    )
}

fn unquote(text: &str) -> &str {
    text.trim().trim_matches('`')
}

/// serde's `Unexpected` (what was found) in Spanish.
fn unexpected(text: &str) -> String {
    let text = text.trim();
    let value = |prefix: &str| {
        text.strip_prefix(prefix).map(|rest| {
            let rest = rest.trim();
            // toml writes big integers as "`…` as i128".
            let rest = rest.split_once(" as ").map_or(rest, |(v, _)| v);
            rest.trim_matches('`').to_owned()
        })
    };
    if let Some(v) = value("integer ") {
        return format!("el entero {v}");
    }
    if let Some(v) = value("floating point ") {
        return format!("el número con decimales {v}");
    }
    if let Some(v) = value("boolean ") {
        return format!("el booleano {v}");
    }
    if let Some(v) = value("character ") {
        return format!("el carácter '{v}'");
    }
    if let Some(v) = text.strip_prefix("string ") {
        return format!("el texto {v}");
    }
    match text {
        "sequence" => "una lista".into(),
        "map" => "una tabla".into(),
        "unit value" | "null" => "un valor vacío".into(),
        "Option value" => "un valor opcional".into(),
        "byte array" => "bytes".into(),
        "enum" | "unit variant" | "newtype variant" | "tuple variant" | "struct variant" => {
            "una variante".into()
        }
        "newtype struct" => "una estructura".into(),
        _ => format!("otro valor{}", original(text)),
    }
}

/// What serde expected (a type's `expecting`) in Spanish.
fn expectation(text: &str) -> String {
    let text = text.trim();
    let unsigned = ["u8", "u16", "u32", "u64", "u128", "usize"];
    let signed = ["i8", "i16", "i32", "i64", "i128", "isize"];
    if unsigned.contains(&text) {
        return "un entero no negativo".into();
    }
    if signed.contains(&text) {
        return "un entero".into();
    }
    for prefix in ["an array of length ", "a tuple of size ", "tuple of "] {
        if let Some(n) = text.strip_prefix(prefix) {
            let n = n.trim_end_matches(" elements");
            return format!("una lista de {n} elementos");
        }
    }
    if text.starts_with("struct ") || text.starts_with("a map") || text == "map" {
        return "una tabla".into();
    }
    if text.starts_with("tuple struct ") {
        return "una lista".into();
    }
    match text {
        "f32" | "f64" => "un número".into(),
        "a string" | "string" | "a borrowed string" | "a string key" => "un texto".into(),
        "a boolean" | "bool" => "un booleano (true o false)".into(),
        "a sequence" | "sequence" | "a sequence of dates" => "una lista".into(),
        "a character" | "char" => "un carácter".into(),
        "option" | "unit" => "un valor".into(),
        "a formatted date string" | "a date" | "local date" => "una fecha AAAA-MM-DD".into(),
        "a formatted time string" | "local time" => "una hora HH:MM".into(),
        "a formatted date and time string" | "local datetime" => {
            "una fecha y hora AAAA-MM-DDTHH:MM".into()
        }
        "variant identifier" | "field identifier" => "un nombre admitido".into(),
        _ => format!("otro tipo de valor{}", original(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_are_worded_by_kind() {
        let check = |kind: io::ErrorKind, want: &str| {
            assert_eq!(io(&io::Error::from(kind)), want, "{kind:?}");
        };
        check(io::ErrorKind::NotFound, "no existe");
        check(io::ErrorKind::PermissionDenied, "sin permiso");
        check(io::ErrorKind::IsADirectory, "es una carpeta, no un archivo");
        check(io::ErrorKind::StorageFull, "no queda espacio en el disco");
        check(
            io::ErrorKind::ReadOnlyFilesystem,
            "el sistema de archivos es de solo lectura",
        );
        assert_eq!(
            io(&io::Error::from_raw_os_error(9999)),
            "error de entrada/salida (código 9999)"
        );
    }

    #[test]
    fn a_chain_says_each_reason_once_in_spanish() {
        #[derive(Debug, thiserror::Error)]
        #[error("x.toml: no se pudo leer: {}", io(.source))]
        struct Read {
            source: io::Error,
        }
        let err = anyhow::Error::new(Read {
            source: io::Error::from(io::ErrorKind::NotFound),
        });
        assert_eq!(chain(err.as_ref()), "x.toml: no se pudo leer: no existe");
        let err = anyhow::Error::new(io::Error::from(io::ErrorKind::PermissionDenied))
            .context("no se pudo escribir x.db");
        assert_eq!(chain(err.as_ref()), "no se pudo escribir x.db: sin permiso");
    }

    struct PipeLike;

    impl io::Write for PipeLike {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn broken_pipes_are_found_through_wrappers() {
        let pipe =
            anyhow::Error::new(io::Error::from(io::ErrorKind::BrokenPipe)).context("escribiendo");
        assert!(is_broken_pipe(pipe.as_ref()));
        let other = anyhow::Error::new(io::Error::from(io::ErrorKind::NotFound));
        assert!(!is_broken_pipe(other.as_ref()));
        let json = serde_json::to_writer(PipeLike, &serde_json::json!({"a": 1})).unwrap_err();
        assert!(is_broken_pipe(&json));
    }

    #[test]
    fn serde_messages_are_spanish() {
        let check = |english: &str, spanish: &str| {
            assert_eq!(
                serde_message(english).as_deref(),
                Some(spanish),
                "{english}"
            );
        };
        check(
            "unknown field `foo`, expected one of `a`, `b`",
            "clave desconocida 'foo'; se admiten: a, b",
        );
        check(
            "unknown field `foo`, expected `a`",
            "clave desconocida 'foo'; se admiten: a",
        );
        check(
            "unknown field `foo`, there are no fields",
            "clave desconocida 'foo'",
        );
        check(
            "unknown variant `x`, expected one of `geojson`, `gpx`",
            "valor desconocido 'x'; se admiten: geojson, gpx",
        );
        check(
            "missing field `placa`",
            "falta la clave obligatoria 'placa'",
        );
        check(
            "invalid type: floating point `6.2`, expected u32",
            "tipo inválido: se recibió el número con decimales 6.2, se esperaba un entero no negativo",
        );
        check(
            "invalid type: string \"x\", expected f64",
            "tipo inválido: se recibió el texto \"x\", se esperaba un número",
        );
        check(
            "invalid type: integer `99999999999999999999999` as i128, expected u64",
            "tipo inválido: se recibió el entero 99999999999999999999999, se esperaba un entero no negativo",
        );
        check(
            "invalid value: integer `-3`, expected u64",
            "valor inválido: se recibió el entero -3, se esperaba un entero no negativo",
        );
        check(
            "invalid length 3, expected an array of length 2",
            "longitud inválida: 3 elementos, se esperaba una lista de 2 elementos",
        );
        check(
            "invalid type: map, expected a sequence",
            "tipo inválido: se recibió una tabla, se esperaba una lista",
        );
        assert_eq!(serde_message("'25:00' no es una hora"), None);
    }

    #[test]
    fn json_errors_are_spanish_with_their_place() {
        let err = serde_json::from_str::<serde_json::Value>("{\"a\": 1,}").unwrap_err();
        assert_eq!(json(&err), "línea 1, columna 9: coma de más al final");
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Route {
            nombre: String,
        }
        let err = serde_json::from_str::<Route>("{\"nombre\": 3}").unwrap_err();
        assert_eq!(
            json(&err),
            "línea 1, columna 12: tipo inválido: se recibió el entero 3, se esperaba un texto"
        );
    }
}
