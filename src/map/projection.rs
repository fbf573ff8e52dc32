//! Web Mercator as slippy-map tiles use it: degrees to global pixels at an integer zoom, and
//! the view (which rectangle of that pixel plane the picture shows).
//!
//! Owns the one projection every layer shares — tiles, the offline basemap, the track — so a
//! point lands on the same pixel whatever the background. Pure arithmetic.

use crate::geometry::earth::LatLon;

/// Side of a map tile in pixels.
pub const TILE_PX: f64 = 256.0;
/// Web Mercator's latitude limit.
const MAX_LAT: f64 = 85.051_128_78;
/// Zooms a view may take: 17 shows a street corner, 3 a continent.
pub const MIN_ZOOM: u8 = 3;
pub const MAX_ZOOM: u8 = 17;

/// Global pixel coordinates of `p` at `zoom` (origin at 180° W, 85° N; y grows south).
pub fn world_px(p: LatLon, zoom: u8) -> (f64, f64) {
    let size = TILE_PX * f64::from(1u32 << zoom);
    let lat = p.lat.clamp(-MAX_LAT, MAX_LAT).to_radians();
    let x = (p.lon + 180.0) / 360.0 * size;
    let y = (1.0 - (lat.tan() + 1.0 / lat.cos()).ln() / std::f64::consts::PI) / 2.0 * size;
    (x, y)
}

/// The inverse of [`world_px`].
pub fn world_to_latlon(x: f64, y: f64, zoom: u8) -> LatLon {
    let size = TILE_PX * f64::from(1u32 << zoom);
    let lon = x / size * 360.0 - 180.0;
    let n = std::f64::consts::PI * (1.0 - 2.0 * y / size);
    LatLon::new(n.sinh().atan().to_degrees(), lon)
}

/// `lon` brought back into [−180, 180] when a view's continuous longitudes (east of 180° or
/// west of −180° across the antimeridian) are reported to a user; values inside are returned
/// untouched, bit for bit.
pub fn wrap_lon(lon: f64) -> f64 {
    if lon > 180.0 {
        lon - 360.0 * ((lon + 180.0) / 360.0).floor()
    } else if lon < -180.0 {
        lon + 360.0 * ((180.0 - lon) / 360.0).floor()
    } else {
        lon
    }
}

/// `x` moved by whole worlds (`size` pixels) to the copy nearest `near`: the same place on
/// the other side of the antimeridian. Zero shift, bit for bit, when already within half a
/// world.
fn nearest_copy(x: f64, near: f64, size: f64) -> f64 {
    let turns = ((near - x) / size).round();
    if turns == 0.0 { x } else { x + turns * size }
}

/// Room the picture keeps free around the data: title on top, legend and scale below.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Margins {
    pub top: f64,
    pub right: f64,
    pub bottom: f64,
    pub left: f64,
}

/// One tile of the view: its address and where its top-left corner falls in the picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TileRef {
    pub zoom: u8,
    pub x: u32,
    pub y: u32,
    pub left_px: i32,
    pub top_px: i32,
}

/// A rectangle of the global pixel plane at one zoom: what the picture shows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct View {
    pub zoom: u8,
    /// Global pixel coordinates of the picture's top-left corner.
    pub left: f64,
    pub top: f64,
    pub width: u32,
    pub height: u32,
}

impl View {
    /// The highest zoom at which the box `sw`–`ne` fits inside the picture minus `margins`,
    /// centred there. Integer zooms keep tiles at their native resolution, as every web map
    /// does; a single point (a unit that never moved) gets street level.
    pub fn fit(sw: LatLon, ne: LatLon, width: u32, height: u32, margins: Margins) -> View {
        let inner_w = (f64::from(width) - margins.left - margins.right).max(16.0);
        let inner_h = (f64::from(height) - margins.top - margins.bottom).max(16.0);
        let mut zoom = MIN_ZOOM;
        for z in (MIN_ZOOM..=MAX_ZOOM).rev() {
            let (x0, y1) = world_px(sw, z);
            let (x1, y0) = world_px(ne, z);
            if x1 - x0 <= inner_w && y1 - y0 <= inner_h {
                zoom = z;
                break;
            }
        }
        let (x0, y1) = world_px(sw, zoom);
        let (x1, y0) = world_px(ne, zoom);
        let centre_x = (x0 + x1) / 2.0;
        let centre_y = (y0 + y1) / 2.0;
        // Centre the data in the free area, not the whole picture.
        let free_centre_x = margins.left + inner_w / 2.0;
        let free_centre_y = margins.top + inner_h / 2.0;
        View {
            zoom,
            left: (centre_x - free_centre_x).round(),
            top: (centre_y - free_centre_y).round(),
            width,
            height,
        }
    }

    /// Picture pixel coordinates of `p`, on the copy of the world nearest the picture's
    /// centre: a view across the antimeridian shows 179.9° E and 179.9° W side by side (at
    /// zoom ≥ 3 the world is wider than the picture, so the nearest copy is the visible one).
    pub fn project(&self, p: LatLon) -> (f64, f64) {
        let (x, y) = world_px(p, self.zoom);
        let centre = self.left + f64::from(self.width) / 2.0;
        (
            nearest_copy(x, centre, self.world_size()) - self.left,
            y - self.top,
        )
    }

    /// Picture pixel coordinates of a line's vertices: the first as [`View::project`], each
    /// next one on the copy nearest its predecessor, so a road or a fence across the
    /// antimeridian stays one short line instead of a stroke across the whole world.
    pub fn project_path(&self, points: &[LatLon]) -> Vec<(f64, f64)> {
        let size = self.world_size();
        let mut out: Vec<(f64, f64)> = Vec::with_capacity(points.len());
        for p in points {
            let at = match out.last() {
                None => self.project(*p),
                Some(&(previous_x, _)) => {
                    let (x, y) = world_px(*p, self.zoom);
                    (
                        nearest_copy(x, previous_x + self.left, size) - self.left,
                        y - self.top,
                    )
                }
            };
            out.push(at);
        }
        out
    }

    /// Width of the whole world in pixels at this zoom.
    fn world_size(&self) -> f64 {
        TILE_PX * f64::from(1u32 << self.zoom)
    }

    /// The position under picture pixel `(x, y)`.
    pub fn unproject(&self, x: f64, y: f64) -> LatLon {
        world_to_latlon(x + self.left, y + self.top, self.zoom)
    }

    /// Ground metres per pixel at the picture's centre.
    pub fn metres_per_px(&self) -> f64 {
        let centre = self.unproject(f64::from(self.width) / 2.0, f64::from(self.height) / 2.0);
        let size = TILE_PX * f64::from(1u32 << self.zoom);
        2.0 * std::f64::consts::PI
            * crate::geometry::earth::EARTH_RADIUS_M
            * centre.lat.to_radians().cos()
            / size
    }

    /// Every tile the picture overlaps, row by row. Rows beyond the poles are skipped;
    /// columns wrap around the antimeridian.
    pub fn tiles(&self) -> Vec<TileRef> {
        let n = 1i64 << self.zoom;
        let first_x = (self.left / TILE_PX).floor() as i64;
        let last_x = ((self.left + f64::from(self.width) - 1.0) / TILE_PX).floor() as i64;
        let first_y = (self.top / TILE_PX).floor() as i64;
        let last_y = ((self.top + f64::from(self.height) - 1.0) / TILE_PX).floor() as i64;
        let mut out = Vec::new();
        for ty in first_y.max(0)..=last_y.min(n - 1) {
            for tx in first_x..=last_x {
                out.push(TileRef {
                    zoom: self.zoom,
                    x: tx.rem_euclid(n) as u32,
                    y: ty as u32,
                    left_px: (tx as f64 * TILE_PX - self.left).round() as i32,
                    top_px: (ty as f64 * TILE_PX - self.top).round() as i32,
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_world(p: LatLon, zoom: u8, expected: (f64, f64)) {
        let (x, y) = world_px(p, zoom);
        assert!(
            (x - expected.0).abs() < 0.01 && (y - expected.1).abs() < 0.01,
            "{p:?} z{zoom}: ({x}, {y}) ≠ {expected:?}"
        );
        let back = world_to_latlon(x, y, zoom);
        assert!((back.lat - p.lat).abs() < 1e-9 && (back.lon - p.lon).abs() < 1e-9);
    }

    #[test]
    fn projection_matches_the_slippy_map_convention() {
        check_world(LatLon::new(0.0, 0.0), 0, (128.0, 128.0));
        check_world(LatLon::new(0.0, -180.0), 1, (0.0, 256.0));
        // Guatemala City at zoom 12: tile (1018.23, 1879.65) by the OSM wiki's formula
        // (x = (lon + 180) / 360 · 2^z, y = (1 − asinh(tan φ) / π) / 2 · 2^z).
        let (x, y) = world_px(LatLon::new(14.6349, -90.5069), 12);
        assert!((x / 256.0 - 1018.2326).abs() < 1e-4 && (y / 256.0 - 1879.6466).abs() < 1e-4);
    }

    #[test]
    fn fit_keeps_the_box_inside_the_free_area_at_the_highest_zoom() {
        let margins = Margins {
            top: 50.0,
            right: 20.0,
            bottom: 40.0,
            left: 20.0,
        };
        let sw = LatLon::new(14.55, -90.60);
        let ne = LatLon::new(14.66, -90.48);
        let view = View::fit(sw, ne, 800, 600, margins);
        let (x0, y1) = view.project(sw);
        let (x1, y0) = view.project(ne);
        assert!(
            x0 >= 19.0 && x1 <= 781.0 && y0 >= 49.0 && y1 <= 561.0,
            "{view:?}"
        );
        let tighter = View {
            zoom: view.zoom + 1,
            ..view
        };
        let (a, _) = world_px(sw, tighter.zoom);
        let (b, _) = world_px(ne, tighter.zoom);
        let (_, c) = world_px(ne, tighter.zoom);
        let (_, d) = world_px(sw, tighter.zoom);
        assert!(
            b - a > 760.0 || d - c > 510.0,
            "zoom {} is not the highest",
            view.zoom
        );
    }

    #[test]
    fn a_single_point_gets_street_level_and_tiles_cover_the_picture() {
        let p = LatLon::new(14.6, -90.5);
        let margins = Margins {
            top: 0.0,
            right: 0.0,
            bottom: 0.0,
            left: 0.0,
        };
        let view = View::fit(p, p, 800, 600, margins);
        assert_eq!(view.zoom, MAX_ZOOM);
        let tiles = view.tiles();
        // 800 × 600 at an arbitrary offset spans 4–5 columns and 3–4 rows.
        assert!((12..=20).contains(&tiles.len()), "{}", tiles.len());
        assert!(tiles.iter().any(|t| t.left_px <= 0 && t.top_px <= 0));
        assert!(
            tiles
                .iter()
                .any(|t| t.left_px + 256 >= 800 && t.top_px + 256 >= 600)
        );
        let (x, y) = view.project(p);
        assert!((x - 400.0).abs() <= 1.0 && (y - 300.0).abs() <= 1.0);
        let mpp = view.metres_per_px();
        assert!((1.1..1.2).contains(&mpp), "{mpp}");
    }
}
