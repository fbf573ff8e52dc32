//! Answer first: a tool result as a person reads it, in Spanish.
//!
//! Owns turning a `tools/call` result's text blocks into short lines: prose is shown as it
//! came; a JSON object becomes aligned "Etiqueta: valor" lines (keys become Spanish labels
//! with their accents and units, dates read DD/MM/AAAA, booleans sí/no), and its lists of
//! objects become compact tables. It reads no schema and knows no tool, so it serves any
//! server; image blocks are not its business (see `images`). Pure: lines in, lines out.

use chrono::{DateTime, NaiveDate};
use serde_json::{Map, Value};

use super::printer::Style;

/// Rows shown per table; the rest are counted.
const MAX_ROWS: usize = 30;
/// Characters shown per table cell.
const MAX_CELL: usize = 36;
/// Widest label that still aligns the values after it.
const MAX_LABEL: usize = 26;

/// Keys addressed to a chat model rather than to the person reading.
const HIDDEN: [&str; 1] = ["nota_para_el_asistente"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub style: Style,
    pub text: String,
}

impl Line {
    fn new(style: Style, text: impl Into<String>) -> Line {
        Line {
            style,
            text: text.into(),
        }
    }
}

/// The lines for a `tools/call` result: its text blocks, rendered.
pub fn result(result: &Value) -> Vec<Line> {
    let failed = result["isError"] == true;
    let mut lines = Vec::new();
    for block in result["content"].as_array().into_iter().flatten() {
        let Some(text) = block["text"].as_str().filter(|_| block["type"] == "text") else {
            continue;
        };
        if failed {
            lines.extend(
                text.lines()
                    .map(|l| Line::new(Style::Bad, format!("✗ {l}"))),
            );
            continue;
        }
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => lines.extend(object(&map, "")),
            Ok(Value::Array(items)) if items.iter().all(Value::is_object) => {
                lines.extend(table("Resultados", &items));
            }
            _ => lines.extend(text.lines().map(|l| Line::new(Style::Plain, l))),
        }
    }
    lines
}

/// An object: its scalar fields aligned first, then nested objects and tables.
fn object(map: &Map<String, Value>, indent: &str) -> Vec<Line> {
    let mut fields: Vec<(String, String, Style)> = Vec::new();
    let mut after: Vec<Line> = Vec::new();
    let coordinates = match (map.get("lat"), map.get("lon")) {
        (Some(Value::Number(lat)), Some(Value::Number(lon))) => Some(format!("{lat}, {lon}")),
        _ => None,
    };
    for (key, value) in map {
        if HIDDEN.contains(&key.as_str()) || value.is_null() {
            continue;
        }
        if let Some(pair) = coordinates
            .as_ref()
            .filter(|_| key == "lat" || key == "lon")
        {
            if key == "lat" {
                fields.push(("Coordenadas".into(), pair.clone(), Style::Plain));
            }
            continue;
        }
        let style = if key == "aviso" {
            Style::Warning
        } else {
            Style::Plain
        };
        match value {
            Value::Array(items) if items.is_empty() => {
                fields.push((label(key), "—".into(), style));
            }
            Value::Array(items) if items.iter().all(Value::is_object) => {
                after.push(Line::new(Style::Plain, ""));
                after.extend(
                    table(&label(key), items)
                        .into_iter()
                        .map(|l| Line::new(l.style, format!("{indent}{}", l.text))),
                );
            }
            Value::Object(inner) if !inner.values().all(is_scalar) => {
                after.push(Line::new(Style::Plain, format!("{indent}{}:", label(key))));
                after.extend(object(inner, &format!("{indent}  ")));
            }
            other => fields.push((label(key), cell(other), style)),
        }
    }
    let width = fields
        .iter()
        .map(|(l, _, _)| l.chars().count())
        .filter(|w| *w <= MAX_LABEL)
        .max()
        .unwrap_or(0);
    let mut lines: Vec<Line> = fields
        .into_iter()
        .map(|(label, value, style)| {
            let pad = width.saturating_sub(label.chars().count());
            Line::new(
                style,
                format!("{indent}{label}:{} {value}", " ".repeat(pad)),
            )
        })
        .collect();
    lines.extend(after);
    lines
}

/// A list of objects as a table: one column per key that says something in some row (not
/// null, not a flag that is off; coordinates left out: they do not fit a line), numbers
/// right-aligned.
fn table(title: &str, items: &[Value]) -> Vec<Line> {
    let rows: Vec<&Map<String, Value>> = items.iter().filter_map(Value::as_object).collect();
    let mut keys: Vec<&String> = Vec::new();
    for row in &rows {
        for (key, value) in *row {
            let shown = !matches!(value, Value::Null | Value::Bool(false))
                && !HIDDEN.contains(&key.as_str())
                && key != "lat"
                && key != "lon";
            if shown && !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    // Keep the columns in the order of the first row, whichever row revealed them.
    let order = |key: &String| {
        rows.iter()
            .find_map(|r| r.keys().position(|k| k == key))
            .unwrap_or(usize::MAX)
    };
    keys.sort_by_key(|k| order(k));
    let mut lines = vec![Line::new(
        Style::Heading,
        format!("{title} ({}):", rows.len()),
    )];
    let header: Vec<String> = keys.iter().map(|k| column_label(k)).collect();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .take(MAX_ROWS)
        .map(|row| {
            keys.iter()
                .map(|k| row.get(*k).map_or(String::new(), |v| shorten(&cell(v))))
                .collect()
        })
        .collect();
    let numeric: Vec<bool> = keys
        .iter()
        .map(|k| {
            rows.iter()
                .filter_map(|r| r.get(*k).filter(|v| !v.is_null()))
                .all(Value::is_number)
        })
        .collect();
    let widths: Vec<usize> = (0..keys.len())
        .map(|i| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let format_row = |row: &[String]| {
        let parts: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let pad = " ".repeat(widths[i].saturating_sub(text.chars().count()));
                if numeric[i] {
                    format!("{pad}{text}")
                } else {
                    format!("{text}{pad}")
                }
            })
            .collect();
        format!("  {}", parts.join("  ").trim_end())
    };
    lines.push(Line::new(Style::Dim, format_row(&header)));
    lines.extend(cells.iter().map(|r| Line::new(Style::Plain, format_row(r))));
    if rows.len() > MAX_ROWS {
        lines.push(Line::new(
            Style::Dim,
            format!("  … y {} más", rows.len() - MAX_ROWS),
        ));
    }
    lines
}

fn is_scalar(value: &Value) -> bool {
    !value.is_array() && !value.is_object()
}

/// A value in one short piece of text.
fn cell(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::Bool(true) => "sí".into(),
        Value::Bool(false) => "no".into(),
        Value::Number(number) => match number.as_f64() {
            Some(x) if number.is_f64() && x.fract() == 0.0 && x.abs() < 1e15 => {
                format!("{x:.0}")
            }
            _ => number.to_string(),
        },
        Value::String(text) => when(text).unwrap_or_else(|| text.clone()),
        Value::Array(items) if items.iter().all(is_scalar) => {
            items.iter().map(cell).collect::<Vec<_>>().join(", ")
        }
        Value::Array(items) => format!("{} elementos", items.len()),
        Value::Object(map) => map
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| format!("{} {}", label(k).to_lowercase(), cell(v)))
            .collect::<Vec<_>>()
            .join(" · "),
    }
}

/// ISO dates and instants as written locally: `18/08/2026`, `18/08/2026 14:07` (the
/// instant's own offset, which is the fleet's local time).
fn when(text: &str) -> Option<String> {
    if text.len() == 10 {
        return NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .ok()
            .map(|d| d.format("%d/%m/%Y").to_string());
    }
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.format("%d/%m/%Y %H:%M").to_string())
}

fn shorten(text: &str) -> String {
    if text.chars().count() <= MAX_CELL {
        return text.to_owned();
    }
    let kept: String = text.chars().take(MAX_CELL - 1).collect();
    format!("{kept}…")
}

/// Spanish words that lose their accent or ñ in a JSON key.
const ACCENTED: [(&str, &str); 30] = [
    ("ultimo", "último"),
    ("ultima", "última"),
    ("ultimos", "últimos"),
    ("direccion", "dirección"),
    ("ubicacion", "ubicación"),
    ("posicion", "posición"),
    ("duracion", "duración"),
    ("informacion", "información"),
    ("desviacion", "desviación"),
    ("odometro", "odómetro"),
    ("senal", "señal"),
    ("kilometros", "kilómetros"),
    ("minimo", "mínimo"),
    ("minima", "mínima"),
    ("minimos", "mínimos"),
    ("maximo", "máximo"),
    ("maxima", "máxima"),
    ("dia", "día"),
    ("dias", "días"),
    ("perdida", "pérdida"),
    ("perdidas", "pérdidas"),
    ("numero", "número"),
    ("vehiculo", "vehículo"),
    ("vehiculos", "vehículos"),
    ("estadisticas", "estadísticas"),
    ("entro", "entró"),
    ("salio", "salió"),
    ("mas", "más"),
    ("camion", "camión"),
    ("transito", "tránsito"),
];

/// Units that end a key: `velocidad_maxima_kmh` → `Velocidad máxima (km/h)`.
const UNITS: [(&str, &str); 7] = [
    ("kmh", "km/h"),
    ("km", "km"),
    ("min", "min"),
    ("m", "m"),
    ("s", "s"),
    ("px", "px"),
    ("kb", "KB"),
];

/// A JSON key as a Spanish label.
pub fn label(key: &str) -> String {
    let mut words: Vec<&str> = key.split('_').filter(|w| !w.is_empty()).collect();
    let unit = match words.as_slice() {
        [_, .., last] => UNITS.iter().find(|(k, _)| k == last).map(|(_, u)| *u),
        _ => None,
    };
    if unit.is_some() {
        words.pop();
    }
    let mut text = words
        .iter()
        .map(|w| {
            ACCENTED
                .iter()
                .find(|(plain, _)| plain == w)
                .map_or(*w, |(_, accented)| *accented)
        })
        .collect::<Vec<_>>()
        .join(" ");
    if let Some(unit) = unit {
        text.push_str(&format!(" ({unit})"));
    }
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// A column header: the label, shortened where tables grow wide.
fn column_label(key: &str) -> String {
    label(key)
        .replace("Minutos", "Min")
        .replace("minutos", "min")
        .replace("Velocidad", "Vel.")
        .replace("velocidad", "vel.")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn texts(value: &Value) -> Vec<String> {
        result(value).into_iter().map(|l| l.text).collect()
    }

    fn text_result(inner: &Value) -> Value {
        json!({"content": [{"type": "text", "text": inner.to_string()}]})
    }

    #[test]
    fn labels_are_spanish_with_units() {
        let check = |key: &str, expected: &str| assert_eq!(label(key), expected, "{key}");
        check("placa", "Placa");
        check("velocidad_maxima_kmh", "Velocidad máxima (km/h)");
        check(
            "minutos_desde_ultimo_reporte",
            "Minutos desde último reporte",
        );
        check("duracion_jornada_min", "Duración jornada (min)");
        check("perdidas_de_senal", "Pérdidas de señal");
        check("total_flota_km", "Total flota (km)");
        check("km", "Km");
        check("entro", "Entró");
    }

    #[test]
    fn an_object_reads_as_aligned_fields() {
        let answer = json!({
            "placa": "P-123BCD",
            "estado": "detenida con motor encendido",
            "ultimo_reporte": "2026-08-19T15:00:00-06:00",
            "fecha": "2026-08-18",
            "lat": 14.620905,
            "lon": -90.515964,
            "minutos_detenida": 10.0,
            "odometro_km": 20204.5,
            "entro": true,
            "detenida_desde": null,
            "por_estado": {"motor_encendido": 1, "sin_senal": 0},
            "geocercas": [],
            "nota_para_el_asistente": "Dígale al usuario…",
            "aviso": "datos viejos"
        });
        assert_eq!(
            texts(&text_result(&answer)),
            [
                "Placa:            P-123BCD",
                "Estado:           detenida con motor encendido",
                "Último reporte:   19/08/2026 15:00",
                "Fecha:            18/08/2026",
                "Coordenadas:      14.620905, -90.515964",
                "Minutos detenida: 10",
                "Odómetro (km):    20204.5",
                "Entró:            sí",
                "Por estado:       motor encendido 1 · sin señal 0",
                "Geocercas:        —",
                "Aviso:            datos viejos",
            ]
        );
        let styles: Vec<Style> = result(&text_result(&answer))
            .into_iter()
            .map(|l| l.style)
            .collect();
        assert_eq!(styles.last(), Some(&Style::Warning));
    }

    #[test]
    fn lists_become_compact_tables() {
        let answer = json!({
            "total": 3,
            "unidades": [
                {"placa": "P-456DEF", "minutos_detenida": 52.1, "lat": 14.5, "lon": -90.5,
                 "previa": false, "ubicacion": "en CEDIS Zona 12", "nota": null,
                 "prolongada": false},
                {"placa": "P-789GHJ", "minutos_detenida": 118.25, "lat": 14.5, "lon": -90.5,
                 "previa": false, "prolongada": true,
                 "ubicacion": "a 30 m de la parada san_miguel_petapa, junto a la gasolinera"},
            ]
        });
        assert_eq!(
            texts(&text_result(&answer)),
            [
                "Total: 3",
                "",
                "Unidades (2):",
                "  Placa     Min detenida  Ubicación                             Prolongada",
                "  P-456DEF          52.1  en CEDIS Zona 12                      no",
                "  P-789GHJ        118.25  a 30 m de la parada san_miguel_peta…  sí",
            ]
        );
        let many: Vec<Value> = (0..MAX_ROWS + 2).map(|i| json!({"n": i})).collect();
        let lines = texts(&text_result(&json!({"filas": many})));
        assert_eq!(lines.last().map(String::as_str), Some("  … y 2 más"));
        assert_eq!(lines.len(), 1 + 1 + 1 + MAX_ROWS + 1);
    }

    #[test]
    fn prose_and_errors_stay_as_written() {
        let prose = json!({"content": [{"type": "text", "text": "Hola\nmundo"}]});
        assert_eq!(texts(&prose), ["Hola", "mundo"]);
        let failed = json!({"content": [{"type": "text", "text": "No existe la placa 'X'."}],
                            "isError": true});
        let lines = result(&failed);
        assert_eq!(lines[0].text, "✗ No existe la placa 'X'.");
        assert_eq!(lines[0].style, Style::Bad);
        let image =
            json!({"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]});
        assert!(result(&image).is_empty());
    }
}
