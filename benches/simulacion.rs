//! Simulator benchmark: the reference week end to end, against a bare SQLite insert of the
//! same rows.
//!
//! Run with `cargo bench --bench simulacion`. It times the release `flota simular` binary on
//! the embedded reference week (wall clock) and a bare bulk insert of exactly the rows that
//! run wrote (one prepared multi-row statement, one transaction, journal off, the writer's
//! table and page size: the floor for any SQLite-backed writer) *interleaved*, one of each in
//! turn, so both see the same minute of this shared machine and the ratio of each pair is a
//! figure of its own; then the simulation alone (no I/O). Prints Markdown. `FLOTA_BENCH_BIN`
//! measures another build of `flota` (before and after a change); `FLOTA_BENCH_PARES` the
//! number of pairs (21).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use flota::scenario::{self, Ahora, Source};
use flota::sim::{Report, Simulation, Sink, TruthEvent};

const AHORA: &str = "2026-08-19T15:30";
/// Runs of the simulation alone.
const RUNS: usize = 11;
/// Pairs of (`flota simular`, bare insert) by default.
const PAIRS: usize = 21;

mod common;

#[derive(Default)]
struct Collect(Vec<Report>, usize);

impl Sink for Collect {
    fn report(&mut self, report: &Report) {
        self.0.push(*report);
    }
    fn truth(&mut self, _: TruthEvent) {
        self.1 += 1;
    }
}

fn median(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    (times[times.len() / 2], times[0])
}

fn median_f64(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// The whole command, as a user runs it: its wall time.
fn run_flota(binary: &Path, db: &Path) -> Duration {
    let started = Instant::now();
    let out = Command::new(binary)
        .args(["simular", "--ahora", AHORA, "--salida"])
        .arg(db)
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    elapsed
}

/// The bare bulk insert of `rows` into a fresh file with the writer's schema (same table, same
/// page size): one transaction, journal off, 50-row statements. Times the insert and commit.
fn bare_insert(path: &Path, rows: &[(i64, Report)]) -> Duration {
    let _ = std::fs::remove_file(path);
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA foreign_keys = OFF;",
    )
    .unwrap();
    conn.execute_batch(flota::store::schema::DDL).unwrap();
    let started = Instant::now();
    conn.execute_batch("BEGIN").unwrap();
    {
        let row = "(?,?,?,?,?,?,?,?,?,?)";
        let sql = format!("INSERT INTO posiciones VALUES {}", [row; 50].join(","));
        let mut many = conn.prepare(&sql).unwrap();
        let mut one = conn
            .prepare(&format!("INSERT INTO posiciones VALUES {row}"))
            .unwrap();
        for chunk in rows.chunks(50) {
            let statement = if chunk.len() == 50 {
                &mut many
            } else {
                &mut one
            };
            let mut index = 1;
            for (unit, r) in chunk {
                if chunk.len() < 50 {
                    index = 1;
                }
                let ints = [
                    *unit,
                    r.ts_utc,
                    i64::from(r.sequence),
                    r.received_utc - r.ts_utc,
                    (r.lat * 1e6).round() as i64,
                    (r.lon * 1e6).round() as i64,
                ];
                for v in ints {
                    statement.raw_bind_parameter(index, v).unwrap();
                    index += 1;
                }
                statement.raw_bind_parameter(index, r.speed_kmh).unwrap();
                statement
                    .raw_bind_parameter(index + 1, r.heading_deg.round() as i64)
                    .unwrap();
                statement
                    .raw_bind_parameter(index + 2, i64::from(r.ignition))
                    .unwrap();
                statement
                    .raw_bind_parameter(
                        index + 3,
                        r.odometer_km.map_or(-1, |km| (km * 1000.0).round() as i64),
                    )
                    .unwrap();
                index += 4;
                if chunk.len() < 50 {
                    statement.raw_execute().unwrap();
                }
            }
            if chunk.len() == 50 {
                statement.raw_execute().unwrap();
            }
        }
    }
    conn.execute_batch("COMMIT").unwrap();
    started.elapsed()
}

/// The week's stored rows, simulated in-process, one unit after another.
fn simulate_rows(ahora: Ahora) -> Vec<(i64, Report)> {
    let world = scenario::load(&Source::Embedded, ahora).unwrap();
    let simulation = Simulation::new(world);
    let mut rows = Vec::new();
    for unit in 0..simulation.world.units.len() {
        let mut collect = Collect::default();
        simulation.run_unit(unit, &mut collect);
        rows.extend(collect.0.into_iter().map(|r| (unit as i64 + 1, r)));
    }
    rows
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("flota.db");
    let bare_db = dir.path().join("bare.db");
    let binary = common::binary();
    let pairs = std::env::var("FLOTA_BENCH_PARES")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(PAIRS);
    let ahora = Ahora::Local(flota::cli::parse_ahora(AHORA).unwrap());
    let rows = simulate_rows(ahora);
    let load_before = common::load_average();

    // 1. The command and its floor, interleaved: one untimed round first (page cache, the
    //    binary's pages), then `pairs` rounds of (flota, bare insert).
    run_flota(&binary, &db);
    bare_insert(&bare_db, &rows);
    let mut wall = Vec::new();
    let mut bare = Vec::new();
    let mut ratios = Vec::new();
    for _ in 0..pairs {
        let flota_time = run_flota(&binary, &db);
        let bare_time = bare_insert(&bare_db, &rows);
        ratios.push(flota_time.as_secs_f64() / bare_time.as_secs_f64());
        wall.push(flota_time);
        bare.push(bare_time);
    }
    let (wall_median, wall_min) = median(wall);
    let (bare_median, bare_min) = median(bare);
    let ratio_median = median_f64(ratios.clone());
    let ratio_spread = (
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );

    // 2. Simulation only, one thread, no I/O.
    let mut sim_times = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let again = simulate_rows(ahora);
        sim_times.push(started.elapsed());
        assert_eq!(again.len(), rows.len());
    }
    let (sim_median, sim_min) = median(sim_times);

    println!(
        "Reference week: 15 units × 7 days, {} positions; {pairs} interleaved pairs \
         (`flota simular`, bare insert), {RUNS} runs of the simulation alone; load average \
         {load_before} before, {} after.\n",
        rows.len(),
        common::load_average()
    );
    println!("| measure | median | min |");
    println!("|---|---|---|");
    println!(
        "| `flota simular` wall (release, whole process) | {} | {} |",
        ms(wall_median),
        ms(wall_min)
    );
    println!(
        "| simulation only, one thread, no I/O | {} | {} |",
        ms(sim_median),
        ms(sim_min)
    );
    println!(
        "| bare SQLite bulk insert of the same rows | {} | {} |",
        ms(bare_median),
        ms(bare_min)
    );
    println!(
        "\nRatio `flota simular` / bare insert: {ratio_median:.2} (median of the {pairs} \
         per-pair ratios; lowest {:.2}, highest {:.2}); {:.2} (median / median), {:.2} (min / min).",
        ratio_spread.0,
        ratio_spread.1,
        wall_median.as_secs_f64() / bare_median.as_secs_f64(),
        wall_min.as_secs_f64() / bare_min.as_secs_f64()
    );
}
