//! Date words and ranges on the days the clocks change, through the real server, against the
//! truth: `hoy`, `ayer` and weekday names on a 25-hour day (Madrid, autumn) and a 23-hour day
//! (Madrid and the Canaries, spring), ranges that cross the change, a fleet in two zones whose
//! units do not share "hoy", and events in the repeated hour told apart by their offsets.

use serde_json::{Value, json};

use flota::sim::TruthEvent;

use crate::ground_truth::{Client, Fixture, fixture};
use crate::support::{Server, flota_bin};

/// The truth's kilometres of `plate` on `date` (local to the unit).
fn truth_km(fixture: &Fixture, plate: &str, date: &str) -> f64 {
    fixture
        .truth
        .events
        .iter()
        .find_map(|e| match e {
            TruthEvent::KmDia { placa, fecha, km } if placa == plate && fecha == date => Some(*km),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no km_dia for {plate} {date}"))
}

/// Reported kilometres (rounded to 0.1) agree with the truth's.
fn same_km(answer: &Value, truth: f64, what: &str) {
    let km = answer["kilometros"].as_f64().unwrap();
    assert!(
        (km - truth).abs() <= 0.06 + truth * 0.001,
        "{what}: {km} vs truth {truth}"
    );
}

fn iso_ts(text: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap()
        .timestamp()
}

/// The start of the truth's signal loss of `plate` on its local `date`.
fn loss_start(fixture: &Fixture, plate: &str, date: &str) -> i64 {
    let zone = fixture.truth.header.zone_of(plate);
    fixture
        .truth
        .events
        .iter()
        .find_map(|e| match e {
            TruthEvent::PerdidaSenal {
                placa, inicio_utc, ..
            } if placa == plate
                && flota::calendar::local_date(zone, *inicio_utc).to_string() == date =>
            {
                Some(*inicio_utc)
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no loss of {plate} on {date}"))
}

/// Sunday 25 October 2026 in Madrid lasts 25 hours; the night shift that began on Saturday at
/// 21:30–22:30 drives through the repeated hour. "hoy" at 11:00 is that Sunday.
#[test]
fn hoy_ayer_and_weekdays_on_the_25_hour_day() {
    let f = fixture("cambio_hora");
    let mut c = Client::new(&f.db);
    // (3456-MNP, silent since 10:20, drove what no report shows: not asked about today.)
    for plate in ["5678-PRS", "6789-RST", "4567-NPR"] {
        for (word, date) in [
            ("hoy", "2026-10-25"),
            ("domingo", "2026-10-25"),
            ("ayer", "2026-10-24"),
            ("sábado", "2026-10-24"),
            ("anteayer", "2026-10-23"),
        ] {
            let answer = c.ok("resumen_recorrido", json!({"placa": plate, "fecha": word}));
            assert_eq!(answer["fecha"], date, "{plate} {word}");
            assert_eq!(answer["zona_horaria"], "Europe/Madrid");
            same_km(
                &answer,
                truth_km(f, plate, date),
                &format!("{plate} {word}"),
            );
        }
    }
    // A night unit's Sunday is the end of Saturday's shift: its kilometres after midnight,
    // through both 02:00–03:00 hours, are Sunday's and no one else's.
    let sunday = c.ok(
        "resumen_recorrido",
        json!({"placa": "5678-PRS", "fecha": "hoy"}),
    );
    assert!(truth_km(f, "5678-PRS", "2026-10-25") > 10.0);
    // The loss asked for the second 02:30 (+01:00) is there with its offset.
    let loss = loss_start(f, "5678-PRS", "2026-10-25");
    let gap = &sunday["perdidas_de_senal"][0];
    let desde = gap["desde"].as_str().unwrap();
    assert!(
        desde.starts_with("02:29") && desde.ends_with("+01:00"),
        "{gap}"
    );
    let shown = iso_ts(&format!("2026-10-25T{desde}"));
    assert!((0..=15).contains(&(loss - shown)), "{shown} vs {loss}");
}

/// A range that crosses the change, fleet-wide: each unit's kilometres are its own two days'.
#[test]
fn ranges_across_the_autumn_change() {
    let f = fixture("cambio_hora");
    let mut c = Client::new(&f.db);
    let report = c.ok(
        "reporte_kilometraje",
        json!({"fecha_inicio": "ayer", "fecha_fin": "hoy"}),
    );
    assert_eq!(
        (report["fecha_inicio"].clone(), report["fecha_fin"].clone()),
        (json!("2026-10-24"), json!("2026-10-25"))
    );
    assert!(report.get("nota_zonas").is_none(), "{report}");
    let rows = report["ranking"].as_array().unwrap();
    assert!(rows.len() >= 5);
    for row in rows {
        let plate = row["placa"].as_str().unwrap();
        if plate == "3456-MNP" {
            continue; // silent since 10:20: what it drove since is unknowable
        }
        let truth = truth_km(f, plate, "2026-10-24") + truth_km(f, plate, "2026-10-25");
        let km = row["kilometros"].as_f64().unwrap();
        assert!(
            (km - truth).abs() <= 0.1 + truth * 0.001,
            "{plate}: {km} vs {truth}"
        );
    }
    // What happened in the small hours of Sunday is Sunday's, whatever shift it belongs to:
    // the second 02:30's silence and the first 02:15's speeding, each with its offset.
    let today = c.ok(
        "alertas",
        json!({"fecha_inicio": "domingo", "fecha_fin": "hoy"}),
    );
    let yesterday = c.ok(
        "alertas",
        json!({"fecha_inicio": "sabado", "fecha_fin": "ayer"}),
    );
    let events = |answer: &Value, kind: &str| -> Vec<Value> {
        answer["detalle"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["tipo"] == kind)
            .flat_map(|d| d["eventos"].as_array().unwrap().clone())
            .collect()
    };
    let loss = loss_start(f, "5678-PRS", "2026-10-25");
    let found = events(&today, "perdida_senal")
        .into_iter()
        .find(|e| e["placa"] == "5678-PRS")
        .unwrap_or_else(|| panic!("{today}"));
    let inicio = found["inicio"].as_str().unwrap();
    assert!(inicio.ends_with("+01:00"), "{inicio}");
    assert!((0..=15).contains(&(loss - iso_ts(inicio))), "{inicio}");
    let speeding = events(&today, "exceso_velocidad")
        .into_iter()
        .find(|e| e["placa"] == "6789-RST")
        .unwrap_or_else(|| panic!("{today}"));
    assert!(
        speeding["inicio"]
            .as_str()
            .unwrap()
            .starts_with("2026-10-25T02:")
            && speeding["inicio"].as_str().unwrap().ends_with("+02:00"),
        "{speeding}"
    );
    for (kind, plate) in [
        ("perdida_senal", "5678-PRS"),
        ("exceso_velocidad", "6789-RST"),
    ] {
        assert!(
            !events(&yesterday, kind).iter().any(|e| e["placa"] == plate),
            "{kind} {plate} counted on Saturday: {yesterday}"
        );
    }
}

/// At 00:30 on Monday in Madrid it is 23:30 on Sunday in the Canaries: "hoy" is each unit's.
#[test]
fn each_unit_reads_hoy_on_its_own_clock() {
    let f = fixture("dos_zonas");
    let mut c = Client::new(&f.db);
    // Madrid's night unit: today is Monday, its first half hour.
    let monday = c.ok(
        "resumen_recorrido",
        json!({"placa": "3333-DFG", "fecha": "hoy"}),
    );
    assert_eq!(
        (monday["fecha"].clone(), monday["zona_horaria"].clone()),
        (json!("2026-03-30"), json!("Europe/Madrid"))
    );
    same_km(
        &monday,
        truth_km(f, "3333-DFG", "2026-03-30"),
        "3333-DFG hoy",
    );
    // The island: today is Sunday, which its units do not work.
    let sunday = c.call(
        "resumen_recorrido",
        json!({"placa": "GC-0001", "fecha": "hoy"}),
    );
    let message = sunday.unwrap_err();
    assert!(message.contains("domingo (2026-03-29)"), "{message}");
    for plate in ["GC-0001", "GC-0002", "GC-0003"] {
        let saturday = c.ok(
            "resumen_recorrido",
            json!({"placa": plate, "fecha": "ayer"}),
        );
        assert_eq!(saturday["fecha"], "2026-03-28", "{plate}");
        assert_eq!(saturday["zona_horaria"], "Atlantic/Canary");
        same_km(&saturday, truth_km(f, plate, "2026-03-28"), plate);
    }
    // The 23-hour Sunday by its name: Madrid's night unit drove Saturday's shift across the jump
    // and started Sunday's.
    let jump = c.ok(
        "resumen_recorrido",
        json!({"placa": "3333-DFG", "fecha": "domingo"}),
    );
    assert_eq!(jump["fecha"], "2026-03-29");
    same_km(
        &jump,
        truth_km(f, "3333-DFG", "2026-03-29"),
        "3333-DFG domingo",
    );
    // Where an island unit is: its zone, its clock (summer time since the jump).
    let position = c.ok("posicion_actual", json!({"placa": "GC-0002"}));
    assert_eq!(position["zona_horaria"], "Atlantic/Canary");
    assert!(
        position["consultado"]
            .as_str()
            .unwrap()
            .starts_with("2026-03-29T23:30:00+01:00"),
        "{position}"
    );
}

/// Fleet-wide questions read their dates on the fleet's clock (Madrid's) and count each unit
/// on its own days, and say so; the island's times are the island's.
#[test]
fn fleet_wide_answers_across_two_zones() {
    let f = fixture("dos_zonas");
    let mut c = Client::new(&f.db);
    let report = c.ok(
        "reporte_kilometraje",
        json!({"fecha_inicio": "sábado", "fecha_fin": "domingo"}),
    );
    assert_eq!(report["zona_horaria"], "Europe/Madrid");
    let note = report["nota_zonas"].as_str().unwrap();
    assert!(
        note.contains("Europe/Madrid")
            && note.contains("Atlantic/Canary (GC-0001, GC-0002, GC-0003)"),
        "{note}"
    );
    for row in report["ranking"].as_array().unwrap() {
        let plate = row["placa"].as_str().unwrap();
        let truth = truth_km(f, plate, "2026-03-28") + truth_km(f, plate, "2026-03-29");
        let km = row["kilometros"].as_f64().unwrap();
        assert!(
            (km - truth).abs() <= 0.1 + truth * 0.001,
            "{plate}: {km} vs {truth}"
        );
    }
    // The island's loss at its own 10:00 on Friday (11:00 in Madrid).
    let alerts = c.ok(
        "alertas",
        json!({"tipo": "perdida_senal", "fecha_inicio": "2026-03-27", "fecha_fin": "2026-03-27"}),
    );
    let loss = loss_start(f, "GC-0001", "2026-03-27");
    let found = alerts["detalle"][0]["eventos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["placa"] == "GC-0001")
        .unwrap_or_else(|| panic!("{alerts}"))
        .clone();
    let inicio = found["inicio"].as_str().unwrap();
    assert!(
        inicio.starts_with("2026-03-27T09:59") && inicio.ends_with("+00:00"),
        "{inicio}"
    );
    assert!((0..=15).contains(&(loss - iso_ts(inicio))));
    assert!(alerts["nota_zonas"].is_string(), "{alerts}");
}

/// The model is told the zones before it asks anything.
#[test]
fn the_instructions_name_the_zones() {
    let f = fixture("dos_zonas");
    let mut server = Server::spawn(flota_bin(), &["servir", "--db", f.db.to_str().unwrap()]);
    let result = server.initialize("2025-11-25");
    let text = result["instructions"].as_str().unwrap();
    assert!(
        text.contains("la flota está en Europe/Madrid")
            && text.contains("Atlantic/Canary (GC-0001, GC-0002, GC-0003)"),
        "{text}"
    );
    let f = fixture("cambio_hora");
    let mut server = Server::spawn(flota_bin(), &["servir", "--db", f.db.to_str().unwrap()]);
    let result = server.initialize("2025-11-25");
    let text = result["instructions"].as_str().unwrap();
    assert!(text.contains("Zona horaria: Europe/Madrid."), "{text}");
}

/// `flota servir --ahora` (or `FLOTA_AHORA`) in the hour the clocks skip is refused, as
/// `flota simular` refuses it; the repeated hour is its first occurrence unless an offset says.
#[test]
fn servir_refuses_a_skipped_ahora() {
    let f = fixture("dos_zonas");
    let db = f.db.to_str().unwrap();
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut command = std::process::Command::new(flota_bin());
        command.args(args).stdin(std::process::Stdio::null());
        for (key, value) in env {
            command.env(key, value);
        }
        command.output().unwrap()
    };
    let expected =
        "2026-03-29 02:30 no existe en Europe/Madrid: ese día los relojes saltan de 02:00 a 03:00";
    for out in [
        run(&["servir", "--db", db, "--ahora", "2026-03-29T02:30"], &[]),
        run(
            &["servir", "--db", db],
            &[("FLOTA_AHORA", "2026-03-29T02:30")],
        ),
    ] {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
    }
    let simular = run(
        &[
            "simular",
            crate::simulation::scenario_path("dos_zonas")
                .to_str()
                .unwrap(),
            "--ahora",
            "2026-03-29T02:30",
            "--salida",
            "/nonexistent/x.db",
        ],
        &[],
    );
    assert!(String::from_utf8_lossy(&simular.stderr).contains(expected));
    // The second 02:30 of an autumn night, named by its offset, is a "now" like any other.
    let f = fixture("cambio_hora");
    let mut server = Server::spawn(
        flota_bin(),
        &[
            "servir",
            "--db",
            f.db.to_str().unwrap(),
            "--ahora",
            "2026-10-25T02:30+01:00",
        ],
    );
    let result = server.initialize("2025-11-25");
    let text = result["instructions"].as_str().unwrap();
    assert!(text.contains("2026-10-25 02:30"), "{text}");
}
