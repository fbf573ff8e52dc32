//! The running server: a reader, a pool of workers, one writer, and the calling thread that
//! decides when it is over.
//!
//! The reader thread reads lines and answers everything cheap itself (`initialize`, `ping`,
//! `tools/list`, errors, cancellations), so those stay fast while a tool runs. Tool calls go
//! to worker threads; their answers may leave out of order. The in-flight table
//! ([`super::in_flight`]) is the single point that decides whether a call starts and whether
//! its progress or response may still be written: once `notifications/cancelled` marks a call,
//! nothing more is sent for it. A call that outlives
//! the time limit is answered by a watchdog with an `isError` result and marked cancelled, so
//! the tool stops at its next check and its late answer is dropped. A panicking tool becomes
//! a `-32603` answer for that request only.
//!
//! The calling thread only waits for the end (input exhausted, the input hung up while the
//! output is stuck, or a stop signal from [`super::stdio`]) and then runs the shutdown, every
//! step of which has a deadline: no thread blocked in a read, a write or a tool can hold it.

use std::io::{self, BufRead};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use super::in_flight::{Admission, InFlight, Limits};
use super::jsonrpc::{self, ErrorCode, RpcError, error_line, notification_line};
use super::pool::Pool;
use super::service::{Call, List, Service};
use super::session::{Action, Session};
use super::sinks;
use super::tasks::{self, Started};
use super::tool::CallContext;
use super::transport::{DEFAULT_MAX_LINE_BYTES, Line, LineReader, Outbox, spawn_writer};
use crate::{log_debug, log_error, log_info, log_warn};

/// After the grace, how long the writer may take to write what is queued. With the default
/// grace this keeps the whole shutdown after end of input under one second.
const DRAIN: Duration = Duration::from_millis(150);

/// After a stop signal, how long a line already being written may take to complete, as long
/// as the client keeps reading (see [`STALL`]): a client that reads slowly still gets whole
/// lines. Only one that stops reading, or reads a line for longer than this, can see it cut.
const FINISH_LINE: Duration = Duration::from_secs(5);

/// Output that accepts no byte of a waiting line for this long counts as stuck: once the
/// input is closed (or during the shutdown) nothing more is waited for.
const STALL: Duration = Duration::from_millis(500);

/// What ends a session. Sent to the calling thread by the reader, and by the watchers of
/// [`super::stdio`].
#[derive(Debug)]
pub(super) enum Event {
    /// The input is exhausted (read returned end of file) or unreadable.
    Eof,
    /// The peer closed the input, possibly with lines still unread in it.
    Hangup,
    /// A stop signal arrived; its name, for the log.
    Signal(&'static str),
}

/// How the session ended, which decides how much the shutdown waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Eof,
    Signal,
    /// The input is closed and the output accepts nothing: there is nobody to answer.
    Abandoned,
}

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
    /// When the input ends or a stop signal arrives, how long running calls may take to
    /// finish (and be answered) before being abandoned.
    pub stop_grace: Duration,
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
            stop_grace: Duration::from_millis(800),
            // Well inside the 60 s clients commonly wait, so the model hears why.
            call_timeout: Some(Duration::from_secs(30)),
            verbose: false,
        }
    }
}

struct Job {
    call: Call,
    key: String,
    cancelled: Arc<AtomicBool>,
}

/// Serves one client over `input`/`output` until `input` ends, then shuts down (see
/// [`ServeOptions::stop_grace`]). Returns within about a second of the end of input whatever
/// the state of `output`; threads still blocked (in a tool, or writing to a client that does
/// not read) are left behind, so a process should exit once this returns.
pub fn serve<R, W>(service: Service, input: R, output: W, options: ServeOptions) -> io::Result<()>
where
    R: BufRead + Send + 'static,
    W: io::Write + Send + 'static,
{
    let (events, ends) = mpsc::channel();
    run(service, input, output, options, events, &ends)
}

/// [`serve`], with other sources of [`Event`]s (hang-up, signals) sending into `events`.
pub(super) fn run<R, W>(
    service: Service,
    input: R,
    output: W,
    options: ServeOptions,
    events: Sender<Event>,
    ends: &Receiver<Event>,
) -> io::Result<()>
where
    R: BufRead + Send + 'static,
    W: io::Write + Send + 'static,
{
    for name in service.duplicate_names() {
        log_warn!("registrado dos veces: {name}");
    }
    let service = Arc::new(service);
    let verbose = options.verbose;
    let outbox = spawn_writer(output, move |line| {
        if verbose {
            log_info!("→ {}", abbreviate(line));
        }
    });
    let in_flight = Arc::new(InFlight::default());
    let workers = options.workers.max(1);
    let jobs = Arc::new(Pool::<Job>::new(workers));
    for index in 0..workers {
        let service = Arc::clone(&service);
        let in_flight = Arc::clone(&in_flight);
        let outbox = outbox.clone();
        let jobs = Arc::clone(&jobs);
        std::thread::Builder::new()
            .name(format!("mcp-worker-{index}"))
            .spawn(move || worker(&service, &in_flight, &outbox, &jobs, index))?;
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

    let ready = Arc::new(AtomicBool::new(false));
    let mut lists_seen = None;
    if List::ALL.iter().any(|l| service.announces(*l)) {
        let service = Arc::clone(&service);
        let outbox = outbox.clone();
        let ready = Arc::clone(&ready);
        let stop = Arc::clone(&watchdog_stop);
        let (seen, seen_rx) = mpsc::sync_channel(1);
        lists_seen = Some(seen_rx);
        std::thread::Builder::new()
            .name("mcp-recursos".into())
            .spawn(move || watch_resources(&service, &outbox, &ready, &stop, &seen))?;
    }

    let stopping = Arc::new(AtomicBool::new(false));
    let reader = Reader {
        ready,
        lists_seen,
        service: Arc::clone(&service),
        in_flight: Arc::clone(&in_flight),
        outbox: outbox.clone(),
        jobs,
        options: options.clone(),
        stopping: Arc::clone(&stopping),
    };
    let lines = LineReader::new(input, options.max_line_bytes);
    // Detached: after a stop signal it may stay blocked in a read that nothing will end.
    std::thread::Builder::new()
        .name("mcp-reader".into())
        .spawn(move || {
            reader.run(lines);
            let _ = events.send(Event::Eof);
        })?;

    let end = wait_for_end(ends, &outbox);
    stopping.store(true, Ordering::SeqCst);
    shut_down(end, &in_flight, &outbox, options.stop_grace);
    watchdog_stop.store(true, Ordering::Relaxed);
    Ok(())
}

/// Waits for the session to end. A hang-up alone does not end it: lines may still be
/// unread in the pipe (`printf … | servidor`), and they are served while the output moves.
/// Only when the output is stuck as well is there nobody left to serve.
fn wait_for_end(events: &Receiver<Event>, outbox: &Outbox) -> End {
    let mut hung_up = false;
    loop {
        let event = if hung_up {
            events.recv_timeout(Duration::from_millis(50))
        } else {
            events.recv().map_err(|_| RecvTimeoutError::Disconnected)
        };
        match event {
            Ok(Event::Eof) | Err(RecvTimeoutError::Disconnected) => return End::Eof,
            Ok(Event::Signal(name)) => {
                log_info!("{name} recibida: se deja de leer la entrada y el servidor termina");
                return End::Signal;
            }
            Ok(Event::Hangup) => {
                log_debug!("el cliente cerró la entrada");
                hung_up = true;
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        if hung_up && stalled(outbox) {
            log_warn!(
                "el cliente cerró la entrada y no lee las respuestas: se abandonan las pendientes"
            );
            return End::Abandoned;
        }
    }
}

fn stalled(outbox: &Outbox) -> bool {
    outbox.stalled_for().is_some_and(|idle| idle >= STALL)
}

/// The shutdown, every step bounded: running calls get `grace` to finish (unless nobody can
/// be answered), then no new line is accepted and the rest are abandoned, then the writer
/// gets [`DRAIN`] more to write what is queued, then it starts no new line. After a signal a
/// line already being written gets up to [`FINISH_LINE`] to complete while the client reads,
/// so the client never reads a cut line unless it stopped reading.
fn shut_down(end: End, in_flight: &InFlight, outbox: &Outbox, grace: Duration) {
    let started = Instant::now();
    if end != End::Abandoned {
        in_flight.drain(started + grace, || stalled(outbox));
    }
    // Producers blocked on a full queue drop their line and return, releasing the in-flight
    // lock; from here nothing new is written.
    outbox.close();
    let abandoned = in_flight.abandon();
    if abandoned > 0 {
        log_warn!("{abandoned} llamadas abandonadas al terminar el servidor");
    }
    if end != End::Abandoned && !outbox.drain(started + grace + DRAIN, STALL) {
        log_warn!("respuestas sin escribir al terminar: el cliente no las lee");
    }
    outbox.stop();
    let line_deadline = match end {
        End::Signal => Instant::now() + FINISH_LINE,
        End::Eof | End::Abandoned => Instant::now(),
    };
    if !outbox.finish_line(line_deadline, STALL) {
        log_warn!("una respuesta queda cortada: el cliente no terminó de leerla");
    }
}

/// The reader thread: turns lines into answers, calls and cancellations.
struct Reader {
    service: Arc<Service>,
    in_flight: Arc<InFlight>,
    outbox: Outbox,
    /// Closed when the reader is dropped: workers finish what is queued, then end.
    jobs: Arc<Pool<Job>>,
    options: ServeOptions,
    /// Set when the session is over: nothing read from then on is acted upon.
    stopping: Arc<AtomicBool>,
    /// Set once the handshake is complete: server notifications may go out.
    ready: Arc<AtomicBool>,
    /// Signalled once the list watcher holds the lists' versions the session starts from:
    /// nothing is answered before, so a list changed after the client's first answer is
    /// always announced (a watcher scheduled late would otherwise start from the new list).
    lists_seen: Option<mpsc::Receiver<()>>,
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.jobs.close();
    }
}

impl Reader {
    fn run<R: BufRead>(mut self, mut lines: LineReader<R>) {
        let mut session = Session::new(&self.service);
        loop {
            let line = lines.next_line();
            if self.stopping.load(Ordering::SeqCst) {
                return;
            }
            let bytes = match line {
                Ok(Line::Complete(bytes)) => bytes,
                Ok(Line::TooLong { bytes }) => {
                    self.refuse_long_line(bytes);
                    continue;
                }
                Ok(Line::Eof) => return,
                Err(err) => {
                    log_error!("error leyendo la entrada: {err}");
                    return;
                }
            };
            if bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if self.options.verbose {
                log_info!("← {}", abbreviate(&String::from_utf8_lossy(&bytes)));
            }
            let size = bytes.len();
            if let Some(seen) = self.lists_seen.take() {
                // The watcher's first look ran beside this read; a watcher that ended
                // (disconnected) has nothing to wait for.
                let _ = seen.recv();
            }
            let action = session.handle(jsonrpc::classify(&bytes));
            self.ready
                .store(session.state().is_ready(), Ordering::Relaxed);
            match action {
                Action::Send(line) => send(&self.outbox, line),
                Action::Nothing => {}
                Action::Cancel(key) => {
                    if self.in_flight.cancel(&key) {
                        log_debug!("llamada {key} cancelada por el cliente");
                    }
                }
                Action::Listen { id, .. } => send(&self.outbox, Session::cannot_listen(&id)),
                Action::Call(call) => {
                    if !self.admit(call, size) {
                        return;
                    }
                }
                Action::Task(call) => match tasks::start(&self.service, call, "stdio") {
                    Started::Line(line) => send(&self.outbox, line),
                    Started::Ordinary(call) => {
                        if !self.admit(*call, size) {
                            return;
                        }
                    }
                },
            }
        }
    }

    fn refuse_long_line(&self, bytes: usize) {
        let max = self.options.max_line_bytes;
        log_warn!("línea de {bytes} bytes descartada (límite {max})");
        let error = RpcError::new(
            ErrorCode::InvalidRequest,
            format!(
                "mensaje de {bytes} bytes descartado: supera el límite de {max} bytes por línea"
            ),
        );
        send(&self.outbox, error_line(None, &error));
    }

    /// Asks the in-flight table for a slot (waiting: back-pressure), then hands the call to a
    /// worker or refuses it. Returns false when reading must end (no workers left, or the
    /// session is over).
    fn admit(&self, call: Call, size: usize) -> bool {
        let options = &self.options;
        let key = call.id.get().to_owned();
        let limits = Limits {
            calls: options.max_in_flight,
            bytes: options.max_in_flight_bytes,
            wait: options.admission_wait,
        };
        let deadline = || {
            options.call_timeout.map(|limit| {
                (
                    Instant::now() + limit,
                    self.service.timeout_line(&call, limit),
                )
            })
        };
        let cancelled = match self
            .in_flight
            .admit(&key, size, limits, &self.stopping, deadline)
        {
            Admission::Admitted(cancelled) => cancelled,
            Admission::Refused(reason) => {
                let error = RpcError::new(ErrorCode::InvalidRequest, reason);
                send(&self.outbox, error_line(Some(&call.id), &error));
                return true;
            }
            Admission::Stopped => return false,
        };
        let job = Job {
            call,
            key,
            cancelled,
        };
        if self.jobs.submit(job).is_err() {
            log_error!("no quedan trabajadores para atender llamadas");
            return false;
        }
        true
    }
}

fn send(outbox: &Outbox, line: String) {
    // A closed outbox means the session is over or the client is gone: no one to tell.
    let _ = outbox.send(line);
}

/// How often the resource list's version is asked for.
const RESOURCES_POLL: Duration = Duration::from_secs(1);

/// Sends `notifications/…/list_changed` when one of the service's lists changes (its
/// version moves). A change seen before the handshake is complete is announced once it is:
/// the client may have read the list in between.
fn watch_resources(
    service: &Service,
    outbox: &Outbox,
    ready: &AtomicBool,
    stop: &AtomicBool,
    seen: &mpsc::SyncSender<()>,
) {
    let mut last = service.list_versions();
    // The reader may be gone already; then no one waits.
    let _ = seen.send(());
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(RESOURCES_POLL);
        let now = service.list_versions();
        let ready = ready.load(Ordering::Relaxed);
        for list in List::ALL {
            let i = list as usize;
            if now[i] == last[i] || !service.announces(list) {
                last[i] = now[i];
                continue;
            }
            if !ready {
                continue;
            }
            log_info!(
                "cambió una lista ({}): se avisa al cliente",
                list.notification()
            );
            let params = serde_json::json!({});
            send(outbox, notification_line(list.notification(), &params));
            last[i] = now[i];
        }
    }
}

/// Answers calls that outlive their deadline, and marks them cancelled. Polls: at most 64
/// calls are in flight, and a limit is measured in seconds.
fn watchdog(in_flight: &InFlight, outbox: &Outbox, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20));
        in_flight.expire(Instant::now(), |key, line| {
            log_warn!("llamada {key} cancelada: superó el límite de tiempo");
            send(outbox, line);
        });
    }
}

/// What the tool of `job` sees: its cancellation, and progress and log messages that go out
/// through `outbox` while the call is live.
fn call_context(
    service: &Service,
    job: &Job,
    in_flight: &Arc<InFlight>,
    outbox: &Outbox,
) -> CallContext {
    let out = outbox.clone();
    let send: sinks::Send = Arc::new(move |line| send(&out, line));
    let progress = job.call.progress_token.as_ref().map(|token| {
        sinks::progress(
            token.clone(),
            job.key.clone(),
            Arc::clone(in_flight),
            Arc::clone(&send),
        )
    });
    let log = job.call.log_level.map(|minimum| {
        sinks::log(
            minimum,
            service.info.name.clone(),
            job.key.clone(),
            Arc::clone(in_flight),
            Arc::clone(&send),
        )
    });
    CallContext::new(Arc::clone(&job.cancelled), progress)
        .with_log(log)
        .with_request(job.call.request.clone())
}

fn worker(
    service: &Service,
    in_flight: &Arc<InFlight>,
    outbox: &Outbox,
    jobs: &Pool<Job>,
    index: usize,
) {
    while let Some(job) = jobs.next(index) {
        let ctx = call_context(service, &job, in_flight, outbox);
        let started = Instant::now();
        if job.cancelled.load(Ordering::Relaxed) {
            // Cancelled or timed out while queued: already answered (or never to be).
            in_flight.finish(&job.key, None, |_| {});
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
        in_flight.finish(&job.key, Some(line), |line| send(outbox, line));
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::service::ServerInfo;
    use crate::mcp::transport::WRITER_QUEUE;
    use crate::mcp::transport::tests::unread;

    #[test]
    fn end_of_input_returns_even_when_the_output_never_drains() {
        // One line more than the writer's queue holds besides the one stuck in write(2): the
        // reader still reaches the end of input, and everything after it must be bounded.
        let mut input = String::from(
            r#"{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#,
        );
        input.push('\n');
        for id in 0..WRITER_QUEUE {
            input.push_str(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
            input.push('\n');
        }
        let (release, output) = unread();
        let service = Service {
            info: ServerInfo {
                name: "t".into(),
                version: "0".into(),
                title: "T".into(),
            },
            ..Service::default()
        };
        let (done, returned) = mpsc::channel();
        std::thread::spawn(move || {
            let result = serve(
                service,
                io::Cursor::new(input.into_bytes()),
                output,
                ServeOptions::default(),
            );
            let _ = done.send(result.is_ok());
        });
        // Generous: a liveness bound, not a performance claim.
        let outcome = returned.recv_timeout(Duration::from_secs(120));
        drop(release);
        assert_eq!(outcome, Ok(true), "serve did not return");
    }

    /// Collects what the server writes, line by line.
    struct Lines(mpsc::Sender<String>, Vec<u8>);

    impl io::Write for Lines {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.1.extend_from_slice(buf);
            while let Some(end) = self.1.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.1.drain(..=end).collect();
                let _ = self
                    .0
                    .send(String::from_utf8_lossy(&line).trim().to_owned());
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_list_changed_after_the_first_answer_is_announced_however_late_the_watcher_starts() {
        use std::sync::atomic::AtomicU64;
        // The resource list's version takes a while to read the first time (a database being
        // opened); the list changes right after the client's first answer.
        let version = Arc::new(AtomicU64::new(1));
        let service = Service::with_slow_first_version(&version, Duration::from_millis(300));
        let (input, mut to_server) = io::pipe().unwrap();
        let (lines, output) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = serve(
                service,
                io::BufReader::new(input),
                Lines(lines, Vec::new()),
                ServeOptions::default(),
            );
        });
        use std::io::Write as _;
        writeln!(
            to_server,
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25"}}}}"#
        )
        .unwrap();
        let answer = output.recv_timeout(Duration::from_secs(120)).unwrap();
        assert!(answer.contains(r#""id":1"#), "{answer}");
        version.store(2, Ordering::SeqCst);
        writeln!(
            to_server,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        // Generous: a liveness bound, not a performance claim (the watcher looks every second).
        let announced = output.recv_timeout(Duration::from_secs(120));
        assert!(
            announced
                .as_deref()
                .is_ok_and(|l| l.contains("notifications/resources/list_changed")),
            "{announced:?}"
        );
    }
}
