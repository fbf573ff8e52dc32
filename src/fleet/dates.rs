//! Dates as operators say them: `2026-08-18`, `hoy`, `ayer`, `anteayer`, `lunes`…
//!
//! Owns resolving a date argument against the fleet's "now" in the fleet's zone, date ranges
//! (inclusive, at most 92 days apart: about three months), and formatting times back in local
//! time. A weekday name means its most recent occurrence, today included. The words and the
//! local day themselves are `crate::calendar`'s (re-exported here for the tools).

use chrono::{Datelike, Duration, NaiveDate};
use chrono_tz::Tz;

use super::text::fold;
use crate::calendar::weekday_named;
pub use crate::calendar::{local, local_date, long_es, weekday_es};

/// Longest range `fecha_fin − fecha_inicio`, days (so at most 93 calendar days).
pub const MAX_RANGE_DAYS: i64 = 92;

/// The local date `text` names, resolved against `today`; Spanish error naming `argument`.
pub fn resolve(argument: &str, text: &str, today: NaiveDate) -> Result<NaiveDate, String> {
    let folded = fold(text);
    let word = folded.trim().trim_start_matches("el ").trim();
    match word {
        "hoy" => return Ok(today),
        "ayer" => return Ok(today - Duration::days(1)),
        "anteayer" | "antier" => return Ok(today - Duration::days(2)),
        _ => {}
    }
    if let Some(weekday) = weekday_named(word) {
        let back =
            (7 + today.weekday().num_days_from_monday() - weekday.num_days_from_monday()) % 7;
        return Ok(today - Duration::days(i64::from(back)));
    }
    NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d").map_err(|_| {
        format!(
            "el argumento '{argument}' debe ser una fecha AAAA-MM-DD, 'hoy', 'ayer', 'anteayer' o un día de la semana; se recibió '{text}'"
        )
    })
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

/// `HH:MM` in local time (labels on a map, where seconds are noise).
pub fn clock_hm(zone: Tz, ts_utc: i64) -> String {
    local(zone, ts_utc).format("%H:%M").to_string()
}

/// `HH:MM:SS` in local time.
pub fn clock(zone: Tz, ts_utc: i64) -> String {
    local(zone, ts_utc).format("%H:%M:%S").to_string()
}

/// `AAAA-MM-DDTHH:MM:SS±hh:mm` in local time.
pub fn iso(zone: Tz, ts_utc: i64) -> String {
    local(zone, ts_utc)
        .format("%Y-%m-%dT%H:%M:%S%:z")
        .to_string()
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
        check(
            "18/08/2026",
            "el argumento 'fecha' debe ser una fecha AAAA-MM-DD, 'hoy', 'ayer', 'anteayer' o un día de la semana; se recibió '18/08/2026'",
        );
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
