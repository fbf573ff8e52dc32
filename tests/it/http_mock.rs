//! A loopback HTTP/1.1 server for tests: a closure decides each answer from the parsed
//! request; every request is recorded. One thread per connection, keep-alive honoured, so a
//! hanging answer never blocks the others.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Query pairs, percent-decoded, in order.
    pub query: Vec<(String, String)>,
    /// Lower-case header names.
    pub headers: BTreeMap<String, String>,
    /// The request line as sent (`GET /path?query HTTP/1.1`).
    pub line: String,
    /// The body (a POST's JSON).
    pub body: Vec<u8>,
}

impl Request {
    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What to send back.
pub enum Reply {
    Json(u16, String),
    /// Status, extra headers, body.
    Full(u16, Vec<(String, String)>, Vec<u8>),
    /// Say nothing for this long, then close.
    Hang(Duration),
}

pub struct Mock {
    pub url: String,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl Mock {
    pub fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Mock {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&requests);
        let handler = Arc::new(handler);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let log = Arc::clone(&log);
                let handler = Arc::clone(&handler);
                std::thread::spawn(move || serve(stream, &*handler, &log));
            }
        });
        Mock { url, requests }
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// Each request as `GET /path?query HTTP/1.1 | user-agent: …`, for substring checks.
    pub fn lines(&self) -> Vec<String> {
        self.requests()
            .iter()
            .map(|r| {
                let agent = r.headers.get("user-agent").cloned().unwrap_or_default();
                format!("{} | user-agent: {agent}", r.line)
            })
            .collect()
    }
}

fn serve(stream: TcpStream, handler: &dyn Fn(&Request) -> Reply, log: &Mutex<Vec<Request>>) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut headers = BTreeMap::new();
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                break;
            }
            if let Some((k, v)) = header.split_once(':') {
                headers.insert(k.trim().to_lowercase(), v.trim().to_owned());
            }
        }
        let length: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        let _ = reader.read_exact(&mut body);
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_owned();
        let target = parts.next().unwrap_or_default().to_owned();
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        let request = Request {
            method,
            path: decode(path),
            query: query
                .split('&')
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (k, v) = p.split_once('=').unwrap_or((p, ""));
                    (decode(k), decode(v))
                })
                .collect(),
            headers,
            line: line.trim().to_owned(),
            body,
        };
        log.lock().unwrap().push(request.clone());
        let (status, extra, body) = match handler(&request) {
            Reply::Json(status, body) => (
                status,
                vec![("Content-Type".to_owned(), "application/json".to_owned())],
                body.into_bytes(),
            ),
            Reply::Full(status, extra, body) => (status, extra, body),
            Reply::Hang(time) => {
                std::thread::sleep(time);
                return;
            }
        };
        let mut head = format!(
            "HTTP/1.1 {status} {}\r\nContent-Length: {}\r\n",
            reason(status),
            body.len()
        );
        for (k, v) in extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        if writer.write_all(head.as_bytes()).is_err() || writer.write_all(&body).is_err() {
            return;
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// Percent-decoding, `+` as space (form encoding, which reqwest's `query` uses).
pub fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                    }
                    Err(_) => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
