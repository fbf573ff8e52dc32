//! Diagnostics on stderr: a level, a timestamp, a line.
//!
//! Owns the only stderr writer besides `main`. stdout is never touched here: it belongs to the
//! protocol. The level is process-wide and set by the command line: `FLOTA_LOG` (read in
//! src/settings.rs), then `--verbose`.

use std::fmt::Arguments;
use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Level {
    Error = 1,
    Warn = 2,
    Info = 3,
    Debug = 4,
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Info as u8);

pub fn set_level(level: Level) {
    LEVEL.store(level as u8, Ordering::Relaxed);
}

pub fn enabled(level: Level) -> bool {
    level as u8 <= LEVEL.load(Ordering::Relaxed)
}

/// Writes one line to stderr if `level` is enabled. Errors writing stderr are ignored: there
/// is nowhere left to report them.
pub fn write(level: Level, args: Arguments<'_>) {
    if !enabled(level) {
        return;
    }
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let (ms, s) = (secs % 1000, secs / 1000);
    let (h, m, s) = ((s / 3600) % 24, (s / 60) % 60, s % 60);
    let tag = match level {
        Level::Error => "ERROR",
        Level::Warn => "WARN",
        Level::Info => "INFO",
        Level::Debug => "DEBUG",
    };
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{h:02}:{m:02}:{s:02}.{ms:03}Z {tag} {args}");
}

#[macro_export]
macro_rules! log_error { ($($t:tt)*) => { $crate::plumbing::log::write($crate::plumbing::log::Level::Error, format_args!($($t)*)) } }
#[macro_export]
macro_rules! log_warn { ($($t:tt)*) => { $crate::plumbing::log::write($crate::plumbing::log::Level::Warn, format_args!($($t)*)) } }
#[macro_export]
macro_rules! log_info { ($($t:tt)*) => { $crate::plumbing::log::write($crate::plumbing::log::Level::Info, format_args!($($t)*)) } }
#[macro_export]
macro_rules! log_debug { ($($t:tt)*) => { $crate::plumbing::log::write($crate::plumbing::log::Level::Debug, format_args!($($t)*)) } }
