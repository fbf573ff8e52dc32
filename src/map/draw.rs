//! Drawing a [`Scene`] onto a [`View`]: background, geofences, the speed-coloured track,
//! stops, markers, labels that do not collide, legend, scale bar, north arrow, attribution.
//!
//! Owns pixels. Everything is drawn with plotters' bitmap backend at twice the output size
//! and averaged down 2×2, which anti-aliases lines, circles and text alike (plotters'
//! rasteriser does not). Tile pixels are doubled on the way in, so they come out exactly as
//! the server sent them. Text uses the embedded DejaVu Sans through ab_glyph: no system font
//! is ever looked up. No I/O.

use std::sync::Once;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_backend::{BackendColor, DrawingBackend, DrawingErrorKind};

use super::MapError;
use super::buffer::Buffer;
use super::markers::{self, Layout};
use super::marks::Mark;
use super::occupied::Occupied;
use super::projection::{TILE_PX, TileRef, View};
use super::raster::Pixels;
use super::scene::Scene;
use super::simplify::rdp_indices;
use super::units;
use crate::geometry::earth::LatLon;

/// Output size in pixels.
pub const WIDTH: u32 = 800;
pub const HEIGHT: u32 = 600;
/// Supersampling factor.
const SS: u32 = 2;
/// Height of the title band.
pub const TITLE_BAND: f64 = 48.0;

/// What lies under the data.
pub enum Basemap<'a> {
    /// Decoded 256 × 256 RGB tiles and the attribution their licence requires.
    Tiles {
        tiles: &'a [(TileRef, Vec<u8>)],
        attribution: &'a str,
    },
    /// Flota's own data: routes as roads, named stops, a coordinate grid.
    Offline,
}

/// A drawn picture, before encoding.
pub struct Picture {
    /// `WIDTH × HEIGHT` RGB.
    pub rgb: Buffer,
    /// Vertices of the track line after simplification.
    pub drawn_points: usize,
    /// Stop markers drawn (nearby stops share one).
    pub stop_markers: usize,
    /// Labels that found no free room and were left out.
    pub labels_skipped: usize,
    /// Where each stop, signal loss, speeding episode and geofence was drawn.
    pub marks: Vec<Mark>,
    /// The fleet map's markers: each unit's disc or the cluster it is counted in.
    pub unit_markers: Vec<units::Marker>,
}

/// The colours of the map, named by what they mean.
pub(super) mod palette {
    use plotters::style::RGBColor;
    pub const LAND: RGBColor = RGBColor(0xf2, 0xef, 0xe9);
    pub const GRID: RGBColor = RGBColor(0xdc, 0xd6, 0xcc);
    pub const GRID_TEXT: RGBColor = RGBColor(0x8a, 0x82, 0x76);
    pub const ROAD: RGBColor = RGBColor(0xff, 0xff, 0xff);
    pub const ROAD_CASING: RGBColor = RGBColor(0xcf, 0xc6, 0xb8);
    pub const LANDMARK: RGBColor = RGBColor(0x80, 0x78, 0x6c);
    /// Geofences are purple: no speed band uses it.
    pub const FENCE: RGBColor = RGBColor(0x7b, 0x32, 0x94);
    pub const FENCE_TEXT: RGBColor = RGBColor(0x54, 0x27, 0x88);
    pub const CASING: RGBColor = RGBColor(0xff, 0xff, 0xff);
    /// Speed bands, cold to hot as every sports tracker draws them, as shares of the limit
    /// that applied: up to half of it, up to 90 %, up to the limit, above it.
    pub const BANDS: [RGBColor; 4] = [
        RGBColor(0x2b, 0x83, 0xba),
        RGBColor(0x1a, 0x96, 0x41),
        RGBColor(0xf0, 0xa3, 0x0a),
        RGBColor(0xd7, 0x19, 0x1c),
    ];
    pub const SPEEDING_CASING: RGBColor = RGBColor(0x40, 0x00, 0x00);
    /// Stops are black and white, apart from every colour of the track.
    pub const STOP: RGBColor = RGBColor(0xff, 0xff, 0xff);
    pub const LONG_STOP: RGBColor = RGBColor(0x67, 0x00, 0x1f);
    pub const GAP: RGBColor = RGBColor(0x55, 0x55, 0x55);
    pub const START: RGBColor = RGBColor(0x00, 0xa6, 0x50);
    pub const INK: RGBColor = RGBColor(0x1a, 0x1a, 0x1a);
    pub const SOFT_INK: RGBColor = RGBColor(0x55, 0x55, 0x55);
    pub const PAPER: RGBColor = RGBColor(0xff, 0xff, 0xff);
}

/// Upper ends of the first three bands, as shares of the limit that applied.
pub const BAND_SHARES: [f64; 3] = [0.5, 0.9, 1.0];

/// The band (index into `palette::BANDS`) of a speed under the limit that applied there.
pub fn band(speed_kmh: f64, limit_kmh: f64) -> usize {
    let share = speed_kmh / limit_kmh.max(1.0);
    BAND_SHARES
        .iter()
        .position(|upper| share <= *upper)
        .unwrap_or(3)
}

/// The colour of a band, as `(r, g, b)`.
pub fn band_rgb(band: usize) -> (u8, u8, u8) {
    let c = palette::BANDS[band.min(3)];
    (c.0, c.1, c.2)
}

static FONTS: Once = Once::new();

/// Registers DejaVu Sans with plotters, once per process (the grid's charts use it too).
pub fn register_fonts() {
    FONTS.call_once(|| {
        // Both faces are valid TrueType files compiled into the binary; a failure would
        // only mean text is missing, which `Canvas::text` reports as a drawing error.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
        let _ = plotters::style::register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold());
    });
}

/// A rectangle in output pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Rect {
    pub(super) x0: f64,
    pub(super) y0: f64,
    pub(super) x1: f64,
    pub(super) y1: f64,
}

impl Rect {
    pub(super) fn new(x0: f64, y0: f64, w: f64, h: f64) -> Rect {
        Rect {
            x0,
            y0,
            x1: x0 + w,
            y1: y0 + h,
        }
    }
    pub(super) fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }
    fn inside(&self, width: f64, height: f64) -> bool {
        self.x0 >= 2.0 && self.y0 >= 2.0 && self.x1 <= width - 2.0 && self.y1 <= height - 2.0
    }
    fn contains(&self, (x, y): (f64, f64)) -> bool {
        x >= self.x0 && x <= self.x1 && y >= self.y0 && y <= self.y1
    }
    fn grow(&self, by: f64) -> Rect {
        Rect {
            x0: self.x0 - by,
            y0: self.y0 - by,
            x1: self.x1 + by,
            y1: self.y1 + by,
        }
    }
}

/// Plotters' style for an area filled with `colour`.
fn filled(colour: BackendColor) -> ShapeStyle {
    ShapeStyle {
        color: RGBAColor(colour.rgb.0, colour.rgb.1, colour.rgb.2, colour.alpha),
        filled: true,
        stroke_width: 1,
    }
}

pub(super) fn rgba(c: RGBColor, alpha: f64) -> BackendColor {
    BackendColor {
        alpha,
        rgb: (c.0, c.1, c.2),
    }
}

/// The supersampled buffer, spoken to in output pixels: strokes and discs through
/// [`Pixels`], polygons, rectangles and text through a plotters backend borrowed per call.
pub(super) struct Canvas<'a> {
    pixels: Pixels<'a>,
    /// Where labels may no longer go.
    pub(super) occupied: Occupied,
    /// The furniture (title, legend, scale, north arrow, attribution): no label ever goes there.
    fixed: Vec<Rect>,
}

pub(super) type DrawResult = Result<(), MapError>;

fn failed<E: std::error::Error + Send + Sync>(e: DrawingErrorKind<E>) -> MapError {
    MapError::Draw(e.to_string())
}

fn s(v: f64) -> i32 {
    (v * f64::from(SS)).round() as i32
}

fn sp((x, y): (f64, f64)) -> (i32, i32) {
    (s(x), s(y))
}

impl Canvas<'_> {
    /// Plotters over the same buffer; making one is free (it borrows, never copies).
    fn backend(&mut self) -> BitMapBackend<'_> {
        let size = (self.pixels.width as u32, self.pixels.height as u32);
        BitMapBackend::with_buffer(self.pixels.buf, size)
    }

    pub(super) fn polygon(&mut self, points: &[(f64, f64)], colour: BackendColor) -> DrawResult {
        self.backend()
            .fill_polygon(points.iter().map(|p| sp(*p)), &filled(colour))
            .map_err(failed)
    }

    pub(super) fn disc(
        &mut self,
        centre: (f64, f64),
        radius: f64,
        colour: BackendColor,
    ) -> DrawResult {
        let ss = f64::from(SS);
        self.pixels.disc(
            (centre.0 * ss, centre.1 * ss),
            (radius * ss).max(1.0),
            colour.rgb,
            colour.alpha,
        );
        Ok(())
    }

    pub(super) fn rect(&mut self, r: Rect, colour: BackendColor) -> DrawResult {
        self.backend()
            .draw_rect(sp((r.x0, r.y0)), sp((r.x1, r.y1)), &filled(colour), true)
            .map_err(failed)
    }

    /// A thick opaque polyline with round joins and caps. (Mitred joins spike at the U-turns
    /// delivery trucks make.)
    pub(super) fn polyline(
        &mut self,
        points: &[(f64, f64)],
        colour: RGBColor,
        width: f64,
    ) -> DrawResult {
        self.stroke(points, rgba(colour, 1.0), width);
        Ok(())
    }

    /// A thin line, translucent allowed (grid, outlines).
    pub(super) fn thin_line(
        &mut self,
        points: &[(f64, f64)],
        colour: BackendColor,
        width: f64,
    ) -> DrawResult {
        self.stroke(points, colour, width);
        Ok(())
    }

    fn stroke(&mut self, points: &[(f64, f64)], colour: BackendColor, width: f64) {
        let ss = f64::from(SS);
        let scaled: Vec<(f64, f64)> = points.iter().map(|(x, y)| (x * ss, y * ss)).collect();
        // At least one buffer pixel each side of the centre line: half an output pixel.
        let radius = (width * ss / 2.0).max(1.0);
        self.pixels
            .polyline(&scaled, radius, colour.rgb, colour.alpha);
    }

    pub(super) fn dashed(
        &mut self,
        a: (f64, f64),
        b: (f64, f64),
        colour: RGBColor,
        width: f64,
    ) -> DrawResult {
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let length = (dx * dx + dy * dy).sqrt();
        let (dash, gap) = (7.0, 5.0);
        let mut at = 0.0;
        while at < length {
            let end = (at + dash).min(length);
            let p = (a.0 + dx * at / length, a.1 + dy * at / length);
            let q = (a.0 + dx * end / length, a.1 + dy * end / length);
            self.polyline(&[p, q], colour, width)?;
            at = end + gap;
        }
        Ok(())
    }

    fn font(size: f64, bold: bool) -> TextStyle<'static> {
        let style = if bold {
            FontStyle::Bold
        } else {
            FontStyle::Normal
        };
        TextStyle::from(
            ("sans-serif", size * f64::from(SS))
                .into_font()
                .style(style),
        )
        .pos(Pos::new(HPos::Left, VPos::Top))
    }

    fn text_width(&self, text: &str, size: f64, bold: bool) -> Result<f64, MapError> {
        let ((x0, _), (x1, _)) = Self::font(size, bold)
            .font
            .layout_box(text)
            .map_err(|e| MapError::Draw(e.to_string()))?;
        Ok(f64::from(x1.abs_diff(x0)) / f64::from(SS))
    }

    /// Text whose baseline starts at `(x, baseline)`. (ab_glyph in plotters puts the
    /// baseline half an em below the anchor.)
    fn text(
        &mut self,
        text: &str,
        (x, baseline): (f64, f64),
        size: f64,
        bold: bool,
        colour: RGBColor,
    ) -> DrawResult {
        let style = Self::font(size, bold).color(&colour);
        self.backend()
            .draw_text(text, &style, sp((x, baseline - size / 2.0)))
            .map_err(failed)
    }

    /// Text centred on `at`, horizontally and on its x-height (a count in a disc).
    pub(super) fn centred_text(
        &mut self,
        text: &str,
        at: (f64, f64),
        size: f64,
        bold: bool,
        colour: RGBColor,
    ) -> DrawResult {
        let width = self.text_width(text, size, bold)?;
        self.text(
            text,
            (at.0 - width / 2.0, at.1 + size * 0.36),
            size,
            bold,
            colour,
        )
    }

    /// Unboxed background text (grid coordinates), left out where furniture will go.
    fn free_text(
        &mut self,
        text: &str,
        (x, baseline): (f64, f64),
        size: f64,
        colour: RGBColor,
    ) -> DrawResult {
        let width = self.text_width(text, size, false)?;
        let r = Rect::new(x, baseline - size, width, size * 1.3);
        if self.occupied.overlaps(&r) {
            return Ok(());
        }
        self.text(text, (x, baseline), size, false, colour)
    }

    /// The box a one-line label of `size` occupies with its padding, left edge at `x`,
    /// vertically centred on `y`.
    fn label_box(
        &self,
        text: &str,
        (x, y): (f64, f64),
        size: f64,
        bold: bool,
    ) -> Result<Rect, MapError> {
        let w = self.text_width(text, size, bold)?;
        let h = size * 1.25;
        Ok(Rect::new(x, y - h / 2.0, w + 6.0, h))
    }

    /// Draws a label on a white box at the first free spot around `anchor`, trying each
    /// clearance in turn, nearest first; returns the box, or `None` when none was free.
    pub(super) fn place_label(
        &mut self,
        text: &str,
        anchor: (f64, f64),
        clearances: &[f64],
        style: LabelStyle,
    ) -> Result<Option<Rect>, MapError> {
        let (w, h) = self.label_size(text, style)?;
        for clearance in clearances {
            for (x, y) in spots(anchor, *clearance, w, h) {
                let r = Rect::new(x, y, w, h);
                if r.inside(f64::from(WIDTH), f64::from(HEIGHT)) && !self.occupied.overlaps(&r) {
                    self.draw_label(text, r, style)?;
                    return Ok(Some(r));
                }
            }
        }
        Ok(None)
    }

    /// A label that must be shown: at the first free spot, else at the first spot clear of
    /// the furniture even if it covers other labels, else at the anchor itself.
    pub(super) fn force_label(
        &mut self,
        text: &str,
        anchor: (f64, f64),
        clearances: &[f64],
        style: LabelStyle,
    ) -> Result<Rect, MapError> {
        if let Some(r) = self.place_label(text, anchor, clearances, style)? {
            return Ok(r);
        }
        let (w, h) = self.label_size(text, style)?;
        let (width, height) = (f64::from(WIDTH), f64::from(HEIGHT));
        let clear = clearances
            .iter()
            .flat_map(|c| spots(anchor, *c, w, h))
            .map(|(x, y)| Rect::new(x, y, w, h))
            .find(|r| r.inside(width, height) && !self.fixed.iter().any(|o| o.overlaps(r)));
        let r = clear.unwrap_or_else(|| {
            let x = (anchor.0 - w / 2.0).clamp(2.0, (width - w - 2.0).max(2.0));
            let y = (anchor.1 - h / 2.0).clamp(TITLE_BAND + 2.0, height - h - 2.0);
            Rect::new(x, y, w, h)
        });
        self.draw_label(text, r, style)?;
        Ok(r)
    }

    /// Keeps labels off a disc.
    pub(super) fn occupy_disc(&mut self, (x, y): (f64, f64), radius: f64) {
        self.occupied.push(Rect::new(
            x - radius,
            y - radius,
            2.0 * radius,
            2.0 * radius,
        ));
    }

    fn label_size(&self, text: &str, style: LabelStyle) -> Result<(f64, f64), MapError> {
        let probe = self.label_box(text, (0.0, 0.0), style.size, style.bold)?;
        Ok((probe.x1 - probe.x0, probe.y1 - probe.y0))
    }

    fn draw_label(&mut self, text: &str, r: Rect, style: LabelStyle) -> DrawResult {
        let LabelStyle { size, bold, colour } = style;
        self.rect(r, rgba(palette::PAPER, 0.82))?;
        let h = r.y1 - r.y0;
        self.text(
            text,
            (r.x0 + 3.0, r.y0 + h / 2.0 + size * 0.36),
            size,
            bold,
            colour,
        )?;
        self.occupied.push(r.grow(1.0));
        Ok(())
    }
}

/// How a label is written.
#[derive(Debug, Clone, Copy)]
pub(super) struct LabelStyle {
    pub(super) size: f64,
    pub(super) bold: bool,
    pub(super) colour: RGBColor,
}

/// Eight spots for a `w × h` box around `(ax, ay)` at `clearance`: right, left, above,
/// below, then the diagonals.
fn spots((ax, ay): (f64, f64), clearance: f64, w: f64, h: f64) -> [(f64, f64); 8] {
    let c = clearance + 2.0;
    [
        (ax + c, ay - h / 2.0),
        (ax - c - w, ay - h / 2.0),
        (ax - w / 2.0, ay - c - h),
        (ax - w / 2.0, ay + c),
        (ax + c * 0.7, ay - c * 0.7 - h),
        (ax + c * 0.7, ay + c * 0.7),
        (ax - c * 0.7 - w, ay - c * 0.7 - h),
        (ax - c * 0.7 - w, ay + c * 0.7),
    ]
}

/// Where the fixed furniture goes, reserved before anything else so labels keep clear of it.
struct Furniture {
    legend: Rect,
    scale: Rect,
    north: Rect,
}

impl Furniture {
    /// Reserves the furniture's places; the legend takes the bottom corner that covers fewest
    /// of the data's markers (`key_points`) and of the track.
    fn reserve(
        canvas: &mut Canvas<'_>,
        track_px: &[(f64, f64)],
        key_points: &[(f64, f64)],
        legend_rows: usize,
    ) -> Furniture {
        let (width, height) = (f64::from(WIDTH), f64::from(HEIGHT));
        let title = Rect::new(0.0, 0.0, width, TITLE_BAND);
        let legend = legend_box(track_px, key_points, legend_rows);
        let scale = Rect::new(width / 2.0 - 75.0, height - 34.0, 150.0, 30.0);
        let attribution = Rect::new(width - 300.0, height - 18.0, 300.0, 18.0);
        let north = Rect::new(width - 44.0, TITLE_BAND + 6.0, 36.0, 46.0);
        let all = [title, legend, scale, attribution, north];
        canvas.occupied.extend(all);
        canvas.fixed.extend(all);
        Furniture {
            legend,
            scale,
            north,
        }
    }
}

/// Draws `scene` over `basemap` in `view`: the background, then the data layers bottom up,
/// then the labels (most important first), then the furniture on top.
pub fn draw(scene: &Scene, view: &View, basemap: &Basemap<'_>) -> Result<Picture, MapError> {
    register_fonts();
    let (w, h) = (WIDTH * SS, HEIGHT * SS);
    let mut buffer = background(basemap, w, h);
    let track_px: Vec<(f64, f64)> = scene.track.iter().map(|t| view.project(t.p)).collect();
    let layout = Layout::new(scene, view, &track_px);
    let mut canvas = Canvas {
        pixels: Pixels::new(&mut buffer, w as usize, h as usize),
        occupied: Occupied::default(),
        fixed: Vec::new(),
    };
    let units_true: Vec<(f64, f64)> = scene.units.iter().map(|u| view.project(u.p)).collect();
    let unit_markers = units::layout(
        &units_true,
        units::Area {
            x0: 0.0,
            y0: TITLE_BAND,
            x1: f64::from(WIDTH),
            y1: f64::from(HEIGHT),
        },
    );
    let mut rows = legend_rows(scene);
    if unit_markers
        .iter()
        .any(|m| matches!(m, units::Marker::Cluster { .. }))
    {
        rows.push((Key::Cluster, "grupo: unidades y sus estados".into()));
    }
    let mut key_points = layout.key_points();
    key_points.extend(unit_markers.iter().map(units::Marker::at));
    let furniture = Furniture::reserve(&mut canvas, &track_px, &key_points, rows.len());
    let mut skipped = 0usize;
    if let Basemap::Offline = basemap {
        skipped += draw_offline_base(&mut canvas, scene, view)?;
    }
    draw_fences(&mut canvas, scene, view)?;
    markers::draw_gap_lines(&mut canvas, &layout)?;
    let drawn_points = draw_track(&mut canvas, scene, &track_px)?;
    draw_speeding(&mut canvas, scene, &track_px)?;
    markers::draw_markers(&mut canvas, &layout)?;
    markers::draw_fence_edges(&mut canvas, scene, view)?;
    markers::draw_start_end(&mut canvas, scene, &layout)?;
    units::draw_units(&mut canvas, scene, &unit_markers, &units_true)?;
    let (marks, data_skipped) = markers::place_labels(&mut canvas, scene, view, &layout)?;
    skipped += data_skipped;
    if let Basemap::Offline = basemap {
        place_landmark_labels(&mut canvas, scene, view)?;
    }
    draw_title(&mut canvas, scene)?;
    let heading = if scene.states.is_empty() {
        "Velocidad"
    } else {
        "Estados"
    };
    draw_legend(&mut canvas, furniture.legend, heading, &rows)?;
    draw_scale(&mut canvas, view, furniture.scale)?;
    draw_north(&mut canvas, furniture.north)?;
    draw_attribution(&mut canvas, basemap)?;
    Ok(Picture {
        rgb: downsample(&buffer, w, h),
        drawn_points,
        stop_markers: layout.groups.len(),
        labels_skipped: skipped,
        marks,
        unit_markers,
    })
}

/// The supersampled buffer with the land colour and the tiles, if any.
fn background(basemap: &Basemap<'_>, w: u32, h: u32) -> Buffer {
    let mut buffer = Buffer::zeroed((w * h * 3) as usize);
    fill(&mut buffer, palette::LAND);
    if let Basemap::Tiles { tiles, .. } = basemap {
        for (tile, pixels) in tiles.iter() {
            blit_tile(&mut buffer, tile, pixels);
        }
    }
    buffer
}

/// Landmarks of the offline basemap, last: they are background, so none is counted as left
/// out.
fn place_landmark_labels(canvas: &mut Canvas<'_>, scene: &Scene, view: &View) -> DrawResult {
    for (name, p) in &scene.landmarks {
        let at = view.project(*p);
        if visible(at) {
            let style = LabelStyle {
                size: 9.0,
                bold: false,
                colour: palette::LANDMARK,
            };
            canvas.place_label(name, at, &[3.0], style)?;
        }
    }
    Ok(())
}

/// Whose background this is, bottom right.
fn draw_attribution(canvas: &mut Canvas<'_>, basemap: &Basemap<'_>) -> DrawResult {
    let attribution = match basemap {
        Basemap::Tiles { attribution, .. } => attribution.to_string(),
        Basemap::Offline => "Fondo sin conexión: rutas y geocercas de la flota".to_owned(),
    };
    let width = canvas.text_width(&attribution, 9.0, false)?;
    let r = Rect::new(
        f64::from(WIDTH) - width - 8.0,
        f64::from(HEIGHT) - 15.0,
        width + 8.0,
        15.0,
    );
    canvas.rect(r, rgba(palette::PAPER, 0.8))?;
    canvas.text(
        &attribution,
        (r.x0 + 4.0, f64::from(HEIGHT) - 4.0),
        9.0,
        false,
        palette::SOFT_INK,
    )
}

pub(super) fn visible((x, y): (f64, f64)) -> bool {
    x >= 0.0 && y >= TITLE_BAND && x < f64::from(WIDTH) && y < f64::from(HEIGHT)
}

fn fill(buffer: &mut [u8], colour: RGBColor) {
    for pixel in buffer.chunks_exact_mut(3) {
        pixel.copy_from_slice(&[colour.0, colour.1, colour.2]);
    }
}

/// Copies a 256 × 256 RGB tile into the supersampled buffer, each pixel doubled.
fn blit_tile(buffer: &mut [u8], tile: &TileRef, pixels: &[u8]) {
    let side = TILE_PX as i32;
    if pixels.len() != (side * side * 3) as usize {
        return;
    }
    let (w, h) = ((WIDTH * SS) as i32, (HEIGHT * SS) as i32);
    let ss = SS as i32;
    for ty in 0..side {
        let oy = (tile.top_px + ty) * ss;
        if oy < 0 || oy >= h {
            continue;
        }
        for tx in 0..side {
            let ox = (tile.left_px + tx) * ss;
            if ox < 0 || ox >= w {
                continue;
            }
            let src = ((ty * side + tx) * 3) as usize;
            let rgb = &pixels[src..src + 3];
            for dy in 0..ss {
                for dx in 0..ss {
                    let (x, y) = (ox + dx, oy + dy);
                    if x < w && y < h {
                        let dst = ((y * w + x) * 3) as usize;
                        buffer[dst..dst + 3].copy_from_slice(rgb);
                    }
                }
            }
        }
    }
}

/// Averages each 2 × 2 block: the anti-aliasing step.
fn downsample(buffer: &[u8], w: u32, h: u32) -> Buffer {
    let (ow, oh) = ((w / SS) as usize, (h / SS) as usize);
    let w = w as usize;
    let mut out = Buffer::zeroed(ow * oh * 3);
    // Three passes per row pair, each a plain loop the compiler turns into vector
    // instructions: the vertical sums, then each byte's mean with the byte three along (the
    // same channel of the next pixel), then every other pixel's three means copied out.
    // Done in one pass, channel by channel, this was 33 instructions a pixel, a tenth of a
    // fleet map's. Each sum carries half of the rounding term, so the output is
    // `(a + b + c + d + 2) / 4` exactly as before.
    let mut sums = vec![0u16; w * 3];
    let mut means = vec![0u8; w * 3 - 3];
    let rows = buffer.chunks_exact(2 * w * 3);
    for (out_row, pair) in out.chunks_exact_mut(ow * 3).zip(rows) {
        let (row0, row1) = pair.split_at(w * 3);
        for ((sum, a), b) in sums.iter_mut().zip(row0).zip(row1) {
            *sum = u16::from(*a) + u16::from(*b) + 1;
        }
        for ((mean, left), right) in means.iter_mut().zip(&sums).zip(&sums[3..]) {
            *mean = ((left + right) >> 2) as u8;
        }
        for (pixel, block) in out_row.chunks_exact_mut(3).zip(means.chunks(6)) {
            pixel.copy_from_slice(&block[..3]);
        }
    }
    out
}

/// The legend's size for `rows` rows.
fn legend_size(rows: usize) -> (f64, f64) {
    (214.0, 34.0 + 14.0 * rows as f64)
}

/// The legend goes in the bottom corner (else the top left) that covers fewest markers, then
/// least of the track.
fn legend_box(track: &[(f64, f64)], key_points: &[(f64, f64)], rows: usize) -> Rect {
    let (w, h) = legend_size(rows);
    let candidates = [
        Rect::new(8.0, f64::from(HEIGHT) - h - 22.0, w, h),
        Rect::new(
            f64::from(WIDTH) - w - 8.0,
            f64::from(HEIGHT) - h - 22.0,
            w,
            h,
        ),
        Rect::new(8.0, TITLE_BAND + 8.0, w, h),
    ];
    let cost = |r: &Rect| {
        let near = r.grow(12.0);
        let markers = key_points.iter().filter(|p| near.contains(**p)).count();
        let track = track.iter().filter(|p| r.contains(**p)).count();
        (markers, track)
    };
    candidates
        .into_iter()
        .min_by_key(cost)
        .unwrap_or(candidates[0])
}

/// A light basemap from flota's own data; returns how many labels were left out.
fn draw_offline_base(
    canvas: &mut Canvas<'_>,
    scene: &Scene,
    view: &View,
) -> Result<usize, MapError> {
    // Coordinate grid at a round step at least ~110 px apart.
    let steps = [
        0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0,
    ];
    let top_left = view.unproject(0.0, 0.0);
    let bottom_right = view.unproject(f64::from(WIDTH), f64::from(HEIGHT));
    let px_per_deg = f64::from(WIDTH) / (bottom_right.lon - top_left.lon);
    let step = steps
        .iter()
        .copied()
        .find(|s| s * px_per_deg >= 110.0)
        .unwrap_or(10.0);
    let decimals = (-step.log10()).ceil().max(0.0) as usize;
    let grid = rgba(palette::GRID, 1.0);
    // Grid labels go on top of the roads, which would otherwise cut through them.
    let mut labels: Vec<(String, (f64, f64))> = Vec::new();
    let mut lon = (top_left.lon / step).ceil() * step;
    while lon < bottom_right.lon {
        let (x, _) = view.project(LatLon::new(top_left.lat, lon));
        canvas.thin_line(&[(x, 0.0), (x, f64::from(HEIGHT))], grid, 1.0)?;
        // A view across the antimeridian runs past 180°: label the meridian as on the globe.
        let shown = super::projection::wrap_lon(lon);
        let label = if shown.abs() > 180.0 - step / 2.0 {
            // The antimeridian itself is neither east nor west.
            "180°".to_owned()
        } else {
            format!(
                "{:.*}° {}",
                decimals,
                shown.abs(),
                if shown < 0.0 { "O" } else { "E" }
            )
        };
        labels.push((label, (x + 3.0, TITLE_BAND + 12.0)));
        lon += step;
    }
    let mut lat = (bottom_right.lat / step).ceil() * step;
    while lat < top_left.lat {
        let (_, y) = view.project(LatLon::new(lat, top_left.lon));
        canvas.thin_line(&[(0.0, y), (f64::from(WIDTH), y)], grid, 1.0)?;
        if y > TITLE_BAND + 30.0 {
            let label = format!(
                "{:.*}° {}",
                decimals,
                lat.abs(),
                if lat < 0.0 { "S" } else { "N" }
            );
            labels.push((label, (3.0, y - 3.0)));
        }
        lat += step;
    }
    // Roads: the fleet's route lines, casing under fill so crossings read as streets.
    let roads: Vec<Vec<(f64, f64)>> = scene
        .roads
        .iter()
        .map(|road| {
            let px: Vec<(f64, f64)> = view.project_path(road);
            rdp_indices(&px, 0.5).into_iter().map(|i| px[i]).collect()
        })
        .collect();
    for road in &roads {
        canvas.polyline(road, palette::ROAD_CASING, 6.0)?;
    }
    for road in &roads {
        canvas.polyline(road, palette::ROAD, 4.0)?;
    }
    for (label, at) in &labels {
        canvas.free_text(label, *at, 9.0, palette::GRID_TEXT)?;
    }
    for (_, p) in &scene.landmarks {
        let at = view.project(*p);
        if visible(at) {
            canvas.disc(at, 2.5, rgba(palette::LANDMARK, 1.0))?;
        }
    }
    Ok(0)
}

fn draw_fences(canvas: &mut Canvas<'_>, scene: &Scene, view: &View) -> DrawResult {
    for fence in &scene.fences {
        let outline: Vec<(f64, f64)> = view.project_path(&fence.outline);
        if outline.len() < 3 {
            continue;
        }
        canvas.polygon(&outline, rgba(palette::FENCE, 0.16))?;
        let mut closed = outline.clone();
        closed.push(outline[0]);
        canvas.thin_line(&closed, rgba(palette::FENCE, 0.9), 1.5)?;
    }
    Ok(())
}

/// The track: a white casing, then runs of one speed band each, simplified per run so no
/// colour change is smoothed away. Returns the vertices drawn.
fn draw_track(
    canvas: &mut Canvas<'_>,
    scene: &Scene,
    px: &[(f64, f64)],
) -> Result<usize, MapError> {
    let mut runs: Vec<(usize, Vec<(f64, f64)>)> = Vec::new();
    let mut current: Option<(usize, Vec<(f64, f64)>)> = None;
    for i in 1..scene.track.len() {
        if scene.track[i].after_gap {
            runs.extend(current.take());
            continue;
        }
        // A segment takes the higher band of its ends, each under the limit that applied
        // there, so a speeding report is never hidden.
        let (a, z) = (&scene.track[i - 1], &scene.track[i]);
        let b = band(a.speed_kmh, a.limit_kmh).max(band(z.speed_kmh, z.limit_kmh));
        match &mut current {
            Some((run_band, points)) if *run_band == b => points.push(px[i]),
            _ => {
                runs.extend(current.take());
                current = Some((b, vec![px[i - 1], px[i]]));
            }
        }
    }
    runs.extend(current);
    let simplified: Vec<(usize, Vec<(f64, f64)>)> = runs
        .into_iter()
        .map(|(b, points)| {
            let keep = rdp_indices(&points, 0.6);
            (b, keep.into_iter().map(|i| points[i]).collect())
        })
        .collect();
    for (_, points) in &simplified {
        canvas.polyline(points, palette::CASING, 6.0)?;
    }
    for (b, points) in &simplified {
        canvas.polyline(points, palette::BANDS[*b], 3.5)?;
    }
    // Runs share their joint vertex.
    let vertices = simplified.iter().map(|(_, p)| p.len()).sum::<usize>();
    Ok(vertices
        .saturating_sub(simplified.len().saturating_sub(1))
        .min(scene.track.len()))
}

/// Detected speeding episodes drawn over the track, thick and cased: unmistakable.
fn draw_speeding(canvas: &mut Canvas<'_>, scene: &Scene, px: &[(f64, f64)]) -> DrawResult {
    for mark in &scene.speeding {
        let points: Vec<(f64, f64)> = scene
            .track
            .iter()
            .zip(px)
            .filter(|(t, _)| t.ts_utc >= mark.from_utc && t.ts_utc <= mark.to_utc)
            .map(|(_, p)| *p)
            .collect();
        if points.is_empty() {
            continue;
        }
        canvas.polyline(&points, palette::SPEEDING_CASING, 8.0)?;
        canvas.polyline(&points, palette::BANDS[3], 5.0)?;
    }
    Ok(())
}

fn draw_title(canvas: &mut Canvas<'_>, scene: &Scene) -> DrawResult {
    canvas.rect(
        Rect::new(0.0, 0.0, f64::from(WIDTH), TITLE_BAND),
        rgba(palette::PAPER, 0.9),
    )?;
    canvas.thin_line(
        &[(0.0, TITLE_BAND), (f64::from(WIDTH), TITLE_BAND)],
        rgba(palette::GRID, 1.0),
        1.0,
    )?;
    canvas.text(&scene.title, (10.0, 21.0), 16.0, true, palette::INK)?;
    let mut subtitle = scene.subtitle.clone();
    // Keep the subtitle on one line: trim whole clauses from the end.
    while canvas.text_width(&subtitle, 11.0, false)? > f64::from(WIDTH) - 20.0 {
        match subtitle.rfind(" · ") {
            Some(cut) => subtitle.truncate(cut),
            None => break,
        }
    }
    canvas.text(&subtitle, (10.0, 39.0), 11.0, false, palette::SOFT_INK)
}

/// What a legend row shows left of its text.
enum Key {
    Band(usize),
    Stop(RGBColor),
    Gap,
    GapSpot,
    Fence,
    StartEnd,
    /// A cluster of the fleet map: a ring of state colours around a count.
    Cluster,
    /// Text only.
    Note,
}

/// The legend's rows: speed as shares of the limit that applied (and which limits those
/// were), then the markers.
fn legend_rows(scene: &Scene) -> Vec<(Key, String)> {
    if !scene.states.is_empty() {
        let mut rows: Vec<(Key, String)> = scene
            .states
            .iter()
            .map(|((r, g, b), words)| (Key::Stop(RGBColor(*r, *g, *b)), words.clone()))
            .collect();
        rows.push((Key::Fence, "geocerca".into()));
        return rows;
    }
    let pct = |share: f64| format!("{:.0} %", share * 100.0);
    let [half, most, all] = BAND_SHARES;
    let mut rows = vec![
        (Key::Band(0), format!("hasta {} del límite", pct(half))),
        (
            Key::Band(1),
            format!("{:.0}–{} del límite", half * 100.0, pct(most)),
        ),
        (
            Key::Band(2),
            format!("{:.0}–{} del límite", most * 100.0, pct(all)),
        ),
        (Key::Band(3), "sobre el límite (exceso)".to_owned()),
    ];
    if !scene.zone_limits_kmh.is_empty() {
        let zones: Vec<String> = scene
            .zone_limits_kmh
            .iter()
            .map(|l| format!("{l:.0}"))
            .collect();
        rows.push((
            Key::Note,
            format!("límite en geocercas: {} km/h", zones.join(", ")),
        ));
    }
    rows.extend([
        (Key::Stop(palette::STOP), "parada (tamaño = minutos)".into()),
        (Key::Stop(palette::LONG_STOP), "parada prolongada".into()),
        (Key::Gap, "sin señal: salto sin reportes".into()),
        (Key::GapSpot, "sin señal: quieta o hasta ahora".into()),
        (Key::Fence, "geocerca".into()),
        (Key::StartEnd, "inicio · fin".into()),
    ]);
    rows
}

fn draw_legend(
    canvas: &mut Canvas<'_>,
    r: Rect,
    heading: &str,
    rows: &[(Key, String)],
) -> DrawResult {
    canvas.rect(r, rgba(palette::PAPER, 0.88))?;
    outline(canvas, r, rgba(palette::GRID, 1.0))?;
    let x = r.x0 + 10.0;
    let text_x = r.x0 + 40.0;
    let mut y = r.y0 + 14.0;
    canvas.text(heading, (x, y + 4.0), 10.0, true, palette::INK)?;
    y += 15.0;
    for (key, label) in rows {
        match key {
            Key::Band(i) => {
                let width = if *i == 3 { 5.0 } else { 3.5 };
                canvas.polyline(&[(x, y), (x + 22.0, y)], palette::BANDS[*i], width)?;
            }
            Key::Stop(fill) => {
                canvas.disc((x + 11.0, y), 6.0, rgba(palette::INK, 1.0))?;
                canvas.disc((x + 11.0, y), 4.8, rgba(*fill, 1.0))?;
            }
            Key::Gap => canvas.dashed((x, y), (x + 22.0, y), palette::GAP, 2.0)?,
            Key::GapSpot => markers::gap_spot_key(canvas, (x + 11.0, y))?,
            Key::Fence => {
                let swatch = Rect::new(x + 2.0, y - 5.0, 18.0, 10.0);
                canvas.rect(swatch, rgba(palette::FENCE, 0.25))?;
                outline(canvas, swatch, rgba(palette::FENCE, 1.0))?;
            }
            Key::StartEnd => {
                canvas.polygon(
                    &[(x + 6.0, y - 5.0), (x + 11.0, y + 4.0), (x + 1.0, y + 4.0)],
                    rgba(palette::START, 1.0),
                )?;
                canvas.rect(
                    Rect::new(x + 15.0, y - 4.0, 8.0, 8.0),
                    rgba(palette::INK, 1.0),
                )?;
            }
            Key::Cluster => {
                let c = (x + 11.0, y);
                canvas.disc(c, 7.5, rgba(palette::INK, 1.0))?;
                let ring: Vec<((u8, u8, u8), usize)> =
                    rows_states(rows).into_iter().map(|rgb| (rgb, 1)).collect();
                units::ring(canvas, c, 6.5, &ring)?;
                canvas.disc(c, 3.5, rgba(palette::PAPER, 1.0))?;
            }
            Key::Note => {}
        }
        let at = match key {
            Key::Note => x,
            _ => text_x,
        };
        canvas.text(label, (at, y + 4.0), 10.0, false, palette::INK)?;
        y += 14.0;
    }
    Ok(())
}

/// The state colours a fleet legend lists, for its cluster key.
fn rows_states(rows: &[(Key, String)]) -> Vec<(u8, u8, u8)> {
    rows.iter()
        .filter_map(|(key, _)| match key {
            Key::Stop(c) => Some((c.0, c.1, c.2)),
            _ => None,
        })
        .collect()
}

/// A one-pixel frame around `r`.
fn outline(canvas: &mut Canvas<'_>, r: Rect, colour: BackendColor) -> DrawResult {
    canvas.thin_line(
        &[
            (r.x0, r.y0),
            (r.x1, r.y0),
            (r.x1, r.y1),
            (r.x0, r.y1),
            (r.x0, r.y0),
        ],
        colour,
        1.0,
    )
}

/// A scale bar of a round length no longer than 120 px.
fn draw_scale(canvas: &mut Canvas<'_>, view: &View, r: Rect) -> DrawResult {
    let mpp = view.metres_per_px();
    let max_m = 120.0 * mpp;
    let magnitude = 10f64.powf(max_m.log10().floor());
    let length_m = [5.0, 2.0, 1.0]
        .iter()
        .map(|f| f * magnitude)
        .find(|m| *m <= max_m)
        .unwrap_or(magnitude);
    let length_px = length_m / mpp;
    let label = if length_m >= 1000.0 {
        format!("{} km", length_m / 1000.0)
    } else {
        format!("{length_m} m")
    };
    let x0 = (r.x0 + r.x1) / 2.0 - length_px / 2.0;
    let y = r.y1 - 8.0;
    canvas.rect(
        Rect::new(x0 - 6.0, r.y0 + 2.0, length_px + 12.0, r.y1 - r.y0 - 4.0),
        rgba(palette::PAPER, 0.8),
    )?;
    let ink = rgba(palette::INK, 1.0);
    canvas.thin_line(&[(x0, y), (x0 + length_px, y)], ink, 2.0)?;
    canvas.thin_line(&[(x0, y - 5.0), (x0, y + 1.0)], ink, 1.5)?;
    canvas.thin_line(
        &[(x0 + length_px, y - 5.0), (x0 + length_px, y + 1.0)],
        ink,
        1.5,
    )?;
    let width = canvas.text_width(&label, 10.0, false)?;
    canvas.text(
        &label,
        (x0 + length_px / 2.0 - width / 2.0, y - 7.0),
        10.0,
        false,
        palette::INK,
    )
}

fn draw_north(canvas: &mut Canvas<'_>, r: Rect) -> DrawResult {
    let cx = (r.x0 + r.x1) / 2.0;
    canvas.disc((cx, r.y0 + 26.0), 15.0, rgba(palette::PAPER, 0.85))?;
    canvas.polygon(
        &[
            (cx, r.y0 + 14.0),
            (cx + 7.0, r.y0 + 34.0),
            (cx, r.y0 + 29.0),
            (cx - 7.0, r.y0 + 34.0),
        ],
        rgba(palette::INK, 1.0),
    )?;
    let width = canvas.text_width("N", 11.0, true)?;
    canvas.text(
        "N",
        (cx - width / 2.0, r.y0 + 11.0),
        11.0,
        true,
        palette::INK,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_are_shares_of_the_limit_that_applied() {
        let check = |speed: f64, limit: f64, expected: usize| {
            assert_eq!(band(speed, limit), expected, "{speed} under {limit}")
        };
        check(0.0, 60.0, 0);
        check(30.0, 60.0, 0);
        check(30.1, 60.0, 1);
        check(54.0, 60.0, 1);
        check(54.1, 60.0, 2);
        check(60.0, 60.0, 2);
        check(60.1, 60.0, 3);
        // The same speed in a 40 km/h zone is a different story.
        check(38.0, 40.0, 2);
        check(45.0, 40.0, 3);
    }

    #[test]
    fn downsampling_averages_blocks() {
        let (w, h) = (WIDTH * SS, HEIGHT * SS);
        let mut buffer = vec![0u8; (w * h * 3) as usize];
        // Top-left block: two white pixels and two black.
        buffer[0..3].copy_from_slice(&[255, 255, 255]);
        buffer[3..6].copy_from_slice(&[255, 255, 255]);
        let out = downsample(&buffer, w, h);
        assert_eq!(out.len(), (WIDTH * HEIGHT * 3) as usize);
        assert_eq!(&out[0..3], &[128, 128, 128]);
        assert_eq!(&out[3..6], &[0, 0, 0]);
    }

    /// Every output byte is its block's rounded mean, `(a + b + c + d + 2) / 4`, over bytes
    /// that differ everywhere (a generator's, not a picture's).
    #[test]
    fn downsampling_rounds_every_byte_as_the_mean_of_its_block() {
        let (w, h) = (WIDTH * SS, HEIGHT * SS);
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let buffer: Vec<u8> = (0..w * h * 3)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 56) as u8
            })
            .collect();
        let out = downsample(&buffer, w, h);
        let (w, ow) = (w as usize, WIDTH as usize);
        let at = |x: usize, y: usize, c: usize| u16::from(buffer[(y * w + x) * 3 + c]);
        for y in 0..HEIGHT as usize {
            for x in 0..ow {
                for c in 0..3 {
                    let sum = at(2 * x, 2 * y, c)
                        + at(2 * x + 1, 2 * y, c)
                        + at(2 * x, 2 * y + 1, c)
                        + at(2 * x + 1, 2 * y + 1, c);
                    let want = ((sum + 2) / 4) as u8;
                    assert_eq!(out[(y * ow + x) * 3 + c], want, "({x}, {y}) channel {c}");
                }
            }
        }
    }

    /// The canvas and the picture are mappings of their own, returned to the system when a
    /// map is done (not kept by a worker's allocator arena).
    #[test]
    fn the_big_buffers_are_mapped() {
        let (w, h) = (WIDTH * SS, HEIGHT * SS);
        let canvas = background(&Basemap::Offline, w, h);
        assert!(canvas.is_mapped());
        assert!(downsample(&canvas, w, h).is_mapped());
    }

    #[test]
    fn labels_avoid_what_is_occupied() {
        let a = Rect::new(0.0, 0.0, 10.0, 10.0);
        assert!(a.overlaps(&Rect::new(5.0, 5.0, 10.0, 10.0)));
        assert!(!a.overlaps(&Rect::new(10.0, 0.0, 10.0, 10.0)));
        assert!(a.grow(1.0).overlaps(&Rect::new(10.5, 0.0, 10.0, 10.0)));
    }
}
