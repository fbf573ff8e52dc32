//! The data's markers and their labels: stops (one marker per stop, shared only by stops
//! whose markers would overlap), signal losses, speeding peaks, start and end, geofence names.
//!
//! Owns where each of them goes in the picture ([`Layout`], decided before anything is
//! painted so the legend can keep clear of them), painting them over the track, placing their
//! labels (visited geofences always named, then stops, speeding, losses; unvisited geofences
//! last, as background) and recording a [`Mark`] for every element the scene counts. Pixels
//! and primitives are `draw`'s.

use super::draw::{Canvas, DrawResult, LabelStyle, Rect, palette, rgba, visible};
use super::marks::{Mark, MarkKind};
use super::projection::View;
use super::scene::Scene;
use crate::geometry::earth::LatLon;
use crate::map::MapError;

/// Stops sharing one marker because theirs would overlap.
pub struct StopGroup {
    pub at: (f64, f64),
    pub minutes: f64,
    pub long: bool,
    /// Indices into `scene.stops`, in time order.
    pub members: Vec<usize>,
}

impl StopGroup {
    pub fn radius(&self) -> f64 {
        stop_radius(self.minutes)
    }
}

/// How a signal loss is drawn.
pub enum GapShape {
    /// A dashed jump from the last report before to the first after, marked in its middle.
    Jump { from: (f64, f64), to: (f64, f64) },
    /// A marker where the unit stood still through it, or where it was last heard of.
    Spot { at: (f64, f64) },
}

impl GapShape {
    /// Where its mark and label go.
    pub fn anchor(&self) -> (f64, f64) {
        match self {
            GapShape::Jump { from, to } => ((from.0 + to.0) / 2.0, (from.1 + to.1) / 2.0),
            GapShape::Spot { at } => *at,
        }
    }
}

/// Where every marker goes.
pub struct Layout {
    pub groups: Vec<StopGroup>,
    pub gaps: Vec<GapShape>,
    pub speeding: Vec<(f64, f64)>,
    /// Start and end markers, moved beside a stop marker they would cover.
    pub start_end: Option<((f64, f64), (f64, f64))>,
}

/// A jump shorter than this, in output pixels, is drawn as a spot.
const MIN_JUMP_PX: f64 = 10.0;
const GAP_RADIUS: f64 = 6.0;
const JUMP_DOT_RADIUS: f64 = 3.5;

pub fn stop_radius(minutes: f64) -> f64 {
    (4.0 + 1.4 * minutes.max(0.0).sqrt()).min(20.0)
}

impl Layout {
    pub fn new(scene: &Scene, view: &View, track_px: &[(f64, f64)]) -> Layout {
        let groups = group_stops(scene, view);
        let gaps = scene
            .gaps
            .iter()
            .map(|gap| {
                let from = view.project(gap.from);
                match gap.to.map(|to| view.project(to)) {
                    Some(to) if (to.0 - from.0).hypot(to.1 - from.1) >= MIN_JUMP_PX => {
                        GapShape::Jump { from, to }
                    }
                    _ => GapShape::Spot {
                        at: beside_stops(from, &groups, GAP_RADIUS, Side::DownRight),
                    },
                }
            })
            .collect();
        let speeding = scene.speeding.iter().map(|s| view.project(s.p)).collect();
        Layout {
            start_end: start_end(track_px, &groups),
            groups,
            gaps,
            speeding,
        }
    }

    /// Every marker's position: what the legend must not cover.
    pub fn key_points(&self) -> Vec<(f64, f64)> {
        let mut points: Vec<(f64, f64)> = self.groups.iter().map(|g| g.at).collect();
        points.extend(self.gaps.iter().map(GapShape::anchor));
        points.extend(self.speeding.iter().copied());
        if let Some((start, end)) = self.start_end {
            points.extend([start, end]);
        }
        points
    }
}

/// Which way from a stop marker another marker that would cover it moves, so that each
/// keeps its own side: the start up-left, the end up-right, a signal loss down-right.
#[derive(Clone, Copy)]
enum Side {
    UpLeft,
    UpRight,
    DownRight,
}

/// `at`, or, when it falls on a stop marker, just outside the marker's rim on `side` so that
/// both show: a signal loss while standing still, or the day's end, sits at a stop.
fn beside_stops(at: (f64, f64), groups: &[StopGroup], own_radius: f64, side: Side) -> (f64, f64) {
    let covering = groups
        .iter()
        .find(|g| (g.at.0 - at.0).hypot(g.at.1 - at.1) < g.radius() + own_radius + 1.5);
    let Some(g) = covering else {
        return at;
    };
    let d = (g.radius() + own_radius + 2.5) * std::f64::consts::FRAC_1_SQRT_2;
    let (dx, dy) = match side {
        Side::UpLeft => (-d, -d),
        Side::UpRight => (d, -d),
        Side::DownRight => (d, d),
    };
    (g.at.0 + dx, g.at.1 + dy)
}

/// Stops whose discs would overlap share one marker ("3 paradas · 75 min"); every other stop
/// has its own. Longest first, so a cluster is centred on its main stop.
fn group_stops(scene: &Scene, view: &View) -> Vec<StopGroup> {
    let mut order: Vec<usize> = (0..scene.stops.len()).collect();
    order.sort_by(|a, b| scene.stops[*b].minutes.total_cmp(&scene.stops[*a].minutes));
    let mut groups: Vec<StopGroup> = Vec::new();
    for i in order {
        let stop = &scene.stops[i];
        let at = view.project(stop.p);
        let own = stop_radius(stop.minutes);
        let overlapping = groups.iter_mut().find(|g| {
            // Ring included: 1.5 px each.
            (g.at.0 - at.0).hypot(g.at.1 - at.1) < g.radius() + own + 3.0
        });
        match overlapping {
            Some(group) => {
                group.minutes += stop.minutes;
                group.long |= stop.long;
                group.members.push(i);
            }
            None => groups.push(StopGroup {
                at,
                minutes: stop.minutes,
                long: stop.long,
                members: vec![i],
            }),
        }
    }
    for group in &mut groups {
        group.members.sort_unstable();
    }
    groups
}

/// The start and end markers' places: side by side when the day is a loop, and beside a stop
/// marker rather than over it.
fn start_end(px: &[(f64, f64)], groups: &[StopGroup]) -> Option<((f64, f64), (f64, f64))> {
    let (first, last) = (*px.first()?, *px.last()?);
    let close = (first.0 - last.0).hypot(first.1 - last.1) < 14.0;
    let (start, end) = if close {
        ((first.0 - 8.0, first.1), (last.0 + 8.0, last.1))
    } else {
        (first, last)
    };
    Some((
        beside_stops(start, groups, 10.0, Side::UpLeft),
        beside_stops(end, groups, 9.0, Side::UpRight),
    ))
}

/// Dashed jumps, under the track.
pub fn draw_gap_lines(canvas: &mut Canvas<'_>, layout: &Layout) -> DrawResult {
    for gap in &layout.gaps {
        if let GapShape::Jump { from, to } = gap {
            canvas.dashed(*from, *to, palette::GAP, 2.0)?;
        }
    }
    Ok(())
}

/// Stop discs sized by their minutes, then the signal-loss markers: over the track, under
/// the labels, which keep off them.
pub fn draw_markers(canvas: &mut Canvas<'_>, layout: &Layout) -> DrawResult {
    for group in &layout.groups {
        let radius = group.radius();
        let fill = if group.long {
            palette::LONG_STOP
        } else {
            palette::STOP
        };
        canvas.disc(group.at, radius + 1.5, rgba(palette::INK, 1.0))?;
        canvas.disc(group.at, radius, rgba(fill, 1.0))?;
        canvas.occupy_disc(group.at, radius);
    }
    for gap in &layout.gaps {
        match gap {
            GapShape::Jump { .. } => {
                let at = gap.anchor();
                canvas.disc(at, JUMP_DOT_RADIUS + 1.5, rgba(palette::PAPER, 1.0))?;
                canvas.disc(at, JUMP_DOT_RADIUS, rgba(palette::GAP, 1.0))?;
                canvas.occupy_disc(at, JUMP_DOT_RADIUS);
            }
            GapShape::Spot { at } => gap_spot(canvas, *at)?,
        }
    }
    for at in &layout.speeding {
        // The peak is on the red line already; keep labels off it.
        canvas.occupy_disc(*at, 4.0);
    }
    Ok(())
}

/// A grey disc struck through: no signal here.
fn gap_spot(canvas: &mut Canvas<'_>, at: (f64, f64)) -> DrawResult {
    canvas.disc(at, GAP_RADIUS + 1.5, rgba(palette::PAPER, 1.0))?;
    canvas.disc(at, GAP_RADIUS, rgba(palette::GAP, 1.0))?;
    let d = GAP_RADIUS * 0.6;
    canvas.polyline(
        &[(at.0 - d, at.1 + d), (at.0 + d, at.1 - d)],
        palette::PAPER,
        1.6,
    )?;
    canvas.occupy_disc(at, GAP_RADIUS);
    Ok(())
}

/// A grey struck disc for the legend.
pub fn gap_spot_key(canvas: &mut Canvas<'_>, at: (f64, f64)) -> DrawResult {
    gap_spot(canvas, at)
}

pub fn draw_start_end(canvas: &mut Canvas<'_>, scene: &Scene, layout: &Layout) -> DrawResult {
    let Some((start, end)) = layout.start_end else {
        return Ok(());
    };
    let square = 6.0;
    canvas.rect(
        Rect::new(
            end.0 - square - 1.5,
            end.1 - square - 1.5,
            2.0 * square + 3.0,
            2.0 * square + 3.0,
        ),
        rgba(palette::PAPER, 1.0),
    )?;
    canvas.rect(
        Rect::new(end.0 - square, end.1 - square, 2.0 * square, 2.0 * square),
        rgba(palette::INK, 1.0),
    )?;
    let triangle = |size: f64| {
        [
            (start.0, start.1 - size),
            (start.0 + size * 0.9, start.1 + size * 0.6),
            (start.0 - size * 0.9, start.1 + size * 0.6),
        ]
    };
    canvas.polygon(&triangle(11.0), rgba(palette::INK, 1.0))?;
    canvas.polygon(&triangle(8.5), rgba(palette::START, 1.0))?;
    canvas
        .occupied
        .push(Rect::new(start.0 - 10.0, start.1 - 11.0, 20.0, 18.0));
    canvas
        .occupied
        .push(Rect::new(end.0 - 8.0, end.1 - 8.0, 16.0, 16.0));
    let end_label = if scene.ongoing {
        "última posición"
    } else {
        "fin"
    };
    let bold = |colour| LabelStyle {
        size: 10.0,
        bold: true,
        colour,
    };
    canvas.place_label(end_label, end, &[8.0], bold(palette::INK))?;
    canvas.place_label("inicio", start, &[10.0], bold(palette::START))?;
    Ok(())
}

/// Clearances tried for a data label, nearest first.
const NEAR: [f64; 3] = [0.0, 12.0, 26.0];

/// Places the data's labels, most important first, and records a [`Mark`] for every
/// counted element; returns the marks and how many labels found no room.
pub fn place_labels(
    canvas: &mut Canvas<'_>,
    scene: &Scene,
    view: &View,
    layout: &Layout,
) -> Result<(Vec<Mark>, usize), MapError> {
    let mut marks = Vec::new();
    let mut skipped = 0usize;
    marks.extend(fence_labels(canvas, scene, view, true)?);
    for group in &layout.groups {
        let long = group.long;
        let style = LabelStyle {
            size: 11.0,
            bold: long,
            colour: if long {
                palette::LONG_STOP
            } else {
                palette::INK
            },
        };
        let clearances = NEAR.map(|c| c + group.radius());
        let placed = canvas.place_label(&stop_label(scene, group), group.at, &clearances, style)?;
        skipped += usize::from(placed.is_none());
        let label = placed.map(|_| stop_label(scene, group));
        let fill = if long {
            palette::LONG_STOP
        } else {
            palette::STOP
        };
        marks.extend(group.members.iter().map(|i| Mark {
            kind: MarkKind::Stop {
                index: *i,
                long: scene.stops[*i].long,
            },
            at: group.at,
            radius_px: group.radius(),
            rgb: (fill.0, fill.1, fill.2),
            label: label.clone(),
        }));
    }
    for (index, (mark, at)) in scene.speeding.iter().zip(&layout.speeding).enumerate() {
        let text = format!("{:.0} km/h", mark.max_kmh);
        let style = LabelStyle {
            size: 11.0,
            bold: true,
            colour: palette::BANDS[3],
        };
        let placed = canvas.place_label(&text, *at, &NEAR.map(|c| c + 5.0), style)?;
        skipped += usize::from(placed.is_none());
        let red = palette::BANDS[3];
        marks.push(Mark {
            kind: MarkKind::Speeding { index },
            at: *at,
            radius_px: 3.0,
            rgb: (red.0, red.1, red.2),
            label: placed.map(|_| text),
        });
    }
    for (index, (gap, shape)) in scene.gaps.iter().zip(&layout.gaps).enumerate() {
        let style = LabelStyle {
            size: 10.0,
            bold: false,
            colour: palette::GAP,
        };
        let at = shape.anchor();
        let placed = canvas.place_label(&gap.label, at, &NEAR.map(|c| c + GAP_RADIUS), style)?;
        skipped += usize::from(placed.is_none());
        let grey = palette::GAP;
        marks.push(Mark {
            kind: MarkKind::Gap { index },
            at,
            radius_px: JUMP_DOT_RADIUS.min(GAP_RADIUS) - 0.5,
            rgb: (grey.0, grey.1, grey.2),
            label: placed.map(|_| gap.label.clone()),
        });
    }
    marks.extend(fence_labels(canvas, scene, view, false)?);
    marks.sort_by_key(|m| order(&m.kind));
    Ok((marks, skipped))
}

/// Marks in the scene's order, kind by kind.
fn order(kind: &MarkKind) -> (u8, usize) {
    match *kind {
        MarkKind::Stop { index, .. } => (0, index),
        MarkKind::Gap { index } => (1, index),
        MarkKind::Speeding { index } => (2, index),
        MarkKind::Fence { index, .. } => (3, index),
    }
}

/// "10:42 · 15 min · CEDIS Zona 12" for one stop; for a few sharing a marker their times,
/// for many their count ("6 paradas · 92 min · z10 oakland").
fn stop_label(scene: &Scene, group: &StopGroup) -> String {
    let stops: Vec<_> = group.members.iter().map(|i| &scene.stops[*i]).collect();
    let what = match stops.as_slice() {
        [one] => one.start.clone(),
        few if few.len() <= 3 => few
            .iter()
            .map(|s| s.start.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        many => format!("{} paradas", many.len()),
    };
    let mut label = format!("{what} · {} min", group.minutes.round());
    if let Some(place) = stops.iter().find_map(|s| s.place.as_deref()) {
        label.push_str(" · ");
        label.push_str(place);
    }
    label
}

/// The geofences' names: the visited ones (`visited`) always shown, as near their middle as
/// room allows; the others only where there is room.
fn fence_labels(
    canvas: &mut Canvas<'_>,
    scene: &Scene,
    view: &View,
    visited: bool,
) -> Result<Vec<Mark>, MapError> {
    let style = LabelStyle {
        size: 11.0,
        bold: true,
        colour: palette::FENCE_TEXT,
    };
    let ink = (style.colour.0, style.colour.1, style.colour.2);
    let mut marks = Vec::new();
    for (index, fence) in scene.fences.iter().enumerate() {
        if fence.visited != visited {
            continue;
        }
        let kind = MarkKind::Fence { index, visited };
        let centre = centroid(&fence.outline, view);
        let placed = if visited {
            let anchor = clamp_to_picture(centre);
            let rings = [0.0, 12.0, 24.0, 40.0, 60.0, 90.0];
            Some(canvas.force_label(&fence.name, anchor, &rings, style)?)
        } else if visible(centre) {
            canvas.place_label(&fence.name, centre, &[0.0], style)?
        } else {
            None
        };
        if let Some(r) = placed {
            marks.push(Mark {
                kind,
                at: ((r.x0 + r.x1) / 2.0, (r.y0 + r.y1) / 2.0),
                radius_px: (r.x1 - r.x0) / 2.0,
                rgb: ink,
                label: Some(fence.name.clone()),
            });
        } else {
            marks.push(Mark {
                kind,
                at: centre,
                radius_px: 0.0,
                rgb: ink,
                label: None,
            });
        }
    }
    Ok(marks)
}

fn centroid(outline: &[LatLon], view: &View) -> (f64, f64) {
    let n = outline.len().max(1) as f64;
    let (sx, sy) = view
        .project_path(outline)
        .into_iter()
        .fold((0.0, 0.0), |(x, y), p| (x + p.0, y + p.1));
    (sx / n, sy / n)
}

/// A point inside the picture, below the title band, nearest to `p`.
fn clamp_to_picture((x, y): (f64, f64)) -> (f64, f64) {
    let (w, h) = (f64::from(super::WIDTH), f64::from(super::HEIGHT));
    (
        x.clamp(20.0, w - 20.0),
        y.clamp(super::draw::TITLE_BAND + 20.0, h - 20.0),
    )
}

/// Geofence edges again, thin, over the markers: a small fence under the start or a stop
/// marker still shows where it is.
pub fn draw_fence_edges(canvas: &mut Canvas<'_>, scene: &Scene, view: &View) -> DrawResult {
    for fence in &scene.fences {
        let mut outline: Vec<(f64, f64)> = view.project_path(&fence.outline);
        if let Some(first) = outline.first().copied() {
            outline.push(first);
            canvas.thin_line(&outline, rgba(palette::FENCE, 0.9), 1.2)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::projection::world_px;
    use crate::map::scene::StopMark;

    /// A scene of 10-minute stops `dx_px` output pixels east of a first one, at zoom 17.
    fn scene_and_view(dx_px: &[f64]) -> (Scene, View) {
        let origin = LatLon::new(14.6, -90.5);
        let (x, y) = world_px(origin, 17);
        let view = View {
            zoom: 17,
            left: x - 100.0,
            top: y - 300.0,
            width: 800,
            height: 600,
        };
        let stops = dx_px
            .iter()
            .enumerate()
            .map(|(i, dx)| StopMark {
                p: view.unproject(100.0 + dx, 300.0),
                minutes: 10.0,
                long: false,
                start: format!("0{}:00", 8 + i),
                place: (i == 0).then(|| "CEDIS Zona 12".to_owned()),
            })
            .collect();
        let scene = Scene {
            title: String::new(),
            subtitle: String::new(),
            track: Vec::new(),
            limit_kmh: 60.0,
            zone_limits_kmh: Vec::new(),
            stops,
            speeding: Vec::new(),
            gaps: Vec::new(),
            fences: Vec::new(),
            roads: Vec::new(),
            landmarks: Vec::new(),
            ongoing: false,
            units: Vec::new(),
            states: Vec::new(),
        };
        (scene, view)
    }

    #[test]
    fn only_stops_whose_markers_would_overlap_share_one() {
        // Ten-minute discs are 8.4 px across plus their rings: 19.9 px apart they touch.
        let check = |dx: &[f64], expected: &[&[usize]]| {
            let (scene, view) = scene_and_view(dx);
            let mut groups: Vec<Vec<usize>> = group_stops(&scene, &view)
                .into_iter()
                .map(|g| g.members)
                .collect();
            groups.sort();
            assert_eq!(groups, expected, "{dx:?}");
        };
        check(&[0.0, 15.0], &[&[0, 1]]);
        check(&[0.0, 21.0], &[&[0], &[1]]);
        check(&[0.0, 15.0, 60.0, 200.0], &[&[0, 1], &[2], &[3]]);
    }

    #[test]
    fn stop_labels_give_time_minutes_and_place() {
        let (scene, view) = scene_and_view(&[0.0, 15.0, 60.0, 61.0, 62.0, 63.0]);
        let labels: Vec<String> = group_stops(&scene, &view)
            .iter()
            .map(|g| stop_label(&scene, g))
            .collect();
        assert!(
            labels.contains(&"08:00, 09:00 · 20 min · CEDIS Zona 12".to_owned()),
            "{labels:?}"
        );
        assert!(
            labels.contains(&"4 paradas · 40 min".to_owned()),
            "{labels:?}"
        );
        let (scene, view) = scene_and_view(&[0.0]);
        let group = &group_stops(&scene, &view)[0];
        assert_eq!(stop_label(&scene, group), "08:00 · 10 min · CEDIS Zona 12");
    }
}
