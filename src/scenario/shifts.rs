//! Shift rules and each unit's days: when a shift may start, how long it may last, and whether
//! that can work on every day of the period.
//!
//! Owns reading `[turno]`, `[turno.<día>]` and a unit's `turno` (every day, then per weekday)
//! into [`ShiftRule`]s, turning them into each unit's [`UnitDay`]s in its zone through the
//! calendar (a start window on the wall clock becomes the real instants that show it that
//! day), and the checks only the days can make: a window the clocks skip entirely, an offset
//! the zone does not use that day, a night shift that could still run when the next one starts,
//! and a first loop that cannot fit in the shortest shift. A shift belongs to the day it starts
//! on; its length is elapsed time.

use chrono::{Duration, NaiveDate};

use super::checker::Checker;
use super::file::{BehaviourFile, ShiftFile, ShiftOverride, UnitShiftFile};
use super::{ScenarioError, ShiftPlan, ShiftRule, Unit, UnitDay};
use crate::calendar::{self, WEEKDAY_KEYS, weekday_es};
use crate::geometry::route::Route;

/// How long after its planned end a shift may still be winding down: the measured overrun
/// of the last loop (see docs/escenarios.md), the last wait at the depot and the ignition-off
/// reports are added to it when checking that shifts do not overlap.
pub const SHIFT_TOLERANCE_S: i64 = 15 * 60;

/// The scenario's rules, Monday first: `[turno]` with each `[turno.<día>]` on top.
pub(super) fn base_rules(
    check: Checker,
    shift: &ShiftFile,
) -> Result<[ShiftRule; 7], ScenarioError> {
    let at = check.table("turno").key("inicio");
    let base = ShiftRule {
        start: [
            at.clock("[turno] inicio", &shift.inicio[0])?,
            at.clock("[turno] inicio", &shift.inicio[1])?,
        ],
        length_h: shift.duracion_h,
        at: at.offset(),
    };
    validate(check.table("turno"), "[turno]", base)?;
    let mut rules = [base; 7];
    for (i, over) in shift.weekdays().iter().enumerate() {
        let what = format!("[turno.{}]", WEEKDAY_KEYS[i]);
        let here = check.table(&format!("turno.{}", WEEKDAY_KEYS[i]));
        rules[i] = apply(here, &what, base, over.as_ref())?;
    }
    Ok(rules)
}

/// A unit's rules: the scenario's, then its `turno` for every day, then its weekday ones.
pub(super) fn unit_rules(
    check: Checker,
    what: &str,
    scenario: [ShiftRule; 7],
    own: Option<&UnitShiftFile>,
) -> Result<[ShiftRule; 7], ScenarioError> {
    let Some(own) = own else {
        return Ok(scenario);
    };
    let here = check.key("turno");
    let mut rules = scenario;
    let base = own.base();
    for (i, rule) in rules.iter_mut().enumerate() {
        *rule = apply(here, &format!("{what} turno"), *rule, Some(&base))?;
        if let Some(over) = own.weekdays()[i] {
            let what = format!("{what} turno.{}", WEEKDAY_KEYS[i]);
            *rule = apply(here, &what, *rule, Some(over))?;
        }
    }
    Ok(rules)
}

fn apply(
    check: Checker,
    what: &str,
    base: ShiftRule,
    over: Option<&ShiftOverride>,
) -> Result<ShiftRule, ScenarioError> {
    let Some(over) = over else {
        return Ok(base);
    };
    let mut rule = base;
    if let Some([a, b]) = &over.inicio {
        let at = check.key("inicio");
        let what = format!("{what} inicio");
        rule.start = [at.clock(&what, a)?, at.clock(&what, b)?];
        rule.at = at.offset();
    }
    if let Some(length) = over.duracion_h {
        rule.length_h = length;
    }
    validate(check, what, rule)?;
    Ok(rule)
}

fn validate(check: Checker, what: &str, rule: ShiftRule) -> Result<(), ScenarioError> {
    if rule.start[0].seconds() > rule.start[1].seconds() {
        return check.key("inicio").fail(format!(
            "{what} inicio: la primera hora debe ser la más temprana"
        ));
    }
    check
        .key("duracion_h")
        .range(&format!("{what} duracion_h"), rule.length_h, 0.5, 20.0)
}

/// The unit's days from `first` to its date at `ahora_utc`, with each working day's shift
/// window in its zone.
pub(super) fn unit_days(
    check: Checker,
    unit: &Unit,
    first: NaiveDate,
    ahora_utc: i64,
    works: impl Fn(NaiveDate) -> bool,
) -> Result<Vec<UnitDay>, ScenarioError> {
    let last = calendar::local_date(unit.zone, ahora_utc);
    let mut days = Vec::new();
    for date in first.iter_days().take_while(|d| *d <= last) {
        let (start_utc, end_utc) = calendar::day_bounds(unit.zone, date);
        let shift = if works(date) {
            Some(shift_plan(check, unit, date)?)
        } else {
            None
        };
        days.push(UnitDay {
            date,
            start_utc,
            end_utc,
            shift,
        });
    }
    no_overlaps(check, unit, &days)?;
    Ok(days)
}

/// The day's start window as instants, or why the rule cannot work that day.
fn shift_plan(check: Checker, unit: &Unit, date: NaiveDate) -> Result<ShiftPlan, ScenarioError> {
    let rule = unit.shift_for(date);
    let here = check.at(rule.at);
    let what = format!(
        "unidad '{}': el turno del {} {date}",
        unit.plate,
        weekday_es(date)
    );
    match calendar::window(unit.zone, date, rule.start[0], rule.start[1]) {
        Ok(Some((first_start_utc, last_start_utc))) => Ok(ShiftPlan {
            first_start_utc,
            last_start_utc,
            length_h: rule.length_h,
        }),
        Ok(None) => here.fail(format!(
            "{what} empieza entre {} y {}, horas que no existen en {} ese día (cambio de horario)",
            rule.start[0],
            rule.start[1],
            unit.zone.name()
        )),
        Err(err) => here.fail(format!("{what}: {err}")),
    }
}

/// A shift must be over (with its tolerance, last wait and ignition-off reports) before the
/// next day's can start.
fn no_overlaps(check: Checker, unit: &Unit, days: &[UnitDay]) -> Result<(), ScenarioError> {
    for pair in days.windows(2) {
        let (Some(today), Some(next)) = (pair[0].shift, pair[1].shift) else {
            continue;
        };
        let latest_over = today.latest_end_utc() + SHIFT_TOLERANCE_S;
        if latest_over > next.first_start_utc {
            let date = pair[0].date;
            let rule = unit.shift_for(date);
            return check.at(rule.at).fail(format!(
                "unidad '{}': el turno del {} {date} (inicio hasta {}, hasta {} h) puede seguir cuando empieza el del {} {} (desde {}); acorte duracion_h o separe los inicios",
                unit.plate,
                weekday_es(date),
                rule.start[1],
                rule.length_h[1],
                weekday_es(pair[1].date),
                pair[1].date,
                unit.shift_for(pair[1].date).start[0],
            ));
        }
    }
    Ok(())
}

/// The longest a loop of `route` is planned to take: driving at its routed time times the
/// margin, every delivery at the longest dwell, and the expected traffic lights at their
/// longest wait, seconds. The simulator plans each loop the same way with its drawn values.
pub fn longest_loop_s(route: &Route, behaviour: &BehaviourFile) -> f64 {
    let deliveries = route.stops.len().saturating_sub(2) as f64;
    let dwell_s = deliveries * behaviour.espera_parada_min[1] * 1.4 * 60.0;
    let lights_s = behaviour.semaforos_por_km * route.length_m() / 1000.0 * behaviour.semaforo_s[1];
    route.routed_duration_s * behaviour.margen_vuelta + dwell_s + lights_s
}

/// How much earlier than its planned end a shift driving `route` may end, seconds: a unit
/// goes home only when not even the shortest loop it could drive fits after the shortest depot
/// wait — out to the route's first delivery and back, or backwards to its last and forwards
/// again (the whole loop for a route with a single delivery). Counted at the longest dwell,
/// with the driving at its routed time times the margin and, since lights are a random count,
/// twice their expected number plus four at the longest wait (the drawn waits average well
/// below the longest, so what the simulator draws stays below that but for odds far below one
/// in a million). The simulator plans each loop the same way with its drawn values.
pub fn shortfall_limit_s(route: &Route, behaviour: &BehaviourFile) -> f64 {
    let wait_s = behaviour.espera_deposito_min[0] * 60.0;
    let stops = &route.stops;
    if stops.len() < 4 {
        return wait_s + longest_loop_s(route, behaviour);
    }
    let length = route.length_m();
    let reach_m = stops[1]
        .along_m
        .min(length - stops[stops.len() - 2].along_m);
    let dwell_s = behaviour.espera_parada_min[1] * 1.4 * 60.0;
    let expected = behaviour.semaforos_por_km * 2.0 * reach_m / 1000.0;
    let lights_s = (2.0 * expected + 4.0) * behaviour.semaforo_s[1];
    let driving_s = route.routed_duration_s * 2.0 * reach_m / length * behaviour.margen_vuelta;
    wait_s + driving_s + dwell_s + lights_s
}

/// The first loop always runs: with the longest waits at the depot before and after it, it
/// must fit in the shortest shift of every working weekday.
pub(super) fn first_loop_fits(
    check: Checker,
    unit: &Unit,
    routes: &[Route],
    behaviour: &BehaviourFile,
) -> Result<(), ScenarioError> {
    let Some(first) = unit.routes.first() else {
        return Ok(());
    };
    let route = &routes[*first];
    let waits_s = (behaviour.espera_inicial_min[1] + behaviour.espera_final_min[1]) * 60.0;
    let loop_s = longest_loop_s(route, behaviour) + waits_s;
    for (i, rule) in unit.shifts.iter().enumerate() {
        if unit.workdays[i] && loop_s > rule.length_h[0] * 3600.0 {
            return check.at(rule.at).fail(format!(
                "unidad '{}': una vuelta de la ruta '{}' puede durar {:.1} h con sus paradas y esperas, más que el turno más corto del {} ({} h); alargue duracion_h",
                unit.plate,
                route.name,
                loop_s / 3600.0,
                WEEKDAY_KEYS[i],
                rule.length_h[0]
            ));
        }
    }
    Ok(())
}

/// The day after `date`.
pub(super) fn next_day(date: NaiveDate) -> NaiveDate {
    date + Duration::days(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::file::ScenarioFile;

    /// A unit's own `turno` goes on top of the scenario's weekday rules, and its own weekday
    /// entries on top of that.
    #[test]
    fn a_units_rules_layer_over_the_scenarios() {
        let text = r#"
[escenario]
nombre = "x"
dias = 1

[turno]
inicio = ["06:00", "07:00"]
duracion_h = [8, 9]

[turno.sabado]
duracion_h = [4, 5]

[[unidades]]
placa = "A"
tipo = "panel"
conductor = "c"
turno = { inicio = ["21:30", "22:30"], viernes = { duracion_h = [6, 7] } }
"#;
        let file: ScenarioFile = toml::from_str(text).unwrap();
        let lines = super::super::error::Lines::of(text);
        let check = Checker::new(std::path::Path::new("x.toml"), text, &lines);
        let scenario = base_rules(check, &file.turno).unwrap();
        let unit = file.unidades[0].get_ref();
        let rules = unit_rules(check, "unidad 'A'", scenario, unit.turno.as_ref()).unwrap();
        let shown = |i: usize| {
            let r = rules[i];
            (r.start[0].to_string(), r.start[1].to_string(), r.length_h)
        };
        let night = |h: [f64; 2]| ("21:30".to_owned(), "22:30".to_owned(), h);
        assert_eq!(shown(0), night([8.0, 9.0]), "Monday: the unit's start");
        assert_eq!(shown(4), night([6.0, 7.0]), "Friday: its own weekday entry");
        assert_eq!(
            shown(5),
            night([4.0, 5.0]),
            "Saturday: the scenario's length"
        );
        assert_eq!(scenario[0].start[0].to_string(), "06:00");
    }
}
