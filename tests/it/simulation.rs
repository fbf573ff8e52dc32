//! `flota simular` end to end: scenarios into temp dirs, then the database and the truth log
//! checked against each other and against what the scenario asked for.

use std::path::{Path, PathBuf};
use std::process::Command;

use flota::evaluation::truth::{self, TruthLog};
use flota::sim::{StopReason, TruthEvent};
use rusqlite::Connection;

use crate::support::flota_bin;

pub const AHORA: &str = "2026-08-19T15:30";

/// The `--ahora` a shipped scenario is run at: the Guatemala ones at `AHORA`; the ones about
/// clock changes on the day that matters (see their headers).
pub fn ahora_of(name: &str) -> &'static str {
    match name {
        "cambio_hora" => "2026-10-25T11:00",
        "dos_zonas" => "2026-03-30T00:30",
        "rastreadores" => "2026-09-17T15:00",
        _ => AHORA,
    }
}

pub fn scenario_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("escenarios")
        .join(format!("{name}.toml"))
}

/// Runs `flota simular` (at `AHORA` unless `extra` says) and returns (status ok, stderr, db
/// path, truth path).
pub fn simulate_file(
    scenario: &Path,
    dir: &Path,
    extra: &[&str],
) -> (bool, String, PathBuf, PathBuf) {
    let db = dir.join("flota.db");
    let ahora: &[&str] = if extra.contains(&"--ahora") {
        &[]
    } else {
        &["--ahora", AHORA]
    };
    let out = Command::new(flota_bin())
        .arg("simular")
        .arg(scenario)
        .args(ahora)
        .arg("--salida")
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

/// Simulates a shipped scenario into `dir` at its `--ahora`, asserting success.
pub fn simulate(name: &str, dir: &Path) -> (PathBuf, PathBuf) {
    let (ok, stderr, db, truth) =
        simulate_file(&scenario_path(name), dir, &["--ahora", ahora_of(name)]);
    assert!(ok, "{stderr}");
    (db, truth)
}

/// The truth log at `path`, read as the evaluation reads it.
pub fn truth_log(path: &Path) -> TruthLog {
    truth::read(path).unwrap()
}

/// A signal loss of the truth.
#[derive(Debug, Clone, Copy)]
pub struct Loss<'a> {
    pub plate: &'a str,
    pub start: i64,
    pub end: i64,
}

pub fn losses(truth: &[TruthEvent]) -> Vec<Loss<'_>> {
    truth
        .iter()
        .filter_map(|e| match e {
            TruthEvent::PerdidaSenal {
                placa,
                inicio_utc,
                fin_utc,
            } => Some(Loss {
                plate: placa,
                start: *inicio_utc,
                // Still silent at "now": it never ends within the data.
                end: fin_utc.unwrap_or(i64::MAX),
            }),
            _ => None,
        })
        .collect()
}

/// An injected overspeed of the truth.
#[derive(Debug, Clone, Copy)]
pub struct Speeding<'a> {
    pub plate: &'a str,
    pub start: i64,
    pub end: i64,
    pub max_kmh: f64,
    pub limit_kmh: f64,
}

pub fn injected_speeding(truth: &[TruthEvent]) -> Vec<Speeding<'_>> {
    truth
        .iter()
        .filter_map(|e| match e {
            TruthEvent::ExcesoVelocidad {
                placa,
                inicio_utc,
                fin_utc,
                velocidad_max_kmh,
                limite_kmh,
                inyectado: true,
            } => Some(Speeding {
                plate: placa,
                start: *inicio_utc,
                end: *fin_utc,
                max_kmh: *velocidad_max_kmh,
                limit_kmh: *limite_kmh,
            }),
            _ => None,
        })
        .collect()
}

/// A unit stopped with the engine on at "now", in the truth.
#[derive(Debug, Clone, Copy)]
pub struct StoppedNow<'a> {
    pub plate: &'a str,
    pub since: i64,
    pub minutes: f64,
    pub lat: f64,
    pub lon: f64,
}

pub fn stopped_now(truth: &[TruthEvent]) -> Vec<StoppedNow<'_>> {
    truth
        .iter()
        .filter_map(|e| match e {
            TruthEvent::DetenidaAhora {
                placa,
                desde_utc,
                minutos,
                lat,
                lon,
            } => Some(StoppedNow {
                plate: placa,
                since: *desde_utc,
                minutes: *minutos,
                lat: *lat,
                lon: *lon,
            }),
            _ => None,
        })
        .collect()
}

/// The true kilometres of one unit on one local date.
#[derive(Debug, Clone, Copy)]
pub struct KmDay<'a> {
    pub plate: &'a str,
    pub date: &'a str,
    pub km: f64,
}

pub fn km_days(truth: &[TruthEvent]) -> Vec<KmDay<'_>> {
    truth
        .iter()
        .filter_map(|e| match e {
            TruthEvent::KmDia { placa, fecha, km } => Some(KmDay {
                plate: placa,
                date: fecha,
                km: *km,
            }),
            _ => None,
        })
        .collect()
}

/// A stay inside a geofence, in the truth.
#[derive(Debug, Clone, Copy)]
pub struct Stay<'a> {
    pub plate: &'a str,
    pub fence: &'a str,
    pub entry: Option<i64>,
    pub exit: Option<i64>,
}

pub fn stays(truth: &[TruthEvent]) -> Vec<Stay<'_>> {
    truth
        .iter()
        .filter_map(|e| match e {
            TruthEvent::VisitaGeocerca {
                placa,
                geocerca,
                entrada_utc,
                salida_utc,
            } => Some(Stay {
                plate: placa,
                fence: geocerca,
                entry: *entrada_utc,
                exit: *salida_utc,
            }),
            _ => None,
        })
        .collect()
}

/// A stop that an injection caused or lengthened, other than a unit stopped at "now".
#[derive(Debug, Clone, Copy)]
pub struct InjectedStop<'a> {
    pub plate: &'a str,
    pub start: i64,
    pub duration_s: i64,
}

pub fn injected_stops(truth: &[TruthEvent]) -> Vec<InjectedStop<'_>> {
    truth
        .iter()
        .filter_map(|e| match e {
            TruthEvent::Parada {
                placa,
                inicio_utc,
                duracion_s,
                motivo,
                inyectada: true,
                ..
            } if *motivo != StopReason::DetenidaAhora => Some(InjectedStop {
                plate: placa,
                start: *inicio_utc,
                duration_s: *duracion_s,
            }),
            _ => None,
        })
        .collect()
}

/// Whether `t` fell inside one of `plate`'s signal losses: no report can tell it.
pub fn hidden_by_loss(truth: &[TruthEvent], plate: &str, t: i64) -> bool {
    losses(truth)
        .iter()
        .any(|l| l.plate == plate && l.start < t && t < l.end)
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
    let log = truth_log(&truth_path);
    let ahora = ahora_utc(&db);
    assert_eq!(log.header.ahora_utc, ahora);
    let run = Run {
        name,
        db: &db,
        truth: &log.events,
        ahora,
    };

    // Nothing after `ahora`, nothing received after it either.
    let (max_ts, max_received): (i64, i64) = db
        .query_row(
            "SELECT max(ts_utc), max(ts_utc + retraso_s) FROM posiciones",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(max_ts <= ahora && max_received <= ahora);
    signal_losses_are_silent(&run);
    injected_speeding_is_reported(&run);
    units_stopped_now_stand_still(&run);
    odometers_add_up_to_the_truth(&run);
    delivery_faults_only_when_asked(&run);
    no_column_holds_truth(&run);
}

/// One simulated scenario: its database, its truth and its "now".
struct Run<'a> {
    name: &'a str,
    db: &'a Connection,
    truth: &'a [TruthEvent],
    ahora: i64,
}

/// No report inside a signal-loss interval, and reports on both sides of it.
fn signal_losses_are_silent(run: &Run<'_>) {
    let Run {
        name,
        db,
        truth,
        ahora,
    } = *run;
    let all_losses = losses(truth);
    assert!(!all_losses.is_empty(), "{name}: no signal loss to check");
    for loss in &all_losses {
        let (from, to) = (loss.start, loss.end);
        let unit = rows(db, loss.plate);
        assert!(
            unit.iter().all(|r| r.ts < from || r.ts >= to),
            "{name}: report inside {loss:?}"
        );
        assert!(
            unit.iter().any(|r| r.ts < from && r.ts >= from - 60),
            "{name}: nothing just before {loss:?}"
        );
        if to <= ahora {
            assert!(
                unit.iter().any(|r| r.ts >= to && r.ts < to + 60),
                "{name}: nothing just after {loss:?}"
            );
        }
    }
}

/// Reported speeds exceed the limit throughout each injected speeding interval.
fn injected_speeding_is_reported(run: &Run<'_>) {
    let Run {
        name, db, truth, ..
    } = *run;
    let speeding = injected_speeding(truth);
    assert!(!speeding.is_empty(), "{name}: no speeding to check");
    for episode in speeding {
        let (from, to) = (episode.start, episode.end);
        let inside: Vec<Row> = rows(db, episode.plate)
            .into_iter()
            .filter(|r| r.ts > from + 2 && r.ts < to - 2)
            .collect();
        assert!(!inside.is_empty(), "{name}: no report during {episode:?}");
        // Doppler speed noise is small; at the edges the true speed is just over the limit.
        assert!(
            inside.iter().all(|r| r.speed > episode.limit_kmh - 6.0),
            "{name}: {episode:?}: {inside:?}"
        );
        let reported_max = inside.iter().map(|r| r.speed).fold(0.0, f64::max);
        assert!(
            (reported_max - episode.max_kmh).abs() < 6.0,
            "{name}: {episode:?}: reported max {reported_max}"
        );
    }
}

/// Units stopped "now" report standing still, engine on, at one place, up to `ahora`.
fn units_stopped_now_stand_still(run: &Run<'_>) {
    let Run {
        name,
        db,
        truth,
        ahora,
    } = *run;
    let stopped = stopped_now(truth);
    assert!(!stopped.is_empty(), "{name}: no stopped unit to check");
    for unit in stopped {
        let since = unit.since;
        let place = flota::geometry::earth::LatLon::new(unit.lat, unit.lon);
        let after: Vec<Row> = rows(db, unit.plate)
            .into_iter()
            .filter(|r| r.ts > since + 1)
            .collect();
        assert!(after.len() > 2, "{name}: {unit:?}");
        assert!(
            after.last().unwrap().ts >= ahora - 15 - 300,
            "{name}: {unit:?} stopped reporting early"
        );
        for r in &after {
            assert_eq!(r.speed, 0.0, "{name}: {unit:?} moving at {}", r.ts);
            assert!(r.ignition, "{name}: {unit:?} engine off");
            let d = flota::geometry::earth::distance_m(
                place,
                flota::geometry::earth::LatLon::new(r.lat, r.lon),
            );
            assert!(d < 150.0, "{name}: {unit:?} report {d:.0} m away");
        }
        assert!((unit.minutes - (ahora - since) as f64 / 60.0).abs() < 0.2);
    }
}

/// The odometer only grows, and true kilometres per day add up to it.
fn odometers_add_up_to_the_truth(run: &Run<'_>) {
    let Run {
        db, truth, ahora, ..
    } = *run;
    let all_losses = losses(truth);
    let km_days = km_days(truth);
    for plate in km_days
        .iter()
        .map(|e| e.plate)
        .collect::<std::collections::BTreeSet<_>>()
    {
        let unit = rows(db, plate);
        assert!(
            unit.windows(2)
                .all(|w| w[1].odometer_km >= w[0].odometer_km - 1e-9),
            "{plate}"
        );
        let silent_now = all_losses.iter().any(|l| l.plate == plate && l.end > ahora);
        if silent_now {
            // What it drove after its last report is in the truth, not in any report.
            continue;
        }
        let truth_km: f64 = km_days
            .iter()
            .filter(|e| e.plate == plate)
            .map(|e| e.km)
            .sum();
        let odo_km = unit.last().unwrap().odometer_km - unit.first().unwrap().odometer_km;
        // The odometer is the true path; the first report is after the first departure's
        // start, the last may precede the last metres before `ahora`.
        assert!(
            (truth_km - odo_km).abs() < 1.0,
            "{plate}: truth {truth_km} vs odometer {odo_km}"
        );
    }
}

/// Delivery faults appear exactly when the scenario asks for them.
fn delivery_faults_only_when_asked(run: &Run<'_>) {
    let Run {
        name, db, truth, ..
    } = *run;
    let km_days = km_days(truth);
    let all: Vec<Row> = km_days
        .iter()
        .map(|e| e.plate)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .flat_map(|plate| rows(db, plate))
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
}

/// The database never holds truth: no column mentions it.
fn no_column_holds_truth(run: &Run<'_>) {
    let Run { db, .. } = *run;
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

/// A signal loss or a stop still going on at `--ahora` is open in the truth: no end in the
/// future, `fin_utc` null.
#[test]
fn what_goes_on_at_ahora_is_open_in_the_truth() {
    let dir = tempfile::tempdir().unwrap();
    let (_, truth_path) = simulate("minimo", dir.path());
    let log = truth_log(&truth_path);
    let ahora = log.header.ahora_utc;
    let mut open_losses = 0;
    for event in &log.events {
        match event {
            TruthEvent::PerdidaSenal { fin_utc, .. } | TruthEvent::Parada { fin_utc, .. } => {
                assert!(fin_utc.is_none_or(|end| end <= ahora), "{event:?}");
                if matches!(event, TruthEvent::PerdidaSenal { fin_utc: None, .. }) {
                    open_losses += 1;
                }
            }
            _ => {}
        }
    }
    // P-789GHJ, silent since 13:10 for 180 minutes at 15:30.
    assert_eq!(open_losses, 1);
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
    let log = truth_log(&truth_path);
    let visits = stays(&log.events);
    assert!(visits.len() > 20, "{}", visits.len());
    let mut checked = 0;
    for unit in &world.units {
        for r in rows(&db, &unit.plate) {
            for fence in &world.fences {
                let inside = fence.contains(flota::geometry::earth::LatLon::new(r.lat, r.lon));
                let near_edge = visits.iter().any(|v| {
                    v.plate == unit.plate
                        && v.fence == fence.name
                        && [v.entry, v.exit]
                            .iter()
                            .any(|t| t.is_some_and(|t| (t - r.ts).abs() <= 1))
                });
                if near_edge {
                    continue; // within rounding of a crossing
                }
                let in_visit = visits.iter().any(|v| {
                    v.plate == unit.plate
                        && v.fence == fence.name
                        && v.entry.is_none_or(|e| e <= r.ts)
                        && v.exit.is_none_or(|s| r.ts < s)
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
    let log = truth_log(&truth_path);
    let classes: Vec<&str> = log
        .events
        .iter()
        .filter_map(|e| match e {
            TruthEvent::Inyeccion { clase, .. } => Some(clase.as_str()),
            _ => None,
        })
        .collect();
    for (class, n) in [
        ("exceso_velocidad", 12),
        ("parada_prolongada", 8),
        ("perdida_senal", 5),
        ("detenida_ahora", 3),
    ] {
        assert_eq!(
            classes.iter().filter(|c| **c == class).count(),
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

/// A route whose first delivery is at the depot itself (loading before the loop) and whose
/// two next deliveries share one address: the unit never moves between them, so the truth
/// has one stop there, not two a second apart — a stop is a maximal interval at speed zero —
/// and the engine, which sees one standing period, scores as on any route.
#[test]
fn halts_at_the_same_place_are_one_stop_in_the_truth() {
    let dir = tempfile::tempdir().unwrap();
    let routes = dir.path().join("rutas");
    std::fs::create_dir(&routes).unwrap();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("rutas/espana/md01_castellana.json");
    let mut route: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(shipped).unwrap()).unwrap();
    let stops = route["paradas"].as_array_mut().unwrap();
    let mut at_depot = stops[0].clone();
    at_depot["nombre"] = "carga_en_deposito".into();
    let mut same_door = stops[1].clone();
    same_door["nombre"] = "mismo_portal".into();
    stops.insert(2, same_door);
    stops.insert(1, at_depot);
    std::fs::write(
        routes.join("md01_castellana.json"),
        serde_json::to_string(&route).unwrap(),
    )
    .unwrap();
    let scenario = dir.path().join("mismo_lugar.toml");
    std::fs::write(
        &scenario,
        format!(
            r#"[escenario]
nombre = "mismo_lugar"
zona_horaria = "Europe/Madrid"
dias = 3
intervalo_reporte_s = 15
semilla = 5
rutas = "{}"

[turno]
inicio = ["06:30", "08:00"]
duracion_h = [7.0, 8.5]

[ruido]
sigma_m = 5.0

[[geocercas]]
nombre = "CD Méndez Álvaro"
tipo = "bodega"
cuadrado = {{ centro = [40.3958, -3.6783], medio_lado_m = 200 }}

[[unidades]]
placa = "1234-KLM"
tipo = "panel"
conductor = "Lucía Moreno"
rutas = ["md01_castellana"]

[[unidades]]
placa = "2345-LMN"
tipo = "pickup"
conductor = "Javier Ortega"
rutas = ["md01_castellana"]
"#,
            routes.display()
        ),
    )
    .unwrap();
    let (ok, stderr, db, truth_path) =
        simulate_file(&scenario, dir.path(), &["--ahora", "2026-06-17T15:30"]);
    assert!(ok, "{stderr}");
    let log = truth_log(&truth_path);
    let mut stops: Vec<(&str, i64, Option<i64>, &str)> = log
        .events
        .iter()
        .filter_map(|e| match e {
            TruthEvent::Parada {
                placa,
                inicio_utc,
                fin_utc,
                lugar,
                ..
            } => Some((placa.as_str(), *inicio_utc, *fin_utc, lugar.as_str())),
            _ => None,
        })
        .collect();
    stops.sort();
    let places: Vec<&str> = stops.iter().map(|s| s.3).collect();
    assert!(
        places.contains(&"nuevos_ministerios"),
        "the shared address was never reached: {places:?}"
    );
    for pair in stops.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if a.0 == b.0 {
            let end = a.2.expect("only the last stop of a unit is open");
            assert!(b.1 > end + 1, "two stops with no move between: {a:?} {b:?}");
        }
    }
    let out = Command::new(flota_bin())
        .args(["evaluar", "--json"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let types = report["tipos"].as_array().unwrap();
    for kind in ["parada", "parada_prolongada"] {
        let row = types.iter().find(|t| t["tipo"] == kind).unwrap();
        let f1 = row["f1"].as_f64().unwrap_or(1.0);
        assert!(f1 >= 0.95, "{kind}: {row}");
    }
}
