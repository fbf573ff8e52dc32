//! The server core driven in-process through `mcp::serve` with in-memory pipes: a panicking
//! tool, and property tests that throw random bytes and random JSON-RPC shapes at it.

use std::io::{self, Cursor, Write};
use std::sync::{Arc, Mutex};

use flota::mcp::{
    self, CallContext, Reply, ServeOptions, ServerInfo, Service, ToolError, TypedTool, typed,
};
use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The tool; it sees what the server wrote so far, to hold its slot until an event.
struct Boom(Sink);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct BoomParams {
    fuerte: Option<bool>,
    /// Works this long (polling for cancellation) before answering.
    espera_ms: Option<u64>,
    /// Holds its slot, cancelled or not, until the server has answered the request with
    /// this id; then works until cancelled. The order of events, not a clock, decides.
    hasta_respuesta: Option<i64>,
}

/// A hang guard for the waits below: only a broken server gets near it.
const HANG_GUARD: std::time::Duration = std::time::Duration::from_secs(120);

impl Sink {
    /// True once a line answering `id` was written.
    fn answered(&self, id: i64) -> bool {
        let bytes = self.0.lock().unwrap().clone();
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|m| m["id"] == id && m.get("method").is_none())
    }
}

#[derive(Serialize, JsonSchema)]
struct BoomOutput {
    ok: bool,
}

impl TypedTool for Boom {
    type Params = BoomParams;
    type Output = BoomOutput;
    fn name(&self) -> &'static str {
        "explotar"
    }
    fn title(&self) -> &'static str {
        "Explotar"
    }
    fn description(&self) -> String {
        "Entra en pánico si fuerte es true; si no, responde ok.".into()
    }
    fn call(&self, p: BoomParams, ctx: &CallContext) -> Result<Reply<BoomOutput>, ToolError> {
        if p.fuerte == Some(true) {
            panic!("boom (expected by the test)");
        }
        if let Some(id) = p.hasta_respuesta {
            let guard = std::time::Instant::now() + HANG_GUARD;
            while !self.0.answered(id) && std::time::Instant::now() < guard {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            while !ctx.is_cancelled() && std::time::Instant::now() < guard {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            return Ok(Reply::new(BoomOutput { ok: true }));
        }
        let until =
            std::time::Instant::now() + std::time::Duration::from_millis(p.espera_ms.unwrap_or(0));
        while std::time::Instant::now() < until && !ctx.is_cancelled() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        Ok(Reply::new(BoomOutput { ok: true }))
    }
}

fn service(sink: &Sink) -> Service {
    Service {
        info: ServerInfo {
            name: "t".into(),
            version: "0".into(),
            title: "T".into(),
        },
        instructions: None,
        tools: vec![typed(Boom(sink.clone()))],
        ..Service::default()
    }
}

/// Runs a whole session over `input`; returns the stdout lines.
/// Serves `input` to its end. Calls still running then get a generous grace: these tests are
/// about answers, not shutdown, and a loaded machine may be slow to run them.
fn run(input: Vec<u8>) -> Vec<String> {
    let options = ServeOptions {
        stop_grace: HANG_GUARD,
        ..ServeOptions::default()
    };
    run_with(input, options)
}

fn run_with(input: Vec<u8>, options: ServeOptions) -> Vec<String> {
    let sink = Sink::default();
    mcp::serve(service(&sink), Cursor::new(input), sink.clone(), options).unwrap();
    let bytes = sink.0.lock().unwrap().clone();
    let text = String::from_utf8(bytes).expect("stdout is UTF-8");
    assert!(text.is_empty() || text.ends_with('\n'));
    text.lines().map(str::to_owned).collect()
}

const HANDSHAKE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n"
);

/// The long call holds the only slot until the second call has been answered (refused, or
/// wrongly run), however late its time limit fires or the reader reaches the second call;
/// then it works until the limit cancels it. The end of input waits for it (a generous
/// grace: the calls finish on events, the grace is only a hang guard).
#[test]
fn the_in_flight_cap_waits_then_refuses_and_the_time_limit_answers() {
    let input = format!(
        "{HANDSHAKE}{}\n{}\n{}\n",
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"explotar","arguments":{"hasta_respuesta":2}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"explotar","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
    );
    let options = ServeOptions {
        max_in_flight: 1,
        admission_wait: std::time::Duration::from_millis(100),
        call_timeout: Some(std::time::Duration::from_millis(400)),
        stop_grace: HANG_GUARD,
        ..ServeOptions::default()
    };
    let lines = run_with(input.into_bytes(), options);
    let answers: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by_id = |id: i64| {
        let matching: Vec<&Value> = answers.iter().filter(|a| a["id"] == id).collect();
        assert_eq!(matching.len(), 1, "id {id}: {lines:?}");
        matching[0].clone()
    };
    // The only slot is taken for longer than the admission wait: refused, clearly.
    let refused = by_id(2);
    assert!(
        refused["error"]["data"]
            .as_str()
            .unwrap()
            .contains("servidor ocupado"),
        "{refused}"
    );
    assert_eq!(by_id(3)["result"], json!({}));
    // The long call is answered once, by the limit; the tool's own late answer is dropped.
    let limited = by_id(1);
    assert_eq!(limited["result"]["isError"], true, "{limited}");
    assert!(
        limited["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("superó el límite de 0.4 s"),
        "{limited}"
    );
}

#[test]
fn the_byte_budget_admits_a_big_call_alone_and_holds_the_next() {
    let padding = "x".repeat(4000);
    // As above: the big call holds its bytes until the second call has been answered.
    let input = format!(
        "{HANDSHAKE}{}\n{}\n",
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "explotar", "arguments": {"hasta_respuesta": 2}, "_meta": {"relleno": padding}}}),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"explotar","arguments":{}}}"#,
    );
    let options = ServeOptions {
        max_in_flight_bytes: 1000,
        admission_wait: std::time::Duration::from_millis(100),
        call_timeout: Some(std::time::Duration::from_millis(400)),
        stop_grace: HANG_GUARD,
        ..ServeOptions::default()
    };
    let lines = run_with(input.into_bytes(), options);
    let answers: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first = answers.iter().find(|a| a["id"] == 1).unwrap();
    // Over the budget on its own, yet admitted: nothing else was running.
    assert!(first.get("result").is_some(), "{first}");
    let second = answers.iter().find(|a| a["id"] == 2).unwrap();
    let reason = second["error"]["data"].as_str().unwrap();
    assert!(
        reason.contains("servidor ocupado") && reason.contains("MB de solicitudes"),
        "{reason}"
    );
}

#[test]
fn a_panicking_tool_is_an_internal_error_and_the_server_lives_on() {
    let input = format!(
        "{HANDSHAKE}{}\n{}\n",
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"explotar","arguments":{"fuerte":true}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"explotar","arguments":{}}}"#,
    );
    let lines = run(input.into_bytes());
    let answers: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let one = answers.iter().find(|a| a["id"] == 1).unwrap();
    assert_eq!(one["error"]["code"], -32603);
    assert_eq!(one["error"]["message"], "Internal error");
    let two = answers.iter().find(|a| a["id"] == 2).unwrap();
    assert_eq!(two["result"]["structuredContent"], json!({"ok": true}));
}

/// A random message shape: what kind it is decides how many answers it deserves.
#[derive(Debug, Clone)]
enum Shape {
    Request(String),
    Notification(String),
    Garbage(Vec<u8>),
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[a-zñ/_ ]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("initialize".to_owned()),
        Just("ping".to_owned()),
        Just("tools/list".to_owned()),
        Just("tools/call".to_owned()),
        Just("server/discover".to_owned()),
        Just("notifications/cancelled".to_owned()),
        "[a-z/]{1,16}",
    ]
}

fn params() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        json_value().prop_map(Some),
        Just(Some(json!({"name": "explotar", "arguments": {}}))),
        Just(Some(
            json!({"name": "explotar", "arguments": {"fuerte": "x"}})
        )),
        Just(Some(json!({"protocolVersion": "2025-06-18"}))),
        Just(Some(
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                    "io.modelcontextprotocol/clientCapabilities": {}},
                         "name": "explotar"})
        )),
    ]
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        (any::<u32>(), method(), params()).prop_map(|(id, method, params)| {
            let mut m = json!({"jsonrpc": "2.0", "id": id, "method": method});
            if let Some(p) = params {
                m["params"] = p;
            }
            Shape::Request(m.to_string())
        }),
        ("[a-z]{1,6}", method(), params()).prop_map(|(id, method, params)| {
            let mut m = json!({"jsonrpc": "2.0", "id": id, "method": method});
            if let Some(p) = params {
                m["params"] = p;
            }
            Shape::Request(m.to_string())
        }),
        (method(), params()).prop_map(|(method, params)| {
            let mut m = json!({"jsonrpc": "2.0", "method": method});
            if let Some(p) = params {
                m["params"] = p;
            }
            Shape::Notification(m.to_string())
        }),
        prop::collection::vec(any::<u8>(), 1..64)
            .prop_filter("one line, not blank", |b| !b.contains(&b'\n')
                && !b.iter().all(u8::is_ascii_whitespace))
            .prop_map(Shape::Garbage),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Random sessions: each request answered exactly once (ids unique per session), no
    /// notification answered, every line JSON, no crash.
    #[test]
    fn random_sessions_keep_the_protocol_promises(shapes in prop::collection::vec(shape(), 1..24)) {
        let mut input = Vec::new();
        let mut expected_ids = Vec::new();
        let mut garbage = 0usize;
        // Unique ids: a duplicate id in flight is refused, which would still be one answer
        // each, but keeping them unique makes the count exact.
        for (index, shape) in shapes.iter().enumerate() {
            match shape {
                Shape::Request(line) => {
                    let mut message: Value = serde_json::from_str(line).unwrap();
                    message["id"] = json!(index);
                    expected_ids.push(json!(index));
                    input.extend_from_slice(message.to_string().as_bytes());
                }
                Shape::Notification(line) => input.extend_from_slice(line.as_bytes()),
                Shape::Garbage(bytes) => {
                    input.extend_from_slice(bytes);
                    garbage += 1;
                }
            }
            input.push(b'\n');
        }
        let lines = run(input);
        let answers: Vec<Value> = lines.iter().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
        let mut answered: Vec<Value> = answers
            .iter()
            .filter(|a| a.get("method").is_none() && !a["id"].is_null())
            .map(|a| a["id"].clone())
            .collect();
        answered.sort_by_key(|id| id.as_u64());
        prop_assert_eq!(&answered, &expected_ids);
        for answer in &answers {
            prop_assert_eq!(&answer["jsonrpc"], "2.0");
            prop_assert!(answer.get("result").is_some() ^ answer.get("error").is_some() || answer.get("method").is_some());
        }
        // Garbage lines get at most one null-id answer each (an id-less malformed
        // notification-like object gets none).
        let null_ids = answers.iter().filter(|a| a["id"].is_null() && a.get("method").is_none()).count();
        prop_assert!(null_ids <= garbage);
    }

    /// Arbitrary bytes, newlines included, never crash the server or corrupt stdout.
    #[test]
    fn random_bytes_never_crash(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let lines = run(bytes);
        for line in lines {
            let value: Value = serde_json::from_str(&line).expect("JSON line");
            prop_assert_eq!(&value["jsonrpc"], "2.0");
        }
    }
}
