//! `mapa_flota`: every active unit now on one map — a PNG in the chat plus each unit's state.
//!
//! Owns the tool's contract: no arguments; for each active unit with a report, its last
//! position at the fleet's now, its state by `posicion_actual`'s rules, and since when it is
//! in that state (moving: since its last stop ended; stopped or off: since the stop began;
//! silent: since its last report); the counts per state; an `image` block drawn by
//! `crate::map` (a few units at one place fanned out, more that would overlap one cluster marker,
//! listed in `grupos` with their counts). `_meta.ui` points hosts that render MCP Apps
//! at `ui://flota/flota`; a client that negotiated the extension also gets the view's basemap
//! (`vista`, left out of the text). Answers from positions and stops, never the truth log.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use base64::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    AVISO, MAX_ROWS, UnitState, asleep_halted, cap, coord, iso, minutes, place, round1,
};
use super::mapa_recorrido::{FrameOut, ImageOut, background_name};
use crate::engine::Fix;
use crate::fleet::{Fleet, Snapshot};
use crate::geometry::earth::{LatLon, compass_es};
use crate::map::{self, Scene, TileFetcher, UnitMark};
use crate::mcp::{Annotations, CallContext, Content, Reply, TaskSupport, ToolError, TypedTool};
use crate::store::EventRow;
use crate::ui::{
    self,
    datos::{Teselas, VistaFlota},
};

pub struct MapaFlota {
    pub fleet: Arc<Fleet>,
    pub tiles: Arc<TileFetcher>,
    /// Online tiles for the interactive view (only when the operator named a tile server).
    pub view_tiles: Option<Teselas>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {}

/// How far back the end of a moving unit's last stop is looked for.
const LOOKBACK_S: i64 = 7 * 86_400;

/// Each state with its colour on both maps (the view's `ui/flota.js` uses the same).
const STATES: [(UnitState, (u8, u8, u8)); 4] = [
    (UnitState::Moving, (0x1a, 0x96, 0x41)),
    (UnitState::EngineOn, (0xf0, 0xa3, 0x0a)),
    (UnitState::Off, (0x6b, 0x6b, 0x6b)),
    (UnitState::Silent, (0xd7, 0x19, 0x1c)),
];

fn rgb(state: UnitState) -> (u8, u8, u8) {
    STATES
        .iter()
        .find(|(s, _)| *s == state)
        .map_or((0x99, 0x99, 0x99), |(_, c)| *c)
}

#[derive(Serialize, JsonSchema)]
pub struct PorEstado {
    pub en_movimiento: usize,
    pub motor_encendido: usize,
    pub apagada: usize,
    pub sin_senal: usize,
}

/// Units drawn as one cluster marker on the picture (they would overlap at its scale). The
/// schema's description is the model's, so it is Spanish.
#[derive(Serialize, JsonSchema)]
#[schemars(
    description = "Unidades dibujadas como un solo marcador de grupo en la imagen (se solaparían a su escala)"
)]
pub struct GrupoOut {
    #[schemars(description = "Unidades que cuenta el marcador")]
    pub unidades: usize,
    #[schemars(description = "Centro de sus posiciones")]
    pub lat: f64,
    pub lon: f64,
    #[schemars(description = "Referencia del centro respecto de las geocercas y paradas")]
    pub referencia: String,
    pub por_estado: PorEstado,
}

#[derive(Serialize, JsonSchema)]
pub struct UnidadOut {
    pub placa: String,
    pub tipo: String,
    pub conductor: String,
    #[schemars(description = "en movimiento | detenida con motor encendido | apagada | sin señal")]
    pub estado: String,
    #[schemars(
        description = "Minutos en ese estado: en movimiento, desde que terminó su última parada; detenida o apagada, desde que empezó la parada; sin señal, desde el último reporte. null si no se sabe"
    )]
    pub minutos_en_estado: Option<f64>,
    #[schemars(description = "Hora local en que empezó ese estado, con zona (ISO 8601)")]
    pub en_estado_desde: Option<String>,
    #[schemars(description = "Hora local del último reporte, con zona (ISO 8601)")]
    pub ultimo_reporte: String,
    pub minutos_desde_ultimo_reporte: f64,
    pub lat: f64,
    pub lon: f64,
    pub velocidad_kmh: f64,
    #[schemars(description = "Rumbo en grados y punto cardinal, p. ej. 224° (SO)")]
    pub rumbo: String,
    #[schemars(description = "Referencia respecto de las geocercas y paradas de la flota")]
    pub referencia: String,
}

#[derive(Serialize, JsonSchema)]
pub struct Output {
    #[schemars(description = "El instante 'ahora' de la flota usado para la consulta")]
    pub instante_consulta: String,
    pub zona_horaria: String,
    #[schemars(description = "Unidades activas con posición")]
    pub total: usize,
    pub por_estado: PorEstado,
    #[schemars(description = "Una por unidad activa con algún reporte (hasta 200)")]
    pub unidades: Vec<UnidadOut>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        description = "Solo si el mapa agrupa unidades que se taparían: cada grupo dibujado como un círculo con su número, de todas las unidades (también las que no caben en «unidades»)"
    )]
    pub grupos: Vec<GrupoOut>,
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
        description = "Solo para clientes que muestran la vista interactiva (MCP Apps): el mapa base que dibuja; no va en el texto"
    )]
    pub vista: Option<VistaFlota>,
}

impl TypedTool for MapaFlota {
    type Params = Params;
    type Output = Output;

    fn name(&self) -> &'static str {
        "mapa_flota"
    }
    fn title(&self) -> &'static str {
        "Mapa de la flota ahora"
    }
    fn description(&self) -> String {
        "Dibuja como imagen PNG la última posición de cada unidad activa, coloreada por estado \
         (en movimiento, detenida con motor encendido, apagada o sin señal) con su placa y los \
         minutos que lleva en ese estado, y devuelve esas cifras por unidad y por estado. Sin \
         argumentos. Úsela cuando el usuario quiera VER dónde está toda la flota. Ejemplos: \
         «muéstrame la flota en un mapa», «¿dónde están todas las unidades ahora?»"
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
        Some(ui::tool_meta(ui::FLOTA_URI))
    }
    fn app_only_fields(&self) -> &'static [&'static str] {
        &["vista"]
    }

    fn call(&self, _: Params, ctx: &CallContext) -> Result<Reply<Output>, ToolError> {
        let snapshot = self.fleet.snapshot()?;
        let (mut unidades, states) = self.units(&snapshot)?;
        if unidades.is_empty() {
            return Err(ToolError::Failed(
                "Ninguna unidad activa tiene reportes hasta el 'ahora' de la flota.".into(),
            ));
        }
        let por_estado = PorEstado::of(states.iter());
        let scene = scene(&snapshot, &unidades, &states);
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
        let grupos = groups(&snapshot, &unidades, &states, &rendered.unit_markers);
        let total = cap(&mut unidades);
        let output = Output {
            instante_consulta: iso(snapshot.zone(), snapshot.now_utc),
            zona_horaria: snapshot.zone_name(),
            total,
            por_estado,
            unidades,
            grupos,
            fondo: background_name(&self.tiles, &rendered.background),
            fondo_detalle: rendered.background.describe(),
            leyenda: "Cada círculo es la última posición de una unidad activa, con su placa y \
                      los minutos en su estado: verde = en movimiento, ámbar = detenida con \
                      motor encendido, gris = apagada, rojo tachado = sin señal. Unas pocas \
                      unidades en un mismo lugar se abren en abanico a su alrededor, unidas a él \
                      por una línea fina; más de 12 que se taparían son un solo círculo con su \
                      número, y su anillo repartido en los colores de sus estados (ver \
                      «grupos»). Áreas moradas = geocercas."
                .into(),
            imagen: ImageOut {
                formato: "image/png".into(),
                ancho_px: rendered.width,
                alto_px: rendered.height,
                bytes: rendered.png.len(),
            },
            encuadre: FrameOut::of(&rendered),
            nota_para_el_asistente: "La imagen PNG del mapa va adjunta en este mismo resultado. \
                 Dígale al usuario que el mapa está en la tarjeta de la herramienta. Para cifras \
                 exactas use los campos de este resultado."
                .into(),
            aviso: self.note(&snapshot)?,
            vista: ui::client_renders_views(&ctx.request().client_capabilities)
                .then(|| VistaFlota::new(&snapshot, self.view_tiles.clone())),
        };
        let mut reply = Reply::new(output);
        reply.extra.push(Content::Image {
            data_base64: base64::engine::general_purpose::STANDARD.encode(&rendered.png),
            mime_type: "image/png".into(),
        });
        Ok(reply)
    }
}

impl MapaFlota {
    /// Every active unit with a report, in the roster's order, with its state.
    fn units(&self, snapshot: &Snapshot) -> Result<(Vec<UnidadOut>, Vec<UnitState>), ToolError> {
        let now = snapshot.now_utc;
        let gap_s = snapshot.meta.config.perdida_senal_s as i64;
        let fleet = self.fleet_now(snapshot)?;
        let mut out = Vec::new();
        let mut states = Vec::new();
        for vehicle in snapshot.vehicles.iter().filter(|v| v.active) {
            let Some(fix) = fleet.fixes.get(&vehicle.id) else {
                continue;
            };
            let state = UnitState::of(fix, now, gap_s, fleet.asleep.contains(&vehicle.id));
            let since = match state {
                UnitState::Moving => fleet.last_ends.get(&vehicle.id).copied(),
                UnitState::EngineOn | UnitState::Off => {
                    fleet.stops.get(&vehicle.id).map(|s| s.start_utc)
                }
                UnitState::Silent => Some(fix.ts_utc),
            };
            // Rows past MAX_ROWS are cut by `cap` once the picture is drawn: they feed only the
            // picture (plate, position, minutes) and the clusters (position), so their text is
            // not built. At 1,000 units that was four fifths of the rows' strings.
            let listed = out.len() < MAX_ROWS;
            let text = |build: &dyn Fn() -> String| if listed { build() } else { String::new() };
            out.push(UnidadOut {
                placa: vehicle.plate.clone(),
                tipo: text(&|| vehicle.kind.clone()),
                conductor: text(&|| vehicle.driver.clone()),
                estado: text(&|| state.words().into()),
                minutos_en_estado: since.map(|t| minutes(now - t)),
                en_estado_desde: since.filter(|_| listed).map(|t| iso(vehicle.zone, t)),
                ultimo_reporte: text(&|| iso(vehicle.zone, fix.ts_utc)),
                minutos_desde_ultimo_reporte: minutes(now - fix.ts_utc),
                lat: coord(fix.lat),
                lon: coord(fix.lon),
                velocidad_kmh: round1(fix.speed_kmh),
                rumbo: text(&|| {
                    format!(
                        "{:.0}° ({})",
                        fix.heading_deg.rem_euclid(360.0),
                        compass_es(fix.heading_deg)
                    )
                }),
                // At 1,000 units the phrases were 24 M of a call's 180 M instructions, four
                // fifths of them for units left out of the list.
                referencia: text(&|| place(snapshot, fix.lat, fix.lon)),
            });
            states.push(state);
        }
        Ok((out, states))
    }

    /// The whole fleet at the snapshot's now, one statement per question (one query per unit
    /// and question was 3,000 statements a call at 1,000 units): every unit's last fix and,
    /// when the detections can be used, its stop under way and when its last stop ended.
    fn fleet_now(&self, snapshot: &Snapshot) -> Result<FleetNow, ToolError> {
        let now = snapshot.now_utc;
        let usable = snapshot.detections_usable();
        self.fleet.query(|store| {
            store.read_consistently(|store| {
                let mut fleet = FleetNow {
                    fixes: store.last_fixes(now)?.into_iter().collect(),
                    ..FleetNow::default()
                };
                if usable {
                    let stops = store.stops_under_way(now)?;
                    fleet.stops = stops.into_iter().map(|s| (s.vehicle_id, s)).collect();
                    for (id, stop) in &fleet.stops {
                        if let Some(fix) = fleet.fixes.get(id)
                            && asleep_halted(store, snapshot, *id, fix, Some(stop))?
                        {
                            fleet.asleep.insert(*id);
                        }
                    }
                    fleet.last_ends = (store.last_stop_ends(now - LOOKBACK_S, now)?)
                        .into_iter()
                        .collect();
                }
                Ok(fleet)
            })
        })
    }

    /// The detections behind the minutes: stale or missing ones are said once.
    fn note(&self, snapshot: &Snapshot) -> Result<Option<String>, ToolError> {
        if snapshot.detections_usable() {
            return snapshot.detections(None);
        }
        Ok(snapshot
            .vehicles
            .iter()
            .find(|v| v.active)
            .and_then(|v| snapshot.detections_note(v, "desde cuándo están detenidas las unidades")))
    }
}

impl PorEstado {
    fn of<'a>(states: impl Iterator<Item = &'a UnitState>) -> PorEstado {
        let mut out = PorEstado {
            en_movimiento: 0,
            motor_encendido: 0,
            apagada: 0,
            sin_senal: 0,
        };
        for state in states {
            match state {
                UnitState::Moving => out.en_movimiento += 1,
                UnitState::EngineOn => out.motor_encendido += 1,
                UnitState::Off => out.apagada += 1,
                UnitState::Silent => out.sin_senal += 1,
            }
        }
        out
    }
}

/// The picture's clusters, with every unit (the list of units is capped, the clusters are
/// not): how many, the middle of their positions, where that is, their states.
fn groups(
    snapshot: &Snapshot,
    unidades: &[UnidadOut],
    states: &[UnitState],
    markers: &[map::UnitMarker],
) -> Vec<GrupoOut> {
    markers
        .iter()
        .filter_map(|m| match m {
            map::UnitMarker::Cluster { units, .. } => Some(units),
            map::UnitMarker::Unit { .. } => None,
        })
        .map(|units| {
            let n = units.len().max(1) as f64;
            let (lat, lon) = units.iter().fold((0.0, 0.0), |(lat, lon), i| {
                (lat + unidades[*i].lat / n, lon + unidades[*i].lon / n)
            });
            GrupoOut {
                unidades: units.len(),
                lat: coord(lat),
                lon: coord(lon),
                referencia: place(snapshot, lat, lon),
                por_estado: PorEstado::of(units.iter().map(|i| &states[*i])),
            }
        })
        .collect()
}

/// What [`MapaFlota::fleet_now`] reads, by vehicle id.
#[derive(Default)]
struct FleetNow {
    fixes: HashMap<i64, Fix>,
    stops: HashMap<i64, EventRow>,
    last_ends: HashMap<i64, i64>,
    /// Units the engine found halted and asleep within their tracker's cadence.
    asleep: HashSet<i64>,
}

/// The picture: every listed unit with its state's colour and «placa · minutos».
fn scene(snapshot: &Snapshot, unidades: &[UnidadOut], states: &[UnitState]) -> Scene {
    let units = unidades
        .iter()
        .zip(states)
        .map(|(u, state)| UnitMark {
            p: LatLon::new(u.lat, u.lon),
            rgb: rgb(*state),
            label: match u.minutos_en_estado {
                Some(m) => format!("{} · {m:.0} min", u.placa),
                None => u.placa.clone(),
            },
            silent: *state == UnitState::Silent,
        })
        .collect();
    let legend = STATES
        .iter()
        .map(|(state, colour)| {
            let n = states.iter().filter(|s| *s == state).count();
            (*colour, format!("{} ({n})", state.words()))
        })
        .collect();
    let now = crate::fleet::dates::local(snapshot.zone(), snapshot.now_utc);
    Scene::fleet(
        format!("Flota · {} unidades activas", unidades.len()),
        format!(
            "{} · hora de {}",
            now.format("%Y-%m-%d %H:%M"),
            snapshot.zone_name()
        ),
        units,
        legend,
        snapshot,
    )
}
