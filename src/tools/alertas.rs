//! `alertas`: the fleet's alerts over a range of days — counts per type and unit, and the
//! most serious of each type.
//!
//! Owns the alert view. Types: `exceso_velocidad`, `parada_prolongada`, `perdida_senal`,
//! `geocerca_entrada`, `geocerca_salida`. Severity is ordered within each type by what matters
//! for it (km/h over the limit, minutes stopped, minutes silent), not by one score summing
//! km/h and minutes, which would let a long stop outrank a dangerous speed. Geofence
//! crossings are counted always but detailed only when asked for, as they are routine. The
//! dates are read in the fleet's zone; each unit's events are those of its own local days (a
//! fleet in two zones is queried once per zone), shown on its own clock.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono_tz::Tz;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    AVISO, DateRange, EVIDENCE, MAX_ROWS, ZONES, before_data_note, is_false, iso, minutes, place,
    round1, stop_before_data_note,
};
use crate::engine::{EventKind, LONG_STOP};
use crate::fleet::{Evidencia, Fleet, Snapshot, day_bounds, lasts_long};
use crate::mcp::{CallContext, Reply, ToolError, TypedTool};
use crate::store::{AlertKey, EventRow, Store, StoreError};

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

    /// The word of the argument and the answer: the engine's for the kinds it stores.
    fn name(self) -> &'static str {
        match self {
            Kind::ExcesoVelocidad => EventKind::Overspeed.name(),
            Kind::ParadaProlongada => LONG_STOP,
            Kind::PerdidaSenal => EventKind::Gap.name(),
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
    #[serde(flatten)]
    pub dias: DateRange,
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

    fn routine(&self) -> usize {
        self.geocerca_entrada + self.geocerca_salida
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
    #[serde(skip_serializing_if = "is_false")]
    #[schemars(
        description = "Solo si ya estaba en curso en el primer reporte de los datos: el inicio real es anterior y los minutos son un mínimo"
    )]
    pub desde_antes_de_los_datos: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nota: Option<String>,
    #[schemars(description = EVIDENCE)]
    pub evidencia: Evidencia,
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
    #[schemars(description = "Alertas del tipo pedido (de todos si no se pidió uno)")]
    pub total_eventos: usize,
    #[schemars(description = "Cuántas hubo de cada tipo en el rango, se haya pedido un tipo o no")]
    pub por_tipo: Counts,
    #[schemars(
        description = "Unidades con alertas (o con cruces de geocerca si se pidió ese tipo)"
    )]
    pub total_unidades: usize,
    pub por_unidad: Vec<UnitCounts>,
    pub detalle: Vec<Detail>,
    pub nota: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(description = ZONES)]
    pub nota_zonas: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(description = AVISO)]
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
         el detalle de las más graves de cada tipo, cada una con su evidencia (reportes usados, \
         umbral aplicado y qué es estimado). Fechas: AAAA-MM-DD, hoy, ayer, anteayer o un \
         día de la semana; rango de hasta 93 días. Ejemplos: «¿qué excesos de velocidad hubo \
         esta semana?», «¿hubo alertas ayer?»"
            .into()
    }

    fn call(&self, params: Params, _: &CallContext) -> Result<Reply<Output>, ToolError> {
        let snapshot = self.fleet.snapshot()?;
        let (start, end) = params.dias.resolve(&snapshot)?;
        let aviso = snapshot.detections(None)?;
        let now = snapshot.now_utc;
        let long_s = (snapshot.meta.config.parada_prolongada_min * 60.0) as i64;
        // One range per zone: each unit's own local days.
        let ranges: Vec<(Range, Vec<i64>)> = snapshot
            .zones()
            .into_iter()
            .map(|zone| {
                let (from, _) = day_bounds(zone, start);
                let (_, to) = day_bounds(zone, end);
                let ids = snapshot
                    .vehicles
                    .iter()
                    .filter(|v| v.zone == zone)
                    .map(|v| v.id)
                    .collect();
                let range = Range {
                    from,
                    to: to.min(now + 1),
                    now,
                    long_s,
                };
                (range, ids)
            })
            .collect();
        // The keys of every alert, then the rows of the few shown, in one read of the file.
        let (found, shown) = self.fleet.query(|store| {
            store.read_consistently(|store| {
                let mut found = Found::default();
                for (range, ids) in &ranges {
                    found.add(collect(store, range, params.tipo)?, ids);
                }
                let shown = most_serious(store, &found, params.tipo, now)?;
                Ok((found, shown))
            })
        })?;
        // Every type is counted whatever `tipo` asks for: a zero in `por_tipo` is a zero.
        let por_tipo = Tally::of(&found).por_tipo;
        let found = found.only(params.tipo);
        let plates: Plates = snapshot
            .vehicles
            .iter()
            .map(|v| (v.id, (v.plate.as_str(), v.zone)))
            .collect();
        let tally = Tally::of(&found);
        let crossings_asked = params.tipo.is_some_and(Kind::routine);
        let (por_unidad, total_unidades) = units(&plates, tally.by_unit, crossings_asked);
        let detalle = detail(&snapshot, &plates, shown, found, &tally.por_tipo, now);
        let total_eventos = Kind::ALL.iter().map(|k| tally.por_tipo.get(*k)).sum();
        let nota = (params.tipo.is_none() && por_tipo.routine() > 0).then(|| {
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
            nota_zonas: snapshot.zones_note(),
            aviso,
        }))
    }
}

/// The range asked for in UTC (`to` clipped at the fleet's now), and how long a stop must
/// last to be an alert.
struct Range {
    from: i64,
    to: i64,
    now: i64,
    long_s: i64,
}

/// What the store holds for the range: alerts proper as keys (enough to count and rank them);
/// geofence crossings, routine and numerous, as counts per vehicle plus the first few rows
/// when they are what was asked for.
#[derive(Default)]
struct Found {
    alerts: Vec<(Kind, AlertKey)>,
    crossings: Vec<Crossings>,
}

impl Found {
    /// Adds what one zone's range found, kept to that zone's vehicles `ids`.
    fn add(&mut self, zone: Found, ids: &[i64]) {
        let mine = |vehicle: i64| ids.contains(&vehicle);
        self.alerts
            .extend(zone.alerts.into_iter().filter(|(_, e)| mine(e.vehicle_id)));
        for crossings in zone.crossings {
            let per_vehicle = crossings.per_vehicle.into_iter().filter(|(v, _)| mine(*v));
            let first = crossings.first.into_iter().filter(|e| mine(e.vehicle_id));
            match self.crossings.iter_mut().find(|c| c.kind == crossings.kind) {
                Some(kept) => {
                    kept.per_vehicle.extend(per_vehicle);
                    kept.first.extend(first);
                    kept.first.sort_by_key(|e| e.start_utc);
                    kept.first.truncate(DETAIL_PER_TYPE);
                }
                None => self.crossings.push(Crossings {
                    kind: crossings.kind,
                    per_vehicle: per_vehicle.collect(),
                    first: first.collect(),
                }),
            }
        }
    }

    /// Only the type asked for (all when none was).
    fn only(mut self, tipo: Option<Kind>) -> Found {
        let wanted = |kind: Kind| tipo.is_none_or(|t| t == kind);
        self.alerts.retain(|(kind, _)| wanted(*kind));
        self.crossings.retain(|c| wanted(c.kind));
        self
    }
}

struct Crossings {
    kind: Kind,
    per_vehicle: Vec<(i64, usize)>,
    first: Vec<EventRow>,
}

/// Every type in the range; the first crossings rows only when `tipo` asks for crossings.
fn collect(store: &Store, range: &Range, tipo: Option<Kind>) -> Result<Found, StoreError> {
    let Range {
        from,
        to,
        now,
        long_s,
    } = *range;
    let mut alerts: Vec<(Kind, AlertKey)> = Vec::new();
    for (kind, stored) in [
        (Kind::ExcesoVelocidad, EventKind::Overspeed),
        (Kind::PerdidaSenal, EventKind::Gap),
    ] {
        let keys = store.alert_keys(stored, from, to)?;
        alerts.extend(keys.into_iter().map(|e| (kind, e)));
    }
    // The keys are of candidates only (not end-of-day parking; flagged long or still open).
    let long = store
        .long_stop_keys(from, to)?
        .into_iter()
        .filter(|s| s.start_utc >= from && lasts_long(s.start_utc, s.end_utc, now, long_s));
    alerts.extend(long.map(|e| (Kind::ParadaProlongada, e)));
    let mut crossings = Vec::new();
    for (kind, exits) in [(Kind::GeocercaEntrada, false), (Kind::GeocercaSalida, true)] {
        let per_vehicle = store.crossings_by_vehicle(exits, from, to)?;
        let first = if tipo == Some(kind) {
            store.first_crossings(exits, from, to, DETAIL_PER_TYPE)?
        } else {
            Vec::new()
        };
        crossings.push(Crossings {
            kind,
            per_vehicle,
            first,
        });
    }
    Ok(Found { alerts, crossings })
}

/// Counts per type, and per vehicle id: (alerts proper, counts per type).
struct Tally {
    por_tipo: Counts,
    by_unit: BTreeMap<i64, (usize, Counts)>,
}

impl Tally {
    fn of(found: &Found) -> Tally {
        let mut por_tipo = Counts::default();
        let mut by_unit: BTreeMap<i64, (usize, Counts)> = BTreeMap::new();
        for (kind, event) in &found.alerts {
            por_tipo.add(*kind, 1);
            let unit = by_unit.entry(event.vehicle_id).or_default();
            unit.1.add(*kind, 1);
            unit.0 += 1;
        }
        for crossings in &found.crossings {
            for (vehicle, n) in &crossings.per_vehicle {
                por_tipo.add(crossings.kind, *n);
                by_unit
                    .entry(*vehicle)
                    .or_default()
                    .1
                    .add(crossings.kind, *n);
            }
        }
        Tally { por_tipo, by_unit }
    }
}

/// The units with alerts, most first, with their total before the cut. Units with nothing
/// but routine crossings are listed only when crossings were asked for.
fn units(
    plates: &Plates,
    by_unit: BTreeMap<i64, (usize, Counts)>,
    crossings_asked: bool,
) -> (Vec<UnitCounts>, usize) {
    let mut por_unidad: Vec<UnitCounts> = by_unit
        .into_iter()
        .filter(|(_, (alerts, _))| *alerts > 0 || crossings_asked)
        .map(|(id, (alerts, counts))| UnitCounts {
            placa: plate(plates, id),
            alertas: alerts,
            por_tipo: counts,
        })
        .collect();
    por_unidad.sort_by(|a, b| {
        b.alertas
            .cmp(&a.alertas)
            .then(b.por_tipo.routine().cmp(&a.por_tipo.routine()))
            .then_with(|| a.placa.cmp(&b.placa))
    });
    let total = por_unidad.len();
    por_unidad.truncate(MAX_ROWS);
    (por_unidad, total)
}

/// Plates and zones by vehicle id.
type Plates<'a> = BTreeMap<i64, (&'a str, Tz)>;

fn plate(plates: &Plates, vehicle_id: i64) -> String {
    plates.get(&vehicle_id).map_or("?", |p| p.0).to_owned()
}

/// The zone of a vehicle's clock (the fleet's for an unknown id).
fn zone(snapshot: &Snapshot, plates: &Plates, vehicle_id: i64) -> Tz {
    plates.get(&vehicle_id).map_or(snapshot.zone(), |p| p.1)
}

/// The most serious alerts of each type asked for (all types when none was), read whole:
/// most serious first within each type, ties in the store's order.
fn most_serious(
    store: &Store,
    found: &Found,
    tipo: Option<Kind>,
    now: i64,
) -> Result<Vec<(Kind, EventRow)>, StoreError> {
    let mut keys: Vec<&(Kind, AlertKey)> = found
        .alerts
        .iter()
        .filter(|(kind, _)| tipo.is_none_or(|t| t == *kind))
        .collect();
    keys.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(severity(b.0, &b.1, now).cmp(&severity(a.0, &a.1, now)))
    });
    let mut chosen: Vec<(Kind, i64)> = Vec::new();
    for (kind, key) in keys {
        if chosen.iter().filter(|(k, _)| k == kind).count() < DETAIL_PER_TYPE {
            chosen.push((*kind, key.id));
        }
    }
    let ids: Vec<i64> = chosen.iter().map(|(_, id)| *id).collect();
    let rows = store.events_by_id(&ids)?;
    // Read in the same transaction as the keys, so every id is found.
    Ok(chosen.into_iter().map(|(kind, _)| kind).zip(rows).collect())
}

/// The most serious events of each type found (`shown`, ranked), and the first crossings
/// when asked for.
fn detail(
    snapshot: &Snapshot,
    plates: &Plates,
    shown: Vec<(Kind, EventRow)>,
    found: Found,
    por_tipo: &Counts,
    now: i64,
) -> Vec<Detail> {
    let mut events = shown;
    for crossings in found.crossings {
        let kind = crossings.kind;
        events.extend(crossings.first.into_iter().map(|e| (kind, e)));
    }
    Kind::ALL
        .into_iter()
        .filter_map(|kind| {
            let eventos: Vec<EventOut> = events
                .iter()
                .filter(|(k, _)| *k == kind)
                .take(DETAIL_PER_TYPE)
                .map(|(_, e)| event_out(snapshot, plates, kind, e, now))
                .collect();
            (!eventos.is_empty()).then(|| Detail {
                tipo: kind.name().into(),
                total: por_tipo.get(kind),
                eventos,
            })
        })
        .collect()
}

/// How serious an event is within its type: km/h over the limit (then duration) for speed,
/// duration for stops and silences; crossings keep their time order.
fn severity(kind: Kind, e: &AlertKey, now: i64) -> i64 {
    let duration = e.end_utc.unwrap_or(now).min(now) - e.start_utc;
    match kind {
        Kind::ExcesoVelocidad => {
            ((e.max_kmh.unwrap_or(0.0) - e.limit_kmh.unwrap_or(0.0)) * 100.0) as i64 * 100_000
                + duration
        }
        Kind::ParadaProlongada | Kind::PerdidaSenal => duration,
        Kind::GeocercaEntrada | Kind::GeocercaSalida => 0,
    }
}

fn event_out(snapshot: &Snapshot, plates: &Plates, kind: Kind, e: &EventRow, now: i64) -> EventOut {
    let fence = e
        .fence_id
        .and_then(|id| snapshot.fence_name(id))
        .map(str::to_owned);
    let duration = e.end_utc.unwrap_or(now).min(now) - e.start_utc;
    // An exit is shown at the time the unit left.
    let shown_utc = if kind == Kind::GeocercaSalida {
        e.end_utc.unwrap_or(e.start_utc)
    } else {
        e.start_utc
    };
    let zone = zone(snapshot, plates, e.vehicle_id);
    EventOut {
        placa: plate(plates, e.vehicle_id),
        inicio: iso(zone, shown_utc),
        fin: if kind.routine() {
            None
        } else {
            e.end_utc.map(|t| iso(zone, t))
        },
        ubicacion: if kind.routine() {
            fence.clone().unwrap_or_default()
        } else {
            place(snapshot, e.lat, e.lon)
        },
        minutos: (!kind.routine()).then(|| minutes(duration)),
        velocidad_max_kmh: e.max_kmh.map(round1),
        limite_kmh: e.limit_kmh,
        exceso_kmh: match (e.max_kmh, e.limit_kmh) {
            (Some(max), Some(limit)) => Some(round1(max - limit)),
            _ => None,
        },
        geocerca: fence,
        desde_antes_de_los_datos: e.from_data_start,
        nota: match e.kind {
            EventKind::Visit => before_data_note(e.from_data_start),
            _ => stop_before_data_note(e.from_data_start),
        },
        evidencia: Evidencia::of(e, zone, now, &snapshot.meta.config),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The argument's words (serde's, from the variants) are the ones the answer shows and
    /// the counts are keyed by.
    #[test]
    fn each_kind_has_one_word() {
        for kind in Kind::ALL {
            let parsed: Kind = serde_json::from_value(serde_json::json!(kind.name())).unwrap();
            assert_eq!(parsed, kind);
            let mut counts = Counts::default();
            counts.add(kind, 1);
            let json = serde_json::to_value(&counts).unwrap();
            assert_eq!(json[kind.name()], 1, "{json}");
            assert_eq!(counts.get(kind), 1);
        }
    }

    #[test]
    fn the_range_is_part_of_the_arguments() {
        let parse = |v| serde_json::from_value::<Params>(v);
        let ok = parse(serde_json::json!({"tipo": "perdida_senal", "fecha_inicio": "hoy", "fecha_fin": "ayer"})).unwrap();
        assert_eq!(
            (
                ok.tipo,
                ok.dias.fecha_inicio.as_str(),
                ok.dias.fecha_fin.as_str()
            ),
            (Some(Kind::PerdidaSenal), "hoy", "ayer")
        );
        assert!(
            parse(serde_json::json!({"fecha_inicio": "hoy", "fecha_fin": "hoy", "otro": 1}))
                .is_err()
        );
        assert!(parse(serde_json::json!({"fecha_inicio": "hoy"})).is_err());
    }
}
