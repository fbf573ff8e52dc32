//! The fidelity grid's charts as PNG bytes: F1 per event type against each noise level, the
//! distribution of the GPS-only kilometre error, and the phantom kilometres while parked.
//!
//! Owns the drawing only (plotters on an RGB buffer, the map's embedded DejaVu Sans and PNG
//! encoder); what is drawn comes summed up from `grid.rs`, and the verb writes the files.
//! Every noise key that varies over the grid gets a panel, and so does the tracker profile
//! (`--rastreadores`); along it, the counts of all the other points sharing a value are
//! pooled. The kilometre error gets a box per σ and per profile.

use plotters::prelude::*;

use super::grid::{GridReport, PointSummary, f1, number, quantile};

const HEIGHT: u32 = 380;
const PANEL_WIDTH: u32 = 330;
/// The targets drawn as dashed lines (issue 14).
const F1_TARGETS: [f64; 2] = [0.97, 0.99];
const KM_TARGET_PCT: f64 = 2.0;
const PHANTOM_TARGET_KM_PER_8H: f64 = 0.05;
const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

#[derive(Debug, thiserror::Error)]
#[error("no se pudo dibujar el gráfico {chart}: {reason}")]
pub struct ChartError {
    chart: &'static str,
    reason: String,
}

/// A noise key of the grid: its words and how to read it off a point.
struct Dimension {
    title: &'static str,
    value: fn(&PointSummary) -> Option<f64>,
    /// Shown value per stored value (probabilities as percent).
    scale: f64,
}

const DIMENSIONS: [Dimension; 7] = [
    Dimension {
        title: "σ (m)",
        value: |p| p.punto.ruido.sigma_m,
        scale: 1.0,
    },
    Dimension {
        title: "deriva (m)",
        value: |p| p.punto.ruido.deriva_sigma_m,
        scale: 1.0,
    },
    Dimension {
        title: "τ de la deriva (s)",
        value: |p| p.punto.ruido.deriva_tau_s,
        scale: 1.0,
    },
    Dimension {
        title: "saltos (%)",
        value: |p| p.punto.ruido.saltos_probabilidad,
        scale: 100.0,
    },
    Dimension {
        title: "tamaño del salto (m)",
        value: |p| p.punto.ruido.saltos_m,
        scale: 1.0,
    },
    Dimension {
        title: "duplicados (%)",
        value: |p| p.punto.ruido.duplicados_probabilidad,
        scale: 100.0,
    },
    Dimension {
        title: "tardíos (%)",
        value: |p| p.punto.ruido.retrasados_probabilidad,
        scale: 100.0,
    },
];

/// A dimension that varies over the grid: a noise key, or the tracker profile (named
/// values, drawn at 0, 1, 2… in the order the grid gives them).
struct Axis {
    title: &'static str,
    noise: Option<&'static Dimension>,
    /// Distinct values (shown scale), ascending.
    values: Vec<f64>,
    /// The profiles' names, for the tracker axis.
    names: Vec<String>,
}

impl Axis {
    /// The point's value on this axis (shown scale).
    fn value(&self, point: &PointSummary) -> Option<f64> {
        match self.noise {
            Some(d) => (d.value)(point).map(|v| v * d.scale),
            None => {
                let name = point.punto.rastreador.as_ref()?;
                self.names.iter().position(|n| n == name).map(|i| i as f64)
            }
        }
    }

    /// How a tick reads: the number, or the profile at that position.
    fn tick(&self, x: f64) -> String {
        if self.names.is_empty() {
            return number(x);
        }
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 {
            self.names.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    }
}

/// The dimensions that vary over the grid, each with its distinct values: the noise keys,
/// then the tracker profile.
fn varying(report: &GridReport) -> Vec<Axis> {
    let mut axes: Vec<Axis> = DIMENSIONS
        .iter()
        .filter_map(|d| {
            let mut values: Vec<f64> = report
                .puntos
                .iter()
                .filter_map(|p| (d.value)(p).map(|v| v * d.scale))
                .collect();
            values.sort_by(f64::total_cmp);
            values.dedup();
            (values.len() > 1).then_some(Axis {
                title: d.title,
                noise: Some(d),
                values,
                names: Vec::new(),
            })
        })
        .collect();
    let mut names: Vec<String> = Vec::new();
    for point in &report.puntos {
        if let Some(name) = &point.punto.rastreador
            && !names.contains(name)
        {
            names.push(name.clone());
        }
    }
    if names.len() > 1 {
        axes.push(Axis {
            title: "rastreador",
            noise: None,
            values: (0..names.len()).map(|i| i as f64).collect(),
            names,
        });
    }
    axes
}

/// The points where `axis` has `value`.
fn at<'a>(
    report: &'a GridReport,
    axis: &'a Axis,
    value: f64,
) -> impl Iterator<Item = &'a PointSummary> {
    report
        .puntos
        .iter()
        .filter(move |p| axis.value(p).is_some_and(|v| (v - value).abs() < 1e-9))
}

/// The event types, in the evaluation's order.
fn kinds(report: &GridReport) -> Vec<String> {
    report
        .puntos
        .first()
        .map(|p| p.tipos.iter().map(|t| t.tipo.clone()).collect())
        .unwrap_or_default()
}

/// One line of a panel: its name and a y per x (missing where there is nothing to count).
struct Series {
    name: String,
    colour: RGBColor,
    points: Vec<(f64, Option<f64>)>,
}

/// F1 per event type against each varying noise key.
pub fn f1_chart(report: &GridReport) -> Result<Vec<u8>, ChartError> {
    let kinds = kinds(report);
    let axes = varying(report);
    let panels: Vec<(&Axis, Vec<Series>)> = axes
        .iter()
        .map(|axis| {
            let series = kinds
                .iter()
                .enumerate()
                .map(|(k, kind)| Series {
                    name: kind.clone(),
                    colour: COLOURS[k % COLOURS.len()],
                    points: axis
                        .values
                        .iter()
                        .map(|&v| {
                            let (tp, fp, fn_) = at(report, axis, v)
                                .filter_map(|p| p.score(kind))
                                .fold((0, 0, 0), |a, t| {
                                    (
                                        a.0 + t.verdaderos_positivos,
                                        a.1 + t.falsos_positivos,
                                        a.2 + t.falsos_negativos,
                                    )
                                });
                            (v, f1(tp, fp, fn_))
                        })
                        .collect(),
                })
                .collect();
            (axis, series)
        })
        .collect();
    let low = panels
        .iter()
        .flat_map(|(_, s)| s.iter().flat_map(|s| s.points.iter().filter_map(|p| p.1)))
        .fold(0.95f64, f64::min);
    let y_range = ((low - 0.02).max(0.0) / 0.01).floor() * 0.01..1.005;
    line_panels(
        "f1_ruido",
        "F1 por tipo de evento según el ruido (semillas y demás puntos sumados)",
        "F1",
        &panels,
        y_range,
        &F1_TARGETS,
    )
}

/// Phantom kilometres per 8 h parked against each varying noise key.
pub fn phantom_chart(report: &GridReport) -> Result<Vec<u8>, ChartError> {
    let axes = varying(report);
    let panels: Vec<(&Axis, Vec<Series>)> = axes
        .iter()
        .map(|axis| {
            let values = &axis.values;
            let rate = |v: f64| {
                let (km, hours) = at(report, axis, v).fold((0.0, 0.0), |a, p| {
                    (a.0 + p.km.fantasma_km, a.1 + p.km.horas_detenida)
                });
                (hours > 0.0).then(|| km / hours * 8.0)
            };
            let worst = |v: f64| {
                at(report, axis, v)
                    .filter_map(|p| p.km.fantasma_km_por_8h)
                    .reduce(f64::max)
            };
            let series = vec![
                Series {
                    name: "media".into(),
                    colour: COLOURS[0],
                    points: values.iter().map(|&v| (v, rate(v))).collect(),
                },
                Series {
                    name: "peor punto".into(),
                    colour: COLOURS[1],
                    points: values.iter().map(|&v| (v, worst(v))).collect(),
                },
            ];
            (axis, series)
        })
        .collect();
    let high = panels
        .iter()
        .flat_map(|(_, s)| s.iter().flat_map(|s| s.points.iter().filter_map(|p| p.1)))
        .fold(PHANTOM_TARGET_KM_PER_8H * 1.5, f64::max);
    line_panels(
        "km_fantasma",
        "Km fantasma por cada 8 h detenida según el ruido",
        "km / 8 h",
        &panels,
        0.0..high * 1.1,
        &[PHANTOM_TARGET_KM_PER_8H],
    )
}

/// Panels side by side, one per noise key, with the same y axis and dashed targets.
fn line_panels(
    chart: &'static str,
    title: &str,
    y_title: &str,
    panels: &[(&Axis, Vec<Series>)],
    y_range: std::ops::Range<f64>,
    targets: &[f64],
) -> Result<Vec<u8>, ChartError> {
    let fail = |e: &dyn std::fmt::Display| ChartError {
        chart,
        reason: e.to_string(),
    };
    let width = PANEL_WIDTH * panels.len().max(1) as u32;
    let mut rgb = vec![255u8; (width * HEIGHT * 3) as usize];
    crate::map::register_fonts();
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (width, HEIGHT)).into_drawing_area();
        let root = root
            .titled(title, ("sans-serif", 16))
            .map_err(|e| fail(&e))?;
        if panels.is_empty() {
            root.draw(&Text::new(
                "ningún valor del ruido varía en la matriz",
                (20, 40),
                ("sans-serif", 14),
            ))
            .map_err(|e| fail(&e))?;
        }
        let areas = root.split_evenly((1, panels.len().max(1)));
        for (i, ((axis, series), area)) in panels.iter().zip(&areas).enumerate() {
            let xs: Vec<f64> = series
                .first()
                .map(|s| s.points.iter().map(|p| p.0).collect())
                .unwrap_or_default();
            let (x_min, x_max) = (
                xs.iter().copied().fold(f64::INFINITY, f64::min),
                xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            );
            let pad = if x_max > x_min {
                (x_max - x_min) * 0.08
            } else {
                0.5
            };
            let mut plot = ChartBuilder::on(area)
                .margin(8)
                .x_label_area_size(36)
                .y_label_area_size(if i == 0 { 52 } else { 40 })
                .build_cartesian_2d(x_min - pad..x_max + pad, y_range.clone())
                .map_err(|e| fail(&e))?;
            let mut mesh = plot.configure_mesh();
            if !axis.names.is_empty() {
                mesh.x_labels(axis.names.len());
            }
            mesh.x_desc(axis.title)
                .y_desc(if i == 0 { y_title } else { "" })
                .x_label_formatter(&|x| axis.tick(*x))
                .y_labels(6)
                .label_style(("sans-serif", 12))
                .light_line_style(WHITE.mix(0.0))
                .draw()
                .map_err(|e| fail(&e))?;
            for target in targets {
                plot.draw_series(dashed(x_min - pad, x_max + pad, *target))
                    .map_err(|e| fail(&e))?;
            }
            for s in series {
                let points: Vec<(f64, f64)> = s
                    .points
                    .iter()
                    .filter_map(|(x, y)| y.map(|y| (*x, y)))
                    .collect();
                let drawn = plot
                    .draw_series(std::iter::once(PathElement::new(
                        points.clone(),
                        s.colour.stroke_width(2),
                    )))
                    .map_err(|e| fail(&e))?;
                let colour = s.colour;
                drawn.label(s.name.clone()).legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 16, y)], colour.stroke_width(2))
                });
                plot.draw_series(points.iter().map(|p| Circle::new(*p, 3, s.colour.filled())))
                    .map_err(|e| fail(&e))?;
            }
            if i == 0 {
                plot.configure_series_labels()
                    .position(SeriesLabelPosition::LowerLeft)
                    .label_font(("sans-serif", 11))
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK.mix(0.3))
                    .draw()
                    .map_err(|e| fail(&e))?;
            }
        }
        root.present().map_err(|e| fail(&e))?;
    }
    crate::map::encode_png(&rgb, width, HEIGHT).map_err(|e| fail(&e))
}

/// The kilometre errors to box: one group per σ and per tracker profile where they vary
/// (every point in one group when neither does), sorted later.
fn km_groups(report: &GridReport) -> Vec<(String, Vec<f64>)> {
    // One box per σ and per tracker profile where they vary.
    let axes: Vec<Axis> = varying(report)
        .into_iter()
        .filter(|a| a.noise.is_none_or(|d| d.title == DIMENSIONS[0].title))
        .collect();
    let mut groups: Vec<(String, Vec<&PointSummary>)> =
        vec![(String::new(), report.puntos.iter().collect())];
    for axis in &axes {
        groups = groups
            .into_iter()
            .flat_map(|(label, points)| {
                axis.values.iter().map(move |&v| {
                    let word = match axis.noise {
                        Some(_) => format!("σ {} m", number(v)),
                        None => axis.tick(v),
                    };
                    let label = if label.is_empty() {
                        word
                    } else {
                        format!("{label}, {word}")
                    };
                    let here = points
                        .iter()
                        .copied()
                        .filter(|p| axis.value(p).is_some_and(|x| (x - v).abs() < 1e-9))
                        .collect();
                    (label, here)
                })
            })
            .collect();
    }
    groups
        .into_iter()
        .map(|(label, points)| {
            let label = if label.is_empty() {
                "todos los puntos".to_owned()
            } else {
                label
            };
            let errors = points
                .iter()
                .flat_map(|p| p.errores_km_gps_pct.iter().copied())
                .collect();
            (label, errors)
        })
        .collect()
}

/// A target: a grey dashed horizontal line at `y` from `x0` to `x1` (forty dashes).
fn dashed(x0: f64, x1: f64, y: f64) -> Vec<PathElement<(f64, f64)>> {
    let step = (x1 - x0) / 40.0;
    (0..40)
        .map(|i| {
            let a = x0 + step * f64::from(i);
            PathElement::new(
                [(a, y), (a + step * 0.6, y)],
                BLACK.mix(0.5).stroke_width(1),
            )
        })
        .collect()
}

/// Box plots of the GPS-only kilometre error per unit-day along σ (or a single box when σ
/// does not vary): p5–p95 whiskers, quartile box, median, the largest as a dot.
pub fn km_chart(report: &GridReport) -> Result<Vec<u8>, ChartError> {
    let chart = "error_km";
    let fail = |e: &dyn std::fmt::Display| ChartError {
        chart,
        reason: e.to_string(),
    };
    let mut groups = km_groups(report);
    for (_, errors) in &mut groups {
        errors.sort_by(f64::total_cmp);
    }
    let high = groups
        .iter()
        .filter_map(|(_, e)| e.last().copied())
        .fold(KM_TARGET_PCT * 1.25, f64::max);
    let width = 160 * groups.len() as u32 + 160;
    let mut rgb = vec![255u8; (width * HEIGHT * 3) as usize];
    crate::map::register_fonts();
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (width, HEIGHT)).into_drawing_area();
        let root = root
            .titled("Error de km solo GPS por unidad-día", ("sans-serif", 16))
            .map_err(|e| fail(&e))?;
        let n = groups.len() as f64;
        let mut plot = ChartBuilder::on(&root)
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(52)
            .build_cartesian_2d(-0.5..n - 0.5, 0.0..high * 1.08)
            .map_err(|e| fail(&e))?;
        let labels: Vec<String> = groups.iter().map(|g| g.0.clone()).collect();
        let name_of = |x: &f64| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        plot.configure_mesh()
            .y_desc("error (%)")
            .x_labels(groups.len())
            .x_label_formatter(&name_of)
            .label_style(("sans-serif", 12))
            .disable_x_mesh()
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(|e| fail(&e))?;
        plot.draw_series(dashed(-0.5, n - 0.5, KM_TARGET_PCT))
            .map_err(|e| fail(&e))?;
        for (i, (_, errors)) in groups.iter().enumerate() {
            let q = |p: f64| quantile(errors, p);
            let (Some(p5), Some(q1), Some(med), Some(q3), Some(p95), Some(max)) = (
                q(0.05),
                q(0.25),
                q(0.5),
                q(0.75),
                q(0.95),
                errors.last().copied(),
            ) else {
                continue;
            };
            let x = i as f64;
            let colour = COLOURS[0];
            let elements = vec![
                PathElement::new([(x, p5), (x, q1)], colour.stroke_width(1)),
                PathElement::new([(x, q3), (x, p95)], colour.stroke_width(1)),
                PathElement::new([(x - 0.12, p5), (x + 0.12, p5)], colour.stroke_width(1)),
                PathElement::new([(x - 0.12, p95), (x + 0.12, p95)], colour.stroke_width(1)),
                PathElement::new([(x - 0.25, med), (x + 0.25, med)], BLACK.stroke_width(2)),
            ];
            plot.draw_series(std::iter::once(Rectangle::new(
                [(x - 0.25, q1), (x + 0.25, q3)],
                colour.mix(0.35).filled(),
            )))
            .map_err(|e| fail(&e))?;
            plot.draw_series(elements).map_err(|e| fail(&e))?;
            plot.draw_series(std::iter::once(Circle::new(
                (x, max),
                3,
                COLOURS[1].filled(),
            )))
            .map_err(|e| fail(&e))?;
        }
        root.present().map_err(|e| fail(&e))?;
    }
    crate::map::encode_png(&rgb, width, HEIGHT).map_err(|e| fail(&e))
}
