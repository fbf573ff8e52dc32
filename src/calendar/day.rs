//! Wall-clock times to instants and back, and the local day.
//!
//! Owns the rules every layer shares. A local time that the zone shows twice (clocks go back)
//! means its first occurrence, unless it carries an offset naming the other; a local time the
//! zone skips (clocks go forward) is an error naming it, the zone and the jump; an offset the
//! zone does not use at that time is an error too. A local day runs from its first instant —
//! 00:00, or, where the clocks jump over midnight, whatever they show first that day — to the
//! next day's first instant, so a day lasts 23, 24 or 25 hours (23.5 or 24.5 on Lord Howe
//! Island), and an instant belongs to the day whose bounds hold it.

use chrono::{DateTime, Duration, LocalResult, NaiveDate, NaiveDateTime, Offset, TimeZone};
use chrono_tz::Tz;

use super::wall::{ClockTime, WallTime, offset_text};

/// A wall-clock time that does not name an instant in a zone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WallClockError {
    /// Clocks jump over it (the spring change).
    #[error("{shown} no existe en {zone}: ese día los relojes saltan de {from} a {to}")]
    Skipped {
        shown: String,
        zone: String,
        from: String,
        to: String,
    },
    /// The written offset is not one the zone's clock uses at that time.
    #[error("{shown} no es una hora de {zone}: a esa hora allí rige {actual}")]
    WrongOffset {
        shown: String,
        zone: String,
        actual: String,
    },
    /// Beyond the calendar's range (years far from now).
    #[error("{shown} está fuera del calendario")]
    OutOfRange { shown: String },
}

/// UTC seconds of a wall-clock time in `zone`: its first occurrence when the clocks show it
/// twice, the occurrence with its offset when it has one.
pub fn instant(zone: Tz, wall: WallTime) -> Result<i64, WallClockError> {
    let result = zone.from_local_datetime(&wall.local);
    let candidates: Vec<DateTime<Tz>> = match result {
        LocalResult::Single(t) => vec![t],
        LocalResult::Ambiguous(a, b) => vec![a, b],
        LocalResult::None => return Err(skipped(zone, wall)),
    };
    match wall.offset_s {
        None => Ok(candidates[0].timestamp()),
        Some(offset) => candidates
            .iter()
            .find(|t| t.offset().fix().local_minus_utc() == offset)
            .map(DateTime::timestamp)
            .ok_or_else(|| WallClockError::WrongOffset {
                shown: wall.to_string(),
                zone: zone.name().to_owned(),
                actual: candidates
                    .iter()
                    .map(|t| offset_text(t.offset().fix().local_minus_utc()))
                    .collect::<Vec<_>>()
                    .join(" o "),
            }),
    }
}

/// The error for a local time in a gap, with the clock's jump (`de 02:00 a 03:00`).
fn skipped(zone: Tz, wall: WallTime) -> WallClockError {
    let shown = wall.to_string();
    let Some(after) = first_existing(zone, wall.local) else {
        return WallClockError::OutOfRange { shown };
    };
    let to = local(zone, after).naive_local();
    let from = local(zone, after - 1).naive_local() + Duration::seconds(1);
    WallClockError::Skipped {
        shown,
        zone: zone.name().to_owned(),
        from: from.format("%H:%M").to_string(),
        to: to.format("%H:%M").to_string(),
    }
}

/// The first instant whose wall-clock time is `local` or later: `local`'s first occurrence,
/// or, for a time the clocks skip, the instant they jump at.
pub fn first_instant_at_or_after(zone: Tz, local: NaiveDateTime) -> i64 {
    match zone.from_local_datetime(&local) {
        LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => t.timestamp(),
        LocalResult::None => first_existing(zone, local).unwrap_or_else(|| {
            // Outside chrono-tz's tables there are no gaps; read it as UTC.
            local.and_utc().timestamp()
        }),
    }
}

/// The instant of the first existing local time after `skipped`: minute steps up to two days
/// (the longest jump on record, Samoa's lost day of 2011, is one), then seconds (old local
/// mean times had odd seconds).
fn first_existing(zone: Tz, skipped: NaiveDateTime) -> Option<i64> {
    let exists = |t: NaiveDateTime| !matches!(zone.from_local_datetime(&t), LocalResult::None);
    let mut missing = skipped;
    let found = (1..=2 * 24 * 60).find_map(|m| {
        let t = skipped + Duration::minutes(m);
        if exists(t) {
            Some(t)
        } else {
            missing = t;
            None
        }
    })?;
    // Narrow (missing, found] to the first existing second.
    let (mut lo, mut hi) = (missing, found);
    while hi - lo > Duration::seconds(1) {
        let mid = lo + (hi - lo) / 2;
        if exists(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(zone.from_local_datetime(&hi).earliest()?.timestamp())
}

/// The instant `ts_utc` on the zone's wall clock. Outside chrono's range (no real data), the
/// Unix epoch.
pub fn local(zone: Tz, ts_utc: i64) -> DateTime<Tz> {
    let utc = DateTime::from_timestamp(ts_utc, 0).unwrap_or_default();
    zone.from_utc_datetime(&utc.naive_utc())
}

/// `HH:MM:SS` (or `HH:MM`) of `ts_utc` on the zone's clock, followed by its offset when the
/// clock shows that time twice that day (`02:30:00+01:00` is the second 02:30 of a day the
/// clocks go back): as written, it names one instant.
pub fn clock_text(zone: Tz, ts_utc: i64, seconds: bool) -> String {
    let shown = local(zone, ts_utc);
    let format = if seconds { "%H:%M:%S" } else { "%H:%M" };
    let text = shown.format(format).to_string();
    match zone.from_local_datetime(&shown.naive_local()) {
        LocalResult::Ambiguous(..) => {
            format!(
                "{text}{}",
                offset_text(shown.offset().fix().local_minus_utc())
            )
        }
        _ => text,
    }
}

/// UTC seconds of the first instant of the local day `date`.
pub fn day_start_utc(zone: Tz, date: NaiveDate) -> i64 {
    first_instant_at_or_after(zone, date.and_time(chrono::NaiveTime::MIN))
}

/// UTC seconds of the local day `[first instant, next day's first instant)`.
pub fn day_bounds(zone: Tz, date: NaiveDate) -> (i64, i64) {
    (
        day_start_utc(zone, date),
        day_start_utc(zone, date + Duration::days(1)),
    )
}

/// The local day holding `ts_utc`: the date it shows, except in the hour after a change that
/// takes the clocks back over midnight, which belongs to the day that has begun.
pub fn local_date(zone: Tz, ts_utc: i64) -> NaiveDate {
    let shown = local(zone, ts_utc).date_naive();
    if ts_utc < day_start_utc(zone, shown) {
        return shown - Duration::days(1);
    }
    let next = shown + Duration::days(1);
    if ts_utc >= day_start_utc(zone, next) {
        return next;
    }
    shown
}

/// The instants of `date` whose wall-clock time lies in `[from, to]`, as UTC seconds
/// `(first, last)`: `from` at its first occurrence (or the jump's instant when skipped), `to`
/// at its first occurrence (or the last whole minute before the jump). A bound with an offset
/// must be a time the zone shows with it. `Ok(None)` when no instant of the day is in the
/// window (all of it skipped).
pub fn window(
    zone: Tz,
    date: NaiveDate,
    from: ClockTime,
    to: ClockTime,
) -> Result<Option<(i64, i64)>, WallClockError> {
    let bound = |clock: ClockTime, last: bool| -> Result<i64, WallClockError> {
        let wall = clock.on(date);
        match instant(zone, wall) {
            Err(WallClockError::Skipped { .. }) if clock.offset_s().is_none() => {
                let jump = first_instant_at_or_after(zone, wall.local);
                Ok(if last { jump - 60 } else { jump })
            }
            other => other,
        }
    };
    let (first, last) = (bound(from, false)?, bound(to, true)?);
    Ok((first <= last).then_some((first, last)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(name: &str) -> Tz {
        name.parse().unwrap()
    }

    fn date(text: &str) -> NaiveDate {
        text.parse().unwrap()
    }

    fn wall(text: &str) -> WallTime {
        WallTime::parse(text).unwrap()
    }

    /// `HH:MM±hh:mm` of an instant in a zone.
    fn shown(z: Tz, ts: i64) -> String {
        local(z, ts).format("%Y-%m-%d %H:%M%:z").to_string()
    }

    #[test]
    fn days_last_what_the_clocks_say() {
        #[rustfmt::skip]
        let cases = [
            // zone, date, hours, first instant shown
            ("America/Guatemala", "2026-08-19", 24.0, "2026-08-19 00:00-06:00"),
            ("Europe/Madrid", "2026-03-29", 23.0, "2026-03-29 00:00+01:00"),
            ("Europe/Madrid", "2026-10-25", 25.0, "2026-10-25 00:00+02:00"),
            ("America/New_York", "2026-03-08", 23.0, "2026-03-08 00:00-05:00"),
            ("America/New_York", "2026-11-01", 25.0, "2026-11-01 00:00-04:00"),
            // Chile jumps from 24:00 Saturday to 01:00 Sunday: Sunday starts at 01:00.
            ("America/Santiago", "2026-09-05", 24.0, "2026-09-05 00:00-04:00"),
            ("America/Santiago", "2026-09-06", 23.0, "2026-09-06 01:00-03:00"),
            // ... and back from 24:00 to 23:00 on Saturday 4 April.
            ("America/Santiago", "2026-04-04", 25.0, "2026-04-04 00:00-03:00"),
            ("Asia/Kolkata", "2026-10-25", 24.0, "2026-10-25 00:00+05:30"),
            ("Pacific/Chatham", "2026-04-05", 25.0, "2026-04-05 00:00+13:45"),
            ("Pacific/Chatham", "2026-09-27", 23.0, "2026-09-27 00:00+12:45"),
            // Lord Howe Island moves its clocks by half an hour.
            ("Australia/Lord_Howe", "2026-04-05", 24.5, "2026-04-05 00:00+11:00"),
            ("Australia/Lord_Howe", "2026-10-04", 23.5, "2026-10-04 00:00+10:30"),
        ];
        for (name, day, hours, first) in cases {
            let z = zone(name);
            let (start, end) = day_bounds(z, date(day));
            assert_eq!((end - start) as f64 / 3600.0, hours, "{name} {day}");
            assert_eq!(shown(z, start), first, "{name} {day}");
            assert_eq!(local_date(z, start), date(day), "{name} {day}");
            assert_eq!(local_date(z, start - 1), date(day).pred_opt().unwrap());
            assert_eq!(local_date(z, end - 1), date(day), "{name} {day}");
            assert_eq!(local_date(z, end), date(day).succ_opt().unwrap());
        }
    }

    #[test]
    fn wall_times_to_instants() {
        let check = |name: &str, text: &str, expected: Result<&str, &str>| {
            let z = zone(name);
            let got = instant(z, wall(text))
                .map(|t| shown(z, t))
                .map_err(|e| e.to_string());
            let expected = expected.map(str::to_owned).map_err(str::to_owned);
            assert_eq!(got, expected, "{name} {text}");
        };
        let madrid = "Europe/Madrid";
        check(madrid, "2026-10-25T01:30", Ok("2026-10-25 01:30+02:00"));
        // The repeated hour: first occurrence, or the one the offset names.
        check(madrid, "2026-10-25T02:30", Ok("2026-10-25 02:30+02:00"));
        check(
            madrid,
            "2026-10-25T02:30+02:00",
            Ok("2026-10-25 02:30+02:00"),
        );
        check(
            madrid,
            "2026-10-25T02:30+01:00",
            Ok("2026-10-25 02:30+01:00"),
        );
        check(
            madrid,
            "2026-10-25T02:30+03:00",
            Err(
                "2026-10-25 02:30+03:00 no es una hora de Europe/Madrid: a esa hora allí rige +02:00 o +01:00",
            ),
        );
        check(
            madrid,
            "2026-08-10T02:30+01:00",
            Err(
                "2026-08-10 02:30+01:00 no es una hora de Europe/Madrid: a esa hora allí rige +02:00",
            ),
        );
        check(
            madrid,
            "2026-03-29T02:30",
            Err(
                "2026-03-29 02:30 no existe en Europe/Madrid: ese día los relojes saltan de 02:00 a 03:00",
            ),
        );
        check(
            "America/Santiago",
            "2026-09-06T00:15",
            Err(
                "2026-09-06 00:15 no existe en America/Santiago: ese día los relojes saltan de 00:00 a 01:00",
            ),
        );
        check(
            "Australia/Lord_Howe",
            "2026-10-04T02:10",
            Err(
                "2026-10-04 02:10 no existe en Australia/Lord_Howe: ese día los relojes saltan de 02:00 a 02:30",
            ),
        );
        check(
            "Asia/Kolkata",
            "2026-10-25T02:30",
            Ok("2026-10-25 02:30+05:30"),
        );
        check(
            "America/Guatemala",
            "2026-08-19T15:30",
            Ok("2026-08-19 15:30-06:00"),
        );
    }

    #[test]
    fn clocks_name_the_occurrence_of_a_repeated_hour() {
        let madrid = zone("Europe/Madrid");
        let first = instant(madrid, wall("2026-10-25T02:30")).unwrap();
        let second = first + 3600;
        assert_eq!(clock_text(madrid, first, true), "02:30:00+02:00");
        assert_eq!(clock_text(madrid, second, true), "02:30:00+01:00");
        assert_eq!(clock_text(madrid, second + 3600, false), "03:30");
        assert_eq!(clock_text(madrid, first - 3600, true), "01:30:00");
        // Written back, each names its own instant.
        for t in [first, second] {
            let text = format!("2026-10-25T{}", clock_text(madrid, t, true));
            assert_eq!(instant(madrid, wall(&text)), Ok(t));
        }
    }

    #[test]
    fn windows_keep_to_the_wall_clock() {
        let check =
            |name: &str, day: &str, from: &str, to: &str, expected: Option<(&str, &str)>| {
                let z = zone(name);
                let got = window(
                    z,
                    date(day),
                    ClockTime::parse(from).unwrap(),
                    ClockTime::parse(to).unwrap(),
                )
                .unwrap()
                .map(|(a, b)| (shown(z, a), shown(z, b)));
                let expected = expected.map(|(a, b)| (a.to_owned(), b.to_owned()));
                assert_eq!(got, expected, "{name} {day} {from}–{to}");
            };
        let madrid = "Europe/Madrid";
        check(
            madrid,
            "2026-10-25",
            "01:30",
            "02:30",
            Some(("2026-10-25 01:30+02:00", "2026-10-25 02:30+02:00")),
        );
        check(
            madrid,
            "2026-03-29",
            "01:30",
            "02:30",
            Some(("2026-03-29 01:30+01:00", "2026-03-29 01:59+01:00")),
        );
        check(
            madrid,
            "2026-03-29",
            "02:10",
            "03:30",
            Some(("2026-03-29 03:00+02:00", "2026-03-29 03:30+02:00")),
        );
        check(madrid, "2026-03-29", "02:10", "02:40", None);
        check("America/Santiago", "2026-09-06", "00:00", "00:30", None);
        check(
            "America/Santiago",
            "2026-09-06",
            "06:20",
            "08:20",
            Some(("2026-09-06 06:20-03:00", "2026-09-06 08:20-03:00")),
        );
        assert!(
            window(
                zone(madrid),
                date("2026-08-10"),
                ClockTime::parse("01:00+01:00").unwrap(),
                ClockTime::parse("02:00").unwrap()
            )
            .is_err()
        );
    }

    /// Every instant of a few changeover days belongs to exactly the day whose bounds hold it.
    #[test]
    fn local_dates_agree_with_day_bounds() {
        for (name, day) in [
            ("America/Santiago", "2026-09-06"),
            ("America/Santiago", "2026-04-04"),
            ("Australia/Lord_Howe", "2026-04-05"),
            ("Pacific/Chatham", "2026-09-27"),
            ("America/Sao_Paulo", "2018-02-18"),
        ] {
            let z = zone(name);
            let d = date(day);
            let (start, end) = day_bounds(z, d);
            for ts in (start - 7200..end + 7200).step_by(300) {
                let expected = if ts < start {
                    d.pred_opt().unwrap()
                } else if ts < end {
                    d
                } else {
                    d.succ_opt().unwrap()
                };
                assert_eq!(local_date(z, ts), expected, "{name} {ts}");
            }
        }
    }
}
