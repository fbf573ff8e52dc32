//! The structure-aware input: well-formed JSON-RPC envelopes around the methods, tools,
//! argument names and value shapes flota knows, decoded from the fuzzer's bytes with
//! `arbitrary`, so the fuzzer spends its time past the parser — in the lifecycle, the version
//! rules, schema validation and the tools themselves.
//!
//! Owns the decoding of a `mensajes_estructurados` input into the lines of one session; shared
//! by the `cargo fuzz` target and the corpus regression test (`tests/it/fuzz_corpus.rs`),
//! which must decode the committed seeds exactly as libFuzzer does.

use arbitrary::{Arbitrary, Unstructured};
use serde_json::{Map, Value, json};

/// Messages per session, at most.
pub const MAX_MESSAGES: usize = 64;

const METHODS: &[&str] = &[
    "initialize",
    "notifications/initialized",
    "ping",
    "tools/list",
    "tools/call",
    "notifications/cancelled",
    "server/discover",
    "resources/list",
    "prompts/list",
    "logging/setLevel",
    "completion/complete",
];
const TOOLS: &[&str] = &[
    "posicion_actual",
    "unidades_detenidas",
    "resumen_recorrido",
    "mapa_recorrido",
    "alertas",
    "verificar_geocerca",
    "reporte_kilometraje",
    "no_existe",
];
const ARGUMENTS: &[&str] = &[
    "placa",
    "fecha",
    "fecha_inicio",
    "fecha_fin",
    "minutos_minimos",
    "nombre_geocerca",
    "limite",
    "tipo",
    "otro",
];
const VERSIONS: &[&str] = &[
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
    "1999-01-01",
];
const WORDS: &[&str] = &[
    "P-123BCD",
    "p 456 def",
    "P-000XXX",
    "hoy",
    "ayer",
    "anteayer",
    "lunes",
    "2026-08-18",
    "2026-02-30",
    "9999-12-31",
    "CEDIS Zona 12",
    "cedis",
    "",
    "Ñandú ☃",
    "' OR 1=1 --",
];

#[derive(Arbitrary, Debug)]
pub enum Id {
    Int(i64),
    Text(String),
    Float(f64),
    Null,
    Missing,
    Object,
}

#[derive(Arbitrary, Debug)]
pub enum Scalar {
    Word(u8),
    Text(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Null,
    List(Vec<u8>),
    Nested(u8),
}

/// One message of a session, as the fuzzer shapes it.
#[derive(Arbitrary, Debug)]
pub struct Message {
    pub id: Id,
    pub method: u8,
    pub custom_method: Option<String>,
    pub tool: u8,
    pub version: u8,
    pub modern_meta: bool,
    pub progress_token: Option<Id>,
    pub arguments: Vec<(u8, Scalar)>,
    pub params_as_array: bool,
    pub cancel_target: Option<i64>,
}

fn pick<'a>(list: &[&'a str], index: u8) -> &'a str {
    list[usize::from(index) % list.len()]
}

fn scalar(s: &Scalar) -> Value {
    match s {
        Scalar::Word(i) => json!(pick(WORDS, *i)),
        Scalar::Text(t) => json!(t),
        Scalar::Int(i) => json!(i),
        Scalar::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        Scalar::Bool(b) => json!(b),
        Scalar::Null => Value::Null,
        Scalar::List(items) => Value::Array(items.iter().map(|b| json!(b)).collect()),
        Scalar::Nested(depth) => {
            let mut v = json!("fondo");
            for _ in 0..(depth % 40) {
                v = json!({ "a": v });
            }
            v
        }
    }
}

fn id(i: &Id) -> Option<Value> {
    match i {
        Id::Int(n) => Some(json!(n)),
        Id::Text(t) => Some(json!(t)),
        Id::Float(f) => Some(serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)),
        Id::Null => Some(Value::Null),
        Id::Missing => None,
        Id::Object => Some(json!({"x": 1})),
    }
}

fn render(m: &Message) -> String {
    let method = m
        .custom_method
        .clone()
        .filter(|_| m.method % 16 == 15)
        .unwrap_or_else(|| pick(METHODS, m.method).to_owned());
    let mut params = Map::new();
    match method.as_str() {
        "initialize" => {
            params.insert("protocolVersion".into(), json!(pick(VERSIONS, m.version)));
            params.insert("capabilities".into(), json!({}));
            params.insert("clientInfo".into(), json!({"name": "fuzz", "version": "0"}));
        }
        "tools/call" => {
            params.insert("name".into(), json!(pick(TOOLS, m.tool)));
            let arguments: Map<String, Value> = m
                .arguments
                .iter()
                .map(|(k, v)| (pick(ARGUMENTS, *k).to_owned(), scalar(v)))
                .collect();
            params.insert("arguments".into(), Value::Object(arguments));
        }
        "notifications/cancelled" => {
            params.insert("requestId".into(), json!(m.cancel_target.unwrap_or(1)));
        }
        _ => {}
    }
    let mut meta = Map::new();
    if m.modern_meta {
        meta.insert(
            "io.modelcontextprotocol/protocolVersion".into(),
            json!(pick(VERSIONS, m.version)),
        );
    }
    if let Some(token) = m.progress_token.as_ref().and_then(id) {
        meta.insert("progressToken".into(), token);
    }
    if !meta.is_empty() {
        params.insert("_meta".into(), Value::Object(meta));
    }
    let mut message = json!({"jsonrpc": "2.0", "method": method});
    if let Some(id) = id(&m.id) {
        message["id"] = id;
    }
    message["params"] = if m.params_as_array {
        Value::Array(params.into_iter().map(|(_, v)| v).collect())
    } else {
        Value::Object(params)
    };
    message.to_string()
}

/// The session's input: one line per message (the first [`MAX_MESSAGES`]).
pub fn session(messages: &[Message]) -> Vec<u8> {
    let mut input = Vec::new();
    for m in messages.iter().take(MAX_MESSAGES) {
        input.extend_from_slice(render(m).as_bytes());
        input.push(b'\n');
    }
    input
}

/// Decodes fuzzer bytes as `fuzz_target!(|messages: Vec<Message>| …)` does (too short an
/// input, or one that does not decode, is no session: `None`).
pub fn decode(bytes: &[u8]) -> Option<Vec<u8>> {
    if bytes.len() < <Vec<Message> as Arbitrary>::size_hint(0).0 {
        return None;
    }
    let messages = Vec::<Message>::arbitrary_take_rest(Unstructured::new(bytes)).ok()?;
    Some(session(&messages))
}
