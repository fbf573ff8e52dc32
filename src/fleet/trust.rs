//! Whether an answer can rest on the stored detections, and the Spanish sentence when not.
//!
//! Owns the policy the tools share (docs/herramientas.md): detections that cannot be used
//! (missing tables, no coverage record, another engine or thresholds, edited by hand) make
//! the tools built on them fail with one sentence naming `flota analizar`; positions written
//! after the analysis leave the answer right for what was analysed, so it carries a warning
//! (`aviso`) naming the units and the same command. The state itself is the store's
//! ([`AnalysisState`]), computed once per loaded snapshot.

use super::Snapshot;
use crate::mcp::ToolError;
use crate::store::{AnalysisState, Unusable, Vehicle};

/// A business failure's sentence, followed by the detections' warning when there is one (the
/// failure may come from detections that do not cover the latest positions).
pub fn with_warning(message: String, aviso: Option<&str>) -> String {
    match aviso {
        Some(aviso) => format!("{message} {aviso}"),
        None => message,
    }
}

/// Units named in a warning before "y N unidades más".
const NAMED_UNITS: usize = 5;

impl Snapshot {
    /// For an answer made of detections about `vehicle` (`None`: the whole fleet): an error
    /// when they cannot be used, else the warning to carry when the positions involved
    /// changed after the analysis.
    pub fn detections(&self, vehicle: Option<&Vehicle>) -> Result<Option<String>, ToolError> {
        match &self.analysis {
            AnalysisState::Current => Ok(None),
            AnalysisState::Unusable(why) => Err(ToolError::Failed(self.unusable(*why))),
            AnalysisState::Behind(changed) => Ok(self.behind(changed, vehicle)),
        }
    }

    /// Whether the detections can be read at all (their tables may not even exist).
    pub fn detections_usable(&self) -> bool {
        !matches!(self.analysis, AnalysisState::Unusable(_))
    }

    /// For an answer that stands on the positions alone but uses detections for a detail
    /// (`posicion_actual`'s stop start): the warning when that detail is missing or stale.
    pub fn detections_note(&self, vehicle: &Vehicle, detail: &str) -> Option<String> {
        match &self.analysis {
            AnalysisState::Current => None,
            AnalysisState::Unusable(why) => Some(format!(
                "No se sabe {detail}: no hay detecciones confiables en {db} ({why}); ejecute: {command}",
                db = self.db_shown,
                command = self.analyze_command()
            )),
            AnalysisState::Behind(changed) => self.behind(changed, Some(vehicle)),
        }
    }

    fn analyze_command(&self) -> String {
        format!("flota analizar {}", self.db_shown)
    }

    fn unusable(&self, why: Unusable) -> String {
        format!(
            "No hay detecciones confiables en {} ({why}); ejecute: {}",
            self.db_shown,
            self.analyze_command()
        )
    }

    /// The warning for positions changed after the analysis, if `vehicle` (or, for `None`,
    /// any unit) is among those changed.
    fn behind(&self, changed: &[(i64, i64)], vehicle: Option<&Vehicle>) -> Option<String> {
        let changed: Vec<(i64, i64)> = changed
            .iter()
            .copied()
            .filter(|(id, _)| vehicle.is_none_or(|v| v.id == *id))
            .collect();
        if changed.is_empty() {
            return None;
        }
        let rows: i64 = changed.iter().map(|(_, rows)| rows).sum();
        let mut names: Vec<String> = changed
            .iter()
            .take(NAMED_UNITS)
            .map(|(id, _)| self.plate_or_id(*id))
            .collect();
        let more = changed.len().saturating_sub(NAMED_UNITS);
        let units = match (names.pop(), more) {
            (Some(last), 0) if names.is_empty() => last,
            (Some(last), 0) => format!("{} y {last}", names.join(", ")),
            (Some(last), more) => {
                names.push(last);
                format!("{} y {more} unidades más", names.join(", "))
            }
            (None, _) => String::new(),
        };
        Some(format!(
            "Las posiciones de {units} cambiaron después del último análisis ({rows} filas) y esta \
             respuesta no lo refleja; ejecute: {}",
            self.analyze_command()
        ))
    }

    fn plate_or_id(&self, id: i64) -> String {
        self.vehicles
            .iter()
            .find(|v| v.id == id)
            .map_or_else(|| format!("la unidad con id {id}"), |v| v.plate.clone())
    }
}
