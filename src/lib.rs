//! flota: fleet GPS telemetry on the operator's own machine.
//!
//! A scenario-driven simulator writes what trackers would report; a detection engine turns
//! positions into stops, trips, alerts and kilometres; an MCP server lets a chat model ask
//! about them. See ARCHITECTURE.md for the map of modules and the invariants between them.

pub mod calendar;
pub mod cli;
pub mod client;
pub mod commands;
pub mod directions;
pub mod engine;
pub mod evaluation;
pub mod export;
pub mod fleet;
pub mod geometry;
pub mod ingest;
pub mod map;
pub mod mcp;
pub mod plumbing;
pub mod prompts;
pub mod resources;
pub mod scenario;
pub mod settings;
pub mod sim;
pub mod store;
pub mod tools;
pub mod ui;
