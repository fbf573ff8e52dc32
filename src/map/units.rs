//! The fleet map's unit markers: one disc per unit in its state's colour, labelled with its
//! plate and minutes in that state; a few units at one place fanned out around it so none
//! hides another; and where more would overlap at the picture's scale (a depot at night, a
//! crowded fleet), one cluster marker with their count and a ring split by state.
//!
//! Owns where each marker lands ([`layout`]) and drawing it; the states, colours and words
//! come in the [`Scene`]'s `units` from the tool. No I/O.

use plotters::style::RGBColor;

use super::draw::{Canvas, DrawResult, LabelStyle, palette, rgba};
use super::scene::Scene;

/// Radius of a unit's disc, output pixels.
pub const UNIT_RADIUS: f64 = 8.0;
/// Up to this many units every label is shown, even over another label.
const FORCED_LABELS: usize = 40;
/// Least distance between two units' centres: their discs and rings never touch.
pub const UNIT_SPACING: f64 = 2.0 * UNIT_RADIUS + 4.0;
/// Largest group drawn as a fan: its circle stays under 40 px across its middle (about a
/// label's height away from its neighbours' labels), and each disc can still carry its
/// plate. A bigger group is one cluster marker.
pub const FAN_MAX: usize = 12;

/// One marker of the fleet map, in output pixels.
#[derive(Debug, Clone, PartialEq)]
pub enum Marker {
    /// One unit's disc: at its own place, or on its group's fan around the group's middle.
    Unit { unit: usize, at: (f64, f64) },
    /// Units that would overlap, drawn as one disc of `radius` with their count.
    Cluster {
        units: Vec<usize>,
        at: (f64, f64),
        radius: f64,
    },
}

impl Marker {
    /// The units this marker stands for.
    pub fn units(&self) -> &[usize] {
        match self {
            Marker::Unit { unit, .. } => std::slice::from_ref(unit),
            Marker::Cluster { units, .. } => units,
        }
    }
    /// Where it is drawn.
    pub fn at(&self) -> (f64, f64) {
        match self {
            Marker::Unit { at, .. } | Marker::Cluster { at, .. } => *at,
        }
    }
    /// The radius of what is drawn, its dark ring included.
    pub fn radius(&self) -> f64 {
        match self {
            Marker::Unit { .. } => UNIT_RADIUS + 1.5,
            Marker::Cluster { radius, .. } => radius + 1.5,
        }
    }
}

/// Where markers may go: the picture below the title band, in output pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Area {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

/// A cluster's disc: wide enough for its count in bold.
fn cluster_radius(n: usize) -> f64 {
    let digits = n.max(1).ilog10() as f64 + 1.0;
    12.0 + 2.0 * (digits - 1.0)
}

/// The radius of a fan of `n` discs: neighbours on a circle of radius r are 2 r sin(π / n)
/// apart.
fn fan_radius(n: usize) -> f64 {
    UNIT_SPACING / (2.0 * (std::f64::consts::PI / n as f64).sin())
}

/// The room a group of `n` units takes around its middle, half a spacing of clearance
/// included: two groups whose middles are farther apart than the sum of theirs never overlap.
fn footprint(n: usize) -> f64 {
    let half = UNIT_SPACING / 2.0;
    match n {
        0 | 1 => half,
        _ if n <= FAN_MAX => fan_radius(n) + half,
        _ => cluster_radius(n) + half,
    }
}

/// Units that will share a marker (a fan or a cluster), their middle kept inside the area.
struct Group {
    members: Vec<usize>,
    sum: (f64, f64),
    at: (f64, f64),
}

impl Group {
    fn place(&mut self, area: &Area) {
        let n = self.members.len() as f64;
        // The whole fan or disc, its ring included, stays in the area.
        let room = footprint(self.members.len());
        let inside = |v: f64, lo: f64, hi: f64| {
            if hi - lo < 2.0 * room {
                (lo + hi) / 2.0
            } else {
                v.clamp(lo + room, hi - room)
            }
        };
        self.at = (
            inside(self.sum.0 / n, area.x0, area.x1),
            inside(self.sum.1 / n, area.y0, area.y1),
        );
    }

    /// The discs it will be drawn as, each with half a spacing of clearance: a lone unit's,
    /// a fan's, or the cluster's.
    fn discs(&self) -> Vec<((f64, f64), f64)> {
        let half = UNIT_SPACING / 2.0;
        let n = self.members.len();
        match n {
            0 | 1 => vec![(self.at, half)],
            _ if n <= FAN_MAX => (0..n).map(|k| (fan_spot(self.at, k, n), half)).collect(),
            _ => vec![(self.at, cluster_radius(n) + half)],
        }
    }

    /// Whether its markers and `other`'s would overlap: their discs, not just their
    /// footprints (a fan of two beside a lone unit is no conflict).
    fn overlaps(&self, other: &Group) -> bool {
        let (p, q) = (self.at, other.at);
        let reach = footprint(self.members.len()) + footprint(other.members.len());
        if (p.0 - q.0).hypot(p.1 - q.1) >= reach {
            return false;
        }
        let theirs = other.discs();
        self.discs().iter().any(|(a, ra)| {
            theirs
                .iter()
                .any(|(b, rb)| (a.0 - b.0).hypot(a.1 - b.1) < ra + rb)
        })
    }
}

/// Where the `k`th of `n` fanned discs goes around `centre`: clockwise from the top.
fn fan_spot(centre: (f64, f64), k: usize, n: usize) -> (f64, f64) {
    let radius = fan_radius(n);
    let angle = -std::f64::consts::FRAC_PI_2 + 2.0 * std::f64::consts::PI * k as f64 / n as f64;
    (
        centre.0 + radius * angle.cos(),
        centre.1 + radius * angle.sin(),
    )
}

/// Where each unit is drawn. Units closer than [`UNIT_SPACING`] to a group's first unit
/// join it; then any two groups whose markers would overlap (a fan's discs, a cluster's
/// disc, a lone disc) are merged until none do, so no marker hides another however crowded
/// the fleet. A lone unit stays at its place; a group of up to [`FAN_MAX`] is fanned on a
/// circle around its middle; a bigger one becomes a [`Marker::Cluster`] at its middle. Every
/// marker is kept inside `area`. Markers come in the order of their first unit.
pub fn layout(points: &[(f64, f64)], area: Area) -> Vec<Marker> {
    let mut groups: Vec<Group> = Vec::new();
    // Seeds only (a group's first unit), not every member: joining by any member chains a
    // depot's and its roads' units into a few groups far wider than the picture.
    for (i, p) in points.iter().enumerate() {
        let near = groups
            .iter()
            .enumerate()
            .map(|(g, group)| {
                let seed = points[group.members[0]];
                (g, (p.0 - seed.0).hypot(p.1 - seed.1))
            })
            .filter(|(_, d)| *d < UNIT_SPACING)
            .min_by(|a, b| a.1.total_cmp(&b.1));
        match near {
            Some((g, _)) => {
                let group = &mut groups[g];
                group.members.push(i);
                group.sum = (group.sum.0 + p.0, group.sum.1 + p.1);
            }
            None => groups.push(Group {
                members: vec![i],
                sum: *p,
                at: *p,
            }),
        }
    }
    for group in &mut groups {
        group.place(&area);
    }
    merge_overlapping(&mut groups, &area);
    let mut markers = Vec::new();
    for group in groups {
        let n = group.members.len();
        if n == 1 {
            markers.push(Marker::Unit {
                unit: group.members[0],
                at: group.at,
            });
        } else if n <= FAN_MAX {
            for (k, unit) in group.members.iter().enumerate() {
                let at = fan_spot(group.at, k, n);
                markers.push(Marker::Unit { unit: *unit, at });
            }
        } else {
            markers.push(Marker::Cluster {
                at: group.at,
                radius: cluster_radius(n),
                units: group.members,
            });
        }
    }
    markers
}

/// Merges groups whose markers would overlap, pass after pass until a pass merges none. Each
/// merge leaves one group fewer, so it ends; a pass is quadratic in the groups, which a
/// crowded picture has few of once its depots are merged.
fn merge_overlapping(groups: &mut Vec<Group>, area: &Area) {
    loop {
        let mut merged = false;
        let mut a = 0;
        while a < groups.len() {
            let mut b = a + 1;
            while b < groups.len() {
                if groups[a].overlaps(&groups[b]) {
                    let other = groups.remove(b);
                    let group = &mut groups[a];
                    group.members.extend(other.members);
                    group.members.sort_unstable();
                    group.sum = (group.sum.0 + other.sum.0, group.sum.1 + other.sum.1);
                    group.place(area);
                    merged = true;
                    // The grown group may now reach groups already passed: look again.
                    b = a + 1;
                } else {
                    b += 1;
                }
            }
            a += 1;
        }
        if !merged {
            return;
        }
    }
}

/// Draws the markers of [`layout`]: for a fanned unit a thin line back to its true position,
/// a unit's disc (a dark ring, a white ring, its colour; struck for a silent unit), a
/// cluster's disc (a dark ring, a ring split by its units' colours in the legend's order, a
/// white middle with the count); then the units' labels, each forced onto the map in a
/// small fleet, where there is room in a large one.
pub fn draw_units(
    canvas: &mut Canvas<'_>,
    scene: &Scene,
    markers: &[Marker],
    true_px: &[(f64, f64)],
) -> DrawResult {
    for marker in markers {
        match marker {
            Marker::Unit { unit, at } => draw_unit(canvas, scene, *unit, *at, true_px[*unit])?,
            Marker::Cluster { units, at, radius } => {
                draw_cluster(canvas, scene, units, *at, *radius)?;
            }
        }
        canvas.occupy_disc(marker.at(), marker.radius() + 0.5);
    }
    // A small fleet shows every label; a large one only those with room (the disc stays).
    let every = scene.units.len() <= FORCED_LABELS;
    for marker in markers {
        let Marker::Unit { unit, at } = marker else {
            continue;
        };
        let style = LabelStyle {
            size: 10.0,
            bold: true,
            colour: palette::INK,
        };
        let clearances = [UNIT_RADIUS + 3.0, UNIT_RADIUS + 14.0, UNIT_RADIUS + 28.0];
        let label = &scene.units[*unit].label;
        if every {
            canvas.force_label(label, *at, &clearances, style)?;
        } else {
            canvas.place_label(label, *at, &clearances, style)?;
        }
    }
    Ok(())
}

fn draw_unit(
    canvas: &mut Canvas<'_>,
    scene: &Scene,
    unit: usize,
    p: (f64, f64),
    origin: (f64, f64),
) -> DrawResult {
    let unit = &scene.units[unit];
    if (p.0 - origin.0).hypot(p.1 - origin.1) > 1.0 {
        canvas.thin_line(&[origin, p], rgba(palette::INK, 0.8), 1.0)?;
        canvas.disc(origin, 2.0, rgba(palette::INK, 1.0))?;
    }
    let fill = RGBColor(unit.rgb.0, unit.rgb.1, unit.rgb.2);
    canvas.disc(p, UNIT_RADIUS + 1.5, rgba(palette::INK, 1.0))?;
    canvas.disc(p, UNIT_RADIUS, rgba(palette::PAPER, 1.0))?;
    canvas.disc(p, UNIT_RADIUS - 2.0, rgba(fill, 1.0))?;
    if unit.silent {
        // A struck disc: no signal.
        let d = UNIT_RADIUS * 0.6;
        canvas.polyline(
            &[(p.0 - d, p.1 + d), (p.0 + d, p.1 - d)],
            palette::PAPER,
            1.5,
        )?;
    }
    Ok(())
}

/// How many of `units` have each colour, in the legend's order (colours not in the legend
/// last, in order of first appearance).
pub fn colour_counts(scene: &Scene, units: &[usize]) -> Vec<((u8, u8, u8), usize)> {
    let mut counts: Vec<((u8, u8, u8), usize)> =
        scene.states.iter().map(|(rgb, _)| (*rgb, 0)).collect();
    for unit in units {
        let rgb = scene.units[*unit].rgb;
        match counts.iter_mut().find(|(c, _)| *c == rgb) {
            Some((_, n)) => *n += 1,
            None => counts.push((rgb, 1)),
        }
    }
    counts.retain(|(_, n)| *n > 0);
    counts
}

/// A cluster: its ring is a pie of its units' colours, clockwise from the top, so the share
/// of each state reads at a glance; the count sits in a white middle.
fn draw_cluster(
    canvas: &mut Canvas<'_>,
    scene: &Scene,
    units: &[usize],
    at: (f64, f64),
    radius: f64,
) -> DrawResult {
    canvas.disc(at, radius + 1.5, rgba(palette::INK, 1.0))?;
    ring(canvas, at, radius, &colour_counts(scene, units))?;
    canvas.disc(at, radius - 4.0, rgba(palette::PAPER, 1.0))?;
    let text = units.len().to_string();
    let size = if units.len() >= 1000 { 9.0 } else { 10.0 };
    canvas.centred_text(&text, at, size, true, palette::INK)
}

/// A disc of `radius` at `at` split into sectors by `counts`, clockwise from the top.
pub(super) fn ring(
    canvas: &mut Canvas<'_>,
    at: (f64, f64),
    radius: f64,
    counts: &[((u8, u8, u8), usize)],
) -> DrawResult {
    let total: usize = counts.iter().map(|(_, n)| n).sum();
    if let [(rgb, _)] = counts {
        return canvas.disc(at, radius, rgba(RGBColor(rgb.0, rgb.1, rgb.2), 1.0));
    }
    let tau = std::f64::consts::TAU;
    let mut from = 0.0;
    for (rgb, n) in counts {
        let to = from + *n as f64 / total.max(1) as f64;
        // About one vertex every 6° of arc: smooth at twice the output size.
        let steps = ((to - from) * 60.0).ceil().max(1.0) as usize;
        let mut sector = vec![at];
        for k in 0..=steps {
            let turn = from + (to - from) * k as f64 / steps as f64;
            let angle = turn * tau - std::f64::consts::FRAC_PI_2;
            sector.push((at.0 + radius * angle.cos(), at.1 + radius * angle.sin()));
        }
        canvas.polygon(&sector, rgba(RGBColor(rgb.0, rgb.1, rgb.2), 1.0))?;
        from = to;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const AREA: Area = Area {
        x0: 0.0,
        y0: 48.0,
        x1: 800.0,
        y1: 600.0,
    };

    /// Each unit's drawn place: its disc, or its cluster's middle.
    fn places(markers: &[Marker], n: usize) -> Vec<(f64, f64)> {
        let mut out = vec![(f64::NAN, f64::NAN); n];
        for m in markers {
            for u in m.units() {
                out[*u] = m.at();
            }
        }
        out
    }

    /// What every layout must be: each unit in exactly one marker, every marker inside the
    /// area, no marker over another.
    fn check_layout(points: &[(f64, f64)]) -> Vec<Marker> {
        let markers = layout(points, AREA);
        let mut seen = vec![0usize; points.len()];
        for m in &markers {
            for u in m.units() {
                seen[*u] += 1;
            }
        }
        assert!(
            seen.iter().all(|n| *n == 1),
            "units in ≠ 1 marker: {seen:?}"
        );
        let total: usize = markers.iter().map(|m| m.units().len()).sum();
        assert_eq!(total, points.len(), "the counts add up to the fleet");
        for m in &markers {
            let ((x, y), r) = (m.at(), m.radius());
            assert!(
                x - r >= AREA.x0 && x + r <= AREA.x1 && y - r >= AREA.y0 && y + r <= AREA.y1,
                "marker off the picture: {m:?}"
            );
        }
        for (i, a) in markers.iter().enumerate() {
            for b in &markers[..i] {
                let (p, q) = (a.at(), b.at());
                assert!(
                    (p.0 - q.0).hypot(p.1 - q.1) >= a.radius() + b.radius(),
                    "{a:?} covers {b:?}"
                );
            }
        }
        markers
    }

    /// A small deterministic generator: the crowded fleet is no shipped scenario.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// `n` units: most parked at a few depots (a few metres of GPS noise apart), the rest
    /// along a handful of roads across the frame the fleet map fits them in.
    fn crowded(n: usize, seed: u64) -> Vec<(f64, f64)> {
        let mut rng = Lcg(seed);
        let depots: Vec<(f64, f64)> = (0..5)
            .map(|_| (60.0 + 680.0 * rng.next(), 90.0 + 450.0 * rng.next()))
            .collect();
        (0..n)
            .map(|i| {
                if i % 3 != 0 {
                    let d = depots[i % depots.len()];
                    (d.0 + 3.0 * rng.next(), d.1 + 3.0 * rng.next())
                } else {
                    let (a, b) = (depots[i % 5], depots[(i + 2) % 5]);
                    let t = rng.next();
                    (
                        a.0 + (b.0 - a.0) * t + 6.0 * rng.next(),
                        a.1 + (b.1 - a.1) * t + 6.0 * rng.next(),
                    )
                }
            })
            .collect()
    }

    #[test]
    fn a_crowded_fleet_is_clustered_and_every_unit_counted_once() {
        for (n, seed) in [(1_000, 7), (1_000, 2_024), (300, 99), (150, 5)] {
            let points = crowded(n, seed);
            let markers = check_layout(&points);
            let clusters = markers
                .iter()
                .filter(|m| matches!(m, Marker::Cluster { .. }))
                .count();
            assert!(clusters >= 1, "{n} units, seed {seed}: no cluster");
            assert!(
                markers.len() < n / 2,
                "{n} units: {} markers",
                markers.len()
            );
        }
    }

    #[test]
    fn a_sparse_fleet_is_not_clustered_and_lone_units_stay() {
        let points = [
            (100.0, 100.0),
            (300.0, 300.0),
            (100.0, 100.0),
            (500.0, 200.0),
            (501.0, 201.0),
            (499.0, 200.0),
            (700.0, 500.0),
        ];
        let markers = check_layout(&points);
        assert!(
            markers.iter().all(|m| matches!(m, Marker::Unit { .. })),
            "{markers:?}"
        );
        let at = places(&markers, points.len());
        for lone in [1, 6] {
            assert_eq!(at[lone], points[lone], "a unit alone does not move");
        }
        // A depot's few units fanned around it, each near its place.
        for (p, o) in points.iter().zip(&at) {
            assert!(
                (p.0 - o.0).hypot(p.1 - o.1) <= 2.0 * UNIT_SPACING,
                "{p:?} → {o:?}"
            );
        }
        // Spread units are left as they are.
        let spread = [(60.0, 100.0), (100.0, 100.0), (60.0, 140.0)];
        let markers = check_layout(&spread);
        assert_eq!(places(&markers, 3), spread.to_vec());
    }

    #[test]
    fn a_full_depot_is_one_cluster_and_a_few_units_a_fan() {
        let depot = |n: usize| vec![(400.0, 300.0); n];
        let markers = check_layout(&depot(FAN_MAX));
        assert_eq!(markers.len(), FAN_MAX, "{markers:?}");
        let markers = check_layout(&depot(FAN_MAX + 1));
        assert_eq!(markers.len(), 1);
        assert!(matches!(&markers[0], Marker::Cluster { units, .. } if units.len() == FAN_MAX + 1));
        // Even at the picture's edge the cluster stays inside.
        let mut corner = vec![(1.0, 50.0); 40];
        corner.push((799.0, 599.0));
        check_layout(&corner);
    }
}
