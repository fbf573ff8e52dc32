//! The wall clock as a value: read only where the command line built it, never looked up.
//!
//! Owns [`Clock`] and the one place that asks the system for the time in UTC seconds. The edge
//! (`src/commands/`) makes [`Clock::system`] and hands it down; everything below takes a
//! `Clock` or a "now" it was given, so tests can fix the time and the simulator and the engine
//! never see a clock at all (a tidy test keeps `Clock::system` at the edge).

use std::fmt;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Where "now" comes from, in UTC seconds. Cheap to clone.
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> i64 + Send + Sync>);

impl Clock {
    /// The system's wall clock. Only the command line makes one.
    pub fn system() -> Clock {
        Clock(Arc::new(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64)
        }))
    }

    /// A clock stopped at `ts_utc`, for tests and for data that says when "now" is.
    pub fn fixed(ts_utc: i64) -> Clock {
        Clock(Arc::new(move || ts_utc))
    }

    /// A clock that reads `source`: moved by hand (a test replaying a day) or by whoever
    /// holds it.
    pub fn following(source: Arc<std::sync::atomic::AtomicI64>) -> Clock {
        Clock(Arc::new(move || {
            source.load(std::sync::atomic::Ordering::Relaxed)
        }))
    }

    pub fn now_utc(&self) -> i64 {
        (self.0)()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Clock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_clock_stays_and_the_system_clock_is_after_2020() {
        assert_eq!(Clock::fixed(1_700_000_000).now_utc(), 1_700_000_000);
        assert!(Clock::system().now_utc() > 1_577_836_800);
    }
}
