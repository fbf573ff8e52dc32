//! `flota servir --http` and the examples over Streamable HTTP, driven from outside with raw
//! JSON-RPC bodies: the token and its metadata, Origin/Host, the legacy session's lifecycle,
//! the stateless era's header rules, resumable streams, cancellation and the time limit, the
//! resource list announced again when the database is replaced, and the refusals of an
//! exposed endpoint. Every server listens on a loopback port the kernel picks.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use reqwest::blocking::{Client, Response};
use serde_json::{Value, json};

use crate::ground_truth::fixture;
use crate::support::{Server, TIMEOUT, example_bin, flota_bin, modern_meta};

/// A server process listening over HTTP; killed when dropped.
pub struct HttpServer {
    child: Child,
    pub url: String,
    /// The rest of stderr, kept open so the server never blocks writing its log.
    _stderr: Receiver<String>,
    /// Lines of stderr read before the address appeared.
    pub early: Vec<String>,
}

impl HttpServer {
    pub fn spawn(program: std::path::PathBuf, args: &[&str], env: &[(&str, &str)]) -> HttpServer {
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .env("FLOTA_TILES_URL", "no")
            // As `Server::spawn`: no per-call limit unless a test sets one.
            .env("FLOTA_LIMITE_LLAMADA_S", "0")
            .env("FLOTA_LOG", "info")
            .env_remove("FLOTA_TOKEN");
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("spawn");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut early = Vec::new();
        let until = Instant::now() + TIMEOUT;
        loop {
            let Ok(line) = rx.recv_timeout(until.saturating_duration_since(Instant::now())) else {
                let _ = child.kill();
                let _ = child.wait();
                panic!("no address on stderr: {early:#?}");
            };
            if let Some(at) = line.find("http://")
                && line.trim_end().ends_with("/mcp")
            {
                let url = line[at..].trim_end().to_owned();
                return HttpServer {
                    child,
                    url,
                    _stderr: rx,
                    early,
                };
            }
            early.push(line);
        }
    }

    /// `flota servir` on the `minimo` fixture, over HTTP on a free loopback port.
    pub fn flota(extra: &[&str]) -> HttpServer {
        let db = fixture("minimo").db.to_str().unwrap().to_owned();
        let mut args = vec!["servir", "--db", &db, "--http", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        HttpServer::spawn(flota_bin(), &args, &[])
    }

    pub fn base(&self) -> String {
        self.url.trim_end_matches("/mcp").to_owned()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn client() -> Client {
    // reqwest is built without a TLS provider of its own (flota installs ring at start).
    let _ = rustls::crypto::ring::default_provider().install_default();
    Client::builder().timeout(TIMEOUT).build().unwrap()
}

const ACCEPT: &str = "application/json, text/event-stream";

pub fn initialize_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "prueba", "version": "1"}}})
}

/// A legacy session over HTTP.
pub struct Session<'s> {
    pub server: &'s HttpServer,
    pub http: Client,
    pub id: String,
    token: Option<String>,
}

impl<'s> Session<'s> {
    pub fn open(server: &'s HttpServer, token: Option<&str>) -> Session<'s> {
        let http = client();
        let mut request = http
            .post(&server.url)
            .header("accept", ACCEPT)
            .json(&initialize_body());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().unwrap();
        assert_eq!(response.status(), 200);
        let id = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let session = Session {
            server,
            http,
            id,
            token: token.map(str::to_owned),
        };
        let status = session
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .status();
        assert_eq!(status, 202);
        session
    }

    pub fn post(&self, body: &Value) -> Response {
        let mut request = self
            .http
            .post(&self.server.url)
            .header("accept", ACCEPT)
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .json(body);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        request.send().unwrap()
    }

    /// A request's answer, from a JSON body or the last message of an SSE stream.
    pub fn request(&self, id: i64, method: &str, params: Value) -> Value {
        let response =
            self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        assert_eq!(response.status(), 200, "{method}");
        answer(response, id)
    }
}

/// The messages of an SSE body (`data:` lines), or the one JSON body.
pub fn messages(response: Response) -> Vec<Value> {
    let sse = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap().starts_with("text/event-stream"));
    let text = response.text().unwrap();
    if !sse {
        return vec![serde_json::from_str(&text).unwrap()];
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

pub fn answer(response: Response, id: i64) -> Value {
    messages(response)
        .into_iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("no answer for id {id}"))
}

#[test]
fn http_refuses_without_the_token_and_says_where_to_get_one() {
    let server = HttpServer::flota(&[
        "--token",
        "secreto-de-prueba",
        "--servidor-autorizacion",
        "https://id.ejemplo.org",
    ]);
    let http = client();
    let refused = http
        .post(&server.url)
        .header("accept", ACCEPT)
        .json(&initialize_body())
        .send()
        .unwrap();
    assert_eq!(refused.status(), 401);
    let metadata_url = format!("{}/.well-known/oauth-protected-resource/mcp", server.base());
    assert_eq!(
        refused.headers()["www-authenticate"].to_str().unwrap(),
        format!("Bearer resource_metadata=\"{metadata_url}\"")
    );
    let wrong = http
        .post(&server.url)
        .bearer_auth("otro")
        .json(&initialize_body())
        .send()
        .unwrap();
    assert_eq!(wrong.status(), 401);
    // Every request, not only the first: GET and DELETE too.
    assert_eq!(http.get(&server.url).send().unwrap().status(), 401);
    assert_eq!(http.delete(&server.url).send().unwrap().status(), 401);

    let document: Value = http.get(&metadata_url).send().unwrap().json().unwrap();
    assert_eq!(document["resource"], server.url);
    assert_eq!(
        document["authorization_servers"],
        json!(["https://id.ejemplo.org"])
    );

    let session = Session::open(&server, Some("secreto-de-prueba"));
    let tools = session.request(1, "tools/list", json!({}));
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 8);
}

#[test]
fn http_legacy_session_lifecycle() {
    let server = HttpServer::flota(&["--sin-token"]);
    let http = client();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let no_session = http
        .post(&server.url)
        .header("accept", ACCEPT)
        .json(&list)
        .send()
        .unwrap();
    assert_eq!(no_session.status(), 400);
    let unknown = http
        .post(&server.url)
        .header("mcp-session-id", "no-existe")
        .json(&list)
        .send()
        .unwrap();
    assert_eq!(unknown.status(), 404);

    let session = Session::open(&server, None);
    let tools = session.request(1, "tools/list", json!({}));
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 8);
    let resources = session.request(2, "resources/list", json!({}));
    let uris: Vec<&str> = resources["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        [
            "flota://unidades",
            "flota://geocercas",
            "flota://datos",
            "ui://flota/recorrido",
            "ui://flota/flota"
        ]
    );
    let bad_version = session
        .http
        .post(&server.url)
        .header("mcp-session-id", &session.id)
        .header("mcp-protocol-version", "1999-01-01")
        .json(&list)
        .send()
        .unwrap();
    assert_eq!(bad_version.status(), 400);

    let ended = session
        .http
        .delete(&server.url)
        .header("mcp-session-id", &session.id)
        .send()
        .unwrap();
    assert_eq!(ended.status(), 200);
    assert_eq!(
        session.post(&list).status(),
        404,
        "an ended session is gone"
    );
}

#[test]
fn http_checks_origin_and_host() {
    let server = HttpServer::flota(&["--sin-token"]);
    let http = client();
    let port = server.base().rsplit(':').next().unwrap().to_owned();
    let post = |header: &str, value: &str| {
        http.post(&server.url)
            .header(header, value)
            .json(&initialize_body())
            .send()
            .unwrap()
            .status()
    };
    assert_eq!(post("origin", "http://evil.example.com"), 403);
    assert_eq!(post("host", &format!("evil.example.com:{port}")), 403);
    assert_eq!(post("origin", &format!("http://localhost:{port}")), 200);
}

/// A stateless request with the headers 2026-07-28 asks for; `headers` replace them.
fn modern(server: &HttpServer, method: &str, params: Value, headers: &[(&str, &str)]) -> Response {
    let mut params = params;
    params["_meta"] = modern_meta();
    let mut chosen = std::collections::BTreeMap::from([
        ("accept", ACCEPT.to_owned()),
        ("mcp-protocol-version", "2026-07-28".to_owned()),
        ("mcp-method", method.to_owned()),
    ]);
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        chosen.insert("mcp-name", name.to_owned());
    }
    for (name, value) in headers {
        chosen.insert(name, (*value).to_owned());
    }
    let mut request = client().post(&server.url);
    for (name, value) in chosen {
        request = request.header(name, value);
    }
    request
        .json(&json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params}))
        .send()
        .unwrap()
}

#[test]
fn http_stateless_era_checks_its_headers() {
    let server = HttpServer::flota(&["--sin-token"]);
    let listed = modern(&server, "tools/list", json!({}), &[]);
    assert_eq!(listed.status(), 200);
    assert!(
        listed.headers().get("mcp-session-id").is_none(),
        "no session"
    );
    let listed = answer(listed, 9);
    assert_eq!(listed["result"]["resultType"], "complete");
    assert!(listed["result"]["ttlMs"].is_u64());

    let mismatched = modern(
        &server,
        "tools/list",
        json!({}),
        &[("mcp-method", "prompts/list")],
    );
    assert_eq!(mismatched.status(), 400);
    assert_eq!(answer(mismatched, 9)["error"]["code"], -32020);
    let arguments = json!({"name": "posicion_actual", "arguments": {"placa": "P-123BCD"}});
    let wrong_name = modern(
        &server,
        "tools/call",
        arguments.clone(),
        &[("mcp-name", "alertas")],
    );
    assert_eq!(wrong_name.status(), 400);
    let removed = modern(&server, "ping", json!({}), &[]);
    assert_eq!(removed.status(), 404);
    assert_eq!(answer(removed, 9)["error"]["code"], -32601);

    let called = answer(modern(&server, "tools/call", arguments, &[]), 9);
    assert_eq!(called["result"]["resultType"], "complete");
    assert_eq!(called["result"]["structuredContent"]["placa"], "P-123BCD");

    let stream = client()
        .get(&server.url)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .send()
        .unwrap();
    assert_eq!(stream.status(), 405);
}

#[test]
fn http_stream_resumes_after_a_dropped_connection() {
    let server = HttpServer::spawn(
        example_bin().with_file_name("servidor_conformidad"),
        &["--http", "127.0.0.1:0"],
        &[],
    );
    let session = Session::open(&server, None);
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "test_reconnection", "arguments": {}}});
    let response = session.post(&call);
    assert_eq!(response.status(), 200);
    let body = response.text().unwrap();
    assert!(
        !body.contains("\"id\":5"),
        "the answer must not come on the dropped stream: {body}"
    );
    let last = body
        .lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(str::trim)
        .next_back()
        .expect("an event id to resume from")
        .to_owned();
    let resumed = session
        .http
        .get(&server.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session.id)
        .header("last-event-id", &last)
        .send()
        .unwrap();
    assert_eq!(resumed.status(), 200);
    let answer = answer(resumed, 5);
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Reconnection test completed"),
        "{answer}"
    );
}

#[test]
fn http_calls_follow_the_in_flight_rules() {
    let server = HttpServer::spawn(
        example_bin(),
        &["--http", "127.0.0.1:0", "--limite-llamada", "1"],
        &[],
    );
    let session = Session::open(&server, None);
    // Past the limit: the watchdog answers, with an isError result the model can read.
    let slow = json!({"milisegundos": 60000});
    let timed_out = session.request(
        1,
        "tools/call",
        json!({"name": "esperar", "arguments": slow}),
    );
    assert_eq!(timed_out["result"]["isError"], true, "{timed_out}");
    assert!(
        timed_out["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("superó el límite"),
        "{timed_out}"
    );

    // Cancelled: the stream ends, and nothing is ever sent for that id. On a server with
    // the default limit (30 s): under the 1 s one, a client held up for a second before its
    // cancellation landed saw the limit's answer instead.
    let server = HttpServer::spawn(example_bin(), &["--http", "127.0.0.1:0"], &[]);
    let session = Session::open(&server, None);
    let waiting = {
        let session_id = session.id.clone();
        let url = server.url.clone();
        std::thread::spawn(move || {
            let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "esperar", "arguments": {"milisegundos": 60000},
                "_meta": {"progressToken": "p"}}});
            let response = client()
                .post(&url)
                .header("accept", ACCEPT)
                .header("mcp-session-id", session_id)
                .json(&body)
                .send()
                .unwrap();
            messages(response)
        })
    };
    // Cancel once the call is running (its progress shows it), then read what the stream had.
    let until = Instant::now() + TIMEOUT;
    loop {
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 2}});
        assert_eq!(session.post(&cancel).status(), 202);
        if waiting.is_finished() || Instant::now() > until {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let seen = waiting.join().unwrap();
    assert!(
        seen.iter().all(|m| m.get("id").is_none()),
        "a cancelled call got an answer: {seen:?}"
    );
}

/// Reads lines of an open SSE response until one contains `needle` (bounded by TIMEOUT).
fn wait_for_line(response: Response, needle: &str) -> bool {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(response);
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 0 {
            if tx.send(std::mem::take(&mut line)).is_err() {
                return;
            }
        }
    });
    let until = Instant::now() + TIMEOUT;
    while let Ok(line) = rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
        if line.contains(needle) {
            return true;
        }
    }
    false
}

/// Puts a copy of the `minimo` fixture in `dir` and returns its path.
fn copy_of_the_fixture(dir: &std::path::Path) -> std::path::PathBuf {
    let db = dir.join("flota.db");
    std::fs::copy(&fixture("minimo").db, &db).unwrap();
    db
}

/// Replaces `db` by another file, as `flota simular` does (write elsewhere, rename over).
fn replace(db: &std::path::Path) {
    let staged = db.with_extension("nueva");
    std::fs::copy(&fixture("minimo").db, &staged).unwrap();
    std::fs::rename(&staged, db).unwrap();
}

#[test]
fn a_replaced_database_is_announced_over_http_and_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_of_the_fixture(dir.path());
    let db_text = db.to_str().unwrap();
    let server = HttpServer::spawn(
        flota_bin(),
        &[
            "servir",
            "--db",
            db_text,
            "--http",
            "127.0.0.1:0",
            "--sin-token",
        ],
        &[],
    );
    let session = Session::open(&server, None);
    session.request(1, "resources/list", json!({}));
    let stream = session
        .http
        .get(&server.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session.id)
        .send()
        .unwrap();
    assert_eq!(stream.status(), 200);
    replace(&db);
    assert!(wait_for_line(
        stream,
        "notifications/resources/list_changed"
    ));

    let mut stdio = Server::spawn(flota_bin(), &["servir", "--db", db_text]);
    stdio.initialize("2025-11-25");
    replace(&db);
    let until = Instant::now() + TIMEOUT;
    loop {
        let line = stdio.recv();
        if line["method"] == "notifications/resources/list_changed" {
            break;
        }
        assert!(Instant::now() < until, "no list_changed on stdio");
    }
}

#[test]
fn an_exposed_endpoint_needs_a_chosen_token() {
    let mut exposed = Command::new(flota_bin())
        .args(["servir", "--db", "/no/existe.db", "--http", "0.0.0.0:0"])
        .env_remove("FLOTA_TOKEN")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + TIMEOUT;
    while exposed.try_wait().unwrap().is_none() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    // Still serving means it was not refused; never leave it listening.
    let _ = exposed.kill();
    let refused = exposed.wait_with_output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("indíquelo con --token o FLOTA_TOKEN"),
        "{said}"
    );

    // On loopback a token is made up and shown once; it is the one that works.
    let server = HttpServer::flota(&[]);
    let shown = server
        .early
        .iter()
        .find_map(|l| l.split("(se muestra solo ahora): ").nth(1))
        .expect("the generated token on stderr")
        .trim()
        .to_owned();
    assert!(shown.len() >= 32);
    Session::open(&server, Some(&shown));
    let status = client()
        .post(&server.url)
        .json(&initialize_body())
        .send()
        .unwrap()
        .status();
    assert_eq!(status, 401);

    // FLOTA_TOKEN is the token when --token is not given; nothing is generated then.
    let db = fixture("minimo").db.to_str().unwrap().to_owned();
    let server = HttpServer::spawn(
        flota_bin(),
        &["servir", "--db", &db, "--http", "127.0.0.1:0"],
        &[("FLOTA_TOKEN", "del-entorno")],
    );
    assert!(
        server
            .early
            .iter()
            .all(|l| !l.contains("se muestra solo ahora"))
    );
    Session::open(&server, Some("del-entorno"));
}

#[test]
fn http_bodies_are_bounded() {
    let server = HttpServer::flota(&["--sin-token"]);
    // Leading whitespace is valid JSON: the size is all that differs.
    let status = |megabytes: usize| {
        let mut body = vec![b' '; megabytes * 1024 * 1024];
        body.extend_from_slice(initialize_body().to_string().as_bytes());
        client()
            .post(&server.url)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .unwrap()
            .status()
    };
    assert_eq!(status(3), 200, "under the 4 MiB limit");
    assert_eq!(status(5), 413);
}

/// One call of every fleet tool on the `minimo` fixture, with arguments that find data.
pub fn every_tool_once() -> Vec<(&'static str, Value)> {
    vec![
        ("posicion_actual", json!({"placa": "p 123 bcd"})),
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
            json!({"fecha_inicio": "anteayer", "fecha_fin": "hoy"}),
        ),
        (
            "verificar_geocerca",
            json!({"placa": "P-123BCD", "nombre_geocerca": "CEDIS Zona 12", "fecha": "ayer"}),
        ),
        (
            "reporte_kilometraje",
            json!({"fecha_inicio": "anteayer", "fecha_fin": "hoy"}),
        ),
    ]
}
