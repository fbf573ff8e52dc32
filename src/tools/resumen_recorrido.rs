//! `resumen_recorrido`: one unit's day — kilometres, departure and return, stops with places,
//! signal losses, speeding, geofence visits.
//!
//! Owns the day view. Figures come from the engine's daily aggregates and events (computed from
//! positions alone); the day is the local date in the unit's zone (a night shift's hours after
//! midnight belong to the next day), and times are local to it.
//! Stops listed are those within the working window (first departure to last arrival), so
//! the night's parking does not count as a stop.

use std::sync::Arc;

use chrono::NaiveDate;
use chrono_tz::Tz;
use schemars::JsonSchema;
use serde::Serialize;

use super::common::{
    AVISO, BEFORE_DATA, EVIDENCE, STOP_BEFORE_DATA, before_data_note, cap, capped, clock, is_false,
    minutes, place, round1, stop_before_data_note,
};
use crate::fleet::{
    Evidencia, Fleet, Snapshot, dates, day_bounds, is_working_stop, no_reports, working_window,
};
use crate::mcp::{CallContext, Reply, ToolError, TypedTool};
use crate::store::{DayRow, EventRow};

pub struct ResumenRecorrido {
    pub fleet: Arc<Fleet>,
}

/// One unit's day: the same arguments as `resumen_recorrido` and `mapa_recorrido`.
pub use super::common::UnitDay as Params;

#[derive(Serialize, JsonSchema)]
pub struct StopOut {
    pub inicio: String,
    #[schemars(description = "Fin de la parada (HH:MM:SS), o null si sigue detenida")]
    pub fin: Option<String>,
    pub minutos: f64,
    pub lugar: String,
    #[schemars(description = "Parada prolongada (alerta)")]
    pub prolongada: bool,
    #[serde(skip_serializing_if = "is_false")]
    #[schemars(description = STOP_BEFORE_DATA)]
    pub desde_antes_de_los_datos: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nota: Option<String>,
    #[schemars(description = EVIDENCE)]
    pub evidencia: Evidencia,
}

#[derive(Serialize, JsonSchema)]
pub struct GapOut {
    #[schemars(description = "Hora del último reporte antes del silencio")]
    pub desde: String,
    #[schemars(description = "Hora del primer reporte después, o null si sigue sin señal")]
    pub hasta: Option<String>,
    pub minutos: f64,
    pub lugar: String,
    #[schemars(description = EVIDENCE)]
    pub evidencia: Evidencia,
}

#[derive(Serialize, JsonSchema)]
pub struct SpeedingOut {
    pub inicio: String,
    pub fin: Option<String>,
    pub segundos: i64,
    pub velocidad_max_kmh: f64,
    pub limite_kmh: f64,
    pub lugar: String,
    #[schemars(description = EVIDENCE)]
    pub evidencia: Evidencia,
}

#[derive(Serialize, JsonSchema)]
pub struct VisitOut {
    pub geocerca: String,
    #[schemars(description = "Entrada (HH:MM:SS), o null si ya estaba dentro al empezar el día")]
    pub entrada: Option<String>,
    #[schemars(description = "Salida (HH:MM:SS), o null si seguía dentro al terminar el día")]
    pub salida: Option<String>,
    pub minutos_dentro: f64,
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
    pub conductor: String,
    pub fecha: String,
    pub dia_semana: String,
    pub zona_horaria: String,
    pub kilometros: f64,
    #[schemars(
        description = "Primera salida del día (HH:MM:SS); null si no se movió o si el día empezó con la unidad en ruta (ver salida)"
    )]
    pub hora_salida: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(
        description = "Solo si el día empezó con la unidad en ruta (un turno del día anterior que cruza la medianoche): por qué no hay hora de salida"
    )]
    pub salida: Option<String>,
    #[schemars(
        description = "Última llegada del día (HH:MM:SS); null si no se movió, si sigue fuera ahora o si el día terminó con la unidad en ruta (ver retorno)"
    )]
    pub hora_retorno: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(
        description = "Solo si la unidad sigue fuera ahora (en ruta o detenida sin haber terminado la jornada) o seguía en ruta al terminar el día (un turno que cruza la medianoche): por qué no hay hora de retorno"
    )]
    pub retorno: Option<String>,
    #[schemars(
        description = "Minutos entre el primer y el último movimiento del día; en un día que empieza o termina en ruta (turnos que cruzan la medianoche) abarca partes de dos jornadas"
    )]
    pub duracion_jornada_min: f64,
    pub minutos_en_movimiento: f64,
    pub velocidad_maxima_kmh: f64,
    #[schemars(description = "Kilómetros entre horas en movimiento")]
    pub velocidad_promedio_kmh: f64,
    pub numero_paradas: usize,
    pub minutos_total_paradas: f64,
    pub paradas: Vec<StopOut>,
    pub perdidas_de_senal: Vec<GapOut>,
    pub excesos_de_velocidad: Vec<SpeedingOut>,
    pub geocercas: Vec<VisitOut>,
    pub reportes_recibidos: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(description = AVISO)]
    pub aviso: Option<String>,
}

impl TypedTool for ResumenRecorrido {
    type Params = Params;
    type Output = Output;

    fn name(&self) -> &'static str {
        "resumen_recorrido"
    }
    fn title(&self) -> &'static str {
        "Resumen del recorrido de un día"
    }
    fn description(&self) -> String {
        "Resumen del día de una unidad: kilómetros, hora de salida y de regreso, tiempo en \
         movimiento, paradas con lugar y duración, pérdidas de señal, excesos de velocidad, \
         geocercas visitadas, velocidad máxima y promedio; cada evento con su evidencia \
         (reportes usados, umbral aplicado y qué es estimado). Fechas: AAAA-MM-DD, hoy, ayer, \
         anteayer o un día de la semana. Ejemplos: «dame el recorrido de ayer de P-456DEF», \
         «¿cuánto tiempo estuvo parada P-901CDF el lunes?»"
            .into()
    }

    fn call(&self, params: Params, _: &CallContext) -> Result<Reply<Output>, ToolError> {
        let snapshot = self.fleet.snapshot()?;
        let vehicle = snapshot.vehicle(&params.placa)?.clone();
        let date = snapshot.date_for(&vehicle, "fecha", &params.fecha)?;
        let aviso = snapshot.detections(Some(&vehicle))?;
        let zone = vehicle.zone;
        let (from, day_end) = day_bounds(zone, date);
        let to = day_end.min(snapshot.now_utc + 1);
        let (day, events) = self.fleet.query(|store| {
            Ok((
                store.day(vehicle.id, date)?,
                store.vehicle_events_by_kind(vehicle.id, from, to)?,
            ))
        })?;
        let Some(day) = day.filter(|d| d.fixes > 0) else {
            return Err(no_reports(&vehicle, date, aviso.as_deref()));
        };
        let view = DayView {
            snapshot: &snapshot,
            zone,
            from,
            to,
        };
        let window = working_window(&day, from, to);
        let mut paradas = view.stops(&events.stops, window);
        // Summed before rounding, as `mapa_recorrido` sums them: one figure in both.
        let stop_seconds: i64 = events
            .stops
            .iter()
            .filter(|s| is_working_stop(s, window))
            .map(|s| {
                let (a, b) = view.clip(s.start_utc, s.end_utc);
                (b - a).max(0)
            })
            .sum();
        let stop_minutes = stop_seconds as f64 / 60.0;
        let numero_paradas = cap(&mut paradas);
        let moving_h = day.moving_min / 60.0;
        // Today, after leaving, and not parked for the day (the ignition went off at its
        // open stop): the last arrival so far is no return.
        let now = snapshot.now_utc;
        let still_out = (from..day_end).contains(&now)
            && day.first_move_utc.is_some()
            && !events
                .stops
                .iter()
                .any(|s| s.end_utc.is_none() && s.end_of_day);
        let ends = Ends::of(&day, date, zone, (from, day_end), still_out);
        Ok(Reply::new(Output {
            placa: vehicle.plate.clone(),
            conductor: vehicle.driver.clone(),
            fecha: date.to_string(),
            dia_semana: dates::weekday_es(date).into(),
            zona_horaria: zone.name().to_owned(),
            kilometros: round1(day.km),
            hora_salida: ends.hora_salida,
            salida: ends.salida,
            hora_retorno: ends.hora_retorno,
            retorno: ends.retorno,
            duracion_jornada_min: match (day.first_move_utc, day.last_move_utc) {
                (Some(a), Some(b)) => minutes(b - a),
                _ => 0.0,
            },
            minutos_en_movimiento: round1(day.moving_min),
            velocidad_maxima_kmh: round1(day.max_speed_kmh),
            velocidad_promedio_kmh: if moving_h > 0.0 {
                round1(day.km / moving_h)
            } else {
                0.0
            },
            numero_paradas,
            minutos_total_paradas: round1(stop_minutes),
            paradas,
            perdidas_de_senal: capped(view.gaps(&events.gaps)),
            excesos_de_velocidad: capped(view.speeding(&events.overspeeds)),
            geocercas: capped(view.visits(&events.visits)),
            reportes_recibidos: day.fixes,
            aviso,
        }))
    }
}

/// A day's departure and return times, or the words saying why one is missing.
struct Ends {
    hora_salida: Option<String>,
    salida: Option<String>,
    hora_retorno: Option<String>,
    retorno: Option<String>,
}

impl Ends {
    /// `still_out`: today, after leaving, and not parked for the day.
    fn of(
        day: &DayRow,
        date: NaiveDate,
        zone: Tz,
        (from, day_end): (i64, i64),
        still_out: bool,
    ) -> Ends {
        // Still driving when the day ended (a night shift past midnight): the engine clips
        // the trip at the day's end, which `clock` would show as "00:00:00", the next day's
        // midnight read as this day's (and on a day that starts at 01:00, an hour it lacks).
        // It did not return that day.
        let out_at_day_end = day.last_move_utc.is_some_and(|t| t >= day_end);
        // The same at the other end: already driving when the day began (yesterday's night
        // shift), the trip is clipped at the day's first instant, which would read as a
        // departure at "00:00:00" (or "01:00:00" where the clocks jump over midnight). It did
        // not leave then.
        let out_at_day_start = day.first_move_utc.is_some_and(|t| t <= from);
        let named = |d: Option<NaiveDate>| {
            d.map_or_else(String::new, |d| format!("{} {d}", dates::weekday_es(d)))
        };
        Ends {
            hora_salida: day
                .first_move_utc
                .filter(|_| !out_at_day_start)
                .map(|t| clock(zone, t)),
            salida: out_at_day_start.then(|| {
                format!(
                    "ya estaba en ruta al empezar el día: la jornada viene del {} (cruza la \
                     medianoche)",
                    named(date.pred_opt())
                )
            }),
            hora_retorno: day
                .last_move_utc
                .filter(|_| !still_out && !out_at_day_end)
                .map(|t| clock(zone, t)),
            retorno: if still_out {
                Some(
                    "sigue fuera: no ha vuelto ni terminado la jornada (en ruta o detenida con \
                     el motor encendido)"
                        .to_owned(),
                )
            } else if out_at_day_end {
                Some(format!(
                    "sigue en ruta al terminar el día: la jornada continúa el {} (cruza la \
                     medianoche)",
                    named(date.succ_opt())
                ))
            } else {
                None
            },
        }
    }
}

/// The local day `[from, to)` (`to` clipped at the fleet's now) the lists are shown in.
struct DayView<'a> {
    snapshot: &'a Snapshot,
    /// The unit's zone: its day and the times shown.
    zone: Tz,
    from: i64,
    to: i64,
}

impl DayView<'_> {
    /// An interval's part inside the day; an open one lasts until now.
    fn clip(&self, start: i64, end: Option<i64>) -> (i64, i64) {
        (
            start.max(self.from),
            end.unwrap_or(self.snapshot.now_utc).min(self.to),
        )
    }

    fn clock(&self, ts_utc: i64) -> String {
        clock(self.zone, ts_utc)
    }

    fn place(&self, e: &EventRow) -> String {
        place(self.snapshot, e.lat, e.lon)
    }

    fn evidence(&self, e: &EventRow) -> Evidencia {
        Evidencia::of(
            e,
            self.zone,
            self.snapshot.now_utc,
            &self.snapshot.meta.config,
        )
    }

    /// The day's stops ([`is_working_stop`]).
    fn stops(&self, stops: &[EventRow], window: (i64, i64)) -> Vec<StopOut> {
        stops
            .iter()
            .filter(|s| is_working_stop(s, window))
            .map(|s| {
                let (a, b) = self.clip(s.start_utc, s.end_utc);
                StopOut {
                    inicio: self.clock(s.start_utc),
                    fin: s.end_utc.map(|e| self.clock(e)),
                    minutos: minutes(b - a),
                    lugar: self.place(s),
                    prolongada: self.snapshot.is_long_stop(s),
                    desde_antes_de_los_datos: s.from_data_start,
                    nota: stop_before_data_note(s.from_data_start),
                    evidencia: self.evidence(s),
                }
            })
            .collect()
    }

    fn gaps(&self, gaps: &[EventRow]) -> Vec<GapOut> {
        let now = self.snapshot.now_utc;
        gaps.iter()
            .map(|g| GapOut {
                desde: self.clock(g.start_utc),
                hasta: g.end_utc.map(|e| self.clock(e)),
                minutos: minutes(g.end_utc.unwrap_or(now) - g.start_utc),
                lugar: self.place(g),
                evidencia: self.evidence(g),
            })
            .collect()
    }

    fn speeding(&self, episodes: &[EventRow]) -> Vec<SpeedingOut> {
        let now = self.snapshot.now_utc;
        episodes
            .iter()
            .map(|e| SpeedingOut {
                inicio: self.clock(e.start_utc),
                fin: e.end_utc.map(|x| self.clock(x)),
                segundos: e.end_utc.unwrap_or(now) - e.start_utc,
                velocidad_max_kmh: round1(e.max_kmh.unwrap_or(0.0)),
                limite_kmh: e.limit_kmh.unwrap_or(0.0),
                lugar: self.place(e),
                evidencia: self.evidence(e),
            })
            .collect()
    }

    fn visits(&self, visits: &[EventRow]) -> Vec<VisitOut> {
        visits
            .iter()
            .map(|v| {
                let (a, b) = self.clip(v.start_utc, v.end_utc);
                VisitOut {
                    geocerca: v
                        .fence_id
                        .and_then(|id| self.snapshot.fence_name(id))
                        .unwrap_or("?")
                        .to_owned(),
                    entrada: (v.start_utc >= self.from && !v.from_data_start)
                        .then(|| self.clock(v.start_utc)),
                    salida: v.end_utc.filter(|e| *e < self.to).map(|e| self.clock(e)),
                    minutos_dentro: minutes(b - a),
                    desde_antes_de_los_datos: v.from_data_start,
                    nota: before_data_note(v.from_data_start),
                    evidencia: self.evidence(v),
                }
            })
            .collect()
    }
}
