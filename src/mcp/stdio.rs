//! The process's own stdin and stdout: [`serve_stdio`] runs the server on them and adds what
//! only a real process has — the client hanging up our input, and SIGTERM/SIGINT.
//!
//! Owns the two watchers, which only report an [`Event`]; what the server does about it (the
//! bounded shutdown) is `server`'s business. Never touches stdout: the caller passes it in.

use std::io::{self, BufReader, Write};
use std::sync::mpsc::{self, Sender};

use super::server::{self, Event, ServeOptions};
use super::service::Service;

/// Serves one client over this process's stdin/stdout until stdin ends, the client hangs up
/// while not reading, or SIGTERM/SIGINT arrives; then shuts down within a bounded time (see
/// docs/robustez.md) and returns `Ok`, so the process exits with status 0. Call it once, and
/// let the process exit when it returns: threads blocked in a read, a write or a tool are
/// left behind.
pub fn serve_stdio<W>(
    service: Service,
    stdin: io::Stdin,
    stdout: W,
    options: ServeOptions,
) -> io::Result<()>
where
    W: Write + Send + 'static,
{
    let (events, ends) = mpsc::channel();
    let signals = watch_signals(&events);
    watch_hangup(&events);
    let result = server::run(
        service,
        BufReader::new(stdin),
        stdout,
        options,
        events,
        &ends,
    );
    close_signals(signals);
    result
}

#[cfg(unix)]
type SignalHandle = signal_hook::iterator::Handle;
#[cfg(not(unix))]
type SignalHandle = ();

/// Turns SIGTERM and SIGINT into [`Event::Signal`] instead of killing the process, so the
/// shutdown can finish the line being written. Without it (registration failed) the signals
/// keep their default action.
#[cfg(unix)]
fn watch_signals(events: &Sender<Event>) -> Option<SignalHandle> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    use signal_hook::iterator::Signals;

    let mut signals = match Signals::new([SIGTERM, SIGINT]) {
        Ok(signals) => signals,
        Err(err) => {
            crate::log_warn!("no se pueden atender SIGTERM ni SIGINT: {err}");
            return None;
        }
    };
    let handle = signals.handle();
    let events = events.clone();
    let spawned = std::thread::Builder::new()
        .name("mcp-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                let name = if signal == SIGINT {
                    "SIGINT"
                } else {
                    "SIGTERM"
                };
                if events.send(Event::Signal(name)).is_err() {
                    return;
                }
            }
        });
    if let Err(err) = spawned {
        crate::log_warn!("no se pueden atender SIGTERM ni SIGINT: {err}");
    }
    Some(handle)
}

#[cfg(not(unix))]
fn watch_signals(_events: &Sender<Event>) -> Option<SignalHandle> {
    None
}

#[cfg(unix)]
fn close_signals(handle: Option<SignalHandle>) {
    if let Some(handle) = handle {
        handle.close();
    }
}

#[cfg(not(unix))]
fn close_signals(_handle: Option<SignalHandle>) {}

/// Reports [`Event::Hangup`] when the client closes our stdin, even while unread lines sit in
/// the pipe: a reader held back by a client that does not read our output would otherwise
/// never reach the end of file. `poll` reports a pipe's hang-up (and, on Linux, a socket's
/// half-close) without consuming input. A regular file or a terminal never hangs up here;
/// their end of file is read as usual.
#[cfg(unix)]
fn watch_hangup(events: &Sender<Event>) {
    use rustix::event::{PollFd, PollFlags, poll};

    let events = events.clone();
    let spawned = std::thread::Builder::new()
        .name("mcp-hangup".into())
        .spawn(move || {
            let stdin = io::stdin();
            let hangup = hangup_flags();
            loop {
                let mut fds = [PollFd::new(&stdin, hangup)];
                match poll(&mut fds, None) {
                    Ok(_) => {
                        let got = fds[0].revents();
                        if got.intersects(hangup | PollFlags::ERR) {
                            let _ = events.send(Event::Hangup);
                            return;
                        }
                        if got.contains(PollFlags::NVAL) {
                            return;
                        }
                        // Something not asked for: never spin on it.
                        std::thread::sleep(std::time::Duration::from_millis(100));
                    }
                    Err(rustix::io::Errno::INTR) => {}
                    Err(_) => return,
                }
            }
        });
    if let Err(err) = spawned {
        crate::log_warn!("no se vigilará el cierre de la entrada: {err}");
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn hangup_flags() -> rustix::event::PollFlags {
    rustix::event::PollFlags::HUP | rustix::event::PollFlags::RDHUP
}

#[cfg(all(unix, not(any(target_os = "linux", target_os = "android"))))]
fn hangup_flags() -> rustix::event::PollFlags {
    rustix::event::PollFlags::HUP
}

#[cfg(not(unix))]
fn watch_hangup(_events: &Sender<Event>) {}
