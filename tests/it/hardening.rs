//! Hardening: a bad-input matrix through the real server (snapshot), a time limit per call,
//! a client that floods without reading, and faults around the database.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::ground_truth::fixture;
use crate::http_mock::{Mock, Reply};
use crate::support::{Server, flota_bin};

fn call(id: &str, tool: &str, arguments: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
    .to_string()
    .into_bytes()
}

fn line(text: &str) -> Vec<u8> {
    text.as_bytes().to_vec()
}

/// Cuts long lines for the snapshot, keeping their length visible.
fn shorten(text: &str) -> String {
    const MAX: usize = 600;
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut cut = MAX;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes)", &text[..cut], text.len())
}

/// Every case: a name, the bytes sent as one line (the newline is added), and the id of a
/// tool call whose answer to wait for (tool calls run on workers, so a later `ping` may be
/// answered first).
fn cases() -> Vec<(&'static str, Vec<u8>)> {
    let long_plate = "P".repeat(10_000);
    let mut deep = "[".repeat(100_000);
    deep.push_str(&"]".repeat(100_000));
    let deep_object = format!(
        r#"{{"jsonrpc":"2.0","id":"hondo","method":"ping","params":{}1{}}}"#,
        r#"{"a":"#.repeat(100_000),
        "}".repeat(100_000)
    );
    let mut cases: Vec<(&'static str, Vec<u8>)> = vec![
        // The envelope.
        ("json_cortado", line(r#"{"jsonrpc":"2.0","id":1,"method":"#)),
        ("no_es_json", line("hola, ¿me das la posición?")),
        (
            "utf8_invalido",
            [
                &br#"{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":""#[..],
                &[0xff, 0xfe, 0xc3],
                br#""}}"#,
            ]
            .concat(),
        ),
        ("objeto_vacio", line("{}")),
        ("lote_vacio", line("[]")),
        (
            "lote_con_ping",
            line(r#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#),
        ),
        (
            "version_jsonrpc_1",
            line(r#"{"jsonrpc":"1.0","id":4,"method":"ping"}"#),
        ),
        ("sin_jsonrpc", line(r#"{"id":5,"method":"ping"}"#)),
        (
            "id_objeto",
            line(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#),
        ),
        (
            "id_decimal",
            line(r#"{"jsonrpc":"2.0","id":3.5,"method":"ping"}"#),
        ),
        (
            "id_nulo",
            line(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#),
        ),
        (
            "id_enorme",
            line(r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#),
        ),
        (
            "metodo_numero",
            line(r#"{"jsonrpc":"2.0","id":6,"method":42}"#),
        ),
        (
            "metodo_desconocido",
            line(r#"{"jsonrpc":"2.0","id":7,"method":"recursos/listar"}"#),
        ),
        ("anidamiento_profundo", deep.into_bytes()),
        ("anidamiento_profundo_objeto", deep_object.into_bytes()),
        (
            "respuesta_del_cliente",
            line(r#"{"jsonrpc":"2.0","id":99,"result":{}}"#),
        ),
        (
            "notificacion_desconocida",
            line(r#"{"jsonrpc":"2.0","method":"notifications/otra"}"#),
        ),
        (
            "cancelacion_de_id_desconocido",
            line(
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nadie"}}"#,
            ),
        ),
        // tools/call itself.
        (
            "params_arreglo",
            line(
                r#"{"jsonrpc":"2.0","id":"p1","method":"tools/call","params":["posicion_actual"]}"#,
            ),
        ),
        (
            "sin_nombre_de_herramienta",
            line(r#"{"jsonrpc":"2.0","id":"p2","method":"tools/call","params":{"arguments":{}}}"#),
        ),
        (
            "herramienta_desconocida",
            call("p3", "borrar_todo", json!({})),
        ),
        (
            "argumentos_texto",
            line(
                r#"{"jsonrpc":"2.0","id":"p4","method":"tools/call","params":{"name":"posicion_actual","arguments":"P-123BCD"}}"#,
            ),
        ),
        // Wrong types and values, argument by argument.
        (
            "placa_numero",
            call("a1", "posicion_actual", json!({"placa": 123})),
        ),
        (
            "placa_nula",
            call("a2", "posicion_actual", json!({"placa": null})),
        ),
        ("placa_ausente", call("a3", "posicion_actual", json!({}))),
        (
            "placa_vacia",
            call("a4", "posicion_actual", json!({"placa": ""})),
        ),
        (
            "placa_enorme",
            call("a5", "posicion_actual", json!({"placa": long_plate})),
        ),
        (
            "placa_unicode",
            call("a6", "posicion_actual", json!({"placa": "P-123BCĎ 🚚"})),
        ),
        (
            "placa_sql",
            call(
                "a7",
                "posicion_actual",
                json!({"placa": "x'; DROP TABLE posiciones;--"}),
            ),
        ),
        (
            "placa_con_nul",
            call("a8", "posicion_actual", json!({"placa": "P-123\u{0}BCD"})),
        ),
        (
            "argumento_extra",
            call(
                "a9",
                "posicion_actual",
                json!({"placa": "P-123BCD", "formato": "xml"}),
            ),
        ),
        (
            "minutos_texto",
            call(
                "b1",
                "unidades_detenidas",
                json!({"minutos_minimos": "treinta"}),
            ),
        ),
        (
            "minutos_negativos",
            call("b2", "unidades_detenidas", json!({"minutos_minimos": -5})),
        ),
        (
            "minutos_enormes",
            call("b3", "unidades_detenidas", json!({"minutos_minimos": 1e15})),
        ),
        (
            "fecha_imposible",
            call(
                "c1",
                "resumen_recorrido",
                json!({"placa": "P-123BCD", "fecha": "2026-02-30"}),
            ),
        ),
        (
            "fecha_futura_lejana",
            call(
                "c2",
                "resumen_recorrido",
                json!({"placa": "P-123BCD", "fecha": "3026-01-01"}),
            ),
        ),
        (
            "fecha_palabra_desconocida",
            call(
                "c3",
                "resumen_recorrido",
                json!({"placa": "P-123BCD", "fecha": "mañana"}),
            ),
        ),
        (
            "fecha_numero",
            call(
                "c4",
                "resumen_recorrido",
                json!({"placa": "P-123BCD", "fecha": 20260818}),
            ),
        ),
        (
            "fecha_sin_datos",
            call(
                "c5",
                "mapa_recorrido",
                json!({"placa": "P-123BCD", "fecha": "1999-01-01"}),
            ),
        ),
        (
            "rango_invertido",
            call(
                "d1",
                "alertas",
                json!({"fecha_inicio": "2026-08-19", "fecha_fin": "2026-08-13"}),
            ),
        ),
        (
            "rango_de_mas_de_92_dias",
            call(
                "d2",
                "alertas",
                json!({"fecha_inicio": "2026-01-01", "fecha_fin": "2026-08-19"}),
            ),
        ),
        (
            "rango_con_palabras_invertido",
            call(
                "d3",
                "reporte_kilometraje",
                json!({"fecha_inicio": "hoy", "fecha_fin": "anteayer"}),
            ),
        ),
        (
            "tipo_de_alerta_desconocido",
            call(
                "d4",
                "alertas",
                json!({"fecha_inicio": "ayer", "fecha_fin": "hoy", "tipo": "incendio"}),
            ),
        ),
        (
            "fecha_inicio_lista",
            call(
                "d5",
                "alertas",
                json!({"fecha_inicio": ["2026-08-13"], "fecha_fin": "hoy"}),
            ),
        ),
        (
            "fecha_fin_booleano",
            call(
                "d6",
                "reporte_kilometraje",
                json!({"fecha_inicio": "ayer", "fecha_fin": true}),
            ),
        ),
        (
            "tipo_objeto",
            call(
                "d7",
                "alertas",
                json!({"fecha_inicio": "ayer", "fecha_fin": "hoy", "tipo": {}}),
            ),
        ),
        (
            "mapa_placa_lista",
            call(
                "d8",
                "mapa_recorrido",
                json!({"placa": ["P-123BCD"], "fecha": "ayer"}),
            ),
        ),
        (
            "geocerca_numero",
            call(
                "d9",
                "verificar_geocerca",
                json!({"placa": "P-123BCD", "nombre_geocerca": 12, "fecha": "ayer"}),
            ),
        ),
        (
            "geocerca_vacia",
            call(
                "e1",
                "verificar_geocerca",
                json!({"placa": "P-123BCD", "nombre_geocerca": "", "fecha": "ayer"}),
            ),
        ),
        (
            "geocerca_sql",
            call(
                "e2",
                "verificar_geocerca",
                json!({"placa": "P-123BCD", "nombre_geocerca": "x' OR '1'='1", "fecha": "ayer"}),
            ),
        ),
        (
            "geocerca_unicode",
            call(
                "e3",
                "verificar_geocerca",
                json!({"placa": "P-123BCD", "nombre_geocerca": "Bodéga Mïxco ☃", "fecha": "ayer"}),
            ),
        ),
        (
            "geocerca_enorme",
            call(
                "e4",
                "verificar_geocerca",
                json!({"placa": "P-123BCD", "nombre_geocerca": "G".repeat(5000), "fecha": "ayer"}),
            ),
        ),
    ];
    // Last: a 50 MB line, which is refused and skipped as it streams by.
    let mut huge =
        br#"{"jsonrpc":"2.0","id":"grande","method":"ping","params":{"relleno":""#.to_vec();
    huge.extend(std::iter::repeat_n(b'x', 50 * 1024 * 1024));
    huge.extend_from_slice(br#""}}"#);
    cases.push(("linea_de_50_mb", huge));
    cases
}

/// The id of a well-formed `tools/call` among `bytes`, whose answer comes from a worker;
/// `None` for anything answered (or not) by the reader, or cancelled.
fn awaited(bytes: &[u8]) -> Option<String> {
    let message: Value = serde_json::from_slice(bytes).ok()?;
    let params = message.get("params")?.as_object()?;
    let arguments_ok = params.get("arguments").is_none_or(Value::is_object);
    (message["method"] == "tools/call"
        && params.get("name").is_some_and(Value::is_string)
        && arguments_ok)
        .then(|| message["id"].as_str().map(str::to_owned))
        .flatten()
}

/// Lines up to the one answering `id`; that one is kept when `keep_last`, else it must be a
/// `ping`'s empty result (the server still serves).
fn lines_until(server: &Server, id: &Value, keep_last: bool) -> Vec<String> {
    let mut lines = Vec::new();
    loop {
        let line = server.recv_line();
        let value: Value = serde_json::from_str(&line).unwrap();
        if value["id"] == *id {
            if keep_last {
                lines.push(line);
            } else {
                assert_eq!(
                    value["result"],
                    json!({}),
                    "the server stopped serving: {line}"
                );
            }
            return lines;
        }
        lines.push(line);
    }
}

#[test]
fn bad_input_matrix() {
    let db = fixture("minimo").db.to_str().unwrap().to_owned();
    // Tiles that never come: the cancelled map below is still loading when cancelled.
    let tiles = Mock::start(|_| Reply::Hang(Duration::from_secs(60)));
    let template = format!("{}/{{z}}/{{x}}/{{y}}.png", tiles.url);
    let mut server = Server::spawn_with_env(
        flota_bin(),
        &["servir", "--db", &db],
        &[("FLOTA_TILES_URL", &template)],
    );
    server.initialize("2025-11-25");
    let mut transcript = String::new();
    let mut cases = cases();
    // A call cancelled while it runs gets no answer at all.
    cases.insert(
        0,
        (
            "llamada_cancelada",
            [
                call("cancelada", "mapa_recorrido", json!({"placa": "P-123BCD", "fecha": "ayer"})),
                b"\n".to_vec(),
                line(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"cancelada","reason":"el usuario cambió de idea"}}"#),
            ]
            .concat(),
        ),
    );
    assert!(cases.len() >= 40, "{} cases", cases.len());
    for (index, (name, bytes)) in cases.iter().enumerate() {
        let mut sent = bytes.clone();
        sent.push(b'\n');
        server.send_bytes(&sent);
        transcript.push_str(&format!("## {name}\n"));
        let mut answers = Vec::new();
        // A tool call's answer comes from a worker: wait for it before the marker.
        if let Some(id) = awaited(bytes) {
            answers.extend(lines_until(&server, &json!(id), true));
        }
        let marker = json!(format!("fin-{index}"));
        server.send_json(&json!({"jsonrpc": "2.0", "id": marker, "method": "ping"}));
        answers.extend(lines_until(&server, &marker, false));
        if answers.is_empty() {
            transcript.push_str("(sin respuesta)\n");
        }
        for answer in answers {
            transcript.push_str(&format!("← {}\n", shorten(&answer)));
        }
        transcript.push('\n');
    }
    // Still serving real questions, and the cancelled map never answered late.
    let answer = server.call(1000, "posicion_actual", json!({"placa": "p 123 bcd"}));
    assert_eq!(answer["result"]["structuredContent"]["placa"], "P-123BCD");
    server.expect_silence(Duration::from_millis(300));
    transcript.push_str(&folder_as_database());
    insta::assert_snapshot!("bad_input_matrix", transcript);
}

/// The matrix's cases for a server whose `--db` names a folder: the instructions and every
/// tool say so in Spanish (SQLite alone says "disk I/O error"), and the server keeps serving.
fn folder_as_database() -> String {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("datos");
    std::fs::create_dir(&folder).unwrap();
    let shown = folder.to_str().unwrap();
    let mut server = Server::spawn(flota_bin(), &["servir", "--db", shown]);
    let mut transcript = String::new();
    let mut record = |name: &str, answer: &Value| {
        let answer = answer.to_string().replace(shown, "[CARPETA]");
        transcript.push_str(&format!("## {name}\n← {}\n\n", shorten(&answer)));
    };
    let init = server.initialize("2025-11-25");
    record("db_carpeta_instrucciones", &init["instructions"]);
    let cases = [
        (
            "db_carpeta_posicion",
            "posicion_actual",
            json!({"placa": "P-123BCD"}),
        ),
        (
            "db_carpeta_alertas",
            "alertas",
            json!({"fecha_inicio": "ayer", "fecha_fin": "hoy"}),
        ),
        (
            "db_carpeta_mapa",
            "mapa_recorrido",
            json!({"placa": "P-123BCD", "fecha": "ayer"}),
        ),
    ];
    for (id, (name, tool, arguments)) in cases.into_iter().enumerate() {
        let answer = server.call(id as i64 + 1, tool, arguments);
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        record(name, &answer);
    }
    server.send(r#"{"jsonrpc":"2.0","id":"vivo","method":"ping"}"#);
    assert_eq!(server.recv()["result"], json!({}));
    transcript
}

#[test]
fn a_call_over_the_time_limit_is_answered_and_cancelled() {
    let db = fixture("minimo").db.to_str().unwrap().to_owned();
    let tiles = Mock::start(|_| Reply::Hang(Duration::from_secs(60)));
    let template = format!("{}/{{z}}/{{x}}/{{y}}.png", tiles.url);
    let mut server = Server::spawn_with_env(
        flota_bin(),
        &["servir", "--db", &db, "--limite-llamada", "0.5"],
        &[("FLOTA_TILES_URL", &template)],
    );
    server.initialize("2025-11-25");
    let answer = server.call(
        1,
        "mapa_recorrido",
        json!({"placa": "P-123BCD", "fecha": "ayer"}),
    );
    // Answered by the limit, not by the 4 s tile deadline: that answer would be the map
    // (no timing assert: a busy machine may take seconds to deliver the limit's answer).
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("'mapa_recorrido' superó el límite de 0.5 s"),
        "{text}"
    );
    // The tool saw the cancellation and stopped; its own answer is never sent.
    server.expect_silence(Duration::from_secs(1));
    let answer = server.call(2, "posicion_actual", json!({"placa": "P-123BCD"}));
    assert_eq!(answer["result"]["isError"], Value::Null, "{answer}");

    // A bad limit is a usage error naming the value.
    let out = Command::new(flota_bin())
        .args(["servir", "--limite-llamada", "-1"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'-1'"));
}

#[test]
fn a_flood_without_reading_is_absorbed_and_fully_answered() {
    let mut server = Command::new(flota_bin());
    server
        .args(["servir", "--db", fixture("minimo").db.to_str().unwrap()])
        .env("FLOTA_TILES_URL", "no");
    let report = crate::flood::flood(server, 10_000);
    assert_eq!(report.answered, 10_000);
    // At the cap the server stops reading until a slot frees, so a flood of quick calls is
    // served, not refused (refusal only follows 2 s without a free slot); memory stays small.
    assert!(report.refused <= 100, "{} refused", report.refused);
    assert!(
        report.peak_kb < 200 * 1024,
        "peak RSS {} kB",
        report.peak_kb
    );
}

// --- The database ----------------------------------------------------------------------

fn first_text(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn sha(path: &Path) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(std::fs::read(path).unwrap()).to_vec()
}

/// A copy of the fixture database to break.
fn copy_of_minimo(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("flota.db");
    std::fs::copy(&fixture("minimo").db, &db).unwrap();
    db
}

#[test]
fn broken_databases_are_clear_errors_and_the_server_survives() {
    let tmp = tempfile::tempdir().unwrap();
    let check = |name: &str, db: &Path, needle: &str| {
        let mut server = Server::spawn(flota_bin(), &["servir", "--db", db.to_str().unwrap()]);
        server.initialize("2025-11-25");
        let answer = server.call(1, "posicion_actual", json!({"placa": "P-123BCD"}));
        assert_eq!(answer["result"]["isError"], true, "{name}: {answer}");
        let text = first_text(&answer);
        assert!(text.contains(needle), "{name}: {text}");
        // Still alive and answering.
        server.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
        assert_eq!(server.recv()["id"], 2, "{name}");
    };
    check(
        "falta",
        &tmp.path().join("no_existe.db"),
        "flota simular --salida",
    );
    let empty = tmp.path().join("vacia.db");
    std::fs::write(&empty, b"").unwrap();
    check("vacía", &empty, "vacia.db");
    let garbage = tmp.path().join("basura.db");
    std::fs::write(&garbage, vec![0x5a; 64 * 1024]).unwrap();
    check("basura", &garbage, "basura.db");
    let truncated = tmp.path().join("truncada.db");
    let bytes = std::fs::read(&fixture("minimo").db).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 3]).unwrap();
    // A cut file may still open; then the missing pages are what fails. Either way: a
    // sentence, never a crash.
    let mut server = Server::spawn(
        flota_bin(),
        &["servir", "--db", truncated.to_str().unwrap()],
    );
    server.initialize("2025-11-25");
    for (id, tool, args) in [
        (1, "posicion_actual", json!({"placa": "P-123BCD"})),
        (
            2,
            "alertas",
            json!({"fecha_inicio": "2026-08-18", "fecha_fin": "hoy"}),
        ),
        (
            3,
            "reporte_kilometraje",
            json!({"fecha_inicio": "2026-08-18", "fecha_fin": "hoy"}),
        ),
    ] {
        let answer = server.call(id, tool, args);
        assert!(answer.get("result").is_some(), "{tool}: {answer}");
        if answer["result"]["isError"] == true {
            let text = first_text(&answer);
            assert!(text.contains("está dañada o incompleta"), "{tool}: {text}");
        }
    }
    // An older schema: the fix is named.
    let old = tmp.path().join("antigua");
    std::fs::create_dir_all(&old).unwrap();
    let old = copy_of_minimo(&old);
    {
        let conn = rusqlite::Connection::open(&old).unwrap();
        conn.execute(
            "UPDATE meta SET valor = '0' WHERE clave = 'esquema_version'",
            [],
        )
        .unwrap();
    }
    check("esquema antiguo", &old, "versión");
    // A file of schema 1, before each unit had its zone: refused, saying what changed.
    let one = tmp.path().join("esquema1");
    std::fs::create_dir_all(&one).unwrap();
    let one = copy_of_minimo(&one);
    {
        let conn = rusqlite::Connection::open(&one).unwrap();
        conn.execute_batch(
            "UPDATE meta SET valor = '1' WHERE clave = 'esquema_version';
             ALTER TABLE vehiculos DROP COLUMN zona_horaria;",
        )
        .unwrap();
    }
    check(
        "esquema 1",
        &one,
        "tiene el esquema 1, pero esta versión de flota lee el 2 (desde el esquema 2 cada unidad guarda su zona horaria); regenérela con flota simular",
    );
}

#[test]
fn the_server_never_writes_even_while_a_writer_holds_the_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let db = copy_of_minimo(tmp.path());
    let before = sha(&db);
    let mut server = Server::spawn(flota_bin(), &["servir", "--db", db.to_str().unwrap()]);
    server.initialize("2025-11-25");
    let calls = [
        ("posicion_actual", json!({"placa": "P-123BCD"})),
        ("unidades_detenidas", json!({"minutos_minimos": 0})),
        (
            "resumen_recorrido",
            json!({"placa": "P-456DEF", "fecha": "ayer"}),
        ),
        (
            "mapa_recorrido",
            json!({"placa": "P-456DEF", "fecha": "ayer"}),
        ),
        (
            "alertas",
            json!({"fecha_inicio": "ayer", "fecha_fin": "hoy"}),
        ),
        (
            "verificar_geocerca",
            json!({"placa": "P-123BCD", "nombre_geocerca": "CEDIS Zona 12", "fecha": "ayer"}),
        ),
        (
            "reporte_kilometraje",
            json!({"fecha_inicio": "ayer", "fecha_fin": "hoy"}),
        ),
    ];
    for (i, (tool, args)) in calls.iter().enumerate() {
        let answer = server.call(i as i64, tool, args.clone());
        assert_eq!(answer["result"]["isError"], Value::Null, "{tool}: {answer}");
    }
    // A writer takes an exclusive lock and keeps it: reads wait 2 s, then say why.
    let writer = rusqlite::Connection::open(&db).unwrap();
    writer.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let answer = server.call(
        50,
        "alertas",
        json!({"fecha_inicio": "2026-08-13", "fecha_fin": "hoy"}),
    );
    assert!(answer.get("result").is_some(), "{answer}");
    // Reads cannot pass an exclusive lock: after the busy wait, the writer is named.
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = first_text(&answer);
    assert!(
        text.contains("está bloqueada por un proceso que escribe"),
        "{text}"
    );
    writer.execute_batch("ROLLBACK").unwrap();
    drop(writer);
    let answer = server.call(
        51,
        "alertas",
        json!({"fecha_inicio": "2026-08-13", "fecha_fin": "hoy"}),
    );
    assert_eq!(answer["result"]["isError"], Value::Null, "{answer}");
    let (status, _) = server.finish();
    assert!(status.success());
    assert_eq!(
        sha(&db),
        before,
        "the database changed under a read-only server"
    );
    // No journal or WAL files appeared beside it.
    let names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["flota.db".to_owned()], "{names:?}");
}

#[test]
fn simular_and_analizar_rewriting_the_database_mid_session() {
    let tmp = tempfile::tempdir().unwrap();
    let db = copy_of_minimo(tmp.path());
    let mut server = Server::spawn(flota_bin(), &["servir", "--db", db.to_str().unwrap()]);
    server.initialize("2025-11-25");
    let first = server.call(
        1,
        "reporte_kilometraje",
        json!({"fecha_inicio": "anteayer", "fecha_fin": "hoy"}),
    );
    assert_eq!(first["result"]["isError"], Value::Null, "{first}");
    // `flota simular` writes a different fleet to the same path while the server is up, and
    // the server keeps answering throughout.
    let scenario = crate::simulation::scenario_path("ruidoso");
    let mut simulate = Command::new(flota_bin())
        .args([
            "simular",
            scenario.to_str().unwrap(),
            "--ahora",
            "2026-08-19T15:30",
            "--salida",
            db.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut id = 10;
    while simulate.try_wait().unwrap().is_none() {
        id += 1;
        let answer = server.call(id, "posicion_actual", json!({"placa": "P-123BCD"}));
        assert!(answer.get("result").is_some(), "{answer}");
    }
    assert!(simulate.wait().unwrap().success());
    let after = server.call(
        999,
        "reporte_kilometraje",
        json!({"fecha_inicio": "anteayer", "fecha_fin": "hoy"}),
    );
    assert_eq!(after["result"]["isError"], Value::Null, "{after}");
    assert_ne!(
        after["result"]["structuredContent"], first["result"]["structuredContent"],
        "the new data must be served"
    );

    // `flota analizar` rewrites the detections in place, in one transaction, while the
    // server keeps answering: every answer is a result (data, or a sentence while the
    // writer holds the lock), and afterwards the same data is served.
    let mut analyze = Command::new(flota_bin())
        .args(["analizar", db.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    while analyze.try_wait().unwrap().is_none() {
        id += 1;
        let answer = server.call(
            id,
            "alertas",
            json!({"fecha_inicio": "anteayer", "fecha_fin": "hoy"}),
        );
        assert!(answer.get("result").is_some(), "{answer}");
    }
    assert!(analyze.wait().unwrap().success());
    let again = server.call(
        1999,
        "reporte_kilometraje",
        json!({"fecha_inicio": "anteayer", "fecha_fin": "hoy"}),
    );
    assert_eq!(
        again["result"]["structuredContent"], after["result"]["structuredContent"],
        "re-analysis of the same positions serves the same figures"
    );
}

/// A fleet whose database takes seconds to write even in a release build on a fast machine
/// (80 units × 30 days, about 4 million positions and 190 MB), so that a kill lands mid-write.
fn long_scenario(dir: &Path) -> std::path::PathBuf {
    let routes = Path::new(env!("CARGO_MANIFEST_DIR")).join("rutas");
    let text = format!(
        r#"
[escenario]
nombre = "larga"
descripcion = "Ochenta unidades durante treinta días, para matar la escritura a medias"
zona_horaria = "America/Guatemala"
dias = 30
intervalo_reporte_s = 15
semilla = 5
rutas = "{}"

[turno]
inicio = ["06:20", "08:20"]
duracion_h = [7.5, 9.5]

[[geocercas]]
nombre = "CEDIS Zona 12"
tipo = "bodega"
cuadrado = {{ centro = [14.5850, -90.5450], medio_lado_m = 260 }}

[[flotillas]]
prefijo = "K"
cantidad = 80
tipo = "panel"
rutas = ["r01_cedis_z1_z4", "r02_cedis_z10_cayala", "r03_vn_amatitlan", "r07_z18_centro_z4"]
"#,
        routes.display()
    );
    let path = dir.join("larga.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn size_of(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.len())
}

/// `flota simular` of [`long_scenario`] over a copy of the fixture (and a truth log beside
/// it), stderr captured; its temporary database, and the two files it must not change.
fn start_long_simulation(dir: &Path) -> (std::process::Child, std::path::PathBuf) {
    let db = copy_of_minimo(dir);
    std::fs::write(
        dir.join("flota.verdad.jsonl"),
        "{\"hecho\":\"verdad anterior\"}\n",
    )
    .unwrap();
    let scenario = long_scenario(dir);
    let child = Command::new(flota_bin())
        .args(["simular", scenario.to_str().unwrap()])
        .args([
            "--ahora",
            "2026-08-19T15:30",
            "--salida",
            db.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    (child, dir.join("flota.db.parcial"))
}

/// Waits until `partial` exists and is seen growing past a few batches: the writer is then
/// mid-way through a file that takes seconds more to finish. Returns its size then.
fn wait_until_mid_write(child: &mut std::process::Child, partial: &Path) -> u64 {
    const GROWN_BYTES: u64 = 2 * 1024 * 1024;
    let deadline = Instant::now() + crate::support::TIMEOUT;
    let mut seen = None;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "the simulation ended ({status}) before the signal; .parcial seen at {seen:?} bytes"
            );
        }
        assert!(
            Instant::now() < deadline,
            "{} never grew: {seen:?}",
            partial.display()
        );
        let size = size_of(partial);
        if let (Some(now), Some(before)) = (size, seen)
            && now >= GROWN_BYTES
            && now > before
        {
            return now;
        }
        seen = size.or(seen);
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn an_interrupted_simulation_removes_its_temporary_files_and_keeps_the_previous_ones() {
    use std::io::Read;
    let tmp = tempfile::tempdir().unwrap();
    let (db, truth) = (
        tmp.path().join("flota.db"),
        tmp.path().join("flota.verdad.jsonl"),
    );
    let (mut child, partial) = start_long_simulation(tmp.path());
    let (db_before, truth_before) = (sha(&db), sha(&truth));
    let at = wait_until_mid_write(&mut child, &partial);
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "{status}; {stderr}; at {at} bytes"
    );
    assert!(
        stderr.contains("simulación interrumpida (Ctrl-C)")
            && stderr.contains("se borraron los archivos a medio escribir")
            && stderr.contains("flota.verdad.jsonl quedan como estaban"),
        "{stderr}"
    );
    let leftovers: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("parcial"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "{leftovers:?} after a stop at {at} bytes"
    );
    assert_eq!(sha(&db), db_before);
    assert_eq!(sha(&truth), truth_before);
}

#[test]
fn a_killed_simulation_leaves_the_previous_data_intact() {
    use std::os::unix::process::ExitStatusExt;
    let tmp = tempfile::tempdir().unwrap();
    let (db, truth) = (
        tmp.path().join("flota.db"),
        tmp.path().join("flota.verdad.jsonl"),
    );
    let (mut child, partial) = start_long_simulation(tmp.path());
    let (db_before, truth_before) = (sha(&db), sha(&truth));
    let truth_partial = tmp.path().join("flota.verdad.jsonl.parcial");
    let killed_at = wait_until_mid_write(&mut child, &partial);
    child.kill().unwrap(); // SIGKILL on Unix.
    let status = child.wait().unwrap();
    // It died of the kill, not of finishing or failing on its own.
    assert_eq!(
        status.signal(),
        Some(9),
        "{status}; .parcial at {killed_at} bytes"
    );
    // Killed mid-write: both temporary files stay behind (no destructor ran), the previous
    // files are untouched.
    assert!(partial.exists() && truth_partial.exists());
    assert_eq!(sha(&db), db_before, "killed at {killed_at} bytes");
    assert_eq!(sha(&truth), truth_before, "killed at {killed_at} bytes");
    // It opens cleanly and serves.
    let conn =
        rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(conn);
    let mut server = Server::spawn(flota_bin(), &["servir", "--db", db.to_str().unwrap()]);
    server.initialize("2025-11-25");
    let answer = server.call(1, "posicion_actual", json!({"placa": "P-123BCD"}));
    assert_eq!(answer["result"]["isError"], Value::Null, "{answer}");
    drop(server);
    // The next complete run clears what the killed one left behind.
    let out = Command::new(flota_bin())
        .args([
            "simular",
            crate::simulation::scenario_path("minimo").to_str().unwrap(),
        ])
        .args([
            "--ahora",
            "2026-08-19T15:30",
            "--salida",
            db.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let leftovers: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("parcial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
