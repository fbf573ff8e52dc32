//! The interactive client: pick a tool by number, answer its parameters, see the wire.
//!
//! Owns the prompt loop and turning typed answers into JSON by reading the tool's
//! `inputSchema` (type, enum, required, description). It never guesses beyond the schema.

use std::io::{BufRead, Write};

use serde_json::{Map, Value, json};

use super::connection::{Answer, ClientError, Connection};

pub fn run(
    conn: &mut Connection,
    out: &mut dyn Write,
    input: &mut dyn BufRead,
) -> Result<(), ClientError> {
    let mut tools = list(conn, out)?;
    show_tools(out, &tools);
    help(out);
    loop {
        let Some(command) = prompt(out, input, "flota> ") else {
            return Ok(());
        };
        match command.as_str() {
            "" => {}
            "salir" | "q" | "exit" | "quit" => return Ok(()),
            "ayuda" | "?" => help(out),
            "ping" => {
                conn.request(out, "ping", None)?;
            }
            "lista" => {
                tools = list(conn, out)?;
                show_tools(out, &tools);
            }
            other => match other.parse::<usize>() {
                Ok(n) if (1..=tools.len()).contains(&n) => {
                    let tool = &tools[n - 1];
                    let Some(arguments) = ask_arguments(out, input, tool) else {
                        return Ok(());
                    };
                    let params = json!({"name": tool["name"], "arguments": arguments});
                    if let Answer::Result(result) = conn.request(out, "tools/call", Some(params))? {
                        conn.printer.tool_result(out, &result);
                    }
                }
                _ => {
                    let _ = writeln!(
                        out,
                        "No entiendo '{other}'. Escriba un número de herramienta o 'ayuda'."
                    );
                }
            },
        }
    }
}

fn help(out: &mut dyn Write) {
    let _ = writeln!(
        out,
        "Escriba el número de una herramienta para llamarla; 'ping', 'lista', 'ayuda' o 'salir'."
    );
}

fn list(conn: &mut Connection, out: &mut dyn Write) -> Result<Vec<Value>, ClientError> {
    let answer = conn.request(out, "tools/list", None)?;
    Ok(answer
        .result()
        .and_then(|r| r["tools"].as_array().cloned())
        .unwrap_or_default())
}

fn show_tools(out: &mut dyn Write, tools: &[Value]) {
    if tools.is_empty() {
        let _ = writeln!(out, "El servidor no ofrece herramientas.");
    }
    for (index, tool) in tools.iter().enumerate() {
        let title = tool["title"]
            .as_str()
            .or(tool["name"].as_str())
            .unwrap_or("?");
        let _ = writeln!(
            out,
            "{:>3}. {} — {}",
            index + 1,
            tool["name"].as_str().unwrap_or("?"),
            title
        );
    }
}

fn prompt(out: &mut dyn Write, input: &mut dyn BufRead, text: &str) -> Option<String> {
    let _ = write!(out, "{text}");
    let _ = out.flush();
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim().to_owned()),
    }
}

/// Asks for each parameter, required ones first; `None` when input ended.
fn ask_arguments(out: &mut dyn Write, input: &mut dyn BufRead, tool: &Value) -> Option<Value> {
    let schema = &tool["inputSchema"];
    let properties = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let required: Vec<String> = schema["required"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let mut names: Vec<&String> = required
        .iter()
        .filter(|n| properties.contains_key(*n))
        .collect();
    names.extend(properties.keys().filter(|n| !required.contains(n)));
    let mut arguments = Map::new();
    for name in names {
        let property = &properties[name];
        let is_required = required.contains(name);
        loop {
            let label = describe(name, property, is_required);
            let answer = prompt(out, input, &label)?;
            if answer.is_empty() && !is_required {
                break;
            }
            match convert(&answer, property) {
                Ok(value) => {
                    arguments.insert(name.clone(), value);
                    break;
                }
                Err(why) => {
                    let _ = writeln!(out, "  {why}");
                }
            }
        }
    }
    Some(Value::Object(arguments))
}

fn main_type(property: &Value) -> &str {
    match &property["type"] {
        Value::String(t) => t,
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string"),
        _ if property.get("enum").is_some() => "string",
        _ => "string",
    }
}

fn describe(name: &str, property: &Value, required: bool) -> String {
    let kind = match main_type(property) {
        "integer" => "entero",
        "number" => "número",
        "boolean" => "s/n",
        "array" => "lista separada por comas",
        "object" => "JSON",
        _ => "texto",
    };
    let mut label = format!(
        "  {name} ({kind}, {})",
        if required {
            "obligatorio"
        } else {
            "opcional, Intro para omitir"
        }
    );
    if let Some(choices) = property["enum"].as_array() {
        let choices: Vec<String> = choices
            .iter()
            .filter(|c| !c.is_null())
            .map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_owned))
            .collect();
        label.push_str(&format!(" [{}]", choices.join(" | ")));
    }
    if let Some(description) = property["description"].as_str() {
        label.push_str(&format!(" — {description}"));
    }
    label.push_str(": ");
    label
}

/// Turns a typed answer into the JSON the schema wants.
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
                return serde_json::from_str(answer).map_err(|e| format!("JSON inválido: {e}"));
            }
            let item = &property["items"];
            answer
                .split(',')
                .map(|part| convert(part.trim(), item))
                .collect::<Result<Vec<Value>, String>>()
                .map(Value::Array)
        }
        "object" => serde_json::from_str(answer).map_err(|e| format!("JSON inválido: {e}")),
        _ => Ok(Value::String(answer.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
