//! One unit's day as positions and detections: what a map or an export of that day shows.
//!
//! Owns loading it: the day's fixes (local day in the fleet's zone, clipped at the fleet's
//! "now"), its aggregate row and the engine's events that touch it, refused when the
//! detections cannot be used and flagged when the unit's positions changed after them.
//! Read-only, through the fleet's pooled connections; the truth log is never involved.

use chrono::NaiveDate;

use super::{Fleet, Snapshot, dates};
use crate::engine::Fix;
use crate::mcp::ToolError;
use crate::store::{DayRow, EventRow, Vehicle};

/// Everything recorded about one unit on one local date.
#[derive(Debug, Clone)]
pub struct DayTrack {
    pub vehicle: Vehicle,
    pub date: NaiveDate,
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
    /// Stops within the working window (first departure to last arrival), as
    /// `resumen_recorrido` lists them: the night's parking is not a stop of the day.
    pub fn working_stops(&self) -> impl Iterator<Item = &EventRow> {
        let window = match (self.day.first_move_utc, self.day.last_move_utc) {
            (Some(a), Some(b)) => (a, b),
            _ => (self.from_utc, self.to_utc),
        };
        self.stops
            .iter()
            .filter(move |s| s.start_utc >= window.0 && s.start_utc < window.1)
    }
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
        let date = snapshot.date("fecha", fecha)?;
        let aviso = snapshot.detections(Some(&vehicle))?;
        let (from, to) = snapshot.day_bounds(date);
        let to = to.min(snapshot.now_utc + 1);
        let date_text = date.to_string();
        let id = vehicle.id;
        let (day, fixes, stops, gaps, speeding, visits) = self.query(|store| {
            Ok((
                store.day(id, &date_text)?,
                store.fixes(id, from, to)?,
                store.vehicle_events(id, "parada", from, to)?,
                store.vehicle_events(id, "perdida_senal", from, to)?,
                store.vehicle_events(id, "exceso_velocidad", from, to)?,
                store.vehicle_events(id, "visita_geocerca", from, to)?,
            ))
        })?;
        let day = match day {
            Some(day) if !fixes.is_empty() => day,
            _ => {
                let message = format!(
                    "La unidad {} no tiene reportes el {} ({date}).",
                    vehicle.plate,
                    dates::weekday_es(date)
                );
                return Err(ToolError::Failed(match &aviso {
                    Some(aviso) => format!("{message} {aviso}"),
                    None => message,
                }));
            }
        };
        Ok(DayTrack {
            vehicle,
            date,
            from_utc: from,
            to_utc: to,
            fixes,
            day,
            stops,
            gaps,
            speeding,
            visits,
            aviso,
        })
    }
}
