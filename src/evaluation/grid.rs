//! The fidelity grid behind `flota evaluar --matriz`: scenarios × noise levels × seeds, each
//! run scored by the evaluation, summed up per grid point, and the F1 gate over the grid.
//!
//! Owns what a grid point is (a scenario, the `[ruido]` keys it overrides, a tracker profile
//! slot), running the points on worker threads through a closure the verb hands it (this
//! module neither simulates nor writes files), how runs are summed up per point (true and
//! false positives pooled over seeds, the worst seed kept), the Spanish table, the JSON and
//! the gate naming every failing point. The charts are `charts.rs`'s.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde::Serialize;

use super::Evaluation;
use crate::plumbing::mutex::lock;
use crate::scenario::NoiseFile;

/// The noise levels to try: each list given is a dimension of the grid; an empty one keeps
/// the scenario's own value.
#[derive(Debug, Clone, Default)]
pub struct Levels {
    pub sigma_m: Vec<f64>,
    pub drift_m: Vec<f64>,
    pub tau_s: Vec<f64>,
    pub jumps: Vec<f64>,
    pub jump_m: Vec<f64>,
    pub duplicates: Vec<f64>,
    pub late: Vec<f64>,
    /// How late a late report is, seconds (one range, not a dimension).
    pub delay_s: Option<[f64; 2]>,
}

/// One grid point's `[ruido]` overrides; `None` keeps the scenario's value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Noise {
    pub sigma_m: Option<f64>,
    pub deriva_sigma_m: Option<f64>,
    pub deriva_tau_s: Option<f64>,
    pub saltos_probabilidad: Option<f64>,
    pub saltos_m: Option<f64>,
    pub duplicados_probabilidad: Option<f64>,
    pub retrasados_probabilidad: Option<f64>,
    pub retraso_s: Option<[f64; 2]>,
}

impl Noise {
    /// Writes the overrides into a scenario's noise. A new `sigma_m` also sets the noise
    /// while standing still, which would otherwise stay at the scenario's level.
    pub fn apply(&self, noise: &mut NoiseFile) {
        if let Some(sigma) = self.sigma_m {
            noise.sigma_m = sigma;
            noise.jitter_estacionado_m = None;
        }
        let set = |slot: &mut f64, value: Option<f64>| {
            if let Some(v) = value {
                *slot = v;
            }
        };
        set(&mut noise.deriva_sigma_m, self.deriva_sigma_m);
        set(&mut noise.deriva_tau_s, self.deriva_tau_s);
        set(&mut noise.saltos_probabilidad, self.saltos_probabilidad);
        set(&mut noise.saltos_m, self.saltos_m);
        set(
            &mut noise.duplicados_probabilidad,
            self.duplicados_probabilidad,
        );
        set(
            &mut noise.retrasados_probabilidad,
            self.retrasados_probabilidad,
        );
        if let Some(delay) = self.retraso_s {
            noise.retraso_s = delay;
        }
    }

    /// Each override in words, in the grid's key order (`None` for a key not overridden).
    fn parts(&self) -> [Option<String>; KEYS] {
        let metres = |v: Option<f64>, word: &str| v.map(|v| format!("{word} {} m", number(v)));
        let percent =
            |v: Option<f64>, word: &str| v.map(|v| format!("{word} {} %", number(v * 100.0)));
        [
            metres(self.sigma_m, "σ"),
            metres(self.deriva_sigma_m, "deriva"),
            self.deriva_tau_s.map(|v| format!("τ {} s", number(v))),
            percent(self.saltos_probabilidad, "saltos"),
            metres(self.saltos_m, "saltos de"),
            percent(self.duplicados_probabilidad, "duplicados"),
            percent(self.retrasados_probabilidad, "tardíos"),
        ]
    }

    /// The overrides in words: `σ 15 m, deriva 10 m, saltos 0,5 %`.
    pub fn label(&self) -> String {
        self.label_of(&[true; KEYS])
    }

    /// The overrides of the keys `shown` in words.
    fn label_of(&self, shown: &[bool; KEYS]) -> String {
        let parts: Vec<String> = self
            .parts()
            .into_iter()
            .zip(shown)
            .filter_map(|(part, shown)| part.filter(|_| *shown))
            .collect();
        if parts.is_empty() {
            "ruido del escenario".to_owned()
        } else {
            parts.join(", ")
        }
    }
}

/// The noise keys a grid can vary.
const KEYS: usize = 7;

/// A number as people write it here: no trailing zeros, a decimal comma.
pub fn number(value: f64) -> String {
    // A tick a rounding error below zero is zero, not "-0".
    let value = if value.abs() < 5e-5 { 0.0 } else { value };
    let text = format!("{:.4}", value);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.replace('.', ",")
}

/// Writes one noise key of a point.
type SetLevel = fn(&mut Noise, Option<f64>);

/// What to run: every scenario at every noise point with every seed.
#[derive(Debug, Clone)]
pub struct Grid {
    pub scenarios: Vec<PathBuf>,
    pub levels: Levels,
    pub seeds: Vec<u64>,
    /// Tracker profiles to try, by name, every unit on the same one (`--rastreadores`);
    /// `[None]`: each unit its own.
    pub profiles: Vec<Option<String>>,
}

/// One grid point: a scenario under one noise (and tracker profile).
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub escenario: String,
    #[serde(skip)]
    pub path: PathBuf,
    pub ruido: Noise,
    /// The tracker profile every unit uses; `null`: each unit's own.
    pub rastreador: Option<String>,
}

impl Point {
    /// The point in words, for the table and the gate.
    pub fn label(&self) -> String {
        match &self.rastreador {
            Some(profile) => format!(
                "{}, {}, rastreador {profile}",
                self.escenario,
                self.ruido.label()
            ),
            None => format!("{}, {}", self.escenario, self.ruido.label()),
        }
    }
}

impl Grid {
    /// Every point, scenario by scenario, then σ, drift, jumps… in the order given.
    pub fn points(&self) -> Vec<Point> {
        let levels = &self.levels;
        let axis = |values: &[f64]| -> Vec<Option<f64>> {
            if values.is_empty() {
                vec![None]
            } else {
                values.iter().copied().map(Some).collect()
            }
        };
        let mut noises = vec![Noise {
            retraso_s: levels.delay_s,
            ..Noise::default()
        }];
        let dimensions: [(&[f64], SetLevel); 7] = [
            (&levels.sigma_m, |n, v| n.sigma_m = v),
            (&levels.drift_m, |n, v| n.deriva_sigma_m = v),
            (&levels.tau_s, |n, v| n.deriva_tau_s = v),
            (&levels.jumps, |n, v| n.saltos_probabilidad = v),
            (&levels.jump_m, |n, v| n.saltos_m = v),
            (&levels.duplicates, |n, v| n.duplicados_probabilidad = v),
            (&levels.late, |n, v| n.retrasados_probabilidad = v),
        ];
        for (values, set) in dimensions {
            noises = noises
                .into_iter()
                .flat_map(|noise| {
                    axis(values).into_iter().map(move |v| {
                        let mut n = noise;
                        set(&mut n, v);
                        n
                    })
                })
                .collect();
        }
        let mut points = Vec::new();
        for path in &self.scenarios {
            let escenario = path.file_stem().map_or_else(
                || path.display().to_string(),
                |s| s.to_string_lossy().into(),
            );
            for profile in &self.profiles {
                for noise in &noises {
                    points.push(Point {
                        escenario: escenario.clone(),
                        path: path.clone(),
                        ruido: *noise,
                        rastreador: profile.clone(),
                    });
                }
            }
        }
        points
    }
}

/// What one run (a point with a seed) scored.
#[derive(Debug, Clone, Serialize)]
pub struct RunScore {
    pub tipos: Vec<RunType>,
    /// GPS-only kilometre error of every judged unit-day, percent.
    pub errores_km_gps_pct: Vec<f64>,
    pub km_fantasma: f64,
    pub horas_detenida: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunType {
    pub tipo: String,
    pub vp: usize,
    pub fp: usize,
    pub fn_: usize,
    pub f1: Option<f64>,
    pub p95_inicio_s: Option<i64>,
    pub p95_fin_s: Option<i64>,
}

impl RunScore {
    pub fn of(evaluation: &Evaluation) -> RunScore {
        RunScore {
            tipos: evaluation
                .tipos
                .iter()
                .map(|t| RunType {
                    tipo: t.tipo.clone(),
                    vp: t.verdaderos_positivos,
                    fp: t.falsos_positivos,
                    fn_: t.falsos_negativos,
                    f1: t.f1,
                    p95_inicio_s: t.error_inicio_s.p95,
                    p95_fin_s: t.error_fin_s.p95,
                })
                .collect(),
            errores_km_gps_pct: evaluation.km.errores_gps_pct.clone(),
            km_fantasma: evaluation.km_fantasma_detenida,
            horas_detenida: evaluation.horas_revisadas_km_fantasma,
        }
    }
}

/// Runs every point with every seed on `workers` threads; `run_one` simulates and scores one
/// run, `done` is told after each. Stops early (returning `None`) when `stop` says so, and
/// on the first error. Results come back in point and seed order whatever the threads did.
pub fn run_all<F>(
    points: &[Point],
    seeds: &[u64],
    workers: usize,
    run_one: F,
    done: &(dyn Fn() + Sync),
    stop: &(dyn Fn() -> bool + Sync),
) -> anyhow::Result<Option<Vec<Vec<RunScore>>>>
where
    F: Fn(&Point, u64) -> anyhow::Result<RunScore> + Sync,
{
    let jobs: Vec<(usize, usize)> = (0..points.len())
        .flat_map(|p| (0..seeds.len()).map(move |s| (p, s)))
        .collect();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Mutex<Vec<Option<RunScore>>> = Mutex::new(vec![None; jobs.len()]);
    let first_error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..workers.clamp(1, jobs.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let job = next.fetch_add(1, Ordering::Relaxed);
                    if job >= jobs.len() || failed.load(Ordering::Relaxed) || stop() {
                        return;
                    }
                    let (p, s) = jobs[job];
                    match run_one(&points[p], seeds[s]) {
                        Ok(score) => lock(&results)[job] = Some(score),
                        Err(err) => {
                            failed.store(true, Ordering::Relaxed);
                            lock(&first_error).get_or_insert(err.context(format!(
                                "{} con semilla {}",
                                points[p].label(),
                                seeds[s]
                            )));
                            return;
                        }
                    }
                    done();
                }
            });
        }
    });
    if let Some(err) = lock(&first_error).take() {
        return Err(err);
    }
    let mut flat = std::mem::take(&mut *lock(&results)).into_iter();
    let mut grouped = Vec::with_capacity(points.len());
    for _ in points {
        let mut runs = Vec::with_capacity(seeds.len());
        for _ in seeds {
            match flat.next().flatten() {
                Some(run) => runs.push(run),
                None => return Ok(None),
            }
        }
        grouped.push(runs);
    }
    Ok(Some(grouped))
}

/// One event type at one point, over its seeds.
#[derive(Debug, Clone, Serialize)]
pub struct TypeSummary {
    pub tipo: String,
    pub verdaderos_positivos: usize,
    pub falsos_positivos: usize,
    pub falsos_negativos: usize,
    /// F1 of the counts pooled over the seeds; `null` with nothing to count.
    pub f1: Option<f64>,
    /// The worst seed's F1 and the seed.
    pub f1_peor: Option<f64>,
    pub semilla_peor: Option<u64>,
    /// The largest p95 over the seeds of the start and end errors of hits, seconds.
    pub p95_inicio_s: Option<i64>,
    pub p95_fin_s: Option<i64>,
}

/// Kilometres at one point, over its seeds.
#[derive(Debug, Clone, Serialize)]
pub struct KmSummary {
    /// Unit-days judged on GPS-only kilometres.
    pub dias: usize,
    pub error_gps_mediana_pct: Option<f64>,
    pub error_gps_p95_pct: Option<f64>,
    pub error_gps_max_pct: Option<f64>,
    /// Phantom kilometres while truly parked, in all, over how many parked hours, and per
    /// 8 h parked.
    pub fantasma_km: f64,
    pub horas_detenida: f64,
    pub fantasma_km_por_8h: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PointSummary {
    #[serde(flatten)]
    pub punto: Point,
    pub tipos: Vec<TypeSummary>,
    pub km: KmSummary,
    /// Every unit-day's GPS-only error, percent, for the charts.
    #[serde(skip)]
    pub errores_km_gps_pct: Vec<f64>,
}

impl PointSummary {
    pub fn of(punto: Point, seeds: &[u64], runs: &[RunScore]) -> PointSummary {
        let kinds: Vec<String> = runs
            .first()
            .map(|r| r.tipos.iter().map(|t| t.tipo.clone()).collect())
            .unwrap_or_default();
        let tipos = kinds
            .iter()
            .enumerate()
            .map(|(i, kind)| type_summary(kind, seeds, runs, i))
            .collect();
        let mut errors: Vec<f64> = runs
            .iter()
            .flat_map(|r| r.errores_km_gps_pct.iter().copied())
            .collect();
        errors.sort_by(f64::total_cmp);
        let phantom: f64 = runs.iter().map(|r| r.km_fantasma).sum();
        let hours: f64 = runs.iter().map(|r| r.horas_detenida).sum();
        PointSummary {
            punto,
            tipos,
            km: KmSummary {
                dias: errors.len(),
                error_gps_mediana_pct: quantile(&errors, 0.5),
                error_gps_p95_pct: quantile(&errors, 0.95),
                error_gps_max_pct: errors.last().copied(),
                fantasma_km: phantom,
                horas_detenida: hours,
                fantasma_km_por_8h: (hours > 0.0).then(|| phantom / hours * 8.0),
            },
            errores_km_gps_pct: errors,
        }
    }

    pub fn score(&self, tipo: &str) -> Option<&TypeSummary> {
        self.tipos.iter().find(|t| t.tipo == tipo)
    }
}

fn type_summary(kind: &str, seeds: &[u64], runs: &[RunScore], i: usize) -> TypeSummary {
    let of = |r: &RunScore| r.tipos.get(i).filter(|t| t.tipo == kind).cloned();
    let each: Vec<(u64, RunType)> = seeds
        .iter()
        .zip(runs)
        .filter_map(|(seed, r)| of(r).map(|t| (*seed, t)))
        .collect();
    let (tp, fp, fn_) = each.iter().fold((0, 0, 0), |acc, (_, t)| {
        (acc.0 + t.vp, acc.1 + t.fp, acc.2 + t.fn_)
    });
    let worst = each
        .iter()
        .filter_map(|(seed, t)| t.f1.map(|f1| (*seed, f1)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    TypeSummary {
        tipo: kind.to_owned(),
        verdaderos_positivos: tp,
        falsos_positivos: fp,
        falsos_negativos: fn_,
        f1: f1(tp, fp, fn_),
        f1_peor: worst.map(|w| w.1),
        semilla_peor: worst.map(|w| w.0),
        p95_inicio_s: each.iter().filter_map(|(_, t)| t.p95_inicio_s).max(),
        p95_fin_s: each.iter().filter_map(|(_, t)| t.p95_fin_s).max(),
    }
}

/// F1 of pooled counts, as the evaluation defines it: `None` when there is nothing to count.
pub fn f1(tp: usize, fp: usize, fn_: usize) -> Option<f64> {
    let total = 2 * tp + fp + fn_;
    (total > 0).then(|| 2.0 * tp as f64 / total as f64)
}

/// The `q` quantile of sorted values (nearest rank).
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// The whole grid's result: what `--matriz` writes as JSON.
#[derive(Debug, Clone, Serialize)]
pub struct GridReport {
    pub escenarios: Vec<String>,
    pub semillas: Vec<u64>,
    pub tolerancia_s: u32,
    pub ejecuciones: usize,
    pub puntos: Vec<PointSummary>,
}

impl GridReport {
    /// Which noise keys take more than one value over the grid.
    fn varying(&self) -> [bool; KEYS] {
        let mut varying = [false; KEYS];
        if let Some(first) = self.puntos.first() {
            let first = first.punto.ruido.parts();
            for point in &self.puntos {
                for (k, part) in point.punto.ruido.parts().iter().enumerate() {
                    varying[k] |= *part != first[k];
                }
            }
        }
        varying
    }

    /// A point in words, naming only the noise keys that vary over the grid.
    fn point_label(&self, point: &Point) -> String {
        let noise = point.ruido.label_of(&self.varying());
        match &point.rastreador {
            Some(profile) => format!("{}, {noise}, rastreador {profile}", point.escenario),
            None => format!("{}, {noise}", point.escenario),
        }
    }

    /// The Spanish table: the noise common to every point, then one line per point.
    pub fn table(&self) -> String {
        let varying = self.varying();
        let fixed = self.puntos.first().map_or(String::new(), |p| {
            p.punto.ruido.label_of(&varying.map(|v| !v))
        });
        let fixed_noise = if fixed == "ruido del escenario" {
            "ninguno; el resto del ruido, el de cada escenario".to_owned()
        } else {
            format!("{fixed}; el resto, el de cada escenario")
        };
        let mut out = format!(
            "Matriz de fidelidad: {} puntos × {} semillas = {} ejecuciones (tolerancia ±{} s)\n\
             Ruido fijado en toda la matriz: {fixed_noise}\n\
             F1 con las semillas sumadas (entre paréntesis, el de la peor semilla); p95 del error de\n\
             inicio/fin de las paradas que aciertan (peor semilla); error de km solo GPS por unidad-día\n\
             (p95 / máximo); km fantasma por cada 8 h detenida.\n\n",
            self.puntos.len(),
            self.semillas.len(),
            self.ejecuciones,
            self.tolerancia_s
        );
        let labels: Vec<String> = self
            .puntos
            .iter()
            .map(|p| p.punto.ruido.label_of(&varying))
            .collect();
        let scenario_width = self
            .puntos
            .iter()
            .map(|p| p.punto.escenario.chars().count())
            .chain(std::iter::once(9))
            .max()
            .unwrap_or(9);
        let noise_width = labels
            .iter()
            .map(|l| l.chars().count())
            .chain([5])
            .max()
            .unwrap_or(5);
        let kinds: Vec<&str> = self
            .puntos
            .first()
            .map(|p| p.tipos.iter().map(|t| t.tipo.as_str()).collect())
            .unwrap_or_default();
        let trackers: Vec<String> = self
            .puntos
            .iter()
            .map(|p| p.punto.rastreador.clone().unwrap_or_default())
            .collect();
        let tracker_width = trackers
            .iter()
            .map(|t| t.chars().count())
            .max()
            .filter(|w| *w > 0)
            .map(|w| w.max("rastreador".len()));
        out.push_str(&format!(
            "{:<scenario_width$}  {:<noise_width$}",
            "escenario", "ruido"
        ));
        if let Some(width) = tracker_width {
            out.push_str(&format!("  {:<width$}", "rastreador"));
        }
        for kind in &kinds {
            out.push_str(&format!("  {kind:<17}"));
        }
        out.push_str("  p95 parada  km GPS        fantasma\n");
        for ((point, label), tracker) in self.puntos.iter().zip(&labels).zip(&trackers) {
            out.push_str(&format!(
                "{:<scenario_width$}  {:<noise_width$}",
                point.punto.escenario, label
            ));
            if let Some(width) = tracker_width {
                out.push_str(&format!("  {tracker:<width$}"));
            }
            for kind in &kinds {
                let cell =
                    point
                        .score(kind)
                        .map_or("–".to_owned(), |t| match (t.f1, t.f1_peor) {
                            (Some(f1), Some(worst)) => format!("{f1:.3} ({worst:.3})"),
                            _ => "no aplica".to_owned(),
                        });
                out.push_str(&format!("  {cell:<17}"));
            }
            let stops = point.score("parada");
            let km = &point.km;
            out.push_str(&format!(
                "  {:<10}  {:<12}  {}\n",
                format!(
                    "{}/{}",
                    seconds(stops.and_then(|t| t.p95_inicio_s)),
                    seconds(stops.and_then(|t| t.p95_fin_s))
                ),
                format!(
                    "{}/{}",
                    percent(km.error_gps_p95_pct),
                    percent(km.error_gps_max_pct)
                ),
                km.fantasma_km_por_8h
                    .map_or("–".to_owned(), |v| format!("{v:.3} km")),
            ));
        }
        out
    }

    /// One Spanish line per point where some type's worst seed is below `f1_min`, or `None`
    /// when every point passes. A type with nothing to score passes.
    pub fn gate(&self, f1_min: f64) -> Option<String> {
        let failing: Vec<String> = self
            .puntos
            .iter()
            .filter_map(|point| {
                let below: Vec<String> = point
                    .tipos
                    .iter()
                    .filter_map(|t| {
                        let worst = t.f1_peor.filter(|f1| *f1 < f1_min)?;
                        Some(format!(
                            "{} F1 {worst:.4} con semilla {}",
                            t.tipo,
                            t.semilla_peor.unwrap_or_default()
                        ))
                    })
                    .collect();
                (!below.is_empty())
                    .then(|| format!("  {}: {}", self.point_label(&point.punto), below.join("; ")))
            })
            .collect();
        (!failing.is_empty()).then(|| {
            format!(
                "F1 por debajo de {f1_min} en {} de {} puntos de la matriz:\n{}",
                failing.len(),
                self.puntos.len(),
                failing.join("\n")
            )
        })
    }
}

fn seconds(value: Option<i64>) -> String {
    value.map_or("–".to_owned(), |v| format!("{v} s"))
}

fn percent(value: Option<f64>) -> String {
    value.map_or("–".to_owned(), |v| format!("{v:.1} %"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(kind: &str, vp: usize, fp: usize, fn_: usize) -> RunScore {
        RunScore {
            tipos: vec![RunType {
                tipo: kind.into(),
                vp,
                fp,
                fn_,
                f1: f1(vp, fp, fn_),
                p95_inicio_s: Some(vp as i64),
                p95_fin_s: None,
            }],
            errores_km_gps_pct: vec![vp as f64],
            km_fantasma: 0.01,
            horas_detenida: 4.0,
        }
    }

    #[test]
    fn points_are_the_product_of_the_lists_given() {
        let grid = Grid {
            scenarios: vec!["a/uno.toml".into(), "dos.toml".into()],
            levels: Levels {
                sigma_m: vec![5.0, 15.0],
                jumps: vec![0.0, 0.01, 0.02],
                delay_s: Some([30.0, 600.0]),
                ..Levels::default()
            },
            seeds: vec![1],
            profiles: vec![None],
        };
        let points = grid.points();
        assert_eq!(points.len(), 2 * 2 * 3);
        assert_eq!(points[0].escenario, "uno");
        assert_eq!(points[6].escenario, "dos");
        assert_eq!(
            points[4].ruido,
            Noise {
                sigma_m: Some(15.0),
                saltos_probabilidad: Some(0.01),
                retraso_s: Some([30.0, 600.0]),
                ..Noise::default()
            }
        );
        assert_eq!(points[4].label(), "uno, σ 15 m, saltos 1 %");
    }

    #[test]
    fn an_override_leaves_what_it_does_not_name() {
        let mut noise = NoiseFile {
            jitter_estacionado_m: Some(15.0),
            saltos_m: 120.0,
            ..NoiseFile::default()
        };
        Noise {
            sigma_m: Some(25.0),
            deriva_sigma_m: Some(20.0),
            ..Noise::default()
        }
        .apply(&mut noise);
        assert_eq!(
            (
                noise.sigma_m,
                noise.jitter_estacionado_m,
                noise.deriva_sigma_m
            ),
            (25.0, None, 20.0)
        );
        assert_eq!((noise.saltos_m, noise.saltos_probabilidad), (120.0, 0.0));
    }

    #[test]
    fn seeds_pool_their_counts_and_the_worst_is_named() {
        let point = Grid {
            scenarios: vec!["x.toml".into()],
            levels: Levels::default(),
            seeds: vec![],
            profiles: vec![None],
        }
        .points()
        .remove(0);
        let summary = PointSummary::of(
            point,
            &[7, 8],
            &[run("parada", 9, 1, 0), run("parada", 10, 0, 0)],
        );
        let t = summary.score("parada").unwrap();
        assert_eq!((t.verdaderos_positivos, t.falsos_positivos), (19, 1));
        assert!((t.f1.unwrap() - 38.0 / 39.0).abs() < 1e-12);
        assert_eq!(t.semilla_peor, Some(7));
        assert_eq!(t.p95_inicio_s, Some(10));
        assert_eq!(summary.km.error_gps_max_pct, Some(10.0));
        assert!((summary.km.fantasma_km_por_8h.unwrap() - 0.02).abs() < 1e-12);
        let report = GridReport {
            escenarios: vec!["x".into()],
            semillas: vec![7, 8],
            tolerancia_s: 60,
            ejecuciones: 2,
            puntos: vec![summary],
        };
        assert_eq!(report.gate(0.94), None);
        let gate = report.gate(0.96).unwrap();
        assert!(
            gate.contains("x, ruido del escenario: parada F1 0.9474 con semilla 7"),
            "{gate}"
        );
    }

    #[test]
    fn numbers_are_written_the_spanish_way() {
        for (value, text) in [
            (5.0, "5"),
            (0.5, "0,5"),
            (0.125, "0,125"),
            (200.0, "200"),
            (-0.0, "0"),
            (-1e-9, "0"),
        ] {
            assert_eq!(number(value), text, "{value}");
        }
    }
}
