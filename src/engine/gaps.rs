//! Signal loss: silences longer than a threshold while the ignition was on, judged against
//! the unit's own cadence while stopped.
//!
//! Owns gap detection. Bounds are exact: the last fix before the silence and the first after
//! it. A silence that follows an ignition-off report is the tracker sleeping, not a loss (and
//! so is one after a lone "on" between two "off" reports: the ignition line flickered, or
//! after a lone "on" following "off" reports when the unit is found on where it stood before
//! the tracker's sleep between heartbeats was over: the heartbeat flickered and the engine
//! started later) —
//! unless the unit is found on after it and its odometer advanced: it drove, so the "off"
//! flickered; one
//! still running at "now" is reported open. A silence the unit spent stopped (slow before it,
//! in the same place after it) is a loss only if it is longer than the tracker's own cadence
//! while stopped allows: an adaptive tracker records once an hour, or not at all, while a unit
//! stands with the engine on, and its silence at a client is its cadence (a record due and
//! missed by more than the loss threshold is a loss). That cadence is
//! learned from the unit's own reports — the median interval between consecutive still fixes
//! in one place with the engine on — and applied when the analysis is finished, so every
//! silence is judged against all the data (a tracker never seen reporting twice in a row
//! while stopped is one that sleeps when stopped, for as long as its heartbeats while parked
//! are apart when it beats: an adaptive tracker's "on stop" period is one setting, engine on
//! or off). Silences while moving are judged likewise against the unit's cadence moving: a
//! tracker recording every five minutes is silent five minutes between records. The engine
//! never reads a tracker profile.
//! Likewise for a lone "off" report of a unit that was reporting with the engine on (an "on"
//! report within the loss threshold before it), followed by a silence and then "on" again: it
//! is the tracker asleep with the engine off (a short shutdown) unless the unit's own
//! shutdowns say otherwise — when most of them kept reporting "off" for a while before the
//! tracker slept, a lone "off" straight into a silence is the ignition line flickering before
//! a loss. An older "on" is no witness: a parked tracker's heartbeat that flickered "on" would
//! make the next heartbeat look like a switch-off.

use super::config::DetectionConfig;
use super::evidence::{Evidence, SILENCE, Threshold};
use super::noise::RayleighScale;
use super::{Fix, Gap};
use crate::geometry::earth::distance_m;

/// A fix this slow may be the last before a halt: an adaptive tracker records the change of
/// speed as the unit brakes, not the moment it reaches zero, km/h.
const SLOW_KMH: f64 = 15.0;
/// A silence while moving is a loss beyond this many of the unit's usual intervals while
/// moving (the median interval of an adaptive tracker is shorter than its longest: it records
/// on distance and turns as well as on its period). Stopped, the period is the median.
const CADENCE_FACTOR: f64 = 2.0;
/// Without an odometer, two fixes around the same stop lie within this many stop radii
/// (each carries its own noise).
const SAME_PLACE_RADII: f64 = 2.0;
/// Intervals learned before the cadence is trusted, and their histogram's bin, seconds.
const CADENCE_MIN_SAMPLES: u32 = 5;
const CADENCE_BIN_S: f64 = 10.0;

#[derive(Clone)]
pub struct GapDetector {
    threshold_s: i64,
    still_kmh: f64,
    radius_m: f64,
    /// Intervals between consecutive still fixes in one place with the engine on.
    stopped_cadence: RayleighScale,
    /// Intervals between consecutive fixes with the engine on that are not both still in one
    /// place: a tracker recording every five minutes is silent five minutes between records
    /// while it drives, halts and sets off, which is no loss.
    moving_cadence: RayleighScale,
    /// Intervals between consecutive "off" fixes in one place: the heartbeats of a parked
    /// tracker. Its period while parked bounds its sleep while stopped with the engine on
    /// when no stop showed that (an adaptive tracker's "on stop" period is one setting).
    parked_cadence: RayleighScale,
    prev: Option<Fix>,
    /// When the fix before `prev` was made, if its ignition was off.
    off_before_prev_utc: Option<i64>,
    /// When the fix before `prev` was made, if its ignition was on.
    on_before_prev_utc: Option<i64>,
    /// The run of "off" reports under way since the last "on" one: its first fix time.
    off_run_from: Option<i64>,
    /// Shutdowns seen (a run of "off" reports after an "on" one, ended by a silence): how
    /// many went on reporting "off" after the first, and how many fell silent at once.
    shutdowns_reporting: u32,
    shutdowns_silent: u32,
    /// Silences after a lone "off" report that ended with the unit on: signal losses if the
    /// unit's shutdowns keep reporting (decided in `finish`, against all of them).
    after_lone_off: Vec<Gap>,
    pub gaps: Vec<Gap>,
}

impl GapDetector {
    pub fn new(config: &DetectionConfig) -> Self {
        GapDetector {
            threshold_s: config.perdida_senal_s.round() as i64,
            still_kmh: config.velocidad_detenida_kmh,
            radius_m: config.parada_radio_m,
            stopped_cadence: RayleighScale::new(CADENCE_BIN_S, CADENCE_MIN_SAMPLES),
            moving_cadence: RayleighScale::new(CADENCE_BIN_S, CADENCE_MIN_SAMPLES),
            parked_cadence: RayleighScale::new(CADENCE_BIN_S, CADENCE_MIN_SAMPLES),
            prev: None,
            off_before_prev_utc: None,
            on_before_prev_utc: None,
            off_run_from: None,
            shutdowns_reporting: 0,
            shutdowns_silent: 0,
            after_lone_off: Vec::new(),
            gaps: Vec::new(),
        }
    }

    /// A silence from the fix at `from_utc` until `to_utc`, resting on that one fix.
    fn evidence(&self, from_utc: i64, to_utc: i64) -> Evidence {
        let threshold = Threshold {
            name: SILENCE,
            value: self.threshold_s as f64,
        };
        Evidence::from_fix(from_utc, (to_utc - from_utc) as f64, threshold)
    }

    /// The unit stayed where `before` was until `after`: by the odometer when both carry
    /// one, else by the positions.
    fn same_place(&self, before: &Fix, after: &Fix) -> bool {
        match (before.odometer_m, after.odometer_m) {
            (Some(a), Some(b)) => ((b - a) as f64).abs() <= self.radius_m,
            _ => distance_m(before.point(), after.point()) <= SAME_PLACE_RADII * self.radius_m,
        }
    }

    /// Both fixes carry an odometer and it did not advance beyond a stop's radius between them.
    fn odometer_stood(&self, before: &Fix, after: &Fix) -> bool {
        matches!(
            (before.odometer_m, after.odometer_m),
            (Some(a), Some(b)) if ((b - a) as f64).abs() <= self.radius_m
        )
    }

    /// The odometer says the unit drove between `before` and `after` (positions alone could
    /// be a jump: a night's first fix 200 m off is no drive).
    fn odometer_moved(&self, before: &Fix, after: &Fix) -> bool {
        matches!(
            (before.odometer_m, after.odometer_m),
            (Some(a), Some(b)) if (b - a) as f64 > self.radius_m
        )
    }

    pub fn push(&mut self, fix: &Fix) {
        if let Some(prev) = self.prev {
            let silence_s = fix.ts_utc - prev.ts_utc;
            let both_still = prev.speed_kmh < self.still_kmh && fix.speed_kmh < self.still_kmh;
            if prev.ignition && fix.ignition {
                if both_still && self.same_place(&prev, fix) {
                    self.stopped_cadence.learn(silence_s as f64);
                } else {
                    // Moving, halting or setting off: a fixed-interval tracker's every
                    // interval; an adaptive one's many short ones outnumber its few halts.
                    self.moving_cadence.learn(silence_s as f64);
                }
            }
            if both_still && !prev.ignition && !fix.ignition && self.same_place(&prev, fix) {
                self.parked_cadence.learn(silence_s as f64);
            }
            let silent = silence_s > self.threshold_s;
            // A lone "on" between two "off" reports is the ignition line flickering: the
            // silence after it is the tracker asleep with the engine off.
            let flicker = self.off_before_prev_utc.is_some() && !fix.ignition;
            // A lone "on" after "off" reports, then a silence no longer than the tracker slept
            // between those reports, ending "on" where the unit stood: the "on" was a
            // heartbeat's flicker and the tracker slept on until the engine really started
            // (no heartbeat fell due in the silence, so none went missing).
            let slept_on = self.off_before_prev_utc.is_some_and(|off_utc| {
                silence_s <= prev.ts_utc - off_utc
                    && fix.ignition
                    && both_still
                    && self.same_place(&prev, fix)
            });
            // And an "off" report followed by a silence the unit drove through (found on,
            // elsewhere) was the line flickering too: a unit does not drive asleep.
            let drove_after_off = !prev.ignition && fix.ignition && self.odometer_moved(&prev, fix);
            let on = (prev.ignition && !flicker && !slept_on) || drove_after_off;
            let gap = || Gap {
                from_utc: prev.ts_utc,
                to_utc: Some(fix.ts_utc),
                lat: prev.lat,
                lon: prev.lon,
                // Slow before it, or an odometer that stood through it: the halt's record
                // may read fast when its position jumped far enough that the speed check took
                // its zero for invalid (σ 35 m with 500 m jumps, beyond its allowance), and an
                // odometer that did not advance is the better witness that the unit stood.
                stopped: (prev.speed_kmh < SLOW_KMH || self.odometer_stood(&prev, fix))
                    && self.same_place(&prev, fix),
                evidence: Evidence {
                    last_fix_utc: fix.ts_utc,
                    fixes: 2,
                    ..self.evidence(prev.ts_utc, fix.ts_utc)
                },
            };
            if on && silent {
                self.gaps.push(gap());
            } else if silent && !prev.ignition && fix.ignition && self.reporting_on_before(&prev) {
                // A lone "off" between "on" reports, a silence between them: a shutdown
                // and restart, or a flicker and a loss. The unit's shutdowns tell (`finish`).
                self.after_lone_off.push(gap());
            }
            self.learn_shutdown(&prev, fix, silent);
            self.off_before_prev_utc = (!prev.ignition).then_some(prev.ts_utc);
            self.on_before_prev_utc = prev.ignition.then_some(prev.ts_utc);
        }
        self.prev = Some(*fix);
    }

    /// Whether the report before `off` read "on" and came no more than a signal loss's
    /// threshold before it: the unit was reporting with the engine on when `off` came, so
    /// `off` is a switch-off or a flicker of a running unit. An "on" further back is no such
    /// witness: a parked tracker's heartbeat that flickered "on" half an hour before the next
    /// one would make every later heartbeat look like a fresh switch-off.
    fn reporting_on_before(&self, off: &Fix) -> bool {
        self.on_before_prev_utc
            .is_some_and(|on_utc| off.ts_utc - on_utc <= self.threshold_s)
    }

    /// Follows the runs of "off" reports that start right after an "on" one (within a signal
    /// loss's threshold, as in [`Self::reporting_on_before`]): a run ended by a silence is a
    /// shutdown, and whether the tracker went on reporting "off" after its first report is
    /// this tracker's way of shutting down.
    fn learn_shutdown(&mut self, prev: &Fix, fix: &Fix, silent: bool) {
        if prev.ignition && !fix.ignition {
            let reporting_on = fix.ts_utc - prev.ts_utc <= self.threshold_s;
            self.off_run_from = reporting_on.then_some(fix.ts_utc);
            return;
        }
        let Some(from) = self.off_run_from else {
            return;
        };
        if silent {
            if from < prev.ts_utc {
                self.shutdowns_reporting += 1;
            } else {
                self.shutdowns_silent += 1;
            }
            self.off_run_from = None;
        } else if fix.ignition {
            // Back on without a silence: a flicker or a brief stall, no shutdown.
            self.off_run_from = None;
        }
    }

    /// Closes the books at `now_utc`. Returns whether the unit is silent now after a slow
    /// fix within its cadence while stopped: asleep where it halted, not lost.
    pub fn finish(&mut self, now_utc: i64) -> bool {
        // Still silent after a lone "on" that followed an "off": as likely the flicker.
        if let Some(prev) = &self.prev
            && prev.ignition
            && self.off_before_prev_utc.is_none()
            && now_utc - prev.ts_utc > self.threshold_s
        {
            let evidence = self.evidence(prev.ts_utc, now_utc);
            self.gaps.push(Gap {
                from_utc: prev.ts_utc,
                to_utc: None,
                lat: prev.lat,
                lon: prev.lon,
                stopped: prev.speed_kmh < SLOW_KMH,
                evidence,
            });
        }
        // A lone "off" straight into a silence, from a tracker whose shutdowns mostly went on
        // reporting "off" (each of these silences counted as one that did not): not how this
        // unit shuts down, so the line flickered and the signal was lost.
        let lone_off_flickers = self.shutdowns_reporting > self.shutdowns_silent;
        let after_lone_off = std::mem::take(&mut self.after_lone_off);
        if lone_off_flickers {
            self.gaps.extend(after_lone_off);
            self.gaps.sort_by_key(|gap| gap.from_utc);
        }
        // A silence while stopped within the tracker's own cadence there is no loss; a
        // tracker never seen reporting while stopped, nor beating while parked, has no such
        // cadence to miss. Likewise while moving: a silence is a loss beyond the threshold
        // and beyond the tracker's own cadence when moving.
        let threshold_s = self.threshold_s as f64;
        let beyond = |cadence_s: f64| (CADENCE_FACTOR * cadence_s).max(threshold_s);
        // Standing, the tracker records on its period alone, so the median interval is that
        // period: a record due and missed by more than the loss threshold is a loss.
        let allowed_s = self
            .stopped_cadence
            .median()
            .or_else(|| self.parked_cadence.median())
            .map(|cadence_s| cadence_s + threshold_s);
        let allowed_moving_s = self.moving_cadence.median().map_or(threshold_s, beyond);
        let is_loss = |from_utc: i64, to_utc: Option<i64>, stopped: bool| {
            let silence_s = (to_utc.unwrap_or(now_utc) - from_utc) as f64;
            if stopped {
                allowed_s.is_some_and(|allowed| silence_s > allowed)
            } else {
                silence_s > allowed_moving_s
            }
        };
        let asleep_now = self.prev.is_some_and(|prev| {
            prev.ignition && prev.speed_kmh < SLOW_KMH && !is_loss(prev.ts_utc, None, true)
        });
        self.gaps
            .retain(|gap| is_loss(gap.from_utc, gap.to_utc, gap.stopped));
        // A loss was judged against the unit's cadence: its evidence says so.
        for gap in &mut self.gaps {
            if gap.stopped {
                if let Some(allowed) = allowed_s {
                    gap.evidence.threshold.value = allowed;
                }
            } else {
                gap.evidence.threshold.value = allowed_moving_s;
            }
        }
        asleep_now
    }
}
