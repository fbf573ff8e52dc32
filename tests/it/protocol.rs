//! Raw-wire protocol tests against the real `flota servir` binary.
//!
//! Covers the protocol's core cases (the handshake and version negotiation, lifecycle errors,
//! ping, malformed requests, notifications and responses that get no answer) plus the edges:
//! id 0, string and huge ids, CRLF, invalid UTF-8, an over-long line, batches, pre-init
//! requests, `server/discover`, the modern era, and EOF.

use serde_json::{Value, json};

use crate::support::{Server, assert_subset, modern_meta};

const INIT_0618: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// Sends `line` to a fresh server (after the handshake when `ready`) and compares the single
/// answer with `expected` (a subset), or asserts silence when `expected` is null.
fn check(ready: bool, line: &str, expected: Value) {
    let mut server = Server::flota();
    if ready {
        server.initialize("2025-11-25");
    }
    server.send(line);
    if expected.is_null() {
        // A notification: the next answer must be the ping's, proving nothing came before.
        server.send(r#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#);
        let next = server.recv();
        assert_eq!(next["id"], "after", "{line} was answered: {next}");
    } else {
        let answer = server.recv();
        assert_subset(&answer, &expected);
        let has_result = answer.get("result").is_some();
        let has_error = answer.get("error").is_some();
        assert!(has_result ^ has_error, "result xor error: {answer}");
    }
}

fn error(id: Value, code: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code}})
}

#[test]
fn handshake_answers_once_with_the_requested_version() {
    let mut server = Server::flota();
    server.send(INIT_0618);
    server.send(INITIALIZED);
    server.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
    let init = server.recv();
    assert_eq!(init["id"], 1);
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    // Declared: what is implemented. No `logging` (clients would send setLevel), and the
    // resource list is announced again when the database is replaced.
    assert_eq!(
        init["result"]["capabilities"],
        json!({
            "tools": {"listChanged": false},
            "prompts": {"listChanged": false},
            "resources": {"subscribe": false, "listChanged": true},
            "completions": {},
            "extensions": {"io.modelcontextprotocol/ui": {}}
        })
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "flota");
    assert!(init["result"]["serverInfo"]["title"].is_string());
    assert!(
        init["result"]["instructions"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
    assert_eq!(
        server.recv(),
        json!({"jsonrpc": "2.0", "id": 2, "result": {}})
    );
    let (status, rest) = server.finish();
    assert!(status.success());
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn version_negotiation_echoes_supported_and_offers_latest_otherwise() {
    for (asked, answered) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2024-11-05"),
        ("1999-01-01", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
    ] {
        let mut server = Server::flota();
        let result = server.initialize(asked);
        assert_eq!(result["protocolVersion"], answered, "asked {asked}");
    }
}

#[test]
fn lifecycle_errors_are_immediate() {
    // Before initialize, tools/list is refused at once, id echoed.
    check(
        false,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#,
        error(json!(7), -32600),
    );
    check(
        false,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}"#,
        error(json!(7), -32600),
    );
    // Missing protocolVersion.
    check(
        false,
        r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{}}"#,
        error(json!(3), -32602),
    );
    check(
        false,
        r#"{"jsonrpc":"2.0","id":3,"method":"initialize"}"#,
        error(json!(3), -32602),
    );
    // Unknown methods are -32601 in every state; known ones wait for the handshake.
    check(
        false,
        r#"{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage"}"#,
        error(json!(4), -32601),
    );
    check(
        false,
        r#"{"jsonrpc":"2.0","id":4,"method":"resources/list"}"#,
        error(json!(4), -32600),
    );
    check(
        true,
        r#"{"jsonrpc":"2.0","id":4,"method":"recursos/listar"}"#,
        error(json!(4), -32601),
    );
    check(
        true,
        r#"{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"info"}}"#,
        error(json!(4), -32601),
    );
    // A request to a notification method is not a notification.
    check(
        true,
        r#"{"jsonrpc":"2.0","id":5,"method":"notifications/initialized"}"#,
        error(json!(5), -32601),
    );
}

#[test]
fn tools_before_initialized_and_double_initialize() {
    let mut server = Server::flota();
    server.send(INIT_0618);
    server.recv();
    server.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    assert_subset(&server.recv(), &error(json!(2), -32600));
    server.send(INITIALIZED);
    server.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#);
    assert!(server.recv()["result"]["tools"].is_array());
    server.send(&INIT_0618.replace("\"id\":1", "\"id\":4"));
    assert_subset(&server.recv(), &error(json!(4), -32600));
}

#[test]
fn ping_works_in_every_state() {
    let mut server = Server::flota();
    server.send(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert_eq!(
        server.recv_line(),
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
    );
    server.send(INIT_0618.replace("\"id\":1", "\"id\":2").as_str());
    server.recv();
    server.send(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#);
    assert_eq!(
        server.recv_line(),
        r#"{"jsonrpc":"2.0","id":3,"result":{}}"#
    );
    server.send(INITIALIZED);
    server.send(r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#);
    assert_eq!(
        server.recv_line(),
        r#"{"jsonrpc":"2.0","id":4,"result":{}}"#
    );
}

#[test]
fn malformed_and_invalid_requests() {
    check(true, "{not json", error(Value::Null, -32700));
    check(
        true,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping""#,
        error(Value::Null, -32700),
    );
    check(true, "[1,2,3]", error(Value::Null, -32600));
    check(
        true,
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
        error(Value::Null, -32600),
    );
    check(true, r#"{"id":1,"method":"ping"}"#, error(json!(1), -32600));
    check(true, r#"{"jsonrpc":"2.0","id":1}"#, error(json!(1), -32600));
    check(
        true,
        r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
        error(json!(1), -32600),
    );
    check(
        true,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}"#,
        error(json!(1), -32600),
    );
    check(
        true,
        r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
        error(Value::Null, -32600),
    );
    check(
        true,
        r#"{"jsonrpc":"1.0","id":9,"method":"ping"}"#,
        error(json!(9), -32600),
    );
    // Errors carry the standard English message and a Spanish detail.
    let mut server = Server::flota();
    server.send("{not json");
    let answer = server.recv();
    assert_eq!(answer["error"]["message"], "Parse error");
    assert!(
        answer["error"]["data"]
            .as_str()
            .is_some_and(|d| d.contains("JSON"))
    );
}

#[test]
fn notifications_and_responses_are_never_answered() {
    for line in [
        INITIALIZED,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#,
        r#"{"jsonrpc":"2.0","method":"metodo/desconocido"}"#,
        r#"{"jsonrpc":"2.0","method":"ping","params":"mal"}"#,
        r#"{"jsonrpc":"2.0","id":50,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":51,"error":{"code":-1,"message":"x"}}"#,
    ] {
        check(true, line, Value::Null);
    }
    // Answer ids are exactly the requests' ids.
    let mut server = Server::flota();
    server.send(INIT_0618);
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#);
    server.send(r#"{"jsonrpc":"2.0","method":"sin/id"}"#);
    server.send(INITIALIZED);
    server.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    let (status, lines) = server.finish();
    assert!(status.success());
    let ids: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].clone())
        .collect();
    assert_eq!(ids, vec![json!(1), json!(2)]);
}

#[test]
fn ids_keep_their_exact_json_type() {
    let mut server = Server::flota();
    for (id, echoed) in [
        ("0", "0"),
        ("1", "1"),
        ("-5", "-5"),
        (r#""abc""#, r#""abc""#),
        (r#""7""#, r#""7""#),
        (r#""""#, r#""""#),
        ("9007199254740993", "9007199254740993"),
        ("18446744073709551616", "18446744073709551616"),
        (
            "123456789012345678901234567890",
            "123456789012345678901234567890",
        ),
    ] {
        server.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
        assert_eq!(
            server.recv_line(),
            format!(r#"{{"jsonrpc":"2.0","id":{echoed},"result":{{}}}}"#)
        );
    }
    // Ids that are neither string nor integer are invalid; the answer cannot echo them.
    for id in ["3.5", "null", "true", "[1]", "1e3"] {
        server.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
        assert_subset(&server.recv(), &error(Value::Null, -32600));
    }
}

#[test]
fn crlf_and_blank_lines_are_tolerated() {
    let mut server = Server::flota();
    server.send_bytes(b"\r\n\n   \n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n\r\n");
    assert_eq!(
        server.recv_line(),
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
    );
    server.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\r\n");
    assert_eq!(
        server.recv_line(),
        r#"{"jsonrpc":"2.0","id":2,"result":{}}"#
    );
}

#[test]
fn invalid_utf8_is_a_parse_error_and_the_server_goes_on() {
    let mut server = Server::flota();
    server.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffing\"}\n");
    let answer = server.recv();
    assert_subset(&answer, &error(Value::Null, -32700));
    assert!(answer["error"]["data"].as_str().unwrap().contains("UTF-8"));
    server.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
    assert_eq!(server.recv()["id"], 2);
}

#[test]
fn an_over_long_line_is_refused_and_skipped() {
    let mut server = Server::flota();
    // 17 MiB inside a JSON string: over the 16 MiB cap.
    let mut line = br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":""#.to_vec();
    line.extend(std::iter::repeat_n(b'a', 17 * 1024 * 1024));
    line.extend_from_slice(b"\"}}\n");
    server.send_bytes(&line);
    let answer = server.recv();
    assert_subset(&answer, &error(Value::Null, -32600));
    assert!(
        answer["error"]["data"].as_str().unwrap().contains("límite"),
        "{answer}"
    );
    server.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
    assert_eq!(server.recv()["id"], 2);
    // A big line under the cap is fine.
    let mut line = br#"{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":""#.to_vec();
    line.extend(std::iter::repeat_n(b'b', 2 * 1024 * 1024));
    line.extend_from_slice(b"\"}}\n");
    server.send_bytes(&line);
    assert_eq!(
        server.recv_line(),
        r#"{"jsonrpc":"2.0","id":3,"result":{}}"#
    );
}

#[test]
fn server_discover_in_any_state() {
    let discover = json!({
        "jsonrpc": "2.0", "id": "server-discover-probe-1", "method": "server/discover",
        "params": {"_meta": modern_meta()}
    });
    let mut server = Server::flota();
    server.send_json(&discover);
    let answer = server.recv();
    assert_eq!(answer["id"], "server-discover-probe-1");
    let result = &answer["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["supportedVersions"],
        json!([
            "2026-07-28",
            "2025-11-25",
            "2025-06-18",
            "2025-03-26",
            "2024-11-05"
        ])
    );
    assert_eq!(
        result["capabilities"]["tools"],
        json!({"listChanged": false})
    );
    assert_eq!(result["cacheScope"], "public");
    assert!(result["ttlMs"].as_u64().is_some());
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "flota"
    );
    // After a legacy handshake it still answers.
    server.initialize("2025-11-25");
    server.send_json(&discover);
    assert_eq!(server.recv()["result"]["resultType"], "complete");
}

#[test]
fn modern_requests_are_served_without_a_handshake() {
    let mut server = Server::flota();
    server.send_json(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}
    }));
    let answer = server.recv();
    assert_eq!(answer["result"]["tools"].as_array().unwrap().len(), 8);
    assert_eq!(answer["result"]["resultType"], "complete");
    assert_eq!(answer["result"]["cacheScope"], "public");
    assert!(answer["result"]["ttlMs"].as_u64().is_some());
    assert!(answer["result"].get("nextCursor").is_none());

    // An unknown modern version names what is supported.
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    server
        .send_json(&json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta": meta}}));
    let answer = server.recv();
    assert_eq!(answer["error"]["code"], -32022);
    assert_eq!(answer["error"]["data"]["requested"], "2099-01-01");
    assert!(
        answer["error"]["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );

    // Missing required _meta member.
    let mut meta = modern_meta();
    meta.as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    server
        .send_json(&json!({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta": meta}}));
    assert_subset(&server.recv(), &error(json!(3), -32602));

    // A modern call to an unknown tool is still -32602.
    server.send_json(&json!({
        "jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "nada", "arguments": {}, "_meta": modern_meta()}
    }));
    assert_subset(&server.recv(), &error(json!(4), -32602));
}

#[test]
fn tools_list_is_one_page_and_rejects_cursors() {
    let mut server = Server::flota();
    server.initialize("2025-11-25");
    server.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#);
    let answer = server.recv();
    assert!(answer["result"]["tools"].is_array());
    assert!(answer["result"].get("nextCursor").is_none());
    server.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"abc"}}"#);
    assert_subset(&server.recv(), &error(json!(2), -32602));
}

#[test]
fn eof_exits_zero_promptly() {
    let mut server = Server::flota();
    server.initialize("2025-11-25");
    server.send(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    let (status, rest) = server.finish();
    assert_eq!(status.code(), Some(0));
    assert_eq!(rest.len(), 1);
}

#[test]
fn stdout_carries_only_protocol_even_when_verbose() {
    let mut server = Server::spawn(
        crate::support::flota_bin(),
        &["servir", "--verbose", "--db", "/nonexistent.db"],
    );
    server.initialize("2025-11-25");
    server.send("{oops");
    server.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let (status, lines) = server.finish();
    // finish() checked every line is a JSON-RPC object.
    assert!(status.success());
    assert_eq!(lines.len(), 2);
}
