//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): a tool call answered with
//! a task handle at once, run on its own thread, watched with `tasks/get`, fed the client's
//! answers with `tasks/update`, stopped with `tasks/cancel`.
//!
//! Owns [`Tasks`] (the bounded store: a time to live per task, a maximum per owner), the
//! task's wire shapes (`CreateTaskResult`, the detailed task of `tasks/get`), the runner
//! thread ([`start`]) and the [`Peer`] a task's tool asks the client through: its questions
//! wait in `inputRequests` until `tasks/update` answers them. Knows nothing of transports:
//! each hands [`start`] a call and an owner (the process on stdio, the stateless requests on
//! HTTP) and writes the line it gets back; the session answers `tasks/*` through
//! [`Tasks::get`], [`Tasks::update`], [`Tasks::cancel`]. Which calls become tasks is the
//! session's decision, not this file's.

use std::collections::{BTreeMap, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::jsonrpc::{ErrorCode, RpcError, error_line, response_line};
use super::schema;
use super::service::{Call, Service, result_json};
use super::tool::{CallContext, CurrentCall, Peer, TaskSupport, ToolResult};
use crate::plumbing::clock::Clock;

/// The extension's identifier, in `capabilities.extensions` both ways.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// How the store is bounded and what it tells clients.
#[derive(Debug, Clone)]
pub struct TaskSettings {
    /// How long a task is kept after it was created (`ttlMs`); a task still running then is
    /// cancelled.
    pub ttl: Duration,
    /// Tasks kept at once per owner (a session; all stateless requests share one).
    pub max_per_owner: usize,
    /// The polling interval suggested to clients (`pollIntervalMs`).
    pub poll_interval: Duration,
    /// Where `createdAt` and `lastUpdatedAt` come from.
    pub clock: Clock,
}

impl TaskSettings {
    /// Thirty minutes, 32 tasks per owner, polls every second.
    pub fn new(clock: Clock) -> Self {
        TaskSettings {
            ttl: Duration::from_secs(30 * 60),
            max_per_owner: 32,
            poll_interval: Duration::from_secs(1),
            clock,
        }
    }
}

/// What became of a task's call.
#[derive(Debug, Clone)]
enum State {
    Running,
    /// The call's result (`CallToolResult`, also when `isError`).
    Completed(Value),
    /// A JSON-RPC error during the call.
    Failed(Value),
    Cancelled,
}

/// A question the task's tool is waiting on.
#[derive(Debug)]
struct Ask {
    request: Value,
    answer: Option<Value>,
}

#[derive(Debug)]
struct Entry {
    owner: String,
    state: State,
    message: Option<String>,
    created_utc: i64,
    updated_utc: i64,
    created: Instant,
    /// Questions by key; a key is never reused within a task.
    asks: BTreeMap<String, Ask>,
    next_key: u64,
    cancelled: Arc<AtomicBool>,
    /// A client saw its terminal state: it may make room for another task before its TTL.
    delivered: bool,
}

impl Entry {
    fn terminal(&self) -> bool {
        !matches!(self.state, State::Running)
    }

    fn status(&self) -> &'static str {
        match self.state {
            State::Completed(_) => "completed",
            State::Failed(_) => "failed",
            State::Cancelled => "cancelled",
            State::Running if self.asks.values().any(|a| a.answer.is_none()) => "input_required",
            State::Running => "working",
        }
    }
}

/// The task store of one server: every transport's tasks, bounded per owner.
pub struct Tasks {
    settings: TaskSettings,
    entries: Mutex<HashMap<String, Entry>>,
    /// Wakes tools waiting for an answer (and notices cancellation).
    answered: Condvar,
    /// Moves on every change a client could see (for status notifications).
    version: AtomicU64,
    wake: tokio::sync::Notify,
}

impl Tasks {
    pub fn new(settings: TaskSettings) -> Self {
        Tasks {
            settings,
            entries: Mutex::new(HashMap::new()),
            answered: Condvar::new(),
            version: AtomicU64::new(0),
            wake: tokio::sync::Notify::new(),
        }
    }

    pub fn settings(&self) -> &TaskSettings {
        &self.settings
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        self.expire(&mut entries);
        entries
    }

    /// Drops tasks past their TTL; one still running is cancelled first.
    fn expire(&self, entries: &mut HashMap<String, Entry>) {
        let ttl = self.settings.ttl;
        let before = entries.len();
        entries.retain(|_, entry| {
            let alive = entry.created.elapsed() < ttl;
            if !alive {
                entry.cancelled.store(true, Ordering::SeqCst);
            }
            alive
        });
        if entries.len() != before {
            self.changed();
        }
    }

    fn changed(&self) {
        self.version.fetch_add(1, Ordering::SeqCst);
        self.answered.notify_all();
        self.wake.notify_waiters();
    }

    /// A number that moves whenever a task changes.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::SeqCst)
    }

    /// Waits (at most `at_most`) for a task to change.
    pub async fn wait(&self, at_most: Duration) {
        let _ = tokio::time::timeout(at_most, self.wake.notified()).await;
    }

    fn now_text(&self) -> (i64, String) {
        let now = self.settings.clock.now_utc();
        (now, iso(now))
    }

    /// Records a new running task for `owner`; its id and `CreateTaskResult`, or why there is
    /// no room.
    fn create(&self, owner: &str, cancelled: Arc<AtomicBool>) -> Result<(String, Value), String> {
        let mut entries = self.lock();
        if !make_room(&mut entries, owner, self.settings.max_per_owner) {
            return Err(format!(
                "demasiadas tareas abiertas ({}): espere a que terminen o cancele alguna",
                self.settings.max_per_owner
            ));
        }
        let id = format!("{:032x}", rand::random::<u128>());
        let (now, _) = self.now_text();
        let entry = Entry {
            owner: owner.to_owned(),
            state: State::Running,
            message: None,
            created_utc: now,
            updated_utc: now,
            created: Instant::now(),
            asks: BTreeMap::new(),
            next_key: 1,
            cancelled,
            delivered: false,
        };
        let mut created = self.task_json(&id, &entry);
        created["resultType"] = json!("task");
        entries.insert(id.clone(), entry);
        self.changed();
        Ok((id, created))
    }

    /// `Task`: what every shape shares.
    fn task_json(&self, id: &str, entry: &Entry) -> Value {
        let mut task = json!({
            "taskId": id,
            "status": entry.status(),
            "createdAt": iso(entry.created_utc),
            "lastUpdatedAt": iso(entry.updated_utc),
            "ttlMs": millis(self.settings.ttl),
            "pollIntervalMs": millis(self.settings.poll_interval).max(1),
        });
        if let Some(message) = &entry.message {
            task["statusMessage"] = json!(message);
        }
        task
    }

    /// The detailed task (`tasks/get`, `notifications/tasks`): the task plus its questions,
    /// result or error.
    fn detailed(&self, id: &str, entry: &Entry) -> Value {
        let mut task = self.task_json(id, entry);
        match &entry.state {
            State::Completed(result) => task["result"] = result.clone(),
            State::Failed(error) => task["error"] = error.clone(),
            State::Cancelled => {}
            State::Running => {
                let pending: Map<String, Value> = entry
                    .asks
                    .iter()
                    .filter(|(_, ask)| ask.answer.is_none())
                    .map(|(key, ask)| (key.clone(), ask.request.clone()))
                    .collect();
                if !pending.is_empty() {
                    task["inputRequests"] = Value::Object(pending);
                }
            }
        }
        task
    }

    /// `tasks/get`.
    pub fn get(&self, id: &str) -> Result<Value, RpcError> {
        let mut entries = self.lock();
        let entry = entries.get_mut(id).ok_or_else(|| unknown(id))?;
        if entry.terminal() {
            entry.delivered = true;
        }
        let mut answer = self.detailed(id, entry);
        answer["resultType"] = json!("complete");
        Ok(answer)
    }

    /// The detailed task, if it is still kept (for status notifications).
    pub fn snapshot(&self, id: &str) -> Option<Value> {
        let entries = self.lock();
        entries.get(id).map(|entry| self.detailed(id, entry))
    }

    /// `tasks/update`: answers to outstanding questions; keys not outstanding are ignored.
    pub fn update(&self, id: &str, responses: &Map<String, Value>) -> Result<Value, RpcError> {
        let mut entries = self.lock();
        let entry = entries.get_mut(id).ok_or_else(|| unknown(id))?;
        let mut any = false;
        for (key, response) in responses {
            if let Some(ask) = entry.asks.get_mut(key)
                && ask.answer.is_none()
            {
                ask.answer = Some(response.clone());
                any = true;
            }
        }
        if any {
            entry.updated_utc = self.now_text().0;
            self.changed();
        }
        Ok(json!({"resultType": "complete"}))
    }

    /// `tasks/cancel`: a running task becomes `cancelled` at once and its tool is told; a
    /// finished one stays as it is.
    pub fn cancel(&self, id: &str) -> Result<Value, RpcError> {
        let mut entries = self.lock();
        let entry = entries.get_mut(id).ok_or_else(|| unknown(id))?;
        if !entry.terminal() {
            entry.cancelled.store(true, Ordering::SeqCst);
            entry.state = State::Cancelled;
            entry.message = Some("cancelada por el cliente".into());
            entry.updated_utc = self.now_text().0;
            entry.asks.clear();
            self.changed();
        }
        Ok(json!({"resultType": "complete"}))
    }

    /// The call ended: its result or error, unless the task was cancelled or dropped meanwhile.
    fn finish(&self, id: &str, state: State, message: Option<String>) {
        let mut entries = self.lock();
        if let Some(entry) = entries.get_mut(id)
            && !entry.terminal()
        {
            entry.state = state;
            entry.message = message;
            entry.asks.clear();
            entry.updated_utc = self.now_text().0;
            self.changed();
        }
    }

    /// Parks `requests` (`{key: {method, params}}`) on the task and waits until every one is
    /// answered; the answers by the caller's keys. `Err` once the task is cancelled or gone.
    fn ask_all(
        &self,
        id: &str,
        requests: &Map<String, Value>,
    ) -> Result<Map<String, Value>, String> {
        let mut entries = self.lock();
        let entry = entries.get_mut(id).ok_or_else(gone)?;
        if entry.terminal() {
            return Err(gone());
        }
        let mut keys = Vec::new();
        for (asked_as, request) in requests {
            let key = entry.next_key.to_string();
            entry.next_key += 1;
            entry.asks.insert(
                key.clone(),
                Ask {
                    request: request.clone(),
                    answer: None,
                },
            );
            keys.push((asked_as.clone(), key));
        }
        entry.updated_utc = self.now_text().0;
        self.changed();
        loop {
            let Some(entry) = entries.get_mut(id).filter(|e| !e.terminal()) else {
                return Err(gone());
            };
            let done = keys
                .iter()
                .all(|(_, key)| entry.asks.get(key).is_some_and(|a| a.answer.is_some()));
            if done {
                let mut answers = Map::new();
                for (asked_as, key) in &keys {
                    if let Some(Ask {
                        answer: Some(answer),
                        ..
                    }) = entry.asks.remove(key)
                    {
                        answers.insert(asked_as.clone(), answer);
                    }
                }
                return Ok(answers);
            }
            // A timeout too, so a task dropped by its TTL is noticed even without a change.
            entries = self
                .answered
                .wait_timeout(entries, Duration::from_secs(1))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            self.expire(&mut entries);
        }
    }
}

/// Whether `owner` may add a task: under the maximum, or after dropping its oldest task that
/// was cancelled or whose end a client has already seen.
fn make_room(entries: &mut HashMap<String, Entry>, owner: &str, max: usize) -> bool {
    let owned = entries.values().filter(|e| e.owner == owner).count();
    if owned < max {
        return true;
    }
    let oldest = entries
        .iter()
        .filter(|(_, e)| e.owner == owner && (e.delivered || matches!(e.state, State::Cancelled)))
        .min_by_key(|(_, e)| e.created)
        .map(|(id, _)| id.clone());
    match oldest {
        Some(id) => {
            entries.remove(&id);
            true
        }
        None => false,
    }
}

fn unknown(id: &str) -> RpcError {
    RpcError::new(
        ErrorCode::InvalidParams,
        format!("tarea desconocida o caducada: '{id}'"),
    )
}

fn gone() -> String {
    "la tarea se canceló o caducó".into()
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// `2026-07-28T10:30:00Z`.
fn iso(ts_utc: i64) -> String {
    chrono::DateTime::from_timestamp(ts_utc, 0)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The client's questions from a task's tool: parked on the task until `tasks/update`.
struct TaskPeer {
    service: Arc<Service>,
    id: String,
}

impl Peer for TaskPeer {
    fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let tasks = self.service.tasks.as_ref().ok_or_else(gone)?;
        let mut one = Map::new();
        one.insert(
            "pregunta".into(),
            json!({"method": method, "params": params}),
        );
        let mut answers = tasks.ask_all(&self.id, &one)?;
        answers.remove("pregunta").ok_or_else(gone)
    }
}

/// What [`start`] decided.
pub enum Started {
    /// Write this line: the `CreateTaskResult`, an input-required answer, or a refusal.
    Line(String),
    /// No task after all (no room for an optional one, arguments that do not fit): run it as
    /// an ordinary call.
    Ordinary(Box<Call>),
}

/// Turns `call` (one the session marked as a task) into a running task owned by `owner`:
/// first the tool's [`gather`](super::Tool::gather), then the task is stored (so `tasks/get`
/// finds it as soon as the answer is out) and run on its own thread.
pub fn start(service: &Arc<Service>, call: Call, owner: &str) -> Started {
    let (Some(tasks), Some(tool)) = (&service.tasks, service.tools.get(call.tool)) else {
        return Started::Ordinary(Box::new(call));
    };
    let definition = tool.definition();
    if schema::validate(&definition.input_schema, &call.arguments).is_err() {
        return Started::Ordinary(Box::new(call));
    }
    if let Some(early) = tool.gather(&call.arguments, &call.request) {
        return Started::Line(response_line(&call.id, &result_json(early, call.version)));
    }
    let cancelled = Arc::new(AtomicBool::new(false));
    let (id, created) = match tasks.create(owner, Arc::clone(&cancelled)) {
        Ok(created) => created,
        Err(reason) if definition.task_support == TaskSupport::Required => {
            let error = RpcError::new(ErrorCode::InvalidRequest, reason);
            return Started::Line(error_line(Some(&call.id), &error));
        }
        Err(_) => return Started::Ordinary(Box::new(call)),
    };
    let line = response_line(&call.id, &created);
    let runner = {
        let (service, id) = (Arc::clone(service), id.clone());
        move || run(&service, &call, &id, cancelled)
    };
    if std::thread::Builder::new()
        .name("mcp-tarea".into())
        .spawn(runner)
        .is_err()
    {
        let error = RpcError::new(ErrorCode::InternalError, "no se pudo arrancar la tarea");
        tasks.finish(&id, State::Failed(error_json(&error)), None);
    }
    Started::Line(line)
}

/// The task's thread: runs the tool, answering its input-required results through the
/// task's own questions, and records how it ended.
fn run(service: &Arc<Service>, call: &Call, id: &str, cancelled: Arc<AtomicBool>) {
    let Some(tasks) = &service.tasks else {
        return;
    };
    let _current = CurrentCall::enter(Arc::clone(&cancelled));
    let mut request = call.request.clone();
    loop {
        let peer: Arc<dyn Peer> = Arc::new(TaskPeer {
            service: Arc::clone(service),
            id: id.to_owned(),
        });
        let ctx = CallContext::new(Arc::clone(&cancelled), None)
            .with_peer(Some(peer))
            .with_request(request.clone());
        let outcome = catch_unwind(AssertUnwindSafe(|| service.run(call, &ctx)));
        let (state, message) = match outcome {
            Ok(Ok(ToolResult {
                input_required: Some(input),
                ..
            })) => {
                let asked = input
                    .input_requests
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                match tasks.ask_all(id, &asked) {
                    Ok(answers) => {
                        request.input_responses = Some(Value::Object(answers));
                        request.request_state = input.request_state;
                        continue;
                    }
                    Err(_) => return,
                }
            }
            Ok(Ok(result)) => (State::Completed(result_json(result, call.version)), None),
            Ok(Err(error)) => {
                let message = error.data.as_str().map(str::to_owned);
                (State::Failed(error_json(&error)), message)
            }
            Err(_) => {
                let error = RpcError::new(
                    ErrorCode::InternalError,
                    "la herramienta falló internamente",
                );
                (
                    State::Failed(error_json(&error)),
                    Some("la herramienta falló internamente".into()),
                )
            }
        };
        tasks.finish(id, state, message);
        return;
    }
}

/// A JSON-RPC error object, as a failed task carries it.
fn error_json(error: &RpcError) -> Value {
    json!({"code": error.code.code(), "message": error.code.message(), "data": error.data})
}

/// Whether a request's declared capabilities include this extension.
pub fn declared(capabilities: &Value) -> bool {
    capabilities
        .get("extensions")
        .and_then(|e| e.get(EXTENSION))
        .is_some_and(|v| !v.is_null())
}

/// The error for a client that did not declare the extension (`-32021`).
pub fn missing_extension() -> RpcError {
    RpcError::with_data(
        ErrorCode::MissingClientCapability,
        json!({"requiredCapabilities": {"extensions": {EXTENSION: {}}}}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::jsonrpc::classify;
    use crate::mcp::session::{Action, Session};
    use crate::mcp::tool::{Annotations, Content, Tool, ToolDefinition, ToolError};

    type Body = Box<dyn Fn(&Value, &CallContext) -> Result<ToolResult, ToolError> + Send + Sync>;

    struct Probe(ToolDefinition, Body);

    impl Tool for Probe {
        fn definition(&self) -> &ToolDefinition {
            &self.0
        }
        fn call(&self, arguments: Value, ctx: &CallContext) -> Result<ToolResult, ToolError> {
            (self.1)(&arguments, ctx)
        }
    }

    fn probe(
        name: &str,
        support: TaskSupport,
        body: impl Fn(&Value, &CallContext) -> Result<ToolResult, ToolError> + Send + Sync + 'static,
    ) -> Box<dyn Tool> {
        Box::new(Probe(
            ToolDefinition {
                name: name.into(),
                title: name.into(),
                description: name.into(),
                input_schema: json!({"type": "object"}),
                output_schema: None,
                annotations: Annotations::READ_ONLY,
                meta: None,
                requires: None,
                task_support: support,
            },
            Box::new(body),
        ))
    }

    fn text(text: impl Into<String>) -> ToolResult {
        ToolResult::content(vec![Content::Text(text.into())])
    }

    /// Waits until the call is cancelled (the task's TTL or `tasks/cancel`).
    fn until_cancelled(_: &Value, ctx: &CallContext) -> Result<ToolResult, ToolError> {
        while !ctx.is_cancelled() {
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(text("tarde"))
    }

    fn service(settings: TaskSettings) -> Arc<Service> {
        let tools = vec![
            probe("eco", TaskSupport::Optional, |args, _| {
                Ok(text(format!("eco {}", args["x"])))
            }),
            probe("larga", TaskSupport::Optional, until_cancelled),
            probe("solo_tarea", TaskSupport::Required, until_cancelled),
            probe("dos_preguntas", TaskSupport::Optional, |_, ctx| {
                let ask = |what: &str| ctx.ask("elicitation/create", json!({"message": what}));
                let (a, b) = std::thread::scope(|scope| {
                    let a = scope.spawn(|| ask("¿uno?"));
                    let b = scope.spawn(|| ask("¿dos?"));
                    (a.join(), b.join())
                });
                match (a, b) {
                    (Ok(Ok(a)), Ok(Ok(b))) => Ok(text(format!("{} {}", a["v"], b["v"]))),
                    _ => Err(ToolError::Failed("sin respuesta".into())),
                }
            }),
            probe("ida_y_vuelta", TaskSupport::Optional, |_, ctx| {
                Ok(match &ctx.request().input_responses {
                    Some(answers) => text(format!("nombre {}", answers["nombre"]["v"])),
                    None => ToolResult::input_required(
                        json!({"nombre": {"method": "elicitation/create", "params": {}}}),
                        Some("estado".into()),
                    ),
                })
            }),
            probe("falla", TaskSupport::Optional, |_, _| {
                Err(ToolError::Failed("no hay datos".into()))
            }),
            probe("rechaza", TaskSupport::Optional, |_, _| {
                Err(ToolError::Rejected("petición inaceptable".into()))
            }),
        ];
        Arc::new(Service {
            tools,
            tasks: Some(Tasks::new(settings)),
            ..Service::default()
        })
    }

    fn settings() -> TaskSettings {
        TaskSettings::new(Clock::fixed(1_785_000_000))
    }

    const EXT: &str = r#""io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}"#;

    /// A modern `tools/call` of `name` that declares the extension, as the session makes it.
    fn task_call(service: &Service, name: &str, arguments: Value) -> Call {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"{name}","arguments":{arguments},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28",{EXT}}}}}}}"#
        );
        match Session::new(service).handle(classify(line.as_bytes())) {
            Action::Task(call) => call,
            _ => panic!("not a task: {line}"),
        }
    }

    /// Starts a task and returns its id.
    fn started(service: &Arc<Service>, name: &str, owner: &str) -> String {
        let call = task_call(service, name, json!({"x": 1}));
        let Started::Line(line) = start(service, call, owner) else {
            panic!("no task for {name}");
        };
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["result"]["resultType"], "task", "{answer}");
        answer["result"]["taskId"].as_str().unwrap().to_owned()
    }

    fn store(service: &Service) -> &Tasks {
        service.tasks.as_ref().unwrap()
    }

    /// Polls `tasks/get` until `done` holds (bounded: a stuck task fails the test; the bound
    /// is a hang guard, far beyond what a busy machine takes to run a worker).
    fn poll(service: &Service, id: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        while std::time::Instant::now() < deadline {
            let task = store(service).get(id).unwrap();
            if done(&task) {
                return task;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!(
            "task {id} never got there: {}",
            store(service).get(id).unwrap()
        );
    }

    fn terminal(task: &Value) -> bool {
        ["completed", "failed", "cancelled"].contains(&task["status"].as_str().unwrap())
    }

    #[test]
    fn a_task_is_created_at_once_and_its_result_inlined_when_done() {
        let service = service(settings());
        let id = started(&service, "eco", "a");
        assert_eq!(id.len(), 32, "128 random bits");
        let task = poll(&service, &id, terminal);
        assert_eq!(task["status"], "completed");
        assert_eq!(task["resultType"], "complete");
        assert_eq!(task["result"]["content"][0]["text"], "eco 1");
        assert_eq!(task["result"]["resultType"], "complete");
        assert_eq!(task["createdAt"], "2026-07-25T17:20:00Z");
        assert_eq!(task["ttlMs"], 1_800_000);
        assert_eq!(task["pollIntervalMs"], 1_000);
        for absent in [
            "error",
            "inputRequests",
            "requestState",
            "ttl",
            "pollInterval",
        ] {
            assert!(task.get(absent).is_none(), "{absent} in {task}");
        }
    }

    #[test]
    fn a_tool_error_completes_and_a_protocol_error_fails() {
        let service = service(settings());
        let id = started(&service, "falla", "a");
        let task = poll(&service, &id, terminal);
        assert_eq!(task["status"], "completed");
        assert_eq!(task["result"]["isError"], true);
        let id = started(&service, "rechaza", "a");
        let task = poll(&service, &id, terminal);
        assert_eq!(task["status"], "failed");
        assert_eq!(task["error"]["code"], -32602);
        assert_eq!(task["statusMessage"], "petición inaceptable");
        assert!(task.get("result").is_none());
    }

    #[test]
    fn questions_wait_for_tasks_update_and_a_partial_answer_keeps_the_rest() {
        let service = service(settings());
        let id = started(&service, "dos_preguntas", "a");
        let asking = poll(&service, &id, |t| {
            t["inputRequests"].as_object().is_some_and(|r| r.len() == 2)
        });
        assert_eq!(asking["status"], "input_required");
        let keys: Vec<String> = asking["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(
            asking["inputRequests"][&keys[0]]["method"],
            "elicitation/create"
        );
        let one = json!({&keys[0]: {"action": "accept", "v": 1}, "nunca": {"v": 9}});
        let ack = store(&service)
            .update(&id, one.as_object().unwrap())
            .unwrap();
        assert_eq!(ack, json!({"resultType": "complete"}));
        let after = store(&service).get(&id).unwrap();
        assert_eq!(after["status"], "input_required");
        let left: Vec<&String> = after["inputRequests"].as_object().unwrap().keys().collect();
        assert_eq!(left, [&keys[1]]);
        let two = json!({&keys[1]: {"action": "accept", "v": 2}});
        store(&service)
            .update(&id, two.as_object().unwrap())
            .unwrap();
        let task = poll(&service, &id, terminal);
        assert_eq!(task["status"], "completed");
        let answer = task["result"]["content"][0]["text"].as_str().unwrap();
        assert!(answer == "1 2" || answer == "2 1", "{answer}");
    }

    #[test]
    fn an_input_required_result_inside_a_task_becomes_its_questions() {
        let service = service(settings());
        let id = started(&service, "ida_y_vuelta", "a");
        let asking = poll(&service, &id, |t| t["status"] == "input_required");
        let key = asking["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        let answer = json!({&key: {"action": "accept", "v": "Ana"}});
        store(&service)
            .update(&id, answer.as_object().unwrap())
            .unwrap();
        let task = poll(&service, &id, terminal);
        assert_eq!(task["result"]["content"][0]["text"], "nombre \"Ana\"");
    }

    #[test]
    fn cancel_stops_the_tool_is_idempotent_and_unknown_ids_are_invalid_params() {
        let service = service(settings());
        let id = started(&service, "larga", "a");
        let ack = store(&service).cancel(&id).unwrap();
        assert_eq!(ack, json!({"resultType": "complete"}));
        let task = store(&service).get(&id).unwrap();
        assert_eq!(task["status"], "cancelled");
        assert_eq!(store(&service).cancel(&id).unwrap(), ack);
        // The tool saw the flag and ended; its late answer does not replace `cancelled`.
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(store(&service).get(&id).unwrap()["status"], "cancelled");
        for result in [
            store(&service).get("otra"),
            store(&service).cancel("otra"),
            store(&service).update("otra", &Map::new()),
        ] {
            let error = result.unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidParams);
            assert!(error.data.as_str().unwrap().contains("tarea desconocida"));
        }
    }

    #[test]
    fn each_owner_keeps_a_bounded_number_of_tasks() {
        let service = service(TaskSettings {
            max_per_owner: 2,
            ..settings()
        });
        let first = started(&service, "larga", "a");
        started(&service, "larga", "a");
        // Full: an optional task runs as an ordinary call, a required one is refused.
        let call = task_call(&service, "larga", json!({}));
        assert!(matches!(start(&service, call, "a"), Started::Ordinary(_)));
        let call = task_call(&service, "solo_tarea", json!({}));
        let Started::Line(line) = start(&service, call, "a") else {
            panic!("a required task was run without one");
        };
        assert!(line.contains("demasiadas tareas abiertas (2)"), "{line}");
        // Another owner has its own room; a cancelled task makes room for its owner.
        started(&service, "larga", "b");
        store(&service).cancel(&first).unwrap();
        started(&service, "larga", "a");
        assert!(
            store(&service).get(&first).is_err(),
            "the cancelled one made room"
        );
    }

    #[test]
    fn a_task_past_its_ttl_is_dropped() {
        let service = service(TaskSettings {
            ttl: Duration::ZERO,
            ..settings()
        });
        let call = task_call(&service, "larga", json!({}));
        let Started::Line(line) = start(&service, call, "a") else {
            panic!("no task");
        };
        let answer: Value = serde_json::from_str(&line).unwrap();
        let id = answer["result"]["taskId"].as_str().unwrap();
        assert_eq!(
            store(&service).get(id).unwrap_err().code,
            ErrorCode::InvalidParams
        );
    }

    #[test]
    fn arguments_that_do_not_fit_are_answered_as_an_ordinary_call() {
        let service = service(settings());
        let mut call = task_call(&service, "eco", json!({}));
        call.arguments = json!("no es un objeto");
        assert!(matches!(start(&service, call, "a"), Started::Ordinary(_)));
    }
}
