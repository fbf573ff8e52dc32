//! An event's evidence as the tools show it: `evidencia`, one shape for every kind.
//!
//! Owns the turning of a stored event's evidence columns (`eventos.primer_reporte_utc` …
//! `umbral_valor`, written by the analysis from `engine::Evidence`) into Spanish fields and
//! words: which reports the detection used, the measure held to a threshold, and what is an
//! estimate rather than a report. Every tool that lists stops, speeding, signal losses or
//! visits, and the map views, show this same object. Decides nothing about the events.

use chrono_tz::Tz;
use schemars::JsonSchema;
use serde::Serialize;

use super::dates;
use crate::engine::{DetectionConfig, EventKind};
use crate::store::EventRow;

/// A threshold a detection was held to, by its `[deteccion]` name.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Umbral {
    #[schemars(
        description = "Clave de [deteccion]: parada_radio_m (paradas), limite_kmh+exceso_tolerancia_kmh (excesos), perdida_senal_s (pérdidas de señal), geocerca_confirmacion_s (visitas), parada_prolongada_min (paradas prolongadas)"
    )]
    pub nombre: String,
    #[schemars(description = "Valor aplicado, en la unidad que dice el nombre")]
    pub valor: f64,
}

/// Why an event was detected, so an operator (or the model) can check a doubtful one.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Evidencia {
    #[schemars(
        description = "Primer reporte en que se basa la detección, hora local con desplazamiento"
    )]
    pub primer_reporte: String,
    #[schemars(description = "El mismo, en segundos Unix (UTC)")]
    pub primer_reporte_utc: i64,
    #[schemars(description = "Último reporte en que se basa, hora local con desplazamiento")]
    pub ultimo_reporte: String,
    pub ultimo_reporte_utc: i64,
    #[schemars(
        description = "Reportes usados: en una parada, los detenidos dentro del radio; en un exceso, los que superaron el límite; en una visita, los que cayeron dentro; en una pérdida de señal, el anterior y el posterior al silencio"
    )]
    pub reportes: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(
        description = "Paradas: lo más lejos que cayó un reporte del centro de la parada, metros"
    )]
    pub radio_m: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(description = "Excesos: la velocidad más alta reportada, km/h")]
    pub velocidad_max_kmh: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(description = "Pérdidas de señal: minutos sin reportes (hasta ahora si sigue)")]
    pub silencio_min: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(
        description = "Visitas: cuántos metros hacia dentro del borde estuvo el reporte más adentro"
    )]
    pub distancia_al_borde_m: Option<f64>,
    #[schemars(description = "El umbral con que se detectó")]
    pub umbral: Umbral,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(description = "Paradas prolongadas: la duración mínima de una alerta")]
    pub umbral_prolongada: Option<Umbral>,
    #[schemars(
        description = "El inicio es una estimación anterior al primer reporte (fechado hacia atrás desde el último reporte en movimiento, o interpolado en el cruce de un límite o un borde)"
    )]
    pub inicio_estimado: bool,
    #[schemars(description = "El fin es una estimación posterior al último reporte")]
    pub fin_estimado: bool,
    #[schemars(description = "Sigue en curso: sin fin todavía; los minutos cuentan hasta ahora")]
    pub en_curso: bool,
    #[schemars(
        description = "Ya estaba en curso en el primer reporte de los datos: el inicio real es anterior y los minutos son un mínimo"
    )]
    pub desde_antes_de_los_datos: bool,
    #[schemars(description = "Lo estimado, en palabras; vacío si todo son reportes")]
    pub estimaciones: Vec<String>,
}

impl Evidencia {
    /// The evidence of `e`, a unit's event in `zone`, as of `now_utc`.
    pub fn of(e: &EventRow, zone: Tz, now_utc: i64, config: &DetectionConfig) -> Evidencia {
        let measure = |kind: EventKind| (e.kind == kind).then_some(round1(e.measure));
        let long_s = config.parada_prolongada_min * 60.0;
        let lasted_s = (e.end_utc.unwrap_or(now_utc) - e.start_utc) as f64;
        let long = e.kind == EventKind::Stop && !e.end_of_day && lasted_s >= long_s;
        let inicio_estimado = !e.from_data_start && e.start_utc < e.first_fix_utc;
        let fin_estimado = e.end_utc.is_some_and(|end| end > e.last_fix_utc);
        let mut estimaciones = Vec::new();
        if e.from_data_start {
            estimaciones.push(
                "empezó antes de los datos: el inicio real es anterior y los minutos son un mínimo"
                    .to_owned(),
            );
        }
        if inicio_estimado {
            let back_s = e.first_fix_utc - e.start_utc;
            let across = if back_s as f64 > config.perdida_senal_s {
                ", a través de un silencio de los reportes"
            } else {
                ""
            };
            estimaciones.push(format!(
                "inicio estimado {} antes del primer reporte{across}",
                span(back_s)
            ));
        }
        if let Some(end) = e.end_utc.filter(|_| fin_estimado) {
            estimaciones.push(format!(
                "fin estimado {} después del último reporte",
                span(end - e.last_fix_utc)
            ));
        }
        if e.end_utc.is_none() {
            estimaciones.push(format!(
                "sigue en curso a las {}: sin fin todavía, los minutos cuentan hasta ahora",
                dates::clock_hm(zone, now_utc)
            ));
        }
        Evidencia {
            primer_reporte: dates::iso(zone, e.first_fix_utc),
            primer_reporte_utc: e.first_fix_utc,
            ultimo_reporte: dates::iso(zone, e.last_fix_utc),
            ultimo_reporte_utc: e.last_fix_utc,
            reportes: e.fixes,
            radio_m: measure(EventKind::Stop),
            velocidad_max_kmh: measure(EventKind::Overspeed),
            silencio_min: (e.kind == EventKind::Gap)
                .then(|| round1((e.end_utc.unwrap_or(now_utc) - e.start_utc).max(0) as f64 / 60.0)),
            distancia_al_borde_m: measure(EventKind::Visit),
            umbral: Umbral {
                nombre: e.threshold.clone(),
                valor: round1(e.threshold_value),
            },
            umbral_prolongada: long.then(|| Umbral {
                nombre: "parada_prolongada_min".into(),
                valor: config.parada_prolongada_min,
            }),
            inicio_estimado,
            fin_estimado,
            en_curso: e.end_utc.is_none(),
            desde_antes_de_los_datos: e.from_data_start,
            estimaciones,
        }
    }
}

/// A short span in words: seconds under two minutes, else minutes.
fn span(seconds: i64) -> String {
    if seconds < 120 {
        format!("{seconds} s")
    } else {
        format!("{} min", round1(seconds as f64 / 60.0))
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}
