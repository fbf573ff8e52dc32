//! Evidence on events and one story across the tools, through the real `flota servir` (raw
//! JSON) on a scenario of this file's own, simulated once into a temp dir: three units over two
//! days with one injection of each kind, and P-456DEF stopped with the engine on for the last
//! 70 minutes before "now" (past the 42-minute long-stop threshold).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::simulation::{simulate_file, stopped_now, truth_log};
use crate::support::{Server, flota_bin};

const MIME: &str = "text/html;profile=mcp-app";
const PLATES: [&str; 3] = ["P-123BCD", "P-456DEF", "P-789GHJ"];
/// The unit stopped now, and for how long, minutes.
const STOPPED: &str = "P-456DEF";
const STOPPED_MIN: f64 = 70.0;

struct Fixture {
    _dir: tempfile::TempDir,
    db: PathBuf,
    truth: PathBuf,
}

/// The shipped `minimo` scenario with its own seed and the unit stopped now past the long-stop
/// threshold.
fn scenario(dir: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("escenarios/minimo.toml")).unwrap();
    let rutas = root.join("rutas");
    let text = text
        .replace(
            "rutas = \"../rutas\"",
            &format!("rutas = {:?}", rutas.to_str().unwrap()),
        )
        .replace("semilla = 11", "semilla = 23")
        .replace(
            "placa = \"P-456DEF\"\nminutos = 40",
            &format!("placa = \"{STOPPED}\"\nminutos = {STOPPED_MIN}"),
        );
    assert!(text.contains(&format!("minutos = {STOPPED_MIN}")), "{text}");
    let path = dir.join("evidencia.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn fixture() -> &'static Fixture {
    static CELL: OnceLock<Fixture> = OnceLock::new();
    CELL.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let (ok, stderr, db, truth) = simulate_file(&scenario(dir.path()), dir.path(), &[]);
        assert!(ok, "{stderr}");
        Fixture {
            _dir: dir,
            db,
            truth,
        }
    })
}

/// `flota servir` on the fixture, initialised as a client that renders the map views (so
/// `mapa_recorrido` carries its `vista` with the day's events).
struct Client {
    server: Server,
    next: i64,
}

impl Client {
    fn new() -> Client {
        let mut server = Server::spawn(
            flota_bin(),
            &["servir", "--db", fixture().db.to_str().unwrap()],
        );
        server.send_json(&json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25",
                       "capabilities": {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": [MIME]}}},
                       "clientInfo": {"name": "it", "version": "1"}}
        }));
        server.recv();
        server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        Client { server, next: 1 }
    }

    fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        self.next += 1;
        let answer = self.server.call(self.next, tool, arguments.clone());
        let result = &answer["result"];
        assert!(
            result["isError"] != true && answer.get("error").is_none(),
            "{tool} {arguments}: {answer}"
        );
        result["structuredContent"].clone()
    }
}

/// The stored positions of `plate` with `from <= ts <= to`: (distinct fix times, top speed).
fn positions(db: &Connection, plate: &str, from: i64, to: i64) -> (i64, f64) {
    db.query_row(
        "SELECT count(DISTINCT ts_utc), coalesce(max(velocidad_kmh), 0) FROM posiciones p
         JOIN vehiculos v ON v.id = p.vehiculo_id WHERE v.placa = ?1 AND ts_utc BETWEEN ?2 AND ?3",
        rusqlite::params![plate, from, to],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .unwrap()
}

fn ts(text: &Value) -> i64 {
    chrono::DateTime::parse_from_rfc3339(text.as_str().unwrap())
        .unwrap()
        .timestamp()
}

/// The keys every `evidencia` has, whatever the kind.
const COMMON: [&str; 11] = [
    "primer_reporte",
    "primer_reporte_utc",
    "ultimo_reporte",
    "ultimo_reporte_utc",
    "reportes",
    "umbral",
    "inicio_estimado",
    "fin_estimado",
    "en_curso",
    "desde_antes_de_los_datos",
    "estimaciones",
];

/// One event's evidence against the unit's stored positions. `kind`: which list it came from.
fn check(db: &Connection, plate: &str, kind: &str, event: &Value) {
    let e = &event["evidencia"];
    for key in COMMON {
        assert!(e.get(key).is_some(), "{kind} {plate}: no {key}: {event}");
    }
    let (first, last) = (
        e["primer_reporte_utc"].as_i64().unwrap(),
        e["ultimo_reporte_utc"].as_i64().unwrap(),
    );
    // The local times are the same instants.
    assert_eq!(ts(&e["primer_reporte"]), first, "{event}");
    assert_eq!(ts(&e["ultimo_reporte"]), last, "{event}");
    assert!(first <= last, "{event}");
    // The first and last reports are the unit's own, and the count is of reports between them.
    assert_eq!(
        positions(db, plate, first, first).0,
        1,
        "{kind} {plate}: {event}"
    );
    assert_eq!(
        positions(db, plate, last, last).0,
        1,
        "{kind} {plate}: {event}"
    );
    let (between, top_kmh) = positions(db, plate, first, last);
    let used = e["reportes"].as_i64().unwrap();
    assert!(
        used >= 1 && used <= between,
        "{kind} {plate}: {used} of {between}: {event}"
    );
    let threshold = e["umbral"]["valor"].as_f64().unwrap();
    let name = e["umbral"]["nombre"].as_str().unwrap();
    let words = e["estimaciones"].as_array().unwrap();
    assert_eq!(
        words
            .iter()
            .any(|w| w.as_str().unwrap().contains("sigue en curso")),
        e["en_curso"] == true,
        "{event}"
    );
    match kind {
        "parada" => {
            assert_eq!(name, "parada_radio_m", "{event}");
            assert!(e["radio_m"].as_f64().unwrap() <= threshold, "{event}");
            // Reports of a stop are still ones; a stop spans more than the minimum.
            assert!(
                top_kmh < 40.0,
                "{plate}: {top_kmh} km/h inside a stop: {event}"
            );
        }
        "exceso" => {
            assert_eq!(name, "limite_kmh+exceso_tolerancia_kmh", "{event}");
            let max = e["velocidad_max_kmh"].as_f64().unwrap();
            assert!(max >= threshold, "{event}");
            assert!((max - top_kmh).abs() <= 0.05, "{max} vs {top_kmh}: {event}");
        }
        "perdida" => {
            assert_eq!(name, "perdida_senal_s", "{event}");
            assert!(
                e["silencio_min"].as_f64().unwrap() * 60.0 >= threshold,
                "{event}"
            );
            // Nothing was heard during the silence: only its two ends (one if still silent).
            let ends = if e["en_curso"] == true { 1 } else { 2 };
            assert_eq!((used, between), (ends, ends), "{event}");
        }
        "visita" => {
            assert_eq!(name, "geocerca_confirmacion_s", "{event}");
            assert!(e["distancia_al_borde_m"].as_f64().unwrap() > 0.0, "{event}");
        }
        _ => unreachable!(),
    }
}

/// Every stop, speeding episode, signal loss and visit the tools list carries its evidence,
/// the same shape everywhere, consistent with the stored positions: its first and last reports
/// are the unit's, the reports counted lie between them, a stop's radius is within the
/// threshold applied, a speeding episode's top speed is the reports' and over the threshold,
/// nothing was heard during a signal loss.
#[test]
fn every_event_carries_evidence_consistent_with_the_positions() {
    let db = Connection::open(&fixture().db).unwrap();
    let mut client = Client::new();
    let mut seen = std::collections::BTreeMap::<&str, usize>::new();
    for plate in PLATES {
        for day in ["ayer", "hoy"] {
            let args = json!({"placa": plate, "fecha": day});
            let summary = client.ok("resumen_recorrido", args.clone());
            for (list, kind) in [
                ("paradas", "parada"),
                ("excesos_de_velocidad", "exceso"),
                ("perdidas_de_senal", "perdida"),
                ("geocercas", "visita"),
            ] {
                for event in summary[list].as_array().unwrap() {
                    check(&db, plate, kind, event);
                    *seen.entry(kind).or_default() += 1;
                }
            }
            let map = client.ok("mapa_recorrido", args);
            for event in map["vista"]["eventos"].as_array().unwrap() {
                let kind = match event["tipo"].as_str().unwrap() {
                    "parada" => "parada",
                    "exceso_velocidad" => "exceso",
                    "perdida_senal" => "perdida",
                    _ => "visita",
                };
                check(&db, plate, kind, event);
            }
        }
    }
    for kind in ["parada", "exceso", "perdida", "visita"] {
        assert!(
            seen.get(kind).is_some_and(|n| *n > 0),
            "no {kind}: {seen:?}"
        );
    }
    let alerts = client.ok(
        "alertas",
        json!({"fecha_inicio": "ayer", "fecha_fin": "hoy"}),
    );
    for detail in alerts["detalle"].as_array().unwrap() {
        let kind = match detail["tipo"].as_str().unwrap() {
            "exceso_velocidad" => "exceso",
            "parada_prolongada" => "parada",
            "perdida_senal" => "perdida",
            _ => "visita",
        };
        for event in detail["eventos"].as_array().unwrap() {
            check(&db, event["placa"].as_str().unwrap(), kind, event);
        }
    }
    let stopped = client.ok("unidades_detenidas", json!({"minutos_minimos": 0}));
    for unit in stopped["unidades"].as_array().unwrap() {
        check(&db, unit["placa"].as_str().unwrap(), "parada", unit);
    }
    let fence = client.ok(
        "verificar_geocerca",
        json!({"placa": "P-123BCD", "nombre_geocerca": "CEDIS", "fecha": "ayer"}),
    );
    assert!(!fence["visitas"].as_array().unwrap().is_empty(), "{fence}");
    for visit in fence["visitas"].as_array().unwrap() {
        check(&db, "P-123BCD", "visita", visit);
    }
}

/// `HH:MM:SS` of an ISO local time.
fn clock_of(iso: &Value) -> String {
    iso.as_str().unwrap()[11..19].to_owned()
}

/// The unit stopped with the engine on "now", past the long-stop threshold, is one story: the
/// same start and minutes in `alertas`, `resumen_recorrido`, `mapa_recorrido` (its view's
/// events and its counts) and `unidades_detenidas` (and `mapa_flota`, `posicion_actual`); its day has no return time, and says why;
/// the minutes stopped agree between the summary and the map for every unit and day.
#[test]
fn an_ongoing_long_stop_is_one_story_across_the_tools() {
    let mut client = Client::new();
    let today = json!({"placa": STOPPED, "fecha": "hoy"});

    let stopped = client.ok("unidades_detenidas", json!({"minutos_minimos": 0}));
    let unit = stopped["unidades"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["placa"] == STOPPED)
        .unwrap_or_else(|| panic!("{STOPPED} not stopped: {stopped}"))
        .clone();
    assert_eq!(unit["estado"], "motor encendido", "{unit}");
    let start = ts(&unit["detenida_desde"]);
    let minutes = unit["minutos_detenida"].as_f64().unwrap();
    // Stopped at least the injected minutes (longer when the unit was already standing then),
    // as the truth says, and past the long-stop threshold.
    let truth = truth_log(&fixture().truth);
    let real = stopped_now(&truth.events)
        .into_iter()
        .find(|s| s.plate == STOPPED)
        .unwrap()
        .minutes;
    assert!(real >= STOPPED_MIN, "{real}");
    assert!(
        (minutes - real).abs() <= 1.0,
        "{minutes} vs truth {real}: {unit}"
    );

    let alerts = client.ok(
        "alertas",
        json!({"tipo": "parada_prolongada", "fecha_inicio": "hoy", "fecha_fin": "hoy"}),
    );
    let alert = alerts["detalle"][0]["eventos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["placa"] == STOPPED)
        .unwrap_or_else(|| panic!("no long-stop alert for {STOPPED}: {alerts}"))
        .clone();
    assert_eq!(alert["fin"], Value::Null, "{alert}");
    assert_eq!(
        ts(&alert["inicio"]),
        start,
        "alertas vs unidades_detenidas: {alert}"
    );
    assert_eq!(alert["minutos"].as_f64().unwrap(), minutes, "{alert}");

    let summary = client.ok("resumen_recorrido", today.clone());
    let open: Vec<&Value> = summary["paradas"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["fin"].is_null())
        .collect();
    assert_eq!(open.len(), 1, "{summary}");
    assert_eq!(
        open[0]["inicio"],
        clock_of(&unit["detenida_desde"]),
        "{summary}"
    );
    assert_eq!(open[0]["minutos"].as_f64().unwrap(), minutes, "{summary}");
    assert_eq!(open[0]["prolongada"], true, "{summary}");
    assert_eq!(summary["hora_retorno"], Value::Null, "{summary}");
    assert!(
        summary["retorno"].as_str().unwrap().contains("sigue fuera"),
        "{summary}"
    );

    let map = client.ok("mapa_recorrido", today);
    let shown: Vec<&Value> = map["vista"]["eventos"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["tipo"] == "parada" && e["fin_utc"].is_null())
        .collect();
    assert_eq!(shown.len(), 1, "{map}");
    assert_eq!(shown[0]["inicio_utc"].as_i64().unwrap(), start, "{map}");
    assert_eq!(shown[0]["minutos"].as_f64().unwrap(), minutes, "{map}");
    assert_eq!(shown[0]["prolongada"], true, "{map}");
    // The fleet map and the unit's position tell the same stop.
    let fleet = client.ok("mapa_flota", json!({}));
    let on_map = fleet["unidades"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["placa"] == STOPPED)
        .unwrap()
        .clone();
    assert_eq!(ts(&on_map["en_estado_desde"]), start, "{on_map}");
    assert_eq!(
        on_map["minutos_en_estado"].as_f64().unwrap(),
        minutes,
        "{on_map}"
    );
    let position = client.ok("posicion_actual", json!({"placa": STOPPED}));
    assert_eq!(ts(&position["detenida_desde"]), start, "{position}");
    assert_eq!(position["minutos_detenida"].as_f64().unwrap(), minutes);
    assert_eq!(
        position["evidencia_parada"]["primer_reporte_utc"],
        unit["evidencia"]["primer_reporte_utc"]
    );
    let long_in_summary = summary["paradas"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["prolongada"] == true)
        .count();
    assert_eq!(map["paradas_prolongadas"], long_in_summary, "{map}");

    for plate in PLATES {
        for day in ["ayer", "hoy"] {
            let args = json!({"placa": plate, "fecha": day});
            let summary = client.ok("resumen_recorrido", args.clone());
            let map = client.ok("mapa_recorrido", args);
            assert_eq!(
                summary["minutos_total_paradas"], map["minutos_en_paradas"],
                "{plate} {day}"
            );
            assert_eq!(summary["numero_paradas"], map["paradas"], "{plate} {day}");
        }
    }
}

/// A unit whose data begins while it is already parked, engine on, inside the depot: a copy
/// of the fixture plus 90 minutes of its reports imported from a CSV up to "now".
fn parked_from_the_start(dir: &Path) -> PathBuf {
    let db = dir.join("flota.db");
    std::fs::copy(&fixture().db, &db).unwrap();
    let mut csv = String::from("placa,fecha_hora,lat,lon,velocidad_kmh,rumbo,ignicion\n");
    let start = chrono::NaiveDate::from_ymd_opt(2026, 8, 19)
        .unwrap()
        .and_hms_opt(14, 0, 0)
        .unwrap();
    for i in 0..180 {
        let t = start + chrono::Duration::seconds(30 * i);
        csv.push_str(&format!(
            "{PARKED},{},14.5851,-90.5449,0,0,1\n",
            t.format("%Y-%m-%d %H:%M:%S")
        ));
    }
    let file = dir.join("aparcada.csv");
    std::fs::write(&file, csv).unwrap();
    let out = std::process::Command::new(flota_bin())
        .args([
            "importar",
            "--db",
            db.to_str().unwrap(),
            file.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    db
}

const PARKED: &str = "P-900AAA";

/// Asserts `event` is flagged as begun before the data, in words too.
fn flagged(event: &Value, what: &str) {
    assert_eq!(event["desde_antes_de_los_datos"], true, "{what}: {event}");
    assert!(
        event["nota"]
            .as_str()
            .is_some_and(|n| n.contains("primer reporte de los datos")),
        "{what}: {event}"
    );
    let e = &event["evidencia"];
    assert_eq!(e["desde_antes_de_los_datos"], true, "{what}: {event}");
    assert!(
        e["estimaciones"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("empezó antes de los datos")),
        "{what}: {event}"
    );
}

/// Every kind of event that began before the data — a stop, the long stop it became, a visit
/// — is flagged `desde_antes_de_los_datos`, with a note in words, in every tool that lists it;
/// one that began inside the data is not. (A signal loss always begins at a report: it cannot
/// begin before the data, and its evidence says so.)
#[test]
fn events_begun_before_the_data_are_flagged_in_every_tool() {
    let dir = tempfile::tempdir().unwrap();
    let db = parked_from_the_start(dir.path());
    let mut server = Server::spawn(
        flota_bin(),
        &[
            "servir",
            "--db",
            db.to_str().unwrap(),
            "--ahora",
            crate::simulation::AHORA,
        ],
    );
    server.initialize("2025-11-25");
    let mut next = 0;
    let mut ok = |tool: &str, arguments: Value| {
        next += 1;
        let answer = server.call(next, tool, arguments);
        assert_ne!(answer["result"]["isError"], true, "{tool}: {answer}");
        answer["result"]["structuredContent"].clone()
    };
    let find = |list: &Value, plate: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|u| u["placa"] == plate)
            .unwrap_or_else(|| panic!("{plate} not in {list}"))
            .clone()
    };

    let stopped = ok("unidades_detenidas", json!({"minutos_minimos": 0}));
    flagged(&find(&stopped["unidades"], PARKED), "unidades_detenidas");
    assert!(
        find(&stopped["unidades"], STOPPED).get("nota").is_none(),
        "{stopped}"
    );

    let alerts = ok(
        "alertas",
        json!({"tipo": "parada_prolongada", "fecha_inicio": "hoy", "fecha_fin": "hoy"}),
    );
    let events = &alerts["detalle"][0]["eventos"];
    flagged(&find(events, PARKED), "alertas");
    assert!(
        find(events, STOPPED)
            .get("desde_antes_de_los_datos")
            .is_none()
    );

    let summary = ok(
        "resumen_recorrido",
        json!({"placa": PARKED, "fecha": "hoy"}),
    );
    flagged(&summary["paradas"][0], "resumen_recorrido parada");
    assert_eq!(summary["paradas"][0]["prolongada"], true, "{summary}");
    flagged(&summary["geocercas"][0], "resumen_recorrido visita");

    let fence = ok(
        "verificar_geocerca",
        json!({"placa": PARKED, "nombre_geocerca": "CEDIS", "fecha": "hoy"}),
    );
    flagged(&fence["visitas"][0], "verificar_geocerca");

    let position = ok("posicion_actual", json!({"placa": PARKED}));
    assert_eq!(
        position["evidencia_parada"]["desde_antes_de_los_datos"],
        true
    );
    assert!(position["nota_parada"].is_string(), "{position}");

    // Stops that began inside the data are not flagged.
    let other = ok(
        "resumen_recorrido",
        json!({"placa": STOPPED, "fecha": "hoy"}),
    );
    for stop in other["paradas"].as_array().unwrap() {
        assert!(stop.get("desde_antes_de_los_datos").is_none(), "{stop}");
        assert_eq!(
            stop["evidencia"]["desde_antes_de_los_datos"], false,
            "{stop}"
        );
    }
}

/// A database analysed before the evidence columns existed is told to be re-analysed, and
/// `flota analizar` rewrites its `eventos` with them: the tools then serve evidence.
#[test]
fn analizar_upgrades_a_database_from_before_the_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("antigua.db");
    std::fs::copy(&fixture().db, &db).unwrap();
    {
        let conn = Connection::open(&db).unwrap();
        for column in [
            "primer_reporte_utc",
            "ultimo_reporte_utc",
            "reportes",
            "medida",
            "umbral",
            "umbral_valor",
        ] {
            conn.execute_batch(&format!("ALTER TABLE eventos DROP COLUMN {column};"))
                .unwrap();
        }
        conn.execute(
            "UPDATE meta SET valor = '4' WHERE clave = 'analisis_version'",
            [],
        )
        .unwrap();
    }
    let args = json!({"placa": STOPPED, "fecha": "hoy"});
    let mut old = Server::spawn(flota_bin(), &["servir", "--db", db.to_str().unwrap()]);
    old.initialize("2025-11-25");
    let refused = old.call(1, "resumen_recorrido", args.clone());
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(refused.to_string().contains("flota analizar"), "{refused}");
    drop(old);

    let out = std::process::Command::new(flota_bin())
        .args(["analizar", db.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut new = Server::spawn(flota_bin(), &["servir", "--db", db.to_str().unwrap()]);
    new.initialize("2025-11-25");
    let answer = new.call(1, "resumen_recorrido", args);
    let stops = &answer["result"]["structuredContent"]["paradas"];
    assert!(!stops.as_array().unwrap().is_empty(), "{answer}");
    for stop in stops.as_array().unwrap() {
        assert!(
            stop["evidencia"]["reportes"].as_i64().unwrap() > 0,
            "{stop}"
        );
    }
}
