//! What `flota simular` writes and reads to build a scenario's files, against the files'
//! size, and its time against a SQLite-only copy of its own positions measured in the same
//! run; with `FLOTA_BENCH_CRECIMIENTO`, how its time and memory grow with units × days.
//!
//! `cargo bench --bench escritura` runs the release binary on `escenarios/escala.toml`
//! (1,000 units × 30 days: about 2.5 GB of files in a temp dir, removed at the end; set
//! `FLOTA_BENCH_ESCENARIO` to another scenario file for a smaller fleet of the same shape).
//! The child's `/proc/<pid>/io` and `/proc/<pid>/stat` are read once it has exited and before
//! it is reaped (`waitid` with `WNOWAIT`): `wchar`/`rchar` are the bytes it handed to and took
//! from the kernel (what SQLite rewrote or read back, page cache or not),
//! `write_bytes`/`read_bytes` what reached or came from the storage layer, and its CPU time
//! (user + system, all threads). While it runs, `/proc/<pid>/task/<pid>/stat` gives the CPU
//! time of its main thread — the writer — and `/proc/<pid>/status` its peak resident memory.
//! These do not depend on CPU contention; the wall times do (the load average is printed).
//! Then the copy: a new file with the same schema and page size, journal off, `INSERT INTO
//! posiciones SELECT * FROM` the simulated file, one transaction — the floor for any
//! SQLite-backed writer of these rows —, timed by the wall clock and by this thread's CPU time.
//! Besides the wall-clock ratio it prints the ratio a quiet machine would show if CPU were the
//! only limit: the command cannot end before its writer thread's CPU time, nor before its
//! total CPU time spread over every core.
//!
//! `FLOTA_BENCH_CRECIMIENTO=100,1000,10000` (units; `FLOTA_BENCH_DIAS` days each, 3 unless
//! set) runs the scale scenario's shape at each fleet size, with its random injections
//! scaled to the unit-days, deleting each point's files before the next; prints the table and
//! draws `docs/img/crecimiento_simular.png`. `FLOTA_BENCH_BIN` measures another build of the
//! binary. Linux only. Prints Markdown for docs/rendimiento.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;
use common::{binary, load_average};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use plotters::prelude::*;
use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};

/// Linux reports CPU times in `/proc` in ticks of 1/100 s (`USER_HZ`) on every architecture
/// this runs on.
const TICKS_PER_S: f64 = 100.0;

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// User + system CPU seconds from a `/proc/…/stat` line (fields 14 and 15, counted after
/// the parenthesised command name, which may hold spaces).
fn cpu_s(stat: &str) -> Option<f64> {
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    Some((ticks(11)? + ticks(12)?) / TICKS_PER_S)
}

/// `VmHWM` (peak resident set) in bytes from a `/proc/<pid>/status`.
fn peak_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// One `flota simular` run as seen from outside.
struct Run {
    io: HashMap<String, u64>,
    wall_s: f64,
    /// User + system, every thread.
    cpu_s: f64,
    /// The main thread's: the writer.
    writer_cpu_s: f64,
    /// The busiest thread's (the writer or a simulation worker).
    busiest_cpu_s: f64,
    peak_rss: u64,
}

impl Run {
    /// The shortest wall time CPU alone allows on this machine's cores: no less than the
    /// busiest thread's CPU time, nor than all of it spread over every core.
    fn cpu_bound_s(&self) -> f64 {
        self.busiest_cpu_s.max(self.cpu_s / cores() as f64)
    }
}

/// Runs `flota simular` and returns what it cost.
fn simulate(scenario: &Path, db: &Path) -> Run {
    let started = Instant::now();
    let mut child = Command::new(binary())
        .arg("simular")
        .arg(scenario)
        .args(["--ahora", "2026-08-19T15:30", "--salida"])
        .arg(db)
        .env("FLOTA_LOG", "error")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = Pid::from_child(&child);
    let proc = format!("/proc/{}", child.id());
    let (mut threads, mut peak) = (HashMap::<String, f64>::new(), 0);
    loop {
        // Sampled until the process exits: the last reading is at most one period old.
        for task in std::fs::read_dir(format!("{proc}/task"))
            .into_iter()
            .flatten()
        {
            let Ok(task) = task else { continue };
            if let Some(cpu) = std::fs::read_to_string(task.path().join("stat"))
                .ok()
                .and_then(|s| cpu_s(&s))
            {
                threads.insert(task.file_name().to_string_lossy().into_owned(), cpu);
            }
        }
        if let Some(rss) = std::fs::read_to_string(format!("{proc}/status"))
            .ok()
            .and_then(|s| peak_rss(&s))
        {
            peak = peak.max(rss);
        }
        let exited = waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG,
        )
        .unwrap();
        if exited.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let io = std::fs::read_to_string(format!("{proc}/io")).unwrap();
    let total_cpu_s = cpu_s(&std::fs::read_to_string(format!("{proc}/stat")).unwrap()).unwrap();
    let status = child.wait().unwrap();
    let wall_s = started.elapsed().as_secs_f64();
    assert!(status.success(), "flota simular: {status}");
    let io = io
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_owned(), v.trim().parse().unwrap_or(0)))
        .collect();
    Run {
        io,
        wall_s,
        cpu_s: total_cpu_s,
        writer_cpu_s: threads.get(&child.id().to_string()).copied().unwrap_or(0.0),
        busiest_cpu_s: threads.values().copied().fold(0.0, f64::max),
        peak_rss: peak,
    }
}

/// This thread's CPU seconds so far.
fn thread_cpu_s() -> f64 {
    cpu_s(&std::fs::read_to_string("/proc/thread-self/stat").unwrap()).unwrap()
}

/// The same positions copied by SQLite alone into a new file of the same schema: wall and
/// CPU seconds.
/// Copies the positions of `db` into a new file with the same table: wall and CPU seconds.
/// `row_by_row`: with a `WHERE` that keeps every row, which turns off SQLite's transfer
/// optimisation (a plain `INSERT INTO t SELECT * FROM t2` of identical tables copies the
/// records without decoding them): the floor for a writer that inserts rows.
fn copy_seconds(db: &Path, copy: &Path, row_by_row: bool) -> (f64, f64) {
    let source = rusqlite::Connection::open(db).unwrap();
    let schema: String = source
        .query_row(
            "SELECT sql FROM sqlite_master WHERE name = 'posiciones'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    drop(source);
    let conn = rusqlite::Connection::open(copy).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA foreign_keys = OFF; PRAGMA page_size = 16384;",
    )
    .unwrap();
    conn.execute_batch(&schema).unwrap();
    conn.execute("ATTACH DATABASE ?1 AS origen", [db.to_str().unwrap()])
        .unwrap();
    let (started, cpu) = (Instant::now(), thread_cpu_s());
    let filter = if row_by_row { " WHERE 1" } else { "" };
    conn.execute_batch(&format!(
        "BEGIN; INSERT INTO posiciones SELECT * FROM origen.posiciones{filter}; COMMIT;"
    ))
    .unwrap();
    (started.elapsed().as_secs_f64(), thread_cpu_s() - cpu)
}

fn main() {
    if let Ok(sizes) = std::env::var("FLOTA_BENCH_CRECIMIENTO") {
        growth(&sizes);
        return;
    }
    let scenario = std::env::var_os("FLOTA_BENCH_ESCENARIO").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("escenarios/escala.toml"),
        PathBuf::from,
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("flota.db");
    let truth = dir.path().join("flota.verdad.jsonl");
    let load_before = load_average();
    let run = simulate(&scenario, &db);
    let db_bytes = std::fs::metadata(&db).unwrap().len();
    let truth_bytes = std::fs::metadata(&truth).map_or(0, |m| m.len());

    let mb = |bytes: u64| bytes as f64 / 1e6;
    let files = db_bytes + truth_bytes;
    println!(
        "Scenario: {}; binary: {}; {} cores; load average {load_before} before.\n",
        scenario.display(),
        binary().display(),
        cores()
    );
    println!("| measure | MB | × database | × database + truth log |");
    println!("|---|---|---|---|");
    println!("| database | {:.1} | | |", mb(db_bytes));
    println!("| truth log | {:.1} | | |", mb(truth_bytes));
    for key in ["wchar", "write_bytes", "rchar", "read_bytes"] {
        let value = run.io.get(key).copied().unwrap_or(0);
        println!(
            "| `{key}` | {:.1} | {:.2} | {:.2} |",
            mb(value),
            value as f64 / db_bytes as f64,
            value as f64 / files as f64
        );
    }
    let (copy_s, copy_cpu_s) = copy_seconds(&db, &dir.path().join("copia.db"), false);
    std::fs::remove_file(dir.path().join("copia.db")).unwrap();
    let (rows_s, rows_cpu_s) = copy_seconds(&db, &dir.path().join("copia_filas.db"), true);
    println!(
        "\n`flota simular`: {:.2} s wall, {:.2} s CPU ({:.2} s in its writer thread, {:.2} s in \
         its busiest thread), peak RSS {:.1} MB. SQLite-only copy of its positions: {copy_s:.2} s \
         wall, {copy_cpu_s:.2} s CPU.",
        run.wall_s,
        run.cpu_s,
        run.writer_cpu_s,
        run.busiest_cpu_s,
        mb(run.peak_rss)
    );
    println!(
        "Ratio, wall clock: {:.2}. Ratio if CPU were the only limit (max(busiest thread's CPU, \
         CPU / {} cores) / copy CPU): {:.2}. Load average after: {}.",
        run.wall_s / copy_s,
        cores(),
        run.cpu_bound_s() / copy_cpu_s,
        load_average()
    );
    println!(
        "Row by row (`INSERT … SELECT … WHERE 1`, no transfer optimisation): {rows_s:.2} s wall, \
         {rows_cpu_s:.2} s CPU; ratio, wall clock: {:.2}; if CPU were the only limit: {:.2}.",
        run.wall_s / rows_s,
        run.cpu_bound_s() / rows_cpu_s,
    );
}

/// The scale scenario with `units` units over `days` days, its random injections scaled
/// to the unit-days (the shipped file's 30,000), its routes found where they are.
fn scenario_text(units: usize, days: usize) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("escenarios/escala.toml")).unwrap();
    let scale = (units * days) as f64 / 30_000.0;
    let mut injections = false;
    text.lines()
        .map(|line| {
            let (key, value) = line.split_once(" = ").unwrap_or((line, ""));
            injections |= line.starts_with("[inyecciones.aleatorias]");
            match key {
                "cantidad" => format!("cantidad = {units}"),
                "dias" => format!("dias = {days}"),
                "rutas" if value.starts_with('"') => {
                    format!("rutas = {:?}", root.join("rutas").display().to_string())
                }
                _ if injections && !value.is_empty() => {
                    let n: f64 = value.parse().unwrap();
                    format!("{key} = {}", ((n * scale).round() as u64).max(1))
                }
                _ => line.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One point of the growth curve.
struct Point {
    units: usize,
    days: usize,
    positions: u64,
    db_bytes: u64,
    run: Run,
    load: String,
}

fn growth(sizes: &str) {
    let days: usize = std::env::var("FLOTA_BENCH_DIAS").map_or(3, |d| d.parse().unwrap());
    let sizes: Vec<usize> = sizes
        .split(',')
        .map(|s| s.trim().parse().unwrap())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let mut points = Vec::new();
    for units in sizes {
        let scenario = dir.path().join(format!("escala_{units}.toml"));
        std::fs::write(&scenario, scenario_text(units, days)).unwrap();
        let db = dir.path().join("flota.db");
        let run = simulate(&scenario, &db);
        let positions: u64 = rusqlite::Connection::open(&db)
            .unwrap()
            .query_row(
                "SELECT valor FROM meta WHERE clave = 'posiciones'",
                [],
                |r| r.get::<_, String>(0),
            )
            .unwrap()
            .parse()
            .unwrap();
        let db_bytes = std::fs::metadata(&db).unwrap().len();
        // Each point's files go before the next is written: only one is ever on disk.
        std::fs::remove_file(&db).unwrap();
        std::fs::remove_file(dir.path().join("flota.verdad.jsonl")).unwrap();
        points.push(Point {
            units,
            days,
            positions,
            db_bytes,
            run,
            load: load_average(),
        });
    }
    println!(
        "Binary: {}; {} cores.\n\n| units × days | positions | database MB | wall s | CPU s | \
         writer CPU s | CPU µs / position | peak RSS MB | load after |\n|---|---|---|---|---|---|---|---|---|",
        binary().display(),
        cores()
    );
    for p in &points {
        println!(
            "| {} × {} | {} | {:.1} | {:.2} | {:.2} | {:.2} | {:.3} | {:.1} | {} |",
            p.units,
            p.days,
            p.positions,
            p.db_bytes as f64 / 1e6,
            p.run.wall_s,
            p.run.cpu_s,
            p.run.writer_cpu_s,
            p.run.cpu_s * 1e6 / p.positions as f64,
            p.run.peak_rss as f64 / 1e6,
            p.load
        );
    }
    let chart = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/img/crecimiento_simular.png");
    std::fs::write(&chart, draw(&points)).unwrap();
    println!("\nChart: {}", chart.display());
}

/// A series of a panel: its legend, colour and value at a point.
type Series = (&'static str, RGBColor, fn(&Point) -> f64);

const WIDTH: u32 = 900;
const HEIGHT: u32 = 380;

/// Two log-log panels against unit-days: CPU and wall seconds, and peak RSS.
fn draw(points: &[Point]) -> Vec<u8> {
    let mut rgb = vec![255u8; (WIDTH * HEIGHT * 3) as usize];
    flota::map::register_fonts();
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
        let root = root
            .titled(
                "flota simular según unidades × días (escala logarítmica)",
                ("sans-serif", 16),
            )
            .unwrap();
        let areas = root.split_evenly((1, 2));
        let unit_days = |p: &Point| (p.units * p.days) as f64;
        let series_time: [Series; 2] = [
            ("CPU (s)", RGBColor(31, 119, 180), |p| p.run.cpu_s),
            ("reloj (s)", RGBColor(214, 39, 40), |p| p.run.wall_s),
        ];
        let series_memory: [Series; 1] = [("RSS máximo (MB)", RGBColor(44, 160, 44), |p| {
            p.run.peak_rss as f64 / 1e6
        })];
        panel(&areas[0], points, unit_days, "segundos", &series_time, true);
        panel(&areas[1], points, unit_days, "MB", &series_memory, false);
        root.present().unwrap();
    }
    flota::map::encode_png(&rgb, WIDTH, HEIGHT).unwrap()
}

/// One panel: each series as points joined by a line, and (`slope`) the line of exact
/// proportionality through the first point of the first series, in grey.
fn panel(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    points: &[Point],
    x: impl Fn(&Point) -> f64,
    y_title: &str,
    series: &[Series],
    slope: bool,
) {
    let xs: Vec<f64> = points.iter().map(&x).collect();
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|(_, _, y)| points.iter().map(y))
        .collect();
    let (x_min, x_max) = (fold(&xs, f64::min), fold(&xs, f64::max));
    let (y_min, y_max) = (fold(&ys, f64::min), fold(&ys, f64::max));
    let mut chart = ChartBuilder::on(area)
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(
            (x_min / 2.0..x_max * 2.0).log_scale(),
            (y_min / 3.0..y_max * 3.0).log_scale(),
        )
        .unwrap();
    chart
        .configure_mesh()
        .x_desc("unidades × días")
        .y_desc(y_title)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v}"))
        .label_style(("sans-serif", 12))
        .draw()
        .unwrap();
    for (name, colour, y) in series {
        let line: Vec<(f64, f64)> = points.iter().map(|p| (x(p), y(p))).collect();
        let colour = *colour;
        chart
            .draw_series(std::iter::once(PathElement::new(
                line.clone(),
                colour.stroke_width(2),
            )))
            .unwrap()
            .label(*name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], colour.stroke_width(2)));
        chart
            .draw_series(line.iter().map(|p| Circle::new(*p, 4, colour.filled())))
            .unwrap();
    }
    if slope && let (Some(first), Some((_, _, y))) = (points.first(), series.first()) {
        let per_unit_day = y(first) / x(first);
        chart
            .draw_series(std::iter::once(PathElement::new(
                [x_min / 2.0, x_max * 2.0].map(|v| (v, v * per_unit_day)),
                BLACK.mix(0.4).stroke_width(1),
            )))
            .unwrap()
            .label("proporcional")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLACK.mix(0.4)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 11))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .draw()
        .unwrap();
}

fn fold(values: &[f64], f: fn(f64, f64) -> f64) -> f64 {
    values.iter().copied().reduce(f).unwrap_or(1.0)
}
