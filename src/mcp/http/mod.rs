//! Streamable HTTP: the same session core as stdio, on one endpoint (`/mcp`), in both eras.
//!
//! 2025-11-25 and earlier: `initialize` opens a session (`Mcp-Session-Id`), requests are
//! answered with JSON or, for tool calls, an SSE stream (priming event, progress, logs,
//! questions to the client, the answer); notifications and responses get 202; `GET` opens a
//! stream for server messages or resumes one with `Last-Event-ID`; `DELETE` ends the session;
//! an unknown or expired session is 404. 2026-07-28: no session, every `POST` stands alone
//! with its `_meta` and the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers
//! checked against the body; `GET` and `DELETE` are 405; `subscriptions/listen` keeps a stream
//! for list changes. Which era a request belongs to is decided as the reference servers do:
//! no session id plus the modern header or `_meta` means stateless.
//!
//! Around it ([`guard`]): the bearer token, `Origin`/`Host` checks and the RFC 9728 metadata;
//! limits on body size, live sessions and their idle time; tool calls go through the same
//! in-flight table as stdio ([`calls`]). axum/hyper only frame HTTP; every protocol decision
//! is the core's.

mod calls;
pub mod guard;
pub mod policy;
mod sessions;
mod streams;

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;
use serde_json::{Value, json};

pub use guard::Guard;
use sessions::{HttpSession, Sessions};
use streams::{StreamWriter, Streams, sse_response};

use super::in_flight::InFlight;
use super::jsonrpc::{self, ErrorCode, RpcError, error_line, notification_line};
use super::server::ServeOptions;
use super::service::{Call, List, Service};
use super::session::{Action, META_VERSION, Session, modern_version};
use super::tasks::{self, Started};
use super::version::ProtocolVersion;
use crate::{log_debug, log_info, log_warn};

/// Knobs of the HTTP transport.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Authentication, origins, hosts, metadata; its `path` is the endpoint.
    pub guard: Guard,
    /// Largest accepted request body (413 beyond).
    pub max_body_bytes: usize,
    /// Legacy sessions alive at once (503 for one more `initialize`).
    pub max_sessions: usize,
    /// A session unused this long is ended (its id then gets 404).
    pub session_idle: Duration,
    /// The in-flight rules shared with stdio: calls and bytes in flight, admission wait, time
    /// per call, verbose logging.
    pub serve: ServeOptions,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            guard: Guard {
                path: "/mcp".into(),
                ..Guard::default()
            },
            max_body_bytes: 4 * 1024 * 1024,
            max_sessions: 256,
            session_idle: Duration::from_secs(30 * 60),
            serve: ServeOptions::default(),
        }
    }
}

/// A `subscriptions/listen` stream (2026-07-28).
struct Listener {
    writer: StreamWriter,
    id: Value,
    wants: [bool; 3],
    /// Tasks whose changes it asked for (`taskIds`), each with the last state it was sent.
    tasks: Vec<(String, Value)>,
}

/// What every handler shares.
struct Shared {
    service: Arc<Service>,
    options: HttpOptions,
    in_flight: Arc<InFlight>,
    sessions: Sessions,
    deliveries: calls::Deliveries,
    listeners: Mutex<Vec<Listener>>,
    stopping: AtomicBool,
}

/// Serves `service` on `listener` until SIGTERM or SIGINT, then stops within about a second
/// (open streams are cut). Builds its own runtime; call it from a plain thread.
pub fn serve_http(
    service: Service,
    listener: TcpListener,
    options: HttpOptions,
) -> std::io::Result<()> {
    for name in service.duplicate_names() {
        log_warn!("registrado dos veces: {name}");
    }
    listener.set_nonblocking(true)?;
    // The lists' versions the sessions start from, read before anything is accepted: a
    // watcher that took its first look after the first answer (a database being opened, a
    // busy machine) would start from a list already changed and never announce it.
    let lists_at_start = service.list_versions();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("mcp-http")
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let shared = Arc::new(Shared {
            service: Arc::new(service),
            sessions: Sessions::new(options.max_sessions, options.session_idle),
            options,
            in_flight: Arc::new(InFlight::default()),
            deliveries: calls::Deliveries::default(),
            listeners: Mutex::new(Vec::new()),
            stopping: AtomicBool::new(false),
        });
        tokio::spawn(calls::watchdog(Arc::clone(&shared)));
        tokio::spawn(sweep_sessions(Arc::clone(&shared)));
        tokio::spawn(watch_lists(Arc::clone(&shared), lists_at_start));
        tokio::spawn(watch_tasks(Arc::clone(&shared)));
        let app = router(Arc::clone(&shared));
        let stop = Arc::new(tokio::sync::Notify::new());
        let graceful = Arc::clone(&stop);
        let server = axum::serve(listener, app)
            .with_graceful_shutdown(async move { graceful.notified().await });
        tokio::select! {
            result = server => result?,
            () = stop_signal() => {
                shared.stopping.store(true, Ordering::SeqCst);
                stop.notify_waiters();
                // Streams never end by themselves: give answers in flight a moment, then go.
                tokio::time::sleep(Duration::from_millis(800)).await;
            }
        }
        Ok::<(), std::io::Error>(())
    })?;
    runtime.shutdown_timeout(Duration::from_millis(200));
    Ok(())
}

async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            std::future::pending::<()>().await;
            return;
        };
        tokio::select! {
            _ = term.recv() => log_info!("SIGTERM recibida: el servidor HTTP termina"),
            _ = int.recv() => log_info!("SIGINT recibida: el servidor HTTP termina"),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn router(shared: Arc<Shared>) -> Router {
    let path = shared.options.guard.path.clone();
    let limit = shared.options.max_body_bytes;
    let metadata_here = format!("{}{}", guard::METADATA_PATH, path);
    Router::new()
        .route(&path, get(get_stream).post(post).delete(delete))
        .route(guard::METADATA_PATH, get(metadata))
        .route(&metadata_here, get(metadata))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(shared)
}

/// A JSON body with a status, and the session header when there is one.
fn json_response(status: StatusCode, body: String, session: Option<&str>) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(id) = session
        && let Ok(value) = HeaderValue::from_str(id)
    {
        headers.insert("mcp-session-id", value);
    }
    response
}

fn error_response(status: StatusCode, id: Option<&Value>, error: &RpcError) -> Response {
    let raw = id.and_then(|id| serde_json::value::to_raw_value(id).ok());
    json_response(status, error_line(raw.as_deref(), error), None)
}

fn header_text<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn accepts_sse(headers: &HeaderMap) -> bool {
    header_text(headers, "accept").is_some_and(|a| a.contains("text/event-stream"))
}

async fn metadata(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let mut document = shared.options.guard.metadata(&headers);
    document["resource_name"] = json!(shared.service.info.title);
    axum::Json(document).into_response()
}

/// One `POST`: a JSON-RPC message, in whichever era it belongs to.
async fn post(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(refusal) = shared.options.guard.check(&headers) {
        return refusal;
    }
    if shared.options.serve.verbose {
        log_info!("← POST {}", String::from_utf8_lossy(&body));
    }
    let message: Value = match serde_json::from_slice(&body) {
        Ok(Value::Object(message)) => Value::Object(message),
        Ok(_) => {
            let error = RpcError::new(
                ErrorCode::InvalidRequest,
                "el cuerpo debe ser un objeto JSON-RPC (sin lotes)",
            );
            return error_response(StatusCode::BAD_REQUEST, None, &error);
        }
        Err(err) => {
            let error = RpcError::new(ErrorCode::ParseError, format!("JSON mal formado: {err}"));
            return error_response(StatusCode::BAD_REQUEST, None, &error);
        }
    };
    let session_id = header_text(&headers, "mcp-session-id").map(str::to_owned);
    if session_id.is_none() && is_stateless(&headers, &message) {
        return stateless(shared, &headers, &message, &body).await;
    }
    legacy(shared, &headers, session_id, &message, &body).await
}

/// No session and the modern header or `_meta`: the 2026-07-28 era.
fn is_stateless(headers: &HeaderMap, message: &Value) -> bool {
    let header_modern = header_text(headers, "mcp-protocol-version")
        .is_some_and(|v| ProtocolVersion::parse(v).is_none_or(|v| v.is_modern()));
    let meta_modern = message["params"]["_meta"].as_object().is_some_and(|meta| {
        meta.keys()
            .any(|k| k.starts_with("io.modelcontextprotocol/"))
    });
    header_modern || meta_modern
}

/// A header value, decoded from `=?base64?…?=` when so written.
fn decoded_header(headers: &HeaderMap, name: &str) -> Option<String> {
    let raw = header_text(headers, name)?;
    if let Some(encoded) = raw
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()?;
        return String::from_utf8(bytes).ok();
    }
    Some(raw.to_owned())
}

/// The 2026-07-28 header rules: the version header present and equal to `_meta`'s, the
/// method and name headers equal to the body's.
fn check_modern_headers(
    service: &Service,
    headers: &HeaderMap,
    message: &Value,
) -> Result<(), (StatusCode, RpcError)> {
    let mismatch = |detail: String| {
        (
            StatusCode::BAD_REQUEST,
            RpcError::new(ErrorCode::HeaderMismatch, detail),
        )
    };
    let Some(header_version) = header_text(headers, "mcp-protocol-version") else {
        return Err(mismatch("falta la cabecera MCP-Protocol-Version".into()));
    };
    let params = message["params"].as_object().cloned().unwrap_or_default();
    let meta_version = params
        .get("_meta")
        .and_then(|m| m.get(META_VERSION))
        .and_then(Value::as_str);
    let Some(meta_version) = meta_version else {
        let error = RpcError::new(
            ErrorCode::InvalidParams,
            format!("falta _meta[\"{META_VERSION}\"]"),
        );
        return Err((StatusCode::BAD_REQUEST, error));
    };
    if meta_version != header_version {
        return Err(mismatch(format!(
            "la cabecera MCP-Protocol-Version ({header_version}) no coincide con _meta \
             ({meta_version})"
        )));
    }
    if let Err(error) = modern_version(&params) {
        return Err((StatusCode::BAD_REQUEST, error));
    }
    let Some(method) = message["method"].as_str() else {
        return Ok(());
    };
    if decoded_header(headers, "mcp-method").as_deref() != Some(method) {
        return Err(mismatch(format!(
            "la cabecera Mcp-Method debe valer '{method}'"
        )));
    }
    let name = match method {
        "tools/call" | "prompts/get" => params.get("name").and_then(Value::as_str),
        "resources/read" => params.get("uri").and_then(Value::as_str),
        "tasks/get" | "tasks/update" | "tasks/cancel" => {
            params.get("taskId").and_then(Value::as_str)
        }
        _ => None,
    };
    if let Some(name) = name
        && decoded_header(headers, "mcp-name").as_deref() != Some(name)
    {
        return Err(mismatch(format!(
            "la cabecera Mcp-Name debe valer '{name}'"
        )));
    }
    if method == "tools/call"
        && let Some(name) = name
        && let Some(tool) = service.tools.iter().find(|t| t.definition().name == name)
    {
        check_param_headers(
            headers,
            &tool.definition().input_schema,
            params.get("arguments").unwrap_or(&Value::Null),
        )
        .map_err(mismatch)?;
    }
    Ok(())
}

/// Arguments whose schema names an `x-mcp-header` travel in `Mcp-Param-{Name}` too; the
/// header must be there and say the same (Base64 when written `=?base64?…?=`, strictly).
fn check_param_headers(
    headers: &HeaderMap,
    schema: &Value,
    arguments: &Value,
) -> Result<(), String> {
    let Some(properties) = schema["properties"].as_object() else {
        return Ok(());
    };
    for (argument, definition) in properties {
        let Some(suffix) = definition["x-mcp-header"].as_str() else {
            continue;
        };
        let Some(value) = arguments.get(argument).filter(|v| !v.is_null()) else {
            continue;
        };
        let expected = match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let name = format!("mcp-param-{}", suffix.to_ascii_lowercase());
        let Some(raw) = header_text(headers, &name) else {
            return Err(format!(
                "falta la cabecera Mcp-Param-{suffix} del argumento '{argument}'"
            ));
        };
        let got = match raw
            .strip_prefix("=?base64?")
            .and_then(|r| r.strip_suffix("?="))
        {
            Some(encoded) => base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .ok_or_else(|| format!("la cabecera Mcp-Param-{suffix} no es Base64 válido"))?,
            None => raw.to_owned(),
        };
        if got != expected {
            return Err(format!(
                "la cabecera Mcp-Param-{suffix} no coincide con el argumento '{argument}'"
            ));
        }
    }
    Ok(())
}

/// The HTTP status of an answer line in the stateless era.
fn modern_status(line: &str) -> StatusCode {
    let code = serde_json::from_str::<Value>(line)
        .ok()
        .and_then(|v| v["error"]["code"].as_i64());
    match code {
        Some(-32601) => StatusCode::NOT_FOUND,
        Some(-32022..=-32020) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

async fn stateless(
    shared: Arc<Shared>,
    headers: &HeaderMap,
    message: &Value,
    body: &[u8],
) -> Response {
    let id = message.get("id");
    if let Err((status, error)) = check_modern_headers(&shared.service, headers, message) {
        return error_response(status, id, &error);
    }
    let action = {
        let (shared, body) = (Arc::clone(&shared), body.to_vec());
        off_the_runtime(move || Session::new(&shared.service).handle(jsonrpc::classify(&body)))
            .await
    };
    match action {
        Action::Send(line) => json_response(modern_status(&line), line, None),
        Action::Nothing | Action::Cancel(_) => StatusCode::ACCEPTED.into_response(),
        Action::Call(call) => {
            let sse = accepts_sse(headers);
            calls::run(shared, None, call, body.len(), sse).await
        }
        Action::Task(call) => {
            let sse = accepts_sse(headers);
            task(shared, None, call, body.len(), sse).await
        }
        Action::Listen { id, filter } => listen(&shared, id.get(), &filter),
    }
}

/// A tool call answered with a task handle, owned by the session (stateless requests share
/// one owner); an ordinary call when [`tasks::start`] says so.
async fn task(
    shared: Arc<Shared>,
    session: Option<Arc<HttpSession>>,
    call: Call,
    size: usize,
    sse: bool,
) -> Response {
    let owner = session
        .as_ref()
        .map_or_else(|| STATELESS_OWNER.to_owned(), |s| s.id.clone());
    let started = {
        let shared = Arc::clone(&shared);
        tokio::task::spawn_blocking(move || tasks::start(&shared.service, call, &owner)).await
    };
    match started {
        Ok(Started::Line(line)) => json_response(StatusCode::OK, line, None),
        Ok(Started::Ordinary(call)) => calls::run(shared, session, *call, size, sse).await,
        Err(_) => {
            let error = RpcError::new(ErrorCode::InternalError, "la tarea no pudo crearse");
            error_response(StatusCode::INTERNAL_SERVER_ERROR, None, &error)
        }
    }
}

/// Who owns the tasks of requests without a session (2026-07-28).
const STATELESS_OWNER: &str = "sin-sesion";

/// Runs `handle` (which may read the application's data: a resource, a prompt's checks) on a
/// blocking thread, so the runtime's few threads keep serving other connections.
async fn off_the_runtime(handle: impl FnOnce() -> Action + Send + 'static) -> Action {
    match tokio::task::spawn_blocking(handle).await {
        Ok(action) => action,
        Err(_) => Action::Send(error_line(
            None,
            &RpcError::new(ErrorCode::InternalError, "la petición falló internamente"),
        )),
    }
}

/// `subscriptions/listen`: acknowledges the list changes it will send, then keeps the stream.
fn listen(shared: &Shared, id: &str, filter: &Value) -> Response {
    let id: Value = serde_json::from_str(id).unwrap_or(Value::Null);
    let keys = [
        "toolsListChanged",
        "promptsListChanged",
        "resourcesListChanged",
    ];
    let mut wants = [false; 3];
    let mut honoured = serde_json::Map::new();
    for (i, (key, list)) in keys.iter().zip(List::ALL).enumerate() {
        if filter[key] == json!(true) && shared.service.announces(list) {
            wants[i] = true;
            honoured.insert((*key).into(), json!(true));
        }
    }
    // Task ids the store knows; the session refused `taskIds` from a client without the
    // extension already.
    let tasks: Vec<(String, Value)> = match (&shared.service.tasks, filter["taskIds"].as_array()) {
        (Some(store), Some(ids)) => ids
            .iter()
            .filter_map(Value::as_str)
            .filter_map(|task| Some((task.to_owned(), store.snapshot(task)?)))
            .collect(),
        _ => Vec::new(),
    };
    if !tasks.is_empty() {
        let ids: Vec<&str> = tasks.iter().map(|(task, _)| task.as_str()).collect();
        honoured.insert("taskIds".into(), json!(ids));
    }
    let (writer, rx) = Streams::default().open();
    let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": id}, "notifications": honoured}});
    writer.send(ack.to_string());
    shared
        .listeners
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Listener {
            writer,
            id,
            wants,
            tasks,
        });
    sse_response(rx, &[])
}

async fn legacy(
    shared: Arc<Shared>,
    headers: &HeaderMap,
    session_id: Option<String>,
    message: &Value,
    body: &[u8],
) -> Response {
    let id = message.get("id");
    let is_response = message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some());
    let session = match &session_id {
        None if message["method"] == "initialize" => {
            return initialize(&shared, body);
        }
        None => {
            let error = RpcError::new(
                ErrorCode::InvalidRequest,
                "falta la cabecera Mcp-Session-Id: envíe 'initialize' primero",
            );
            return error_response(StatusCode::BAD_REQUEST, id, &error);
        }
        Some(session_id) => match shared.sessions.get(session_id) {
            Some(session) => session,
            None => {
                let error = RpcError::new(
                    ErrorCode::InvalidRequest,
                    "la sesión no existe o terminó: inicialice otra",
                );
                return error_response(StatusCode::NOT_FOUND, id, &error);
            }
        },
    };
    if let Some(version) = header_text(headers, "mcp-protocol-version")
        && ProtocolVersion::parse(version).is_none_or(|v| v.is_modern())
    {
        let error = RpcError::new(
            ErrorCode::InvalidRequest,
            format!("versión de protocolo no admitida en la cabecera: {version}"),
        );
        return error_response(StatusCode::BAD_REQUEST, id, &error);
    }
    if is_response {
        let outcome = match message.get("error") {
            Some(error) => Err(error.to_string()),
            None => Ok(message["result"].clone()),
        };
        if !session.answer(id.unwrap_or(&Value::Null), outcome) {
            log_debug!("respuesta del cliente sin pregunta pendiente");
        }
        return StatusCode::ACCEPTED.into_response();
    }
    let action = {
        let (shared, session, body) = (Arc::clone(&shared), Arc::clone(&session), body.to_vec());
        off_the_runtime(move || {
            let mut state = session.state.lock().unwrap_or_else(PoisonError::into_inner);
            let mut protocol = Session::resume(&shared.service, std::mem::take(&mut *state));
            let action = protocol.handle(jsonrpc::classify(&body));
            *state = protocol.into_state();
            action
        })
        .await
    };
    match action {
        Action::Send(line) => json_response(StatusCode::OK, line, None),
        Action::Nothing => StatusCode::ACCEPTED.into_response(),
        Action::Cancel(raw_id) => {
            let key = format!("{}#{raw_id}", session.id);
            if shared.in_flight.cancel(&key) {
                log_debug!("llamada {key} cancelada por el cliente");
            }
            StatusCode::ACCEPTED.into_response()
        }
        Action::Call(call) => {
            let sse = accepts_sse(headers);
            calls::run(shared, Some(session), call, body.len(), sse).await
        }
        Action::Task(call) => {
            let sse = accepts_sse(headers);
            task(shared, Some(session), call, body.len(), sse).await
        }
        Action::Listen { id, .. } => {
            json_response(StatusCode::OK, Session::cannot_listen(&id), None)
        }
    }
}

/// `initialize` without a session: a new session whose id goes back in the header (none if
/// the handshake failed).
fn initialize(shared: &Shared, body: &[u8]) -> Response {
    let Some(session) = shared.sessions.create() else {
        let error = RpcError::new(
            ErrorCode::InvalidRequest,
            format!(
                "demasiadas sesiones abiertas ({}): cierre alguna o espere",
                shared.options.max_sessions
            ),
        );
        return error_response(StatusCode::SERVICE_UNAVAILABLE, None, &error);
    };
    let mut protocol = Session::new(&shared.service);
    let action = protocol.handle(jsonrpc::classify(body));
    let opened = protocol.state().version().is_some();
    *session.state.lock().unwrap_or_else(PoisonError::into_inner) = protocol.into_state();
    let Action::Send(line) = action else {
        shared.sessions.remove(&session.id);
        return StatusCode::ACCEPTED.into_response();
    };
    if !opened {
        shared.sessions.remove(&session.id);
        return json_response(StatusCode::OK, line, None);
    }
    log_info!(
        "sesión HTTP {} abierta ({} en total)",
        &session.id[..8],
        shared.sessions.count()
    );
    json_response(StatusCode::OK, line, Some(&session.id))
}

/// The session a `GET`/`DELETE` names, or the refusal: 405 in the stateless era, 400 without
/// an id, 404 for one that ended.
fn named_session(shared: &Shared, headers: &HeaderMap) -> Result<Arc<HttpSession>, Box<Response>> {
    if let Some(refusal) = shared.options.guard.check(headers) {
        return Err(Box::new(refusal));
    }
    let Some(id) = header_text(headers, "mcp-session-id") else {
        let modern = header_text(headers, "mcp-protocol-version")
            .and_then(ProtocolVersion::parse)
            .is_some_and(ProtocolVersion::is_modern);
        let status = if modern {
            StatusCode::METHOD_NOT_ALLOWED
        } else {
            StatusCode::BAD_REQUEST
        };
        return Err(Box::new(
            (status, "falta la cabecera Mcp-Session-Id").into_response(),
        ));
    };
    shared.sessions.get(id).ok_or_else(|| {
        Box::new((StatusCode::NOT_FOUND, "la sesión no existe o terminó").into_response())
    })
}

/// `GET`: the session's stream for server messages, or a lost stream resumed.
async fn get_stream(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let session = match named_session(&shared, &headers) {
        Ok(session) => session,
        Err(refusal) => return *refusal,
    };
    if !accepts_sse(&headers) {
        return (
            StatusCode::NOT_ACCEPTABLE,
            "el GET necesita 'Accept: text/event-stream'",
        )
            .into_response();
    }
    if let Some(last) = header_text(&headers, "last-event-id") {
        return match session.streams.resume(last) {
            Some(rx) => sse_response(rx, &[]),
            None => (StatusCode::NOT_FOUND, "no se conoce ese flujo").into_response(),
        };
    }
    let (writer, rx) = session.streams.open();
    *session
        .standalone
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Some(writer);
    sse_response(rx, &[])
}

/// `DELETE`: the client ends its session.
async fn delete(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    match named_session(&shared, &headers) {
        Ok(session) => {
            shared.sessions.remove(&session.id);
            log_info!("sesión HTTP {} cerrada por el cliente", &session.id[..8]);
            StatusCode::OK.into_response()
        }
        Err(refusal) => *refusal,
    }
}

async fn sweep_sessions(shared: Arc<Shared>) {
    let every =
        (shared.options.session_idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(60));
    while !shared.stopping.load(Ordering::Relaxed) {
        tokio::time::sleep(every).await;
        let ended = shared.sessions.sweep();
        if ended > 0 {
            log_info!("{ended} sesiones HTTP cerradas por inactividad");
        }
    }
}

/// Tells every session that is ready, and every listener that asked, when a list changes.
/// `last` holds the versions read before the first request was accepted.
async fn watch_lists(shared: Arc<Shared>, mut last: [u64; 3]) {
    let service = Arc::clone(&shared.service);
    if !List::ALL.iter().any(|l| service.announces(*l)) {
        return;
    }
    while !shared.stopping.load(Ordering::Relaxed) {
        service.changes.wait(Duration::from_secs(1)).await;
        let probe = Arc::clone(&service);
        let Ok(now) = tokio::task::spawn_blocking(move || probe.list_versions()).await else {
            return;
        };
        for (i, list) in List::ALL.into_iter().enumerate() {
            if now[i] != last[i] && service.announces(list) {
                announce(&shared, list, i);
            }
        }
        last = now;
    }
}

/// Sends `notifications/tasks` (the detailed task, as `tasks/get` would answer) to the
/// listeners that asked for a task whenever it changes; a task that ended or is gone is
/// not watched any more.
async fn watch_tasks(shared: Arc<Shared>) {
    let Some(store) = &shared.service.tasks else {
        return;
    };
    let mut last = store.version();
    while !shared.stopping.load(Ordering::Relaxed) {
        store.wait(Duration::from_secs(1)).await;
        let now = store.version();
        if now == last {
            continue;
        }
        last = now;
        let mut listeners = shared
            .listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for listener in listeners.iter_mut() {
            let subscription = listener.id.clone();
            let writer = &listener.writer;
            listener.tasks.retain_mut(|(task, sent)| {
                let Some(current) = store.snapshot(task) else {
                    return false;
                };
                if current != *sent {
                    let mut params = current.clone();
                    params["_meta"] =
                        json!({"io.modelcontextprotocol/subscriptionId": subscription});
                    writer.send(notification_line("notifications/tasks", &params));
                    *sent = current;
                }
                !["completed", "failed", "cancelled"]
                    .contains(&sent["status"].as_str().unwrap_or(""))
            });
        }
        listeners.retain(|listener| listener.writer.is_live());
    }
}

fn announce(shared: &Shared, list: List, index: usize) {
    log_info!(
        "cambió una lista ({}): se avisa a los clientes",
        list.notification()
    );
    let line = notification_line(list.notification(), &json!({}));
    for session in shared.sessions.all() {
        let ready = session
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_ready();
        if ready {
            session.notify(line.clone());
        }
    }
    let mut listeners = shared
        .listeners
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    listeners.retain(|listener| {
        if !listener.wants[index] {
            return listener.writer.is_live();
        }
        let params = json!({"_meta": {"io.modelcontextprotocol/subscriptionId": listener.id}});
        listener
            .writer
            .send(notification_line(list.notification(), &params))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead as _, Write as _};
    use std::sync::atomic::AtomicU64;
    use std::sync::mpsc;

    #[test]
    fn a_list_changed_right_after_the_first_answer_is_announced_however_slow_the_first_look() {
        // The resource list's version takes a while to read the first time (a database being
        // opened); the list changes right after the client has its session and stream.
        let version = Arc::new(AtomicU64::new(1));
        let service = Service::with_slow_first_version(&version, Duration::from_millis(500));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // Never stopped: the thread ends with the test process.
        std::thread::spawn(move || serve_http(service, listener, HttpOptions::default()));

        // Raw HTTP/1.1 over a socket: only the transports speak HTTP through crates (tidy).
        let request = |method: &str, body: &str, session: Option<&str>| {
            let mut stream = std::net::TcpStream::connect(addr).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(120)))
                .unwrap();
            let session = session.map_or(String::new(), |id| format!("mcp-session-id: {id}\r\n"));
            let accept = if method == "GET" {
                "text/event-stream"
            } else {
                "application/json, text/event-stream"
            };
            write!(
                stream,
                "{method} /mcp HTTP/1.1\r\nhost: {addr}\r\naccept: {accept}\r\n\
                 content-type: application/json\r\nmcp-protocol-version: 2025-11-25\r\n\
                 {session}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            let mut reader = std::io::BufReader::new(stream);
            let mut head = Vec::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line.trim().is_empty() {
                    break;
                }
                head.push(line.trim().to_owned());
            }
            (head, reader)
        };
        let header = |head: &[String], name: &str| {
            head.iter().find_map(|l| {
                let (key, value) = l.split_once(':')?;
                key.eq_ignore_ascii_case(name)
                    .then(|| value.trim().to_owned())
            })
        };
        let (head, _) = request(
            "POST",
            r#"{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "prueba", "version": "1"}}}"#,
            None,
        );
        assert!(head[0].contains(" 200 "), "{head:?}");
        let id = header(&head, "mcp-session-id").unwrap();
        let (head, _) = request(
            "POST",
            r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#,
            Some(&id),
        );
        assert!(head[0].contains(" 202 "), "{head:?}");
        let (head, stream) = request("GET", "", Some(&id));
        assert!(head[0].contains(" 200 "), "{head:?}");
        version.store(2, Ordering::SeqCst);

        let (lines, seen) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stream.lines() {
                let Ok(line) = line else { return };
                if lines.send(line).is_err() {
                    return;
                }
            }
        });
        // Generous: a liveness bound, not a performance claim (the watcher looks every second).
        let until = std::time::Instant::now() + Duration::from_secs(120);
        let mut announced = false;
        while let Ok(line) =
            seen.recv_timeout(until.saturating_duration_since(std::time::Instant::now()))
        {
            if line.contains("notifications/resources/list_changed") {
                announced = true;
                break;
            }
        }
        assert!(announced, "no list_changed on the session's stream");
    }
}
