//! The tools' answers against the injected ground truth, through the real stdio server.
//!
//! Each scenario is simulated once into a temp dir per test run; the tests then ask `flota
//! servir` the operator's questions and compare the answers with the truth log and the stored
//! positions. The server never sees the truth (one test deletes it and gets the same answers).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::OnceLock;

use rusqlite::Connection;
use serde_json::{Value, json};

use flota::evaluation::truth::TruthLog;
use flota::sim::truth::TruthEvent;

use crate::simulation::{
    hidden_by_loss, injected_speeding, injected_stops, km_days, losses, rows, simulate, stays,
    stopped_now, truth_log,
};
use crate::support::{Server, flota_bin};

pub struct Fixture {
    _dir: tempfile::TempDir,
    pub db: PathBuf,
    pub truth: TruthLog,
}

/// A scenario simulated once per test binary run, at its own `--ahora`.
pub fn fixture(name: &'static str) -> &'static Fixture {
    static MINIMO: OnceLock<Fixture> = OnceLock::new();
    static SEMANA: OnceLock<Fixture> = OnceLock::new();
    static RUIDOSO: OnceLock<Fixture> = OnceLock::new();
    static CAMBIO_HORA: OnceLock<Fixture> = OnceLock::new();
    static DOS_ZONAS: OnceLock<Fixture> = OnceLock::new();
    let cell = match name {
        "minimo" => &MINIMO,
        "semana" => &SEMANA,
        "cambio_hora" => &CAMBIO_HORA,
        "dos_zonas" => &DOS_ZONAS,
        _ => &RUIDOSO,
    };
    cell.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let (db, truth) = simulate(name, dir.path());
        let truth = truth_log(&truth);
        Fixture {
            truth,
            db,
            _dir: dir,
        }
    })
}

/// A served fixture: calls tools and returns the structured answer, or the error text.
pub struct Client {
    server: Server,
    next: i64,
}

impl Client {
    pub fn new(db: &std::path::Path) -> Client {
        Client::with_args(db, &[])
    }

    /// A client of `flota servir --db DB` with `extra` flags (`--ahora`…).
    pub fn with_args(db: &std::path::Path, extra: &[&str]) -> Client {
        let mut args = vec!["servir", "--db", db.to_str().unwrap()];
        args.extend_from_slice(extra);
        let mut server = Server::spawn(flota_bin(), &args);
        server.initialize("2025-11-25");
        Client { server, next: 1 }
    }

    pub fn call(&mut self, tool: &str, arguments: Value) -> Result<Value, String> {
        self.next += 1;
        let answer = self.server.call(self.next, tool, arguments);
        let result = &answer["result"];
        assert!(answer.get("error").is_none(), "{tool}: {answer}");
        if result["isError"] == true {
            return Err(result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned());
        }
        // The text block carries the same JSON as structuredContent.
        let text: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, result["structuredContent"], "{tool}");
        Ok(result["structuredContent"].clone())
    }

    pub fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        self.call(tool, arguments.clone())
            .unwrap_or_else(|e| panic!("{tool} {arguments}: {e}"))
    }
}

fn ahora(fixture: &Fixture) -> i64 {
    fixture.truth.header.ahora_utc
}

/// The local date of `ts` on `plate`'s clock.
pub fn local_date(fixture: &Fixture, plate: &str, ts: i64) -> String {
    flota::fleet::dates::local_date(fixture.truth.header.zone_of(plate), ts).to_string()
}

fn iso_ts(text: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap()
        .timestamp()
}

/// Seconds of a local `HH:MM:SS` on `date` in `zone` (its first occurrence).
fn clock_ts(zone: chrono_tz::Tz, date: &str, clock: &str) -> i64 {
    let wall = flota::calendar::WallTime::parse(&format!("{date}T{clock}")).unwrap();
    flota::calendar::instant(zone, wall).unwrap()
}

fn check_stopped_now(name: &'static str) {
    let fixture = fixture(name);
    let mut client = Client::new(&fixture.db);
    let answer = client.ok("unidades_detenidas", json!({"minutos_minimos": 0}));
    let stopped = stopped_now(&fixture.truth.events);
    assert!(!stopped.is_empty());
    for truth in stopped {
        let plate = truth.plate;
        let unit = answer["unidades"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["placa"] == plate)
            .unwrap_or_else(|| panic!("{name}: {plate} not listed: {answer}"));
        assert_eq!(unit["estado"], "motor encendido", "{name}: {unit}");
        let minutes = unit["minutos_detenida"].as_f64().unwrap();
        let expected = truth.minutes;
        assert!(
            (minutes - expected).abs() <= 1.0,
            "{name} {plate}: {minutes} vs truth {expected}"
        );
        // posicion_actual agrees.
        let position = client.ok("posicion_actual", json!({"placa": plate}));
        assert_eq!(position["estado"], "detenida con motor encendido");
        assert!((position["minutos_detenida"].as_f64().unwrap() - expected).abs() <= 1.0);
    }
}

/// The state of `plate` at "now" in the truth, as its reports can show it, with since when:
/// silent (a loss still open that began during a shift; since it began), switched off (its
/// last shift ended; since the stop that holds it began), stopped with the engine on (an open stop during a shift), or moving
/// (since the last stop long enough for the engine to detect ended, if any).
fn true_state(truth: &[TruthEvent], plate: &str, now: i64) -> (&'static str, Option<i64>) {
    let shift_on = truth
        .iter()
        .any(|e| matches!(e, TruthEvent::Jornada { placa, fin_utc: None, .. } if placa == plate));
    let open_stop = truth.iter().find_map(|e| match e {
        TruthEvent::Parada {
            placa,
            fin_utc: None,
            inicio_utc,
            motor_encendido,
            ..
        } if placa == plate => Some((*inicio_utc, *motor_encendido)),
        _ => None,
    });
    let open_loss = losses(truth)
        .into_iter()
        .find(|l| l.plate == plate && l.end == i64::MAX);
    // Silent since during a shift: whatever happened after is unseen (the engine may have
    // been switched off meanwhile).
    let in_shift = |t: i64| {
        truth.iter().any(|e| {
            matches!(e, TruthEvent::Jornada { placa, inicio_utc, fin_utc, .. }
                if placa == plate && *inicio_utc <= t && fin_utc.is_none_or(|end| end > t))
        })
    };
    if let Some(loss) = open_loss.filter(|l| in_shift(l.start)) {
        return ("sin señal", Some(loss.start));
    }
    if !shift_on {
        return ("apagada", open_stop.map(|(start, _)| start));
    }
    if let Some((start, true)) = open_stop {
        return ("detenida con motor encendido", Some(start));
    }
    let min_stop_s = flota::engine::DetectionConfig::default().parada_min_s as i64;
    let last_end = truth
        .iter()
        .filter_map(|e| match e {
            TruthEvent::Parada {
                placa,
                fin_utc: Some(end),
                duracion_s,
                ..
            } if placa == plate && *duracion_s >= min_stop_s && *end <= now => Some(*end),
            _ => None,
        })
        .max();
    ("en movimiento", last_end)
}

/// `mapa_flota` against the truth: every listed unit's state at "now" and the minutes in it,
/// the counts per state, and one unit per active plate of the truth.
fn check_fleet_map(name: &'static str) {
    let fixture = fixture(name);
    let now = ahora(fixture);
    let mut client = Client::new(&fixture.db);
    let answer = client.ok("mapa_flota", json!({}));
    let units = answer["unidades"].as_array().unwrap();
    let truth_plates: BTreeSet<&str> = fixture
        .truth
        .events
        .iter()
        .filter_map(|e| match e {
            TruthEvent::Jornada {
                placa, inicio_utc, ..
            } if *inicio_utc <= now => Some(placa.as_str()),
            _ => None,
        })
        .collect();
    let listed: BTreeSet<&str> = units.iter().map(|u| u["placa"].as_str().unwrap()).collect();
    assert!(
        truth_plates.is_subset(&listed),
        "{name}: {truth_plates:?} vs {listed:?}"
    );
    assert_eq!(answer["total"], units.len());
    let mut counts = std::collections::BTreeMap::new();
    for unit in units {
        let plate = unit["placa"].as_str().unwrap();
        let (state, since) = true_state(&fixture.truth.events, plate, now);
        assert_eq!(unit["estado"], state, "{name} {plate}: {unit}");
        *counts.entry(state).or_insert(0) += 1;
        let minutes = unit["minutos_en_estado"].as_f64();
        match (since, minutes) {
            (Some(since), Some(minutes)) => {
                let expected = (now - since) as f64 / 60.0;
                // A loss starts at the first missing fix; the tool counts from the last one
                // received, one reporting interval earlier.
                let slack = 1.0 + fixture.truth.header.intervalo_reporte_s as f64 / 60.0;
                assert!(
                    (minutes - expected).abs() <= slack,
                    "{name} {plate} {state}: {minutes} vs truth {expected}"
                );
            }
            (None, None) => {}
            // A stop too short for the engine yet (stopped at a light) has no start to show.
            (Some(since), None) => assert!(
                now - since < flota::engine::DetectionConfig::default().parada_min_s as i64 + 60,
                "{name} {plate} {state}: no minutes, truth since {since}"
            ),
            (None, Some(minutes)) => {
                panic!("{name} {plate} {state}: {minutes} min, none in the truth")
            }
        }
    }
    for (state, key) in [
        ("en movimiento", "en_movimiento"),
        ("detenida con motor encendido", "motor_encendido"),
        ("apagada", "apagada"),
        ("sin señal", "sin_senal"),
    ] {
        assert_eq!(
            answer["por_estado"][key],
            counts.get(state).copied().unwrap_or(0),
            "{name}: {key}"
        );
    }
}

fn check_long_stops(name: &'static str) {
    let fixture = fixture(name);
    let mut client = Client::new(&fixture.db);
    // Only stops long enough to be alerts are listed by `alertas`.
    let long_s = (flota::engine::DetectionConfig::default().parada_prolongada_min + 1.0) * 60.0;
    let injected: Vec<_> = injected_stops(&fixture.truth.events)
        .into_iter()
        .filter(|s| s.duration_s as f64 >= long_s)
        .collect();
    assert!(!injected.is_empty(), "{name}");
    for truth in injected {
        let start = truth.start;
        let end = start + truth.duration_s;
        let events = &fixture.truth.events;
        if hidden_by_loss(events, truth.plate, start) || hidden_by_loss(events, truth.plate, end) {
            // It began or ended during a silence: the reports only bound that moment.
            continue;
        }
        let date = local_date(fixture, truth.plate, start);
        let answer = client.ok(
            "alertas",
            json!({"tipo": "parada_prolongada", "fecha_inicio": date, "fecha_fin": date}),
        );
        let found = answer["detalle"][0]["eventos"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["placa"] == truth.plate)
            .unwrap_or_else(|| panic!("{name}: {truth:?} not among {answer}"));
        let detected = iso_ts(found["inicio"].as_str().unwrap());
        assert!(
            (detected - start).abs() <= 15,
            "{name}: start {detected} vs truth {start} ({truth:?})"
        );
        let minutes = found["minutos"].as_f64().unwrap();
        let truth_minutes = truth.duration_s as f64 / 60.0;
        assert!(
            (minutes - truth_minutes).abs() <= 0.5,
            "{name}: {minutes} vs {truth_minutes}"
        );
    }
}

fn check_gaps(name: &'static str) {
    let fixture = fixture(name);
    let db = Connection::open(&fixture.db).unwrap();
    let mut client = Client::new(&fixture.db);
    for truth in losses(&fixture.truth.events) {
        let (from, to) = (truth.start, truth.end);
        let plate = truth.plate;
        let unit = rows(&db, plate);
        let last_before = unit
            .iter()
            .filter(|r| r.ts < from)
            .map(|r| r.ts)
            .max()
            .unwrap();
        let first_after = unit.iter().filter(|r| r.ts >= to).map(|r| r.ts).min();
        let date = local_date(fixture, plate, from);
        let zone = fixture.truth.header.zone_of(plate);
        let answer = client.ok(
            "alertas",
            json!({"tipo": "perdida_senal", "fecha_inicio": date, "fecha_fin": date}),
        );
        let events = answer["detalle"][0]["eventos"].as_array().unwrap();
        let found = events
            .iter()
            .find(|e| e["placa"] == plate)
            .unwrap_or_else(|| panic!("{name}: {truth:?}: {answer}"));
        assert_eq!(
            iso_ts(found["inicio"].as_str().unwrap()),
            last_before,
            "{name}: {truth:?}"
        );
        assert_eq!(
            found["fin"].as_str().map(iso_ts),
            first_after,
            "{name}: {truth:?}"
        );
        // resumen_recorrido lists it too, with the same bounds.
        let day = client.ok("resumen_recorrido", json!({"placa": plate, "fecha": date}));
        let gap = &day["perdidas_de_senal"][0];
        assert_eq!(
            clock_ts(zone, &date, gap["desde"].as_str().unwrap()),
            last_before
        );
        assert_eq!(
            gap["hasta"].as_str().map(|c| clock_ts(zone, &date, c)),
            first_after
        );
        if first_after.is_none() {
            // Still silent at "now": the unit is reported without signal.
            let position = client.ok("posicion_actual", json!({"placa": plate}));
            assert_eq!(position["estado"], "sin señal", "{position}");
            let silent = (ahora(fixture) - last_before) as f64 / 60.0;
            assert!(
                (position["minutos_desde_ultimo_reporte"].as_f64().unwrap() - silent).abs() < 0.1
            );
        }
    }
}

fn check_speeding(name: &'static str) {
    let fixture = fixture(name);
    let mut client = Client::new(&fixture.db);
    let episodes = injected_speeding(&fixture.truth.events);
    assert!(!episodes.is_empty());
    for truth in episodes {
        let start = truth.start;
        let duration = truth.end - start;
        if duration < 45 {
            // Cut short by a stop right after it began: too brief to promise anything about.
            continue;
        }
        let date = local_date(fixture, truth.plate, start);
        let answer = client.ok(
            "alertas",
            json!({"tipo": "exceso_velocidad", "fecha_inicio": date, "fecha_fin": date}),
        );
        let found = answer["detalle"][0]["eventos"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| {
                e["placa"] == truth.plate
                    && (iso_ts(e["inicio"].as_str().unwrap()) - start).abs() <= 30
            })
            .unwrap_or_else(|| panic!("{name}: {truth:?}: {answer}"));
        let max = found["velocidad_max_kmh"].as_f64().unwrap();
        let truth_max = truth.max_kmh;
        // Reported speeds carry the receiver's Doppler noise (σ up to 1.5 km/h in ruidoso);
        // the maximum of a few noisy fixes sits a few σ above the true one.
        assert!(
            (max - truth_max).abs() <= 6.0,
            "{name}: max {max} vs {truth_max}"
        );
        let seconds = found["minutos"].as_f64().unwrap() * 60.0;
        assert!(
            (seconds - duration as f64).abs() <= 20.0,
            "{name}: {seconds} s vs {duration} s"
        );
        assert_eq!(found["limite_kmh"].as_f64(), Some(truth.limit_kmh));
    }
}

fn check_visits(name: &'static str) {
    let fixture = fixture(name);
    let mut client = Client::new(&fixture.db);
    let db = Connection::open(&fixture.db).unwrap();
    let fences = flota::store::Store::open(&fixture.db)
        .unwrap()
        .fences()
        .unwrap();
    let now = ahora(fixture);
    // Truth visits of one unit to its depot on the day before `ahora`, merged across the brief
    // excursions of roads that hug the fence edge, and across any excursion the reports do not
    // show (a unit waiting at a light a metre outside, under metres of noise).
    let day = local_date(fixture, "", now - 86_400);
    let mut checked = 0;
    let all_stays = stays(&fixture.truth.events);
    let pairs: BTreeSet<(&str, &str)> = all_stays.iter().map(|v| (v.plate, v.fence)).collect();
    for (plate, fence) in pairs {
        let zone = fixture.truth.header.zone_of(plate);
        let (from, to) = flota::calendar::day_bounds(
            zone,
            chrono::NaiveDate::parse_from_str(&day, "%Y-%m-%d").unwrap(),
        );
        let shape = &fences.iter().find(|f| f.fence.name == fence).unwrap().fence;
        let unit = rows(&db, plate);
        // The reports show an excursion when they stay outside for the confirmation time
        // (what any debounce needs); a unit a metre outside under metres of noise does not.
        let confirm_s = flota::engine::DetectionConfig::default().geocerca_confirmacion_s as i64;
        let seen_outside = |a: i64, b: i64| {
            let mut run_from: Option<i64> = None;
            unit.iter().filter(|r| r.ts >= a && r.ts < b).any(|r| {
                let outside = !shape.contains(flota::geometry::earth::LatLon::new(r.lat, r.lon));
                run_from = if outside {
                    run_from.or(Some(r.ts))
                } else {
                    None
                };
                run_from.is_some_and(|from| r.ts - from >= confirm_s)
            })
        };
        let mut visits: Vec<(Option<i64>, Option<i64>)> = all_stays
            .iter()
            .filter(|v| v.plate == plate && v.fence == fence)
            .map(|v| (v.entry, v.exit))
            .collect();
        visits.sort_by_key(|v| v.0.unwrap_or(i64::MIN));
        let mut merged: Vec<(Option<i64>, Option<i64>)> = Vec::new();
        for v in visits {
            match merged.last_mut() {
                Some(last)
                    if last.1.is_some_and(|e| {
                        v.0.is_some_and(|s| s - e < 60 || !seen_outside(e, s))
                    }) =>
                {
                    last.1 = v.1
                }
                _ => merged.push(v),
            }
        }
        // Entries during the day, of visits long enough to be more than a pass-through.
        let entries: Vec<i64> = merged
            .iter()
            .filter(|(s, e)| {
                s.is_some_and(|s| s >= from && s < to) && e.unwrap_or(now) - s.unwrap_or(0) >= 120
            })
            .filter_map(|(s, _)| *s)
            .filter(|s| !hidden_by_loss(&fixture.truth.events, plate, *s))
            .collect();
        if entries.is_empty() {
            continue;
        }
        let answer = client.ok(
            "verificar_geocerca",
            json!({"placa": plate, "nombre_geocerca": fence, "fecha": day}),
        );
        assert_eq!(answer["entro"], true, "{name} {plate} {fence}");
        let detected: Vec<i64> = answer["visitas"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v["entrada"].as_str())
            .map(|c| clock_ts(zone, &day, c))
            .collect();
        for entry in &entries {
            assert!(
                detected.iter().any(|d| (d - entry).abs() <= 30),
                "{name} {plate} {fence}: truth entry {entry} not within 30 s of {detected:?}"
            );
        }
        checked += entries.len();
    }
    assert!(checked > 5, "{name}: only {checked} entries checked");
}

fn check_km(name: &'static str) {
    let fixture = fixture(name);
    let mut client = Client::new(&fixture.db);
    let mut checked = 0;
    let now = ahora(fixture);
    let silent_now: Vec<_> = losses(&fixture.truth.events)
        .into_iter()
        .filter(|l| l.end > now)
        .collect();
    for day in km_days(&fixture.truth.events) {
        let truth_km = day.km;
        // Kilometres driven after the last report of a unit silent right now are unknowable.
        let silent = silent_now
            .iter()
            .any(|l| l.plate == day.plate && local_date(fixture, l.plate, l.start) == day.date);
        if truth_km < 10.0 || silent {
            continue;
        }
        let date = day.date;
        let answer = client.ok(
            "reporte_kilometraje",
            json!({"fecha_inicio": date, "fecha_fin": date}),
        );
        let km = answer["ranking"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["placa"] == day.plate)
            .unwrap()["kilometros"]
            .as_f64()
            .unwrap();
        assert!(
            (km - truth_km).abs() / truth_km <= 0.01,
            "{name} {day:?}: {km}"
        );
        checked += 1;
        if checked >= 12 {
            break;
        }
    }
    assert!(checked > 0);
}

#[test]
fn minimo_stopped_now() {
    check_stopped_now("minimo");
}
#[test]
fn minimo_fleet_map() {
    check_fleet_map("minimo");
}
#[test]
fn semana_fleet_map() {
    check_fleet_map("semana");
}
#[test]
fn ruidoso_fleet_map() {
    check_fleet_map("ruidoso");
}
#[test]
fn dos_zonas_fleet_map() {
    check_fleet_map("dos_zonas");
}
#[test]
fn minimo_long_stops() {
    check_long_stops("minimo");
}
#[test]
fn minimo_gaps() {
    check_gaps("minimo");
}
#[test]
fn minimo_speeding() {
    check_speeding("minimo");
}
#[test]
fn minimo_visits() {
    check_visits("minimo");
}
#[test]
fn minimo_km() {
    check_km("minimo");
}
#[test]
fn semana_stopped_now() {
    check_stopped_now("semana");
}
#[test]
fn semana_long_stops() {
    check_long_stops("semana");
}
#[test]
fn semana_gaps() {
    check_gaps("semana");
}
#[test]
fn semana_speeding() {
    check_speeding("semana");
}
#[test]
fn semana_visits() {
    check_visits("semana");
}
#[test]
fn semana_km() {
    check_km("semana");
}
#[test]
fn ruidoso_stopped_now() {
    check_stopped_now("ruidoso");
}
#[test]
fn ruidoso_long_stops() {
    check_long_stops("ruidoso");
}
#[test]
fn ruidoso_gaps() {
    check_gaps("ruidoso");
}
#[test]
fn ruidoso_speeding() {
    check_speeding("ruidoso");
}
#[test]
fn ruidoso_km() {
    check_km("ruidoso");
}

// The clock-change scenarios: a DST week with night shifts across the change (Madrid), and a
// fleet in two zones (Madrid and the Canaries) over the other change.
#[test]
fn cambio_hora_stopped_now() {
    check_stopped_now("cambio_hora");
}
#[test]
fn cambio_hora_long_stops() {
    check_long_stops("cambio_hora");
}
#[test]
fn cambio_hora_gaps() {
    check_gaps("cambio_hora");
}
#[test]
fn cambio_hora_speeding() {
    check_speeding("cambio_hora");
}
#[test]
fn cambio_hora_visits() {
    check_visits("cambio_hora");
}
#[test]
fn cambio_hora_km() {
    check_km("cambio_hora");
}
#[test]
fn dos_zonas_stopped_now() {
    check_stopped_now("dos_zonas");
}
#[test]
fn dos_zonas_long_stops() {
    check_long_stops("dos_zonas");
}
#[test]
fn dos_zonas_gaps() {
    check_gaps("dos_zonas");
}
#[test]
fn dos_zonas_speeding() {
    check_speeding("dos_zonas");
}
#[test]
fn dos_zonas_visits() {
    check_visits("dos_zonas");
}
#[test]
fn dos_zonas_km() {
    check_km("dos_zonas");
}

/// P and R ≥ 0.99 for every type on the clock-change scenarios, reported kilometres within 1 %.
#[test]
fn evaluation_meets_the_targets_across_clock_changes() {
    for name in ["cambio_hora", "dos_zonas"] {
        let report = evaluate(name);
        for score in report["tipos"].as_array().unwrap() {
            assert!(
                score["precision"].as_f64().unwrap() >= 0.99,
                "{name}: {score}"
            );
            assert!(
                score["exhaustividad"].as_f64().unwrap() >= 0.99,
                "{name}: {score}"
            );
            assert!(score["verdad"].as_u64().unwrap() > 0, "{name}: {score}");
        }
        assert!(
            report["km"]["error_max_pct"].as_f64().unwrap() <= 1.0,
            "{name}: {}",
            report["km"]
        );
    }
}

/// `flota evaluar` thresholds: P and R ≥ 0.99 on the reference week, F1 ≥ 0.97 under urban-
/// canyon noise, kilometres within 1 %.
fn evaluate(name: &'static str) -> Value {
    let fixture = fixture(name);
    let out = std::process::Command::new(flota_bin())
        .args(["evaluar", "--json"])
        .arg(&fixture.db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn evaluation_meets_the_targets_on_semana() {
    let report = evaluate("semana");
    for score in report["tipos"].as_array().unwrap() {
        assert!(score["precision"].as_f64().unwrap() >= 0.99, "{score}");
        assert!(score["exhaustividad"].as_f64().unwrap() >= 0.99, "{score}");
        assert!(score["verdad"].as_u64().unwrap() > 0, "{score}");
    }
    assert!(
        report["km"]["error_max_pct"].as_f64().unwrap() <= 1.0,
        "{}",
        report["km"]
    );
    assert!(
        report["km"]["error_max_gps_pct"].as_f64().unwrap() <= 1.0,
        "{}",
        report["km"]
    );
    assert!(report["km_fantasma_detenida"].as_f64().unwrap() < 0.1);
}

#[test]
fn evaluation_meets_the_targets_on_ruidoso() {
    let report = evaluate("ruidoso");
    for score in report["tipos"].as_array().unwrap() {
        assert!(score["f1"].as_f64().unwrap() >= 0.97, "{score}");
    }
    assert!(
        report["km"]["error_max_pct"].as_f64().unwrap() <= 1.0,
        "{}",
        report["km"]
    );
    assert!(report["km_fantasma_detenida"].as_f64().unwrap() < 0.1);
}

/// The server never reads the truth: with the truth file gone, every answer is the same.
#[test]
fn answers_do_not_depend_on_the_truth_file() {
    let fixture = fixture("minimo");
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("sin_verdad.db");
    std::fs::copy(&fixture.db, &copy).unwrap();
    assert!(!dir.path().join("sin_verdad.verdad.jsonl").exists());
    let (mut with, mut without) = (Client::new(&fixture.db), Client::new(&copy));
    let calls = [
        ("unidades_detenidas", json!({"minutos_minimos": 0})),
        ("posicion_actual", json!({"placa": "P-456DEF"})),
        (
            "resumen_recorrido",
            json!({"placa": "P-789GHJ", "fecha": "ayer"}),
        ),
        (
            "alertas",
            json!({"fecha_inicio": "ayer", "fecha_fin": "hoy"}),
        ),
        (
            "verificar_geocerca",
            json!({"placa": "P-123BCD", "nombre_geocerca": "cedis", "fecha": "ayer"}),
        ),
        (
            "reporte_kilometraje",
            json!({"fecha_inicio": "ayer", "fecha_fin": "hoy"}),
        ),
    ];
    for (tool, arguments) in calls {
        assert_eq!(
            with.call(tool, arguments.clone()),
            without.call(tool, arguments),
            "{tool}"
        );
    }
}

/// `flota analizar` re-derives exactly what `flota simular` stored: over emptied tables (so an
/// analizar that did nothing would fail), then again over its own output.
#[test]
fn analizar_is_idempotent() {
    let fixture = fixture("minimo");
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copia.db");
    std::fs::copy(&fixture.db, &copy).unwrap();
    let dump = |path: &std::path::Path| -> Vec<String> {
        let db = Connection::open(path).unwrap();
        let mut rows: Vec<String> = Vec::new();
        for table in ["eventos", "resumen_diario"] {
            let mut stmt = db.prepare(&format!("SELECT * FROM {table}")).unwrap();
            let n = stmt.column_count();
            let mut q = stmt.query([]).unwrap();
            while let Some(r) = q.next().unwrap() {
                let cells: Vec<String> = (0..n)
                    .map(|i| format!("{:?}", r.get_ref(i).unwrap()))
                    .collect();
                // Event ids are just insertion order.
                let skip = usize::from(table == "eventos");
                rows.push(format!("{table}: {}", cells[skip..].join("|")));
            }
        }
        // What the analysis says it covered is part of its output.
        let mut stmt = db
            .prepare(
                "SELECT clave, valor FROM meta WHERE clave LIKE 'analisis%' OR clave = 'deteccion'",
            )
            .unwrap();
        let mut q = stmt.query([]).unwrap();
        while let Some(r) = q.next().unwrap() {
            rows.push(format!(
                "meta: {}={}",
                r.get::<_, String>(0).unwrap(),
                r.get::<_, String>(1).unwrap()
            ));
        }
        rows.sort();
        rows
    };
    // The fresh simulation's analysis, done in memory.
    let fresh = dump(&fixture.db);
    assert!(fresh.len() > 50);
    Connection::open(&copy)
        .unwrap()
        .execute_batch("DELETE FROM eventos; DELETE FROM resumen_diario;")
        .unwrap();
    assert!(dump(&copy).iter().all(|row| row.starts_with("meta: ")));
    for _ in 0..2 {
        let out = std::process::Command::new(flota_bin())
            .arg("analizar")
            .arg(&copy)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let rewritten = dump(&copy);
        let missing: Vec<&String> = fresh.iter().filter(|r| !rewritten.contains(r)).collect();
        let extra: Vec<&String> = rewritten.iter().filter(|r| !fresh.contains(r)).collect();
        assert!(
            missing.is_empty() && extra.is_empty() && rewritten.len() == fresh.len(),
            "{} rows instead of {}; missing {:?}…; unexpected {:?}…",
            rewritten.len(),
            fresh.len(),
            &missing[..missing.len().min(3)],
            &extra[..extra.len().min(3)]
        );
    }
}

/// A visit under way at the data's first report is flagged as a lower bound, in words too,
/// in both tools that list visits; later visits are not.
#[test]
fn a_visit_under_way_when_the_data_begins_is_a_lower_bound() {
    let fixture = fixture("minimo");
    let mut client = Client::new(&fixture.db);
    let first_day = "2026-08-18";
    let summary = client.ok(
        "resumen_recorrido",
        json!({"placa": "P-123BCD", "fecha": first_day}),
    );
    let visits = summary["geocercas"].as_array().unwrap();
    let first = &visits[0];
    assert_eq!(first["entrada"], Value::Null, "{first}");
    assert_eq!(first["desde_antes_de_los_datos"], true, "{first}");
    assert!(
        first["nota"]
            .as_str()
            .unwrap()
            .contains("primer reporte de los datos"),
        "{first}"
    );
    for later in &visits[1..] {
        assert!(later.get("desde_antes_de_los_datos").is_none(), "{later}");
    }
    let fence = summary["geocercas"][0]["geocerca"]
        .as_str()
        .unwrap()
        .to_owned();
    let check = client.ok(
        "verificar_geocerca",
        json!({"placa": "P-123BCD", "nombre_geocerca": fence, "fecha": first_day}),
    );
    assert_eq!(
        check["visitas"][0]["desde_antes_de_los_datos"], true,
        "{check}"
    );
    assert!(check["visitas"][0]["nota"].is_string(), "{check}");
    // The next day's first visit began inside the data.
    let next = client.ok(
        "verificar_geocerca",
        json!({"placa": "P-123BCD", "nombre_geocerca": fence, "fecha": "2026-08-19"}),
    );
    assert!(
        next["visitas"][0].get("desde_antes_de_los_datos").is_none(),
        "{next}"
    );
}

/// A unit stopped now with the engine on has not returned: `hora_retorno` is null and a word
/// says why; a unit's finished day keeps its last arrival.
#[test]
fn a_unit_still_out_has_no_return_time() {
    let fixture = fixture("minimo");
    let mut client = Client::new(&fixture.db);
    let stopped = stopped_now(&fixture.truth.events);
    let plate = stopped[0].plate;
    let today = client.ok("resumen_recorrido", json!({"placa": plate, "fecha": "hoy"}));
    assert_eq!(today["hora_retorno"], Value::Null, "{today}");
    assert!(
        today["retorno"].as_str().unwrap().contains("sigue fuera"),
        "{today}"
    );
    let yesterday = client.ok(
        "resumen_recorrido",
        json!({"placa": plate, "fecha": "ayer"}),
    );
    assert!(yesterday["hora_retorno"].is_string(), "{yesterday}");
    assert!(yesterday.get("retorno").is_none(), "{yesterday}");
}

/// The minutes stopped of a day are one figure: `resumen_recorrido` and `mapa_recorrido`
/// agree to the tenth, for every unit of the fixture and both days.
#[test]
fn minutes_stopped_agree_between_the_summary_and_the_map() {
    let fixture = fixture("minimo");
    let mut client = Client::new(&fixture.db);
    for plate in ["P-123BCD", "P-456DEF", "P-789GHJ"] {
        for day in ["hoy", "ayer"] {
            let args = json!({"placa": plate, "fecha": day});
            let summary = client.ok("resumen_recorrido", args.clone());
            let map = client.ok("mapa_recorrido", args);
            assert_eq!(
                summary["minutos_total_paradas"], map["minutos_en_paradas"],
                "{plate} {day}"
            );
            assert_eq!(summary["numero_paradas"], map["paradas"], "{plate} {day}");
        }
    }
}
