//! Incremental analysis equals the batch one: a simulated week replayed report by report, in
//! delivery order with late and repeated reports, through the ingest session, ends with the
//! same `eventos` and `resumen_diario` as `flota analizar` over the same positions.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use rusqlite::Connection;

use flota::ingest::session::{self, Flow, Outcome, Position, Unit};
use flota::plumbing::clock::Clock;
use flota::store::{AnalysisState, Store, StoredRow};

use crate::ground_truth::fixture;

/// One stored report: vehicle, fix time, and its stored columns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stored {
    pub vehicle_id: i64,
    pub ts_utc: i64,
    pub row: StoredRow,
}

/// Every first delivery in `db`'s `posiciones` (duplicates, `secuencia > 0`, left out), by
/// vehicle and time.
pub fn stored_positions(db: &Path) -> Vec<Stored> {
    let conn = Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT vehiculo_id, ts_utc, retraso_s, lat_e6, lon_e6, velocidad_kmh, rumbo_grados, ignicion, odometro_m
             FROM posiciones WHERE secuencia = 0 ORDER BY vehiculo_id, ts_utc",
        )
        .unwrap();
    stmt.query_map([], |r| {
        Ok(Stored {
            vehicle_id: r.get(0)?,
            ts_utc: r.get(1)?,
            row: StoredRow {
                delay_s: r.get(2)?,
                lat_e6: r.get(3)?,
                lon_e6: r.get(4)?,
                speed_kmh: r.get(5)?,
                heading_deg: r.get(6)?,
                ignition: r.get::<_, i64>(7)? != 0,
                odometer_m: r.get(8)?,
            },
        })
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

/// A copy of `source` with its fleet, fences and thresholds but no positions and no
/// detections: what a receiver starts from. Its analysis record stays (the empty analysis is
/// current) and it has no "now" of its own.
pub fn emptied_copy(source: &Path, target: &Path) {
    std::fs::copy(source, target).unwrap();
    Connection::open(target)
        .unwrap()
        .execute_batch(
            "DELETE FROM posiciones; DELETE FROM eventos; DELETE FROM resumen_diario;
             DELETE FROM cambios_desde_analisis;
             DELETE FROM meta WHERE clave IN ('ahora_utc', 'ahora_local');",
        )
        .unwrap();
}

/// `eventos` (without ids) and `resumen_diario` of `db`, each row as text, sorted.
pub fn analysis_tables(db: &Path) -> (Vec<String>, Vec<String>) {
    let conn = Connection::open(db).unwrap();
    let rows = |sql: &str| -> Vec<String> {
        let mut stmt = conn.prepare(sql).unwrap();
        let columns = stmt.column_count();
        let mut out: Vec<String> = stmt
            .query_map([], |r| {
                let values: Vec<String> = (0..columns)
                    .map(|i| format!("{:?}", r.get::<_, rusqlite::types::Value>(i).unwrap()))
                    .collect();
                Ok(values.join("|"))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        out.sort();
        out
    };
    (
        rows(
            "SELECT vehiculo_id, tipo, inicio_utc, fin_utc, lat, lon, geocerca_id, velocidad_max_kmh, limite_kmh, prolongada, fin_de_jornada, motor_encendido, desde_inicio_datos FROM eventos",
        ),
        rows("SELECT * FROM resumen_diario"),
    )
}

/// Asserts two sorted row lists are equal, showing the first rows only one side has.
pub fn same_rows(table: &str, got: &[String], expected: &[String]) {
    if got == expected {
        return;
    }
    let only = |a: &[String], b: &[String]| -> Vec<String> {
        a.iter()
            .filter(|r| b.binary_search(r).is_err())
            .take(3)
            .cloned()
            .collect()
    };
    panic!(
        "{table}: {} rows vs {} expected; only got: {:#?}; only expected: {:#?}",
        got.len(),
        expected.len(),
        only(got, expected),
        only(expected, got)
    );
}

/// A deterministic stream of numbers in [0, 1) from a seed (splitmix64).
fn unit(seed: u64) -> f64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
}

/// The reports in the order a receiver gets them: at fix time plus the simulated delay, with
/// 2 % of them held back from 5 to 60 minutes, one in 10 000 by two days (older than every
/// checkpoint: a tracker's backlog), and 2 % delivered twice. `(delivered at, report)`,
/// sorted by delivery.
fn delivery_order(reports: &[Stored]) -> Vec<(i64, Stored)> {
    let mut out = Vec::new();
    for (i, r) in reports.iter().enumerate() {
        let i = i as u64 * 3;
        let mut at = r.ts_utc + r.row.delay_s;
        let draw = unit(i);
        if draw < 0.0001 {
            at += 2 * 86_400;
        } else if draw < 0.02 {
            at += 300 + (unit(i + 1) * 3_300.0) as i64;
        }
        out.push((at, *r));
        if unit(i + 2) < 0.02 {
            out.push((at + 1 + (unit(i + 2) * 1e6) as i64 % 900, *r));
        }
    }
    out.sort_by_key(|(at, r)| (*at, r.vehicle_id, r.ts_utc));
    out
}

#[test]
fn a_week_fed_report_by_report_equals_the_batch_analysis() {
    let week = fixture("semana");
    let ahora = Store::open(&week.db)
        .unwrap()
        .meta()
        .unwrap()
        .ahora_utc
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("en_vivo.db");
    emptied_copy(&week.db, &live);
    let reports = stored_positions(&week.db);
    let deliveries = delivery_order(&reports);
    // Reports older than one already delivered for the same vehicle.
    let mut newest = std::collections::HashMap::new();
    let late = deliveries
        .iter()
        .filter(|(_, r)| {
            let seen = newest.entry(r.vehicle_id).or_insert(i64::MIN);
            let late = r.ts_utc <= *seen;
            *seen = (*seen).max(r.ts_utc);
            late
        })
        .count();
    assert!(late > 1000, "only {late} reports out of order");

    let now = Arc::new(AtomicI64::new(0));
    let clock = Clock::following(Arc::clone(&now));
    let store = Store::open_live(&live).unwrap();
    let (mut stored, mut repeated) = (0usize, 0usize);
    let mut next_tick = deliveries[0].0;
    session::run(&store, &clock, |session| {
        // Batches as a receiver commits them: what arrived within a minute, at most 100.
        for batch in deliveries.chunk_by(|a, b| b.0 - a.0 < 60) {
            for chunk in batch.chunks(100) {
                let delivered = chunk[chunk.len() - 1].0;
                now.store(delivered, Ordering::Relaxed);
                let positions: Vec<Position> = chunk
                    .iter()
                    .map(|(at, r)| Position {
                        unit: Unit::Vehicle(r.vehicle_id),
                        ts_utc: r.ts_utc,
                        row: StoredRow {
                            delay_s: at - r.ts_utc,
                            ..r.row
                        },
                    })
                    .collect();
                let Flow::Done(outcomes) = session.write(&positions)? else {
                    panic!("nobody else writes to this file");
                };
                stored += outcomes
                    .iter()
                    .filter(|o| matches!(o, Outcome::Stored(_)))
                    .count();
                repeated += outcomes.len()
                    - outcomes
                        .iter()
                        .filter(|o| matches!(o, Outcome::Stored(_)))
                        .count();
                // One vehicle's analysis per write: the rest wait across writes, as they
                // do in a receiver under load.
                let Flow::Done(_) =
                    session.analyse(std::time::Duration::ZERO, std::time::Duration::ZERO)?
                else {
                    panic!("nobody else writes to this file");
                };
                if delivered >= next_tick {
                    session.publish_all()?;
                    next_tick = delivered + 3600;
                }
            }
        }
        now.store(ahora, Ordering::Relaxed);
        session.publish_all()
    })
    .unwrap();
    drop(store);
    assert_eq!(stored, reports.len());
    assert_eq!(repeated, deliveries.len() - reports.len());

    // The batch analysis of the very same positions at the same "now".
    let batch = dir.path().join("lote.db");
    std::fs::copy(&live, &batch).unwrap();
    flota::commands::analyze::analyze(&batch, &Clock::fixed(ahora)).unwrap();
    let (live_events, live_days) = analysis_tables(&live);
    let (batch_events, batch_days) = analysis_tables(&batch);
    assert!(batch_events.len() > 500, "{}", batch_events.len());
    same_rows("resumen_diario", &live_days, &batch_days);
    same_rows("eventos", &live_events, &batch_events);
    // And the tools would take them as current.
    let reader = Store::open(&live).unwrap();
    let meta = reader.meta().unwrap();
    assert_eq!(
        reader.analysis_state(&meta).unwrap(),
        AnalysisState::Current
    );
    assert_eq!(meta.analysis.until_utc, Some(ahora));
}

/// A write commits positions only: until an analysis slice runs, readers see the vehicles it
/// touched as behind (never stale detections as current); the slice makes them current.
#[test]
fn positions_commit_before_their_analysis_and_are_said_behind_until_it() {
    let minimo = fixture("minimo");
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("en_vivo.db");
    emptied_copy(&minimo.db, &live);
    let t0 = 1_767_225_600;
    let clock = Clock::fixed(t0 + 3600);
    let store = Store::open_live(&live).unwrap();
    let state = || {
        let reader = Store::open(&live).unwrap();
        let meta = reader.meta().unwrap();
        reader.analysis_state(&meta).unwrap()
    };
    let days = || {
        Connection::open(&live)
            .unwrap()
            .query_row("SELECT count(*) FROM resumen_diario", [], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap()
    };
    session::run(&store, &clock, |session| {
        let positions: Vec<Position> = (0..3)
            .map(|i| Position {
                unit: Unit::Vehicle(1),
                ts_utc: t0 + 60 * i,
                row: StoredRow::encode(
                    &flota::store::Reading {
                        lat: 14.6 + 0.001 * i as f64,
                        lon: -90.5,
                        speed_kmh: 30.0,
                        heading_deg: 0.0,
                        ignition: true,
                        odometer_m: None,
                    },
                    0,
                ),
            })
            .collect();
        let Flow::Done(outcomes) = session.write(&positions)? else {
            panic!("nobody else writes to this file");
        };
        assert_eq!(outcomes, vec![Outcome::Stored(1); 3]);
        assert_eq!(state(), AnalysisState::Behind(vec![(1, 3)]));
        assert_eq!(days(), 0);
        let Flow::Done(left) =
            session.analyse(std::time::Duration::MAX, std::time::Duration::ZERO)?
        else {
            panic!("nobody else writes to this file");
        };
        assert!(!left);
        assert_eq!(state(), AnalysisState::Current);
        assert_eq!(days(), 1);
        Ok(Flow::Done(()))
    })
    .unwrap();
}
