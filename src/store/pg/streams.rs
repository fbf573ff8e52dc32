//! `flota simular`'s extra connections to PostgreSQL: the positions' binary `COPY` and the
//! per-partition key builds spread over several server backends.
//!
//! Owns the load's parallelism. One `COPY` is one server process, and at scale it was the
//! whole load's critical path (152 s of 188 on a 2-vCPU machine, the second core idle), so
//! [`Streams`] keeps a few connections, each on its own thread, that take jobs from one
//! queue: a unit's rows to `COPY` (encoded on the stream's thread) or a statement. Each job
//! commits on its own (autocommit): the connections cannot share the writer's transaction,
//! so the atomicity of a load comes from the staging schema it builds in (see
//! [`PgWriter`](super::write::PgWriter)), not from one transaction. [`Streams::finish`]
//! waits for the queue to drain and hands the connections back for the next phase.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use postgres::Client;

use super::write::copy_positions;
use super::{connect, error};
use crate::store::encoding::PositionRow;
use crate::store::location::PgUrl;
use crate::store::reader::StoreError;

/// One piece of work for a stream.
pub(super) enum Job {
    /// A unit's positions, by binary `COPY` into `posiciones`.
    Copy {
        vehicle_id: i64,
        rows: Vec<PositionRow>,
    },
    /// Statements run as they are (one partition's key, its statistics).
    Sql(String),
}

/// What a stream's thread gives back: its connection, and its time at work or its failure.
type Outcome = (Client, Result<Duration, postgres::Error>);

/// Connections working through one queue of [`Job`]s.
pub(super) struct Streams {
    url: PgUrl,
    idle: Vec<Client>,
    running: Option<Running>,
}

struct Running {
    jobs: SyncSender<Job>,
    /// Up as soon as a stream failed: the next [`Streams::send`] stops and reports it.
    failed: Arc<AtomicBool>,
    threads: Vec<JoinHandle<Outcome>>,
}

/// How many streams a load uses: the client's cores (the server's are unknown to it; on one
/// machine they are the same), at least two so that the `COPY` of one unit overlaps the next
/// one's, at most four (each is a server process and a share of its memory).
pub(super) fn count() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4))
}

impl Streams {
    /// `count` connections to `url`, each with `setup` run on it (the staging schema on the
    /// search path, the session's settings).
    pub(super) fn connect(url: &PgUrl, count: usize, setup: &str) -> Result<Streams, StoreError> {
        let mut idle = Vec::with_capacity(count);
        for _ in 0..count {
            let mut client = connect(url, false)?;
            client.batch_execute(setup).map_err(|e| error(url, &e))?;
            idle.push(client);
        }
        Ok(Streams {
            url: url.clone(),
            idle,
            running: None,
        })
    }

    /// Queues `job`, starting the streams' threads if they are not running; waits while every
    /// stream is busy and the queue is full (a unit's rows are megabytes). A stream's failure
    /// is returned here as soon as it is seen.
    pub(super) fn send(&mut self, job: Job) -> Result<(), StoreError> {
        if self.running.is_none() {
            self.running = Some(self.start());
        }
        let sent = match &self.running {
            Some(r) if !r.failed.load(Ordering::Relaxed) => r.jobs.send(job).is_ok(),
            _ => false,
        };
        if sent {
            return Ok(());
        }
        // A stream failed (or every stream is gone): its error is the one to report.
        self.finish()?;
        Err(self.gone())
    }

    fn start(&mut self) -> Running {
        let (jobs, queue) = sync_channel::<Job>(self.idle.len().max(1));
        let queue = Arc::new(Mutex::new(queue));
        let failed = Arc::new(AtomicBool::new(false));
        let threads = self
            .idle
            .drain(..)
            .map(|client| {
                let queue = Arc::clone(&queue);
                let failed = Arc::clone(&failed);
                std::thread::spawn(move || work(client, &queue, &failed))
            })
            .collect();
        Running {
            jobs,
            failed,
            threads,
        }
    }

    /// Waits until every queued job is done; returns the streams' summed time at work, or the
    /// first failure. The connections are kept for the next jobs (unless one failed).
    pub(super) fn finish(&mut self) -> Result<Duration, StoreError> {
        let Some(running) = self.running.take() else {
            return Ok(Duration::ZERO);
        };
        drop(running.jobs);
        let mut spent = Duration::ZERO;
        let mut failure = None;
        for thread in running.threads {
            match thread.join() {
                Ok((client, Ok(worked))) => {
                    spent += worked;
                    self.idle.push(client);
                }
                Ok((_, Err(e))) => {
                    failure.get_or_insert_with(|| error(&self.url, &e));
                }
                Err(_) => {
                    failure.get_or_insert_with(|| self.gone());
                }
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(spent),
        }
    }

    /// The error for streams that stopped without saying why.
    fn gone(&self) -> StoreError {
        StoreError::Server {
            path: self.url.shown().to_owned(),
            message: "una conexión de la carga terminó de forma inesperada".to_owned(),
        }
    }
}

impl Drop for Streams {
    fn drop(&mut self) {
        // Lets the threads end (their queue closes) before their connections go.
        let _ = self.finish();
    }
}

/// A stream's thread: jobs from `queue` until it closes or one fails.
fn work(mut client: Client, queue: &Mutex<Receiver<Job>>, failed: &AtomicBool) -> Outcome {
    let mut buf = Vec::new();
    let mut spent = Duration::ZERO;
    loop {
        // The lock is held only while waiting for the next job, not while doing it.
        let job = crate::plumbing::mutex::lock(queue).recv();
        let Ok(job) = job else {
            return (client, Ok(spent));
        };
        let started = Instant::now();
        let done = match job {
            Job::Copy { vehicle_id, rows } => {
                copy_positions(&mut client, &mut buf, vehicle_id, &rows)
            }
            Job::Sql(sql) => client.batch_execute(&sql),
        };
        spent += started.elapsed();
        if let Err(e) = done {
            failed.store(true, Ordering::Relaxed);
            return (client, Err(e));
        }
    }
}
