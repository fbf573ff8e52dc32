//! Places and clocks the shipped scenarios never see (docs/escenarios.md, "Other places and
//! clocks"): a fleet in Santiago de Chile, whose clocks change at local midnight, simulated
//! over both changes and questioned through `flota servir` as a client would.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::simulation::simulate_file;
use crate::support::{Server, flota_bin};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/lugares/chile.toml")
}

/// The truth's kilometres per unit and local date (docs/datos.md).
fn truth_km(path: &std::path::Path) -> BTreeMap<(String, String), f64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|fact| fact["tipo"] == "km_dia")
        .map(|fact| {
            let key = (
                fact["placa"].as_str().unwrap().to_owned(),
                fact["fecha"].as_str().unwrap().to_owned(),
            );
            (key, fact["km"].as_f64().unwrap())
        })
        .collect()
}

/// Every local time a day summary shows: departure, return, each stop's start and end.
fn clock_times(day: &Value) -> Vec<String> {
    let mut times = vec![day["hora_salida"].clone(), day["hora_retorno"].clone()];
    for stop in day["paradas"].as_array().unwrap() {
        times.push(stop["inicio"].clone());
        times.push(stop["fin"].clone());
    }
    times
        .into_iter()
        .filter_map(|t| t.as_str().map(str::to_owned))
        .collect()
}

/// On both changes: each unit-day's kilometres in `resumen_recorrido` are the truth's (the
/// 23-hour Sunday and the 25-hour Saturday included, a night shift's split at a midnight that
/// does not exist or happens twice); nothing on Sunday 6 September is shown at 00:xx, an
/// hour that day does not have (it starts at 01:00); and `alertas` over the whole period
/// counts what its single days add up to, so the days tile the period with no gap and no
/// overlap.
#[test]
fn a_fleet_whose_clocks_change_at_midnight_adds_up_in_the_tools() {
    for (ahora, days) in [("2026-09-08T10:00", 3..=8), ("2026-04-06T10:00", 1..=6)] {
        let month = &ahora[..8];
        let dir = tempfile::tempdir().unwrap();
        let (ok, stderr, db, truth) = simulate_file(&fixture(), dir.path(), &["--ahora", ahora]);
        assert!(ok, "{stderr}");
        let km = truth_km(&truth);
        assert!(km.len() >= 20, "{km:?}");
        let mut server = Server::spawn(
            flota_bin(),
            &["servir", "--db", db.to_str().unwrap(), "--ahora", ahora],
        );
        server.initialize("2025-06-18");
        let mut id = 0;
        let mut call = |server: &mut Server, name: &str, arguments: Value| {
            id += 1;
            let answer = server.call(id, name, arguments);
            answer["result"].clone()
        };
        let mut compared = 0;
        let mut on_the_road_at_start = 0;
        for ((plate, date), truth_km) in &km {
            let result = call(
                &mut server,
                "resumen_recorrido",
                json!({"placa": plate, "fecha": date}),
            );
            if result["isError"] == true {
                // A day the unit did not move: no reports, nothing to compare.
                assert_eq!(*truth_km, 0.0, "{plate} {date}: {result}");
                continue;
            }
            let day = &result["structuredContent"];
            let shown = day["kilometros"].as_f64().unwrap();
            assert!(
                (shown - truth_km).abs() <= 0.1,
                "{plate} {date}: {shown} km shown, {truth_km} km driven"
            );
            // A night shift still on the road when the day ended did not return that day:
            // no return time (the day's end would read 00:00:00), the words saying why.
            let moved = !day["hora_salida"].is_null();
            if moved && day["hora_retorno"].is_null() && date.as_str() < &ahora[..10] {
                let why = day["retorno"].as_str().unwrap_or_default();
                assert!(why.contains("continúa el"), "{plate} {date}: {day}");
            }
            // The same at the day's start: a night shift already on the road at its first
            // instant did not leave then (it would read 00:00:00, or 01:00:00 on the Sunday
            // that starts at 01:00); the words say where the shift came from.
            let first_instant = if date == "2026-09-06" {
                "01:00:00"
            } else {
                "00:00:00"
            };
            assert_ne!(day["hora_salida"], first_instant, "{plate} {date}: {day}");
            if let Some(why) = day["salida"].as_str() {
                assert!(day["hora_salida"].is_null(), "{plate} {date}: {day}");
                assert!(why.contains("viene del"), "{plate} {date}: {day}");
                on_the_road_at_start += 1;
            }
            if date == "2026-09-06" {
                for time in clock_times(day) {
                    assert!(!time.starts_with("00:"), "{plate} {date}: {time} in {day}");
                }
            }
            compared += 1;
        }
        assert!(compared >= 16, "{month}: {compared} unit-days compared");
        assert!(
            on_the_road_at_start >= 2,
            "{month}: {on_the_road_at_start} days began on the road"
        );
        let dates: Vec<String> = days.map(|d| format!("{month}{d:02}")).collect();
        let per_type = |result: &Value| result["structuredContent"]["por_tipo"].clone();
        let whole = per_type(&call(
            &mut server,
            "alertas",
            json!({"fecha_inicio": dates[0], "fecha_fin": dates[dates.len() - 1]}),
        ));
        let mut summed: BTreeMap<String, i64> = BTreeMap::new();
        for date in &dates {
            let one = per_type(&call(
                &mut server,
                "alertas",
                json!({"fecha_inicio": date, "fecha_fin": date}),
            ));
            for (kind, count) in one.as_object().unwrap() {
                *summed.entry(kind.clone()).or_default() += count.as_i64().unwrap();
            }
        }
        let crossings = summed["geocerca_entrada"] + summed["geocerca_salida"];
        assert!(crossings > 50, "{summed:?}");
        for (kind, count) in &summed {
            // Every kind but long stops is an event counted on the day it starts (an exit on
            // the day it ends); whether a stop is long is judged by its own rule
            // (`fleet::lasts_long`), so long stops are left out of the sum.
            if kind != "parada_prolongada" {
                assert_eq!(
                    whole[kind].as_i64(),
                    Some(*count),
                    "{month} {kind}: {whole}"
                );
            }
        }
        drop(server);
    }
}
