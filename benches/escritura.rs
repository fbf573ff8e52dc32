//! What `flota simular` writes and reads to build a scenario's files, against the files'
//! size, and its time against a SQLite-only copy of its own positions measured in the same
//! run.
//!
//! `cargo bench --bench escritura` runs the release binary on `escenarios/escala.toml`
//! (1,000 units × 30 days: about 2.5 GB of files in a temp dir, removed at the end; set
//! `FLOTA_BENCH_ESCENARIO` to another scenario file for a smaller fleet of the same shape).
//! The child's `/proc/<pid>/io` is read once it has exited and before it is reaped (`waitid`
//! with `WNOWAIT`): `wchar`/`rchar` are the bytes it handed to and took from the kernel (what
//! SQLite rewrote or read back, page cache or not), `write_bytes`/`read_bytes` what reached
//! or came from the storage layer. These do not depend on CPU contention; the times do (the
//! load average is printed). Then the copy: a new file with the same schema and page size,
//! journal off, `INSERT INTO posiciones SELECT * FROM` the simulated file, one transaction —
//! the floor for any SQLite-backed writer of these rows. `FLOTA_BENCH_BIN` measures another
//! build of the binary. Linux only. Prints Markdown for docs/rendimiento.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};

fn binary() -> PathBuf {
    std::env::var_os("FLOTA_BENCH_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_flota")), PathBuf::from)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs `flota simular` and returns its `/proc/<pid>/io` counters at exit and the wall time.
fn simulate(scenario: &Path, db: &Path) -> (HashMap<String, u64>, f64) {
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
    waitid(
        WaitId::Pid(pid),
        WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
    )
    .unwrap();
    let io = std::fs::read_to_string(format!("/proc/{}/io", child.id())).unwrap();
    let status = child.wait().unwrap();
    let wall_s = started.elapsed().as_secs_f64();
    assert!(status.success(), "flota simular: {status}");
    let counters = io
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_owned(), v.trim().parse().unwrap_or(0)))
        .collect();
    (counters, wall_s)
}

/// The same positions copied by SQLite alone into a new file of the same schema.
fn copy_seconds(db: &Path, copy: &Path) -> f64 {
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
    let started = Instant::now();
    conn.execute_batch("BEGIN; INSERT INTO posiciones SELECT * FROM origen.posiciones; COMMIT;")
        .unwrap();
    started.elapsed().as_secs_f64()
}

fn main() {
    let scenario = std::env::var_os("FLOTA_BENCH_ESCENARIO").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("escenarios/escala.toml"),
        PathBuf::from,
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("flota.db");
    let truth = dir.path().join("flota.verdad.jsonl");
    let load_before = load_average();
    let (io, wall_s) = simulate(&scenario, &db);
    let db_bytes = std::fs::metadata(&db).unwrap().len();
    let truth_bytes = std::fs::metadata(&truth).map_or(0, |m| m.len());

    let mb = |bytes: u64| bytes as f64 / 1e6;
    let files = db_bytes + truth_bytes;
    println!(
        "Scenario: {}; binary: {}; load average {load_before} before.\n",
        scenario.display(),
        binary().display()
    );
    println!("| measure | MB | × database | × database + truth log |");
    println!("|---|---|---|---|");
    println!("| database | {:.1} | | |", mb(db_bytes));
    println!("| truth log | {:.1} | | |", mb(truth_bytes));
    for key in ["wchar", "write_bytes", "rchar", "read_bytes"] {
        let value = io.get(key).copied().unwrap_or(0);
        println!(
            "| `{key}` | {:.1} | {:.2} | {:.2} |",
            mb(value),
            value as f64 / db_bytes as f64,
            value as f64 / files as f64
        );
    }
    let copy_s = copy_seconds(&db, &dir.path().join("copia.db"));
    println!(
        "\n`flota simular` {wall_s:.2} s wall; SQLite-only copy of its positions {copy_s:.2} s: \
         ratio {:.2} (load average after: {}).",
        wall_s / copy_s,
        load_average()
    );
}
