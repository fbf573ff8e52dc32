//! The calendar: Spanish day and month words, and every wall-clock rule.
//!
//! Owns how a date is named (`lunes`, `miércoles 19 de agosto de 2026`) and how a weekday word
//! is read back (with or without accents), here; how a wall-clock time is written
//! (`02:30`, `02:30+01:00`, `2026-10-25T02:30`) in `wall.rs`; and, in `day.rs`, the rules that
//! turn wall-clock times into instants and back: a local time in the repeated hour is its first
//! occurrence unless it carries an offset, a time in the skipped hour is an error naming it,
//! and a local day runs from its first instant (00:00, or whatever the clock shows first that
//! day) to the next day's first instant. The simulator, the scenario, the engine, the store's
//! callers and every tool ask here and nowhere else (a tidy test forbids chrono's local-time
//! conversions outside this folder), so their days agree to the second. Pure functions of
//! their arguments: no clock, no I/O, nothing about fleets, files or what a tool accepts as a
//! date (that is `fleet::dates`).

mod day;
mod wall;

use chrono::{Datelike, NaiveDate, Weekday};

pub use day::{
    WallClockError, clock_text, day_bounds, day_start_utc, first_instant_at_or_after, instant,
    local, local_date, window,
};
pub use wall::{ClockTime, WallTime, offset_text};

/// Weekday words without accents, Monday first: scenario keys (`[turno.miercoles]`) and what
/// folded user text is compared with.
pub const WEEKDAY_KEYS: [&str; 7] = [
    "lunes",
    "martes",
    "miercoles",
    "jueves",
    "viernes",
    "sabado",
    "domingo",
];

const WEEKDAYS: [Weekday; 7] = [
    Weekday::Mon,
    Weekday::Tue,
    Weekday::Wed,
    Weekday::Thu,
    Weekday::Fri,
    Weekday::Sat,
    Weekday::Sun,
];

/// Weekday words as written, Monday first.
const WEEKDAY_NAMES: [&str; 7] = [
    "lunes",
    "martes",
    "miércoles",
    "jueves",
    "viernes",
    "sábado",
    "domingo",
];

/// The months' Spanish names, January first (a date's `month0()` indexes it).
pub(crate) const MONTH_NAMES: [&str; 12] = [
    "enero",
    "febrero",
    "marzo",
    "abril",
    "mayo",
    "junio",
    "julio",
    "agosto",
    "septiembre",
    "octubre",
    "noviembre",
    "diciembre",
];

/// The weekday a lowercase word names, written with or without its accent (`miércoles`,
/// `miercoles`); `None` for anything else. Callers trim and lowercase (or fold) first.
pub fn weekday_named(word: &str) -> Option<Weekday> {
    let index = WEEKDAY_KEYS
        .iter()
        .position(|key| *key == word)
        .or_else(|| WEEKDAY_NAMES.iter().position(|name| *name == word))?;
    Some(WEEKDAYS[index])
}

/// Spanish weekday name of a date.
pub fn weekday_es(date: NaiveDate) -> &'static str {
    WEEKDAY_NAMES[date.weekday().num_days_from_monday() as usize]
}

/// A date as a Spanish speaker writes it: `martes 18 de agosto de 2026`.
pub fn long_es(date: NaiveDate) -> String {
    format!(
        "{} {} de {} de {}",
        weekday_es(date),
        date.day(),
        MONTH_NAMES[date.month0() as usize],
        date.year()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(text: &str) -> NaiveDate {
        text.parse().unwrap()
    }

    #[test]
    fn weekday_words_both_ways() {
        let check = |word: &str, expected: Option<Weekday>| {
            assert_eq!(weekday_named(word), expected, "{word}");
        };
        check("lunes", Some(Weekday::Mon));
        check("miercoles", Some(Weekday::Wed));
        check("miércoles", Some(Weekday::Wed));
        check("sabado", Some(Weekday::Sat));
        check("sábado", Some(Weekday::Sat));
        check("domingo", Some(Weekday::Sun));
        check("Lunes", None);
        check("lun", None);
        check("", None);
        // 2026-08-17 is a Monday: every name read back is its own weekday.
        for offset in 0..7 {
            let day = date("2026-08-17") + chrono::Duration::days(offset);
            assert_eq!(weekday_named(weekday_es(day)), Some(day.weekday()));
            assert_eq!(
                weekday_named(WEEKDAY_KEYS[offset as usize]),
                Some(day.weekday())
            );
        }
        assert_eq!(weekday_es(date("2026-08-19")), "miércoles");
        assert_eq!(long_es(date("2026-08-18")), "martes 18 de agosto de 2026");
        assert_eq!(long_es(date("2026-12-05")), "sábado 5 de diciembre de 2026");
    }
}
