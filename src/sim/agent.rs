//! One vehicle over the whole period: a discrete-event agent with explicit states.
//!
//! Owns how a vehicle spends its days. Discrete events (shift start, departures, dwell ends,
//! desired-speed changes, tracker reports, ignition off, signal loss, injected stops) come off
//! a time-ordered queue; between two events the continuous motion along the route is
//! integrated in steps of at most one second with acceleration and braking limits, and an
//! arrival at a halt is itself turned into a state change at its own instant. Reports sample
//! the true state exactly at their instants and pass through the [`Tracker`]; truth events are
//! emitted as the facts they describe complete. Sans-IO: everything leaves through the sink.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use chrono::NaiveDate;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_distr::Exp;

use super::Sink;
use super::course::Course;
use super::gnss::{Report, Tracker, TrueSample};
use super::plan::{self, Planned};
use super::rng::{Purpose, stream};
use super::truth::{StopReason, TruthEvent};
use crate::geometry::earth::LatLon;
use crate::scenario::{InjectionKind, LongStopAt, LossAt, Trigger, Unit, World};

/// Longest integration step, while cruising.
const CRUISE_STEP_MS: i64 = 5000;
/// Halts shorter than this are traffic, not stops, and are not logged as such.
pub const MIN_TRUTH_STOP_S: i64 = 60;
/// Lights are never placed this close to a stop, metres.
const LIGHT_CLEARANCE_M: f64 = 150.0;

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
}

#[derive(Debug, Clone, Copy)]
struct OpenSpeeding {
    start_ms: i64,
    max_kmh: f64,
    limit_kmh: f64,
    injected: bool,
}

struct Day {
    index: usize,
    date: NaiveDate,
    shift_end_ms: i64,
    loops: usize,
}

pub struct Agent<'a, S: Sink> {
    world: &'a World,
    courses: &'a [Course],
    unit: &'a Unit,
    plan: &'a [Planned],
    sink: &'a mut S,
    motion: ChaCha8Rng,
    tracker: Tracker,
    queue: BinaryHeap<Reverse<(i64, u64, Event)>>,
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
    episode: Option<Episode>,
    pending_speeding: Option<PendingSpeeding>,
    ignition: bool,
    reporting: bool,
    signal_lost: bool,
    /// Set by an injected "stopped now": the vehicle stays put until `ahora`.
    frozen: bool,
    day: Option<Day>,
    day_starts_ms: Vec<i64>,
    km_by_day: Vec<f64>,
    worked: Vec<bool>,

    stop: Option<OpenStop>,
    speeding_truth: Option<OpenSpeeding>,
    /// Per fence: `Some(entry)` while inside (`entry` None when inside since the data start).
    visits: Vec<Option<Option<i64>>>,
    jornada_open: Option<(String, i64)>,
    reports: Vec<Report>,
    last_report_ts: Option<i64>,
    /// When the current shift started: the periodic reports' grid origin.
    shift_start_ms: i64,
}

impl<'a, S: Sink> Agent<'a, S> {
    pub fn new(
        world: &'a World,
        courses: &'a [Course],
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
        let mut day_starts_ms: Vec<i64> = world
            .days
            .iter()
            .map(|d| world.local_midnight_utc(*d) * 1000)
            .collect();
        let after_last = world.days.last().map_or(0, |d| {
            world.local_midnight_utc(*d + chrono::Duration::days(1)) * 1000
        });
        day_starts_ms.push(after_last);
        let start_ms = day_starts_ms[0];
        Agent {
            world,
            courses,
            unit,
            plan,
            sink,
            motion,
            tracker,
            queue: BinaryHeap::new(),
            seq: 0,
            now_ms: start_ms,
            end_ms: world.ahora_utc * 1000,
            interval_ms: world.interval_s * 1000,
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
            episode: None,
            pending_speeding: None,
            ignition: false,
            reporting: false,
            signal_lost: false,
            frozen: false,
            day: None,
            km_by_day: vec![0.0; world.days.len()],
            worked: vec![false; world.days.len()],
            day_starts_ms,
            stop: None,
            speeding_truth: None,
            visits: vec![None; world.fences.len()],
            jornada_open: None,
            reports: Vec::new(),
            last_report_ts: None,
            shift_start_ms: start_ms,
        }
    }

    fn schedule(&mut self, at_ms: i64, event: Event) {
        self.seq += 1;
        self.queue.push(Reverse((at_ms, self.seq, event)));
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

    /// Runs the whole period.
    pub fn run(mut self) {
        if !self.unit.active || self.unit.routes.is_empty() {
            return;
        }
        for planned in self.plan {
            self.sink.truth(TruthEvent::Inyeccion {
                placa: self.unit.plate.clone(),
                fecha: planned.date.to_string(),
                clase: planned.kind.name().into(),
                aleatoria: planned.random,
                parametros: plan::parameters(&planned.kind),
            });
        }
        // Parked at the depot, engine off, since before the data starts.
        let start_ms = self.now_ms;
        self.heading_deg = self.world.routes[self.route].at(0.0).1;
        self.open_stop(start_ms, StopReason::FinDeTurno, "depósito".into(), true);
        for fence in self.courses[self.route].fences_at(0.0).collect::<Vec<_>>() {
            self.visits[fence] = Some(None);
        }
        for index in 0..self.world.days.len() {
            let date = self.world.days[index];
            if !self.world.works(self.unit, date) {
                continue;
            }
            let rule = *self.unit.shift_for(date);
            let start_min = self
                .motion
                .random_range(rule.start_min[0]..=rule.start_min[1]);
            let start_ms = self.day_starts_ms[index] + i64::from(start_min) * 60_000;
            self.schedule(start_ms, Event::ShiftStart(index));
        }
        while let Some(Reverse((at_ms, _, event))) = self.queue.pop() {
            if at_ms > self.end_ms {
                break;
            }
            self.advance_to(at_ms);
            self.handle(event);
        }
        self.advance_to(self.end_ms);
        self.finish();
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
            Event::LossStart => self.signal_lost = true,
            Event::LossEnd => self.signal_lost = false,
            Event::StopNow => self.stop_now(),
        }
    }

    fn shift_start(&mut self, index: usize) {
        let date = self.world.days[index];
        let rule = *self.unit.shift_for(date);
        let length_h = self.uniform(rule.length_h);
        let mut shift_end_ms = self.now_ms + (length_h * 3_600_000.0) as i64;
        let stop_now = self.planned(date).find_map(|p| match p.kind {
            InjectionKind::StoppedNow { minutes } => Some(minutes),
            _ => None,
        });
        let stop_now_ms = stop_now.map(|m| self.end_ms - (m * 60_000.0).round() as i64);
        if stop_now_ms.is_some() {
            // Stay on shift past `ahora`.
            shift_end_ms = shift_end_ms.max(self.end_ms + 3_600_000);
        }
        self.worked[index] = true;
        self.shift_start_ms = self.now_ms;
        self.day = Some(Day {
            index,
            date,
            shift_end_ms,
            loops: 0,
        });
        self.ignition = true;
        self.reporting = true;
        self.jornada_open = Some((date.to_string(), self.now_ms));
        // The overnight stop goes on; the engine is now on.
        self.phase = Phase::Parked;
        self.move_to_route_start(self.unit.routes[0]);
        let wait = self.minutes_ms(self.world.behaviour.espera_inicial_min);
        self.schedule(self.now_ms, Event::Report);
        self.schedule(self.now_ms + wait, Event::Depart);
        if let Some(at) = stop_now_ms {
            self.schedule(at, Event::StopNow);
        }
        let planned: Vec<InjectionKind> = self.planned(date).map(|p| p.kind.clone()).collect();
        for kind in planned {
            if let InjectionKind::SignalLoss { at, minutes } = kind {
                let start_ms = match at {
                    LossAt::Clock(s) => self.day_starts_ms[index] + i64::from(s) * 1000,
                    LossAt::ShiftFraction(f) => {
                        self.now_ms + ((shift_end_ms - self.now_ms) as f64 * f).round() as i64
                    }
                };
                // Whole seconds, so the truth's bounds are exactly the reports' clock.
                let start_ms = (start_ms + 999).div_euclid(1000) * 1000;
                let end_ms = start_ms + (minutes * 60.0).round() as i64 * 1000;
                self.schedule(start_ms, Event::LossStart);
                self.schedule(end_ms, Event::LossEnd);
                self.sink.truth(TruthEvent::PerdidaSenal {
                    placa: self.unit.plate.clone(),
                    inicio_utc: start_ms / 1000,
                    fin_utc: end_ms / 1000,
                });
            }
        }
    }

    fn planned(&self, date: NaiveDate) -> impl Iterator<Item = &'a Planned> + use<'a, S> {
        self.plan.iter().filter(move |p| p.date == date)
    }

    /// Leaves the depot for a new loop.
    fn depart_loop(&mut self) {
        let Some(day) = &self.day else { return };
        let (loop_index, date) = (day.loops, day.date);
        self.close_stop(self.now_ms);
        self.move_to_route_start(self.unit.routes[loop_index % self.unit.routes.len()]);
        let length = self.world.routes[self.route].length_m();
        self.halts.clear();

        // Injections happen on the day's first loop.
        let long_stop = if loop_index == 0 {
            self.planned(date).find_map(|p| match &p.kind {
                InjectionKind::LongStop { at, minutes } => Some((at.clone(), *minutes)),
                _ => None,
            })
        } else {
            None
        };
        let mut halts = self.delivery_halts(long_stop.as_ref());
        if let Some((LongStopAt::Fraction(f), minutes)) = &long_stop {
            halts.push(Halt {
                along_m: f * length,
                kind: HaltKind::Forced {
                    dwell_ms: (minutes * 60_000.0).round() as i64,
                },
            });
        }
        self.add_traffic_lights(&mut halts, length);
        halts.push(Halt {
            along_m: length,
            kind: HaltKind::Depot,
        });
        halts.sort_by(|a, b| a.along_m.total_cmp(&b.along_m));
        self.halts = halts.into();
        self.pending_speeding = if loop_index == 0 {
            self.planned_speeding(date, length)
        } else {
            None
        };

        if let Some(day) = &mut self.day {
            day.loops += 1;
        }
        self.phase = Phase::Departing;
        self.draw_desired_speed();
        let next = (self.uniform(self.world.behaviour.cambio_velocidad_s) * 1000.0) as i64;
        self.schedule(self.now_ms + next, Event::DesiredSpeed);
    }

    /// The route's delivery stops with their dwell times; the injected long stop, if it is at
    /// one of them, replaces its dwell.
    fn delivery_halts(&mut self, long_stop: Option<&(LongStopAt, f64)>) -> Vec<Halt> {
        let route = &self.world.routes[self.route];
        let base_min = self.uniform(self.world.behaviour.espera_parada_min);
        let mut halts = Vec::new();
        for stop in &route.stops[1..route.stops.len() - 1] {
            let mut dwell_min = base_min * self.motion.random_range(0.6..1.4);
            let mut injected = false;
            if let Some((LongStopAt::Stop(target), minutes)) = long_stop
                && *target == stop.name
            {
                dwell_min = *minutes;
                injected = true;
            }
            halts.push(Halt {
                along_m: stop.along_m,
                kind: HaltKind::Delivery {
                    name: stop.name.clone(),
                    dwell_ms: (dwell_min * 60_000.0).round() as i64,
                    injected,
                },
            });
        }
        halts
    }

    /// Traffic lights: a Poisson process along the route, clear of the other halts.
    fn add_traffic_lights(&mut self, halts: &mut Vec<Halt>, length: f64) {
        let behaviour = &self.world.behaviour;
        if behaviour.semaforos_por_km <= 0.0 {
            return;
        }
        let Ok(gap) = Exp::new(behaviour.semaforos_por_km / 1000.0) else {
            return;
        };
        let mut s = self.motion.sample(gap);
        let fixed: Vec<f64> = halts
            .iter()
            .map(|h| h.along_m)
            .chain([0.0, length])
            .collect();
        while s < length {
            if fixed.iter().all(|f| (f - s).abs() > LIGHT_CLEARANCE_M) {
                let wait_s = self.uniform(behaviour.semaforo_s);
                halts.push(Halt {
                    along_m: s,
                    kind: HaltKind::Light {
                        wait_ms: (wait_s * 1000.0).round() as i64,
                    },
                });
            }
            s += self.motion.sample(gap);
        }
    }

    /// The day's planned speeding episode, armed for this loop.
    fn planned_speeding(&self, date: NaiveDate, length: f64) -> Option<PendingSpeeding> {
        let (at, speed_kmh, duration_s) = self.planned(date).find_map(|p| match p.kind {
            InjectionKind::Speeding {
                at,
                speed_kmh,
                duration_s,
            } => Some((at, speed_kmh, duration_s)),
            _ => None,
        })?;
        let speed_ms = speed_kmh / 3.6;
        let duration_ms = (duration_s * 1000.0).round() as i64;
        Some(match at {
            Trigger::Fraction(f) => PendingSpeeding::AtDistance {
                along_m: f * length,
                speed_ms,
                duration_ms,
            },
            Trigger::Time(s) => PendingSpeeding::AtTime {
                from_ms: self.day_starts_ms[self.day.as_ref().map_or(0, |d| d.index)]
                    + i64::from(s) * 1000,
                speed_ms,
                duration_ms,
            },
        })
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
        let base = self.world.routes[self.route].base_speed_kmh();
        let factor = self.uniform(self.world.behaviour.variacion_velocidad);
        self.desired_ms = base * factor / 3.6;
    }

    fn limit_kmh_at(&self, along_m: f64) -> f64 {
        self.courses[self.route]
            .fence_limit_kmh(along_m)
            .unwrap_or(self.unit.limit_kmh)
    }

    fn advance_to(&mut self, t_ms: i64) {
        while self.now_ms < t_ms {
            if !self.phase.moving() {
                self.now_ms = t_ms;
                return;
            }
            let dt_ms = (t_ms - self.now_ms).min(self.max_step_ms());
            self.step(dt_ms);
        }
    }

    /// One second while anything can change; up to [`CRUISE_STEP_MS`] when cruising at the
    /// wanted speed with no halt, limit change or injection within reach of the step. The
    /// motion is then exactly linear, so the longer step loses nothing.
    fn max_step_ms(&self) -> i64 {
        if self.phase != Phase::Driving
            || self.episode.is_some()
            || self.pending_speeding.is_some()
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
        let limit_change = self.courses[self.route]
            .limits
            .iter()
            .flat_map(|(span, _)| [span.from_m, span.to_m])
            .any(|b| b > self.along_m && b <= reach);
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

        let stopping_m = v * v / (2.0 * dyn_.brake_ms2);
        let mut accel = if dist <= stopping_m + v * dt * 0.5 + 0.2 {
            // Brake for the halt: the constant deceleration that stops exactly there.
            self.phase = Phase::Approaching;
            self.episode = None;
            -(v * v / (2.0 * dist.max(0.05))).min(3.0 * dyn_.brake_ms2)
        } else {
            let compliance = self.world.behaviour.cumplimiento_limite;
            let look_m = (s0 + stopping_m + 30.0).min(halt_along);
            let limit = self.limit_kmh_at(s0).min(self.limit_kmh_at(look_m));
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
            let route = &self.world.routes[self.route];
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
        if !matches!(self.phase, Phase::Driving | Phase::Departing) {
            return;
        }
        let (speed_ms, duration_ms, ready) = match pending {
            PendingSpeeding::AtDistance {
                along_m,
                speed_ms,
                duration_ms,
            } => (speed_ms, duration_ms, self.along_m >= along_m),
            PendingSpeeding::AtTime {
                from_ms,
                speed_ms,
                duration_ms,
            } => {
                // An open stretch long enough to hold the whole episode.
                let needed = speed_ms * duration_ms as f64 / 1000.0 + 300.0;
                let clear = self
                    .halts
                    .iter()
                    .find(|h| !matches!(h.kind, HaltKind::Light { .. }))
                    .map_or(0.0, |h| h.along_m - self.along_m);
                (speed_ms, duration_ms, t0 >= from_ms && clear >= needed)
            }
        };
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
            let length = self.world.routes[self.route].length_m();
            let courses = self.courses;
            for span in &courses[self.route].spans {
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

    fn close_speeding(&mut self, end_ms: i64) {
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

    fn day_index(&self, t_ms: i64) -> usize {
        self.day_starts_ms
            .partition_point(|start| *start <= t_ms)
            .saturating_sub(1)
    }

    fn position(&self) -> LatLon {
        let route = &self.world.routes[self.route];
        let segment = route.segment_from(self.segment, self.along_m);
        route.at_segment(segment, self.along_m).0
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
                    stop.injected = injected;
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
                let Some(day) = &self.day else { return };
                let shift_end_ms = day.shift_end_ms;
                let next_route = self.unit.routes[day.loops % self.unit.routes.len()];
                let loop_ms = (self.world.routes[next_route].routed_duration_s
                    * self.world.behaviour.margen_vuelta
                    * 1000.0) as i64;
                if now + loop_ms > shift_end_ms {
                    self.open_stop(now, StopReason::FinDeTurno, "depósito".into(), false);
                    let wait = self.minutes_ms(self.world.behaviour.espera_final_min);
                    // The ignition-off report is an event report: a whole second of its own,
                    // off the periodic grid.
                    let mut off_ms = (now + wait + 999).div_euclid(1000) * 1000;
                    if (off_ms - self.shift_start_ms).rem_euclid(self.interval_ms) == 0 {
                        off_ms += 1000;
                    }
                    self.schedule(off_ms, Event::IgnitionOff);
                } else {
                    self.open_stop(now, StopReason::Deposito, "depósito".into(), false);
                    let wait = self.minutes_ms(self.world.behaviour.espera_deposito_min);
                    self.schedule(now + wait, Event::Depart);
                }
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
            self.pending_speeding = None;
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
        if let Some((date, start_ms)) = self.jornada_open.take() {
            self.sink.truth(TruthEvent::Jornada {
                placa: self.unit.plate.clone(),
                fecha: date,
                inicio_utc: start_ms.div_euclid(1000),
                fin_utc: Some(self.now_ms.div_euclid(1000)),
            });
        }
        // The ignition-off event report, then a few more before the tracker sleeps.
        self.emit_report();
        let window = (self.world.behaviour.reportes_apagado_min * 60_000.0) as i64;
        self.schedule(self.now_ms + window, Event::ReportsOff);
        self.day = None;
    }

    fn report(&mut self) {
        if !self.reporting {
            return;
        }
        self.emit_report();
        self.schedule(self.now_ms + self.interval_ms, Event::Report);
    }

    fn emit_report(&mut self) {
        let ts_utc = self.now_ms.div_euclid(1000);
        if self.signal_lost || self.last_report_ts == Some(ts_utc) {
            return;
        }
        self.last_report_ts = Some(ts_utc);
        let sample = TrueSample {
            ts_utc,
            position: self.position(),
            speed_kmh: self.speed_ms * 3.6,
            heading_deg: self.heading_deg,
            ignition: self.ignition,
            odometer_km: self.odometer_start_km + self.odometer_m / 1000.0,
        };
        self.reports.clear();
        self.tracker.observe(&sample, &mut self.reports);
        let ahora = self.world.ahora_utc;
        for report in &self.reports {
            // Not received yet at `ahora`: not in the data.
            if report.received_utc <= ahora && report.ts_utc <= ahora {
                self.sink.report(report);
            }
        }
    }

    fn open_stop(
        &mut self,
        start_ms: i64,
        reason: StopReason,
        place: String,
        from_data_start: bool,
    ) {
        if let Some(stop) = &mut self.stop {
            // Still standing: a stop at the depot changes its reason, not its start.
            stop.reason = reason;
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
        });
    }

    fn close_stop(&mut self, end_ms: i64) {
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
        if let Some((date, start_ms)) = self.jornada_open.take() {
            self.sink.truth(TruthEvent::Jornada {
                placa: self.unit.plate.clone(),
                fecha: date,
                inicio_utc: start_ms.div_euclid(1000),
                fin_utc: None,
            });
        }
        for index in 0..self.world.days.len() {
            if self.worked[index] {
                self.sink.truth(TruthEvent::KmDia {
                    placa: self.unit.plate.clone(),
                    fecha: self.world.days[index].to_string(),
                    km: (self.km_by_day[index] * 1000.0).round() / 1000.0,
                });
            }
        }
    }
}
