//! Stops: when a unit stood still, where, and for how long — robust to jitter and drift.
//!
//! Owns the stop state machine. A fix is *still* when its reported (Doppler) speed is under a
//! threshold; a run of still fixes within a radius of their running centre becomes a
//! candidate, confirmed once it has lasted the minimum stop time. Unlike Traccar's new logic,
//! which confirms about three minutes late at the current position, the stop's start is
//! back-dated to when the unit really halted: the last moving fix's speed and a braking rate
//! give the instant it reached zero. A stop ends on two moving fixes in a row (one clearly fast
//! fix is enough) or three still fixes far from the centre (a tracker without Doppler speed);
//! its end is back-dated the same way from the first moving fix. Single outlier fixes, drift
//! within the radius, and silences after which the unit is still in place do not end a stop.
//! Nor does drift beyond it: once a tracker has shown Doppler speeds, far still fixes cut a
//! settled stop only after evidence of a move (a moving fix or a silence before them); a
//! correlated wander of tens of metres with neither is the position drifting, not the unit;
//! nor, whatever came before it, does one over which the odometer stood still.

use super::config::DetectionConfig;
use super::distance::Cosines;
use super::evidence::{Evidence, STOP_RADIUS, Threshold};
use super::noise::RayleighScale;
use super::{Fix, Stop};
use crate::geometry::earth::{LatLon, distance_m, plane_distance_m};

/// One fix this fast is a departure by itself, km/h.
const CLEARLY_MOVING_KMH: f64 = 15.0;
/// A first moving fix under this was taken as the unit set off: at `aceleracion_ms2` it is
/// reached within four seconds, and a tracker that records departures checks every second or
/// so (the adaptive ones' records of a departure land at 6–19 km/h with Doppler noise), km/h.
pub(super) const SETTING_OFF_KMH: f64 = 20.0;
/// Speed and road detour assumed for a drive that happened entirely during a silence.
const TYPICAL_MS: f64 = 35.0 / 3.6;
const DETOUR: f64 = 1.3;
/// Still fixes this many in a row beyond the radius mean the unit is elsewhere: one or two
/// are an outlier jump or a drift excursion.
const FAR_FIXES: u8 = 3;
/// The radius is at least this many position-noise scales: a 2-D Gaussian fix lands beyond
/// four scales from its mean once in three thousand (e^−8).
const NOISE_SCALES: f64 = 4.0;
/// A candidate resting on fewer fixes than this is re-centred, not split, by far fixes.
const SETTLED_CENTRE_FIXES: u32 = 5;
/// A stop's centre is trusted to learn the noise from once it has this many fixes.
const SETTLED_FIXES: u32 = 2;
/// Distances learned before the noise scale is trusted, and their histogram's bin, metres.
const SPREAD_MIN_SAMPLES: u32 = 12;
const SPREAD_BIN_M: f64 = 1.0;

#[derive(Debug, Clone, Copy)]
struct Centre {
    lat_sum: f64,
    lon_sum: f64,
    n: f64,
    /// The first fix's longitude: a fix more than 180° from it lies across the antimeridian
    /// (a unit parked on it reads 179.9999° and −179.9999°) and is summed a turn nearer, so
    /// the mean is not a point half the world away. Elsewhere no fix ever is, and the sums
    /// are the plain ones, bit for bit.
    first_lon: f64,
}

impl Centre {
    fn new(fix: &Fix) -> Self {
        Centre {
            lat_sum: fix.lat,
            lon_sum: fix.lon,
            n: 1.0,
            first_lon: fix.lon,
        }
    }
    fn add(&mut self, fix: &Fix) {
        self.lat_sum += fix.lat;
        self.lon_sum += match fix.lon - self.first_lon {
            turn if turn > 180.0 => fix.lon - 360.0,
            turn if turn < -180.0 => fix.lon + 360.0,
            _ => fix.lon,
        };
        self.n += 1.0;
    }
    fn point(&self) -> LatLon {
        let lon = self.lon_sum / self.n;
        // Back within ±180° when the turns summed put the mean past the meridian.
        let lon = match lon {
            lon if lon > 180.0 => lon - 360.0,
            lon if lon < -180.0 => lon + 360.0,
            lon => lon,
        };
        LatLon::new(self.lat_sum / self.n, lon)
    }
}

impl Open {
    /// Takes a stop's fix's ignition. A lone "off" between two "on" reports close in time is
    /// the ignition line flickering, not the engine switched off: only an "off" confirmed by
    /// the next report, or followed by a silence, makes the stop the day's parking.
    fn ignition(&mut self, fix: &Fix, gap_s: f64) {
        if fix.ignition {
            if let Some(off_utc) = self.lone_off_utc.take() {
                self.went_off |= (fix.ts_utc - off_utc) as f64 > gap_s;
            }
        } else if self.lone_off_utc.is_some() || !self.last_ignition {
            self.went_off = true;
        } else {
            self.lone_off_utc = Some(fix.ts_utc);
        }
        self.last_ignition = fix.ignition;
    }
}

#[derive(Debug, Clone)]
struct Open {
    start_utc: i64,
    from_data_start: bool,
    centre: Centre,
    fixes: u32,
    /// The ignition went off during the stop (two reports in a row, or one followed by a
    /// silence), and a lone "off" report not yet confirmed: when it came.
    went_off: bool,
    lone_off_utc: Option<i64>,
    last_ignition: bool,
    last_still: Fix,
    /// Consecutive moving fixes, and the first of them.
    leaving: u8,
    first_moving: Option<Fix>,
    /// Consecutive still fixes beyond the radius, and the first of them (with whether a
    /// silence came right before it).
    far: u8,
    first_far: Option<(Fix, bool)>,
    /// Centre of the far fixes.
    far_centre: Option<Centre>,
    /// The fixes the stop rests on: measure, the farthest a fix lay from the running centre;
    /// threshold, the largest radius it was held to.
    evidence: Evidence,
    /// A moving fix came between the last fix near the centre and the first far one.
    far_after_motion: bool,
}

#[derive(Clone)]
pub struct StopDetector {
    radius_m: f64,
    still_kmh: f64,
    min_s: f64,
    gap_s: f64,
    brake_ms2: f64,
    accel_ms2: f64,
    /// The unit's parked position noise: distances of still fixes to their stop's centre.
    spread: RayleighScale,
    open: Option<Open>,
    prev: Option<Fix>,
    parked: bool,
    /// The tracker reports Doppler speeds: it has shown a clearly moving one.
    doppler: bool,
    pub stops: Vec<Stop>,
}

impl StopDetector {
    pub fn new(config: &DetectionConfig) -> Self {
        StopDetector {
            radius_m: config.parada_radio_m,
            still_kmh: config.velocidad_detenida_kmh,
            min_s: config.parada_min_s,
            gap_s: config.perdida_senal_s,
            brake_ms2: config.frenado_ms2,
            accel_ms2: config.aceleracion_ms2,
            spread: RayleighScale::new(SPREAD_BIN_M, SPREAD_MIN_SAMPLES),
            open: None,
            prev: None,
            parked: false,
            doppler: false,
            stops: Vec::new(),
        }
    }

    /// When the unit reached zero between the last moving fix and the first still one: the
    /// time to cover the distance between them at the last speed, braking at the end. Without
    /// a silence that is about `v / a` after the moving fix; across one it still lands where
    /// the unit really halted, not at the last fix heard.
    fn halt_time(&self, last_moving: Option<&Fix>, first_still: &Fix) -> (i64, bool) {
        let Some(moving) = last_moving else {
            return (first_still.ts_utc, true);
        };
        let v = moving.speed_kmh / 3.6;
        let span = (first_still.ts_utc - moving.ts_utc) as f64;
        if v <= 0.0 {
            return (moving.ts_utc, false);
        }
        let braking_m = v * v / (2.0 * self.brake_ms2);
        let d = distance_m(moving.point(), first_still.point());
        let travel_s = (d - braking_m).max(0.0) / v + v / self.brake_ms2;
        (moving.ts_utc + travel_s.min(span).round() as i64, false)
    }

    /// When the unit started moving between the last still fix and the first moving one:
    /// the time to reach the first moving fix's speed and position from the stop's centre.
    /// A first moving fix under [`SETTING_OFF_KMH`] was taken while the unit set off (an
    /// adaptive tracker records the departure as it happens): the time to reach its speed
    /// alone, as its distance from the centre is the position noise and drift, which at that
    /// pace would read as tens of seconds of driving.
    fn departure_time(&self, last_still: &Fix, first_moving: &Fix, centre: LatLon) -> i64 {
        let v = first_moving.speed_kmh / 3.6;
        let span = (first_moving.ts_utc - last_still.ts_utc) as f64;
        if v <= 0.0 {
            return last_still.ts_utc;
        }
        let accelerating_s = v / self.accel_ms2;
        let travel_s = if first_moving.speed_kmh < SETTING_OFF_KMH {
            accelerating_s
        } else {
            let accelerating_m = v * v / (2.0 * self.accel_ms2);
            let d = distance_m(centre, first_moving.point());
            (d - accelerating_m).max(0.0) / v + accelerating_s
        };
        first_moving.ts_utc - travel_s.min(span).round() as i64
    }

    fn start(&mut self, fix: &Fix) {
        let (start_utc, from_data_start) = self.halt_time(self.prev.as_ref(), fix);
        let radius = Threshold {
            name: STOP_RADIUS,
            value: self.radius_m,
        };
        self.open = Some(Open {
            start_utc,
            from_data_start,
            centre: Centre::new(fix),
            fixes: 1,
            went_off: false,
            lone_off_utc: (!fix.ignition).then_some(fix.ts_utc),
            last_ignition: fix.ignition,
            last_still: *fix,
            leaving: 0,
            first_moving: None,
            far: 0,
            first_far: None,
            far_centre: None,
            evidence: Evidence::from_fix(fix.ts_utc, 0.0, radius),
            far_after_motion: false,
        });
    }

    /// Closes the open stop at `end_utc`, keeping it if it lasted long enough.
    fn close(&mut self, end_utc: i64) {
        if let Some(open) = self.open.take() {
            let end_utc = end_utc.max(open.start_utc);
            if (end_utc - open.start_utc) as f64 >= self.min_s {
                self.stops.push(to_stop(&open, Some(end_utc)));
            }
        }
    }

    /// How far from the stop's centre a parked unit's fixes may stray: the configured radius,
    /// or [`NOISE_SCALES`] times the unit's own learned position noise when that is larger.
    fn radius_m(&mut self) -> f64 {
        let learned = self.spread.scale_m().map_or(0.0, |s| NOISE_SCALES * s);
        self.radius_m.max(learned)
    }

    /// The unit's parked position noise scale (one fix's, per axis), metres: learned, or until
    /// then the configured radius's share ([`NOISE_SCALES`] of them fill it).
    pub fn noise_scale_m(&mut self) -> f64 {
        self.spread
            .scale_m()
            .unwrap_or(self.radius_m / NOISE_SCALES)
    }

    /// The odometer advanced more than the radius between two fixes: the unit moved.
    fn odometer_moved(a: &Fix, b: &Fix, radius_m: f64) -> bool {
        match (a.odometer_m, b.odometer_m) {
            (Some(a), Some(b)) => (b - a) as f64 > radius_m,
            _ => false,
        }
    }

    /// The silence between `before` and `after` was spent standing where `before` is: slow
    /// there (braking, or still), and in the same place after it — by the odometer when
    /// both carry one, else within the stop radius.
    fn halted_in_silence(&mut self, before: &Fix, after: &Fix) -> bool {
        if before.speed_kmh >= CLEARLY_MOVING_KMH {
            return false;
        }
        let radius = self.radius_m();
        match (before.odometer_m, after.odometer_m) {
            (Some(a), Some(b)) => ((b - a) as f64).abs() <= radius,
            _ => distance_m(before.point(), after.point()) <= radius,
        }
    }

    /// Where the unit is parked, when the last fix was a parked unit's: still and within the
    /// open stop's noise (or in a run of far fixes not yet shown to be elsewhere). The stop's
    /// centre, the mean of its fixes, is a better position than any one of them.
    /// With when the stop started.
    pub fn parked_at(&self) -> Option<(LatLon, i64)> {
        if !self.parked {
            return None;
        }
        self.open.as_ref().map(|o| (o.centre.point(), o.start_utc))
    }

    /// Takes the next fix; `cos_lat` is the cosine of its latitude, and `cosines` the
    /// engine's memo, which holds the stop centre's from the fence detector's look at it.
    pub fn push(&mut self, fix: &Fix, cos_lat: f64, cosines: &mut Cosines) {
        self.parked = false;
        self.doppler |= fix.speed_kmh >= CLEARLY_MOVING_KMH;
        let still = fix.speed_kmh < self.still_kmh;
        let prev = self.prev;
        let after_gap = prev.is_some_and(|p| (fix.ts_utc - p.ts_utc) as f64 > self.gap_s);
        if self.open.is_none()
            && after_gap
            && let Some(before) = prev
            && self.halted_in_silence(&before, fix)
        {
            // An adaptive tracker records the braking, then nothing while the unit stands:
            // the stop began at that last slow fix (`start` reads it as its own halt).
            self.start(&before);
        }

        if self.open.is_none() {
            if still {
                self.start(fix);
            }
            self.prev = Some(*fix);
            return;
        }
        let radius = self.radius_m();
        // Changed in place: the open stop is a few hundred bytes, and taking it out of its
        // `Option` and putting it back copied them twice a fix (1.6 % of a worker's
        // instructions on the reference week).
        let Some(open) = self.open.as_mut() else {
            return;
        };
        // Only a still fix is measured from the centre: a moving one leaves or is taken
        // back by its odometer, wherever it lies. On the plane of the two latitudes' mean
        // cosine, not a haversine: metres from a centre, to parts per million, without its
        // two sines and arcsine a still fix (1.5 % of the reference week's instructions).
        let from_centre_m = still.then(|| {
            let centre = open.centre.point();
            plane_distance_m(centre, cosines.of(centre.lat), fix.point(), cos_lat)
        });
        if let Some(from_centre_m) = from_centre_m
            && open.fixes >= SETTLED_FIXES
        {
            self.spread.learn(from_centre_m);
        }
        // The odometer says it drove since the stop's last fix, wherever the positions land:
        // during a silence, or between two still fixes of a tracker that reports every 30 s
        // (it halted again before the next one; its drift-held far run would hide the move).
        let moved_unseen =
            (after_gap || still) && Self::odometer_moved(&open.last_still, fix, radius);
        if moved_unseen && let Some(first_moving) = open.first_moving {
            // A moving fix since the stop's last still one showed the departure (an adaptive
            // tracker records a unit setting off, then one halting again within seconds): the
            // stop ended there, and the odometer's advance is the drive after it.
            let (last_still, centre) = (open.last_still, open.centre.point());
            let end = self.departure_time(&last_still, &first_moving, centre);
            self.close(end);
            if still {
                self.start(fix);
            }
        } else if moved_unseen {
            self.left_in_silence(fix, still);
        } else if let Some(from_centre_m) = from_centre_m
            && from_centre_m <= radius
        {
            open.evidence.add(fix.ts_utc, from_centre_m);
            open.evidence.threshold.value = open.evidence.threshold.value.max(radius);
            open.centre.add(fix);
            open.fixes += 1;
            open.last_still = *fix;
            open.leaving = 0;
            open.first_moving = None;
            open.far = 0;
            open.first_far = None;
            open.far_centre = None;
            open.ignition(fix, self.gap_s);
            self.parked = true;
        } else if still {
            // The ignition line does not share the position's noise: an "off" reported by a
            // fix that a jump or the drift put beyond the radius is still the stop's.
            open.ignition(fix, self.gap_s);
            self.far_fix(fix, after_gap, radius);
            self.parked = self.open.as_ref().is_some_and(|o| o.far > 0);
        } else {
            open.leaving += 1;
            let first_moving = *open.first_moving.get_or_insert(*fix);
            if open.leaving >= 2 || fix.speed_kmh >= CLEARLY_MOVING_KMH {
                let (last_still, centre) = (open.last_still, open.centre.point());
                let end = self.departure_time(&last_still, &first_moving, centre);
                self.close(end);
            }
        }
        self.prev = Some(*fix);
    }

    /// A still fix beyond the radius. One or two in a row are an outlier jump or a drift
    /// excursion; [`FAR_FIXES`] or more in a row whose own centre is beyond the radius too
    /// (noise around the stop scatters on every side; a unit elsewhere does not) mean the unit
    /// stands somewhere else — moved without
    /// Doppler speed, or during the silence before the first of them. A tracker that reports
    /// Doppler speeds needs that silence or a moving fix before the run: without either, a
    /// settled stop keeps its centre (the run is drift). Unless the candidate
    /// itself rests on fewer fixes than that (its centre not settled yet): then its own first
    /// fixes were the outliers, and it is re-centred on the far ones, keeping its start. An
    /// odometer that stood between the stop's last fix and the far ones rules a move out.
    fn far_fix(&mut self, fix: &Fix, after_gap: bool, radius_m: f64) {
        let doppler = self.doppler;
        let Some(open) = &mut self.open else {
            return;
        };
        open.far += 1;
        if open.far == 1 {
            open.far_after_motion = open.leaving > 0;
        }
        let (first_far, silence_before) = *open.first_far.get_or_insert((*fix, after_gap));
        match &mut open.far_centre {
            Some(centre) => centre.add(fix),
            None => open.far_centre = Some(Centre::new(fix)),
        }
        let elsewhere = open
            .far_centre
            .is_some_and(|far| distance_m(far.point(), open.centre.point()) > radius_m);
        if open.far < FAR_FIXES || !elsewhere {
            return;
        }
        // A tracker that reports Doppler speeds shows a move as moving fixes; a settled stop's
        // fixes wandering off together with none, nor a silence, are the correlated drift. An
        // odometer that stood still says so whatever came before (a night asleep included).
        let odometer_stood = matches!(
            (open.last_still.odometer_m, fix.odometer_m),
            (Some(a), Some(b)) if ((b - a) as f64).abs() <= radius_m
        );
        let evidence = (silence_before || open.far_after_motion || !doppler) && !odometer_stood;
        if !evidence && open.fixes >= SETTLED_CENTRE_FIXES {
            return;
        }
        // A candidate on few fixes is re-centred on the far run, not split: with no silence
        // before the run its own first fixes were the outliers, and over an odometer that
        // stood still the unit did not move whatever the silence (an adaptive tracker's
        // night: its braking and "off" records, then hourly heartbeats the drift put 80 m
        // away, split the night in the middle of the first silence).
        if (!silence_before || odometer_stood) && open.fixes < SETTLED_CENTRE_FIXES {
            if let Some(centre) = open.far_centre.take() {
                open.centre = centre;
            }
            open.fixes += u32::from(open.far);
            open.last_still = *fix;
            open.far = 0;
            open.first_far = None;
            open.far_centre = None;
            return;
        }
        if silence_before {
            self.left_in_silence(&first_far, true);
        } else {
            self.close(first_far.ts_utc);
            self.start(&first_far);
            if let Some(restarted) = &mut self.open {
                restarted.start_utc = first_far.ts_utc;
            }
        }
        // The far fixes after the first belong to the new stop.
        if let Some(next) = &mut self.open
            && fix.ts_utc != first_far.ts_utc
        {
            next.centre.add(fix);
            next.fixes += 1;
            next.last_still = *fix;
        }
    }

    /// The unit left the open stop during the silence that ends at `fix`. Moving now: date
    /// the departure from the speed and distance. Standing somewhere else: it drove from one
    /// stop to the other in the middle of the silence, at a typical urban speed, over the
    /// odometer's distance when there is one (else the straight line with a detour factor).
    fn left_in_silence(&mut self, fix: &Fix, still: bool) {
        let Some(open) = &self.open else {
            return;
        };
        let last = open.last_still;
        let centre = open.centre.point();
        // A halt not yet long enough to be a stop when the silence began is not stretched
        // into one: nobody saw it last.
        let seen_long_enough = (last.ts_utc - open.start_utc) as f64 >= self.min_s;
        // Found setting off elsewhere (a walking-pace first fix, as an adaptive tracker records
        // a departure): it stood there before, so it drove in the middle of the silence too.
        if !still && fix.speed_kmh >= SETTING_OFF_KMH {
            let end = self.departure_time(&last, fix, centre);
            self.close(end);
            return;
        }
        let silence = (fix.ts_utc - last.ts_utc) as f64;
        let road_m = match (last.odometer_m, fix.odometer_m) {
            (Some(a), Some(b)) if b > a => (b - a) as f64,
            _ => distance_m(centre, fix.point()) * DETOUR,
        };
        let travel = (road_m / TYPICAL_MS).min(silence);
        let middle = last.ts_utc as f64 + silence / 2.0;
        let end = if seen_long_enough {
            (middle - travel / 2.0).round() as i64
        } else {
            last.ts_utc
        };
        self.close(end);
        if !still {
            return;
        }
        self.start(fix);
        if let Some(next) = &mut self.open {
            next.start_utc = (middle + travel / 2.0).round() as i64;
            // Begun while the tracker slept after an "off": the engine was off then (a
            // tracker without an odometer finds a parked night's morning fixes drifted).
            next.went_off |= !last.ignition;
        }
    }

    /// At the end of the data: a stop still going on stays open (no end time). `asleep_now`:
    /// the tracker has been silent since a slow fix for no longer than its cadence while
    /// stopped allows (the signal-loss detector's verdict) — the unit halted there.
    pub fn finish(&mut self, now_utc: i64, asleep_now: bool) {
        if self.open.is_none()
            && asleep_now
            && let Some(last) = self.prev
        {
            self.start(&last);
        }
        if let Some(open) = self.open.take() {
            let leaving = open.leaving > 0;
            if leaving {
                if let Some(first_moving) = open.first_moving {
                    let end =
                        self.departure_time(&open.last_still, &first_moving, open.centre.point());
                    self.open = Some(open);
                    self.close(end);
                }
                return;
            }
            if (now_utc - open.start_utc) as f64 >= self.min_s {
                // A lone "off" as the last report, with no silence after it yet by "now":
                // nothing has confirmed it, and a flicker reads the same.
                let mut open = open;
                if open
                    .lone_off_utc
                    .is_some_and(|off| (now_utc - off) as f64 <= self.gap_s)
                {
                    open.lone_off_utc = None;
                }
                self.stops.push(to_stop(&open, None));
            }
        }
    }
}

fn to_stop(open: &Open, end_utc: Option<i64>) -> Stop {
    let centre = open.centre.point();
    Stop {
        start_utc: open.start_utc,
        end_utc,
        lat: centre.lat,
        lon: centre.lon,
        fixes: open.fixes,
        engine_on: open.last_ignition,
        went_off: open.went_off || open.lone_off_utc.is_some(),
        from_data_start: open.from_data_start,
        last_fix_utc: open.last_still.ts_utc,
        evidence: Evidence {
            fixes: open.fixes,
            last_fix_utc: open.last_still.ts_utc,
            ..open.evidence
        },
    }
}
