//! The map views' data (`flota::ui::datos`) for every unit-day of `minimo`, against the real
//! `mapa_recorrido` answers and the stored positions; the contract's schema validates it.

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::ground_truth::{Client, fixture};
use flota::fleet::Fleet;
use flota::fleet::places::Geocoder;
use flota::mcp::schema::{output_schema_for, validate};
use flota::ui::datos;

/// `(ts_utc, lat, lon, speed_kmh, ignition)` of a unit's stored reports in `[from, to)`.
fn stored(
    db: &std::path::Path,
    plate: &str,
    from: i64,
    to: i64,
) -> Vec<(i64, f64, f64, f64, bool)> {
    let conn = Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT ts_utc, lat, lon, velocidad_kmh, ignicion FROM vista_posiciones
             WHERE placa = ?1 AND secuencia = 0 AND ts_utc >= ?2 AND ts_utc < ?3 ORDER BY ts_utc",
        )
        .unwrap();
    stmt.query_map(rusqlite::params![plate, from, to], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[test]
fn view_data_matches_the_map_tool_and_the_positions() {
    let fx = fixture("minimo");
    let fleet = Fleet::new(
        &fx.db,
        None,
        Geocoder::new(None),
        flota::plumbing::clock::Clock::fixed(0),
    );
    let snapshot = fleet.snapshot().unwrap();
    let mut client = Client::new(&fx.db);
    let schema = output_schema_for::<datos::VistaRecorrido>();
    let mut kinds_seen = std::collections::BTreeSet::new();
    for vehicle in snapshot.vehicles.iter().filter(|v| v.active) {
        for fecha in ["ayer", "hoy"] {
            let what = format!("{} {fecha}", vehicle.plate);
            let tool = client.ok(
                "mapa_recorrido",
                json!({"placa": vehicle.plate, "fecha": fecha}),
            );
            let track = fleet.day_track(&snapshot, &vehicle.plate, fecha).unwrap();
            let vista = datos::vista_recorrido(&track, &snapshot, None);
            let value = serde_json::to_value(&vista).unwrap();
            validate(&schema, &value).unwrap_or_else(|v| panic!("{what}: {v}"));
            assert!(
                value.get("teselas").is_none(),
                "{what}: tiles only when configured"
            );

            // The events the tool counts, one for one.
            let count = |kind: &str| vista.eventos.iter().filter(|e| e.tipo == kind).count();
            for kind in [
                "parada",
                "exceso_velocidad",
                "perdida_senal",
                "visita_geocerca",
            ] {
                if count(kind) > 0 {
                    kinds_seen.insert(kind);
                }
            }
            assert_eq!(json!(count("parada")), tool["paradas"], "{what}");
            assert_eq!(
                json!(count("exceso_velocidad")),
                tool["excesos_de_velocidad"],
                "{what}"
            );
            assert_eq!(
                json!(count("perdida_senal")),
                tool["perdidas_de_senal"],
                "{what}"
            );
            let long = vista.eventos.iter().filter(|e| e.prolongada).count();
            assert_eq!(json!(long), tool["paradas_prolongadas"], "{what}");
            let mut visited: Vec<Value> = Vec::new();
            for e in vista.eventos.iter().filter(|e| e.tipo == "visita_geocerca") {
                let name = json!(e.geocerca.as_deref().unwrap());
                if !visited.contains(&name) {
                    visited.push(name);
                }
            }
            assert_eq!(Value::Array(visited), tool["geocercas_visitadas"], "{what}");
            for e in &vista.eventos {
                assert!(
                    !e.evidencia.is_empty(),
                    "{what}: {} without evidence",
                    e.titulo
                );
                assert!(
                    e.lat != 0.0 && e.lon != 0.0,
                    "{what}: {} unplaced",
                    e.titulo
                );
            }

            // The reports are the stored positions of the day, up to the fleet's now.
            assert_eq!(
                json!(vista.reportes.len()),
                tool["reportes_del_dia"],
                "{what}"
            );
            let rows = stored(&fx.db, &vehicle.plate, track.from_utc, track.to_utc);
            assert_eq!(rows.len(), vista.reportes.len(), "{what}");
            for (row, r) in rows.iter().zip(&vista.reportes) {
                assert_eq!(vista.inicio_utc + r[0] as i64, row.0, "{what}");
                // Five decimals: within half a unit of the last one.
                assert!(
                    (r[1] - row.1).abs() <= 5.0001e-6 && (r[2] - row.2).abs() <= 5.0001e-6,
                    "{what}"
                );
                assert!((r[3] - row.3).abs() <= 0.05, "{what}");
                assert_eq!(r[4] == 1.0, row.4, "{what}");
                // Banded under the limit that applied there: a fence's own, or the unit's.
                let here = flota::geometry::earth::LatLon::new(row.1, row.2);
                let limit = flota::geometry::geofence::applicable_limit_kmh(
                    vista.limite_kmh,
                    snapshot
                        .fences
                        .iter()
                        .filter(|f| f.fence.contains(here))
                        .filter_map(|f| f.fence.speed_limit_kmh),
                );
                assert_eq!(r[5] as usize, flota::map::band(row.3, limit), "{what}");
            }
            // A break in the line only where a signal loss began at the previous report.
            for &i in &vista.cortes {
                let before = vista.inicio_utc + vista.reportes[i - 1][0] as i64;
                assert!(
                    vista
                        .eventos
                        .iter()
                        .any(|e| e.tipo == "perdida_senal" && e.inicio_utc == before),
                    "{what}: break at {i}"
                );
            }
        }
    }
    // The scenario injects every kind: the checks above were not vacuous.
    assert_eq!(kinds_seen.len(), 4, "{kinds_seen:?}");
}

#[test]
fn fleet_view_data_is_the_fleets_geometry() {
    let fx = fixture("minimo");
    let fleet = Fleet::new(
        &fx.db,
        None,
        Geocoder::new(None),
        flota::plumbing::clock::Clock::fixed(0),
    );
    let snapshot = fleet.snapshot().unwrap();
    let vista = datos::VistaFlota::new(&snapshot, None);
    let value = serde_json::to_value(&vista).unwrap();
    validate(&output_schema_for::<datos::VistaFlota>(), &value).unwrap();
    let names: Vec<&str> = vista
        .mapa_base
        .geocercas
        .iter()
        .map(|g| g.nombre.as_str())
        .collect();
    assert_eq!(
        names,
        ["CEDIS Zona 12", "Bodega Villa Nueva", "Centro Histórico"]
    );
    for g in &vista.mapa_base.geocercas {
        assert!(g.contorno.len() >= 4, "{}", g.nombre);
    }
    assert_eq!(vista.mapa_base.rutas.len(), snapshot.routes.len());
    for (thin, full) in vista.mapa_base.rutas.iter().zip(&snapshot.routes) {
        // Thinned, yet every kept vertex is on the route and both ends are kept.
        assert!(thin.puntos.len() >= 2 && thin.puntos.len() <= full.points().len());
        let end = full.points().last().unwrap();
        assert!((thin.puntos.last().unwrap()[0] - end.lat).abs() < 1e-5);
        assert!(thin.puntos.iter().all(|p| {
            full.points()
                .iter()
                .any(|q| (q.lat - p[0]).abs() < 1e-5 && (q.lon - p[1]).abs() < 1e-5)
        }));
    }
    // Tiles, when configured, travel with the template and attribution.
    let config = flota::map::TileConfig {
        template: Some("https://tile.openstreetmap.org/{z}/{x}/{y}.png".into()),
        attribution: "© colaboradores de OpenStreetMap".into(),
        cache_dir: None,
        deadline: std::time::Duration::from_secs(1),
    };
    let with_tiles = datos::VistaFlota::new(&snapshot, datos::Teselas::from_config(&config));
    assert_eq!(
        serde_json::to_value(&with_tiles).unwrap()["teselas"],
        json!({"plantilla": "https://tile.openstreetmap.org/{z}/{x}/{y}.png",
               "atribucion": "© colaboradores de OpenStreetMap"})
    );
}
