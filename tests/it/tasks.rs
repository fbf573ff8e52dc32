//! The tasks extension (`io.modelcontextprotocol/tasks`) over raw wire, on both transports:
//! the example server's `esperar` answered with a task handle for a 2026-07-28 request that
//! declares the extension, polled with `tasks/get`, cancelled with `tasks/cancel`, its changes
//! pushed to a `subscriptions/listen` stream, and answered as before for a client that does
//! not declare it (legacy sessions included). The extension's finer rules (questions and `tasks/update`,
//! the store's bounds, every scenario of the conformance suite) are in `src/mcp/tasks.rs`
//! and `tests/conformance/`.

use std::time::{Duration, Instant};

use reqwest::blocking::Response;
use serde_json::{Value, json};

use crate::http::{HttpServer, answer, client};
use crate::support::{Server, TIMEOUT, example_bin};

const EXTENSION: &str = "io.modelcontextprotocol/tasks";

fn with_extension() -> Value {
    json!({"extensions": {EXTENSION: {}}})
}

/// Polls `get` (a `tasks/get` answer's result) until the task is no longer working.
fn settled(mut get: impl FnMut() -> Value) -> Value {
    let until = Instant::now() + TIMEOUT;
    loop {
        let task = get();
        if task["status"] != "working" || Instant::now() > until {
            return task;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

// --- stdio ----------------------------------------------------------------------------------

/// A 2026-07-28 request over stdio; `ext` declares the extension.
fn stdio_modern(server: &mut Server, id: i64, method: &str, params: Value, ext: bool) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":
            if ext { with_extension() } else { json!({}) },
    });
    server.send_json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    let answer = server.recv();
    assert_eq!(answer["id"], id, "{answer}");
    answer
}

#[test]
fn stdio_runs_a_long_call_as_a_task_polled_and_cancelled() {
    let mut server = Server::example();
    let discovered = stdio_modern(&mut server, 1, "server/discover", json!({}), true);
    assert_eq!(
        discovered["result"]["capabilities"]["extensions"][EXTENSION],
        json!({})
    );
    let tools = stdio_modern(&mut server, 1, "tools/list", json!({}), true);
    let esperar = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "esperar")
        .unwrap()
        .clone();
    assert_eq!(esperar["execution"], json!({"taskSupport": "optional"}));

    let call = |ms: u32| json!({"name": "esperar", "arguments": {"milisegundos": ms}});
    let created = stdio_modern(&mut server, 2, "tools/call", call(60_000), true)["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working");
    assert!(created.get("content").is_none());
    let id = created["taskId"].as_str().unwrap().to_owned();
    let get = json!({"taskId": id});
    let task = stdio_modern(&mut server, 3, "tasks/get", get.clone(), true)["result"].clone();
    assert_eq!(task["taskId"], id.as_str());
    assert_eq!(task["status"], "working");
    let ack = stdio_modern(&mut server, 4, "tasks/cancel", get.clone(), true);
    assert_eq!(ack["result"], json!({"resultType": "complete"}));
    let task = stdio_modern(&mut server, 5, "tasks/get", get, true)["result"].clone();
    assert_eq!(task["status"], "cancelled");

    let created = stdio_modern(&mut server, 6, "tools/call", call(0), true)["result"].clone();
    let get = json!({"taskId": created["taskId"]});
    let mut next = 7;
    let done = settled(|| {
        next += 1;
        stdio_modern(&mut server, next, "tasks/get", get.clone(), true)["result"].clone()
    });
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["result"]["structuredContent"]["milisegundos_esperados"].is_u64());

    let removed = stdio_modern(&mut server, 99, "tasks/result", get, true);
    assert_eq!(removed["error"]["code"], -32601);
}

#[test]
fn stdio_without_the_extension_answers_calls_as_before() {
    let mut server = Server::example();
    let call = json!({"name": "esperar", "arguments": {"milisegundos": 0}});
    let answer = stdio_modern(&mut server, 1, "tools/call", call, false);
    assert!(answer["result"]["content"].is_array(), "{answer}");
    assert!(answer["result"].get("taskId").is_none());
    let refused = stdio_modern(&mut server, 2, "tasks/get", json!({"taskId": "x"}), false);
    assert_eq!(refused["error"]["code"], -32021);
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"][EXTENSION],
        json!({})
    );
    // A legacy session that names the extension in `initialize` (as the Inspector does) still
    // gets its results: the extension is declared per request, in 2026-07-28.
    let mut legacy = Server::example();
    legacy.send_json(&json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": with_extension(),
                   "clientInfo": {"name": "it", "version": "1"}}
    }));
    let init = legacy.recv();
    assert!(
        init["result"]["capabilities"].get("extensions").is_none(),
        "{init}"
    );
    legacy.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let answer = legacy.call(1, "esperar", json!({"milisegundos": 0}));
    assert!(answer["result"]["content"].is_array(), "{answer}");
    assert!(answer["result"].get("taskId").is_none());
}

// --- Streamable HTTP ------------------------------------------------------------------------

/// A 2026-07-28 request declaring the extension, with the routing headers it needs
/// (`Mcp-Name` is the task for `tasks/*`); `name` overrides that header.
fn modern(server: &HttpServer, method: &str, params: Value, name: Option<&str>) -> Response {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": with_extension(),
    });
    let routed = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut request = client()
        .post(&server.url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(routed) = name.map(str::to_owned).or(routed) {
        request = request.header("mcp-name", routed);
    }
    request
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .unwrap()
}

fn result(response: Response) -> Value {
    assert_eq!(response.status(), 200);
    answer(response, 1)["result"].clone()
}

#[test]
fn http_stateless_tasks_are_polled_with_the_task_as_routing_header() {
    let server = HttpServer::spawn(example_bin(), &["--http", "127.0.0.1:0"], &[]);
    let args = json!({"name": "esperar", "arguments": {"milisegundos": 60_000}});
    let created = result(modern(&server, "tools/call", args, None));
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();

    let task = result(modern(&server, "tasks/get", json!({"taskId": id}), None));
    assert_eq!(task["status"], "working");
    assert_eq!(task["resultType"], "complete");
    let wrong = modern(&server, "tasks/get", json!({"taskId": id}), Some("otra"));
    assert_eq!(wrong.status(), 400);
    assert_eq!(answer(wrong, 1)["error"]["code"], -32020);

    let ack = result(modern(&server, "tasks/cancel", json!({"taskId": id}), None));
    assert_eq!(ack, json!({"resultType": "complete"}));
    let task = result(modern(&server, "tasks/get", json!({"taskId": id}), None));
    assert_eq!(task["status"], "cancelled");

    let args = json!({"name": "esperar", "arguments": {"milisegundos": 0}});
    let id = result(modern(&server, "tools/call", args, None))["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let done = settled(|| result(modern(&server, "tasks/get", json!({"taskId": id}), None)));
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["resultType"], "complete");
}

/// The stream's lines up to the first containing `needle` (all of them if it never comes).
fn lines_until(response: Response, needle: &str) -> Vec<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = std::io::BufReader::new(response);
        let mut line = String::new();
        while std::io::BufRead::read_line(&mut reader, &mut line).unwrap_or(0) > 0 {
            if tx.send(std::mem::take(&mut line)).is_err() {
                return;
            }
        }
    });
    let until = Instant::now() + TIMEOUT;
    let mut seen = Vec::new();
    while let Ok(line) = rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
        let found = line.contains(needle);
        seen.push(line);
        if found {
            break;
        }
    }
    seen
}

#[test]
fn http_listeners_hear_of_the_tasks_they_asked_for() {
    let server = HttpServer::spawn(example_bin(), &["--http", "127.0.0.1:0"], &[]);
    let args = json!({"name": "esperar", "arguments": {"milisegundos": 60_000}});
    let id = result(modern(&server, "tools/call", args, None))["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let filter = json!({"notifications": {"taskIds": [id, "desconocida"]}});
    let stream = modern(&server, "subscriptions/listen", filter, None);
    assert_eq!(stream.status(), 200);
    result(modern(&server, "tasks/cancel", json!({"taskId": id}), None));
    let lines = lines_until(stream, "notifications/tasks");
    let data: Vec<Value> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect();
    assert_eq!(
        data[0]["params"]["notifications"]["taskIds"],
        json!([id]),
        "only the known task is acknowledged: {data:?}"
    );
    let pushed = data.last().unwrap();
    assert_eq!(pushed["method"], "notifications/tasks", "{lines:?}");
    assert_eq!(pushed["params"]["taskId"], id.as_str());
    assert_eq!(pushed["params"]["status"], "cancelled");

    // Asking for task notifications without declaring the extension is refused.
    let mut request = client()
        .post(&server.url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen");
    request = request.json(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
        "params": {"notifications": {"taskIds": [id]}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}}),
    );
    let refused = answer(request.send().unwrap(), 1);
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
}

// --- the fleet server -----------------------------------------------------------------------

/// A fleet map asked for as a task ends with exactly the answer the same call gets without
/// the extension: the task changes how the answer travels, never what it says.
#[test]
fn a_fleet_map_as_a_task_answers_what_the_call_answers() {
    let db = &crate::ground_truth::fixture("minimo").db;
    let mut server = Server::spawn(
        crate::support::flota_bin(),
        &["servir", "--db", db.to_str().unwrap()],
    );
    let call = json!({"name": "mapa_flota", "arguments": {}});
    let plain = stdio_modern(&mut server, 1, "tools/call", call.clone(), false)["result"].clone();
    assert_eq!(plain["content"][1]["type"], "image", "{plain}");
    let created = stdio_modern(&mut server, 2, "tools/call", call, true)["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    let get = json!({"taskId": created["taskId"]});
    let mut next = 3;
    let done = settled(|| {
        next += 1;
        stdio_modern(&mut server, next, "tasks/get", get.clone(), true)["result"].clone()
    });
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"], plain);
}
