//! The fleet tools the MCP server offers, one file each, all in the same shape: `Params`
//! (validated against its derived schema), `Output` (the `structuredContent`, schema derived),
//! and `call`, which answers from the detection engine's tables and the positions — never from
//! the truth log — through the shared [`Fleet`] context.

mod alertas;
mod common;
mod mapa_recorrido;
mod posicion_actual;
mod reporte_kilometraje;
mod resumen_recorrido;
mod service;
mod unidades_detenidas;
mod verificar_geocerca;

use std::sync::Arc;

use crate::fleet::Fleet;
use crate::map::{TileConfig, TileFetcher};
use crate::mcp::{Tool, typed};

pub use common::MAX_ROWS;
pub use service::{instructions, server_info, service};

/// Every fleet tool, in the reference's order, with maps drawn over tiles from `tiles`.
pub fn all(fleet: &Arc<Fleet>, tiles: TileConfig) -> Vec<Box<dyn Tool>> {
    vec![
        typed(posicion_actual::PosicionActual {
            fleet: Arc::clone(fleet),
        }),
        typed(unidades_detenidas::UnidadesDetenidas {
            fleet: Arc::clone(fleet),
        }),
        typed(resumen_recorrido::ResumenRecorrido {
            fleet: Arc::clone(fleet),
        }),
        typed(mapa_recorrido::MapaRecorrido {
            fleet: Arc::clone(fleet),
            tiles: Arc::new(TileFetcher::new(tiles)),
        }),
        typed(alertas::Alertas {
            fleet: Arc::clone(fleet),
        }),
        typed(verificar_geocerca::VerificarGeocerca {
            fleet: Arc::clone(fleet),
        }),
        typed(reporte_kilometraje::ReporteKilometraje {
            fleet: Arc::clone(fleet),
        }),
    ]
}
