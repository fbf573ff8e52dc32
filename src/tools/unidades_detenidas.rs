//! `unidades_detenidas`: which units have been standing still for at least N minutes.
//!
//! Owns the fleet-wide "who is stopped" answer. A unit is stopped when the engine's stop for it
//! covers the fleet's now; minutes count from the stop's real start (back-dated, not from the
//! last moving report). Units are told apart by what their tracker says now: engine on, switched
//! off (end of shift), or silent with the ignition on (no signal) — engine-on stops first,
//! since those are the ones an operator acts on.

use std::collections::HashMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    AVISO, EVIDENCE, asleep_halted, cap, coord, iso, minutes, place, stop_before_data_note,
};
use crate::engine::Fix;
use crate::fleet::{Evidencia, Fleet};
use crate::mcp::{CallContext, Reply, ToolError, TypedTool};

pub struct UnidadesDetenidas {
    pub fleet: Arc<Fleet>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    #[schemars(
        description = "Minutos mínimos detenida para aparecer en la lista (por defecto 30)",
        range(max = 100000)
    )]
    pub minutos_minimos: Option<u32>,
}

#[derive(Serialize, JsonSchema)]
pub struct Stopped {
    pub placa: String,
    pub conductor: String,
    #[schemars(description = "motor encendido | apagada | sin señal")]
    pub estado: String,
    pub minutos_detenida: f64,
    pub detenida_desde: String,
    #[schemars(
        description = "La parada ya estaba en curso al comenzar los datos: los minutos son un mínimo"
    )]
    pub desde_antes_de_los_datos: bool,
    pub ultimo_reporte: String,
    pub minutos_desde_ultimo_reporte: f64,
    pub ubicacion: String,
    pub lat: f64,
    pub lon: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(description = "Zona horaria de la unidad, solo si la flota tiene varias")]
    pub zona_horaria: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nota: Option<String>,
    #[schemars(description = EVIDENCE)]
    pub evidencia: Evidencia,
}

#[derive(Serialize, JsonSchema)]
pub struct ByState {
    pub motor_encendido: usize,
    pub apagada: usize,
    pub sin_senal: usize,
}

#[derive(Serialize, JsonSchema)]
pub struct Output {
    pub instante_consulta: String,
    pub zona_horaria: String,
    pub minutos_minimos: u32,
    #[schemars(description = "Unidades que cumplen el filtro (la lista se corta en 200)")]
    pub total: usize,
    pub por_estado: ByState,
    pub unidades: Vec<Stopped>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(description = AVISO)]
    pub aviso: Option<String>,
}

impl TypedTool for UnidadesDetenidas {
    type Params = Params;
    type Output = Output;

    fn name(&self) -> &'static str {
        "unidades_detenidas"
    }
    fn title(&self) -> &'static str {
        "Unidades detenidas"
    }
    fn description(&self) -> String {
        "Unidades que llevan al menos N minutos sin moverse (30 por defecto), con desde cuándo, \
         dónde y si tienen el motor encendido, están apagadas (fin de jornada) o sin señal, y la \
         evidencia de cada parada (reportes usados, umbral aplicado y qué es estimado). \
         Ejemplos: «¿qué unidades llevan más de una hora detenidas?», «¿hay camiones parados \
         con el motor encendido?»"
            .into()
    }

    fn call(&self, params: Params, _: &CallContext) -> Result<Reply<Output>, ToolError> {
        let snapshot = self.fleet.snapshot()?;
        let aviso = snapshot.detections(None)?;
        let threshold = params.minutos_minimos.unwrap_or(30);
        let now = snapshot.now_utc;
        let gap_s = snapshot.meta.config.perdida_senal_s as i64;
        let min_s = i64::from(threshold) * 60;
        let rows = self.fleet.query(|store| {
            // Every unit's last fix in one statement (one query per stopped unit was ~700
            // round trips a call on PostgreSQL).
            let fixes: HashMap<i64, Fix> = store.last_fixes(now)?.into_iter().collect();
            let mut rows = Vec::new();
            for stop in store.stops_at(now)? {
                if now - stop.start_utc < min_s {
                    continue;
                }
                let Some(vehicle) = snapshot
                    .vehicles
                    .iter()
                    .find(|v| v.id == stop.vehicle_id && v.active)
                else {
                    continue;
                };
                if let Some(fix) = fixes.get(&vehicle.id) {
                    let asleep = asleep_halted(store, &snapshot, vehicle.id, fix, Some(&stop))?;
                    rows.push((vehicle.clone(), stop, *fix, asleep));
                }
            }
            Ok(rows)
        })?;
        let several_zones = snapshot.zones().len() > 1;
        let mut units: Vec<(u8, Stopped)> = rows
            .into_iter()
            .map(|(vehicle, stop, fix, asleep)| {
                let (rank, estado) = if !fix.ignition {
                    (2, "apagada")
                } else if now - fix.ts_utc > gap_s && !asleep {
                    (1, "sin señal")
                } else {
                    (0, "motor encendido")
                };
                (
                    rank,
                    Stopped {
                        placa: vehicle.plate,
                        conductor: vehicle.driver,
                        estado: estado.into(),
                        minutos_detenida: minutes(now - stop.start_utc),
                        detenida_desde: iso(vehicle.zone, stop.start_utc),
                        desde_antes_de_los_datos: stop.from_data_start,
                        ultimo_reporte: iso(vehicle.zone, fix.ts_utc),
                        minutos_desde_ultimo_reporte: minutes(now - fix.ts_utc),
                        ubicacion: place(&snapshot, stop.lat, stop.lon),
                        lat: coord(stop.lat),
                        lon: coord(stop.lon),
                        zona_horaria: several_zones.then(|| vehicle.zone.name().to_owned()),
                        nota: stop_before_data_note(stop.from_data_start),
                        evidencia: Evidencia::of(&stop, vehicle.zone, now, &snapshot.meta.config),
                    },
                )
            })
            .collect();
        units.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then(b.1.minutos_detenida.total_cmp(&a.1.minutos_detenida))
        });
        let count = |rank: u8| units.iter().filter(|(r, _)| *r == rank).count();
        let por_estado = ByState {
            motor_encendido: count(0),
            sin_senal: count(1),
            apagada: count(2),
        };
        let mut list: Vec<Stopped> = units.into_iter().map(|(_, s)| s).collect();
        let total = cap(&mut list);
        Ok(Reply::new(Output {
            instante_consulta: iso(snapshot.zone(), now),
            zona_horaria: snapshot.zone_name(),
            minutos_minimos: threshold,
            total,
            por_estado,
            unidades: list,
            aviso,
        }))
    }
}
