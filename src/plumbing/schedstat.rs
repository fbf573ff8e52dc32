//! Where the calling thread's time went, from Linux's `/proc/thread-self/schedstat`:
//! nanoseconds on a CPU and nanoseconds runnable but waiting for one. Diagnostics only — the
//! receiver's writer uses it at debug level to tell a slow transaction's own work from CPU
//! contention and from blocking (I/O, locks); `None` where the file is missing (not Linux,
//! a kernel without scheduler statistics). Reads nothing else and knows no caller.

/// A thread's cumulative scheduler times.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadTimes {
    pub on_cpu_ns: u64,
    pub waiting_ns: u64,
}

/// The calling thread's times now.
pub fn current() -> Option<ThreadTimes> {
    parse(&std::fs::read_to_string("/proc/thread-self/schedstat").ok()?)
}

/// The file's first two numbers: time on a CPU and time waiting on a run queue.
fn parse(text: &str) -> Option<ThreadTimes> {
    let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().ok());
    Some(ThreadTimes {
        on_cpu_ns: fields.next()??,
        waiting_ns: fields.next()??,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_two_fields_are_the_times() {
        assert_eq!(
            parse("174631 31387326 2\n"),
            Some(ThreadTimes {
                on_cpu_ns: 174_631,
                waiting_ns: 31_387_326
            })
        );
        assert_eq!(parse("12"), None);
        assert_eq!(parse("x 1 2"), None);
    }
}
