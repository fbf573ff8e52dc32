//! `flota evaluar` as a yardstick: it must notice detections that are off in time, say "not
//! applicable" rather than invent a perfect score, and fail a CI gate below a given F1.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use flota::evaluation::truth;
use flota::sim::TruthEvent;
use rusqlite::Connection;
use serde_json::Value;

use crate::simulation::simulate;
use crate::support::flota_bin;

fn evaluar(db: &Path, extra: &[&str]) -> Output {
    Command::new(flota_bin())
        .arg("evaluar")
        .arg(db)
        .args(extra)
        .output()
        .unwrap()
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

/// The F1 of every scored type.
fn f1s(report: &Value) -> Vec<(String, Option<f64>)> {
    report["tipos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["tipo"].as_str().unwrap().to_owned(), t["f1"].as_f64()))
        .collect()
}

/// `minimo` simulated into `dir`, every detection then moved `shift_s` later.
fn shifted_minimo(dir: &Path, shift_s: i64) -> PathBuf {
    let (db, _) = simulate("minimo", dir);
    let conn = Connection::open(&db).unwrap();
    let moved = conn
        .execute(
            "UPDATE eventos SET inicio_utc = inicio_utc + ?1, fin_utc = fin_utc + ?1",
            [shift_s],
        )
        .unwrap();
    assert!(moved > 100, "{moved}");
    db
}

#[test]
fn detections_two_minutes_late_fail_the_default_tolerance() {
    let dir = tempfile::tempdir().unwrap();
    let db = shifted_minimo(dir.path(), 120);

    let strict = evaluar(&db, &["--json", "--f1-minimo", "0.9"]);
    assert_eq!(strict.status.code(), Some(1), "{strict:?}");
    let report = json_of(&strict);
    assert_eq!(report["tolerancia_s"], 60);
    for (kind, f1) in f1s(&report) {
        assert!(f1.unwrap() < 0.5, "{kind}: {f1:?}");
    }
    let stderr = String::from_utf8_lossy(&strict.stderr);
    assert!(stderr.contains("F1 por debajo de 0.9"), "{stderr}");
    for kind in [
        "parada",
        "exceso_velocidad",
        "perdida_senal",
        "visita_geocerca",
    ] {
        assert!(stderr.contains(&format!("{kind} (F1 0.0000)")), "{stderr}");
    }

    // A tolerance wider than the shift accepts them, and measures the shift.
    let wide = evaluar(
        &db,
        &["--json", "--f1-minimo", "0.9", "--tolerancia", "180"],
    );
    assert_eq!(
        wide.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&wide.stderr)
    );
    let report = json_of(&wide);
    for (kind, f1) in f1s(&report) {
        assert!(f1.unwrap() >= 0.9, "{kind}: {f1:?}");
    }
    let stops = &report["tipos"][0];
    assert_eq!(stops["tipo"], "parada");
    let p50 = stops["error_inicio_s"]["p50"].as_i64().unwrap();
    assert!((100..=140).contains(&p50), "{stops}");
    assert!(stops["error_fin_s"]["max"].as_i64().unwrap() <= 180);
}

#[test]
fn misses_are_listed_in_local_time_with_the_plate() {
    let dir = tempfile::tempdir().unwrap();
    let db = shifted_minimo(dir.path(), 120);
    let out = evaluar(&db, &[]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let listed: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("no detectado") || l.contains("falsa alarma"))
        .filter(|l| !l.ends_with(" más"))
        .collect();
    assert!(listed.len() > 10, "{text}");
    // No raw epoch seconds (ten digits), no sentinel for "before the data".
    for line in &listed {
        let epoch = line
            .split(|c: char| !c.is_ascii_digit())
            .any(|run| run.len() >= 10);
        assert!(!epoch, "{line}");
        assert!(line.contains("P-"), "{line}");
    }
    assert!(
        listed
            .iter()
            .any(|l| l.contains("P-123BCD: 2026-08-18 ") && l.contains(" → ")),
        "{text}"
    );
    // The stop every unit starts the data in: already under way.
    assert!(
        listed
            .iter()
            .any(|l| l.contains(": desde antes de los datos → 2026-08-18 ")),
        "{text}"
    );
}

/// With no speeding in the truth and none detected, precision and recall are not 1: they do
/// not apply. Such a type passes the gate.
#[test]
fn a_type_with_nothing_to_score_is_not_applicable() {
    let dir = tempfile::tempdir().unwrap();
    let (db, truth_path) = simulate("minimo", dir.path());
    let log = truth::read(&truth_path).unwrap();
    let mut text = serde_json::to_string(&log.header).unwrap() + "\n";
    for event in &log.events {
        if !matches!(event, TruthEvent::ExcesoVelocidad { .. }) {
            text += &(serde_json::to_string(event).unwrap() + "\n");
        }
    }
    std::fs::write(&truth_path, text).unwrap();
    let conn = Connection::open(&db).unwrap();
    let deleted = conn
        .execute("DELETE FROM eventos WHERE tipo = 'exceso_velocidad'", [])
        .unwrap();
    assert!(deleted > 0);

    let out = evaluar(&db, &["--json", "--f1-minimo", "0.9"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json_of(&out);
    let speeding = report["tipos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tipo"] == "exceso_velocidad")
        .unwrap();
    for key in ["precision", "exhaustividad", "f1"] {
        assert_eq!(speeding[key], Value::Null, "{speeding}");
    }
    assert_eq!(speeding["error_inicio_s"]["p50"], Value::Null);

    let text = String::from_utf8_lossy(&evaluar(&db, &[]).stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.starts_with("exceso_velocidad"))
        .unwrap();
    assert_eq!(line.matches("no aplica").count(), 3, "{line}");
    assert!(!line.contains("1.0000"), "{line}");
}

#[test]
fn bad_gate_and_tolerance_values_are_usage_errors() {
    for args in [
        ["--f1-minimo", "1.5"],
        ["--f1-minimo", "uno"],
        ["--tolerancia", "-5"],
    ] {
        let out = Command::new(flota_bin())
            .arg("evaluar")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("'{}'", args[1])),
            "{args:?}: {stderr}"
        );
    }
}

/// Another platform's export of the very same detections scores exactly as the database
/// they came from: `--detecciones` reads what `evaluar` would read from `eventos`.
#[test]
fn another_platforms_csv_scores_like_the_database_it_came_from() {
    let fixture = crate::ground_truth::fixture("minimo");
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("detecciones.csv");
    let conn = Connection::open(&fixture.db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT v.placa, e.tipo, e.inicio_utc, e.fin_utc, coalesce(g.nombre, ''), e.fin_de_jornada, e.desde_inicio_datos
             FROM eventos e JOIN vehiculos v ON v.id = e.vehiculo_id LEFT JOIN geocercas g ON g.id = e.geocerca_id",
        )
        .unwrap();
    let mut text =
        String::from("placa;tipo;inicio;fin;geocerca;fin_de_jornada;desde_inicio_datos\n");
    let rows = stmt
        .query_map([], |r| {
            let end: Option<i64> = r.get(3)?;
            // Times as ISO 8601 with a zone, as another platform would write them.
            let iso = |t: i64| chrono::DateTime::from_timestamp(t, 0).unwrap().to_rfc3339();
            Ok(format!(
                "{};{};{};{};{};{};{}\n",
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                iso(r.get(2)?),
                end.map(iso).unwrap_or_default(),
                r.get::<_, String>(4)?,
                r.get::<_, i64>(5)?,
                r.get::<_, i64>(6)?
            ))
        })
        .unwrap();
    for row in rows {
        text.push_str(&row.unwrap());
    }
    std::fs::write(&csv, text).unwrap();
    let truth = fixture.db.with_extension("verdad.jsonl");
    let from_db = json_of(&evaluar(&fixture.db, &["--json"]));
    let out = Command::new(flota_bin())
        .arg("evaluar")
        .arg("--detecciones")
        .arg(&csv)
        .arg("--verdad")
        .arg(&truth)
        .arg("--json")
        .output()
        .unwrap();
    let from_csv = json_of(&out);
    assert_eq!(from_csv["tipos"], from_db["tipos"]);
    assert!(
        f1s(&from_db)
            .iter()
            .any(|(_, f1)| f1.is_some_and(|f| f > 0.5))
    );
    assert_eq!(from_csv["km"]["dias"], 0);
}

/// Detections left by another engine (an older flota), or behind positions written after the
/// analysis, are not what this flota detects: scoring them would grade the wrong thing
/// silently. `evaluar` refuses, naming `flota analizar`, and scores once that has run.
#[test]
fn stale_detections_are_refused_until_reanalysed() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = simulate("minimo", dir.path());
    let conn = Connection::open(&db).unwrap();
    let changed = conn
        .execute(
            "UPDATE meta SET valor = CAST(valor AS INTEGER) - 1 WHERE clave = 'analisis_version'",
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(conn);
    let refused = evaluar(&db, &[]);
    assert!(!refused.status.success(), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("otra versión del motor"), "{stderr}");
    assert!(
        stderr.contains(&format!("flota analizar {}", db.display())),
        "{stderr}"
    );
    assert!(refused.stdout.is_empty());

    let analysed = Command::new(flota_bin())
        .arg("analizar")
        .arg(&db)
        .output()
        .unwrap();
    assert!(analysed.status.success(), "{analysed:?}");
    let scored = evaluar(&db, &["--json"]);
    assert_eq!(scored.status.code(), Some(0), "{scored:?}");
    assert!(f1s(&json_of(&scored)).iter().any(|(_, f1)| f1.is_some()));
}
