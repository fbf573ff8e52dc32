//! Per-day aggregates: kilometres, first and last movement, moving time, stops, top speed.
//!
//! Owns splitting a vehicle's history at local midnight (in the fleet's zone). Kilometres come
//! from the GPS distance rule ([`GpsDistance`]: the Doppler speed, corrected by the positions
//! where they are conclusive), so parked jitter adds no phantom kilometres. The tracker's
//! odometer, when present, consistent with that and wanted (`usar_odometro`), is preferred, as
//! Traccar does.

use std::collections::BTreeMap;

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
    distance: GpsDistance,
    days: BTreeMap<NaiveDate, Partial>,
    current: Option<(NaiveDate, i64, i64)>,
}

#[derive(Debug, Clone, Default)]
struct Partial {
    km_gps: f64,
    odometer: Option<(i64, i64)>,
    odometer_ok: bool,
    max_speed_kmh: f64,
    fixes: u32,
    first_fix_utc: i64,
    last_fix_utc: i64,
}

impl DayAccumulator {
    pub fn new(zone: Tz, use_odometer: bool, distance: GpsDistance) -> Self {
        DayAccumulator {
            zone,
            use_odometer,
            distance,
            days: BTreeMap::new(),
            current: None,
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

    pub fn push(&mut self, fix: &Fix) {
        let date = self.date_of(fix.ts_utc);
        let day = self.days.entry(date).or_insert_with(|| Partial {
            first_fix_utc: fix.ts_utc,
            odometer_ok: true,
            ..Partial::default()
        });
        day.fixes += 1;
        day.last_fix_utc = fix.ts_utc;
        day.max_speed_kmh = day.max_speed_kmh.max(fix.speed_kmh);
        match (fix.odometer_m, &mut day.odometer) {
            (Some(odo), None) => day.odometer = Some((odo, odo)),
            (Some(odo), Some((_, last))) => {
                if odo < *last {
                    day.odometer_ok = false;
                }
                *last = odo.max(*last);
            }
            (None, _) => day.odometer_ok = false,
        }
        day.km_gps += self.distance.push(fix) / 1000.0;
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
            .values()
            .next()
            .map_or(last_fix_utc, |d| d.first_fix_utc);
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
        for (date, partial) in self.days {
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
            let km_odometer = partial
                .odometer
                .filter(|_| partial.odometer_ok)
                .map(|(first, last)| (last - first) as f64 / 1000.0);
            let km = match km_odometer {
                Some(odo) if self.use_odometer && consistent(odo, partial.km_gps) => odo,
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

/// An odometer reading is trusted unless it disagrees wildly with the GPS path (a reset, a
/// different unit, a broken sensor).
fn consistent(odometer_km: f64, gps_km: f64) -> bool {
    if gps_km < 1.0 {
        return odometer_km < 5.0;
    }
    let ratio = odometer_km / gps_km;
    (0.5..=2.0).contains(&ratio)
}

/// The local day is the calendar's rule, shared with the simulator and the tools.
pub use crate::calendar::day_bounds;
