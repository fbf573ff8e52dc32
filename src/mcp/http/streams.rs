//! Server-Sent Event streams that outlive their connection: every event a session sends is
//! kept (boundedly) under an id `"<stream>-<n>"`, so a client that lost a stream can resume
//! it with `GET` and `Last-Event-ID` and receive what it missed, then the rest live.
//!
//! Owns the event log of one session and the SSE body of a response; knows nothing of
//! JSON-RPC beyond "a message is a line of text".

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio_stream::StreamExt;
use tokio_stream::wrappers::UnboundedReceiverStream;

/// At most this many events are kept per stream for resumption.
const KEPT_PER_STREAM: usize = 256;
/// At most this many finished streams are kept per session.
const KEPT_STREAMS: usize = 32;
/// How long a client should wait before reconnecting (sent as `retry`).
pub const RETRY: Duration = Duration::from_secs(1);

/// One event: its id and its data (a JSON-RPC message, or empty for the priming event).
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub id: Option<String>,
    pub data: String,
}

struct Kept {
    events: Vec<(u64, String)>,
    next: u64,
    live: Option<UnboundedSender<Outgoing>>,
    done: bool,
}

/// The streams of one session (or of one stateless request, with nothing to resume).
#[derive(Clone, Default)]
pub struct Streams {
    inner: Arc<Mutex<StreamTable>>,
}

#[derive(Default)]
struct StreamTable {
    next_stream: u64,
    streams: HashMap<u64, Kept>,
    finished: Vec<u64>,
}

/// The sending end of one stream.
#[derive(Clone)]
pub struct StreamWriter {
    streams: Streams,
    stream: u64,
}

impl Streams {
    fn lock(&self) -> std::sync::MutexGuard<'_, StreamTable> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens a new stream; its first event is the priming one (an id, no data).
    pub fn open(&self) -> (StreamWriter, UnboundedReceiver<Outgoing>) {
        let (tx, rx) = unbounded_channel();
        let mut table = self.lock();
        table.next_stream += 1;
        let stream = table.next_stream;
        table.streams.insert(
            stream,
            Kept {
                events: Vec::new(),
                next: 0,
                live: Some(tx),
                done: false,
            },
        );
        drop(table);
        let writer = StreamWriter {
            streams: self.clone(),
            stream,
        };
        writer.send(String::new());
        (writer, rx)
    }

    /// Resumes after `last_event_id`: the events after it, then the rest live (or the end).
    /// `None` when that stream is unknown here.
    pub fn resume(&self, last_event_id: &str) -> Option<UnboundedReceiver<Outgoing>> {
        let (stream, seen) = last_event_id.split_once('-')?;
        let (stream, seen): (u64, u64) = (stream.parse().ok()?, seen.parse().ok()?);
        let mut table = self.lock();
        let kept = table.streams.get_mut(&stream)?;
        let (tx, rx) = unbounded_channel();
        for (n, data) in kept.events.iter().filter(|(n, _)| *n > seen) {
            let _ = tx.send(Outgoing {
                id: Some(format!("{stream}-{n}")),
                data: data.clone(),
            });
        }
        kept.live = (!kept.done).then_some(tx);
        Some(rx)
    }
}

impl StreamWriter {
    /// Sends a message (kept for resumption); false once nobody listens live.
    pub fn send(&self, data: String) -> bool {
        let mut table = self.streams.lock();
        let Some(kept) = table.streams.get_mut(&self.stream) else {
            return false;
        };
        kept.next += 1;
        let n = kept.next;
        kept.events.push((n, data.clone()));
        if kept.events.len() > KEPT_PER_STREAM {
            kept.events.remove(0);
        }
        let event = Outgoing {
            id: Some(format!("{}-{n}", self.stream)),
            data,
        };
        match &kept.live {
            Some(tx) if tx.send(event).is_ok() => true,
            _ => {
                kept.live = None;
                false
            }
        }
    }

    /// The stream is complete: the live connection ends after what was sent.
    pub fn finish(&self) {
        let mut table = self.streams.lock();
        if let Some(kept) = table.streams.get_mut(&self.stream) {
            kept.done = true;
            kept.live = None;
        }
        table.finished.push(self.stream);
        if table.finished.len() > KEPT_STREAMS {
            let oldest = table.finished.remove(0);
            table.streams.remove(&oldest);
        }
    }

    /// Drops the live connection without finishing (the client may resume).
    pub fn disconnect(&self) {
        if let Some(kept) = self.streams.lock().streams.get_mut(&self.stream) {
            kept.live = None;
        }
    }

    /// Whether a client is connected to this stream right now.
    pub fn is_live(&self) -> bool {
        self.streams
            .lock()
            .streams
            .get(&self.stream)
            .is_some_and(|k| k.live.as_ref().is_some_and(|tx| !tx.is_closed()))
    }
}

/// An SSE response carrying `rx`'s events, with a keep-alive comment while it is quiet and
/// the header that stops proxies from buffering it.
pub fn sse_response(rx: UnboundedReceiver<Outgoing>, extra: &[(&'static str, String)]) -> Response {
    let events = UnboundedReceiverStream::new(rx).map(|out| {
        let mut event = Event::default().data(out.data);
        if let Some(id) = out.id {
            event = event.id(id);
        }
        Ok::<Event, Infallible>(event.retry(RETRY))
    });
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response();
    let headers = response.headers_mut();
    headers.insert(
        "x-accel-buffering",
        axum::http::HeaderValue::from_static("no"),
    );
    headers.insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-cache"),
    );
    for (name, value) in extra {
        if let Ok(value) = axum::http::HeaderValue::from_str(value) {
            headers.insert(*name, value);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(rx: &mut UnboundedReceiver<Outgoing>) -> Vec<(String, String)> {
        let mut out = Vec::new();
        while let Ok(event) = rx.try_recv() {
            out.push((event.id.unwrap_or_default(), event.data));
        }
        out
    }

    #[test]
    fn a_lost_stream_resumes_where_the_client_left_it() {
        let streams = Streams::default();
        let (writer, mut rx) = streams.open();
        writer.send("a".into());
        assert_eq!(
            drain(&mut rx),
            [("1-1".into(), String::new()), ("1-2".into(), "a".into())]
        );
        drop(rx);
        assert!(!writer.send("b".into()), "nobody listens");
        writer.send("c".into());
        let mut resumed = streams.resume("1-2").unwrap();
        writer.send("d".into());
        writer.finish();
        assert_eq!(
            drain(&mut resumed),
            [
                ("1-3".into(), "b".into()),
                ("1-4".into(), "c".into()),
                ("1-5".into(), "d".into())
            ]
        );
        assert!(resumed.try_recv().is_err(), "finished: the stream ends");
        assert!(streams.resume("9-1").is_none());
        assert!(streams.resume("basura").is_none());
    }
}
