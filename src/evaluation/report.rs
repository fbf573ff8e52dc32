//! How an evaluation reads: per-type scores with their error percentiles, misses and false
//! alarms in the fleet's local time, and the Spanish table for the terminal.
//!
//! Owns the shape of `flota evaluar`'s output (JSON field names and the text layout). Ratios
//! with nothing to count are "not applicable" — `null`, "no aplica" — never a made-up 1.0.

use chrono_tz::Tz;
use serde::Serialize;

use super::km::KmScore;
use super::matching::{Interval, Score, percentile};
use crate::fleet::dates;

/// Misses and false alarms listed per type (the counts are complete).
const LISTED: usize = 10;

/// Nearest-rank percentiles of absolute errors, seconds; `null` when no hit measured one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorStats {
    pub casos: usize,
    pub p50: Option<i64>,
    pub p95: Option<i64>,
    pub max: Option<i64>,
}

impl ErrorStats {
    fn of(errors: &[i64]) -> ErrorStats {
        ErrorStats {
            casos: errors.len(),
            p50: percentile(errors, 50),
            p95: percentile(errors, 95),
            max: percentile(errors, 100),
        }
    }

    fn text(&self) -> String {
        match (self.p50, self.p95, self.max) {
            (Some(a), Some(b), Some(c)) => format!("{a}/{b}/{c}"),
            _ => "—".into(),
        }
    }
}

/// A miss or a false alarm, in local time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Listed {
    pub placa: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geocerca: Option<String>,
    /// `null`: already under way when the data began.
    pub inicio: Option<String>,
    /// `null`: still under way at "now".
    pub fin: Option<String>,
    #[serde(skip)]
    text: String,
}

impl Listed {
    fn of(interval: &Interval, zone: Tz) -> Listed {
        let when = |ts: i64| {
            dates::local(zone, ts)
                .format("%Y-%m-%d %H:%M:%S")
                .to_string()
        };
        let start = interval
            .start
            .map_or_else(|| "desde antes de los datos".to_owned(), when);
        let end = match (interval.start, interval.end) {
            (_, None) => "en curso".to_owned(),
            (Some(s), Some(e)) if dates::local_date(zone, s) == dates::local_date(zone, e) => {
                dates::clock(zone, e)
            }
            (_, Some(e)) => when(e),
        };
        let fence = if interval.key.is_empty() {
            String::new()
        } else {
            format!(" {}", interval.key)
        };
        Listed {
            placa: interval.plate.clone(),
            geocerca: (!interval.key.is_empty()).then(|| interval.key.clone()),
            inicio: interval.start.map(|s| dates::iso(zone, s)),
            fin: interval.end.map(|e| dates::iso(zone, e)),
            text: format!("{}{fence}: {start} → {end}", interval.plate),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct TypeScore {
    pub tipo: String,
    pub verdad: usize,
    pub detectados: usize,
    pub verdaderos_positivos: usize,
    pub falsos_positivos: usize,
    pub falsos_negativos: usize,
    /// `null` when not applicable (nothing detected, nothing to find, or neither).
    pub precision: Option<f64>,
    pub exhaustividad: Option<f64>,
    pub f1: Option<f64>,
    pub error_inicio_s: ErrorStats,
    pub error_fin_s: ErrorStats,
    /// The first misses and false alarms, for debugging.
    pub no_detectados: Vec<Listed>,
    pub falsas_alarmas: Vec<Listed>,
}

impl TypeScore {
    /// `zone_of` gives each plate's zone: listings are on the unit's clock.
    pub fn new(kind: &str, score: &Score, zone_of: &dyn Fn(&str) -> Tz) -> TypeScore {
        let list = |items: &[Interval]| {
            items
                .iter()
                .take(LISTED)
                .map(|i| Listed::of(i, zone_of(&i.plate)))
                .collect()
        };
        TypeScore {
            tipo: kind.to_owned(),
            verdad: score.true_positives + score.false_negatives,
            detectados: score.true_positives + score.false_positives,
            verdaderos_positivos: score.true_positives,
            falsos_positivos: score.false_positives,
            falsos_negativos: score.false_negatives,
            precision: score.precision(),
            exhaustividad: score.recall(),
            f1: score.f1(),
            error_inicio_s: ErrorStats::of(&score.start_errors_s),
            error_fin_s: ErrorStats::of(&score.end_errors_s),
            no_detectados: list(&score.misses),
            falsas_alarmas: list(&score.false_alarms),
        }
    }
}

fn ratio(value: Option<f64>) -> String {
    value.map_or_else(|| "no aplica".into(), |v| format!("{v:.4}"))
}

/// The table of scores, then the misses and false alarms.
pub fn types_table(types: &[TypeScore]) -> String {
    let mut out = format!(
        "{:<18} {:>6} {:>6} {:>5} {:>4} {:>4} {:>9} {:>13} {:>9} {:>18} {:>18}\n",
        "tipo",
        "verdad",
        "detec",
        "VP",
        "FP",
        "FN",
        "precisión",
        "exhaustividad",
        "F1",
        "err. inicio (s)",
        "err. fin (s)"
    );
    for t in types {
        out.push_str(&format!(
            "{:<18} {:>6} {:>6} {:>5} {:>4} {:>4} {:>9} {:>13} {:>9} {:>18} {:>18}\n",
            t.tipo,
            t.verdad,
            t.detectados,
            t.verdaderos_positivos,
            t.falsos_positivos,
            t.falsos_negativos,
            ratio(t.precision),
            ratio(t.exhaustividad),
            ratio(t.f1),
            t.error_inicio_s.text(),
            t.error_fin_s.text(),
        ));
    }
    out.push_str(&format!(
        "{:>106}\n",
        "errores: mediana/p95/máximo de los aciertos"
    ));
    out
}

/// The misses and false alarms, one line each.
pub fn listings(types: &[TypeScore]) -> String {
    let mut out = String::new();
    for t in types {
        for (label, items, total) in [
            ("no detectado", &t.no_detectados, t.falsos_negativos),
            ("falsa alarma", &t.falsas_alarmas, t.falsos_positivos),
        ] {
            for item in items {
                out.push_str(&format!("  {label}  {:<18} {}\n", t.tipo, item.text));
            }
            if total > items.len() {
                out.push_str(&format!(
                    "  {label}  {:<18} … y {} más\n",
                    t.tipo,
                    total - items.len()
                ));
            }
        }
    }
    out
}

/// The kilometre lines.
pub fn km_lines(km: &KmScore, phantom_km: f64, stops_checked: usize) -> String {
    format!(
        "km por unidad-día ({} días): error medio {:.3} %, máximo {:.3} % ({}); solo GPS ({} días sin pérdida de señal): medio {:.3} %, máximo {:.3} % ({})\n\
         km fantasma con la unidad detenida: {:.3} km en {} paradas de 10 min o más\n",
        km.dias,
        km.error_medio_pct,
        km.error_max_pct,
        km.peor_dia,
        km.dias_gps,
        km.error_medio_gps_pct,
        km.error_max_gps_pct,
        km.peor_dia_gps,
        phantom_km,
        stops_checked
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone() -> Tz {
        "America/Guatemala".parse().unwrap()
    }

    #[test]
    fn listed_in_local_time_with_the_plate() {
        // 2026-08-19 13:01:47 in Guatemala (UTC−6).
        let t = 1_787_166_107;
        let check = |start: Option<i64>, end: Option<i64>, key: &str, expected: &str| {
            let interval = Interval {
                plate: "P-789GHJ".into(),
                key: key.into(),
                start,
                end,
                dont_care: false,
                slack_s: [0, 0],
            };
            assert_eq!(Listed::of(&interval, zone()).text, expected);
        };
        check(
            Some(t),
            Some(t + 764),
            "",
            "P-789GHJ: 2026-08-19 13:01:47 → 13:14:31",
        );
        check(
            Some(t),
            None,
            "",
            "P-789GHJ: 2026-08-19 13:01:47 → en curso",
        );
        check(
            None,
            Some(t),
            "CEDIS",
            "P-789GHJ CEDIS: desde antes de los datos → 2026-08-19 13:01:47",
        );
        check(
            Some(t),
            Some(t + 86_400),
            "",
            "P-789GHJ: 2026-08-19 13:01:47 → 2026-08-20 13:01:47",
        );
    }

    #[test]
    fn nothing_to_count_is_not_applicable() {
        let empty = Score {
            true_positives: 0,
            false_positives: 0,
            false_negatives: 0,
            start_errors_s: vec![],
            end_errors_s: vec![],
            misses: vec![],
            false_alarms: vec![],
        };
        let t = TypeScore::new(crate::engine::EventKind::Gap.name(), &empty, &|_| zone());
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(
            (&json["precision"], &json["exhaustividad"], &json["f1"]),
            (
                &serde_json::Value::Null,
                &serde_json::Value::Null,
                &serde_json::Value::Null
            )
        );
        assert_eq!(json["error_inicio_s"]["p50"], serde_json::Value::Null);
        let table = types_table(&[t]);
        assert_eq!(table.matches("no aplica").count(), 3, "{table}");
        assert!(!table.contains("1.0000"), "{table}");
    }
}
