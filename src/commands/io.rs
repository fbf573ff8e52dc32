//! The standard streams a verb may use, handed to it by `main`.
//!
//! Owns [`Io`]: stdin, stdout and stderr as `main` found them, and whether stdout and stderr
//! are terminals. Verbs write their results to `stdout` and their summaries and warnings to
//! `stderr` through it, never by grabbing the process's own (a tidy test), so a verb can be
//! run on captured streams. A verb that serves a protocol on the streams for the rest of the
//! process (`flota servir`) takes them over with [`Io::take_stdin`] and [`Io::take_stdout`].
//! Diagnostics go through `log_*!` and the progress bar through indicatif, both to stderr.

use std::io::{self, BufRead, Write};

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
