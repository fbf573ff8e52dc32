//! The map views as MCP resources (`ui://flota/recorrido`, `ui://flota/flota`): the documents
//! `crate::ui` assembles, with the MIME type and `_meta.ui` the MCP Apps extension defines.
//!
//! Owns only the wiring: which document answers which URI, and the metadata (a border; the
//! tile origin in the CSP only when the operator configured online tiles for the views). The
//! documents themselves and what they draw belong to `crate::ui`. They need no database, so a
//! host can prefetch them before any data exists.

use serde_json::Value;

use crate::mcp::{Resource, ResourceContents, ResourceDefinition, ResourceError};
use crate::ui::{self, datos::Teselas};

struct ViewResource {
    definition: ResourceDefinition,
    document: fn() -> &'static str,
    meta: Value,
}

impl Resource for ViewResource {
    fn definition(&self) -> &ResourceDefinition {
        &self.definition
    }

    fn read(&self) -> Result<Vec<ResourceContents>, ResourceError> {
        let mut contents = ResourceContents::text(
            self.definition.uri.clone(),
            ui::MIME_TYPE,
            (self.document)(),
        );
        contents.meta = Some(self.meta.clone());
        Ok(vec![contents])
    }
}

/// Both views, with online tiles declared in their CSP when `teselas` is given.
pub fn all(teselas: Option<&Teselas>) -> Vec<Box<dyn Resource>> {
    let meta = ui::resource_meta(teselas);
    let view =
        |uri: &str, name: &str, title: &str, description: &str, document| -> Box<dyn Resource> {
            Box::new(ViewResource {
                definition: ResourceDefinition {
                    uri: uri.into(),
                    name: name.into(),
                    title: Some(title.into()),
                    description: Some(description.into()),
                    mime_type: Some(ui::MIME_TYPE.into()),
                    meta: Some(meta.clone()),
                },
                document,
                meta: meta.clone(),
            })
        };
    vec![
        view(
            ui::RECORRIDO_URI,
            "vista_recorrido",
            "Mapa interactivo del recorrido de un día",
            "Vista HTML (MCP Apps) que muestra el resultado de mapa_recorrido: trazo, paradas, excesos, pérdidas de señal y geocercas, con reproducción del día.",
            ui::recorrido_html,
        ),
        view(
            ui::FLOTA_URI,
            "vista_flota",
            "Mapa interactivo de la flota ahora",
            "Vista HTML (MCP Apps) que muestra el resultado de mapa_flota: cada unidad activa con su estado y minutos en él.",
            ui::flota_html,
        ),
    ]
}
