//! `flota importar` from outside: the bad-file matrix (snapshot), nothing half-imported,
//! re-imports adding nothing, and the analysis kept current.

use std::path::Path;
use std::process::Command;

use rusqlite::Connection;

use crate::receive::empty_fleet;
use crate::support::flota_bin;

fn rows(db: &Path) -> i64 {
    Connection::open(db)
        .unwrap()
        .query_row("SELECT count(*) FROM posiciones", [], |r| r.get(0))
        .unwrap()
}

/// Runs `flota importar` with `args` in `dir`: exit code and stderr without log lines, the
/// folder shown as `<dir>`.
fn import(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(flota_bin())
        .current_dir(dir)
        .arg("importar")
        .args(["--db", "flota.db"])
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !(l.len() > 13 && l.as_bytes()[2] == b':' && l.contains("Z INFO")))
        .collect::<Vec<_>>()
        .join("\n")
        .replace(&dir.display().to_string(), "<dir>");
    (out.status.code().unwrap_or(-1), stderr)
}

fn gpx_points(times: &[&str]) -> String {
    let mut text = String::from(
        r#"<?xml version="1.0"?><gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg>"#,
    );
    for (i, t) in times.iter().enumerate() {
        let time = if t.is_empty() {
            String::new()
        } else {
            format!("<time>{t}</time>")
        };
        text.push_str(&format!(
            "\n<trkpt lat=\"{}\" lon=\"-90.5\">{time}</trkpt>",
            14.6 + i as f64 * 0.001
        ));
    }
    text.push_str("\n</trkseg></trk></gpx>\n");
    text
}

/// A case: a name, files to write (name and text), the arguments.
type Case = (&'static str, Vec<(&'static str, String)>, Vec<&'static str>);

fn cases() -> Vec<Case> {
    let good_gpx = gpx_points(&[
        "2026-08-19T21:30:00Z",
        "2026-08-19T21:30:15Z",
        "",
        "2026-08-19T21:30:30Z",
        "2026-08-19T21:30:30Z",
    ]);
    let csv_head = "placa,fecha_hora,lat,lon,velocidad_kmh\n";
    let nmea = {
        let sign = |d: &str| format!("${d}*{:02X}", d.bytes().fold(0u8, |a, b| a ^ b));
        [
            sign("GPRMC,213100,A,1436.000,N,09030.000,W,10.0,90.0,190826,,,A"),
            sign("GPGGA,213115,1436.060,N,09030.000,W,1,08,0.9,1500,M,,M,,"),
            "$GPRMC,213130,A,1436.000,N,09030.000,W,0,0,190826,,,A*00".to_owned(),
        ]
        .join("\n")
    };
    vec![
        ("gpx_valido", vec![("a.gpx", good_gpx.clone())], vec!["a.gpx", "--placa", "P-123BCD"]),
        ("gpx_otra_vez", vec![("a.gpx", good_gpx.clone())], vec!["a.gpx", "--placa", "P-123BCD"]),
        ("gpx_sin_placa", vec![("b.gpx", good_gpx)], vec!["b.gpx"]),
        ("gpx_xml_roto", vec![("c.gpx", "<gpx version=\"1.1\">\n<trk><trkseg>\n<trkpt lat=\"1\" lon=\"2\"><time>x".to_owned())], vec!["c.gpx", "--placa", "P-123BCD"]),
        ("gpx_sin_lat", vec![("d.gpx", gpx_points(&["2026-08-19T21:30:00Z"]).replace("lat=\"14.6\"", ""))], vec!["d.gpx", "--placa", "P-123BCD"]),
        ("unidad_nueva", vec![("e.gpx", gpx_points(&["2026-08-19T21:40:00Z"]))], vec!["e.gpx", "--placa", "T-0001"]),
        ("csv_valido", vec![("a.csv", format!("{csv_head}P-456DEF,2026-08-19 15:30:00,14.6,-90.5,30\nP-789GHJ,2026-08-19 15:30:00,14.6,-90.5,0\n"))], vec!["a.csv"]),
        ("csv_sin_columnas", vec![("b.csv", "placa,cuando\nP-456DEF,ayer\n".to_owned())], vec!["b.csv"]),
        ("csv_numero_malo_en_la_linea_3", vec![("c.csv", format!("{csv_head}P-456DEF,2026-08-19 16:00:00,14.6,-90.5,30\nP-456DEF,2026-08-19 16:00:15,norte,-90.5,30\n"))], vec!["c.csv"]),
        ("csv_fuera_de_rango", vec![("d.csv", format!("{csv_head}P-456DEF,2026-08-19 16:10:00,14.6,-190.5,30\n"))], vec!["d.csv"]),
        ("csv_hora_mala", vec![("e.csv", format!("{csv_head}P-456DEF,el martes,14.6,-90.5,30\n"))], vec!["e.csv"]),
        ("geojson_valido", vec![("a.geojson", r#"{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Point","coordinates":[-90.5,14.6]},"properties":{"placa":"P-456DEF","hora":"2026-08-19T22:00:00Z"}},{"type":"Feature","geometry":{"type":"Point","coordinates":[-90.5,14.6]},"properties":{"tipo":"parada"}}]}"#.to_owned())], vec!["a.geojson"]),
        ("geojson_roto", vec![("b.geojson", "{\"type\":\n\"FeatureCollection\", \"features\": [".to_owned())], vec!["b.geojson"]),
        ("nmea_valido", vec![("a.nmea", nmea)], vec!["a.nmea", "--placa", "P-789GHJ"]),
        ("nmea_sin_sentencias", vec![("b.nmea", "hola\n".to_owned())], vec!["b.nmea", "--placa", "P-789GHJ"]),
        ("extension_desconocida", vec![("a.xyz", "x".to_owned())], vec!["a.xyz", "--placa", "P-789GHJ"]),
        ("archivo_inexistente", vec![], vec!["no-existe.gpx", "--placa", "P-789GHJ"]),
        // A tracker's file with points it should not have written: at 0, 0 (no fix), in the
        // future, before 2000. Those are left out and counted; the good ones come in.
        ("csv_puntos_imposibles_omitidos", vec![("i.csv", format!("{csv_head}P-456DEF,2026-08-19 18:00:00,14.6,-90.5,30\nP-456DEF,2026-08-19 18:00:15,0,0,0\nP-456DEF,2099-08-19 18:00:30,14.6,-90.5,30\nP-456DEF,1970-01-01 00:00:00,14.6,-90.5,30\nP-456DEF,2026-08-19 18:00:45,14.601,-90.5,30\n"))], vec!["i.csv"]),
        ("uno_malo_entre_dos_buenos", vec![("f.csv", format!("{csv_head}P-456DEF,2026-08-19 17:00:00,14.6,-90.5,30\n")), ("g.csv", "x\n".to_owned()), ("h.csv", format!("{csv_head}P-456DEF,2026-08-19 17:00:15,14.6,-90.5,30\n"))], vec!["f.csv", "g.csv", "h.csv"]),
    ]
}

#[test]
fn bad_file_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let db = empty_fleet(dir.path());
    std::fs::rename(&db, dir.path().join("flota.db")).unwrap();
    let db = dir.path().join("flota.db");
    let mut shown = String::new();
    for (name, files, args) in cases() {
        for (file, text) in &files {
            std::fs::write(dir.path().join(file), text).unwrap();
        }
        let before = rows(&db);
        let (code, stderr) = import(dir.path(), &args);
        let added = rows(&db) - before;
        shown.push_str(&format!(
            "== {name}: salida {code}, {added} filas nuevas\n{stderr}\n"
        ));
    }
    insta::assert_snapshot!(shown);
    // Whatever happened, the detections cover every position.
    let store = flota::store::Store::open(&db).unwrap();
    let meta = store.meta().unwrap();
    assert_eq!(
        store.analysis_state(&meta).unwrap(),
        flota::store::AnalysisState::Current
    );
}

/// A database missing only some of flota's tables (an old or foreign one): `importar` and
/// `recibir` name what is missing, in Spanish, and leave the file byte for byte as it was.
#[test]
fn a_database_missing_some_tables_is_named_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("flota.db");
    std::fs::copy(empty_fleet(dir.path()), &db).unwrap();
    Connection::open(&db)
        .unwrap()
        .execute_batch("PRAGMA foreign_keys = OFF; DROP TABLE paradas; DROP TABLE rutas;")
        .unwrap();
    let before = std::fs::read(&db).unwrap();
    std::fs::write(
        dir.path().join("t.gpx"),
        gpx_points(&["2026-01-01T10:00:00Z", "2026-01-01T10:01:00Z"]),
    )
    .unwrap();
    let (code, stderr) = import(dir.path(), &["t.gpx", "--placa", "P-123BCD"]);
    assert_ne!(code, 0, "{stderr}");
    assert!(
        stderr.contains("le faltan las tablas rutas, paradas"),
        "{stderr}"
    );
    let out = Command::new(flota_bin())
        .args(["recibir", "--escuchar", "127.0.0.1:0", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("le faltan las tablas rutas, paradas"),
        "{stderr}"
    );
    assert!(std::fs::read(&db).unwrap() == before, "the file changed");
    assert!(!dir.path().join("flota.db-wal").exists());
}

/// A re-import in a later second republishes the analysis at a later "now": the open signal
/// loss (from the data's last fix to now) is replaced, not stored twice. (The stored rows'
/// ids were once read from the wrong column, so a restarted writer never deleted a row.)
#[test]
fn a_reimport_replaces_the_open_events_instead_of_adding_them() {
    let dir = tempfile::tempdir().unwrap();
    let times: Vec<String> = (0..40)
        .map(|i| format!("2026-01-01T10:{:02}:{:02}Z", i * 15 / 60, i * 15 % 60))
        .collect();
    let times: Vec<&str> = times.iter().map(String::as_str).collect();
    std::fs::write(dir.path().join("t.gpx"), gpx_points(&times)).unwrap();
    let args = [
        "t.gpx",
        "--placa",
        "P-777XYZ",
        "--zona",
        "America/Guatemala",
    ];
    assert_eq!(import(dir.path(), &args).0, 0);
    // The loss's measure counts seconds up to now: a later second changes the row.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(import(dir.path(), &args).0, 0);
    let db = Connection::open(dir.path().join("flota.db")).unwrap();
    let repeated: Vec<(String, i64, i64)> = db
        .prepare(
            "SELECT tipo, inicio_utc, count(*) FROM eventos
             GROUP BY vehiculo_id, tipo, inicio_utc HAVING count(*) > 1",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let losses: i64 = db
        .query_row(
            "SELECT count(*) FROM eventos WHERE tipo = 'perdida_senal'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(losses, 1, "one open signal loss");
    assert!(repeated.is_empty(), "events stored twice: {repeated:?}");
}
