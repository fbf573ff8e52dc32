//! Geofence visits with a debounce that resists boundary noise but keeps exact-ish times.
//!
//! Owns one small state machine per fence. A fix on the other side of the fence from the
//! confirmed state starts a pending crossing, timed where the straight line between the two
//! fixes crosses the boundary; the crossing is confirmed once the unit has stayed on the new
//! side for the confirmation time, counted from that crossing (a tracker reporting every 30 s
//! shows a 75 s pass with two fixes 30 s apart), and any fix back on the old side cancels it. Counting four
//! reports and stamping the crossing with the first of them would be about 45 s late; here
//! the stamp is the interpolated crossing itself. A unit inside at its first fix has a
//! visit "since before the data" (and one found inside within the debounce of a first fix
//! outside, since that first side rested on one outlier). Silences do not end a visit by themselves, so a night parked
//! inside the depot is one visit across midnight. A parked unit is where its stop's centre is
//! (the engine hands that position for the fixes the stop detector holds for noise around a
//! stop): drift and jumps at a fence edge do not flap, and a crossing the centre shows is
//! dated no later than the stop's start — the unit crossed before it halted.

use super::config::DetectionConfig;
use super::distance::Cosines;
use super::evidence::{Evidence, FENCE_CONFIRMATION, Threshold};
use super::{Fix, Visit};
use crate::geometry::earth::{distance_m, lerp};
use crate::geometry::geofence::Geofence;

#[derive(Debug, Clone, Copy)]
struct Track {
    inside: bool,
    /// Visit start and whether it began at the data's first fix.
    entry: Option<(i64, bool)>,
    /// Pending crossing: its time (an earlier cancelled entry's, when repeated), the first
    /// fix on the new side, and when the unit reached that side, which the time there counts
    /// from: the interpolated crossing, or for a parked unit's centre its first fix there.
    pending: Option<(i64, i64, i64)>,
    /// A pending crossing that a brief return cancelled: its time and when it was cancelled.
    /// If the same entry happens again soon, the visit starts at the first one — the unit
    /// drove along the edge, it did not arrive twice. An exit is always dated by its own
    /// fixes: after a dip out and back, the unit left when it left for good.
    cancelled: Option<(i64, i64)>,
    /// When (the fix time) the current side was confirmed.
    confirmed_utc: i64,
    /// The pending crossing was shown by a parked unit's centre: cancelled, it is no
    /// earlier crossing to keep (the centre wobbled; the unit did not cross).
    pending_parked: bool,
    /// The fixes inside the open visit, and those inside since a pending entry began.
    evidence: Option<Evidence>,
    pending_evidence: Option<Evidence>,
    /// The pending crossing rests on one fix that came after a silence as long as a signal
    /// loss: its time on the new side is counted across the silence, so it does not confirm
    /// the crossing by itself. The next fix says whether it was a jump.
    lone: Option<Fix>,
}

impl Track {
    /// Outside, as confirmed, with no crossing under way: a fix outside the fence changes
    /// nothing in it.
    fn idle(&self) -> bool {
        !self.inside && self.pending.is_none() && self.lone.is_none()
    }

    /// Takes a confirmed crossing at `at` to the `inside` side: starts a visit, or ends the
    /// open one and returns its start.
    fn cross(&mut self, inside: bool, at: i64) -> Option<(i64, bool)> {
        self.inside = inside;
        if inside {
            self.entry = Some((at, false));
            None
        } else {
            self.entry.take()
        }
    }
}

/// The visit of `fence` that started at `entry` (its time, and whether at the data's first
/// fix) and ended at `exit_utc` (`None`: still inside), resting on `evidence`.
fn visit(
    fence: usize,
    (entry_utc, from_data_start): (i64, bool),
    exit_utc: Option<i64>,
    evidence: Option<Evidence>,
    threshold: Threshold,
) -> Visit {
    Visit {
        fence,
        entry_utc,
        exit_utc,
        from_data_start,
        evidence: evidence.unwrap_or(Evidence::from_fix(entry_utc, 0.0, threshold)),
    }
}

/// A cancelled entry repeated within this long keeps the first entry's time, seconds.
const RETRY_S: i64 = 60;

/// Whether `lone`, the first fix after a silence, on the other side of a fence, is a position
/// jump given `next`, back on the first side within the debounce (`confirm_s`): no speed
/// either reports covers the distance between them in the time between, with `noise_m` of
/// position noise. A unit that really crossed during the silence and came back shows fixes
/// its speeds join; a 200 m jump one second before a fix at 23 km/h does not.
fn is_jump(lone: &Fix, next: &Fix, confirm_s: i64, noise_m: f64) -> bool {
    let dt = next.ts_utc - lone.ts_utc;
    let reach_m = lone.speed_kmh.max(next.speed_kmh).max(0.0) / 3.6 * dt as f64 + noise_m;
    dt < confirm_s && distance_m(lone.point(), next.point()) > reach_m
}

/// A crossing shown by a lone fix after a silence (`track.lone`), decided by the fix after it,
/// `fix`: when that one is back on the old side, a lone fix farther than the speeds reach was a
/// position jump and the crossing is dropped (`true`: nothing more to do with `fix`); one the
/// unit could have reached stands at the lone fix's time, and `fix` is then a crossing back.
fn settle_lone(
    track: &mut Track,
    index: usize,
    fix: &Fix,
    now_inside: bool,
    noise_m: f64,
    visits: &mut Vec<Visit>,
    limits: Limits,
) -> bool {
    let Some(lone) = track.lone.take() else {
        return false;
    };
    if now_inside != track.inside {
        return false;
    }
    if is_jump(&lone, fix, limits.confirm_s, noise_m) {
        // The side never changed: the lone fix was a position jump.
        track.pending = None;
        track.pending_evidence = None;
        return true;
    }
    // The unit was there: the crossing stands as the lone fix showed it, and this fix is a
    // crossing back (unless parked since: the caller's next rule).
    confirm(track, index, !now_inside, lone.ts_utc, visits, limits);
    false
}

/// The crossing `fix`, the first on a fence's new side, begins on `track`: when it happened
/// (back-dated between `prev` and `fix`, or to a retry's earlier try), `fix`'s time, and when
/// the unit reached the new side; stored as the track's pending crossing.
fn begin_crossing(
    track: &mut Track,
    fence: &Geofence,
    prev: &Fix,
    fix: &Fix,
    now_inside: bool,
    parked_since: Option<i64>,
) -> (i64, i64, i64) {
    let crossed = crossing(fence, prev, fix);
    let at = match track.cancelled {
        Some((earlier, when)) if now_inside && fix.ts_utc - when <= RETRY_S => earlier,
        _ => crossed,
    };
    track.pending_parked = parked_since.is_some();
    let at = parked_since.map_or(at, |since| at.min(since));
    // A parked unit's centre crossed when it moved, not when it halted: its time on the new
    // side counts from its first fix there.
    let reached = if parked_since.is_some() {
        fix.ts_utc
    } else {
        crossed
    };
    track.pending = Some((at, fix.ts_utc, reached));
    (at, fix.ts_utc, reached)
}

#[derive(Clone)]
pub struct FenceDetector {
    confirm_s: i64,
    /// How far apart position noise alone puts two fixes of one place, metres.
    noise_m: f64,
    /// A silence this long between two fixes is a signal loss (`perdida_senal_s`), seconds:
    /// a crossing shown by one fix after it waits for the next.
    silence_s: i64,
    tracks: Vec<Track>,
    prev: Option<Fix>,
    /// The data's first fix time.
    first_utc: i64,
    /// After the last fix, every track was outside, as confirmed, with no crossing under
    /// way: a fix no fence holds then changes nothing, and the tracks are not walked.
    idle: bool,
    pub visits: Vec<Visit>,
}

/// What confirming a crossing needs besides the track.
#[derive(Clone, Copy)]
struct Limits {
    confirm_s: i64,
    /// The data's first fix time.
    first_utc: i64,
    threshold: Threshold,
}

/// Confirms `track`'s pending crossing to the `inside` side at the fix of `fix_utc`: starts a
/// visit, or ends the open one (pushed onto `visits`).
fn confirm(
    track: &mut Track,
    index: usize,
    inside: bool,
    fix_utc: i64,
    visits: &mut Vec<Visit>,
    limits: Limits,
) {
    let Some((at, first_new, _)) = track.pending.take() else {
        return;
    };
    // The data's first side, left before the debounce could confirm it, rested on an
    // outlier (a cold start's first fix lands kilometres away): the unit was on the new side
    // since before the data.
    let first_side_unconfirmed =
        track.confirmed_utc == i64::MIN && first_new - limits.first_utc < limits.confirm_s;
    track.cancelled = None;
    track.lone = None;
    track.confirmed_utc = fix_utc;
    if inside {
        track.evidence = track.pending_evidence.take();
    }
    if first_side_unconfirmed {
        track.inside = inside;
        track.entry = inside.then_some((limits.first_utc, true));
        if !inside {
            track.evidence = None;
        }
        return;
    }
    if let Some(entry) = track.cross(inside, at) {
        let evidence = track.evidence.take();
        visits.push(visit(index, entry, Some(at), evidence, limits.threshold));
    }
}

/// When the segment a→b crosses the boundary of `fence` (a on one side, b on the other).
fn crossing(fence: &Geofence, a: &Fix, b: &Fix) -> i64 {
    let a_inside = fence.contains(a.point());
    let (mut lo, mut hi) = (0.0, 1.0);
    for _ in 0..12 {
        let mid = (lo + hi) / 2.0;
        if fence.contains(lerp(a.point(), b.point(), mid)) == a_inside {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    a.ts_utc + ((lo + hi) / 2.0 * (b.ts_utc - a.ts_utc) as f64).round() as i64
}

impl FenceDetector {
    pub fn new(config: &DetectionConfig, fences: usize) -> Self {
        FenceDetector {
            confirm_s: config.geocerca_confirmacion_s.round() as i64,
            noise_m: config.parada_radio_m,
            silence_s: config.perdida_senal_s.round() as i64,
            tracks: vec![
                Track {
                    inside: false,
                    entry: None,
                    pending: None,
                    cancelled: None,
                    confirmed_utc: i64::MIN,
                    pending_parked: false,
                    evidence: None,
                    pending_evidence: None,
                    lone: None,
                };
                fences
            ],
            prev: None,
            first_utc: i64::MIN,
            idle: false,
            visits: Vec::new(),
        }
    }

    /// What a visit is held to: the time inside that confirms an entry.
    fn threshold(&self) -> Threshold {
        Threshold {
            name: FENCE_CONFIRMATION,
            value: self.confirm_s as f64,
        }
    }

    /// `inside[i]` tells whether `fix` lies inside fence `i`. `parked_since`: the fix is a
    /// parked unit's (its position the stop's centre), parked since then — a crossing it
    /// shows happened before the unit halted, so it is dated no later than that. `cosines`:
    /// the engine's memo of latitude cosines (the fix's own is in it already).
    pub fn push(
        &mut self,
        fix: &Fix,
        inside: &[bool],
        fences: &[Geofence],
        parked_since: Option<i64>,
        cosines: &mut Cosines,
    ) {
        let first = self.prev.is_none();
        let in_any = inside.iter().any(|inside| *inside);
        if !first && self.idle && !in_any {
            self.prev = Some(*fix);
            return;
        }
        if first {
            self.first_utc = fix.ts_utc;
        }
        let threshold = self.threshold();
        let limits = Limits {
            confirm_s: self.confirm_s,
            first_utc: self.first_utc,
            threshold,
        };
        // The fix's latitude's cosine, for the depth inside a fence, only when some fence
        // holds the fix, from the memo: `cos` called here was hoisted out of its condition by
        // the compiler (it has no side effects) and made for every fix, ~5 M a worker.
        let cos_lat = in_any.then(|| cosines.of(fix.lat));
        // A moving fix after a silence longer than a signal loss (see `settle_lone`).
        let after_silence = parked_since.is_none()
            && self
                .prev
                .is_some_and(|p| fix.ts_utc - p.ts_utc > self.silence_s);
        for (index, track) in self.tracks.iter_mut().enumerate() {
            let now_inside = inside[index];
            // Nothing below would change it (most fences, for most fixes).
            if !first && !now_inside && track.idle() {
                continue;
            }
            // Only called for a fix inside fence `index`, so `cos_lat` is known.
            let depth_m =
                || fences[index].edge_distance_m_at(fix.point(), cos_lat.unwrap_or(f64::NAN));
            if first {
                track.inside = now_inside;
                if now_inside {
                    track.entry = Some((fix.ts_utc, true));
                    track.evidence = Some(Evidence::from_fix(fix.ts_utc, depth_m(), threshold));
                }
                continue;
            }
            if now_inside
                && track.inside
                && let Some(evidence) = &mut track.evidence
            {
                evidence.add(fix.ts_utc, depth_m());
            }
            if settle_lone(
                track,
                index,
                fix,
                now_inside,
                self.noise_m,
                &mut self.visits,
                limits,
            ) {
                continue;
            }
            // A side confirmed during this very stop stands: the centre wobbles across the
            // edge as it settles, the unit did not move.
            if parked_since.is_some_and(|since| track.confirmed_utc >= since)
                && track.pending.is_none()
            {
                continue;
            }
            if now_inside == track.inside {
                if let Some((at, _, _)) = track.pending.take() {
                    track.cancelled = (!track.pending_parked).then_some((at, fix.ts_utc));
                }
                continue;
            }
            let (_, first_new, reached) = match track.pending {
                Some(pending) => pending,
                None => {
                    let prev = self.prev.unwrap_or(*fix);
                    begin_crossing(track, &fences[index], &prev, fix, now_inside, parked_since)
                }
            };
            if now_inside {
                match &mut track.pending_evidence {
                    Some(evidence) if fix.ts_utc != first_new => {
                        evidence.add(fix.ts_utc, depth_m())
                    }
                    _ => {
                        track.pending_evidence =
                            Some(Evidence::from_fix(fix.ts_utc, depth_m(), threshold))
                    }
                }
            }
            if fix.ts_utc - reached >= self.confirm_s {
                // The crossing's only fix on the new side came after a silence: it is the
                // silence that lasted the debounce, not the unit's time there. The next fix
                // says whether that fix was the unit or a jump.
                if fix.ts_utc == first_new && after_silence {
                    track.lone = Some(*fix);
                    continue;
                }
                confirm(
                    track,
                    index,
                    now_inside,
                    fix.ts_utc,
                    &mut self.visits,
                    limits,
                );
            }
        }
        self.prev = Some(*fix);
        self.idle = self.tracks.iter().all(Track::idle);
    }

    /// Visits still open at the end of the data (pending crossings not yet confirmed are
    /// judged as if confirmed when they have lasted long enough by `now`).
    pub fn finish(&mut self, now_utc: i64) {
        let threshold = self.threshold();
        for (index, track) in self.tracks.iter_mut().enumerate() {
            if let Some((at, _, reached)) = track.pending.take()
                && now_utc - reached >= self.confirm_s
            {
                if !track.inside {
                    track.evidence = track.pending_evidence.take();
                }
                if let Some(entry) = track.cross(!track.inside, at) {
                    let evidence = track.evidence.take();
                    self.visits
                        .push(visit(index, entry, Some(at), evidence, threshold));
                }
            }
            if let Some(entry) = track.entry.take() {
                let evidence = track.evidence.take();
                self.visits
                    .push(visit(index, entry, None, evidence, threshold));
            }
        }
        self.visits.sort_by_key(|v| (v.entry_utc, v.fence));
    }
}
