//! `alertas`: the fleet's alerts over a range of days — counts per type and unit, and the
//! most serious of each type.
//!
//! Owns the alert view. Types: `exceso_velocidad`, `parada_prolongada`, `perdida_senal`,
//! `geocerca_entrada`, `geocerca_salida`. Severity is ordered within each type by what matters
//! for it (km/h over the limit, minutes stopped, minutes silent) instead of the reference's sum
//! of km/h and minutes, which let a long stop outrank a dangerous speed. Geofence crossings are
//! counted always but detailed only when asked for, as they are routine.

use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{MAX_ROWS, iso, minutes, place, round1};
use crate::fleet::{Fleet, dates};
use crate::mcp::{CallContext, Reply, ToolError, TypedTool};
use crate::store::EventRow;

/// Most serious events listed per type.
const DETAIL_PER_TYPE: usize = 10;

pub struct Alertas {
    pub fleet: Arc<Fleet>,
}

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    ExcesoVelocidad,
    ParadaProlongada,
    PerdidaSenal,
    GeocercaEntrada,
    GeocercaSalida,
}

impl Kind {
    const ALL: [Kind; 5] = [
        Kind::ExcesoVelocidad,
        Kind::ParadaProlongada,
        Kind::PerdidaSenal,
        Kind::GeocercaEntrada,
        Kind::GeocercaSalida,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::ExcesoVelocidad => "exceso_velocidad",
            Kind::ParadaProlongada => "parada_prolongada",
            Kind::PerdidaSenal => "perdida_senal",
            Kind::GeocercaEntrada => "geocerca_entrada",
            Kind::GeocercaSalida => "geocerca_salida",
        }
    }

    fn routine(self) -> bool {
        matches!(self, Kind::GeocercaEntrada | Kind::GeocercaSalida)
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    #[schemars(description = "Tipo de alerta; si se omite, todos")]
    pub tipo: Option<Kind>,
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

#[derive(Serialize, JsonSchema, Default)]
pub struct Counts {
    pub exceso_velocidad: usize,
    pub parada_prolongada: usize,
    pub perdida_senal: usize,
    pub geocerca_entrada: usize,
    pub geocerca_salida: usize,
}

impl Counts {
    fn slot(&mut self, kind: Kind) -> &mut usize {
        match kind {
            Kind::ExcesoVelocidad => &mut self.exceso_velocidad,
            Kind::ParadaProlongada => &mut self.parada_prolongada,
            Kind::PerdidaSenal => &mut self.perdida_senal,
            Kind::GeocercaEntrada => &mut self.geocerca_entrada,
            Kind::GeocercaSalida => &mut self.geocerca_salida,
        }
    }

    fn add(&mut self, kind: Kind, n: usize) {
        *self.slot(kind) += n;
    }

    fn get(&self, kind: Kind) -> usize {
        match kind {
            Kind::ExcesoVelocidad => self.exceso_velocidad,
            Kind::ParadaProlongada => self.parada_prolongada,
            Kind::PerdidaSenal => self.perdida_senal,
            Kind::GeocercaEntrada => self.geocerca_entrada,
            Kind::GeocercaSalida => self.geocerca_salida,
        }
    }
}

#[derive(Serialize, JsonSchema)]
pub struct UnitCounts {
    pub placa: String,
    #[schemars(description = "Alertas de la unidad sin contar entradas y salidas de geocercas")]
    pub alertas: usize,
    pub por_tipo: Counts,
}

#[derive(Serialize, JsonSchema)]
pub struct EventOut {
    pub placa: String,
    pub inicio: String,
    pub fin: Option<String>,
    pub ubicacion: String,
    pub minutos: Option<f64>,
    pub velocidad_max_kmh: Option<f64>,
    pub limite_kmh: Option<f64>,
    pub exceso_kmh: Option<f64>,
    pub geocerca: Option<String>,
}

#[derive(Serialize, JsonSchema)]
pub struct Detail {
    pub tipo: String,
    pub total: usize,
    #[schemars(description = "Los más graves primero (máximo 10); en geocercas, en orden de hora")]
    pub eventos: Vec<EventOut>,
}

#[derive(Serialize, JsonSchema)]
pub struct Output {
    pub fecha_inicio: String,
    pub fecha_fin: String,
    pub zona_horaria: String,
    pub tipo: String,
    pub total_eventos: usize,
    pub por_tipo: Counts,
    #[schemars(
        description = "Unidades con alertas (o con cruces de geocerca si se pidió ese tipo)"
    )]
    pub total_unidades: usize,
    pub por_unidad: Vec<UnitCounts>,
    pub detalle: Vec<Detail>,
    pub nota: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(
        description = "Solo si hay posiciones escritas o cambiadas después del último análisis, que esta respuesta no refleja: qué unidades y el comando que lo corrige"
    )]
    pub aviso: Option<String>,
}

impl TypedTool for Alertas {
    type Params = Params;
    type Output = Output;

    fn name(&self) -> &'static str {
        "alertas"
    }
    fn title(&self) -> &'static str {
        "Alertas de la flota"
    }
    fn description(&self) -> String {
        "Alertas en un rango de días: excesos de velocidad, paradas prolongadas, pérdidas de \
         señal y entradas y salidas de geocercas. Devuelve cuántas hubo por tipo y por unidad y \
         el detalle de las más graves de cada tipo. Fechas: AAAA-MM-DD, hoy, ayer, anteayer o un \
         día de la semana; rango de hasta 93 días. Ejemplos: «¿qué excesos de velocidad hubo \
         esta semana?», «¿hubo alertas ayer?»"
            .into()
    }

    fn call(&self, params: Params, _: &CallContext) -> Result<Reply<Output>, ToolError> {
        let snapshot = self.fleet.snapshot()?;
        let (start, end) =
            dates::resolve_range(&params.fecha_inicio, &params.fecha_fin, snapshot.today)
                .map_err(ToolError::InvalidArguments)?;
        let aviso = snapshot.detections(None)?;
        let (from, _) = snapshot.day_bounds(start);
        let (_, to) = snapshot.day_bounds(end);
        let now = snapshot.now_utc;
        let to = to.min(now + 1);
        let long_s = (snapshot.meta.config.parada_prolongada_min * 60.0) as i64;
        let wanted = |kind: Kind| params.tipo.is_none_or(|t| t == kind);
        // Alerts proper come as rows; geofence crossings, routine and numerous, as counts per
        // unit plus the first few rows when they are what was asked for.
        let (mut events, crossings) = self.fleet.query(|store| {
            let mut all: Vec<(Kind, EventRow)> = Vec::new();
            if wanted(Kind::ExcesoVelocidad) {
                all.extend(
                    store
                        .events_starting("exceso_velocidad", from, to)?
                        .into_iter()
                        .map(|e| (Kind::ExcesoVelocidad, e)),
                );
            }
            if wanted(Kind::PerdidaSenal) {
                all.extend(
                    store
                        .events_starting("perdida_senal", from, to)?
                        .into_iter()
                        .map(|e| (Kind::PerdidaSenal, e)),
                );
            }
            if wanted(Kind::ParadaProlongada) {
                all.extend(
                    store
                        .long_stops(from, to)?
                        .into_iter()
                        .filter(|s| {
                            s.start_utc >= from
                                && s.end_utc.unwrap_or(now).min(now) - s.start_utc >= long_s
                        })
                        .map(|e| (Kind::ParadaProlongada, e)),
                );
            }
            let mut crossings = Vec::new();
            for (kind, exits) in [(Kind::GeocercaEntrada, false), (Kind::GeocercaSalida, true)] {
                if wanted(kind) {
                    let counts = store.crossings_by_vehicle(exits, from, to)?;
                    let first = if params.tipo == Some(kind) {
                        store.first_crossings(exits, from, to, DETAIL_PER_TYPE)?
                    } else {
                        Vec::new()
                    };
                    crossings.push((kind, counts, first));
                }
            }
            Ok((all, crossings))
        })?;

        let plates: BTreeMap<i64, &str> = snapshot
            .vehicles
            .iter()
            .map(|v| (v.id, v.plate.as_str()))
            .collect();
        let mut por_tipo = Counts::default();
        let mut by_unit: BTreeMap<i64, (usize, Counts)> = BTreeMap::new();
        for (kind, event) in &events {
            por_tipo.add(*kind, 1);
            let unit = by_unit.entry(event.vehicle_id).or_default();
            unit.1.add(*kind, 1);
            unit.0 += 1;
        }
        for (kind, counts, _) in &crossings {
            for (vehicle, n) in counts {
                por_tipo.add(*kind, *n);
                by_unit.entry(*vehicle).or_default().1.add(*kind, *n);
            }
        }
        // Units with nothing but routine crossings are listed only when crossings were asked for.
        let crossings_asked = params.tipo.is_some_and(Kind::routine);
        let mut por_unidad: Vec<UnitCounts> = by_unit
            .into_iter()
            .filter(|(_, (alerts, _))| *alerts > 0 || crossings_asked)
            .map(|(id, (alerts, counts))| UnitCounts {
                placa: plates.get(&id).copied().unwrap_or("?").to_owned(),
                alertas: alerts,
                por_tipo: counts,
            })
            .collect();
        let routine = |u: &UnitCounts| u.por_tipo.geocerca_entrada + u.por_tipo.geocerca_salida;
        por_unidad.sort_by(|a, b| {
            b.alertas
                .cmp(&a.alertas)
                .then(routine(b).cmp(&routine(a)))
                .then_with(|| a.placa.cmp(&b.placa))
        });
        let total_unidades = por_unidad.len();
        por_unidad.truncate(MAX_ROWS);

        // Severity within each type.
        let severity = |kind: Kind, e: &EventRow| -> i64 {
            let duration = e.end_utc.unwrap_or(now).min(now) - e.start_utc;
            match kind {
                Kind::ExcesoVelocidad => {
                    ((e.max_kmh.unwrap_or(0.0) - e.limit_kmh.unwrap_or(0.0)) * 100.0) as i64
                        * 100_000
                        + duration
                }
                Kind::ParadaProlongada | Kind::PerdidaSenal => duration,
                Kind::GeocercaEntrada | Kind::GeocercaSalida => 0,
            }
        };
        events.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then(severity(b.0, &b.1).cmp(&severity(a.0, &a.1)))
        });
        for (kind, _, first) in crossings {
            events.extend(first.into_iter().map(|e| (kind, e)));
        }
        let mut detalle = Vec::new();
        for kind in Kind::ALL {
            let of_kind: Vec<&EventRow> = events
                .iter()
                .filter(|(k, _)| *k == kind)
                .map(|(_, e)| e)
                .collect();
            if of_kind.is_empty() {
                continue;
            }
            let eventos = of_kind
                .iter()
                .take(DETAIL_PER_TYPE)
                .map(|e| {
                    let fence = e
                        .fence_id
                        .and_then(|id| snapshot.fence_name(id))
                        .map(str::to_owned);
                    let duration = e.end_utc.unwrap_or(now).min(now) - e.start_utc;
                    EventOut {
                        placa: plates.get(&e.vehicle_id).copied().unwrap_or("?").to_owned(),
                        inicio: iso(
                            &snapshot,
                            if kind == Kind::GeocercaSalida {
                                e.end_utc.unwrap_or(e.start_utc)
                            } else {
                                e.start_utc
                            },
                        ),
                        fin: if kind.routine() {
                            None
                        } else {
                            e.end_utc.map(|t| iso(&snapshot, t))
                        },
                        ubicacion: if kind.routine() {
                            fence.clone().unwrap_or_default()
                        } else {
                            place(&snapshot, e.lat, e.lon)
                        },
                        minutos: (!kind.routine()).then(|| minutes(duration)),
                        velocidad_max_kmh: e.max_kmh.map(round1),
                        limite_kmh: e.limit_kmh,
                        exceso_kmh: match (e.max_kmh, e.limit_kmh) {
                            (Some(max), Some(limit)) => Some(round1(max - limit)),
                            _ => None,
                        },
                        geocerca: fence,
                    }
                })
                .collect();
            detalle.push(Detail {
                tipo: kind.name().into(),
                total: por_tipo.get(kind),
                eventos,
            });
        }
        let total_eventos = Kind::ALL.iter().map(|k| por_tipo.get(*k)).sum();
        let nota = (params.tipo.is_none() && por_tipo.geocerca_entrada + por_tipo.geocerca_salida > 0).then(|| {
            "Las entradas y salidas de geocercas se cuentan pero no se detallan; pida tipo geocerca_entrada o geocerca_salida para verlas.".to_owned()
        });
        Ok(Reply::new(Output {
            fecha_inicio: start.to_string(),
            fecha_fin: end.to_string(),
            zona_horaria: snapshot.zone_name(),
            tipo: params.tipo.map_or("todos", Kind::name).into(),
            total_eventos,
            por_tipo,
            total_unidades,
            por_unidad,
            detalle,
            nota,
            aviso,
        }))
    }
}
