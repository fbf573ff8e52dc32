//! Tool calls over HTTP, under the same in-flight rules as stdio.
//!
//! A call asks the shared in-flight table for a slot (the cap on calls and bytes, waiting
//! up to the admission limit), runs on a blocking thread, and answers on its own SSE stream
//! (progress and log messages first, questions to the client in the legacy era) or, for a
//! client that takes only JSON, in the body once done. The watchdog answers for calls past
//! the time limit and the table drops their late answers; `notifications/cancelled`, and in
//! the 2026-07-28 era closing the stream, silence a call for good.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use tokio::sync::oneshot;

use super::sessions::{HttpSession, SessionPeer};
use super::streams::{StreamWriter, Streams, sse_response};
use super::{Shared, json_response};
use crate::mcp::in_flight::{Admission, Limits};
use crate::mcp::jsonrpc::{ErrorCode, RpcError, error_line};
use crate::mcp::service::Call;
use crate::mcp::sinks;
use crate::mcp::tool::{CallContext, CurrentCall, Peer};
use crate::{log_debug, log_error, log_warn};

/// Where a call's final answer goes.
pub(super) enum Delivery {
    Stream(StreamWriter),
    Json(Mutex<Option<oneshot::Sender<String>>>),
}

impl Delivery {
    /// Ends the exchange without an answer (the call was cancelled or never started): the
    /// stream closes, a JSON waiter hears nothing.
    fn close(&self) {
        match self {
            Delivery::Stream(writer) => writer.finish(),
            Delivery::Json(slot) => {
                slot.lock().unwrap_or_else(PoisonError::into_inner).take();
            }
        }
    }

    fn deliver(&self, line: String) {
        match self {
            Delivery::Stream(writer) => {
                writer.send(line);
                writer.finish();
            }
            Delivery::Json(slot) => {
                if let Some(tx) = slot.lock().unwrap_or_else(PoisonError::into_inner).take() {
                    let _ = tx.send(line);
                }
            }
        }
    }
}

/// Calls in flight by key, so the watchdog can answer them.
#[derive(Default)]
pub(super) struct Deliveries {
    map: Mutex<HashMap<String, Arc<Delivery>>>,
    anonymous: AtomicU64,
}

impl Deliveries {
    fn insert(&self, key: &str, delivery: Arc<Delivery>) {
        self.lock().insert(key.to_owned(), delivery);
    }

    fn remove(&self, key: &str) {
        self.lock().remove(key);
    }

    pub fn get(&self, key: &str) -> Option<Arc<Delivery>> {
        self.lock().get(key).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Delivery>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The in-flight key of a request: its raw id, scoped to its session (or to itself).
pub(super) fn call_key(shared: &Shared, session: Option<&HttpSession>, id: &str) -> String {
    match session {
        Some(session) => format!("{}#{id}", session.id),
        None => {
            let n = shared.deliveries.anonymous.fetch_add(1, Ordering::Relaxed);
            format!("~{n}#{id}")
        }
    }
}

/// Starts `call` and answers: an SSE stream at once when `sse`, else JSON when it is done.
pub(super) async fn run(
    shared: Arc<Shared>,
    session: Option<Arc<HttpSession>>,
    call: Call,
    size: usize,
    sse: bool,
) -> Response {
    let key = call_key(&shared, session.as_deref(), call.id.get());
    let modern = call.version.is_modern();
    if sse {
        let streams = session
            .as_ref()
            .map_or_else(Streams::default, |s| s.streams.clone());
        let (writer, rx) = streams.open();
        let delivery = Arc::new(Delivery::Stream(writer.clone()));
        let cancelled = start(
            &shared,
            session,
            call,
            key.clone(),
            size,
            delivery,
            Some(writer.clone()),
        );
        if modern {
            // 2026-07-28: closing the stream cancels the request.
            tokio::spawn(cancel_when_closed(shared, key, writer, cancelled));
        }
        return sse_response(rx, &[]);
    }
    let (tx, rx) = oneshot::channel();
    let delivery = Arc::new(Delivery::Json(Mutex::new(Some(tx))));
    let guard = CancelOnDrop {
        shared: Arc::clone(&shared),
        key: key.clone(),
        armed: modern,
    };
    start(&shared, session, call, key, size, delivery, None);
    let outcome = rx.await;
    drop(guard);
    match outcome {
        Ok(line) => json_response(StatusCode::OK, line, None),
        // Cancelled (nothing may be sent for it) or the server is stopping.
        Err(_) => StatusCode::ACCEPTED.into_response(),
    }
}

/// Cancels a stateless call when its client goes away before the answer.
struct CancelOnDrop {
    shared: Arc<Shared>,
    key: String,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.armed && self.shared.in_flight.cancel(&self.key) {
            log_debug!(
                "llamada {} cancelada: el cliente cerró la conexión",
                self.key
            );
        }
    }
}

async fn cancel_when_closed(
    shared: Arc<Shared>,
    key: String,
    writer: StreamWriter,
    done: Arc<AtomicBool>,
) {
    while !done.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if !writer.is_live() && !done.load(Ordering::SeqCst) {
            if shared.in_flight.cancel(&key) {
                log_debug!("llamada {key} cancelada: el cliente cerró el flujo");
            }
            return;
        }
    }
}

/// Admits and runs the call on a blocking thread; returns a flag set once it is over.
fn start(
    shared: &Arc<Shared>,
    session: Option<Arc<HttpSession>>,
    call: Call,
    key: String,
    size: usize,
    delivery: Arc<Delivery>,
    writer: Option<StreamWriter>,
) -> Arc<AtomicBool> {
    let over = Arc::new(AtomicBool::new(false));
    let shared = Arc::clone(shared);
    let flag = Arc::clone(&over);
    tokio::task::spawn_blocking(move || {
        shared.deliveries.insert(&key, Arc::clone(&delivery));
        execute(&shared, session, &call, &key, size, &delivery, writer);
        shared.deliveries.remove(&key);
        // Answered already, or never to be (cancelled, stopped): either way the exchange ends.
        delivery.close();
        flag.store(true, Ordering::SeqCst);
    });
    over
}

fn execute(
    shared: &Shared,
    session: Option<Arc<HttpSession>>,
    call: &Call,
    key: &str,
    size: usize,
    delivery: &Arc<Delivery>,
    writer: Option<StreamWriter>,
) {
    let options = &shared.options.serve;
    let limits = Limits {
        calls: options.max_in_flight,
        bytes: options.max_in_flight_bytes,
        wait: options.admission_wait,
    };
    let deadline = || {
        options.call_timeout.map(|limit| {
            (
                Instant::now() + limit,
                shared.service.timeout_line(call, limit),
            )
        })
    };
    let cancelled = match shared
        .in_flight
        .admit(key, size, limits, &shared.stopping, deadline)
    {
        Admission::Admitted(cancelled) => cancelled,
        Admission::Refused(reason) => {
            let error = RpcError::new(ErrorCode::InvalidRequest, reason);
            delivery.deliver(error_line(Some(&call.id), &error));
            return;
        }
        Admission::Stopped => return,
    };
    let ctx = context(shared, session, call, key, &cancelled, writer);
    let service = &shared.service;
    let current = CurrentCall::enter(Arc::clone(&cancelled));
    let started = Instant::now();
    let line =
        catch_unwind(AssertUnwindSafe(|| service.execute(call, &ctx))).unwrap_or_else(|_| {
            let name = service
                .tools
                .get(call.tool)
                .map_or("?", |t| t.definition().name.as_str());
            log_error!("la herramienta {name} entró en pánico (id {key})");
            error_line(
                Some(&call.id),
                &RpcError::new(
                    ErrorCode::InternalError,
                    format!(
                        "la herramienta '{name}' falló internamente; el servidor sigue disponible"
                    ),
                ),
            )
        });
    drop(current);
    log_debug!("llamada {key} atendida en {:?}", started.elapsed());
    shared
        .in_flight
        .finish(key, Some(line), |line| delivery.deliver(line));
}

/// What the tool sees: cancellation, and progress, logs and questions on its stream.
fn context(
    shared: &Shared,
    session: Option<Arc<HttpSession>>,
    call: &Call,
    key: &str,
    cancelled: &Arc<AtomicBool>,
    writer: Option<StreamWriter>,
) -> CallContext {
    let ctx = CallContext::new(Arc::clone(cancelled), None).with_request(call.request.clone());
    let Some(writer) = writer else {
        return ctx;
    };
    let out = writer.clone();
    let send: sinks::Send = Arc::new(move |line| {
        out.send(line);
    });
    let progress = call.progress_token.as_ref().map(|token| {
        sinks::progress(
            token.clone(),
            key.to_owned(),
            Arc::clone(&shared.in_flight),
            Arc::clone(&send),
        )
    });
    let log = call.log_level.map(|minimum| {
        sinks::log(
            minimum,
            shared.service.info.name.clone(),
            key.to_owned(),
            Arc::clone(&shared.in_flight),
            Arc::clone(&send),
        )
    });
    let dropper = writer.clone();
    let disconnect: Box<dyn Fn() + Send + Sync> = Box::new(move || dropper.disconnect());
    // Questions to the client need a session to bring the answer back (legacy era only).
    let peer = session.map(|session| {
        Arc::new(SessionPeer {
            session,
            writer,
            cancelled: Arc::clone(cancelled),
        }) as Arc<dyn Peer>
    });
    CallContext::new(Arc::clone(cancelled), progress)
        .with_log(log)
        .with_peer(peer)
        .with_disconnect(Some(disconnect))
        .with_request(call.request.clone())
}

/// Answers the calls past their deadline (the in-flight table marks them cancelled).
pub(super) async fn watchdog(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    while !shared.stopping.load(Ordering::Relaxed) {
        tick.tick().await;
        shared.in_flight.expire(Instant::now(), |key, line| {
            log_warn!("llamada {key} cancelada: superó el límite de tiempo");
            if let Some(delivery) = shared.deliveries.get(key) {
                delivery.deliver(line);
            }
        });
    }
}
