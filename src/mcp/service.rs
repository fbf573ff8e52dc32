//! What the application hands the core, and running one tool call.
//!
//! Owns [`Service`] (identity, instructions, tools, prompts, resources, and which optional
//! features it offers), the capabilities that follow from it, the JSON of a tool definition
//! and of a tool result in a given protocol version, and [`Service::execute`], which a worker
//! of any transport invokes. No I/O.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use super::jsonrpc::{ErrorCode, RawId, RpcError, error_line, response_line};
use super::logging::LogLevel;
use super::prompt::Prompt;
use super::resource::{Resource, ResourceTemplate};
use super::schema;
use super::tasks::{self, Tasks};
use super::tool::{CallContext, Content, RequestInfo, TaskSupport, Tool, ToolError, ToolResult};
use super::version::ProtocolVersion;

/// `serverInfo`: who the server is.
#[derive(Debug, Clone, Default)]
pub struct ServerInfo {
    pub name: String,
    pub version: String,
    pub title: String,
}

/// Tells a transport whether the resource list changed: a number that moves when it does.
pub type ResourcesVersion = Box<dyn Fn() -> u64 + Send + Sync>;

/// Changes the application announces itself (a tool added, a prompt removed…): transports
/// turn them into `list_changed` notifications for the clients that want them.
#[derive(Clone, Default)]
pub struct Changes {
    counts: Arc<[AtomicU64; 3]>,
    wake: Arc<tokio::sync::Notify>,
}

/// Which list changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    Tools,
    Prompts,
    Resources,
}

impl List {
    pub const ALL: [List; 3] = [List::Tools, List::Prompts, List::Resources];

    /// The notification that says it changed.
    pub fn notification(self) -> &'static str {
        match self {
            List::Tools => "notifications/tools/list_changed",
            List::Prompts => "notifications/prompts/list_changed",
            List::Resources => "notifications/resources/list_changed",
        }
    }
}

impl Changes {
    pub fn changed(&self, list: List) {
        self.counts[list as usize].fetch_add(1, Ordering::SeqCst);
        self.wake.notify_waiters();
    }

    pub(super) fn counts(&self) -> [u64; 3] {
        [0, 1, 2].map(|i| self.counts[i].load(Ordering::SeqCst))
    }

    pub(super) async fn wait(&self, at_most: std::time::Duration) {
        let _ = tokio::time::timeout(at_most, self.wake.notified()).await;
    }
}

/// What the application hands the core: identity, guidance for the model, tools, prompts and
/// resources. Optional features are off unless set.
#[derive(Default)]
pub struct Service {
    pub info: ServerInfo,
    /// Sent as `instructions` in `initialize` and `server/discover`.
    pub instructions: Option<String>,
    pub tools: Vec<Box<dyn Tool>>,
    pub prompts: Vec<Box<dyn Prompt>>,
    pub resources: Vec<Box<dyn Resource>>,
    pub templates: Vec<Box<dyn ResourceTemplate>>,
    /// Declare `logging` and accept `logging/setLevel`: the tools send log messages.
    pub logging: bool,
    /// Accept `resources/subscribe` (recorded per session).
    pub subscribe: bool,
    /// Declare `listChanged` for tools and prompts (the lists may change while it runs).
    pub dynamic_lists: bool,
    /// When set, `resources.listChanged` is declared and transports send
    /// `notifications/resources/list_changed` when the number moves.
    pub resources_version: Option<ResourcesVersion>,
    /// Changes announced by the application.
    pub changes: Changes,
    /// Protocol extensions offered, announced as `capabilities.extensions` (e.g.
    /// `{"io.modelcontextprotocol/ui": {}}`); what the client offers is in each call's
    /// `RequestInfo::client_capabilities["extensions"]`.
    pub extensions: Option<Value>,
    /// When set, the tasks extension is offered: calls to tools whose
    /// [`TaskSupport`](super::tool::TaskSupport) allows it become tasks for clients that
    /// declare it.
    pub tasks: Option<Tasks>,
}

/// How long a modern client may cache a list: the sets never change while the process lives,
/// except resources when `resources_version` says so.
pub(super) const LIST_TTL_MS: u64 = 3_600_000;

/// A tool call to run on a worker.
#[derive(Debug)]
pub struct Call {
    pub id: RawId,
    pub tool: usize,
    pub arguments: Value,
    pub version: ProtocolVersion,
    pub progress_token: Option<RawId>,
    /// The least severe log message the client wants; `None`: none.
    pub log_level: Option<LogLevel>,
    pub request: RequestInfo,
    /// Answered with a task handle (the tasks extension) rather than the result.
    pub task: bool,
}

impl Service {
    /// The capabilities `initialize` and `server/discover` announce: only what is offered.
    pub fn capabilities(&self) -> Value {
        let mut capabilities = json!({"tools": {"listChanged": self.dynamic_lists}});
        if !self.prompts.is_empty() {
            capabilities["prompts"] = json!({"listChanged": self.dynamic_lists});
        }
        if !self.resources.is_empty() || !self.templates.is_empty() {
            capabilities["resources"] = json!({
                "subscribe": self.subscribe,
                "listChanged": self.announces(List::Resources),
            });
        }
        if !self.prompts.is_empty() || !self.templates.is_empty() {
            capabilities["completions"] = json!({});
        }
        if self.logging {
            capabilities["logging"] = json!({});
        }
        if let Some(extensions) = &self.extensions {
            capabilities["extensions"] = extensions.clone();
        }
        capabilities
    }

    /// The capabilities `server/discover` announces: those of `initialize` plus the tasks
    /// extension, which is per request (2026-07-28) and never offered to a legacy session.
    pub fn modern_capabilities(&self) -> Value {
        let mut capabilities = self.capabilities();
        if self.tasks.is_some() {
            if !capabilities["extensions"].is_object() {
                capabilities["extensions"] = json!({});
            }
            capabilities["extensions"][tasks::EXTENSION] = json!({});
        }
        capabilities
    }

    /// Runs a call to completion and returns the response line.
    pub fn execute(&self, call: &Call, ctx: &CallContext) -> String {
        match self.run(call, ctx) {
            Ok(result) => response_line(&call.id, &result_json(result, call.version)),
            Err(error) => error_line(Some(&call.id), &error),
        }
    }

    pub(super) fn run(&self, call: &Call, ctx: &CallContext) -> Result<ToolResult, RpcError> {
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
            Err(ToolError::Rejected(message)) => {
                Err(RpcError::new(ErrorCode::InvalidParams, message))
            }
            Err(ToolError::MissingClientCapability(required)) => Err(RpcError::with_data(
                ErrorCode::MissingClientCapability,
                json!({"requiredCapabilities": required}),
            )),
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
            &result_json(ToolResult::failure(message), call.version),
        )
    }

    /// Names registered twice (tools, prompts, resource URIs), to warn when serving starts.
    pub fn duplicate_names(&self) -> Vec<String> {
        let mut seen = HashSet::new();
        let tools = self.tools.iter().map(|t| t.name().to_owned());
        let prompts = self
            .prompts
            .iter()
            .map(|p| format!("prompt {}", p.definition().name));
        let resources = self
            .resources
            .iter()
            .map(|r| format!("recurso {}", r.definition().uri));
        tools
            .chain(prompts)
            .chain(resources)
            .filter(|name| !seen.insert(name.clone()))
            .collect()
    }

    /// A number per list that moves when it changes (the application's announcements, and the
    /// resource list's own version).
    pub(super) fn list_versions(&self) -> [u64; 3] {
        let mut versions = self.changes.counts();
        if let Some(version) = &self.resources_version {
            versions[List::Resources as usize] =
                versions[List::Resources as usize].wrapping_add(version().wrapping_mul(1 << 20));
        }
        versions
    }

    /// Whether clients are told when `list` changes.
    pub fn announces(&self, list: List) -> bool {
        match list {
            List::Tools | List::Prompts => self.dynamic_lists,
            List::Resources => self.resources_version.is_some() || self.dynamic_lists,
        }
    }

    pub(super) fn server_info_json(&self) -> Value {
        let info = &self.info;
        json!({"name": info.name, "version": info.version, "title": info.title})
    }

    /// A service whose resource list's version is `version`, read slowly the first time (a
    /// database being opened): for the transports' first-look tests.
    #[cfg(test)]
    pub(super) fn with_slow_first_version(
        version: &Arc<AtomicU64>,
        first_read: std::time::Duration,
    ) -> Service {
        let first = std::sync::atomic::AtomicBool::new(true);
        let version = Arc::clone(version);
        Service {
            info: ServerInfo {
                name: "t".into(),
                version: "0".into(),
                title: "T".into(),
            },
            resources_version: Some(Box::new(move || {
                if first.swap(false, Ordering::SeqCst) {
                    std::thread::sleep(first_read);
                }
                version.load(Ordering::SeqCst)
            })),
            ..Service::default()
        }
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

pub(super) fn tool_json(tool: &dyn Tool, version: ProtocolVersion) -> Value {
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
    if version.is_modern() && d.task_support != TaskSupport::Forbidden {
        entry["execution"] = json!({"taskSupport": d.task_support.as_str()});
    }
    if let Some(meta) = &d.meta {
        entry["_meta"] = meta.clone();
    }
    entry
}

/// The `result` of a `tools/call` answer. Takes the result by value: its content and
/// structured output are moved into the answer, not copied (a map's are ~300 KB).
pub(super) fn result_json(result: ToolResult, version: ProtocolVersion) -> Value {
    if let Some(input) = &result.input_required {
        if version.is_modern() {
            let mut out = json!({
                "resultType": "input_required",
                "inputRequests": input.input_requests,
            });
            if let Some(state) = &input.request_state {
                out["requestState"] = json!(state);
            }
            return out;
        }
        let failure = ToolResult::failure(
            "esta herramienta necesita datos del cliente que esta versión del protocolo no \
             permite pedir así",
        );
        return result_json(failure, version);
    }
    let content: Vec<Value> = result.content.into_iter().map(Content::into_json).collect();
    let mut out = json!({"content": content});
    if version.has_structured_output()
        && let Some(structured) = result.structured
    {
        out["structuredContent"] = structured;
    }
    if result.is_error {
        out["isError"] = json!(true);
    }
    if version.is_modern() {
        out["resultType"] = json!("complete");
    }
    out
}
