//! A hand-written Model Context Protocol server core over stdio: JSON-RPC 2.0, both protocol
//! eras (the `initialize` handshake of 2024-11-05 … 2025-11-25, and the stateless 2026-07-28),
//! and tools handed in as trait objects.
//!
//! **Invariant:** nothing here knows what the tools are about. The application builds a
//! [`Service`] (identity, instructions, `Vec<Box<dyn Tool>>`) and calls [`serve`]. A test
//! greps this folder for domain words to keep it that way.
//!
//! Layers, bottom up: [`transport`] (bytes and lines), [`jsonrpc`] (messages and ids),
//! [`version`] (what each revision allows), [`schema`] (derived schemas and validation),
//! [`tool`] (the tool contract), [`session`] (the state machine), `in_flight` (which calls
//! run and what may still be written for them), [`server`] (threads and the bounded
//! shutdown), [`stdio`] (the process's stdin/stdout, hang-up and signals).

mod in_flight;
pub mod jsonrpc;
pub mod schema;
pub mod server;
pub mod session;
pub mod stdio;
pub mod tool;
pub mod transport;
pub mod version;

pub use server::{ServeOptions, serve};
pub use session::{ServerInfo, Service};
pub use stdio::serve_stdio;
pub use tool::{
    Annotations, CallContext, Content, Reply, Tool, ToolDefinition, ToolError, ToolResult,
    TypedTool, current_call_cancelled, current_call_flag, typed,
};
pub use version::ProtocolVersion;
