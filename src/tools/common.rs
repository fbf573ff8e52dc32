//! What every fleet tool does the same way: rounding, times in the fleet's zone, places.
//!
//! Owns small helpers only; each tool's own logic stays in its file.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::fleet::{Snapshot, dates};
use crate::geometry::earth::LatLon;

/// The arguments of the tools about one unit's day.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnitDay {
    #[schemars(
        description = "Placa de la unidad, p. ej. P-456DEF",
        length(min = 1, max = 40)
    )]
    pub placa: String,
    #[schemars(
        description = "Día: AAAA-MM-DD, hoy, ayer, anteayer o un día de la semana (el más reciente)",
        length(min = 1, max = 40)
    )]
    pub fecha: String,
}

/// Lists given to the model stop here; the real total always travels beside them.
pub const MAX_ROWS: usize = 200;

pub fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Degrees to six decimals (0.11 m): what the trackers' fixes carry.
pub fn coord(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

pub fn minutes(seconds: i64) -> f64 {
    round1(seconds as f64 / 60.0)
}

/// `HH:MM:SS` local.
pub fn clock(snapshot: &Snapshot, ts_utc: i64) -> String {
    dates::clock(snapshot.zone(), ts_utc)
}

/// Full local timestamp with offset.
pub fn iso(snapshot: &Snapshot, ts_utc: i64) -> String {
    dates::iso(snapshot.zone(), ts_utc)
}

/// The offline place phrase for a point.
pub fn place(snapshot: &Snapshot, lat: f64, lon: f64) -> String {
    snapshot.places.phrase(LatLon::new(lat, lon))
}

/// Truncates `items` to [`MAX_ROWS`], returning the real total.
pub fn cap<T>(items: &mut Vec<T>) -> usize {
    let total = items.len();
    items.truncate(MAX_ROWS);
    total
}

/// A business failure's sentence, followed by the detections' warning when there is one (the
/// failure may come from detections that do not cover the latest positions).
pub fn with_warning(message: String, aviso: Option<&str>) -> String {
    match aviso {
        Some(aviso) => format!("{message} {aviso}"),
        None => message,
    }
}
