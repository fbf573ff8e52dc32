//! Plumbing every layer may use: the clock, Ctrl-C as a flag, diagnostics, outbound HTTP, atomic file writes,
//! a poison-tolerant mutex lock, library and system errors in Spanish, a thread's
//! scheduler times (diagnostics).

pub mod clock;
pub mod interrupt;
pub mod log;
pub mod mutex;
pub mod net;
pub mod output;
pub mod schedstat;
pub mod spanish;
