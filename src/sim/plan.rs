//! The injection plan: explicit injections plus those drawn at random, per unit.
//!
//! Owns choosing which unit-days get random injections and with what parameters, from the
//! fleet-wide plan stream. Candidates are the days before `ahora` (that day is cut short and
//! might end before the event happens); a kind never lands twice on one unit-day, and a random
//! signal loss avoids days with a speeding episode so the two never blur each other.

use chrono::NaiveDate;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::rng::{Purpose, stream};
use crate::scenario::{InjectionKind, LongStopAt, LossAt, Trigger, World};

/// The planned parameters of an injection, for the truth log.
pub fn parameters(kind: &InjectionKind) -> serde_json::Value {
    let trigger = |t: &Trigger| match t {
        Trigger::Time(s) => json!({"hora_s": s}),
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
        },
        InjectionKind::SignalLoss { at, minutes } => match at {
            LossAt::Clock(s) => json!({"minutos": minutes, "hora_s": s}),
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
}

/// Every unit's injections, indexed like `world.units`.
pub fn plan(world: &World) -> Vec<Vec<Planned>> {
    let mut plan: Vec<Vec<Planned>> = vec![Vec::new(); world.units.len()];
    for injection in &world.injections {
        plan[injection.unit].push(Planned {
            date: injection.date,
            kind: injection.kind.clone(),
            random: false,
        });
    }

    let mut rng = stream(world.seed, "plan", Purpose::Plan);
    let today = world.ahora_local.date();
    let candidates: Vec<(usize, NaiveDate)> = world
        .units
        .iter()
        .enumerate()
        .flat_map(|(u, unit)| {
            world
                .days
                .iter()
                .filter(move |d| **d < today && world.works(unit, **d))
                .map(move |d| (u, *d))
        })
        .collect();
    let r = &world.random;

    let has = |plan: &Vec<Vec<Planned>>, u: usize, d: NaiveDate, name: &str| {
        plan[u].iter().any(|p| p.date == d && p.kind.name() == name)
    };

    let pool: Vec<_> = candidates
        .iter()
        .copied()
        .filter(|(u, d)| !has(&plan, *u, *d, "exceso_velocidad"))
        .collect();
    for (u, date) in choose(&mut rng, &pool, r.exceso_velocidad as usize) {
        let speed_kmh = r.exceso_velocidad_kmh[rng.random_range(0..r.exceso_velocidad_kmh.len())];
        let duration_s = uniform(&mut rng, r.exceso_duracion_s).round();
        let at = Trigger::Fraction(rng.random_range(0.15..0.85));
        plan[u].push(Planned {
            date,
            kind: InjectionKind::Speeding {
                at,
                speed_kmh,
                duration_s,
            },
            random: true,
        });
    }

    let pool: Vec<_> = candidates
        .iter()
        .copied()
        .filter(|(u, d)| !has(&plan, *u, *d, "parada_prolongada"))
        .collect();
    for (u, date) in choose(&mut rng, &pool, r.parada_prolongada as usize) {
        let route = &world.routes[world.units[u].routes[0]];
        let deliveries = &route.stops[1..route.stops.len() - 1];
        let minutes = r.parada_minutos[rng.random_range(0..r.parada_minutos.len())];
        let at = if deliveries.is_empty() {
            LongStopAt::Fraction(rng.random_range(0.2..0.8))
        } else {
            let index = rng.random_range(0..deliveries.len().min(2));
            LongStopAt::Stop(deliveries[index].name.clone())
        };
        plan[u].push(Planned {
            date,
            kind: InjectionKind::LongStop { at, minutes },
            random: true,
        });
    }

    let pool: Vec<_> = candidates
        .iter()
        .copied()
        .filter(|(u, d)| {
            !has(&plan, *u, *d, "perdida_senal") && !has(&plan, *u, *d, "exceso_velocidad")
        })
        .collect();
    for (u, date) in choose(&mut rng, &pool, r.perdida_senal as usize) {
        let minutes = uniform(&mut rng, r.perdida_minutos).round();
        let at = LossAt::ShiftFraction(rng.random_range(0.2..0.8));
        plan[u].push(Planned {
            date,
            kind: InjectionKind::SignalLoss { at, minutes },
            random: true,
        });
    }

    let now_s = chrono::Timelike::num_seconds_from_midnight(&world.ahora_local.time()) as f64;
    let stopped_pool: Vec<(usize, NaiveDate)> = world
        .units
        .iter()
        .enumerate()
        .filter(|(u, unit)| world.works(unit, today) && !has(&plan, *u, today, "detenida_ahora"))
        .filter(|(_, unit)| {
            let rule = unit.shift_for(today);
            now_s - r.detenida_minutos[1] * 60.0 >= f64::from(rule.start_min[1] * 60) + 900.0
        })
        .map(|(u, _)| (u, today))
        .collect();
    for (u, date) in choose(&mut rng, &stopped_pool, r.detenida_ahora as usize) {
        let minutes = uniform(&mut rng, r.detenida_minutos).round();
        plan[u].push(Planned {
            date,
            kind: InjectionKind::StoppedNow { minutes },
            random: true,
        });
    }

    for unit_plan in &mut plan {
        unit_plan.sort_by(|a, b| a.date.cmp(&b.date).then(a.kind.name().cmp(b.kind.name())));
    }
    plan
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
