//! What the map views draw: the `vista` object a tool puts in its `structuredContent` for
//! hosts that render MCP Apps, built from a [`DayTrack`] and the fleet's [`Snapshot`].
//!
//! Owns the contract between the tools and the views in `ui/` (field names in Spanish, like
//! every tool output; docs/mapas.md, "Interactive views"): the day's reports compactly, the
//! stops, speeding episodes, signal losses and geofence visits with their evidence, the speed
//! bands, and the basemap (the fleet's routes, fences and named places, tiles only when
//! configured). Everything comes from positions and detections, never the truth log. It
//! decides nothing about drawing and touches no network: tiles are the browser's, under the
//! CSP domains the server declares ([`super::tile_domains`]).

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::fleet::{DayTrack, Evidencia, Snapshot, dates};
use crate::geometry::earth::LatLon;
use crate::map::{self, Scene, TileConfig};
use crate::store::EventRow;

/// Version of this contract; a view refuses a `vista` it does not know.
pub const VERSION: u32 = 1;

/// One unit's day, as the `recorrido` view draws it (`mapa_recorrido`'s `vista`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct VistaRecorrido {
    #[schemars(description = "Versión del contrato de la vista (1)")]
    pub version: u32,
    #[schemars(description = "Zona horaria de la flota (IANA), para las horas de la vista")]
    pub zona_horaria: String,
    #[schemars(
        description = "Desfase de la hora local respecto de UTC al empezar el día, en segundos"
    )]
    pub desfase_utc_s: i64,
    pub limite_kmh: f64,
    #[schemars(
        description = "Bandas de color del trazo por velocidad, de la más lenta a la más rápida"
    )]
    pub bandas: Vec<Banda>,
    #[schemars(
        description = "Instante UTC (s) del primer reporte: origen del tiempo de `reportes`"
    )]
    pub inicio_utc: i64,
    #[schemars(
        description = "El día sigue en curso: el último reporte no es el fin de la jornada"
    )]
    pub en_curso: bool,
    #[schemars(
        description = "Reportes del día en orden: [segundos desde inicio_utc, lat, lon, velocidad_kmh, motor (1 encendido, 0 apagado), banda de velocidad (índice en `bandas`)]"
    )]
    pub reportes: Vec<[f64; 6]>,
    #[schemars(
        description = "Índices de `reportes` a los que no llega la línea desde el anterior (hubo pérdida de señal)"
    )]
    pub cortes: Vec<usize>,
    #[schemars(
        description = "Paradas, excesos de velocidad, pérdidas de señal y visitas a geocercas"
    )]
    pub eventos: Vec<Evento>,
    #[serde(flatten)]
    pub mapa_base: MapaBase,
}

/// What the `flota` view needs besides the units (`mapa_flota`'s `vista`): the basemap.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct VistaFlota {
    #[schemars(description = "Versión del contrato de la vista (1)")]
    pub version: u32,
    #[serde(flatten)]
    pub mapa_base: MapaBase,
}

impl VistaFlota {
    pub fn new(snapshot: &Snapshot, teselas: Option<Teselas>) -> VistaFlota {
        VistaFlota {
            version: VERSION,
            mapa_base: mapa_base(snapshot, teselas),
        }
    }
}

/// One colour band of the track: speeds up to `hasta_kmh` (the last band has no top). Each
/// report carries its band, decided by `map::band` as on the PNG map.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Banda {
    #[schemars(
        description = "Tope de la banda con el límite general de la unidad; dentro de una geocerca con límite propio la banda se calcula con ese límite"
    )]
    pub hasta_kmh: Option<f64>,
    #[schemars(description = "Tope de la banda como fracción del límite que aplica en cada punto")]
    pub hasta_fraccion_limite: Option<f64>,
    #[schemars(description = "Color CSS, #rrggbb")]
    pub color: String,
    pub nombre: String,
}

/// Something that happened during the day, with what it rests on.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Evento {
    #[schemars(description = "parada | exceso_velocidad | perdida_senal | visita_geocerca")]
    pub tipo: String,
    #[schemars(description = "Rótulo corto, p. ej. «Parada 12:05 · 18 min»")]
    pub titulo: String,
    pub inicio_utc: i64,
    #[schemars(description = "null: seguía en curso en el instante de la consulta")]
    pub fin_utc: Option<i64>,
    #[schemars(description = "Dónde va el marcador (en un exceso, donde se reportó la máxima)")]
    pub lat: f64,
    pub lon: f64,
    #[schemars(description = "Pérdidas de señal: dónde volvió la señal [lat, lon]")]
    pub hasta: Option<[f64; 2]>,
    pub minutos: f64,
    #[schemars(description = "Paradas prolongadas")]
    pub prolongada: bool,
    #[schemars(description = "Geocerca de una visita")]
    pub geocerca: Option<String>,
    #[schemars(
        description = "Campos en que se basa la detección, nombre → valor; la vista muestra los que haya"
    )]
    pub evidencia: Map<String, Value>,
}

/// The offline basemap (the fleet's own geometry) and, when configured, online tiles.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MapaBase {
    pub geocercas: Vec<GeocercaVista>,
    #[schemars(description = "Trazado de las rutas de la flota: las calles del mapa sin conexión")]
    pub rutas: Vec<RutaVista>,
    #[schemars(description = "Paradas de las rutas con nombre: referencias del mapa sin conexión")]
    pub lugares: Vec<Lugar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(description = "Solo si hay un servidor de teselas configurado")]
    pub teselas: Option<Teselas>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GeocercaVista {
    pub nombre: String,
    pub tipo: String,
    pub limite_kmh: Option<f64>,
    #[schemars(description = "Contorno cerrado, [lat, lon] por vértice")]
    pub contorno: Vec<[f64; 2]>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RutaVista {
    pub nombre: String,
    #[schemars(description = "[lat, lon] por vértice")]
    pub puntos: Vec<[f64; 2]>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Lugar {
    pub nombre: String,
    pub lat: f64,
    pub lon: f64,
}

/// An online tile layer; its origins must be in the resource's CSP `resourceDomains`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Teselas {
    #[schemars(description = "Plantilla {z}/{x}/{y} (y {s} opcional)")]
    pub plantilla: String,
    pub atribucion: String,
}

impl Teselas {
    /// The configured tile server, or `None` when tiles are switched off.
    pub fn from_config(config: &TileConfig) -> Option<Teselas> {
        config.template.as_ref().map(|plantilla| Teselas {
            plantilla: plantilla.clone(),
            atribucion: config.attribution.clone(),
        })
    }
}

/// Degrees to five decimals (about a metre): plenty for a screen, a third fewer bytes.
fn deg(x: f64) -> f64 {
    (x * 1e5).round() / 1e5
}

fn pair(p: LatLon) -> [f64; 2] {
    [deg(p.lat), deg(p.lon)]
}

/// Route lines are background: vertices that move the line by less than this are dropped.
const ROUTE_TOLERANCE_M: f64 = 2.0;

/// `points` without the vertices a route line does not need ([`ROUTE_TOLERANCE_M`]), measured
/// on a local plane around the first point (a city's extent, where that is exact enough).
fn thin(points: &[LatLon]) -> Vec<[f64; 2]> {
    let Some(first) = points.first() else {
        return Vec::new();
    };
    let metres_per_deg_lon = 111_320.0 * first.lat.to_radians().cos();
    let plane: Vec<(f64, f64)> = points
        .iter()
        .map(|p| (p.lon * metres_per_deg_lon, p.lat * 110_574.0))
        .collect();
    map::simplify::rdp_indices(&plane, ROUTE_TOLERANCE_M)
        .into_iter()
        .map(|i| pair(points[i]))
        .collect()
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn hex((r, g, b): (u8, u8, u8)) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// The track's colour bands as shares of the limit that applied: the same cut points and
/// colours as the PNG map (`map::BAND_SHARES`, `map::band`, `map::band_rgb`); `hasta_kmh`
/// spells them out for the unit's general `limit_kmh`.
pub fn bands(limit_kmh: f64) -> Vec<Banda> {
    let names = [
        "hasta 50 % del límite",
        "hasta 90 % del límite",
        "hasta el límite",
        "sobre el límite",
    ];
    names
        .iter()
        .enumerate()
        .map(|(i, nombre)| {
            let share = map::BAND_SHARES.get(i).copied();
            Banda {
                hasta_kmh: share.map(|s| s * limit_kmh),
                hasta_fraccion_limite: share,
                color: hex(map::band_rgb(i)),
                nombre: (*nombre).into(),
            }
        })
        .collect()
}

/// The fleet's geometry for any map view.
pub fn mapa_base(snapshot: &Snapshot, teselas: Option<Teselas>) -> MapaBase {
    let geocercas = snapshot
        .fences
        .iter()
        .map(|f| GeocercaVista {
            nombre: f.fence.name.clone(),
            tipo: f.fence.kind.clone(),
            limite_kmh: f.fence.speed_limit_kmh,
            contorno: f.fence.outline().into_iter().map(pair).collect(),
        })
        .collect();
    let rutas = snapshot
        .routes
        .iter()
        .map(|r| RutaVista {
            nombre: r.name.clone(),
            puntos: thin(r.points()),
        })
        .collect();
    let mut lugares: Vec<Lugar> = Vec::new();
    for route in &snapshot.routes {
        // The first stop is the depot, a geofence with its own label; routes share stops.
        for (name, p) in route.stops.iter().skip(1) {
            let nombre = name.replace('_', " ");
            if !lugares.iter().any(|l| l.nombre == nombre) {
                lugares.push(Lugar {
                    nombre,
                    lat: deg(p.lat),
                    lon: deg(p.lon),
                });
            }
        }
    }
    MapaBase {
        geocercas,
        rutas,
        lugares,
        teselas,
    }
}

/// Local time of `ts_utc`: `HH:MM:SS` within the day shown, the full date and time outside it
/// (a stop that began the night before).
fn clock(track: &DayTrack, ts_utc: i64) -> String {
    if (track.from_utc..crate::fleet::day_bounds(track.zone, track.date).1).contains(&ts_utc) {
        dates::clock(track.zone, ts_utc)
    } else {
        dates::iso(track.zone, ts_utc)
    }
}

/// The view of one unit's day. The events are the ones `mapa_recorrido` counts (its
/// `paradas`, `excesos_de_velocidad`, `perdidas_de_senal`), placed where the PNG map places
/// them: both come from the same [`Scene`].
pub fn vista_recorrido(
    track: &DayTrack,
    snapshot: &Snapshot,
    teselas: Option<Teselas>,
) -> VistaRecorrido {
    let scene = Scene::from_day(track, snapshot);
    let origin = track.fixes.first().map_or(track.from_utc, |f| f.ts_utc);
    let limit = track.vehicle.limit_kmh;
    // `scene.track` holds one point per report, with the limit that applied there.
    let reportes = track
        .fixes
        .iter()
        .zip(&scene.track)
        .map(|(f, point)| {
            [
                (f.ts_utc - origin) as f64,
                deg(f.lat),
                deg(f.lon),
                round1(f.speed_kmh),
                if f.ignition { 1.0 } else { 0.0 },
                map::band(f.speed_kmh, point.limit_kmh) as f64,
            ]
        })
        .collect();
    let cortes = scene
        .track
        .iter()
        .enumerate()
        .filter(|(_, p)| p.after_gap)
        .map(|(i, _)| i)
        .collect();
    let offset = dates::local(track.zone, track.from_utc)
        .naive_local()
        .and_utc()
        .timestamp()
        - track.from_utc;
    VistaRecorrido {
        version: VERSION,
        zona_horaria: track.zone.name().to_owned(),
        desfase_utc_s: offset,
        limite_kmh: limit,
        bandas: bands(limit),
        inicio_utc: origin,
        en_curso: scene.ongoing,
        reportes,
        cortes,
        eventos: events(track, snapshot, &scene),
        mapa_base: mapa_base(snapshot, teselas),
    }
}

/// The fields every event's evidence starts with: the tools' `evidencia` (fleet::Evidencia)
/// and its interval as the engine stored it.
fn interval(track: &DayTrack, snapshot: &Snapshot, e: &EventRow, end: i64) -> Map<String, Value> {
    let evidence = Evidencia::of(e, track.zone, snapshot.now_utc, &snapshot.meta.config);
    let mut m = match serde_json::to_value(evidence) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    m.insert("inicio".into(), json!(clock(track, e.start_utc)));
    m.insert(
        "fin".into(),
        match e.end_utc {
            Some(t) => json!(clock(track, t)),
            None => json!("en curso"),
        },
    );
    m.insert(
        "minutos".into(),
        json!(round1((end - e.start_utc).max(0) as f64 / 60.0)),
    );
    m
}

fn events(track: &DayTrack, snapshot: &Snapshot, scene: &Scene) -> Vec<Evento> {
    let now = snapshot.now_utc;
    let place = |p: LatLon| snapshot.places.phrase(p);
    let mut out = Vec::new();
    // `Scene` builds its stops from `working_stops`, its speeding marks from `speeding` and
    // its gap marks from `gaps`, one for one and in order: zipping pairs each mark with its row.
    for (row, mark) in track.working_stops().zip(&scene.stops) {
        let mut evidencia = interval(track, snapshot, row, row.end_utc.unwrap_or(now));
        evidencia.insert("prolongada".into(), json!(row.long));
        evidencia.insert("motor_encendido".into(), json!(row.engine_on));
        evidencia.insert("fin_de_jornada".into(), json!(row.end_of_day));
        evidencia.insert(
            "desde_antes_de_los_datos".into(),
            json!(row.from_data_start),
        );
        evidencia.insert("lugar".into(), json!(place(mark.p)));
        out.push(Evento {
            tipo: "parada".into(),
            titulo: format!(
                "Parada{} {} · {:.0} min",
                if mark.long { " prolongada" } else { "" },
                mark.start,
                mark.minutes
            ),
            inicio_utc: row.start_utc,
            fin_utc: row.end_utc,
            lat: deg(mark.p.lat),
            lon: deg(mark.p.lon),
            hasta: None,
            minutos: round1(mark.minutes),
            prolongada: mark.long,
            geocerca: None,
            evidencia,
        });
    }
    for (row, mark) in track.speeding.iter().zip(&scene.speeding) {
        let mut evidencia = interval(track, snapshot, row, mark.to_utc);
        evidencia.insert("velocidad_max_kmh".into(), json!(round1(mark.max_kmh)));
        evidencia.insert("limite_kmh".into(), json!(round1(mark.limit_kmh)));
        evidencia.insert("lugar".into(), json!(place(mark.p)));
        out.push(Evento {
            tipo: "exceso_velocidad".into(),
            titulo: format!(
                "Exceso {} · {:.0} km/h (límite {:.0})",
                dates::clock_hm(track.zone, row.start_utc),
                mark.max_kmh,
                mark.limit_kmh
            ),
            inicio_utc: row.start_utc,
            fin_utc: row.end_utc,
            lat: deg(mark.p.lat),
            lon: deg(mark.p.lon),
            hasta: None,
            minutos: round1((mark.to_utc - row.start_utc).max(0) as f64 / 60.0),
            prolongada: false,
            geocerca: None,
            evidencia,
        });
    }
    for (row, mark) in track.gaps.iter().zip(&scene.gaps) {
        let end = row.end_utc.unwrap_or(now);
        let mut evidencia = interval(track, snapshot, row, end);
        evidencia.insert("ultima_posicion".into(), json!(place(mark.from)));
        if let Some(to) = mark.to {
            evidencia.insert("posicion_al_volver".into(), json!(place(to)));
        }
        out.push(Evento {
            tipo: "perdida_senal".into(),
            titulo: format!("Pérdida de señal: {}", mark.label),
            inicio_utc: row.start_utc,
            fin_utc: row.end_utc,
            lat: deg(mark.from.lat),
            lon: deg(mark.from.lon),
            hasta: mark.to.map(pair),
            minutos: round1((end - row.start_utc).max(0) as f64 / 60.0),
            prolongada: false,
            geocerca: None,
            evidencia,
        });
    }
    // A visit row has no position of its own: it is where the first report inside it was.
    let entry = |row: &EventRow| {
        let i = track.fixes.partition_point(|f| f.ts_utc < row.start_utc);
        track
            .fixes
            .get(i)
            .or(track.fixes.last())
            .map_or(LatLon::new(row.lat, row.lon), |f| f.point())
    };
    for row in &track.visits {
        let name = row.fence_id.and_then(|id| snapshot.fence_name(id));
        let at = entry(row);
        let end = row.end_utc.unwrap_or(now).min(track.to_utc);
        let mut evidencia = interval(track, snapshot, row, end);
        evidencia.insert("geocerca".into(), json!(name));
        evidencia.insert(
            "desde_antes_de_los_datos".into(),
            json!(row.from_data_start),
        );
        out.push(Evento {
            tipo: "visita_geocerca".into(),
            titulo: format!(
                "{} · {}",
                name.unwrap_or("Geocerca"),
                dates::clock_hm(track.zone, row.start_utc)
            ),
            inicio_utc: row.start_utc,
            fin_utc: row.end_utc,
            lat: deg(at.lat),
            lon: deg(at.lon),
            hasta: None,
            minutos: round1((end - row.start_utc).max(0) as f64 / 60.0),
            prolongada: false,
            geocerca: name.map(str::to_owned),
            evidencia,
        });
    }
    out.sort_by_key(|e| e.inicio_utc);
    out
}
