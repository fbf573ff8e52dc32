//! Plumbing every layer may use: diagnostics, outbound HTTP, atomic file writes.

pub mod log;
pub mod net;
pub mod output;
