//! `verificar_geocerca`: did a unit enter a geofence on a day, when, and for how long.
//!
//! Owns the per-day visit view: the engine's debounced visits overlapping the unit's local day
//! (in its zone), clipped to it. A visit that began before the day (the unit slept inside) or runs past it
//! says so instead of pretending to start at midnight.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    AVISO, BEFORE_DATA, DAY, EVIDENCE, PLATE, before_data_note, cap, clock, is_false, minutes,
    round1,
};
use crate::engine::EventKind;
use crate::fleet::{Evidencia, Fleet, dates, day_bounds, no_reports};
use crate::mcp::{CallContext, Reply, ToolError, TypedTool};

pub struct VerificarGeocerca {
    pub fleet: Arc<Fleet>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    #[schemars(description = PLATE, length(min = 1, max = 40))]
    pub placa: String,
    #[schemars(
        description = "Nombre de la geocerca, completo o parcial, sin importar mayúsculas ni tildes (p. ej. «CEDIS Zona 12» o «mixco»)",
        length(min = 1, max = 100)
    )]
    pub nombre_geocerca: String,
    #[schemars(description = DAY, length(min = 1, max = 40))]
    pub fecha: String,
}

#[derive(Serialize, JsonSchema)]
pub struct VisitOut {
    #[schemars(
        description = "Hora de entrada (HH:MM:SS); null si ya estaba dentro al empezar el día"
    )]
    pub entrada: Option<String>,
    #[schemars(description = "Hora de salida (HH:MM:SS); null si seguía dentro")]
    pub salida: Option<String>,
    pub minutos_dentro: f64,
    pub desde_antes_del_dia: bool,
    pub sigue_dentro: bool,
    #[serde(skip_serializing_if = "is_false")]
    #[schemars(description = BEFORE_DATA)]
    pub desde_antes_de_los_datos: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nota: Option<String>,
    #[schemars(description = EVIDENCE)]
    pub evidencia: Evidencia,
}

#[derive(Serialize, JsonSchema)]
pub struct Output {
    pub placa: String,
    pub geocerca: String,
    pub tipo_geocerca: String,
    pub fecha: String,
    pub dia_semana: String,
    pub zona_horaria: String,
    #[schemars(description = "Estuvo dentro en algún momento del día")]
    pub estuvo_dentro: bool,
    #[schemars(description = "Entró durante el día (no cuenta si solo amaneció dentro)")]
    pub entro: bool,
    pub numero_visitas: usize,
    pub minutos_total_dentro: f64,
    pub visitas: Vec<VisitOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(description = AVISO)]
    pub aviso: Option<String>,
}

impl TypedTool for VerificarGeocerca {
    type Params = Params;
    type Output = Output;

    fn name(&self) -> &'static str {
        "verificar_geocerca"
    }
    fn title(&self) -> &'static str {
        "Visitas de una unidad a una geocerca"
    }
    fn description(&self) -> String {
        "Si una unidad entró a una geocerca (bodega, centro de distribución o zona de clientes) \
         en un día: hora de entrada y salida de cada visita, minutos dentro y su evidencia \
         (reportes usados, umbral aplicado y qué es estimado). Acepta el nombre \
         completo o parcial de la geocerca. Fechas: AAAA-MM-DD, hoy, ayer, anteayer o un día de \
         la semana. Ejemplos: «¿entró P-456DEF al CEDIS ayer y cuánto tiempo?», «¿pasó \
         P-345VWX por el Centro Histórico el lunes?»"
            .into()
    }

    fn call(&self, params: Params, _: &CallContext) -> Result<Reply<Output>, ToolError> {
        let snapshot = self.fleet.snapshot()?;
        let vehicle = snapshot.vehicle(&params.placa)?.clone();
        let fence = snapshot.fence(&params.nombre_geocerca)?.clone();
        let date = snapshot.date_for(&vehicle, "fecha", &params.fecha)?;
        let aviso = snapshot.detections(Some(&vehicle))?;
        let (from, day_end) = day_bounds(vehicle.zone, date);
        let now = snapshot.now_utc;
        let to = day_end.min(now + 1);
        let (visits, fixes) = self.fleet.query(|store| {
            Ok((
                store.vehicle_events(vehicle.id, EventKind::Visit, from, to)?,
                store.count_fixes(vehicle.id, from, to)?,
            ))
        })?;
        // Counted from the positions themselves: stale detections cannot explain it.
        if fixes == 0 {
            return Err(no_reports(&vehicle, date, None));
        }
        let mut list: Vec<VisitOut> = visits
            .iter()
            .filter(|v| v.fence_id == Some(fence.id))
            .map(|v| {
                let before = v.start_utc < from || v.from_data_start;
                let still = v.end_utc.is_none_or(|e| e >= to);
                let (a, b) = (v.start_utc.max(from), v.end_utc.unwrap_or(now).min(to));
                VisitOut {
                    entrada: (!before).then(|| clock(vehicle.zone, v.start_utc)),
                    salida: v.end_utc.filter(|_| !still).map(|e| clock(vehicle.zone, e)),
                    minutos_dentro: minutes(b - a),
                    desde_antes_del_dia: before,
                    sigue_dentro: still,
                    desde_antes_de_los_datos: v.from_data_start,
                    nota: before_data_note(v.from_data_start),
                    evidencia: Evidencia::of(v, vehicle.zone, now, &snapshot.meta.config),
                }
            })
            .collect();
        let total_minutes: f64 = list.iter().map(|v| v.minutos_dentro).sum();
        let entro = list.iter().any(|v| !v.desde_antes_del_dia);
        let count = cap(&mut list);
        Ok(Reply::new(Output {
            placa: vehicle.plate.clone(),
            geocerca: fence.fence.name.clone(),
            tipo_geocerca: fence.fence.kind.clone(),
            fecha: date.to_string(),
            dia_semana: dates::weekday_es(date).into(),
            zona_horaria: vehicle.zone.name().to_owned(),
            estuvo_dentro: count > 0,
            entro,
            numero_visitas: count,
            minutos_total_dentro: round1(total_minutes),
            visitas: list,
            aviso,
        }))
    }
}
