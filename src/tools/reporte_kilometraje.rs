//! `reporte_kilometraje`: units ranked by kilometres driven over a range of days.
//!
//! Owns the mileage ranking, read from the engine's daily aggregates (odometer kilometres when
//! the tracker's odometer is consistent, else the Doppler-speed distance), with days operated,
//! daily average and hours moving. The dates are read in the fleet's zone and each unit's
//! kilometres are those of its own local days (its zone's).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;

use super::common::{AVISO, ZONES, cap, round1};
use crate::fleet::{Fleet, dates, with_warning};
use crate::mcp::{CallContext, Reply, ToolError, TypedTool};

pub struct ReporteKilometraje {
    pub fleet: Arc<Fleet>,
}

/// A range of days, as `alertas` takes it.
pub use super::common::DateRange as Params;

#[derive(Serialize, JsonSchema)]
pub struct Row {
    pub puesto: usize,
    pub placa: String,
    pub tipo: String,
    pub conductor: String,
    pub kilometros: f64,
    pub dias_operados: i64,
    pub promedio_diario_km: f64,
    pub horas_en_movimiento: f64,
}

#[derive(Serialize, JsonSchema)]
pub struct Output {
    pub fecha_inicio: String,
    pub fecha_fin: String,
    pub zona_horaria: String,
    pub total_flota_km: f64,
    #[schemars(description = "Unidades con reportes en el rango (la lista se corta en 200)")]
    pub total_unidades: usize,
    pub ranking: Vec<Row>,
    pub sin_reportes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(description = ZONES)]
    pub nota_zonas: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(description = AVISO)]
    pub aviso: Option<String>,
}

impl TypedTool for ReporteKilometraje {
    type Params = Params;
    type Output = Output;

    fn name(&self) -> &'static str {
        "reporte_kilometraje"
    }
    fn title(&self) -> &'static str {
        "Ranking de kilometraje"
    }
    fn description(&self) -> String {
        "Ranking de unidades por kilómetros recorridos en un rango de días (incluidos ambos), \
         con días operados, promedio diario y horas en movimiento. Fechas: AAAA-MM-DD, hoy, \
         ayer, anteayer o un día de la semana; rango de hasta 93 días. Ejemplos: «¿quién manejó \
         más kilómetros esta semana?», «kilometraje de la flota del 13 al 19 de agosto»"
            .into()
    }

    fn call(&self, params: Params, _: &CallContext) -> Result<Reply<Output>, ToolError> {
        let snapshot = self.fleet.snapshot()?;
        let (start, end) = params.resolve(&snapshot)?;
        let aviso = snapshot.detections(None)?;
        let rows = self.fleet.query(|store| store.km_by_vehicle(start, end))?;
        let mut ranking: Vec<Row> = rows
            .iter()
            .filter_map(|r| {
                let vehicle = snapshot.vehicles.iter().find(|v| v.id == r.vehicle_id)?;
                Some(Row {
                    puesto: 0,
                    placa: vehicle.plate.clone(),
                    tipo: vehicle.kind.clone(),
                    conductor: vehicle.driver.clone(),
                    kilometros: round1(r.km),
                    dias_operados: r.days,
                    promedio_diario_km: round1(r.km / r.days.max(1) as f64),
                    horas_en_movimiento: round1(r.moving_min / 60.0),
                })
            })
            .collect();
        ranking.sort_by(|x, y| {
            y.kilometros
                .total_cmp(&x.kilometros)
                .then_with(|| x.placa.cmp(&y.placa))
        });
        for (index, row) in ranking.iter_mut().enumerate() {
            row.puesto = index + 1;
        }
        let total_flota_km = round1(rows.iter().map(|r| r.km).sum());
        let mut sin_reportes: Vec<String> = snapshot
            .vehicles
            .iter()
            .filter(|v| !ranking.iter().any(|r| r.placa == v.plate))
            .map(|v| v.plate.clone())
            .collect();
        cap(&mut sin_reportes);
        let total_unidades = cap(&mut ranking);
        if total_unidades == 0 {
            return Err(ToolError::Failed(with_warning(
                format!(
                    "Ninguna unidad reportó entre {start} y {end} (los datos van del {} al {}).",
                    snapshot
                        .meta
                        .from_date
                        .map_or("?".into(), |d| d.to_string()),
                    dates::local_date(snapshot.zone(), snapshot.now_utc)
                ),
                aviso.as_deref(),
            )));
        }
        Ok(Reply::new(Output {
            fecha_inicio: start.to_string(),
            fecha_fin: end.to_string(),
            zona_horaria: snapshot.zone_name(),
            total_flota_km,
            total_unidades,
            ranking,
            sin_reportes,
            nota_zonas: snapshot.zones_note(),
            aviso,
        }))
    }
}
