//! Detections are never served as fact when they are missing or stale, and a database that
//! changes under the server is reloaded, however the change was made.
//!
//! Every test drives the real `flota servir` (and `flota analizar`) over a copy of the
//! `minimo` fixture that a second writer (rusqlite, here) changes the way an old tool, a
//! hand edit or another program would.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::ground_truth::{Client, fixture};
use crate::support::flota_bin;

fn copy_of_minimo(dir: &Path, name: &str) -> PathBuf {
    let db = dir.join(name);
    std::fs::copy(&fixture("minimo").db, &db).unwrap();
    db
}

fn execute(db: &Path, sql: &str) {
    rusqlite::Connection::open(db)
        .unwrap()
        .execute_batch(sql)
        .unwrap();
}

/// Runs `flota analizar` and returns its stderr, asserting success.
fn analizar(db: &Path) -> String {
    let out = Command::new(flota_bin())
        .arg("analizar")
        .arg(db)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}

/// The tools whose answers are made of detections, with arguments that have data.
fn detection_calls() -> Vec<(&'static str, Value)> {
    vec![
        ("unidades_detenidas", json!({"minutos_minimos": 0})),
        (
            "resumen_recorrido",
            json!({"placa": "P-456DEF", "fecha": "ayer"}),
        ),
        (
            "mapa_recorrido",
            json!({"placa": "P-456DEF", "fecha": "ayer"}),
        ),
        (
            "alertas",
            json!({"fecha_inicio": "ayer", "fecha_fin": "hoy"}),
        ),
        (
            "verificar_geocerca",
            json!({"placa": "P-123BCD", "nombre_geocerca": "CEDIS", "fecha": "ayer"}),
        ),
        (
            "reporte_kilometraje",
            json!({"fecha_inicio": "ayer", "fecha_fin": "hoy"}),
        ),
    ]
}

pub fn every_call() -> Vec<(&'static str, Value)> {
    let mut calls = detection_calls();
    calls.push(("posicion_actual", json!({"placa": "P-123BCD"})));
    calls
}

/// Every answer with the map's image size left out (it depends on nothing here).
fn answers(client: &mut Client) -> Vec<Value> {
    every_call()
        .into_iter()
        .map(|(tool, args)| client.ok(tool, args))
        .collect()
}

/// Each detection tool refuses with one sentence naming `flota analizar` and the database;
/// `posicion_actual` still answers where the unit is, with a warning and no stop start.
fn assert_refused(client: &mut Client, db: &Path, reason: &str) {
    let command = format!("flota analizar {}", db.display());
    for (tool, args) in detection_calls() {
        let error = client
            .call(tool, args)
            .expect_err(&format!("{tool} answered from unusable detections"));
        assert!(error.contains(&command), "{tool}: {error}");
        assert!(error.contains(reason), "{tool}: {error}");
    }
    let position = client.ok("posicion_actual", json!({"placa": "P-123BCD"}));
    let warning = position["aviso"].as_str().unwrap_or_default();
    assert!(warning.contains(&command), "{position}");
    assert_eq!(position["detenida_desde"], Value::Null, "{position}");
}

#[test]
fn emptied_detections_are_refused_until_analizar_restores_them() {
    let tmp = tempfile::tempdir().unwrap();
    let db = copy_of_minimo(tmp.path(), "flota.db");
    let expected = answers(&mut Client::new(&fixture("minimo").db));
    execute(&db, "DELETE FROM eventos; DELETE FROM resumen_diario;");
    let mut client = Client::new(&db);
    assert_refused(&mut client, &db, "se modificaron después del análisis");
    analizar(&db);
    assert_eq!(answers(&mut client), expected);
}

#[test]
fn dropped_detection_tables_are_recreated_by_analizar() {
    let tmp = tempfile::tempdir().unwrap();
    let db = copy_of_minimo(tmp.path(), "flota.db");
    let expected = answers(&mut Client::new(&fixture("minimo").db));
    execute(&db, "DROP TABLE eventos; DROP TABLE resumen_diario;");
    let mut client = Client::new(&db);
    assert_refused(&mut client, &db, "faltan las tablas de detecciones");
    let stderr = analizar(&db);
    assert!(!stderr.contains("no such"), "{stderr}");
    assert_eq!(answers(&mut client), expected);
}

#[test]
fn detections_made_with_other_thresholds_are_refused_until_reanalysed() {
    let tmp = tempfile::tempdir().unwrap();
    let db = copy_of_minimo(tmp.path(), "flota.db");
    // The database now asks for long stops from 20 minutes; the detections used 42.
    execute(
        &db,
        "UPDATE meta SET valor = json_set(valor, '$.parada_prolongada_min', 20.0) WHERE clave = 'deteccion'",
    );
    let mut client = Client::new(&db);
    assert_refused(&mut client, &db, "otros umbrales");
    analizar(&db);
    for (tool, args) in every_call() {
        let answer = client.ok(tool, args);
        assert_eq!(answer.get("aviso"), None, "{tool}: {answer}");
    }
}

#[test]
fn positions_written_after_the_analysis_are_flagged_until_reanalysed() {
    let tmp = tempfile::tempdir().unwrap();
    let db = copy_of_minimo(tmp.path(), "flota.db");
    let mut client = Client::new(&db);
    for (tool, args) in every_call() {
        let answer = client.ok(tool, args);
        assert_eq!(answer.get("aviso"), None, "{tool}: {answer}");
    }
    // Another writer delivers late reports of P-123BCD from yesterday afternoon (7 s after
    // fixes it already had) without re-running the analysis.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let added = conn
        .execute(
            "INSERT OR IGNORE INTO posiciones
             SELECT vehiculo_id, ts_utc + 7, 0, 600, lat_e6, lon_e6, velocidad_kmh, rumbo_grados, ignicion, odometro_m
             FROM posiciones WHERE vehiculo_id = (SELECT id FROM vehiculos WHERE placa = 'P-123BCD')
             AND ts_utc BETWEEN 1787083800 AND 1787084800",
            [],
        )
        .unwrap();
    drop(conn);
    assert!(added > 10, "{added} rows added");
    let command = format!("flota analizar {}", db.display());
    // The fleet-wide answers and P-123BCD's own say so, naming the unit and the command.
    let flagged = [
        ("unidades_detenidas", json!({"minutos_minimos": 0})),
        (
            "alertas",
            json!({"fecha_inicio": "ayer", "fecha_fin": "hoy"}),
        ),
        (
            "reporte_kilometraje",
            json!({"fecha_inicio": "ayer", "fecha_fin": "hoy"}),
        ),
        (
            "resumen_recorrido",
            json!({"placa": "P-123BCD", "fecha": "ayer"}),
        ),
        (
            "mapa_recorrido",
            json!({"placa": "P-123BCD", "fecha": "ayer"}),
        ),
        (
            "verificar_geocerca",
            json!({"placa": "P-123BCD", "nombre_geocerca": "CEDIS", "fecha": "ayer"}),
        ),
        ("posicion_actual", json!({"placa": "P-123BCD"})),
    ];
    for (tool, args) in flagged {
        let answer = client.ok(tool, args);
        let warning = answer["aviso"].as_str().unwrap_or_default();
        assert!(warning.contains("P-123BCD"), "{tool}: {answer}");
        assert!(warning.contains(&command), "{tool}: {answer}");
    }
    // Another unit's answers are still whole.
    let other = client.ok(
        "resumen_recorrido",
        json!({"placa": "P-456DEF", "fecha": "ayer"}),
    );
    assert_eq!(other.get("aviso"), None, "{other}");
    analizar(&db);
    for (tool, args) in every_call() {
        let answer = client.ok(tool, args);
        assert_eq!(answer.get("aviso"), None, "{tool}: {answer}");
    }
}

/// Sets `path`'s modification time.
fn set_mtime(path: &Path, when: std::time::SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

fn driver(client: &mut Client) -> Value {
    client.ok("posicion_actual", json!({"placa": "P-123BCD"}))["conductor"].clone()
}

#[test]
fn a_database_replaced_by_one_of_the_same_size_and_time_is_reloaded() {
    let tmp = tempfile::tempdir().unwrap();
    let db = copy_of_minimo(tmp.path(), "flota.db");
    let other = copy_of_minimo(tmp.path(), "otra.db");
    execute(
        &other,
        "UPDATE vehiculos SET conductor = 'Conductora Nueva' WHERE placa = 'P-123BCD'",
    );
    let mut client = Client::new(&db);
    let before = driver(&mut client);
    assert_ne!(before, "Conductora Nueva");
    // Same size, same modification time, another file renamed over the served one.
    let served = std::fs::metadata(&db).unwrap();
    assert_eq!(std::fs::metadata(&other).unwrap().len(), served.len());
    set_mtime(&other, served.modified().unwrap());
    std::fs::rename(&other, &db).unwrap();
    assert_eq!(
        std::fs::metadata(&db).unwrap().modified().unwrap(),
        served.modified().unwrap()
    );
    assert_eq!(driver(&mut client), "Conductora Nueva");
}

#[test]
fn a_database_changed_in_place_keeping_size_and_time_is_reloaded() {
    let tmp = tempfile::tempdir().unwrap();
    let db = copy_of_minimo(tmp.path(), "flota.db");
    let mut client = Client::new(&db);
    let before = driver(&mut client);
    assert_ne!(before, "Conductora Nueva");
    let served = std::fs::metadata(&db).unwrap();
    execute(
        &db,
        "UPDATE vehiculos SET conductor = 'Conductora Nueva' WHERE placa = 'P-123BCD'",
    );
    set_mtime(&db, served.modified().unwrap());
    let now = std::fs::metadata(&db).unwrap();
    assert_eq!(now.len(), served.len());
    assert_eq!(now.modified().unwrap(), served.modified().unwrap());
    assert_eq!(driver(&mut client), "Conductora Nueva");
}
