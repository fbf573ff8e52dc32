//! Kilometres against the truth: the error per vehicle-day, reported and GPS-only, and the
//! phantom kilometres the distance rule counts while a unit truly stands still (the rule run
//! over the unit's whole data as the engine runs it: speeds checked by [`SpeedCheck`] first).
//!
//! Owns which days are judged: those with at least a kilometre driven, except a day whose
//! unit is silent at "now" (what it drove after its last report cannot be known) or whose
//! tracker still holds records at "now" (no network, or delivered late: [`held_at_now`]); a day with a
//! signal loss is judged on the reported kilometres (the odometer saw the silence through) but
//! left out of the GPS-only figures (positions can only bridge it).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::engine::{DetectionConfig, Fix, GpsDistance, SpeedCheck};
use crate::sim::TruthEvent;
use crate::store::{Store, StoreError};

/// Days shorter than this are not judged: a percentage of nothing means nothing.
const MIN_DAY_KM: f64 = 1.0;
/// Stops at least this long are checked for phantom kilometres, minus a margin at each end
/// where the unit is still braking or already moving off.
const PHANTOM_MIN_STOP_S: i64 = 600;
const PHANTOM_MARGIN_S: i64 = 30;

#[derive(Debug, Clone, Serialize)]
pub struct KmScore {
    pub dias: usize,
    /// Days the GPS-only figures judge: those without a signal loss.
    pub dias_gps: usize,
    pub error_medio_pct: f64,
    pub error_max_pct: f64,
    pub peor_dia: String,
    pub error_medio_gps_pct: f64,
    pub error_max_gps_pct: f64,
    pub peor_dia_gps: String,
    /// Every judged day's GPS-only error, percent (for the grid's distribution; not printed).
    #[serde(skip)]
    pub errores_gps_pct: Vec<f64>,
}

/// Stored kilometres of one vehicle-day, keyed by (plate, local date).
pub type DayKms = HashMap<(String, String), (f64, f64)>;

/// Unit-days, as (plate, local date).
pub type UnitDays = [(String, String)];

/// Units whose tracker, at `now_utc`, still holds records it made (no network since
/// `inicio_utc`, or records on their way since `primero_utc`), with the first such moment:
/// what those records show is not in the data yet, so no rule on positions or odometer can
/// count that driving, whatever the silence's length.
pub fn held_at_now(truth: &[TruthEvent], now_utc: i64) -> Vec<(String, i64)> {
    truth
        .iter()
        .filter_map(|event| match event {
            TruthEvent::SinCobertura {
                placa,
                inicio_utc,
                fin_utc,
                ..
            } if fin_utc.is_none_or(|end| end > now_utc) => Some((placa.clone(), *inicio_utc)),
            TruthEvent::EnTransito {
                placa, primero_utc, ..
            } => Some((placa.clone(), *primero_utc)),
            _ => None,
        })
        .collect()
}

/// Compares each truth `km_dia` with the stored (reported, GPS-only) kilometres of `days`.
/// `silent` lists the unit-days of units silent at "now"; `lossy` those with a signal loss.
pub fn score(truth: &[TruthEvent], days: &DayKms, silent: &UnitDays, lossy: &UnitDays) -> KmScore {
    let mut errors = Vec::new();
    for event in truth {
        let TruthEvent::KmDia { placa, fecha, km } = event else {
            continue;
        };
        let key = (placa.clone(), fecha.clone());
        if *km < MIN_DAY_KM || silent.contains(&key) {
            continue;
        }
        let (reported, gps) = days.get(&key).copied().unwrap_or((0.0, 0.0));
        let pct = |x: f64| (x - km).abs() / km * 100.0;
        let gps = (!lossy.contains(&key)).then(|| pct(gps));
        errors.push((pct(reported), gps, format!("{placa} {fecha}")));
    }
    let reported: Vec<(f64, &str)> = errors.iter().map(|e| (e.0, e.2.as_str())).collect();
    let gps: Vec<(f64, &str)> = errors
        .iter()
        .filter_map(|e| e.1.map(|g| (g, e.2.as_str())))
        .collect();
    let (error_medio_pct, error_max_pct, peor_dia) = summary(&reported);
    let (error_medio_gps_pct, error_max_gps_pct, peor_dia_gps) = summary(&gps);
    KmScore {
        dias: errors.len(),
        dias_gps: gps.len(),
        error_medio_pct,
        error_max_pct,
        peor_dia,
        error_medio_gps_pct,
        error_max_gps_pct,
        peor_dia_gps,
        errores_gps_pct: gps.iter().map(|g| g.0).collect(),
    }
}

/// Mean and largest error, and the day of the largest.
fn summary(errors: &[(f64, &str)]) -> (f64, f64, String) {
    let n = errors.len().max(1) as f64;
    let mean = errors.iter().map(|e| e.0).sum::<f64>() / n;
    let (max, day) = errors
        .iter()
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map_or((0.0, String::new()), |e| (e.0, e.1.to_owned()));
    (mean, max, day)
}

/// What the distance rule adds inside true stops of ten minutes or more.
#[derive(Debug, Clone, Copy, Default)]
pub struct Phantom {
    pub metres: f64,
    /// Stops checked.
    pub stops: usize,
    /// Time checked (each stop less its margins), seconds.
    pub seconds: i64,
}

/// Metres the distance rule adds inside true stops of ten minutes or more, how many stops and
/// how long were checked. The rule runs over each unit's whole data, as the engine runs it —
/// what it learned of the unit before a stop (its parked noise, its cadence) included — and
/// the metres of each pair of fixes inside a stop (less its margins) are phantom. A rule
/// started afresh at each stop, as this was measured until version 16, knew nothing of a
/// tracker that records once every ten minutes at a client and counted each chord there.
pub fn phantom_m(
    store: &Store,
    truth: &[TruthEvent],
    ids: &HashMap<String, i64>,
    config: &DetectionConfig,
    now_utc: i64,
) -> Result<Phantom, StoreError> {
    // Each unit's stops checked, less their margins; ordered so the sum is reproducible.
    let mut windows: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
    let (mut checked, mut seconds) = (0, 0);
    for event in truth {
        let TruthEvent::Parada {
            placa,
            inicio_utc,
            fin_utc,
            ..
        } = event
        else {
            continue;
        };
        let (start, end) = (*inicio_utc, fin_utc.unwrap_or(now_utc));
        let Some(id) = ids.get(placa) else { continue };
        if end - start < PHANTOM_MIN_STOP_S {
            continue;
        }
        windows
            .entry(*id)
            .or_default()
            .push((start + PHANTOM_MARGIN_S, end - PHANTOM_MARGIN_S));
        checked += 1;
        seconds += end - start - 2 * PHANTOM_MARGIN_S;
    }
    let mut metres = 0.0;
    for (id, spans) in &windows {
        let inside = |a: i64, b: i64| spans.iter().any(|(from, to)| *from <= a && b <= *to);
        // The engine's distance as the engine computes it: invalid speeds replaced first. The
        // configured radius stands for the noise the engine learns (the check's look-ahead
        // weighs a still reading against it).
        let mut speeds = SpeedCheck::new(config);
        let mut distance = GpsDistance::new(config);
        let mut prev_utc: Option<i64> = None;
        let mut take = |fix: Fix| {
            if prev_utc.is_some_and(|prev| fix.ts_utc <= prev) {
                return;
            }
            let counted = distance.push(&fix);
            if prev_utc.is_some_and(|prev| inside(prev, fix.ts_utc)) {
                metres += counted;
            }
            prev_utc = Some(fix.ts_utc);
        };
        store.for_each_fix(*id, 0, now_utc, |fix| {
            if let Some((fix, _)) = speeds.push(fix, config.parada_radio_m) {
                take(fix);
            }
        })?;
        if let Some((fix, _)) = speeds.flush() {
            take(fix);
        }
    }
    Ok(Phantom {
        metres,
        stops: checked,
        seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(plate: &str, date: &str, km: f64) -> TruthEvent {
        TruthEvent::KmDia {
            placa: plate.into(),
            fecha: date.into(),
            km,
        }
    }

    #[test]
    fn days_are_judged_unless_unknowable_or_tiny() {
        let truth = [
            day("A", "2026-08-18", 100.0),
            day("A", "2026-08-19", 50.0),
            day("B", "2026-08-18", 0.5),
            day("C", "2026-08-19", 80.0),
        ];
        let days: DayKms = [
            (("A".into(), "2026-08-18".into()), (100.0, 99.0)),
            (("A".into(), "2026-08-19".into()), (51.0, 50.0)),
            (("B".into(), "2026-08-18".into()), (9.0, 9.0)),
            (("C".into(), "2026-08-19".into()), (10.0, 10.0)),
        ]
        .into_iter()
        .collect();
        let silent = [("C".to_owned(), "2026-08-19".to_owned())];
        let s = score(&truth, &days, &silent, &[]);
        assert_eq!(s.dias, 2);
        assert_eq!(
            (s.error_max_pct, s.peor_dia.as_str()),
            (2.0, "A 2026-08-19")
        );
        assert_eq!(
            (s.error_max_gps_pct, s.peor_dia_gps.as_str()),
            (1.0, "A 2026-08-18")
        );
        assert!((s.error_medio_pct - 1.0).abs() < 1e-12);
        // A day with a signal loss: judged on the reported figure only.
        let lossy = [("A".to_owned(), "2026-08-18".to_owned())];
        let s = score(&truth, &days, &silent, &lossy);
        assert_eq!((s.dias, s.dias_gps), (2, 1));
        assert_eq!(
            (s.error_max_gps_pct, s.peor_dia_gps.as_str()),
            (0.0, "A 2026-08-19")
        );
        assert_eq!(
            (s.error_max_pct, s.peor_dia.as_str()),
            (2.0, "A 2026-08-19")
        );
    }

    #[test]
    fn records_still_held_at_now_make_their_days_unknowable() {
        let now = 10_000;
        let truth = [
            TruthEvent::SinCobertura {
                placa: "A".into(),
                inicio_utc: 9_000,
                fin_utc: None,
                retenidos: 24,
            },
            // Network back before "now": its backlog reached the data.
            TruthEvent::SinCobertura {
                placa: "B".into(),
                inicio_utc: 5_000,
                fin_utc: Some(6_000),
                retenidos: 3,
            },
            TruthEvent::SinCobertura {
                placa: "C".into(),
                inicio_utc: 8_000,
                fin_utc: Some(12_000),
                retenidos: 9,
            },
            TruthEvent::EnTransito {
                placa: "D".into(),
                desde_utc: Some(9_990),
                primero_utc: 9_993,
                registros: 1,
            },
        ];
        assert_eq!(
            held_at_now(&truth, now),
            [
                ("A".to_owned(), 9_000),
                ("C".to_owned(), 8_000),
                ("D".to_owned(), 9_993)
            ]
        );
    }

    #[test]
    fn a_day_missing_from_the_database_is_all_error() {
        let s = score(&[day("A", "2026-08-18", 10.0)], &DayKms::new(), &[], &[]);
        assert_eq!((s.error_max_pct, s.error_max_gps_pct), (100.0, 100.0));
    }
}
