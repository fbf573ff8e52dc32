//! Per-day aggregates: kilometres, first and last movement, moving time, stops, top speed.
//!
//! Owns splitting a vehicle's history into its local days (in the unit's zone, by the calendar's
//! rule: a day runs from its first instant to the next day's). Kilometres come from the GPS
//! distance rule ([`GpsDistance`]: the Doppler speed, corrected by the positions where they are
//! conclusive), so parked jitter adds no phantom kilometres. The tracker's odometer, when
//! present, wanted (`usar_odometro`) and within `odometro_tolerancia_pct` of the GPS track
//! ([`OdometerTrust`]), is preferred, as Traccar does.
//! The distance between two fixes on either side of a day's bound (a night shift driving
//! through midnight) is shared between the two days in proportion to the time on each side,
//! so no metre is lost or counted twice.

use chrono::NaiveDate;
use chrono_tz::Tz;

use super::distance::GpsDistance;
use super::{Fix, Gap, Overspeed, Stop};

/// Aggregates of one vehicle on one local date.
#[derive(Debug, Clone, PartialEq)]
pub struct DayStats {
    pub date: NaiveDate,
    /// The kilometres to report: the odometer's when usable, else `km_gps`.
    pub km: f64,
    pub km_gps: f64,
    pub km_odometer: Option<f64>,
    pub first_move_utc: Option<i64>,
    pub last_move_utc: Option<i64>,
    pub moving_s: i64,
    /// Stops overlapping the day (end-of-day parkings included), and their minutes inside it.
    pub stops: u32,
    pub stop_s: i64,
    pub max_speed_kmh: f64,
    pub fixes: u32,
    pub gaps: u32,
    pub overspeeds: u32,
    pub first_fix_utc: i64,
    pub last_fix_utc: i64,
}

/// Running per-day counters fed fix by fix.
#[derive(Clone)]
pub struct DayAccumulator {
    zone: Tz,
    use_odometer: bool,
    /// How far the odometer may disagree with the GPS distance, percent.
    tolerance_pct: f64,
    distance: GpsDistance,
    days: Days,
    current: Option<(NaiveDate, i64, i64)>,
    /// The previous fix: its time, day and odometer reading.
    previous: Option<(i64, NaiveDate, Option<i64>)>,
}

#[derive(Debug, Clone, Default)]
struct Partial {
    km_gps: f64,
    /// Metres the odometer advanced within the day (shares of pairs across its bounds).
    odometer_m: f64,
    has_odometer: bool,
    odometer_ok: bool,
    max_speed_kmh: f64,
    fixes: u32,
    first_fix_utc: i64,
    last_fix_utc: i64,
}

/// The days with fixes, in date order. Fixes come in time order, so the day a fix belongs to
/// is the last one or a new one after it, and a fix's previous day the last or the one before:
/// looked up from the back (a `BTreeMap` search and its comparisons per fix were ~6 M of the
/// reference week's instructions on each worker). Dates out of order still land in place.
#[derive(Debug, Clone, Default)]
struct Days(Vec<(NaiveDate, Partial)>);

impl Days {
    fn get_mut(&mut self, date: NaiveDate) -> Option<&mut Partial> {
        self.0
            .iter_mut()
            .rev()
            .find(|(d, _)| *d <= date)
            .filter(|(d, _)| *d == date)
            .map(|(_, partial)| partial)
    }

    fn get_or_insert_with(
        &mut self,
        date: NaiveDate,
        new: impl FnOnce() -> Partial,
    ) -> &mut Partial {
        // The index of the first day after `date`, searched from the back.
        let after = self
            .0
            .iter()
            .rposition(|(d, _)| *d <= date)
            .map_or(0, |i| i + 1);
        let index = if after > 0 && self.0[after - 1].0 == date {
            after - 1
        } else {
            self.0.insert(after, (date, new()));
            after
        };
        &mut self.0[index].1
    }
}

impl DayAccumulator {
    /// `use_odometer` and `tolerance_pct`: whether, and within what, the odometer is trusted
    /// (see [`OdometerTrust`]).
    pub fn new(zone: Tz, use_odometer: bool, tolerance_pct: f64, distance: GpsDistance) -> Self {
        DayAccumulator {
            zone,
            use_odometer,
            tolerance_pct,
            distance,
            days: Days::default(),
            current: None,
            previous: None,
        }
    }

    /// The local date of `ts_utc`, cached for the current day's bounds.
    pub fn date_of(&mut self, ts_utc: i64) -> NaiveDate {
        if let Some((date, from, to)) = self.current
            && ts_utc >= from
            && ts_utc < to
        {
            return date;
        }
        let date = crate::calendar::local_date(self.zone, ts_utc);
        let (from, to) = day_bounds(self.zone, date);
        self.current = Some((date, from, to));
        date
    }

    /// Takes the next fix; `cos_lat`, the cosine of its latitude when the caller knows it
    /// (the distance rule measures from it).
    pub fn push(&mut self, fix: &Fix, cos_lat: Option<f64>) {
        let date = self.date_of(fix.ts_utc);
        let day = self.days.get_or_insert_with(date, || Partial {
            first_fix_utc: fix.ts_utc,
            odometer_ok: true,
            ..Partial::default()
        });
        day.fixes += 1;
        day.last_fix_utc = fix.ts_utc;
        day.max_speed_kmh = day.max_speed_kmh.max(fix.speed_kmh);
        match fix.odometer_m {
            Some(_) => day.has_odometer = true,
            None => day.odometer_ok = false,
        }
        let metres = self.distance.push_at(fix, cos_lat);
        let previous = self.previous.replace((fix.ts_utc, date, fix.odometer_m));
        let Some((prev_ts, prev_date, prev_odometer)) = previous else {
            return;
        };
        let odometer_m = match (prev_odometer, fix.odometer_m) {
            (Some(a), Some(b)) if b >= a => Some((b - a) as f64),
            (Some(_), Some(_)) => {
                // Backwards: a reset or another unit's tracker; the day's reading is unusable.
                if let Some(day) = self.days.get_mut(date) {
                    day.odometer_ok = false;
                }
                None
            }
            _ => None,
        };
        for (share_date, share) in self
            .shares(prev_ts, prev_date, fix.ts_utc, date)
            .into_iter()
            .flatten()
        {
            if let Some(day) = self.days.get_mut(share_date) {
                day.km_gps += metres * share / 1000.0;
                day.odometer_m += odometer_m.unwrap_or(0.0) * share;
            }
        }
    }

    /// How the interval between two fixes divides between the days it spans: each day (of
    /// those with fixes: the two ends') and its share of the time. An array, not a `Vec`: this
    /// runs for every fix, and an allocation per fix was a tenth of the summary's cost.
    fn shares(
        &self,
        from_utc: i64,
        from_date: NaiveDate,
        to_utc: i64,
        to_date: NaiveDate,
    ) -> [Option<(NaiveDate, f64)>; 2] {
        if from_date == to_date || to_utc <= from_utc {
            return [Some((to_date, 1.0)), None];
        }
        let span = (to_utc - from_utc) as f64;
        let (_, from_day_end) = day_bounds(self.zone, from_date);
        let (to_day_start, _) = day_bounds(self.zone, to_date);
        [
            Some((
                from_date,
                (from_day_end.min(to_utc) - from_utc) as f64 / span,
            )),
            Some((to_date, (to_utc - to_day_start.max(from_utc)) as f64 / span)),
        ]
    }

    /// The day table, with stop, trip, gap and overspeed figures clipped to each day.
    pub fn finish(
        self,
        stops: &[Stop],
        gaps: &[Gap],
        overspeeds: &[Overspeed],
        last_fix_utc: i64,
    ) -> Vec<DayStats> {
        let zone = self.zone;
        let mut out = Vec::new();
        // Trips are the complement of stops between the first and last fix.
        let first_fix = self
            .days
            .0
            .first()
            .map_or(last_fix_utc, |(_, d)| d.first_fix_utc);
        let mut trips: Vec<(i64, i64)> = Vec::new();
        let mut cursor = first_fix;
        let mut moving_at_start = true;
        for stop in stops {
            if stop.start_utc > cursor && !(moving_at_start && stop.from_data_start) {
                trips.push((cursor, stop.start_utc));
            }
            moving_at_start = false;
            cursor = stop.end_utc.unwrap_or(i64::MAX);
        }
        if cursor < last_fix_utc {
            trips.push((cursor, last_fix_utc));
        }
        let mut distance = self.distance;
        let sparse = distance
            .moving_cadence_s()
            .is_some_and(|cadence_s| cadence_s >= SPARSE_CADENCE_S);
        let odometer =
            OdometerTrust::over(self.use_odometer, self.tolerance_pct, sparse, &self.days);
        for (date, partial) in self.days.0 {
            let (from, to) = day_bounds(zone, date);
            let clip = |a: i64, b: i64| (a.max(from), b.min(to));
            let mut moving_s = 0;
            let mut first_move = None;
            let mut last_move = None;
            for (a, b) in &trips {
                let (a, b) = clip(*a, *b);
                if b > a {
                    moving_s += b - a;
                    first_move = first_move.or(Some(a));
                    last_move = Some(b);
                }
            }
            let mut stop_count = 0;
            let mut stop_s = 0;
            for stop in stops {
                let (a, b) = clip(
                    stop.start_utc,
                    stop.end_utc.unwrap_or(last_fix_utc.max(stop.start_utc)),
                );
                if b > a {
                    stop_count += 1;
                    stop_s += b - a;
                }
            }
            let gaps_in = gaps
                .iter()
                .filter(|g| g.from_utc >= from && g.from_utc < to)
                .count() as u32;
            let overspeeds_in = overspeeds
                .iter()
                .filter(|o| o.start_utc >= from && o.start_utc < to)
                .count() as u32;
            let km_odometer = (partial.has_odometer && partial.odometer_ok)
                .then_some(partial.odometer_m / 1000.0);
            let reach_km = partial.max_speed_kmh * moving_s as f64 / 3600.0;
            let km = match km_odometer {
                Some(odo) if odometer.trusted_on(odo, partial.km_gps, reach_km) => odo,
                _ => partial.km_gps,
            };
            out.push(DayStats {
                date,
                km,
                km_gps: partial.km_gps,
                km_odometer,
                first_move_utc: first_move,
                last_move_utc: last_move,
                moving_s,
                stops: stop_count,
                stop_s,
                max_speed_kmh: partial.max_speed_kmh,
                fixes: partial.fixes,
                gaps: gaps_in,
                overspeeds: overspeeds_in,
                first_fix_utc: partial.first_fix_utc,
                last_fix_utc: partial.last_fix_utc,
            });
        }
        out
    }
}

/// Absolute slack of the odometer's agreement, km: a day's GPS distance of a unit that barely
/// moved is noise of this order, and an odometer may not add more than this to a parked day.
const ODOMETER_SLACK_KM: f64 = 0.2;

/// Whether the tracker's odometer may give a unit's kilometres. Its distance must agree with
/// the GPS track within `odometro_tolerancia_pct` over all the unit's days with a usable
/// reading (the GPS distance is within that of the truth on a day and its errors average out
/// over days, so a scale error beyond it shows), and within twice that on the day itself (the
/// two may then be off in opposite directions): a scale error, a reset, another unit's
/// tracker or a broken sensor fall back to the GPS distance. A parked day's odometer may add
/// at most [`ODOMETER_SLACK_KM`].
///
/// A tracker that records a moving unit only every [`SPARSE_CADENCE_S`] or more cuts the
/// corners between its fixes — a city block's two turns fall between two records —, so its
/// GPS distance runs short (8–12 % at a minute, 16–35 % at two, against the true path) and is
/// only a lower bound. There the odometer is trusted when it is not below the GPS distance
/// (within the tolerance) and not beyond what the unit could have driven: its top reported
/// speed over its time moving that day. A scale error of a few percent cannot be told from
/// such a GPS distance, and the odometer, even off by that, is nearer the path than it.
struct OdometerTrust {
    wanted: bool,
    tolerance: f64,
    sparse: bool,
    unit_agrees: bool,
}

/// The cadence of a moving unit's records from which its GPS distance is a lower bound, s.
const SPARSE_CADENCE_S: f64 = 45.0;

impl OdometerTrust {
    fn over(wanted: bool, tolerance_pct: f64, sparse: bool, days: &Days) -> Self {
        let tolerance = tolerance_pct / 100.0;
        let (odometer_km, gps_km) = days
            .0
            .iter()
            .map(|(_, d)| d)
            .filter(|d| d.has_odometer && d.odometer_ok)
            .fold((0.0, 0.0), |(o, g), d| {
                (o + d.odometer_m / 1000.0, g + d.km_gps)
            });
        let unit_agrees = if sparse {
            not_below(odometer_km, gps_km, tolerance)
        } else {
            agrees(odometer_km, gps_km, tolerance)
        };
        OdometerTrust {
            wanted,
            tolerance,
            sparse,
            unit_agrees,
        }
    }

    /// `reach_km`: the day's top reported speed over its time moving.
    fn trusted_on(&self, odometer_km: f64, gps_km: f64, reach_km: f64) -> bool {
        let on_the_day = if self.sparse {
            not_below(odometer_km, gps_km, 2.0 * self.tolerance)
                && odometer_km <= reach_km * (1.0 + 2.0 * self.tolerance) + ODOMETER_SLACK_KM
        } else {
            agrees(odometer_km, gps_km, 2.0 * self.tolerance)
        };
        self.wanted && self.unit_agrees && on_the_day
    }
}

fn not_below(odometer_km: f64, gps_km: f64, tolerance: f64) -> bool {
    odometer_km >= gps_km - tolerance * gps_km - ODOMETER_SLACK_KM
}

fn agrees(odometer_km: f64, gps_km: f64, tolerance: f64) -> bool {
    (odometer_km - gps_km).abs() <= tolerance * gps_km + ODOMETER_SLACK_KM
}

/// The local day is the calendar's rule, shared with the simulator and the tools.
pub use crate::calendar::day_bounds;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_stay_in_date_order_and_are_found_whatever_the_order_they_come_in() {
        let date = |d: u32| NaiveDate::from_ymd_opt(2026, 8, d).unwrap();
        let mut days = Days::default();
        for (d, fixes) in [
            (12, 1),
            (12, 2),
            (14, 3),
            (10, 4),
            (13, 5),
            (14, 6),
            (10, 7),
        ] {
            let partial = days.get_or_insert_with(date(d), Partial::default);
            partial.fixes += fixes;
        }
        let order: Vec<(u32, u32)> = days
            .0
            .iter()
            .map(|(d, p)| (chrono::Datelike::day(d), p.fixes))
            .collect();
        assert_eq!(order, [(10, 11), (12, 3), (13, 5), (14, 9)]);
        assert_eq!(days.get_mut(date(13)).map(|p| p.fixes), Some(5));
        assert_eq!(days.get_mut(date(10)).map(|p| p.fixes), Some(11));
        assert!(days.get_mut(date(11)).is_none());
        assert!(days.get_mut(date(9)).is_none());
        assert!(days.get_mut(date(15)).is_none());
    }
}
