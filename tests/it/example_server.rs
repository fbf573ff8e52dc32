//! The example server (`examples/servidor_texto.rs`) over raw wire: its tools, argument
//! validation in each protocol era, out-of-order answers, progress and cancellation.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Server, assert_subset, modern_meta};

#[test]
fn tools_list_describes_every_tool_fully() {
    let mut server = Server::example();
    server.initialize("2025-11-25");
    server.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let tools = server.recv()["result"]["tools"].as_array().unwrap().clone();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "analizar_texto",
            "calcular_estadisticas",
            "informacion_sistema",
            "esperar"
        ]
    );
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        assert!(
            tool["title"].as_str().is_some_and(|t| !t.is_empty()),
            "{name}"
        );
        assert!(
            tool["description"].as_str().is_some_and(|d| d.len() > 20),
            "{name}"
        );
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
        assert_eq!(tool["inputSchema"]["additionalProperties"], false, "{name}");
        assert!(tool["inputSchema"]["properties"].is_object(), "{name}");
        assert_eq!(tool["outputSchema"]["type"], "object", "{name}");
        assert_eq!(tool["annotations"]["readOnlyHint"], true, "{name}");
        assert_eq!(tool["annotations"]["openWorldHint"], false, "{name}");
        assert!(!tool.to_string().contains("$ref"), "{name}");
    }
}

#[test]
fn older_versions_get_only_the_fields_they_know() {
    let mut server = Server::example();
    server.initialize("2024-11-05");
    server.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let tool = server.recv()["result"]["tools"][0].clone();
    let keys: Vec<&String> = tool.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["name", "description", "inputSchema"]);
    let answer = server.call(2, "analizar_texto", json!({"texto": "a b"}));
    assert!(answer["result"].get("structuredContent").is_none());
    assert_eq!(answer["result"]["content"][0]["type"], "text");
}

#[test]
fn tools_compute_and_mirror_structured_content_in_text() {
    let mut server = Server::example();
    server.initialize("2025-11-25");
    let answer = server.call(
        1,
        "analizar_texto",
        json!({"texto": "Hola Mundo\nÁrbol ñandú"}),
    );
    let result = &answer["result"];
    assert_eq!(
        result["structuredContent"],
        json!({"caracteres": 22, "palabras": 4, "lineas": 2,
               "mayusculas": "HOLA MUNDO\nÁRBOL ÑANDÚ", "minusculas": "hola mundo\nárbol ñandú"})
    );
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, result["structuredContent"]);
    assert!(result.get("isError").is_none());

    let answer = server.call(
        2,
        "calcular_estadisticas",
        json!({"numeros": [4, 8, 15, 16, 23, 42]}),
    );
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"cantidad": 6, "suma": 108.0, "media": 18.0, "minimo": 4.0, "maximo": 42.0})
    );

    // Absent arguments are {}.
    server.send(
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"informacion_sistema"}}"#,
    );
    let info = server.recv()["result"]["structuredContent"].clone();
    assert_eq!(info["sistema_operativo"], std::env::consts::OS);
    assert!(info["entorno"].as_str().unwrap().starts_with("rustc"));
    let dump = info.to_string();
    assert!(
        !dump.contains("PATH") && !dump.contains("HOME="),
        "leaks the environment: {dump}"
    );
}

/// Invalid arguments: `-32602` for sessions up to 2025-06-18 (what those revisions call for),
/// an `isError` result naming the argument from 2025-11-25 on and in the modern era.
#[test]
fn argument_errors_depend_on_the_protocol_version() {
    let cases = [
        (
            "analizar_texto",
            json!({}),
            "falta el argumento obligatorio 'texto'",
        ),
        (
            "analizar_texto",
            json!({"texto": 123}),
            "'texto' debe ser un texto",
        ),
        (
            "analizar_texto",
            json!({"texto": "a", "otro": 1}),
            "argumento desconocido 'otro'",
        ),
        (
            "calcular_estadisticas",
            json!({"numeros": []}),
            "'numeros' no puede ser una lista vacía",
        ),
        (
            "calcular_estadisticas",
            json!({"numeros": "1,2"}),
            "'numeros' debe ser una lista",
        ),
        (
            "calcular_estadisticas",
            json!({"numeros": [1, true]}),
            "'numeros[1]' debe ser un número",
        ),
        (
            "esperar",
            json!({"milisegundos": "30"}),
            "'milisegundos' debe ser un número entero",
        ),
        (
            "esperar",
            json!({"milisegundos": true}),
            "'milisegundos' debe ser un número entero",
        ),
        (
            "esperar",
            json!({"milisegundos": 1.5}),
            "'milisegundos' debe ser un número entero",
        ),
        (
            "esperar",
            json!({"milisegundos": -1}),
            "'milisegundos' debe ser ≥ 0",
        ),
        (
            "esperar",
            json!({"milisegundos": 70000}),
            "'milisegundos' debe ser ≤ 60000",
        ),
        (
            "informacion_sistema",
            json!({"x": 1}),
            "esta herramienta no recibe argumentos",
        ),
    ];
    let mut legacy = Server::example();
    legacy.initialize("2025-06-18");
    let mut current = Server::example();
    current.initialize("2025-11-25");
    let mut modern = Server::example();
    for (i, (tool, arguments, message)) in cases.iter().enumerate() {
        let id = i as i64;
        let answer = legacy.call(id, tool, arguments.clone());
        assert_eq!(answer["error"]["code"], -32602, "{tool} {arguments}");
        assert!(
            answer["error"]["data"].as_str().unwrap().contains(message),
            "{answer}"
        );

        let answer = current.call(id, tool, arguments.clone());
        assert_eq!(
            answer["result"]["isError"], true,
            "{tool} {arguments}: {answer}"
        );
        let text = answer["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(message), "{text}");
        assert!(answer["result"].get("structuredContent").is_none());

        modern.send_json(&json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": modern_meta()}
        }));
        let answer = modern.recv();
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        assert_eq!(answer["result"]["resultType"], "complete");
    }
    // Malformed calls stay protocol errors in every era.
    for (params, detail) in [
        (json!({"arguments": {}}), "falta 'name'"),
        (json!({"name": 5}), "'name' debe ser un texto"),
        (
            json!({"name": "analizar_texto", "arguments": [1]}),
            "'arguments' debe ser un objeto",
        ),
        (
            json!({"name": "no_existe"}),
            "herramienta desconocida: no_existe",
        ),
    ] {
        current
            .send_json(&json!({"jsonrpc":"2.0","id":"m","method":"tools/call","params": params}));
        let answer = current.recv();
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        assert!(
            answer["error"]["data"].as_str().unwrap().contains(detail),
            "{answer}"
        );
    }
}

#[test]
fn a_slow_call_does_not_block_others_and_answers_come_out_of_order() {
    let mut server = Server::example();
    server.initialize("2025-11-25");
    server.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"esperar","arguments":{"milisegundos":1500}}}"#);
    server.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
    server.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"analizar_texto","arguments":{"texto":"x"}}}"#);
    let ids: Vec<Value> = (0..3).map(|_| server.recv()["id"].clone()).collect();
    assert_eq!(
        ids.last(),
        Some(&json!(1)),
        "the slow call must answer last: {ids:?}"
    );
    assert!(ids.contains(&json!(2)) && ids.contains(&json!(3)));
}

#[test]
fn progress_echoes_the_token_increases_and_precedes_the_response() {
    for token in [r#""tok-1""#, "7", "123456789012345678901234567890"] {
        let mut server = Server::example();
        server.initialize("2025-11-25");
        server.send(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"_meta":{{"progressToken":{token}}},"name":"esperar","arguments":{{"milisegundos":400}}}}}}"#
        ));
        let mut progress = Vec::new();
        loop {
            let line = server.recv_line();
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["method"] == "notifications/progress" {
                assert!(
                    line.contains(&format!(r#""progressToken":{token}"#)),
                    "token not echoed verbatim: {line}"
                );
                progress.push(message["params"]["progress"].as_f64().unwrap());
            } else {
                assert_eq!(message["id"], 1);
                break;
            }
        }
        assert!(!progress.is_empty(), "no progress for token {token}");
        assert!(progress.windows(2).all(|w| w[0] < w[1]), "{progress:?}");
        // Nothing after the response.
        let (_, rest) = server.finish();
        assert!(rest.is_empty(), "{rest:?}");
    }
}

#[test]
fn no_progress_without_a_token() {
    let mut server = Server::example();
    server.initialize("2025-11-25");
    let answer = server.call(1, "esperar", json!({"milisegundos": 200}));
    assert_eq!(
        answer["result"]["structuredContent"]["milisegundos_esperados"]
            .as_u64()
            .map(|m| m >= 200),
        Some(true)
    );
}

#[test]
fn a_cancelled_call_gets_no_answer_and_the_server_goes_on() {
    let mut server = Server::example();
    server.initialize("2025-11-25");
    // A wait no slow machine sees the end of before the cancellation (it once was 3 s): the
    // cancellation ends it.
    server.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":{"progressToken":"p5"},"name":"esperar","arguments":{"milisegundos":60000}}}"#);
    // Wait until it is surely running (its first progress notification).
    let first = server.recv();
    assert_eq!(first["method"], "notifications/progress");
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"el usuario se arrepintió"}}"#);
    server.send(r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#);
    // Progress already queued may still arrive before the ping answer, never after it.
    loop {
        let message = server.recv();
        if message["id"] == 6 {
            break;
        }
        assert_eq!(message["method"], "notifications/progress", "{message}");
    }
    let answer = server.call(7, "analizar_texto", json!({"texto": "sigue"}));
    assert_eq!(answer["result"]["structuredContent"]["palabras"], 1);
    server.expect_silence(Duration::from_millis(300));
    let (status, rest) = server.finish();
    assert!(status.success());
    assert!(rest.is_empty(), "the cancelled call answered: {rest:?}");
}

#[test]
fn cancelling_an_unknown_or_finished_request_is_ignored() {
    let mut server = Server::example();
    server.initialize("2025-11-25");
    server.call(1, "analizar_texto", json!({"texto": "a"}));
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#);
    server.send(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nunca"}}"#,
    );
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#);
    server.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
    assert_eq!(server.recv()["id"], 2);
}

#[test]
fn eof_abandons_a_long_call_and_exits_zero() {
    let mut server = Server::example();
    server.initialize("2025-11-25");
    // 60 s of work; the process must still exit long before that once stdin closes.
    server.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"esperar","arguments":{"milisegundos":60000}}}"#);
    server.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
    assert_eq!(server.recv()["id"], 2);
    let (status, rest) = server.finish(); // panics if not exited within the harness timeout
    assert_eq!(status.code(), Some(0));
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn replay_file_runs_through_the_server() {
    let mut server = Server::example();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/requests.jsonl"
    ))
    .unwrap();
    let mut requests = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let message: Value = serde_json::from_str(line).unwrap();
        requests += usize::from(message.get("id").is_some());
        server.send(line);
    }
    let (status, lines) = server.finish();
    assert!(status.success());
    assert_eq!(lines.len(), requests);
    let by_id = |id: i64| -> Value {
        lines
            .iter()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|m| m["id"] == id)
            .unwrap()
    };
    assert_subset(
        &by_id(4),
        &json!({"result": {"structuredContent": {"media": 18.0}}}),
    );
    assert_subset(&by_id(6), &json!({"result": {"isError": true}}));
    assert_subset(&by_id(8), &json!({"error": {"code": -32602}}));
    assert_subset(&by_id(9), &json!({"error": {"code": -32601}}));
}
