//! The server's memory and start against a real database: RSS idle, after the first tool
//! call and every 50 maps up to 200 (`mapa_recorrido` and `mapa_flota`, offline basemap), and
//! process start → `initialize` answer with that database.
//!
//! `cargo bench --bench memoria` simulates the reference week into a temp dir and drives
//! `flota servir` on pipes with raw JSON-RPC, as a client would; memory from
//! `/proc/<pid>/status` (Linux only). `FLOTA_BENCH_DB=/path/flota.db` measures another
//! database; `FLOTA_BENCH_BIN=/path/flota` another build of the binary (to compare before and
//! after a change in the same run conditions). Prints Markdown for docs/rendimiento.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;
use common::binary;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    id: i64,
}

impl Server {
    fn spawn(db: &str) -> Server {
        let mut child = Command::new(binary())
            .args(["servir", "--db", db])
            .env("FLOTA_LOG", "error")
            .env("FLOTA_TILES_URL", "no")
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
            id: 0,
        }
    }

    fn line(&mut self, line: &str) -> String {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        let mut answer = String::new();
        self.stdout.read_line(&mut answer).unwrap();
        answer
    }

    /// Whether the call succeeded (`isError` not set).
    fn call(&mut self, tool: &str, arguments: Value) -> bool {
        self.answer(tool, arguments)["result"]["isError"] != true
    }

    fn answer(&mut self, tool: &str, arguments: Value) -> Value {
        self.id += 1;
        let message = json!({"jsonrpc":"2.0","id":self.id,"method":"tools/call","params":{"name":tool,"arguments":arguments}});
        let answer: Value = serde_json::from_str(&self.line(&message.to_string())).unwrap();
        assert!(answer.get("result").is_some(), "{tool}: {answer}");
        answer
    }

    fn kb(&self, field: &str) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .unwrap_or(0.0)
    }

    /// Resident MB: all, anonymous (the process's own), file-backed (the binary's pages).
    fn rss_mb(&self) -> [f64; 3] {
        ["VmRSS:", "RssAnon:", "RssFile:"].map(|field| self.kb(field) / 1024.0)
    }

    /// The `n` mappings with the most resident memory (from `/proc/<pid>/smaps`), mappings of
    /// one file summed: which part of the RSS is the binary's text, a library, the heap or a
    /// thread's arena.
    fn largest_mappings(&self, n: usize) -> Vec<(String, u64, u64)> {
        let smaps =
            std::fs::read_to_string(format!("/proc/{}/smaps", self.child.id())).unwrap_or_default();
        let mut by_name: Vec<(String, u64, u64)> = Vec::new();
        let mut current = String::new();
        for line in smaps.lines() {
            let mut fields = line.split_whitespace();
            let first = fields.next().unwrap_or_default();
            if first.contains('-') && !first.ends_with(':') {
                // A mapping's header: range perms offset dev inode [name].
                let name = fields.nth(4).unwrap_or("[anonymous]");
                current = name.to_owned();
                continue;
            }
            let kb = fields
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
            let slot = match by_name.iter().position(|(name, ..)| *name == current) {
                Some(i) => i,
                None => {
                    by_name.push((current.clone(), 0, 0));
                    by_name.len() - 1
                }
            };
            match first {
                "Rss:" => by_name[slot].1 += kb,
                "Anonymous:" => by_name[slot].2 += kb,
                _ => {}
            }
        }
        by_name.sort_by_key(|m| std::cmp::Reverse(m.1));
        by_name.truncate(n);
        by_name
    }

    fn close(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

fn simulated(dir: &std::path::Path) -> PathBuf {
    let db = dir.join("flota.db");
    let out = Command::new(binary())
        .args(["simular", "--ahora", "2026-08-19T15:30", "--salida"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    db
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let db =
        std::env::var_os("FLOTA_BENCH_DB").map_or_else(|| simulated(dir.path()), PathBuf::from);
    let db = db.to_str().unwrap().to_owned();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "Binary: {}; database: {db}; load average at start: {}\n",
        binary().display(),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );

    // Start → initialize answer, with the database named (opened or not, as the server does).
    let mut starts = Vec::new();
    for _ in 0..50 {
        let started = Instant::now();
        let mut server = Server::spawn(&db);
        let answer = server.line(INIT);
        starts.push(started.elapsed());
        assert!(answer.contains("protocolVersion"), "{answer}");
        server.close();
    }
    starts.sort();
    let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1e3);
    println!("| start → `initialize` (50 cold starts) | p50 | p95 | min |");
    println!("|---|---|---|---|");
    println!(
        "| | {} | {} | {} |\n",
        ms(percentile(&starts, 0.5)),
        ms(percentile(&starts, 0.95)),
        ms(starts[0])
    );

    let mut server = Server::spawn(&db);
    server.line(INIT);
    writeln!(
        server.stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let mut rows = vec![("idle, after `initialize`".to_owned(), server.rss_mb())];
    let stopped = server.answer("unidades_detenidas", json!({"minutos_minimos": 0}));
    rows.push(("after one `unidades_detenidas`".to_owned(), server.rss_mb()));
    let instant = stopped["result"]["structuredContent"]["instante_consulta"]
        .as_str()
        .unwrap()
        .to_owned();
    let today = chrono::NaiveDate::parse_from_str(&instant[..10], "%Y-%m-%d").unwrap();
    let week = (today - chrono::Duration::days(6)).to_string();
    let ranking = server.answer(
        "reporte_kilometraje",
        json!({"fecha_inicio": week, "fecha_fin": "hoy"}),
    );
    let plates: Vec<String> = ranking["result"]["structuredContent"]["ranking"]
        .as_array()
        .map(|units| {
            units
                .iter()
                .filter_map(|u| u["placa"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    assert!(!plates.is_empty(), "no plates from posicion_actual");
    // Maps of unit-days with data: a day without reports (a Sunday) is an error, skipped.
    let maps = 200;
    let (mut drawn, mut skipped, mut i) = (0, 0, 0usize);
    while drawn < maps && i < maps * 10 {
        let plate = &plates[i % plates.len()];
        let day = (today - chrono::Duration::days(1 + (i / plates.len()) as i64 % 7)).to_string();
        i += 1;
        let ok = if drawn % 10 == 9 {
            server.call("mapa_flota", json!({}))
        } else {
            server.call("mapa_recorrido", json!({"placa": plate, "fecha": day}))
        };
        if !ok {
            skipped += 1;
            continue;
        }
        drawn += 1;
        if drawn % 50 == 0 {
            rows.push((format!("after {drawn} maps"), server.rss_mb()));
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    rows.push(("0.5 s later".to_owned(), server.rss_mb()));
    let peak = server.kb("VmHWM:") / 1024.0;
    let threads = server.kb("Threads:");
    let mappings = server.largest_mappings(8);
    server.close();

    println!("| server RSS (MB) | all | anonymous | file-backed |");
    println!("|---|---|---|---|");
    for (when, [all, anon, file]) in rows {
        println!("| {when} | {all:.1} | {anon:.1} | {file:.1} |");
    }
    println!("| peak (VmHWM) | {peak:.1} | | |");
    println!(
        "\nThreads at the end: {threads}. One map in ten is `mapa_flota`; {skipped} unit-days without data skipped."
    );
    println!("\n| largest resident mappings at the end | KB | anonymous KB |");
    println!("|---|---|---|");
    for (name, rss, anon) in mappings {
        println!("| {name} | {rss} | {anon} |");
    }
}
