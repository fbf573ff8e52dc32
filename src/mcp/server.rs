//! The running server: a reader, a pool of workers, one writer.
//!
//! The calling thread reads lines and answers everything cheap itself (`initialize`, `ping`,
//! `tools/list`, errors, cancellations), so those stay fast while a tool runs. Tool calls go
//! to worker threads; their answers may leave out of order. The in-flight table is the single
//! point that decides whether a call's progress or response may still be written: once
//! `notifications/cancelled` marks a call, nothing more is sent for it. A call that outlives
//! the time limit is answered by a watchdog with an `isError` result and marked cancelled, so
//! the tool stops at its next check and its late answer is dropped. A panicking tool becomes
//! a `-32603` answer for that request only.

use std::collections::HashMap;
use std::io::{self, BufRead};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, SyncSender};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::value::RawValue;

use super::jsonrpc::{self, ErrorCode, RpcError, error_line, notification_line};
use super::session::{Action, Call, Service, Session};
use super::tool::CallContext;
use super::transport::{DEFAULT_MAX_LINE_BYTES, Line, LineReader, Outgoing, spawn_writer};
use crate::{log_debug, log_error, log_info, log_warn};

/// Knobs of a running server.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Worker threads for tool calls.
    pub workers: usize,
    /// Longest accepted input line, in bytes.
    pub max_line_bytes: usize,
    /// Calls allowed in flight at once. At the cap the reader stops reading (the client's
    /// pipe fills: back-pressure, no memory growth) for up to `admission_wait`; a call still
    /// without a slot then is refused, so cancellations and pings are never starved.
    pub max_in_flight: usize,
    /// Request bytes allowed in flight at once (each call counts its line's length): with
    /// lines of up to `max_line_bytes`, the call count alone would let a few hundred MB
    /// wait in the queue. A single call is always admitted when nothing else runs.
    pub max_in_flight_bytes: usize,
    pub admission_wait: Duration,
    /// After stdin closes, how long running calls may take to finish before being abandoned.
    pub eof_grace: Duration,
    /// Longest a call may take from arrival to answer; `None` = no limit.
    pub call_timeout: Option<Duration>,
    /// Log every message in and out on stderr.
    pub verbose: bool,
}

impl Default for ServeOptions {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        ServeOptions {
            workers: cores.clamp(2, 8),
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_in_flight: 64,
            max_in_flight_bytes: 64 * 1024 * 1024,
            admission_wait: Duration::from_secs(2),
            eof_grace: Duration::from_millis(800),
            // Well inside the 60 s clients commonly wait, so the model hears why.
            call_timeout: Some(Duration::from_secs(30)),
            verbose: false,
        }
    }
}

/// One call in progress.
struct Entry {
    /// Set by `notifications/cancelled` or the watchdog; the tool's answer is then dropped.
    cancelled: Arc<AtomicBool>,
    /// When the watchdog answers for it, with the line it sends.
    deadline: Option<(Instant, String)>,
    /// Length of its request line, for the byte budget.
    bytes: usize,
}

/// Calls in progress, keyed by the raw text of their request id. An entry stays until its
/// worker is done, even after a cancellation or a timeout: the id is still busy, and the
/// in-flight cap counts threads really working.
#[derive(Default)]
struct InFlight {
    calls: Mutex<HashMap<String, Entry>>,
    changed: Condvar,
}

type Calls<'a> = std::sync::MutexGuard<'a, HashMap<String, Entry>>;

impl InFlight {
    fn lock(&self) -> Calls<'_> {
        // A panicking tool never holds this lock, but stay usable even if something did.
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits up to `left` for a call to finish.
    fn wait<'a>(&'a self, calls: Calls<'a>, left: Duration) -> Calls<'a> {
        self.changed
            .wait_timeout(calls, left)
            .map(|(guard, _)| guard)
            .unwrap_or_else(|poisoned| poisoned.into_inner().0)
    }
}

struct Job {
    call: Call,
    key: String,
    cancelled: Arc<AtomicBool>,
}

/// Serves one client over `input`/`output` until `input` ends. Returns once the answers that
/// could be given are written (or the grace period ran out).
pub fn serve<R, W>(service: Service, input: R, output: W, options: ServeOptions) -> io::Result<()>
where
    R: BufRead,
    W: io::Write + Send + 'static,
{
    for name in service.duplicate_tool_names() {
        log_warn!("herramienta registrada dos veces: {name}");
    }
    let service = Arc::new(service);
    let verbose = options.verbose;
    let (outbox, writer) = spawn_writer(output, move |line| {
        if verbose {
            log_info!("→ {}", abbreviate(line));
        }
    });
    let in_flight = Arc::new(InFlight::default());
    let (jobs, job_queue) = mpsc::channel::<Job>();
    let job_queue = Arc::new(Mutex::new(job_queue));
    for index in 0..options.workers.max(1) {
        let service = Arc::clone(&service);
        let in_flight = Arc::clone(&in_flight);
        let outbox = outbox.clone();
        let job_queue = Arc::clone(&job_queue);
        std::thread::Builder::new()
            .name(format!("mcp-worker-{index}"))
            .spawn(move || worker(&service, &in_flight, &outbox, &job_queue))?;
    }

    let watchdog_stop = Arc::new(AtomicBool::new(false));
    if options.call_timeout.is_some() {
        let in_flight = Arc::clone(&in_flight);
        let outbox = outbox.clone();
        let stop = Arc::clone(&watchdog_stop);
        std::thread::Builder::new()
            .name("mcp-watchdog".into())
            .spawn(move || watchdog(&in_flight, &outbox, &stop))?;
    }

    let mut reader = LineReader::new(input, options.max_line_bytes);
    let mut session = Session::new(&service);
    loop {
        let line = match reader.next_line() {
            Ok(Line::Eof) => break,
            Ok(line) => line,
            Err(err) => {
                log_error!("error leyendo la entrada: {err}");
                break;
            }
        };
        let bytes = match line {
            Line::Complete(bytes) => bytes,
            Line::TooLong { bytes } => {
                log_warn!(
                    "línea de {bytes} bytes descartada (límite {})",
                    options.max_line_bytes
                );
                let error = RpcError::new(
                    ErrorCode::InvalidRequest,
                    format!(
                        "mensaje de {bytes} bytes descartado: supera el límite de {} bytes por línea",
                        options.max_line_bytes
                    ),
                );
                send(&outbox, error_line(None, &error));
                continue;
            }
            Line::Eof => break,
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if verbose {
            log_info!("← {}", abbreviate(&String::from_utf8_lossy(&bytes)));
        }
        let size = bytes.len();
        match session.handle(jsonrpc::classify(&bytes)) {
            Action::Send(line) => send(&outbox, line),
            Action::Nothing => {}
            Action::Cancel(key) => {
                if let Some(entry) = in_flight.lock().get(&key) {
                    log_debug!("llamada {key} cancelada por el cliente");
                    entry.cancelled.store(true, Ordering::Relaxed);
                }
            }
            Action::Call(call) => {
                let key = call.id.get().to_owned();
                let mut calls = in_flight.lock();
                let admission = Instant::now() + options.admission_wait;
                let full = |calls: &HashMap<String, Entry>| {
                    let queued: usize = calls.values().map(|e| e.bytes).sum();
                    calls.len() >= options.max_in_flight
                        || (!calls.is_empty() && queued + size > options.max_in_flight_bytes)
                };
                while full(&calls) && !calls.contains_key(&key) {
                    let left = admission.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    calls = in_flight.wait(calls, left);
                }
                let refusal = if calls.contains_key(&key) {
                    Some(format!("ya hay una llamada en curso con el id {key}"))
                } else if full(&calls) {
                    let queued: usize = calls.values().map(|e| e.bytes).sum();
                    Some(format!(
                        "servidor ocupado: {} llamadas en curso ({:.1} MB de solicitudes); \
                         reintente cuando terminen",
                        calls.len(),
                        queued as f64 / 1e6
                    ))
                } else {
                    None
                };
                if let Some(reason) = refusal {
                    drop(calls);
                    let error = RpcError::new(ErrorCode::InvalidRequest, reason);
                    send(&outbox, error_line(Some(&call.id), &error));
                    continue;
                }
                let cancelled = Arc::new(AtomicBool::new(false));
                let deadline = options
                    .call_timeout
                    .map(|limit| (Instant::now() + limit, service.timeout_line(&call, limit)));
                calls.insert(
                    key.clone(),
                    Entry {
                        cancelled: Arc::clone(&cancelled),
                        deadline,
                        bytes: size,
                    },
                );
                drop(calls);
                if jobs
                    .send(Job {
                        call,
                        key,
                        cancelled,
                    })
                    .is_err()
                {
                    log_error!("no quedan trabajadores para atender llamadas");
                    break;
                }
            }
        }
    }

    // Input is over: give running calls a moment, then let the writer drain and stop.
    drop(jobs);
    let deadline = Instant::now() + options.eof_grace;
    let mut calls = in_flight.lock();
    while !calls.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            log_warn!(
                "{} llamadas abandonadas al cerrarse la entrada",
                calls.len()
            );
            // Abandoned calls must not write after the writer is gone.
            for entry in calls.values() {
                entry.cancelled.store(true, Ordering::Relaxed);
            }
            break;
        }
        calls = in_flight.wait(calls, left);
    }
    drop(calls);
    watchdog_stop.store(true, Ordering::Relaxed);
    let _ = outbox.send(Outgoing::Close);
    drop(outbox);
    // The writer may be blocked on a client that stopped reading; do not wait forever.
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = writer.join();
        let _ = done_tx.send(());
    });
    let _ = done_rx.recv_timeout(Duration::from_millis(150));
    Ok(())
}

fn send(outbox: &SyncSender<Outgoing>, line: String) {
    // A closed writer means the client is gone; there is no one to tell.
    let _ = outbox.send(Outgoing::Line(line));
}

/// Answers calls that outlive their deadline, and marks them cancelled. Polls: at most 64
/// calls are in flight, and a limit is measured in seconds.
fn watchdog(in_flight: &InFlight, outbox: &SyncSender<Outgoing>, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20));
        let now = Instant::now();
        let mut calls = in_flight.lock();
        for (key, entry) in calls.iter_mut() {
            let due = entry
                .deadline
                .as_ref()
                .is_some_and(|(deadline, _)| now >= *deadline);
            if !due {
                continue;
            }
            if let Some((_, line)) = entry.deadline.take()
                && !entry.cancelled.swap(true, Ordering::Relaxed)
            {
                log_warn!("llamada {key} cancelada: superó el límite de tiempo");
                send(outbox, line);
            }
        }
    }
}

fn worker(
    service: &Service,
    in_flight: &Arc<InFlight>,
    outbox: &SyncSender<Outgoing>,
    job_queue: &Mutex<mpsc::Receiver<Job>>,
) {
    loop {
        let job = {
            let queue = job_queue.lock().unwrap_or_else(PoisonError::into_inner);
            match queue.recv() {
                Ok(job) => job,
                Err(_) => return,
            }
        };
        let progress = job.call.progress_token.as_ref().map(|token| {
            progress_sink(
                token.clone(),
                job.key.clone(),
                Arc::clone(in_flight),
                outbox.clone(),
            )
        });
        let ctx = CallContext::new(Arc::clone(&job.cancelled), progress);
        let started = Instant::now();
        if job.cancelled.load(Ordering::Relaxed) {
            // Cancelled or timed out while queued: already answered (or never to be).
            let mut calls = in_flight.lock();
            calls.remove(&job.key);
            in_flight.changed.notify_all();
            continue;
        }
        let current = super::tool::CurrentCall::enter(Arc::clone(&job.cancelled));
        let line = catch_unwind(AssertUnwindSafe(|| service.execute(&job.call, &ctx)))
            .unwrap_or_else(|_| {
                let name = service
                    .tools
                    .get(job.call.tool)
                    .map_or("?", |t| t.definition().name.as_str());
                log_error!("la herramienta {name} entró en pánico (id {})", job.key);
                error_line(
                    Some(&job.call.id),
                    &RpcError::new(
                        ErrorCode::InternalError,
                        format!("la herramienta '{name}' falló internamente; el servidor sigue disponible"),
                    ),
                )
            });
        drop(current);
        log_debug!("llamada {} atendida en {:?}", job.key, started.elapsed());
        // Remove and answer under the lock, so a cancellation is either before (no answer)
        // or after (too late, the answer is already queued) — never in between.
        let mut calls = in_flight.lock();
        calls.remove(&job.key);
        if !job.cancelled.load(Ordering::Relaxed) {
            send(outbox, line);
        }
        in_flight.changed.notify_all();
    }
}

/// Builds the progress callback of one call: echoes the token, keeps values increasing, and
/// goes silent once the call is answered or cancelled.
fn progress_sink(
    token: Box<RawValue>,
    key: String,
    in_flight: Arc<InFlight>,
    outbox: SyncSender<Outgoing>,
) -> super::tool::ProgressSink {
    let last = Mutex::new(f64::NEG_INFINITY);
    Box::new(
        move |progress: f64, total: Option<f64>, message: Option<&str>| {
            let mut last = last.lock().unwrap_or_else(PoisonError::into_inner);
            if !progress.is_finite() || progress <= *last {
                return;
            }
            let calls = in_flight.lock();
            let live = calls
                .get(&key)
                .is_some_and(|entry| !entry.cancelled.load(Ordering::Relaxed));
            if !live {
                return;
            }
            *last = progress;
            let params = ProgressParams {
                progress_token: &token,
                progress,
                total,
                message,
            };
            send(
                &outbox,
                notification_line("notifications/progress", &params),
            );
        },
    )
}

/// `notifications/progress` params; the token stays raw so its JSON type and digits survive.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProgressParams<'a> {
    progress_token: &'a RawValue,
    progress: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    total: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
}

/// Shortens a line for the log; map images make lines of hundreds of KB.
fn abbreviate(line: &str) -> String {
    const MAX: usize = 2000;
    if line.len() <= MAX {
        return line.to_owned();
    }
    let mut cut = MAX;
    while !line.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes)", &line[..cut], line.len())
}
