//! The interactive map views for hosts that render MCP Apps (`io.modelcontextprotocol/ui`):
//! `ui://flota/recorrido` (one unit's day, `mapa_recorrido`) and `ui://flota/flota` (every
//! active unit now, `mapa_flota`), each one self-contained HTML document.
//!
//! Owns assembling those documents from the files in `ui/` (the shared template, styles and
//! host bridge, each view's script, and Leaflet vendored at a pinned version), once per
//! process, with nothing fetched at build or run time; what a resource's `_meta.ui` declares
//! (the CSP origins of configured tiles); and, in [`datos`], the `vista` object the tools put
//! in their `structuredContent` for these views. It must not serve anything itself: the MCP
//! side (`resources/read`, `_meta.ui.resourceUri` on tools, negotiation) belongs to the server.

pub mod datos;

use std::sync::OnceLock;

use serde_json::{Value, json};

/// MIME type of an MCP App resource.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";
/// The day view's resource.
pub const RECORRIDO_URI: &str = "ui://flota/recorrido";
/// The fleet view's resource.
pub const FLOTA_URI: &str = "ui://flota/flota";
/// Budget for one document: hosts inline it in a frame, and a chat client carries it.
pub const MAX_DOCUMENT_BYTES: usize = 400 * 1024;

/// The extension's identifier in `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";

/// Whether a client's declared capabilities say it renders these views: the extension with
/// our MIME type among its `mimeTypes` (the extension's negotiation; anything else gets the
/// text and the PNG only).
pub fn client_renders_views(client_capabilities: &Value) -> bool {
    client_capabilities["extensions"][EXTENSION]["mimeTypes"]
        .as_array()
        .is_some_and(|types| types.iter().any(|t| t.as_str() == Some(MIME_TYPE)))
}

/// `_meta` of a tool shown with a view: the resource the host renders with its result,
/// visible to the model and to the view (the day view calls its tool for another day).
pub fn tool_meta(resource_uri: &str) -> Value {
    json!({ "ui": { "resourceUri": resource_uri, "visibility": ["model", "app"] } })
}

/// The pinned Leaflet release in `ui/vendor/` (npm `leaflet`, BSD-2-Clause).
pub const LEAFLET_VERSION: &str = "1.9.4";

const TEMPLATE: &str = include_str!("../../ui/plantilla.html");
const COMMON_CSS: &str = include_str!("../../ui/comun.css");
const COMMON_JS: &str = include_str!("../../ui/comun.js");
const RECORRIDO_JS: &str = include_str!("../../ui/recorrido.js");
const FLOTA_JS: &str = include_str!("../../ui/flota.js");
const LEAFLET_JS: &str = include_str!("../../ui/vendor/leaflet-1.9.4/leaflet.js");
const LEAFLET_CSS: &str = include_str!("../../ui/vendor/leaflet-1.9.4/leaflet.css");
/// Leaflet's licence, kept with the vendored files and inlined with them.
const LEAFLET_LICENSE: &str = include_str!("../../ui/vendor/leaflet-1.9.4/LICENSE");

/// The line that points at a `.map` file next to `leaflet.js`: inside a document with no
/// files beside it a development tool would try to fetch it, so it is left out.
const SOURCE_MAP_LINE: &str = "//# sourceMappingURL=leaflet.js.map";

/// The day view: `mapa_recorrido`'s structured content drawn as an interactive map.
pub fn recorrido_html() -> &'static str {
    static DOCUMENT: OnceLock<String> = OnceLock::new();
    DOCUMENT.get_or_init(|| assemble("recorrido", "Recorrido del día", RECORRIDO_JS))
}

/// The fleet view: `mapa_flota`'s structured content drawn as an interactive map.
pub fn flota_html() -> &'static str {
    static DOCUMENT: OnceLock<String> = OnceLock::new();
    DOCUMENT.get_or_init(|| assemble("flota", "Flota ahora", FLOTA_JS))
}

/// One document: the template with the styles and scripts put in their places. The small
/// markers go first, so text inside the inlined files is never taken for a marker.
fn assemble(view: &str, title: &str, view_js: &str) -> String {
    let leaflet_js = LEAFLET_JS.trim_end();
    let leaflet_js = leaflet_js
        .strip_suffix(SOURCE_MAP_LINE)
        .unwrap_or(leaflet_js);
    let licence = format!(
        "/* Leaflet {LEAFLET_VERSION}, vendored in ui/vendor/. Its licence:\n{}*/\n",
        LEAFLET_LICENSE.replace("*/", "* /")
    );
    let mut html = TEMPLATE.replace("@TITULO@", title).replace("@VISTA@", view);
    for (marker, content) in [
        ("/*@LEAFLET_CSS@*/", LEAFLET_CSS),
        ("/*@COMUN_CSS@*/", COMMON_CSS),
        ("/*@LEAFLET_JS@*/", &format!("{licence}{leaflet_js}")),
        ("/*@COMUN_JS@*/", COMMON_JS),
        ("/*@VISTA_JS@*/", view_js),
    ] {
        html = html.replacen(marker, content, 1);
    }
    html
}

/// The CSP origin a tile URL template needs in `resourceDomains`: its scheme, host and port,
/// with a `{s}` subdomain as `*`. `None` for anything but http(s) or a host with other
/// placeholders, which no CSP source can express.
pub fn tile_domain(template: &str) -> Option<String> {
    let (scheme, rest) = template.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "https" && scheme != "http" {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = host.replace("{s}", "*");
    let valid = !host.is_empty()
        && !host.starts_with('.')
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '*' | '[' | ']'));
    valid.then(|| format!("{scheme}://{}", host.to_ascii_lowercase()))
}

/// `_meta` of a view's `resources/read` content: a border, and the tiles' origin in the CSP
/// when tiles are configured (without it the host's default CSP allows no outside image).
pub fn resource_meta(teselas: Option<&datos::Teselas>) -> Value {
    let domains: Vec<String> = teselas
        .and_then(|t| tile_domain(&t.plantilla))
        .into_iter()
        .collect();
    if domains.is_empty() {
        json!({ "ui": { "prefersBorder": true } })
    } else {
        json!({ "ui": { "prefersBorder": true, "csp": { "resourceDomains": domains } } })
    }
}

#[cfg(test)]
mod tests;
