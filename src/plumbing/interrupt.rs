//! Ctrl-C (SIGINT) and SIGTERM as a flag a long job polls, so it can stop at a safe point and
//! clean up instead of dying with its temporary files on disk.
//!
//! Owns the signal registration for jobs that are not servers (the stdio server watches its
//! own signals in `mcp::stdio`). Made only by a verb, like the clock. The first signal sets
//! the flag; a second one, for a job that does not stop soon enough for the person waiting,
//! ends the process at once as the signal's default action would.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Whether a stop was asked for, and by which signal.
#[derive(Debug, Clone, Default)]
pub struct Interrupt {
    signal: Arc<AtomicUsize>,
}

impl Interrupt {
    /// A flag no signal will set (a job run from a test, or where signals are not watched).
    pub fn never() -> Interrupt {
        Interrupt::default()
    }

    /// Watches SIGINT and SIGTERM from now on, for the rest of the process. If the handlers
    /// cannot be installed the job simply cannot be stopped cleanly (the signal's default
    /// action stays), which is said at `warn`.
    pub fn watch() -> Interrupt {
        let interrupt = Interrupt::default();
        #[cfg(unix)]
        if let Err(err) = interrupt.register() {
            crate::log_warn!(
                "no se podrá interrumpir limpiamente: {}",
                super::spanish::io(&err)
            );
        }
        interrupt
    }

    #[cfg(unix)]
    fn register(&self) -> std::io::Result<()> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        use signal_hook::flag;
        let asked = Arc::new(AtomicBool::new(false));
        for signal in [SIGINT, SIGTERM] {
            // Handlers run in the order registered: a second signal finds the flag set and
            // takes the default action (the process ends); the first only sets it.
            flag::register_conditional_default(signal, asked.clone())?;
            flag::register(signal, asked.clone())?;
            flag::register_usize(signal, self.signal.clone(), signal as usize)?;
        }
        Ok(())
    }

    /// The signal that asked for a stop, if one did.
    pub fn signal(&self) -> Option<i32> {
        match self.signal.load(Ordering::Relaxed) {
            0 => None,
            n => i32::try_from(n).ok(),
        }
    }

    /// Whether a stop was asked for.
    pub fn asked(&self) -> bool {
        self.signal().is_some()
    }
}
