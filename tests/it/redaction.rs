//! Secrets never leave the request. For each outbound client — geocoding (`posicion_actual` in
//! `flota servir`), map tiles (`mapa_recorrido`, and `flota exportar --formato png`) and
//! directions (`flota rutas regenerar`, through Google's Routes API with the key in a header
//! and through the legacy Directions API with it in the query) — every way a loopback service
//! can fail is tried, and neither the API key nor a secret in a configured URL may appear in stdout, stderr (logged
//! at the most verbose level, which includes every lower level's lines), a tool result or any
//! written file; nor may an English library message reach the user instead of a Spanish one.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::ground_truth::fixture;
use crate::http_mock::{Mock, Reply, Request};
use crate::support::flota_bin;

/// The API key (Google's, or a tile service's token).
const KEY: &str = "CLAVE-FILTRADA-7Q9X2";
/// A secret inside a URL the user configured (`--url …?signature=…`).
const FIRMA: &str = "FIRMA-URL-5M3W8";
const SECRETS: [&str; 2] = [KEY, FIRMA];
/// English library wording that must have been turned into Spanish before reaching a user.
const ENGLISH: [&str; 11] = [
    "error sending request",
    "error decoding",
    "error following redirect",
    "for url",
    "builder error",
    "body error",
    "timed out",
    "connection refused",
    "expected value",
    "eof while parsing",
    "png signature",
];
/// A hanging service says nothing for this long: far longer than every client's deadline.
const HANG: Duration = Duration::from_secs(30);

/// How the service fails.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// Nothing listens on the port.
    Refused,
    /// The connection is accepted and nothing is ever said.
    Hang,
    /// HTTP 500 whose body echoes the request line and headers, key included.
    Echo500,
    /// Redirects, forever, to another path carrying the key.
    Redirect,
    /// HTTP 200 with HTML echoing the request.
    NotJson,
    /// HTTP 200 with an answer cut short (JSON, or half a PNG for tiles).
    Truncated,
    /// Google's `REQUEST_DENIED` with an `error_message` echoing the request (for the Routes
    /// API, its `PERMISSION_DENIED` status; for tiles, a 403 with the same echo).
    Denied,
}

const FAULTS: [Fault; 7] = [
    Fault::Refused,
    Fault::Hang,
    Fault::Echo500,
    Fault::Redirect,
    Fault::NotJson,
    Fault::Truncated,
    Fault::Denied,
];

/// Which outbound client, through which front door.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Client {
    Geocoding,
    MapTool,
    MapExport,
    Directions,
    Routes,
}

impl Client {
    fn tiles(self) -> bool {
        matches!(self, Client::MapTool | Client::MapExport)
    }
}

/// The request as a server might echo it back in an error page: its line and headers (where
/// the Routes API's key travels).
fn echo(request: &Request) -> String {
    let headers: Vec<String> = request
        .headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    format!(
        "solicitud recibida: {} | {}",
        request.line,
        headers.join(" | ")
    )
}

/// The service's answer to each request.
fn answer(client: Client, fault: Fault, request: &Request) -> Reply {
    let text = |status: u16, content_type: &str, body: String| {
        Reply::Full(
            status,
            vec![("Content-Type".to_owned(), content_type.to_owned())],
            body.into_bytes(),
        )
    };
    match fault {
        Fault::Refused => unreachable!("nothing listens"),
        Fault::Hang => Reply::Hang(HANG),
        Fault::Echo500 => text(500, "text/plain", echo(request)),
        Fault::Redirect => {
            let param = if client.tiles() {
                "access_token"
            } else {
                "key"
            };
            let next = format!("/desvio/{}?{param}={KEY}", request.path.len());
            Reply::Full(302, vec![("Location".to_owned(), next)], Vec::new())
        }
        Fault::NotJson => text(
            200,
            "text/html",
            format!("<html><body>{}</body></html>", echo(request)),
        ),
        Fault::Truncated if client.tiles() => {
            let mut tile = crate::maps::solid_tile();
            tile.truncate(tile.len() / 2);
            Reply::Full(
                200,
                vec![("Content-Type".to_owned(), "image/png".to_owned())],
                tile,
            )
        }
        Fault::Truncated => {
            let whole = match client {
                Client::Geocoding => json!({"status": "OK", "results": [{"formatted_address": "7a Avenida 1-23, Zona 1"}]}),
                Client::Routes => json!({"routes": [{"distanceMeters": 1200, "duration": "100s", "polyline": {"encodedPolyline": "_p~iF~ps|U_ulLnnqC"}}]}),
                _ => json!({"status": "OK", "routes": [{"legs": [{"distance": {"value": 1200}}]}]}),
            }
            .to_string();
            Reply::Json(200, whole[..whole.len() / 2].to_owned())
        }
        Fault::Denied if client.tiles() => text(403, "text/plain", echo(request)),
        Fault::Denied if client == Client::Routes => Reply::Json(
            403,
            json!({"error": {"code": 403, "status": "PERMISSION_DENIED",
                   "message": format!("Requests from this API key are blocked. {}", echo(request)),
                   "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                "reason": "API_KEY_SERVICE_BLOCKED"}]}})
            .to_string(),
        ),
        Fault::Denied => Reply::Json(
            200,
            json!({
                "status": "REQUEST_DENIED",
                "error_message": format!("The provided API key is invalid. {}", echo(request))
            })
            .to_string(),
        ),
    }
}

/// Everything a case produced, for the leak checks.
#[derive(Default)]
struct Seen {
    /// (what, text): stdout, stderr, tool results.
    texts: Vec<(String, String)>,
    /// Expectations about the failure itself that did not hold.
    problems: Vec<String>,
}

impl Seen {
    fn expect(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.problems.push(what());
        }
    }
}

/// Runs one client against one fault and returns what went wrong (nothing, when the secrets
/// stayed in the request and the failure was reported in Spanish).
fn check(client: Client, fault: Fault) -> Vec<String> {
    let mock = match fault {
        Fault::Refused => None,
        _ => Some(Mock::start(move |request| answer(client, fault, request))),
    };
    let base = match &mock {
        Some(mock) => mock.url.clone(),
        None => {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}", listener.local_addr().unwrap())
        }
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut seen = match client {
        Client::Geocoding => geocoding(&base, tmp.path()),
        Client::MapTool => map_tool(&base, tmp.path()),
        Client::MapExport => map_export(&base, tmp.path()),
        Client::Directions => directions(&base, tmp.path(), false),
        Client::Routes => directions(&base, tmp.path(), true),
    };
    if let Some(mock) = &mock {
        seen.expect(!mock.requests().is_empty(), || {
            "the service was never asked".into()
        });
    }
    let mut problems: Vec<String> = seen.problems;
    for (what, text) in &seen.texts {
        for secret in SECRETS {
            if let Some(at) = text.find(secret) {
                problems.push(format!("{secret} in {what}: …{}…", around(text, at)));
            }
        }
        let lower = text.to_lowercase();
        for english in ENGLISH {
            if let Some(at) = lower.find(english) {
                problems.push(format!(
                    "English {english:?} in {what}: …{}…",
                    around(&lower, at)
                ));
            }
        }
    }
    for file in walk(tmp.path()) {
        let bytes = std::fs::read(&file).unwrap();
        for secret in SECRETS {
            if bytes.windows(secret.len()).any(|w| w == secret.as_bytes()) {
                problems.push(format!("{secret} written to {}", file.display()));
            }
        }
    }
    problems
        .into_iter()
        .map(|p| format!("[{client:?} / {fault:?}] {p}"))
        .collect()
}

/// The line of `text` around byte `at`, for a readable report.
fn around(text: &str, at: usize) -> &str {
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let line = &text[start..end];
    if line.len() <= 400 {
        return line;
    }
    let from = (at - start).saturating_sub(200);
    let to = (at - start + 200).min(line.len());
    let from = (0..=from)
        .rev()
        .find(|i| line.is_char_boundary(*i))
        .unwrap_or(0);
    let to = (to..=line.len())
        .find(|i| line.is_char_boundary(*i))
        .unwrap_or(line.len());
    &line[from..to]
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A `flota` command with a clean environment: debug logging, no real network, every cache
/// and home folder inside `tmp`.
fn flota(tmp: &Path, args: &[&str], env: &[(&str, String)]) -> Command {
    let mut command = Command::new(flota_bin());
    command
        .args(args)
        .env_remove("GOOGLE_MAPS_API_KEY")
        .env_remove("FLOTA_GEOCODER_URL")
        .env_remove("FLOTA_GOOGLE_GEOCODE_URL")
        .env_remove("FLOTA_GOOGLE_DIRECTIONS_URL")
        .env_remove("FLOTA_GOOGLE_ROUTES_URL")
        .env_remove("FLOTA_OSRM_URL")
        .env("FLOTA_LOG", "debug")
        .env("FLOTA_TILES_URL", "no")
        // Short deadlines, set here rather than left to the defaults: the hanging service is
        // given up on by them, well before it closes the connection after `HANG`.
        .env("FLOTA_TILES_LIMITE_S", "1")
        .env("FLOTA_GEOCODER_LIMITE_S", "1")
        .env("HOME", tmp.join("home"))
        .env("XDG_CACHE_HOME", tmp.join("cache"));
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

/// `flota servir --verbose`, one tool call; returns stdout, stderr and the call's answer.
fn serve_one_call(
    tmp: &Path,
    env: &[(&str, String)],
    tool: &str,
    arguments: Value,
) -> (String, String, Value) {
    let db = fixture("minimo").db.to_str().unwrap().to_owned();
    let mut child = flota(tmp, &["servir", "--verbose", "--db", &db], env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    let mut stdin = child.stdin.take().unwrap();
    for message in [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
               "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "it", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": tool, "arguments": arguments}}),
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut out = String::new();
    let answer = loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "no answer: {out}");
        out.push_str(&line);
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == 1 {
            break message;
        }
    };
    drop(stdin);
    stdout.read_to_string(&mut out).unwrap();
    child.wait().unwrap();
    (out, errors.join().unwrap(), answer)
}

fn geocoding(base: &str, tmp: &Path) -> Seen {
    let env = [
        ("GOOGLE_MAPS_API_KEY", KEY.to_owned()),
        (
            "FLOTA_GOOGLE_GEOCODE_URL",
            format!("{base}/maps/api/geocode/json?signature={FIRMA}"),
        ),
    ];
    let (stdout, stderr, answer) =
        serve_one_call(tmp, &env, "posicion_actual", json!({"placa": "P-123BCD"}));
    let mut seen = Seen::default();
    let output = &answer["result"]["structuredContent"];
    seen.expect(
        output["direccion"].is_string() && output["direccion"] == output["referencia"],
        || format!("no offline fallback: {answer}"),
    );
    seen.expect(
        stderr.contains("geocodificación Google sin respuesta"),
        || format!("failure not logged:\n{stderr}"),
    );
    seen.texts = vec![("stdout".into(), stdout), ("stderr".into(), stderr)];
    seen
}

fn tile_env(base: &str, tmp: &Path) -> [(&'static str, String); 2] {
    [
        (
            "FLOTA_TILES_URL",
            format!("{base}/{{z}}/{{x}}/{{y}}.png?access_token={KEY}"),
        ),
        (
            "FLOTA_TILES_DIR",
            tmp.join("teselas").to_str().unwrap().to_owned(),
        ),
    ]
}

fn map_tool(base: &str, tmp: &Path) -> Seen {
    let (stdout, stderr, answer) = serve_one_call(
        tmp,
        &tile_env(base, tmp),
        "mapa_recorrido",
        json!({"placa": "P-456DEF", "fecha": "2026-08-18"}),
    );
    let mut seen = Seen::default();
    let output = &answer["result"]["structuredContent"];
    seen.expect(output["fondo"] == "sin conexión", || {
        format!("not the offline basemap: {output}")
    });
    seen.texts = vec![("stdout".into(), stdout), ("stderr".into(), stderr)];
    seen
}

fn map_export(base: &str, tmp: &Path) -> Seen {
    let db = fixture("minimo").db.to_str().unwrap().to_owned();
    let file = tmp.join("mapa.png");
    let out = flota(
        tmp,
        &[
            "exportar",
            "--db",
            &db,
            "--placa",
            "P-456DEF",
            "--fecha",
            "2026-08-18",
            "--formato",
            "png",
            "--salida",
            file.to_str().unwrap(),
        ],
        &tile_env(base, tmp),
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let mut seen = Seen::default();
    seen.expect(out.status.success() && file.exists(), || {
        format!("no map written:\n{stderr}")
    });
    seen.expect(
        stderr.contains("sin conexión") || stderr.contains("faltaron"),
        || format!("the offline basemap is not reported:\n{stderr}"),
    );
    seen.texts = vec![
        (
            "stdout".into(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        ),
        ("stderr".into(), stderr),
    ];
    seen
}

/// `flota rutas regenerar` through Google's Routes API (`routes_api`) or the legacy
/// Directions API.
fn directions(base: &str, tmp: &Path, routes_api: bool) -> Seen {
    let dir = tmp.join("rutas");
    std::fs::create_dir_all(&dir).unwrap();
    let name = "r01_cedis_z1_z4";
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("rutas");
    std::fs::copy(
        shipped.join(format!("{name}.json")),
        dir.join(format!("{name}.json")),
    )
    .unwrap();
    let before = std::fs::read(dir.join(format!("{name}.json"))).unwrap();
    let (url, provider) = if routes_api {
        (
            format!("{base}/directions/v2:computeRoutes?signature={FIRMA}"),
            "google",
        )
    } else {
        (
            format!("{base}/maps/api/directions/json?signature={FIRMA}"),
            "google-directions",
        )
    };
    let out = flota(
        tmp,
        &[
            "rutas",
            "regenerar",
            name,
            "--dir",
            dir.to_str().unwrap(),
            "--proveedor",
            provider,
            "--url",
            &url,
            "--tiempo-limite",
            "1",
            "--reintentos",
            "0",
        ],
        &[("GOOGLE_MAPS_API_KEY", KEY.to_owned())],
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let mut seen = Seen::default();
    seen.expect(out.status.code() == Some(1), || {
        format!("exit {:?}:\n{stderr}", out.status.code())
    });
    seen.expect(stderr.contains(&format!("{name}: error:")), || {
        format!("the route's failure is not reported:\n{stderr}")
    });
    seen.expect(
        std::fs::read(dir.join(format!("{name}.json"))).unwrap() == before,
        || "the route file changed".into(),
    );
    seen.texts = vec![
        (
            "stdout".into(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        ),
        ("stderr".into(), stderr),
    ];
    seen
}

/// Every fault for one client, concurrently (the hanging cases wait out a deadline each).
fn matrix(client: Client) {
    let problems: Vec<String> = std::thread::scope(|scope| {
        let cases: Vec<_> = FAULTS
            .iter()
            .map(|fault| scope.spawn(move || check(client, *fault)))
            .collect();
        cases
            .into_iter()
            .flat_map(|case| case.join().unwrap())
            .collect()
    });
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn geocoding_failures_never_show_a_secret() {
    matrix(Client::Geocoding);
}

#[test]
fn map_tool_tile_failures_never_show_a_secret() {
    matrix(Client::MapTool);
}

#[test]
fn map_export_tile_failures_never_show_a_secret() {
    matrix(Client::MapExport);
}

#[test]
fn directions_failures_never_show_a_secret() {
    matrix(Client::Directions);
}

#[test]
fn routes_api_failures_never_show_a_secret() {
    matrix(Client::Routes);
}
