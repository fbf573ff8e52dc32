//! Tracker profiles as they reach the data: `escenarios/rastreadores.toml` simulated into a
//! temp dir, every tracker fact of the truth (bursts, outages, fix losses, flickers, invalid
//! speeds, cold starts, heartbeats, odometers) checked against the stored positions, and
//! `flota evaluar` reading a truth log with the new kinds.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use flota::geometry::earth::{LatLon, distance_m};
use flota::sim::TruthEvent;
use rusqlite::Connection;

use crate::simulation::{simulate, truth_log};
use crate::support::flota_bin;

/// One stored position: fix time, received time, lat, lon, speed, ignition, odometer.
#[derive(Debug, Clone, Copy)]
struct Row {
    ts: i64,
    received: i64,
    lat: f64,
    lon: f64,
    speed_kmh: f64,
    ignition: bool,
    odometer: Option<f64>,
}

fn rows_by_plate(db: &Path) -> BTreeMap<String, Vec<Row>> {
    let conn = Connection::open(db).unwrap();
    let mut statement = conn
        .prepare(
            "SELECT placa, ts_utc, recibido_utc, lat, lon, velocidad_kmh, ignicion, odometro_km \
             FROM vista_posiciones WHERE secuencia = 0 ORDER BY placa, ts_utc",
        )
        .unwrap();
    let mut rows: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    let mapped = statement
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                Row {
                    ts: r.get(1)?,
                    received: r.get(2)?,
                    lat: r.get(3)?,
                    lon: r.get(4)?,
                    speed_kmh: r.get(5)?,
                    ignition: r.get::<_, i64>(6)? != 0,
                    odometer: r.get(7)?,
                },
            ))
        })
        .unwrap();
    for item in mapped {
        let (plate, row) = item.unwrap();
        rows.entry(plate).or_default().push(row);
    }
    rows
}

/// Each unit's profile facts from its `rastreador` event.
struct Profile {
    adaptive: bool,
    heartbeat_s: Option<i64>,
    odometer: bool,
}

fn in_window(rows: &[Row], from: i64, to: i64) -> impl Iterator<Item = &Row> {
    rows.iter().filter(move |r| r.ts >= from && r.ts < to)
}

/// One piece: every tracker fact of the truth, each against the rows it speaks of.
#[test]
fn tracker_truth_matches_the_positions() {
    let dir = tempfile::tempdir().unwrap();
    let (db, truth_path) = simulate("rastreadores", dir.path());
    let truth = truth_log(&truth_path).events;
    let rows = rows_by_plate(&db);
    let of = |plate: &str| rows.get(plate).map_or(&[][..], Vec::as_slice);
    let mut profiles: BTreeMap<String, Profile> = BTreeMap::new();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for event in &truth {
        match event {
            TruthEvent::Rastreador {
                placa,
                modo,
                latido_s,
                odometro,
                ..
            } => {
                profiles.insert(
                    placa.clone(),
                    Profile {
                        adaptive: modo == "adaptativo",
                        heartbeat_s: *latido_s,
                        odometer: *odometro,
                    },
                );
            }
            TruthEvent::RafagaPendientes {
                placa,
                entrega_utc,
                registros,
                primero_utc,
                ultimo_utc,
                recientes_primero,
            } => {
                *counts.entry("rafaga").or_default() += 1;
                let mut burst: Vec<&Row> = of(placa)
                    .iter()
                    .filter(|r| r.ts >= *primero_utc && r.ts <= *ultimo_utc)
                    .filter(|r| r.received >= *entrega_utc)
                    .collect();
                // Invalid records (a fix loss repeating its last fix) are held but not stored.
                assert!(burst.len() as u64 <= *registros, "{event:?}");
                *counts.entry("rafaga_filas").or_default() += burst.len();
                // The whole burst within registros/10 seconds, in the order it says.
                for r in &burst {
                    assert!(r.received <= entrega_utc + *registros as i64 / 10, "{r:?}");
                }
                burst.sort_by_key(|r| (r.received, if *recientes_primero { -r.ts } else { r.ts }));
                let order: Vec<i64> = burst.iter().map(|r| r.received).collect();
                let by_fix: Vec<i64> = {
                    let mut b = burst.clone();
                    b.sort_by_key(|r| if *recientes_primero { -r.ts } else { r.ts });
                    b.iter().map(|r| r.received).collect()
                };
                assert_eq!(order, by_fix, "{event:?}");
            }
            TruthEvent::SinCobertura {
                placa,
                inicio_utc,
                fin_utc,
                retenidos,
            } => {
                *counts.entry("sin_cobertura").or_default() += 1;
                let end = fin_utc.unwrap_or(i64::MAX);
                // Nothing recorded during the outage arrived before it ended.
                let held: Vec<&Row> = in_window(of(placa), *inicio_utc, end).collect();
                for r in &held {
                    assert!(r.received >= end, "{event:?}: {r:?}");
                }
                assert!(held.len() as u64 <= *retenidos, "{event:?}");
            }
            TruthEvent::SinFix {
                placa,
                inicio_utc,
                fin_utc,
                ..
            } => {
                *counts.entry("sin_fix").or_default() += 1;
                // No fix, nothing stored: neither silence nor an invalid repeat is a position.
                let end = fin_utc.unwrap_or(i64::MAX);
                assert_eq!(
                    in_window(of(placa), *inicio_utc, end).count(),
                    0,
                    "{event:?}"
                );
            }
            TruthEvent::VelocidadInvalida {
                placa,
                ts_utc,
                velocidad_kmh,
                ..
            } => {
                *counts.entry("velocidad_invalida").or_default() += 1;
                let row = of(placa).iter().find(|r| r.ts == *ts_utc).unwrap();
                assert_eq!(row.speed_kmh, *velocidad_kmh, "{event:?}");
            }
            TruthEvent::ParpadeoIgnicion {
                placa,
                ts_utc,
                ignicion_reportada,
            } => {
                *counts.entry("parpadeo").or_default() += 1;
                if let Some(row) = of(placa).iter().find(|r| r.ts == *ts_utc) {
                    assert_eq!(row.ignition, *ignicion_reportada, "{event:?}");
                }
            }
            TruthEvent::ArranqueFrio {
                placa,
                ts_utc,
                error_m,
            } => {
                *counts.entry("arranque_frio").or_default() += 1;
                let list = of(placa);
                let at = list.iter().position(|r| r.ts == *ts_utc).unwrap();
                let (cold, next) = (list[at], list[at + 1]);
                let jump = distance_m(
                    LatLon::new(cold.lat, cold.lon),
                    LatLon::new(next.lat, next.lon),
                );
                assert!(jump > error_m - 300.0, "{event:?}: {jump}");
            }
            TruthEvent::EnTransito {
                placa,
                desde_utc,
                primero_utc,
                registros,
            } => {
                // The data end at `desde_utc`; the records still on their way are newer.
                let last = of(placa).last().map(|r| r.ts);
                assert!(last <= *desde_utc, "{event:?}: {last:?}");
                assert!(desde_utc.is_none_or(|d| d < *primero_utc) && *registros > 0);
            }
            TruthEvent::EntregasRastreador {
                placa,
                registros,
                invalidos,
                entregados,
            } => {
                *counts.entry("entregas").or_default() += 1;
                assert!(entregados <= registros);
                assert_eq!(
                    of(placa).len() as u64,
                    entregados - invalidos.min(entregados)
                );
            }
            _ => {}
        }
    }
    for (kind, least) in [
        ("rafaga", 3),
        ("rafaga_filas", 100),
        ("sin_cobertura", 3),
        ("sin_fix", 3),
        ("velocidad_invalida", 10),
        ("parpadeo", 1),
        ("arranque_frio", 1),
        ("entregas", 4),
    ] {
        assert!(
            counts.get(kind).copied().unwrap_or(0) >= least,
            "{kind}: {counts:?}"
        );
    }
    check_profiles(&truth, &rows, &profiles);
}

/// Per unit: odometer present or absent, heartbeats on their grid all night, adaptive gaps.
fn check_profiles(
    truth: &[TruthEvent],
    rows: &BTreeMap<String, Vec<Row>>,
    profiles: &BTreeMap<String, Profile>,
) {
    assert_eq!(profiles.len(), 4, "four units name a profile");
    // The control unit names none: no `rastreador` event, a report every 15 s.
    assert!(!profiles.contains_key("4005-KLS"));
    for (plate, profile) in profiles {
        let list = &rows[plate];
        assert!(
            list.iter()
                .all(|r| r.odometer.is_some() == profile.odometer),
            "{plate}"
        );
        let shifts: Vec<(i64, Option<i64>)> = truth
            .iter()
            .filter_map(|e| match e {
                TruthEvent::Jornada {
                    placa,
                    inicio_utc,
                    fin_utc,
                    ..
                } if placa == plate => Some((*inicio_utc, *fin_utc)),
                _ => None,
            })
            .collect();
        if let Some(every_s) = profile.heartbeat_s {
            let mut beats = 0;
            for pair in shifts.windows(2) {
                let (Some(off), next_on) = (pair[0].1, pair[1].0) else {
                    continue;
                };
                // After the ignition-off reports, only heartbeats, on their grid from the off.
                for r in in_window(list, off + 4 * 60, next_on) {
                    assert_eq!((r.ts - off) % every_s, 0, "{plate}: {r:?}");
                    beats += 1;
                }
                if profile.adaptive {
                    // No faults at night for this profile: every beat is there.
                    let expected = (next_on - 1 - off) / every_s;
                    assert_eq!(
                        in_window(list, off + 4 * 60, next_on).count() as i64,
                        expected,
                        "{plate}"
                    );
                }
            }
            assert!(beats > 10, "{plate}: {beats}");
        }
        if profile.adaptive {
            let moving_gaps = list
                .windows(2)
                .filter(|p| p[0].speed_kmh >= 5.0 && p[1].speed_kmh >= 5.0)
                .map(|p| p[1].ts - p[0].ts);
            assert!(moving_gaps.clone().count() > 100, "{plate}");
            for gap in moving_gaps {
                assert!(gap <= 300, "{plate}: {gap}");
            }
        }
    }
}

#[test]
fn evaluar_reads_a_truth_log_with_tracker_kinds() {
    let dir = tempfile::tempdir().unwrap();
    let (db, truth_path) = simulate("rastreadores", dir.path());
    let text = std::fs::read_to_string(&truth_path).unwrap();
    assert!(text.contains("\"tipo\":\"rafaga_pendientes\""));
    let out = Command::new(flota_bin())
        .arg("evaluar")
        .arg(&db)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kinds: Vec<&str> = report["tipos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tipo"].as_str().unwrap())
        .collect();
    // The tracker's own facts are not scored as detections.
    assert!(kinds.contains(&"parada"), "{kinds:?}");
    assert!(
        !kinds
            .iter()
            .any(|k| k.contains("rafaga") || k.contains("fix"))
    );
}

#[derive(Default)]
struct Collected {
    reports: Vec<flota::sim::Report>,
    truth: Vec<TruthEvent>,
}

impl flota::sim::Sink for Collected {
    fn report(&mut self, report: &flota::sim::Report) {
        self.reports.push(*report);
    }
    fn truth(&mut self, event: TruthEvent) {
        self.truth.push(event);
    }
}

/// In process, sans-IO: the same scenario twice gives the same reports; the economical
/// tracker's nights are heartbeats every 30 min, and its fix losses in `repetir` mode deliver
/// invalid repeats of one position at speed 0.
#[test]
fn heartbeats_and_invalid_repeats_in_the_simulator() {
    use flota::calendar::WallTime;
    use flota::scenario::{Ahora, Source};
    let path = crate::simulation::scenario_path("rastreadores");
    let ahora = Ahora::Local(WallTime::parse("2026-09-17T15:00").unwrap());
    let world = flota::scenario::load(&Source::File(path.clone()), ahora).unwrap();
    let unit = world
        .units
        .iter()
        .position(|u| u.plate == "4004-KLR")
        .unwrap();
    let simulation = flota::sim::Simulation::new(world);
    let mut out = Collected::default();
    assert!(simulation.run_unit(unit, &mut out).is_empty());
    let mut again = Collected::default();
    simulation.run_unit(unit, &mut again);
    assert_eq!(out.reports, again.reports);
    assert_eq!(out.truth, again.truth);

    let mut firsts: Vec<&flota::sim::Report> =
        out.reports.iter().filter(|r| r.sequence == 0).collect();
    firsts.sort_by_key(|r| r.ts_utc);
    let offs: Vec<(i64, i64)> = out
        .truth
        .iter()
        .filter_map(|e| match e {
            TruthEvent::Jornada {
                fin_utc: Some(off), ..
            } => Some(*off),
            _ => None,
        })
        .filter_map(|off| {
            let next_on = out.truth.iter().find_map(|e| match e {
                TruthEvent::Jornada { inicio_utc, .. } if *inicio_utc > off => Some(*inicio_utc),
                _ => None,
            })?;
            Some((off, next_on))
        })
        .collect();
    assert_eq!(offs.len(), 2, "two nights between three shifts");
    for (off, next_on) in offs {
        let night: Vec<i64> = firsts
            .iter()
            .filter(|r| r.ts_utc > off + 4 * 60 && r.ts_utc < next_on)
            .map(|r| r.ts_utc)
            .collect();
        let expected: Vec<i64> = (1..)
            .map(|k| off + k * 1800)
            .take_while(|t| *t < next_on)
            .collect();
        assert_eq!(night, expected);
    }
    let invalid: Vec<&&flota::sim::Report> = firsts.iter().filter(|r| !r.valid).collect();
    assert!(invalid.len() >= 5, "{}", invalid.len());
    for r in &invalid {
        assert_eq!(r.speed_kmh, 0.0);
        let lost = out.truth.iter().any(|e| {
            matches!(e, TruthEvent::SinFix { inicio_utc, fin_utc: Some(end), repite_ultimo: true, .. }
                if *inicio_utc <= r.ts_utc && r.ts_utc < *end)
        });
        assert!(lost, "{r:?}");
    }
}

/// A fixed tracker recording every five minutes: the events a halt schedules (a light's or a
/// delivery's end, the ignition going off) happen when they are due, not at the tracker's next
/// tick. They used to wait for it: lights lasted until the tick (minutes), and the
/// ignition-off report fell in the tick's own second and was dropped, so every night read as a
/// stop with the engine on and a signal loss.
#[test]
fn a_five_minute_trackers_halts_end_on_time_and_its_nights_begin_with_an_off_report() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(crate::simulation::scenario_path("minimo"))
        .unwrap()
        .replace(
            "rutas = \"../rutas\"",
            &format!("rutas = \"{}/rutas\"", env!("CARGO_MANIFEST_DIR")),
        )
        .replace(
            "[[unidades]]\n",
            "[[unidades]]\nrastreador = \"cada_5min\"\n",
        )
        .replace(
            "[ruido]",
            "[rastreadores.cada_5min]\nintervalo_s = 300\n\n[ruido]",
        );
    let scenario = dir.path().join("cinco_minutos.toml");
    std::fs::write(&scenario, text).unwrap();
    let (ok, stderr, db, truth_path) = crate::simulation::simulate_file(&scenario, dir.path(), &[]);
    assert!(ok, "{stderr}");
    let truth = truth_log(&truth_path);
    let rows = rows_by_plate(&db);
    let lost_at = |plate: &str, t: i64| {
        truth.events.iter().any(|e| {
            matches!(e, TruthEvent::PerdidaSenal { placa, inicio_utc, fin_utc }
                if placa == plate && *inicio_utc <= t && fin_utc.is_none_or(|f| f >= t))
        })
    };
    let mut nights = 0;
    for event in &truth.events {
        match event {
            TruthEvent::Jornada {
                placa,
                fin_utc: Some(end),
                ..
            } if !lost_at(placa, *end) => {
                // The report the tracker sends as the ignition goes off.
                let off = rows[placa.as_str()]
                    .iter()
                    .find(|r| r.ts >= *end && r.ts <= end + 1);
                assert!(
                    off.is_some_and(|r| !r.ignition),
                    "{placa}: no 'off' report at {end}: {off:?}"
                );
                nights += 1;
            }
            // A light lasts what it was drawn to, 15–75 s, never until a tick minutes later.
            TruthEvent::Parada {
                motivo: flota::sim::StopReason::Semaforo,
                duracion_s,
                ..
            } => {
                assert!(*duracion_s <= 90, "{event:?}");
            }
            _ => {}
        }
    }
    assert!(nights >= 3, "{nights}");
}
