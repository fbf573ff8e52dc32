//! The injection checks: `[[inyecciones.*]]` entries to [`Injection`]s, and whether
//! `[inyecciones.aleatorias]` can be drawn at all.
//!
//! Owns one resolver per kind (the unit and working day, then what that kind must fit:
//! a speed above the limit and within the vehicle, a delivery stop of the route, a window
//! inside every possible shift, a stop after the shift started) and the collision rule between
//! injections of one unit-day. The random draw itself is the simulator's plan; here only its
//! ranges and its room are checked, so a scenario that cannot be simulated is refused before
//! anything runs. The first problem found is returned.

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, Timelike};

use super::file::{
    InjectionsFile, LongStopFile, RandomInjectionsFile, SignalLossFile, SpeedingFile,
    StoppedNowFile,
};
use super::resolve::Checker;
use super::{
    Injection, InjectionKind, LongStopAt, LossAt, ScenarioError, Trigger, Unit, plate_key,
};
use crate::calendar::weekday_es;
use crate::geometry::route::Route;

/// What injection checks need to know about the world.
pub(super) struct Frame<'a> {
    pub days: &'a [NaiveDate],
    pub holidays: &'a [NaiveDate],
    pub ahora_local: NaiveDateTime,
    pub units: &'a [Unit],
    pub routes: &'a [Route],
}

impl Frame<'_> {
    fn works(&self, unit: &Unit, date: NaiveDate) -> bool {
        unit.active
            && unit.workdays[date.weekday().num_days_from_monday() as usize]
            && !self.holidays.contains(&date)
    }

    fn today(&self) -> NaiveDate {
        self.ahora_local.date()
    }

    /// Seconds after local midnight of `--ahora`.
    fn now_s(&self) -> u32 {
        self.ahora_local.time().num_seconds_from_midnight()
    }

    fn unit(&self, check: &Checker, what: &str, plate: &str) -> Result<usize, ScenarioError> {
        let key = plate_key(plate);
        match self.units.iter().position(|u| plate_key(&u.plate) == key) {
            Some(i) if self.units[i].active => Ok(i),
            Some(_) => check.fail(format!("{what}: la unidad '{plate}' está inactiva")),
            None => check.fail(format!("{what}: placa desconocida '{plate}'")),
        }
    }

    fn date(
        &self,
        check: &Checker,
        what: &str,
        fecha: Option<NaiveDate>,
        dia: Option<i64>,
    ) -> Result<NaiveDate, ScenarioError> {
        let today = self.today();
        let date = match (fecha, dia) {
            (Some(date), None) => date,
            (None, Some(offset)) => today + Duration::days(offset),
            (Some(_), Some(_)) => {
                return check.fail(format!("{what}: use 'fecha' o 'dia', no ambos"));
            }
            (None, None) => return check.fail(format!("{what}: falta 'fecha' (o 'dia')")),
        };
        if !self.days.contains(&date) {
            return check.fail(format!(
                "{what}: {date} está fuera del periodo simulado ({} a {})",
                self.days.first().copied().unwrap_or(today),
                today
            ));
        }
        Ok(date)
    }

    /// The unit an injection names and the working day it falls on.
    fn unit_day(
        &self,
        check: &Checker,
        what: &str,
        plate: &str,
        fecha: Option<NaiveDate>,
        dia: Option<i64>,
    ) -> Result<(usize, NaiveDate), ScenarioError> {
        let unit = self.unit(check, what, plate)?;
        let date = self.date(check, what, fecha, dia)?;
        self.require_workday(check, what, &self.units[unit], date)?;
        Ok((unit, date))
    }

    fn require_workday(
        &self,
        check: &Checker,
        what: &str,
        unit: &Unit,
        date: NaiveDate,
    ) -> Result<(), ScenarioError> {
        if !self.works(unit, date) {
            return check.fail(format!(
                "{what}: la unidad no trabaja el {} ({date})",
                weekday_es(date)
            ));
        }
        Ok(())
    }
}

/// Every explicit injection, kind by kind in file order, each checked against those before it.
pub(super) fn injections(
    check: &Checker,
    files: &InjectionsFile,
    frame: &Frame,
) -> Result<Vec<Injection>, ScenarioError> {
    let label = |table: &str, index: usize, plate: &str| {
        format!("[[inyecciones.{table}]] #{} ({plate})", index + 1)
    };
    let mut out: Vec<Injection> = Vec::new();
    for (i, s) in files.exceso_velocidad.iter().enumerate() {
        let what = label("exceso_velocidad", i, &s.placa);
        let injection = speeding(check, &what, s, frame)?;
        push_unique(check, &mut out, injection, frame)?;
    }
    for (i, s) in files.parada_prolongada.iter().enumerate() {
        let what = label("parada_prolongada", i, &s.placa);
        let injection = long_stop(check, &what, s, frame)?;
        push_unique(check, &mut out, injection, frame)?;
    }
    for (i, s) in files.perdida_senal.iter().enumerate() {
        let what = label("perdida_senal", i, &s.placa);
        let injection = signal_loss(check, &what, s, frame)?;
        push_unique(check, &mut out, injection, frame)?;
    }
    for (i, s) in files.detenida_ahora.iter().enumerate() {
        let what = label("detenida_ahora", i, &s.placa);
        let injection = stopped_now(check, &what, s, frame)?;
        push_unique(check, &mut out, injection, frame)?;
    }
    Ok(out)
}

/// `[[inyecciones.exceso_velocidad]]`: above the unit's limit, within what the vehicle can
/// do, short enough for its route, started by clock time or by route fraction.
fn speeding(
    check: &Checker,
    what: &str,
    s: &SpeedingFile,
    frame: &Frame,
) -> Result<Injection, ScenarioError> {
    let (unit, date) = frame.unit_day(check, what, &s.placa, s.fecha, s.dia)?;
    let u = &frame.units[unit];
    if s.velocidad_kmh <= u.limit_kmh {
        return check.fail(format!(
            "{what}: velocidad_kmh = {} no supera el límite de {} km/h",
            s.velocidad_kmh, u.limit_kmh
        ));
    }
    if s.velocidad_kmh > u.dynamics.top_speed_kmh {
        return check.fail(format!(
            "{what}: imposible, un {} no pasa de {} km/h",
            u.kind, u.dynamics.top_speed_kmh
        ));
    }
    check.value(&format!("{what} duracion_s"), s.duracion_s, 10.0, 900.0)?;
    let needed_m = s.velocidad_kmh / 3.6 * s.duracion_s;
    let route = &frame.routes[u.routes[0]];
    if needed_m > route.length_m() * 0.6 {
        return check.fail(format!(
            "{what}: duración imposible: {:.1} km a {} km/h no caben en la ruta '{}' ({:.1} km)",
            needed_m / 1000.0,
            s.velocidad_kmh,
            route.name,
            route.length_m() / 1000.0
        ));
    }
    let at = speeding_trigger(check, what, s, date, frame)?;
    Ok(Injection {
        unit,
        date,
        kind: InjectionKind::Speeding {
            at,
            speed_kmh: s.velocidad_kmh,
            duration_s: s.duracion_s,
        },
    })
}

/// Where a speeding episode starts: a clock time that leaves room before `--ahora`, or a
/// fraction of a complete day's route.
fn speeding_trigger(
    check: &Checker,
    what: &str,
    s: &SpeedingFile,
    date: NaiveDate,
    frame: &Frame,
) -> Result<Trigger, ScenarioError> {
    match (&s.hora, s.fraccion_ruta) {
        (Some(hora), None) => {
            let start = check.clock(&format!("{what} hora"), hora)?;
            if date == frame.today() && start + s.duracion_s as u32 + 1800 > frame.now_s() {
                return check.fail(format!(
                    "{what}: la hora {hora} no deja tiempo antes de --ahora"
                ));
            }
            Ok(Trigger::Time(start))
        }
        (None, Some(fraction)) => {
            check.value(&format!("{what} fraccion_ruta"), fraction, 0.05, 0.95)?;
            no_fraction_today(check, what, date, frame.today())?;
            Ok(Trigger::Fraction(fraction))
        }
        _ => check.fail(format!(
            "{what}: indique 'hora' o 'fraccion_ruta' (uno de los dos)"
        )),
    }
}

/// `[[inyecciones.parada_prolongada]]`: on a complete day, at a delivery stop of the unit's
/// first route or at a fraction of it.
fn long_stop(
    check: &Checker,
    what: &str,
    s: &LongStopFile,
    frame: &Frame,
) -> Result<Injection, ScenarioError> {
    let (unit, date) = frame.unit_day(check, what, &s.placa, s.fecha, s.dia)?;
    let u = &frame.units[unit];
    check.value(&format!("{what} minutos"), s.minutos, 1.0, 600.0)?;
    no_fraction_today(check, what, date, frame.today())?;
    let at = match (&s.parada, s.fraccion_ruta) {
        (Some(name), None) => {
            let route = &frame.routes[u.routes[0]];
            let deliveries = &route.stops[1..route.stops.len() - 1];
            if !deliveries.iter().any(|stop| &stop.name == name) {
                let names: Vec<&str> = deliveries.iter().map(|s| s.name.as_str()).collect();
                return check.fail(format!(
                    "{what}: la parada '{name}' no es una entrega de la ruta '{}' ({})",
                    route.name,
                    names.join(", ")
                ));
            }
            LongStopAt::Stop(name.clone())
        }
        (None, Some(fraction)) => {
            check.value(&format!("{what} fraccion_ruta"), fraction, 0.05, 0.95)?;
            LongStopAt::Fraction(fraction)
        }
        _ => {
            return check.fail(format!(
                "{what}: indique 'parada' o 'fraccion_ruta' (uno de los dos)"
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
    })
}

/// `[[inyecciones.perdida_senal]]`: inside every shift the day's rule can draw, or, when still
/// going on at `--ahora`, at least started on shift and before it.
fn signal_loss(
    check: &Checker,
    what: &str,
    s: &SignalLossFile,
    frame: &Frame,
) -> Result<Injection, ScenarioError> {
    let (unit, date) = frame.unit_day(check, what, &s.placa, s.fecha, s.dia)?;
    let u = &frame.units[unit];
    check.value(&format!("{what} minutos"), s.minutos, 1.0, 480.0)?;
    let start = check.clock(&format!("{what} hora"), &s.hora)?;
    let rule = u.shift_for(date);
    // Latest possible start plus the longest initial wait, to the earliest possible end.
    let on_from = rule.start_min[1] * 60;
    let on_until = rule.start_min[0] * 60 + (rule.length_h[0] * 3600.0) as u32;
    let end = start + (s.minutos * 60.0) as u32;
    // A loss still going on at --ahora (a unit silent right now) only has to start on
    // shift; any other must fit in it whole.
    let now_s = frame.now_s();
    let ongoing = date == frame.today() && end > now_s;
    if start < on_from || (end > on_until && !ongoing) || start > on_until {
        return check.fail(format!(
            "{what}: {}–{} no cae siempre dentro del turno ({} a {})",
            hhmm(start),
            hhmm(end),
            hhmm(on_from),
            hhmm(on_until)
        ));
    }
    if ongoing && start + 60 > now_s {
        return check.fail(format!("{what}: empieza después de --ahora"));
    }
    Ok(Injection {
        unit,
        date,
        kind: InjectionKind::SignalLoss {
            at: LossAt::Clock(start),
            minutes: s.minutos,
        },
    })
}

/// `[[inyecciones.detenida_ahora]]`: on the day of `--ahora`, stopped after the shift began.
fn stopped_now(
    check: &Checker,
    what: &str,
    s: &StoppedNowFile,
    frame: &Frame,
) -> Result<Injection, ScenarioError> {
    let unit = frame.unit(check, what, &s.placa)?;
    let u = &frame.units[unit];
    let today = frame.today();
    frame.require_workday(check, what, u, today)?;
    check.value(&format!("{what} minutos"), s.minutos, 1.0, 600.0)?;
    stopped_now_fits(check, what, u, today, frame.now_s(), s.minutos)?;
    Ok(Injection {
        unit,
        date: today,
        kind: InjectionKind::StoppedNow { minutes: s.minutos },
    })
}

/// A unit stopped `minutes` before `now_s` must have started its shift (and its first wait)
/// by then whatever its drawn start.
fn stopped_now_fits(
    check: &Checker,
    what: &str,
    unit: &Unit,
    today: NaiveDate,
    now_s: u32,
    minutes: f64,
) -> Result<(), ScenarioError> {
    let rule = unit.shift_for(today);
    let stop_s = now_s as f64 - minutes * 60.0;
    let earliest = f64::from(rule.start_min[1] * 60) + 15.0 * 60.0;
    if stop_s < earliest {
        return check.fail(format!(
            "{what}: a las {} la unidad puede no haber empezado su turno (empieza hasta las {})",
            hhmm(stop_s.max(0.0) as u32),
            hhmm(rule.start_min[1] * 60)
        ));
    }
    Ok(())
}

fn no_fraction_today(
    check: &Checker,
    what: &str,
    date: NaiveDate,
    today: NaiveDate,
) -> Result<(), ScenarioError> {
    if date == today {
        return check.fail(format!(
            "{what}: el día de --ahora está incompleto; use 'hora' o un día anterior"
        ));
    }
    Ok(())
}

/// One injection of each kind per unit and day; a timed signal loss may not overlap a timed
/// speeding episode.
fn push_unique(
    check: &Checker,
    out: &mut Vec<Injection>,
    injection: Injection,
    frame: &Frame,
) -> Result<(), ScenarioError> {
    let plate = &frame.units[injection.unit].plate;
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
            return check.fail(format!(
                "inyecciones superpuestas: '{}' y '{}' de {plate} el {} se cruzan ({}–{} y {}–{})",
                other.kind.name(),
                injection.kind.name(),
                injection.date,
                hhmm(a.0),
                hhmm(a.1),
                hhmm(b.0),
                hhmm(b.1)
            ));
        }
    }
    out.push(injection);
    Ok(())
}

/// The local-time window of an injection placed by clock time, in seconds.
fn timed_window(kind: &InjectionKind) -> Option<(u32, u32)> {
    match kind {
        InjectionKind::Speeding {
            at: Trigger::Time(start),
            duration_s,
            ..
        } => Some((*start, start + *duration_s as u32 + 600)),
        InjectionKind::SignalLoss {
            at: LossAt::Clock(start_s),
            minutes,
        } => Some((*start_s, start_s + (*minutes * 60.0) as u32)),
        _ => None,
    }
}

/// `[inyecciones.aleatorias]`: its ranges, and room for every count asked (past unit-days for
/// the day-long kinds; units on shift at `--ahora` not already stopped for `detenida_ahora`).
pub(super) fn random_injections(
    check: &Checker,
    files: &InjectionsFile,
    frame: &Frame,
    explicit: &[Injection],
) -> Result<(), ScenarioError> {
    let r = &files.aleatorias;
    random_ranges(check, r)?;
    random_room(check, r, frame)?;
    random_speeds(check, r, frame)?;
    random_stopped_now(check, r, frame, explicit)
}

const RANDOM: &str = "[inyecciones.aleatorias]";

fn random_ranges(check: &Checker, r: &RandomInjectionsFile) -> Result<(), ScenarioError> {
    let w = RANDOM;
    if r.exceso_velocidad_kmh.is_empty() || r.parada_minutos.is_empty() {
        return check.fail(format!(
            "{w}: exceso_velocidad_kmh y parada_minutos no pueden estar vacías"
        ));
    }
    check.range(
        &format!("{w} exceso_duracion_s"),
        r.exceso_duracion_s,
        10.0,
        900.0,
    )?;
    check.range(
        &format!("{w} perdida_minutos"),
        r.perdida_minutos,
        1.0,
        240.0,
    )?;
    check.range(
        &format!("{w} detenida_minutos"),
        r.detenida_minutos,
        1.0,
        600.0,
    )?;
    for m in &r.parada_minutos {
        check.value(&format!("{w} parada_minutos"), *m, 1.0, 600.0)?;
    }
    Ok(())
}

/// Past days only: the day of `ahora` is cut and may end before an event happens.
fn random_room(
    check: &Checker,
    r: &RandomInjectionsFile,
    frame: &Frame,
) -> Result<(), ScenarioError> {
    let today = frame.today();
    let candidates = frame
        .units
        .iter()
        .flat_map(|u| {
            frame
                .days
                .iter()
                .filter(move |d| **d < today)
                .map(move |d| (u, *d))
        })
        .filter(|(u, d)| frame.works(u, *d))
        .count();
    for (name, count) in [
        ("exceso_velocidad", r.exceso_velocidad),
        ("parada_prolongada", r.parada_prolongada),
        ("perdida_senal", r.perdida_senal),
    ] {
        if count as usize > candidates {
            return check.fail(format!(
                "{RANDOM} {name} = {count}: solo hay {candidates} unidades-día disponibles (días anteriores a --ahora)"
            ));
        }
    }
    Ok(())
}

/// Every speed that may be drawn must be possible for, and above the limit of, every unit.
fn random_speeds(
    check: &Checker,
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
            return check.fail(format!(
                "{RANDOM} exceso_velocidad_kmh: {kmh} km/h es imposible para '{}' ({}: máximo {} km/h)",
                unit.plate, unit.kind, unit.dynamics.top_speed_kmh
            ));
        }
        if let Some(kmh) = r
            .exceso_velocidad_kmh
            .iter()
            .find(|k| **k <= unit.limit_kmh)
        {
            return check.fail(format!(
                "{RANDOM} exceso_velocidad_kmh: {kmh} km/h no supera el límite de '{}' ({} km/h)",
                unit.plate, unit.limit_kmh
            ));
        }
    }
    Ok(())
}

/// Units that can be stopped now for the longest drawn time, explicit ones left out.
fn random_stopped_now(
    check: &Checker,
    r: &RandomInjectionsFile,
    frame: &Frame,
    explicit: &[Injection],
) -> Result<(), ScenarioError> {
    let today = frame.today();
    let now_s = frame.now_s();
    let stopped_candidates = frame
        .units
        .iter()
        .filter(|u| frame.works(u, today))
        .filter(|u| {
            !explicit.iter().any(|i| {
                matches!(i.kind, InjectionKind::StoppedNow { .. })
                    && std::ptr::eq(&frame.units[i.unit], *u)
            })
        })
        .filter(|u| stopped_now_fits(check, "", u, today, now_s, r.detenida_minutos[1]).is_ok())
        .count();
    if r.detenida_ahora as usize > stopped_candidates {
        return check.fail(format!(
            "{RANDOM} detenida_ahora = {}: solo {stopped_candidates} unidades trabajan a --ahora con turno ya empezado hace {} min",
            r.detenida_ahora, r.detenida_minutos[1]
        ));
    }
    Ok(())
}

/// `HH:MM` of seconds after local midnight, for messages.
fn hhmm(seconds: u32) -> String {
    format!("{:02}:{:02}", seconds / 3600, (seconds / 60) % 60)
}
