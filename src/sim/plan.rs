//! The injection plan: explicit injections plus those drawn at random, per unit.
//!
//! Owns choosing which unit-days get random injections and with what parameters, from the
//! fleet-wide plan stream. Candidates are each unit's days before its day of `ahora` (that day
//! is cut short and might end before the event happens); a kind never lands twice on one
//! unit-day, a random signal loss avoids days with a speeding episode so the two never blur
//! each other, and a random long stop only lands where its longest length fits in the shift.

use chrono::NaiveDate;
use chrono_tz::Tz;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::rng::{Purpose, stream};
use crate::scenario::{
    InjectionKind, LongStopAt, LossAt, Trigger, World, longest_loop_s, past_workdays, running_shift,
};

/// A timed injection's instant as the truth log shows it: local time with its offset, and UTC.
fn when(zone: Tz, at_utc: i64) -> serde_json::Value {
    json!({
        "hora": crate::calendar::local(zone, at_utc).format("%Y-%m-%dT%H:%M:%S%:z").to_string(),
        "hora_utc": at_utc,
    })
}

/// The planned parameters of an injection, for the truth log; times in the unit's `zone`.
pub fn parameters(kind: &InjectionKind, zone: Tz) -> serde_json::Value {
    let trigger = |t: &Trigger| match t {
        Trigger::At(t) => when(zone, *t),
        Trigger::Fraction(f) => json!({"fraccion_ruta": f}),
    };
    match kind {
        InjectionKind::Speeding {
            at,
            speed_kmh,
            duration_s,
        } => {
            json!({"velocidad_kmh": speed_kmh, "duracion_s": duration_s, "inicio": trigger(at)})
        }
        InjectionKind::LongStop { at, minutes } => match at {
            LongStopAt::Stop(name) => json!({"minutos": minutes, "parada": name}),
            LongStopAt::Fraction(f) => json!({"minutos": minutes, "fraccion_ruta": f}),
            LongStopAt::At(t) => json!({"minutos": minutes, "inicio": when(zone, *t)}),
        },
        InjectionKind::SignalLoss { at, minutes } => match at {
            LossAt::At(t) => json!({"minutos": minutes, "inicio": when(zone, *t)}),
            LossAt::ShiftFraction(f) => json!({"minutos": minutes, "fraccion_turno": f}),
        },
        InjectionKind::StoppedNow { minutes } => json!({"minutos": minutes}),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub date: NaiveDate,
    pub kind: InjectionKind,
    pub random: bool,
    /// How messages name it: the scenario's label, or the random draw's.
    pub label: String,
}

/// Every unit's injections, indexed like `world.units`: the scenario's, then those drawn at
/// random kind by kind (the order of the draws is part of the seed's meaning), each unit's
/// sorted by date and kind.
pub fn plan(world: &World) -> Vec<Vec<Planned>> {
    let mut plan: Vec<Vec<Planned>> = vec![Vec::new(); world.units.len()];
    for injection in &world.injections {
        plan[injection.unit].push(Planned {
            date: injection.date,
            kind: injection.kind.clone(),
            random: false,
            label: injection.label.clone(),
        });
    }
    let mut draw = Draw {
        world,
        rng: stream(world.seed, "plan", Purpose::Plan),
        candidates: past_unit_days(world),
        plan,
    };
    draw.speeding();
    draw.long_stops();
    draw.signal_losses();
    draw.stopped_now();
    let mut plan = draw.plan;
    for unit_plan in &mut plan {
        unit_plan.sort_by(|a, b| a.date.cmp(&b.date).then(a.kind.name().cmp(b.kind.name())));
    }
    plan
}

/// The unit-days random injections may land on: each unit's working days before its day of
/// `ahora` whose shift is surely over by then.
fn past_unit_days(world: &World) -> Vec<(usize, NaiveDate)> {
    world
        .units
        .iter()
        .enumerate()
        .flat_map(|(u, unit)| past_workdays(unit, world.ahora_utc).map(move |d| (u, d)))
        .collect()
}

/// The random part of the plan, drawn from the fleet-wide plan stream.
struct Draw<'a> {
    world: &'a World,
    rng: ChaCha8Rng,
    candidates: Vec<(usize, NaiveDate)>,
    plan: Vec<Vec<Planned>>,
}

impl Draw<'_> {
    /// Whether unit `u` already has an injection of a kind `is` accepts on `date`.
    fn has(&self, u: usize, date: NaiveDate, is: fn(&InjectionKind) -> bool) -> bool {
        self.plan[u].iter().any(|p| p.date == date && is(&p.kind))
    }

    /// Candidate unit-days without a kind `excluded` accepts.
    fn pool(&self, excluded: fn(&InjectionKind) -> bool) -> Vec<(usize, NaiveDate)> {
        self.candidates
            .iter()
            .copied()
            .filter(|(u, d)| !self.has(*u, *d, excluded))
            .collect()
    }

    fn push(&mut self, u: usize, date: NaiveDate, kind: InjectionKind) {
        let label = format!("'{}' aleatoria", kind.name());
        self.plan[u].push(Planned {
            date,
            kind,
            random: true,
            label,
        });
    }

    fn speeding(&mut self) {
        let r = &self.world.random;
        let pool = self.pool(|k| matches!(k, InjectionKind::Speeding { .. }));
        for (u, date) in choose(&mut self.rng, &pool, r.exceso_velocidad as usize) {
            let speed_kmh =
                r.exceso_velocidad_kmh[self.rng.random_range(0..r.exceso_velocidad_kmh.len())];
            let duration_s = uniform(&mut self.rng, r.exceso_duracion_s).round();
            let at = Trigger::Fraction(self.rng.random_range(0.15..0.85));
            let kind = InjectionKind::Speeding {
                at,
                speed_kmh,
                duration_s,
            };
            self.push(u, date, kind);
        }
    }

    fn long_stops(&mut self) {
        let world = self.world;
        let r = &world.random;
        let longest_min = r.parada_minutos.iter().copied().fold(0.0, f64::max);
        let pool: Vec<(usize, NaiveDate)> = self
            .pool(|k| matches!(k, InjectionKind::LongStop { .. }))
            .into_iter()
            .filter(|(u, d)| long_stop_fits(world, *u, *d, longest_min))
            .collect();
        for (u, date) in choose(&mut self.rng, &pool, r.parada_prolongada as usize) {
            let route = &world.routes[world.units[u].routes[0]];
            let deliveries = &route.stops[1..route.stops.len() - 1];
            let minutes = r.parada_minutos[self.rng.random_range(0..r.parada_minutos.len())];
            let at = if deliveries.is_empty() {
                LongStopAt::Fraction(self.rng.random_range(0.2..0.8))
            } else {
                let index = self.rng.random_range(0..deliveries.len().min(2));
                LongStopAt::Stop(deliveries[index].name.clone())
            };
            self.push(u, date, InjectionKind::LongStop { at, minutes });
        }
    }

    /// Never on a day with a speeding episode, so the two never blur each other.
    fn signal_losses(&mut self) {
        let r = &self.world.random;
        let pool = self.pool(|k| {
            matches!(
                k,
                InjectionKind::SignalLoss { .. } | InjectionKind::Speeding { .. }
            )
        });
        for (u, date) in choose(&mut self.rng, &pool, r.perdida_senal as usize) {
            let minutes = uniform(&mut self.rng, r.perdida_minutos).round();
            let at = LossAt::ShiftFraction(self.rng.random_range(0.2..0.8));
            self.push(u, date, InjectionKind::SignalLoss { at, minutes });
        }
    }

    /// Units on shift at `ahora` whose shift had surely started before the longest stop.
    fn stopped_now(&mut self) {
        let world = self.world;
        let r = &world.random;
        let stopped = |k: &InjectionKind| matches!(k, InjectionKind::StoppedNow { .. });
        let pool: Vec<(usize, NaiveDate)> = world
            .units
            .iter()
            .enumerate()
            .filter(|(_, unit)| unit.active)
            .filter_map(|(u, unit)| {
                let date = running_shift(unit, world.ahora_utc, r.detenida_minutos[1])?;
                (!self.plan[u].iter().any(|p| stopped(&p.kind))).then_some((u, date))
            })
            .collect();
        for (u, date) in choose(&mut self.rng, &pool, r.detenida_ahora as usize) {
            let minutes = uniform(&mut self.rng, r.detenida_minutos).round();
            self.push(u, date, InjectionKind::StoppedNow { minutes });
        }
    }
}

/// Whether a long stop of `minutes` on the first loop leaves that loop inside the shortest
/// shift `unit` can draw on `date` (the scenario's check for explicit ones).
fn long_stop_fits(world: &World, u: usize, date: NaiveDate, minutes: f64) -> bool {
    let unit = &world.units[u];
    let b = &world.behaviour;
    let Some(plan) = unit.day(date).and_then(|d| d.shift) else {
        return false;
    };
    let loop_s = unit
        .routes
        .iter()
        .map(|r| longest_loop_s(&world.routes[*r], b))
        .fold(0.0, f64::max);
    loop_s + minutes * 60.0 + (b.espera_inicial_min[1] + b.espera_final_min[1]) * 60.0
        <= plan.length_h[0] * 3600.0
}

fn uniform(rng: &mut ChaCha8Rng, [lo, hi]: [f64; 2]) -> f64 {
    if hi > lo {
        rng.random_range(lo..hi)
    } else {
        lo
    }
}

/// `count` distinct items, in the order drawn (a partial Fisher–Yates shuffle).
fn choose<T: Copy>(rng: &mut ChaCha8Rng, pool: &[T], count: usize) -> Vec<T> {
    let mut items = pool.to_vec();
    let count = count.min(items.len());
    for i in 0..count {
        let j = rng.random_range(i..items.len());
        items.swap(i, j);
    }
    items.truncate(count);
    items
}
