//! The interactive client: pick a tool, answer its questions, read the answer.
//!
//! Owns the prompt loop and the conversation around one call: ask each field (checked before
//! sending, see `fields`), call, show the answer first (see `render`; the JSON-RPC lines only
//! under `--protocolo`), save images to files, and when the server refuses an argument, ask
//! that argument again with its suggestion ready for Enter, then call again.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use serde_json::{Map, Value, json};

use super::connection::{Answer, ClientError, Connection};
use super::fields::{self, Field};
use super::images;
use super::lines::{Input, Lines};
use super::printer::{Printer, Style};
use super::render;
use super::suggestions;

/// What the operator chose for this session.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where images (maps) are saved.
    pub images: PathBuf,
    /// The program that opens a saved image (`--abrir`), if any.
    pub viewer: Option<OsString>,
}

/// Whether the session goes on after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    End,
}

/// The answer to one question.
enum Asked {
    Value(Value),
    /// Left empty: the optional field is omitted, or a second try is given up.
    Skip,
    Cancel,
    End,
}

pub fn run(
    conn: &mut Connection,
    out: &mut dyn Write,
    lines: &mut dyn Lines,
    settings: &Settings,
    init: &Answer,
) -> Result<(), ClientError> {
    let printer = conn.printer;
    if let Some(result) = init.result() {
        let info = &result["serverInfo"];
        printer.line(
            out,
            Style::Heading,
            &format!(
                "Conectado a {} {} (protocolo {})",
                info["title"]
                    .as_str()
                    .or(info["name"].as_str())
                    .unwrap_or("?"),
                info["version"].as_str().unwrap_or(""),
                result["protocolVersion"].as_str().unwrap_or("?"),
            ),
        );
    }
    let mut tools = list(conn, out)?;
    show_tools(out, &tools);
    help(out);
    loop {
        let command = match lines.read(out, "flota> ") {
            Input::End => return Ok(()),
            Input::Cancel => continue,
            Input::Line(line) => line.trim().to_owned(),
        };
        lines.remember(&command);
        match command.as_str() {
            "" => {}
            "salir" | "q" | "exit" | "quit" => return Ok(()),
            "ayuda" | "?" => help(out),
            "ping" => {
                if conn.request(out, "ping", None)?.result().is_some() {
                    printer.line(out, Style::Good, "✓ el servidor responde");
                }
            }
            "lista" => {
                tools = list(conn, out)?;
                show_tools(out, &tools);
            }
            other => match pick(other, &tools) {
                Some(tool) => {
                    if call_tool(conn, out, lines, settings, tool)? == Flow::End {
                        return Ok(());
                    }
                }
                None => {
                    let _ = writeln!(
                        out,
                        "No entiendo '{other}'. Escriba el número de una herramienta o 'ayuda'."
                    );
                }
            },
        }
    }
}

fn help(out: &mut dyn Write) {
    let _ = writeln!(
        out,
        "Escriba el número (o el nombre) de una herramienta; 'lista', 'ping', 'ayuda' o 'salir'. \
         Ctrl-C cancela una pregunta, Ctrl-D sale."
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

/// A tool by its number in the list or by its name.
fn pick<'a>(typed: &str, tools: &'a [Value]) -> Option<&'a Value> {
    match typed.parse::<usize>() {
        Ok(n) => n.checked_sub(1).and_then(|i| tools.get(i)),
        Err(_) => tools.iter().find(|t| t["name"] == typed),
    }
}

/// Asks a tool's fields, calls it, shows the answer; a refused argument is asked again.
fn call_tool(
    conn: &mut Connection,
    out: &mut dyn Write,
    lines: &mut dyn Lines,
    settings: &Settings,
    tool: &Value,
) -> Result<Flow, ClientError> {
    let printer = conn.printer;
    let name = tool["name"].as_str().unwrap_or_default().to_owned();
    let fields = fields::fields(&tool["inputSchema"]);
    let mut arguments = Map::new();
    for field in &fields {
        match ask(out, lines, printer, field, None, false) {
            Asked::Value(value) => {
                arguments.insert(field.name.clone(), value);
            }
            Asked::Skip => {}
            Asked::Cancel => {
                printer.line(out, Style::Dim, "(cancelado)");
                return Ok(Flow::Continue);
            }
            Asked::End => return Ok(Flow::End),
        }
    }
    loop {
        let params = json!({"name": name, "arguments": arguments});
        let answer = conn.request(out, "tools/call", Some(params))?;
        let Some(refusal) = show(out, printer, settings, &name, &arguments, &answer) else {
            return Ok(Flow::Continue);
        };
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        let Some(correction) = suggestions::correction(&refusal, &arguments, &names) else {
            return Ok(Flow::Continue);
        };
        let Some(field) = fields.iter().find(|f| f.name == correction.field) else {
            return Ok(Flow::Continue);
        };
        let default = correction.suggestions.first().cloned();
        let hint = match &default {
            Some(value) => format!("  Intro acepta {value}; escriba otro valor para cambiarlo."),
            None => format!("  Corrija '{}' (Intro sin nada cancela).", field.name),
        };
        printer.line(out, Style::Warning, &hint);
        match ask(out, lines, printer, field, default, true) {
            Asked::Value(value) => {
                arguments.insert(field.name.clone(), value);
            }
            Asked::Skip | Asked::Cancel => {
                printer.line(out, Style::Dim, "(cancelado)");
                return Ok(Flow::Continue);
            }
            Asked::End => return Ok(Flow::End),
        }
    }
}

/// Asks one field until the answer is valid. `again`: a second try after the server's
/// refusal, where an empty answer without a default gives up.
fn ask(
    out: &mut dyn Write,
    lines: &mut dyn Lines,
    printer: Printer,
    field: &Field,
    mut default: Option<String>,
    again: bool,
) -> Asked {
    if !again {
        for line in field.intro() {
            printer.line(out, Style::Plain, &line);
        }
    }
    loop {
        let typed = match lines.read(out, &field.prompt(default.as_deref())) {
            Input::End => return Asked::End,
            Input::Cancel => return Asked::Cancel,
            Input::Line(line) => line.trim().to_owned(),
        };
        lines.remember(&typed);
        let answer = match (typed.is_empty(), default.take()) {
            (false, _) => typed,
            (true, Some(value)) => value,
            (true, None) if again || !field.required => return Asked::Skip,
            (true, None) => {
                printer.line(
                    out,
                    Style::Bad,
                    &format!("  '{}' es obligatorio", field.name),
                );
                continue;
            }
        };
        match field.convert(&answer) {
            Ok(value) => return Asked::Value(value),
            Err(refusal) => {
                printer.line(out, Style::Bad, &format!("  {}", refusal.message));
                if let Some(suggestion) = &refusal.suggestion {
                    printer.line(
                        out,
                        Style::Warning,
                        &format!("  ¿Quiso decir {suggestion}? Intro para aceptar."),
                    );
                }
                default = refusal.suggestion;
            }
        }
    }
}

/// Shows an answer, saving its images; returns the refusal's text when the call failed.
fn show(
    out: &mut dyn Write,
    printer: Printer,
    settings: &Settings,
    tool: &str,
    arguments: &Map<String, Value>,
    answer: &Answer,
) -> Option<String> {
    match answer {
        Answer::Result(result) => {
            for line in render::result(result) {
                printer.line(out, line.style, &line.text);
            }
            save_images(out, printer, settings, tool, arguments, result);
            (result["isError"] == true).then(|| {
                result["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        }
        Answer::Error {
            code,
            message,
            data,
        } => {
            let text = match data {
                Value::String(text) => text.clone(),
                Value::Null => message.clone(),
                other => format!("{message}: {other}"),
            };
            printer.line(out, Style::Bad, &format!("✗ error {code}: {text}"));
            Some(text)
        }
    }
}

/// Writes each image block to a file named after the call, and opens it when asked.
fn save_images(
    out: &mut dyn Write,
    printer: Printer,
    settings: &Settings,
    tool: &str,
    arguments: &Map<String, Value>,
    result: &Value,
) {
    let blocks: Vec<&Value> = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "image")
        .collect();
    if blocks.is_empty() {
        return;
    }
    // The server's normalised values (a resolved date, a canonical plate) name the file.
    let answer = result.get("structuredContent").cloned().or_else(|| {
        result["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["text"].as_str())
            .find_map(|t| {
                serde_json::from_str::<Value>(t)
                    .ok()
                    .filter(Value::is_object)
            })
    });
    let stem = images::stem(tool, arguments, answer.as_ref());
    for block in blocks {
        let mime = block["mimeType"].as_str().unwrap_or_default();
        let data = block["data"].as_str().unwrap_or_default();
        match images::save(&settings.images, &stem, images::extension(mime), data) {
            Ok(path) => {
                let path = std::fs::canonicalize(&path).unwrap_or(path);
                printer.line(
                    out,
                    Style::Good,
                    &format!("Imagen guardada en {}", path.display()),
                );
                if let Some(viewer) = &settings.viewer
                    && let Err(why) = images::open(viewer, &path)
                {
                    printer.line(out, Style::Bad, &format!("✗ {why}"));
                }
            }
            Err(why) => printer.line(out, Style::Bad, &format!("✗ {why}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_picked_by_number_or_name() {
        let tools = vec![json!({"name": "uno"}), json!({"name": "dos"})];
        assert_eq!(pick("2", &tools), Some(&tools[1]));
        assert_eq!(pick("uno", &tools), Some(&tools[0]));
        assert_eq!(pick("0", &tools), None);
        assert_eq!(pick("3", &tools), None);
        assert_eq!(pick("tres", &tools), None);
    }
}
