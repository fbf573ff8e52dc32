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
