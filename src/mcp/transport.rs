//! The stdio framing: bounded newline-delimited input, and the single writer of output.
//!
//! Owns bytes, not meaning. [`LineReader`] splits input on `\n`, strips a trailing `\r`, and
//! never buffers more than its cap: an over-long line is counted and skipped as it streams
//! by. [`spawn_writer`] starts the one thread allowed to write protocol output; every message
//! goes through its bounded queue, the [`Outbox`], so lines never interleave and each is
//! flushed on its own. The outbox can be closed and stopped without blocking, whatever the
//! client does with its end: that is what lets the server exit on time.

use std::collections::VecDeque;
use std::io::{self, BufRead, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

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

/// Capacity of the writer's queue. When the client stops reading, producers block here
/// instead of growing memory without bound.
pub(super) const WRITER_QUEUE: usize = 256;

/// Lines are handed to the output in pieces of at most this size (a pipe's atomic write), so
/// a client reading a large line slowly still shows progress (see [`Outbox::stalled_for`]).
const WRITE_CHUNK: usize = 4096;

/// The queue in front of the writer thread, shared by everything that answers.
///
/// Shutdown happens in two steps that never block: [`close`](Outbox::close) (accept no more
/// lines; producers blocked on a full queue drop their line and return) and
/// [`stop`](Outbox::stop) (start no new line). Nothing in the process interrupts the writer
/// between the first and the last byte of a line; only the process exiting can, when its
/// owner stops waiting for a client that does not read (see `server::shut_down`).
#[derive(Clone)]
pub struct Outbox {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    queue: VecDeque<String>,
    /// No more lines are accepted: shutdown, or the client closed our output.
    closed: bool,
    /// The writer starts no new line.
    stopped: bool,
    /// A line is being written.
    writing: bool,
    /// When the output last accepted bytes, or when the current line started.
    progress: Instant,
    /// The writer thread has ended.
    finished: bool,
}

impl Outbox {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The writer never panics while holding this; stay usable even if something did.
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn update(&self, change: impl FnOnce(&mut State)) {
        change(&mut self.lock());
        self.shared.changed.notify_all();
    }

    /// Queues a line, waiting while the queue is full (back-pressure). Returns false when the
    /// line was dropped because the outbox is closed.
    pub fn send(&self, line: String) -> bool {
        let mut state = self.lock();
        while state.queue.len() >= WRITER_QUEUE && !state.closed {
            state = self
                .shared
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if state.closed {
            return false;
        }
        state.queue.push_back(line);
        drop(state);
        self.shared.changed.notify_all();
        true
    }

    /// Accepts no more lines; what is queued is still written (until [`Outbox::stop`]).
    pub fn close(&self) {
        self.update(|state| state.closed = true);
    }

    /// Starts no new line. A line already being written is finished (if the client reads).
    pub fn stop(&self) {
        self.update(|state| {
            state.closed = true;
            state.stopped = true;
        });
    }

    /// Waits until everything queued is written, or `deadline`, or the output has accepted
    /// nothing for `stall`. Returns true when nothing is left to write.
    pub fn drain(&self, deadline: Instant, stall: Duration) -> bool {
        self.wait_until(deadline, stall, |state| {
            state.finished || (state.queue.is_empty() && !state.writing)
        })
    }

    /// Waits until no line is half-written, or `deadline`, or the output has accepted nothing
    /// for `stall`. Returns true when none is.
    pub fn finish_line(&self, deadline: Instant, stall: Duration) -> bool {
        self.wait_until(deadline, stall, |state| !state.writing)
    }

    fn wait_until(
        &self,
        deadline: Instant,
        stall: Duration,
        done: impl Fn(&State) -> bool,
    ) -> bool {
        let mut state = self.lock();
        loop {
            if done(&state) {
                return true;
            }
            let now = Instant::now();
            let stalled = state.writing && now.duration_since(state.progress) >= stall;
            if now >= deadline || stalled {
                return false;
            }
            // Wake up now and then to notice a stall: nothing signals its absence of progress.
            let nap = (deadline - now).min(Duration::from_millis(20));
            state = self
                .shared
                .changed
                .wait_timeout(state, nap)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|poisoned| poisoned.into_inner().0);
        }
    }

    /// How long the output has accepted no byte of a line waiting to be written; `None` when
    /// nothing is waiting (an idle output is not stalled).
    pub fn stalled_for(&self) -> Option<Duration> {
        let state = self.lock();
        (state.writing && !state.finished).then(|| state.progress.elapsed())
    }

    /// The writer's side: the next line to write, or `None` when it must end.
    fn next(&self) -> Option<String> {
        let mut state = self.lock();
        loop {
            if state.stopped || (state.closed && state.queue.is_empty()) {
                return None;
            }
            if let Some(line) = state.queue.pop_front() {
                state.writing = true;
                state.progress = Instant::now();
                drop(state);
                self.shared.changed.notify_all();
                return Some(line);
            }
            state = self
                .shared
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Starts the writer thread. `log_line` is called with each line after it is written
/// (used by `--verbose`).
pub fn spawn_writer<W, F>(mut output: W, log_line: F) -> Outbox
where
    W: Write + Send + 'static,
    F: Fn(&str) + Send + 'static,
{
    let outbox = Outbox {
        shared: Arc::new(Shared {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                closed: false,
                stopped: false,
                writing: false,
                progress: Instant::now(),
                finished: false,
            }),
            changed: Condvar::new(),
        }),
    };
    let writer = outbox.clone();
    // Detached on purpose: a write blocked on a client that stopped reading must not keep
    // anyone waiting. The owner of the process decides when to stop waiting (see `server`).
    std::thread::spawn(move || {
        while let Some(line) = writer.next() {
            let written = write_line(&mut output, line, &writer);
            writer.update(|state| {
                state.writing = false;
                state.progress = Instant::now();
                if written.is_err() {
                    // The client closed its end; nobody is left to read answers.
                    state.closed = true;
                    state.stopped = true;
                    state.queue.clear();
                }
            });
            match written {
                Ok(line) => log_line(&line),
                Err(_) => break,
            }
        }
        writer.update(|state| state.finished = true);
    });
    outbox
}

/// Writes one line and its newline, then flushes: a pipe reader sees whole lines only, and
/// nothing waits in a block buffer. Every piece accepted counts as progress. Returns the line.
fn write_line<W: Write>(output: &mut W, line: String, outbox: &Outbox) -> io::Result<String> {
    let mut bytes = line.into_bytes();
    bytes.push(b'\n');
    for piece in bytes.chunks(WRITE_CHUNK) {
        output.write_all(piece)?;
        outbox.update(|state| state.progress = Instant::now());
    }
    output.flush()?;
    bytes.pop();
    Ok(String::from_utf8(bytes).unwrap_or_default())
}

#[cfg(test)]
pub(super) mod tests {
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
        let outbox = spawn_writer(shared.clone(), |_| {});
        assert!(outbox.send("{\"a\":1}".into()));
        assert!(outbox.send("{\"b\":2}".into()));
        outbox.close();
        assert!(!outbox.send("{\"c\":3}".into()), "closed: dropped");
        let deadline = Instant::now() + Duration::from_secs(120);
        assert!(outbox.drain(deadline, Duration::MAX));
        assert_eq!(&*shared.0.lock().unwrap(), b"{\"a\":1}\n{\"b\":2}\n");
    }

    /// A client reading a large line a little at a time; after its first read it pauses
    /// until the test lets it go on, so the test acts while the line is surely half-written.
    struct Slow {
        read: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
        pause: Option<std::sync::mpsc::Receiver<()>>,
    }

    impl Write for Slow {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(512);
            self.read.lock().unwrap().extend_from_slice(&buf[..n]);
            if let Some(pause) = self.pause.take() {
                let _ = pause.recv();
            }
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Blocks in its first write until the test drops the returned sender: a client that
    /// never reads.
    pub(in crate::mcp) struct Unread(std::sync::Mutex<std::sync::mpsc::Receiver<()>>);

    pub(in crate::mcp) fn unread() -> (std::sync::mpsc::Sender<()>, Unread) {
        let (release, blocked) = std::sync::mpsc::channel();
        (release, Unread(std::sync::Mutex::new(blocked)))
    }

    impl Write for Unread {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            let _ = self.0.lock().unwrap().recv();
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn wait_for_writing(outbox: &Outbox) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while outbox.stalled_for().is_none() {
            assert!(Instant::now() < deadline, "the writer never started");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn stop_finishes_the_line_being_written_and_starts_no_other() {
        let read = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (go_on, pause) = std::sync::mpsc::channel();
        let slow = Slow {
            read: read.clone(),
            pause: Some(pause),
        };
        let outbox = spawn_writer(slow, |_| {});
        let big = format!("{{\"x\":\"{}\"}}", "a".repeat(100_000));
        assert!(outbox.send(big.clone()));
        assert!(outbox.send("{\"next\":1}".into()));
        let deadline = Instant::now() + Duration::from_secs(120);
        while read.lock().unwrap().is_empty() {
            assert!(Instant::now() < deadline, "the writer never started");
            std::thread::sleep(Duration::from_millis(1));
        }
        outbox.stop();
        go_on.send(()).unwrap();
        assert!(outbox.finish_line(Instant::now() + Duration::from_secs(120), Duration::MAX));
        let written = read.lock().unwrap().clone();
        let whole = format!("{big}\n").into_bytes();
        assert!(
            written == whole,
            "{} bytes written, expected the one whole line of {}",
            written.len(),
            whole.len()
        );
    }

    #[test]
    fn a_client_that_never_reads_blocks_no_shutdown_step() {
        let (release, output) = unread();
        let outbox = spawn_writer(output, |_| {});
        assert!(outbox.send("{\"stuck\":0}".into()));
        wait_for_writing(&outbox);
        for id in 0..WRITER_QUEUE {
            assert!(outbox.send(format!("{{\"id\":{id}}}")));
        }
        // The queue is full: a producer waits, until the outbox closes and drops its line.
        let producer = outbox.clone();
        let (sent, outcome) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = sent.send(producer.send("{\"late\":1}".into()));
        });
        outbox.close();
        assert_eq!(outcome.recv_timeout(Duration::from_secs(120)), Ok(false));
        let generous = Instant::now() + Duration::from_secs(120);
        assert!(
            !outbox.drain(generous, Duration::from_millis(50)),
            "stalled"
        );
        outbox.stop();
        assert!(
            !outbox.finish_line(generous, Duration::from_millis(50)),
            "still blocked mid-line"
        );
        drop(release);
    }
}
