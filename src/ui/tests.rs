//! The documents as a host receives them: size, the vendored library, no outside reference;
//! the tiles' CSP origin; the speed bands against the PNG map's.

use sha2::{Digest, Sha256};

use super::*;

fn sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn documents() -> [(&'static str, &'static str); 2] {
    [("recorrido", recorrido_html()), ("flota", flota_html())]
}

/// The npm tarball `leaflet@1.9.4` (integrity sha512-nxS1ynzJOmOlHp+iL3FyWqK89GtNL8U8rvlM…),
/// files `dist/leaflet.js`, `dist/leaflet.css` and `LICENSE`, byte for byte.
#[test]
fn vendored_leaflet_is_the_pinned_release() {
    for (name, text, expected) in [
        (
            "leaflet.js",
            LEAFLET_JS,
            "db49d009c841f5ca34a888c96511ae936fd9f5533e90d8b2c4d57596f4e5641a",
        ),
        (
            "leaflet.css",
            LEAFLET_CSS,
            "a7837102824184820dfa198d1ebcd109ff6d0ff9a2672a074b9a1b4d147d04c6",
        ),
        (
            "LICENSE",
            LEAFLET_LICENSE,
            "53e8dc25862014e4324741ca18fbe3611e11d42ef69f59f86ea8c5389647d4cb",
        ),
    ] {
        assert_eq!(sha256(text), expected, "ui/vendor/leaflet-1.9.4/{name}");
    }
    assert!(LEAFLET_JS.contains(&format!("Leaflet {LEAFLET_VERSION},")));
}

#[test]
fn documents_fit_the_budget() {
    for (name, html) in documents() {
        assert!(
            html.len() < MAX_DOCUMENT_BYTES,
            "{name}: {} bytes",
            html.len()
        );
        // Leaflet alone is ~160 KB: a much smaller document lost it.
        assert!(html.len() > 150_000, "{name}: {} bytes", html.len());
    }
}

/// Everything is inline: every marker of the template replaced once, the library, its licence
/// and the view's own script present, and no element that loads a file.
#[test]
fn documents_are_self_contained() {
    for (name, html) in documents() {
        assert!(html.starts_with("<!doctype html>"), "{name}");
        assert!(!html.contains("/*@") && !html.contains("@TITULO@") && !html.contains("@VISTA@"));
        assert_eq!(html.matches("<script>").count(), 3, "{name}");
        // An inlined file holding `</script` would end its element early.
        assert_eq!(
            html.to_ascii_lowercase().matches("</script").count(),
            3,
            "{name}"
        );
        assert_eq!(html.matches("</style>").count(), 2, "{name}");
        assert!(html.contains("t.version=\"1.9.4\""), "{name}: Leaflet");
        assert!(html.contains("BSD 2-Clause License"), "{name}: licence");
        assert!(html.contains("class Puente"), "{name}: host bridge");
        assert!(html.contains(&format!("data-vista=\"{name}\"")), "{name}");
        assert!(!html.contains("sourceMappingURL"), "{name}");
        let lower = html.to_ascii_lowercase();
        for loader in [
            "<script src",
            "<link",
            "<iframe",
            "<img",
            "@import",
            "<base",
        ] {
            assert!(!lower.contains(loader), "{name}: {loader}");
        }
    }
    assert!(recorrido_html().contains("function mostrarRecorrido"));
    assert!(flota_html().contains("function mostrarFlota"));
}

/// The only absolute URLs are strings inside Leaflet that nothing loads: the SVG namespace,
/// the project's address in its licence banner and attribution prefix (which the views turn
/// off), and two browser bug links in comments of its CSS. CSS `url()`s are Leaflet's own images for controls and the default
/// icon, which the views never create (the browser test sees no request for them).
#[test]
fn documents_reference_no_outside_address() {
    let allowed_urls = [
        "http://www.w3.org/2000/svg",
        "https://leafletjs.com",
        "https://bugs.chromium.org/p/chromium/issues/detail?id=600120",
        "https://bugzilla.mozilla.org/show_bug.cgi?id=888319",
    ];
    let allowed_css = [
        "#default#VML",
        "images/layers.png",
        "images/layers-2x.png",
        "images/marker-icon.png",
    ];
    for (name, html) in documents() {
        let mut rest = html;
        while let Some(at) = rest.find("http") {
            let tail = &rest[at..];
            if tail.starts_with("http://") || tail.starts_with("https://") {
                let end = tail
                    .find(|c: char| c.is_whitespace() || "\"'<>)`".contains(c))
                    .unwrap_or(tail.len());
                let url = &tail[..end];
                assert!(allowed_urls.contains(&url), "{name}: {url}");
            }
            rest = &rest[at + 4..];
        }
        for piece in html.split("url(").skip(1) {
            let target = piece.split(')').next().unwrap_or_default();
            let target = target.trim_matches(|c| c == '"' || c == '\'');
            assert!(
                target.starts_with("data:") || allowed_css.contains(&target),
                "{name}: url({target})"
            );
        }
        // Only the views' own code would create the default icon or the layers control.
        for view_js in [COMMON_JS, RECORRIDO_JS, FLOTA_JS] {
            for needle in [
                "Icon.Default",
                "control.layers",
                "fetch(",
                "XMLHttpRequest",
                "WebSocket",
            ] {
                assert!(!view_js.contains(needle), "{needle}");
            }
        }
    }
}

#[test]
fn tile_templates_become_csp_origins() {
    let check = |template: &str, expected: Option<&str>| {
        assert_eq!(tile_domain(template).as_deref(), expected, "{template}");
    };
    check(
        "https://tile.openstreetmap.org/{z}/{x}/{y}.png",
        Some("https://tile.openstreetmap.org"),
    );
    check(
        "https://{s}.tile.example.com/{z}/{x}/{y}.png?key=k",
        Some("https://*.tile.example.com"),
    );
    check(
        "http://127.0.0.1:8080/t/{z}/{x}/{y}.png",
        Some("http://127.0.0.1:8080"),
    );
    check(
        "HTTPS://Tiles.Example.COM/{z}/{x}/{y}",
        Some("https://tiles.example.com"),
    );
    check(
        "https://user:pw@tiles.example.com/{z}",
        Some("https://tiles.example.com"),
    );
    check("https://{z}.example.com/{x}/{y}", None);
    check("ftp://tiles.example.com/{z}/{x}/{y}", None);
    check("tiles/{z}/{x}/{y}.png", None);
    check("https:///{z}", None);
}

#[test]
fn resource_meta_declares_tiles_only_when_configured() {
    assert_eq!(resource_meta(None), json!({"ui": {"prefersBorder": true}}));
    let osm = datos::Teselas {
        plantilla: "https://tile.openstreetmap.org/{z}/{x}/{y}.png".into(),
        atribucion: "© colaboradores de OpenStreetMap".into(),
    };
    assert_eq!(
        resource_meta(Some(&osm)),
        json!({"ui": {"prefersBorder": true,
            "csp": {"resourceDomains": ["https://tile.openstreetmap.org"]}}})
    );
}

/// The band a report carries and the band table the legend shows tell the same story as
/// the PNG map's rule, whatever the limit.
#[test]
fn bands_agree_with_the_png_map() {
    for limit in [30.0, 50.0, 60.0, 90.0] {
        let bands = datos::bands(limit);
        assert_eq!(bands.len(), 4);
        for (i, band) in bands.iter().enumerate() {
            assert_eq!(
                band.color,
                format!(
                    "#{:02x}{:02x}{:02x}",
                    crate::map::band_rgb(i).0,
                    crate::map::band_rgb(i).1,
                    crate::map::band_rgb(i).2
                )
            );
        }
        for tenth in 0..=(limit as i64 * 15) {
            let speed = tenth as f64 / 10.0;
            let by_table = bands
                .iter()
                .position(|b| {
                    b.hasta_fraccion_limite
                        .is_none_or(|top| speed <= top * limit)
                })
                .unwrap();
            assert_eq!(
                by_table,
                crate::map::band(speed, limit),
                "{speed} of {limit}"
            );
        }
    }
}

#[test]
fn the_contract_stays_inside_the_validated_schema_subset() {
    for schema in [
        crate::mcp::schema::output_schema_for::<datos::VistaRecorrido>(),
        crate::mcp::schema::output_schema_for::<datos::VistaFlota>(),
    ] {
        assert_eq!(
            crate::mcp::schema::unsupported_keywords(&schema),
            Vec::<String>::new()
        );
    }
}

#[test]
fn only_a_client_that_lists_the_views_type_renders_them() {
    let check = |caps: Value, expected: bool| {
        assert_eq!(client_renders_views(&caps), expected, "{caps}");
    };
    check(json!({}), false);
    check(json!({"extensions": {}}), false);
    check(json!({"extensions": {EXTENSION: {}}}), false);
    check(
        json!({"extensions": {EXTENSION: {"mimeTypes": ["text/html"]}}}),
        false,
    );
    check(
        json!({"extensions": {"otra/cosa": {"mimeTypes": [MIME_TYPE]}}}),
        false,
    );
    check(
        json!({"extensions": {EXTENSION: {"mimeTypes": [MIME_TYPE]}}}),
        true,
    );
    check(
        json!({"extensions": {EXTENSION: {"mimeTypes": ["text/html", MIME_TYPE]}}}),
        true,
    );
}
