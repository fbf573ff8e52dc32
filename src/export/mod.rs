//! `flota exportar`'s interchange formats.

pub mod geojson;
pub use geojson::*;
