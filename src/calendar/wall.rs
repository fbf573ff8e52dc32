//! How a wall-clock time is written: a time of day (`06:20`, `02:30:15`, `02:30+01:00`) and a
//! local date and time (`2026-10-25T02:30`, with a space, seconds or an offset).
//!
//! Owns the syntax only. An offset (`+01:00`, `-03:00`, `Z`) says which occurrence of a
//! repeated local time is meant; what a written time means in a zone on a date is `day.rs`'s.

use chrono::{NaiveDate, NaiveDateTime, NaiveTime, Timelike};

/// A time of day on the wall clock, with the UTC offset it was written with, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ClockTime {
    seconds: u32,
    offset_s: Option<i32>,
}

impl ClockTime {
    /// `HH:MM` or `HH:MM:SS`, optionally followed by `±HH:MM` or `Z`; `None` otherwise.
    pub fn parse(text: &str) -> Option<ClockTime> {
        let text = text.trim();
        let (clock, offset_s) = split_offset(text)?;
        let time = NaiveTime::parse_from_str(clock, "%H:%M:%S")
            .or_else(|_| NaiveTime::parse_from_str(clock, "%H:%M"))
            .ok()?;
        // chrono reads a leap second as second 60; a wall clock never shows it.
        (time.nanosecond() < 1_000_000_000).then_some(())?;
        Some(ClockTime {
            seconds: time.num_seconds_from_midnight(),
            offset_s,
        })
    }

    /// A time without offset, `seconds` after 00:00 (at most a day).
    pub fn from_seconds(seconds: u32) -> ClockTime {
        ClockTime {
            seconds: seconds.min(86_399),
            offset_s: None,
        }
    }

    /// Seconds after 00:00 on the wall clock.
    pub fn seconds(self) -> u32 {
        self.seconds
    }

    /// The written offset east of UTC, seconds.
    pub fn offset_s(self) -> Option<i32> {
        self.offset_s
    }

    /// This time on `date`.
    pub fn on(self, date: NaiveDate) -> WallTime {
        WallTime {
            local: date.and_time(
                NaiveTime::from_num_seconds_from_midnight_opt(self.seconds, 0).unwrap_or_default(),
            ),
            offset_s: self.offset_s,
        }
    }
}

impl std::fmt::Display for ClockTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (h, m, s) = (
            self.seconds / 3600,
            (self.seconds / 60) % 60,
            self.seconds % 60,
        );
        write!(f, "{h:02}:{m:02}")?;
        if s != 0 {
            write!(f, ":{s:02}")?;
        }
        if let Some(offset) = self.offset_s {
            write!(f, "{}", offset_text(offset))?;
        }
        Ok(())
    }
}

/// A local date and time on the wall clock, with the UTC offset it was written with, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WallTime {
    pub local: NaiveDateTime,
    pub offset_s: Option<i32>,
}

impl WallTime {
    /// `AAAA-MM-DDTHH:MM[:SS]` (or with a space), optionally followed by `±HH:MM` or `Z`.
    pub fn parse(text: &str) -> Option<WallTime> {
        let text = text.trim();
        let (date, clock) = text.split_once(['T', ' '])?;
        let date = NaiveDate::parse_from_str(date, "%Y-%m-%d").ok()?;
        Some(ClockTime::parse(clock)?.on(date))
    }

    /// A time without offset.
    pub fn naive(local: NaiveDateTime) -> WallTime {
        WallTime {
            local,
            offset_s: None,
        }
    }

    pub fn date(self) -> NaiveDate {
        self.local.date()
    }
}

impl std::fmt::Display for WallTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.local.format("%Y-%m-%d %H:%M"))?;
        if self.local.second() != 0 {
            write!(f, ":{:02}", self.local.second())?;
        }
        if let Some(offset) = self.offset_s {
            write!(f, "{}", offset_text(offset))?;
        }
        Ok(())
    }
}

/// `+01:00`, `-03:00`, `+05:45` for an offset east of UTC in seconds.
pub fn offset_text(offset_s: i32) -> String {
    let sign = if offset_s < 0 { '-' } else { '+' };
    let minutes = offset_s.unsigned_abs() / 60;
    format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60)
}

/// The clock part and the offset of `02:30+01:00`; `None` for a malformed offset.
fn split_offset(text: &str) -> Option<(&str, Option<i32>)> {
    if let Some(clock) = text.strip_suffix(['Z', 'z']) {
        return Some((clock, Some(0)));
    }
    let Some(at) = text.rfind(['+', '-']) else {
        return Some((text, None));
    };
    let (clock, offset) = text.split_at(at);
    let sign = if offset.starts_with('-') { -1 } else { 1 };
    let (h, m) = offset[1..].split_once(':')?;
    let digits = |part: &str| part.len() == 2 && part.bytes().all(|b| b.is_ascii_digit());
    if !digits(h) || !digits(m) {
        return None;
    }
    let (h, m): (i32, i32) = (h.parse().ok()?, m.parse().ok()?);
    (h <= 14 && m < 60).then_some((clock, Some(sign * (h * 3600 + m * 60))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_times_with_and_without_offset() {
        let check = |text: &str, expected: Option<(u32, Option<i32>)>| {
            let got = ClockTime::parse(text).map(|t| (t.seconds(), t.offset_s()));
            assert_eq!(got, expected, "{text}");
        };
        check("06:20", Some((22_800, None)));
        check(" 6:20 ", Some((22_800, None)));
        check("23:59:30", Some((86_370, None)));
        check("02:30+01:00", Some((9000, Some(3600))));
        check("02:30-03:00", Some((9000, Some(-10_800))));
        check("02:30:05+05:45", Some((9005, Some(20_700))));
        check("12:00Z", Some((43_200, Some(0))));
        check("25:00", None);
        check("24:00", None);
        check("12:60", None);
        check("6 y media", None);
        check("02:30+1", None);
        check("02:30+15:00", None);
        check("", None);
        assert_eq!(
            ClockTime::parse("02:30+01:00").unwrap().to_string(),
            "02:30+01:00"
        );
        assert_eq!(
            ClockTime::parse("07:05:09").unwrap().to_string(),
            "07:05:09"
        );
    }

    #[test]
    fn wall_times_read_back() {
        let check = |text: &str, expected: Option<&str>| {
            let got = WallTime::parse(text).map(|t| t.to_string());
            assert_eq!(got.as_deref(), expected, "{text}");
        };
        check("2026-08-19T15:30", Some("2026-08-19 15:30"));
        check("2026-08-19 15:30:20", Some("2026-08-19 15:30:20"));
        check("2026-10-25T02:30+01:00", Some("2026-10-25 02:30+01:00"));
        check("2026-10-25T02:30Z", Some("2026-10-25 02:30+00:00"));
        check("2026-02-30T10:00", None);
        check("2026-08-19", None);
        check("ayer por la tarde", None);
    }
}
