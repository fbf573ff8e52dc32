//! The evaluation behind `flota evaluar`: how well the detections in a database match the truth.
//!
//! Owns the evaluation as a whole: reading the truth log (`truth`) and the detections (through
//! the store), building each type's intervals (`intervals`), scoring them (`matching`: a hit
//! is within `--tolerancia` seconds at both ends), the kilometres (`km`), the output (`report`)
//! and the regression gate (`--f1-minimo`). Reports precision, recall, F1 and start/end error
//! percentiles per type, the kilometre error per vehicle-day, and the phantom kilometres
//! accumulated while truly parked. This is the only code besides the tests that reads the
//! truth log.

pub mod charts;
pub mod external;
pub mod grid;
pub mod intervals;
pub mod km;
pub mod matching;
pub mod report;
pub mod truth;

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::store::{AnalysisState, Location, Store, Unusable};
use intervals::{Context, Detected, Scored};
use km::{DayKms, KmScore};
use matching::Rules;
pub use report::TypeScore;

/// Matching tolerance when none is given, seconds.
pub const DEFAULT_TOLERANCE_S: u32 = 60;

/// What to evaluate.
#[derive(Debug, Clone)]
pub struct Options {
    pub db: Location,
    pub truth: PathBuf,
    /// Largest start or end error of a hit, seconds.
    pub tolerance_s: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct Evaluation {
    pub base: String,
    pub verdad: String,
    pub escenario: String,
    pub tolerancia_s: u32,
    pub tipos: Vec<TypeScore>,
    pub km: KmScore,
    /// Kilometres the engine would count inside true stops of ten minutes or more.
    pub km_fantasma_detenida: f64,
    pub paradas_revisadas_km_fantasma: usize,
    /// Hours of those stops the phantom kilometres were looked for in.
    pub horas_revisadas_km_fantasma: f64,
}

impl Evaluation {
    pub fn score(&self, tipo: &str) -> Option<&TypeScore> {
        self.tipos.iter().find(|t| t.tipo == tipo)
    }

    /// A Spanish table for the terminal.
    pub fn table(&self) -> String {
        format!(
            "Evaluación de {} contra {} (escenario {}, tolerancia ±{} s)\n\n{}\n{}{}",
            self.base,
            self.verdad,
            self.escenario,
            self.tolerancia_s,
            report::types_table(&self.tipos),
            if self.km.dias == 0 && self.paradas_revisadas_km_fantasma == 0 {
                "km: no evaluados (sin kilómetros por unidad-día que comparar)\n".to_owned()
            } else {
                report::km_lines(
                    &self.km,
                    self.km_fantasma_detenida,
                    self.paradas_revisadas_km_fantasma,
                )
            },
            report::listings(&self.tipos),
        )
    }

    /// The types whose F1 is below `f1_min`; a type with nothing to score passes.
    pub fn below(&self, f1_min: f64) -> Vec<&TypeScore> {
        self.tipos
            .iter()
            .filter(|t| t.f1.is_some_and(|f1| f1 < f1_min))
            .collect()
    }

    /// One Spanish sentence naming the types under `f1_min`, or `None` when all pass.
    pub fn gate(&self, f1_min: f64) -> Option<String> {
        let failing = self.below(f1_min);
        (!failing.is_empty()).then(|| {
            let list: Vec<String> = failing
                .iter()
                .map(|t| format!("{} (F1 {:.4})", t.tipo, t.f1.unwrap_or_default()))
                .collect();
            format!("F1 por debajo de {f1_min}: {}", list.join(", "))
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EvaluateError {
    #[error(
        "el registro de verdad {truth} es de otra simulación que {db} (escenario_sha256 o ahora distintos); use el par que escribió flota simular"
    )]
    Mismatch { truth: String, db: String },
    /// Scoring stale detections would score another engine, or data since changed.
    #[error(
        "no hay detecciones confiables en {db} ({why}); ejecute: flota analizar {db} (y evalúe de nuevo)"
    )]
    Unanalysed { db: String, why: Unusable },
    #[error(
        "hay posiciones escritas en {db} después del análisis ({units} unidades): la evaluación no las cubriría; ejecute: flota analizar {db}"
    )]
    Behind { db: String, units: usize },
}

pub fn run(options: &Options) -> anyhow::Result<Evaluation> {
    let (db, truth_file) = (&options.db, &options.truth);
    let store = Store::open(db)?;
    let meta = store.meta()?;
    let log = truth::read(truth_file)?;
    if log.header.escenario_sha256 != meta.scenario_sha256
        || Some(log.header.ahora_utc) != meta.ahora_utc
    {
        return Err(EvaluateError::Mismatch {
            truth: truth_file.display().to_string(),
            db: db.to_string(),
        }
        .into());
    }
    match store.analysis_state(&meta)? {
        // Detections edited after the analysis are scored as they are: grading hand-made or
        // shifted detections is a use of its own (the tests of the tolerance do it).
        AnalysisState::Current | AnalysisState::Unusable(Unusable::Modified) => {}
        AnalysisState::Unusable(why) => {
            return Err(EvaluateError::Unanalysed {
                db: db.to_string(),
                why,
            }
            .into());
        }
        AnalysisState::Behind(changed) => {
            return Err(EvaluateError::Behind {
                db: db.to_string(),
                units: changed.len(),
            }
            .into());
        }
    }
    let now = log.header.ahora_utc;
    let truth = &log.events;
    let vehicles = store.vehicles()?;
    let plates: HashMap<i64, String> = vehicles.iter().map(|v| (v.id, v.plate.clone())).collect();
    let zones: HashMap<&str, chrono_tz::Tz> = vehicles
        .iter()
        .map(|v| (v.plate.as_str(), v.zone))
        .collect();
    let zone_of = |plate: &str| zones.get(plate).copied().unwrap_or(meta.zone);
    let found = detections(&store, &plates)?;

    let ids: HashMap<String, i64> = plates.iter().map(|(id, p)| (p.clone(), *id)).collect();
    let ctx = Context::new(&meta.config, now, truth)
        .with_unseen_moves(unseen_moves(&store, &ids, truth, &meta.config)?)
        .with_off_unreported(off_unreported(&store, &ids, truth, &meta.config, now)?)
        .with_standing(standing(&store, &ids, truth, &found, &meta.config)?)
        .with_reports(reports(&store, &ids, &meta.config)?)
        .with_fences(
            store
                .fences()?
                .into_iter()
                .map(|f| (f.fence.name.clone(), f.fence))
                .collect(),
        );
    let rules = Rules {
        tolerance_s: i64::from(options.tolerance_s),
        now_utc: now,
    };
    let tipos = Scored::ALL
        .into_iter()
        .map(|kind| {
            let (truth_intervals, detected) = intervals::of_kind(kind, truth, &found, &ctx);
            let score = matching::score(&truth_intervals, &detected, rules);
            TypeScore::new(kind.name(), &score, &zone_of)
        })
        .collect();

    let days: DayKms = store
        .every_day_km()?
        .into_iter()
        .map(|d| {
            let plate = plates.get(&d.vehicle_id).cloned().unwrap_or_default();
            ((plate, d.date), (d.km, d.km_gps))
        })
        .collect();
    // A unit silent at "now", or whose tracker still holds records: every one of its days
    // from then on is unknowable.
    let held = km::held_at_now(truth, now);
    let silent: Vec<(String, String)> = ctx
        .silent_since()
        .chain(held.iter().map(|(plate, since)| (plate.as_str(), *since)))
        .flat_map(|(plate, since)| unit_days(plate, since, now, zone_of(plate)))
        .collect();
    let lossy: Vec<(String, String)> = truth
        .iter()
        .filter_map(|e| match e {
            crate::sim::TruthEvent::PerdidaSenal {
                placa,
                inicio_utc,
                fin_utc,
            } => Some(unit_days(
                placa,
                *inicio_utc,
                fin_utc.unwrap_or(now),
                zone_of(placa),
            )),
            _ => None,
        })
        .flatten()
        .collect();
    let phantom = km::phantom_m(&store, truth, &ids, &meta.config, now)?;

    Ok(Evaluation {
        base: db.to_string(),
        verdad: truth_file.display().to_string(),
        escenario: meta.scenario,
        tolerancia_s: options.tolerance_s,
        tipos,
        km: km::score(truth, &days, &silent, &lossy),
        km_fantasma_detenida: phantom.metres / 1000.0,
        paradas_revisadas_km_fantasma: phantom.stops,
        horas_revisadas_km_fantasma: phantom.seconds as f64 / 3600.0,
    })
}

/// The moves between two close truth stops of a unit ([`intervals::close_stop_pairs`]) that
/// nothing in the data shows ([`move_shown`]).
fn unseen_moves(
    store: &Store,
    ids: &HashMap<String, i64>,
    truth: &[crate::sim::TruthEvent],
    config: &crate::engine::DetectionConfig,
) -> anyhow::Result<Vec<(String, i64, i64)>> {
    // How far around the move the reports bounding it are looked for: a silence longer than
    // a signal loss is a loss, which dates nothing either way.
    let around = config.perdida_senal_s.round() as i64;
    let mut unseen = Vec::new();
    for (plate, end, next_start) in intervals::close_stop_pairs(truth, config) {
        let Some(id) = ids.get(&plate) else { continue };
        let fixes = store.fixes(*id, end - around, next_start + around + 1)?;
        if !move_shown(&fixes, end, next_start, config) {
            unseen.push((plate, end, next_start));
        }
    }
    Ok(unseen)
}

/// A report this fast shows a move by itself: six σ of a parked unit's Doppler noise at
/// 2.5 km/h (a street canyon's), km/h.
const SHOWN_BY_ONE_KMH: f64 = 15.0;

/// Whether the reports `fixes` (in time order, around the move) show that the unit moved
/// between one stop's end at `end` and the next one's start at `next_start`: two reports in a
/// row strictly inside the move at a moving speed (`velocidad_detenida_kmh` or more), or one
/// at [`SHOWN_BY_ONE_KMH`], or an odometer that advanced more than a stop's radius
/// (`parada_radio_m`) from the last report before the move to the first after it (two stops
/// 50 m apart by the chord were 70 m apart by the road, which the odometer shows). A report
/// at a standing speed (taken as the unit set off, or a phone's invalid zero) shows nothing;
/// nor does a single one under that speed: a parked unit's Doppler noise reads 4 km/h or
/// more in one report of ten at 2.5 km/h, so neither a detector nor an operator can tell
/// that report from a unit standing — and a shift of a few metres at one address is, to an
/// operator, still one stop there.
fn move_shown(
    fixes: &[crate::engine::Fix],
    end: i64,
    next_start: i64,
    config: &crate::engine::DetectionConfig,
) -> bool {
    // Strictly between: a report at the first stop's last second or the next one's first
    // shows the unit standing.
    let moving: Vec<_> = fixes
        .iter()
        .map(|f| {
            end < f.ts_utc && f.ts_utc < next_start && f.speed_kmh >= config.velocidad_detenida_kmh
        })
        .collect();
    let in_a_row = moving.windows(2).any(|pair| pair[0] && pair[1]);
    let fast = fixes
        .iter()
        .zip(&moving)
        .any(|(f, moving)| *moving && f.speed_kmh >= SHOWN_BY_ONE_KMH);
    let before = fixes.iter().rev().find(|f| f.ts_utc <= end);
    let after = fixes.iter().find(|f| f.ts_utc >= next_start);
    let driven = before
        .and_then(|b| b.odometer_m)
        .zip(after.and_then(|a| a.odometer_m))
        .is_some_and(|(b, a)| (a - b) as f64 > config.parada_radio_m);
    in_a_row || fast || driven
}

/// The detected stops the truth logs no stop over ([`intervals::unlogged_halts`]) in which
/// no report showed a move ([`move_shown`], from the stop's first report to its last): the
/// data show the unit standing there throughout.
fn standing(
    store: &Store,
    ids: &HashMap<String, i64>,
    truth: &[crate::sim::TruthEvent],
    found: &[Detected],
    config: &crate::engine::DetectionConfig,
) -> anyhow::Result<Vec<(String, i64)>> {
    let mut standing = Vec::new();
    for (plate, start, end) in intervals::unlogged_halts(truth, found) {
        let Some(id) = ids.get(&plate) else { continue };
        // The reports just outside bound the odometer's advance across the stop.
        let around = config.perdida_senal_s.round() as i64;
        let fixes = store.fixes(*id, start - around, end + around + 1)?;
        if stood_throughout(&fixes, start, end, config) {
            standing.push((plate, start));
        }
    }
    Ok(standing)
}

/// Whether the reports `fixes` (in time order, around a detected stop from `start` to `end`)
/// show the unit standing throughout: at least two reports inside, and no move between its
/// first report and its last as [`move_shown`] judges one. From the first report, not from
/// `start`: the stop's start is dated back to the halt, and the odometer from the report
/// before it counts the braking.
fn stood_throughout(
    fixes: &[crate::engine::Fix],
    start: i64,
    end: i64,
    config: &crate::engine::DetectionConfig,
) -> bool {
    let inside = || {
        fixes
            .iter()
            .filter(|f| start <= f.ts_utc && f.ts_utc <= end)
    };
    match (inside().next(), inside().next_back()) {
        (Some(first), Some(last)) if first.ts_utc < last.ts_utc => {
            !move_shown(fixes, first.ts_utc, last.ts_utc, config)
        }
        _ => false,
    }
}

/// Every unit's report times and cadence while moving ([`intervals::Reports`]), by plate.
fn reports(
    store: &Store,
    ids: &HashMap<String, i64>,
    config: &crate::engine::DetectionConfig,
) -> anyhow::Result<HashMap<String, intervals::Reports>> {
    let mut by_plate = HashMap::new();
    for (plate, id) in ids {
        let mut times = Vec::new();
        store.for_each_fix(*id, i64::MIN, i64::MAX, |fix| {
            times.push((fix.ts_utc, fix.point(), fix.speed_kmh));
        })?;
        by_plate.insert(
            plate.clone(),
            intervals::Reports::new(times, config.velocidad_detenida_kmh),
        );
    }
    Ok(by_plate)
}

/// The days' parkings that went on into a shift for as long as a long stop
/// ([`intervals::parkings_into_a_shift`]) in which no report of the unit said the ignition was
/// off before it came on: the data show a stop with the engine on.
fn off_unreported(
    store: &Store,
    ids: &HashMap<String, i64>,
    truth: &[crate::sim::TruthEvent],
    config: &crate::engine::DetectionConfig,
    now_utc: i64,
) -> anyhow::Result<Vec<(String, i64)>> {
    let mut on_only = Vec::new();
    for (plate, start, on) in intervals::parkings_into_a_shift(truth, config, now_utc) {
        let Some(id) = ids.get(&plate) else { continue };
        let mut off = false;
        store.for_each_fix(*id, start, on, |fix| off |= !fix.ignition)?;
        if !off {
            on_only.push((plate, start));
        }
    }
    Ok(on_only)
}

/// `plate`'s local days (in `zone`) from `from_utc` to `to_utc`, as (plate, date).
fn unit_days(
    plate: &str,
    from_utc: i64,
    to_utc: i64,
    zone: chrono_tz::Tz,
) -> Vec<(String, String)> {
    let (first, last) = (
        crate::calendar::local_date(zone, from_utc),
        crate::calendar::local_date(zone, to_utc),
    );
    first
        .iter_days()
        .take_while(|d| *d <= last)
        .map(|d| (plate.to_owned(), d.to_string()))
        .collect()
}

/// Scores detections exported by another platform (`detections`, CSV: [`external`]) against
/// the truth log, with flota's default thresholds for what is too close to call. There are
/// no kilometres to compare.
pub fn run_external(
    detections: &std::path::Path,
    truth_file: &std::path::Path,
    tolerance_s: u32,
) -> anyhow::Result<Evaluation> {
    let log = truth::read(truth_file)?;
    let zone_of = |plate: &str| log.header.zone_of(plate);
    let found = external::read(detections, &zone_of)?;
    let config = crate::engine::DetectionConfig::default();
    let now = log.header.ahora_utc;
    let truth = &log.events;
    let ctx = Context::new(&config, now, truth);
    let rules = Rules {
        tolerance_s: i64::from(tolerance_s),
        now_utc: now,
    };
    let tipos = Scored::ALL
        .into_iter()
        .map(|kind| {
            let (truth_intervals, detected) = intervals::of_kind(kind, truth, &found, &ctx);
            TypeScore::new(
                kind.name(),
                &matching::score(&truth_intervals, &detected, rules),
                &zone_of,
            )
        })
        .collect();
    Ok(Evaluation {
        base: detections.display().to_string(),
        verdad: truth_file.display().to_string(),
        escenario: log.header.escenario.clone(),
        tolerancia_s: tolerance_s,
        tipos,
        km: km::score(&[], &DayKms::new(), &[], &[]),
        km_fantasma_detenida: 0.0,
        paradas_revisadas_km_fantasma: 0,
        horas_revisadas_km_fantasma: 0.0,
    })
}

/// The stored events, with plates and fence names.
fn detections(store: &Store, plates: &HashMap<i64, String>) -> anyhow::Result<Vec<Detected>> {
    let fences: HashMap<i64, String> = store
        .fences()?
        .into_iter()
        .map(|f| (f.id, f.fence.name))
        .collect();
    Ok(store
        .every_event()?
        .into_iter()
        .map(|e| Detected {
            plate: plates.get(&e.vehicle_id).cloned().unwrap_or_default(),
            fence: e
                .fence_id
                .and_then(|id| fences.get(&id).cloned())
                .unwrap_or_default(),
            kind: e.kind,
            start: e.start_utc,
            end: e.end_utc,
            end_of_day: e.end_of_day,
            from_data_start: e.from_data_start,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{DetectionConfig, Fix};

    /// A report at `t` seconds reading `kmh`, with an odometer of `odometer_m`.
    fn report(t: i64, kmh: f64, odometer_m: i64) -> Fix {
        Fix {
            ts_utc: t,
            lat: 41.39,
            lon: 2.16,
            speed_kmh: kmh,
            heading_deg: 0.0,
            ignition: true,
            odometer_m: Some(odometer_m),
        }
    }

    /// Two deliveries 20 m apart, the move between them from 100 s to 106 s, reports every
    /// 5 s: what the report(s) inside the move read decides whether it shows.
    #[test]
    fn a_move_shows_by_two_reports_or_a_fast_one_not_by_one_slow_report() {
        let config = DetectionConfig::default();
        let shown = |inside: &[(i64, f64)]| {
            let mut fixes = vec![report(95, 0.0, 0), report(100, 0.0, 0)];
            fixes.extend(inside.iter().map(|&(t, kmh)| report(t, kmh, 10)));
            fixes.push(report(110, 0.0, 20));
            move_shown(&fixes, 100, 106, &config)
        };
        assert!(!shown(&[]));
        assert!(!shown(&[(103, 0.0)]));
        assert!(
            !shown(&[(103, 9.0)]),
            "one report at 9 km/h, a parked unit's noise can"
        );
        assert!(shown(&[(103, 16.0)]));
        assert!(shown(&[(102, 6.0), (104, 9.0)]));
        assert!(!shown(&[(102, 6.0), (104, 0.0)]));
    }

    /// A queue at a gate (dos_zonas seed 101): halts of under a minute, which the truth does
    /// not log, with single slow reports between them and 52 m on the odometer. The data
    /// show one stop; a move shown by two moving reports in a row, a fast one or the
    /// odometer beyond the stop's radius is a queue the data do show moving.
    #[test]
    fn a_queue_of_unlogged_halts_no_report_shows_moving_stood_throughout() {
        let config = DetectionConfig::default();
        // Seconds after the halt, km/h, odometer metres (the reports of 1111-BCD).
        let queue = [
            (-9, 26.0, 0),
            (6, 0.0, 63),
            (21, 0.0, 63),
            (36, 0.0, 63),
            (51, 7.8, 65),
            (66, 0.0, 82),
            (81, 0.0, 82),
            (96, 11.1, 84),
            (111, 0.0, 115),
            (126, 0.0, 115),
            (141, 0.0, 115),
            (156, 6.0, 115),
            (171, 25.1, 215),
        ];
        let stood = |changed: &[(i64, f64, i64)]| {
            let fixes: Vec<Fix> = queue
                .iter()
                .map(|&(t, kmh, odo)| {
                    let (_, kmh, odo) = changed
                        .iter()
                        .find(|c| c.0 == t)
                        .copied()
                        .unwrap_or((t, kmh, odo));
                    report(t, kmh, odo)
                })
                .collect();
            stood_throughout(&fixes, 0, 155, &config)
        };
        assert!(stood(&[]), "single slow reports, 52 m");
        assert!(!stood(&[(66, 6.0, 82)]), "two moving reports in a row");
        assert!(!stood(&[(96, 16.0, 84)]), "one fast report");
        assert!(!stood(&[(141, 0.0, 140)]), "77 m on the odometer");
        assert!(
            !stood_throughout(&[report(6, 0.0, 0)], 0, 155, &config),
            "one report inside shows nothing"
        );
    }

    /// A detected stop no truth stop overlaps is a candidate; one the truth logs is not.
    #[test]
    fn only_stops_the_truth_does_not_log_are_unlogged_halts() {
        let stop = |start: i64, end: i64| Detected {
            plate: "A".into(),
            kind: crate::engine::EventKind::Stop,
            start,
            end: Some(end),
            fence: String::new(),
            end_of_day: false,
            from_data_start: false,
        };
        let truth = [crate::sim::TruthEvent::Parada {
            placa: "A".into(),
            inicio_utc: 1000,
            fin_utc: Some(2000),
            duracion_s: 1000,
            lat: 0.0,
            lon: 0.0,
            lugar: String::new(),
            motivo: crate::sim::StopReason::Entrega,
            motor_encendido: true,
            desde_inicio_datos: false,
            inyectada: false,
        }];
        let found = [stop(1010, 1990), stop(3000, 3155)];
        assert_eq!(
            intervals::unlogged_halts(&truth, &found),
            [("A".to_owned(), 3000, 3155)]
        );
    }
}
