//! What every fleet tool does the same way: the arguments they share (one unit's day, a range
//! of days) and how the model is told about them, rounding, local times (in the unit's zone
//! for answers about a unit), places.
//!
//! Owns small helpers only; each tool's own logic stays in its file.

use chrono::NaiveDate;
use chrono_tz::Tz;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::engine::{EventKind, Fix};
use crate::fleet::{Snapshot, dates};
use crate::geometry::earth::LatLon;
use crate::mcp::ToolError;
use crate::store::{EventRow, Store, StoreError};

/// How every tool describes a `placa` argument to the model.
pub const PLATE: &str = "Placa de la unidad, p. ej. P-123BCD (se aceptan minúsculas y espacios)";

/// How every tool describes a one-day `fecha` argument to the model.
pub const DAY: &str =
    "Día: AAAA-MM-DD, DD/MM/AAAA, hoy, ayer, anteayer o un día de la semana (el más reciente)";

/// How the tools built on the detections describe their `aviso` to the model.
pub const AVISO: &str = "Solo si hay posiciones escritas o cambiadas después del último análisis, que esta respuesta no refleja: qué unidades y el comando que lo corrige";

// The arguments of the tools about one unit's day. (A `//` comment: schemars would show a
// doc comment to the model as the schema's description.)
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnitDay {
    #[schemars(description = PLATE, length(min = 1, max = 40))]
    pub placa: String,
    #[schemars(description = DAY, length(min = 1, max = 40))]
    pub fecha: String,
}

// The arguments of the tools over a range of days (not a doc comment, as above).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DateRange {
    #[schemars(
        description = "Primer día: AAAA-MM-DD, DD/MM/AAAA, hoy, ayer, anteayer o un día de la semana",
        length(min = 1, max = 40)
    )]
    pub fecha_inicio: String,
    #[schemars(
        description = "Último día, incluido (máximo 93 días de rango)",
        length(min = 1, max = 40)
    )]
    pub fecha_fin: String,
}

impl DateRange {
    /// The first and last local dates, resolved against the fleet's today, or an argument
    /// error naming what is wrong.
    pub fn resolve(&self, snapshot: &Snapshot) -> Result<(NaiveDate, NaiveDate), ToolError> {
        dates::resolve_range(&self.fecha_inicio, &self.fecha_fin, snapshot.today)
            .map_err(ToolError::InvalidArguments)
    }
}

/// How the fleet-wide tools describe their `nota_zonas` to the model.
pub const ZONES: &str = "Solo si la flota tiene unidades en varias zonas horarias: en qué zona se leen las fechas y qué unidades están en otra";

/// How every tool describes an event's `evidencia` to the model.
pub const EVIDENCE: &str = "Por qué se detectó: primer y último reporte usados (hora local y UTC), cuántos reportes, la medida (radio de la parada, velocidad máxima, minutos de silencio o distancia al borde de la geocerca), el umbral aplicado (nombre y valor) y qué es estimado (inicio fechado hacia atrás, fin abierto, empezó antes de los datos)";

/// Lists given to the model stop here; the real total always travels beside them.
pub const MAX_ROWS: usize = 200;

/// The schema words of `desde_antes_de_los_datos` on a visit.
pub const BEFORE_DATA: &str = "Solo si la visita ya estaba en curso en el primer reporte de los datos: la entrada real es anterior y los minutos son un mínimo";

/// What a visit already under way at the data's first report means, in words (`None` when
/// it is not).
pub fn before_data_note(before_data: bool) -> Option<String> {
    before_data.then(|| {
        "ya estaba dentro en el primer reporte de los datos: la entrada real es anterior y los \
         minutos dentro son un mínimo"
            .to_owned()
    })
}

/// The schema words of `desde_antes_de_los_datos` on a stop.
pub const STOP_BEFORE_DATA: &str = "Solo si la parada ya estaba en curso en el primer reporte de los datos: el inicio real es anterior y los minutos son un mínimo";

/// What a stop already under way at the data's first report means, in words (`None` when it
/// is not).
pub fn stop_before_data_note(before_data: bool) -> Option<String> {
    before_data.then(|| {
        "ya estaba detenida en el primer reporte de los datos: el inicio real es anterior y los \
         minutos detenida son un mínimo"
            .to_owned()
    })
}

/// For `skip_serializing_if`: a flag shown only when it is set.
pub fn is_false(flag: &bool) -> bool {
    !flag
}

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

/// `HH:MM:SS` on `zone`'s clock (a unit's, for answers about it).
pub fn clock(zone: Tz, ts_utc: i64) -> String {
    dates::clock(zone, ts_utc)
}

/// Full local timestamp with offset, on `zone`'s clock.
pub fn iso(zone: Tz, ts_utc: i64) -> String {
    dates::iso(zone, ts_utc)
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

/// `items` truncated to [`MAX_ROWS`], where the total is not shown.
pub fn capped<T>(mut items: Vec<T>) -> Vec<T> {
    cap(&mut items);
    items
}

/// Whether a unit silent since `fix` with the engine on is asleep where it halted rather than
/// without signal, by the engine's verdict: the engine judges a silence against the tracker's
/// own cadence while stopped (an adaptive tracker records once per "on stop" period, five
/// minutes to an hour), and at its analysis's "now" it left `stop` open with no signal loss
/// under way. Judged by the loss threshold alone, such a unit read "sin señal" in
/// `unidades_detenidas` and `posicion_actual` while `alertas` had no loss for it (a unit held
/// in Melbourne's CBD, docs/deteccion.md, "Session sixteen"). Past the analysis's "now" (or
/// with unusable detections) the verdict is unknown, and the threshold rules as before.
pub fn asleep_halted(
    store: &Store,
    snapshot: &Snapshot,
    vehicle_id: i64,
    fix: &Fix,
    stop: Option<&EventRow>,
) -> Result<bool, StoreError> {
    let now = snapshot.now_utc;
    let judged = snapshot.detections_usable()
        && snapshot
            .meta
            .analysis
            .until_utc
            .is_some_and(|until| now <= until);
    let halted_open = stop.is_some_and(|s| s.vehicle_id == vehicle_id && s.end_utc.is_none());
    let silent = now - fix.ts_utc > snapshot.meta.config.perdida_senal_s as i64;
    if !(judged && halted_open && silent && fix.ignition) {
        return Ok(false);
    }
    let losses = store.vehicle_events(vehicle_id, EventKind::Gap, fix.ts_utc, now + 1)?;
    Ok(!losses.iter().any(|loss| loss.end_utc.is_none()))
}

/// What a unit is doing at the fleet's now, from its last report (`posicion_actual`'s and
/// `mapa_flota`'s `estado`): switched off; silent longer than a signal loss with the engine
/// on, unless `asleep` ([`asleep_halted`]: halted, within its tracker's cadence); moving;
/// stopped with the engine on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitState {
    Moving,
    EngineOn,
    Off,
    Silent,
}

impl UnitState {
    pub fn of(fix: &Fix, now_utc: i64, signal_loss_s: i64, asleep: bool) -> UnitState {
        if !fix.ignition {
            UnitState::Off
        } else if asleep {
            // Its last record may be the braking's (an adaptive tracker records the change of
            // speed, not the halt): the engine found it halted there.
            UnitState::EngineOn
        } else if now_utc - fix.ts_utc > signal_loss_s {
            UnitState::Silent
        } else if fix.speed_kmh > 0.0 {
            UnitState::Moving
        } else {
            UnitState::EngineOn
        }
    }

    /// The Spanish words the tools answer with.
    pub fn words(self) -> &'static str {
        match self {
            UnitState::Moving => "en movimiento",
            UnitState::EngineOn => "detenida con motor encendido",
            UnitState::Off => "apagada",
            UnitState::Silent => "sin señal",
        }
    }
}
