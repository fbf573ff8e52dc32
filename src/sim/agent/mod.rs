//! One vehicle over the whole period: a discrete-event agent with explicit states.
//!
//! Owns how a vehicle spends its days. Discrete events (shift start, departures, dwell ends,
//! desired-speed changes, tracker reports, ignition off, signal loss, injected stops) come off
//! a time-ordered queue; between two events the continuous motion along the route is
//! integrated (`motion.rs`), and an arrival at a halt is itself turned into a state change at
//! its own instant. Each loop is planned before it starts (`loops.rs`), so a unit starts
//! another loop only if the whole of it, dwells and waits included, fits before its shift's
//! planned end. Shifts start at instants of their wall-clock window in the unit's zone and
//! last elapsed time, across midnight if need be. Reports sample the true state exactly at
//! their instants and pass through the [`Tracker`]; truth events are emitted as the facts they
//! describe complete. An injection that the drawn day gave no chance to happen is returned
//! as [`Unhonoured`]. Sans-IO: everything leaves through the sink.

mod loops;
mod motion;
mod tracking;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use chrono::NaiveDate;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::Sink;
use super::device::Device;
use super::gnss::{Report, Tracker};
use super::plan::{self, Planned};
use super::rng::{Purpose, stream};
use super::roads::{Roads, Shortened};
use super::truth::{StopReason, TruthEvent};
use crate::geometry::earth::LatLon;
use crate::geometry::route::Route;
use crate::scenario::{InjectionKind, LongStopAt, LossAt, Recording, Trigger, Unit, World};
use loops::LoopPlan;

/// Longest integration step, while cruising.
const CRUISE_STEP_MS: i64 = 5000;
/// Halts shorter than this are traffic, not stops, and are not logged as such.
pub const MIN_TRUTH_STOP_S: i64 = 60;
/// Lights are never placed this close to a stop, metres.
const LIGHT_CLEARANCE_M: f64 = 150.0;
/// An injected halt on the road keeps this far from the halts before and after it, metres, so
/// that it is a stop of its own.
const FORCED_STOP_CLEARANCE_M: f64 = 300.0;
/// A unit whose shift holds a signal loss keeps its engine on this long after the loss ends,
/// so that reports with the ignition on close it.
const AFTER_LOSS_MS: i64 = 60_000;

/// An injection the simulated day gave no chance to happen, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Unhonoured {
    /// How the scenario names it (file and line for an explicit one).
    pub label: String,
    pub plate: String,
    pub date: NaiveDate,
    pub reason: String,
}

/// The vehicle's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Ignition off at the depot, between shifts.
    OffShift,
    /// At the depot with the engine on (before a loop, between loops, before switching off).
    Parked,
    /// Pulling away from a halt.
    Departing,
    Driving,
    /// Braking for the next halt.
    Approaching,
    /// At a delivery stop (or an injected halt).
    Dwelling,
    /// At a traffic light.
    AtLight,
}

impl Phase {
    fn moving(self) -> bool {
        matches!(self, Phase::Departing | Phase::Driving | Phase::Approaching)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    ShiftStart(usize),
    Report,
    Depart,
    DwellEnd,
    DesiredSpeed,
    IgnitionOff,
    ReportsOff,
    LossStart,
    LossEnd,
    StopNow,
    /// A heartbeat of the chain started at the ignition-off numbered so.
    Heartbeat(u32),
    CoverageLost,
    CoverageBack,
    FixLost,
    FixBack,
}

#[derive(Debug, Clone, PartialEq)]
enum HaltKind {
    Delivery {
        name: String,
        dwell_ms: i64,
        injected: bool,
    },
    Light {
        wait_ms: i64,
    },
    /// An injected halt on the road.
    Forced {
        dwell_ms: i64,
    },
    /// The end of the loop.
    Depot,
    /// Stop here and stay, engine on, until `ahora`.
    StopNow,
}

#[derive(Debug, Clone, PartialEq)]
struct Halt {
    along_m: f64,
    kind: HaltKind,
}

#[derive(Debug, Clone, Copy)]
struct Episode {
    speed_ms: f64,
    until_ms: i64,
}

#[derive(Debug, Clone, Copy)]
enum PendingSpeeding {
    AtDistance {
        along_m: f64,
        speed_ms: f64,
        duration_ms: i64,
    },
    AtTime {
        from_ms: i64,
        speed_ms: f64,
        duration_ms: i64,
    },
}

#[derive(Debug, Clone)]
struct OpenStop {
    start_ms: i64,
    position: LatLon,
    place: String,
    reason: StopReason,
    from_data_start: bool,
    /// Lengthened or caused by an injection.
    injected: bool,
    /// When the unit set off ([`Agent::close_stop`]): the stop ends then, once the unit has
    /// moved ([`Agent::settle_departure`]). Until it has, a halt at the same place (a delivery
    /// at the depot, two customers at one address) continues this stop rather than starting
    /// another a second later: a stop is a maximal interval at speed zero.
    leaving_ms: Option<i64>,
}

#[derive(Debug, Clone, Copy)]
struct OpenSpeeding {
    start_ms: i64,
    max_kmh: f64,
    limit_kmh: f64,
    injected: bool,
}

struct Day {
    date: NaiveDate,
    /// The drawn shift's planned end.
    shift_end_ms: i64,
    loops: usize,
    /// The engine stays on at least until then (a signal loss must end with it on).
    hold_until_ms: i64,
}

pub struct Agent<'a, S: Sink> {
    world: &'a World,
    /// The world's routes (same indices) and their shortened loops.
    routes: &'a [Route],
    courses: &'a [super::course::Course],
    /// Per world route, its shortened loops (see [`Roads`]).
    shortened: &'a [Vec<Shortened>],
    unit: &'a Unit,
    plan: &'a [Planned],
    sink: &'a mut S,
    motion: ChaCha8Rng,
    device: Device,
    queue: EventQueue,
    seq: u64,
    now_ms: i64,
    end_ms: i64,
    interval_ms: i64,

    phase: Phase,
    route: usize,
    /// Cursor: the route segment holding `along_m`.
    segment: usize,
    along_m: f64,
    speed_ms: f64,
    heading_deg: f64,
    desired_ms: f64,
    /// The speed the driver aimed at in the last step (to recognise steady cruising).
    wanted_ms: f64,
    odometer_start_km: f64,
    odometer_m: f64,
    halts: VecDeque<Halt>,
    /// Where along the route the unit last left a halt.
    left_halt_at_m: f64,
    /// The next loop, drawn at the depot.
    next_loop: Option<LoopPlan>,
    episode: Option<Episode>,
    pending_speeding: Option<PendingSpeeding>,
    /// An injected long stop asked for a time: (from, dwell), milliseconds.
    pending_stop: Option<(i64, i64)>,
    /// The labels of the current day's injections still waiting for their moment.
    pending_labels: Vec<(InjectionKind, String)>,
    unhonoured: Vec<Unhonoured>,
    ignition: bool,
    reporting: bool,
    signal_lost: bool,
    /// The silence of the latest signal loss, until the first record after it.
    silence: Option<tracking::Silence>,
    /// Set by an injected "stopped now": the vehicle stays put until `ahora`.
    frozen: bool,
    day: Option<Day>,
    /// The unit's local days' first instants, and the end of the last one.
    day_starts_ms: Vec<i64>,
    /// How many of `day_starts_ms` the latest step had reached (`Agent::day_index`).
    days_begun: usize,
    km_by_day: Vec<f64>,

    stop: Option<OpenStop>,
    speeding_truth: Option<OpenSpeeding>,
    /// The limit the latest step ended under: (route, along, km/h) ([`Agent::limit_here`]).
    limit_left: (usize, f64, f64),
    /// Per fence: `Some(entry)` while inside (`entry` None when inside since the data start).
    visits: Vec<Option<Option<i64>>>,
    /// The shift under way: its date, start and planned end.
    jornada_open: Option<(String, i64, i64)>,
    reports: Vec<Report>,
    /// Tracker truth events waiting to go to the sink.
    tracker_truth: Vec<TruthEvent>,
    /// First deliveries that reached the data.
    delivered: u64,
    /// The latest fix time among the records that reached the data.
    last_received_ts: Option<i64>,
    /// Fix times of first deliveries made by `ahora` but received after it (late ones), and
    /// whether each had a fix (only those would be stored).
    in_transit: Vec<(i64, bool)>,
    /// Fix times of the records with a fix that reached the data (the stored ones): where
    /// the silences around a record still in transit begin and end.
    received_valid: Vec<i64>,
    /// Ignition-offs so far: numbers the heartbeat chains, so only the latest one beats.
    heartbeat_chain: u32,
    last_report_ts: Option<i64>,
    /// The last record with a fix (what reaches the positions table).
    last_stored_ts: Option<i64>,
    /// When the current shift started: the periodic reports' grid origin.
    shift_start_ms: i64,
}

impl<'a, S: Sink> Agent<'a, S> {
    pub fn new(
        world: &'a World,
        roads: &'a Roads,
        unit_index: usize,
        plan: &'a [Planned],
        sink: &'a mut S,
    ) -> Self {
        let unit = &world.units[unit_index];
        let mut motion = stream(world.seed, &unit.plate, Purpose::Motion);
        let tracker = Tracker::new(
            world.noise.clone(),
            stream(world.seed, &unit.plate, Purpose::Gnss),
            stream(world.seed, &unit.plate, Purpose::Delivery),
        );
        let odometer_start_km = unit.odometer_start_km.unwrap_or_else(|| {
            (motion.random_range(20_000.0..180_000.0f64) * 100.0).round() / 100.0
        });
        let device = Device::new(
            unit.tracker.clone(),
            &unit.plate,
            tracker,
            stream(world.seed, &unit.plate, Purpose::Faults),
            odometer_start_km,
        );
        let interval_ms = match unit.tracker.recording {
            Recording::Fixed { interval_s } => interval_s * 1000,
            // Adaptive criteria are checked every second.
            Recording::Adaptive { .. } => 1000,
        };
        let mut day_starts_ms: Vec<i64> = unit.days.iter().map(|d| d.start_utc * 1000).collect();
        day_starts_ms.push(unit.days.last().map_or(0, |d| d.end_utc * 1000));
        let start_ms = day_starts_ms[0];
        Agent {
            world,
            routes: &roads.routes,
            courses: &roads.courses,
            shortened: &roads.shortened,
            unit,
            plan,
            sink,
            motion,
            device,
            queue: EventQueue::default(),
            seq: 0,
            now_ms: start_ms,
            end_ms: world.ahora_utc * 1000,
            interval_ms,
            phase: Phase::OffShift,
            route: unit.routes.first().copied().unwrap_or(0),
            segment: 0,
            along_m: 0.0,
            speed_ms: 0.0,
            heading_deg: 0.0,
            desired_ms: 0.0,
            wanted_ms: -1.0,
            odometer_start_km,
            odometer_m: 0.0,
            halts: VecDeque::new(),
            left_halt_at_m: 0.0,
            next_loop: None,
            episode: None,
            pending_speeding: None,
            pending_stop: None,
            pending_labels: Vec::new(),
            unhonoured: Vec::new(),
            ignition: false,
            reporting: false,
            signal_lost: false,
            silence: None,
            frozen: false,
            day: None,
            km_by_day: vec![0.0; unit.days.len()],
            day_starts_ms,
            days_begun: 0,
            stop: None,
            speeding_truth: None,
            limit_left: (usize::MAX, f64::NAN, f64::NAN),
            visits: vec![None; world.fences.len()],
            jornada_open: None,
            reports: Vec::new(),
            tracker_truth: Vec::new(),
            delivered: 0,
            last_received_ts: None,
            in_transit: Vec::new(),
            received_valid: Vec::new(),
            heartbeat_chain: 0,
            last_report_ts: None,
            last_stored_ts: None,
            shift_start_ms: start_ms,
        }
    }

    fn schedule(&mut self, at_ms: i64, event: Event) {
        self.seq += 1;
        self.queue.push(at_ms, self.seq, event);
    }

    fn uniform(&mut self, [lo, hi]: [f64; 2]) -> f64 {
        if hi > lo {
            self.motion.random_range(lo..hi)
        } else {
            lo
        }
    }

    fn minutes_ms(&mut self, range: [f64; 2]) -> i64 {
        (self.uniform(range) * 60_000.0).round() as i64
    }

    /// Runs the whole period; returns the injections that could not happen.
    pub fn run(mut self) -> Vec<Unhonoured> {
        if !self.unit.active || self.unit.routes.is_empty() || self.unit.days.is_empty() {
            return Vec::new();
        }
        if let Some(profile) = self.device.describe() {
            self.sink.truth(profile);
        }
        for planned in self.plan {
            self.sink.truth(TruthEvent::Inyeccion {
                placa: self.unit.plate.clone(),
                fecha: planned.date.to_string(),
                clase: planned.kind.name().into(),
                aleatoria: planned.random,
                parametros: plan::parameters(&planned.kind, self.unit.zone),
            });
        }
        for day in &self.unit.days {
            if let Some(absence) = self.unit.absence_on(day.date) {
                self.sink.truth(TruthEvent::Ausencia {
                    placa: self.unit.plate.clone(),
                    fecha: day.date.to_string(),
                    motivo: absence.reason.clone(),
                });
            }
        }
        // Parked at the depot, engine off, since before the data starts.
        let start_ms = self.now_ms;
        self.heading_deg = self.routes[self.route].at(0.0).1;
        self.open_stop(start_ms, StopReason::FinDeTurno, "depósito".into(), true);
        for fence in self.courses[self.route].fences_at(0.0).collect::<Vec<_>>() {
            self.visits[fence] = Some(None);
        }
        for (index, day) in self.unit.days.iter().enumerate() {
            let Some(shift) = day.shift else { continue };
            // A whole minute of real time within the window.
            let minutes = (shift.last_start_utc - shift.first_start_utc).div_euclid(60);
            let minute = self.motion.random_range(0..=minutes.max(0));
            let start_ms = (shift.first_start_utc + minute * 60) * 1000;
            self.schedule(start_ms, Event::ShiftStart(index));
        }
        // Every shift's start is known now and waits apart, in order, so that the heap the
        // day's events go through holds a handful of them and not also every shift still to
        // come (each pop sifts through its depth).
        self.queue.set_apart_what_waits();
        loop {
            while let Some(Reverse((at_ms, seq, event))) = self.queue.pop() {
                if at_ms > self.end_ms {
                    break;
                }
                if !self.advance_to(at_ms) {
                    // Halted on the way: what the halt scheduled may come first.
                    self.queue.push(at_ms, seq, event);
                    continue;
                }
                self.handle(event);
            }
            // Halted on the way to the end: what the halt scheduled before it comes next.
            if self.advance_to(self.end_ms) {
                break;
            }
        }
        self.finish();
        self.unhonoured
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::ShiftStart(index) => self.shift_start(index),
            Event::Report => self.report(),
            Event::Depart => {
                if !self.frozen {
                    self.depart_loop();
                }
            }
            Event::DwellEnd => {
                if !self.frozen && matches!(self.phase, Phase::Dwelling | Phase::AtLight) {
                    self.halts.pop_front();
                    self.close_stop(self.now_ms);
                    self.phase = Phase::Departing;
                    self.left_halt_at_m = self.along_m;
                }
            }
            Event::DesiredSpeed => {
                if self.phase.moving() {
                    self.draw_desired_speed();
                    let next =
                        (self.uniform(self.world.behaviour.cambio_velocidad_s) * 1000.0) as i64;
                    self.schedule(self.now_ms + next, Event::DesiredSpeed);
                }
            }
            Event::IgnitionOff => {
                if !self.frozen {
                    self.ignition_off();
                }
            }
            Event::ReportsOff => self.reporting = self.ignition,
            Event::LossStart => self.signal_starts(),
            Event::LossEnd => self.signal_lost = false,
            Event::StopNow => self.stop_now(),
            Event::Heartbeat(chain) => self.heartbeat(chain),
            Event::CoverageLost => self.device.lose_coverage(self.now_ms.div_euclid(1000)),
            Event::CoverageBack => self.coverage_back(),
            Event::FixLost => self.device.set_fix(true),
            Event::FixBack => self.device.set_fix(false),
        }
    }

    /// One piece: a shift's start sets up everything the day's plan asks for at once.
    fn shift_start(&mut self, index: usize) {
        let date = self.unit.days[index].date;
        let rule = *self.unit.shift_for(date);
        let length_h = self.uniform(rule.length_h);
        let planned_end_ms = self.now_ms + (length_h * 3_600_000.0) as i64;
        let mut shift_end_ms = planned_end_ms;
        let stop_now = self.planned(date).find_map(|p| match p.kind {
            InjectionKind::StoppedNow { minutes } => Some(minutes),
            _ => None,
        });
        let stop_now_ms = stop_now.map(|m| self.end_ms - (m * 60_000.0).round() as i64);
        if stop_now_ms.is_some() {
            // Stay on shift past `ahora`.
            shift_end_ms = shift_end_ms.max(self.end_ms + 3_600_000);
        }
        self.shift_start_ms = self.now_ms;
        self.day = Some(Day {
            date,
            shift_end_ms,
            loops: 0,
            hold_until_ms: 0,
        });
        self.ignition = true;
        self.reporting = true;
        self.jornada_open = Some((date.to_string(), self.now_ms, planned_end_ms));
        // Losses first: one starting right now silences the first report too.
        let losses: Vec<(LossAt, f64)> = self
            .planned(date)
            .filter_map(|p| match p.kind {
                InjectionKind::SignalLoss { at, minutes } => Some((at, minutes)),
                _ => None,
            })
            .collect();
        for (at, minutes) in losses {
            self.signal_loss(at, minutes, planned_end_ms);
        }
        self.tracker_episodes(planned_end_ms);
        // The overnight stop goes on; the engine is now on.
        self.phase = Phase::Parked;
        self.move_to_route_start(self.unit.routes[0]);
        let first = self.plan_loop(0, self.world.behaviour.espera_inicial_min);
        self.schedule(self.now_ms, Event::Report);
        self.schedule(self.now_ms + first.wait_ms, Event::Depart);
        self.next_loop = Some(first);
        if let Some(at) = stop_now_ms {
            self.schedule(at, Event::StopNow);
        }
        self.arm_timed(date);
    }

    /// Arms the day's injections asked for a time: they wait, on any loop, for their moment.
    fn arm_timed(&mut self, date: NaiveDate) {
        self.pending_labels.clear();
        let timed: Vec<&Planned> = self
            .planned(date)
            .filter(|p| p.kind.asked_utc().is_some())
            .collect();
        for planned in timed {
            match planned.kind {
                InjectionKind::Speeding {
                    at: Trigger::At(t),
                    speed_kmh,
                    duration_s,
                } => {
                    self.pending_speeding = Some(PendingSpeeding::AtTime {
                        from_ms: t * 1000,
                        speed_ms: speed_kmh / 3.6,
                        duration_ms: (duration_s * 1000.0).round() as i64,
                    });
                }
                InjectionKind::LongStop {
                    at: LongStopAt::At(t),
                    minutes,
                } => self.pending_stop = Some((t * 1000, (minutes * 60_000.0).round() as i64)),
                _ => continue,
            }
            self.pending_labels
                .push((planned.kind.clone(), planned.label.clone()));
        }
    }

    /// Schedules a signal loss of the current shift and logs it (open if it outlasts `ahora`);
    /// the engine stays on until it is over.
    fn signal_loss(&mut self, at: LossAt, minutes: f64, planned_end_ms: i64) {
        let start_ms = match at {
            LossAt::At(t) => t * 1000,
            LossAt::ShiftFraction(f) => {
                self.now_ms + ((planned_end_ms - self.now_ms) as f64 * f).round() as i64
            }
        };
        // Whole seconds, so the truth's bounds are exactly the reports' clock.
        let start_ms = (start_ms + 999).div_euclid(1000) * 1000;
        let end_ms = start_ms + (minutes * 60.0).round() as i64 * 1000;
        self.schedule(start_ms, Event::LossStart);
        self.schedule(end_ms, Event::LossEnd);
        let open = end_ms > self.end_ms;
        let hold = if open {
            start_ms + AFTER_LOSS_MS
        } else {
            end_ms + AFTER_LOSS_MS
        };
        if let Some(day) = &mut self.day {
            day.hold_until_ms = day.hold_until_ms.max(hold);
        }
        self.sink.truth(TruthEvent::PerdidaSenal {
            placa: self.unit.plate.clone(),
            inicio_utc: start_ms / 1000,
            fin_utc: (!open).then_some(end_ms / 1000),
        });
    }

    fn planned(&self, date: NaiveDate) -> impl Iterator<Item = &'a Planned> + use<'a, S> {
        self.plan.iter().filter(move |p| p.date == date)
    }

    /// The current shift's planned injections.
    fn day_plan(&self) -> impl Iterator<Item = &'a Planned> + use<'a, S> {
        let date = self.day.as_ref().map(|d| d.date);
        self.plan.iter().filter(move |p| Some(p.date) == date)
    }

    /// Leaves the depot for the loop planned at the depot.
    fn depart_loop(&mut self) {
        let Some(day) = &self.day else { return };
        let loop_index = day.loops;
        let Some(next) = self.next_loop.take() else {
            return;
        };
        self.close_stop(self.now_ms);
        self.move_to_route_start(next.route);
        let length = self.routes[self.route].length_m();
        self.halts = next.halts.into();
        self.left_halt_at_m = 0.0;
        if loop_index == 0 {
            self.arm_fraction_speeding(length);
        } else if let Some(PendingSpeeding::AtDistance { along_m, .. }) = &mut self.pending_speeding
        {
            // Not found on the first loop past its fraction: any open stretch of this one.
            *along_m = 0.0;
        }
        if let Some(day) = &mut self.day {
            day.loops += 1;
        }
        self.phase = Phase::Departing;
        self.draw_desired_speed();
        let next = (self.uniform(self.world.behaviour.cambio_velocidad_s) * 1000.0) as i64;
        self.schedule(self.now_ms + next, Event::DesiredSpeed);
    }

    /// The day's speeding episode placed at a fraction of the first loop: from there, the
    /// first stretch open for all of it (on a later loop if the first has none left).
    fn arm_fraction_speeding(&mut self, length: f64) {
        let armed = self.day_plan().find_map(|p| match p.kind {
            InjectionKind::Speeding {
                at: Trigger::Fraction(f),
                speed_kmh,
                duration_s,
            } => Some(PendingSpeeding::AtDistance {
                along_m: f * length,
                speed_ms: speed_kmh / 3.6,
                duration_ms: (duration_s * 1000.0).round() as i64,
            }),
            _ => None,
        });
        if armed.is_some() {
            self.pending_speeding = armed;
            if let Some(planned) = self.day_plan().find(|p| {
                matches!(
                    p.kind,
                    InjectionKind::Speeding {
                        at: Trigger::Fraction(_),
                        ..
                    }
                )
            }) {
                self.pending_labels
                    .push((planned.kind.clone(), planned.label.clone()));
            }
        }
    }

    /// At the depot after a loop: plan the next one and go if it, or a shortened one, fits
    /// before the shift's planned end (`fitting_loop`); otherwise the day ends.
    fn at_depot(&mut self) {
        let Some(day) = &self.day else { return };
        let (loops, shift_end_ms) = (day.loops, day.shift_end_ms);
        let now = self.now_ms;
        let drawn = self.plan_loop(loops, self.world.behaviour.espera_deposito_min);
        if let Some(next) = self.fitting_loop(drawn, shift_end_ms - now) {
            self.open_stop(now, StopReason::Deposito, "depósito".into(), false);
            self.schedule(now + next.wait_ms, Event::Depart);
            self.next_loop = Some(next);
        } else {
            self.end_of_shift();
        }
    }

    /// The last arrival: park, wait, switch off (not before a signal loss of the day is over).
    fn end_of_shift(&mut self) {
        let now = self.now_ms;
        let hold_until_ms = self.day.as_ref().map_or(0, |d| d.hold_until_ms);
        self.open_stop(now, StopReason::FinDeTurno, "depósito".into(), false);
        let wait = self.minutes_ms(self.world.behaviour.espera_final_min);
        // The ignition-off report is an event report: a whole second of its own, off the
        // periodic grid.
        let mut off_ms = ((now + wait).max(hold_until_ms) + 999).div_euclid(1000) * 1000;
        if (off_ms - self.shift_start_ms).rem_euclid(self.interval_ms) == 0 {
            off_ms += 1000;
        }
        self.schedule(off_ms, Event::IgnitionOff);
    }

    /// Puts the parked vehicle at the start of `route` (its depot), settling fence visits if
    /// that start lies in other fences than where it stood.
    fn move_to_route_start(&mut self, route: usize) {
        self.route = route;
        self.segment = 0;
        self.along_m = 0.0;
        let inside: Vec<usize> = self.courses[route].fences_at(0.0).collect();
        let now = self.now_ms;
        for fence in 0..self.visits.len() {
            let should = inside.contains(&fence);
            match (self.visits[fence].is_some(), should) {
                (false, true) => self.visits[fence] = Some(Some(now)),
                (true, false) => self.close_visit(fence, Some(now)),
                _ => {}
            }
        }
    }

    /// Ends the stay in `fence`, if there is one, at `exit_ms` (`None`: still inside at
    /// `ahora`), and logs it.
    fn close_visit(&mut self, fence: usize, exit_ms: Option<i64>) {
        if let Some(entry) = self.visits[fence].take() {
            self.sink.truth(TruthEvent::VisitaGeocerca {
                placa: self.unit.plate.clone(),
                geocerca: self.world.fences[fence].name.clone(),
                entrada_utc: entry.map(|e| e.div_euclid(1000)),
                salida_utc: exit_ms.map(|e| e.div_euclid(1000)),
            });
        }
    }

    fn draw_desired_speed(&mut self) {
        let base = self.routes[self.route].base_speed_kmh();
        let factor = self.uniform(self.world.behaviour.variacion_velocidad);
        self.desired_ms = base * factor / 3.6;
    }

    fn limit_kmh_at(&self, along_m: f64) -> f64 {
        self.courses[self.route]
            .fence_limit_kmh(along_m)
            .unwrap_or(self.unit.limit_kmh)
    }

    fn arrive(&mut self) {
        let Some(halt) = self.halts.front().cloned() else {
            return;
        };
        self.speed_ms = 0.0;
        self.episode = None;
        let now = self.now_ms;
        match halt.kind {
            HaltKind::Delivery {
                name,
                dwell_ms,
                injected,
            } => {
                self.phase = Phase::Dwelling;
                self.open_stop(now, StopReason::Entrega, name, false);
                if let Some(stop) = &mut self.stop {
                    stop.injected |= injected;
                }
                self.schedule(now + dwell_ms, Event::DwellEnd);
            }
            HaltKind::Light { wait_ms } => {
                self.phase = Phase::AtLight;
                self.open_stop(now, StopReason::Semaforo, "semáforo".into(), false);
                self.schedule(now + wait_ms, Event::DwellEnd);
            }
            HaltKind::Forced { dwell_ms } => {
                self.phase = Phase::Dwelling;
                self.open_stop(now, StopReason::Inyectada, "en ruta".into(), false);
                if let Some(stop) = &mut self.stop {
                    stop.injected = true;
                }
                self.schedule(now + dwell_ms, Event::DwellEnd);
            }
            HaltKind::StopNow => {
                self.phase = Phase::Dwelling;
                self.frozen = true;
                self.open_stop(now, StopReason::DetenidaAhora, "en ruta".into(), false);
                if let Some(stop) = &mut self.stop {
                    stop.injected = true;
                }
            }
            HaltKind::Depot => {
                self.halts.clear();
                self.phase = Phase::Parked;
                self.at_depot();
            }
        }
    }

    fn stop_now(&mut self) {
        if self.phase.moving() {
            // Brake normally and stay where the vehicle comes to rest.
            let v = self.speed_ms;
            let stop_at = self.along_m + (v * v / (2.0 * self.unit.dynamics.brake_ms2)).max(1.0);
            let next = self.halts.front().map_or(f64::INFINITY, |h| h.along_m);
            if next > stop_at {
                self.halts.push_front(Halt {
                    along_m: stop_at,
                    kind: HaltKind::StopNow,
                });
            } else if let Some(front) = self.halts.front_mut() {
                front.kind = HaltKind::StopNow;
            }
            self.episode = None;
        } else {
            // Already standing (a delivery, the depot, a light): stay there.
            self.frozen = true;
            if let Some(stop) = &mut self.stop {
                stop.reason = StopReason::DetenidaAhora;
                stop.injected = true;
            }
        }
    }

    fn ignition_off(&mut self) {
        self.ignition = false;
        self.phase = Phase::OffShift;
        self.close_jornada(Some(self.now_ms));
        self.settle_pending("la unidad terminó su turno");
        // The ignition-off event report, then a few more before the tracker sleeps (or beats).
        self.emit_report(true);
        let window = (self.world.behaviour.reportes_apagado_min * 60_000.0) as i64;
        self.schedule(self.now_ms + window, Event::ReportsOff);
        self.start_heartbeats();
        self.day = None;
    }

    /// Logs the shift under way, ended at `end_ms` (`None`: still on at `ahora`).
    fn close_jornada(&mut self, end_ms: Option<i64>) {
        if let Some((date, start_ms, planned_end_ms)) = self.jornada_open.take() {
            self.sink.truth(TruthEvent::Jornada {
                placa: self.unit.plate.clone(),
                fecha: date,
                inicio_utc: start_ms.div_euclid(1000),
                fin_utc: end_ms.map(|e| e.div_euclid(1000)),
                fin_previsto_utc: planned_end_ms.div_euclid(1000),
            });
        }
    }

    /// The day's timed injections that never found their moment, and why.
    fn settle_pending(&mut self, why: &str) {
        let still = |kind: &InjectionKind, agent: &Self| match kind {
            InjectionKind::Speeding { .. } => agent.pending_speeding.is_some(),
            InjectionKind::LongStop { .. } => agent.pending_stop.is_some(),
            _ => false,
        };
        let labels = std::mem::take(&mut self.pending_labels);
        let date = self.day.as_ref().map(|d| d.date);
        for (kind, label) in labels {
            if !still(&kind, self) {
                continue;
            }
            let asked = kind.asked_utc().unwrap_or_default();
            let shown = crate::calendar::local(self.unit.zone, asked).format("%H:%M");
            let at = crate::calendar::local(self.unit.zone, self.now_ms.div_euclid(1000))
                .format("%H:%M");
            let reason = match kind {
                InjectionKind::Speeding { .. } => format!(
                    "{why} a las {at} sin un tramo libre para el exceso después de las {shown}"
                ),
                _ => format!("{why} a las {at} sin volver a circular después de las {shown}"),
            };
            self.unhonoured.push(Unhonoured {
                label,
                plate: self.unit.plate.clone(),
                date: date.unwrap_or_default(),
                reason,
            });
        }
        self.pending_speeding = None;
        self.pending_stop = None;
    }

    fn open_stop(
        &mut self,
        start_ms: i64,
        reason: StopReason,
        place: String,
        from_data_start: bool,
    ) {
        if let Some(stop) = &mut self.stop {
            // Still standing, or set off without moving yet: the same stop, with the later
            // reason — except that a stop the shift ended in stays the day's parking.
            if stop.reason != StopReason::FinDeTurno {
                stop.reason = reason;
            }
            stop.leaving_ms = None;
            return;
        }
        let position = self.position();
        self.stop = Some(OpenStop {
            start_ms,
            position,
            place,
            reason,
            from_data_start,
            injected: false,
            leaving_ms: None,
        });
    }

    /// The unit sets off at `end_ms`: the stop ends there once it has moved.
    fn close_stop(&mut self, end_ms: i64) {
        if let Some(stop) = &mut self.stop {
            stop.leaving_ms.get_or_insert(end_ms);
        }
    }

    /// Ends a stop the unit set off from, now that it has moved (or the data end).
    fn settle_departure(&mut self) {
        let Some(end_ms) = self.stop.as_ref().and_then(|s| s.leaving_ms) else {
            return;
        };
        let Some(stop) = self.stop.take() else { return };
        let duration_s = (end_ms - stop.start_ms).div_euclid(1000);
        if duration_s < MIN_TRUTH_STOP_S && !stop.from_data_start {
            return;
        }
        self.emit_stop(stop, Some(end_ms), duration_s);
    }

    fn emit_stop(&mut self, stop: OpenStop, end_ms: Option<i64>, duration_s: i64) {
        self.sink.truth(TruthEvent::Parada {
            placa: self.unit.plate.clone(),
            inicio_utc: stop.start_ms.div_euclid(1000),
            fin_utc: end_ms.map(|e| e.div_euclid(1000)),
            duracion_s: duration_s,
            lat: stop.position.lat,
            lon: stop.position.lon,
            lugar: stop.place,
            motivo: stop.reason,
            motor_encendido: self.ignition,
            desde_inicio_datos: stop.from_data_start,
            inyectada: stop.injected,
        });
    }

    fn finish(&mut self) {
        let end = self.end_ms;
        self.close_speeding(end);
        self.settle_departure();
        if let Some(stop) = self.stop.take() {
            if self.frozen && self.ignition {
                self.sink.truth(TruthEvent::DetenidaAhora {
                    placa: self.unit.plate.clone(),
                    desde_utc: stop.start_ms.div_euclid(1000),
                    minutos: ((end - stop.start_ms) as f64 / 60_000.0 * 10.0).round() / 10.0,
                    lat: stop.position.lat,
                    lon: stop.position.lon,
                });
            }
            let duration_s = (end - stop.start_ms).div_euclid(1000);
            self.emit_stop(stop, None, duration_s);
        }
        for fence in 0..self.visits.len() {
            self.close_visit(fence, None);
        }
        self.close_jornada(None);
        if self.frozen {
            self.settle_pending("la unidad quedó detenida (detenida_ahora)");
        } else {
            self.settle_pending("los datos terminan (--ahora)");
        }
        self.finish_tracker();
        for (day, km) in self.unit.days.iter().zip(&self.km_by_day) {
            self.sink.truth(TruthEvent::KmDia {
                placa: self.unit.plate.clone(),
                fecha: day.date.to_string(),
                km: (km * 1000.0).round() / 1000.0,
            });
        }
    }
}

/// A unit's pending events, taken earliest first: by time, then by the sequence number they
/// were scheduled with (unique), so the order is that of a single priority queue. They wait
/// in three places, because one heap made every event pay for the others' depth:
/// the tracker's periodic ticks (nearly every event of a run, one or two pending at a time)
/// in a heap of their own; every shift's start, all known before the run, in a sorted `Vec`
/// ([`EventQueue::set_apart_what_waits`]); the rest (a handful) in the main heap. Taking the
/// earliest of the three heads gives the single queue's order exactly.
#[derive(Default)]
struct EventQueue {
    others: BinaryHeap<Reverse<(i64, u64, Event)>>,
    /// `Event::Report`s, by (time, sequence).
    ticks: BinaryHeap<Reverse<(i64, u64)>>,
    /// Sorted latest first, as `BinaryHeap::into_sorted_vec` leaves `Reverse` keys.
    waiting: Vec<Reverse<(i64, u64, Event)>>,
}

impl EventQueue {
    #[inline]
    fn push(&mut self, at_ms: i64, seq: u64, event: Event) {
        match event {
            Event::Report => self.ticks.push(Reverse((at_ms, seq))),
            _ => self.others.push(Reverse((at_ms, seq, event))),
        }
    }

    /// Moves the events scheduled so far (other than ticks) out of the main heap, in order;
    /// once, before the run (the shift starts).
    fn set_apart_what_waits(&mut self) {
        let mut waiting = std::mem::take(&mut self.others).into_sorted_vec();
        if !self.waiting.is_empty() {
            // Not how the agent uses it, but keep every event if it were called twice.
            waiting.extend(std::mem::take(&mut self.waiting));
            waiting.sort_unstable();
        }
        self.waiting = waiting;
    }

    /// The earliest event, taken from where it waits.
    #[inline]
    fn pop(&mut self) -> Option<Reverse<(i64, u64, Event)>> {
        // (time, sequence) as one number ordered the same way; an empty place compares after
        // any event (no event is numbered `u64::MAX`).
        let key = |at: i64, seq: u64| (i128::from(at) << 64) | i128::from(seq);
        const NONE: i128 = i128::MAX;
        let other = self
            .others
            .peek()
            .map_or(NONE, |Reverse((at, seq, _))| key(*at, *seq));
        let tick = self
            .ticks
            .peek()
            .map_or(NONE, |Reverse((at, seq))| key(*at, *seq));
        let waiting = self
            .waiting
            .last()
            .map_or(NONE, |Reverse((at, seq, _))| key(*at, *seq));
        if tick < other && tick < waiting {
            self.ticks
                .pop()
                .map(|Reverse((at, seq))| Reverse((at, seq, Event::Report)))
        } else if other < waiting {
            self.others.pop()
        } else {
            self.waiting.pop()
        }
    }
}

#[cfg(test)]
mod queue_tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Events set apart before the run, ticks and other events scheduled during it come
        /// out in the single queue's order, whatever their times (ties broken by the sequence
        /// number).
        #[test]
        fn the_event_queue_gives_the_single_queue_order(
            early in proptest::collection::vec(0i64..50, 0..40),
            during in proptest::collection::vec((0i64..50, 0u8..3, 0usize..3), 0..80),
        ) {
            let mut seq = 0u64;
            let mut single = BinaryHeap::new();
            let mut queue = EventQueue::default();
            let mut push = |at: i64, event: Event, single: &mut BinaryHeap<_>, queue: &mut EventQueue| {
                seq += 1;
                single.push(Reverse((at, seq, event)));
                queue.push(at, seq, event);
            };
            for (i, at) in early.iter().enumerate() {
                push(*at, Event::ShiftStart(i), &mut single, &mut queue);
            }
            queue.set_apart_what_waits();
            // Events scheduled while others are taken, as the run does.
            let (mut expected, mut got) = (Vec::new(), Vec::new());
            let mut pending = during.iter();
            loop {
                if let Some((at, kind, pops)) = pending.next() {
                    let event = match kind {
                        0 => Event::Report,
                        1 => Event::DwellEnd,
                        _ => Event::Heartbeat(*at as u32),
                    };
                    push(*at, event, &mut single, &mut queue);
                    for _ in 0..*pops {
                        expected.extend(single.pop());
                        got.extend(queue.pop());
                    }
                } else {
                    let (want, have) = (single.pop(), queue.pop());
                    let done = want.is_none() && have.is_none();
                    expected.extend(want);
                    got.extend(have);
                    if done {
                        break;
                    }
                }
            }
            prop_assert_eq!(got, expected);
        }
    }
}
