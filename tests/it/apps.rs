//! The MCP Apps extension (`io.modelcontextprotocol/ui`) over raw JSON: the views as `ui://`
//! resources with their metadata, the map tools pointing at them, and the negotiation — a
//! client that declares the extension gets the view's data, any other client exactly the text
//! and the PNG it got before.

use serde_json::{Value, json};

use crate::ground_truth::fixture;
use crate::support::{Server, flota_bin};

const MIME: &str = "text/html;profile=mcp-app";

fn served(env: &[(&str, &str)]) -> Server {
    let fx = fixture("minimo");
    Server::spawn_with_env(
        flota_bin(),
        &["servir", "--db", fx.db.to_str().unwrap()],
        env,
    )
}

/// Initialises with `capabilities` as the client's.
fn initialize(server: &mut Server, capabilities: Value) -> Value {
    server.send_json(&json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": capabilities,
                   "clientInfo": {"name": "it", "version": "1"}}
    }));
    let answer = server.recv();
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    answer["result"].clone()
}

fn request(server: &mut Server, id: i64, method: &str, params: Value) -> Value {
    server.send_json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    let answer = server.recv();
    assert_eq!(answer["id"], id, "{answer}");
    answer["result"].clone()
}

fn with_ui() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": [MIME]}}})
}

#[test]
fn the_views_are_resources_with_the_extensions_metadata() {
    let mut server = served(&[]);
    let init = initialize(&mut server, with_ui());
    assert_eq!(
        init["capabilities"]["extensions"],
        json!({"io.modelcontextprotocol/ui": {}})
    );
    let tools = request(&mut server, 1, "tools/list", json!({}));
    let meta = |name: &str| {
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()["_meta"]
            .clone()
    };
    assert_eq!(
        meta("mapa_recorrido")["ui"]["resourceUri"],
        "ui://flota/recorrido"
    );
    assert_eq!(meta("mapa_flota")["ui"]["resourceUri"], "ui://flota/flota");
    assert_eq!(meta("posicion_actual"), Value::Null);
    for (id, uri, title) in [
        (
            2,
            "ui://flota/recorrido",
            "<title>Recorrido del día</title>",
        ),
        (3, "ui://flota/flota", "<title>Flota ahora</title>"),
    ] {
        let read = request(&mut server, id, "resources/read", json!({"uri": uri}));
        let content = &read["contents"][0];
        assert_eq!(content["uri"], uri);
        assert_eq!(content["mimeType"], MIME);
        let html = content["text"].as_str().unwrap();
        assert!(
            html.starts_with("<!doctype html>") && html.contains(title),
            "{uri}"
        );
        assert!(html.len() < 400 * 1024, "{uri}: {} bytes", html.len());
        // No tiles configured: no outside origin in the CSP (the host's default applies).
        assert_eq!(
            content["_meta"],
            json!({"ui": {"prefersBorder": true}}),
            "{uri}"
        );
    }
    let listed = request(&mut server, 4, "resources/list", json!({}));
    let view = listed["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["uri"] == "ui://flota/flota")
        .unwrap()
        .clone();
    assert_eq!(view["mimeType"], MIME);
}

#[test]
fn a_named_tile_server_is_declared_in_the_csp_and_reaches_the_view() {
    let mut server = served(&[("FLOTA_TILES_URL", "http://127.0.0.1:9/{z}/{x}/{y}.png")]);
    initialize(&mut server, with_ui());
    let read = request(
        &mut server,
        1,
        "resources/read",
        json!({"uri": "ui://flota/recorrido"}),
    );
    assert_eq!(
        read["contents"][0]["_meta"]["ui"]["csp"],
        json!({"resourceDomains": ["http://127.0.0.1:9"]})
    );
    let flota = server.call(2, "mapa_flota", json!({}));
    assert_eq!(
        flota["result"]["structuredContent"]["vista"]["teselas"]["plantilla"],
        "http://127.0.0.1:9/{z}/{x}/{y}.png"
    );
}

/// The content blocks' types and the parsed text block.
fn blocks(result: &Value) -> (Vec<String>, Value) {
    let content = result["content"].as_array().unwrap();
    let types = content
        .iter()
        .map(|c| c["type"].as_str().unwrap().to_owned())
        .collect();
    let text = serde_json::from_str(content[0]["text"].as_str().unwrap()).unwrap();
    (types, text)
}

#[test]
fn only_a_client_with_the_extension_gets_the_views_data() {
    let calls = [
        (
            "mapa_recorrido",
            json!({"placa": "P-456DEF", "fecha": "ayer"}),
        ),
        ("mapa_flota", json!({})),
    ];
    let mut plain = served(&[]);
    // Declaring the extension without the views' type is not rendering them.
    initialize(
        &mut plain,
        json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html"]}}}),
    );
    let mut apps = served(&[]);
    initialize(&mut apps, with_ui());
    for (id, (tool, args)) in (1..).zip(calls) {
        let without = plain.call(id, tool, args.clone())["result"].clone();
        let with = apps.call(id, tool, args)["result"].clone();
        assert_ne!(without["isError"], true, "{tool}: {without}");
        let (types, text) = blocks(&without);
        assert_eq!(types, ["text", "image"], "{tool}");
        assert_eq!(text, without["structuredContent"], "{tool}");
        assert!(
            without["structuredContent"].get("vista").is_none(),
            "{tool}"
        );

        let (types, text) = blocks(&with);
        assert_eq!(types, ["text", "image"], "{tool}");
        let vista = &with["structuredContent"]["vista"];
        assert_eq!(vista["version"], 1, "{tool}");
        assert!(vista["geocercas"].as_array().is_some_and(|g| !g.is_empty()));
        // The model's text is the same as a plain client's: the view's data is not in it.
        let mut structured = with["structuredContent"].clone();
        structured.as_object_mut().unwrap().remove("vista");
        assert_eq!(text, structured, "{tool}");
        assert_eq!(text, without["structuredContent"], "{tool}");
        assert_eq!(
            with["content"][1]["data"], without["content"][1]["data"],
            "{tool}: the same PNG"
        );
    }
    let day = apps.call(
        9,
        "mapa_recorrido",
        json!({"placa": "P-456DEF", "fecha": "ayer"}),
    );
    let sc = &day["result"]["structuredContent"];
    let stops = sc["vista"]["eventos"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["tipo"] == "parada")
        .count();
    assert_eq!(stops as u64, sc["paradas"].as_u64().unwrap());
}

/// 2026-07-28: no handshake; each request carries the client's capabilities in its `_meta`,
/// so the view's data follows each request's declaration.
#[test]
fn a_modern_request_negotiates_the_view_in_its_own_meta() {
    let mut server = served(&[]);
    let call = |server: &mut Server, id: i64, capabilities: Value| {
        server.send_json(&json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {
                "name": "mapa_flota", "arguments": {},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": capabilities,
                    "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"}
                }
            }
        }));
        let answer = server.recv();
        assert_eq!(answer["id"], id, "{answer}");
        answer["result"]["structuredContent"].clone()
    };
    let with = call(&mut server, 1, with_ui());
    assert_eq!(with["vista"]["version"], 1, "{with}");
    let without = call(&mut server, 2, json!({}));
    assert!(without.get("vista").is_none());
    assert_eq!(without["total"], with["total"]);
}
