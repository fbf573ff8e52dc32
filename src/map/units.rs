//! The fleet map's unit markers: one disc per unit in its state's colour, labelled with its
//! plate and minutes in that state, and units at one place fanned out around it so none
//! hides another (a depot at night holds the whole fleet).
//!
//! Owns where each unit's disc lands and drawing it; the states, colours and words come in
//! the [`Scene`]'s `units` from the tool. No I/O.

use plotters::style::RGBColor;

use super::draw::{Canvas, DrawResult, LabelStyle, palette, rgba};
use super::scene::Scene;

/// Radius of a unit's disc, output pixels.
pub const UNIT_RADIUS: f64 = 8.0;
/// Up to this many units every label is shown, even over another label.
const FORCED_LABELS: usize = 40;
/// Least distance between two units' centres: their discs and rings never touch.
pub const UNIT_SPACING: f64 = 2.0 * UNIT_RADIUS + 4.0;

/// Where each unit's disc goes: its own position, unless it is closer than [`UNIT_SPACING`]
/// to others; then the group's members sit on a circle around the group's middle, far enough
/// apart that no disc covers another. Groups are made greedily in order; a fanned group that
/// comes near another group is left as is (rare at the zooms a city's fleet is drawn at).
pub fn fan_out(points: &[(f64, f64)], spacing: f64) -> Vec<(f64, f64)> {
    let mut group_of: Vec<usize> = (0..points.len()).collect();
    for i in 0..points.len() {
        for j in 0..i {
            let (a, b) = (points[i], points[j]);
            if (a.0 - b.0).hypot(a.1 - b.1) < spacing {
                group_of[i] = group_of[j];
                break;
            }
        }
    }
    let mut out = points.to_vec();
    for leader in 0..points.len() {
        let members: Vec<usize> = (0..points.len())
            .filter(|i| group_of[*i] == leader)
            .collect();
        let n = members.len();
        if n < 2 {
            continue;
        }
        let (cx, cy) = members.iter().fold((0.0, 0.0), |(x, y), i| {
            (x + points[*i].0 / n as f64, y + points[*i].1 / n as f64)
        });
        // Neighbours on a circle of radius r are 2 r sin(π / n) apart.
        let radius = spacing / (2.0 * (std::f64::consts::PI / n as f64).sin());
        for (k, i) in members.iter().enumerate() {
            let angle =
                -std::f64::consts::FRAC_PI_2 + 2.0 * std::f64::consts::PI * k as f64 / n as f64;
            out[*i] = (cx + radius * angle.cos(), cy + radius * angle.sin());
        }
    }
    out
}

/// Draws every unit at `at` (from [`fan_out`]): a thin line from a fanned disc back to the
/// true position, the disc (a dark ring, a white ring dashed for a silent unit, its colour),
/// then the labels, each forced onto the map.
pub fn draw_units(
    canvas: &mut Canvas<'_>,
    scene: &Scene,
    at: &[(f64, f64)],
    true_px: &[(f64, f64)],
) -> DrawResult {
    for ((unit, p), origin) in scene.units.iter().zip(at).zip(true_px) {
        if (p.0 - origin.0).hypot(p.1 - origin.1) > 1.0 {
            canvas.thin_line(&[*origin, *p], rgba(palette::INK, 0.8), 1.0)?;
            canvas.disc(*origin, 2.0, rgba(palette::INK, 1.0))?;
        }
        let fill = RGBColor(unit.rgb.0, unit.rgb.1, unit.rgb.2);
        canvas.disc(*p, UNIT_RADIUS + 1.5, rgba(palette::INK, 1.0))?;
        canvas.disc(*p, UNIT_RADIUS, rgba(palette::PAPER, 1.0))?;
        canvas.disc(*p, UNIT_RADIUS - 2.0, rgba(fill, 1.0))?;
        if unit.silent {
            // A struck disc: no signal.
            let d = UNIT_RADIUS * 0.6;
            canvas.polyline(
                &[(p.0 - d, p.1 + d), (p.0 + d, p.1 - d)],
                palette::PAPER,
                1.5,
            )?;
        }
        canvas.occupy_disc(*p, UNIT_RADIUS + 2.0);
    }
    // A small fleet shows every label; a large one only those with room (the disc stays).
    let every = scene.units.len() <= FORCED_LABELS;
    for (unit, p) in scene.units.iter().zip(at) {
        let style = LabelStyle {
            size: 10.0,
            bold: true,
            colour: palette::INK,
        };
        let clearances = [UNIT_RADIUS + 3.0, UNIT_RADIUS + 14.0, UNIT_RADIUS + 28.0];
        if every {
            canvas.force_label(&unit.label, *p, &clearances, style)?;
        } else {
            canvas.place_label(&unit.label, *p, &clearances, style)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apart(points: &[(f64, f64)]) -> f64 {
        let mut least = f64::INFINITY;
        for (i, a) in points.iter().enumerate() {
            for b in &points[..i] {
                least = least.min((a.0 - b.0).hypot(a.1 - b.1));
            }
        }
        least
    }

    #[test]
    fn units_at_one_place_are_fanned_out_and_others_stay() {
        let check = |points: &[(f64, f64)]| {
            let out = fan_out(points, UNIT_SPACING);
            assert!(apart(&out) >= UNIT_SPACING - 1e-9, "{points:?} → {out:?}");
            for (p, o) in points.iter().zip(&out) {
                // Each stays near its place: within the fan's radius for up to six units.
                assert!(
                    (p.0 - o.0).hypot(p.1 - o.1) <= 2.0 * UNIT_SPACING,
                    "{p:?} → {o:?}"
                );
            }
            out
        };
        check(&[(100.0, 100.0), (100.0, 100.0)]);
        check(&[
            (100.0, 100.0),
            (100.0, 100.0),
            (101.0, 100.0),
            (100.0, 99.0),
        ]);
        let out = check(&[(100.0, 100.0), (300.0, 300.0), (100.0, 100.0)]);
        assert_eq!(out[1], (300.0, 300.0), "a unit alone does not move");
        let spread = [(10.0, 10.0), (50.0, 10.0)];
        assert_eq!(fan_out(&spread, UNIT_SPACING), spread.to_vec());
    }
}
