//! How long acknowledgements wait inside the receiver, and on what: diagnostics only.
//!
//! Owns two measures the writer and the HTTP handler log at debug level when the receiver
//! stops. [`Waits`] is a histogram of waits (0.1 ms resolution up to [`RANGE`], then one
//! bucket) with its quantiles. [`Timeline`] remembers what the writer thread did in the last
//! moments (positions transactions, analysis slices, waiting for jobs) and splits a slow
//! position's wait — from its job being queued to its answer being sent — between them, so
//! the tail can be traced to the work that held it. Knows no SQL and no HTTP.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Waits up to this long are kept at [`STEP`] resolution; longer ones share the last bucket.
pub const RANGE: Duration = Duration::from_secs(2);
/// The histogram's resolution.
const STEP: Duration = Duration::from_micros(100);

/// A histogram of waits.
#[derive(Debug, Clone)]
pub struct Waits {
    buckets: Vec<u32>,
    count: u64,
    max: Duration,
}

impl Default for Waits {
    fn default() -> Self {
        Waits::new()
    }
}

impl Waits {
    pub fn new() -> Waits {
        let n = (RANGE.as_micros() / STEP.as_micros()) as usize + 1;
        Waits {
            buckets: vec![0; n],
            count: 0,
            max: Duration::ZERO,
        }
    }

    pub fn add(&mut self, wait: Duration) {
        let i = ((wait.as_micros() / STEP.as_micros()) as usize).min(self.buckets.len() - 1);
        self.buckets[i] += 1;
        self.count += 1;
        self.max = self.max.max(wait);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// The `q` quantile (0 to 1) to within [`STEP`] (the bucket's upper edge); the maximum
    /// itself for 1. `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        if self.count == 0 {
            return None;
        }
        if q >= 1.0 {
            return Some(self.max);
        }
        // The same rank as the bench's sorted list: round((n - 1) q), counted from 0.
        let rank = ((self.count - 1) as f64 * q.max(0.0)).round() as u64;
        let mut seen = 0u64;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += u64::from(*n);
            if seen > rank {
                return Some((STEP * (i as u32 + 1)).min(self.max));
            }
        }
        Some(self.max)
    }

    /// How many waits were `at_least` or longer (to within [`STEP`]).
    pub fn at_least(&self, at_least: Duration) -> u64 {
        let from = (at_least.as_micros() / STEP.as_micros()) as usize;
        self.buckets.iter().skip(from).map(|n| u64::from(*n)).sum()
    }

    /// "p50 11.7 ms, p99 68.4 ms, máx 107.1 ms; ≥ 20 ms: 1520, ≥ 50 ms: 210" (Spanish: a log
    /// line).
    pub fn text(&self) -> String {
        let ms = |q: f64| self.quantile(q).map_or(0.0, |d| d.as_secs_f64() * 1e3);
        format!(
            "{} esperas, p50 {:.1} ms, p99 {:.1} ms, máx {:.1} ms; ≥ 10 ms: {}, ≥ 20 ms: {}, ≥ 50 ms: {}",
            self.count,
            ms(0.5),
            ms(0.99),
            ms(1.0),
            self.at_least(Duration::from_millis(10)),
            self.at_least(Duration::from_millis(20)),
            self.at_least(Duration::from_millis(50)),
        )
    }
}

/// What the writer thread was doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// A transaction of positions (the slow wait's own, or an earlier one).
    Positions,
    /// An analysis slice (advancing engines, publishing, republishing).
    Analysis,
    /// Waiting for jobs on an empty queue.
    Idle,
    /// Letting the write-ahead log start over (a checkpoint on the writer's connection).
    Log,
}

const KINDS: usize = 4;

fn index(activity: Activity) -> usize {
    match activity {
        Activity::Positions => 0,
        Activity::Analysis => 1,
        Activity::Idle => 2,
        Activity::Log => 3,
    }
}

/// The writer's recent activities and where the slow waits' time went.
#[derive(Debug)]
pub struct Timeline {
    recent: VecDeque<(Activity, Instant, Instant)>,
    /// Waits at least this long are split.
    slow: Duration,
    slow_waits: u64,
    /// Time of the slow waits spent during each kind of activity; the rest of their time
    /// (between activities: answering, bookkeeping) is `slow_total` minus these.
    split: [Duration; KINDS],
    /// Of `split[Positions]`, the part in the wait's own transaction.
    own: Duration,
    slow_total: Duration,
}

/// Activities older than this are forgotten: no job waits longer unnoticed (its answer
/// times out at 10 s, and a wait that long is counted, just not split).
const MEMORY: Duration = Duration::from_secs(2);

impl Timeline {
    pub fn new(slow: Duration) -> Timeline {
        Timeline {
            recent: VecDeque::new(),
            slow,
            slow_waits: 0,
            split: [Duration::ZERO; KINDS],
            own: Duration::ZERO,
            slow_total: Duration::ZERO,
        }
    }

    /// The writer did `activity` from `start` to `end`.
    pub fn record(&mut self, activity: Activity, start: Instant, end: Instant) {
        while self
            .recent
            .front()
            .is_some_and(|(_, _, e)| end.saturating_duration_since(*e) > MEMORY)
        {
            self.recent.pop_front();
        }
        self.recent.push_back((activity, start, end));
    }

    /// The activity recorded before the last one, and how long it took.
    pub fn previous(&self) -> Option<(Activity, Duration)> {
        let n = self.recent.len();
        (n >= 2).then(|| {
            let (activity, start, end) = self.recent[n - 2];
            (activity, end.saturating_duration_since(start))
        })
    }

    /// A job queued at `queued`, written in the transaction that began at `own_start`, was
    /// answered at `answered`: if that is slow, its time is split between the activities
    /// recorded over it.
    pub fn wait(&mut self, queued: Instant, own_start: Instant, answered: Instant) {
        let wait = answered.saturating_duration_since(queued);
        if wait < self.slow {
            return;
        }
        self.slow_waits += 1;
        self.slow_total += wait;
        for (activity, start, end) in &self.recent {
            let from = (*start).max(queued);
            let to = (*end).min(answered);
            if to > from {
                self.split[index(*activity)] += to - from;
                if *activity == Activity::Positions && *start == own_start {
                    self.own += to - from;
                }
            }
        }
    }

    /// "las 1520 esperas de 20 ms o más: 40 % en transacciones de posiciones (25 % la suya),
    /// 50 % en porciones de análisis, 0 % esperando trabajo, 5 % reiniciando el registro, 5 %
    /// entre medias".
    pub fn text(&self) -> String {
        if self.slow_waits == 0 {
            return format!("ninguna espera de {} ms o más", self.slow.as_millis());
        }
        let share = |d: Duration| 100.0 * d.as_secs_f64() / self.slow_total.as_secs_f64();
        let known: Duration = self.split.iter().sum();
        format!(
            "las {} esperas de {} ms o más ({:.1} ms de media): {:.0} % en transacciones de posiciones ({:.0} % la suya), {:.0} % en porciones de análisis, {:.0} % esperando trabajo, {:.0} % reiniciando el registro, {:.0} % entre medias",
            self.slow_waits,
            self.slow.as_millis(),
            self.slow_total.as_secs_f64() * 1e3 / self.slow_waits as f64,
            share(self.split[0]),
            share(self.own),
            share(self.split[1]),
            share(self.split[2]),
            share(self.split[3]),
            share(self.slow_total.saturating_sub(known)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_follow_the_sorted_list_to_within_a_step() {
        let mut waits = Waits::new();
        let ms = |n: u64| Duration::from_millis(n);
        for n in 1..=100 {
            waits.add(ms(n));
        }
        assert_eq!(waits.count(), 100);
        // The sorted list's rank round(99 × 0.5) = 50 (0-based) is 51 ms; a step above it.
        let p50 = waits.quantile(0.5).unwrap();
        assert!(p50 >= ms(51) && p50 <= ms(51) + STEP, "{p50:?}");
        assert_eq!(waits.quantile(1.0), Some(ms(100)));
        assert_eq!(waits.at_least(ms(50)), 51);
        waits.add(Duration::from_secs(30));
        assert_eq!(waits.quantile(1.0), Some(Duration::from_secs(30)));
        assert_eq!(waits.at_least(ms(2_000)), 1);
        assert_eq!(Waits::new().quantile(0.5), None);
    }

    #[test]
    fn a_slow_wait_is_split_between_the_activities_over_it() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut timeline = Timeline::new(Duration::from_millis(20));
        timeline.record(Activity::Idle, at(0), at(5));
        timeline.record(Activity::Positions, at(5), at(10));
        timeline.record(Activity::Analysis, at(10), at(30));
        timeline.record(Activity::Positions, at(32), at(40));
        // Queued at 8: 2 ms of an earlier transaction, 20 of analysis, 2 between, 8 its own.
        timeline.wait(at(8), at(32), at(40));
        // A fast one is not split.
        timeline.wait(at(35), at(32), at(40));
        assert_eq!(timeline.slow_waits, 1);
        assert_eq!(timeline.split[0], Duration::from_millis(10));
        assert_eq!(timeline.own, Duration::from_millis(8));
        assert_eq!(timeline.split[1], Duration::from_millis(20));
        assert_eq!(timeline.split[2], Duration::ZERO);
        assert_eq!(timeline.slow_total, Duration::from_millis(32));
    }
}
