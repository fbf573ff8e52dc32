//! A client-side connection to any stdio MCP server: spawn, send, wait, check.
//!
//! Owns the child process and the discipline of a careful client: every line the server
//! writes must be one JSON-RPC message, every answer must carry the id that was asked. Each
//! breach is printed and counted in [`Connection::problems`], so `flota cliente` can exit
//! non-zero. What gets printed (and how) is the [`Printer`]'s business. The server's stderr is
//! either passed through or kept aside ([`ServerLog`]): an operator does not want its log
//! lines, but does want its last words when it dies.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::printer::Printer;

/// How long to wait for one answer. Claude Desktop gives up at about 60 s too.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// The version the client asks for: what Claude Desktop and Inspector send today.
pub const CLIENT_PROTOCOL_VERSION: &str = "2025-11-25";

/// How many of the server's last stderr lines are kept when they are not shown.
const KEPT_LOG_LINES: usize = 12;

/// What happens to the server's stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerLog {
    /// Passed through to ours, as it comes.
    Shown,
    /// Read and kept (the last lines only), to be told if the server dies.
    Kept,
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "no se pudo lanzar el servidor {command:?}: {}",
        crate::plumbing::spanish::io(.source)
    )]
    Spawn { command: String, source: io::Error },
    #[error("el servidor cerró la conexión sin responder a '{method}'{last_words}")]
    Closed { method: String, last_words: String },
    #[error("sin respuesta a '{method}' en {seconds} s")]
    Timeout { method: String, seconds: u64 },
    #[error(
        "no se pudo escribir al servidor: {}",
        crate::plumbing::spanish::io(.0)
    )]
    Write(io::Error),
}

/// A server's answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Result(Value),
    Error {
        code: i64,
        message: String,
        data: Value,
    },
}

impl Answer {
    pub fn result(&self) -> Option<&Value> {
        match self {
            Answer::Result(value) => Some(value),
            Answer::Error { .. } => None,
        }
    }
}

pub struct Connection {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
    next_id: i64,
    /// Malformed lines, id mismatches and unexpected answers seen so far.
    pub problems: usize,
    pub printer: Printer,
    /// The server's last stderr lines, when they are kept rather than shown.
    kept_log: Option<Arc<Mutex<VecDeque<String>>>>,
}

impl Connection {
    /// Spawns `command` (program then arguments) with piped stdin/stdout; its stderr is
    /// shown or kept as `log` says.
    pub fn spawn(
        command: &[OsString],
        printer: Printer,
        log: ServerLog,
    ) -> Result<Self, ClientError> {
        let shown = command
            .iter()
            .map(|part| part.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ");
        let Some((program, args)) = command.split_first() else {
            return Err(ClientError::Spawn {
                command: shown,
                source: io::Error::new(io::ErrorKind::InvalidInput, "comando vacío"),
            });
        };
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(match log {
                ServerLog::Shown => Stdio::inherit(),
                ServerLog::Kept => Stdio::piped(),
            })
            .spawn()
            .map_err(|source| ClientError::Spawn {
                command: shown.clone(),
                source,
            })?;
        let stdout = child.stdout.take().ok_or_else(|| ClientError::Spawn {
            command: shown.clone(),
            source: io::Error::other("sin stdout"),
        })?;
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if line.last() == Some(&b'\n') {
                            line.pop();
                        }
                        if sender.send(line).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let kept_log = child.stderr.take().map(keep_last_lines);
        Ok(Connection {
            stdin: child.stdin.take(),
            child,
            lines,
            next_id: 0,
            problems: 0,
            printer,
            kept_log,
        })
    }

    /// The kept stderr lines, as a clause to add to "the server closed the connection".
    fn last_words(&self) -> String {
        let Some(kept) = &self.kept_log else {
            return String::new();
        };
        // The server has just closed its stdout; give its stderr a moment to arrive too.
        let deadline = Instant::now() + Duration::from_millis(300);
        while self.stderr_open() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let lines = kept.lock().map(|l| l.clone()).unwrap_or_default();
        if lines.is_empty() {
            return String::new();
        }
        let shown: Vec<String> = lines.iter().map(|l| format!("  {l}")).collect();
        format!("; sus últimos mensajes:\n{}", shown.join("\n"))
    }

    /// Whether the server's stderr is still open: its reader thread holds the second
    /// reference to the kept lines until then.
    fn stderr_open(&self) -> bool {
        self.kept_log
            .as_ref()
            .is_some_and(|kept| Arc::strong_count(kept) > 1)
    }

    /// Writes one raw line (a newline is added) and echoes it.
    pub fn send_line(&mut self, out: &mut dyn Write, line: &str) -> Result<(), ClientError> {
        self.printer.sent(out, line);
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| ClientError::Write(io::Error::other("entrada cerrada")))?;
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(ClientError::Write)
    }

    /// Sends a request with a fresh integer id and waits for its answer.
    pub fn request(
        &mut self,
        out: &mut dyn Write,
        method: &str,
        params: Option<Value>,
    ) -> Result<Answer, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        self.send_line(out, &message.to_string())?;
        self.wait_for(out, &json!(id), method)
    }

    pub fn notify(
        &mut self,
        out: &mut dyn Write,
        method: &str,
        params: Option<Value>,
    ) -> Result<(), ClientError> {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        self.send_line(out, &message.to_string())
    }

    /// `initialize` + `notifications/initialized`; returns the initialize result.
    pub fn handshake(&mut self, out: &mut dyn Write) -> Result<Answer, ClientError> {
        let params = json!({
            "protocolVersion": CLIENT_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "flota-cliente", "version": env!("CARGO_PKG_VERSION")},
        });
        let answer = self.request(out, "initialize", Some(params))?;
        if answer.result().is_some() {
            self.notify(out, "notifications/initialized", None)?;
        }
        Ok(answer)
    }

    /// Waits for the answer whose id equals `id`, printing notifications on the way.
    pub fn wait_for(
        &mut self,
        out: &mut dyn Write,
        id: &Value,
        method: &str,
    ) -> Result<Answer, ClientError> {
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let raw = match self.lines.recv_timeout(left) {
                Ok(raw) => raw,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(ClientError::Timeout {
                        method: method.to_owned(),
                        seconds: ANSWER_TIMEOUT.as_secs(),
                    });
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(ClientError::Closed {
                        method: method.to_owned(),
                        last_words: self.last_words(),
                    });
                }
            };
            let Some(message) = self.check_line(out, &raw) else {
                continue;
            };
            if message.get("method").is_some() {
                continue; // a notification, already printed
            }
            if message.get("id") != Some(id) {
                self.problem(
                    out,
                    &format!(
                        "respuesta con id {} cuando se esperaba {id}",
                        message.get("id").unwrap_or(&Value::Null)
                    ),
                );
                continue;
            }
            return Ok(match (message.get("result"), message.get("error")) {
                (Some(result), None) => Answer::Result(result.clone()),
                (None, Some(error)) => Answer::Error {
                    code: error["code"].as_i64().unwrap_or_default(),
                    message: error["message"].as_str().unwrap_or_default().to_owned(),
                    data: error.get("data").cloned().unwrap_or(Value::Null),
                },
                _ => {
                    self.problem(out, "la respuesta no tiene exactamente uno de result/error");
                    Answer::Error {
                        code: 0,
                        message: String::new(),
                        data: Value::Null,
                    }
                }
            });
        }
    }

    /// Collects whatever arrives within `window` (for notifications that get no answer).
    pub fn drain(&mut self, out: &mut dyn Write, window: Duration) -> Vec<Value> {
        let deadline = Instant::now() + window;
        let mut messages = Vec::new();
        while let Ok(raw) = self
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            if let Some(message) = self.check_line(out, &raw) {
                messages.push(message);
            }
        }
        messages
    }

    /// Prints a received line and checks it is one well-formed JSON-RPC message.
    fn check_line(&mut self, out: &mut dyn Write, raw: &[u8]) -> Option<Value> {
        let Ok(text) = std::str::from_utf8(raw) else {
            self.problem(out, "línea que no es UTF-8 válido");
            return None;
        };
        self.printer.received(out, text);
        let message: Value = match serde_json::from_str(text) {
            Ok(Value::Object(map)) => Value::Object(map),
            _ => {
                self.problem(out, "línea que no es un objeto JSON");
                return None;
            }
        };
        if message["jsonrpc"] != "2.0" {
            self.problem(out, "mensaje sin \"jsonrpc\": \"2.0\"");
            return None;
        }
        Some(message)
    }

    fn problem(&mut self, out: &mut dyn Write, what: &str) {
        self.problems += 1;
        self.printer.problem(out, what);
    }

    /// Closes the server's stdin and waits (briefly) for it to exit; returns its exit code.
    pub fn close(mut self) -> Option<i32> {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return status.code(),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return None;
                }
            }
        }
    }
}

/// Reads `stderr` line by line on a thread, keeping the last [`KEPT_LOG_LINES`]. The thread
/// holds the second reference to the buffer until the server's stderr closes.
fn keep_last_lines(stderr: impl Read + Send + 'static) -> Arc<Mutex<VecDeque<String>>> {
    let kept = Arc::new(Mutex::new(VecDeque::new()));
    let writer = Arc::clone(&kept);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Ok(mut lines) = writer.lock() {
                if lines.len() == KEPT_LOG_LINES {
                    lines.pop_front();
                }
                lines.push_back(line);
            }
        }
    });
    kept
}
