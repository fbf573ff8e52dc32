//! A unit's absences (`ausencias`): dates it does not work although its calendar says it would
//! — a driver off sick, on leave, the vehicle in the workshop.
//!
//! Owns reading the key's three written forms (a date, a `"desde..hasta"` range, a table with
//! `fechas` and an optional `motivo`) into [`Absence`]s, with a Spanish message naming the entry
//! for anything it cannot read, a range that ends before it starts, or two entries that cover
//! the same date. An absent day is a day off: no shift starts on it (a night shift from the day
//! before still ends on it), the unit stays parked, and the truth log says why
//! (`ausencia` lines, docs/datos.md).

use chrono::NaiveDate;

use super::checker::Checker;
use super::{Absence, ScenarioError};

/// The keys an absence written as a table accepts.
const TABLE_KEYS: [&str; 2] = ["fechas", "motivo"];

/// Longest absence accepted, in days: the longest period a scenario can have (`dias`).
const LONGEST_DAYS: i64 = 3660;

/// The unit's absences as written under `ausencias`, checked; `what` names the unit.
pub(super) fn absences(
    check: Checker,
    what: &str,
    written: &[toml::Value],
) -> Result<Vec<Absence>, ScenarioError> {
    let here = check.key("ausencias");
    let mut absences: Vec<Absence> = Vec::new();
    for (index, entry) in written.iter().enumerate() {
        let what = format!("{what} ausencias[{}]", index + 1);
        let absence = one(here, &what, entry)?;
        if let Some(other) = absences
            .iter()
            .find(|a| a.first <= absence.last && absence.first <= a.last)
        {
            return here.fail(format!(
                "{what} ({}) se solapa con otra ausencia de la unidad ({}): escriba cada día \
                 una sola vez",
                span(&absence),
                span(other)
            ));
        }
        absences.push(absence);
    }
    absences.sort_by_key(|a| a.first);
    Ok(absences)
}

/// One entry: a date, a range, or a table with `fechas` and `motivo`.
fn one(check: Checker, what: &str, entry: &toml::Value) -> Result<Absence, ScenarioError> {
    match entry {
        toml::Value::Table(table) => {
            if let Some(unknown) = table.keys().find(|k| !TABLE_KEYS.contains(&k.as_str())) {
                return check.fail(format!(
                    "{what}: clave desconocida '{unknown}'; las aceptadas son: {}",
                    TABLE_KEYS.join(", ")
                ));
            }
            let Some(dates) = table.get("fechas") else {
                return check.fail(format!(
                    "{what}: falta 'fechas' (una fecha AAAA-MM-DD o un intervalo \
                     \"AAAA-MM-DD..AAAA-MM-DD\")"
                ));
            };
            let reason = match table.get("motivo") {
                None => None,
                Some(toml::Value::String(text)) if !text.trim().is_empty() => {
                    Some(text.trim().to_owned())
                }
                Some(_) => {
                    return check.fail(format!(
                        "{what}: 'motivo' debe ser un texto no vacío (p. ej. \"baja médica\", \
                         \"vacaciones\", \"taller\")"
                    ));
                }
            };
            let (first, last) = dates_of(check, what, dates)?;
            Ok(Absence {
                first,
                last,
                reason,
            })
        }
        other => {
            let (first, last) = dates_of(check, what, other)?;
            Ok(Absence {
                first,
                last,
                reason: None,
            })
        }
    }
}

/// A date (TOML or text) or a `"desde..hasta"` range, both ends included.
fn dates_of(
    check: Checker,
    what: &str,
    value: &toml::Value,
) -> Result<(NaiveDate, NaiveDate), ScenarioError> {
    let text = match value {
        toml::Value::String(text) => text.trim().to_owned(),
        toml::Value::Datetime(datetime) if datetime.time.is_none() => datetime.to_string(),
        _ => {
            return check.fail(format!(
                "{what}: se esperaba una fecha AAAA-MM-DD o un intervalo \
                 \"AAAA-MM-DD..AAAA-MM-DD\" (ambos días incluidos), no {value}"
            ));
        }
    };
    let (first, last) = match text.split_once("..") {
        Some((a, b)) => (date(check, what, a)?, date(check, what, b)?),
        None => {
            let day = date(check, what, &text)?;
            (day, day)
        }
    };
    if last < first {
        return check.fail(format!(
            "{what}: el intervalo '{text}' termina antes de empezar (escriba primero la fecha \
             más temprana)"
        ));
    }
    if (last - first).num_days() >= LONGEST_DAYS {
        return check.fail(format!(
            "{what}: el intervalo '{text}' dura más de {LONGEST_DAYS} días; para una unidad que \
             no trabaja en todo el periodo use activo = false"
        ));
    }
    Ok((first, last))
}

fn date(check: Checker, what: &str, text: &str) -> Result<NaiveDate, ScenarioError> {
    let text = text.trim();
    NaiveDate::parse_from_str(text, "%Y-%m-%d").or_else(|_| {
        check.fail(format!(
            "{what}: '{text}' no es una fecha AAAA-MM-DD{}",
            impossible(text)
        ))
    })
}

/// Why a well-shaped date does not exist (`2026-09-31`, `2026-02-29`), or nothing.
fn impossible(text: &str) -> String {
    let parts: Vec<&str> = text.split('-').collect();
    let [year, month, day] = parts[..] else {
        return String::new();
    };
    let (Ok(year), Ok(month), Ok(day)) = (year.parse(), month.parse::<u32>(), day.parse::<u32>())
    else {
        return String::new();
    };
    let Some(first) = NaiveDate::from_ymd_opt(year, month, 1) else {
        return String::new();
    };
    let next = if month == 12 {
        NaiveDate::from_ymd_opt(year + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(year, month + 1, 1)
    };
    match next {
        Some(next) if day > 0 => {
            let length = (next - first).num_days();
            format!(": ese mes tiene {length} días")
        }
        _ => String::new(),
    }
}

/// How a message shows an absence: one date or `desde..hasta`.
fn span(absence: &Absence) -> String {
    if absence.first == absence.last {
        absence.first.to_string()
    } else {
        format!("{}..{}", absence.first, absence.last)
    }
}
