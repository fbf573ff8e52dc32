//! A client that floods: `count` requests (half `resumen_recorrido` calls, half pings)
//! written before a single answer is read. Shared by the hardening test (which asserts on the
//! report) and `benches/inundacion.rs` (which prints it).

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// What the flood saw.
#[allow(dead_code)] // The test reads some fields, the bench prints them all.
pub struct Report {
    pub answered: usize,
    /// Refused with "servidor ocupado".
    pub refused: usize,
    pub peak_unread_kb: u64,
    pub peak_kb: u64,
    pub drain: Duration,
}

pub fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Runs `server` (a `flota servir` command) under the flood. Panics if an id is answered
/// twice, an answer is not JSON, stdout closes early, the server dies while unread, or an
/// error other than a refusal comes back.
pub fn flood(mut server: Command, count: usize) -> Report {
    let mut child = server
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    // The writer blocks once the pipes fill: that back-pressure is the point.
    let writer = std::thread::spawn(move || {
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":"init","method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"f","version":"1"}}}}}}"#).unwrap();
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        for i in 0..count {
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
    // One second in which nobody reads: the server must neither die nor grow.
    let mut peak_unread_kb = 0;
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(50));
        peak_unread_kb = peak_unread_kb.max(rss_kb(pid));
    }
    assert!(child.try_wait().unwrap().is_none(), "the server died");
    let started = Instant::now();
    let mut reader = BufReader::new(stdout);
    let (mut answered, mut refused, mut peak_kb) = (HashSet::new(), 0, peak_unread_kb);
    let mut line = String::new();
    while answered.len() < count {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "stdout closed early"
        );
        let value: Value = serde_json::from_str(&line).unwrap();
        if value["id"] == "init" {
            continue;
        }
        let id = value["id"].as_u64().unwrap();
        assert!(answered.insert(id), "id {id} answered twice");
        if let Some(error) = value.get("error") {
            let reason = error["data"].as_str().unwrap_or_default();
            assert!(
                reason.contains("servidor ocupado"),
                "unexpected error: {line}"
            );
            refused += 1;
        }
        if answered.len() % 500 == 0 {
            peak_kb = peak_kb.max(rss_kb(pid));
        }
    }
    let drain = started.elapsed();
    drop(writer.join().unwrap());
    assert!(child.wait().unwrap().success());
    Report {
        answered: answered.len(),
        refused,
        peak_unread_kb,
        peak_kb,
        drain,
    }
}
