//! Route maps: one unit's day drawn as a PNG an operator would rather look at than read.
//!
//! Owns the picture, from scene to bytes: [`scene`] decides what to show (from positions and
//! detections only), [`projection`] where it lands, [`tiles`] fetches a background (the only
//! part that touches the network or the disk), `draw` paints it with plotters and the
//! embedded DejaVu font, `png_io` encodes within the byte budget. Without network the map is
//! drawn over a basemap made of the fleet's own routes and geofences; it never fails for lack
//! of tiles. `markers` places the data's markers and labels, and records each as a
//! [`Mark`] so a test can check the picture shows what the tool counts.

mod buffer;
mod draw;
mod markers;
pub mod marks;
mod occupied;
mod palette;
mod png_io;
pub mod projection;
mod raster;
pub mod scene;
pub mod simplify;
pub mod tiles;
mod units;

pub use draw::{BAND_SHARES, HEIGHT, WIDTH, band, band_rgb, register_fonts};
pub use marks::{Mark, MarkKind};
pub use png_io::{PNG_BUDGET_BYTES, encode as encode_png};
pub use scene::{Scene, UnitMark};
pub use tiles::{Offline, TileConfig, TileFetcher, TileStats};
pub use units::Marker as UnitMarker;

use projection::{Margins, View};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    #[error("no se pudo dibujar el mapa: {0}")]
    Draw(String),
    #[error("no se pudo codificar el PNG: {0}")]
    Encode(String),
    #[error("no hay posiciones que dibujar")]
    Empty,
}

/// What lies under the track in a finished map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Background {
    Tiles {
        attribution: String,
        stats: TileStats,
    },
    Offline(Offline),
}

impl Background {
    /// One Spanish sentence for the tool's text.
    pub fn describe(&self) -> String {
        match self {
            Background::Tiles { attribution, stats } => {
                let mut text = format!("teselas de mapa ({attribution})");
                if stats.stale > 0 {
                    text.push_str(&format!(
                        "; {} de {} teselas guardadas vencidas porque el servidor no respondió",
                        stats.stale, stats.total
                    ));
                }
                text
            }
            Background::Offline(why) => format!(
                "mapa base sin conexión: rutas y geocercas de la flota ({})",
                why.describe()
            ),
        }
    }

    pub fn is_tiles(&self) -> bool {
        matches!(self, Background::Tiles { .. })
    }
}

/// A finished map.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub png: Vec<u8>,
    pub width: u32,
    pub height: u32,
    pub view: View,
    pub background: Background,
    /// Track vertices drawn after simplification.
    pub drawn_points: usize,
    pub stop_markers: usize,
    pub labels_skipped: usize,
    /// Where each stop, signal loss, speeding episode and geofence was drawn (for tests).
    pub marks: Vec<Mark>,
    /// The fleet map's markers, in output pixels: each unit's disc, or the cluster that
    /// counts it (empty on a day's map).
    pub unit_markers: Vec<UnitMarker>,
}

/// Where the data goes in the picture: clear of the title band above and the scale bar
/// below.
pub fn frame(scene: &Scene) -> Result<View, MapError> {
    let (sw, ne) = scene.bounds().ok_or(MapError::Empty)?;
    let margins = Margins {
        top: draw::TITLE_BAND + 24.0,
        right: 40.0,
        bottom: 44.0,
        left: 40.0,
    };
    Ok(View::fit(sw, ne, WIDTH, HEIGHT, margins))
}

/// Renders `scene`, with tiles from `fetcher` when it can get them all.
pub fn render(
    scene: &Scene,
    fetcher: &TileFetcher,
    progress: &dyn Fn(usize, usize),
    cancelled: &dyn Fn() -> bool,
) -> Result<Rendered, MapError> {
    let view = frame(scene)?;
    let fetched = fetcher.fetch(&view, progress, cancelled);
    let (basemap_tiles, background) = match fetched {
        Ok((tiles, stats)) => (
            Some(tiles),
            Background::Tiles {
                attribution: fetcher.config.attribution.clone(),
                stats,
            },
        ),
        Err(why) => (None, Background::Offline(why)),
    };
    let basemap = match &basemap_tiles {
        Some(tiles) => draw::Basemap::Tiles {
            tiles,
            attribution: &fetcher.config.attribution,
        },
        None => draw::Basemap::Offline,
    };
    let picture = draw::draw(scene, &view, &basemap)?;
    let png = png_io::encode(&picture.rgb, WIDTH, HEIGHT)?;
    Ok(Rendered {
        png,
        width: WIDTH,
        height: HEIGHT,
        view,
        background,
        drawn_points: picture.drawn_points,
        stop_markers: picture.stop_markers,
        labels_skipped: picture.labels_skipped,
        marks: picture.marks,
        unit_markers: picture.unit_markers,
    })
}

#[cfg(test)]
mod antimeridian_tests {
    //! A day either side of 180° (Taveuni, Fiji) is framed, drawn and tiled as the same
    //! shape near Greenwich is: the map works on longitudes unwrapped around the data.
    use super::projection::wrap_lon;
    use super::scene::{FenceMark, StopMark, TrackPoint};
    use super::*;
    use crate::geometry::earth::LatLon;

    /// A loop of ~12 km around `centre_lon` (unwrapped degrees), reported every minute, with
    /// a stop, a fence and a road all across `centre_lon`, each longitude given in
    /// [−180, 180] as a tracker sends it.
    fn day_around(centre_lon: f64) -> Scene {
        let at = |dlat: f64, dlon: f64| LatLon::new(-16.85 + dlat, wrap_lon(centre_lon + dlon));
        let track = (0..60)
            .map(|i| {
                let a = f64::from(i) / 60.0 * std::f64::consts::TAU;
                TrackPoint {
                    p: at(0.03 * a.sin(), 0.05 * a.cos() - 0.02),
                    speed_kmh: 40.0 + f64::from(i % 7) * 5.0,
                    limit_kmh: 60.0,
                    ts_utc: 1_800_000_000 + i64::from(i) * 60,
                    after_gap: false,
                }
            })
            .collect();
        Scene {
            title: "FJ-180 · prueba".into(),
            subtitle: String::new(),
            track,
            limit_kmh: 60.0,
            zone_limits_kmh: Vec::new(),
            stops: vec![StopMark {
                p: at(0.0, 0.001),
                minutes: 12.0,
                long: false,
                start: "09:10".into(),
                place: None,
            }],
            speeding: Vec::new(),
            gaps: Vec::new(),
            fences: vec![FenceMark {
                name: "Muelle".into(),
                outline: vec![
                    at(-0.005, -0.005),
                    at(-0.005, 0.005),
                    at(0.005, 0.005),
                    at(0.005, -0.005),
                ],
                visited: true,
            }],
            roads: vec![vec![at(0.01, -0.04), at(0.01, 0.0), at(0.01, 0.04)]],
            landmarks: Vec::new(),
            ongoing: false,
            units: Vec::new(),
            states: Vec::new(),
        }
    }

    fn offline() -> TileFetcher {
        TileFetcher::new(TileConfig::offline())
    }

    #[test]
    fn a_day_across_180_is_framed_and_drawn_as_the_same_day_at_greenwich() {
        let across = day_around(180.0);
        let greenwich = day_around(0.0);
        // The data really is on both sides.
        assert!(across.track.iter().any(|t| t.p.lon > 179.0));
        assert!(across.track.iter().any(|t| t.p.lon < -179.0));
        let (view, reference) = (frame(&across).unwrap(), frame(&greenwich).unwrap());
        assert_eq!(view.zoom, reference.zoom, "{view:?} vs {reference:?}");
        assert!(view.zoom >= 11, "{view:?}");
        for t in &across.track {
            let (x, y) = view.project(t.p);
            assert!(
                (0.0..f64::from(WIDTH)).contains(&x) && (0.0..f64::from(HEIGHT)).contains(&y),
                "{:?} at ({x}, {y})",
                t.p
            );
        }
        let nothing = |_: usize, _: usize| {};
        let never = || false;
        let drawn = render(&across, &offline(), &nothing, &never).unwrap();
        let expected = render(&greenwich, &offline(), &nothing, &never).unwrap();
        assert_eq!(drawn.drawn_points, expected.drawn_points);
        assert_eq!(drawn.stop_markers, 1);
        let places = |r: &Rendered| -> Vec<(String, i64, i64)> {
            r.marks
                .iter()
                .map(|m| {
                    let label = m.label.clone().unwrap_or_default();
                    (label, m.at.0.round() as i64, m.at.1.round() as i64)
                })
                .collect()
        };
        assert_eq!(places(&drawn), places(&expected));
    }

    #[test]
    fn tiles_wrap_and_corners_come_back_in_range() {
        let view = frame(&day_around(180.0)).unwrap();
        let n = 1u32 << view.zoom;
        let tiles = view.tiles();
        assert!(tiles.iter().all(|t| t.x < n));
        // The picture straddles 180°: its columns are at both ends of the tile row.
        assert!(tiles.iter().any(|t| t.x == 0) && tiles.iter().any(|t| t.x == n - 1));
        let nw = view.unproject(0.0, 0.0);
        let se = view.unproject(f64::from(WIDTH), f64::from(HEIGHT));
        let (west, east) = (wrap_lon(nw.lon), wrap_lon(se.lon));
        assert!((-180.0..=180.0).contains(&west) && (-180.0..=180.0).contains(&east));
        assert!(
            west > east,
            "a box across 180° is given west > east: {west}, {east}"
        );
        assert!(west > 179.0 && east < -179.0, "{west}, {east}");
    }

    #[test]
    fn a_fleet_frame_past_180_reports_its_east_edge_west_of_it() {
        // Kathmandu and Sydney: the data do not cross 180°, but the zoom-3 picture that
        // holds both reaches past it.
        let mut scene = day_around(0.0);
        scene.track.clear();
        scene.stops.clear();
        scene.units = [LatLon::new(27.7, 85.3), LatLon::new(-33.87, 151.21)]
            .into_iter()
            .map(|p| UnitMark {
                p,
                rgb: (0, 0, 0),
                label: String::new(),
                silent: false,
            })
            .collect();
        let view = frame(&scene).unwrap();
        let se = view.unproject(f64::from(WIDTH), f64::from(HEIGHT));
        assert!(se.lon > 180.0, "the picture does cross 180°: {se:?}");
        let east = wrap_lon(se.lon);
        assert!((-180.0..=180.0).contains(&east), "{east}");
        assert!((east - (se.lon - 360.0)).abs() < 1e-9);
    }

    #[test]
    fn wrap_lon_leaves_longitudes_in_range_untouched() {
        for lon in [-180.0, -179.999, -90.5069, 0.0, 151.21, 180.0] {
            assert_eq!(wrap_lon(lon).to_bits(), f64::to_bits(lon));
        }
        assert!((wrap_lon(188.61) - -171.39).abs() < 1e-9);
        assert!((wrap_lon(-190.0) - 170.0).abs() < 1e-9);
        assert!((wrap_lon(540.5) - -179.5).abs() < 1e-9);
    }
}
