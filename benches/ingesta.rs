//! Positions in at scale: the release `flota recibir` under a simulated fleet, and
//! `flota importar` of a million GPX points.
//!
//! `cargo bench --bench ingesta` runs both and prints Markdown rows for docs/rendimiento.md:
//!
//! - **recibir**: the `escala` fleet (1,000 units) simulated for one day; the busiest hour's
//!   reports are played into `flota recibir` on loopback by the emitter (`flota simular
//!   --emitir`'s, in this process) at the speed-up that makes them about 5,500 reports a
//!   second, for 60 seconds of wall time, into a new database (units registered as they first
//!   report). Reported: reports acknowledged, lost (sent and
//!   acknowledged but not in the database), undelivered, the sustained rate, acknowledgement
//!   latency percentiles, the receiver's peak RSS (`VmHWM`), its stop time, and whether the
//!   detections are current at the end (every acknowledgement came after its analysis was
//!   committed, so "keeps up" is the acknowledgement rate itself).
//! - **importar**: a GPX file of 1,000,000 track points of one unit (15 s apart), imported
//!   into a new database with the analysis; wall time.
//!
//! `FLOTA_BENCH_SEGUNDOS` shortens or lengthens the receiver run (default 60).
//! `FLOTA_BENCH_DB=postgres://…/base` runs the receiver into that PostgreSQL database instead
//! of a new SQLite file (a database without flota's schema: the receiver creates it; drop the
//! database afterwards).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use flota::commands::simulate::{self, Options};
use flota::ingest::emit;
use flota::scenario::{Ahora, Source};
use flota::sim::Report;

const TARGET_RATE: f64 = 5_500.0;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_flota")
}

/// A one-day copy of the `escala` scenario, its routes found where they are, without its
/// random injections (they need earlier days to land in; the receiver does not care).
fn one_day_scenario(dir: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("escenarios/escala.toml")).unwrap();
    let text = text
        .split("[inyecciones.aleatorias]")
        .next()
        .unwrap()
        .replace("dias = 30", "dias = 1")
        .replace(
            "rutas = \"../rutas\"",
            &format!("rutas = \"{}\"", root.join("rutas").display()),
        );
    let path = dir.join("escala_1dia.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The reports delivered in the busiest stretch: the speed-up that plays them at about
/// [`TARGET_RATE`] a second, and those of `seconds` of wall time from the busiest hour on.
fn busiest(units: Vec<(String, Vec<Report>)>, seconds: f64) -> (f64, Vec<(String, Vec<Report>)>) {
    let mut per_hour = std::collections::BTreeMap::<i64, usize>::new();
    for (_, reports) in &units {
        for r in reports {
            *per_hour.entry(r.received_utc / 3600).or_default() += 1;
        }
    }
    let (hour, count) = per_hour
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(h, n)| (*h, *n))
        .unwrap();
    let density = count as f64 / 3600.0;
    let speedup = (TARGET_RATE / density).max(1.0);
    let from = hour * 3600;
    let to = from + (seconds * speedup) as i64;
    let window = units
        .into_iter()
        .map(|(plate, reports)| {
            let kept = reports
                .into_iter()
                .filter(|r| r.received_utc >= from && r.received_utc < to)
                .collect();
            (plate, kept)
        })
        .collect();
    (speedup, window)
}

/// `flota recibir` on a free port; its address (from its log line). The caller waits for it.
#[allow(clippy::zombie_processes)]
fn receiver(db: &str) -> (Child, String) {
    let mut child = Command::new(bin())
        .args([
            "recibir",
            "--escuchar",
            "127.0.0.1:0",
            "--registrar-desconocidas",
            "--zona",
            "America/Guatemala",
            "--db",
        ])
        .arg(db)
        .env("FLOTA_LOG", "debug")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (sender, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("recibir: {line}");
            let _ = sender.send(line);
        }
    });
    loop {
        let line = lines.recv_timeout(Duration::from_secs(300)).unwrap();
        if let Some(rest) = line.split("escuchando en http://").nth(1) {
            return (child, rest.split_whitespace().next().unwrap().to_owned());
        }
    }
}

fn status_kb(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

fn count(db: &Path, sql: &str) -> i64 {
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row(sql, [], |r| r.get(0))
        .unwrap()
}

/// `sql` (one number) on the receiver's database: a SQLite file or a PostgreSQL URL.
fn count_in(db: &str, sql: &str) -> i64 {
    if db.starts_with("postgres") {
        let mut client = postgres::Client::connect(db, postgres::NoTls).unwrap();
        client.batch_execute("SET search_path = flota").unwrap();
        client.query_one(sql, &[]).unwrap().get(0)
    } else {
        count(Path::new(db), sql)
    }
}

fn bench_receiver(dir: &Path, seconds: f64) {
    let scenario = one_day_scenario(dir);
    let sim_db = dir.join("escala.db");
    let started = Instant::now();
    let summary = simulate::simulate(&Options {
        scenario: Source::File(scenario),
        ahora: Ahora::Local(flota::cli::parse_ahora("2026-08-19T23:59").unwrap()),
        db: flota::store::Location::Sqlite(sim_db.clone()),
        truth: dir.join("escala.verdad.jsonl"),
        seed: None,
        progress: false,
        interrupt: flota::plumbing::interrupt::Interrupt::never(),
        keep_reports: true,
        write_db: true,
        workers: None,
    })
    .unwrap();
    eprintln!(
        "simulated {} positions in {:.1} s",
        summary.positions,
        started.elapsed().as_secs_f64()
    );
    let (speedup, window) = busiest(summary.reports, seconds);
    let reports: usize = window.iter().map(|(_, r)| r.len()).sum();
    let units = window.iter().filter(|(_, r)| !r.is_empty()).count();
    // The receiver starts from nothing and registers the units as they first report (a new
    // live database, as `flota recibir` creates it).
    std::fs::remove_file(&sim_db).unwrap();
    let file = dir.join("recibida.db");
    let db = std::env::var("FLOTA_BENCH_DB").unwrap_or_else(|_| file.display().to_string());
    let (mut child, addr) = receiver(&db);
    let pid = child.id();
    let played = emit::emit(
        window,
        &emit::Options {
            url: format!("http://{addr}/"),
            speedup,
            grace: Duration::from_secs(30),
            timeout: Duration::from_secs(10),
        },
    )
    .unwrap();
    let peak_kb = status_kb(pid, "VmHWM:");
    let stop = Instant::now();
    Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    let stop_s = stop.elapsed().as_secs_f64();
    let stored = count_in(&db, "SELECT count(*) FROM posiciones");
    let location = flota::store::Location::parse(Path::new(&db)).unwrap();
    let store = flota::store::Store::open(location).unwrap();
    let meta = store.meta().unwrap();
    let current = store.analysis_state(&meta).unwrap() == flota::store::AnalysisState::Current;
    let events = count_in(&db, "SELECT count(*) FROM eventos");
    eprintln!("{}", played.lines());
    println!(
        "| devices | reports sent | acknowledged | lost | undelivered | rate (ack/s) | p50 | p99 | max | receiver peak RSS | stop | detections | events |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {units} | {reports} (×{speedup:.0}) | {} | {} | {} | {:.0} over {:.1} s | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} MB | {stop_s:.2} s, {} | {} | {events} |",
        played.acknowledged,
        played.acknowledged as i64 - stored.min(played.acknowledged as i64),
        played.undelivered,
        played.rate(),
        played.elapsed.as_secs_f64(),
        played.latency_ms(0.5).unwrap_or(0.0),
        played.latency_ms(0.99).unwrap_or(0.0),
        played.latency_ms(1.0).unwrap_or(0.0),
        peak_kb as f64 / 1024.0,
        if status.success() { "exit 0" } else { "failed" },
        if current { "current" } else { "NOT current" },
    );
}

/// A GPX file of `points` track points of one unit driving and stopping, 15 s apart.
fn write_gpx(path: &Path, points: usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?><gpx version="1.1" creator="flota-bench" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg>"#).unwrap();
    let t0 = 1_767_225_600i64; // 2026-01-01T00:00:00Z
    let (mut lat, mut lon) = (14.6f64, -90.5f64);
    for i in 0..points {
        // Ten minutes driving north-east at ~40 km/h, five standing, over and over.
        if i % 60 < 40 {
            lat += 0.0011;
            lon += 0.0006;
            if lat > 14.8 {
                lat = 14.4;
            }
            if lon > -90.3 {
                lon = -90.7;
            }
        }
        let t = chrono::DateTime::from_timestamp(t0 + i as i64 * 15, 0).unwrap();
        writeln!(
            out,
            r#"<trkpt lat="{lat:.6}" lon="{lon:.6}"><ele>1500</ele><time>{}</time></trkpt>"#,
            t.format("%Y-%m-%dT%H:%M:%SZ")
        )
        .unwrap();
    }
    writeln!(out, "</trkseg></trk></gpx>").unwrap();
}

fn bench_import(dir: &Path) {
    let gpx = dir.join("millon.gpx");
    write_gpx(&gpx, 1_000_000);
    let bytes = std::fs::metadata(&gpx).unwrap().len();
    let db = dir.join("importada.db");
    let started = Instant::now();
    let out = Command::new(bin())
        .arg("importar")
        .arg(&gpx)
        .args(["--placa", "P-000001", "--zona", "America/Guatemala", "--db"])
        .arg(&db)
        .env("FLOTA_LOG", "warn")
        .output()
        .unwrap();
    let elapsed = started.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stored = count(&db, "SELECT count(*) FROM posiciones");
    let events = count(&db, "SELECT count(*) FROM eventos");
    println!();
    println!("| file | points | stored | events | wall time | points/s |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| GPX 1.1, {:.0} MB | 1,000,000 | {stored} | {events} | {elapsed:.2} s | {:.0} |",
        bytes as f64 / 1e6,
        1e6 / elapsed
    );
}

fn main() {
    let seconds: f64 = std::env::var("FLOTA_BENCH_SEGUNDOS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60.0);
    let dir = tempfile::tempdir().unwrap();
    let only = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    if only.as_deref() != Some("importar") {
        bench_receiver(dir.path(), seconds);
    }
    if only.as_deref() != Some("recibir") {
        bench_import(dir.path());
    }
}
