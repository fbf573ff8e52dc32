//! flota's data in the formats other tools read: a unit's day as GeoJSON, GPX 1.1 or the map
//! PNG, and the routes as GeoJSON.
//!
//! Owns the formats (`geojson.rs`, `gpx.rs`, `routes.rs`; the PNG is `map`'s) and [`render`],
//! which picks one for a day. The day comes from the same read-only fleet context as the
//! server's tools ([`DayTrack`]); where the bytes go is the verbs' business
//! (src/commands/export.rs, src/commands/routes.rs).

mod geojson;
mod gpx;
mod routes;

pub use geojson::geojson;
pub use gpx::gpx;
pub use routes::routes_geojson;

use crate::fleet::{DayTrack, Snapshot};
use crate::map::{self, Scene, TileConfig, TileFetcher};

/// What `flota exportar` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Geojson,
    Gpx,
    Png,
}

impl Format {
    pub fn extension(self) -> &'static str {
        match self {
            Format::Geojson => "geojson",
            Format::Gpx => "gpx",
            Format::Png => "png",
        }
    }
}

/// The day in `format`, and a few Spanish words on what it holds. A PNG is drawn over tiles
/// from `tiles` when they can be had, else over the offline basemap.
pub fn render(
    format: Format,
    track: &DayTrack,
    snapshot: &Snapshot,
    tiles: TileConfig,
) -> anyhow::Result<(Vec<u8>, String)> {
    let stops = track.working_stops().count();
    let reports = track.fixes.len();
    Ok(match format {
        Format::Geojson => (
            geojson(track, snapshot).into_bytes(),
            format!("{reports} reportes, {stops} paradas"),
        ),
        Format::Gpx => (
            gpx(track, snapshot).into_bytes(),
            format!("{reports} puntos, {stops} paradas como waypoints"),
        ),
        Format::Png => {
            let scene = Scene::from_day(track, snapshot);
            let rendered = map::render(&scene, &TileFetcher::new(tiles), &|_, _| {}, &|| false)?;
            let what = format!(
                "{}×{} px, {}",
                rendered.width,
                rendered.height,
                rendered.background.describe()
            );
            (rendered.png, what)
        }
    })
}
