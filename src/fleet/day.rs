//! One unit's day as positions and detections: what a map or an export of that day shows.
//!
//! Owns loading it: the day's fixes (local day in the unit's zone, clipped at the fleet's
//! "now"), its aggregate row and the engine's events that touch it, refused when the
//! detections cannot be used and flagged when the unit's positions changed after them.
//! Read-only, through the fleet's pooled connections; the truth log is never involved. Also
//! what the day tools share: the working window of a day, and the failure for a day without
//! reports.

use chrono::NaiveDate;
use chrono_tz::Tz;

use super::{Fleet, Snapshot, dates, day_bounds, with_warning};
use crate::engine::Fix;
use crate::mcp::ToolError;
use crate::store::{DayRow, EventRow, Vehicle};

/// Everything recorded about one unit on one local date.
#[derive(Debug, Clone)]
pub struct DayTrack {
    pub vehicle: Vehicle,
    pub date: NaiveDate,
    /// The unit's zone: its day's bounds and the local times shown.
    pub zone: Tz,
    /// UTC bounds `[from, to)` of the local day, `to` clipped at the fleet's now.
    pub from_utc: i64,
    pub to_utc: i64,
    /// The day's reports in time order (duplicates dropped).
    pub fixes: Vec<Fix>,
    pub day: DayRow,
    pub stops: Vec<EventRow>,
    pub gaps: Vec<EventRow>,
    pub speeding: Vec<EventRow>,
    pub visits: Vec<EventRow>,
    /// Set when the unit's positions changed after the analysis (see `trust.rs`).
    pub aviso: Option<String>,
}

impl DayTrack {
    /// Stops within the working window, as `resumen_recorrido` lists them.
    pub fn working_stops(&self) -> impl Iterator<Item = &EventRow> {
        let window = working_window(&self.day, self.from_utc, self.to_utc);
        self.stops
            .iter()
            .filter(move |s| is_working_stop(s, window))
    }
}

/// Whether `stop` is one of the day's stops: it starts within the working `window`, or it
/// is going on now with the engine never switched off after the last arrival (a unit
/// waiting at a client, which `alertas` reports; the night's parking is not one).
pub fn is_working_stop(stop: &EventRow, window: (i64, i64)) -> bool {
    let within = stop.start_utc >= window.0 && stop.start_utc < window.1;
    let waiting_now = stop.end_utc.is_none() && !stop.end_of_day && stop.start_utc >= window.0;
    within || waiting_now
}

/// Whether `stop` is a long stop at `now_utc`, as `alertas` counts them: not the parking that
/// ends a day, flagged long by the analysis or still going on, and lasting `long_s` up to
/// now. (A stop still open is judged against the fleet's now, not the analysis's.)
pub fn is_long_stop(stop: &EventRow, now_utc: i64, long_s: i64) -> bool {
    let candidate = !stop.end_of_day && (stop.long || stop.end_utc.is_none());
    candidate && lasts_long(stop.start_utc, stop.end_utc, now_utc, long_s)
}

/// Whether a candidate stop from `start_utc` to `end_utc` (open: still going on) has lasted
/// `long_s` by `now_utc`.
pub fn lasts_long(start_utc: i64, end_utc: Option<i64>, now_utc: i64, long_s: i64) -> bool {
    end_utc.unwrap_or(now_utc).min(now_utc) - start_utc >= long_s
}

impl Snapshot {
    /// [`is_long_stop`] at the fleet's now with the analysis's threshold.
    pub fn is_long_stop(&self, stop: &EventRow) -> bool {
        let long_s = (self.meta.config.parada_prolongada_min * 60.0) as i64;
        is_long_stop(stop, self.now_utc, long_s)
    }
}

/// Where a day's stops are counted: its first departure to its last arrival (the night's
/// parking is not a stop of the day), or the whole day `[from_utc, to_utc)` without movement.
pub fn working_window(day: &DayRow, from_utc: i64, to_utc: i64) -> (i64, i64) {
    match (day.first_move_utc, day.last_move_utc) {
        (Some(a), Some(b)) => (a, b),
        _ => (from_utc, to_utc),
    }
}

/// The failure for a unit-day without reports, followed by the detections' warning when
/// there is one (the day may be missing from detections that lag the positions).
pub fn no_reports(vehicle: &Vehicle, date: NaiveDate, aviso: Option<&str>) -> ToolError {
    ToolError::Failed(with_warning(
        format!(
            "La unidad {} no tiene reportes el {} ({date}).",
            vehicle.plate,
            dates::weekday_es(date)
        ),
        aviso,
    ))
}

impl Fleet {
    /// Loads `placa`'s day `fecha` (date words resolved against the fleet's today). A day
    /// without reports is a business failure naming the unit and the date.
    pub fn day_track(
        &self,
        snapshot: &Snapshot,
        placa: &str,
        fecha: &str,
    ) -> Result<DayTrack, ToolError> {
        let vehicle = snapshot.vehicle(placa)?.clone();
        let date = snapshot.date_for(&vehicle, "fecha", fecha)?;
        let aviso = snapshot.detections(Some(&vehicle))?;
        let zone = vehicle.zone;
        let (from, to) = day_bounds(zone, date);
        let to = to.min(snapshot.now_utc + 1);
        let id = vehicle.id;
        let (day, fixes, events) = self.query(|store| {
            Ok((
                store.day(id, date)?,
                store.fixes(id, from, to)?,
                store.vehicle_events_by_kind(id, from, to)?,
            ))
        })?;
        let day = match day {
            Some(day) if !fixes.is_empty() => day,
            _ => return Err(no_reports(&vehicle, date, aviso.as_deref())),
        };
        Ok(DayTrack {
            vehicle,
            date,
            zone,
            from_utc: from,
            to_utc: to,
            fixes,
            day,
            stops: events.stops,
            gaps: events.gaps,
            speeding: events.overspeeds,
            visits: events.visits,
            aviso,
        })
    }
}
