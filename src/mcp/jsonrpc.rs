//! JSON-RPC 2.0 messages: classifying one incoming line, and building outgoing lines.
//!
//! Owns the wire shape of a message and nothing else: which methods exist, what state a
//! session is in and what a result contains are the session's business. Ids and progress
//! tokens are kept as raw JSON text ([`RawValue`]) so that `0`, `"7"` and integers far beyond
//! 2^53 are echoed byte for byte, with their JSON type intact.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// A request id or progress token exactly as the peer wrote it.
pub type RawId = Box<RawValue>;

/// Error codes used on the wire.
///
/// The five standard JSON-RPC codes plus the MCP codes this server needs. New
/// implementations must not use -32000…-32019, and -32020…-32099 belong to the MCP spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    ParseError,
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    InternalError,
    /// MCP 2026-07-28: the request's `_meta` names a protocol version the server lacks.
    UnsupportedProtocolVersion,
    /// MCP ≤ 2025-11-25: `resources/read` of an unknown URI.
    ResourceNotFound,
    /// MCP 2026-07-28: an HTTP header disagrees with the body (or is missing).
    HeaderMismatch,
    /// MCP 2026-07-28: the call needs a client capability the request did not declare.
    MissingClientCapability,
}

impl ErrorCode {
    pub fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::InternalError => -32603,
            ErrorCode::UnsupportedProtocolVersion => -32022,
            ErrorCode::ResourceNotFound => -32002,
            ErrorCode::HeaderMismatch => -32020,
            ErrorCode::MissingClientCapability => -32021,
        }
    }

    /// The standard English `message`; the Spanish detail travels in `data`.
    pub fn message(self) -> &'static str {
        match self {
            ErrorCode::ParseError => "Parse error",
            ErrorCode::InvalidRequest => "Invalid Request",
            ErrorCode::MethodNotFound => "Method not found",
            ErrorCode::InvalidParams => "Invalid params",
            ErrorCode::InternalError => "Internal error",
            ErrorCode::UnsupportedProtocolVersion => "Unsupported protocol version",
            ErrorCode::ResourceNotFound => "Resource not found",
            ErrorCode::HeaderMismatch => "Header mismatch",
            ErrorCode::MissingClientCapability => "Missing required client capability",
        }
    }
}

/// An error object ready to be sent: a code plus a detail for `data`.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: ErrorCode,
    pub data: Value,
}

impl RpcError {
    /// An error whose `data` is a Spanish sentence.
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> Self {
        RpcError {
            code,
            data: Value::String(detail.into()),
        }
    }

    /// An error whose `data` is structured (e.g. `{supported, requested}`).
    pub fn with_data(code: ErrorCode, data: Value) -> Self {
        RpcError { code, data }
    }
}

/// A request: it has an id and must be answered exactly once.
#[derive(Debug)]
pub struct Request {
    pub id: RawId,
    pub method: String,
    pub params: Option<Box<RawValue>>,
}

/// A notification: no id, never answered.
#[derive(Debug)]
pub struct Notification {
    pub method: String,
    pub params: Option<Box<RawValue>>,
}

/// What one input line turned out to be.
#[derive(Debug)]
pub enum Incoming {
    Request(Request),
    Notification(Notification),
    /// A response from the peer; servers that send no requests ignore these.
    Response,
    /// Answer with this error; `id` is `None` when no valid id could be read.
    Invalid {
        id: Option<RawId>,
        error: RpcError,
    },
    /// Id-less and malformed: looks like a notification, so it is never answered.
    BadNotification {
        reason: String,
    },
}

/// Classifies one line (without its terminator).
pub fn classify(line: &[u8]) -> Incoming {
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(err) => {
            return invalid(
                None,
                ErrorCode::ParseError,
                format!(
                    "el mensaje no es UTF-8 válido (byte inválido en la posición {})",
                    err.valid_up_to()
                ),
            );
        }
    };
    // Parse the top level as raw members so the id never passes through an f64.
    let members: HashMap<String, Box<RawValue>> = match serde_json::from_str(text) {
        Ok(members) => members,
        Err(err) => {
            // Valid JSON that is not an object (a batch, a number...) is an invalid request,
            // not a parse error.
            if serde_json::from_str::<&RawValue>(text).is_ok() {
                let what = if text.trim_start().starts_with('[') {
                    "los lotes (arrays) de JSON-RPC no se admiten; envíe un objeto por línea"
                } else {
                    "el mensaje debe ser un objeto JSON"
                };
                return invalid(None, ErrorCode::InvalidRequest, what);
            }
            return invalid(
                None,
                ErrorCode::ParseError,
                format!("JSON mal formado: {}", crate::plumbing::spanish::json(&err)),
            );
        }
    };

    let id = members.get("id");
    let method = members.get("method");
    let is_response =
        method.is_none() && (members.contains_key("result") || members.contains_key("error"));
    if is_response {
        return Incoming::Response;
    }

    // Validate the id first: an unreadable id forces `id: null` in any error below.
    let id = match id {
        None => None,
        Some(raw) if is_valid_id(raw) => Some(raw.clone()),
        Some(raw) => {
            return invalid(
                None,
                ErrorCode::InvalidRequest,
                format!(
                    "el id debe ser un texto o un entero, no {}",
                    json_kind(raw.get())
                ),
            );
        }
    };

    let problem = check_envelope(&members);
    let method_name = method.and_then(|raw| serde_json::from_str::<String>(raw.get()).ok());
    match (id, problem, method_name) {
        (Some(id), Some(problem), _) => invalid(Some(id), ErrorCode::InvalidRequest, problem),
        (Some(id), None, Some(method)) => Incoming::Request(Request {
            id,
            method,
            params: members.get("params").cloned(),
        }),
        (None, Some(problem), Some(_)) => Incoming::BadNotification { reason: problem },
        (None, Some(problem), None) => invalid(None, ErrorCode::InvalidRequest, problem),
        (None, None, Some(method)) => Incoming::Notification(Notification {
            method,
            params: members.get("params").cloned(),
        }),
        // check_envelope reports a missing or non-string method, so these cannot happen.
        (Some(id), None, None) => invalid(Some(id), ErrorCode::InvalidRequest, "falta 'method'"),
        (None, None, None) => invalid(None, ErrorCode::InvalidRequest, "falta 'method'"),
    }
}

fn invalid(id: Option<RawId>, code: ErrorCode, detail: impl Into<String>) -> Incoming {
    Incoming::Invalid {
        id,
        error: RpcError::new(code, detail),
    }
}

/// Returns a Spanish description of what is wrong with the envelope, if anything.
fn check_envelope(members: &HashMap<String, Box<RawValue>>) -> Option<String> {
    match members.get("jsonrpc") {
        None => return Some("falta el miembro 'jsonrpc' (debe valer \"2.0\")".into()),
        Some(raw) if raw.get().trim() != "\"2.0\"" => {
            return Some(format!("'jsonrpc' debe valer \"2.0\", no {}", raw.get()));
        }
        Some(_) => {}
    }
    match members.get("method") {
        None => return Some("falta 'method'".into()),
        Some(raw) if json_kind(raw.get()) != "texto" => {
            return Some(format!(
                "'method' debe ser un texto, no {}",
                json_kind(raw.get())
            ));
        }
        Some(_) => {}
    }
    if let Some(params) = members.get("params") {
        let kind = json_kind(params.get());
        if kind != "objeto" && kind != "lista" {
            return Some(format!(
                "'params' debe ser un objeto o una lista, no {kind}"
            ));
        }
    }
    None
}

/// An id is a JSON string or an integer written without fraction or exponent.
fn is_valid_id(raw: &RawValue) -> bool {
    let text = raw.get().trim();
    if text.starts_with('"') {
        return true;
    }
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// A Spanish name for the JSON type of a raw value, for error messages.
pub fn json_kind(raw: &str) -> &'static str {
    match raw.trim_start().as_bytes().first() {
        Some(b'"') => "texto",
        Some(b'{') => "objeto",
        Some(b'[') => "lista",
        Some(b't' | b'f') => "booleano",
        Some(b'n') => "null",
        _ => "número",
    }
}

#[derive(Serialize)]
struct Envelope<'a, T: Serialize> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorObject<'a>>,
}

#[derive(Serialize)]
struct ErrorObject<'a> {
    code: i64,
    message: &'static str,
    #[serde(skip_serializing_if = "Value::is_null")]
    data: &'a Value,
}

fn to_line<T: Serialize>(envelope: &Envelope<'_, T>) -> String {
    // Serializing plain data (strings, numbers, maps with string keys) cannot fail; should it
    // ever, an internal error line keeps the one-answer-per-request promise.
    serde_json::to_string(envelope).unwrap_or_else(|err| {
        format!(
            r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32603,"message":"Internal error","data":"{}"}}}}"#,
            err.to_string().replace('"', "'")
        )
    })
}

/// A success response line (compact, no trailing newline).
pub fn response_line(id: &RawValue, result: &impl Serialize) -> String {
    to_line(&Envelope {
        jsonrpc: "2.0",
        id: Some(id),
        method: None,
        params: None,
        result: Some(result),
        error: None,
    })
}

/// An error response line; `id: None` writes `"id": null`.
pub fn error_line(id: Option<&RawValue>, error: &RpcError) -> String {
    to_line::<Value>(&Envelope {
        jsonrpc: "2.0",
        id: Some(id.unwrap_or(RawValue::NULL)),
        method: None,
        params: None,
        result: None,
        error: Some(ErrorObject {
            code: error.code.code(),
            message: error.code.message(),
            data: &error.data,
        }),
    })
}

/// A notification line sent by the server.
pub fn notification_line(method: &str, params: &impl Serialize) -> String {
    to_line(&Envelope {
        jsonrpc: "2.0",
        id: None,
        method: Some(method),
        params: Some(params),
        result: None,
        error: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Classifies `line` and renders the outcome as one short string to compare against.
    fn check(line: &str, expected: &str) {
        let got = match classify(line.as_bytes()) {
            Incoming::Request(r) => format!("request {} {}", r.id.get(), r.method),
            Incoming::Notification(n) => format!("notification {}", n.method),
            Incoming::Response => "response".to_owned(),
            Incoming::Invalid { id, error } => format!(
                "error {} id={}",
                error.code.code(),
                id.as_ref().map_or("null", |id| id.get())
            ),
            Incoming::BadNotification { .. } => "bad-notification".to_owned(),
        };
        assert_eq!(got, expected, "line: {line}");
    }

    #[test]
    fn classifies_lines() {
        check(
            r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#,
            "request 0 ping",
        );
        check(
            r#"{"jsonrpc":"2.0","id":"7","method":"ping"}"#,
            r#"request "7" ping"#,
        );
        check(
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#,
            "request 123456789012345678901234567890 ping",
        );
        check(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "notification notifications/initialized",
        );
        check(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#, "response");
        check(
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"x"}}"#,
            "response",
        );
        check("{not json", "error -32700 id=null");
        check("[1,2,3]", "error -32600 id=null");
        check("42", "error -32600 id=null");
        check(r#"{"id":4,"method":"ping"}"#, "error -32600 id=4");
        check(
            r#"{"jsonrpc":"1.0","id":4,"method":"ping"}"#,
            "error -32600 id=4",
        );
        check(r#"{"jsonrpc":"2.0","id":4}"#, "error -32600 id=4");
        check(
            r#"{"jsonrpc":"2.0","id":4,"method":5}"#,
            "error -32600 id=4",
        );
        check(
            r#"{"jsonrpc":"2.0","id":4,"method":"x","params":"x"}"#,
            "error -32600 id=4",
        );
        check(
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
            "error -32600 id=null",
        );
        check(
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            "error -32600 id=null",
        );
        check(
            r#"{"jsonrpc":"2.0","id":3.5,"method":"ping"}"#,
            "error -32600 id=null",
        );
        check(
            r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
            "error -32600 id=null",
        );
        check(
            r#"{"jsonrpc":"2.0","method":"x","params":3}"#,
            "bad-notification",
        );
        check(r#"{"foo":"boo"}"#, "error -32600 id=null");
    }

    #[test]
    fn invalid_utf8_is_a_parse_error() {
        match classify(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}") {
            Incoming::Invalid { id: None, error } => assert_eq!(error.code, ErrorCode::ParseError),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn ids_are_echoed_verbatim() {
        let Incoming::Request(req) =
            classify(br#"{"jsonrpc":"2.0","id":18446744073709551616123,"method":"ping"}"#)
        else {
            panic!("not a request");
        };
        let line = response_line(&req.id, &serde_json::json!({}));
        assert_eq!(
            line,
            r#"{"jsonrpc":"2.0","id":18446744073709551616123,"result":{}}"#
        );
    }

    #[test]
    fn error_lines_have_standard_messages() {
        let line = error_line(None, &RpcError::new(ErrorCode::ParseError, "mal"));
        assert_eq!(
            line,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":"mal"}}"#
        );
    }
}
