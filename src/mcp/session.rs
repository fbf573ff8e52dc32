//! The MCP state machine: what each incoming message means and what to answer.
//!
//! Owns the lifecycle of both eras. Legacy clients (2024-11-05 … 2025-11-25) go through
//! `initialize` → `notifications/initialized`; modern ones (2026-07-28) put the protocol
//! version in every request's `_meta` and need no handshake. [`Session::handle`] turns one
//! classified message into an [`Action`]; running a tool call is [`Service::execute`], which a
//! worker thread invokes. Neither does I/O, so both are tested with plain values.

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::jsonrpc::{ErrorCode, Incoming, RawId, Request, RpcError, error_line, response_line};
use super::schema;
use super::tool::{CallContext, Tool, ToolError, ToolResult, arguments_or_empty};
use super::version::ProtocolVersion;
use crate::log_info;

/// `serverInfo`: who the server is.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    pub name: String,
    pub version: String,
    pub title: String,
}

/// What the application hands the core: identity, guidance for the model, and the tools.
pub struct Service {
    pub info: ServerInfo,
    /// Sent as `instructions` in `initialize` and `server/discover`.
    pub instructions: Option<String>,
    pub tools: Vec<Box<dyn Tool>>,
}

/// How long a modern client may cache `tools/list` and `server/discover`: the tool set never
/// changes while the process lives.
const LIST_TTL_MS: u64 = 3_600_000;

const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const META_PREFIX: &str = "io.modelcontextprotocol/";

/// Methods this server answers; anything else is `-32601` in every state.
const METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lifecycle {
    New,
    /// `initialize` answered; waiting for `notifications/initialized`.
    Initializing(ProtocolVersion),
    Ready(ProtocolVersion),
}

/// A tool call to run on a worker.
#[derive(Debug)]
pub struct Call {
    pub id: RawId,
    pub tool: usize,
    pub arguments: Value,
    pub version: ProtocolVersion,
    pub progress_token: Option<RawId>,
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
    /// `notifications/cancelled` for the request whose raw id text is given.
    Cancel(String),
}

/// One client connection's protocol state.
pub struct Session<'a> {
    service: &'a Service,
    lifecycle: Lifecycle,
}

impl<'a> Session<'a> {
    pub fn new(service: &'a Service) -> Self {
        Session {
            service,
            lifecycle: Lifecycle::New,
        }
    }

    pub fn handle(&mut self, incoming: Incoming) -> Action {
        match incoming {
            Incoming::Request(request) => {
                let id = request.id.clone();
                match self.request(request) {
                    Ok(Reply::Result(result)) => Action::Send(response_line(&id, &result)),
                    Ok(Reply::Call(call)) => Action::Call(call),
                    Err(error) => Action::Send(error_line(Some(&id), &error)),
                }
            }
            Incoming::Notification(notification) => {
                match notification.method.as_str() {
                    "notifications/initialized" => {
                        if let Lifecycle::Initializing(version) = self.lifecycle {
                            self.lifecycle = Lifecycle::Ready(version);
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

    fn request(&mut self, request: Request) -> Result<Reply, RpcError> {
        let method = request.method.as_str();
        if !METHODS.contains(&method) {
            return Err(RpcError::new(
                ErrorCode::MethodNotFound,
                format!("método desconocido: {method}"),
            ));
        }
        let params = parse_params(request.params.as_deref())?;
        let modern = modern_version(&params)?;
        match method {
            "initialize" => self.initialize(&params).map(Reply::Result),
            "ping" => Ok(Reply::Result(complete(json!({}), modern))),
            "server/discover" => Ok(Reply::Result(self.discover())),
            "tools/list" => {
                let version = self.era(modern, method)?;
                self.list_tools(&params, version).map(Reply::Result)
            }
            "tools/call" => {
                let version = self.era(modern, method)?;
                self.call(request.id, &params, request.params.as_deref(), version)
                    .map(Reply::Call)
            }
            _ => Err(RpcError::new(
                ErrorCode::MethodNotFound,
                format!("método desconocido: {method}"),
            )),
        }
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
        match self.lifecycle {
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
        if self.lifecycle != Lifecycle::New {
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
        self.lifecycle = Lifecycle::Initializing(version);
        let mut result = json!({
            "protocolVersion": version.as_str(),
            "capabilities": capabilities(),
            "serverInfo": self.server_info(),
        });
        if let Some(instructions) = &self.service.instructions {
            result["instructions"] = Value::String(instructions.clone());
        }
        Ok(result)
    }

    fn server_info(&self) -> Value {
        let info = &self.service.info;
        json!({"name": info.name, "version": info.version, "title": info.title})
    }

    fn discover(&self) -> Value {
        let mut result = json!({
            "resultType": "complete",
            "supportedVersions": ProtocolVersion::all_strs(),
            "capabilities": capabilities(),
            "ttlMs": LIST_TTL_MS,
            "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": self.server_info()},
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
        let mut result = json!({"tools": tools});
        if version.is_modern() {
            result["resultType"] = json!("complete");
            result["ttlMs"] = json!(LIST_TTL_MS);
            result["cacheScope"] = json!("public");
        }
        Ok(result)
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
        let Some(tool) = self
            .service
            .tools
            .iter()
            .position(|t| t.definition().name == *name)
        else {
            let names: Vec<&str> = self
                .service
                .tools
                .iter()
                .map(|t| t.definition().name.as_str())
                .collect();
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
        Ok(Call {
            id,
            tool,
            arguments,
            version,
            progress_token: progress_token(raw_params),
        })
    }
}

enum Reply {
    Result(Value),
    Call(Call),
}

impl Service {
    /// Runs a call to completion and returns the response line.
    pub fn execute(&self, call: &Call, ctx: &CallContext) -> String {
        match self.run(call, ctx) {
            Ok(result) => response_line(&call.id, &result_json(&result, call.version)),
            Err(error) => error_line(Some(&call.id), &error),
        }
    }

    fn run(&self, call: &Call, ctx: &CallContext) -> Result<ToolResult, RpcError> {
        let Some(tool) = self.tools.get(call.tool) else {
            return Err(RpcError::new(
                ErrorCode::InternalError,
                "herramienta inexistente",
            ));
        };
        let definition = tool.definition();
        let outcome = match schema::validate(&definition.input_schema, &call.arguments) {
            Err(violation) => Err(ToolError::InvalidArguments(format!(
                "{}: {violation}",
                definition.name
            ))),
            Ok(()) => tool.call(call.arguments.clone(), ctx),
        };
        match outcome {
            Ok(result) => Ok(result),
            Err(ToolError::Failed(message)) => Ok(ToolResult::failure(message)),
            Err(ToolError::InvalidArguments(message)) => {
                if call.version.argument_errors_are_results() {
                    Ok(ToolResult::failure(message))
                } else {
                    Err(RpcError::new(ErrorCode::InvalidParams, message))
                }
            }
        }
    }

    /// The answer a call gets when it outlives the server's time limit: a tool failure the
    /// model can read and act on, in the call's protocol version.
    pub fn timeout_line(&self, call: &Call, limit: std::time::Duration) -> String {
        let name = self
            .tools
            .get(call.tool)
            .map_or("?", |t| t.definition().name.as_str());
        let message = format!(
            "La herramienta '{name}' superó el límite de {} s por llamada y se canceló. \
             Pruebe con un rango de fechas más corto o una consulta más acotada.",
            format_seconds(limit)
        );
        response_line(
            &call.id,
            &result_json(&ToolResult::failure(message), call.version),
        )
    }

    /// Every tool name, to check uniqueness when the service is built.
    pub fn duplicate_tool_names(&self) -> Vec<String> {
        let mut seen = HashSet::new();
        self.tools
            .iter()
            .map(|t| t.definition().name.clone())
            .filter(|name| !seen.insert(name.clone()))
            .collect()
    }
}

/// `30`, `0.5`: seconds as a person writes them.
fn format_seconds(limit: std::time::Duration) -> String {
    let seconds = limit.as_secs_f64();
    if seconds.fract() == 0.0 {
        format!("{seconds:.0}")
    } else {
        format!("{seconds:.1}")
    }
}

fn capabilities() -> Value {
    // Only what is implemented: declaring `logging` would make Inspector send setLevel.
    json!({"tools": {"listChanged": false}})
}

/// Adds `resultType` to a result served in the modern era.
fn complete(mut result: Value, modern: Option<ProtocolVersion>) -> Value {
    if modern.is_some() {
        result["resultType"] = json!("complete");
    }
    result
}

fn tool_json(tool: &dyn Tool, version: ProtocolVersion) -> Value {
    let d = tool.definition();
    let mut entry = json!({
        "name": d.name,
        "description": d.description,
        "inputSchema": d.input_schema,
    });
    if version.has_structured_output() {
        entry["title"] = json!(d.title);
        if let Some(output) = &d.output_schema {
            entry["outputSchema"] = output.clone();
        }
    }
    if version.has_annotations() {
        entry["annotations"] = d.annotations.to_json(&d.title);
    }
    entry
}

fn result_json(result: &ToolResult, version: ProtocolVersion) -> Value {
    let content: Vec<Value> = result.content.iter().map(|c| c.to_json()).collect();
    let mut out = json!({"content": content});
    if version.has_structured_output()
        && let Some(structured) = &result.structured
    {
        out["structuredContent"] = structured.clone();
    }
    if result.is_error {
        out["isError"] = json!(true);
    }
    if version.is_modern() {
        out["resultType"] = json!("complete");
    }
    out
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
fn modern_version(params: &Map<String, Value>) -> Result<Option<ProtocolVersion>, RpcError> {
    let Some(meta) = params.get("_meta").and_then(Value::as_object) else {
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

    fn service() -> Service {
        Service {
            info: ServerInfo {
                name: "prueba".into(),
                version: "0.0.1".into(),
                title: "Prueba".into(),
            },
            instructions: Some("instrucciones".into()),
            tools: Vec::new(),
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
                Action::Cancel(id) => format!("cancel {id}"),
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
    fn cancellation_and_ping() {
        let out = run(&[
            r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x7"}}"#,
        ]);
        assert_eq!(out[0], r#"{"jsonrpc":"2.0","id":5,"result":{}}"#);
        assert_eq!(out[1], r#"cancel "x7""#);
    }

    #[test]
    fn unknown_tool_is_invalid_params() {
        let call = r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"nada"}}"#;
        let out = run(&[INIT, INITIALIZED, call]);
        assert_eq!(code(&out[2]), Some(-32602));
    }
}
