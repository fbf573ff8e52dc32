//! Places and clocks the shipped scenarios never see (docs/escenarios.md, "Other places and
//! clocks"): a fleet in Santiago de Chile, whose clocks change at local midnight, simulated
//! over both changes, and one in Sydney (the southern spring change) and Kathmandu (+5:45),
//! questioned through `flota servir` as a client would; and one in St John's (−3:30) over its
//! autumn change, with units absent on given dates (`ausencias`); and one in Melbourne, on
//! freeways at 100 km/h with an adaptive tracker that records on changes of speed.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::simulation::simulate_file;
use crate::support::{Server, flota_bin};

fn fixture() -> PathBuf {
    place("chile")
}

fn place(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/lugares/{name}.toml"))
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

/// The truth's facts of one kind.
fn truth_facts(path: &std::path::Path, kind: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|fact| fact["tipo"] == kind)
        .collect()
}

/// Sydney's spring change (Sunday 4 October 2026 has 23 hours: 02:00 -> 03:00) and Kathmandu's
/// +5:45, asked just after the jump and the day after: each unit-day's kilometres are the
/// truth's; a signal loss written at 01:50 for 20 minutes is 20 minutes (not the 80 its wall
/// clock times span); a day that began with a night shift on the road has no departure time;
/// "hoy" is each unit's own (Kathmandu is still on Saturday at 03:20 in Sydney); and the
/// fleet's single days tile the period in `alertas`.
#[test]
fn the_southern_spring_change_and_a_quarter_hour_zone_in_the_tools() {
    for ahora in ["2026-10-04T03:20", "2026-10-05T12:00"] {
        let dir = tempfile::tempdir().unwrap();
        let (ok, stderr, db, truth) =
            simulate_file(&place("sydney"), dir.path(), &["--ahora", ahora]);
        assert!(ok, "{stderr}");
        let km = truth_km(&truth);
        let losses = truth_facts(&truth, "perdida_senal");
        assert_eq!(losses.len(), 1, "{losses:?}");
        let loss_min = (losses[0]["fin_utc"].as_i64().unwrap()
            - losses[0]["inicio_utc"].as_i64().unwrap()) as f64
            / 60.0;
        let mut server = Server::spawn(
            flota_bin(),
            &["servir", "--db", db.to_str().unwrap(), "--ahora", ahora],
        );
        server.initialize("2025-06-18");
        let mut id = 0;
        let mut call = |server: &mut Server, name: &str, arguments: Value| {
            id += 1;
            server.call(id, name, arguments)["result"].clone()
        };
        let mut began_on_the_road = 0;
        let mut loss_seen = false;
        for ((plate, date), truth_km) in &km {
            let result = call(
                &mut server,
                "resumen_recorrido",
                json!({"placa": plate, "fecha": date}),
            );
            if result["isError"] == true {
                assert_eq!(*truth_km, 0.0, "{plate} {date}: {result}");
                continue;
            }
            let day = &result["structuredContent"];
            let shown = day["kilometros"].as_f64().unwrap();
            assert!(
                (shown - truth_km).abs() <= 0.1,
                "{plate} {date}: {shown} km shown, {truth_km} km driven"
            );
            assert_ne!(day["hora_salida"], "00:00:00", "{plate} {date}: {day}");
            if day["salida"].is_string() {
                assert!(day["hora_salida"].is_null(), "{plate} {date}: {day}");
                began_on_the_road += 1;
            }
            if plate == "SY-NOCHE" && date == "2026-10-04" {
                let gaps = day["perdidas_de_senal"].as_array().unwrap();
                assert_eq!(gaps.len(), 1, "{day}");
                let minutes = gaps[0]["minutos"].as_f64().unwrap();
                assert!((minutes - loss_min).abs() < 1.0, "{minutes} vs {loss_min}");
                loss_seen = true;
            }
        }
        assert!(loss_seen, "{ahora}");
        assert!(began_on_the_road >= 1, "{ahora}: {began_on_the_road}");
        // "hoy" on each unit's clock: at 03:20 on Sunday in Sydney it is 22:05 on Saturday
        // in Kathmandu.
        let kathmandu_today = if ahora.starts_with("2026-10-04") {
            "2026-10-03"
        } else {
            "2026-10-05"
        };
        let today = call(
            &mut server,
            "verificar_geocerca",
            json!({"placa": "KT-01", "nombre_geocerca": "thamel", "fecha": "hoy"}),
        );
        // Before KT-01's shift the answer is that it has no reports that day, naming it.
        let resolved = today["structuredContent"]["fecha"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| today["content"][0]["text"].as_str().unwrap().to_owned());
        assert!(resolved.contains(kathmandu_today), "{today}");
        let period: Vec<String> = (2..=5)
            .map(|d| format!("2026-10-{d:02}"))
            .filter(|d| d.as_str() <= &ahora[..10])
            .collect();
        let per_type = |result: &Value| result["structuredContent"]["por_tipo"].clone();
        let whole = per_type(&call(
            &mut server,
            "alertas",
            json!({"fecha_inicio": period[0], "fecha_fin": period[period.len() - 1]}),
        ));
        let mut summed: BTreeMap<String, i64> = BTreeMap::new();
        for date in &period {
            let one = per_type(&call(
                &mut server,
                "alertas",
                json!({"fecha_inicio": date, "fecha_fin": date}),
            ));
            for (kind, count) in one.as_object().unwrap() {
                *summed.entry(kind.clone()).or_default() += count.as_i64().unwrap();
            }
        }
        assert!(summed["perdida_senal"] >= 1, "{summed:?}");
        for (kind, count) in &summed {
            if kind != "parada_prolongada" {
                assert_eq!(
                    whole[kind].as_i64(),
                    Some(*count),
                    "{ahora} {kind}: {whole}"
                );
            }
        }
        drop(server);
    }
}

/// The truth log's lines of one `tipo`.
fn truth_lines(path: &std::path::Path, kind: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|fact| fact["tipo"] == kind)
        .collect()
}

/// St John's (−3:30 in winter) over its autumn change, with units absent (`ausencias`): an
/// absent day is in the truth (one `ausencia` line each, with its reason), has no shift and no
/// kilometres, and the unit stays parked through it (one stop from its last return to its next
/// departure); the tools, which only see the tracker, answer that it has no reports those days
/// and count only the days it drove. The night shift's 30-minute loss from the first 01:40
/// (NDT) ends at 01:10 (NST): shown with both offsets and lasting 30 minutes, not −30.
#[test]
fn absent_units_stay_parked_and_the_autumn_change_at_minus_three_thirty() {
    let ahora = "2026-11-02T12:00";
    let dir = tempfile::tempdir().unwrap();
    let (ok, stderr, db, truth) =
        simulate_file(&place("st_johns"), dir.path(), &["--ahora", ahora]);
    assert!(ok, "{stderr}");
    let absent: Vec<(String, String, Value)> = truth_lines(&truth, "ausencia")
        .into_iter()
        .map(|a| {
            (
                a["placa"].as_str().unwrap().to_owned(),
                a["fecha"].as_str().unwrap().to_owned(),
                a["motivo"].clone(),
            )
        })
        .collect();
    let expected = [
        ("SJ-01", "2026-10-31", json!("baja médica")),
        ("SJ-01", "2026-11-01", json!("baja médica")),
        ("SJ-LARGO", "2026-10-30", Value::Null),
    ];
    let expected: Vec<(String, String, Value)> = expected
        .into_iter()
        .map(|(p, d, m)| (p.to_owned(), d.to_owned(), m))
        .collect();
    assert_eq!(absent, expected);
    let km = truth_km(&truth);
    let shifts = truth_lines(&truth, "jornada");
    for (plate, date, _) in &absent {
        assert_eq!(km[&(plate.clone(), date.clone())], 0.0, "{plate} {date}");
        assert!(
            !shifts
                .iter()
                .any(|j| j["placa"] == *plate && j["fecha"] == *date),
            "{plate} works on {date}, an absent day"
        );
    }
    // SJ-01 works Friday and Monday: it parks on Friday evening and leaves on Monday morning,
    // one stop across both absent days.
    let friday = shifts
        .iter()
        .find(|j| j["placa"] == "SJ-01" && j["fecha"] == "2026-10-30")
        .expect("SJ-01 works on Friday");
    let monday = shifts
        .iter()
        .find(|j| j["placa"] == "SJ-01" && j["fecha"] == "2026-11-02")
        .expect("SJ-01 works on Monday");
    let parked = truth_lines(&truth, "parada").into_iter().find(|s| {
        s["placa"] == "SJ-01"
            && s["inicio_utc"].as_i64() < monday["inicio_utc"].as_i64()
            && s["fin_utc"].as_i64() > friday["fin_utc"].as_i64()
    });
    let parked = parked.expect("SJ-01 parked from Friday to Monday");
    assert!(
        parked["inicio_utc"].as_i64() <= friday["fin_utc"].as_i64(),
        "{parked}"
    );
    assert!(
        parked["fin_utc"].as_i64() >= monday["inicio_utc"].as_i64(),
        "{parked}"
    );
    assert_eq!(parked["motivo"], "fin_de_turno", "{parked}");

    let mut server = Server::spawn(
        flota_bin(),
        &["servir", "--db", db.to_str().unwrap(), "--ahora", ahora],
    );
    server.initialize("2025-06-18");
    let mut id = 0;
    let mut call = |server: &mut Server, name: &str, arguments: Value| {
        id += 1;
        server.call(id, name, arguments)["result"].clone()
    };
    for date in ["2026-10-31", "2026-11-01"] {
        let day = call(
            &mut server,
            "resumen_recorrido",
            json!({"placa": "SJ-01", "fecha": date}),
        );
        assert_eq!(day["isError"], true, "{day}");
        let text = day["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("no tiene reportes") && text.contains(date),
            "{text}"
        );
    }
    let report = call(
        &mut server,
        "reporte_kilometraje",
        json!({"fecha_inicio": "2026-10-30", "fecha_fin": "hoy"}),
    );
    let ranking = report["structuredContent"]["ranking"].as_array().unwrap();
    for row in ranking {
        let plate = row["placa"].as_str().unwrap();
        let driven: Vec<f64> = km
            .iter()
            .filter(|((p, _), km)| p == plate && **km > 0.0)
            .map(|(_, km)| *km)
            .collect();
        let total: f64 = driven.iter().sum();
        let shown = row["kilometros"].as_f64().unwrap();
        assert!((shown - total).abs() <= 0.2, "{plate}: {shown} vs {total}");
        assert_eq!(row["dias_operados"], driven.len(), "{plate}: {row}");
    }
    assert_eq!(ranking.len(), 3, "{report}");
    let sunday = call(
        &mut server,
        "resumen_recorrido",
        json!({"placa": "SJ-NOCHE", "fecha": "2026-11-01"}),
    );
    let gaps = sunday["structuredContent"]["perdidas_de_senal"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(gaps.len(), 1, "{sunday}");
    let gap = &gaps[0];
    assert!(gap["desde"].as_str().unwrap().ends_with("-02:30"), "{gap}");
    assert!(gap["hasta"].as_str().unwrap().ends_with("-03:30"), "{gap}");
    let minutes = gap["minutos"].as_f64().unwrap();
    assert!((29.0..=32.0).contains(&minutes), "{gap}");
    drop(server);
}

/// Melbourne over its autumn change, with an adaptive tracker that records on every 15 km/h
/// change of speed (or 500 m) and every 5 minutes while stopped with the engine on: its
/// injected speeding at 108-110 km/h under a 100 km/h limit is in `alertas` (the overspeed
/// margin once learned 17 km/h of "noise" from its speed steps and raised nothing), and the
/// unit held with the engine on "now", silent 2-5 minutes between its records, is stopped
/// with the engine on in `unidades_detenidas` and `posicion_actual`, as the engine found it
/// (no signal loss), not "sin señal".
#[test]
fn an_adaptive_tracker_on_a_freeway_speeds_and_stands_in_one_story() {
    let ahora = "2026-04-07T12:00";
    let dir = tempfile::tempdir().unwrap();
    let (ok, stderr, db, truth) =
        simulate_file(&place("melbourne"), dir.path(), &["--ahora", ahora]);
    assert!(ok, "{stderr}");
    let mut speeding: BTreeMap<String, i64> = BTreeMap::new();
    for fact in truth_facts(&truth, "exceso_velocidad") {
        *speeding
            .entry(fact["placa"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    assert_eq!(speeding.len(), 2, "{speeding:?}");
    let held = truth_facts(&truth, "detenida_ahora");
    assert_eq!(held.len(), 1, "{held:?}");
    let held_min = held[0]["minutos"].as_f64().unwrap();
    let mut server = Server::spawn(
        flota_bin(),
        &["servir", "--db", db.to_str().unwrap(), "--ahora", ahora],
    );
    server.initialize("2025-06-18");
    let alerts = server.call(
        1,
        "alertas",
        json!({"tipo": "exceso_velocidad", "fecha_inicio": "2026-04-05", "fecha_fin": "hoy"}),
    )["result"]["structuredContent"]
        .clone();
    let mut alerted: BTreeMap<String, i64> = BTreeMap::new();
    for unit in alerts["por_unidad"].as_array().unwrap() {
        let count = unit["por_tipo"]["exceso_velocidad"].as_i64().unwrap();
        if count > 0 {
            alerted.insert(unit["placa"].as_str().unwrap().to_owned(), count);
        }
    }
    assert_eq!(alerted, speeding, "{alerts}");
    let stopped = server.call(2, "unidades_detenidas", json!({"minutos_minimos": 20}))["result"]
        ["structuredContent"]
        .clone();
    let unit = stopped["unidades"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["placa"] == "MB-02")
        .unwrap_or_else(|| panic!("MB-02 is not stopped: {stopped}"));
    assert_eq!(unit["estado"], "motor encendido", "{unit}");
    let minutes = unit["minutos_detenida"].as_f64().unwrap();
    assert!((minutes - held_min).abs() < 1.0, "{minutes} vs {held_min}");
    assert_eq!(stopped["por_estado"]["sin_senal"], 0, "{stopped}");
    let position =
        server.call(3, "posicion_actual", json!({"placa": "MB-02"}))["result"]["structuredContent"]
            .clone();
    assert_eq!(
        position["estado"], "detenida con motor encendido",
        "{position}"
    );
    drop(server);
}
