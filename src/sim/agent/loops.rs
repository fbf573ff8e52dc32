//! A loop planned before it starts: its halts (deliveries with their dwells, traffic lights,
//! an injected halt), the wait at the depot before it, and how long it should take.
//!
//! Owns drawing a loop's plan when the unit reaches the depot (or starts its shift), and the
//! decision "what fits in the shift now": it counts every planned dwell, light and wait (and an
//! injected long stop that will fall on it), not only the driving, whose part is the route's
//! routed time times `margen_vuelta`, the allowance for a slow driver and traffic. When the
//! drawn loop does not fit, the longest one that does is driven instead — the whole loop after
//! a shorter wait, else a shortened loop that serves its first or its last stops and returns
//! (`roads.rs`) — with the depot wait stretched within its range towards the shift's end, so
//! that shifts end close to their drawn length rather than up to a loop early.

use rand::RngExt;
use rand_distr::Exp;

use super::{Agent, Halt, HaltKind, LIGHT_CLEARANCE_M};
use crate::scenario::{InjectionKind, LongStopAt};
use crate::sim::Sink;
use crate::sim::roads::Shortened;

/// The next loop, drawn ahead.
#[derive(Debug, Clone)]
pub(super) struct LoopPlan {
    pub route: usize,
    /// Sorted along the route; the last is the depot.
    pub halts: Vec<Halt>,
    /// At the depot before leaving, milliseconds.
    pub wait_ms: i64,
    /// Expected time from departure back to the depot, milliseconds.
    pub planned_ms: i64,
}

impl<S: Sink> Agent<'_, S> {
    /// The loop to drive next with `left_ms` of the shift left, given the one drawn: the drawn
    /// one if it fits after its drawn wait; otherwise the longest that fits after a wait in
    /// `espera_deposito_min` — the whole loop, then its shortened loops from the longest (out to
    /// some of its first stops and back, or backwards to some of its last and forwards again)
    /// — with the wait as long as its range and the time left allow. `None` when not even the
    /// shortest fits.
    pub(super) fn fitting_loop(&mut self, drawn: LoopPlan, left_ms: i64) -> Option<LoopPlan> {
        if self.needed_ms(&drawn, drawn.wait_ms) <= left_ms {
            return Some(drawn);
        }
        let [lo, hi] = self.world.behaviour.espera_deposito_min;
        let (shortest, longest) = ((lo * 60_000.0) as i64, (hi * 60_000.0) as i64);
        let all = self.shortened;
        let mut shorter = all[drawn.route].iter();
        let mut plan = drawn.clone();
        loop {
            if self.needed_ms(&plan, shortest) <= left_ms {
                let stretched = (left_ms - self.needed_ms(&plan, shortest) + shortest).min(longest);
                plan.wait_ms = if self.needed_ms(&plan, stretched) <= left_ms {
                    stretched
                } else {
                    shortest
                };
                return Some(plan);
            }
            plan = self.shortened_plan(&drawn, shorter.next()?);
        }
    }

    /// From now until back at the depot: `wait_ms`, the planned loop, and an injected long
    /// stop still to come if its time falls in it, milliseconds.
    fn needed_ms(&self, plan: &LoopPlan, wait_ms: i64) -> i64 {
        let mut needed = wait_ms + plan.planned_ms;
        if let Some((at_ms, dwell_ms)) = self.pending_stop
            && at_ms <= self.now_ms + needed
        {
            needed += dwell_ms;
        }
        needed
    }

    /// `full` shortened (`roads.rs`): the deliveries it serves with their drawn dwells, and
    /// lights drawn for this pass as for any loop (a light is a halt of one pass, not a
    /// fixture of the street).
    fn shortened_plan(&mut self, full: &LoopPlan, shortened: &Shortened) -> LoopPlan {
        let route = shortened.route;
        let road = &self.routes[route];
        let length = road.length_m();
        let drawn: Vec<&Halt> = full
            .halts
            .iter()
            .filter(|h| matches!(h.kind, HaltKind::Delivery { .. }))
            .collect();
        let mut halts: Vec<Halt> = Vec::with_capacity(shortened.deliveries.len() + 8);
        for (k, &delivery) in shortened.deliveries.iter().enumerate() {
            if let Some(halt) = drawn.get(delivery) {
                halts.push(Halt {
                    along_m: road.stops[k + 1].along_m,
                    kind: halt.kind.clone(),
                });
            }
        }
        self.add_traffic_lights(&mut halts, length);
        halts.push(Halt {
            along_m: length,
            kind: HaltKind::Depot,
        });
        halts.sort_by(|a, b| a.along_m.total_cmp(&b.along_m));
        let halted_ms: i64 = halts.iter().map(|h| h.kind.planned_ms()).sum();
        let driving_ms = (self.routes[route].routed_duration_s
            * self.world.behaviour.margen_vuelta
            * 1000.0) as i64;
        LoopPlan {
            route,
            halts,
            wait_ms: full.wait_ms,
            planned_ms: driving_ms + halted_ms,
        }
    }

    /// Draws loop `loop_index` of the current day, after a depot wait drawn in `wait_min`.
    pub(super) fn plan_loop(&mut self, loop_index: usize, wait_min: [f64; 2]) -> LoopPlan {
        let route = self.unit.routes[loop_index % self.unit.routes.len()];
        let length = self.routes[route].length_m();
        // Untimed long stops fall on the day's first loop.
        let long_stop = if loop_index == 0 {
            self.day_plan().find_map(|p| match &p.kind {
                InjectionKind::LongStop { at, minutes } if !matches!(at, LongStopAt::At(_)) => {
                    Some((at.clone(), *minutes))
                }
                _ => None,
            })
        } else {
            None
        };
        let mut halts = self.delivery_halts(route, long_stop.as_ref());
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
        let halted_ms: i64 = halts.iter().map(|h| h.kind.planned_ms()).sum();
        let driving_ms = (self.routes[route].routed_duration_s
            * self.world.behaviour.margen_vuelta
            * 1000.0) as i64;
        let wait_ms = self.minutes_ms(wait_min);
        LoopPlan {
            route,
            halts,
            wait_ms,
            planned_ms: driving_ms + halted_ms,
        }
    }

    /// The route's delivery stops with their dwell times; the injected long stop, if it is at
    /// one of them, replaces its dwell.
    fn delivery_halts(&mut self, route: usize, long_stop: Option<&(LongStopAt, f64)>) -> Vec<Halt> {
        let route = &self.routes[route];
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
}

impl HaltKind {
    /// How long the plan expects the unit to stand at this halt, milliseconds.
    pub(super) fn planned_ms(&self) -> i64 {
        match self {
            HaltKind::Delivery { dwell_ms, .. } | HaltKind::Forced { dwell_ms } => *dwell_ms,
            HaltKind::Light { wait_ms } => *wait_ms,
            HaltKind::Depot | HaltKind::StopNow => 0,
        }
    }
}
