//! The fleet's MCP resources: what a client may read without calling a tool.
//!
//! `flota://unidades` (the roster, JSON), `flota://geocercas` (the geofences, GeoJSON),
//! `flota://rutas/{nombre}` (one route with its stops, GeoJSON; a template whose names
//! complete), `flota://datos` (the data set: window, zone, "now", whether the detections are
//! current). Everything comes from the [`Fleet`] snapshot — reference data, never the truth
//! log — and is read again when the database is replaced ([`version`] tells the server, which
//! sends `notifications/resources/list_changed`). Also the completion of plates, geofence
//! names and date words that the prompts share. The map views' `ui://` resources are in
//! [`views`].

mod completion;
pub mod views;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::fleet::{Fleet, Snapshot};
use crate::mcp::service::ResourcesVersion;
use crate::mcp::{
    Resource, ResourceContents, ResourceDefinition, ResourceError, ResourceTemplate,
    TemplateDefinition,
};
use crate::store::AnalysisState;

pub use completion::{complete_dates, complete_fences, complete_plates, complete_routes};

const JSON: &str = "application/json";
const GEOJSON: &str = "application/geo+json";

fn snapshot(fleet: &Fleet) -> Result<Arc<Snapshot>, ResourceError> {
    fleet
        .snapshot()
        .map_err(|e| ResourceError::Failed(e.to_string()))
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// A fixed resource computed from the snapshot.
struct FleetResource {
    definition: ResourceDefinition,
    fleet: Arc<Fleet>,
    render: fn(&Snapshot) -> Value,
}

impl Resource for FleetResource {
    fn definition(&self) -> &ResourceDefinition {
        &self.definition
    }

    fn read(&self) -> Result<Vec<ResourceContents>, ResourceError> {
        let snapshot = snapshot(&self.fleet)?;
        let body = pretty(&(self.render)(&snapshot));
        let mime = self.definition.mime_type.as_deref().unwrap_or(JSON);
        Ok(vec![ResourceContents::text(
            self.definition.uri.clone(),
            mime,
            body,
        )])
    }
}

fn definition(
    uri: &str,
    name: &str,
    title: &str,
    description: &str,
    mime: &str,
) -> ResourceDefinition {
    ResourceDefinition {
        uri: uri.into(),
        name: name.into(),
        title: Some(title.into()),
        description: Some(description.into()),
        mime_type: Some(mime.into()),
        meta: None,
    }
}

/// The fixed resources, in the order `resources/list` shows them.
pub fn all(fleet: &Arc<Fleet>) -> Vec<Box<dyn Resource>> {
    let resource = |definition, render| -> Box<dyn Resource> {
        Box::new(FleetResource {
            definition,
            fleet: Arc::clone(fleet),
            render,
        })
    };
    vec![
        resource(
            definition(
                "flota://unidades",
                "unidades",
                "Unidades de la flota",
                "Todas las unidades: placa, tipo, conductor, si está activa, límite de velocidad y rutas asignadas.",
                JSON,
            ),
            roster,
        ),
        resource(
            definition(
                "flota://geocercas",
                "geocercas",
                "Geocercas",
                "Las geocercas de la flota como GeoJSON (polígonos [lon, lat]) con su tipo y límite de velocidad.",
                GEOJSON,
            ),
            geofences,
        ),
        resource(
            definition(
                "flota://datos",
                "datos",
                "Datos disponibles",
                "El conjunto de datos: días que cubre, zona horaria, el 'ahora' de la flota y si las detecciones están al día.",
                JSON,
            ),
            data_set,
        ),
    ]
}

/// The resource templates.
pub fn templates(fleet: &Arc<Fleet>) -> Vec<Box<dyn ResourceTemplate>> {
    vec![Box::new(RouteTemplate {
        definition: TemplateDefinition {
            uri_template: "flota://rutas/{nombre}".into(),
            name: "ruta".into(),
            title: Some("Ruta de la flota".into()),
            description: Some(
                "Una ruta por nombre como GeoJSON: la línea y sus paradas ([lon, lat]).".into(),
            ),
            mime_type: Some(GEOJSON.into()),
            meta: None,
        },
        fleet: Arc::clone(fleet),
    })]
}

/// A number that moves when the database behind the resources is replaced or changed.
pub fn version(fleet: &Arc<Fleet>) -> ResourcesVersion {
    let fleet = Arc::clone(fleet);
    Box::new(move || fleet.generation())
}

fn roster(snapshot: &Snapshot) -> Value {
    let units: Vec<Value> = snapshot
        .vehicles
        .iter()
        .map(|v| {
            json!({
                "placa": v.plate,
                "tipo": v.kind,
                "conductor": v.driver,
                "activa": v.active,
                "limite_kmh": v.limit_kmh,
                "rutas": v.routes,
            })
        })
        .collect();
    json!({"total": units.len(), "unidades": units})
}

fn geofences(snapshot: &Snapshot) -> Value {
    let features: Vec<Value> = snapshot
        .fences
        .iter()
        .map(|stored| {
            let fence = &stored.fence;
            let mut ring: Vec<[f64; 2]> = fence.outline().iter().map(|p| [p.lon, p.lat]).collect();
            if let Some(first) = ring.first().copied()
                && ring.last() != Some(&first)
            {
                ring.push(first);
            }
            json!({
                "type": "Feature",
                "geometry": {"type": "Polygon", "coordinates": [ring]},
                "properties": {
                    "nombre": fence.name,
                    "tipo": fence.kind,
                    "forma": fence.shape_name(),
                    "limite_kmh": fence.speed_limit_kmh,
                }
            })
        })
        .collect();
    json!({"type": "FeatureCollection", "features": features})
}

fn data_set(snapshot: &Snapshot) -> Value {
    let meta = &snapshot.meta;
    let now = crate::fleet::dates::local(snapshot.zone(), snapshot.now_utc);
    let analysis = match &snapshot.analysis {
        AnalysisState::Current => json!({"estado": "al_dia"}),
        AnalysisState::Behind(per_vehicle) => json!({
            "estado": "atrasado",
            "unidades_con_posiciones_nuevas": per_vehicle.len(),
            "que_hacer": "ejecute flota analizar sobre la base de datos",
        }),
        AnalysisState::Unusable(why) => {
            json!({"estado": "inutilizable", "motivo": why.to_string()})
        }
    };
    json!({
        "desde": meta.from_date.map(|d| d.to_string()),
        "hasta": meta.to_date.map(|d| d.to_string()),
        "zona_horaria": snapshot.zone_name(),
        "ahora": now.format("%Y-%m-%dT%H:%M").to_string(),
        "hoy": snapshot.today.to_string(),
        "intervalo_s": meta.interval_s,
        "posiciones": meta.positions,
        "escenario": meta.scenario,
        "unidades": snapshot.vehicles.len(),
        "geocercas": snapshot.fences.len(),
        "rutas": snapshot.routes.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        "detecciones": analysis,
    })
}

struct RouteTemplate {
    definition: TemplateDefinition,
    fleet: Arc<Fleet>,
}

impl ResourceTemplate for RouteTemplate {
    fn definition(&self) -> &TemplateDefinition {
        &self.definition
    }

    fn read(
        &self,
        uri: &str,
        variables: &BTreeMap<String, String>,
    ) -> Result<Vec<ResourceContents>, ResourceError> {
        let snapshot = snapshot(&self.fleet)?;
        let asked = variables
            .get("nombre")
            .map(String::as_str)
            .unwrap_or_default();
        let names: Vec<&str> = snapshot.routes.iter().map(|r| r.name.as_str()).collect();
        let found = match crate::fleet::text::find_name(asked, &names) {
            crate::fleet::text::Found::One(index) => &snapshot.routes[index],
            _ => {
                return Err(ResourceError::NotFound(format!(
                    "No existe la ruta '{asked}'. Las rutas son: {}.",
                    names.join(", ")
                )));
            }
        };
        let line: Vec<[f64; 2]> = found.points().iter().map(|p| [p.lon, p.lat]).collect();
        let mut features = vec![json!({
            "type": "Feature",
            "geometry": {"type": "LineString", "coordinates": line},
            "properties": {"tipo": "ruta", "nombre": found.name},
        })];
        for (order, (name, at)) in found.stops.iter().enumerate() {
            features.push(json!({
                "type": "Feature",
                "geometry": {"type": "Point", "coordinates": [at.lon, at.lat]},
                "properties": {"tipo": "parada", "ruta": found.name, "nombre": name, "orden": order + 1},
            }));
        }
        let body = pretty(&json!({"type": "FeatureCollection", "features": features}));
        Ok(vec![ResourceContents::text(uri, GEOJSON, body)])
    }

    fn complete(&self, name: &str, value: &str) -> Vec<String> {
        if name != "nombre" {
            return Vec::new();
        }
        complete_routes(&self.fleet, value)
    }
}
