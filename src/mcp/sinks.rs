//! What a running call may send besides its answer — progress and log notifications — for
//! any transport.
//!
//! Owns the rules both transports share: the progress token echoed raw, progress values only
//! increasing, log messages only at or above the level the client asked for, and nothing at
//! all once the in-flight table says the call is answered or cancelled. The transport hands in
//! where a line goes.

use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::in_flight::InFlight;
use super::jsonrpc::notification_line;
use super::logging::LogLevel;
use super::tool::{LogSink, ProgressSink};

/// Where a call's notification lines go.
pub(super) type Send = Arc<dyn Fn(String) + std::marker::Send + Sync>;

/// The progress callback of the call `key`: echoes the token, keeps values increasing, and
/// goes silent once the call is answered or cancelled.
pub(super) fn progress(
    token: Box<RawValue>,
    key: String,
    in_flight: Arc<InFlight>,
    send: Send,
) -> ProgressSink {
    let last = Mutex::new(f64::NEG_INFINITY);
    Box::new(
        move |progress: f64, total: Option<f64>, message: Option<&str>| {
            let mut last = last.lock().unwrap_or_else(PoisonError::into_inner);
            if !progress.is_finite() || progress <= *last {
                return;
            }
            in_flight.while_live(&key, || {
                *last = progress;
                let params = ProgressParams {
                    progress_token: &token,
                    progress,
                    total,
                    message,
                };
                send(notification_line("notifications/progress", &params));
            });
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

/// The log callback of the call `key`: messages at `minimum` or above, while it is live.
pub(super) fn log(
    minimum: LogLevel,
    logger: String,
    key: String,
    in_flight: Arc<InFlight>,
    send: Send,
) -> LogSink {
    Box::new(move |level: LogLevel, data: Value| {
        if level < minimum {
            return;
        }
        in_flight.while_live(&key, || {
            let params = serde_json::json!({
                "level": level.as_str(),
                "logger": logger,
                "data": data,
            });
            send(notification_line("notifications/message", &params));
        });
    })
}
