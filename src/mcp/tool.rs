//! What a tool is to the protocol core: a definition, a call, and a result.
//!
//! The application hands the server `Box<dyn Tool>` values; the core never knows what they do.
//! [`TypedTool`] is the comfortable way to write one: typed parameters and output whose JSON
//! Schemas are derived, so `inputSchema`, `outputSchema`, validation and `structuredContent`
//! can never drift apart. This module does no I/O; progress and cancellation reach a tool
//! through the [`CallContext`] it is given.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::logging::LogLevel;
use super::resource::ResourceContents;
use super::schema;

/// Hints about a tool's behaviour (MCP `ToolAnnotations`); clients treat them as untrusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotations {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

impl Annotations {
    /// A local, read-only query: the common case.
    pub const READ_ONLY: Annotations = Annotations {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };

    pub fn to_json(self, title: &str) -> Value {
        json!({
            "title": title,
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        })
    }
}

/// Everything `tools/list` says about a tool.
#[derive(Debug, Clone)]
pub struct ToolDefinition {
    /// 1–128 characters of `[A-Za-z0-9_.-]`.
    pub name: String,
    pub title: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub annotations: Annotations,
    /// Sent as `_meta` in `tools/list` (e.g. a view the client may show with the result).
    pub meta: Option<Value>,
    /// Client capabilities the tool cannot work without (a `ClientCapabilities` object, e.g.
    /// `{"sampling": {}}`): a 2026-07-28 request that lacks one is refused with `-32021`.
    pub requires: Option<Value>,
    /// Whether a call may run as a task (the tasks extension), sent as
    /// `execution.taskSupport` in `tools/list`.
    pub task_support: TaskSupport,
}

/// A tool's `execution.taskSupport`: may a call become a task (`io.modelcontextprotocol/tasks`)?
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskSupport {
    /// Always answered in the request (the default).
    #[default]
    Forbidden,
    /// A task when the client declares the extension, an ordinary call otherwise.
    Optional,
    /// Only as a task: a client without the extension is refused with `-32021`.
    Required,
}

impl TaskSupport {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// One block of a tool result's `content`.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text(String),
    /// Base64 data plus its MIME type (e.g. `image/png`).
    Image {
        data_base64: String,
        mime_type: String,
    },
    /// Base64 sound plus its MIME type (e.g. `audio/wav`).
    Audio {
        data_base64: String,
        mime_type: String,
    },
    /// An embedded resource.
    Resource(ResourceContents),
}

impl Content {
    /// The block as MCP writes it; see [`Content::into_json`].
    pub fn to_json(&self) -> Value {
        self.clone().into_json()
    }

    /// The block as MCP writes it, the text or data moved in rather than copied: a map's
    /// answer carries ~150 KB of text and ~180 KB of base64.
    pub fn into_json(self) -> Value {
        let block = |kind: &str, fields: [(&str, String); 2]| {
            let mut block = serde_json::Map::new();
            block.insert("type".into(), kind.into());
            for (key, value) in fields {
                block.insert(key.into(), Value::String(value));
            }
            Value::Object(block)
        };
        match self {
            Content::Text(text) => {
                let mut block = serde_json::Map::new();
                block.insert("type".into(), "text".into());
                block.insert("text".into(), Value::String(text));
                Value::Object(block)
            }
            Content::Image {
                data_base64,
                mime_type,
            } => block("image", [("data", data_base64), ("mimeType", mime_type)]),
            Content::Audio {
                data_base64,
                mime_type,
            } => block("audio", [("data", data_base64), ("mimeType", mime_type)]),
            Content::Resource(contents) => {
                json!({"type": "resource", "resource": contents.to_json()})
            }
        }
    }
}

/// A completed call: content blocks, optional structured output, and the error flag.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub content: Vec<Content>,
    pub structured: Option<Value>,
    pub is_error: bool,
    /// 2026-07-28 only: instead of a result, ask the client for input first (the client calls
    /// again with `inputResponses` and this `requestState`).
    pub input_required: Option<InputRequired>,
}

/// An `InputRequiredResult` (2026-07-28): what the client must ask its user or model, keyed
/// by names the tool chooses, and the state to send back with the answers.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequired {
    /// `{key: {method, params}}`.
    pub input_requests: Value,
    pub request_state: Option<String>,
}

impl ToolResult {
    /// Plain content blocks, no structured output.
    pub fn content(content: Vec<Content>) -> Self {
        ToolResult {
            content,
            structured: None,
            is_error: false,
            input_required: None,
        }
    }

    /// An input-required answer (2026-07-28).
    pub fn input_required(input_requests: Value, request_state: Option<String>) -> Self {
        ToolResult {
            input_required: Some(InputRequired {
                input_requests,
                request_state,
            }),
            ..ToolResult::content(Vec::new())
        }
    }
}

impl ToolResult {
    /// A business failure: one Spanish sentence the model can act on.
    pub fn failure(message: impl Into<String>) -> Self {
        ToolResult {
            is_error: true,
            ..ToolResult::content(vec![Content::Text(message.into())])
        }
    }
}

/// Why a call produced no normal result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not fit the tool; reported per protocol version (SEP-1303).
    #[error("{0}")]
    InvalidArguments(String),
    /// The tool ran and the answer is "no" (unknown key, no data...): an `isError` result.
    #[error("{0}")]
    Failed(String),
    /// The call needs a client capability the request did not declare (2026-07-28,
    /// `-32021`); the value is the `ClientCapabilities` object that is missing.
    #[error("falta una capacidad del cliente: {0}")]
    MissingClientCapability(Value),
    /// The request itself is unacceptable (e.g. a tampered `requestState`), not merely its
    /// arguments' values: always a `-32602` error, in every version.
    #[error("{0}")]
    Rejected(String),
}

/// A tool as the server sees it.
pub trait Tool: Send + Sync {
    fn definition(&self) -> &ToolDefinition;

    /// The tool's name, without building its definition where that is costly (a typed tool's
    /// schemas): the server checks names at start and finds tools by name.
    fn name(&self) -> &str {
        &self.definition().name
    }

    /// Runs the tool. `arguments` has already been validated against the input schema.
    fn call(&self, arguments: Value, ctx: &CallContext) -> Result<ToolResult, ToolError>;

    /// Before a call becomes a task: an input-required result to answer at once (the
    /// question is asked in the request, as the tasks extension recommends, and the task is
    /// created when the client calls again with the answers), or `None` to create the task.
    /// Must be quick: it runs before the answer goes out.
    fn gather(&self, _arguments: &Value, _request: &RequestInfo) -> Option<ToolResult> {
        None
    }
}

thread_local! {
    /// The cancellation flag of the call running on this thread, if any.
    static CURRENT_CALL: std::cell::RefCell<Option<Arc<AtomicBool>>> =
        const { std::cell::RefCell::new(None) };
}

/// Whether the call running on this thread was cancelled (by the client or the time limit).
/// For code too deep to be handed the [`CallContext`], such as a database engine's progress
/// callback; `false` outside a call.
pub fn current_call_cancelled() -> bool {
    CURRENT_CALL.with(|c| {
        c.borrow()
            .as_ref()
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
    })
}

/// The cancellation flag of the call running on this thread, for code that must watch it
/// from another thread (a database server's cancel request); `None` outside a call.
pub fn current_call_flag() -> Option<Arc<AtomicBool>> {
    CURRENT_CALL.with(|c| c.borrow().clone())
}

/// Marks `flag` as this thread's current call until dropped (also when a tool panics).
pub(crate) struct CurrentCall;

impl CurrentCall {
    pub(crate) fn enter(flag: Arc<AtomicBool>) -> CurrentCall {
        CURRENT_CALL.with(|c| *c.borrow_mut() = Some(flag));
        CurrentCall
    }
}

impl Drop for CurrentCall {
    fn drop(&mut self) {
        CURRENT_CALL.with(|c| *c.borrow_mut() = None);
    }
}

/// Sends one progress notification; supplied by the server.
pub type ProgressSink = Box<dyn Fn(f64, Option<f64>, Option<&str>) + Send + Sync>;

/// Sends one `notifications/message` (level, data) if the client asked for that level;
/// supplied by the transport.
pub type LogSink = Box<dyn Fn(LogLevel, Value) + Send + Sync>;

/// Asks the client something (`sampling/createMessage`, `elicitation/create`, `roots/list`)
/// and waits for its answer; supplied by a transport that can carry requests to the client.
pub trait Peer: Send + Sync {
    /// The client's result, or a Spanish reason (no way to ask, an error, no answer in time).
    fn request(&self, method: &str, params: Value) -> Result<Value, String>;
}

/// What the request said besides the arguments.
#[derive(Debug, Clone, Default)]
pub struct RequestInfo {
    /// The client's declared capabilities (from `initialize`, or the request's `_meta`).
    pub client_capabilities: Value,
    /// 2026-07-28: the answers to an earlier input-required result, by key.
    pub input_responses: Option<Value>,
    /// 2026-07-28: the state an earlier input-required result handed out.
    pub request_state: Option<String>,
}

/// What a running call can see of its request: cancellation, progress, logging, the client.
pub struct CallContext {
    cancelled: Arc<AtomicBool>,
    progress: Option<ProgressSink>,
    log: Option<LogSink>,
    peer: Option<Arc<dyn Peer>>,
    request: RequestInfo,
    disconnect: Option<Box<dyn Fn() + Send + Sync>>,
}

impl CallContext {
    pub fn new(cancelled: Arc<AtomicBool>, progress: Option<ProgressSink>) -> Self {
        CallContext {
            cancelled,
            progress,
            log: None,
            peer: None,
            request: RequestInfo::default(),
            disconnect: None,
        }
    }

    /// What [`CallContext::drop_connection`] does (a transport that streams answers sets it).
    pub fn with_disconnect(mut self, disconnect: Option<Box<dyn Fn() + Send + Sync>>) -> Self {
        self.disconnect = disconnect;
        self
    }

    /// Closes the connection the answer would travel on, without ending the call: the client
    /// resumes the stream later (Streamable HTTP's polling). No-op elsewhere.
    pub fn drop_connection(&self) {
        if let Some(disconnect) = &self.disconnect {
            disconnect();
        }
    }

    /// Where `log` sends its messages.
    pub fn with_log(mut self, log: Option<LogSink>) -> Self {
        self.log = log;
        self
    }

    /// Who `ask` asks.
    pub fn with_peer(mut self, peer: Option<Arc<dyn Peer>>) -> Self {
        self.peer = peer;
        self
    }

    pub fn with_request(mut self, request: RequestInfo) -> Self {
        self.request = request;
        self
    }

    /// What the request said besides the arguments.
    pub fn request(&self) -> &RequestInfo {
        &self.request
    }

    /// Sends a log message to the client, if it asked for this level (else nothing).
    pub fn log(&self, level: LogLevel, data: Value) {
        if let Some(log) = &self.log {
            log(level, data);
        }
    }

    /// Asks the client and waits for the answer (legacy sessions over a transport that
    /// carries requests to the client); `Err` with a Spanish reason otherwise.
    pub fn ask(&self, method: &str, params: Value) -> Result<Value, String> {
        match &self.peer {
            Some(peer) => peer.request(method, params),
            None => Err("este transporte no puede hacer preguntas al cliente".into()),
        }
    }

    /// A context with no client behind it (tests, command-line use).
    pub fn detached() -> Self {
        CallContext::new(Arc::new(AtomicBool::new(false)), None)
    }

    /// True once the client sent `notifications/cancelled` for this request. Long tools
    /// should poll it and return early; whatever they return is discarded.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// Whether the client asked for progress (sent a `progressToken`).
    pub fn wants_progress(&self) -> bool {
        self.progress.is_some()
    }

    /// Reports progress; a no-op without a progress token. Values that do not increase are
    /// dropped by the server, as the spec requires progress to grow.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(sink) = &self.progress {
            sink(progress, total, message);
        }
    }
}

/// The usual way to write a tool: typed parameters in, typed output out.
pub trait TypedTool: Send + Sync + 'static {
    /// Arguments. Use `#[serde(deny_unknown_fields)]` so serde agrees with the schema.
    type Params: DeserializeOwned + JsonSchema;
    /// `structuredContent`; its schema is the tool's `outputSchema`.
    type Output: Serialize + JsonSchema;

    fn name(&self) -> &'static str;
    fn title(&self) -> &'static str;
    fn description(&self) -> String;
    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }
    /// Whether a call may run as a task (a long export, a map): [`TaskSupport`].
    fn task_support(&self) -> TaskSupport {
        TaskSupport::Forbidden
    }
    /// `_meta` of the tool's definition.
    fn meta(&self) -> Option<Value> {
        None
    }
    /// Top-level fields of the output meant for an app the host renders, not for the model:
    /// they stay in `structuredContent` and are left out of the text block.
    fn app_only_fields(&self) -> &'static [&'static str] {
        &[]
    }

    fn call(
        &self,
        params: Self::Params,
        ctx: &CallContext,
    ) -> Result<Reply<Self::Output>, ToolError>;
}

/// A typed tool's answer: the output plus optional extra blocks (e.g. an image).
pub struct Reply<T> {
    pub output: T,
    /// Blocks appended after the text block that carries the output as JSON.
    pub extra: Vec<Content>,
}

impl<T> Reply<T> {
    pub fn new(output: T) -> Self {
        Reply {
            output,
            extra: Vec::new(),
        }
    }
}

/// Wraps a [`TypedTool`] into the object-safe [`Tool`] the server takes. The definition (its
/// schemas derived with schemars: a quarter of a server's start) is built on first use, so
/// `initialize` is answered without it.
pub fn typed<T: TypedTool>(tool: T) -> Box<dyn Tool> {
    Box::new(Typed {
        tool,
        definition: std::sync::OnceLock::new(),
    })
}

struct Typed<T> {
    tool: T,
    definition: std::sync::OnceLock<ToolDefinition>,
}

impl<T: TypedTool> Tool for Typed<T> {
    fn name(&self) -> &str {
        self.tool.name()
    }

    fn definition(&self) -> &ToolDefinition {
        self.definition.get_or_init(|| ToolDefinition {
            name: self.tool.name().to_owned(),
            title: self.tool.title().to_owned(),
            description: self.tool.description(),
            input_schema: schema::input_schema_for::<T::Params>(),
            output_schema: Some(schema::output_schema_for::<T::Output>()),
            annotations: self.tool.annotations(),
            meta: self.tool.meta(),
            requires: None,
            task_support: self.tool.task_support(),
        })
    }

    fn call(&self, arguments: Value, ctx: &CallContext) -> Result<ToolResult, ToolError> {
        // The schema check already ran; a serde failure here means the schema is looser than
        // the type (a custom deserializer), which still deserves a named argument.
        let params: T::Params = serde_json::from_value(arguments).map_err(|err| {
            ToolError::InvalidArguments(format!(
                "argumentos inválidos: {}",
                crate::plumbing::spanish::json_what(&err)
            ))
        })?;
        let reply = self.tool.call(params, ctx)?;
        let structured = serde_json::to_value(&reply.output).map_err(|err| {
            ToolError::Failed(format!("no se pudo serializar el resultado: {err}"))
        })?;
        if cfg!(debug_assertions)
            && let Some(schema) = &self.definition().output_schema
            && let Err(violation) = schema::validate(schema, &structured)
        {
            // A test build must never ship a result its own schema rejects.
            panic!(
                "structuredContent of {} violates its outputSchema: {violation}",
                self.definition().name
            );
        }
        // Compact: the model reads this block, and whitespace costs tokens.
        let text = serde_json::to_string(&for_the_model(&structured, self.tool.app_only_fields()))
            .unwrap_or_default();
        let mut content = vec![Content::Text(text)];
        content.extend(reply.extra);
        Ok(ToolResult {
            structured: Some(structured),
            ..ToolResult::content(content)
        })
    }
}

/// `structured` without the fields only an app reads (borrowed when there are none).
fn for_the_model<'a>(structured: &'a Value, app_only: &[&str]) -> std::borrow::Cow<'a, Value> {
    match structured {
        Value::Object(map) if app_only.iter().any(|f| map.contains_key(*f)) => {
            let mut map = map.clone();
            for field in app_only {
                map.remove(*field);
            }
            std::borrow::Cow::Owned(Value::Object(map))
        }
        _ => std::borrow::Cow::Borrowed(structured),
    }
}

/// Arguments absent from a call are an empty object.
pub fn arguments_or_empty(arguments: Option<Value>) -> Value {
    arguments.unwrap_or_else(|| Value::Object(Map::new()))
}

#[cfg(test)]
mod current_call_tests {
    use super::*;

    #[test]
    fn the_current_call_flag_is_visible_only_while_it_runs() {
        assert!(!current_call_cancelled(), "no call: not cancelled");
        let flag = Arc::new(AtomicBool::new(false));
        let guard = CurrentCall::enter(Arc::clone(&flag));
        assert!(!current_call_cancelled());
        flag.store(true, Ordering::Relaxed);
        assert!(current_call_cancelled());
        drop(guard);
        assert!(!current_call_cancelled(), "cleared when the call ends");
    }
}

#[cfg(test)]
mod app_only_tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    struct NoParams {}

    #[derive(Serialize, JsonSchema)]
    struct Out {
        cuenta: u32,
        dibujo: Vec<u32>,
    }

    struct WithView;

    impl TypedTool for WithView {
        type Params = NoParams;
        type Output = Out;
        fn name(&self) -> &'static str {
            "con_vista"
        }
        fn title(&self) -> &'static str {
            "Con vista"
        }
        fn description(&self) -> String {
            "Prueba".into()
        }
        fn app_only_fields(&self) -> &'static [&'static str] {
            &["dibujo"]
        }
        fn call(&self, _: NoParams, _: &CallContext) -> Result<Reply<Out>, ToolError> {
            Ok(Reply::new(Out {
                cuenta: 2,
                dibujo: vec![7, 8],
            }))
        }
    }

    #[test]
    fn app_only_fields_reach_the_structured_content_but_not_the_text() {
        let tool = typed(WithView);
        let result = tool.call(json!({}), &CallContext::detached()).unwrap();
        assert_eq!(
            result.structured,
            Some(json!({"cuenta": 2, "dibujo": [7, 8]}))
        );
        let Some(Content::Text(text)) = result.content.first() else {
            panic!("no text block");
        };
        assert_eq!(text, r#"{"cuenta":2}"#);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    struct Counted(Arc<AtomicUsize>);

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Params {
        #[allow(dead_code)]
        text: String,
    }

    impl TypedTool for Counted {
        type Params = Params;
        type Output = Value;
        fn name(&self) -> &'static str {
            "contada"
        }
        fn title(&self) -> &'static str {
            "Contada"
        }
        fn description(&self) -> String {
            self.0.fetch_add(1, Ordering::SeqCst);
            "Cuenta sus definiciones.".into()
        }
        fn call(&self, _: Params, _: &CallContext) -> Result<Reply<Value>, ToolError> {
            Ok(Reply::new(Value::Null))
        }
    }

    /// Registering a tool derives nothing: its definition (schemas) is built on first use,
    /// once, so a server answers `initialize` without it.
    #[test]
    fn a_typed_tool_builds_its_definition_on_first_use_only() {
        let built = Arc::new(AtomicUsize::new(0));
        let tool = typed(Counted(built.clone()));
        assert_eq!(tool.name(), "contada");
        assert_eq!(built.load(Ordering::SeqCst), 0);
        assert_eq!(tool.definition().name, "contada");
        assert!(tool.definition().input_schema["properties"]["text"].is_object());
        assert_eq!(built.load(Ordering::SeqCst), 1);
    }
}

#[cfg(test)]
mod content_json_tests {
    use super::*;
    use crate::mcp::resource::ResourceContents;

    /// Each kind of block is written with MCP's keys in this order (clients and the recorded
    /// answers compare bytes).
    #[test]
    fn blocks_are_written_with_mcps_keys_in_order() {
        let check = |block: Content, expected: &str| {
            assert_eq!(serde_json::to_string(&block.to_json()).unwrap(), expected);
            assert_eq!(serde_json::to_string(&block.into_json()).unwrap(), expected);
        };
        check(
            Content::Text("uno \"dos\"\n".into()),
            r#"{"type":"text","text":"uno \"dos\"\n"}"#,
        );
        check(
            Content::Image {
                data_base64: "iVBORw0KGgo=".into(),
                mime_type: "image/png".into(),
            },
            r#"{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}"#,
        );
        check(
            Content::Audio {
                data_base64: "UklGRg==".into(),
                mime_type: "audio/wav".into(),
            },
            r#"{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}"#,
        );
        check(
            Content::Resource(ResourceContents::text("ejemplo://x", "text/plain", "hola")),
            r#"{"type":"resource","resource":{"uri":"ejemplo://x","mimeType":"text/plain","text":"hola"}}"#,
        );
    }
}
