//! A client that floods: 10,000 requests (half tool calls) written before reading a single
//! answer, against the release `flota servir` on the reference week.
//!
//! `cargo bench --bench inundacion` reports how many were answered and refused, the server's
//! peak RSS while nobody read and while draining, and the drain time. Prints Markdown for
//! docs/robustez.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const FLOOD: usize = 10_000;

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("flota.db");
    let out = Command::new(env!("CARGO_BIN_EXE_flota"))
        .args(["simular", "--ahora", "2026-08-19T15:30", "--salida"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut child = Command::new(env!("CARGO_BIN_EXE_flota"))
        .args(["servir", "--db"])
        .arg(&db)
        .env("FLOTA_LOG", "error")
        .env("FLOTA_TILES_URL", "no")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":"i","method":"initialize","params":{{"protocolVersion":"2025-11-25"}}}}"#).unwrap();
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        for i in 0..FLOOD {
            let message = if i % 2 == 0 {
                json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                       "params": {"name": "resumen_recorrido", "arguments": {"placa": "P-456DEF", "fecha": "ayer"}}})
            } else {
                json!({"jsonrpc": "2.0", "id": i, "method": "ping"})
            };
            writeln!(stdin, "{message}").unwrap();
        }
        stdin
    });
    // One second in which nobody reads.
    let mut peak_unread = 0;
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(50));
        peak_unread = peak_unread.max(rss_kb(pid));
    }
    let started = Instant::now();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let (mut answered, mut refused, mut peak) = (HashSet::new(), 0, peak_unread);
    let mut line = String::new();
    while answered.len() < FLOOD {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0);
        let value: Value = serde_json::from_str(&line).unwrap();
        if value["id"] == "i" {
            continue;
        }
        assert!(answered.insert(value["id"].as_u64().unwrap()));
        if value.get("error").is_some() {
            refused += 1;
        }
        if answered.len() % 500 == 0 {
            peak = peak.max(rss_kb(pid));
        }
    }
    let drain = started.elapsed();
    drop(writer.join().unwrap());
    child.wait().unwrap();
    println!("| requests | answered | refused | peak RSS unread | peak RSS overall | drain |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| {FLOOD} | {} | {refused} | {:.1} MB | {:.1} MB | {:.2} s |",
        answered.len(),
        peak_unread as f64 / 1024.0,
        peak as f64 / 1024.0,
        drain.as_secs_f64()
    );
}
