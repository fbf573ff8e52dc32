//! The calendar: Spanish day and month words, and the local day in the fleet's zone.
//!
//! Owns how a date is named (`lunes`, `miércoles 19 de agosto de 2026`), how a weekday word is
//! read back (with or without accents), and the local-day rule every layer shares: a local day
//! runs from its first instant (local midnight, the earliest one across a DST change) to the
//! next day's first instant, and an instant belongs to the local date it shows in the zone.
//! The simulator, the engine and the tools all ask here, so their days agree to the second.
//! Pure functions of their arguments: no clock, no I/O, and nothing about fleets, files or
//! what a tool accepts as a date (that is `fleet::dates`).

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, TimeZone, Weekday};
use chrono_tz::Tz;

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

const MONTH_NAMES: [&str; 12] = [
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

/// The instant `ts_utc` on the zone's wall clock. Outside chrono's range (no real data), the
/// Unix epoch.
pub fn local(zone: Tz, ts_utc: i64) -> DateTime<Tz> {
    zone.timestamp_opt(ts_utc, 0).single().unwrap_or_else(|| {
        zone.from_utc_datetime(
            &DateTime::from_timestamp(ts_utc, 0)
                .unwrap_or_default()
                .naive_utc(),
        )
    })
}

/// The local date holding `ts_utc`.
pub fn local_date(zone: Tz, ts_utc: i64) -> NaiveDate {
    local(zone, ts_utc).date_naive()
}

/// UTC seconds of a local wall-clock time: the earliest instant showing it (a time repeated
/// when clocks go back is its first occurrence). A time skipped when clocks go forward has no
/// instant; it is then read as if it were UTC.
pub fn local_to_utc(zone: Tz, local: NaiveDateTime) -> i64 {
    zone.from_local_datetime(&local)
        .earliest()
        .map_or_else(|| local.and_utc().timestamp(), |t| t.timestamp())
}

/// UTC seconds of the first instant of the local day `date`.
pub fn day_start_utc(zone: Tz, date: NaiveDate) -> i64 {
    local_to_utc(zone, date.and_hms_opt(0, 0, 0).unwrap_or_default())
}

/// UTC seconds of the local day `[first instant, next day's first instant)`.
pub fn day_bounds(zone: Tz, date: NaiveDate) -> (i64, i64) {
    (
        day_start_utc(zone, date),
        day_start_utc(zone, date + chrono::Duration::days(1)),
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

    #[test]
    fn local_days_follow_the_zone() {
        let guatemala: Tz = "America/Guatemala".parse().unwrap();
        // 2026-08-19 00:00 -06:00.
        assert_eq!(
            day_bounds(guatemala, date("2026-08-19")),
            (1_787_119_200, 1_787_205_600)
        );
        assert_eq!(local_date(guatemala, 1_787_119_199), date("2026-08-18"));
        assert_eq!(local_date(guatemala, 1_787_119_200), date("2026-08-19"));
        // Madrid, clocks back at 03:00 on 2026-10-25: a 25-hour day.
        let madrid: Tz = "Europe/Madrid".parse().unwrap();
        let (start, end) = day_bounds(madrid, date("2026-10-25"));
        assert_eq!(end - start, 25 * 3600);
        // The repeated 02:30 is its first occurrence (summer time, +02:00).
        let repeated = date("2026-10-25").and_hms_opt(2, 30, 0).unwrap();
        assert_eq!(local_to_utc(madrid, repeated), start + 2 * 3600 + 1800);
    }
}
