//! The standard streams a verb may use, handed to it by `main`.
//!
//! Owns [`Io`]: stdin, stdout and stderr as `main` found them, and whether stdout and stderr
//! are terminals. Verbs write their results to `stdout` and their summaries and warnings to
//! `stderr` through it, never by grabbing the process's own (a tidy test), so a verb can be
//! run on captured streams. A verb that serves a protocol on the streams for the rest of the
//! process (`flota servir`) takes them over with [`Io::take_stdin`] and [`Io::take_stdout`].
//! Diagnostics go through `log_*!` and the progress bar through indicatif, both to stderr.
//! `main` wraps the process's stdout in a [`PipeWatch`] (a reader such as `head` that stops
//! reading ends the verb quietly) and its stderr in a [`Forgiving`] writer (a message nobody
//! can read is not a failure).

use std::io::{self, BufRead, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a verb reads.
pub enum Stdin {
    /// The process's own standard input, which a stdio server also watches for a hang-up.
    Process(io::Stdin),
    /// Any other bytes (a test's).
    Other(Box<dyn BufRead + Send>),
}

impl Stdin {
    /// The input as a buffered reader, for a verb that reads it in place.
    pub fn reader(&mut self) -> Box<dyn BufRead + '_> {
        match self {
            Stdin::Process(stdin) => Box::new(stdin.lock()),
            Stdin::Other(reader) => Box::new(reader),
        }
    }
}

/// The streams of one run of a verb.
pub struct Io {
    pub stdin: Stdin,
    pub stdout: Box<dyn Write + Send>,
    pub stderr: Box<dyn Write + Send>,
    /// Whether stdin is a terminal (the line editor of `flota cliente`).
    pub stdin_is_terminal: bool,
    /// Whether stdout is a terminal (colour in `flota cliente`).
    pub stdout_is_terminal: bool,
    /// Whether stderr is a terminal (the progress bar of `flota simular`).
    pub stderr_is_terminal: bool,
}

impl Io {
    /// Streams in memory: no input, output discarded, no terminal. Tests replace the parts
    /// they look at.
    pub fn detached() -> Io {
        Io {
            stdin: Stdin::Other(Box::new(io::empty())),
            stdout: Box::new(io::sink()),
            stderr: Box::new(io::sink()),
            stdin_is_terminal: false,
            stdout_is_terminal: false,
            stderr_is_terminal: false,
        }
    }

    /// Takes stdin over for good; what stays behind is empty.
    pub fn take_stdin(&mut self) -> Stdin {
        std::mem::replace(&mut self.stdin, Stdin::Other(Box::new(io::empty())))
    }

    /// Takes stdout over for good (a transport's writer thread owns it until the process
    /// ends); what stays behind discards.
    pub fn take_stdout(&mut self) -> Box<dyn Write + Send> {
        std::mem::replace(&mut self.stdout, Box::new(io::sink()))
    }
}

/// A writer that remembers whether a write found the reading end closed (`EPIPE`): `main`
/// then ends the verb quietly with success, as `head`-style readers expect, instead of
/// reporting an error nobody asked for.
pub struct PipeWatch<W> {
    inner: W,
    closed: Arc<AtomicBool>,
}

impl<W: Write> PipeWatch<W> {
    /// Watches `inner`; `closed` becomes true at the first write to a closed pipe.
    pub fn new(inner: W, closed: Arc<AtomicBool>) -> PipeWatch<W> {
        PipeWatch { inner, closed }
    }

    fn seen<T>(&self, result: io::Result<T>) -> io::Result<T> {
        if let Err(err) = &result
            && err.kind() == io::ErrorKind::BrokenPipe
        {
            self.closed.store(true, Ordering::Relaxed);
        }
        result
    }
}

impl<W: Write> Write for PipeWatch<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let result = self.inner.write(buf);
        self.seen(result)
    }

    fn flush(&mut self) -> io::Result<()> {
        let result = self.inner.flush();
        self.seen(result)
    }
}

/// A writer whose failures are dropped: stderr closed or full has nowhere left to report to,
/// and a summary line that cannot be shown must not turn a finished job into a failure.
pub struct Forgiving<W>(pub W);

impl<W: Write> Write for Forgiving<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let _ = self.0.write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let _ = self.0.flush();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_is_remembered_and_other_failures_are_not() {
        let closed = Arc::new(AtomicBool::new(false));
        let mut out = PipeWatch::new(io::sink(), closed.clone());
        assert!(writeln!(out, "hola").is_ok());
        assert!(!closed.load(Ordering::Relaxed));
        let mut out = PipeWatch::new(Closed, closed.clone());
        assert!(writeln!(out, "hola").is_err());
        assert!(closed.load(Ordering::Relaxed));
        assert!(writeln!(Forgiving(Closed), "hola").is_ok());
    }
}
