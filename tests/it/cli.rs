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

/// The statistics answer, rendered: an aligned `Media:` line with the value 4.
fn shows_mean_4(text: &str) -> bool {
    text.lines()
        .any(|l| l.starts_with("Media:") && l.split_whitespace().last() == Some("4"))
}

/// The interactive client with `input` piped in; its stdout and stderr.
fn interactive(flags: &[&str], input: &[u8]) -> (std::process::ExitStatus, String, String) {
    let mut child = Command::new(flota_bin())
        .arg("cliente")
        .args(flags)
        .arg("--")
        .arg(example_bin())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status,
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn cliente_interactive_shows_the_protocol_and_log_when_asked() {
    // Tool 2 is calcular_estadisticas: one prompt for `numeros`.
    let (status, text, stderr) =
        interactive(&["--protocolo", "--verbose"], b"2\n3, 4, 5\nping\nsalir\n");
    assert!(status.success(), "{text}");
    assert!(
        stderr.contains("INFO initialize"),
        "the server's log: {stderr}"
    );
    assert!(
        text.contains(r#""arguments":{"numeros":[3.0,4.0,5.0]}"#),
        "{text}"
    );
    assert!(text.contains(r#""method":"ping""#), "{text}");
    assert!(shows_mean_4(&text), "{text}");
}

#[test]
fn cliente_interactive_answers_first() {
    // The end of input ends the session like Ctrl-D: the prompt's line closed, exit 0.
    let (status, text, stderr) = interactive(&[], b"2\n3, 4, 5\nping\n");
    assert!(status.success(), "{text}\n{stderr}");
    assert!(shows_mean_4(&text), "{text}");
    assert!(text.contains("✓ el servidor responde"), "{text}");
    assert!(text.ends_with("flota> \n"), "{text:?}");
    assert!(!text.contains("jsonrpc"), "{text}");
    assert!(!text.contains("\x1b["), "colour codes without a terminal");
    assert!(
        stderr.is_empty(),
        "the server's log is kept aside: {stderr}"
    );
}

#[test]
fn cliente_tells_a_dying_servers_last_words() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("muere.sh");
    std::fs::write(
        &script,
        concat!(
            "#!/bin/sh\n",
            "echo 'registro de arranque' >&2\n",
            "read line\n",
            r#"echo '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"x","version":"1"}}}'"#,
            "\nread line\nread line\n",
            r#"echo '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}}'"#,
            "\nread line\necho 'pánico: sin memoria' >&2\nexit 3\n",
        ),
    )
    .unwrap();
    let out = Command::new(flota_bin())
        .args(["cliente", "--", "sh"])
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child.stdin.take().unwrap().write_all(b"1\n")?;
            child.wait_with_output()
        })
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "el servidor cerró la conexión sin responder a 'tools/call'; sus últimos mensajes:\n  \
             registro de arranque\n  pánico: sin memoria"
        ),
        "{stderr}"
    );
}

/// The executable is linked position-dependent on Linux with glibc (build.rs): its start
/// applies no relocations of its own, so it writes no private copy of `.data.rel.ro`. An ELF
/// header's `e_type` is 2 for such an executable and 3 for a PIE.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_executable_is_position_dependent() {
    if option_env!("FLOTA_PIE") == Some("1") {
        return;
    }
    let mut header = [0u8; 18];
    std::io::Read::read_exact(&mut std::fs::File::open(flota_bin()).unwrap(), &mut header).unwrap();
    assert_eq!(&header[..4], b"\x7fELF");
    let e_type = u16::from_le_bytes([header[16], header[17]]);
    assert_eq!(e_type, 2, "e_type {e_type}: the executable is a PIE");
}
