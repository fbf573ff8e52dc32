//! The `flota` command line: help, errors, `config claude`, and `cliente` in its three modes.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{example_bin, flota_bin};

fn flota(args: &[&str]) -> std::process::Output {
    // Maps are drawn offline: no test reaches a real tile server.
    Command::new(flota_bin())
        .args(args)
        .env("FLOTA_TILES_URL", "no")
        .output()
        .unwrap()
}

#[test]
fn help_and_usage_errors_are_spanish() {
    let out = flota(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains("Uso: flota") && help.contains("servir") && help.contains("cliente"));
    let out = flota(&["servir", "--noexiste"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("argumento inesperado '--noexiste'"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn config_claude_prints_absolute_paths() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(flota_bin())
        .args(["config", "claude", "--db", "mi.db"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let entry: Value = serde_json::from_slice(&out.stdout).unwrap();
    let server = &entry["mcpServers"]["flota"];
    let command = server["command"].as_str().unwrap();
    assert!(std::path::Path::new(command).is_absolute());
    assert!(std::path::Path::new(command).exists());
    let db = server["args"][2].as_str().unwrap();
    assert!(db.starts_with('/') && db.ends_with("mi.db"), "{db}");
    assert_eq!(server["args"][0], "servir");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("macOS") && err.contains("Windows") && err.contains("Linux"),
        "{err}"
    );
}

#[test]
fn cliente_demo_tours_the_fleet_tools() {
    let db = crate::ground_truth::fixture("minimo").db.clone();
    let out = flota(&["cliente", "--demo", "--db", db.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("versión acordada: 2025-11-25"), "{text}");
    assert!(!text.contains('✗'), "{text}");
    for step in [
        "unidades_detenidas",
        "posicion_actual",
        "resumen_recorrido",
        "mapa_recorrido",
        "alertas",
        "verificar_geocerca",
        "reporte_kilometraje",
        "placa inexistente",
        "argumento obligatorio ausente",
        "método inexistente",
    ] {
        assert!(
            text.contains(&format!("✓ {step}")),
            "{step} missing:\n{text}"
        );
    }
    assert!(!text.contains("\x1b["), "colour codes without a terminal");
    assert!(
        text.contains("[imagen image/png, "),
        "the map's image block:\n{text}"
    );
}

#[test]
fn cliente_demo_works_against_any_server() {
    let out = Command::new(flota_bin())
        .args(["cliente", "--demo", "--"])
        .arg(example_bin())
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    assert_eq!(text.matches('✓').count(), 4, "{text}");
}

#[test]
fn cliente_demo_fails_without_data() {
    let out = flota(&["cliente", "--demo", "--db", "/nonexistent/flota.db"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("No hay base de datos en /nonexistent/flota.db"),
        "{text}"
    );
}

#[test]
fn cliente_replays_a_file_against_any_server() {
    let example = example_bin();
    let replay = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/requests.jsonl");
    let out = Command::new(flota_bin())
        .args(["cliente", "--replay", replay, "--"])
        .arg(&example)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    assert!(text.contains("\"media\": 18.0"), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.starts_with("← ")).count(),
        10,
        "{text}"
    );
}

#[test]
fn cliente_flags_a_server_that_breaks_the_protocol() {
    // A "server" that answers with the wrong id and a non-JSON line.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("malo.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nread line\necho 'esto no es JSON'\necho '{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}'\necho '{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":\"2025-11-25\"}}'\nread line\nread line\n",
    )
    .unwrap();
    let replay = dir.path().join("r.jsonl");
    std::fs::write(
        &replay,
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{}}\n",
    )
    .unwrap();
    let out = Command::new(flota_bin())
        .args(["cliente", "--replay"])
        .arg(&replay)
        .args(["--", "sh"])
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.matches("✗ problema").count(), 2, "{text}");
}

#[test]
fn cliente_interactive_calls_a_tool_by_number() {
    let mut child = Command::new(flota_bin())
        .args(["cliente", "--"])
        .arg(example_bin())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Tool 2 is calcular_estadisticas: one prompt for `numeros`.
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"2\n3, 4, 5\nping\nsalir\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(r#""arguments":{"numeros":[3.0,4.0,5.0]}"#),
        "{text}"
    );
    assert!(text.contains("\"media\": 4.0"), "{text}");
    assert!(text.contains(r#""method":"ping""#), "{text}");
}
