//! `mapa_recorrido`: one unit's day as a map — a PNG in the chat plus the figures behind it.
//!
//! Owns the tool's contract: the same `placa`/`fecha` rules as the other tools, a text block
//! and `structuredContent` that say what was drawn and over which background, and an `image`
//! block; `_meta.ui` points hosts that render MCP Apps at the `ui://flota/recorrido` view,
//! and for a client that negotiated the extension the output also carries the view's data
//! (`vista`, left out of the text the model reads). Drawing is `crate::map`'s; tiles load with progress notifications when the client
//! asked for them, and without network the offline basemap is used — the tool never fails
//! for lack of tiles.

use std::sync::Arc;

use base64::Engine;
use schemars::JsonSchema;
use serde::Serialize;

use super::common::{AVISO, coord, round1};
use crate::fleet::{DayTrack, Fleet, Snapshot, dates};
use crate::map::projection::wrap_lon;
use crate::map::{self, Background, Scene, TileFetcher};
use crate::mcp::{Annotations, CallContext, Content, Reply, TaskSupport, ToolError, TypedTool};
use crate::ui::{
    self,
    datos::{self, Teselas, VistaRecorrido},
};

pub struct MapaRecorrido {
    pub fleet: Arc<Fleet>,
    pub tiles: Arc<TileFetcher>,
    /// Online tiles for the interactive view (only when the operator named a tile server).
    pub view_tiles: Option<Teselas>,
}

/// The same arguments as `resumen_recorrido`.
pub use super::common::UnitDay as Params;

#[derive(Serialize, JsonSchema)]
pub struct ImageOut {
    pub formato: String,
    pub ancho_px: u32,
    pub alto_px: u32,
    pub bytes: usize,
}

// The picture's extent, so a client can place it on its own map. (Not a doc comment:
// schemars would show it to the model.)
#[derive(Serialize, JsonSchema)]
pub struct FrameOut {
    pub zoom: u8,
    pub norte: f64,
    pub sur: f64,
    #[schemars(
        description = "Longitudes en [-180, 180]; un mapa que cruza el antimeridiano (180°) tiene oeste > este"
    )]
    pub este: f64,
    pub oeste: f64,
}

impl FrameOut {
    /// The picture's corners; longitudes brought back into [−180, 180], so a picture across
    /// the antimeridian reads `oeste > este` (as GeoJSON's bbox, RFC 7946 §5.2).
    pub fn of(rendered: &map::Rendered) -> FrameOut {
        let nw = rendered.view.unproject(0.0, 0.0);
        let se = rendered
            .view
            .unproject(f64::from(rendered.width), f64::from(rendered.height));
        FrameOut {
            zoom: rendered.view.zoom,
            norte: coord(nw.lat),
            sur: coord(se.lat),
            este: coord(wrap_lon(se.lon)),
            oeste: coord(wrap_lon(nw.lon)),
        }
    }
}

#[derive(Serialize, JsonSchema)]
pub struct Output {
    pub placa: String,
    pub conductor: String,
    pub fecha: String,
    pub dia_semana: String,
    pub zona_horaria: String,
    pub kilometros: f64,
    #[schemars(description = "Reportes del día en la base")]
    pub reportes_del_dia: usize,
    #[schemars(description = "Vértices del trazo tras simplificarlo (Douglas-Peucker a 0.6 px)")]
    pub reportes_dibujados: usize,
    #[schemars(description = "Paradas de la jornada (de la primera salida a la última llegada)")]
    pub paradas: usize,
    pub paradas_prolongadas: usize,
    pub minutos_en_paradas: f64,
    pub excesos_de_velocidad: usize,
    pub perdidas_de_senal: usize,
    pub geocercas_visitadas: Vec<String>,
    #[schemars(description = "OpenStreetMap (u otro servidor de teselas) o «sin conexión»")]
    pub fondo: String,
    #[schemars(description = "Qué fondo se usó y, si fue el mapa base sin conexión, por qué")]
    pub fondo_detalle: String,
    pub leyenda: String,
    pub imagen: ImageOut,
    pub encuadre: FrameOut,
    pub nota_para_el_asistente: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(description = AVISO)]
    pub aviso: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    // Its own schema stays out of tools/list, which the model reads: an object here, the
    // contract in docs/mapas.md and `ui::datos`.
    #[schemars(
        with = "Option<serde_json::Map<String, serde_json::Value>>",
        description = "Solo para clientes que muestran la vista interactiva (MCP Apps): los datos que dibuja; no va en el texto"
    )]
    pub vista: Option<VistaRecorrido>,
}

impl TypedTool for MapaRecorrido {
    type Params = Params;
    type Output = Output;

    fn name(&self) -> &'static str {
        "mapa_recorrido"
    }
    fn title(&self) -> &'static str {
        "Mapa del recorrido de un día"
    }
    fn description(&self) -> String {
        "Dibuja el recorrido de un día de una unidad como imagen PNG: trazo coloreado por \
         velocidad respecto al límite (excesos en rojo), inicio y fin, paradas con su hora, \
         duración y lugar, pérdidas de señal y geocercas, sobre un mapa de calles o, sin \
         conexión, sobre las rutas de la flota. Úsela cuando el usuario quiera VER la ruta; \
         para cifras use resumen_recorrido. Fechas: AAAA-MM-DD, hoy, ayer, anteayer o un día \
         de la semana. Ejemplos: «muéstrame en un mapa la ruta de ayer de P-456DEF», «¿por dónde anduvo P-123BCD el lunes?»"
            .into()
    }
    fn annotations(&self) -> Annotations {
        Annotations {
            // Tiles come from an outside server unless they are switched off.
            open_world: self.tiles.config.template.is_some(),
            ..Annotations::READ_ONLY
        }
    }

    /// Tiles may take a while to arrive: a client that declares the tasks extension gets a
    /// task handle and polls it.
    fn task_support(&self) -> TaskSupport {
        TaskSupport::Optional
    }
    fn meta(&self) -> Option<serde_json::Value> {
        Some(ui::tool_meta(ui::RECORRIDO_URI))
    }
    fn app_only_fields(&self) -> &'static [&'static str] {
        &["vista"]
    }

    fn call(&self, params: Params, ctx: &CallContext) -> Result<Reply<Output>, ToolError> {
        let snapshot = self.fleet.snapshot()?;
        let track = self
            .fleet
            .day_track(&snapshot, &params.placa, &params.fecha)?;
        let scene = Scene::from_day(&track, &snapshot);
        let progress = |done: usize, total: usize| {
            if total > 0 {
                ctx.progress(
                    done as f64,
                    Some(total as f64),
                    Some(&format!("teselas del mapa: {done} de {total}")),
                );
            }
        };
        let cancelled = || ctx.is_cancelled();
        let rendered = map::render(&scene, &self.tiles, &progress, &cancelled)
            .map_err(|e| ToolError::Failed(format!("{e}.")))?;
        let output = Output {
            placa: track.vehicle.plate.clone(),
            conductor: track.vehicle.driver.clone(),
            fecha: track.date.to_string(),
            dia_semana: dates::weekday_es(track.date).into(),
            zona_horaria: track.zone.name().to_owned(),
            kilometros: round1(track.day.km),
            reportes_del_dia: track.fixes.len(),
            reportes_dibujados: rendered.drawn_points,
            paradas: scene.stops.len(),
            paradas_prolongadas: scene.stops.iter().filter(|s| s.long).count(),
            // Whole seconds summed, as `resumen_recorrido` sums them: a sum of fractions of a
            // minute can land either side of a rounding boundary (278.35 read as 278.4 there
            // and 278.3 here).
            minutos_en_paradas: round1(
                scene
                    .stops
                    .iter()
                    .map(|s| (s.minutes * 60.0).round() as i64)
                    .sum::<i64>() as f64
                    / 60.0,
            ),
            excesos_de_velocidad: scene.speeding.len(),
            perdidas_de_senal: scene.gaps.len(),
            geocercas_visitadas: visited_fences(&track, &snapshot),
            fondo: background_name(&self.tiles, &rendered.background),
            fondo_detalle: rendered.background.describe(),
            leyenda: legend(scene.limit_kmh, &scene.zone_limits_kmh),
            imagen: ImageOut {
                formato: "image/png".into(),
                ancho_px: rendered.width,
                alto_px: rendered.height,
                bytes: rendered.png.len(),
            },
            encuadre: FrameOut::of(&rendered),
            nota_para_el_asistente: "La imagen PNG del mapa va adjunta en este mismo resultado. \
                 Dígale al usuario que el mapa está en la tarjeta de la herramienta, justo encima \
                 de su respuesta, y que puede hacer clic en ella para ampliarla. Para cifras \
                 exactas use los campos de este resultado."
                .into(),
            aviso: track.aviso.clone(),
            vista: ui::client_renders_views(&ctx.request().client_capabilities)
                .then(|| datos::vista_recorrido(&track, &snapshot, self.view_tiles.clone())),
        };
        let mut reply = Reply::new(output);
        reply.extra.push(Content::Image {
            data_base64: base64::engine::general_purpose::STANDARD.encode(&rendered.png),
            mime_type: "image/png".into(),
        });
        Ok(reply)
    }
}

/// What the picture was drawn over, in a word or two.
pub(super) fn background_name(tiles: &TileFetcher, background: &Background) -> String {
    match background {
        Background::Tiles { .. } => {
            if tiles
                .config
                .template
                .as_deref()
                .is_some_and(|t| t == map::tiles::OSM_TEMPLATE)
            {
                "OpenStreetMap".to_owned()
            } else {
                "teselas de mapa".to_owned()
            }
        }
        Background::Offline(_) => "sin conexión".to_owned(),
    }
}

/// The geofences the unit visited that day, each once, in the order first visited.
fn visited_fences(track: &DayTrack, snapshot: &Snapshot) -> Vec<String> {
    let mut visited: Vec<String> = Vec::new();
    for visit in &track.visits {
        if let Some(name) = visit.fence_id.and_then(|id| snapshot.fence_name(id))
            && !visited.iter().any(|v| v == name)
        {
            visited.push(name.to_owned());
        }
    }
    visited
}

/// The map's key: speed bands as shares of the limit that applied (the unit's, or a
/// geofence's own), and the markers.
fn legend(limit: f64, zone_limits: &[f64]) -> String {
    let [half, most, _] = map::BAND_SHARES.map(|share| share * 100.0);
    let zones = if zone_limits.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = zone_limits.iter().map(|l| format!("{l:.0}")).collect();
        format!(
            " o el de la geocerca donde estaba ({} km/h)",
            list.join(", ")
        )
    };
    format!(
        "Trazo coloreado según la velocidad respecto al límite que aplicaba: el de la unidad \
         ({limit:.0} km/h){zones}. Azul hasta el {half:.0} % del límite, verde hasta el \
         {most:.0} %, ámbar hasta el límite, rojo por encima (los excesos detectados van \
         resaltados con su velocidad máxima); triángulo verde = inicio; cuadrado negro = fin \
         (o última posición si el día sigue); círculos blancos = paradas con su hora, duración \
         y lugar (las que se taparían comparten un círculo), más grandes cuanto más largas, \
         granate si son prolongadas; sin señal: línea gris discontinua con un punto gris si \
         la unidad se movió sin reportar, círculo gris tachado si estaba detenida o sigue sin \
         señal («sin señal desde HH:MM»); áreas moradas = geocercas, con su nombre siempre \
         que la unidad entró en ellas."
    )
}
