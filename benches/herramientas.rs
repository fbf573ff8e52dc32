//! Tool round trips through the real server: p50/p95 per tool, and the server's memory.
//! Maps are drawn over the offline basemap (`FLOTA_TILES_URL=no`).
//!
//! `cargo bench --bench herramientas` simulates the reference week into a temp dir and times
//! each tool over many calls (varied arguments) through `flota servir` on pipes, as a client
//! would. With `FLOTA_BENCH_DB=/path/flota.db` it measures an existing database instead (the
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
        let mut child = Command::new(env!("CARGO_BIN_EXE_flota"))
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

    fn call(&mut self, tool: &str, arguments: Value) -> (Duration, usize) {
        self.id += 1;
        let message = json!({"jsonrpc":"2.0","id":self.id,"method":"tools/call","params":{"name":tool,"arguments":arguments}});
        let started = Instant::now();
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        let elapsed = started.elapsed();
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert!(answer["result"]["isError"] != true, "{tool}: {line}");
        (elapsed, line.len())
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
    let mut server = Server::spawn(db.to_str().unwrap());
    // Plates and dates from the data itself, so the same bench serves any data set.
    let stopped = server.round_trip(&json!({"jsonrpc":"2.0","id":-1,"method":"tools/call","params":{"name":"unidades_detenidas","arguments":{"minutos_minimos":0}}}));
    let instant = stopped["result"]["structuredContent"]["instante_consulta"]
        .as_str()
        .unwrap()
        .to_owned();
    let today = chrono::NaiveDate::parse_from_str(&instant[..10], "%Y-%m-%d").unwrap();
    let yesterday = (today - chrono::Duration::days(1)).to_string();
    let week = (today - chrono::Duration::days(6)).to_string();
    let ranking = server.round_trip(&json!({"jsonrpc":"2.0","id":-2,"method":"tools/call","params":{"name":"reporte_kilometraje","arguments":{"fecha_inicio":week,"fecha_fin":yesterday}}}));
    let plates: Vec<String> = ranking["result"]["structuredContent"]["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["placa"].as_str().unwrap().to_owned())
        .collect();
    let fence = "CEDIS Zona 12";
    let calls = 200;
    let mut rows = Vec::new();
    for tool in [
        "posicion_actual",
        "unidades_detenidas",
        "resumen_recorrido",
        "mapa_recorrido",
        "alertas",
        "verificar_geocerca",
        "reporte_kilometraje",
    ] {
        let mut times = Vec::new();
        let mut bytes = 0;
        for i in 0..calls {
            let plate = &plates[i % plates.len()];
            let arguments = match tool {
                "posicion_actual" => json!({"placa": plate}),
                "unidades_detenidas" => json!({"minutos_minimos": 30}),
                "resumen_recorrido" | "mapa_recorrido" => {
                    json!({"placa": plate, "fecha": yesterday})
                }
                "alertas" => json!({"fecha_inicio": week, "fecha_fin": "hoy"}),
                "verificar_geocerca" => {
                    json!({"placa": plate, "nombre_geocerca": fence, "fecha": yesterday})
                }
                _ => json!({"fecha_inicio": week, "fecha_fin": "hoy"}),
            };
            let (elapsed, size) = server.call(tool, arguments);
            times.push(elapsed);
            bytes = bytes.max(size);
        }
        times.sort();
        rows.push((
            tool,
            percentile(&times, 0.5),
            percentile(&times, 0.95),
            bytes,
        ));
    }
    let (rss, peak) = (server.rss_mb("VmRSS:"), server.rss_mb("VmHWM:"));
    drop(server.stdin);
    let _ = server.child.wait();

    let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1e3);
    println!(
        "Database: {} ({} plates); {calls} calls per tool.\n",
        db.display(),
        plates.len()
    );
    println!("| tool | p50 | p95 | largest answer |");
    println!("|---|---|---|---|");
    for (tool, p50, p95, bytes) in rows {
        println!(
            "| `{tool}` | {} | {} | {:.1} KB |",
            ms(p50),
            ms(p95),
            bytes as f64 / 1024.0
        );
    }
    println!("\nServer RSS after the run: {rss:.1} MB (peak {peak:.1} MB).");
}
