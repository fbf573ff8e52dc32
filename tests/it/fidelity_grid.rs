//! `flota evaluar --matriz`: a reduced fidelity grid as a regression gate on every
//! `cargo test`, the gate failing by name when its floor is above what the engine achieves,
//! the files it writes, and bad grid flags refused in Spanish naming the culprit.
//!
//! The reduced grid is the Las Palmas scenario at σ 5 and 15 m × drift 0 and 10 m (its own
//! 1 % jumps of 200 m, 3 % duplicates, 5 % late reports), seeds 1–2: eight runs. Its floor
//! was 0.80 when the grid was written (a false speeding episode at Triana's 30 km/h edge on a
//! seed with two real ones); since speeding margins follow the Doppler noise and a zone's limit
//! applies only beyond the position noise of its edge, the worst seed of any type is 0.989
//! (geofence visits at σ 15 m with 10 m drift), so the floor is 0.98. Raise it as the engine
//! improves, never lower it to make a change pass. One more point (σ 15 m, drift 10 m, seeds
//! 1–2) runs every unit on the built-in `comercial` tracker against the same floor.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::flota_bin;

/// What the current engine achieved on the reduced grid (worst seed, worst type, worst point:
/// 0.989, visits at σ 15 m with 10 m drift), rounded down; 1.000 everywhere since the
/// evaluator dates a crossing by a unit halted at a fence's edge only to the halt.
const FLOOR: &str = "0.98";

fn grid(out: &Path, extra: &[&str]) -> Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    Command::new(flota_bin())
        .current_dir(root)
        .args(["evaluar", "--matriz", "escenarios/ciudad_las_palmas.toml"])
        .args([
            "--ahora",
            "2026-06-17T15:30",
            "--sigma",
            "5,15",
            "--deriva",
            "0,10",
        ])
        .args(["--semillas", "1-2", "--salida"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The lowest worst-seed F1 over the grid's points and types, and the labels of the points
/// where some type has it.
fn lowest(report: &Value) -> f64 {
    report["puntos"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["tipos"].as_array().unwrap().iter())
        .filter_map(|t| t["f1_peor"].as_f64())
        .fold(1.0, f64::min)
}

#[test]
fn the_reduced_grid_holds_its_floor_and_fails_by_name_above_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("matriz");
    let held = grid(&out, &["--f1-minimo", FLOOR]);
    assert_eq!(held.status.code(), Some(0), "{}", stderr(&held));
    let table = String::from_utf8(held.stdout).unwrap();
    assert!(
        table.contains("4 puntos × 2 semillas = 8 ejecuciones"),
        "{table}"
    );
    assert!(
        table.contains("ciudad_las_palmas  σ 15 m, deriva 10 m"),
        "{table}"
    );

    let report: Value =
        serde_json::from_slice(&std::fs::read(out.join("matriz.json")).unwrap()).unwrap();
    assert_eq!(report["ejecuciones"], 8);
    assert_eq!(report["puntos"].as_array().unwrap().len(), 4);
    assert_eq!(report["puntos"][3]["ruido"]["sigma_m"], 15.0);
    assert_eq!(report["puntos"][3]["ruido"]["deriva_sigma_m"], 10.0);
    assert_eq!(
        report["puntos"][3]["ruido"]["saltos_probabilidad"],
        Value::Null
    );
    for chart in ["f1_ruido.png", "error_km.png", "km_fantasma.png"] {
        let bytes = std::fs::read(out.join(chart)).unwrap();
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{chart}");
        assert!(bytes.len() < 200_000, "{chart}: {} bytes", bytes.len());
    }
    let left: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".trabajo"))
        .collect();
    assert!(left.is_empty(), "scratch left behind: {left:?}");

    // Just above what was achieved, the gate fails and names every point below it. Judged at
    // a strict 15 s tolerance: at the default one every type scores 1.000 at every point
    // since a crossing by a unit halted at a fence's edge is dated to the halt (session
    // fourteen), and a gate can only fail below 1.
    let strict_out = dir.path().join("estricta");
    let strict = grid(&strict_out, &["--tolerancia", "15"]);
    assert_eq!(strict.status.code(), Some(0), "{}", stderr(&strict));
    let report: Value =
        serde_json::from_slice(&std::fs::read(strict_out.join("matriz.json")).unwrap()).unwrap();
    let low = lowest(&report);
    assert!(
        low < 1.0,
        "the engine is perfect on the reduced grid even at 15 s: give the failing gate a harder one"
    );
    let above = format!("{:.4}", (low + 0.0001).min(1.0));
    let failed = grid(&out, &["--tolerancia", "15", "--f1-minimo", &above]);
    assert_eq!(failed.status.code(), Some(1), "{}", stderr(&failed));
    let words = stderr(&failed);
    assert!(
        words.contains(&format!("F1 por debajo de {above}")),
        "{words}"
    );
    for point in report["puntos"].as_array().unwrap() {
        let below = point["tipos"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["f1_peor"].as_f64().is_some_and(|f1| f1 < low + 0.0001));
        let label = format!(
            "ciudad_las_palmas, σ {} m, deriva {} m:",
            point["ruido"]["sigma_m"].as_f64().unwrap(),
            point["ruido"]["deriva_sigma_m"].as_f64().unwrap()
        );
        assert_eq!(words.contains(&label), below, "{label} in:\n{words}");
    }
}

/// One point of the reduced grid with every unit on the built-in `comercial` tracker (adaptive
/// recording, hourly records while stopped, a network outage per shift): the same floor. Its
/// signal losses scored 0.43–0.56 on the grid while the truth dated each loss by bounds such a
/// tracker cannot show, and its stops ended up to a minute early under drift.
#[test]
fn the_commercial_tracker_holds_the_same_floor() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(flota_bin())
        .current_dir(root)
        .args(["evaluar", "--matriz", "escenarios/ciudad_las_palmas.toml"])
        .args([
            "--ahora",
            "2026-06-17T15:30",
            "--sigma",
            "15",
            "--deriva",
            "10",
        ])
        .args(["--rastreadores", "comercial", "--semillas", "1-2"])
        .args(["--f1-minimo", FLOOR, "--salida"])
        .arg(dir.path().join("matriz"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("comercial"), "{table}");
}

#[test]
fn bad_grid_flags_are_refused_in_spanish_naming_the_culprit() {
    let check = |args: &[&str], needle: &str| {
        let out = Command::new(flota_bin())
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .arg("evaluar")
            .args(args)
            .output()
            .unwrap();
        let words = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {words}");
        assert!(words.contains(needle), "{args:?}: {words}");
    };
    let m = ["--matriz", "escenarios/minimo.toml"];
    check(
        &[&m[..], &["--sigma", "5,,25"]].concat(),
        "'5,,25' tiene un elemento vacío",
    );
    check(
        &[&m[..], &["--deriva", "10,diez"]].concat(),
        "'diez' no es un número",
    );
    check(
        &[&m[..], &["--saltos", "0,150%"]].concat(),
        "'150' está fuera de rango",
    );
    check(
        &[&m[..], &["--saltos", "2"]].concat(),
        "'2' está fuera de rango: use una probabilidad",
    );
    check(
        &[&m[..], &["--semillas", "20-1"]].concat(),
        "el rango '20-1' va al revés",
    );
    check(
        &[&m[..], &["--retraso", "600-30"]].concat(),
        "'600-30' va al revés",
    );
    check(
        &[&m[..], &["--tau", "0"]].concat(),
        "'0' está fuera de rango",
    );
    check(&["--sigma", "5"], "falta el argumento obligatorio --matriz");
    check(
        &[&m[..], &["--detecciones", "x.csv", "--verdad", "y"]].concat(),
        "--matriz <ESCENARIO.toml> no se puede usar junto con --detecciones",
    );
}

#[test]
fn a_missing_scenario_is_named_and_nothing_is_left_behind() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("matriz");
    let run = Command::new(flota_bin())
        .args([
            "evaluar",
            "--matriz",
            "no_existe.toml",
            "--semillas",
            "1",
            "--salida",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    assert!(
        stderr(&run).contains("no_existe.toml: no se pudo leer: no existe"),
        "{}",
        stderr(&run)
    );
    assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none());
}

/// `--rastreadores` is one more dimension: every unit of a point carries the named profile
/// (a scenario's own, or the built-in set when it defines none), the table gains a column,
/// the JSON names the profile per point, and the charts get a panel; a name the scenario does
/// not have is refused before anything runs, naming it and the ones there are.
#[test]
fn tracker_profiles_are_a_grid_dimension() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("matriz");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = |scenario: &str, ahora: &str, names: &str| {
        Command::new(flota_bin())
            .current_dir(root)
            .args(["evaluar", "--matriz", scenario, "--ahora", ahora])
            .args(["--sigma", "5", "--semillas", "1", "--rastreadores", names])
            .arg("--salida")
            .arg(&out)
            .output()
            .unwrap()
    };
    let las_palmas = "escenarios/ciudad_las_palmas.toml";
    let held = run(las_palmas, "2026-06-17T15:30", "fijo,telefono");
    assert_eq!(held.status.code(), Some(0), "{}", stderr(&held));
    let table = String::from_utf8(held.stdout).unwrap();
    assert!(table.contains("2 puntos × 1 semillas"), "{table}");
    let header = table.lines().find(|l| l.starts_with("escenario")).unwrap();
    assert!(header.contains("  rastreador  "), "{table}");
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("ciudad_las_palmas"))
        .collect();
    assert_eq!(rows.len(), 2, "{table}");
    assert!(
        rows[0].contains("  fijo  ") && rows[1].contains("  telefono  "),
        "{table}"
    );
    let report: Value =
        serde_json::from_slice(&std::fs::read(out.join("matriz.json")).unwrap()).unwrap();
    let profiles: Vec<&str> = report["puntos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["rastreador"].as_str().unwrap())
        .collect();
    assert_eq!(profiles, ["fijo", "telefono"]);
    // The profile really changed the tracker: the phone records every 10 s, so its units
    // judge the same days on more reports; the runs differ.
    assert_ne!(report["puntos"][0]["tipos"], report["puntos"][1]["tipos"]);

    let own = run(
        "escenarios/rastreadores.toml",
        "2026-09-17T15:00",
        "comercial",
    );
    assert_eq!(own.status.code(), Some(0), "{}", stderr(&own));

    for (scenario, ahora, names, needle) in [
        (
            las_palmas,
            "2026-06-17T15:30",
            "fijo,satelite",
            "el escenario ciudad_las_palmas no tiene el rastreador 'satelite'; use uno de los integrados",
        ),
        (
            "escenarios/rastreadores.toml",
            "2026-09-17T15:00",
            "fijo",
            "el escenario rastreadores no tiene el rastreador 'fijo'; use uno de los del escenario: comercial, economico, telefono",
        ),
        (
            las_palmas,
            "2026-06-17T15:30",
            "fijo,,telefono",
            "'fijo,,telefono' tiene un elemento vacío",
        ),
        (
            las_palmas,
            "2026-06-17T15:30",
            "fijo,fijo",
            "'fijo' está repetido",
        ),
    ] {
        let refused = run(scenario, ahora, names);
        assert_eq!(
            refused.status.code(),
            Some(2),
            "{names}: {}",
            stderr(&refused)
        );
        assert!(
            stderr(&refused).contains(needle),
            "{names}: {}",
            stderr(&refused)
        );
    }
}
