//! The fixtures the official MCP conformance suite (`@modelcontextprotocol/conformance`)
//! expects of a server, on flota's protocol core over Streamable HTTP.
//!
//! The names, texts and shapes are the suite's (its reference "everything server"), so they
//! stay in English. Everything protocol-related — sessions, both eras, streams, logging,
//! questions to the client, input-required results, list changes — is the core's; this file
//! only declares tools, prompts and resources. Run: `cargo run --example servidor_conformidad
//! -- --http 127.0.0.1:3001`, then `npx @modelcontextprotocol/conformance server --url
//! http://127.0.0.1:3001/mcp`.
#![allow(clippy::print_stderr)]

use std::collections::BTreeMap;
use std::time::Duration;

use flota::mcp::{
    self, Annotations, CallContext, Content, HttpOptions, InputRequired, LogLevel, Prompt,
    PromptArgument, PromptDefinition, PromptMessage, PromptReply, RequestInfo, Resource,
    ResourceContents, ResourceDefinition, ResourceError, ResourceTemplate, ServerInfo, Service,
    TaskSettings, TaskSupport, Tasks, TemplateDefinition, Tool, ToolDefinition, ToolError,
    ToolResult,
};
use flota::plumbing::clock::Clock;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// A 1×1 red PNG and a minimal WAV, as the suite's reference server sends.
const IMAGE: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const AUDIO: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

type Handler = Box<dyn Fn(&Value, &CallContext) -> Result<ToolResult, ToolError> + Send + Sync>;

/// What a fixture asks before its call becomes a task (the tasks extension).
type Gather = Box<dyn Fn(&RequestInfo) -> Option<ToolResult> + Send + Sync>;

/// A fixture tool: a definition and a closure.
struct Fixture {
    definition: ToolDefinition,
    handler: Handler,
    gather: Option<Gather>,
}

impl Tool for Fixture {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }
    fn call(&self, arguments: Value, ctx: &CallContext) -> Result<ToolResult, ToolError> {
        (self.handler)(&arguments, ctx)
    }
    fn gather(&self, _arguments: &Value, request: &RequestInfo) -> Option<ToolResult> {
        self.gather.as_ref().and_then(|gather| gather(request))
    }
}

fn empty_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

fn tool(
    name: &str,
    description: &str,
    input_schema: Value,
    handler: impl Fn(&Value, &CallContext) -> Result<ToolResult, ToolError> + Send + Sync + 'static,
) -> Box<dyn Tool> {
    Box::new(fixture(name, description, input_schema, handler))
}

fn fixture(
    name: &str,
    description: &str,
    input_schema: Value,
    handler: impl Fn(&Value, &CallContext) -> Result<ToolResult, ToolError> + Send + Sync + 'static,
) -> Fixture {
    Fixture {
        definition: ToolDefinition {
            name: name.into(),
            title: name.into(),
            description: description.into(),
            input_schema,
            output_schema: None,
            annotations: Annotations::READ_ONLY,
            meta: None,
            requires: None,
            task_support: TaskSupport::Forbidden,
        },
        handler: Box::new(handler),
        gather: None,
    }
}

fn text(text: impl Into<String>) -> ToolResult {
    ToolResult::content(vec![Content::Text(text.into())])
}

fn image() -> Content {
    Content::Image {
        data_base64: IMAGE.into(),
        mime_type: "image/png".into(),
    }
}

fn pause() {
    std::thread::sleep(Duration::from_millis(50));
}

/// An elicitation request for one field of `kind`.
fn ask_for(message: &str, field: &str, kind: &str) -> Value {
    json!({"method": "elicitation/create", "params": {"message": message, "requestedSchema": {
        "type": "object", "properties": {field: {"type": kind}}, "required": [field]}}})
}

fn sample_request(prompt: &str, max_tokens: u32) -> Value {
    json!({"method": "sampling/createMessage", "params": {"messages": [
        {"role": "user", "content": {"type": "text", "text": prompt}}], "maxTokens": max_tokens}})
}

fn answered_text(responses: Option<&Value>, key: &str, field: &str) -> Option<String> {
    let value = &responses?.get(key)?["content"][field];
    Some(value.as_str().unwrap_or("unknown").to_owned())
}

fn nonce() -> String {
    format!("{:x}", rand::random::<u64>())
}

// --- the 2025-11-25 fixtures ------------------------------------------------------------

fn content_tools() -> Vec<Box<dyn Tool>> {
    vec![
        tool(
            "test_simple_text",
            "Tests simple text content response",
            empty_schema(),
            |_, _| Ok(text("This is a simple text response for testing.")),
        ),
        tool(
            "test_image_content",
            "Tests image content response",
            empty_schema(),
            |_, _| Ok(ToolResult::content(vec![image()])),
        ),
        tool(
            "test_audio_content",
            "Tests audio content response",
            empty_schema(),
            |_, _| {
                Ok(ToolResult::content(vec![Content::Audio {
                    data_base64: AUDIO.into(),
                    mime_type: "audio/wav".into(),
                }]))
            },
        ),
        tool(
            "test_embedded_resource",
            "Tests embedded resource content response",
            empty_schema(),
            |_, _| {
                Ok(ToolResult::content(vec![Content::Resource(
                    ResourceContents::text(
                        "test://embedded-resource",
                        "text/plain",
                        "This is an embedded resource content.",
                    ),
                )]))
            },
        ),
        tool(
            "test_multiple_content_types",
            "Tests response with multiple content types (text, image, resource)",
            empty_schema(),
            |_, _| {
                Ok(ToolResult::content(vec![
                    Content::Text("Multiple content types test:".into()),
                    image(),
                    Content::Resource(ResourceContents::text(
                        "test://mixed-content-resource",
                        "application/json",
                        json!({"test": "data", "value": 123}).to_string(),
                    )),
                ]))
            },
        ),
        tool(
            "test_error_handling",
            "Tests error response handling",
            empty_schema(),
            |_, _| {
                Err(ToolError::Failed(
                    "This tool intentionally returns an error for testing".into(),
                ))
            },
        ),
    ]
}

fn streaming_tools() -> Vec<Box<dyn Tool>> {
    vec![
        tool(
            "test_tool_with_logging",
            "Tests tool that emits log messages during execution",
            empty_schema(),
            |_, ctx| {
                for (n, message) in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ]
                .into_iter()
                .enumerate()
                {
                    if n > 0 {
                        pause();
                    }
                    ctx.log(LogLevel::Info, json!(message));
                }
                Ok(text("Tool with logging executed successfully"))
            },
        ),
        tool(
            "test_tool_with_progress",
            "Tests tool that reports progress notifications",
            empty_schema(),
            |_, ctx| {
                for step in [0.0, 50.0, 100.0] {
                    if step > 0.0 {
                        pause();
                    }
                    let message = format!("Completed step {step} of 100");
                    ctx.progress(step, Some(100.0), Some(&message));
                }
                Ok(text("progress complete"))
            },
        ),
        tool(
            "test_reconnection",
            "Tests SSE stream disconnection and client reconnection (SEP-1699)",
            empty_schema(),
            |_, ctx| {
                ctx.drop_connection();
                std::thread::sleep(Duration::from_millis(100));
                Ok(text(
                    "Reconnection test completed successfully. If you received this, the \
                     client properly reconnected after stream closure.",
                ))
            },
        ),
        tool(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
            json_schema_2020_12(),
            |args, _| {
                Ok(text(format!(
                    "JSON Schema 2020-12 tool called with: {args}"
                )))
            },
        ),
    ]
}

fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

fn asking_tools() -> Vec<Box<dyn Tool>> {
    let prompt_schema = json!({"type": "object", "properties": {"prompt": {"type": "string",
        "description": "The prompt to send to the LLM"}}, "required": ["prompt"]});
    let message_schema = json!({"type": "object", "properties": {"message": {"type": "string",
        "description": "The message to show the user"}}, "required": ["message"]});
    vec![
        tool(
            "test_sampling",
            "Tests server-initiated sampling (LLM completion request)",
            prompt_schema,
            |args, ctx| {
                let prompt = args["prompt"].as_str().unwrap_or_default();
                let request = sample_request(prompt, 100);
                Ok(
                    match ctx.ask("sampling/createMessage", request["params"].clone()) {
                        Ok(result) => {
                            let answer =
                                result["content"]["text"].as_str().unwrap_or("No response");
                            text(format!("LLM response: {answer}"))
                        }
                        Err(e) => text(format!("Sampling not supported or error: {e}")),
                    },
                )
            },
        ),
        tool(
            "test_elicitation",
            "Tests server-initiated elicitation (user input request)",
            message_schema,
            |args, ctx| {
                let message = args["message"].as_str().unwrap_or_default();
                let params = json!({"message": message, "requestedSchema": {"type": "object",
                    "properties": {"response": {"type": "string", "description": "User's response"}},
                    "required": ["response"]}});
                Ok(elicited(ctx, params, "User response"))
            },
        ),
        tool(
            "test_elicitation_sep1034_defaults",
            "Tests elicitation with default values per SEP-1034",
            empty_schema(),
            |_, ctx| {
                let params = json!({"message": "Please review and update the form fields with defaults",
                    "requestedSchema": {"type": "object", "required": [], "properties": {
                        "name": {"type": "string", "description": "User name", "default": "John Doe"},
                        "age": {"type": "integer", "description": "User age", "default": 30},
                        "score": {"type": "number", "description": "User score", "default": 95.5},
                        "status": {"type": "string", "description": "User status",
                            "enum": ["active", "inactive", "pending"], "default": "active"},
                        "verified": {"type": "boolean", "description": "Verification status", "default": true}}}});
                Ok(elicited(ctx, params, "Elicitation completed"))
            },
        ),
        tool(
            "test_elicitation_sep1330_enums",
            "Tests elicitation with enum schema improvements per SEP-1330",
            empty_schema(),
            |_, ctx| {
                let titled = |a: &str, b: &str, c: &str| {
                    json!([
                    {"const": "value1", "title": a}, {"const": "value2", "title": b},
                    {"const": "value3", "title": c}])
                };
                let params = json!({"message": "Please select options from the enum fields",
                    "requestedSchema": {"type": "object", "required": [], "properties": {
                        "untitledSingle": {"type": "string", "description": "Select one option",
                            "enum": ["option1", "option2", "option3"]},
                        "titledSingle": {"type": "string", "description": "Select one option with titles",
                            "oneOf": titled("First Option", "Second Option", "Third Option")},
                        "legacyEnum": {"type": "string", "description": "Select one option (legacy)",
                            "enum": ["opt1", "opt2", "opt3"],
                            "enumNames": ["Option One", "Option Two", "Option Three"]},
                        "untitledMulti": {"type": "array", "description": "Select multiple options",
                            "minItems": 1, "maxItems": 3,
                            "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                        "titledMulti": {"type": "array", "description": "Select multiple options with titles",
                            "minItems": 1, "maxItems": 3,
                            "items": {"anyOf": titled("First Choice", "Second Choice", "Third Choice")}}}}});
                Ok(elicited(ctx, params, "Elicitation completed"))
            },
        ),
    ]
}

fn elicited(ctx: &CallContext, params: Value, label: &str) -> ToolResult {
    match ctx.ask("elicitation/create", params) {
        Ok(result) => {
            let content = result.get("content").cloned().unwrap_or(json!({}));
            text(format!(
                "{label}: action={}, content={content}",
                result["action"].as_str().unwrap_or("")
            ))
        }
        Err(e) => text(format!("Elicitation not supported or error: {e}")),
    }
}

// --- the 2026-07-28 fixtures ------------------------------------------------------------

/// A keyed MAC over the request state, so a tampered state is told apart (HMAC-SHA256).
fn mac(secret: &[u8], data: &str) -> String {
    let mut key = [0u8; 64];
    key[..secret.len().min(64)].copy_from_slice(&secret[..secret.len().min(64)]);
    let pad = |byte: u8| key.map(|k| k ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(data.as_bytes())
        .finalize();
    let outer = Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize();
    outer.iter().map(|b| format!("{b:02x}")).collect()
}

fn signed_state(secret: &[u8], payload: Value) -> String {
    let data = payload.to_string();
    json!({"data": data, "hmac": mac(secret, &data)}).to_string()
}

fn verified_state(secret: &[u8], raw: &str) -> Option<Value> {
    let wrapper: Value = serde_json::from_str(raw).ok()?;
    let data = wrapper["data"].as_str()?;
    (wrapper["hmac"].as_str()? == mac(secret, data)).then(|| serde_json::from_str(data).ok())?
}

fn state_of(ctx: &CallContext) -> Option<Value> {
    serde_json::from_str(ctx.request().request_state.as_deref()?).ok()
}

fn input_required_tools() -> Vec<Box<dyn Tool>> {
    let mut missing = fixture(
        "test_missing_capability",
        "Test tool requiring sampling",
        empty_schema(),
        |_, _| Ok(text("Success")),
    );
    missing.definition.requires = Some(json!({"sampling": {}}));
    let mut tools: Vec<Box<dyn Tool>> = vec![Box::new(missing)];
    tools.push(tool(
        "test_input_required_result_elicitation",
        "MRTR: returns InputRequiredResult with elicitation request",
        empty_schema(),
        |_, ctx| {
            let responses = ctx.request().input_responses.as_ref();
            Ok(match answered_text(responses, "user_name", "name") {
                Some(name) => text(format!("Hello, {name}!")),
                None => ToolResult::input_required(
                    json!({"user_name": ask_for("What is your name?", "name", "string")}),
                    None,
                ),
            })
        },
    ));
    tools.push(tool(
        "test_input_required_result_sampling",
        "MRTR: returns InputRequiredResult with sampling request",
        empty_schema(),
        |_, ctx| {
            Ok(match ctx.request().input_responses.as_ref().and_then(|r| r.get("sample_request")) {
                Some(sample) => text(format!(
                    "Sampling result: {}",
                    sample["content"]["text"].as_str().unwrap_or("no response")
                )),
                None => ToolResult::input_required(
                    json!({"sample_request": sample_request("What is the capital of France?", 100)}),
                    None,
                ),
            })
        },
    ));
    tools.push(tool(
        "test_input_required_result_list_roots",
        "MRTR: returns InputRequiredResult with roots/list request",
        empty_schema(),
        |_, ctx| {
            Ok(
                match ctx
                    .request()
                    .input_responses
                    .as_ref()
                    .and_then(|r| r.get("roots_request"))
                {
                    Some(roots) => text(format!(
                        "Found {} root(s)",
                        roots["roots"].as_array().map_or(0, Vec::len)
                    )),
                    None => ToolResult::input_required(
                        json!({"roots_request": {"method": "roots/list", "params": {}}}),
                        None,
                    ),
                },
            )
        },
    ));
    tools.push(tool(
        "test_input_required_result_request_state",
        "MRTR: returns InputRequiredResult with requestState",
        empty_schema(),
        |_, ctx| {
            let ok = ctx
                .request()
                .input_responses
                .as_ref()
                .and_then(|r| r.get("confirm"))
                .is_some_and(|c| c["content"]["ok"] == json!(true));
            if ok && state_of(ctx).is_some_and(|s| s["kind"] == "request-state") {
                return Ok(text("state-ok: requestState validated"));
            }
            Ok(ToolResult::input_required(
                json!({"confirm": ask_for("Please confirm", "ok", "boolean")}),
                Some(json!({"kind": "request-state", "nonce": nonce()}).to_string()),
            ))
        },
    ));
    tools.extend(more_input_required_tools());
    tools
}

fn more_input_required_tools() -> Vec<Box<dyn Tool>> {
    let secret: &'static [u8] = Box::leak(
        format!("conformidad-{}", nonce())
            .into_bytes()
            .into_boxed_slice(),
    );
    vec![
        tool(
            "test_input_required_result_multiple_inputs",
            "MRTR: returns InputRequiredResult with multiple input requests",
            empty_schema(),
            |_, ctx| {
                let responses = ctx.request().input_responses.as_ref();
                let all = responses.is_some_and(|r| {
                    ["user_name", "greeting", "client_roots"]
                        .iter()
                        .all(|k| r.get(k).is_some())
                });
                if all && state_of(ctx).is_some_and(|s| s["kind"] == "multiple-inputs") {
                    let r = responses.cloned().unwrap_or_default();
                    let name = answered_text(Some(&r), "user_name", "name").unwrap_or_default();
                    let greeting = r["greeting"]["content"]["text"]
                        .as_str()
                        .unwrap_or("Hello there!");
                    let roots = r["client_roots"]["roots"].as_array().map_or(0, Vec::len);
                    return Ok(text(format!(
                        "Name: {name}; Greeting: {greeting}; Roots: {roots}"
                    )));
                }
                Ok(ToolResult::input_required(
                    json!({
                        "user_name": ask_for("What is your name?", "name", "string"),
                        "greeting": sample_request("Generate a greeting", 50),
                        "client_roots": {"method": "roots/list", "params": {}}
                    }),
                    Some(json!({"kind": "multiple-inputs", "nonce": nonce()}).to_string()),
                ))
            },
        ),
        tool(
            "test_input_required_result_multi_round",
            "MRTR: multi-round InputRequiredResult workflow",
            empty_schema(),
            |_, ctx| {
                let responses = ctx.request().input_responses.as_ref();
                let state = state_of(ctx).unwrap_or_default();
                if state["round"] == 1
                    && let Some(name) = answered_text(responses, "step1", "name")
                {
                    return Ok(ToolResult::input_required(
                        json!({"step2": ask_for("Step 2: What is your favorite color?", "color", "string")}),
                        Some(json!({"round": 2, "name": name, "nonce": nonce()}).to_string()),
                    ));
                }
                if state["round"] == 2
                    && let Some(color) = answered_text(responses, "step2", "color")
                {
                    let name = state["name"].as_str().unwrap_or("friend");
                    return Ok(text(format!(
                        "Multi-round complete for {name} who likes {color}"
                    )));
                }
                Ok(ToolResult::input_required(
                    json!({"step1": ask_for("Step 1: What is your name?", "name", "string")}),
                    Some(json!({"round": 1, "nonce": nonce()}).to_string()),
                ))
            },
        ),
        tool(
            "test_input_required_result_tampered_state",
            "MRTR: HMAC-signed requestState integrity test",
            empty_schema(),
            move |_, ctx| {
                if let Some(raw) = ctx.request().request_state.as_deref() {
                    let Some(state) = verified_state(secret, raw) else {
                        return Err(ToolError::Rejected(
                            "requestState integrity check failed".into(),
                        ));
                    };
                    let confirmed = ctx
                        .request()
                        .input_responses
                        .as_ref()
                        .and_then(|r| r.get("confirm"))
                        .is_some();
                    if state["kind"] == "tamper-test" && confirmed {
                        return Ok(text("integrity-ok: state verified"));
                    }
                }
                Ok(ToolResult::input_required(
                    json!({"confirm": ask_for("Please confirm", "ok", "boolean")}),
                    Some(signed_state(
                        secret,
                        json!({"kind": "tamper-test", "nonce": nonce()}),
                    )),
                ))
            },
        ),
        tool(
            "test_input_required_result_capabilities",
            "MRTR: respects client capabilities in inputRequests",
            empty_schema(),
            move |_, ctx| {
                let request = ctx.request();
                if let Some(responses) = request.input_responses.as_ref().and_then(Value::as_object)
                    && !responses.is_empty()
                {
                    let keys: Vec<&str> = responses.keys().map(String::as_str).collect();
                    return Ok(text(format!(
                        "capabilities-ok: received {}",
                        keys.join(",")
                    )));
                }
                let mut requests = serde_json::Map::new();
                if request.client_capabilities.get("elicitation").is_some() {
                    requests.insert(
                        "elicit_input".into(),
                        ask_for("Elicitation input", "value", "string"),
                    );
                }
                if request.client_capabilities.get("sampling").is_some() {
                    requests.insert("sample_input".into(), sample_request("Sample request", 50));
                }
                if requests.is_empty() {
                    return Ok(text("No supported capabilities declared"));
                }
                Ok(ToolResult::input_required(
                    Value::Object(requests),
                    Some(signed_state(
                        secret,
                        json!({"kind": "capabilities-test", "nonce": nonce()}),
                    )),
                ))
            },
        ),
    ]
}

fn diagnostic_tools(changes: &mcp::service::Changes) -> Vec<Box<dyn Tool>> {
    let tools_changed = changes.clone();
    let prompts_changed = changes.clone();
    vec![
        tool(
            "test_streaming_elicitation",
            "Diagnostic tool validating response progress streams",
            empty_schema(),
            |_, ctx| {
                ctx.progress(50.0, Some(100.0), None);
                Ok(text("Streaming complete"))
            },
        ),
        tool(
            "test_logging_tool",
            "Diagnostic logging validator tool",
            empty_schema(),
            |_, ctx| {
                ctx.log(LogLevel::Info, json!("Diagnostic trace logging activated"));
                Ok(text("Logging evaluated"))
            },
        ),
        tool(
            "test_param_header",
            "Echoes an argument that also travels as the Mcp-Param-Region header",
            json!({"type": "object", "properties": {"region": {"type": "string",
                "x-mcp-header": "Region"}}, "required": ["region"]}),
            |args, _| {
                Ok(text(format!(
                    "region: {}",
                    args["region"].as_str().unwrap_or("")
                )))
            },
        ),
        tool(
            "test_trigger_tool_change",
            "Announces a change of the tool list",
            empty_schema(),
            move |_, _| {
                tools_changed.changed(mcp::service::List::Tools);
                Ok(text("Mutation triggered"))
            },
        ),
        tool(
            "test_trigger_prompt_change",
            "Announces a change of the prompt list",
            empty_schema(),
            move |_, _| {
                prompts_changed.changed(mcp::service::List::Prompts);
                Ok(text("Mutation triggered"))
            },
        ),
    ]
}

// --- prompts ----------------------------------------------------------------------------

struct FixturePrompt {
    definition: PromptDefinition,
    build: fn(&BTreeMap<String, String>) -> Vec<PromptMessage>,
}

impl Prompt for FixturePrompt {
    fn definition(&self) -> &PromptDefinition {
        &self.definition
    }
    fn get(
        &self,
        arguments: &BTreeMap<String, String>,
        _: &RequestInfo,
    ) -> Result<PromptReply, String> {
        Ok(PromptReply::new(
            self.definition.description.clone(),
            (self.build)(arguments),
        ))
    }
}

/// A prompt that first asks the client for context (2026-07-28 input-required results).
struct ContextPrompt(PromptDefinition);

impl Prompt for ContextPrompt {
    fn definition(&self) -> &PromptDefinition {
        &self.0
    }
    fn get(
        &self,
        _: &BTreeMap<String, String>,
        request: &RequestInfo,
    ) -> Result<PromptReply, String> {
        let responses = request.input_responses.as_ref();
        Ok(match answered_text(responses, "user_context", "context") {
            Some(context) => PromptReply::new(
                None,
                vec![user_text(&format!("Prompt with context: {context}"))],
            ),
            None => PromptReply {
                input_required: Some(InputRequired {
                    input_requests: json!({"user_context": ask_for(
                        "What context should the prompt use?", "context", "string")}),
                    request_state: None,
                }),
                ..PromptReply::new(None, Vec::new())
            },
        })
    }
}

fn prompt(
    name: &str,
    title: &str,
    description: &str,
    arguments: &[(&str, &str)],
    build: fn(&BTreeMap<String, String>) -> Vec<PromptMessage>,
) -> Box<dyn Prompt> {
    Box::new(FixturePrompt {
        definition: PromptDefinition {
            name: name.into(),
            title: Some(title.into()),
            description: Some(description.into()),
            arguments: arguments
                .iter()
                .map(|(name, description)| PromptArgument {
                    name: (*name).into(),
                    description: Some((*description).into()),
                    required: true,
                })
                .collect(),
        },
        build,
    })
}

fn user_text(text: &str) -> PromptMessage {
    PromptMessage::user(Content::Text(text.into()))
}

fn prompts() -> Vec<Box<dyn Prompt>> {
    vec![
        prompt(
            "test_simple_prompt",
            "Simple Test Prompt",
            "A simple prompt without arguments",
            &[],
            |_| vec![user_text("This is a simple prompt for testing.")],
        ),
        prompt(
            "test_prompt_with_arguments",
            "Prompt With Arguments",
            "A prompt with required arguments",
            &[
                ("arg1", "First test argument"),
                ("arg2", "Second test argument"),
            ],
            |args| {
                let get = |k: &str| args.get(k).cloned().unwrap_or_default();
                vec![user_text(&format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    get("arg1"),
                    get("arg2")
                ))]
            },
        ),
        prompt(
            "test_prompt_with_embedded_resource",
            "Prompt With Embedded Resource",
            "A prompt that includes an embedded resource",
            &[("resourceUri", "URI of the resource to embed")],
            |args| {
                let uri = args.get("resourceUri").cloned().unwrap_or_default();
                vec![
                    PromptMessage::user(Content::Resource(ResourceContents::text(
                        uri,
                        "text/plain",
                        "Embedded resource content for testing.",
                    ))),
                    user_text("Please process the embedded resource above."),
                ]
            },
        ),
        prompt(
            "test_prompt_with_image",
            "Prompt With Image",
            "A prompt that includes image content",
            &[],
            |_| {
                vec![
                    PromptMessage::user(image()),
                    user_text("Please analyze the image above."),
                ]
            },
        ),
        Box::new(ContextPrompt(PromptDefinition {
            name: "test_input_required_result_prompt".into(),
            description: Some("MRTR: prompt that requires elicitation input".into()),
            ..PromptDefinition::default()
        })),
    ]
}

// --- resources --------------------------------------------------------------------------

struct FixtureResource {
    definition: ResourceDefinition,
    contents: ResourceContents,
}

impl Resource for FixtureResource {
    fn definition(&self) -> &ResourceDefinition {
        &self.definition
    }
    fn read(&self) -> Result<Vec<ResourceContents>, ResourceError> {
        Ok(vec![self.contents.clone()])
    }
}

fn resource(
    name: &str,
    title: &str,
    description: &str,
    contents: ResourceContents,
) -> Box<dyn Resource> {
    Box::new(FixtureResource {
        definition: ResourceDefinition {
            uri: contents.uri.clone(),
            name: name.into(),
            title: Some(title.into()),
            description: Some(description.into()),
            mime_type: contents.mime_type.clone(),
            meta: None,
        },
        contents,
    })
}

fn resources() -> Vec<Box<dyn Resource>> {
    vec![
        resource(
            "static-text",
            "Static Text Resource",
            "A static text resource for testing",
            ResourceContents::text(
                "test://static-text",
                "text/plain",
                "This is the content of the static text resource.",
            ),
        ),
        resource(
            "static-binary",
            "Static Binary Resource",
            "A static binary resource (image) for testing",
            ResourceContents::blob("test://static-binary", "image/png", IMAGE),
        ),
        resource(
            "watched-resource",
            "Watched Resource",
            "A resource that auto-updates every 3 seconds",
            ResourceContents::text(
                "test://watched-resource",
                "text/plain",
                "Watched resource content",
            ),
        ),
    ]
}

struct DataTemplate(TemplateDefinition);

impl ResourceTemplate for DataTemplate {
    fn definition(&self) -> &TemplateDefinition {
        &self.0
    }
    fn read(
        &self,
        uri: &str,
        variables: &BTreeMap<String, String>,
    ) -> Result<Vec<ResourceContents>, ResourceError> {
        let id = variables.get("id").cloned().unwrap_or_default();
        let body = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
        Ok(vec![ResourceContents::text(
            uri,
            "application/json",
            body.to_string(),
        )])
    }
}

// --- the tasks extension (io.modelcontextprotocol/tasks) --------------------------------

fn with_tasks(mut fixture: Fixture, support: TaskSupport) -> Box<dyn Tool> {
    fixture.definition.task_support = support;
    Box::new(fixture)
}

/// Sleeps `seconds` in short steps, stopping early once the call is cancelled.
fn work(seconds: f64, ctx: &CallContext) {
    let until = std::time::Instant::now() + Duration::from_secs_f64(seconds.clamp(0.0, 600.0));
    while std::time::Instant::now() < until && !ctx.is_cancelled() {
        pause();
    }
}

fn confirmed(answer: &Value) -> bool {
    answer["action"] == "accept"
}

fn task_tools() -> Vec<Box<dyn Tool>> {
    let greet = fixture(
        "greet",
        "Sync-only greeting",
        json!({"type": "object", "properties": {"name": {"type": "string"}}}),
        |args, _| {
            Ok(text(format!(
                "Hello, {}!",
                args["name"].as_str().unwrap_or("World")
            )))
        },
    );
    let slow = fixture(
        "slow_compute",
        "Task-supporting: sleeps `seconds` then answers",
        json!({"type": "object", "properties": {
            "seconds": {"type": "number"}, "label": {"type": "string"}}}),
        |args, ctx| {
            let seconds = args["seconds"].as_f64().unwrap_or(0.0);
            work(seconds, ctx);
            let label = args["label"].as_str().unwrap_or("");
            Ok(text(format!("Computed {label} after {seconds}s")))
        },
    );
    let failing = fixture(
        "failing_job",
        "Task-required: a tool error",
        empty_schema(),
        |_, ctx| {
            work(0.5, ctx);
            Err(ToolError::Failed("Job failed".into()))
        },
    );
    let protocol = fixture(
        "protocol_error_job",
        "Task-supporting: a protocol-level error",
        empty_schema(),
        |_, _| {
            Err(ToolError::Rejected(
                "protocol error requested by the fixture".into(),
            ))
        },
    );
    let confirm = fixture(
        "confirm_delete",
        "Task-supporting: asks for confirmation",
        json!({"type": "object", "properties": {"filename": {"type": "string"}}}),
        |args, ctx| {
            let file = args["filename"].as_str().unwrap_or("file");
            let request = ask_for(&format!("Delete {file}?"), "confirm", "boolean");
            let answer = ctx
                .ask("elicitation/create", request["params"].clone())
                .map_err(ToolError::Failed)?;
            Ok(text(if confirmed(&answer) {
                format!("Deleted {file}")
            } else {
                format!("Kept {file}")
            }))
        },
    );
    let multi = fixture(
        "multi_input",
        "Task-supporting: two questions at once",
        empty_schema(),
        |_, ctx| {
            let ask = |field: &str| {
                let request = ask_for(&format!("Your {field}?"), field, "string");
                ctx.ask("elicitation/create", request["params"].clone())
            };
            let (first, second) = std::thread::scope(|scope| {
                let first = scope.spawn(|| ask("name"));
                let second = scope.spawn(|| ask("confirm"));
                (first.join(), second.join())
            });
            match (first, second) {
                (Ok(Ok(a)), Ok(Ok(b))) => Ok(text(format!(
                    "Got {} and {}",
                    a["content"]["name"], b["content"]["name"]
                ))),
                _ => Err(ToolError::Failed("an answer did not arrive".into())),
            }
        },
    );
    let mut composed = fixture(
        "test_tool_with_task",
        "Task-required: asks for a name in the request, then runs as a task",
        empty_schema(),
        |_, ctx| {
            let responses = ctx.request().input_responses.as_ref();
            let name = answered_text(responses, "user_name", "name").unwrap_or_default();
            Ok(text(format!("Hello, {name}!")))
        },
    );
    composed.gather = Some(Box::new(|request| {
        let responses = request.input_responses.as_ref();
        answered_text(responses, "user_name", "name")
            .is_none()
            .then(|| {
                ToolResult::input_required(
                    json!({"user_name": ask_for("What is your name?", "name", "string")}),
                    None,
                )
            })
    }));
    vec![
        Box::new(greet),
        with_tasks(slow, TaskSupport::Optional),
        with_tasks(failing, TaskSupport::Required),
        with_tasks(protocol, TaskSupport::Optional),
        with_tasks(confirm, TaskSupport::Optional),
        with_tasks(multi, TaskSupport::Optional),
        with_tasks(composed, TaskSupport::Required),
    ]
}

fn service() -> Service {
    let changes = mcp::service::Changes::default();
    let mut tools = content_tools();
    tools.extend(streaming_tools());
    tools.extend(asking_tools());
    tools.extend(input_required_tools());
    tools.extend(diagnostic_tools(&changes));
    tools.extend(task_tools());
    Service {
        info: ServerInfo {
            name: "servidor-conformidad".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            title: "flota: fixtures of the MCP conformance suite".into(),
        },
        instructions: Some("Fixtures of the MCP conformance suite.".into()),
        tools,
        prompts: prompts(),
        resources: resources(),
        templates: vec![Box::new(DataTemplate(TemplateDefinition {
            uri_template: "test://template/{id}/data".into(),
            name: "template".into(),
            title: Some("Resource Template".into()),
            description: Some("A resource template with parameter substitution".into()),
            mime_type: Some("application/json".into()),
            meta: None,
        }))],
        logging: true,
        subscribe: true,
        dynamic_lists: true,
        resources_version: None,
        changes,
        extensions: None,
        tasks: Some(Tasks::new(TaskSettings::new(Clock::system()))),
    }
}

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let mut address = "127.0.0.1:3001".to_owned();
    let mut token = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => address = args.next().unwrap_or(address),
            "--token" => token = args.next(),
            _ => {
                eprintln!("uso: servidor_conformidad [--http DIRECCIÓN] [--token TOKEN]");
                return std::process::ExitCode::from(2);
            }
        }
    }
    let listener = match std::net::TcpListener::bind(&address) {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!("no se pudo escuchar en {address}: {err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let mut options = HttpOptions::default();
    options.guard.token = token;
    options.guard.hosts = vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()];
    match listener.local_addr() {
        Ok(bound) => eprintln!("servidor de conformidad en http://{bound}/mcp"),
        Err(_) => eprintln!("servidor de conformidad en http://{address}/mcp"),
    }
    match mcp::serve_http(service(), listener, options) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}
