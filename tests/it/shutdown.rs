//! How a served session ends, with clients that misbehave: input closed while nobody reads
//! the output, SIGTERM/SIGINT in the middle of a large answer, and the end of input while a
//! call is still running. Each drives a real binary; deadlines are liveness bounds only.

use std::io::{Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};
use serde_json::{Value, json};

use crate::ground_truth::fixture;
use crate::support::{Server, TIMEOUT, flota_bin};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"it","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// Waits for `child` to exit; `None` if it is still alive at `deadline`.
fn exit_before(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn signal(child: &Child, signal: Signal) {
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    kill_process(pid, signal).unwrap();
}

#[test]
fn closing_stdin_ends_the_server_even_when_nobody_reads_its_output() {
    // 5,000 calls fed by a separate process, so the test can close the server's stdin while
    // lines are still unread in it: the server holds back reading once its output is full.
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("llamadas.jsonl");
    let mut text = format!("{INITIALIZE}\n{INITIALIZED}\n");
    for id in 0..5000 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": "resumen_recorrido",
                                     "arguments": {"placa": "P-456DEF", "fecha": "ayer"}}});
        text.push_str(&format!("{call}\n"));
    }
    std::fs::write(&calls, text).unwrap();
    let mut feeder = Command::new("cat")
        .arg(&calls)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut server = Command::new(flota_bin())
        .args(["servir", "--db", "/nonexistent/flota.db"])
        .stdin(Stdio::from(feeder.stdout.take().unwrap()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Never read: only look at how much waits unread in the pipe.
    let stdout = server.stdout.take().unwrap();
    let deadline = Instant::now() + TIMEOUT;
    while rustix::io::ioctl_fionread(&stdout).unwrap() < 16 * 1024 {
        assert!(Instant::now() < deadline, "the server wrote nothing");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        feeder.try_wait().unwrap().is_none(),
        "the server read all 5,000 lines: nothing was left unread in its stdin"
    );
    // The feeder dies: the server's stdin is closed with lines still in it.
    feeder.kill().unwrap();
    feeder.wait().unwrap();
    // It exits about a second after (the output's stall mark, then the drain); the bound is
    // a liveness guard only, far beyond what a slow machine takes.
    let status = exit_before(&mut server, Instant::now() + TIMEOUT);
    if status.is_none() {
        server.kill().unwrap();
        server.wait().unwrap();
    }
    let status = status.expect("the server was still alive long after its stdin closed");
    assert_eq!(status.code(), Some(0));
}

/// A pause between two reads of a line being written that counts as the client (or the
/// server) having stalled: half the server's mark for output that accepts nothing (500 ms),
/// a dozen of the reader's own pauses.
const STALLED: Duration = Duration::from_millis(250);

/// What the slow client read, and whether it ever stalled mid-line.
#[derive(Default)]
struct SlowRead {
    bytes: Vec<u8>,
    stalled: bool,
}

/// Sends `signal` while the client is reading a map answer (about 200 KB, more than a pipe
/// holds) slowly, then reads on to the end. At 100 KB/s the line is still being written when
/// the grace and the drain are over (about a second): only waiting for it keeps it whole.
/// Returns false, checking only the exit, when a line stopped flowing for [`STALLED`] while
/// it was read: a client descheduled that long (or a frozen server) is one that stopped
/// reading, which may see a cut line; the caller tries again.
fn stop_mid_answer(signal_to_send: Signal) -> bool {
    let db = fixture("minimo").db.to_str().unwrap().to_owned();
    let mut server = Command::new(flota_bin())
        .args(["servir", "--db", &db])
        .env("FLOTA_TILES_URL", "no")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    writeln!(stdin, "{INITIALIZE}\n{INITIALIZED}").unwrap();
    for id in 1..=6 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": "mapa_recorrido",
                                     "arguments": {"placa": "P-456DEF", "fecha": "2026-08-18"}}});
        writeln!(stdin, "{call}").unwrap();
    }
    stdin.flush().unwrap();
    let read = Arc::new(Mutex::new(SlowRead::default()));
    let mut stdout = server.stdout.take().unwrap();
    let reader = {
        let read = Arc::clone(&read);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            // When the last read ended inside a line: the next one should follow at once.
            let mut mid_line: Option<Instant> = None;
            loop {
                match stdout.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        let now = Instant::now();
                        let mut read = read.lock().unwrap();
                        if mid_line.is_some_and(|before| now - before >= STALLED) {
                            read.stalled = true;
                        }
                        read.bytes.extend_from_slice(&chunk[..n]);
                        mid_line = (read.bytes.last() != Some(&b'\n')).then_some(now);
                    }
                }
                std::thread::sleep(Duration::from_millis(40));
            }
        })
    };
    // Wait until a map answer is partly read: its line is then surely being written (it is
    // larger than the pipe), and that is when the signal must not cut it.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        {
            let read = &read.lock().unwrap().bytes;
            let lines = read.iter().filter(|&&b| b == b'\n').count();
            if lines >= 1 && read.last() != Some(&b'\n') {
                break;
            }
        }
        assert!(Instant::now() < deadline, "no answer started");
        std::thread::sleep(Duration::from_millis(1));
    }
    signal(&server, signal_to_send);
    let status = exit_before(&mut server, Instant::now() + TIMEOUT);
    if status.is_none() {
        server.kill().unwrap();
    }
    reader.join().unwrap();
    let status = status.unwrap_or_else(|| panic!("alive after {signal_to_send:?}"));
    assert_eq!(status.code(), Some(0), "{signal_to_send:?}: {status}");
    let read = read.lock().unwrap();
    if read.stalled {
        eprintln!("{signal_to_send:?}: a line stalled while read; once more");
        return false;
    }
    let text = std::str::from_utf8(&read.bytes).unwrap();
    assert!(
        text.ends_with('\n'),
        "{signal_to_send:?}: stdout ends mid-line"
    );
    let mut maps = 0;
    for line in text.lines() {
        let message: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{signal_to_send:?}: not JSON ({e}), {} bytes", line.len()));
        maps += usize::from(message["id"].is_i64());
    }
    assert!(
        maps >= 1,
        "{signal_to_send:?}: the answer being read was lost"
    );
    drop(stdin);
    true
}

/// Each signal until one attempt had a client that kept reading (on a healthy machine, the
/// first): a stall of the client or the server mid-line is the machine's, not a failure.
#[test]
fn sigterm_and_sigint_mid_answer_exit_zero_without_cutting_a_line() {
    for signal_to_send in [Signal::TERM, Signal::INT] {
        let attempts = 10;
        assert!(
            (0..attempts).any(|_| stop_mid_answer(signal_to_send)),
            "{signal_to_send:?}: the client or the server stalled in each of {attempts} attempts"
        );
    }
}

/// How a test ends a session.
#[derive(Debug, Clone, Copy)]
enum Ending {
    CloseStdin,
    Signal(Signal),
}

/// The example server (with `--gracia grace`, else its default grace), initialized, then an
/// `esperar` call of `ms` and a ping: the reader answers the ping after it handed the call
/// to a worker, so it is running (or done) when the session ends by `ending`. Returns the
/// exit status and what was written after the ping's answer.
fn end_with_a_call_running(
    grace: Option<&str>,
    ms: u32,
    ending: Ending,
) -> (ExitStatus, Vec<Value>) {
    let mut server = match grace {
        Some(seconds) => Server::spawn(crate::support::example_bin(), &["--gracia", seconds]),
        None => Server::example(),
    };
    server.initialize("2025-11-25");
    server.send_json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "esperar", "arguments": {"milisegundos": ms}}}));
    server.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
    assert_eq!(server.recv()["id"], 2);
    if let Ending::Signal(signal_to_send) = ending {
        signal(server.child(), signal_to_send);
    }
    let (status, rest) = server.finish();
    let answers = rest
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (status, answers)
}

/// Each ending, twice: a short call (300 ms of work) under a grace no slow machine
/// approaches is answered; a call of 60 s under the default grace (0.8 s) is abandoned, and
/// the server still exits 0. Once both shared a session under the default grace, and a
/// worker descheduled for half a second lost the short call's answer.
#[test]
fn a_call_that_finishes_within_the_grace_is_still_answered() {
    for ending in [
        Ending::CloseStdin,
        Ending::Signal(Signal::TERM),
        Ending::Signal(Signal::INT),
    ] {
        let (status, answers) = end_with_a_call_running(Some("120"), 300, ending);
        assert_eq!(status.code(), Some(0), "{ending:?}");
        assert_eq!(answers.len(), 1, "{ending:?}: {answers:?}");
        assert_eq!(answers[0]["id"], 1, "{ending:?}");
        assert!(
            answers[0]["result"]["structuredContent"]["milisegundos_esperados"]
                .as_u64()
                .is_some_and(|ms| ms >= 300),
            "{ending:?}: {}",
            answers[0]
        );
        let (status, answers) = end_with_a_call_running(None, 60_000, ending);
        assert_eq!(status.code(), Some(0), "{ending:?}");
        assert!(
            answers.is_empty(),
            "{ending:?}: abandoned, yet answered: {answers:?}"
        );
    }
}
