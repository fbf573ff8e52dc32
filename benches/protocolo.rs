//! Protocol benchmark: process start → `initialize` answer, idle memory, and round trips.
//!
//! Run with `cargo bench --bench protocolo`; it drives the release `flota servir` binary over
//! pipes, exactly as a client would, and prints a Markdown table for docs/rendimiento.md.
//! Memory comes from /proc (Linux only).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    fn spawn() -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_flota"))
            .args(["servir", "--db", "/nonexistent/flota.db"])
            .env("FLOTA_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Server {
            child,
            stdin,
            stdout,
        }
    }

    fn round_trip(&mut self, line: &str) -> String {
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
        let mut answer = String::new();
        self.stdout.read_line(&mut answer).unwrap();
        answer
    }

    fn rss_kb(&self, field: &str) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find(|l| l.starts_with(field))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    }

    fn close(mut self) {
        drop(self.stdin);
        self.child.wait().unwrap();
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index]
}

fn main() {
    // 1. Cold start: spawn → initialize answer read.
    let mut starts = Vec::new();
    for _ in 0..50 {
        let started = Instant::now();
        let mut server = Server::spawn();
        let answer = server.round_trip(INIT);
        starts.push(started.elapsed());
        assert!(answer.contains("protocolVersion"));
        server.close();
    }
    starts.sort();

    // 2. Idle memory after the handshake, and round trips.
    let mut server = Server::spawn();
    server.round_trip(INIT);
    server
        .stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let rss = server.rss_kb("VmRSS:");
    let mut pings = Vec::new();
    for id in 1..=20_000 {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        let started = Instant::now();
        let answer = server.round_trip(&line);
        pings.push(started.elapsed());
        debug_assert!(answer.contains("result"));
    }
    pings.sort();
    let mut lists = Vec::new();
    for id in 0..2_000 {
        let line = format!(r#"{{"jsonrpc":"2.0","id":"l{id}","method":"tools/list"}}"#);
        let started = Instant::now();
        server.round_trip(&line);
        lists.push(started.elapsed());
    }
    lists.sort();
    let peak = server.rss_kb("VmHWM:");
    server.close();

    let us = |d: Duration| format!("{:.1} µs", d.as_secs_f64() * 1e6);
    let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1e3);
    let mb =
        |kb: Option<u64>| kb.map_or("n/a".into(), |kb| format!("{:.1} MB", kb as f64 / 1024.0));
    println!("| measure | p50 | p95 | min / note |");
    println!("|---|---|---|---|");
    println!(
        "| spawn → `initialize` answer (50 cold starts) | {} | {} | {} |",
        ms(percentile(&starts, 0.5)),
        ms(percentile(&starts, 0.95)),
        ms(starts[0])
    );
    println!(
        "| `ping` round trip (20,000 sequential) | {} | {} | p99 {} |",
        us(percentile(&pings, 0.5)),
        us(percentile(&pings, 0.95)),
        us(percentile(&pings, 0.99))
    );
    println!(
        "| `tools/list` round trip (2,000 sequential) | {} | {} | p99 {} |",
        us(percentile(&lists, 0.5)),
        us(percentile(&lists, 0.95)),
        us(percentile(&lists, 0.99))
    );
    println!(
        "| RSS after handshake (idle) | {} | | peak over the run {} |",
        mb(rss),
        mb(peak)
    );
}
