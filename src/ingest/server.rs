//! The receiver's HTTP side: OsmAnd requests in, Traccar's answers out, bounded everywhere.
//!
//! Owns the listener, the connections and the handler. axum routes every method and path to
//! one handler (the protocol has no paths); hyper's HTTP/1 connection builder bounds the
//! headers (size, and [`Limits::read`] to send them: a slow client is cut off), the body is
//! read up to [`MAX_BODY`] within the same time again, connections are capped
//! ([`Limits::connections`], then the listener waits: back-pressure on accept), and the
//! queue to the writer is bounded: when it is full the answer is 503 with `Retry-After`, so a
//! flood never grows memory. Each refusal is one Spanish log line (at most
//! [`LOG_LINES_PER_S`] a second, then a count); a keep-alive connection that sits idle until
//! the header timeout is closed without an answer and logged at debug only ([`Traffic`]). Stopping: the listener closes, requests in
//! flight get their answers (they wait for their commit), connections close.

use std::net::SocketAddr;
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use hyper::Request;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

use crate::ingest::devices::Devices;
use crate::ingest::osmand::{self, Form, Refusal};
use crate::ingest::session::{Outcome, Position, Unit};
use crate::ingest::waits::Waits;
use crate::ingest::writer::{Answer, Job};
use crate::plumbing::clock::Clock;
use crate::plumbing::mutex::lock;
use crate::store::{Reading, StoredRow};

/// Largest body read (Traccar's `MAX_HTTP_LENGTH`).
pub const MAX_BODY: usize = 64 * 1024;
/// A request waits this long for its commit before it is answered 503.
pub const ACK_TIMEOUT: Duration = Duration::from_secs(10);
/// Header bytes per request at most.
const MAX_HEADERS: usize = 16 * 1024;
/// Refusals logged one by one per second; the rest are counted.
pub const LOG_LINES_PER_S: u32 = 20;
/// How long in-flight requests get to finish when the receiver stops.
pub const GRACE: Duration = Duration::from_secs(15);

/// How the receiver decodes and whom it accepts.
#[derive(Debug, Clone, Copy)]
pub struct Protocol {
    pub decode: osmand::Options,
    /// Register trackers nobody declared (else they are refused).
    pub register_unknown: bool,
}

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub connections: usize,
    /// Time to send the headers, and again the body.
    pub read: Duration,
}

/// What every request shares.
pub struct App {
    pub protocol: Protocol,
    pub limits: Limits,
    pub devices: Arc<RwLock<Devices>>,
    pub jobs: SyncSender<Job>,
    pub clock: Clock,
    refusals: Mutex<LogWindow>,
    /// Each stored position's handler time, and its part waiting for the writer's answer
    /// (debug: logged when the server stops).
    waits: Mutex<(Waits, Waits)>,
}

impl App {
    pub fn new(
        protocol: Protocol,
        limits: Limits,
        devices: Arc<RwLock<Devices>>,
        jobs: SyncSender<Job>,
        clock: Clock,
    ) -> App {
        App {
            protocol,
            limits,
            devices,
            jobs,
            clock,
            refusals: Mutex::new(LogWindow::default()),
            waits: Mutex::new((Waits::new(), Waits::new())),
        }
    }
}

/// Refusal lines in the current second, and those not shown.
#[derive(Default)]
struct LogWindow {
    started: Option<Instant>,
    shown: u32,
    hidden: u32,
}

impl App {
    /// One Spanish line for a refused request, unless this second already had its share.
    fn refused(&self, peer: SocketAddr, status: StatusCode, why: &str) {
        let mut window = lock(&self.refusals);
        let now = Instant::now();
        if window
            .started
            .is_none_or(|s| now.duration_since(s) >= Duration::from_secs(1))
        {
            if window.hidden > 0 {
                crate::log_warn!(
                    "… y {} solicitudes rechazadas más en el último segundo",
                    window.hidden
                );
            }
            *window = LogWindow {
                started: Some(now),
                shown: 0,
                hidden: 0,
            };
        }
        if window.shown < LOG_LINES_PER_S {
            window.shown += 1;
            crate::log_warn!("rechazada ({}) de {peer}: {why}", status.as_u16());
        } else {
            window.hidden += 1;
        }
    }
}

/// An answer with a Spanish reason as its body.
fn refusal(status: StatusCode, why: &str) -> Response {
    (status, format!("{why}\n")).into_response()
}

/// The one handler: decode, check, queue, wait for the commit, answer.
async fn report(
    State(app): State<Arc<App>>,
    Extension(peer): Extension<SocketAddr>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    // The request's URI, headers and body are slices of hyper's read buffer, which reads
    // the connection's next request into a new buffer while this one is still held: they
    // are dropped once decoded, not kept through the wait for the commit (twice the buffers
    // per connection otherwise, a thousand connections' worth).
    let arrived = Instant::now();
    let outcome = match decode(&app, &method, uri, headers, body).await {
        Ok(Some(position)) => {
            let queued = Instant::now();
            let committed = commit(&app, position).await;
            let mut waits = lock(&app.waits);
            waits.0.add(arrived.elapsed());
            waits.1.add(queued.elapsed());
            committed
        }
        Ok(None) => Ok(()),
        Err(refused) => Err(refused),
    };
    match outcome {
        Ok(()) => StatusCode::OK.into_response(),
        Err((status, why)) => {
            app.refused(peer, status, &why);
            let mut response = refusal(status, &why);
            if status == StatusCode::SERVICE_UNAVAILABLE {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
            }
            response
        }
    }
}

type Refused = (StatusCode, String);

/// Reads and checks a request: the position to store (`None`: a report without a valid fix,
/// acknowledged and not stored), or why it is refused. Takes the request's parts so that
/// they are dropped when it returns.
async fn decode(
    app: &App,
    method: &Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Result<Option<Position>, Refused> {
    let bad = |e: Refusal| (StatusCode::BAD_REQUEST, e.to_string());
    let bytes = match tokio::time::timeout(app.limits.read, to_bytes(body, MAX_BODY)).await {
        Err(_) => {
            return Err((
                StatusCode::REQUEST_TIMEOUT,
                format!("el cuerpo no llegó en {} s", app.limits.read.as_secs()),
            ));
        }
        Ok(Err(_)) => {
            return Err((
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("el cuerpo supera {} KiB", MAX_BODY / 1024),
            ));
        }
        Ok(Ok(bytes)) => bytes,
    };
    let request = osmand::Request {
        query: uri.query(),
        content_type: headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
        body: &bytes,
    };
    // A refusal names the device when the request names one, so that the log line says
    // which tracker to fix (a wrong clock, garbage in a field).
    let named = |device: Option<&str>, why: Refusal| match device {
        Some(device) => (
            StatusCode::BAD_REQUEST,
            format!("dispositivo '{device}': {why}"),
        ),
        None => bad(why),
    };
    let report = osmand::decode(&request, &app.protocol.decode)
        .map_err(|why| named(osmand::device_of(&request).as_deref(), why))?;
    let device: String = report.device.chars().take(60).collect();
    let received_utc = app.clock.now_utc();
    let ts_utc = report.ts_utc.unwrap_or(received_utc);
    osmand::check_time(ts_utc, received_utc).map_err(|why| named(Some(&device), why))?;
    if !report.valid {
        // The tracker itself says it has no fix: acknowledged, not stored (Traccar would
        // store it flagged; flota has no flag, and its coordinates are stale).
        crate::log_debug!("{method} sin fix válido de {}: no se guarda", report.device);
        return Ok(None);
    }
    osmand::check_position(report.lat, report.lon).map_err(|why| named(Some(&device), why))?;
    let found = app
        .devices
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .find(&report.device);
    let unit = match (found, app.protocol.register_unknown) {
        (Some(id), _) => Unit::Vehicle(id),
        (None, true) => Unit::Register(report.device.trim().to_owned()),
        (None, false) => {
            let status = match report.form {
                Form::Query => StatusCode::BAD_REQUEST,
                Form::Json => StatusCode::NOT_FOUND,
            };
            return Err((
                status,
                format!(
                    "dispositivo desconocido '{}' (ni placa ni id declarado; --registrar-desconocidas lo daría de alta)",
                    report.device.chars().take(60).collect::<String>()
                ),
            ));
        }
    };
    let reading = Reading {
        lat: report.lat,
        lon: report.lon,
        speed_kmh: report.speed_kmh,
        heading_deg: report.heading_deg,
        // A tracker without an ignition input is taken as always on (docs/ingesta.md).
        ignition: report.ignition.unwrap_or(true),
        odometer_m: report.odometer_m,
    };
    Ok(Some(Position {
        unit,
        ts_utc,
        row: StoredRow::encode(&reading, received_utc - ts_utc),
    }))
}

/// Queues a position for the writer and waits for its commit.
async fn commit(app: &App, position: Position) -> Result<(), Refused> {
    let answer = enqueue(app, position)?;
    match tokio::time::timeout(ACK_TIMEOUT, answer).await {
        Ok(Ok(Ok(Outcome::Stored(_) | Outcome::Duplicate(_)))) => Ok(()),
        Ok(Ok(Err(why))) => Err((
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("no se pudo guardar: {why}"),
        )),
        Ok(Err(_)) => Err((
            StatusCode::SERVICE_UNAVAILABLE,
            "el receptor se está deteniendo".to_owned(),
        )),
        Err(_) => Err((
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "la base no confirmó la escritura en {} s",
                ACK_TIMEOUT.as_secs()
            ),
        )),
    }
}

fn enqueue(
    app: &App,
    position: Position,
) -> Result<tokio::sync::oneshot::Receiver<Answer>, Refused> {
    let (reply, answer) = tokio::sync::oneshot::channel();
    match app.jobs.try_send(Job {
        position,
        reply,
        queued: Instant::now(),
    }) {
        Ok(()) => Ok(answer),
        Err(TrySendError::Full(_)) => Err((
            StatusCode::SERVICE_UNAVAILABLE,
            "cola llena: demasiadas posiciones a la vez".to_owned(),
        )),
        Err(TrySendError::Disconnected(_)) => Err((
            StatusCode::SERVICE_UNAVAILABLE,
            "el receptor se está deteniendo".to_owned(),
        )),
    }
}

/// What hyper itself refused on a connection (it answered or closed it), in Spanish; `None`
/// for a client that simply went away.
fn connection_fault(e: &hyper::Error) -> Option<&'static str> {
    if e.is_parse_too_large() {
        Some("encabezados demasiado grandes (HTTP 431)")
    } else if e.is_parse() || e.is_parse_status() {
        Some("solicitud HTTP mal formada (HTTP 400)")
    } else if e.is_timeout() {
        Some("el cliente no terminó de enviar los encabezados a tiempo: conexión cerrada")
    } else {
        None
    }
}

/// The router: every method, every path, one handler.
pub fn router(app: Arc<App>) -> Router {
    Router::new().fallback(report).with_state(app)
}

/// Serves `listener` until `stop` resolves, then lets requests in flight finish (at most
/// [`GRACE`]).
pub async fn serve(
    listener: TcpListener,
    app: Arc<App>,
    stop: impl std::future::Future<Output = ()>,
) {
    let limits = app.limits;
    let router = router(Arc::clone(&app));
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.connections.max(1)));
    tokio::pin!(stop);
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot,
            () = &mut stop => break,
        };
        let Ok(slot) = slot else { break };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors, a reset before accept: wait and go on.
                crate::log_warn!("no se pudo aceptar una conexión: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let stream = Counted::new(stream);
        let traffic = Arc::clone(&stream.traffic);
        // The peer's address rides in each request's extensions: cloning the router is an
        // `Arc` clone, where layering it per connection would rebuild its routes.
        let router = router.clone();
        let answered = Arc::clone(&traffic);
        let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
            request.extensions_mut().insert(peer);
            let answered = Arc::clone(&answered);
            let response = router.clone().oneshot(request);
            async move {
                let response = response.await;
                answered.answered();
                response
            }
        });
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(limits.read)
            .max_buf_size(MAX_HEADERS.max(8192));
        let connection = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
        let app = Arc::clone(&app);
        tokio::spawn(async move {
            match connection.await {
                Err(e) if e.is_timeout() && traffic.idle() => {
                    // A keep-alive connection nobody used again: closed, as it should be.
                    crate::log_debug!("conexión inactiva de {peer} cerrada tras el tiempo límite");
                }
                Err(e) => {
                    if let Some(why) = connection_fault(&e) {
                        app.refused(peer, StatusCode::BAD_REQUEST, why);
                    }
                }
                Ok(()) => {}
            }
            drop(slot);
        });
    }
    drop(listener);
    {
        let waits = lock(&app.waits);
        crate::log_debug!(
            "receptor, esperas por posición guardada: en el manejador {}; de ellas, esperando al escritor {}",
            waits.0.text(),
            waits.1.text()
        );
    }
    if tokio::time::timeout(GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        crate::log_warn!(
            "algunas conexiones no terminaron en {} s: se cierran",
            GRACE.as_secs()
        );
    }
}

/// Bytes a connection has read, and how many it had read when its last answer was ready: a
/// connection whose header timeout fires with nothing read since is an idle keep-alive (or
/// one opened ahead and never used), not a client that stalled mid-request. Bytes of a
/// pipelined request read while the previous one was handled count as read before the
/// answer; such a request that then stalls is taken as idle (logged at debug).
#[derive(Default)]
struct Traffic {
    read: std::sync::atomic::AtomicU64,
    at_answer: std::sync::atomic::AtomicU64,
}

impl Traffic {
    fn answered(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        self.at_answer.store(self.read.load(Relaxed), Relaxed);
    }

    fn idle(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        self.read.load(Relaxed) == self.at_answer.load(Relaxed)
    }
}

/// A TCP stream that counts the bytes read from it into its [`Traffic`].
struct Counted {
    stream: tokio::net::TcpStream,
    traffic: Arc<Traffic>,
}

impl Counted {
    fn new(stream: tokio::net::TcpStream) -> Counted {
        Counted {
            stream,
            traffic: Arc::new(Traffic::default()),
        }
    }
}

impl tokio::io::AsyncRead for Counted {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.stream).poll_read(cx, buf);
        let read = buf.filled().len().saturating_sub(before) as u64;
        self.traffic
            .read
            .fetch_add(read, std::sync::atomic::Ordering::Relaxed);
        polled
    }
}

impl tokio::io::AsyncWrite for Counted {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
