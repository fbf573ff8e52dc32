//! Test harness: spawn a real server binary and speak raw JSON lines to it.
//!
//! stdout is drained by a thread into a channel so the test can write (even a 17 MB line)
//! without deadlocking against a full pipe; every received line is checked to be one JSON
//! object before a test sees it.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Generous: only reached when something is broken, never a performance claim. Every wait
/// bounded by it ends on an event (a line, an exit, a file grown) long before on a healthy
/// run, so its size costs nothing; it must stay far beyond what a slow CI machine takes for
/// the slowest such step (a map drawn in a debug build, ten times slower than here).
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// The tiles' and the geocoder's deadline in every server the harness starts: longer than
/// any wait the tests bound by [`TIMEOUT`] (and the product's own maximum).
pub const SERVICE_DEADLINE_S: &str = "3600";

pub fn flota_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_flota"))
}

/// The example server, built by `cargo test` next to the binaries.
pub fn example_bin() -> PathBuf {
    let dir = flota_bin().parent().expect("binary folder").to_path_buf();
    let path = dir.join("examples").join("servidor_texto");
    assert!(
        path.exists(),
        "{} is missing: run the whole `cargo test` (it builds examples) or `cargo build --examples`",
        path.display()
    );
    path
}

pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
}

impl Server {
    pub fn spawn(program: PathBuf, args: &[&str]) -> Server {
        Self::spawn_with_env(program, args, &[])
    }

    pub fn spawn_with_env(program: PathBuf, args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        // No test reaches a real tile server; the map tests point at loopback mocks.
        command.env("FLOTA_TILES_URL", "no");
        // No per-call limit unless a test sets one (`--limite-llamada` wins over this): the
        // default 30 s is a clock a loaded CI machine reaches on a debug build's map (a whole
        // suite on one busy core once had an answer differ between two servers), and an
        // answer must not depend on the machine's speed.
        command.env("FLOTA_LIMITE_LLAMADA_S", "0");
        // The same for the online services' deadlines (4 s for tiles, 2 s for addresses): a
        // test process frozen that long by a busy machine would turn a loopback mock's answer
        // into the offline fallback. Raised far beyond `TIMEOUT`, so a mock that answers is
        // always waited for; a test about the deadline itself sets a short one.
        command.env("FLOTA_TILES_LIMITE_S", SERVICE_DEADLINE_S);
        command.env("FLOTA_GEOCODER_LIMITE_S", SERVICE_DEADLINE_S);
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("spawn server");
        let stdout = child.stdout.take().expect("stdout");
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if sender.send(line).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Server {
            stdin: child.stdin.take(),
            child,
            lines,
        }
    }

    /// `flota servir` on a database path that need not exist.
    pub fn flota() -> Server {
        Self::spawn(flota_bin(), &["servir", "--db", "/nonexistent/flota.db"])
    }

    pub fn example() -> Server {
        Self::spawn(example_bin(), &[])
    }

    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write");
        stdin.flush().expect("flush");
    }

    pub fn send(&mut self, line: &str) {
        self.send_bytes(format!("{line}\n").as_bytes());
    }

    pub fn send_json(&mut self, message: &Value) {
        self.send(&message.to_string());
    }

    /// The next line, raw (without its `\n`), checked to be a compact JSON object.
    pub fn recv_line(&self) -> String {
        let raw = match self.lines.recv_timeout(TIMEOUT) {
            Ok(raw) => raw,
            Err(RecvTimeoutError::Timeout) => panic!("no line from the server in {TIMEOUT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the server closed stdout"),
        };
        check_line(&raw)
    }

    /// The next line within `window` (checked like [`Server::recv_line`]), or `None`.
    pub fn try_recv_line(&self, window: Duration) -> Option<String> {
        self.lines
            .recv_timeout(window)
            .ok()
            .map(|raw| check_line(&raw))
    }

    pub fn recv(&self) -> Value {
        serde_json::from_str(&self.recv_line()).expect("valid JSON")
    }

    /// Asserts nothing arrives within `window`.
    pub fn expect_silence(&self, window: Duration) {
        if let Ok(raw) = self.lines.recv_timeout(window) {
            panic!("unexpected line: {}", String::from_utf8_lossy(&raw));
        }
    }

    /// `initialize` at `version` (id 0) plus `notifications/initialized`; returns the result.
    pub fn initialize(&mut self, version: &str) -> Value {
        self.send_json(&json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {},
                       "clientInfo": {"name": "it", "version": "1"}}
        }));
        let answer = self.recv();
        assert_eq!(answer["id"], 0, "{answer}");
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        answer["result"].clone()
    }

    /// Sends a `tools/call` and returns the response. Only one other line may come first: the
    /// announcement that the database was replaced (the tests that rewrite it cause that);
    /// anything else must be the answer.
    pub fn call(&mut self, id: i64, name: &str, arguments: Value) -> Value {
        self.send_json(&json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}
        }));
        let mut answer = self.recv();
        while answer["method"] == "notifications/resources/list_changed" {
            answer = self.recv();
        }
        assert_eq!(answer["id"], id, "{answer}");
        answer
    }

    /// The server process (to signal it).
    pub fn child(&self) -> &Child {
        &self.child
    }

    /// Closes stdin, collects every remaining line and the exit status.
    pub fn finish(mut self) -> (ExitStatus, Vec<String>) {
        drop(self.stdin.take());
        let deadline = Instant::now() + TIMEOUT;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "server did not exit after stdin closed"
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        let rest = self.lines.iter().map(|raw| check_line(&raw)).collect();
        (status, rest)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every stdout line is UTF-8, ends in `\n` (LF only), and is one JSON object.
fn check_line(raw: &[u8]) -> String {
    let text = std::str::from_utf8(raw).expect("stdout must be UTF-8");
    let line = text.strip_suffix('\n').expect("line must end with \\n");
    assert!(!line.ends_with('\r'), "CRLF on stdout: {line}");
    assert!(!line.contains('\n'), "embedded newline");
    let value: Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    assert!(value.is_object(), "not an object: {line}");
    assert_eq!(value["jsonrpc"], "2.0", "{line}");
    line.to_owned()
}

/// Asserts that every key of `expected` is in `actual` with the same value, recursively.
pub fn assert_subset(actual: &Value, expected: &Value) {
    fn walk(actual: &Value, expected: &Value, path: &str) {
        match (actual, expected) {
            (Value::Object(a), Value::Object(e)) => {
                for (key, value) in e {
                    let child = format!("{path}.{key}");
                    match a.get(key) {
                        Some(inner) => walk(inner, value, &child),
                        None => panic!("missing {child}"),
                    }
                }
            }
            _ => assert_eq!(actual, expected, "at {path}"),
        }
    }
    walk(actual, expected, "$");
}

pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"}
    })
}
