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
    let version = handshake(conn, out)?;
    let tools = list_tools(conn, out)?;
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    let has = |name: &str| names.contains(&name);
    // The fleet tour: "today" comes from the server's own answer.
    let week_start = if has("unidades_detenidas") {
        stopped_units(conn, out)?
    } else {
        None
    };
    conn.printer.heading(out, "ping");
    let ping = conn.request(out, "ping", None)?;
    expect(conn, out, "ping", &ping, Expect::Result);
    fleet_tour(conn, out, &has, &week_start.unwrap_or_else(|| "hoy".into()))?;
    conn.printer.heading(out, "Casos de error");
    unknown_plate_or_tool(conn, out, has("posicion_actual"))?;
    missing_argument(conn, out, &tools, &version)?;
    unknown_method(conn, out)?;
    unanswered_notification(conn, out)
}

/// `initialize` and `notifications/initialized`; returns the agreed protocol version.
fn handshake(conn: &mut Connection, out: &mut dyn Write) -> Result<String, ClientError> {
    conn.printer
        .heading(out, "Handshake (initialize + notifications/initialized)");
    let init = conn.handshake(out)?;
    let version = init
        .result()
        .and_then(|r| r["protocolVersion"].as_str())
        .unwrap_or("?")
        .to_owned();
    conn.printer
        .note(out, &format!("versión acordada: {version}"));
    Ok(version)
}

fn list_tools(conn: &mut Connection, out: &mut dyn Write) -> Result<Vec<Value>, ClientError> {
    conn.printer.heading(out, "tools/list");
    let tools: Vec<Value> = conn
        .request(out, "tools/list", None)?
        .result()
        .and_then(|r| r["tools"].as_array().cloned())
        .unwrap_or_default();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    conn.printer.note(
        out,
        &format!("{} herramientas: {}", names.len(), names.join(", ")),
    );
    Ok(tools)
}

/// Asks who has been stopped; returns the first day of the week that ends on the server's
/// "today", when the answer says what today is.
fn stopped_units(
    conn: &mut Connection,
    out: &mut dyn Write,
) -> Result<Option<String>, ClientError> {
    conn.printer.heading(
        out,
        "unidades_detenidas (¿qué unidades llevan más de 30 minutos detenidas?)",
    );
    let answer = call(conn, out, "unidades_detenidas", json!({}))?;
    expect(conn, out, "unidades_detenidas", &answer, Expect::Result);
    Ok(answer
        .result()
        .and_then(|r| r["structuredContent"]["instante_consulta"].as_str())
        .and_then(|t| chrono::NaiveDate::parse_from_str(t.get(..10)?, "%Y-%m-%d").ok())
        .map(|today| (today - chrono::Duration::days(6)).to_string()))
}

/// One question per fleet tool the server offers.
fn fleet_tour(
    conn: &mut Connection,
    out: &mut dyn Write,
    has: &dyn Fn(&str) -> bool,
    week: &str,
) -> Result<(), ClientError> {
    let steps = [
        (
            "posicion_actual",
            "¿dónde está P-123BCD?",
            json!({"placa": "P-123BCD"}),
        ),
        (
            "resumen_recorrido",
            "recorrido de ayer de P-456DEF",
            json!({"placa": "P-456DEF", "fecha": "ayer"}),
        ),
        (
            "mapa_recorrido",
            "mapa de ayer de P-456DEF",
            json!({"placa": "P-456DEF", "fecha": "ayer"}),
        ),
        (
            "alertas",
            "excesos de velocidad de los últimos 7 días",
            json!({"tipo": "exceso_velocidad", "fecha_inicio": week, "fecha_fin": "hoy"}),
        ),
        (
            "verificar_geocerca",
            "¿entró P-456DEF al CEDIS ayer?",
            json!({"placa": "P-456DEF", "nombre_geocerca": "CEDIS Zona 12", "fecha": "ayer"}),
        ),
        (
            "reporte_kilometraje",
            "kilometraje de los últimos 7 días",
            json!({"fecha_inicio": week, "fecha_fin": "hoy"}),
        ),
    ];
    for (tool, question, arguments) in steps {
        if !has(tool) {
            continue;
        }
        conn.printer.heading(out, &format!("{tool} ({question})"));
        let answer = call(conn, out, tool, arguments)?;
        expect(conn, out, tool, &answer, Expect::Result);
    }
    Ok(())
}

/// Error case 1. With fleet tools, an unknown plate: a business failure the model can act
/// on. Without them, a tool that does not exist: a protocol error.
fn unknown_plate_or_tool(
    conn: &mut Connection,
    out: &mut dyn Write,
    fleet_tools: bool,
) -> Result<(), ClientError> {
    if fleet_tools {
        let answer = call(conn, out, "posicion_actual", json!({"placa": "P-000XXX"}))?;
        expect(conn, out, "placa inexistente", &answer, Expect::ToolError);
    } else {
        let answer = call(conn, out, "herramienta_inexistente", json!({}))?;
        expect(
            conn,
            out,
            "herramienta inexistente",
            &answer,
            Expect::RpcError(-32602),
        );
    }
    Ok(())
}

/// Error case 2. A missing required argument: an isError result from 2025-11-25 on
/// (SEP-1303), a -32602 error before.
fn missing_argument(
    conn: &mut Connection,
    out: &mut dyn Write,
    tools: &[Value],
    version: &str,
) -> Result<(), ClientError> {
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
            let wanted = if version >= "2025-11-25" {
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
    Ok(())
}

/// Error case 3. An unknown method.
fn unknown_method(conn: &mut Connection, out: &mut dyn Write) -> Result<(), ClientError> {
    let answer = conn.request(out, "recursos/listar", None)?;
    expect(
        conn,
        out,
        "método inexistente",
        &answer,
        Expect::RpcError(-32601),
    );
    Ok(())
}

/// Nothing may arrive unasked: a notification must never be answered.
fn unanswered_notification(conn: &mut Connection, out: &mut dyn Write) -> Result<(), ClientError> {
    conn.notify(out, "notifications/desconocida", None)?;
    let stray = conn.drain(out, Duration::from_millis(200));
    if !stray.is_empty() {
        conn.problems += 1;
        conn.printer
            .problem(out, "el servidor respondió a una notificación");
    }
    Ok(())
}

fn call(
    conn: &mut Connection,
    out: &mut dyn Write,
    tool: &str,
    arguments: Value,
) -> Result<Answer, ClientError> {
    conn.request(
        out,
        "tools/call",
        Some(json!({"name": tool, "arguments": arguments})),
    )
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
