//! The legacy era's HTTP sessions: `Mcp-Session-Id` → the protocol state, the event streams,
//! the standalone `GET` stream, and the questions asked of the client that await an answer.
//!
//! Owns creation (a secure random id, a cap on how many live at once), lookup (which keeps a
//! session alive), ending (`DELETE`, or idle past the limit), and [`SessionPeer`], which asks
//! the client on a call's stream and waits for the answer a later `POST` brings.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rand::RngExt;
use serde_json::{Value, json};

use super::streams::{StreamWriter, Streams};
use crate::mcp::session::SessionState;
use crate::mcp::tool::Peer;

/// How long a question to the client may wait for its answer.
const ASK_PATIENCE: Duration = Duration::from_secs(60);

type Answer = std::sync::mpsc::Sender<Result<Value, String>>;

/// One client's session.
pub(super) struct HttpSession {
    pub id: String,
    pub state: Mutex<SessionState>,
    pub streams: Streams,
    /// The `GET` stream, for messages unrelated to a request.
    pub standalone: Mutex<Option<StreamWriter>>,
    last_seen: Mutex<Instant>,
    pending: Mutex<HashMap<String, Answer>>,
    next_question: AtomicU64,
}

impl HttpSession {
    fn touch(&self) {
        *self
            .last_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    fn idle_for(&self) -> Duration {
        self.last_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .elapsed()
    }

    /// Hands a client's response to the question waiting for it; false if none was.
    pub fn answer(&self, id: &Value, outcome: Result<Value, String>) -> bool {
        let key = id.to_string();
        let waiting = self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key);
        waiting.is_some_and(|tx| tx.send(outcome).is_ok())
    }

    /// Sends a server message on the `GET` stream, if one is open.
    pub fn notify(&self, line: String) {
        let standalone = self
            .standalone
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(writer) = standalone.as_ref() {
            writer.send(line);
        }
    }
}

/// Every live session.
pub(super) struct Sessions {
    map: Mutex<HashMap<String, Arc<HttpSession>>>,
    max: usize,
    idle: Duration,
}

/// A fresh secure random id: 32 hex digits (ASCII 0x21–0x7E, as the spec asks).
pub(super) fn random_id() -> String {
    let bytes: [u8; 16] = rand::rng().random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Sessions {
    pub fn new(max: usize, idle: Duration) -> Self {
        Sessions {
            map: Mutex::new(HashMap::new()),
            max,
            idle,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<HttpSession>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new session, or `None` at the cap.
    pub fn create(&self) -> Option<Arc<HttpSession>> {
        let mut map = self.lock();
        if map.len() >= self.max {
            return None;
        }
        let session = Arc::new(HttpSession {
            id: random_id(),
            state: Mutex::new(SessionState::default()),
            streams: Streams::default(),
            standalone: Mutex::new(None),
            last_seen: Mutex::new(Instant::now()),
            pending: Mutex::new(HashMap::new()),
            next_question: AtomicU64::new(0),
        });
        map.insert(session.id.clone(), Arc::clone(&session));
        Some(session)
    }

    pub fn get(&self, id: &str) -> Option<Arc<HttpSession>> {
        let session = self.lock().get(id).cloned()?;
        session.touch();
        Some(session)
    }

    pub fn remove(&self, id: &str) -> bool {
        self.lock().remove(id).is_some()
    }

    /// Ends the sessions idle past the limit; returns how many.
    pub fn sweep(&self) -> usize {
        let mut map = self.lock();
        let before = map.len();
        map.retain(|_, session| session.idle_for() < self.idle);
        before - map.len()
    }

    pub fn all(&self) -> Vec<Arc<HttpSession>> {
        self.lock().values().cloned().collect()
    }

    pub fn count(&self) -> usize {
        self.lock().len()
    }
}

/// Asks the client on the stream of the call that asks, and waits for the answer.
pub(super) struct SessionPeer {
    pub session: Arc<HttpSession>,
    pub writer: StreamWriter,
    pub cancelled: Arc<AtomicBool>,
}

impl Peer for SessionPeer {
    fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let n = self.session.next_question.fetch_add(1, Ordering::SeqCst);
        let id = Value::String(format!("servidor-{n}"));
        let (tx, rx) = std::sync::mpsc::channel();
        self.session
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.to_string(), tx);
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.writer.send(line.to_string());
        let until = Instant::now() + ASK_PATIENCE;
        let outcome = loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(outcome) => break outcome,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                    if Instant::now() < until && !self.cancelled.load(Ordering::Relaxed) => {}
                Err(_) => break Err("el cliente no respondió a tiempo".into()),
            }
        };
        self.session
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id.to_string());
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_capped_found_and_ended() {
        let sessions = Sessions::new(2, Duration::from_secs(3600));
        let a = sessions.create().unwrap();
        let b = sessions.create().unwrap();
        assert!(sessions.create().is_none(), "at the cap");
        assert_ne!(a.id, b.id);
        assert_eq!(a.id.len(), 32);
        assert!(a.id.bytes().all(|c| (0x21..=0x7e).contains(&c)));
        assert!(sessions.get(&a.id).is_some());
        assert!(sessions.remove(&a.id));
        assert!(sessions.get(&a.id).is_none());
        assert!(sessions.create().is_some(), "room again");
    }

    #[test]
    fn idle_sessions_are_swept() {
        let sessions = Sessions::new(4, Duration::ZERO);
        sessions.create().unwrap();
        assert_eq!(sessions.sweep(), 1);
        assert_eq!(sessions.count(), 0);
    }
}
