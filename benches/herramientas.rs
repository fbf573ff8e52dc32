//! Tool round trips through the real server: p50/p95 per tool, and the server's memory.
//! Maps are drawn over the offline basemap (`FLOTA_TILES_URL=no`).
//!
//! `cargo bench --bench herramientas` simulates the reference week into a temp dir and times
//! each tool over many calls (varied arguments) through `flota servir` on pipes, as a client
//! would: the tools over a range of dates at ranges of 1, 7, 31 and 92 days ending today, the
//! tools about one day over the days of such a window in turn, the tools about "now" once.
//! `FLOTA_BENCH_CALLS` sets the calls per tool and window (200), `FLOTA_BENCH_TOOL` measures one
//! tool only, `FLOTA_BENCH_BIN` another build of the server (before and after a change). With `FLOTA_BENCH_DB=/path/flota.db` it measures an existing database instead (the
//! 1,000 × 30-day scale set: `flota simular escenarios/escala.toml --salida …` first).
//! Prints Markdown for docs/rendimiento.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    id: i64,
}

impl Server {
    fn spawn(db: &str) -> Server {
        let binary = std::env::var_os("FLOTA_BENCH_BIN")
            .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_flota")), PathBuf::from);
        let mut child = Command::new(binary)
            .args(["servir", "--db", db])
            .env("FLOTA_LOG", "error")
            // Maps over the offline basemap: the number measures flota, not a tile server.
            .env("FLOTA_TILES_URL", "no")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut server = Server {
            child,
            stdin,
            stdout,
            id: 0,
        };
        server.round_trip(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}));
        writeln!(
            server.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        server
    }

    fn round_trip(&mut self, message: &Value) -> Value {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    }

    /// The call's time and answer size, or `None` when the tool answered with an error.
    fn call(&mut self, tool: &str, arguments: Value) -> Option<(Duration, usize)> {
        self.id += 1;
        let message = json!({"jsonrpc":"2.0","id":self.id,"method":"tools/call","params":{"name":tool,"arguments":arguments}});
        let started = Instant::now();
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        let elapsed = started.elapsed();
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert!(answer.get("result").is_some(), "{tool}: {line}");
        (answer["result"]["isError"] != true).then_some((elapsed, line.len()))
    }

    fn rss_mb(&self, field: &str) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// What a tool's calls range over: nothing (it answers about "now"), one day among the
/// window's last `days` days, or the whole window as a range of dates.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Now,
    Day,
    Range,
}

const TOOLS: [(&str, Shape); 8] = [
    ("posicion_actual", Shape::Now),
    ("unidades_detenidas", Shape::Now),
    ("mapa_flota", Shape::Now),
    ("resumen_recorrido", Shape::Day),
    ("mapa_recorrido", Shape::Day),
    ("verificar_geocerca", Shape::Day),
    ("alertas", Shape::Range),
    ("reporte_kilometraje", Shape::Range),
];

/// Window lengths in days: a day, a week, a month, the 92-day maximum (93 days allowed).
const WINDOWS: [i64; 4] = [1, 7, 31, 92];

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let db: PathBuf = match std::env::var("FLOTA_BENCH_DB") {
        Ok(path) => PathBuf::from(path),
        Err(_) => {
            let db = dir.path().join("flota.db");
            let out = Command::new(env!("CARGO_BIN_EXE_flota"))
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
    };
    let calls: usize = std::env::var("FLOTA_BENCH_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let only: Option<String> = std::env::var("FLOTA_BENCH_TOOL").ok();
    let mut server = Server::spawn(db.to_str().unwrap());
    // Plates and dates from the data itself, so the same bench serves any data set.
    let stopped = server.round_trip(&json!({"jsonrpc":"2.0","id":-1,"method":"tools/call","params":{"name":"unidades_detenidas","arguments":{"minutos_minimos":0}}}));
    let instant = stopped["result"]["structuredContent"]["instante_consulta"]
        .as_str()
        .unwrap()
        .to_owned();
    let today = chrono::NaiveDate::parse_from_str(&instant[..10], "%Y-%m-%d").unwrap();
    let day = |back: i64| (today - chrono::Duration::days(back)).to_string();
    let ranking = server.round_trip(&json!({"jsonrpc":"2.0","id":-2,"method":"tools/call","params":{"name":"reporte_kilometraje","arguments":{"fecha_inicio":day(6),"fecha_fin":day(1)}}}));
    let plates: Vec<String> = ranking["result"]["structuredContent"]["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["placa"].as_str().unwrap().to_owned())
        .collect();
    let fence = "CEDIS Zona 12";
    let mut rows = Vec::new();
    for (tool, shape) in TOOLS {
        if only.as_deref().is_some_and(|o| o != tool) {
            continue;
        }
        let windows: &[i64] = if shape == Shape::Now { &[0] } else { &WINDOWS };
        for &window in windows {
            let mut times = Vec::new();
            let (mut bytes, mut refused) = (0, 0);
            for i in 0..calls {
                let plate = &plates[i % plates.len()];
                // Single-day tools: the days of the window in turn, today last (a day in
                // progress), so older pages are read as well as recent ones.
                let date = day((i as i64 * 7919) % window.max(1));
                let arguments = match tool {
                    "posicion_actual" => json!({"placa": plate}),
                    "unidades_detenidas" => json!({"minutos_minimos": 30}),
                    "mapa_flota" => json!({}),
                    "resumen_recorrido" | "mapa_recorrido" => {
                        json!({"placa": plate, "fecha": date})
                    }
                    "verificar_geocerca" => {
                        json!({"placa": plate, "nombre_geocerca": fence, "fecha": date})
                    }
                    _ => json!({"fecha_inicio": day(window - 1), "fecha_fin": "hoy"}),
                };
                match server.call(tool, arguments) {
                    Some((elapsed, size)) => {
                        times.push(elapsed);
                        bytes = bytes.max(size);
                    }
                    // A unit-day without data (before the data began) is answered with an
                    // error; it is left out of the figures and counted.
                    None => refused += 1,
                }
            }
            times.sort();
            if times.is_empty() {
                continue;
            }
            rows.push((
                tool,
                window,
                percentile(&times, 0.5),
                percentile(&times, 0.95),
                bytes,
                refused,
            ));
        }
    }
    let (rss, peak) = (server.rss_mb("VmRSS:"), server.rss_mb("VmHWM:"));
    drop(server.stdin);
    let _ = server.child.wait();

    let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1e3);
    println!(
        "Database: {} ({} plates); {calls} calls per tool and window; today {today}.\n",
        db.display(),
        plates.len()
    );
    println!("| tool | window (days) | p50 | p95 | largest answer | answered with an error |");
    println!("|---|---|---|---|---|---|");
    for (tool, window, p50, p95, bytes, refused) in rows {
        let window = if window == 0 {
            "now".to_owned()
        } else {
            window.to_string()
        };
        println!(
            "| `{tool}` | {window} | {} | {} | {:.1} KB | {refused} |",
            ms(p50),
            ms(p95),
            bytes as f64 / 1024.0
        );
    }
    println!("\nServer RSS after the run: {rss:.1} MB (peak {peak:.1} MB).");
}
