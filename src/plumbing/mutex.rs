//! Locking a mutex that a panic may have poisoned.
//!
//! Owns the one rule for shared state that is only ever replaced whole (a cache entry, a
//! "resting until" instant, a lazily built client, a work queue): a thread that panicked while
//! holding the lock cannot have left such a value half-changed, so the lock is taken anyway
//! rather than spreading the panic to every later caller. State with invariants across several
//! fields keeps its own locking.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, ignoring poisoning (see the module's rule).
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_while_locked_does_not_lock_others_out() {
        let shared = std::sync::Arc::new(Mutex::new(1));
        let holder = std::sync::Arc::clone(&shared);
        let panicked = std::thread::spawn(move || {
            let mut value = holder.lock().unwrap();
            *value = 2;
            panic!("a tool failing while it holds the lock");
        })
        .join();
        assert!(panicked.is_err());
        assert!(shared.is_poisoned());
        assert_eq!(*lock(&shared), 2);
    }
}
