//! Map rendering benchmark: every unit-day of the reference week drawn offline, p50/p95.
//!
//! `cargo bench --bench mapa` simulates the reference week into a temp dir with the release
//! binary, then, in process, loads each unit's day (positions and detections), builds its
//! scene and renders it to PNG over the offline basemap (no network: the number measures
//! flota, not a tile server). Several passes; prints Markdown for docs/rendimiento.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use flota::fleet::Fleet;
use flota::fleet::places::Geocoder;
use flota::map::{self, Scene, TileConfig, TileFetcher};
use flota::plumbing::clock::Clock;

const AHORA: &str = "2026-08-19T15:30";
const PASSES: usize = 5;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("flota.db");
    let out = Command::new(env!("CARGO_BIN_EXE_flota"))
        .args(["simular", "--ahora", AHORA, "--salida"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let ahora = flota::cli::parse_ahora(AHORA).unwrap();
    // With "now" given the clock is never read.
    let fleet = Arc::new(Fleet::new(
        &db,
        Some(ahora),
        Geocoder::new(None),
        Clock::fixed(0),
    ));
    let snapshot = fleet.snapshot().unwrap();
    let fetcher = TileFetcher::new(TileConfig::offline());

    let mut days = Vec::new();
    for vehicle in &snapshot.vehicles {
        for back in 0..8 {
            let date = snapshot.today - chrono::Days::new(back);
            if let Ok(track) = fleet.day_track(&snapshot, &vehicle.plate, &date.to_string()) {
                days.push(track);
            }
        }
    }
    assert!(!days.is_empty());

    let (mut load, mut scene_t, mut render_t, mut total) = (vec![], vec![], vec![], vec![]);
    let (mut max_png, mut sum_png, mut max_points) = (0usize, 0usize, 0usize);
    for _ in 0..PASSES {
        for day in &days {
            let started = Instant::now();
            let track = fleet
                .day_track(&snapshot, &day.vehicle.plate, &day.date.to_string())
                .unwrap();
            let loaded = Instant::now();
            let scene = Scene::from_day(&track, &snapshot);
            let built = Instant::now();
            let rendered = map::render(&scene, &fetcher, &|_, _| {}, &|| false).unwrap();
            let done = Instant::now();
            load.push(loaded - started);
            scene_t.push(built - loaded);
            render_t.push(done - built);
            total.push(done - started);
            max_png = max_png.max(rendered.png.len());
            sum_png += rendered.png.len();
            max_points = max_points.max(track.fixes.len());
        }
    }
    for v in [&mut load, &mut scene_t, &mut render_t, &mut total] {
        v.sort();
    }
    let n = total.len();
    println!(
        "Offline map of every unit-day of the reference week ({} unit-days × {PASSES} passes, \
         up to {max_points} reports a day, 800×600 PNG):\n",
        days.len()
    );
    println!("| stage | p50 | p95 | max |");
    println!("|---|---|---|---|");
    for (name, v) in [
        ("load day (positions + events)", &load),
        ("build scene", &scene_t),
        ("render + encode PNG", &render_t),
        ("total", &total),
    ] {
        println!(
            "| {name} | {} | {} | {} |",
            ms(percentile(v, 0.5)),
            ms(percentile(v, 0.95)),
            ms(v[v.len() - 1])
        );
    }
    println!(
        "\nPNG size: mean {:.0} KB, max {:.0} KB (budget {} KB).",
        sum_png as f64 / n as f64 / 1024.0,
        max_png as f64 / 1024.0,
        map::PNG_BUDGET_BYTES / 1024
    );
}
