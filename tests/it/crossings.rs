//! Geofence crossings counted per UTC day on SQLite (`cruces_por_dia`): whatever writes
//! `eventos` — `flota simular`, rows written by hand the way a live writer or another
//! program would, `flota importar`'s incremental analysis, `flota analizar` — the counts per
//! vehicle `alertas` reads agree with a direct count of the events, over ranges aligned to
//! days and not; and a file whose counters lost a trigger is counted directly.

use std::path::Path;
use std::process::Command;

use flota::store::{Location, Store};
use rusqlite::Connection;

use crate::pg::assert_crossings_agree;
use crate::simulation::{ahora_of, scenario_path};
use crate::support::flota_bin;

fn flota(args: &[&str]) {
    let out = Command::new(flota_bin()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Entries or exits in `[from, to)` per vehicle, counted from the events themselves.
fn counted(db: &Connection, exits: bool, from: i64, to: i64) -> Vec<(i64, usize)> {
    let (ts, entries_only) = if exits {
        ("fin_utc", "")
    } else {
        ("inicio_utc", " AND desde_inicio_datos = 0")
    };
    db.prepare(&format!(
        "SELECT vehiculo_id, count(*) FROM eventos WHERE tipo = 'visita_geocerca'{entries_only}
         AND {ts} >= ?1 AND {ts} < ?2 GROUP BY 1 ORDER BY 1"
    ))
    .unwrap()
    .query_map([from, to], |r| {
        Ok((r.get(0)?, r.get::<_, i64>(1)? as usize))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

/// The day counters' total of `column`, and the events' total it stands for.
fn totals(db: &Connection, exits: bool) -> (i64, i64) {
    let column = if exits { "salidas" } else { "entradas" };
    let summed = db
        .query_row(
            &format!("SELECT coalesce(sum({column}), 0) FROM cruces_por_dia"),
            [],
            |r| r.get(0),
        )
        .unwrap();
    let all = counted(db, exits, i64::MIN / 2, i64::MAX / 2);
    (summed, all.iter().map(|(_, n)| *n as i64).sum())
}

/// Every range of [`crate::pg::crossing_ranges`] over the file's visits, both kinds, through
/// the store the tools read (opened afresh: the file changed).
fn check(path: &Path, when: &str) {
    let db = Connection::open(path).unwrap();
    let (lo, hi): (i64, i64) = db
        .query_row(
            "SELECT min(inicio_utc), max(fin_utc) FROM eventos WHERE tipo = 'visita_geocerca'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let store = Store::open(Location::Sqlite(path.to_owned())).unwrap();
    assert_crossings_agree(&store, lo, hi, when, |exits, from, to| {
        counted(&db, exits, from, to)
    });
}

fn kept(path: &Path) -> [(i64, i64); 2] {
    let db = Connection::open(path).unwrap();
    [totals(&db, false), totals(&db, true)]
}

/// A GPX track of `plate`'s tracker a day after the data: from 2 km away into the fence at
/// (`lat`, `lon`), an hour parked there, and out again; one fix a minute.
fn visit_track(lat: f64, lon: f64, day: &str) -> String {
    let mut text = String::from(
        r#"<?xml version="1.0"?><gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg>"#,
    );
    for minute in 0..150 {
        // Metres north of the centre: 2,000 → 0 over 40 min, parked, then back out.
        let north = match minute {
            0..40 => 2_000.0 - 50.0 * minute as f64,
            40..100 => 0.0,
            _ => 50.0 * (minute - 100) as f64,
        };
        text.push_str(&format!(
            "\n<trkpt lat=\"{:.6}\" lon=\"{lon:.6}\"><time>{day}T{:02}:{:02}:00Z</time></trkpt>",
            lat + north / 111_320.0,
            10 + minute / 60,
            minute % 60
        ));
    }
    text.push_str("\n</trkseg></trk></gpx>\n");
    text
}

#[test]
fn crossings_per_day_count_as_the_events_do_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flota.db");
    // Own seed, a fleet in two zones: day ends that are not UTC midnights.
    flota(&[
        "simular",
        scenario_path("dos_zonas").to_str().unwrap(),
        "--ahora",
        ahora_of("dos_zonas"),
        "--semilla",
        "4242",
        "--salida",
        path.to_str().unwrap(),
        "--verdad",
        dir.path().join("verdad.jsonl").to_str().unwrap(),
    ]);
    // Filled by the load: the whole days come from the counters.
    for (summed, all) in kept(&path) {
        assert_eq!(summed, all);
    }
    check(&path, "after simular");
    // Kept by the triggers as rows come, go and change (written by hand here).
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "DELETE FROM eventos WHERE tipo = 'visita_geocerca' AND id % 7 = 0;
             UPDATE eventos SET fin_utc = fin_utc + 50000 WHERE tipo = 'visita_geocerca' AND id % 11 = 0;
             UPDATE eventos SET fin_utc = NULL WHERE tipo = 'visita_geocerca' AND id % 13 = 0;
             UPDATE eventos SET desde_inicio_datos = 1 - desde_inicio_datos WHERE tipo = 'visita_geocerca' AND id % 17 = 0;
             UPDATE eventos SET tipo = 'parada' WHERE tipo = 'visita_geocerca' AND id % 19 = 0;
             UPDATE eventos SET tipo = 'visita_geocerca' WHERE tipo = 'exceso_velocidad' AND id % 3 = 0;
             UPDATE eventos SET vehiculo_id = vehiculo_id % 3 + 1, inicio_utc = inicio_utc - 90000
                 WHERE tipo = 'visita_geocerca' AND id % 23 = 0;
             INSERT INTO eventos (vehiculo_id, tipo, inicio_utc, fin_utc, lat, lon, desde_inicio_datos)
                 SELECT vehiculo_id, tipo, inicio_utc - 40000, fin_utc + 3600, lat, lon, desde_inicio_datos
                 FROM eventos WHERE tipo = 'visita_geocerca' AND id % 5 = 0;",
        )
        .unwrap();
    for (summed, all) in kept(&path) {
        assert_eq!(summed, all);
    }
    check(&path, "after rows written by hand");
    // `flota importar`: a unit's positions and its analysis written live, as the difference
    // with what is stored (a visit to one of the fences a day after the data).
    let (plate, lat, lon, last): (String, f64, f64, i64) = Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT v.placa, g.centro_lat, g.centro_lon, (SELECT max(ts_utc) FROM posiciones)
             FROM vehiculos v, geocercas g ORDER BY v.id, g.id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    let before = kept(&path);
    let day = chrono::DateTime::from_timestamp(last + 86_400, 0)
        .unwrap()
        .format("%Y-%m-%d")
        .to_string();
    let gpx = dir.path().join("visita.gpx");
    std::fs::write(&gpx, visit_track(lat, lon, &day)).unwrap();
    flota(&[
        "importar",
        "--db",
        path.to_str().unwrap(),
        gpx.to_str().unwrap(),
        "--placa",
        &plate,
    ]);
    let after = kept(&path);
    for (summed, all) in after {
        assert_eq!(summed, all);
    }
    assert!(after[0].1 > before[0].1, "the import added no entry");
    check(&path, "after importar");
    // Counted afresh by a re-analysis (its bulk write goes with the triggers off).
    flota(&["analizar", path.to_str().unwrap()]);
    for (summed, all) in kept(&path) {
        assert_eq!(summed, all);
    }
    check(&path, "after analizar");
    // A missing trigger leaves the counts behind: the reader must not trust them then.
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "DROP TRIGGER cruces_borrado;
             DELETE FROM eventos WHERE tipo = 'visita_geocerca' AND id % 4 = 0;",
        )
        .unwrap();
    let [(summed, all), _] = kept(&path);
    assert_ne!(summed, all);
    check(&path, "with a trigger missing");
}
