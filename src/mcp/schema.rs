//! JSON Schemas for tool arguments and results: derived from Rust types, and checked.
//!
//! Schemas come from `schemars` (never typed by hand), inlined so no `$ref` reaches a client.
//! The validator understands exactly the keyword subset those derived schemas use and says so:
//! [`unsupported_keywords`] lists anything else, and a test keeps every registered schema
//! inside the subset. Messages are Spanish and name the offending argument, because they go
//! back to the model, which must be able to correct its call.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// The input schema of a tool's parameter type: an object that rejects unknown arguments.
pub fn input_schema_for<T: JsonSchema>() -> Value {
    let mut schema = root_schema_for::<T>(SchemaSettings::draft2020_12().for_deserialize());
    if let Some(object) = schema.as_object_mut() {
        object.insert("type".into(), Value::String("object".into()));
        object.insert("additionalProperties".into(), Value::Bool(false));
        object
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    schema
}

/// The output schema of a tool's result type (what `structuredContent` must satisfy).
pub fn output_schema_for<T: JsonSchema>() -> Value {
    root_schema_for::<T>(SchemaSettings::draft2020_12().for_serialize())
}

fn root_schema_for<T: JsonSchema>(settings: SchemaSettings) -> Value {
    let settings = settings.with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let mut value = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Some(object) = value.as_object_mut() {
        // The title would be the Rust type name: English and meaningless to a model.
        object.remove("title");
        object.remove("$defs");
    }
    standard_formats(&mut value);
    single_types(&mut value);
    value
}

/// Keywords that describe a value without constraining it: they stay outside an `anyOf`.
const DESCRIBING: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Rewrites `type: [T, "null"]` (schemars' spelling of `Option<T>`) as
/// `anyOf: [{type: T, …its constraints}, {type: "null"}]`: the same values, but every
/// schema has one `type`, which clients mapping schemas onto single-type dialects (Gemini's
/// OpenAPI subset, the Inspector's `--strict` check) accept. An `enum` keeps its non-null
/// values in the `T` branch.
fn single_types(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            for child in object.values_mut() {
                single_types(child);
            }
            let Some(Value::Array(types)) = object.get("type") else {
                return;
            };
            let names: Vec<String> = types
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            object.remove("type");
            let (outer, constraints): (Map<String, Value>, Map<String, Value>) =
                std::mem::take(object)
                    .into_iter()
                    .partition(|(key, _)| DESCRIBING.contains(&key.as_str()));
            let branches: Vec<Value> = names
                .iter()
                .map(|name| {
                    let mut branch = Map::new();
                    branch.insert("type".into(), Value::String(name.clone()));
                    if name != "null" {
                        for (key, value) in &constraints {
                            branch.insert(key.clone(), value.clone());
                        }
                        if let Some(Value::Array(values)) = branch.get_mut("enum") {
                            values.retain(|v| !v.is_null());
                        }
                    }
                    Value::Object(branch)
                })
                .collect();
            *object = outer;
            object.insert("anyOf".into(), Value::Array(branches));
        }
        Value::Array(items) => items.iter_mut().for_each(single_types),
        _ => {}
    }
}

/// Replaces schemars' OpenAPI-style numeric formats (`uint`, `int32`, `double`…), which JSON
/// Schema does not define and strict validators such as Ajv warn about, with the bounds they
/// stand for.
fn standard_formats(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            let bounds = match object.get("format").and_then(Value::as_str) {
                Some("uint8") => Some((Some(0.0), Some(f64::from(u8::MAX)))),
                Some("uint16") => Some((Some(0.0), Some(f64::from(u16::MAX)))),
                Some("uint32") => Some((Some(0.0), Some(f64::from(u32::MAX)))),
                Some("uint" | "uint64") => Some((Some(0.0), None)),
                Some("int8") => Some((Some(f64::from(i8::MIN)), Some(f64::from(i8::MAX)))),
                Some("int16") => Some((Some(f64::from(i16::MIN)), Some(f64::from(i16::MAX)))),
                Some("int32") => Some((Some(f64::from(i32::MIN)), Some(f64::from(i32::MAX)))),
                Some("int" | "int64" | "float" | "double") => Some((None, None)),
                _ => None,
            };
            if let Some((low, high)) = bounds {
                object.remove("format");
                for (keyword, bound) in [("minimum", low), ("maximum", high)] {
                    if let Some(bound) = bound
                        && !object.contains_key(keyword)
                    {
                        object.insert(keyword.into(), bound_value(bound));
                    }
                }
            }
            for child in object.values_mut() {
                standard_formats(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(standard_formats),
        _ => {}
    }
}

/// Integral bounds as JSON integers (`0`, not `0.0`).
fn bound_value(bound: f64) -> Value {
    if bound.fract() == 0.0 && bound.abs() < 9.0e15 {
        Value::from(bound as i64)
    } else {
        Value::from(bound)
    }
}

/// Keywords that only annotate; the validator may ignore them.
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "format",
];

/// Keywords the validator enforces.
const ASSERTIONS: &[&str] = &[
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "anyOf",
    "oneOf",
    "allOf",
];

/// Every keyword in `schema` (recursively) that the validator does not understand.
pub fn unsupported_keywords(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    collect_unsupported(schema, &mut found);
    found
}

fn collect_unsupported(schema: &Value, found: &mut Vec<String>) {
    let Some(object) = schema.as_object() else {
        return;
    };
    for (key, value) in object {
        if !ANNOTATIONS.contains(&key.as_str()) && !ASSERTIONS.contains(&key.as_str()) {
            found.push(key.clone());
        }
        match key.as_str() {
            "properties" => value
                .as_object()
                .into_iter()
                .flat_map(|p| p.values())
                .for_each(|s| collect_unsupported(s, found)),
            "items" | "additionalProperties" => collect_unsupported(value, found),
            "anyOf" | "oneOf" | "allOf" => value
                .as_array()
                .into_iter()
                .flatten()
                .for_each(|s| collect_unsupported(s, found)),
            _ => {}
        }
    }
}

/// Why a value does not satisfy a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Path of the offending value: `nombre`, `numeros[2]`; empty for the object itself.
    pub path: String,
    /// Spanish sentence without the path.
    pub problem: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.problem)
        } else {
            write!(f, "el argumento '{}' {}", self.path, self.problem)
        }
    }
}

/// Checks `value` against `schema`; the first violation found is returned.
pub fn validate(schema: &Value, value: &Value) -> Result<(), Violation> {
    check(schema, value, "")
}

fn violation(path: &str, problem: impl Into<String>) -> Violation {
    Violation {
        path: path.to_owned(),
        problem: problem.into(),
    }
}

fn check(schema: &Value, value: &Value, path: &str) -> Result<(), Violation> {
    let schema = match schema {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return Err(violation(path, "no está permitido")),
        Value::Object(object) => object,
        _ => return Ok(()),
    };
    if let Some(types) = schema.get("type") {
        check_type(types, value, path)?;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        // An optional enum also allows null; the model needs the real choices only.
        let list: Vec<String> = allowed.iter().filter(|v| !v.is_null()).map(show).collect();
        return Err(violation(
            path,
            format!(
                "debe ser uno de: {}; se recibió {}",
                list.join(", "),
                show(value)
            ),
        ));
    }
    if let Some(constant) = schema.get("const")
        && constant != value
    {
        return Err(violation(
            path,
            format!("debe valer {}; se recibió {}", show(constant), show(value)),
        ));
    }
    check_combinators(schema, value, path)?;
    match value {
        Value::Object(object) => check_object(schema, object, path),
        Value::Array(items) => check_array(schema, items, path),
        Value::Number(_) => check_number(schema, value, path),
        Value::String(text) => check_string(schema, text, path),
        _ => Ok(()),
    }
}

fn check_type(types: &Value, value: &Value, path: &str) -> Result<(), Violation> {
    let names: Vec<&str> = match types {
        Value::String(name) => vec![name.as_str()],
        Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
        _ => return Ok(()),
    };
    if names.iter().any(|name| has_type(value, name)) {
        return Ok(());
    }
    let wanted: Vec<&str> = names.iter().map(|name| spanish_type(name)).collect();
    Err(violation(
        path,
        format!(
            "debe ser {}; se recibió {} ({})",
            wanted.join(" o "),
            spanish_type(type_of(value)),
            show(value)
        ),
    ))
}

fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        other => type_of(value) == other,
    }
}

fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn spanish_type(name: &str) -> &'static str {
    match name {
        "null" => "null",
        "boolean" => "un booleano (true/false)",
        "integer" => "un número entero",
        "number" => "un número",
        "string" => "un texto",
        "array" => "una lista",
        "object" => "un objeto",
        _ => "de otro tipo",
    }
}

/// A short rendering of a value for messages; long values are cut.
fn show(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        let cut: String = text.chars().take(57).collect();
        format!("{cut}…")
    } else {
        text
    }
}

fn check_combinators(
    schema: &Map<String, Value>,
    value: &Value,
    path: &str,
) -> Result<(), Violation> {
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        for sub in all {
            check(sub, value, path)?;
        }
    }
    for key in ["anyOf", "oneOf"] {
        let Some(branches) = schema.get(key).and_then(Value::as_array) else {
            continue;
        };
        let results: Vec<Result<(), Violation>> =
            branches.iter().map(|b| check(b, value, path)).collect();
        let passing = results.iter().filter(|r| r.is_ok()).count();
        if passing == 0 {
            // A value of none of the branches' types: say which types (`entero o null`).
            let branch_types: Option<Vec<Value>> =
                branches.iter().map(|b| b.get("type").cloned()).collect();
            if let Some(names) = branch_types
                && names.iter().all(Value::is_string)
            {
                check_type(&Value::Array(names), value, path)?;
            }
            // `Option<T>` derives to anyOf [T, null]: report why the value is not a T.
            let non_null: Vec<&Result<(), Violation>> = branches
                .iter()
                .zip(&results)
                .filter(|(b, _)| b.get("type") != Some(&Value::String("null".into())))
                .map(|(_, r)| r)
                .collect();
            if let [Err(err)] = non_null.as_slice() {
                return Err(err.clone());
            }
            return Err(violation(
                path,
                "no coincide con ninguna de las formas admitidas",
            ));
        }
        if key == "oneOf" && passing > 1 {
            return Err(violation(path, "coincide con más de una forma; es ambiguo"));
        }
    }
    Ok(())
}

fn check_object(
    schema: &Map<String, Value>,
    object: &Map<String, Value>,
    path: &str,
) -> Result<(), Violation> {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        let missing: Vec<&str> = required
            .iter()
            .filter_map(Value::as_str)
            .filter(|name| !object.contains_key(*name))
            .collect();
        match missing.as_slice() {
            [] => {}
            [one] => {
                return Err(violation(
                    path,
                    format!("falta el argumento obligatorio '{one}'"),
                ));
            }
            many => {
                return Err(violation(
                    path,
                    format!("faltan los argumentos obligatorios: {}", many.join(", ")),
                ));
            }
        }
    }
    for (name, value) in object {
        let child = join(path, name);
        match properties.and_then(|p| p.get(name)) {
            Some(sub) => check(sub, value, &child)?,
            None => match schema.get("additionalProperties") {
                Some(Value::Bool(false)) => {
                    let known: Vec<&str> = properties
                        .map(|p| p.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    let hint = if known.is_empty() {
                        "esta herramienta no recibe argumentos".to_owned()
                    } else {
                        format!("los admitidos son: {}", known.join(", "))
                    };
                    return Err(violation(
                        path,
                        format!("argumento desconocido '{name}'; {hint}"),
                    ));
                }
                Some(sub) => check(sub, value, &child)?,
                None => {}
            },
        }
    }
    Ok(())
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

fn check_array(schema: &Map<String, Value>, items: &[Value], path: &str) -> Result<(), Violation> {
    let len = items.len() as u64;
    if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
        && len < min
    {
        let problem = if min == 1 {
            "no puede ser una lista vacía".to_owned()
        } else {
            format!("debe tener al menos {min} elementos; tiene {len}")
        };
        return Err(violation(path, problem));
    }
    if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
        && len > max
    {
        return Err(violation(
            path,
            format!("admite como máximo {max} elementos; tiene {len}"),
        ));
    }
    if let Some(item_schema) = schema.get("items") {
        for (index, item) in items.iter().enumerate() {
            check(item_schema, item, &format!("{path}[{index}]"))?;
        }
    }
    Ok(())
}

fn check_number(schema: &Map<String, Value>, value: &Value, path: &str) -> Result<(), Violation> {
    let Some(x) = value.as_f64() else {
        return Ok(());
    };
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    let shown = show(value);
    if let Some(min) = bound("minimum").filter(|min| x < *min) {
        return Err(violation(
            path,
            format!("debe ser ≥ {min}; se recibió {shown}"),
        ));
    }
    if let Some(max) = bound("maximum").filter(|max| x > *max) {
        return Err(violation(
            path,
            format!("debe ser ≤ {max}; se recibió {shown}"),
        ));
    }
    if let Some(min) = bound("exclusiveMinimum").filter(|min| x <= *min) {
        return Err(violation(
            path,
            format!("debe ser > {min}; se recibió {shown}"),
        ));
    }
    if let Some(max) = bound("exclusiveMaximum").filter(|max| x >= *max) {
        return Err(violation(
            path,
            format!("debe ser < {max}; se recibió {shown}"),
        ));
    }
    Ok(())
}

fn check_string(schema: &Map<String, Value>, text: &str, path: &str) -> Result<(), Violation> {
    let len = text.chars().count() as u64;
    if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
        && len < min
    {
        let problem = if min == 1 {
            "no puede estar vacío".to_owned()
        } else {
            format!("debe tener al menos {min} caracteres")
        };
        return Err(violation(path, problem));
    }
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
        && len > max
    {
        return Err(violation(
            path,
            format!("admite como máximo {max} caracteres; tiene {len}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    /// Every `type` in `schema`, recursively.
    fn types(schema: &Value, found: &mut Vec<Value>) {
        match schema {
            Value::Object(object) => {
                if let Some(t) = object.get("type") {
                    found.push(t.clone());
                }
                object.values().for_each(|v| types(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| types(v, found)),
            _ => {}
        }
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    enum Clase {
        #[serde(rename = "uno")]
        Uno,
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Optional {
        /// Minutos
        #[schemars(range(min = 0, max = 10))]
        minutos: Option<u32>,
        clase: Option<Clase>,
    }

    #[test]
    fn optional_values_are_anyof_with_null_and_one_type_each() {
        let schema = input_schema_for::<Optional>();
        let mut found = Vec::new();
        types(&schema, &mut found);
        assert!(found.iter().all(Value::is_string), "{schema}");
        let minutos = &schema["properties"]["minutos"];
        assert_eq!(minutos["description"], "Minutos");
        assert_eq!(
            minutos["anyOf"],
            json!([{"type": "integer", "minimum": 0, "maximum": 10}, {"type": "null"}])
        );
        // Nothing lost: the same values pass and fail as before.
        for (value, ok) in [
            (json!({}), true),
            (json!({"minutos": null}), true),
            (json!({"minutos": 4}), true),
            (json!({"minutos": 11}), false),
            (json!({"minutos": "4"}), false),
            (json!({"clase": "uno"}), true),
            (json!({"clase": null}), true),
            (json!({"clase": "dos"}), false),
        ] {
            assert_eq!(validate(&schema, &value).is_ok(), ok, "{value}");
        }
        let refusal = validate(&schema, &json!({"minutos": 11})).unwrap_err();
        assert_eq!(refusal.path, "minutos", "the message names the argument");
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Params {
        nombre: String,
        #[schemars(range(min = 0))]
        minutos: Option<i64>,
        #[schemars(length(min = 1))]
        numeros: Vec<f64>,
        tipo: Option<Kind>,
        limite: Option<u8>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code)]
    enum Kind {
        Uno,
        Dos,
    }

    fn check(args: Value, expected: &str) {
        let schema = input_schema_for::<Params>();
        let got = match validate(&schema, &args) {
            Ok(()) => "ok".to_owned(),
            Err(v) => v.to_string(),
        };
        assert_eq!(got, expected, "arguments: {args}");
    }

    #[test]
    fn derived_schema_is_a_closed_object_within_the_subset() {
        let schema = input_schema_for::<Params>();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["additionalProperties"], false);
        assert!(schema.get("title").is_none());
        assert_eq!(unsupported_keywords(&schema), Vec::<String>::new());
        assert!(!schema.to_string().contains("$ref"));
    }

    #[test]
    fn validates_arguments_with_spanish_messages() {
        check(json!({"nombre": "a", "numeros": [1, 2.5]}), "ok");
        check(
            json!({"nombre": "a", "numeros": [1], "tipo": "dos", "minutos": 0}),
            "ok",
        );
        check(json!({"nombre": "a", "numeros": [1], "tipo": null}), "ok");
        check(
            json!({}),
            "faltan los argumentos obligatorios: nombre, numeros",
        );
        check(
            json!({"numeros": [1]}),
            "falta el argumento obligatorio 'nombre'",
        );
        check(
            json!({"nombre": 5, "numeros": [1]}),
            "el argumento 'nombre' debe ser un texto; se recibió un número entero (5)",
        );
        check(
            json!({"nombre": "a", "numeros": [1], "extra": 1}),
            "argumento desconocido 'extra'; los admitidos son: nombre, minutos, numeros, tipo, limite",
        );
        check(
            json!({"nombre": "a", "numeros": []}),
            "el argumento 'numeros' no puede ser una lista vacía",
        );
        check(
            json!({"nombre": "a", "numeros": [1, "x"]}),
            "el argumento 'numeros[1]' debe ser un número; se recibió un texto (\"x\")",
        );
        check(
            json!({"nombre": "a", "numeros": [1], "minutos": -5}),
            "el argumento 'minutos' debe ser ≥ 0; se recibió -5",
        );
        check(
            json!({"nombre": "a", "numeros": [1], "minutos": "30"}),
            "el argumento 'minutos' debe ser un número entero o null; se recibió un texto (\"30\")",
        );
        check(
            json!({"nombre": "a", "numeros": [1], "minutos": true}),
            "el argumento 'minutos' debe ser un número entero o null; se recibió un booleano (true/false) (true)",
        );
        check(
            json!({"nombre": "a", "numeros": [1], "minutos": 2.5}),
            "el argumento 'minutos' debe ser un número entero o null; se recibió un número (2.5)",
        );
        check(
            json!({"nombre": "a", "numeros": [1], "tipo": "tres"}),
            "el argumento 'tipo' debe ser uno de: \"uno\", \"dos\"; se recibió \"tres\"",
        );
        check(
            json!({"nombre": "a", "numeros": [1], "limite": 300}),
            "el argumento 'limite' debe ser ≤ 255; se recibió 300",
        );
    }

    #[test]
    fn unsupported_keywords_are_reported() {
        let schema = json!({"type": "string", "pattern": "^a$"});
        assert_eq!(unsupported_keywords(&schema), vec!["pattern".to_owned()]);
    }
}
