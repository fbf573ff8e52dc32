//! The fleet tools the MCP server offers, one file each, all in the same shape: `Params`
//! (validated against its derived schema), `Output` (the `structuredContent`, schema derived),
//! and `call`, which answers from the detection engine's tables and the positions — never from
//! the truth log — through the shared [`Fleet`] context.

mod alertas;
mod common;
mod mapa_flota;
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
use crate::ui::datos::Teselas;

pub use common::MAX_ROWS;
pub use service::{instructions, server_info, service};

/// Every fleet tool, in the order `tools/list` shows them, with PNG maps drawn over tiles from
/// `tiles` and the interactive views' online tiles (if any) from `view_tiles`.
pub fn all(
    fleet: &Arc<Fleet>,
    tiles: TileConfig,
    view_tiles: Option<Teselas>,
) -> Vec<Box<dyn Tool>> {
    let tiles = Arc::new(TileFetcher::new(tiles));
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
            tiles: Arc::clone(&tiles),
            view_tiles: view_tiles.clone(),
        }),
        typed(mapa_flota::MapaFlota {
            fleet: Arc::clone(fleet),
            tiles,
            view_tiles,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::places::Geocoder;

    /// Every description a tool's schemas carry, with where it sits.
    fn descriptions(value: &serde_json::Value, path: &str, out: &mut Vec<(String, String)>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, inner) in map {
                    match (key.as_str(), inner) {
                        ("description", serde_json::Value::String(text)) => {
                            out.push((path.to_owned(), text.clone()));
                        }
                        _ => descriptions(inner, &format!("{path}/{key}"), out),
                    }
                }
            }
            serde_json::Value::Array(items) => {
                for item in items {
                    descriptions(item, path, out);
                }
            }
            _ => {}
        }
    }

    /// The model reads every schema description: none may be an English doc comment that
    /// schemars picked up from a Rust type.
    #[test]
    fn schema_descriptions_are_spanish() {
        let fleet = Arc::new(Fleet::new(
            std::path::Path::new("no-existe.db"),
            None,
            Geocoder::new(None),
            crate::plumbing::clock::Clock::fixed(0),
        ));
        let english = [" the ", " of ", " and ", " to ", "The ", " so "];
        let mut found = Vec::new();
        for tool in all(&fleet, TileConfig::offline(), None) {
            let definition = tool.definition();
            let schemas = [
                Some(&definition.input_schema),
                definition.output_schema.as_ref(),
            ];
            for schema in schemas.into_iter().flatten() {
                descriptions(schema, &definition.name, &mut found);
            }
        }
        assert!(found.len() > 20, "{found:?}");
        let leaks: Vec<_> = found
            .iter()
            .filter(|(_, text)| english.iter().any(|w| format!(" {text} ").contains(w)))
            .collect();
        assert!(leaks.is_empty(), "{leaks:#?}");
    }
}
