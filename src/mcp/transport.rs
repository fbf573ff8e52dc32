//! The stdio framing: bounded newline-delimited input, and the single writer of output.
//!
//! Owns bytes, not meaning. [`LineReader`] splits input on `\n`, strips a trailing `\r`, and
//! never buffers more than its cap: an over-long line is counted and skipped as it streams
//! by. [`spawn_writer`] starts the one thread allowed to write protocol output; every message
//! goes through its channel, so lines never interleave and each is flushed on its own.

use std::io::{self, BufRead, Write};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

/// Default cap on one input line: far above any real request (Claude's own results stop at
/// 1 MB), low enough that a runaway client cannot exhaust memory.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One unit of input.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A line without its terminator (and without a trailing `\r`).
    Complete(Vec<u8>),
    /// A line longer than the cap; its bytes were discarded.
    TooLong {
        bytes: usize,
    },
    Eof,
}

/// Reads lines of at most `max_bytes` from a buffered source.
pub struct LineReader<R> {
    inner: R,
    max_bytes: usize,
}

impl<R: BufRead> LineReader<R> {
    pub fn new(inner: R, max_bytes: usize) -> Self {
        LineReader { inner, max_bytes }
    }

    pub fn next_line(&mut self) -> io::Result<Line> {
        let mut line = Vec::new();
        let mut total = 0usize;
        let mut too_long = false;
        loop {
            let available = match self.inner.fill_buf() {
                Ok(available) => available,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            };
            if available.is_empty() {
                // EOF: a last line without a terminator still counts.
                return Ok(match (total, too_long) {
                    (0, _) => Line::Eof,
                    (bytes, true) => Line::TooLong { bytes },
                    (_, false) => Line::Complete(trim_cr(line)),
                });
            }
            let (chunk, found_newline) = match available.iter().position(|&b| b == b'\n') {
                Some(pos) => (&available[..pos], true),
                None => (available, false),
            };
            total += chunk.len();
            if !too_long && total > self.max_bytes {
                too_long = true;
                line = Vec::new();
            }
            if !too_long {
                line.extend_from_slice(chunk);
            }
            let consumed = chunk.len() + usize::from(found_newline);
            self.inner.consume(consumed);
            if found_newline {
                return Ok(if too_long {
                    Line::TooLong { bytes: total }
                } else {
                    Line::Complete(trim_cr(line))
                });
            }
        }
    }
}

fn trim_cr(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    line
}

/// A message for the writer thread.
pub enum Outgoing {
    Line(String),
    /// Write nothing more; the thread ends after what was queued before.
    Close,
}

/// Capacity of the writer's queue. When the client stops reading, producers block here
/// instead of growing memory without bound.
const WRITER_QUEUE: usize = 256;

/// Starts the writer thread. `log_line` is called with each line after it is written
/// (used by `--verbose`).
pub fn spawn_writer<W, F>(mut output: W, log_line: F) -> (SyncSender<Outgoing>, JoinHandle<()>)
where
    W: Write + Send + 'static,
    F: Fn(&str) + Send + 'static,
{
    let (sender, receiver): (SyncSender<Outgoing>, Receiver<Outgoing>) = sync_channel(WRITER_QUEUE);
    let handle = std::thread::spawn(move || {
        for message in receiver {
            let Outgoing::Line(line) = message else {
                break;
            };
            // One write per message, newline included, then flush: a pipe reader sees whole
            // lines only, and nothing waits in a block buffer.
            let mut bytes = line.into_bytes();
            bytes.push(b'\n');
            if output
                .write_all(&bytes)
                .and_then(|()| output.flush())
                .is_err()
            {
                // The client closed its end; nobody is left to read answers.
                break;
            }
            bytes.pop();
            log_line(&String::from_utf8_lossy(&bytes));
        }
        let _ = output.flush();
    });
    (sender, handle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn lines(input: &[u8], max: usize) -> Vec<Line> {
        // A tiny BufReader capacity exercises lines that span many fills.
        let mut reader = LineReader::new(io::BufReader::with_capacity(3, Cursor::new(input)), max);
        let mut out = Vec::new();
        loop {
            let line = reader.next_line().unwrap();
            let eof = line == Line::Eof;
            out.push(line);
            if eof {
                return out;
            }
        }
    }

    #[test]
    fn splits_lines_and_strips_cr() {
        assert_eq!(
            lines(b"ab\r\n\ncd\nlast", 100),
            vec![
                Line::Complete(b"ab".to_vec()),
                Line::Complete(Vec::new()),
                Line::Complete(b"cd".to_vec()),
                Line::Complete(b"last".to_vec()),
                Line::Eof
            ]
        );
    }

    #[test]
    fn skips_over_long_lines_and_keeps_going() {
        assert_eq!(
            lines(b"0123456789\nok\n0123456789", 5),
            vec![
                Line::TooLong { bytes: 10 },
                Line::Complete(b"ok".to_vec()),
                Line::TooLong { bytes: 10 },
                Line::Eof
            ]
        );
    }

    #[test]
    fn writer_writes_whole_lines_in_order() {
        use std::sync::{Arc, Mutex};
        #[derive(Clone)]
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let shared = Shared(Arc::new(Mutex::new(Vec::new())));
        let (sender, handle) = spawn_writer(shared.clone(), |_| {});
        sender.send(Outgoing::Line("{\"a\":1}".into())).unwrap();
        sender.send(Outgoing::Line("{\"b\":2}".into())).unwrap();
        sender.send(Outgoing::Close).unwrap();
        handle.join().unwrap();
        assert_eq!(&*shared.0.lock().unwrap(), b"{\"a\":1}\n{\"b\":2}\n");
    }
}
