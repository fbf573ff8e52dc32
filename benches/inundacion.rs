//! A client that floods: 10,000 requests (half tool calls) written before reading a single
//! answer, against the release `flota servir` on the reference week.
//!
//! `cargo bench --bench inundacion` reports how many were answered and refused, the server's
//! peak RSS while nobody read and while draining, and the drain time. Prints Markdown for
//! docs/robustez.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::process::Command;

#[path = "../tests/it/flood.rs"]
mod flood;

const FLOOD: usize = 10_000;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("flota.db");
    let out = Command::new(env!("CARGO_BIN_EXE_flota"))
        .args(["simular", "--ahora", "2026-08-19T15:30", "--salida"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut server = Command::new(env!("CARGO_BIN_EXE_flota"));
    server
        .args(["servir", "--db"])
        .arg(&db)
        .env("FLOTA_LOG", "error")
        .env("FLOTA_TILES_URL", "no");
    let report = flood::flood(server, FLOOD);
    println!("| requests | answered | refused | peak RSS unread | peak RSS overall | drain |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| {FLOOD} | {} | {} | {:.1} MB | {:.1} MB | {:.2} s |",
        report.answered,
        report.refused,
        report.peak_unread_kb as f64 / 1024.0,
        report.peak_kb as f64 / 1024.0,
        report.drain.as_secs_f64()
    );
}
