//! A tool's arguments as questions: what each one is, how it is asked, how an answer becomes
//! JSON.
//!
//! Owns reading a tool's `inputSchema` (type, `enum`, `required`, `description`, `format`)
//! into [`Field`]s, required ones first, and checking an answer before anything is sent: a
//! choice by its number or its name, a date in any form the server's own parser takes
//! ([`crate::fleet::dates::parse`]: `AAAA-MM-DD`, `DD/MM/AAAA`, `hoy`, `ayer`, weekday
//! words), numbers, yes/no, lists. A refused answer says why and may carry the value it most
//! likely meant. It never guesses beyond the schema.

use serde_json::{Map, Value};

use crate::fleet::dates::{self, DateText};
use crate::fleet::text::{edit_distance, fold};

/// One argument of a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub required: bool,
    pub kind: Kind,
    pub description: Option<String>,
    /// The property's schema, for lists and the rest.
    schema: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Text,
    /// A day, checked with the server's date grammar.
    Date,
    /// One of the listed values (`enum`).
    Choice(Vec<Value>),
    Integer,
    Number,
    Boolean,
    List,
    Json,
}

/// Why an answer was not taken, and what it probably meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub message: String,
    pub suggestion: Option<String>,
}

impl Refusal {
    fn new(message: String) -> Refusal {
        Refusal {
            message,
            suggestion: None,
        }
    }
}

/// The fields of a tool's `inputSchema`, required first, each group in schema order.
pub fn fields(schema: &Value) -> Vec<Field> {
    let properties = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut fields: Vec<Field> = properties
        .iter()
        .map(|(name, property)| Field::new(name, property, required.contains(&name.as_str())))
        .collect();
    fields.sort_by_key(|f| !f.required);
    fields
}

/// `{anyOf: [{type: T, …}, {type: "null"}], description}` (how servers spell an optional
/// value in one type per schema) read as the `T` schema with the outer description.
fn without_null_branch(property: &Value) -> Value {
    let Some(branches) = property["anyOf"].as_array() else {
        return property.clone();
    };
    let mut typed = branches.iter().filter(|b| b["type"] != "null");
    let (Some(Value::Object(branch)), None) = (typed.next(), typed.next()) else {
        return property.clone();
    };
    let mut merged = branch.clone();
    if let Some(outer) = property.as_object() {
        for (key, value) in outer {
            if key != "anyOf" {
                merged.entry(key.clone()).or_insert_with(|| value.clone());
            }
        }
    }
    Value::Object(merged)
}

impl Field {
    fn new(name: &str, property: &Value, required: bool) -> Field {
        let property = &without_null_branch(property);
        let choices: Vec<Value> = property["enum"]
            .as_array()
            .map(|c| c.iter().filter(|v| !v.is_null()).cloned().collect())
            .unwrap_or_default();
        let kind = if !choices.is_empty() {
            Kind::Choice(choices)
        } else {
            match main_type(property) {
                "integer" => Kind::Integer,
                "number" => Kind::Number,
                "boolean" => Kind::Boolean,
                "array" => Kind::List,
                "object" => Kind::Json,
                _ if is_date(name, property) => Kind::Date,
                _ => Kind::Text,
            }
        };
        Field {
            name: name.to_owned(),
            required,
            kind,
            description: property["description"].as_str().map(str::to_owned),
            schema: property.clone(),
        }
    }

    /// What is shown before the prompt: the field, its kind, whether it can be skipped, its
    /// description, and numbered choices.
    pub fn intro(&self) -> Vec<String> {
        let kind = match &self.kind {
            Kind::Text => "texto",
            Kind::Date => "fecha: AAAA-MM-DD, DD/MM/AAAA, hoy, ayer, lunes…",
            Kind::Choice(_) => "elija un número",
            Kind::Integer => "entero",
            Kind::Number => "número",
            Kind::Boolean => "s/n",
            Kind::List => "lista separada por comas",
            Kind::Json => "JSON",
        };
        let need = if self.required {
            "obligatorio"
        } else {
            "opcional, Intro para omitir"
        };
        let mut line = format!("  {} ({kind}; {need})", self.name);
        if let Some(description) = &self.description {
            line.push_str(&format!(" — {description}"));
        }
        let mut lines = vec![line];
        if let Kind::Choice(choices) = &self.kind {
            lines.extend(
                choices
                    .iter()
                    .enumerate()
                    .map(|(i, c)| format!("    {}. {}", i + 1, shown(c))),
            );
        }
        lines
    }

    /// The prompt itself; a default is what Enter accepts.
    pub fn prompt(&self, default: Option<&str>) -> String {
        match (default, &self.kind) {
            (Some(value), _) => format!("  {} [{value}]: ", self.name),
            (None, Kind::Choice(choices)) => format!("  {} [1-{}]: ", self.name, choices.len()),
            (None, _) => format!("  {}: ", self.name),
        }
    }

    /// Turns a typed answer into the JSON the schema wants.
    pub fn convert(&self, answer: &str) -> Result<Value, Refusal> {
        let answer = answer.trim();
        match &self.kind {
            Kind::Choice(choices) => choose(answer, choices),
            Kind::Date => date(answer),
            _ => convert(answer, &self.schema).map_err(Refusal::new),
        }
    }
}

/// A choice by its number or its name (case and accents ignored); otherwise the nearest name
/// as a suggestion.
fn choose(answer: &str, choices: &[Value]) -> Result<Value, Refusal> {
    if let Ok(n) = answer.parse::<usize>()
        && (1..=choices.len()).contains(&n)
    {
        return Ok(choices[n - 1].clone());
    }
    let folded = fold(answer);
    if let Some(choice) = choices.iter().find(|c| fold(&shown(c)) == folded) {
        return Ok(choice.clone());
    }
    let nearest = choices
        .iter()
        .map(|c| {
            let name = fold(&shown(c));
            let distance = if !folded.is_empty() && name.contains(&folded) {
                0
            } else {
                edit_distance(&folded, &name)
            };
            (distance, shown(c))
        })
        .filter(|(d, _)| *d <= 3)
        .min_by_key(|(d, _)| *d);
    Err(Refusal {
        message: format!(
            "'{answer}' no es una de las opciones: escriba un número del 1 al {} o el nombre",
            choices.len()
        ),
        suggestion: nearest.map(|(_, name)| name),
    })
}

/// A date the server will take: a calendar date goes as `AAAA-MM-DD` (any server reads it);
/// a word goes as written, for the server to resolve against its own "today".
fn date(answer: &str) -> Result<Value, Refusal> {
    match dates::parse(answer) {
        Some(DateText::Day(day)) => Ok(Value::String(day.format("%Y-%m-%d").to_string())),
        Some(_) => Ok(Value::String(answer.to_owned())),
        None => Err(Refusal::new(match dates::missing_day(answer) {
            Some(missing) => missing,
            None => format!(
                "'{answer}' no es una fecha: escriba AAAA-MM-DD, DD/MM/AAAA, hoy, ayer, anteayer o un día de la semana"
            ),
        })),
    }
}

/// A property is a date when the schema says so (`format: date`) or its name does (`fecha`,
/// `fecha_inicio`…), as the fleet tools name them.
fn is_date(name: &str, property: &Value) -> bool {
    property["format"] == "date"
        || name == "fecha"
        || name.starts_with("fecha_")
        || name.ends_with("_fecha")
}

fn shown(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}

fn main_type(property: &Value) -> &str {
    match &property["type"] {
        Value::String(t) => t,
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string"),
        _ => "string",
    }
}

/// Turns a typed answer into the JSON a plain schema type wants.
fn convert(answer: &str, property: &Value) -> Result<Value, String> {
    match main_type(property) {
        "integer" => answer
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("'{answer}' no es un número entero")),
        "number" => answer
            .parse::<f64>()
            .map(Value::from)
            .map_err(|_| format!("'{answer}' no es un número")),
        "boolean" => match answer.to_lowercase().as_str() {
            "s" | "si" | "sí" | "true" | "1" => Ok(Value::Bool(true)),
            "n" | "no" | "false" | "0" => Ok(Value::Bool(false)),
            _ => Err(format!("'{answer}' no es s/n")),
        },
        "array" => {
            if answer.starts_with('[') {
                return serde_json::from_str(answer).map_err(|_| "JSON inválido".to_owned());
            }
            let item = &property["items"];
            answer
                .split(',')
                .map(|part| convert(part.trim(), item))
                .collect::<Result<Vec<Value>, String>>()
                .map(Value::Array)
        }
        "object" => serde_json::from_str::<Map<String, Value>>(answer)
            .map(Value::Object)
            .map_err(|_| "se esperaba un objeto JSON".to_owned()),
        _ => Ok(Value::String(answer.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn field(name: &str, property: Value) -> Field {
        Field::new(name, &property, true)
    }

    #[test]
    fn converts_answers_by_schema_type() {
        let int = json!({"type": ["integer", "null"]});
        assert_eq!(convert("30", &int), Ok(json!(30)));
        assert!(convert("treinta", &int).is_err());
        let numbers = json!({"type": "array", "items": {"type": "number"}});
        assert_eq!(convert("1, 2.5", &numbers), Ok(json!([1.0, 2.5])));
        assert_eq!(convert("[1, 2.5]", &numbers), Ok(json!([1, 2.5])));
        assert_eq!(
            convert("P-123BCD", &json!({"type": "string"})),
            Ok(json!("P-123BCD"))
        );
        assert_eq!(convert("sí", &json!({"type": "boolean"})), Ok(json!(true)));
    }

    #[test]
    fn optional_values_spelled_with_any_of_keep_their_kind() {
        let tipo = field(
            "tipo",
            json!({"description": "Tipo", "anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}]}),
        );
        assert_eq!(tipo.kind, Kind::Choice(vec![json!("a"), json!("b")]));
        assert_eq!(tipo.description.as_deref(), Some("Tipo"));
        let minutos = field(
            "minutos",
            json!({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]}),
        );
        assert_eq!(minutos.kind, Kind::Integer);
        assert_eq!(convert("30", &minutos.schema), Ok(json!(30)));
    }

    #[test]
    fn required_fields_come_first() {
        let schema = json!({
            "properties": {
                "tipo": {"anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}]},
                "fecha_inicio": {"type": "string"},
                "fecha_fin": {"type": "string"},
            },
            "required": ["fecha_inicio", "fecha_fin"]
        });
        let fields = fields(&schema);
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["fecha_inicio", "fecha_fin", "tipo"]);
        assert_eq!(fields[0].kind, Kind::Date);
        assert_eq!(fields[2].kind, Kind::Choice(vec![json!("a"), json!("b")]));
        assert!(!fields[2].required);
    }

    #[test]
    fn choices_by_number_or_name_and_near_misses_suggested() {
        let tipo = field(
            "tipo",
            json!({"enum": ["exceso_velocidad", "parada_prolongada", "perdida_senal", null]}),
        );
        assert_eq!(
            tipo.intro(),
            [
                "  tipo (elija un número; obligatorio)",
                "    1. exceso_velocidad",
                "    2. parada_prolongada",
                "    3. perdida_senal",
            ]
        );
        assert_eq!(tipo.prompt(None), "  tipo [1-3]: ");
        assert_eq!(tipo.convert(" 2 "), Ok(json!("parada_prolongada")));
        assert_eq!(tipo.convert("Perdida_Señal"), Ok(json!("perdida_senal")));
        let check = |answer: &str, suggestion: Option<&str>| {
            let refusal = tipo.convert(answer).unwrap_err();
            assert_eq!(
                refusal.message,
                format!(
                    "'{answer}' no es una de las opciones: escriba un número del 1 al 3 o el nombre"
                )
            );
            assert_eq!(refusal.suggestion.as_deref(), suggestion, "{answer}");
        };
        check("velocidad", Some("exceso_velocidad"));
        check("parada_prolongda", Some("parada_prolongada"));
        check("4", None);
        check("0", None);
        check("geocerca", None);
    }

    #[test]
    fn dates_take_every_form_the_server_takes() {
        let fecha = field("fecha", json!({"type": "string"}));
        assert_eq!(fecha.convert("19/08/2026"), Ok(json!("2026-08-19")));
        assert_eq!(fecha.convert("2026-08-19"), Ok(json!("2026-08-19")));
        assert_eq!(fecha.convert(" Ayer "), Ok(json!("Ayer")));
        assert_eq!(fecha.convert("el miércoles"), Ok(json!("el miércoles")));
        for wrong in ["32/02/2026", "19.08.2026", "mañana"] {
            let refusal = fecha.convert(wrong).unwrap_err();
            assert!(refusal.message.contains("DD/MM/AAAA"), "{wrong}");
        }
        let refusal = fecha.convert("31/02/2026").unwrap_err();
        assert_eq!(
            refusal.message,
            "el día '31/02/2026' no existe: febrero de 2026 tiene 28 días"
        );
        let dated = field("dia", json!({"type": "string", "format": "date"}));
        assert_eq!(dated.kind, Kind::Date);
        assert_eq!(field("placa", json!({"type": "string"})).kind, Kind::Text);
    }
}
