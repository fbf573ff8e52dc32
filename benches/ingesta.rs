//! Positions in at scale: the release `flota recibir` under a simulated fleet, and
//! `flota importar` of a million GPX points.
//!
//! `cargo bench --bench ingesta` runs both and prints Markdown rows for docs/rendimiento.md:
//!
//! - **recibir**: the `escala` fleet (1,000 units) simulated for one day; the busiest hour's
//!   reports are played into `flota recibir` on loopback by the emitter (`flota simular
//!   --emitir`'s, in this process) at the speed-up that makes them about 5.5 reports a second
//!   per device (5,500 a second for 1,000), for 60 seconds of wall time, into a new database
//!   (units registered as they first report). Reported: reports acknowledged, lost (sent and
//!   acknowledged but not in the database), undelivered, the sustained rate, acknowledgement
//!   latency percentiles, the receiver's peak RSS (`VmHWM`) and the peaks of its anonymous and
//!   file-backed parts (`/proc/<pid>/status` sampled every 100 ms), its threads, the CPU
//!   seconds it used (per 1,000 reports: a cost that does not depend on contention), its stop
//!   time, whether the detections are current at the end (every acknowledgement came after
//!   its analysis was committed, so "keeps up" is the acknowledgement rate itself), and the
//!   load average at the start and end. With `FLOTA_LOG=debug` semantics on the receiver, its
//!   writer's whole-run summary (transaction durations by bucket) is printed after the table.
//! - **importar**: a GPX file of 1,000,000 track points of one unit (15 s apart), imported
//!   into a new database with the analysis; wall time.
//!
//! `FLOTA_BENCH_SEGUNDOS` shortens or lengthens the receiver run (default 60).
//! `FLOTA_BENCH_DISPOSITIVOS=100,500,1000,2000` runs the receiver once per device count (the
//! scenario's `cantidad` set to it, the same rate per device) and draws the growth curve —
//! memory, rate and latency against devices — into `FLOTA_BENCH_GRAFICO` (default
//! `docs/img/recibir_crecimiento.png`).
//! `FLOTA_BENCH_BIN` runs another build of `flota` as the receiver (before/after comparisons).
//! `FLOTA_BENCH_DB=postgres://…/base` runs the receiver into that PostgreSQL database instead
//! of a new SQLite file (a database without flota's schema: the receiver creates it; drop the
//! database afterwards).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;
use common::{binary as bin, load_average};

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use flota::commands::simulate::{self, Options};
use flota::ingest::emit;
use flota::scenario::{Ahora, Source};
use flota::sim::Report;

/// Reports a second per device: 5,500 a second for the 1,000 of the `escala` fleet.
const RATE_PER_DEVICE: f64 = 5.5;

/// A one-day copy of the `escala` scenario with `devices` units, its routes found where they
/// are, without its random injections (they need earlier days to land in; the receiver does
/// not care).
fn one_day_scenario(dir: &Path, devices: usize) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("escenarios/escala.toml")).unwrap();
    assert!(
        text.contains("cantidad = 1000"),
        "escala.toml changed shape"
    );
    let text = text
        .split("[inyecciones.aleatorias]")
        .next()
        .unwrap()
        .replace("dias = 30", "dias = 1")
        .replace("cantidad = 1000", &format!("cantidad = {devices}"))
        .replace(
            "rutas = \"../rutas\"",
            &format!("rutas = \"{}\"", root.join("rutas").display()),
        );
    let path = dir.join(format!("escala_1dia_{devices}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// The reports delivered in the busiest stretch: the speed-up that plays them at about
/// [`RATE_PER_DEVICE`] a second per unit, and those of `seconds` of wall time from the
/// busiest hour on.
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
    let speedup = (RATE_PER_DEVICE * units.len() as f64 / density).max(1.0);
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

/// `flota recibir` on a free port; its address (from its log line), and the lines its writer
/// logs about itself. The caller waits for it.
#[allow(clippy::zombie_processes)]
fn receiver(db: &str) -> (Child, String, Arc<Mutex<Vec<String>>>) {
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
    let writer_lines = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&writer_lines);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("recibir: {line}");
            if line.contains("escritor")
                || line.contains("receptor, esperas")
                || line.contains("checkpoints:")
            {
                kept.lock().unwrap().push(line.clone());
            }
            let _ = sender.send(line);
        }
    });
    loop {
        let line = lines.recv_timeout(Duration::from_secs(300)).unwrap();
        if let Some(rest) = line.split("escuchando en http://").nth(1) {
            return (
                child,
                rest.split_whitespace().next().unwrap().to_owned(),
                writer_lines,
            );
        }
    }
}

fn status_kb(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status_field(&status, key)
}

fn status_field(status: &str, key: &str) -> u64 {
    status
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// The largest resident sizes seen, KiB, and threads.
#[derive(Debug, Default, Clone, Copy)]
struct Peaks {
    rss_kb: u64,
    anon_kb: u64,
    file_kb: u64,
    threads: u64,
    /// The write-ahead log's largest size, bytes (SQLite only).
    wal_bytes: u64,
}

/// Samples `/proc/<pid>/status`, and the size of `wal` (the database's `-wal` file), every
/// 100 ms until `stop`.
fn sample_memory(pid: u32, wal: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Peaks> {
    std::thread::spawn(move || {
        let mut peaks = Peaks::default();
        while !stop.load(Ordering::Relaxed) {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            peaks.rss_kb = peaks.rss_kb.max(status_field(&status, "VmRSS:"));
            peaks.anon_kb = peaks.anon_kb.max(status_field(&status, "RssAnon:"));
            peaks.file_kb = peaks.file_kb.max(status_field(&status, "RssFile:"));
            peaks.threads = peaks.threads.max(status_field(&status, "Threads:"));
            let wal_bytes = std::fs::metadata(&wal).map_or(0, |m| m.len());
            peaks.wal_bytes = peaks.wal_bytes.max(wal_bytes);
            std::thread::sleep(Duration::from_millis(100));
        }
        peaks
    })
}

/// CPU seconds (user + system) a process has used so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    let rest = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<u64> = rest
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let ticks = fields.get(11).unwrap_or(&0) + fields.get(12).unwrap_or(&0);
    let per_s: f64 = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0);
    ticks as f64 / per_s
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

/// One receiver run's figures.
struct Run {
    devices: usize,
    reports: usize,
    /// Reports a second the emitter was to play.
    offered: f64,
    speedup: f64,
    played: emit::Summary,
    lost: i64,
    peak_kb: u64,
    peaks: Peaks,
    cpu_s: f64,
    stop_s: f64,
    exited: bool,
    current: bool,
    events: i64,
    load: (String, String),
    writer: Vec<String>,
}

impl Run {
    fn header() -> &'static str {
        "| devices | reports sent | acknowledged | lost | undelivered | rate (ack/s) | p50 | p99 | max | peak RSS | anon / file | threads | CPU (s per 1,000) | stop | detections | events | load start → end |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    }

    fn row(&self) -> String {
        let played = &self.played;
        format!(
            "| {} | {} (×{:.0}) | {} | {} | {} | {:.0} over {:.1} s | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} MB | {:.1} / {:.1} MB | {} | {:.1} s ({:.3}) | {:.2} s, {} | {} | {} | {} → {} |",
            self.devices,
            self.reports,
            self.speedup,
            played.acknowledged,
            self.lost,
            played.undelivered,
            played.rate(),
            played.elapsed.as_secs_f64(),
            played.latency_ms(0.5).unwrap_or(0.0),
            played.latency_ms(0.99).unwrap_or(0.0),
            played.latency_ms(1.0).unwrap_or(0.0),
            self.peak_kb as f64 / 1024.0,
            self.peaks.anon_kb as f64 / 1024.0,
            self.peaks.file_kb as f64 / 1024.0,
            self.peaks.threads,
            self.cpu_s,
            self.cpu_s * 1000.0 / (played.acknowledged.max(1) as f64),
            self.stop_s,
            if self.exited { "exit 0" } else { "failed" },
            if self.current {
                "current"
            } else {
                "NOT current"
            },
            self.events,
            self.load.0,
            self.load.1,
        )
    }
}

fn bench_receiver(dir: &Path, seconds: f64, devices: usize) -> Run {
    let scenario = one_day_scenario(dir, devices);
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
    let _ = std::fs::remove_file(dir.join("escala.verdad.jsonl"));
    let file = dir.join(format!("recibida_{devices}.db"));
    let db = std::env::var("FLOTA_BENCH_DB").unwrap_or_else(|_| file.display().to_string());
    let load_start = load_average();
    let (mut child, addr, writer) = receiver(&db);
    let pid = child.id();
    let sampling = Arc::new(AtomicBool::new(false));
    let sampler = sample_memory(
        pid,
        PathBuf::from(format!("{db}-wal")),
        Arc::clone(&sampling),
    );
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
    let cpu_s = cpu_seconds(pid);
    sampling.store(true, Ordering::Relaxed);
    let peaks = sampler.join().unwrap();
    let load_end = load_average();
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
    drop(store);
    eprintln!("{}", played.lines());
    if !db.starts_with("postgres") {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{db}{suffix}"));
        }
    }
    let writer = writer.lock().unwrap().clone();
    Run {
        devices: units,
        reports,
        offered: reports as f64 / seconds,
        speedup,
        lost: played.acknowledged as i64 - stored.min(played.acknowledged as i64),
        played,
        peak_kb,
        peaks,
        cpu_s,
        stop_s,
        exited: status.success(),
        current,
        events,
        load: (load_start, load_end),
        writer,
    }
}

/// The device counts of `FLOTA_BENCH_DISPOSITIVOS` (default: the fleet's 1,000).
fn device_counts() -> Vec<usize> {
    std::env::var("FLOTA_BENCH_DISPOSITIVOS")
        .ok()
        .map(|list| {
            list.split(',')
                .filter_map(|n| n.trim().parse().ok())
                .filter(|n| *n > 0)
                .collect::<Vec<usize>>()
        })
        .filter(|counts| !counts.is_empty())
        .unwrap_or_else(|| vec![1000])
}

fn receiver_runs(dir: &Path, seconds: f64) {
    let counts = device_counts();
    println!(
        "Receiver: {}; {seconds} s per run; load average at start: {}\n",
        bin().display(),
        load_average()
    );
    let mut runs = Vec::new();
    for devices in counts {
        let run = bench_receiver(dir, seconds, devices);
        eprintln!("{}\n{}", Run::header(), run.row());
        runs.push(run);
    }
    println!("{}", Run::header());
    for run in &runs {
        println!("{}", run.row());
    }
    for run in &runs {
        if let Some(total) = run
            .writer
            .iter()
            .rev()
            .find(|l| l.contains("toda la sesión"))
        {
            println!(
                "\n{} devices, the writer over the whole run: {}",
                run.devices, total
            );
        }
        // Where an acknowledgement waited, from the emitter's side in: the receiver's
        // handler, and the writer from queue to answer (their debug lines).
        for line in run
            .writer
            .iter()
            .filter(|l| l.contains("esperas") || l.contains("checkpoints:"))
        {
            println!("{} devices: {line}", run.devices);
        }
        println!(
            "{} devices, the write-ahead log's largest size: {:.1} MB",
            run.devices,
            run.peaks.wal_bytes as f64 / 1e6
        );
        let at_least = |ms: u64| {
            let us = ms * 1000;
            run.played.latencies_us.iter().filter(|l| **l >= us).count()
        };
        println!(
            "{} devices, acknowledgements at the emitter: {} of them ≥ 10 ms: {}, ≥ 20 ms: {}, ≥ 50 ms: {}",
            run.devices,
            run.played.latencies_us.len(),
            at_least(10),
            at_least(20),
            at_least(50)
        );
    }
    if runs.len() > 1 {
        let path = std::env::var_os("FLOTA_BENCH_GRAFICO").map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/img/recibir_crecimiento.png"),
            PathBuf::from,
        );
        std::fs::write(&path, growth_chart(&runs)).unwrap();
        println!("\nGrowth curve: {}", path.display());
    }
}

/// A chart's line: its name, colour and points.
type Line = (&'static str, plotters::prelude::RGBColor, Vec<(f64, f64)>);

/// Three panels against the device count: peak RSS (all, anonymous, file-backed; the 64 MB
/// target dashed), acknowledged and offered reports a second, and p50/p99 latency (the 50 ms
/// target dashed).
fn growth_chart(runs: &[Run]) -> Vec<u8> {
    use plotters::prelude::*;
    const PANEL: (u32, u32) = (380, 360);
    let width = PANEL.0 * 3;
    let mut rgb = vec![255u8; (width * PANEL.1 * 3) as usize];
    flota::map::register_fonts();
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (width, PANEL.1)).into_drawing_area();
        let root = root
            .titled(
                "flota recibir según el número de dispositivos (5,5 reportes/s cada uno)",
                ("sans-serif", 16),
            )
            .unwrap();
        let panels = root.split_evenly((1, 3));
        let max_x = runs.iter().map(|r| r.devices).max().unwrap_or(1) as f64 * 1.05;
        let mb = |kb: u64| kb as f64 / 1024.0;
        let memory: [Line; 3] = [
            (
                "pico RSS",
                RGBColor(31, 119, 180),
                runs.iter()
                    .map(|r| (r.devices as f64, mb(r.peak_kb)))
                    .collect(),
            ),
            (
                "anónima",
                RGBColor(214, 39, 40),
                runs.iter()
                    .map(|r| (r.devices as f64, mb(r.peaks.anon_kb)))
                    .collect(),
            ),
            (
                "de archivo",
                RGBColor(44, 160, 44),
                runs.iter()
                    .map(|r| (r.devices as f64, mb(r.peaks.file_kb)))
                    .collect(),
            ),
        ];
        let rate: [Line; 2] = [
            (
                "ofrecidos/s",
                RGBColor(127, 127, 127),
                runs.iter().map(|r| (r.devices as f64, r.offered)).collect(),
            ),
            (
                "confirmados/s",
                RGBColor(31, 119, 180),
                runs.iter()
                    .map(|r| (r.devices as f64, r.played.rate()))
                    .collect(),
            ),
        ];
        let latency: [Line; 2] = [
            (
                "p50",
                RGBColor(44, 160, 44),
                runs.iter()
                    .map(|r| (r.devices as f64, r.played.latency_ms(0.5).unwrap_or(0.0)))
                    .collect(),
            ),
            (
                "p99",
                RGBColor(214, 39, 40),
                runs.iter()
                    .map(|r| (r.devices as f64, r.played.latency_ms(0.99).unwrap_or(0.0)))
                    .collect(),
            ),
        ];
        panel(&panels[0], "memoria (MB)", max_x, &memory, Some(64.0));
        panel(&panels[1], "reportes por segundo", max_x, &rate, None);
        panel(&panels[2], "confirmación (ms)", max_x, &latency, Some(50.0));
    }
    flota::map::encode_png(&rgb, width, PANEL.1).unwrap()
}

/// One panel: lines with dots, a legend, and a dashed target.
fn panel<DB: plotters::prelude::DrawingBackend>(
    area: &plotters::prelude::DrawingArea<DB, plotters::coord::Shift>,
    y_desc: &str,
    max_x: f64,
    series: &[Line],
    target: Option<f64>,
) {
    use plotters::prelude::*;
    let max_y = series
        .iter()
        .flat_map(|(_, _, points)| points.iter().map(|p| p.1))
        .chain(target)
        .fold(1.0f64, f64::max)
        * 1.15;
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..max_x, 0.0..max_y)
        .unwrap();
    let whole = |v: &f64| format!("{v:.0}");
    chart
        .configure_mesh()
        .x_desc("dispositivos")
        .y_desc(y_desc)
        .x_labels(5)
        .x_label_formatter(&whole)
        .y_label_formatter(&whole)
        .label_style(("sans-serif", 12))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .unwrap();
    if let Some(target) = target {
        let dashes = (0..40).map(|i| {
            let a = max_x * f64::from(i) / 40.0;
            PathElement::new(
                [(a, target), (a + max_x / 70.0, target)],
                BLACK.mix(0.5).stroke_width(1),
            )
        });
        chart.draw_series(dashes).unwrap();
    }
    for (name, colour, points) in series {
        let colour = *colour;
        chart
            .draw_series(std::iter::once(PathElement::new(
                points.clone(),
                colour.stroke_width(2),
            )))
            .unwrap()
            .label(*name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], colour.stroke_width(2)));
        chart
            .draw_series(points.iter().map(|p| Circle::new(*p, 3, colour.filled())))
            .unwrap();
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 12))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK.mix(0.3))
        .draw()
        .unwrap();
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
        receiver_runs(dir.path(), seconds);
    }
    if only.as_deref() != Some("recibir") {
        bench_import(dir.path());
    }
}
