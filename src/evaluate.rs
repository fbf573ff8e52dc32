//! `flota evaluar`: how well the detections in a database match the ground truth.
//!
//! Owns the evaluation method of fleet-domain.md §5. For each event type, truth and detected
//! intervals of the same vehicle (and fence) match when they overlap once the truth is
//! widened by a tolerance; pairs are assigned one-to-one, largest overlap first. Truth the
//! detectors cannot be expected to resolve — stops within a band around the minimum stop
//! time, pass-throughs shorter than the fence debounce, long stops within a band of the
//! threshold — is "don't care": matching it is not a hit, missing it is not a miss. Reports
//! precision, recall, F1 and start/end errors per type, the kilometre error per vehicle-day,
//! and the phantom kilometres accumulated while truly parked. This is the only code besides the
//! tests that reads the truth log.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::engine::segment_m;
use crate::store::Store;

/// Matching tolerance, seconds.
const TOLERANCE_S: i64 = 60;
/// Truth visits separated by less than this are one visit (roads hug some fence edges).
const VISIT_MERGE_S: i64 = 60;

#[derive(Debug, Clone, Serialize)]
pub struct TypeScore {
    pub tipo: String,
    pub verdad: usize,
    pub detectados: usize,
    pub verdaderos_positivos: usize,
    pub falsos_positivos: usize,
    pub falsos_negativos: usize,
    pub precision: f64,
    pub exhaustividad: f64,
    pub f1: f64,
    pub error_inicio_medio_s: f64,
    pub error_inicio_max_s: i64,
    pub error_fin_medio_s: f64,
    pub error_fin_max_s: i64,
    /// Up to ten misses and ten false alarms, for debugging.
    pub no_detectados: Vec<String>,
    pub falsas_alarmas: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct KmScore {
    pub dias: usize,
    pub error_medio_pct: f64,
    pub error_max_pct: f64,
    pub error_medio_gps_pct: f64,
    pub error_max_gps_pct: f64,
    pub peor_dia: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Evaluation {
    pub base: String,
    pub verdad: String,
    pub escenario: String,
    pub tipos: Vec<TypeScore>,
    pub km: KmScore,
    /// Kilometres the engine would count inside true stops of ten minutes or more.
    pub km_fantasma_detenida: f64,
    pub paradas_revisadas_km_fantasma: usize,
}

impl Evaluation {
    pub fn score(&self, tipo: &str) -> Option<&TypeScore> {
        self.tipos.iter().find(|t| t.tipo == tipo)
    }

    /// A Spanish table for the terminal.
    pub fn table(&self) -> String {
        let mut out = format!(
            "Evaluación de {} contra {} (escenario {})\n\n",
            self.base, self.verdad, self.escenario
        );
        out.push_str(&format!(
            "{:<18} {:>6} {:>6} {:>5} {:>4} {:>4} {:>9} {:>13} {:>6} {:>17} {:>17}\n",
            "tipo",
            "verdad",
            "detec",
            "VP",
            "FP",
            "FN",
            "precisión",
            "exhaustividad",
            "F1",
            "err. inicio m/máx",
            "err. fin m/máx"
        ));
        for t in &self.tipos {
            out.push_str(&format!(
                "{:<18} {:>6} {:>6} {:>5} {:>4} {:>4} {:>9.4} {:>13.4} {:>6.4} {:>10.1}/{:<6} {:>10.1}/{:<6}\n",
                t.tipo,
                t.verdad,
                t.detectados,
                t.verdaderos_positivos,
                t.falsos_positivos,
                t.falsos_negativos,
                t.precision,
                t.exhaustividad,
                t.f1,
                t.error_inicio_medio_s,
                t.error_inicio_max_s,
                t.error_fin_medio_s,
                t.error_fin_max_s
            ));
        }
        out.push_str(&format!(
            "\nkm por unidad-día ({} días): error medio {:.3} %, máximo {:.3} % ({}); solo GPS: medio {:.3} %, máximo {:.3} %\n",
            self.km.dias, self.km.error_medio_pct, self.km.error_max_pct, self.km.peor_dia, self.km.error_medio_gps_pct, self.km.error_max_gps_pct
        ));
        out.push_str(&format!(
            "km fantasma con la unidad detenida: {:.3} km en {} paradas de 10 min o más\n",
            self.km_fantasma_detenida, self.paradas_revisadas_km_fantasma
        ));
        for t in &self.tipos {
            for miss in &t.no_detectados {
                out.push_str(&format!("  no detectado  {:<18} {miss}\n", t.tipo));
            }
            for alarm in &t.falsas_alarmas {
                out.push_str(&format!("  falsa alarma  {:<18} {alarm}\n", t.tipo));
            }
        }
        out
    }
}

/// One row of `eventos`, as the evaluation needs it.
struct Detected {
    plate: String,
    kind: String,
    start: i64,
    end: Option<i64>,
    fence_id: Option<i64>,
    end_of_day: bool,
    from_data_start: bool,
}

/// Entry and exit times of one unit's visits to one fence.
type Stays = Vec<(Option<i64>, Option<i64>)>;

#[derive(Debug, Clone)]
struct Interval {
    plate: String,
    key: String,
    start: i64,
    end: Option<i64>,
    start_known: bool,
    dont_care: bool,
}

impl Interval {
    fn end_or(&self, now: i64) -> i64 {
        self.end.unwrap_or(now)
    }
    fn describe(&self) -> String {
        let key = if self.key.is_empty() {
            String::new()
        } else {
            format!(" {}", self.key)
        };
        format!(
            "{}{key} {}–{}",
            self.plate,
            self.start,
            self.end.map_or("…".into(), |e| e.to_string())
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EvaluateError {
    #[error("no se pudo leer el registro de verdad {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}: línea inválida: {message}")]
    Line {
        path: String,
        line: usize,
        message: String,
    },
    #[error(
        "el registro de verdad {truth} es de otra simulación que {db} (escenario_sha256 o ahora distintos); use el par que escribió flota simular"
    )]
    Mismatch { truth: String, db: String },
}

/// The truth file that goes with `db` unless one is given.
pub fn truth_path(db: &Path, given: Option<&Path>) -> PathBuf {
    given.map_or_else(
        || crate::simulate::default_truth_path(db),
        Path::to_path_buf,
    )
}

pub fn run(db: &Path, truth: &Path) -> anyhow::Result<Evaluation> {
    let store = Store::open(db)?;
    let meta = store.meta()?;
    let now = meta.ahora_utc.unwrap_or(i64::MAX / 4);
    let text = std::fs::read_to_string(truth).map_err(|source| EvaluateError::Read {
        path: truth.display().to_string(),
        source,
    })?;
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let value: Value = serde_json::from_str(line).map_err(|e| EvaluateError::Line {
            path: truth.display().to_string(),
            line: index + 1,
            message: e.to_string(),
        })?;
        lines.push(value);
    }
    let header = lines.first().cloned().unwrap_or(Value::Null);
    if header["escenario_sha256"].as_str() != Some(meta.scenario_sha256.as_str())
        || header["ahora_utc"].as_i64() != meta.ahora_utc
    {
        return Err(EvaluateError::Mismatch {
            truth: truth.display().to_string(),
            db: db.display().to_string(),
        }
        .into());
    }
    let of = |kind: &'static str| lines.iter().filter(move |l| l["tipo"] == kind);
    let config = &meta.config;
    let int = |v: &Value| v.as_i64();
    let plate = |v: &Value| v["placa"].as_str().unwrap_or_default().to_owned();

    // Detected events, read back from the database.
    let vehicles: HashMap<i64, String> = store
        .vehicles()?
        .into_iter()
        .map(|v| (v.id, v.plate))
        .collect();
    let fence_names: HashMap<i64, String> = store
        .fences()?
        .into_iter()
        .map(|f| (f.id, f.fence.name))
        .collect();
    let mut stmt = store.conn.prepare(
        "SELECT vehiculo_id, tipo, inicio_utc, fin_utc, geocerca_id, 0, fin_de_jornada, desde_inicio_datos FROM eventos",
    )?;
    let detected: Vec<Detected> = stmt
        .query_map([], |r| {
            Ok(Detected {
                plate: vehicles
                    .get(&r.get::<_, i64>(0)?)
                    .cloned()
                    .unwrap_or_default(),
                kind: r.get(1)?,
                start: r.get(2)?,
                end: r.get(3)?,
                fence_id: r.get(4)?,
                end_of_day: r.get::<_, i64>(6)? != 0,
                from_data_start: r.get::<_, i64>(7)? != 0,
            })
        })?
        .collect::<Result<_, _>>()?;
    drop(stmt);
    let detections = |tipo: &'static str| detected.iter().filter(move |d| d.kind == tipo);

    let min_stop = config.parada_min_s as i64;
    let band = 30;
    let long = (config.parada_prolongada_min * 60.0) as i64;
    let mut types = Vec::new();

    // Stops.
    let truth_stops: Vec<Interval> = of("parada")
        .map(|l| {
            let start = int(&l["inicio_utc"]).unwrap_or(0);
            let end = int(&l["fin_utc"]);
            let duration = end.unwrap_or(now) - start;
            Interval {
                plate: plate(l),
                key: String::new(),
                start,
                end,
                start_known: l["desde_inicio_datos"] != true,
                dont_care: duration < min_stop + band,
            }
        })
        .collect();
    let detected_stops: Vec<Interval> = detections("parada")
        .map(|d| Interval {
            plate: d.plate.clone(),
            key: String::new(),
            start: d.start,
            end: d.end,
            start_known: !d.from_data_start,
            dont_care: d.end.unwrap_or(now) - d.start < min_stop + band,
        })
        .collect();
    types.push(score("parada", &truth_stops, &detected_stops, now));

    // Long stops: not the parking that ends a day.
    let truth_long: Vec<Interval> = of("parada")
        .filter(|l| l["motivo"] != "fin_de_turno")
        .filter_map(|l| {
            let start = int(&l["inicio_utc"])?;
            let end = int(&l["fin_utc"]);
            let duration = end.unwrap_or(now) - start;
            (duration >= long - TOLERANCE_S).then(|| Interval {
                plate: plate(l),
                key: String::new(),
                start,
                end,
                start_known: true,
                dont_care: (duration - long).abs() < TOLERANCE_S,
            })
        })
        .collect();
    let detected_long: Vec<Interval> = detections("parada")
        .filter(|d| !d.end_of_day && d.end.unwrap_or(now) - d.start >= long)
        .map(|d| Interval {
            plate: d.plate.clone(),
            key: String::new(),
            start: d.start,
            end: d.end,
            start_known: !d.from_data_start,
            dont_care: (d.end.unwrap_or(now) - d.start - long).abs() < TOLERANCE_S,
        })
        .collect();
    types.push(score("parada_prolongada", &truth_long, &detected_long, now));

    // Overspeed.
    let min_over = config.exceso_min_s as i64;
    let truth_over: Vec<Interval> = of("exceso_velocidad")
        .map(|l| {
            let (start, end) = (int(&l["inicio_utc"]).unwrap_or(0), int(&l["fin_utc"]));
            Interval {
                plate: plate(l),
                key: String::new(),
                start,
                end,
                start_known: true,
                dont_care: end.unwrap_or(now) - start < min_over + 15,
            }
        })
        .collect();
    let detected_over: Vec<Interval> = detections("exceso_velocidad")
        .map(|d| Interval {
            plate: d.plate.clone(),
            key: String::new(),
            start: d.start,
            end: d.end,
            start_known: true,
            dont_care: false,
        })
        .collect();
    types.push(score("exceso_velocidad", &truth_over, &detected_over, now));

    // Signal loss.
    let truth_gaps: Vec<Interval> = of("perdida_senal")
        .map(|l| Interval {
            plate: plate(l),
            key: String::new(),
            start: int(&l["inicio_utc"]).unwrap_or(0),
            end: int(&l["fin_utc"]),
            start_known: true,
            dont_care: false,
        })
        .collect();
    let detected_gaps: Vec<Interval> = detections("perdida_senal")
        .map(|d| Interval {
            plate: d.plate.clone(),
            key: String::new(),
            start: d.start,
            end: d.end,
            start_known: true,
            dont_care: false,
        })
        .collect();
    types.push(score("perdida_senal", &truth_gaps, &detected_gaps, now));

    // Geofence visits, merged across brief excursions.
    let confirm = config.geocerca_confirmacion_s as i64;
    let mut by_key: BTreeMap<(String, String), Stays> = BTreeMap::new();
    for l in of("visita_geocerca") {
        let key = (
            plate(l),
            l["geocerca"].as_str().unwrap_or_default().to_owned(),
        );
        by_key
            .entry(key)
            .or_default()
            .push((int(&l["entrada_utc"]), int(&l["salida_utc"])));
    }
    let mut truth_visits = Vec::new();
    for ((p, fence), mut visits) in by_key {
        visits.sort_by_key(|v| v.0.unwrap_or(i64::MIN));
        let mut merged: Vec<(Option<i64>, Option<i64>)> = Vec::new();
        for v in visits {
            match merged.last_mut() {
                Some(last)
                    if last.1.is_some_and(|exit| {
                        v.0.is_some_and(|entry| entry - exit < VISIT_MERGE_S)
                    }) =>
                {
                    last.1 = v.1
                }
                _ => merged.push(v),
            }
        }
        for (entry, exit) in merged {
            let start = entry.unwrap_or(i64::MIN / 4);
            let duration = exit.unwrap_or(now).saturating_sub(start);
            truth_visits.push(Interval {
                plate: p.clone(),
                key: fence.clone(),
                start,
                end: exit,
                start_known: entry.is_some(),
                dont_care: duration < confirm + 30,
            });
        }
    }
    let detected_visits: Vec<Interval> = detections("visita_geocerca")
        .map(|d| Interval {
            plate: d.plate.clone(),
            key: d
                .fence_id
                .and_then(|id| fence_names.get(&id).cloned())
                .unwrap_or_default(),
            start: if d.from_data_start {
                i64::MIN / 4
            } else {
                d.start
            },
            end: d.end,
            start_known: !d.from_data_start,
            dont_care: !d.from_data_start && d.end.unwrap_or(now) - d.start < confirm + 30,
        })
        .collect();
    types.push(score(
        "visita_geocerca",
        &truth_visits,
        &detected_visits,
        now,
    ));

    // Kilometres per vehicle-day.
    let mut days: HashMap<(String, String), (f64, f64)> = HashMap::new();
    let mut stmt = store
        .conn
        .prepare("SELECT vehiculo_id, fecha, km, km_gps FROM resumen_diario")?;
    for row in stmt.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, f64>(2)?,
            r.get::<_, f64>(3)?,
        ))
    })? {
        let (id, date, km, gps) = row?;
        days.insert(
            (vehicles.get(&id).cloned().unwrap_or_default(), date),
            (km, gps),
        );
    }
    drop(stmt);
    // Kilometres driven after the last report of a unit silent at "now" cannot be known.
    let silent_now: Vec<(String, String)> = of("perdida_senal")
        .filter(|l| int(&l["fin_utc"]).is_some_and(|f| f > now))
        .filter_map(|l| {
            let date = crate::fleet::dates::local_date(meta.zone, int(&l["inicio_utc"])?);
            Some((plate(l), date.to_string()))
        })
        .collect();
    let mut errors = Vec::new();
    for l in of("km_dia") {
        let truth_km = l["km"].as_f64().unwrap_or(0.0);
        let key = (plate(l), l["fecha"].as_str().unwrap_or_default().to_owned());
        if truth_km < 1.0 || silent_now.contains(&key) {
            continue;
        }
        let (km, gps) = days.get(&key).copied().unwrap_or((0.0, 0.0));
        errors.push((
            (km - truth_km).abs() / truth_km * 100.0,
            (gps - truth_km).abs() / truth_km * 100.0,
            format!("{} {}", key.0, key.1),
        ));
    }
    let n = errors.len().max(1) as f64;
    let worst = errors.iter().max_by(|a, b| a.0.total_cmp(&b.0));
    let km = KmScore {
        dias: errors.len(),
        error_medio_pct: errors.iter().map(|e| e.0).sum::<f64>() / n,
        error_max_pct: worst.map_or(0.0, |w| w.0),
        error_medio_gps_pct: errors.iter().map(|e| e.1).sum::<f64>() / n,
        error_max_gps_pct: errors.iter().map(|e| e.1).fold(0.0, f64::max),
        peor_dia: worst.map_or_else(String::new, |w| w.2.clone()),
    };

    // Phantom kilometres: what the distance rule adds while the unit truly stands still.
    let ids: HashMap<&str, i64> = vehicles.iter().map(|(id, p)| (p.as_str(), *id)).collect();
    let mut phantom_m = 0.0;
    let mut checked = 0;
    for l in of("parada") {
        let (Some(start), end) = (int(&l["inicio_utc"]), int(&l["fin_utc"]).unwrap_or(now)) else {
            continue;
        };
        if end - start < 600 {
            continue;
        }
        let Some(id) = ids.get(plate(l).as_str()) else {
            continue;
        };
        let fixes = store.fixes(*id, start + 30, end - 30)?;
        phantom_m += fixes
            .windows(2)
            .map(|w| segment_m(&w[0], &w[1], config.perdida_senal_s))
            .sum::<f64>();
        checked += 1;
    }

    Ok(Evaluation {
        base: db.display().to_string(),
        verdad: truth.display().to_string(),
        escenario: meta.scenario,
        tipos: types,
        km,
        km_fantasma_detenida: phantom_m / 1000.0,
        paradas_revisadas_km_fantasma: checked,
    })
}

/// One-to-one matching by overlap after widening the truth by the tolerance.
fn score(tipo: &str, truth: &[Interval], detected: &[Interval], now: i64) -> TypeScore {
    let mut candidates = Vec::new();
    for (ti, t) in truth.iter().enumerate() {
        let (ts, te) = (
            t.start.saturating_sub(TOLERANCE_S),
            t.end_or(now).saturating_add(TOLERANCE_S),
        );
        for (di, d) in detected.iter().enumerate() {
            if d.plate != t.plate || d.key != t.key {
                continue;
            }
            let overlap = te.min(d.end_or(now)) - ts.max(d.start);
            if overlap > 0 {
                candidates.push((overlap, ti, di));
            }
        }
    }
    candidates.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut truth_match = vec![None; truth.len()];
    let mut detected_match = vec![None; detected.len()];
    for (_, ti, di) in candidates {
        if truth_match[ti].is_none() && detected_match[di].is_none() {
            truth_match[ti] = Some(di);
            detected_match[di] = Some(ti);
        }
    }
    let mut tp = 0;
    let mut start_errors = Vec::new();
    let mut end_errors = Vec::new();
    let mut misses = Vec::new();
    for (ti, t) in truth.iter().enumerate() {
        match truth_match[ti] {
            Some(di) if !t.dont_care => {
                tp += 1;
                let d = &detected[di];
                if t.start_known && d.start_known {
                    start_errors.push((d.start - t.start).abs());
                }
                if let (Some(te), Some(de)) = (t.end, d.end) {
                    end_errors.push((de - te).abs());
                }
            }
            None if !t.dont_care => misses.push(t.describe()),
            _ => {}
        }
    }
    let mut false_alarms = Vec::new();
    for (di, d) in detected.iter().enumerate() {
        if detected_match[di].is_none() && !d.dont_care {
            false_alarms.push(d.describe());
        }
    }
    let fp = false_alarms.len();
    let fn_ = misses.len();
    let precision = if tp + fp == 0 {
        1.0
    } else {
        tp as f64 / (tp + fp) as f64
    };
    let recall = if tp + fn_ == 0 {
        1.0
    } else {
        tp as f64 / (tp + fn_) as f64
    };
    let f1 = if precision + recall == 0.0 {
        0.0
    } else {
        2.0 * precision * recall / (precision + recall)
    };
    let mean = |v: &[i64]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<i64>() as f64 / v.len() as f64
        }
    };
    misses.truncate(10);
    false_alarms.truncate(10);
    TypeScore {
        tipo: tipo.to_owned(),
        verdad: truth.iter().filter(|t| !t.dont_care).count(),
        detectados: detected.iter().filter(|d| !d.dont_care).count(),
        verdaderos_positivos: tp,
        falsos_positivos: fp,
        falsos_negativos: fn_,
        precision,
        exhaustividad: recall,
        f1,
        error_inicio_medio_s: mean(&start_errors),
        error_inicio_max_s: start_errors.iter().copied().max().unwrap_or(0),
        error_fin_medio_s: mean(&end_errors),
        error_fin_max_s: end_errors.iter().copied().max().unwrap_or(0),
        no_detectados: misses,
        falsas_alarmas: false_alarms,
    }
}
