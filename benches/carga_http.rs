//! Load on `flota servir --http` over loopback: many clients, each with its own session,
//! calling the text tools at a steady total rate; latency percentiles, errors and the
//! server's memory.
//!
//! `cargo bench --bench carga_http` simulates the reference week into a temp dir, starts the
//! release server on a free loopback port with a token, opens 20 sessions and sends 200
//! requests/s in all for 60 s (each client every 100 ms, staggered), measuring each call from
//! send to full answer. `FLOTA_CARGA_CLIENTES`, `FLOTA_CARGA_RPS`, `FLOTA_CARGA_S` change the
//! shape; `FLOTA_BENCH_DB` measures an existing database. The client is a minimal HTTP/1.1
//! one on `std::net` (keep-alive, `Content-Length`), so the number is the server's. Prints
//! Markdown for docs/rendimiento.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;
use common::load_average;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const TOKEN: &str = "carga-secreto";

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One keep-alive connection speaking just enough HTTP/1.1.
struct Connection {
    reader: BufReader<TcpStream>,
    host: String,
    session: Option<String>,
}

impl Connection {
    fn open(host: &str) -> Connection {
        let stream = TcpStream::connect(host).unwrap();
        stream.set_nodelay(true).unwrap();
        Connection {
            reader: BufReader::new(stream),
            host: host.to_owned(),
            session: None,
        }
    }

    /// POSTs `body` to /mcp; returns the status and the body (JSON: `Accept` says so).
    fn post(&mut self, body: &Value) -> (u16, Value) {
        let body = body.to_string();
        let session = self
            .session
            .as_ref()
            .map(|id| format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-11-25\r\n"))
            .unwrap_or_default();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nAccept: application/json\r\n{session}\
             Content-Length: {}\r\n\r\n{body}",
            self.host,
            body.len()
        );
        self.reader.get_mut().write_all(request.as_bytes()).unwrap();
        let mut status_line = String::new();
        self.reader.read_line(&mut status_line).unwrap();
        let status: u16 = status_line.split(' ').nth(1).unwrap().parse().unwrap();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').unwrap();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap(),
                "mcp-session-id" => self.session = Some(value.trim().to_owned()),
                _ => {}
            }
        }
        let mut bytes = vec![0; length];
        self.reader.read_exact(&mut bytes).unwrap();
        let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, value)
    }

    fn initialize(&mut self) {
        let (status, _) = self.post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "carga", "version": "1"}}}));
        assert_eq!(status, 200);
        let (status, _) =
            self.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(status, 202);
    }
}

// The caller kills and waits for the child once the run is over.
#[allow(clippy::zombie_processes)]
fn start_server(db: &str) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flota"))
        .args([
            "servir",
            "--db",
            db,
            "--http",
            "127.0.0.1:0",
            "--token",
            TOKEN,
        ])
        .env("FLOTA_LOG", "info")
        .env("FLOTA_TILES_URL", "no")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the server said no address");
        }
        if let Some(at) = line.find("http://") {
            let host = line[at + 7..].trim().trim_end_matches("/mcp").to_owned();
            // Keep draining the log so the server never blocks on it.
            std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
            return (child, host);
        }
    }
}

fn rss_mb(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmRSS"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The text tools with arguments that find data, varied by client and turn.
fn call_for(client: usize, turn: usize, plates: &[String]) -> (&'static str, Value) {
    let plate = &plates[(client + turn) % plates.len()];
    match turn % 6 {
        0 => ("posicion_actual", json!({"placa": plate})),
        1 => ("unidades_detenidas", json!({"minutos_minimos": 0})),
        2 => (
            "resumen_recorrido",
            json!({"placa": plate, "fecha": "ayer"}),
        ),
        3 => (
            "alertas",
            json!({"fecha_inicio": "anteayer", "fecha_fin": "hoy"}),
        ),
        4 => (
            "verificar_geocerca",
            json!({"placa": plate, "nombre_geocerca": "CEDIS Zona 12", "fecha": "ayer"}),
        ),
        _ => (
            "reporte_kilometraje",
            json!({"fecha_inicio": "anteayer", "fecha_fin": "hoy"}),
        ),
    }
}

#[derive(Default)]
struct Tally {
    times: Vec<(&'static str, Duration)>,
    errors: Vec<String>,
    late: usize,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let clients = setting("FLOTA_CARGA_CLIENTES", 20) as usize;
    let rps = setting("FLOTA_CARGA_RPS", 200);
    let seconds = setting("FLOTA_CARGA_S", 60);
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
    let (mut server, host) = start_server(db.to_str().unwrap());
    let pid = server.id();
    let mut probe = Connection::open(&host);
    probe.initialize();
    let (_, roster) = probe.post(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
        "params": {"uri": "flota://unidades"}}),
    );
    let roster: Value =
        serde_json::from_str(roster["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    let plates: Arc<Vec<String>> = Arc::new(
        roster["unidades"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|u| u["activa"] == true)
            .map(|u| u["placa"].as_str().unwrap().to_owned())
            .collect(),
    );
    let rss_start = rss_mb(pid);
    let load_before = load_average();
    let tally = Arc::new(Mutex::new(Tally::default()));
    let interval = Duration::from_secs_f64(clients as f64 / rps as f64);
    let started = Instant::now();
    let until = started + Duration::from_secs(seconds);
    let workers: Vec<_> = (0..clients)
        .map(|client| {
            let (host, plates, tally) = (host.clone(), Arc::clone(&plates), Arc::clone(&tally));
            std::thread::spawn(move || {
                let mut connection = Connection::open(&host);
                connection.initialize();
                // Staggered so the total rate is even, not 20 requests at once.
                let mut next = started + interval.mul_f64(client as f64 / clients as f64);
                let mut turn = 0;
                while next < until {
                    let now = Instant::now();
                    if now < next {
                        std::thread::sleep(next - now);
                    } else if now > next + interval {
                        tally.lock().unwrap().late += 1;
                    }
                    let (tool, arguments) = call_for(client, turn, &plates);
                    let id = turn as i64 + 10;
                    let sent = Instant::now();
                    let (status, answer) = connection.post(&json!({"jsonrpc": "2.0", "id": id,
                        "method": "tools/call", "params": {"name": tool, "arguments": arguments}}));
                    let elapsed = sent.elapsed();
                    let mut tally = tally.lock().unwrap();
                    if status != 200 || answer["id"] != id || answer["result"]["isError"] == true {
                        tally.errors.push(format!("{tool}: {status} {answer}"));
                    }
                    tally.times.push((tool, elapsed));
                    turn += 1;
                    next += interval;
                }
            })
        })
        .collect();
    let mut rss_max = rss_start;
    // RSS at each quarter of the run: a plateau, not a slope, is what "bounded" means.
    let mut quarters = Vec::new();
    while workers.iter().any(|w| !w.is_finished()) {
        std::thread::sleep(Duration::from_millis(250));
        let rss = rss_mb(pid);
        rss_max = rss_max.max(rss);
        let quarter = (started.elapsed().as_secs_f64() / seconds as f64 * 4.0) as usize;
        if quarter > quarters.len() && quarters.len() < 4 {
            quarters.push(format!("{rss:.1}"));
        }
    }
    for worker in workers {
        worker.join().unwrap();
    }
    let wall = started.elapsed();
    let rss_end = rss_mb(pid);
    let load_after = load_average();
    let _ = server.kill();
    let _ = server.wait();

    let tally = tally.lock().unwrap();
    let mut all: Vec<Duration> = tally.times.iter().map(|(_, d)| *d).collect();
    all.sort();
    println!(
        "{clients} clients, {} requests in {:.1} s ({:.1} requests/s), {} errors, {} sent late",
        all.len(),
        wall.as_secs_f64(),
        all.len() as f64 / wall.as_secs_f64(),
        tally.errors.len(),
        tally.late
    );
    println!("load average before {load_before}, after {load_after}");
    println!(
        "server RSS: {rss_start:.1} MB at start, {rss_max:.1} MB peak, {rss_end:.1} MB at end\n"
    );
    println!("| tool | calls | p50 | p95 | p99 | max |\n|---|---|---|---|---|---|");
    let mut tools: Vec<&str> = tally.times.iter().map(|(t, _)| *t).collect();
    tools.sort_unstable();
    tools.dedup();
    for tool in tools {
        let mut times: Vec<Duration> = tally
            .times
            .iter()
            .filter(|(t, _)| *t == tool)
            .map(|(_, d)| *d)
            .collect();
        times.sort();
        println!(
            "| `{tool}` | {} | {} | {} | {} | {} |",
            times.len(),
            ms(percentile(&times, 0.5)),
            ms(percentile(&times, 0.95)),
            ms(percentile(&times, 0.99)),
            ms(*times.last().unwrap())
        );
    }
    println!(
        "| all | {} | {} | {} | {} | {} |",
        all.len(),
        ms(percentile(&all, 0.5)),
        ms(percentile(&all, 0.95)),
        ms(percentile(&all, 0.99)),
        ms(*all.last().unwrap())
    );
    for error in tally.errors.iter().take(5) {
        println!("error: {error}");
    }
}
