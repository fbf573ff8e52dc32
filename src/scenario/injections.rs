//! The injection checks: `[[inyecciones.*]]` entries to [`Injection`]s, and whether
//! `[inyecciones.aleatorias]` can be drawn at all.
//!
//! Owns one resolver per kind (the unit and its working day, then what that kind must fit: a
//! speed above the limit and within the vehicle, a delivery stop of the route, a time that
//! exists on the unit's clock that day and falls inside every shift its rule can draw, a stop
//! after the shift started) and the collision rule between injections of one unit-day. Times
//! are wall-clock times in the unit's zone on the day the shift starts; for a shift that may
//! run past midnight, a time earlier than its first possible start is the next morning's. The
//! random draw itself is the simulator's plan; here only its ranges and its room are checked,
//! so a scenario that cannot be simulated is refused before anything runs. The first problem
//! found is returned.

use chrono::NaiveDate;

use super::checker::Checker;
use super::file::{
    BehaviourFile, InjectionsFile, LongStopFile, RandomInjectionsFile, SignalLossFile,
    SpeedingFile, StoppedNowFile,
};
use super::shifts::{longest_loop_s, next_day};
use super::{
    Injection, InjectionKind, LongStopAt, LossAt, ScenarioError, ShiftPlan, Trigger, Unit,
    plate_key,
};
use crate::calendar::{self, weekday_es};
use crate::geometry::route::Route;

/// A unit stopped "now" must have been on shift at least this long before it stopped.
const STOPPED_AFTER_START_S: i64 = 15 * 60;
/// A timed speeding episode or halt must be due to end this long before `--ahora`: it starts
/// at the first suitable moment from its time, which may come a few minutes later.
const TIMED_BEFORE_AHORA_S: i64 = 30 * 60;
/// Clear road beyond a timed speeding episode's own length, metres (the simulator asks the
/// same before starting one).
pub const SPEEDING_CLEARANCE_M: f64 = 300.0;

/// What injection checks need to know about the world.
pub(super) struct Frame<'a> {
    pub ahora_utc: i64,
    pub units: &'a [Unit],
    pub routes: &'a [Route],
    pub behaviour: &'a BehaviourFile,
}

impl Frame<'_> {
    fn unit(&self, check: Checker, what: &str, plate: &str) -> Result<usize, ScenarioError> {
        let key = plate_key(plate);
        let here = check.key("placa");
        match self.units.iter().position(|u| plate_key(&u.plate) == key) {
            Some(i) if self.units[i].active => Ok(i),
            Some(_) => here.fail(format!("{what}: la unidad '{plate}' está inactiva")),
            None => here.fail(format!("{what}: placa desconocida '{plate}'")),
        }
    }

    fn date(
        &self,
        check: Checker,
        what: &str,
        unit: &Unit,
        fecha: Option<NaiveDate>,
        dia: Option<i64>,
    ) -> Result<NaiveDate, ScenarioError> {
        let Some(today) = unit.today() else {
            return check.fail(format!("{what}: la unidad no tiene días en el periodo"));
        };
        let date = match (fecha, dia) {
            (Some(date), None) => date,
            (None, Some(offset)) => today + chrono::Duration::days(offset),
            (Some(_), Some(_)) => {
                return check.fail(format!("{what}: use 'fecha' o 'dia', no ambos"));
            }
            (None, None) => return check.fail(format!("{what}: falta 'fecha' (o 'dia')")),
        };
        if unit.day(date).is_none() {
            let first = unit.days.first().map_or(today, |d| d.date);
            let key = if fecha.is_some() { "fecha" } else { "dia" };
            return check.key(key).fail(format!(
                "{what}: {date} está fuera del periodo simulado ({first} a {today})"
            ));
        }
        Ok(date)
    }

    /// The unit an injection names, the working day it falls on and that day's shift.
    fn unit_day(
        &self,
        check: Checker,
        what: &str,
        plate: &str,
        fecha: Option<NaiveDate>,
        dia: Option<i64>,
    ) -> Result<(usize, NaiveDate, ShiftPlan), ScenarioError> {
        let index = self.unit(check, what, plate)?;
        let unit = &self.units[index];
        let date = self.date(check, what, unit, fecha, dia)?;
        let Some(plan) = unit.day(date).and_then(|d| d.shift) else {
            let why = match unit.absence_on(date) {
                Some(absence) => match &absence.reason {
                    Some(reason) => format!(": está ausente ({reason}, 'ausencias')"),
                    None => ": está ausente ('ausencias')".to_owned(),
                },
                None => String::new(),
            };
            return check.fail(format!(
                "{what}: la unidad no trabaja el {} ({date}){why}",
                weekday_es(date)
            ));
        };
        Ok((index, date, plan))
    }

    /// The instant `hora` names during the shift of `date`: that day's wall-clock time, or the
    /// next morning's for a shift that may cross midnight when it precedes the first start.
    fn hora(
        &self,
        check: Checker,
        what: &str,
        unit: &Unit,
        (date, plan): (NaiveDate, ShiftPlan),
        text: &str,
    ) -> Result<i64, ScenarioError> {
        let here = check.key("hora");
        let what = format!("{what} hora");
        let clock = here.clock(&what, text)?;
        let on = |day: NaiveDate| {
            calendar::instant(unit.zone, clock.on(day))
                .or_else(|err| here.fail(format!("{what}: {err}")))
        };
        let day_end = unit.day(date).map_or(i64::MAX, |d| d.end_utc);
        let crosses_midnight = plan.latest_end_utc() > day_end;
        match on(date) {
            Ok(t) if t < plan.first_start_utc && crosses_midnight => on(next_day(date)),
            Err(_) if crosses_midnight && clock.seconds() < 12 * 3600 => on(next_day(date)),
            other => other,
        }
    }

    fn today(&self, unit: &Unit) -> NaiveDate {
        unit.today().unwrap_or_default()
    }
}

/// `HH:MM` of an instant on the unit's clock, with its date when it is not `date`.
fn clock_on(unit: &Unit, date: NaiveDate, ts_utc: i64) -> String {
    let local = calendar::local(unit.zone, ts_utc);
    if local.date_naive() == date {
        local.format("%H:%M").to_string()
    } else {
        local.format("%H:%M del %Y-%m-%d").to_string()
    }
}

/// Every explicit injection, kind by kind in file order, each checked against those before it.
pub(super) fn injections(
    check: Checker,
    files: &InjectionsFile,
    frame: &Frame,
) -> Result<Vec<Injection>, ScenarioError> {
    let label = |table: &str, index: usize, plate: &str| {
        format!("[[inyecciones.{table}]] #{} ({plate})", index + 1)
    };
    let mut out: Vec<Injection> = Vec::new();
    for (i, s) in files.exceso_velocidad.iter().enumerate() {
        let here = check.at(Some(s.span().start));
        let what = label("exceso_velocidad", i, &s.get_ref().placa);
        let injection = speeding(here, &what, s.get_ref(), frame)?;
        push_unique(here, &mut out, injection, frame)?;
    }
    for (i, s) in files.parada_prolongada.iter().enumerate() {
        let here = check.at(Some(s.span().start));
        let what = label("parada_prolongada", i, &s.get_ref().placa);
        let injection = long_stop(here, &what, s.get_ref(), frame)?;
        push_unique(here, &mut out, injection, frame)?;
    }
    for (i, s) in files.perdida_senal.iter().enumerate() {
        let here = check.at(Some(s.span().start));
        let what = label("perdida_senal", i, &s.get_ref().placa);
        let injection = signal_loss(here, &what, s.get_ref(), frame)?;
        push_unique(here, &mut out, injection, frame)?;
    }
    for (i, s) in files.detenida_ahora.iter().enumerate() {
        let here = check.at(Some(s.span().start));
        let what = label("detenida_ahora", i, &s.get_ref().placa);
        let injection = stopped_now(here, &what, s.get_ref(), frame)?;
        push_unique(here, &mut out, injection, frame)?;
    }
    Ok(out)
}

/// The injection's label with where it is written, for messages after the simulation.
fn labelled(check: Checker, what: &str) -> String {
    format!("{} ({what})", check.place())
}

/// `[[inyecciones.exceso_velocidad]]`: above the unit's limit, within what the vehicle can
/// do, short enough for its route, started by clock time or by route fraction.
fn speeding(
    check: Checker,
    what: &str,
    s: &SpeedingFile,
    frame: &Frame,
) -> Result<Injection, ScenarioError> {
    let (unit, date, plan) = frame.unit_day(check, what, &s.placa, s.fecha, s.dia)?;
    let u = &frame.units[unit];
    let speed = check.key("velocidad_kmh");
    if s.velocidad_kmh <= u.limit_kmh {
        return speed.fail(format!(
            "{what}: velocidad_kmh = {} no supera el límite de {} km/h",
            s.velocidad_kmh, u.limit_kmh
        ));
    }
    if s.velocidad_kmh > u.dynamics.top_speed_kmh {
        return speed.fail(format!(
            "{what}: imposible, un {} no pasa de {} km/h",
            u.kind, u.dynamics.top_speed_kmh
        ));
    }
    let length = check.key("duracion_s");
    length.value(&format!("{what} duracion_s"), s.duracion_s, 10.0, 900.0)?;
    let needed_m = s.velocidad_kmh / 3.6 * s.duracion_s;
    let route = &frame.routes[u.routes[0]];
    if needed_m > route.length_m() * 0.6 {
        return length.fail(format!(
            "{what}: duración imposible: {:.1} km a {} km/h no caben en la ruta '{}' ({:.1} km)",
            needed_m / 1000.0,
            s.velocidad_kmh,
            route.name,
            route.length_m() / 1000.0
        ));
    }
    let at = speeding_trigger(check, what, s, (unit, date, plan), frame)?;
    Ok(Injection {
        unit,
        date,
        kind: InjectionKind::Speeding {
            at,
            speed_kmh: s.velocidad_kmh,
            duration_s: s.duracion_s,
        },
        label: labelled(check, what),
    })
}

/// Where a speeding episode starts: a clock time on shift that leaves room before `--ahora`
/// on a road with a stretch long enough, or a fraction of a complete day's route.
fn speeding_trigger(
    check: Checker,
    what: &str,
    s: &SpeedingFile,
    (unit, date, plan): (usize, NaiveDate, ShiftPlan),
    frame: &Frame,
) -> Result<Trigger, ScenarioError> {
    let u = &frame.units[unit];
    match (&s.hora, s.fraccion_ruta) {
        (Some(hora), None) => {
            let start = frame.hora(check, what, u, (date, plan), hora)?;
            let end = start + s.duracion_s.round() as i64;
            let here = check.key("hora");
            on_shift(here, what, u, (date, plan), (start, end))?;
            if end + TIMED_BEFORE_AHORA_S > frame.ahora_utc {
                return here.fail(format!(
                    "{what}: la hora {hora} no deja tiempo antes de --ahora"
                ));
            }
            let needed_m = s.velocidad_kmh / 3.6 * s.duracion_s + SPEEDING_CLEARANCE_M;
            let clear_m = longest_clear_m(u, frame.routes);
            if needed_m > clear_m {
                return check.key("duracion_s").fail(format!(
                    "{what}: a {} km/h durante {} s necesita {:.1} km sin paradas, y el tramo más largo de sus rutas mide {:.1} km",
                    s.velocidad_kmh,
                    s.duracion_s,
                    needed_m / 1000.0,
                    clear_m / 1000.0
                ));
            }
            Ok(Trigger::At(start))
        }
        (None, Some(fraction)) => {
            check.key("fraccion_ruta").value(
                &format!("{what} fraccion_ruta"),
                fraction,
                0.05,
                0.95,
            )?;
            no_fraction_today(check, what, date, frame.today(u))?;
            Ok(Trigger::Fraction(fraction))
        }
        _ => check.fail(format!(
            "{what}: indique 'hora' o 'fraccion_ruta' (uno de los dos)"
        )),
    }
}

/// The longest stretch between two consecutive stops (depots included) of a unit's routes.
fn longest_clear_m(unit: &Unit, routes: &[Route]) -> f64 {
    unit.routes
        .iter()
        .flat_map(|r| {
            routes[*r]
                .stops
                .windows(2)
                .map(|w| w[1].along_m - w[0].along_m)
        })
        .fold(0.0, f64::max)
}

/// `[start, end]` inside every shift the day's rule can draw: after its latest start, before
/// its earliest planned end.
fn on_shift(
    check: Checker,
    what: &str,
    unit: &Unit,
    (date, plan): (NaiveDate, ShiftPlan),
    (start, end): (i64, i64),
) -> Result<(), ScenarioError> {
    let (on_from, on_until) = (plan.last_start_utc, plan.earliest_end_utc());
    if start < on_from || end > on_until {
        return check.fail(format!(
            "{what}: {}–{} no cae siempre dentro del turno del {date} ({} a {})",
            clock_on(unit, date, start),
            clock_on(unit, date, end),
            clock_on(unit, date, on_from),
            clock_on(unit, date, on_until)
        ));
    }
    Ok(())
}

/// `[[inyecciones.parada_prolongada]]`: on a complete day at a delivery stop of the unit's
/// first route or at a fraction of it, or at a time on shift on any loop; in every case short
/// enough to leave the first loop inside the shortest shift.
fn long_stop(
    check: Checker,
    what: &str,
    s: &LongStopFile,
    frame: &Frame,
) -> Result<Injection, ScenarioError> {
    let (unit, date, plan) = frame.unit_day(check, what, &s.placa, s.fecha, s.dia)?;
    let u = &frame.units[unit];
    let minutes = check.key("minutos");
    minutes.value(&format!("{what} minutos"), s.minutos, 1.0, 600.0)?;
    long_stop_fits(minutes, what, u, plan, s.minutos, frame)?;
    let at = match (&s.parada, s.fraccion_ruta, &s.hora) {
        (Some(name), None, None) => {
            no_fraction_today(check, what, date, frame.today(u))?;
            let route = &frame.routes[u.routes[0]];
            let deliveries = &route.stops[1..route.stops.len() - 1];
            if !deliveries.iter().any(|stop| &stop.name == name) {
                let names: Vec<&str> = deliveries.iter().map(|s| s.name.as_str()).collect();
                return check.key("parada").fail(format!(
                    "{what}: la parada '{name}' no es una entrega de la ruta '{}' ({})",
                    route.name,
                    names.join(", ")
                ));
            }
            LongStopAt::Stop(name.clone())
        }
        (None, Some(fraction), None) => {
            no_fraction_today(check, what, date, frame.today(u))?;
            check.key("fraccion_ruta").value(
                &format!("{what} fraccion_ruta"),
                fraction,
                0.05,
                0.95,
            )?;
            LongStopAt::Fraction(fraction)
        }
        (None, None, Some(hora)) => {
            let start = frame.hora(check, what, u, (date, plan), hora)?;
            let end = start + (s.minutos * 60.0).round() as i64;
            on_shift(check.key("hora"), what, u, (date, plan), (start, end))?;
            if end + TIMED_BEFORE_AHORA_S > frame.ahora_utc {
                return check.key("hora").fail(format!(
                    "{what}: la hora {hora} no deja tiempo antes de --ahora"
                ));
            }
            LongStopAt::At(start)
        }
        _ => {
            return check.fail(format!(
                "{what}: indique 'parada', 'fraccion_ruta' u 'hora' (uno de los tres)"
            ));
        }
    };
    Ok(Injection {
        unit,
        date,
        kind: InjectionKind::LongStop {
            at,
            minutes: s.minutos,
        },
        label: labelled(check, what),
    })
}

/// A long stop lengthens the loop it falls on: that loop must still fit in the shortest shift.
fn long_stop_fits(
    check: Checker,
    what: &str,
    unit: &Unit,
    plan: ShiftPlan,
    minutes: f64,
    frame: &Frame,
) -> Result<(), ScenarioError> {
    let b = frame.behaviour;
    let loop_s = unit
        .routes
        .iter()
        .map(|r| longest_loop_s(&frame.routes[*r], b))
        .fold(0.0, f64::max);
    let needed_s =
        loop_s + minutes * 60.0 + (b.espera_inicial_min[1] + b.espera_final_min[1]) * 60.0;
    if needed_s > plan.length_h[0] * 3600.0 {
        return check.fail(format!(
            "{what}: {minutes} minutos de parada más una vuelta ({:.1} h) no caben en el turno más corto de ese día ({} h)",
            loop_s / 3600.0,
            plan.length_h[0]
        ));
    }
    Ok(())
}

/// `[[inyecciones.perdida_senal]]`: inside every shift the day's rule can draw, or, when still
/// going on at `--ahora`, at least started on shift and before it.
fn signal_loss(
    check: Checker,
    what: &str,
    s: &SignalLossFile,
    frame: &Frame,
) -> Result<Injection, ScenarioError> {
    let (unit, date, plan) = frame.unit_day(check, what, &s.placa, s.fecha, s.dia)?;
    let u = &frame.units[unit];
    check
        .key("minutos")
        .value(&format!("{what} minutos"), s.minutos, 1.0, 480.0)?;
    let start = frame.hora(check, what, u, (date, plan), &s.hora)?;
    let end = start + (s.minutos * 60.0).round() as i64;
    // A loss still going on at --ahora (a unit silent right now) only has to start on shift;
    // any other must fit in it whole.
    let ongoing = end > frame.ahora_utc;
    let shown_end = if ongoing { start } else { end };
    on_shift(check.key("hora"), what, u, (date, plan), (start, shown_end)).map_err(|_| {
        check.key("hora").error(format!(
            "{what}: {}–{} no cae siempre dentro del turno del {date} ({} a {})",
            clock_on(u, date, start),
            clock_on(u, date, end),
            clock_on(u, date, plan.last_start_utc),
            clock_on(u, date, plan.earliest_end_utc())
        ))
    })?;
    if ongoing && start + 60 > frame.ahora_utc {
        return check
            .key("hora")
            .fail(format!("{what}: empieza después de --ahora"));
    }
    Ok(Injection {
        unit,
        date,
        kind: InjectionKind::SignalLoss {
            at: LossAt::At(start),
            minutes: s.minutos,
        },
        label: labelled(check, what),
    })
}

/// `[[inyecciones.detenida_ahora]]`: stopped since `--ahora − minutos` on the shift running
/// then.
fn stopped_now(
    check: Checker,
    what: &str,
    s: &StoppedNowFile,
    frame: &Frame,
) -> Result<Injection, ScenarioError> {
    let unit = frame.unit(check, what, &s.placa)?;
    let u = &frame.units[unit];
    let today = frame.today(u);
    let minutes = check.key("minutos");
    minutes.value(&format!("{what} minutos"), s.minutos, 1.0, 600.0)?;
    let Some(date) = running_shift(u, frame.ahora_utc, s.minutos) else {
        let stop_utc = frame.ahora_utc - (s.minutos * 60.0).round() as i64;
        return match u.day(today).and_then(|d| d.shift) {
            None => check.fail(format!(
                "{what}: la unidad no trabaja el {} ({today})",
                weekday_es(today)
            )),
            Some(plan) => minutes.fail(format!(
                "{what}: a las {} la unidad puede no haber empezado su turno (empieza hasta las {})",
                clock_on(u, today, stop_utc),
                clock_on(u, today, plan.last_start_utc)
            )),
        };
    };
    Ok(Injection {
        unit,
        date,
        kind: InjectionKind::StoppedNow { minutes: s.minutos },
        label: labelled(check, what),
    })
}

/// The day whose shift a unit stopped `minutes` before `ahora_utc` is surely on: today's, if
/// it has surely started by then (a day shift is kept going to `ahora`), else yesterday's
/// night shift if it is surely still on.
pub fn running_shift(unit: &Unit, ahora_utc: i64, minutes: f64) -> Option<NaiveDate> {
    let stop_utc = ahora_utc - (minutes * 60.0).round() as i64;
    let started = |plan: &ShiftPlan| plan.last_start_utc + STOPPED_AFTER_START_S <= stop_utc;
    let mut recent = unit.days.iter().rev();
    let today = recent.next()?;
    if today.shift.as_ref().is_some_and(started) {
        return Some(today.date);
    }
    let yesterday = recent.next()?;
    let plan = yesterday.shift.as_ref()?;
    (started(plan)
        && ahora_utc <= plan.earliest_end_utc()
        && plan.latest_end_utc() > yesterday.end_utc)
        .then_some(yesterday.date)
}

fn no_fraction_today(
    check: Checker,
    what: &str,
    date: NaiveDate,
    today: NaiveDate,
) -> Result<(), ScenarioError> {
    if date >= today {
        return check.fail(format!(
            "{what}: el día de --ahora está incompleto; use 'hora' o un día anterior"
        ));
    }
    Ok(())
}

/// One injection of each kind per unit and day; timed injections may not overlap each other.
fn push_unique(
    check: Checker,
    out: &mut Vec<Injection>,
    injection: Injection,
    frame: &Frame,
) -> Result<(), ScenarioError> {
    let unit = &frame.units[injection.unit];
    let plate = &unit.plate;
    for other in out
        .iter()
        .filter(|o| o.unit == injection.unit && o.date == injection.date)
    {
        if other.kind.name() == injection.kind.name() {
            return check.fail(format!(
                "inyecciones superpuestas: dos '{}' para {plate} el {}",
                injection.kind.name(),
                injection.date
            ));
        }
        if let (Some(a), Some(b)) = (timed_window(&other.kind), timed_window(&injection.kind))
            && a.0 < b.1
            && b.0 < a.1
        {
            let d = injection.date;
            return check.fail(format!(
                "inyecciones superpuestas: '{}' y '{}' de {plate} el {d} se cruzan ({}–{} y {}–{})",
                other.kind.name(),
                injection.kind.name(),
                clock_on(unit, d, a.0),
                clock_on(unit, d, a.1),
                clock_on(unit, d, b.0),
                clock_on(unit, d, b.1)
            ));
        }
    }
    out.push(injection);
    Ok(())
}

/// The window, UTC seconds, of an injection placed by clock time (a speeding episode with
/// room to find its stretch).
fn timed_window(kind: &InjectionKind) -> Option<(i64, i64)> {
    match kind {
        InjectionKind::Speeding {
            at: Trigger::At(start),
            duration_s,
            ..
        } => Some((*start, start + *duration_s as i64 + 600)),
        InjectionKind::SignalLoss {
            at: LossAt::At(start),
            minutes,
        }
        | InjectionKind::LongStop {
            at: LongStopAt::At(start),
            minutes,
        } => Some((*start, start + (*minutes * 60.0) as i64)),
        _ => None,
    }
}

/// `[inyecciones.aleatorias]`: its ranges, and room for every count asked (past unit-days for
/// the day-long kinds; units on shift at `--ahora` not already stopped for `detenida_ahora`).
pub(super) fn random_injections(
    check: Checker,
    files: &InjectionsFile,
    frame: &Frame,
    explicit: &[Injection],
) -> Result<(), ScenarioError> {
    let r = &files.aleatorias;
    let check = check.table("inyecciones.aleatorias");
    random_ranges(check, r)?;
    random_room(check, r, frame)?;
    random_speeds(check, r, frame)?;
    random_stopped_now(check, r, frame, explicit)
}

const RANDOM: &str = "[inyecciones.aleatorias]";

fn random_ranges(check: Checker, r: &RandomInjectionsFile) -> Result<(), ScenarioError> {
    let w = RANDOM;
    if r.exceso_velocidad_kmh.is_empty() || r.parada_minutos.is_empty() {
        return check.fail(format!(
            "{w}: exceso_velocidad_kmh y parada_minutos no pueden estar vacías"
        ));
    }
    check.key("exceso_duracion_s").range(
        &format!("{w} exceso_duracion_s"),
        r.exceso_duracion_s,
        10.0,
        900.0,
    )?;
    check.key("perdida_minutos").range(
        &format!("{w} perdida_minutos"),
        r.perdida_minutos,
        1.0,
        240.0,
    )?;
    check.key("detenida_minutos").range(
        &format!("{w} detenida_minutos"),
        r.detenida_minutos,
        1.0,
        600.0,
    )?;
    for m in &r.parada_minutos {
        check
            .key("parada_minutos")
            .value(&format!("{w} parada_minutos"), *m, 1.0, 600.0)?;
    }
    Ok(())
}

/// Past days only: the day of `ahora` is cut and may end before an event happens.
fn random_room(
    check: Checker,
    r: &RandomInjectionsFile,
    frame: &Frame,
) -> Result<(), ScenarioError> {
    let candidates = frame
        .units
        .iter()
        .map(|u| past_workdays(u, frame.ahora_utc).count())
        .sum::<usize>();
    for (name, count) in [
        ("exceso_velocidad", r.exceso_velocidad),
        ("parada_prolongada", r.parada_prolongada),
        ("perdida_senal", r.perdida_senal),
    ] {
        if count as usize > candidates {
            return check.key(name).fail(format!(
                "{RANDOM} {name} = {count}: solo hay {candidates} unidades-día disponibles (días anteriores a --ahora con el turno ya terminado)"
            ));
        }
    }
    Ok(())
}

/// A unit's working days before its day of `ahora` whose shift surely ends by `ahora_utc`
/// (a night shift from yesterday may still be on): where random injections may land.
pub fn past_workdays(unit: &Unit, ahora_utc: i64) -> impl Iterator<Item = NaiveDate> + '_ {
    let today = unit.today();
    unit.days
        .iter()
        .filter(move |d| {
            Some(d.date) < today && d.shift.is_some_and(|s| s.latest_end_utc() <= ahora_utc)
        })
        .map(|d| d.date)
}

/// Every speed that may be drawn must be possible for, and above the limit of, every unit.
fn random_speeds(
    check: Checker,
    r: &RandomInjectionsFile,
    frame: &Frame,
) -> Result<(), ScenarioError> {
    if r.exceso_velocidad == 0 {
        return Ok(());
    }
    for unit in frame.units.iter().filter(|u| u.active) {
        if let Some(kmh) = r
            .exceso_velocidad_kmh
            .iter()
            .find(|k| **k > unit.dynamics.top_speed_kmh)
        {
            return check.key("exceso_velocidad_kmh").fail(format!(
                "{RANDOM} exceso_velocidad_kmh: {kmh} km/h es imposible para '{}' ({}: máximo {} km/h)",
                unit.plate, unit.kind, unit.dynamics.top_speed_kmh
            ));
        }
        if let Some(kmh) = r
            .exceso_velocidad_kmh
            .iter()
            .find(|k| **k <= unit.limit_kmh)
        {
            return check.key("exceso_velocidad_kmh").fail(format!(
                "{RANDOM} exceso_velocidad_kmh: {kmh} km/h no supera el límite de '{}' ({} km/h)",
                unit.plate, unit.limit_kmh
            ));
        }
    }
    Ok(())
}

/// Units that can be stopped now for the longest drawn time, explicit ones left out.
fn random_stopped_now(
    check: Checker,
    r: &RandomInjectionsFile,
    frame: &Frame,
    explicit: &[Injection],
) -> Result<(), ScenarioError> {
    let stopped_candidates = frame
        .units
        .iter()
        .enumerate()
        .filter(|(index, _)| {
            !explicit
                .iter()
                .any(|i| matches!(i.kind, InjectionKind::StoppedNow { .. }) && i.unit == *index)
        })
        .filter(|(_, u)| {
            u.active && running_shift(u, frame.ahora_utc, r.detenida_minutos[1]).is_some()
        })
        .count();
    if r.detenida_ahora as usize > stopped_candidates {
        return check.key("detenida_ahora").fail(format!(
            "{RANDOM} detenida_ahora = {}: solo {stopped_candidates} unidades trabajan a --ahora con turno ya empezado hace {} min",
            r.detenida_ahora, r.detenida_minutos[1]
        ));
    }
    Ok(())
}
