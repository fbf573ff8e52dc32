//! The MCP state machine: what each incoming message means and what to answer.
//!
//! Owns the lifecycle of both eras. Legacy clients (2024-11-05 … 2025-11-25) go through
//! `initialize` → `notifications/initialized`; modern ones (2026-07-28) put the protocol
//! version in every request's `_meta` and need no handshake. [`Session::handle`] turns one
//! classified message into an [`Action`]; running a tool call is
//! [`Service::execute`](super::Service::execute), which a worker thread invokes. Neither does
//! I/O, so both are tested with plain values. A transport that keeps sessions between
//! requests (HTTP) stores the [`SessionState`] and resumes it.

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::catalog;
use super::jsonrpc::{ErrorCode, Incoming, RawId, Request, RpcError, error_line, response_line};
use super::logging::LogLevel;
use super::service::{Call, LIST_TTL_MS, Service, tool_json};
use super::tasks;
use super::tool::{RequestInfo, TaskSupport, arguments_or_empty};
use super::version::ProtocolVersion;
use crate::log_info;

pub(super) const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
const META_PREFIX: &str = "io.modelcontextprotocol/";

/// Methods this server may answer; anything else is `-32601` in every state.
const METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
    "subscriptions/listen",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
];

/// Methods 2026-07-28 removed: a request that carries the modern `_meta` gets `-32601`.
const REMOVED_IN_MODERN: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Lifecycle {
    #[default]
    New,
    /// `initialize` answered; waiting for `notifications/initialized`.
    Initializing(ProtocolVersion),
    Ready(ProtocolVersion),
}

/// What the transport must do with one incoming message.
#[derive(Debug)]
pub enum Action {
    /// Write this line.
    Send(String),
    /// Nothing to write (notifications, responses).
    Nothing,
    /// Run a tool call on a worker and write its answer when done.
    Call(Call),
    /// Answer a tool call with a task handle (the tasks extension): hand it to
    /// [`tasks::start`] and write the line it returns.
    Task(Call),
    /// `notifications/cancelled` for the request whose raw id text is given.
    Cancel(String),
    /// `subscriptions/listen` (2026-07-28): keep a stream open for the list-changed
    /// notifications `filter` asks for. Transports that cannot stream answer with
    /// [`Session::cannot_listen`].
    Listen { id: RawId, filter: Value },
}

/// One client's protocol state, apart from the service, so a transport can keep it between
/// requests.
#[derive(Debug, Clone, Default)]
pub struct SessionState {
    lifecycle: Lifecycle,
    /// `logging/setLevel`'s level (legacy); `None` until set.
    log_level: Option<LogLevel>,
    /// URIs the client subscribed to.
    subscriptions: BTreeSet<String>,
    /// The capabilities the client declared in `initialize`.
    client_capabilities: Value,
}

impl SessionState {
    /// The negotiated version once `initialize` was answered.
    pub fn version(&self) -> Option<ProtocolVersion> {
        match self.lifecycle {
            Lifecycle::New => None,
            Lifecycle::Initializing(v) | Lifecycle::Ready(v) => Some(v),
        }
    }

    /// Whether the handshake is complete (server notifications may be sent).
    pub fn is_ready(&self) -> bool {
        matches!(self.lifecycle, Lifecycle::Ready(_))
    }

    /// Whether the client subscribed to `uri`.
    pub fn subscribed(&self, uri: &str) -> bool {
        self.subscriptions.contains(uri)
    }
}

/// One client connection's protocol state, bound to the service it talks to.
pub struct Session<'a> {
    service: &'a Service,
    state: SessionState,
}

impl<'a> Session<'a> {
    pub fn new(service: &'a Service) -> Self {
        Session::resume(service, SessionState::default())
    }

    /// Continues a session whose state the transport kept.
    pub fn resume(service: &'a Service, state: SessionState) -> Self {
        Session { service, state }
    }

    pub fn state(&self) -> &SessionState {
        &self.state
    }

    pub fn into_state(self) -> SessionState {
        self.state
    }

    pub fn handle(&mut self, incoming: Incoming) -> Action {
        match incoming {
            Incoming::Request(request) => {
                let id = request.id.clone();
                match self.request(request) {
                    Ok(Reply::Result(result)) => Action::Send(response_line(&id, &result)),
                    Ok(Reply::Call(call)) if call.task => Action::Task(*call),
                    Ok(Reply::Call(call)) => Action::Call(*call),
                    Ok(Reply::Listen(filter)) => Action::Listen { id, filter },
                    Err(error) => Action::Send(error_line(Some(&id), &error)),
                }
            }
            Incoming::Notification(notification) => {
                match notification.method.as_str() {
                    "notifications/initialized" => {
                        if let Lifecycle::Initializing(version) = self.state.lifecycle {
                            self.state.lifecycle = Lifecycle::Ready(version);
                        }
                    }
                    "notifications/cancelled" => {
                        if let Some(id) = cancelled_request_id(notification.params.as_deref()) {
                            return Action::Cancel(id);
                        }
                    }
                    _ => {}
                }
                Action::Nothing
            }
            Incoming::Response | Incoming::BadNotification { .. } => Action::Nothing,
            Incoming::Invalid { id, error } => Action::Send(error_line(id.as_deref(), &error)),
        }
    }

    /// The answer to a `subscriptions/listen` on a transport that cannot keep a stream open.
    pub fn cannot_listen(id: &RawValue) -> String {
        error_line(
            Some(id),
            &RpcError::new(
                ErrorCode::MethodNotFound,
                "'subscriptions/listen' solo está disponible por HTTP",
            ),
        )
    }

    /// Whether the service offers what `method` is about (else it is unknown here).
    fn offers(&self, method: &str) -> bool {
        let service = self.service;
        let has_resources = !service.resources.is_empty() || !service.templates.is_empty();
        match method {
            "prompts/list" | "prompts/get" => !service.prompts.is_empty(),
            "resources/list" | "resources/templates/list" | "resources/read" => has_resources,
            "resources/subscribe" | "resources/unsubscribe" => has_resources && service.subscribe,
            "completion/complete" => !service.prompts.is_empty() || !service.templates.is_empty(),
            "logging/setLevel" => service.logging,
            "tasks/get" | "tasks/update" | "tasks/cancel" => service.tasks.is_some(),
            other => METHODS.contains(&other),
        }
    }

    fn request(&mut self, request: Request) -> Result<Reply, RpcError> {
        let method = request.method.as_str();
        if !METHODS.contains(&method) || !self.offers(method) {
            return Err(unknown_method(method));
        }
        let params = parse_params(request.params.as_deref())?;
        let modern = modern_version(&params)?;
        if modern.is_some() && REMOVED_IN_MODERN.contains(&method) {
            return Err(RpcError::new(
                ErrorCode::MethodNotFound,
                format!("'{method}' no existe en la versión 2026-07-28 del protocolo"),
            ));
        }
        let service = self.service;
        let result = match method {
            "initialize" => self.initialize(&params)?,
            "ping" => json!({}),
            "server/discover" => return Ok(Reply::Result(self.discover())),
            "tools/call" => {
                let version = self.era(modern, method)?;
                let call = self.call(request.id, &params, request.params.as_deref(), version)?;
                return Ok(Reply::Call(Box::new(call)));
            }
            "tasks/get" | "tasks/update" | "tasks/cancel" => {
                let version = self.era(modern, method)?;
                return Ok(Reply::Result(self.task_method(method, &params, version)?));
            }
            "subscriptions/listen" => {
                if modern.is_none() {
                    return Err(RpcError::new(
                        ErrorCode::MethodNotFound,
                        "'subscriptions/listen' es de la versión 2026-07-28 del protocolo",
                    ));
                }
                let filter = params.get("notifications").cloned().unwrap_or(json!({}));
                let wants_tasks = filter
                    .get("taskIds")
                    .and_then(Value::as_array)
                    .is_some_and(|ids| !ids.is_empty());
                if wants_tasks
                    && self.service.tasks.is_some()
                    && modern.is_some_and(|v| !self.declares_tasks(&params, v))
                {
                    return Err(tasks::missing_extension());
                }
                return Ok(Reply::Listen(filter));
            }
            _ => {
                let version = self.era(modern, method)?;
                let result = match method {
                    "tools/list" => self.list_tools(&params, version)?,
                    "prompts/list" => catalog::list_prompts(service, &params, version)?,
                    "prompts/get" => {
                        let request = self.request_info(&params, version)?;
                        catalog::get_prompt(service, &params, &request, version)?
                    }
                    "resources/list" => catalog::list_resources(service, &params)?,
                    "resources/templates/list" => catalog::list_templates(service, &params)?,
                    "resources/read" => catalog::read_resource(service, &params, version)?,
                    "completion/complete" => catalog::complete(service, &params)?,
                    "logging/setLevel" => self.set_level(&params)?,
                    "resources/subscribe" | "resources/unsubscribe" => {
                        self.subscription(method, &params)?
                    }
                    _ => return Err(unknown_method(method)),
                };
                return Ok(Reply::Result(modern_fields(method, result, version)));
            }
        };
        Ok(Reply::Result(result))
    }

    /// The version a request is served at: its own `_meta` version (modern), or the one the
    /// handshake negotiated (legacy).
    fn era(
        &self,
        modern: Option<ProtocolVersion>,
        method: &str,
    ) -> Result<ProtocolVersion, RpcError> {
        if let Some(version) = modern {
            return Ok(version);
        }
        match self.state.lifecycle {
            Lifecycle::Ready(version) => Ok(version),
            Lifecycle::Initializing(_) => Err(RpcError::new(
                ErrorCode::InvalidRequest,
                format!(
                    "sesión inicializándose: envíe 'notifications/initialized' antes de '{method}'"
                ),
            )),
            Lifecycle::New => Err(RpcError::new(
                ErrorCode::InvalidRequest,
                format!(
                    "sesión no inicializada: envíe 'initialize' y 'notifications/initialized' \
                     antes de '{method}', o indique la versión 2026-07-28 en \
                     params._meta[\"{META_VERSION}\"]"
                ),
            )),
        }
    }

    fn initialize(&mut self, params: &Map<String, Value>) -> Result<Value, RpcError> {
        if self.state.lifecycle != Lifecycle::New {
            return Err(RpcError::new(
                ErrorCode::InvalidRequest,
                "la sesión ya está inicializada: 'initialize' solo se acepta una vez",
            ));
        }
        let requested = match params.get("protocolVersion") {
            Some(Value::String(requested)) => requested,
            Some(_) => {
                return Err(RpcError::new(
                    ErrorCode::InvalidParams,
                    "'protocolVersion' debe ser un texto como \"2025-11-25\"",
                ));
            }
            None => {
                return Err(RpcError::new(
                    ErrorCode::InvalidParams,
                    "falta 'protocolVersion' en los parámetros de 'initialize'",
                ));
            }
        };
        // Echo a supported handshake version; otherwise offer the newest one. A modern
        // version is never echoed here: the client would switch to per-request semantics.
        let version = ProtocolVersion::parse(requested)
            .filter(|v| !v.is_modern())
            .unwrap_or(ProtocolVersion::LATEST_LEGACY);
        let client = params
            .get("clientInfo")
            .map(|info| info.to_string())
            .unwrap_or_else(|| "(sin clientInfo)".into());
        log_info!("initialize: cliente {client} pidió {requested}, se acuerda {version}");
        self.state.lifecycle = Lifecycle::Initializing(version);
        self.state.client_capabilities = params.get("capabilities").cloned().unwrap_or(json!({}));
        let mut result = json!({
            "protocolVersion": version.as_str(),
            "capabilities": self.service.capabilities(),
            "serverInfo": self.service.server_info_json(),
        });
        if let Some(instructions) = &self.service.instructions {
            result["instructions"] = Value::String(instructions.clone());
        }
        Ok(result)
    }

    fn discover(&self) -> Value {
        let mut result = json!({
            "resultType": "complete",
            "supportedVersions": ProtocolVersion::all_strs(),
            "capabilities": self.service.modern_capabilities(),
            "ttlMs": LIST_TTL_MS,
            "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": self.service.server_info_json()},
        });
        if let Some(instructions) = &self.service.instructions {
            result["instructions"] = Value::String(instructions.clone());
        }
        result
    }

    fn list_tools(
        &self,
        params: &Map<String, Value>,
        version: ProtocolVersion,
    ) -> Result<Value, RpcError> {
        if params.get("cursor").is_some_and(|c| !c.is_null()) {
            // All tools come on one page, so no cursor was ever issued.
            return Err(RpcError::new(
                ErrorCode::InvalidParams,
                "cursor inválido: la lista de herramientas tiene una sola página",
            ));
        }
        let tools: Vec<Value> = self
            .service
            .tools
            .iter()
            .map(|tool| tool_json(tool.as_ref(), version))
            .collect();
        Ok(json!({"tools": tools}))
    }

    fn set_level(&mut self, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let level = params
            .get("level")
            .and_then(Value::as_str)
            .and_then(LogLevel::parse)
            .ok_or_else(|| {
                RpcError::new(
                    ErrorCode::InvalidParams,
                    format!("'level' debe ser uno de: {}", LogLevel::names().join(", ")),
                )
            })?;
        self.state.log_level = Some(level);
        Ok(json!({}))
    }

    fn subscription(
        &mut self,
        method: &str,
        params: &Map<String, Value>,
    ) -> Result<Value, RpcError> {
        let Some(uri) = params.get("uri").and_then(Value::as_str) else {
            return Err(RpcError::new(
                ErrorCode::InvalidParams,
                "falta 'uri' (un texto)",
            ));
        };
        if method == "resources/subscribe" {
            self.state.subscriptions.insert(uri.to_owned());
        } else {
            self.state.subscriptions.remove(uri);
        }
        Ok(json!({}))
    }

    fn call(
        &self,
        id: RawId,
        params: &Map<String, Value>,
        raw_params: Option<&RawValue>,
        version: ProtocolVersion,
    ) -> Result<Call, RpcError> {
        let name = match params.get("name") {
            Some(Value::String(name)) => name,
            Some(_) => {
                return Err(RpcError::new(
                    ErrorCode::InvalidParams,
                    "'name' debe ser un texto con el nombre de la herramienta",
                ));
            }
            None => {
                return Err(RpcError::new(
                    ErrorCode::InvalidParams,
                    "falta 'name' (el nombre de la herramienta)",
                ));
            }
        };
        let tools = &self.service.tools;
        let Some(tool) = tools.iter().position(|t| t.name() == *name) else {
            let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
            return Err(RpcError::new(
                ErrorCode::InvalidParams,
                format!(
                    "herramienta desconocida: {name}; las disponibles son: {}",
                    if names.is_empty() {
                        "(ninguna)".to_owned()
                    } else {
                        names.join(", ")
                    }
                ),
            ));
        };
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => arguments_or_empty(None),
            Some(object @ Value::Object(_)) => object.clone(),
            Some(_) => {
                return Err(RpcError::new(
                    ErrorCode::InvalidParams,
                    "'arguments' debe ser un objeto",
                ));
            }
        };
        let request = self.request_info(params, version)?;
        if version.is_modern()
            && let Some(missing) = missing_capabilities(
                tools[tool].definition().requires.as_ref(),
                &request.client_capabilities,
            )
        {
            return Err(RpcError::with_data(
                ErrorCode::MissingClientCapability,
                json!({"requiredCapabilities": missing}),
            ));
        }
        let task = self.wants_task(tools[tool].definition().task_support, params, version)?;
        Ok(Call {
            id,
            tool,
            arguments,
            version,
            progress_token: progress_token(raw_params),
            log_level: self.call_log_level(params, version),
            request,
            task,
        })
    }

    /// Whether the request declares the tasks extension. Only a 2026-07-28 request can, in
    /// its own `_meta`: the extension says "regardless of prior declarations", and a legacy
    /// client that names it in `initialize` (the Inspector does) does not expect a task
    /// handle in its place of a result.
    fn declares_tasks(&self, params: &Map<String, Value>, version: ProtocolVersion) -> bool {
        version.is_modern()
            && meta(params)
                .and_then(|m| m.get(META_CAPABILITIES))
                .is_some_and(tasks::declared)
    }

    /// Whether a call becomes a task: the server offers tasks, the tool allows them and the
    /// client declared the extension; a tool that runs only as a task refuses a client that
    /// did not (`-32021`).
    fn wants_task(
        &self,
        support: TaskSupport,
        params: &Map<String, Value>,
        version: ProtocolVersion,
    ) -> Result<bool, RpcError> {
        if self.service.tasks.is_none() {
            return Ok(false);
        }
        let declared = self.declares_tasks(params, version);
        match support {
            TaskSupport::Forbidden => Ok(false),
            TaskSupport::Optional => Ok(declared),
            TaskSupport::Required if declared => Ok(true),
            TaskSupport::Required => Err(tasks::missing_extension()),
        }
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel`, for clients that declared the extension.
    fn task_method(
        &self,
        method: &str,
        params: &Map<String, Value>,
        version: ProtocolVersion,
    ) -> Result<Value, RpcError> {
        let Some(store) = &self.service.tasks else {
            return Err(unknown_method(method));
        };
        if !self.declares_tasks(params, version) {
            return Err(tasks::missing_extension());
        }
        let Some(id) = params.get("taskId").and_then(Value::as_str) else {
            return Err(RpcError::new(
                ErrorCode::InvalidParams,
                "falta 'taskId' (el texto que devolvió el servidor al crear la tarea)",
            ));
        };
        match method {
            "tasks/get" => store.get(id),
            "tasks/cancel" => store.cancel(id),
            _ => match params.get("inputResponses").and_then(Value::as_object) {
                Some(responses) => store.update(id, responses),
                None => Err(RpcError::new(
                    ErrorCode::InvalidParams,
                    "'inputResponses' debe ser un objeto con las respuestas por clave",
                )),
            },
        }
    }

    /// Which log messages a call may send: per request in 2026-07-28 (none unless asked),
    /// the session's level in the legacy era (info until `logging/setLevel`).
    fn call_log_level(
        &self,
        params: &Map<String, Value>,
        version: ProtocolVersion,
    ) -> Option<LogLevel> {
        if !self.service.logging {
            return None;
        }
        if version.is_modern() {
            return meta(params)
                .and_then(|m| m.get(META_LOG_LEVEL))
                .and_then(Value::as_str)
                .and_then(LogLevel::parse);
        }
        Some(self.state.log_level.unwrap_or(LogLevel::Info))
    }

    /// What a call or prompt may read besides its arguments. In 2026-07-28 the answers to an
    /// input request must be an object of result objects, and the state a string.
    fn request_info(
        &self,
        params: &Map<String, Value>,
        version: ProtocolVersion,
    ) -> Result<RequestInfo, RpcError> {
        if !version.is_modern() {
            return Ok(RequestInfo {
                client_capabilities: self.state.client_capabilities.clone(),
                ..RequestInfo::default()
            });
        }
        let responses = params.get("inputResponses").filter(|v| !v.is_null());
        let well_formed = responses.is_none_or(|r| {
            r.as_object()
                .is_some_and(|answers| answers.values().all(Value::is_object))
        });
        if !well_formed {
            return Err(RpcError::new(
                ErrorCode::InvalidParams,
                "'inputResponses' debe ser un objeto cuyas respuestas son objetos",
            ));
        }
        if params
            .get("requestState")
            .is_some_and(|s| !s.is_string() && !s.is_null())
        {
            return Err(RpcError::new(
                ErrorCode::InvalidParams,
                "'requestState' debe ser el texto que devolvió el servidor",
            ));
        }
        Ok(RequestInfo {
            client_capabilities: meta(params)
                .and_then(|m| m.get(META_CAPABILITIES))
                .cloned()
                .unwrap_or(json!({})),
            input_responses: params.get("inputResponses").cloned(),
            request_state: params
                .get("requestState")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }
}

enum Reply {
    Result(Value),
    Call(Box<Call>),
    Listen(Value),
}

fn unknown_method(method: &str) -> RpcError {
    RpcError::new(
        ErrorCode::MethodNotFound,
        format!("método desconocido: {method}"),
    )
}

/// Adds what 2026-07-28 requires of a result: `resultType`, and caching hints on lists and
/// reads (a read is private: it may hold the operator's data, and it may change).
fn modern_fields(method: &str, mut result: Value, version: ProtocolVersion) -> Value {
    if !version.is_modern() {
        return result;
    }
    if result.get("resultType").is_some() {
        // An input-required answer: no caching hints, it is not a result yet.
        return result;
    }
    result["resultType"] = json!("complete");
    match method {
        "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" => {
            result["ttlMs"] = json!(LIST_TTL_MS);
            result["cacheScope"] = json!("public");
        }
        "resources/read" => {
            result["ttlMs"] = json!(0);
            result["cacheScope"] = json!("private");
        }
        _ => {}
    }
    result
}

/// The part of `required` (a `ClientCapabilities` object) that `declared` lacks, if any.
fn missing_capabilities(required: Option<&Value>, declared: &Value) -> Option<Value> {
    let required = required?.as_object()?;
    let missing: Map<String, Value> = required
        .iter()
        .filter(|(name, _)| declared.get(name.as_str()).is_none_or(Value::is_null))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    (!missing.is_empty()).then_some(Value::Object(missing))
}

fn meta(params: &Map<String, Value>) -> Option<&Map<String, Value>> {
    params.get("_meta").and_then(Value::as_object)
}

fn parse_params(raw: Option<&RawValue>) -> Result<Map<String, Value>, RpcError> {
    let Some(raw) = raw else {
        return Ok(Map::new());
    };
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(Value::Null) => Ok(Map::new()),
        Ok(_) => Err(RpcError::new(
            ErrorCode::InvalidParams,
            "los parámetros de los métodos MCP deben ser un objeto",
        )),
        // The envelope parsed, so this is a limit (nesting deeper than 128 levels).
        Err(e) => Err(RpcError::new(
            ErrorCode::InvalidParams,
            format!(
                "no se pudieron leer los parámetros: {}",
                crate::plumbing::spanish::json_what(&e)
            ),
        )),
    }
}

/// The modern era is selected per request by `_meta["io.modelcontextprotocol/protocolVersion"]`.
pub(super) fn modern_version(
    params: &Map<String, Value>,
) -> Result<Option<ProtocolVersion>, RpcError> {
    let Some(meta) = meta(params) else {
        return Ok(None);
    };
    let Some(requested) = meta.get(META_VERSION) else {
        if meta.keys().any(|k| k.starts_with(META_PREFIX)) {
            return Err(RpcError::new(
                ErrorCode::InvalidParams,
                format!("falta _meta[\"{META_VERSION}\"]"),
            ));
        }
        return Ok(None);
    };
    let requested_text = requested.as_str().unwrap_or_default();
    let Some(version) = ProtocolVersion::parse(requested_text).filter(|v| v.is_modern()) else {
        return Err(RpcError::with_data(
            ErrorCode::UnsupportedProtocolVersion,
            json!({
                "supported": ProtocolVersion::all_strs(),
                "requested": requested,
            }),
        ));
    };
    if !meta.contains_key(META_CAPABILITIES) {
        return Err(RpcError::new(
            ErrorCode::InvalidParams,
            format!("falta _meta[\"{META_CAPABILITIES}\"]"),
        ));
    }
    Ok(Some(version))
}

#[derive(Deserialize)]
struct MetaHolder {
    #[serde(rename = "_meta")]
    meta: Option<ProgressMeta>,
}

#[derive(Deserialize)]
struct ProgressMeta {
    #[serde(rename = "progressToken")]
    progress_token: Option<Box<RawValue>>,
}

/// The progress token, raw, so it is echoed with its exact type.
fn progress_token(raw_params: Option<&RawValue>) -> Option<RawId> {
    let holder: MetaHolder = serde_json::from_str(raw_params?.get()).ok()?;
    let token = holder.meta?.progress_token?;
    let kind = super::jsonrpc::json_kind(token.get());
    (kind == "texto" || kind == "número").then_some(token)
}

#[derive(Deserialize)]
struct CancelledParams {
    #[serde(rename = "requestId")]
    request_id: Box<RawValue>,
}

fn cancelled_request_id(raw_params: Option<&RawValue>) -> Option<String> {
    let params: CancelledParams = serde_json::from_str(raw_params?.get()).ok()?;
    Some(params.request_id.get().to_owned())
}

#[cfg(test)]
mod tests {
    use super::super::jsonrpc::classify;
    use super::*;
    use crate::mcp::ServerInfo;

    fn service() -> Service {
        Service {
            info: ServerInfo {
                name: "prueba".into(),
                version: "0.0.1".into(),
                title: "Prueba".into(),
            },
            instructions: Some("instrucciones".into()),
            ..Service::default()
        }
    }

    /// Feeds lines to one session; returns what each produced, as text.
    fn run(lines: &[&str]) -> Vec<String> {
        let service = service();
        let mut session = Session::new(&service);
        lines
            .iter()
            .map(|line| match session.handle(classify(line.as_bytes())) {
                Action::Send(line) => line,
                Action::Nothing => "-".into(),
                Action::Call(call) => format!("call {}", call.tool),
                Action::Task(call) => format!("task {}", call.tool),
                Action::Cancel(id) => format!("cancel {id}"),
                Action::Listen { .. } => "listen".into(),
            })
            .collect()
    }

    fn code(line: &str) -> Option<i64> {
        let value: Value = serde_json::from_str(line).ok()?;
        value["error"]["code"].as_i64()
    }

    const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

    #[test]
    fn handshake_then_list() {
        let out = run(&[INIT, INITIALIZED, LIST]);
        let init: Value = serde_json::from_str(&out[0]).unwrap();
        assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
        assert_eq!(init["result"]["instructions"], "instrucciones");
        assert_eq!(out[1], "-");
        assert_eq!(out[2], r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#);
    }

    #[test]
    fn version_negotiation() {
        for (asked, answered) in [
            ("2024-11-05", "2024-11-05"),
            ("2025-03-26", "2025-03-26"),
            ("2025-11-25", "2025-11-25"),
            ("2026-07-28", "2025-11-25"),
            ("1999-01-01", "2025-11-25"),
        ] {
            let line = INIT.replace("2025-06-18", asked);
            let out: Value = serde_json::from_str(&run(&[&line])[0]).unwrap();
            assert_eq!(out["result"]["protocolVersion"], answered, "asked {asked}");
        }
    }

    #[test]
    fn lifecycle_errors() {
        let out = run(&[LIST, INIT, LIST, INITIALIZED, INIT]);
        assert_eq!(code(&out[0]), Some(-32600));
        assert_eq!(code(&out[2]), Some(-32600));
        assert_eq!(code(&out[4]), Some(-32600));
        let missing = r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}"#;
        assert_eq!(code(&run(&[missing])[0]), Some(-32602));
        let unknown = r#"{"jsonrpc":"2.0","id":3,"method":"resources/list"}"#;
        assert_eq!(code(&run(&[unknown])[0]), Some(-32601));
        let notif_req = r#"{"jsonrpc":"2.0","id":3,"method":"notifications/initialized"}"#;
        assert_eq!(code(&run(&[notif_req])[0]), Some(-32601));
    }

    #[test]
    fn modern_requests_need_no_handshake() {
        let list = r#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
        let out: Value = serde_json::from_str(&run(&[list])[0]).unwrap();
        assert_eq!(out["id"], "a");
        assert_eq!(out["result"]["resultType"], "complete");
        assert_eq!(out["result"]["cacheScope"], "public");
        assert!(out["result"]["ttlMs"].as_u64().is_some());

        let bad = list.replace("2026-07-28", "2030-01-01");
        let out: Value = serde_json::from_str(&run(&[&bad])[0]).unwrap();
        assert_eq!(out["error"]["code"], -32022);
        assert_eq!(out["error"]["data"]["requested"], "2030-01-01");
        assert!(out["error"]["data"]["supported"].as_array().unwrap().len() == 5);

        let no_caps = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        assert_eq!(code(&run(&[no_caps])[0]), Some(-32602));
    }

    #[test]
    fn discover_in_any_state() {
        let discover = r#"{"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/discover","params":{}}"#;
        for out in run(&[discover, INIT, INITIALIZED, discover]) {
            if out == "-" || out.contains("protocolVersion") {
                continue;
            }
            let value: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(value["result"]["resultType"], "complete");
            assert_eq!(
                value["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
                "prueba"
            );
        }
    }

    #[test]
    fn extensions_are_offered_and_the_clients_reach_the_tools() {
        let mut service = service();
        service.extensions = Some(json!({"io.modelcontextprotocol/ui": {}}));
        let mut session = Session::new(&service);
        let init = INIT.replace(
            r#""capabilities":{}"#,
            r#""capabilities":{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}"#,
        );
        let Action::Send(line) = session.handle(classify(init.as_bytes())) else {
            panic!("no answer");
        };
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            answer["result"]["capabilities"]["extensions"],
            json!({"io.modelcontextprotocol/ui": {}})
        );
        session.handle(classify(INITIALIZED.as_bytes()));
        let info = session
            .request_info(&Map::new(), ProtocolVersion::V2025_06_18)
            .unwrap();
        assert_eq!(
            info.client_capabilities["extensions"]["io.modelcontextprotocol/ui"]["mimeTypes"][0],
            "text/html;profile=mcp-app"
        );
    }

    #[test]
    fn cancellation_and_ping() {
        let out = run(&[
            r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x7"}}"#,
        ]);
        assert_eq!(out[0], r#"{"jsonrpc":"2.0","id":5,"result":{}}"#);
        assert_eq!(out[1], r#"cancel "x7""#);
    }

    /// A service offering tasks, with one tool of each task support.
    fn tasks_service() -> Service {
        use crate::mcp::tool::{Annotations, CallContext, Tool, ToolDefinition, ToolError};
        use crate::mcp::{TaskSettings, Tasks, ToolResult};
        struct Plain(ToolDefinition);
        impl Tool for Plain {
            fn definition(&self) -> &ToolDefinition {
                &self.0
            }
            fn call(&self, _: Value, _: &CallContext) -> Result<ToolResult, ToolError> {
                Ok(ToolResult::content(Vec::new()))
            }
        }
        let tool = |name: &str, task_support| -> Box<dyn Tool> {
            Box::new(Plain(ToolDefinition {
                name: name.into(),
                title: name.into(),
                description: name.into(),
                input_schema: json!({"type": "object"}),
                output_schema: None,
                annotations: Annotations::READ_ONLY,
                meta: None,
                requires: None,
                task_support,
            }))
        };
        Service {
            tools: vec![
                tool("nunca", TaskSupport::Forbidden),
                tool("quizas", TaskSupport::Optional),
                tool("siempre", TaskSupport::Required),
            ],
            tasks: Some(Tasks::new(TaskSettings::new(
                crate::plumbing::clock::Clock::fixed(0),
            ))),
            ..service()
        }
    }

    /// A modern request; `ext` declares the tasks extension.
    fn modern(method: &str, params: &str, ext: bool) -> String {
        let extensions = if ext {
            r#"{"extensions":{"io.modelcontextprotocol/tasks":{}}}"#
        } else {
            "{}"
        };
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{{params}"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{extensions}}}}}}}"#
        )
    }

    fn kind(service: &Service, line: &str) -> String {
        match Session::new(service).handle(classify(line.as_bytes())) {
            Action::Send(line) => match code(&line) {
                Some(code) => format!("error {code}"),
                None => "answer".into(),
            },
            Action::Call(call) => format!("call {}", call.tool),
            Action::Task(call) => format!("task {}", call.tool),
            _ => "other".into(),
        }
    }

    #[test]
    fn calls_become_tasks_only_when_the_tool_allows_and_the_client_declares_them() {
        let service = tasks_service();
        let call = |name: &str, ext| {
            let params = format!(r#""name":"{name}","arguments":{{}},"#);
            kind(&service, &modern("tools/call", &params, ext))
        };
        assert_eq!(call("nunca", true), "call 0");
        assert_eq!(call("quizas", true), "task 1");
        assert_eq!(call("siempre", true), "task 2");
        assert_eq!(call("nunca", false), "call 0");
        assert_eq!(call("quizas", false), "call 1");
        assert_eq!(call("siempre", false), "error -32021");
        // A legacy session that names it in `initialize` still gets results, not tasks.
        let mut session = Session::new(&service);
        let init = INIT.replace(
            r#""capabilities":{}"#,
            r#""capabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}"#,
        );
        session.handle(classify(init.as_bytes()));
        session.handle(classify(INITIALIZED.as_bytes()));
        let legacy = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"quizas"}}"#;
        assert!(matches!(
            session.handle(classify(legacy.as_bytes())),
            Action::Call(_)
        ));
        let get = r#"{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"x"}}"#;
        let Action::Send(refused) = session.handle(classify(get.as_bytes())) else {
            panic!("no answer");
        };
        assert_eq!(code(&refused), Some(-32021));
        // Without a store nothing is a task, and a required tool runs as an ordinary call.
        let mut without = tasks_service();
        without.tasks = None;
        let params = r#""name":"siempre","arguments":{},"#;
        assert_eq!(
            kind(&without, &modern("tools/call", params, true)),
            "call 2"
        );
    }

    #[test]
    fn task_methods_need_the_extension_and_the_removed_ones_are_unknown() {
        let service = tasks_service();
        let refused = Session::new(&service).handle(classify(
            modern("tools/call", r#""name":"siempre","#, false).as_bytes(),
        ));
        let Action::Send(line) = refused else {
            panic!("no refusal");
        };
        let error: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            error["error"]["data"],
            json!({"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}})
        );
        for (method, params, ext, expected) in [
            ("tasks/get", r#""taskId":"x","#, false, "error -32021"),
            ("tasks/cancel", r#""taskId":"x","#, false, "error -32021"),
            (
                "tasks/update",
                r#""taskId":"x","inputResponses":{},"#,
                false,
                "error -32021",
            ),
            ("tasks/get", r#""taskId":"x","#, true, "error -32602"),
            ("tasks/get", "", true, "error -32602"),
            ("tasks/update", r#""taskId":"x","#, true, "error -32602"),
            ("tasks/result", r#""taskId":"x","#, true, "error -32601"),
            ("tasks/list", "", true, "error -32601"),
        ] {
            let line = modern(method, params, ext);
            assert_eq!(kind(&service, &line), expected, "{line}");
        }
        let mut without = tasks_service();
        without.tasks = None;
        let line = modern("tasks/get", r#""taskId":"x","#, true);
        assert_eq!(kind(&without, &line), "error -32601");
    }

    #[test]
    fn the_extension_and_each_tools_task_support_are_announced() {
        let service = tasks_service();
        let discover = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#;
        let Action::Send(line) = Session::new(&service).handle(classify(discover.as_bytes()))
        else {
            panic!("no answer");
        };
        let capabilities =
            serde_json::from_str::<Value>(&line).unwrap()["result"]["capabilities"].clone();
        assert_eq!(
            capabilities["extensions"],
            json!({"io.modelcontextprotocol/tasks": {}})
        );
        assert!(capabilities.get("tasks").is_none());
        assert!(
            service.capabilities().get("extensions").is_none(),
            "not in initialize"
        );
        let list = |version: ProtocolVersion| -> Vec<Value> {
            service
                .tools
                .iter()
                .map(|t| tool_json(t.as_ref(), version)["execution"].clone())
                .collect()
        };
        let announced = vec![
            Value::Null,
            json!({"taskSupport": "optional"}),
            json!({"taskSupport": "required"}),
        ];
        assert_eq!(list(ProtocolVersion::V2026_07_28), announced);
        assert_eq!(list(ProtocolVersion::V2025_11_25), vec![Value::Null; 3]);
        let mut without = tasks_service();
        without.tasks = None;
        assert!(without.modern_capabilities().get("extensions").is_none());
    }

    #[test]
    fn unknown_tool_is_invalid_params() {
        let call = r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"nada"}}"#;
        let out = run(&[INIT, INITIALIZED, call]);
        assert_eq!(code(&out[2]), Some(-32602));
    }
}
