//! flota: fleet GPS telemetry on the operator's own machine.
//!
//! A scenario-driven simulator writes what trackers would report; a detection engine turns
//! positions into stops, trips, alerts and kilometres; an MCP server lets a chat model ask
//! about them. See ARCHITECTURE.md for the map of modules and the invariants between them.

pub mod analyze;
pub mod app;
pub mod claude_config;
pub mod cli;
pub mod client;
pub mod directions;
pub mod engine;
pub mod evaluate;
pub mod export;
pub mod fleet;
pub mod geo;
pub mod geofence;
pub mod log;
pub mod map;
pub mod mcp;
pub mod net;
pub mod output;
pub mod route;
pub mod route_command;
pub mod scenario;
pub mod sim;
pub mod simulate;
pub mod store;
pub mod tools;
pub mod ui;
