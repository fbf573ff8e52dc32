//! Dates as operators say them: `2026-08-18`, `18/08/2026`, `hoy`, `ayer`, `anteayer`, `lunes`…
//!
//! Owns the one grammar of date arguments ([`parse`], shared by the server's tools and
//! `flota cliente`, which checks a date before sending it), resolving it against the fleet's
//! "now" in the fleet's zone, date ranges (inclusive, at most 92 days apart: about three
//! months), and formatting times back in local time. A weekday name means its most recent
//! occurrence, today included. The words and the local day themselves are `crate::calendar`'s
//! (re-exported here for the tools).

use chrono::{Datelike, Duration, NaiveDate, Weekday};
use chrono_tz::Tz;

use super::text::fold;
use crate::calendar::{MONTH_NAMES, weekday_named};
pub use crate::calendar::{local, local_date, long_es, weekday_es};

/// Longest range `fecha_fin − fecha_inicio`, days (so at most 93 calendar days).
pub const MAX_RANGE_DAYS: i64 = 92;

/// What a date argument says, before it meets a "today".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateText {
    /// A calendar date, written `AAAA-MM-DD` or `DD/MM/AAAA`.
    Day(NaiveDate),
    /// `hoy` (0), `ayer` (1), `anteayer`/`antier` (2).
    DaysAgo(u8),
    /// A weekday name: its most recent occurrence, today included.
    Last(Weekday),
}

impl DateText {
    /// The local date this names when today is `today`.
    pub fn on(self, today: NaiveDate) -> NaiveDate {
        match self {
            DateText::Day(date) => date,
            DateText::DaysAgo(days) => today - Duration::days(i64::from(days)),
            DateText::Last(weekday) => {
                let back = (7 + today.weekday().num_days_from_monday()
                    - weekday.num_days_from_monday())
                    % 7;
                today - Duration::days(i64::from(back))
            }
        }
    }
}

/// Reads a date argument: `AAAA-MM-DD`, `DD/MM/AAAA` (day first, as written in Guatemala;
/// one-digit day and month accepted), `hoy`, `ayer`, `anteayer`/`antier` or a weekday name,
/// with or without "el", any case, accents optional. `None` when it is none of these.
pub fn parse(text: &str) -> Option<DateText> {
    let folded = fold(text);
    let word = folded.trim().trim_start_matches("el ").trim();
    match word {
        "hoy" => return Some(DateText::DaysAgo(0)),
        "ayer" => return Some(DateText::DaysAgo(1)),
        "anteayer" | "antier" => return Some(DateText::DaysAgo(2)),
        _ => {}
    }
    if let Some(weekday) = weekday_named(word) {
        return Some(DateText::Last(weekday));
    }
    calendar(text.trim()).map(DateText::Day)
}

/// `AAAA-MM-DD` or `DD/MM/AAAA`: digits only, a four-digit year, one or two digits for day
/// and month (as chrono's `%Y-%m-%d` took them before).
fn calendar(text: &str) -> Option<NaiveDate> {
    let (year, month, day) = calendar_parts(text)?;
    NaiveDate::from_ymd_opt(year, month, day)
}

/// Year, month and day of a text shaped like a calendar date, before checking that the day
/// exists.
fn calendar_parts(text: &str) -> Option<(i32, u32, u32)> {
    let (separator, year_first) = if text.contains('-') {
        ('-', true)
    } else {
        ('/', false)
    };
    let parts: Vec<&str> = text.split(separator).collect();
    let [a, b, c] = parts.as_slice() else {
        return None;
    };
    let (year, month, day) = if year_first { (a, b, c) } else { (c, b, a) };
    let digits = |part: &str, lengths: &[usize]| {
        lengths.contains(&part.len()) && part.bytes().all(|b| b.is_ascii_digit())
    };
    if !digits(year, &[4]) || !digits(month, &[1, 2]) || !digits(day, &[1, 2]) {
        return None;
    }
    Some((year.parse().ok()?, month.parse().ok()?, day.parse().ok()?))
}

/// When `text` is written as a calendar date whose day is not in its month (`31/09/2026`,
/// `2027-02-29`), the Spanish phrase saying so: a generic "use AAAA-MM-DD" would leave the
/// operator looking for a typo in the format.
pub fn missing_day(text: &str) -> Option<String> {
    let text = text.trim();
    let (year, month, day) = calendar_parts(text)?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    if NaiveDate::from_ymd_opt(year, month, day).is_some() {
        return None;
    }
    let next = if month == 12 {
        NaiveDate::from_ymd_opt(year + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(year, month + 1, 1)
    }?;
    let last = next.pred_opt()?.day();
    let name = MONTH_NAMES.get(usize::try_from(month - 1).ok()?)?;
    Some(format!(
        "el día '{text}' no existe: {name} de {year} tiene {last} días"
    ))
}

/// The Spanish sentence for a date argument that [`parse`] refuses.
pub fn syntax_error(argument: &str, text: &str) -> String {
    if let Some(missing) = missing_day(text) {
        return format!("el argumento '{argument}': {missing}");
    }
    format!(
        "el argumento '{argument}' debe ser una fecha AAAA-MM-DD o DD/MM/AAAA, 'hoy', 'ayer', 'anteayer' o un día de la semana; se recibió '{text}'"
    )
}

/// The local date `text` names, resolved against `today`; Spanish error naming `argument`.
pub fn resolve(argument: &str, text: &str, today: NaiveDate) -> Result<NaiveDate, String> {
    parse(text)
        .map(|date| date.on(today))
        .ok_or_else(|| syntax_error(argument, text))
}

/// An inclusive range of local dates.
pub fn resolve_range(
    start_text: &str,
    end_text: &str,
    today: NaiveDate,
) -> Result<(NaiveDate, NaiveDate), String> {
    let start = resolve("fecha_inicio", start_text, today)?;
    let end = resolve("fecha_fin", end_text, today)?;
    if end < start {
        return Err(format!(
            "fecha_fin ({end}) es anterior a fecha_inicio ({start}); inviértalas"
        ));
    }
    if (end - start).num_days() > MAX_RANGE_DAYS {
        return Err(format!(
            "el rango {start} a {end} abarca {} días; el máximo es {} (unos tres meses): acórtelo",
            (end - start).num_days() + 1,
            MAX_RANGE_DAYS + 1
        ));
    }
    Ok((start, end))
}

/// `HH:MM` in local time (labels on a map, where seconds are noise), with the offset in an
/// hour the clocks repeat.
pub fn clock_hm(zone: Tz, ts_utc: i64) -> String {
    crate::calendar::clock_text(zone, ts_utc, false)
}

/// `HH:MM:SS` in local time, with the offset in an hour the clocks repeat.
pub fn clock(zone: Tz, ts_utc: i64) -> String {
    crate::calendar::clock_text(zone, ts_utc, true)
}

/// `AAAA-MM-DDTHH:MM:SS±hh:mm` in local time, the offset rounded to the minute as chrono's
/// `%:z` rounds it (only historical local mean times have seconds). Written digit by digit:
/// through `format!` each of these cost ~4,200 instructions, and a fleet map writes a few
/// thousand (5 % of its call at 1,000 units).
pub fn iso(zone: Tz, ts_utc: i64) -> String {
    use chrono::{Offset, Timelike};
    let time = local(zone, ts_utc);
    let Ok(year) = u32::try_from(time.year()) else {
        return time.format("%Y-%m-%dT%H:%M:%S%:z").to_string();
    };
    if year > 9999 {
        return time.format("%Y-%m-%dT%H:%M:%S%:z").to_string();
    }
    let offset_s = time.offset().fix().local_minus_utc();
    let offset_min = (offset_s.unsigned_abs() + 30) / 60;
    let mut out = *b"0000-00-00T00:00:00+00:00";
    let mut put = |at: usize, width: usize, value: u32| {
        let mut value = value;
        for slot in out[at..at + width].iter_mut().rev() {
            *slot = b'0' + (value % 10) as u8;
            value /= 10;
        }
    };
    put(0, 4, year);
    put(5, 2, time.month());
    put(8, 2, time.day());
    put(11, 2, time.hour());
    put(14, 2, time.minute());
    put(17, 2, time.second());
    put(20, 2, offset_min / 60);
    put(23, 2, offset_min % 60);
    if offset_s < 0 {
        out[19] = b'-';
    }
    out.iter().map(|&byte| char::from(byte)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: &str) {
        // 2026-08-19 is a Wednesday.
        let today = NaiveDate::from_ymd_opt(2026, 8, 19).unwrap();
        let got = match resolve("fecha", text, today) {
            Ok(date) => date.to_string(),
            Err(message) => message,
        };
        assert_eq!(got, expected, "{text}");
    }

    #[test]
    fn resolves_words_and_dates() {
        check("2026-08-18", "2026-08-18");
        check(" hoy ", "2026-08-19");
        check("Ayer", "2026-08-18");
        check("anteayer", "2026-08-17");
        check("lunes", "2026-08-17");
        check("el Miércoles", "2026-08-19");
        check("jueves", "2026-08-13");
        check("domingo", "2026-08-16");
        check("18/08/2026", "2026-08-18");
        check(" 1/8/2026 ", "2026-08-01");
        check("2026-8-1", "2026-08-01");
        check("el domingo", "2026-08-16");
        check("ANTIER", "2026-08-17");
        let refused = |text: &str| {
            format!(
                "el argumento 'fecha' debe ser una fecha AAAA-MM-DD o DD/MM/AAAA, 'hoy', 'ayer', 'anteayer' o un día de la semana; se recibió '{text}'"
            )
        };
        check(
            "31/09/2026",
            "el argumento 'fecha': el día '31/09/2026' no existe: septiembre de 2026 tiene 30 días",
        );
        check(
            "2027-02-29",
            "el argumento 'fecha': el día '2027-02-29' no existe: febrero de 2027 tiene 28 días",
        );
        check(
            " 29/2/2026 ",
            "el argumento 'fecha': el día '29/2/2026' no existe: febrero de 2026 tiene 28 días",
        );
        check("29/02/2028", "2028-02-29");
        check("31/12/2026", "2026-12-31");
        for text in [
            "32/01/2026",
            "00/01/2026",
            "08/18/2026",
            "18/08/26",
            "2026-008-18",
            "+2026-08-18",
            "18-08-2026",
            "2026/08/18",
            "18/08/2026/1",
            "mañana",
            "",
        ] {
            check(text, &refused(text));
        }
    }

    #[test]
    fn ranges_are_checked() {
        let today = NaiveDate::from_ymd_opt(2026, 8, 19).unwrap();
        assert!(resolve_range("2026-08-13", "hoy", today).is_ok());
        assert!(
            resolve_range("hoy", "ayer", today)
                .unwrap_err()
                .contains("anterior")
        );
        assert!(
            resolve_range("2026-01-01", "2026-08-19", today)
                .unwrap_err()
                .contains("el máximo es 93")
        );
        assert!(resolve_range("2026-05-19", "2026-08-19", today).is_ok());
    }

    proptest::proptest! {
        /// The hand-written `iso` writes what chrono's `%Y-%m-%dT%H:%M:%S%:z` writes, in zones
        /// east and west, with half-hour offsets, daylight saving and historical local mean
        /// times (offsets with seconds), for any instant from 1850 to 2100.
        #[test]
        fn iso_writes_what_the_chrono_pattern_writes(
            ts_utc in -3_786_825_600i64..4_102_444_800,
            zone in proptest::sample::select(vec![
                "America/Guatemala", "Europe/Madrid", "Atlantic/Canary", "Asia/Kolkata",
                "Australia/Adelaide", "America/St_Johns", "Pacific/Chatham", "UTC",
                "America/Mexico_City", "Africa/Monrovia",
            ]),
        ) {
            let zone: Tz = zone.parse().unwrap();
            let chrono = local(zone, ts_utc).format("%Y-%m-%dT%H:%M:%S%:z").to_string();
            proptest::prop_assert_eq!(iso(zone, ts_utc), chrono);
        }
    }

    #[test]
    fn local_formatting() {
        let zone: Tz = "America/Guatemala".parse().unwrap();
        assert_eq!(iso(zone, 1_787_175_000), "2026-08-19T15:30:00-06:00");
        assert_eq!(clock(zone, 1_787_175_059), "15:30:59");
        assert_eq!(clock_hm(zone, 1_787_175_059), "15:30");
        assert_eq!(
            long_es(NaiveDate::from_ymd_opt(2026, 8, 18).unwrap()),
            "martes 18 de agosto de 2026"
        );
    }
}
