//! A hand-written Model Context Protocol server core over stdio and Streamable HTTP: JSON-RPC
//! 2.0, both protocol eras (the `initialize` handshake of 2024-11-05 … 2025-11-25, and the
//! stateless 2026-07-28), and tools, prompts and resources handed in as trait objects.
//!
//! **Invariant:** nothing here knows what the tools are about. The application builds a
//! [`Service`] (identity, instructions, `Vec<Box<dyn Tool>>`, prompts, resources) and calls
//! [`serve`] or [`serve_http`]. A test greps this folder for domain words to keep it that way.
//!
//! Layers, bottom up: [`transport`] (bytes and lines), [`jsonrpc`] (messages and ids),
//! [`version`] (what each revision allows), [`schema`] (derived schemas and validation),
//! [`tool`], [`prompt`], [`resource`] (the contracts), [`service`] (what the application
//! hands in, running a call), [`tasks`] (the tasks extension: calls answered with a task
//! handle), `catalog` (prompts, resources, completions), [`session`] (the state machine),
//! `in_flight` (which calls run and what may still be written for them), `pool` (which
//! worker takes a call: the one idle last), [`server`] (threads and the bounded shutdown),
//! [`stdio`] (the process's stdin/stdout, hang-up and signals), [`http`] (Streamable HTTP:
//! sessions, streams, authentication).

mod catalog;
pub mod http;
mod in_flight;
pub mod jsonrpc;
pub mod logging;
mod pool;
pub mod prompt;
pub mod resource;
pub mod schema;
pub mod server;
pub mod service;
pub mod session;
mod sinks;
pub mod stdio;
pub mod tasks;
pub mod tool;
pub mod transport;
pub mod version;

pub use http::{HttpOptions, serve_http};
pub use logging::LogLevel;
pub use prompt::{Prompt, PromptArgument, PromptDefinition, PromptMessage, PromptReply, Role};
pub use resource::{
    Body, Resource, ResourceContents, ResourceDefinition, ResourceError, ResourceTemplate,
    TemplateDefinition,
};
pub use server::{ServeOptions, serve};
pub use service::{ServerInfo, Service};
pub use stdio::serve_stdio;
pub use tasks::{TaskSettings, Tasks};
pub use tool::{
    Annotations, CallContext, Content, InputRequired, Peer, Reply, RequestInfo, TaskSupport, Tool,
    ToolDefinition, ToolError, ToolResult, TypedTool, current_call_cancelled, current_call_flag,
    typed,
};
pub use version::ProtocolVersion;
