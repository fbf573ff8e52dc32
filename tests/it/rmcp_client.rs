//! The official Rust SDK (rmcp 3.11) as a client: it opens `initialize` with 2026-07-28 and
//! must accept the legacy answer; its discover lifecycle exercises the modern era.

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::json;

use crate::support::{example_bin, flota_bin};

fn arguments(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    value.as_object().unwrap().clone()
}

#[tokio::test]
async fn rmcp_connects_lists_and_calls() {
    let cmd = tokio::process::Command::new(example_bin()).configure(|_| {});
    let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let info = client.peer_info().expect("initialize result");
    assert_eq!(info.protocol_version.to_string(), "2025-11-25");
    assert_eq!(info.server_info.as_ref().unwrap().name, "servidor-texto");

    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 4);
    assert!(tools.iter().all(|t| t.output_schema.is_some()));

    let res = client
        .call_tool(
            CallToolRequestParams::new("calcular_estadisticas")
                .with_arguments(arguments(json!({"numeros": [1, 2, 3, 4]}))),
        )
        .await
        .unwrap();
    assert_ne!(res.is_error, Some(true));
    assert_eq!(res.structured_content.unwrap()["media"], 2.5);

    let res = client
        .call_tool(
            CallToolRequestParams::new("analizar_texto").with_arguments(arguments(json!({}))),
        )
        .await
        .unwrap();
    assert_eq!(res.is_error, Some(true));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn rmcp_connects_to_flota_servir() {
    let cmd = tokio::process::Command::new(flota_bin()).configure(|cmd| {
        cmd.args(["servir", "--db", "/nonexistent/flota.db"]);
    });
    let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let info = client.peer_info().expect("initialize result");
    assert_eq!(info.server_info.as_ref().unwrap().name, "flota");
    assert!(info.instructions.as_deref().is_some_and(|i| !i.is_empty()));
    client.list_all_tools().await.unwrap();
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn rmcp_discover_lifecycle_speaks_the_modern_era() {
    let cmd = tokio::process::Command::new(example_bin()).configure(|_| {});
    let client = ()
        .serve_with_lifecycle(
            TokioChildProcess::new(cmd).unwrap(),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 4);
    let res = client
        .call_tool(
            CallToolRequestParams::new("analizar_texto")
                .with_arguments(arguments(json!({"texto": "uno dos tres"}))),
        )
        .await
        .unwrap();
    assert_eq!(res.structured_content.unwrap()["palabras"], 3);
    client.cancel().await.unwrap();
}

/// rmcp's Streamable HTTP client against `flota servir --http`: with the token it connects,
/// lists and calls every tool, reads a resource and gets a prompt; without it, it is refused.
#[tokio::test(flavor = "multi_thread")]
async fn rmcp_over_streamable_http() {
    use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let server = crate::http::HttpServer::flota(&["--token", "rmcp-secreto"]);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = StreamableHttpClientTransportConfig::with_uri(server.url.clone())
        .auth_header("rmcp-secreto");
    let transport = StreamableHttpClientTransport::from_config(config);
    let client = ().serve(transport).await.unwrap();
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "flota");

    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 8);
    for (name, args) in crate::http::every_tool_once() {
        let res = client
            .call_tool(CallToolRequestParams::new(name).with_arguments(arguments(args)))
            .await
            .unwrap();
        assert_ne!(res.is_error, Some(true), "{name}: {res:?}");
    }
    let read = client
        .read_resource(ReadResourceRequestParams::new("flota://unidades"))
        .await
        .unwrap();
    assert_eq!(read.contents.len(), 1);
    let prompt = client
        .get_prompt(
            GetPromptRequestParams::new("estado_unidad")
                .with_arguments(arguments(json!({"placa": "p123bcd"}))),
        )
        .await
        .unwrap();
    assert!(!prompt.messages.is_empty());
    client.cancel().await.unwrap();

    let refused = StreamableHttpClientTransport::from_uri(server.url.clone());
    assert!(
        ().serve(refused).await.is_err(),
        "connected without the token"
    );
}
