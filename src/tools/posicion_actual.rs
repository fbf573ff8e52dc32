//! `posicion_actual`: where one unit is now, what it is doing, since when.
//!
//! Owns the answer to "¿dónde está P-123BCD?": the last report at or before the fleet's now,
//! an address (online if configured, else the nearest geofence or stop), speed, heading, and a
//! state that tells apart moving, stopped with the engine on, switched off, and silent.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    EVIDENCE, PLATE, UnitState, asleep_halted, coord, iso, minutes, place, round1,
    stop_before_data_note,
};
use crate::fleet::{Evidencia, Fleet};
use crate::geometry::earth::{LatLon, compass_es};
use crate::mcp::{CallContext, Reply, ToolError, TypedTool};

pub struct PosicionActual {
    pub fleet: Arc<Fleet>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    #[schemars(description = PLATE, length(min = 1, max = 40))]
    pub placa: String,
}

#[derive(Serialize, JsonSchema)]
pub struct Output {
    pub placa: String,
    pub tipo: String,
    pub conductor: String,
    /// One of: en movimiento, detenida con motor encendido, apagada, sin señal.
    #[schemars(description = "en movimiento | detenida con motor encendido | apagada | sin señal")]
    pub estado: String,
    #[schemars(description = "Hora local del último reporte, con zona (ISO 8601)")]
    pub ultimo_reporte: String,
    pub minutos_desde_ultimo_reporte: f64,
    #[schemars(description = "Desde cuándo está detenida (inicio real de la parada), si lo está")]
    pub detenida_desde: Option<String>,
    pub minutos_detenida: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(
        description = "Solo si la parada ya estaba en curso en el primer reporte de los datos: desde cuándo está detenida es un mínimo, en palabras"
    )]
    pub nota_parada: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(description = EVIDENCE)]
    pub evidencia_parada: Option<Evidencia>,
    #[schemars(
        description = "Dirección (servicio en línea si está configurado) o referencia local"
    )]
    pub direccion: String,
    #[schemars(description = "Referencia respecto de las geocercas y paradas de la flota")]
    pub referencia: String,
    pub lat: f64,
    pub lon: f64,
    pub velocidad_kmh: f64,
    #[schemars(description = "Rumbo en grados y punto cardinal, p. ej. 224° (SO)")]
    pub rumbo: String,
    pub odometro_km: Option<f64>,
    pub zona_horaria: String,
    #[schemars(description = "El instante 'ahora' de la flota usado para la consulta")]
    pub consultado: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(
        description = "Solo si las detecciones de la unidad faltan o no cubren sus últimas posiciones: qué dato falta o puede estar desactualizado y el comando que lo corrige"
    )]
    pub aviso: Option<String>,
}

impl TypedTool for PosicionActual {
    type Params = Params;
    type Output = Output;

    fn name(&self) -> &'static str {
        "posicion_actual"
    }
    fn title(&self) -> &'static str {
        "Posición actual de una unidad"
    }
    fn description(&self) -> String {
        "Último reporte de una unidad: dirección o referencia, coordenadas, velocidad, rumbo, \
         estado (en movimiento, detenida con motor encendido, apagada o sin señal) y desde \
         cuándo está detenida. Ejemplos: «¿dónde está P-123BCD?», «¿se está moviendo la \
         unidad P-456DEF?»"
            .into()
    }
    fn annotations(&self) -> crate::mcp::Annotations {
        crate::mcp::Annotations {
            // Addresses may come from an online geocoder when one is configured.
            open_world: self.fleet.geocoder.service().is_some(),
            ..crate::mcp::Annotations::READ_ONLY
        }
    }

    fn call(&self, params: Params, _: &CallContext) -> Result<Reply<Output>, ToolError> {
        let snapshot = self.fleet.snapshot()?;
        let vehicle = snapshot.vehicle(&params.placa)?.clone();
        let now = snapshot.now_utc;
        // The position is the last report, whatever the detections' state; only the stop's
        // start comes from them, and their tables may be missing.
        let usable = snapshot.detections_usable();
        let (fix, stop, asleep) = self.fleet.query(|store| {
            let stop = if usable {
                store.stop_at(vehicle.id, now)?
            } else {
                None
            };
            let fix = store.last_fix(vehicle.id, now)?;
            let asleep = match &fix {
                Some(fix) => asleep_halted(store, &snapshot, vehicle.id, fix, stop.as_ref())?,
                None => false,
            };
            Ok((fix, stop, asleep))
        })?;
        let Some(fix) = fix else {
            let why = if vehicle.active {
                "no tiene reportes"
            } else {
                "está dada de baja y no reporta"
            };
            return Err(ToolError::Failed(format!(
                "La unidad {} {why}.",
                vehicle.plate
            )));
        };
        let gap_s = snapshot.meta.config.perdida_senal_s as i64;
        let estado = UnitState::of(&fix, now, gap_s, asleep).words();
        let referencia = place(&snapshot, fix.lat, fix.lon);
        let (direccion, _) = self
            .fleet
            .geocoder
            .address(LatLon::new(fix.lat, fix.lon), &referencia);
        let stopped = stop.filter(|_| estado != "en movimiento");
        Ok(Reply::new(Output {
            placa: vehicle.plate.clone(),
            tipo: vehicle.kind.clone(),
            conductor: vehicle.driver.clone(),
            estado: estado.into(),
            ultimo_reporte: iso(vehicle.zone, fix.ts_utc),
            minutos_desde_ultimo_reporte: minutes(now - fix.ts_utc),
            detenida_desde: stopped.as_ref().map(|s| iso(vehicle.zone, s.start_utc)),
            minutos_detenida: stopped.as_ref().map(|s| minutes(now - s.start_utc)),
            nota_parada: stopped
                .as_ref()
                .and_then(|s| stop_before_data_note(s.from_data_start)),
            evidencia_parada: stopped
                .as_ref()
                .map(|s| Evidencia::of(s, vehicle.zone, now, &snapshot.meta.config)),
            direccion,
            referencia,
            lat: coord(fix.lat),
            lon: coord(fix.lon),
            velocidad_kmh: round1(fix.speed_kmh),
            rumbo: format!(
                "{:.0}° ({})",
                fix.heading_deg.rem_euclid(360.0),
                compass_es(fix.heading_deg)
            ),
            odometro_km: fix.odometer_m.map(|m| round1(m as f64 / 1000.0)),
            zona_horaria: vehicle.zone.name().to_owned(),
            consultado: iso(vehicle.zone, now),
            aviso: snapshot.detections_note(&vehicle, "desde cuándo está detenida la unidad"),
        }))
    }
}
