//! Reading a refusal: which argument it is about, and what the server suggests instead.
//!
//! Owns one rule over the server's own words, so it works with any server that writes its
//! errors the way `flota servir` does: the argument is the one whose value the message quotes
//! (`No existe la placa 'P-123BCE'`), else the one it names (`el argumento 'fecha' …`); the
//! suggestions are what follows "¿Quiso decir" (`¿Quiso decir P-123BCD o P-128BCD?`).

use serde_json::{Map, Value};

/// An argument to ask again, with the values the server offered (best first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Correction {
    pub field: String,
    pub suggestions: Vec<String>,
}

/// The correction a refusal `message` asks for, given the `arguments` that were sent and the
/// names of all the tool's `fields`; `None` when the message points at no argument.
pub fn correction(
    message: &str,
    arguments: &Map<String, Value>,
    fields: &[&str],
) -> Option<Correction> {
    let quotes = |text: &str| {
        [
            format!("'{text}'"),
            format!("«{text}»"),
            format!("\"{text}\""),
        ]
        .iter()
        .any(|q| message.contains(q.as_str()))
    };
    let by_value = arguments.iter().find_map(|(name, value)| {
        let text = value.as_str().filter(|t| !t.is_empty())?;
        quotes(text).then(|| name.clone())
    });
    let field = by_value.or_else(|| {
        fields
            .iter()
            .find(|name| quotes(name))
            .map(|name| (*name).to_owned())
    })?;
    Some(Correction {
        field,
        suggestions: offered(message),
    })
}

/// The values after "¿Quiso decir", split on " o " and commas, quotes removed.
fn offered(message: &str) -> Vec<String> {
    const MARKERS: [&str; 2] = ["¿Quiso decir", "¿quiso decir"];
    let Some((start, marker)) = MARKERS
        .iter()
        .find_map(|m| message.find(m).map(|start| (start, m)))
    else {
        return Vec::new();
    };
    let rest = &message[start + marker.len()..];
    let end = rest.find('?').unwrap_or(rest.len());
    rest[..end]
        .split(" o ")
        .flat_map(|part| part.split(','))
        .map(|part| part.trim().trim_matches(['\'', '"', '«', '»']).trim())
        .filter(|part| !part.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(message: &str, arguments: Value, expected: Option<(&str, &[&str])>) {
        let fields = ["placa", "nombre_geocerca", "fecha"];
        let got = correction(message, arguments.as_object().unwrap(), &fields);
        let expected = expected.map(|(field, suggestions)| Correction {
            field: field.to_owned(),
            suggestions: suggestions.iter().map(|s| (*s).to_owned()).collect(),
        });
        assert_eq!(got, expected, "{message}");
    }

    #[test]
    fn finds_the_argument_and_the_suggestions() {
        let sent = json!({"placa": "P-123BCE", "nombre_geocerca": "cedis", "fecha": "ayer"});
        check(
            "No existe la placa 'P-123BCE'. ¿Quiso decir P-123BCD?",
            sent.clone(),
            Some(("placa", &["P-123BCD"])),
        );
        check(
            "No existe la placa 'P-123BCE'. ¿Quiso decir P-123BCD o P-128BCE?",
            sent.clone(),
            Some(("placa", &["P-123BCD", "P-128BCE"])),
        );
        check(
            "No existe la geocerca 'cedis'. ¿quiso decir «CEDIS Zona 12», Bodega Mixco? Las \
             geocercas son: …",
            sent.clone(),
            Some(("nombre_geocerca", &["CEDIS Zona 12", "Bodega Mixco"])),
        );
        check(
            "La fecha 2026-08-25 ('fecha') es posterior a hoy",
            json!({"placa": "P-1", "fecha": "2026-08-25"}),
            Some(("fecha", &[])),
        );
        check(
            "posicion_actual: falta el argumento obligatorio 'placa'",
            json!({}),
            Some(("placa", &[])),
        );
        check("La base de datos no existe", sent, None);
    }
}
