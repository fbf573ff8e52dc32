//! `flota cliente --demo`: a scripted tour of a server, ending with three error cases.
//!
//! Owns the script. Steps that name a tool the server does not offer are skipped with a note,
//! so the tour works against any server built on the same core. Every step states what it
//! expects (a result, an `isError` result, or a JSON-RPC error code); a different outcome is
//! counted as a problem and makes the client exit non-zero.

use std::io::Write;
use std::time::Duration;

use serde_json::{Value, json};

use super::connection::{Answer, ClientError, Connection};

/// What a step must produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Result,
    ToolError,
    RpcError(i64),
}

pub fn run(conn: &mut Connection, out: &mut dyn Write) -> Result<(), ClientError> {
    let printer = conn.printer;
    printer.heading(out, "Handshake (initialize + notifications/initialized)");
    let init = conn.handshake(out)?;
    let version = init
        .result()
        .and_then(|r| r["protocolVersion"].as_str())
        .unwrap_or("?")
        .to_owned();
    printer.note(out, &format!("versión acordada: {version}"));

    printer.heading(out, "tools/list");
    let tools: Vec<Value> = conn
        .request(out, "tools/list", None)?
        .result()
        .and_then(|r| r["tools"].as_array().cloned())
        .unwrap_or_default();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    printer.note(
        out,
        &format!("{} herramientas: {}", names.len(), names.join(", ")),
    );

    printer.heading(out, "ping");
    let ping = conn.request(out, "ping", None)?;
    expect(conn, out, "ping", &ping, Expect::Result);

    printer.heading(out, "Casos de error");
    // 1. A tool that does not exist is a protocol error.
    let answer = conn.request(
        out,
        "tools/call",
        Some(json!({"name": "herramienta_inexistente", "arguments": {}})),
    )?;
    expect(
        conn,
        out,
        "herramienta inexistente",
        &answer,
        Expect::RpcError(-32602),
    );

    // 2. A missing required argument: an isError result from 2025-11-25 on (SEP-1303), a
    //    -32602 error before.
    let with_required = tools.iter().find(|t| {
        t["inputSchema"]["required"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
    });
    match with_required {
        Some(tool) => {
            let answer = conn.request(
                out,
                "tools/call",
                Some(json!({"name": tool["name"], "arguments": {}})),
            )?;
            let wanted = if version.as_str() >= "2025-11-25" {
                Expect::ToolError
            } else {
                Expect::RpcError(-32602)
            };
            expect(conn, out, "argumento obligatorio ausente", &answer, wanted);
        }
        None => {
            let answer = conn.request(out, "tools/call", Some(json!({"arguments": {}})))?;
            expect(
                conn,
                out,
                "llamada sin 'name'",
                &answer,
                Expect::RpcError(-32602),
            );
        }
    }

    // 3. An unknown method.
    let answer = conn.request(out, "recursos/listar", None)?;
    expect(
        conn,
        out,
        "método inexistente",
        &answer,
        Expect::RpcError(-32601),
    );

    // Nothing may arrive unasked: a notification must never be answered.
    conn.notify(out, "notifications/desconocida", None)?;
    let stray = conn.drain(out, Duration::from_millis(200));
    if !stray.is_empty() {
        conn.problems += 1;
        printer.problem(out, "el servidor respondió a una notificación");
    }
    Ok(())
}

fn expect(conn: &mut Connection, out: &mut dyn Write, what: &str, answer: &Answer, wanted: Expect) {
    let got = match answer {
        Answer::Result(result) if result["isError"] == true => Expect::ToolError,
        Answer::Result(_) => Expect::Result,
        Answer::Error { code, .. } => Expect::RpcError(*code),
    };
    if let Answer::Result(result) = answer
        && result.get("content").is_some()
    {
        conn.printer.tool_result(out, result);
    }
    if got == wanted {
        conn.printer
            .note(out, &format!("✓ {what}: {}", describe(got)));
    } else {
        conn.problems += 1;
        conn.printer.problem(
            out,
            &format!(
                "{what}: se esperaba {}, llegó {}",
                describe(wanted),
                describe(got)
            ),
        );
    }
}

fn describe(expect: Expect) -> String {
    match expect {
        Expect::Result => "un resultado".into(),
        Expect::ToolError => "un resultado con isError".into(),
        Expect::RpcError(code) => format!("el error {code}"),
    }
}
