//! Plumbing every layer may use: the clock, diagnostics, outbound HTTP, atomic file writes.

pub mod clock;
pub mod log;
pub mod net;
pub mod output;
