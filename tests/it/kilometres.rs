//! Kilometres from GPS alone, odometer ignored, against the truth, per unit-day.
//!
//! The km tests in `ground_truth` go through the reported figure, which is the odometer's (the
//! simulator sets it to the true path). Here the engine's GPS-only distance (`km_gps`) must be
//! within 1 % of the truth on every unit-day at σ 5 m: on the reference week under several
//! seeds, and on a fleet of our own in another city and time zone (Madrid), with its own
//! street geometry (right-angle blocks, a bulging avenue, a ring road), which also turns the
//! odometer off (`usar_odometro = false`) so the reported figure is the GPS one.

use std::path::{Path, PathBuf};

use flota::evaluation::truth;
use flota::geometry::earth::{LatLon, offset_m};
use flota::geometry::route::{RouteFile, StopFile};
use flota::sim::TruthEvent;
use rusqlite::Connection;

use crate::simulation::{scenario_path, simulate_file};

/// Days shorter than this are not judged: 1 % of a few hundred metres is noise.
const MIN_DAY_KM: f64 = 10.0;
const MAX_ERROR_PCT: f64 = 1.0;
/// On the Madrid grid (a right-angle turn or a stop every 150–600 m at 25 km/h) each halt the
/// 15-second samples straddle leaves the speed integral ±10–50 m off: over seeds 1–6 and 31 the
/// worst unit-day is 0.57–1.13 % with shifts that overran (before issue 13) and 0.67–1.16 % with
/// the shorter days of shifts that end when the next loop no longer fits. 1 % per day was
/// inside that scatter only by the draw.
const MAX_ERROR_GRID_PCT: f64 = 1.5;

/// One unit-day: truth, GPS-only and reported kilometres, and whether the tracker was silent
/// for a while that day (no position can tell what was driven then).
#[derive(Debug)]
struct Day {
    plate: String,
    date: String,
    truth_km: f64,
    gps_km: f64,
    reported_km: f64,
    silent: bool,
}

impl Day {
    fn gps_error_pct(&self) -> f64 {
        (self.gps_km - self.truth_km) / self.truth_km * 100.0
    }
}

fn days(db: &Path, truth_path: &Path) -> Vec<Day> {
    let log = truth::read(truth_path).unwrap();
    let zone: chrono_tz::Tz = log.header.zona_horaria.parse().unwrap();
    let silences: Vec<(String, String)> = log
        .events
        .iter()
        .filter_map(|e| match e {
            TruthEvent::PerdidaSenal {
                placa, inicio_utc, ..
            } => Some((
                placa.clone(),
                flota::fleet::dates::local_date(zone, *inicio_utc).to_string(),
            )),
            _ => None,
        })
        .collect();
    let conn = Connection::open(db).unwrap();
    let stored = |plate: &str, date: &str| -> (f64, f64) {
        conn.query_row(
            "SELECT km_gps, km FROM resumen_diario JOIN vehiculos v ON v.id = vehiculo_id
             WHERE v.placa = ?1 AND fecha = ?2",
            [plate, date],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap_or((0.0, 0.0))
    };
    log.events
        .iter()
        .filter_map(|e| match e {
            TruthEvent::KmDia { placa, fecha, km } if *km >= MIN_DAY_KM => {
                let (gps_km, reported_km) = stored(placa, fecha);
                Some(Day {
                    plate: placa.clone(),
                    date: fecha.clone(),
                    truth_km: *km,
                    gps_km,
                    reported_km,
                    silent: silences.contains(&(placa.clone(), fecha.clone())),
                })
            }
            _ => None,
        })
        .collect()
}

/// Every judged day within `max_pct`; returns how many were judged. Days with a signal loss
/// are left out (and counted): across a silence the engine can only bridge the gap.
fn check(name: &str, days: &[Day], max_pct: f64) -> usize {
    let judged: Vec<&Day> = days.iter().filter(|d| !d.silent).collect();
    let over: Vec<String> = judged
        .iter()
        .filter(|d| d.gps_error_pct().abs() > max_pct)
        .map(|d| {
            format!(
                "{} {}: {:.2} km GPS vs {:.2} km ({:+.3} %)",
                d.plate,
                d.date,
                d.gps_km,
                d.truth_km,
                d.gps_error_pct()
            )
        })
        .collect();
    assert!(over.is_empty(), "{name}: {over:#?}");
    assert!(
        judged.len() * 5 >= days.len() * 4,
        "{name}: only {} of {} days judged",
        judged.len(),
        days.len()
    );
    judged.len()
}

#[test]
fn gps_km_of_the_reference_week_under_other_seeds() {
    for seed in ["1", "2", "3", "4"] {
        let dir = tempfile::tempdir().unwrap();
        let (ok, stderr, db, truth) =
            simulate_file(&scenario_path("semana"), dir.path(), &["--semilla", seed]);
        assert!(ok, "{stderr}");
        let judged = check(
            &format!("semana, semilla {seed}"),
            &days(&db, &truth),
            MAX_ERROR_PCT,
        );
        assert!(judged >= 60, "{judged}");
    }
}

#[test]
fn gps_km_of_a_fleet_in_madrid() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = madrid(dir.path());
    let (ok, stderr, db, truth) = simulate_file(&scenario, dir.path(), &[]);
    assert!(ok, "{stderr}");
    let days = days(&db, &truth);
    // With the odometer off, what is reported is the GPS distance.
    for day in &days {
        assert_eq!(day.reported_km, day.gps_km, "{day:?}");
    }
    assert!(check("madrid", &days, MAX_ERROR_GRID_PCT) >= 15);
}

/// Local metres east/north of Madrid's Puerta del Sol.
fn at(east_m: f64, north_m: f64) -> LatLon {
    offset_m(LatLon::new(40.4168, -3.7038), east_m, north_m)
}

/// Corners of a polyline, with every edge split into vertices about 50 m apart.
fn dense(corners: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = vec![corners[0]];
    for w in corners.windows(2) {
        let (a, b) = (w[0], w[1]);
        let length = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
        let n = (length / 50.0).ceil().max(1.0) as usize;
        for k in 1..=n {
            let f = k as f64 / n as f64;
            out.push((a.0 + (b.0 - a.0) * f, a.1 + (b.1 - a.1) * f));
        }
    }
    out
}

/// An arc of `radius_m` around `centre`, from `from_deg` to `to_deg` (maths angles), 5° steps.
fn arc(centre: (f64, f64), radius_m: f64, from_deg: f64, to_deg: f64) -> Vec<(f64, f64)> {
    let steps = ((to_deg - from_deg).abs() / 5.0).ceil() as usize;
    (0..=steps)
        .map(|k| {
            let angle = (from_deg + (to_deg - from_deg) * k as f64 / steps as f64).to_radians();
            (
                centre.0 + radius_m * angle.cos(),
                centre.1 + radius_m * angle.sin(),
            )
        })
        .collect()
}

fn write_route(dir: &Path, name: &str, line: &[(f64, f64)], stops: &[(&str, (f64, f64))]) {
    let points: Vec<LatLon> = line.iter().map(|&(e, n)| at(e, n)).collect();
    let length_m: f64 = points
        .windows(2)
        .map(|w| flota::geometry::earth::distance_m(w[0], w[1]))
        .sum();
    let file = RouteFile {
        nombre: name.into(),
        fuente: "manual".into(),
        paradas: stops
            .iter()
            .map(|(stop, (e, n))| {
                let p = at(*e, *n);
                StopFile {
                    nombre: (*stop).into(),
                    lat: p.lat,
                    lon: p.lon,
                }
            })
            .collect(),
        distancia_m: length_m.round() as u64,
        // 25 km/h on average, stops aside.
        duracion_s: (length_m / (25.0 / 3.6)).round() as u64,
        polilinea: RouteFile::encode(&points),
    };
    std::fs::write(dir.join(format!("{name}.json")), file.to_json()).unwrap();
}

/// Two routes and a scenario of six units for three days, written into `dir`.
fn madrid(dir: &Path) -> PathBuf {
    let routes = dir.join("rutas");
    std::fs::create_dir_all(&routes).unwrap();
    // City blocks with right-angle turns, and an avenue that bulges east in a half circle.
    let mut blocks = dense(&[
        (0.0, 0.0),
        (600.0, 0.0),
        (600.0, 200.0),
        (450.0, 200.0),
        (450.0, 550.0),
        (1150.0, 550.0),
    ]);
    blocks.extend(arc((1150.0, 725.0), 175.0, -90.0, 90.0).into_iter().skip(1));
    blocks.extend(
        dense(&[
            (1150.0, 900.0),
            (800.0, 900.0),
            (800.0, 1300.0),
            (200.0, 1300.0),
            (200.0, 900.0),
            (-300.0, 900.0),
            (-300.0, 300.0),
            (0.0, 300.0),
            (0.0, 0.0),
        ])
        .into_iter()
        .skip(1),
    );
    let depot = ("deposito", (0.0, 0.0));
    write_route(
        &routes,
        "m01_cuadricula",
        &blocks,
        &[
            depot,
            ("norte", (500.0, 1300.0)),
            ("oeste", (-300.0, 600.0)),
            depot,
        ],
    );
    // Down an avenue, once round a ring road of 800 m radius, and back.
    let mut ring = dense(&[(0.0, 0.0), (0.0, -400.0)]);
    ring.extend(arc((0.0, -1200.0), 800.0, 90.0, -270.0).into_iter().skip(1));
    ring.extend(dense(&[(0.0, -400.0), (0.0, 0.0)]).into_iter().skip(1));
    write_route(
        &routes,
        "m02_anillo",
        &ring,
        &[depot, ("anillo_sur", (0.0, -2000.0)), depot],
    );
    let scenario = dir.join("madrid.toml");
    std::fs::write(
        &scenario,
        r#"[escenario]
nombre = "madrid"
descripcion = "Seis unidades en Madrid: cuadras, una avenida curva y una ronda"
zona_horaria = "Europe/Madrid"
dias = 3
intervalo_reporte_s = 15
semilla = 31
rutas = "rutas"

[turno]
inicio = ["07:00", "08:00"]
duracion_h = [6.0, 7.0]

[ruido]
sigma_m = 5.0

[deteccion]
usar_odometro = false

[[geocercas]]
nombre = "Depósito Sol"
tipo = "bodega"
circulo = { centro = [40.4168, -3.7038], radio_m = 150 }

[[flotillas]]
prefijo = "M"
cantidad = 6
tipo = "panel"
rutas = ["m01_cuadricula", "m02_anillo"]
"#,
    )
    .unwrap();
    scenario
}

/// The Madrid fleet (`madrid`) at issue 14's σ 15 m with 10 m of drift (τ 120 s), every panel
/// van on the tracker profile `name` whose keys are `keys`.
fn madrid_with_tracker(dir: &Path, name: &str, keys: &str) -> PathBuf {
    let scenario = madrid(dir);
    let text = std::fs::read_to_string(&scenario).unwrap();
    let text = text
        .replace(
            "[ruido]\nsigma_m = 5.0\n",
            &format!(
                "[ruido]\nsigma_m = 15.0\nderiva_sigma_m = 10.0\nderiva_tau_s = 120.0\n\n\
                 [rastreadores.{name}]\n{keys}"
            ),
        )
        .replace(
            "tipo = \"panel\"\n",
            &format!("tipo = \"panel\"\nrastreador = \"{name}\"\n"),
        );
    assert!(text.contains("rastreador = "), "{text}");
    std::fs::write(&scenario, text).unwrap();
    scenario
}

/// The Madrid fleet with trackers that record adaptively (factory criteria: 300 s, 100 m,
/// 10°, 10 km/h; nothing while the unit stands with the engine on) at issue 14's σ 15 m with
/// 10 m of drift: such a tracker's still record and its next moving one straddle every
/// traffic halt, a minute apart, and the speed integral across them drove through the halt
/// (+3–6 % per unit-day on the grid's `comercial` profile).
#[test]
fn gps_km_of_adaptive_trackers() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = madrid_with_tracker(dir.path(), "adaptativo", "modo = \"adaptativo\"\n");
    let (ok, stderr, db, truth) = simulate_file(&scenario, dir.path(), &[]);
    assert!(ok, "{stderr}");
    assert!(check("madrid, adaptativo", &days(&db, &truth), 2.0) >= 15);
}

/// The Madrid fleet with trackers set to record once every ten minutes while the unit stands
/// with the engine on (every 500 m, 30° or 2 min while moving; a heartbeat every 15 min
/// parked) at σ 15 m with 10 m of drift: each delivery holds a few still records ten minutes
/// apart whose chords are the noise. The engine knows that noise from the unit's earlier
/// stops; measured with a distance rule started afresh at each stop, as until version 16, the
/// chords were phantom kilometres (0.09–0.11 km per 8 h on `minimo` with such a profile).
#[test]
fn a_sparse_tracker_at_a_client_adds_no_phantom_kilometres() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = madrid_with_tracker(
        dir.path(),
        "escaso",
        "modo = \"adaptativo\"\nperiodo_movimiento_s = 120\ndistancia_m = 500\n\
         angulo_grados = 30\ndelta_velocidad_kmh = 0\nperiodo_detenido_s = 600\n\
         umbral_movimiento_kmh = 8\nlatido_apagado_min = 15\n",
    );
    let (ok, stderr, db, _) = simulate_file(&scenario, dir.path(), &[]);
    assert!(ok, "{stderr}");
    assert_no_phantom_km(&db);
}

/// `flota evaluar` on `db`: over a day of parked hours at least, the distance rule adds no more
/// than issue 14's 0.05 km per 8 h parked.
fn assert_no_phantom_km(db: &Path) {
    let out = std::process::Command::new(crate::support::flota_bin())
        .args(["evaluar", "--json"])
        .arg(db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let phantom_km = report["km_fantasma_detenida"].as_f64().unwrap();
    let hours = report["horas_revisadas_km_fantasma"].as_f64().unwrap();
    assert!(hours > 24.0, "{hours}");
    assert!(
        phantom_km / hours * 8.0 <= 0.05,
        "{phantom_km} km in {hours} h parked"
    );
}

/// Trackers whose odometers lie, in Madrid: one exact, one set 30 km off (differences are
/// right), one 4 % fast, one 3.5 % slow, and a phone with no odometer and 2 % invalid speeds
/// (0 while moving, or hundreds of km/h, also while parked).
fn madrid_odometers(dir: &Path) -> PathBuf {
    let routes = Path::new(env!("CARGO_MANIFEST_DIR")).join("rutas/espana");
    let scenario = dir.join("odometros.toml");
    let units = [
        ("5101-ODO", "md01_castellana", "exacto"),
        ("5102-ODO", "md02_sur", "desfasado"),
        ("5103-ODO", "md03_este", "rapido"),
        ("5104-ODO", "md01_castellana", "lento"),
        ("5105-ODO", "md02_sur", "telefono"),
    ];
    let mut text = format!(
        r#"[escenario]
nombre = "odometros"
descripcion = "Madrid con odómetros que mienten"
zona_horaria = "Europe/Madrid"
dias = 3
intervalo_reporte_s = 15
semilla = 77
rutas = "{}"

[turno]
inicio = ["07:00", "08:00"]
duracion_h = [6.0, 7.5]

[ruido]
sigma_m = 5.0

[rastreadores.exacto]
[rastreadores.desfasado]
odometro_desfase_km = 30.0
[rastreadores.rapido]
odometro_escala = 1.04
[rastreadores.lento]
odometro_escala = 0.965
[rastreadores.telefono]
odometro = "ausente"
velocidad_invalida_probabilidad = 0.02
"#,
        routes.display()
    );
    for (plate, route, tracker) in units {
        text.push_str(&format!(
            "\n[[unidades]]\nplaca = \"{plate}\"\nconductor = \"Conductor {plate}\"\ntipo = \"panel\"\nrutas = [\"{route}\"]\nrastreador = \"{tracker}\"\n"
        ));
    }
    std::fs::write(&scenario, text).unwrap();
    scenario
}

/// The odometer gives the kilometres only while it agrees with the GPS track within the
/// documented bound (`odometro_tolerancia_pct`, 2 %): an offset changes no difference and is
/// trusted, a scale error beyond the bound falls back to the GPS distance, a unit with no
/// odometer reports the GPS distance; every judged day is then within the GPS-only target of
/// issue 14 (2 %), and no parked unit gains phantom kilometres, invalid speeds and all.
#[test]
fn the_odometer_is_trusted_only_within_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = madrid_odometers(dir.path());
    let (ok, stderr, db, truth) = simulate_file(&scenario, dir.path(), &[]);
    assert!(ok, "{stderr}");
    let days = days(&db, &truth);
    let conn = Connection::open(&db).unwrap();
    for day in &days {
        let odometer: Option<f64> = conn
            .query_row(
                "SELECT km_odometro FROM resumen_diario JOIN vehiculos v ON v.id = vehiculo_id
                 WHERE v.placa = ?1 AND fecha = ?2",
                [&day.plate, &day.date],
                |r| r.get(0),
            )
            .unwrap();
        let expected = match day.plate.as_str() {
            "5101-ODO" | "5102-ODO" => odometer.unwrap(),
            "5105-ODO" => {
                assert_eq!(odometer, None, "{day:?}");
                day.gps_km
            }
            _ => day.gps_km,
        };
        assert_eq!(day.reported_km, expected, "{day:?} (odometer {odometer:?})");
        let error_pct = (day.reported_km - day.truth_km) / day.truth_km * 100.0;
        assert!(error_pct.abs() <= 2.0, "{day:?}: {error_pct:+.2} %");
    }
    assert!(days.len() >= 12, "{}", days.len());

    assert_no_phantom_km(&db);
}

/// A tracker that records a moving unit once a minute (a common factory setting) cuts the
/// corners of Guatemala City's winding streets between its fixes: its GPS distance runs 3–15 %
/// short. Its exact odometer gives the kilometres all the same; the GPS distance is only the
/// lower bound it must not fall below.
#[test]
fn an_exact_odometer_gives_the_kilometres_of_a_tracker_that_records_once_a_minute() {
    let dir = tempfile::tempdir().unwrap();
    let shipped = std::fs::read_to_string(scenario_path("minimo")).unwrap();
    let routes = Path::new(env!("CARGO_MANIFEST_DIR")).join("rutas");
    let text = shipped
        .replace("intervalo_reporte_s = 15", "intervalo_reporte_s = 60")
        .replace(
            "rutas = \"../rutas\"",
            &format!("rutas = \"{}\"", routes.display()),
        );
    assert!(text.contains("intervalo_reporte_s = 60") && !text.contains("../rutas"));
    let scenario = dir.path().join("minimo_60s.toml");
    std::fs::write(&scenario, text).unwrap();
    let (ok, stderr, db, truth) = simulate_file(&scenario, dir.path(), &[]);
    assert!(ok, "{stderr}");
    let days: Vec<Day> = days(&db, &truth)
        .into_iter()
        .filter(|d| !d.silent)
        .collect();
    assert!(days.len() >= 4, "{days:#?}");
    assert!(
        days.iter().any(|d| d.gps_error_pct() < -3.0),
        "the GPS distance no longer runs short at a minute: {days:#?}"
    );
    for day in &days {
        let error_pct = (day.reported_km - day.truth_km) / day.truth_km * 100.0;
        assert!(error_pct.abs() <= 0.5, "{day:?}: {error_pct:+.2} %");
    }
}
