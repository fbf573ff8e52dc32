//! The fleet's MCP service: who the server is, what the model is told first, and the tools.
//!
//! Owns the wiring between the generic core (`mcp`) and the fleet: the server's identity, the
//! `initialize` instructions (the fleet, its zone, the data window, today's date, how to name
//! things), the tool list, and the prompts and resources (`crate::prompts`,
//! `crate::resources`), whose list is announced again when the database is replaced. `flota servir` and the fuzz harness build the same service here.

use std::sync::Arc;

use crate::fleet::Fleet;
use crate::map::TileConfig;
use crate::mcp::{self, ServerInfo};
use crate::ui::datos::Teselas;
use serde_json::json;

pub fn server_info() -> ServerInfo {
    ServerInfo {
        name: "flota".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        title: "flota — telemetría GPS de la flota".into(),
    }
}

/// The fleet service: identity, guidance for the model, the eight tools (PNG maps drawn over
/// tiles from `tiles`), and the map views of the MCP Apps extension (online tiles in them
/// only with `view_tiles`).
pub fn service(fleet: &Arc<Fleet>, tiles: TileConfig, view_tiles: Option<Teselas>) -> mcp::Service {
    let mut resources = crate::resources::all(fleet);
    resources.extend(crate::resources::views::all(view_tiles.as_ref()));
    mcp::Service {
        info: server_info(),
        instructions: Some(instructions(fleet)),
        tools: super::all(fleet, tiles, view_tiles),
        prompts: crate::prompts::all(fleet),
        resources,
        templates: crate::resources::templates(fleet),
        resources_version: Some(crate::resources::version(fleet)),
        extensions: Some(json!({ crate::ui::EXTENSION: {} })),
        ..mcp::Service::default()
    }
}

/// What the model should know before calling anything: the fleet, its zones, the data window,
/// today's date, and how to name things.
pub fn instructions(fleet: &Fleet) -> String {
    let usage = "Las herramientas calculan todo en la máquina del operador a partir de las \
        posiciones; solo devuelven agregados. Las placas aceptan minúsculas y espacios \
        (p123bcd = P-123BCD). Las fechas aceptan AAAA-MM-DD, DD/MM/AAAA, hoy, ayer, anteayer o un \
        día de la semana (el más reciente). Las horas de las respuestas son locales, con su \
        desfase UTC.";
    match fleet.snapshot() {
        Ok(snapshot) => {
            let active = snapshot.vehicles.iter().filter(|v| v.active).count();
            let mut plates: Vec<&str> = snapshot
                .vehicles
                .iter()
                .filter(|v| v.active)
                .map(|v| v.plate.as_str())
                .collect();
            let shown = if plates.len() > 30 {
                plates.truncate(30);
                format!("{}…", plates.join(", "))
            } else {
                plates.join(", ")
            };
            let fences: Vec<&str> = snapshot
                .fences
                .iter()
                .map(|f| f.fence.name.as_str())
                .take(30)
                .collect();
            let now = crate::fleet::dates::local(snapshot.zone(), snapshot.now_utc);
            format!(
                "Flota de {active} unidades activas ({shown}). Geocercas: {}. {} \
                 Datos desde {} hasta {}. Ahora (hora de la flota) es {} {}, {}. {usage}",
                fences.join(", "),
                zones_sentence(&snapshot),
                snapshot
                    .meta
                    .from_date
                    .map_or("?".into(), |d| d.to_string()),
                now.format("%Y-%m-%d %H:%M"),
                crate::fleet::dates::weekday_es(snapshot.today),
                snapshot.today,
                now.format("%H:%M"),
            )
        }
        Err(err) => format!(
            "Servidor de telemetría GPS de una flota. Por ahora no hay datos: {err} {usage}"
        ),
    }
}

/// The fleet's zone, and for a fleet in several, which units are in each and how dates read.
fn zones_sentence(snapshot: &crate::fleet::Snapshot) -> String {
    let zones = snapshot.zones();
    if zones.len() < 2 {
        return format!("Zona horaria: {}.", snapshot.zone_name());
    }
    let others: Vec<String> = zones[1..]
        .iter()
        .map(|zone| {
            let plates: Vec<&str> = snapshot
                .vehicles
                .iter()
                .filter(|v| v.zone == *zone)
                .map(|v| v.plate.as_str())
                .take(30)
                .collect();
            format!("{} ({})", zone.name(), plates.join(", "))
        })
        .collect();
    format!(
        "Zonas horarias: la flota está en {}; unidades en otra zona: {}. Lo que se pregunta de una \
         unidad (su día, 'hoy', 'ayer', sus horas) se lee en la zona de esa unidad; en preguntas \
         de toda la flota las fechas se leen en {} y cada unidad se cuenta en sus propios días.",
        snapshot.zone_name(),
        others.join("; "),
        snapshot.zone_name()
    )
}
