//! How `flota cliente` shows things: styled lines, coloured only when allowed.
//!
//! Owns presentation only: the styles, the protocol echo (exact lines, shown only when asked
//! for: always in the demo and the replay, under `--protocolo` in the interactive client;
//! very long ones, such as a map's base64 image, are cut with their size) and the demo's
//! readable view of a tool result. Whether colour is allowed (a terminal, no `NO_COLOR`) is
//! decided by the caller. Write errors on the output are ignored: a closed pipe ends nothing
//! important.

use std::io::Write;

use serde_json::Value;

/// Lines longer than this are cut when echoed.
const MAX_ECHO: usize = 1200;

#[derive(Debug, Clone, Copy)]
pub struct Printer {
    pub color: bool,
    /// Echo the JSON-RPC lines (→ sent, ← received).
    pub protocol: bool,
}

/// What a line is, which decides its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Plain,
    Heading,
    Dim,
    Good,
    Warning,
    Bad,
}

const CYAN: &str = "\x1b[36m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const RED: &str = "\x1b[31m";
const DIM: &str = "\x1b[2m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

impl Printer {
    fn paint(&self, out: &mut dyn Write, color: &str, text: &str) {
        let _ = if self.color && !color.is_empty() {
            writeln!(out, "{color}{text}{RESET}")
        } else {
            writeln!(out, "{text}")
        };
    }

    /// One line in a style.
    pub fn line(&self, out: &mut dyn Write, style: Style, text: &str) {
        let color = match style {
            Style::Plain => "",
            Style::Heading => BOLD,
            Style::Dim => DIM,
            Style::Good => GREEN,
            Style::Warning => YELLOW,
            Style::Bad => RED,
        };
        self.paint(out, color, text);
    }

    pub fn sent(&self, out: &mut dyn Write, line: &str) {
        if self.protocol {
            self.paint(out, CYAN, &format!("→ {}", cut(line)));
        }
    }

    pub fn received(&self, out: &mut dyn Write, line: &str) {
        if !self.protocol {
            return;
        }
        let color = if line.contains("\"error\":{") {
            RED
        } else if line.contains("\"method\":") {
            YELLOW
        } else {
            GREEN
        };
        self.paint(out, color, &format!("← {}", cut(line)));
    }

    pub fn problem(&self, out: &mut dyn Write, what: &str) {
        self.paint(out, RED, &format!("✗ problema: {what}"));
    }

    pub fn heading(&self, out: &mut dyn Write, text: &str) {
        let _ = writeln!(out);
        self.paint(out, BOLD, &format!("== {text}"));
    }

    pub fn note(&self, out: &mut dyn Write, text: &str) {
        self.paint(out, DIM, text);
    }

    /// Shows the content blocks of a `tools/call` result as they came (the demo and the
    /// replay, whose purpose is the exchange itself).
    pub fn tool_result(&self, out: &mut dyn Write, result: &Value) {
        let blocks = result["content"].as_array().cloned().unwrap_or_default();
        let flag = if result["isError"] == true {
            " (isError)"
        } else {
            ""
        };
        for block in blocks {
            match block["type"].as_str() {
                Some("text") => {
                    let raw = block["text"].as_str().unwrap_or_default();
                    // JSON text blocks are compact on the wire; show them indented.
                    let text = serde_json::from_str::<Value>(raw)
                        .ok()
                        .filter(Value::is_object)
                        .and_then(|v| serde_json::to_string_pretty(&v).ok())
                        .unwrap_or_else(|| raw.to_owned());
                    self.paint(out, DIM, &format!("  texto{flag}:"));
                    for line in text.lines() {
                        let _ = writeln!(out, "    {line}");
                    }
                }
                Some("image") => {
                    let bytes = block["data"].as_str().map_or(0, |d| d.len() * 3 / 4);
                    let mime = block["mimeType"].as_str().unwrap_or("?");
                    self.paint(
                        out,
                        DIM,
                        &format!("  [imagen {mime}, {:.1} KB]", bytes as f64 / 1024.0),
                    );
                }
                other => self.paint(out, DIM, &format!("  [bloque {}]", other.unwrap_or("?"))),
            }
        }
    }
}

fn cut(line: &str) -> String {
    if line.len() <= MAX_ECHO {
        return line.to_owned();
    }
    let mut end = MAX_ECHO;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… [{:.1} KB en total]",
        &line[..end],
        line.len() as f64 / 1024.0
    )
}
