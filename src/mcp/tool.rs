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
}

impl Content {
    pub fn to_json(&self) -> Value {
        match self {
            Content::Text(text) => json!({"type": "text", "text": text}),
            Content::Image {
                data_base64,
                mime_type,
            } => json!({"type": "image", "data": data_base64, "mimeType": mime_type}),
        }
    }
}

/// A completed call: content blocks, optional structured output, and the error flag.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub content: Vec<Content>,
    pub structured: Option<Value>,
    pub is_error: bool,
}

impl ToolResult {
    /// A business failure: one Spanish sentence the model can act on.
    pub fn failure(message: impl Into<String>) -> Self {
        ToolResult {
            content: vec![Content::Text(message.into())],
            structured: None,
            is_error: true,
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
}

/// A tool as the server sees it.
pub trait Tool: Send + Sync {
    fn definition(&self) -> &ToolDefinition;

    /// Runs the tool. `arguments` has already been validated against the input schema.
    fn call(&self, arguments: Value, ctx: &CallContext) -> Result<ToolResult, ToolError>;
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

/// What a running call can see of its request: cancellation and progress.
pub struct CallContext {
    cancelled: Arc<AtomicBool>,
    progress: Option<ProgressSink>,
}

impl CallContext {
    pub fn new(cancelled: Arc<AtomicBool>, progress: Option<ProgressSink>) -> Self {
        CallContext {
            cancelled,
            progress,
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

/// Wraps a [`TypedTool`] into the object-safe [`Tool`] the server takes.
pub fn typed<T: TypedTool>(tool: T) -> Box<dyn Tool> {
    let definition = ToolDefinition {
        name: tool.name().to_owned(),
        title: tool.title().to_owned(),
        description: tool.description(),
        input_schema: schema::input_schema_for::<T::Params>(),
        output_schema: Some(schema::output_schema_for::<T::Output>()),
        annotations: tool.annotations(),
    };
    Box::new(Typed { tool, definition })
}

struct Typed<T> {
    tool: T,
    definition: ToolDefinition,
}

impl<T: TypedTool> Tool for Typed<T> {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
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
            && let Some(schema) = &self.definition.output_schema
            && let Err(violation) = schema::validate(schema, &structured)
        {
            // A test build must never ship a result its own schema rejects.
            panic!(
                "structuredContent of {} violates its outputSchema: {violation}",
                self.definition.name
            );
        }
        // Compact: the model reads this block, and whitespace costs tokens.
        let text = serde_json::to_string(&structured).unwrap_or_default();
        let mut content = vec![Content::Text(text)];
        content.extend(reply.extra);
        Ok(ToolResult {
            content,
            structured: Some(structured),
            is_error: false,
        })
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
