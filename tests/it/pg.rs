//! PostgreSQL as the second backend, on a throwaway cluster that `tests/pg/cluster.sh serve`
//! starts for this test process (and removes when the process ends: it holds the script's
//! stdin). Where no PostgreSQL is installed the tests say so and pass; under `CI=true` they
//! fail instead, so CI always runs them.
//!
//! The proof: every tool's structured answer identical on SQLite and PostgreSQL, call by call,
//! for the shipped scenarios; `analizar`, `evaluar` and `exportar` alike; `simular` killed
//! mid-load leaves the previous data; bad URLs, credentials, databases and tables and a server
//! restarted or down, each in Spanish.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::ground_truth::fixture;
use crate::simulation::{ahora_of, scenario_path};
use crate::support::{Server, flota_bin};

/// A running throwaway cluster.
pub struct Cluster {
    /// `postgres://flota@127.0.0.1:PORT` (append `/database`).
    base: String,
    /// The cluster's folder (data, socket, log).
    dir: PathBuf,
    bin: PathBuf,
    /// The script waits on this stdin; closing it (the process ending) removes the cluster.
    _keep: Mutex<(Child, ChildStdin)>,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/pg/cluster.sh")
}

/// Starts a cluster with `tests/pg/cluster.sh serve`.
pub fn start_cluster() -> Result<Cluster, String> {
    let mut child = Command::new("bash")
        .arg(script())
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("no se pudo lanzar cluster.sh: {e}"))?;
    let stdin = child.stdin.take().ok_or("sin stdin")?;
    let stdout = child.stdout.take().ok_or("sin stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let mut value = |key: &str| -> Result<String, String> {
        let line = lines
            .next()
            .and_then(Result::ok)
            .ok_or_else(|| format!("cluster.sh terminó sin decir {key}"))?;
        line.strip_prefix(&format!("{key}="))
            .map(str::to_owned)
            .ok_or_else(|| format!("cluster.sh dijo {line:?} en vez de {key}"))
    };
    let started = value("URL").and_then(|url| Ok((url, value("DIR")?, value("BIN")?)));
    let (url, dir, bin) = match started {
        Ok(values) => values,
        Err(why) => {
            let _ = child.kill();
            let mut stderr = String::new();
            if let Some(mut err) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut err, &mut stderr);
            }
            let _ = child.wait();
            return Err(format!("{why}: {}", stderr.trim()));
        }
    };
    Ok(Cluster {
        base: url.trim_end_matches("/postgres").to_owned(),
        dir: dir.into(),
        bin: bin.into(),
        _keep: Mutex::new((child, stdin)),
    })
}

/// The shared cluster, or `None` (the caller returns: skipped) where PostgreSQL is missing.
/// Under `CI=true` a cluster that cannot start fails the test.
pub fn cluster() -> Option<&'static Cluster> {
    static CLUSTER: OnceLock<Option<Cluster>> = OnceLock::new();
    CLUSTER
        .get_or_init(|| match start_cluster() {
            Ok(cluster) => Some(cluster),
            Err(why) => {
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "CI=true needs PostgreSQL for these tests, and the cluster did not start: {why}"
                );
                eprintln!("PostgreSQL tests skipped: no PostgreSQL cluster here ({why})");
                None
            }
        })
        .as_ref()
}

impl Cluster {
    /// A new, empty database; returns its URL.
    pub fn database(&self, hint: &str) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!("{hint}_{}", NEXT.fetch_add(1, Ordering::SeqCst));
        self.sql("postgres", &format!("CREATE DATABASE {name}"));
        format!("{}/{name}", self.base)
    }

    /// Runs `sql` on `database` (as the cluster's owner) and returns the rows as text.
    pub fn sql(&self, database: &str, sql: &str) -> Vec<Vec<Option<String>>> {
        let mut client =
            postgres::Client::connect(&format!("{}/{database}", self.base), postgres::NoTls)
                .unwrap();
        client
            .simple_query(sql)
            .unwrap()
            .into_iter()
            .filter_map(|m| match m {
                postgres::SimpleQueryMessage::Row(row) => Some(
                    (0..row.len())
                        .map(|i| row.get(i).map(str::to_owned))
                        .collect(),
                ),
                _ => None,
            })
            .collect()
    }

    fn port(&self) -> &str {
        self.base.rsplit(':').next().unwrap()
    }

    /// Runs `pg_ctl` on the cluster (as its owner). The server it starts logs to the
    /// cluster's file and holds none of our pipes.
    fn pg_ctl(&self, action: &str) {
        let data = self.dir.join("data");
        let log = self.dir.join("server.log");
        let mut command = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"])
                .arg(self.bin.join("pg_ctl"));
            c
        } else {
            Command::new(self.bin.join("pg_ctl"))
        };
        let status = command
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(&log)
            // -t: a hang guard, far beyond the second a restart takes here.
            .args(["-w", "-t", "300", "-m", "fast", action])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "pg_ctl {action}");
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

fn flota(args: &[&str]) -> Output {
    Command::new(flota_bin()).args(args).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Simulates the shipped scenario `name` at its `--ahora` into `url`, truth log in `dir`.
fn simulate_into(name: &str, url: &str, dir: &Path) {
    let truth = dir.join(format!("{name}.verdad.jsonl"));
    let out = flota(&[
        "simular",
        scenario_path(name).to_str().unwrap(),
        "--ahora",
        ahora_of(name),
        "--salida",
        url,
        "--verdad",
        truth.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A served database: every answer whole (`result`, errors included).
struct Served {
    server: Server,
    next: i64,
}

impl Served {
    fn new(db: &str, extra: &[&str]) -> Served {
        let mut args = vec!["servir", "--db", db];
        args.extend_from_slice(extra);
        let mut server = Server::spawn(flota_bin(), &args);
        server.initialize("2025-11-25");
        Served { server, next: 1 }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.next += 1;
        let answer = self.server.call(self.next, tool, arguments);
        assert!(answer.get("error").is_none(), "{tool}: {answer}");
        answer["result"].clone()
    }
}

/// Every tool over every unit, fence and day of the data set at `db` (a SQLite file), with
/// the date words and ranges the tools take.
fn every_call(db: &Path) -> Vec<(&'static str, Value)> {
    let store = flota::store::Store::open(db).unwrap();
    let meta = store.meta().unwrap();
    let plates: Vec<String> = store
        .vehicles()
        .unwrap()
        .into_iter()
        .map(|v| v.plate)
        .collect();
    let fences: Vec<String> = store
        .fences()
        .unwrap()
        .into_iter()
        .map(|f| f.fence.name)
        .collect();
    let (from, to) = (meta.from_date.unwrap(), meta.to_date.unwrap());
    let mut days: Vec<String> = from
        .iter_days()
        .take_while(|d| *d <= to)
        .map(|d| d.to_string())
        .collect();
    days.extend(["hoy", "ayer"].map(str::to_owned));
    let mut calls = vec![
        ("unidades_detenidas", json!({})),
        ("unidades_detenidas", json!({"minutos_minimos": 0})),
        ("mapa_flota", json!({})),
        (
            "reporte_kilometraje",
            json!({"fecha_inicio": from.to_string(), "fecha_fin": to.to_string()}),
        ),
        (
            "reporte_kilometraje",
            json!({"fecha_inicio": "ayer", "fecha_fin": "hoy"}),
        ),
        (
            "alertas",
            json!({"fecha_inicio": from.to_string(), "fecha_fin": to.to_string()}),
        ),
    ];
    for kind in [
        "exceso_velocidad",
        "parada_prolongada",
        "perdida_senal",
        "geocerca_entrada",
        "geocerca_salida",
    ] {
        calls.push((
            "alertas",
            json!({"tipo": kind, "fecha_inicio": from.to_string(), "fecha_fin": to.to_string()}),
        ));
    }
    // Maps and fence checks on two days (a map is drawn whole on both sides: slow in debug).
    let some_days = [from.to_string(), "ayer".to_owned()];
    for plate in &plates {
        calls.push(("posicion_actual", json!({"placa": plate})));
        for day in &days {
            calls.push(("resumen_recorrido", json!({"placa": plate, "fecha": day})));
        }
        for day in &some_days {
            calls.push(("mapa_recorrido", json!({"placa": plate, "fecha": day})));
            for fence in fences.iter().take(2) {
                calls.push((
                    "verificar_geocerca",
                    json!({"placa": plate, "nombre_geocerca": fence, "fecha": day}),
                ));
            }
        }
    }
    calls
}

fn same_answers_on_both(name: &'static str) {
    let Some(pg) = cluster() else { return };
    let sqlite = fixture(name);
    let url = pg.database(name);
    let dir = tempfile::tempdir().unwrap();
    simulate_into(name, &url, dir.path());
    let calls = every_call(&sqlite.db);
    let mut on_sqlite = Served::new(sqlite.db.to_str().unwrap(), &[]);
    let mut on_pg = Served::new(&url, &[]);
    let mut answered = 0;
    for (tool, arguments) in &calls {
        let expected = on_sqlite.call(tool, arguments.clone());
        let actual = on_pg.call(tool, arguments.clone());
        assert_eq!(actual, expected, "{name}: {tool} {arguments}");
        answered += usize::from(expected["isError"] != true);
    }
    // Most calls have data: the comparison is of answers, not of errors.
    assert!(answered * 2 > calls.len(), "{answered} of {}", calls.len());
}

#[test]
fn every_tool_answers_alike_on_sqlite_and_postgres_minimo() {
    same_answers_on_both("minimo");
}

#[test]
fn every_tool_answers_alike_on_sqlite_and_postgres_semana() {
    same_answers_on_both("semana");
}

/// Adds a unit that never reported to the database at `at` (SQLite path or URL).
fn add_silent_unit(at: &str) {
    let location = flota::store::Location::parse(Path::new(at)).unwrap();
    let store = flota::store::Store::open_live(location).unwrap();
    let tx = store.begin_live().unwrap();
    tx.register_vehicle("SIN-000", 60.0, chrono_tz::America::Guatemala)
        .unwrap();
    tx.commit_logged().unwrap();
}

/// The fleet-wide answers (one statement per question) against the per-unit ones, for every
/// unit at instants before the data (every fix after "now"), across it and at its end; `at`
/// holds a unit without any fix. Returns how many answers of each question were found (so the
/// caller sees the comparison was not of empty lists) and every question that differed.
fn fleet_answers_against_per_unit_ones(at: &str) -> ([usize; 3], Vec<String>) {
    let location = flota::store::Location::parse(Path::new(at)).unwrap();
    let store = flota::store::Store::open(location).unwrap();
    let vehicles = store.vehicles().unwrap();
    assert!(vehicles.iter().any(|v| v.plate == "SIN-000"), "{at}");
    let (mut first, mut last) = (i64::MAX, i64::MIN);
    for v in &vehicles {
        let fixes = store.fixes(v.id, i64::MIN, i64::MAX).unwrap();
        if let (Some(a), Some(b)) = (fixes.first(), fixes.last()) {
            first = first.min(a.ts_utc);
            last = last.max(b.ts_utc);
        }
    }
    let step = ((last - first) / 60).max(1);
    let mut nows: Vec<i64> = (0..=60).map(|i| first + i * step).collect();
    nows.extend([first - 3_600, first, last, last + 86_400 * 2]);
    let lookback = 7 * 86_400;
    let mut found = [0; 3];
    let mut differ = std::collections::BTreeSet::new();
    for now in nows {
        let fixes: Vec<_> = (vehicles.iter())
            .filter_map(|v| Some((v.id, store.last_fix(v.id, now).unwrap()?)))
            .collect();
        if store.last_fixes(now).unwrap() != fixes {
            differ.insert(format!("{at}: last_fixes"));
        }
        let stops: Vec<_> = (vehicles.iter())
            .filter_map(|v| store.stop_at(v.id, now).unwrap())
            .collect();
        if store.stops_under_way(now).unwrap() != stops {
            differ.insert(format!("{at}: stops_under_way"));
        }
        let ends: Vec<_> = (vehicles.iter())
            .filter_map(|v| {
                Some((
                    v.id,
                    store.last_stop_end(v.id, now - lookback, now).unwrap()?,
                ))
            })
            .collect();
        if store.last_stop_ends(now - lookback, now).unwrap() != ends {
            differ.insert(format!("{at}: last_stop_ends"));
        }
        found[0] += fixes.len();
        found[1] += stops.len();
        found[2] += ends.len();
    }
    (found, differ.into_iter().collect())
}

#[test]
fn the_fleet_at_once_is_each_unit_in_turn_on_both_backends() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("minimo.db");
    std::fs::copy(&fixture("minimo").db, &copy).unwrap();
    let copy = copy.to_str().unwrap().to_owned();
    add_silent_unit(&copy);
    let mut places = vec![copy];
    if let Some(pg) = cluster() {
        let url = pg.database("flota_entera");
        simulate_into("minimo", &url, dir.path());
        add_silent_unit(&url);
        places.push(url);
    }
    let mut differ = Vec::new();
    for at in &places {
        let ([fixes, stops, ends], wrong) = fleet_answers_against_per_unit_ones(at);
        assert!(
            fixes > 0 && stops > 0 && ends > 0,
            "{at}: {fixes} {stops} {ends}"
        );
        differ.extend(wrong);
    }
    assert!(differ.is_empty(), "{differ:#?}");
}

fn database_name(url: &str) -> &str {
    url.rsplit('/').next().unwrap()
}

/// Waits (bounded) until `sql` on `database` returns `true`.
fn wait_for(pg: &Cluster, database: &str, sql: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while pg.sql(database, sql)[0][0].as_deref() != Some("t") {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `flota simular` of the shipped scenario `name` into `url`, started and left running.
fn spawn_load(name: &str, url: &str, dir: &Path) -> Child {
    let truth = dir.join(format!("{name}.verdad.jsonl"));
    Command::new(flota_bin())
        .args(["simular", scenario_path(name).to_str().unwrap()])
        .args(["--ahora", ahora_of(name), "--salida", url])
        .args(["--verdad", truth.to_str().unwrap()])
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits until a load into `name` is copying positions (on any of its connections).
fn wait_for_copy(pg: &Cluster, name: &str) {
    wait_for(
        pg,
        name,
        &format!(
            "SELECT count(*) > 0 FROM pg_stat_activity WHERE datname = '{name}' AND application_name = 'flota' AND query LIKE 'COPY posiciones%'"
        ),
        "the load to start",
    );
}

/// The staging schemas in `name` (`flota_nueva_…`).
fn staging_schemas(pg: &Cluster, name: &str) -> Vec<String> {
    pg.sql(
        name,
        "SELECT nspname::text FROM pg_namespace WHERE starts_with(nspname, 'flota_nueva_') ORDER BY 1",
    )
    .into_iter()
    .filter_map(|row| row[0].clone())
    .collect()
}

#[test]
fn simular_killed_mid_load_leaves_the_previous_data() {
    let Some(pg) = cluster() else { return };
    let url = pg.database("matado");
    let name = database_name(&url).to_owned();
    let dir = tempfile::tempdir().unwrap();
    simulate_into("minimo", &url, dir.path());
    let count = "SELECT count(*)::text FROM flota.posiciones";
    let before = pg.sql(&name, count);
    let mut served = Served::new(&url, &[]);
    let answer = served.call("posicion_actual", json!({"placa": "P-123BCD"}));
    assert_ne!(answer["isError"], true, "{answer}");

    // The week into the same database, killed while it copies positions.
    let mut child = spawn_load("semana", &url, dir.path());
    wait_for_copy(pg, &name);
    child.kill().unwrap();
    child.wait().unwrap();
    // The server rolls back the statements in flight and lets the load's lock go as soon as it
    // sees the connections gone.
    wait_for(
        pg,
        &name,
        &format!(
            "SELECT count(*) = 0 FROM pg_stat_activity WHERE datname = '{name}' AND application_name = 'flota' AND query LIKE 'COPY%'"
        ),
        "the load to end",
    );
    wait_for(
        pg,
        &name,
        &format!(
            "SELECT count(*) = 0 FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND classid = {LOAD_LOCK}"
        ),
        "the load's lock to go",
    );
    assert_eq!(pg.sql(&name, count), before);
    assert_eq!(
        served.call("posicion_actual", json!({"placa": "P-123BCD"})),
        answer
    );
    // What the dead load had copied stays in its staging schema, out of the readers' way...
    let dead = staging_schemas(pg, &name);
    assert_eq!(dead.len(), 1, "{dead:?}");

    // ...until the next load, which drops it. A load still running keeps its own: one
    // stands in, a staging schema whose advisory lock (the loads' class, its token) this
    // test holds, as a live load does.
    let mut holder =
        postgres::Client::connect(&format!("{}/{name}", pg.base), postgres::NoTls).unwrap();
    holder
        .batch_execute(&format!(
            "SELECT pg_advisory_lock({LOAD_LOCK}, 12345); CREATE SCHEMA flota_nueva_1_12345;"
        ))
        .unwrap();
    simulate_into("minimo", &url, dir.path());
    assert_eq!(pg.sql(&name, count), before);
    assert_eq!(staging_schemas(pg, &name), ["flota_nueva_1_12345"]);
    drop(holder);
    simulate_into("minimo", &url, dir.path());
    assert!(staging_schemas(pg, &name).is_empty());
    assert_eq!(pg.sql(&name, count), before);
    assert_eq!(
        served.call("posicion_actual", json!({"placa": "P-123BCD"})),
        answer
    );
}

/// The advisory lock class a load holds while it builds its staging schema (src/store/pg/
/// write.rs: `LOAD_LOCK`, "flot").
const LOAD_LOCK: i32 = 0x666c_6f74;

/// `flota evaluar --json` of `db`, without the fields that name the files.
fn evaluation(db: &str, truth: &Path) -> Value {
    let out = flota(&["evaluar", db, "--verdad", truth.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut value: Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in ["base", "verdad", "registro_verdad"] {
        value.as_object_mut().unwrap().remove(key);
    }
    value
}

#[test]
fn analizar_evaluar_and_exportar_agree_with_sqlite() {
    let Some(pg) = cluster() else { return };
    let sqlite = fixture("minimo");
    let url = pg.database("analizar");
    let dir = tempfile::tempdir().unwrap();
    simulate_into("minimo", &url, dir.path());
    let truth = dir.path().join("minimo.verdad.jsonl");
    let sqlite_truth = sqlite.db.with_extension("verdad.jsonl");
    let expected = evaluation(sqlite.db.to_str().unwrap(), &sqlite_truth);
    assert_eq!(evaluation(&url, &truth), expected);

    let calls = every_call(&sqlite.db);
    let answers = |url: &str| -> Vec<Value> {
        let mut served = Served::new(url, &[]);
        calls
            .iter()
            .filter(|(tool, _)| *tool != "mapa_recorrido")
            .map(|(tool, args)| served.call(tool, args.clone()))
            .collect()
    };
    let before = answers(&url);
    let out = flota(&["analizar", &url]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("eventos en postgres://"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        answers(&url),
        before,
        "analizar rewrote the same detections"
    );
    assert_eq!(evaluation(&url, &truth), expected);

    let export = |db: &str| {
        let out = flota(&[
            "exportar",
            "--db",
            db,
            "--placa",
            "P-456DEF",
            "--fecha",
            "ayer",
            "--formato",
            "geojson",
            "--salida",
            "-",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        out.stdout
    };
    assert_eq!(export(&url), export(sqlite.db.to_str().unwrap()));
}

/// The tool error a server on `db` gives for any call.
fn tool_error(db: &str) -> String {
    let mut served = Served::new(db, &[]);
    let answer = served.call("posicion_actual", json!({"placa": "P-123BCD"}));
    assert_eq!(answer["isError"], true, "{answer}");
    answer["content"][0]["text"].as_str().unwrap().to_owned()
}

#[test]
fn bad_urls_credentials_databases_and_tables_are_said_in_spanish() {
    let Some(pg) = cluster() else { return };
    let empty = pg.database("vacia");
    let port = pg.port();
    let wrong_password = format!("postgres://flota_clave:mala_clave@127.0.0.1:{port}/postgres");
    let missing_database = format!("{}/no_existe", pg.base);
    let nobody_listens = "postgres://flota@127.0.0.1:1/flota".to_owned();
    // (database, what a tool says, and `flota exportar` and `flota analizar` too)
    let cases = [
        (
            wrong_password.as_str(),
            "rechazó el usuario o la contraseña",
        ),
        (
            missing_database.as_str(),
            "la base de datos no_existe no existe en el servidor",
        ),
        (empty.as_str(), "no tiene las tablas de flota"),
        (
            nobody_listens.as_str(),
            "no se pudo conectar con el servidor PostgreSQL",
        ),
    ];
    for (db, words) in cases {
        let said = tool_error(db);
        assert!(said.contains(words), "{db}: {said}");
        assert!(!said.contains("mala_clave"), "{said}");
        for args in [
            vec![
                "exportar",
                "--db",
                db,
                "--placa",
                "P-123BCD",
                "--fecha",
                "hoy",
                "--formato",
                "gpx",
            ],
            vec!["analizar", db],
        ] {
            let out = flota(&args);
            assert_eq!(out.status.code(), Some(1), "{args:?}");
            let said = stderr(&out);
            assert!(said.contains(words), "{args:?}: {said}");
            assert!(!said.contains("mala_clave"), "{said}");
        }
    }
    // A simulation that cannot connect writes nothing, not even its truth log.
    let dir = tempfile::tempdir().unwrap();
    let truth = dir.path().join("t.verdad.jsonl");
    let out = flota(&[
        "simular",
        scenario_path("minimo").to_str().unwrap(),
        "--ahora",
        ahora_of("minimo"),
        "--salida",
        &missing_database,
        "--verdad",
        truth.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no_existe no existe"),
        "{}",
        stderr(&out)
    );
    assert!(!truth.exists());
    // A URL that is not one, wherever a database is named.
    let bad = "postgres://ana:mala_clave@servidor:puerto/flota";
    for args in [
        vec!["servir", "--db", bad],
        vec!["analizar", bad],
        vec!["evaluar", bad],
        vec!["simular", "--salida", bad],
        vec!["importar", "--db", bad, "x.gpx"],
    ] {
        let out = flota(&args);
        let said = stderr(&out);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            said.contains("no es una URL de PostgreSQL válida"),
            "{args:?}: {said}"
        );
        assert!(
            said.contains("el puerto no es un número"),
            "{args:?}: {said}"
        );
        assert!(!said.contains("mala_clave"), "{args:?}: {said}");
    }
}

#[test]
fn a_restarted_server_is_reconnected_and_a_stopped_one_is_said() {
    let Some(_) = cluster() else { return };
    // Its own cluster: restarting the shared one would disturb the other tests.
    let own = start_cluster().unwrap();
    let url = own.database("reinicio");
    let dir = tempfile::tempdir().unwrap();
    simulate_into("minimo", &url, dir.path());
    let mut served = Served::new(&url, &[]);
    let call = json!({"placa": "P-123BCD"});
    let answer = served.call("posicion_actual", call.clone());
    assert_ne!(answer["isError"], true, "{answer}");
    own.pg_ctl("restart");
    assert_eq!(served.call("posicion_actual", call.clone()), answer);
    own.pg_ctl("stop");
    let down = served.call("posicion_actual", call.clone());
    let said = down["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(down["isError"], true, "{down}");
    assert!(
        said.contains("no se pudo conectar con el servidor PostgreSQL"),
        "{said}"
    );
    own.pg_ctl("start");
    assert_eq!(served.call("posicion_actual", call), answer);
}

#[test]
fn a_cancelled_call_cancels_its_statement_on_the_server() {
    let Some(pg) = cluster() else { return };
    let url = pg.database("cancelar");
    let name = database_name(&url).to_owned();
    let dir = tempfile::tempdir().unwrap();
    simulate_into("minimo", &url, dir.path());
    let mut served = Served::new(&url, &["--limite-llamada", "0"]);
    // Load the fleet first, then hold the detections so the next call waits on them.
    let answer = served.call("unidades_detenidas", json!({}));
    assert_ne!(answer["isError"], true, "{answer}");
    let mut locker = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    locker
        .batch_execute("BEGIN; LOCK TABLE flota.eventos IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    served.server.send_json(&json!({
        "jsonrpc": "2.0", "id": "esperando", "method": "tools/call",
        "params": {"name": "posicion_actual", "arguments": {"placa": "P-123BCD"}}
    }));
    let waiting = format!(
        "SELECT count(*) > 0 FROM pg_stat_activity WHERE datname = '{name}' AND application_name = 'flota' AND wait_event_type = 'Lock'"
    );
    wait_for(pg, &name, &waiting, "the call to wait on the lock");
    served.server.send_json(&json!({
        "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "esperando"}
    }));
    // The statement ends on the server while the lock is still held.
    let gone = format!(
        "SELECT count(*) = 0 FROM pg_stat_activity WHERE datname = '{name}' AND application_name = 'flota' AND wait_event_type = 'Lock'"
    );
    wait_for(pg, &name, &gone, "the cancelled statement to end");
    locker.batch_execute("ROLLBACK").unwrap();
    let again = served.call("unidades_detenidas", json!({}));
    assert_eq!(again, answer);
}

/// Reports of three units over an hour ending two hours ago, as OsmAnd queries: driving,
/// then stopped with the ignition off; unit 2 reports each fix twice.
fn live_reports() -> Vec<String> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let t0 = now - 3 * 3600;
    let mut queries = Vec::new();
    for i in 0..60 {
        for unit in 1..=3 {
            let moving = i < 35;
            let lat = 14.6 + if moving { 0.002 * i as f64 } else { 0.07 } + 0.01 * unit as f64;
            let query = format!(
                "id=P-90{unit}ABC&timestamp={}&lat={lat:.6}&lon=-90.5&speed={}&ignition={}",
                t0 + 60 * i,
                if moving { 20 } else { 0 },
                moving
            );
            if unit == 2 {
                queries.push(query.clone());
            }
            queries.push(query);
        }
    }
    queries
}

/// Sends `queries` to `receivers` in turn (each query to one, round robin); all 200.
fn deliver(receivers: &[&crate::receive::Receiver], queries: &[String]) {
    for (i, query) in queries.iter().enumerate() {
        let answer = receivers[i % receivers.len()].get(query);
        assert_eq!(
            answer.as_ref().map(|a| a.0),
            Some(200),
            "{query}: {answer:?}"
        );
    }
}

fn stop(receiver: crate::receive::Receiver) {
    receiver.signal(rustix::process::Signal::TERM);
    assert!(receiver.wait().success());
}

const LIVE_FLAGS: [&str; 3] = ["--registrar-desconocidas", "--zona", "America/Guatemala"];

const POSITIONS_BY_PLATE: &str = "SELECT v.placa, p.ts_utc, p.lat_e6, p.lon_e6, p.velocidad_kmh, p.ignicion FROM posiciones p JOIN vehiculos v ON v.id = p.vehiculo_id ORDER BY 1, 2";
const EVENTS_BY_PLATE: &str = "SELECT v.placa, e.tipo, e.inicio_utc, e.fin_utc, e.lat, e.lon, e.prolongada, e.primer_reporte_utc, e.ultimo_reporte_utc, e.reportes, CAST(round(e.medida * 1000) AS BIGINT), e.umbral, e.umbral_valor FROM eventos e JOIN vehiculos v ON v.id = e.vehiculo_id ORDER BY 1, 2, 3";
const DAYS_BY_PLATE: &str = "SELECT v.placa, d.fecha, d.km, d.reportes, d.paradas FROM resumen_diario d JOIN vehiculos v ON v.id = d.vehiculo_id ORDER BY 1, 2";

/// `posiciones`, `eventos` (without ids) and `resumen_diario` of a PostgreSQL database by
/// plate, as text.
fn pg_tables(pg: &Cluster, database: &str) -> [Vec<Vec<Option<String>>>; 3] {
    [POSITIONS_BY_PLATE, EVENTS_BY_PLATE, DAYS_BY_PLATE]
        .map(|sql| pg.sql(database, &format!("SET search_path = flota; {sql}")))
}

/// The same tables of a SQLite file, as PostgreSQL's text would show them.
fn sqlite_tables(db: &Path) -> [Vec<Vec<Option<String>>>; 3] {
    let conn = rusqlite::Connection::open(db).unwrap();
    let rows = |sql: &str| -> Vec<Vec<Option<String>>> {
        let mut stmt = conn.prepare(sql).unwrap();
        let n = stmt.column_count();
        stmt.query_map([], |r| {
            Ok((0..n)
                .map(|i| match r.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Null => None,
                    rusqlite::types::ValueRef::Integer(v) => Some(v.to_string()),
                    rusqlite::types::ValueRef::Real(v) => Some(v.to_string()),
                    rusqlite::types::ValueRef::Text(t) => {
                        Some(String::from_utf8_lossy(t).into_owned())
                    }
                    rusqlite::types::ValueRef::Blob(_) => None,
                })
                .collect())
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    };
    [POSITIONS_BY_PLATE, EVENTS_BY_PLATE, DAYS_BY_PLATE].map(rows)
}

/// Whether the detections of `db` are current (every position analysed).
fn current(db: &str) -> bool {
    let store =
        flota::store::Store::open(flota::store::Location::parse(Path::new(db)).unwrap()).unwrap();
    let meta = store.meta().unwrap();
    store.analysis_state(&meta).unwrap() == flota::store::AnalysisState::Current
}

#[test]
fn recibir_into_postgres_stores_and_analyses_as_on_sqlite() {
    let Some(pg) = cluster() else { return };
    let url = pg.database("recibida");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("recibida.db");
    let on_sqlite = crate::receive::Receiver::start(&file, &LIVE_FLAGS);
    let on_pg = crate::receive::Receiver::start(&url, &LIVE_FLAGS);
    let queries = live_reports();
    deliver(&[&on_sqlite], &queries);
    deliver(&[&on_pg], &queries);
    stop(on_sqlite);
    stop(on_pg);
    let expected = sqlite_tables(&file);
    assert_eq!(expected[0].len(), 180);
    assert!(!expected[1].is_empty());
    assert_eq!(pg_tables(pg, database_name(&url)), expected);
    assert!(current(&url));
}

#[test]
fn two_receivers_into_one_postgres_database_lose_nothing() {
    let Some(pg) = cluster() else { return };
    let url = pg.database("dos");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("una.db");
    let alone = crate::receive::Receiver::start(&file, &LIVE_FLAGS);
    let first = crate::receive::Receiver::start(&url, &LIVE_FLAGS);
    let second = crate::receive::Receiver::start(&url, &LIVE_FLAGS);
    let queries = live_reports();
    deliver(&[&alone], &queries);
    // Every unit's reports alternate between the two receivers, from two threads at once.
    let halves: Vec<Vec<String>> = (0..2)
        .map(|k| queries.iter().skip(k).step_by(2).cloned().collect())
        .collect();
    std::thread::scope(|s| {
        s.spawn(|| deliver(&[&first], &halves[0]));
        s.spawn(|| deliver(&[&second], &halves[1]));
    });
    stop(alone);
    stop(first);
    stop(second);
    let expected = sqlite_tables(&file);
    let got = pg_tables(pg, database_name(&url));
    // Same positions (repeats dropped), and the detections a single receiver makes.
    assert_eq!(got[0], expected[0]);
    assert_eq!(got[1], expected[1]);
    assert_eq!(got[2], expected[2]);
    assert!(current(&url));
}

/// A receiver's batch of positions goes in as one statement: a repeat within the batch or of
/// a stored fix is a duplicate (the first kept), and the change log, logged once per
/// statement, counts every stored row. The last fix at a time is then found whichever day
/// holds it (the read looks in the day before that time first).
#[test]
fn a_batch_of_positions_drops_repeats_within_it_and_against_stored_rows() {
    use flota::store::{Location, NewDatabase, Store, StoredRow};
    let Some(pg) = cluster() else { return };
    let url = pg.database("lote");
    let at = Location::parse(Path::new(&url)).unwrap();
    let t0: i64 = 1_767_225_600 + 3600;
    let new = NewDatabase {
        zone: chrono_tz::UTC,
        config: flota::engine::DetectionConfig::default(),
        fleet_limit_kmh: 90.0,
        now_utc: t0,
    };
    assert!(Store::create_live_on_server(&at, &new).unwrap());
    let store = Store::open_live(at).unwrap();
    let database = database_name(&url);
    let text = |v: i64| Some(v.to_string());
    // Logged per statement, not per row (tgtype's bit 0 is FOR EACH ROW).
    assert_eq!(
        pg.sql(
            database,
            "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'cambios\\_%\\_insercion' AND tgtype & 1 = 0"
        ),
        [[text(3)]]
    );
    let row = |lat_e6| StoredRow {
        delay_s: 0,
        lat_e6,
        lon_e6: -90_500_000,
        speed_kmh: 20.0,
        heading_deg: 0,
        ignition: true,
        odometer_m: -1,
    };
    let (a, b, c) = (row(14_600_000), row(14_700_000), row(14_800_000));
    let tx = store.begin_live().unwrap();
    let one = tx.register_vehicle("P-1", 90.0, chrono_tz::UTC).unwrap();
    let two = tx.register_vehicle("P-2", 90.0, chrono_tz::UTC).unwrap();
    let stored = tx
        .insert_all(&[
            (one, t0, &a),
            (two, t0, &a),
            (one, t0, &b),
            (one, t0 + 86_400, &a),
        ])
        .unwrap();
    assert_eq!(stored, [true, true, false, true]);
    tx.commit_logged().unwrap();
    let tx = store.begin_live().unwrap();
    let stored = tx
        .insert_all(&[(one, t0, &c), (two, t0 + 1, &c), (two, t0 + 1, &b)])
        .unwrap();
    assert_eq!(stored, [false, true, false]);
    tx.commit_logged().unwrap();
    assert_eq!(
        pg.sql(
            database,
            "SELECT vehiculo_id, ts_utc, lat_e6 FROM flota.posiciones ORDER BY 1, 2"
        ),
        [
            [text(one), text(t0), text(a.lat_e6)],
            [text(one), text(t0 + 86_400), text(a.lat_e6)],
            [text(two), text(t0), text(a.lat_e6)],
            [text(two), text(t0 + 1), text(c.lat_e6)],
        ]
    );
    assert_eq!(
        pg.sql(
            database,
            "SELECT vehiculo_id, filas FROM flota.cambios_desde_analisis WHERE tabla = 'posiciones' ORDER BY 1"
        ),
        [[text(one), text(2)], [text(two), text(2)]]
    );
    // The newest fix at a time: in the day before it, or further back when that day has none.
    let last = |at_utc: i64| store.last_fix(one, at_utc).unwrap().map(|f| f.ts_utc);
    assert_eq!(last(t0 + 86_400), Some(t0 + 86_400));
    assert_eq!(last(t0 + 86_399), Some(t0));
    assert_eq!(last(t0 + 10 * 86_400), Some(t0 + 86_400));
    assert_eq!(last(t0 - 1), None);
}

#[test]
fn importar_into_postgres_stores_and_analyses_as_on_sqlite() {
    let Some(pg) = cluster() else { return };
    let url = pg.database("importada");
    let dir = tempfile::tempdir().unwrap();
    let gpx = dir.path().join("ruta.gpx");
    let mut text = String::from(
        r#"<?xml version="1.0"?><gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg>"#,
    );
    for i in 0..240 {
        let lat = 14.6 + if i < 150 { 0.0011 * i as f64 } else { 0.165 };
        let t = chrono::DateTime::from_timestamp(1_767_225_600 + 15 * i, 0).unwrap();
        text.push_str(&format!(
            r#"<trkpt lat="{lat:.6}" lon="-90.5"><time>{}</time></trkpt>"#,
            t.format("%Y-%m-%dT%H:%M:%SZ")
        ));
    }
    text.push_str("</trkseg></trk></gpx>");
    std::fs::write(&gpx, text).unwrap();
    let file = dir.path().join("importada.db");
    for db in [file.to_str().unwrap(), &url] {
        for _ in 0..2 {
            let out = flota(&[
                "importar",
                gpx.to_str().unwrap(),
                "--placa",
                "P-777XYZ",
                "--zona",
                "America/Guatemala",
                "--db",
                db,
            ]);
            assert!(out.status.success(), "{db}: {}", stderr(&out));
        }
    }
    let expected = open_measures_blanked(sqlite_tables(&file));
    assert_eq!(expected[0].len(), 240);
    assert!(!expected[1].is_empty());
    assert_eq!(
        open_measures_blanked(pg_tables(pg, database_name(&url))),
        expected
    );
    assert!(current(&url));
}

/// The tables with the measure of events still open blanked: an open signal loss measures
/// its silence up to the wall clock's "now", which is another second for each import.
fn open_measures_blanked(
    mut tables: [Vec<Vec<Option<String>>>; 3],
) -> [Vec<Vec<Option<String>>>; 3] {
    const END: usize = 3;
    const MEASURE: usize = 10;
    for row in &mut tables[1] {
        if row[END].is_none() {
            row[MEASURE] = None;
        }
    }
    tables
}

#[test]
fn a_postgres_database_missing_some_tables_is_named_and_left_untouched() {
    let Some(pg) = cluster() else { return };
    let url = pg.database("incompleta");
    let database = database_name(&url).to_owned();
    let dir = tempfile::tempdir().unwrap();
    let gpx = dir.path().join("t.gpx");
    std::fs::write(
        &gpx,
        r#"<?xml version="1.0"?><gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg><trkpt lat="14.6" lon="-90.5"><time>2026-01-01T10:00:00Z</time></trkpt></trkseg></trk></gpx>"#,
    )
    .unwrap();
    let import = |placa: &str| {
        flota(&[
            "importar",
            gpx.to_str().unwrap(),
            "--placa",
            placa,
            "--db",
            &url,
        ])
    };
    assert!(import("P-1").status.success());
    pg.sql(&database, "DROP TABLE flota.paradas, flota.rutas");
    let state = "SELECT (SELECT count(*) FROM flota.posiciones), (SELECT count(*) FROM flota.vehiculos), (SELECT last_value FROM flota.escrituras_en_vivo)";
    let before = pg.sql(&database, state);
    let out = import("P-2");
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("le faltan las tablas rutas, paradas"),
        "{}",
        stderr(&out)
    );
    let out = flota(&["recibir", "--escuchar", "127.0.0.1:0", "--db", &url]);
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("le faltan las tablas rutas, paradas"),
        "{}",
        stderr(&out)
    );
    assert_eq!(pg.sql(&database, state), before);
}
/// A PostgreSQL database analysed before the evidence columns existed: `flota analizar` adds
/// them and rewrites `eventos`; the tools then serve evidence.
#[test]
fn analizar_upgrades_a_database_from_before_the_evidence() {
    let Some(pg) = cluster() else { return };
    let url = pg.database("antigua");
    let dir = tempfile::tempdir().unwrap();
    simulate_into("minimo", &url, dir.path());
    pg.sql(
        database_name(&url),
        "ALTER TABLE flota.eventos DROP COLUMN primer_reporte_utc, DROP COLUMN ultimo_reporte_utc,
             DROP COLUMN reportes, DROP COLUMN medida, DROP COLUMN umbral, DROP COLUMN umbral_valor;
         UPDATE flota.meta SET valor = '4' WHERE clave = 'analisis_version';",
    );
    let out = flota(&["analizar", &url]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut served = Served::new(&url, &[]);
    let answer = served.call(
        "resumen_recorrido",
        json!({"placa": "P-456DEF", "fecha": "ayer"}),
    );
    let stops = answer["structuredContent"]["paradas"].as_array().unwrap();
    assert!(!stops.is_empty(), "{answer}");
    for stop in stops {
        assert!(
            stop["evidencia"]["reportes"].as_i64().unwrap() > 0,
            "{stop}"
        );
    }
}

/// Entries or exits per vehicle in `[from, to)` counted straight from `eventos`.
fn crossings_counted(
    pg: &Cluster,
    database: &str,
    exits: bool,
    from: i64,
    to: i64,
) -> Vec<(i64, usize)> {
    let (ts, entries_only) = if exits {
        ("fin_utc", "")
    } else {
        ("inicio_utc", " AND desde_inicio_datos = 0")
    };
    pg.sql(
        database,
        &format!(
            "SELECT vehiculo_id, count(*) FROM flota.eventos WHERE tipo = 'visita_geocerca'{entries_only}
             AND {ts} >= {from} AND {ts} < {to} GROUP BY 1 ORDER BY 1"
        ),
    )
    .into_iter()
    .map(|r| {
        let n = |i: usize| r[i].as_deref().unwrap().parse::<i64>().unwrap();
        (n(0), n(1) as usize)
    })
    .collect()
}

/// Asserts that the store's crossings per vehicle agree with `expected` (a direct count over
/// the events) on every range of [`crossing_ranges`] within `lo..hi`, entries and exits, and
/// that the ranges did meet crossings (an empty agreement proves nothing). Shared by the
/// SQLite and the PostgreSQL tests of the per-day table.
pub fn assert_crossings_agree(
    store: &flota::store::Store,
    lo: i64,
    hi: i64,
    when: &str,
    expected: impl Fn(bool, i64, i64) -> Vec<(i64, usize)>,
) {
    let mut nonempty = 0;
    for (from, to) in crossing_ranges(lo, hi) {
        for exits in [false, true] {
            let counted = expected(exits, from, to);
            nonempty += usize::from(!counted.is_empty());
            assert_eq!(
                store.crossings_by_vehicle(exits, from, to).unwrap(),
                counted,
                "{when}: exits {exits}, [{from}, {to})"
            );
        }
    }
    assert!(
        nonempty > 40,
        "{when}: only {nonempty} ranges with crossings"
    );
}

/// Every range `crossings_per_day_count_as_the_events_do` asks about: day-aligned and not,
/// within one day, across the data's ends, empty.
pub fn crossing_ranges(lo: i64, hi: i64) -> Vec<(i64, i64)> {
    const DAY: i64 = 86_400;
    let first_day = lo.div_euclid(DAY) * DAY;
    let mut ranges = vec![
        (lo - 2 * DAY, hi + 2 * DAY),
        (first_day, first_day + 3 * DAY),
        (first_day + DAY, first_day + 2 * DAY),
        (first_day + DAY + 1, first_day + 2 * DAY - 1),
        (first_day + DAY - 3_600, first_day + 3 * DAY + 7_200),
        (first_day + 2 * DAY + 5_400, first_day + 2 * DAY + 9_000),
        (hi - 1, hi + 1),
        (lo, lo),
    ];
    // And pseudo-random ones over the data and a day either side (a fixed LCG).
    let mut state: u64 = 0x5eed_0007;
    let mut next = |span: i64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) as i64).rem_euclid(span)
    };
    for _ in 0..40 {
        let from = lo - DAY + next(hi - lo + 2 * DAY);
        let to = from + next(5 * DAY);
        ranges.push((from, to));
    }
    ranges
}

#[test]
fn crossings_per_day_count_as_the_events_do() {
    use flota::store::{Location, Store};
    let Some(pg) = cluster() else { return };
    let url = pg.database("cruces");
    let database = database_name(&url).to_owned();
    let dir = tempfile::tempdir().unwrap();
    // Own seed, a fleet in two zones: day ends that are not UTC midnights.
    let truth = dir.path().join("verdad.jsonl");
    let out = flota(&[
        "simular",
        scenario_path("dos_zonas").to_str().unwrap(),
        "--ahora",
        ahora_of("dos_zonas"),
        "--semilla",
        "4242",
        "--salida",
        &url,
        "--verdad",
        truth.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let span = pg.sql(
        &database,
        "SELECT min(inicio_utc), max(fin_utc) FROM flota.eventos WHERE tipo = 'visita_geocerca'",
    );
    let bound = |i: usize| span[0][i].as_deref().unwrap().parse::<i64>().unwrap();
    let (lo, hi) = (bound(0), bound(1));
    let store = Store::open(Location::parse(Path::new(&url)).unwrap()).unwrap();
    let check = |when: &str| {
        assert_crossings_agree(&store, lo, hi, when, |exits, from, to| {
            crossings_counted(pg, &database, exits, from, to)
        })
    };
    let summed = |column: &str| {
        pg.sql(
            &database,
            &format!("SELECT coalesce(sum({column}), 0) FROM flota.cruces_por_dia"),
        )[0][0]
            .clone()
    };
    let all = |exits| {
        crossings_counted(pg, &database, exits, i64::MIN / 2, i64::MAX / 2)
            .iter()
            .map(|(_, n)| n)
            .sum::<usize>()
            .to_string()
    };
    // Filled by the load: the whole days come from the summary.
    assert_eq!(summed("entradas"), Some(all(false)));
    assert_eq!(summed("salidas"), Some(all(true)));
    check("after simular");
    // Kept by the triggers as rows come, go and change (written by hand here).
    pg.sql(
        &database,
        "DELETE FROM flota.eventos WHERE tipo = 'visita_geocerca' AND id % 7 = 0;
         UPDATE flota.eventos SET fin_utc = fin_utc + 50000 WHERE tipo = 'visita_geocerca' AND id % 11 = 0;
         UPDATE flota.eventos SET fin_utc = NULL WHERE tipo = 'visita_geocerca' AND id % 13 = 0;
         UPDATE flota.eventos SET desde_inicio_datos = 1 - desde_inicio_datos WHERE tipo = 'visita_geocerca' AND id % 17 = 0;
         UPDATE flota.eventos SET tipo = 'parada' WHERE tipo = 'visita_geocerca' AND id % 19 = 0;
         UPDATE flota.eventos SET tipo = 'visita_geocerca' WHERE tipo = 'exceso_velocidad' AND id % 3 = 0;
         INSERT INTO flota.eventos (vehiculo_id, tipo, inicio_utc, fin_utc, lat, lon, desde_inicio_datos)
             SELECT vehiculo_id, tipo, inicio_utc - 40000, fin_utc + 3600, lat, lon, desde_inicio_datos
             FROM flota.eventos WHERE tipo = 'visita_geocerca' AND id % 5 = 0;",
    );
    check("after rows written by hand");
    // Counted afresh by a re-analysis (its bulk write goes with the triggers off).
    let out = flota(&["analizar", &url]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(summed("entradas"), Some(all(false)));
    check("after analizar");
    // A disabled trigger leaves the counts behind: the reader must not trust them then.
    pg.sql(
        &database,
        "ALTER TABLE flota.eventos DISABLE TRIGGER cruces_borrado;
         DELETE FROM flota.eventos WHERE tipo = 'visita_geocerca' AND id % 4 = 0;",
    );
    assert_ne!(summed("entradas"), Some(all(false)));
    check("with a trigger disabled");
}
