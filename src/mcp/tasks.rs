//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): a tool call answered with
//! a task handle at once, run on its own thread, watched with `tasks/get`, fed the client's
//! answers with `tasks/update`, stopped with `tasks/cancel`.
//!
//! Owns [`Tasks`] (the bounded store: a time to live per task, a maximum per owner), the
//! task's wire shapes (`CreateTaskResult`, the detailed task of `tasks/get`), the runner
//! thread ([`start`]) and the [`Peer`] a task's tool asks the client through: its questions
//! wait in `inputRequests` until `tasks/update` answers them. Knows nothing of transports:
//! each hands [`start`] a call and an owner (its session) and writes the line it gets back;
//! the session answers `tasks/*` through [`Tasks::get`], [`Tasks::update`], [`Tasks::cancel`].

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
        return Started::Line(response_line(&call.id, &result_json(&early, call.version)));
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
            Ok(Ok(result)) => (State::Completed(result_json(&result, call.version)), None),
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
