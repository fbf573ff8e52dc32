//! The fuzz harness: bytes in, the MCP session's promises checked.
//!
//! Owns one check: feed input through the same steps `flota servir` takes per line (bounded
//! line split, classify, session state machine, tool execution with the real fleet tools) and
//! assert what a client relies on: every output line is one JSON-RPC 2.0 object, each
//! request gets exactly one answer, a notification none. The fleet tools run against
//! `FLOTA_FUZZ_DB` if set (a simulated database), else a missing file, which exercises
//! argument validation and the "no database" errors; `check_session_with` takes any service.
//! Maps are drawn offline. Used by the `cargo fuzz` targets and by the corpus regression test
//! in `cargo test`, which also holds the real threaded server to the answers found here.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use flota::fleet::Fleet;
use flota::fleet::places::Geocoder;
use flota::map::TileConfig;
use flota::mcp::jsonrpc::{Incoming, classify};
use flota::mcp::session::{Action, Session};
use flota::mcp::transport::{Line, LineReader};
use flota::mcp::{CallContext, Service};
use flota::plumbing::clock::Clock;
use serde_json::Value;

/// Small enough that the fuzzer reaches the over-long path.
const MAX_LINE_BYTES: usize = 64 * 1024;

/// The fleet service over `db` (a simulated database, or a missing file): the seven real
/// tools, maps drawn offline, "now" at the reference week's.
pub fn service_for(db: &Path) -> Service {
    // Many sessions: only real problems on stderr.
    flota::plumbing::log::set_level(flota::plumbing::log::Level::Error);
    // The reference week's "now", so date words resolve to data.
    let ahora = flota::cli::parse_ahora("2026-08-19T15:30").ok();
    // With "now" given the clock is never read.
    let fleet = Arc::new(Fleet::new(db, ahora, Geocoder::new(None), Clock::fixed(0)));
    flota::tools::service(&fleet, TileConfig::offline(), None)
}

fn service() -> &'static Service {
    static SERVICE: OnceLock<Service> = OnceLock::new();
    SERVICE.get_or_init(|| {
        let db = std::env::var_os("FLOTA_FUZZ_DB")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/nonexistent/flota-fuzz.db"));
        service_for(&db)
    })
}

/// Runs `input` as one client session and checks the protocol promises. Panics on a
/// violation (that is what the fuzzer looks for).
pub fn check_session(input: &[u8]) {
    check_session_with(service(), input);
}

/// [`check_session`] against `service`; returns every answer, in order, so another server
/// can be held to the same answers.
pub fn check_session_with(service: &Service, input: &[u8]) -> Vec<Value> {
    let mut answered = Vec::new();
    let mut session = Session::new(service);
    let mut reader = LineReader::new(Cursor::new(input), MAX_LINE_BYTES);
    loop {
        let line = match reader.next_line() {
            Ok(Line::Eof) | Err(_) => break,
            Ok(Line::TooLong { .. }) => continue,
            Ok(Line::Complete(bytes)) => bytes,
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let incoming = classify(&line);
        let request_id = match &incoming {
            Incoming::Request(r) => Some(r.id.get().to_owned()),
            _ => None,
        };
        let is_notification = matches!(
            incoming,
            Incoming::Notification(_) | Incoming::BadNotification { .. } | Incoming::Response
        );
        let answer = match session.handle(incoming) {
            Action::Send(answer) => Some(answer),
            Action::Call(call) => Some(service.execute(&call, &CallContext::detached())),
            Action::Task(call) => Some(service.execute(&call, &CallContext::detached())),
            Action::Listen { id, .. } => Some(Session::cannot_listen(&id)),
            Action::Nothing | Action::Cancel(_) => None,
        };
        match answer {
            None => assert!(request_id.is_none(), "request {request_id:?} got no answer"),
            Some(answer) => {
                assert!(!is_notification, "a notification was answered: {answer}");
                assert!(!answer.contains('\n'), "answer spans lines");
                let value: Value = serde_json::from_str(&answer).expect("answer is JSON");
                assert_eq!(value["jsonrpc"], "2.0", "{answer}");
                assert!(
                    value.get("result").is_some() != value.get("error").is_some(),
                    "exactly one of result and error: {answer}"
                );
                if let Some(id) = &request_id {
                    let echoed = value["id"].to_string();
                    let sent: Value = serde_json::from_str(id).expect("id is JSON");
                    assert_eq!(echoed, sent.to_string(), "id echoed: {answer}");
                }
                answered.push(value);
            }
        }
    }
    answered
}
