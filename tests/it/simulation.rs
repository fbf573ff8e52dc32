//! `flota simular` end to end: scenarios into temp dirs, then the database and the truth log
//! checked against each other and against what the scenario asked for.

use std::path::{Path, PathBuf};
use std::process::Command;

use rusqlite::Connection;
use serde_json::Value;

use crate::support::flota_bin;

pub const AHORA: &str = "2026-08-19T15:30";

pub fn scenario_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("escenarios")
        .join(format!("{name}.toml"))
}

/// Runs `flota simular` and returns (status ok, stderr, db path, truth path).
pub fn simulate_file(
    scenario: &Path,
    dir: &Path,
    extra: &[&str],
) -> (bool, String, PathBuf, PathBuf) {
    let db = dir.join("flota.db");
    let out = Command::new(flota_bin())
        .arg("simular")
        .arg(scenario)
        .args(["--ahora", AHORA, "--salida"])
        .arg(&db)
        .args(extra)
        .output()
        .unwrap();
    let truth = dir.join("flota.verdad.jsonl");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        db,
        truth,
    )
}

/// Simulates a shipped scenario into `dir`, asserting success.
pub fn simulate(name: &str, dir: &Path) -> (PathBuf, PathBuf) {
    let (ok, stderr, db, truth) = simulate_file(&scenario_path(name), dir, &[]);
    assert!(ok, "{stderr}");
    (db, truth)
}

pub fn truth_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn of_type<'a>(truth: &'a [Value], kind: &str) -> Vec<&'a Value> {
    truth.iter().filter(|e| e["tipo"] == kind).collect()
}

/// A position row as stored, decoded.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub ts: i64,
    pub seq: i64,
    pub received: i64,
    pub lat: f64,
    pub lon: f64,
    pub speed: f64,
    pub ignition: bool,
    pub odometer_km: f64,
}

pub fn rows(db: &Connection, plate: &str) -> Vec<Row> {
    let mut stmt = db
        .prepare(
            "SELECT ts_utc, secuencia, ts_utc + retraso_s, lat_e6, lon_e6, velocidad_kmh, ignicion, odometro_m
             FROM posiciones JOIN vehiculos v ON v.id = vehiculo_id WHERE v.placa = ?1 ORDER BY ts_utc, secuencia",
        )
        .unwrap();
    stmt.query_map([plate], |r| {
        Ok(Row {
            ts: r.get(0)?,
            seq: r.get(1)?,
            received: r.get(2)?,
            lat: r.get::<_, i64>(3)? as f64 / 1e6,
            lon: r.get::<_, i64>(4)? as f64 / 1e6,
            speed: r.get(5)?,
            ignition: r.get::<_, i64>(6)? == 1,
            odometer_km: r.get::<_, i64>(7)? as f64 / 1000.0,
        })
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn ahora_utc(db: &Connection) -> i64 {
    db.query_row(
        "SELECT valor FROM meta WHERE clave = 'ahora_utc'",
        [],
        |r| r.get::<_, String>(0),
    )
    .unwrap()
    .parse()
    .unwrap()
}

#[test]
fn same_inputs_give_identical_bytes() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (db_a, truth_a) = simulate("minimo", a.path());
    let (db_b, truth_b) = simulate("minimo", b.path());
    assert_eq!(
        std::fs::read(&truth_a).unwrap(),
        std::fs::read(&truth_b).unwrap()
    );
    assert_eq!(
        std::fs::read(&db_a).unwrap(),
        std::fs::read(&db_b).unwrap(),
        "database bytes differ"
    );
    // Another seed changes the run.
    let c = tempfile::tempdir().unwrap();
    let (ok, stderr, _, truth_c) =
        simulate_file(&scenario_path("minimo"), c.path(), &["--semilla", "99"]);
    assert!(ok, "{stderr}");
    assert_ne!(
        std::fs::read(&truth_a).unwrap(),
        std::fs::read(&truth_c).unwrap()
    );
}

#[test]
fn adding_a_vehicle_leaves_the_others_unchanged() {
    let base = tempfile::tempdir().unwrap();
    let (db, _) = simulate("minimo", base.path());
    let text = std::fs::read_to_string(scenario_path("minimo")).unwrap();
    let routes = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("rutas");
    let extended = text.replace(
        "rutas = \"../rutas\"",
        &format!("rutas = {:?}", routes.display().to_string()),
    ) + "\n[[unidades]]\nplaca = \"P-999ZZZ\"\ntipo = \"panel\"\nconductor = \"Nueva\"\nrutas = [\"r05_mixco_sancristobal_z7\"]\n";
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("extendido.toml");
    std::fs::write(&file, extended).unwrap();
    let (ok, stderr, db2, _) = simulate_file(&file, dir.path(), &[]);
    assert!(ok, "{stderr}");
    let (a, b) = (
        Connection::open(db).unwrap(),
        Connection::open(db2).unwrap(),
    );
    for plate in ["P-123BCD", "P-456DEF", "P-789GHJ"] {
        let (ra, rb) = (rows(&a, plate), rows(&b, plate));
        assert_eq!(ra.len(), rb.len(), "{plate}");
        assert!(
            ra.iter()
                .zip(&rb)
                .all(|(x, y)| x.ts == y.ts && x.lat == y.lat && x.speed == y.speed),
            "{plate}"
        );
    }
    assert!(!rows(&b, "P-999ZZZ").is_empty());
}

/// The invariants that tie the positions to the truth, on a given scenario.
fn check_invariants(name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (db_path, truth_path) = simulate(name, dir.path());
    let db = Connection::open(&db_path).unwrap();
    let truth = truth_lines(&truth_path);
    let ahora = ahora_utc(&db);
    assert_eq!(truth[0]["tipo"], "cabecera");
    assert_eq!(truth[0]["ahora_utc"], ahora);

    // Nothing after `ahora`, nothing received after it either.
    let (max_ts, max_received): (i64, i64) = db
        .query_row(
            "SELECT max(ts_utc), max(ts_utc + retraso_s) FROM posiciones",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(max_ts <= ahora && max_received <= ahora);

    // No report inside a signal-loss interval, and reports on both sides of it.
    let losses = of_type(&truth, "perdida_senal");
    assert!(!losses.is_empty(), "{name}: no signal loss to check");
    for loss in losses {
        let (from, to) = (
            loss["inicio_utc"].as_i64().unwrap(),
            loss["fin_utc"].as_i64().unwrap(),
        );
        let unit = rows(&db, loss["placa"].as_str().unwrap());
        assert!(
            unit.iter().all(|r| r.ts < from || r.ts >= to),
            "{name}: report inside {loss}"
        );
        assert!(
            unit.iter().any(|r| r.ts < from && r.ts >= from - 60),
            "{name}: nothing just before {loss}"
        );
        if to <= ahora {
            assert!(
                unit.iter().any(|r| r.ts >= to && r.ts < to + 60),
                "{name}: nothing just after {loss}"
            );
        }
    }

    // Reported speeds exceed the limit throughout each injected speeding interval.
    let speeding: Vec<&Value> = of_type(&truth, "exceso_velocidad")
        .into_iter()
        .filter(|e| e["inyectado"] == true)
        .collect();
    assert!(!speeding.is_empty(), "{name}: no speeding to check");
    for episode in speeding {
        let (from, to) = (
            episode["inicio_utc"].as_i64().unwrap(),
            episode["fin_utc"].as_i64().unwrap(),
        );
        let limit = episode["limite_kmh"].as_f64().unwrap();
        let max = episode["velocidad_max_kmh"].as_f64().unwrap();
        let inside: Vec<Row> = rows(&db, episode["placa"].as_str().unwrap())
            .into_iter()
            .filter(|r| r.ts > from + 2 && r.ts < to - 2)
            .collect();
        assert!(!inside.is_empty(), "{name}: no report during {episode}");
        // Doppler speed noise is small; at the edges the true speed is just over the limit.
        assert!(
            inside.iter().all(|r| r.speed > limit - 6.0),
            "{name}: {episode}: {inside:?}"
        );
        let reported_max = inside.iter().map(|r| r.speed).fold(0.0, f64::max);
        assert!(
            (reported_max - max).abs() < 6.0,
            "{name}: {episode}: reported max {reported_max}"
        );
    }

    // Units stopped "now" report standing still, engine on, at one place, up to `ahora`.
    let stopped = of_type(&truth, "detenida_ahora");
    assert!(!stopped.is_empty(), "{name}: no stopped unit to check");
    for unit in stopped {
        let since = unit["desde_utc"].as_i64().unwrap();
        let place = flota::geometry::earth::LatLon::new(
            unit["lat"].as_f64().unwrap(),
            unit["lon"].as_f64().unwrap(),
        );
        let after: Vec<Row> = rows(&db, unit["placa"].as_str().unwrap())
            .into_iter()
            .filter(|r| r.ts > since + 1)
            .collect();
        assert!(after.len() > 2, "{name}: {unit}");
        assert!(
            after.last().unwrap().ts >= ahora - 15 - 300,
            "{name}: {unit} stopped reporting early"
        );
        for r in &after {
            assert_eq!(r.speed, 0.0, "{name}: {unit} moving at {}", r.ts);
            assert!(r.ignition, "{name}: {unit} engine off");
            let d = flota::geometry::earth::distance_m(
                place,
                flota::geometry::earth::LatLon::new(r.lat, r.lon),
            );
            assert!(d < 150.0, "{name}: {unit} report {d:.0} m away");
        }
        let minutes = unit["minutos"].as_f64().unwrap();
        assert!((minutes - (ahora - since) as f64 / 60.0).abs() < 0.2);
    }

    // The odometer only grows, and true kilometres per day add up to it.
    let km_days = of_type(&truth, "km_dia");
    for plate in km_days
        .iter()
        .map(|e| e["placa"].as_str().unwrap())
        .collect::<std::collections::BTreeSet<_>>()
    {
        let unit = rows(&db, plate);
        assert!(
            unit.windows(2)
                .all(|w| w[1].odometer_km >= w[0].odometer_km - 1e-9),
            "{plate}"
        );
        let silent_now = of_type(&truth, "perdida_senal")
            .iter()
            .any(|l| l["placa"] == plate && l["fin_utc"].as_i64().is_some_and(|f| f > ahora));
        if silent_now {
            // What it drove after its last report is in the truth, not in any report.
            continue;
        }
        let truth_km: f64 = km_days
            .iter()
            .filter(|e| e["placa"] == plate)
            .map(|e| e["km"].as_f64().unwrap())
            .sum();
        let odo_km = unit.last().unwrap().odometer_km - unit.first().unwrap().odometer_km;
        // The odometer is the true path; the first report is after the first departure's
        // start, the last may precede the last metres before `ahora`.
        assert!(
            (truth_km - odo_km).abs() < 1.0,
            "{plate}: truth {truth_km} vs odometer {odo_km}"
        );
    }

    // Delivery faults appear exactly when the scenario asks for them.
    let all: Vec<Row> = km_days
        .iter()
        .map(|e| e["placa"].as_str().unwrap())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .flat_map(|plate| rows(&db, plate))
        .collect();
    let duplicates = all.iter().filter(|r| r.seq > 0).count();
    let late = all.iter().filter(|r| r.received > r.ts).count();
    if name == "ruidoso" {
        assert!(
            duplicates > 50 && late > 100,
            "{duplicates} duplicates, {late} late"
        );
    } else {
        assert_eq!((duplicates, late), (0, 0));
    }

    // The database never holds truth: no column mentions it.
    let columns: Vec<String> = db
        .prepare("SELECT name FROM pragma_table_info('posiciones')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        columns
            .iter()
            .all(|c| !c.contains("verdad") && !c.contains("inyect")),
        "{columns:?}"
    );
}

#[test]
fn truth_and_positions_agree_on_minimo() {
    check_invariants("minimo");
}

#[test]
fn truth_and_positions_agree_on_ruidoso() {
    check_invariants("ruidoso");
}

#[test]
fn truth_visits_agree_with_the_noise_free_path() {
    // Without noise the reports are the noise-free path: each one is inside a fence exactly
    // when the truth says the unit was.
    let text = std::fs::read_to_string(scenario_path("minimo")).unwrap();
    let routes = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("rutas");
    let quiet = text
        .replace(
            "rutas = \"../rutas\"",
            &format!("rutas = {:?}", routes.display().to_string()),
        )
        .replace("sigma_m = 5.0", "sigma_m = 0.0\njitter_estacionado_m = 0.0");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sin_ruido.toml");
    std::fs::write(&file, quiet).unwrap();
    let (ok, stderr, db_path, truth_path) = simulate_file(&file, dir.path(), &[]);
    assert!(ok, "{stderr}");
    let world = flota::scenario::load(
        &flota::scenario::Source::File(file),
        flota::scenario::Ahora::Local(flota::cli::parse_ahora(AHORA).unwrap()),
    )
    .unwrap();
    let db = Connection::open(db_path).unwrap();
    let truth = truth_lines(&truth_path);
    let visits = of_type(&truth, "visita_geocerca");
    assert!(visits.len() > 20, "{}", visits.len());
    let mut checked = 0;
    for unit in &world.units {
        for r in rows(&db, &unit.plate) {
            for fence in &world.fences {
                let inside = fence.contains(flota::geometry::earth::LatLon::new(r.lat, r.lon));
                let near_edge = visits.iter().any(|v| {
                    v["placa"] == unit.plate.as_str()
                        && v["geocerca"] == fence.name.as_str()
                        && [&v["entrada_utc"], &v["salida_utc"]]
                            .iter()
                            .any(|t| t.as_i64().is_some_and(|t| (t - r.ts).abs() <= 1))
                });
                if near_edge {
                    continue; // within rounding of a crossing
                }
                let in_visit = visits.iter().any(|v| {
                    v["placa"] == unit.plate.as_str()
                        && v["geocerca"] == fence.name.as_str()
                        && v["entrada_utc"].as_i64().is_none_or(|e| e <= r.ts)
                        && v["salida_utc"].as_i64().is_none_or(|s| r.ts < s)
                });
                assert_eq!(
                    inside, in_visit,
                    "{} {} at {}",
                    unit.plate, fence.name, r.ts
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 10_000, "{checked}");
}

#[test]
fn the_reference_week_has_the_reference_shape() {
    let dir = tempfile::tempdir().unwrap();
    let (db_path, truth_path) = simulate("semana", dir.path());
    let db = Connection::open(&db_path).unwrap();
    let count = |sql: &str| db.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
    assert_eq!(count("SELECT count(*) FROM vehiculos"), 15);
    assert_eq!(count("SELECT count(*) FROM vehiculos WHERE activo = 0"), 1);
    assert_eq!(count("SELECT count(*) FROM geocercas"), 6);
    assert_eq!(count("SELECT count(*) FROM rutas"), 10);
    assert_eq!(
        count("SELECT count(DISTINCT vehiculo_id) FROM posiciones"),
        14
    );
    let positions = count("SELECT count(*) FROM posiciones");
    assert!((140_000..190_000).contains(&positions), "{positions}");
    let truth = truth_lines(&truth_path);
    let injections = of_type(&truth, "inyeccion");
    for (class, n) in [
        ("exceso_velocidad", 12),
        ("parada_prolongada", 8),
        ("perdida_senal", 5),
        ("detenida_ahora", 3),
    ] {
        assert_eq!(
            injections.iter().filter(|i| i["clase"] == class).count(),
            n,
            "{class}"
        );
    }
    // Sundays: only the five units that work them report.
    let sunday_units = count(
        "SELECT count(DISTINCT vehiculo_id) FROM posiciones WHERE ts_utc >= 1786860000 AND ts_utc < 1786946400",
    );
    assert_eq!(sunday_units, 5);
    let meta: Vec<(String, String)> = db
        .prepare("SELECT clave, valor FROM meta ORDER BY clave")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for key in [
        "zona_horaria",
        "ahora_utc",
        "semilla",
        "escenario_sha256",
        "flota_version",
        "esquema_version",
    ] {
        assert!(meta.iter().any(|(k, _)| k == key), "meta lacks {key}");
    }
}
