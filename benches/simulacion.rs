//! Simulator benchmark: the reference week end to end, against a bare SQLite insert of the
//! same rows.
//!
//! Run with `cargo bench --bench simulacion`. It times the release `flota simular` binary on
//! the embedded reference week (wall clock, several runs), the simulation alone (no I/O), and
//! a bare bulk insert of exactly the rows that run wrote (one prepared multi-row statement,
//! one transaction, journal off, the writer's page size: the floor for any SQLite-backed
//! writer). Prints Markdown.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::process::Command;
use std::time::{Duration, Instant};

use flota::scenario::{self, Ahora, Source};
use flota::sim::{Report, Simulation, Sink, TruthEvent};

const AHORA: &str = "2026-08-19T15:30";
const RUNS: usize = 11;

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

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("flota.db");

    // 1. The whole command, as a user runs it.
    let mut wall = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_flota"))
            .args(["simular", "--ahora", AHORA, "--salida"])
            .arg(&db)
            .output()
            .unwrap();
        wall.push(started.elapsed());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (wall_median, wall_min) = median(wall);

    // 2. Simulation only, one thread, no I/O.
    let ahora = Ahora::Local(flota::cli::parse_ahora(AHORA).unwrap());
    let mut sim_times = Vec::new();
    let mut rows = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let world = scenario::load(&Source::Embedded, ahora).unwrap();
        let simulation = Simulation::new(world);
        rows.clear();
        for unit in 0..simulation.world.units.len() {
            let mut collect = Collect::default();
            simulation.run_unit(unit, &mut collect);
            rows.extend(collect.0.into_iter().map(|r| (unit as i64 + 1, r)));
        }
        sim_times.push(started.elapsed());
    }
    let (sim_median, sim_min) = median(sim_times);

    // 3. Bare bulk insert of the same rows into the same table.
    let mut bare = Vec::new();
    for _ in 0..RUNS {
        let path = dir.path().join("bare.db");
        let _ = std::fs::remove_file(&path);
        let conn = rusqlite::Connection::open(&path).unwrap();
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
        bare.push(started.elapsed());
    }
    let (bare_median, bare_min) = median(bare);

    println!(
        "Reference week: 15 units × 7 days, {} positions; {RUNS} runs each.\n",
        rows.len()
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
        "\nRatio `flota simular` / bare insert: {:.2} (median), {:.2} (min).",
        wall_median.as_secs_f64() / bare_median.as_secs_f64(),
        wall_min.as_secs_f64() / bare_min.as_secs_f64()
    );
}
