//! The continuous motion between two discrete events, and the truth it leaves.
//!
//! Owns integrating a unit's speed along its route in steps of at most one second (up to
//! [`CRUISE_STEP_MS`] when cruising steadily with nothing within reach), arriving exactly at a
//! halt, starting an injected speeding episode or an injected halt on the road when its time or
//! place has come, and the bookkeeping each step leaves in the truth: kilometres per local day,
//! fence entries and exits, and intervals above the limit.

use super::{
    Agent, CRUISE_STEP_MS, Episode, FORCED_STOP_CLEARANCE_M, Halt, HaltKind, OpenSpeeding,
    PendingSpeeding, Phase,
};
use crate::geometry::earth::LatLon;
use crate::scenario::SPEEDING_CLEARANCE_M;
use crate::sim::Sink;
use crate::sim::truth::TruthEvent;

impl<S: Sink> Agent<'_, S> {
    ///
    /// Returns `false` when the unit came to a halt before `t_ms`: the clock stays at the halt,
    /// whose own events (a dwell's end, the ignition off) may fall before `t_ms` and must be
    /// handled first — a tracker ticking every five minutes would otherwise run them at its
    /// next tick, up to five minutes late.
    pub(super) fn advance_to(&mut self, t_ms: i64) -> bool {
        while self.now_ms < t_ms {
            if !self.phase.moving() {
                self.now_ms = t_ms;
                return true;
            }
            let dt_ms = (t_ms - self.now_ms).min(self.max_step_ms());
            self.step(dt_ms);
            if !self.phase.moving() && self.now_ms < t_ms {
                return false;
            }
        }
        true
    }

    /// One second while anything can change; up to [`CRUISE_STEP_MS`] when cruising at the
    /// wanted speed with no halt, limit change or injection within reach of the step. The
    /// motion is then exactly linear, so the longer step loses nothing.
    fn max_step_ms(&self) -> i64 {
        if self.phase != Phase::Driving
            || self.episode.is_some()
            || self.injection_within(CRUISE_STEP_MS)
            || self.speed_ms != self.wanted_ms
        {
            return 1000;
        }
        let v = self.speed_ms;
        let horizon = v * (CRUISE_STEP_MS as f64 / 1000.0)
            + v * v / (2.0 * self.unit.dynamics.brake_ms2)
            + 40.0;
        let reach = self.along_m + horizon;
        let halt = self.halts.front().map_or(f64::NEG_INFINITY, |h| h.along_m);
        // The limits are sorted by where they start: none from the first starting beyond
        // `reach` on has a boundary within it.
        let within = |b: f64| b > self.along_m && b <= reach;
        let limit_change = self.courses[self.route]
            .limits
            .iter()
            .take_while(|(span, _)| span.from_m <= reach)
            .any(|(span, _)| within(span.from_m) || within(span.to_m));
        if halt <= reach || limit_change {
            return 1000;
        }
        CRUISE_STEP_MS
    }

    /// Integrates the motion over `dt_ms` (at most a second), or up to an arrival.
    fn step(&mut self, dt_ms: i64) {
        let Some(halt_along) = self.halts.front().map(|h| h.along_m) else {
            self.phase = Phase::Parked;
            return;
        };
        let t0 = self.now_ms;
        let dt = dt_ms as f64 / 1000.0;
        let dyn_ = self.unit.dynamics;
        let v = self.speed_ms;
        let s0 = self.along_m;
        let dist = (halt_along - s0).max(0.0);

        if let Some(episode) = self.episode
            && t0 >= episode.until_ms
        {
            self.episode = None;
        }
        self.maybe_start_speeding(t0, dist);
        self.maybe_force_stop(t0, dist);
        let halt_along = self.halts.front().map_or(halt_along, |h| h.along_m);
        let dist = (halt_along - s0).max(0.0);

        let stopping_m = v * v / (2.0 * dyn_.brake_ms2);
        let mut accel = if dist <= stopping_m + v * dt * 0.5 + 0.2 {
            // Brake for the halt: the constant deceleration that stops exactly there.
            self.phase = Phase::Approaching;
            self.episode = None;
            -(v * v / (2.0 * dist.max(0.05))).min(3.0 * dyn_.brake_ms2)
        } else {
            let compliance = self.world.behaviour.cumplimiento_limite;
            let look_m = (s0 + stopping_m + 30.0).min(halt_along);
            let limit = self.limit_here(s0).min(self.limit_kmh_at(look_m));
            let wanted = match self.episode {
                Some(episode) => episode.speed_ms,
                None => self.desired_ms.min(limit * compliance / 3.6),
            }
            .min(dyn_.top_speed_kmh / 3.6);
            self.wanted_ms = wanted;
            if v < wanted {
                dyn_.accel_ms2.min((wanted - v) / dt)
            } else {
                -dyn_.brake_ms2.min((v - wanted) / dt)
            }
        };
        if self.phase == Phase::Approaching && dist < 0.05 {
            accel = 0.0;
        }
        let mut v1 = (v + accel * dt).max(0.0);
        if self.phase != Phase::Approaching && (v1 - self.wanted_ms).abs() < 1e-9 {
            // Land exactly on the wanted speed so steady cruising is recognised.
            v1 = self.wanted_ms;
        }
        let mut ds = (v + v1) / 2.0 * dt;
        let mut t1 = t0 + dt_ms;
        let arrived = self.phase == Phase::Approaching
            && (ds >= dist - 0.05 || (v1 < 0.2 && dist - ds < 0.5));
        if arrived {
            // Time to cover the remaining distance under the braking profile, at most dt.
            let needed = if v > 0.0 {
                (2.0 * dist / v).min(dt)
            } else {
                dt
            };
            t1 = t0 + ((needed * 1000.0).round() as i64).clamp(1, dt_ms);
            ds = dist;
            v1 = 0.0;
        } else if self.phase == Phase::Departing && v1 >= 0.9 * self.desired_ms.max(1.0) {
            self.phase = Phase::Driving;
        }
        let s1 = s0 + ds;
        if ds > 0.0 {
            // Moved: a stop it set off from has ended (before this step's truth).
            self.settle_departure();
            let route = &self.routes[self.route];
            self.segment = route.segment_from(self.segment, s1);
            self.heading_deg = route.headings[self.segment];
        }
        self.account(t0, t1, s0, s1, v1);
        self.along_m = s1;
        self.speed_ms = v1;
        self.now_ms = t1;
        if arrived {
            self.arrive();
        }
    }

    fn maybe_start_speeding(&mut self, t0: i64, dist_to_halt: f64) {
        let Some(pending) = self.pending_speeding else {
            return;
        };
        if !matches!(self.phase, Phase::Driving | Phase::Departing) || self.stopping_now() {
            return;
        }
        let (speed_ms, duration_ms, due) = match pending {
            PendingSpeeding::AtDistance {
                along_m,
                speed_ms,
                duration_ms,
            } => (speed_ms, duration_ms, self.along_m >= along_m),
            PendingSpeeding::AtTime {
                from_ms,
                speed_ms,
                duration_ms,
            } => (speed_ms, duration_ms, t0 >= from_ms),
        };
        if !due {
            return;
        }
        // An open stretch long enough to hold the whole episode: a delivery ahead would cut
        // it short.
        let needed = speed_ms * duration_ms as f64 / 1000.0 + SPEEDING_CLEARANCE_M;
        let clear = self
            .halts
            .iter()
            .find(|h| !matches!(h.kind, HaltKind::Light { .. }))
            .map_or(0.0, |h| h.along_m - self.along_m);
        let ready = clear >= needed;
        if !ready || dist_to_halt < 1.0 {
            return;
        }
        self.pending_speeding = None;
        self.episode = Some(Episode {
            speed_ms,
            until_ms: t0 + duration_ms,
        });
        // A speeding driver does not stop at the lights on that stretch.
        let reach = self.along_m + speed_ms * (duration_ms as f64 / 1000.0 + 30.0) + 500.0;
        self.halts
            .retain(|h| !(matches!(h.kind, HaltKind::Light { .. }) && h.along_m < reach));
    }

    /// Truth bookkeeping for the movement from (t0, s0) to (t1, s1) ending at speed `v1`.
    fn account(&mut self, t0: i64, t1: i64, s0: f64, s1: f64, v1: f64) {
        let ds = s1 - s0;
        self.odometer_m += ds;
        let day = self.day_index(t1);
        if let Some(km) = self.km_by_day.get_mut(day) {
            *km += ds / 1000.0;
        }
        if ds > 0.0 {
            let at = |b: f64| t0 + (((b - s0) / ds) * (t1 - t0) as f64).round() as i64;
            let length = self.routes[self.route].length_m();
            let courses = self.courses;
            for span in &courses[self.route].spans {
                // Sorted by start: from here on no span starts or ends by `s1`.
                if span.from_m > s1 {
                    break;
                }
                if s0 < span.from_m && span.from_m <= s1 && self.visits[span.fence].is_none() {
                    self.visits[span.fence] = Some(Some(at(span.from_m)));
                }
                // A span that runs to the route's end is left only by the next departure.
                if s0 < span.to_m && span.to_m <= s1 && span.to_m < length {
                    self.close_visit(span.fence, Some(at(span.to_m)));
                }
            }
        }
        let speed_kmh = v1 * 3.6;
        let limit = self.limit_kmh_at(s1);
        self.limit_left = (self.route, s1, limit);
        match (&mut self.speeding_truth, speed_kmh > limit) {
            (None, true) => {
                self.speeding_truth = Some(OpenSpeeding {
                    start_ms: t1,
                    max_kmh: speed_kmh,
                    limit_kmh: limit,
                    injected: self.episode.is_some(),
                });
            }
            (Some(open), true) => {
                open.max_kmh = open.max_kmh.max(speed_kmh);
                open.limit_kmh = open.limit_kmh.min(limit);
                open.injected |= self.episode.is_some();
            }
            (Some(_), false) => self.close_speeding(t1),
            (None, false) => {}
        }
    }

    /// An injected long stop asked for a time: once that time has come, the unit halts on the
    /// road where it can (clear of the halts before and after it, not while speeding).
    fn maybe_force_stop(&mut self, t0: i64, dist_to_halt: f64) {
        let Some((at_ms, dwell_ms)) = self.pending_stop else {
            return;
        };
        if t0 < at_ms
            || self.episode.is_some()
            || self.stopping_now()
            || !matches!(self.phase, Phase::Driving | Phase::Departing)
        {
            return;
        }
        let v = self.speed_ms;
        let braking_m = v * v / (2.0 * self.unit.dynamics.brake_ms2) + 1.0;
        if self.along_m - self.left_halt_at_m < FORCED_STOP_CLEARANCE_M
            || dist_to_halt - braking_m < FORCED_STOP_CLEARANCE_M
        {
            return;
        }
        self.pending_stop = None;
        self.halts.push_front(Halt {
            along_m: self.along_m + braking_m,
            kind: HaltKind::Forced { dwell_ms },
        });
    }

    /// [`Agent::limit_kmh_at`] where the unit stands: the last step ended there and already
    /// looked it up ([`Agent::account`]), unless the unit has been moved since.
    fn limit_here(&self, along_m: f64) -> f64 {
        match self.limit_left {
            (route, at, limit) if route == self.route && at == along_m => limit,
            _ => self.limit_kmh_at(along_m),
        }
    }

    /// Braking for the halt where the unit stays until `ahora`.
    fn stopping_now(&self) -> bool {
        self.frozen
            || self
                .halts
                .front()
                .is_some_and(|h| h.kind == HaltKind::StopNow)
    }

    /// Whether a pending injection may start within `ms` (the step must then be short).
    fn injection_within(&self, ms: i64) -> bool {
        let soon = |at_ms: i64| at_ms <= self.now_ms + ms;
        let speeding = match self.pending_speeding {
            Some(PendingSpeeding::AtTime { from_ms, .. }) => soon(from_ms),
            Some(PendingSpeeding::AtDistance { .. }) => true,
            None => false,
        };
        speeding || self.pending_stop.is_some_and(|(at_ms, _)| soon(at_ms))
    }

    pub(super) fn close_speeding(&mut self, end_ms: i64) {
        if let Some(open) = self.speeding_truth.take() {
            self.sink.truth(TruthEvent::ExcesoVelocidad {
                placa: self.unit.plate.clone(),
                inicio_utc: open.start_ms.div_euclid(1000),
                fin_utc: end_ms.div_euclid(1000),
                velocidad_max_kmh: (open.max_kmh * 10.0).round() / 10.0,
                limite_kmh: open.limit_kmh,
                inyectado: open.injected,
            });
        }
    }

    /// The local day holding `t_ms` (the first if before it): the last day start at or before
    /// it ([`days_begun`]).
    fn day_index(&mut self, t_ms: i64) -> usize {
        self.days_begun = days_begun(&self.day_starts_ms, self.days_begun, t_ms);
        self.days_begun.saturating_sub(1)
    }

    pub(super) fn position(&self) -> LatLon {
        let route = &self.routes[self.route];
        let segment = route.segment_from(self.segment, self.along_m);
        route.at_segment(segment, self.along_m).0
    }
}

/// How many of the sorted `starts` are at or before `t_ms` (`partition_point`'s answer),
/// counted on from `begun`, the answer for an earlier time. Each step asks with a later time
/// than the one before, so the count only moves forward from where the last step left it
/// rather than being searched for again; a time before the last start counted (never asked
/// by the simulator) searches.
fn days_begun(starts: &[i64], begun: usize, t_ms: i64) -> usize {
    let mut begun = begun.min(starts.len());
    if begun > 0 && starts[begun - 1] > t_ms {
        begun = starts.partition_point(|start| *start <= t_ms);
    }
    while starts.get(begun).is_some_and(|start| *start <= t_ms) {
        begun += 1;
    }
    begun
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Counted on from the previous answer, as the steps ask, or from a later time's (a
        /// time going back), the count is the binary search's.
        #[test]
        fn days_begun_is_the_search_s_answer(
            mut starts in proptest::collection::vec(-50i64..50, 0..12),
            times in proptest::collection::vec(-60i64..60, 1..40),
            sorted_times in any::<bool>(),
        ) {
            starts.sort_unstable();
            let mut times = times;
            if sorted_times {
                times.sort_unstable();
            }
            let mut begun = 0;
            for t in times {
                begun = days_begun(&starts, begun, t);
                prop_assert_eq!(begun, starts.partition_point(|s| *s <= t), "at {}", t);
            }
        }
    }
}
