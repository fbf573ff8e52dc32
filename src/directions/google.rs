//! Google's legacy Directions API: the request (origin, destination, waypoints as `lat,lon`,
//! the key) and the reading of its answer, statuses included. Since Google stopped enabling
//! it for new projects, a refusal because it is not enabled says to enable the Routes API
//! (the default provider) instead.
//!
//! Owns Google's JSON shapes only. The geometry is the concatenation of every step's
//! polyline, not the `overview_polyline`, which Google smooths and which can cut the corners
//! a stop sits on. Distance and duration are the sums over legs.

use serde::Deserialize;

use super::{Answer, Parsed, decode, read_answer, with_message};
use crate::geometry::route::StopFile;
use crate::plumbing::net::Get;

pub(super) fn request(url: &str, key: &str, stops: &[StopFile]) -> Get {
    let at = |s: &StopFile| format!("{},{}", s.lat, s.lon);
    let (first, last) = (&stops[0], &stops[stops.len() - 1]);
    let mut request = Get::new(url)
        .param("origin", at(first))
        .param("destination", at(last))
        .param("mode", "driving")
        .param("alternatives", "false")
        .param("language", "es");
    let middle = &stops[1..stops.len() - 1];
    if !middle.is_empty() {
        // Plain waypoints (not `via:`): each is a stop the driver makes, which is what
        // splits the answer into one leg per stretch.
        let waypoints: Vec<String> = middle.iter().map(at).collect();
        request = request.param("waypoints", waypoints.join("|"));
    }
    request.secret("key", key)
}

#[derive(Deserialize)]
struct Response {
    status: String,
    #[serde(default)]
    error_message: Option<String>,
    #[serde(default)]
    routes: Vec<Route>,
    #[serde(default)]
    geocoded_waypoints: Vec<GeocodedWaypoint>,
}

#[derive(Deserialize)]
struct Route {
    #[serde(default)]
    overview_polyline: Option<Polyline>,
    #[serde(default)]
    legs: Vec<Leg>,
}

#[derive(Deserialize)]
struct Leg {
    distance: Quantity,
    duration: Quantity,
    #[serde(default)]
    steps: Vec<Step>,
}

#[derive(Deserialize)]
struct Quantity {
    value: f64,
}

#[derive(Deserialize)]
struct Step {
    polyline: Polyline,
}

#[derive(Deserialize)]
struct Polyline {
    points: String,
}

#[derive(Deserialize)]
struct GeocodedWaypoint {
    #[serde(default)]
    geocoder_status: String,
}

pub(super) fn parse(http_status: u16, body: &[u8], stops: &[StopFile]) -> Answer {
    let response: Response = match read_answer(http_status, body, "Google") {
        Ok(r) => r,
        Err(answer) => return answer,
    };
    if let Some(failure) = status_failure(&response, stops) {
        return failure;
    }
    let Some(route) = response.routes.into_iter().next() else {
        return Answer::Fail("Google respondió OK sin ninguna ruta".into());
    };
    if route.legs.len() + 1 != stops.len() {
        return Answer::Fail(format!(
            "Google devolvió {} tramos para {} paradas",
            route.legs.len(),
            stops.len()
        ));
    }
    let mut points = Vec::new();
    let every_leg_has_steps = route.legs.iter().all(|l| !l.steps.is_empty());
    if every_leg_has_steps {
        for step in route.legs.iter().flat_map(|l| &l.steps) {
            match decode(&step.polyline.points) {
                Ok(part) => points.extend(part),
                Err(reason) => return Answer::Fail(format!("Google: {reason}")),
            }
        }
    } else {
        match route.overview_polyline.as_ref().map(|p| decode(&p.points)) {
            Some(Ok(line)) => points = line,
            Some(Err(reason)) => return Answer::Fail(format!("Google: {reason}")),
            None => return Answer::Fail("Google respondió una ruta sin geometría".into()),
        }
    }
    Answer::Route(Parsed {
        points,
        distance_m: route.legs.iter().map(|l| l.distance.value).sum(),
        duration_s: route.legs.iter().map(|l| l.duration.value).sum(),
    })
}

/// What a status other than `OK` means, in one Spanish sentence; `None` for `OK`.
fn status_failure(response: &Response, stops: &[StopFile]) -> Option<Answer> {
    let detail = |code: &str| with_message(code, response.error_message.as_deref());
    let failure = match response.status.as_str() {
        "OK" => return None,
        "ZERO_RESULTS" => Answer::Fail(format!(
            "Google no encontró una ruta por carretera entre las paradas ({})",
            detail("ZERO_RESULTS")
        )),
        "NOT_FOUND" => {
            let missing: Vec<String> = response
                .geocoded_waypoints
                .iter()
                .zip(stops)
                .filter(|(w, _)| w.geocoder_status != "OK")
                .map(|(_, s)| format!("'{}'", s.nombre))
                .collect();
            let which = if missing.is_empty() {
                "alguna parada".to_owned()
            } else {
                format!("la parada {}", missing.join(", "))
            };
            Answer::Fail(format!(
                "Google no pudo ubicar {which} ({})",
                detail("NOT_FOUND")
            ))
        }
        "REQUEST_DENIED" if legacy_not_enabled(response.error_message.as_deref()) => {
            Answer::Fail(format!(
                "esa clave no tiene habilitada la Directions API, que Google ya no habilita \
                 en proyectos nuevos ({}); habilite la Routes API para la clave en la consola \
                 de Google Cloud y use el proveedor por defecto (--proveedor google)",
                detail("REQUEST_DENIED")
            ))
        }
        "REQUEST_DENIED" => Answer::Fail(format!(
            "Google rechazó la solicitud ({}); revise GOOGLE_MAPS_API_KEY y que la \
             Directions API esté habilitada para esa clave",
            detail("REQUEST_DENIED")
        )),
        "OVER_QUERY_LIMIT" => Answer::Retry(format!(
            "Google: se excedió el límite de solicitudes ({})",
            detail("OVER_QUERY_LIMIT")
        )),
        "OVER_DAILY_LIMIT" => Answer::Fail(format!(
            "Google: la clave no tiene cuota o facturación activa ({})",
            detail("OVER_DAILY_LIMIT")
        )),
        "INVALID_REQUEST" => Answer::Fail(format!(
            "Google considera inválida la solicitud ({})",
            detail("INVALID_REQUEST")
        )),
        "MAX_WAYPOINTS_EXCEEDED" | "MAX_ROUTE_LENGTH_EXCEEDED" => Answer::Fail(format!(
            "Google no acepta una ruta tan larga o con tantas paradas ({})",
            detail(&response.status)
        )),
        "UNKNOWN_ERROR" => Answer::Retry(format!(
            "Google tuvo un error interno ({})",
            detail("UNKNOWN_ERROR")
        )),
        other => Answer::Fail(format!("Google respondió el estado desconocido {other:?}")),
    };
    Some(failure)
}

/// Whether Google's message says the legacy API is not enabled for the key's project (today's
/// wording, "You're calling a legacy API, which is not enabled for your project…", and the
/// older "This API project is not authorized to use this API.").
fn legacy_not_enabled(message: Option<&str>) -> bool {
    let message = message.unwrap_or_default().to_lowercase();
    (message.contains("legacy api") && message.contains("not enabled"))
        || message.contains("legacyapinotactivated")
        || message.contains("not authorized to use this api")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::geometry::earth::LatLon;

    fn stops(n: usize) -> Vec<StopFile> {
        (0..n)
            .map(|i| StopFile {
                nombre: format!("p{i}"),
                lat: 14.6 + i as f64 * 0.01,
                lon: -90.5,
            })
            .collect()
    }

    fn encode(points: &[(f64, f64)]) -> String {
        let line: geo::LineString<f64> = points.iter().map(|(lat, lon)| (*lon, *lat)).collect();
        polyline::encode_coordinates(line, 5).unwrap()
    }

    #[test]
    fn steps_are_joined_and_legs_summed() {
        let body = json!({
            "status": "OK",
            "geocoded_waypoints": [{"geocoder_status": "OK"}, {"geocoder_status": "OK"}, {"geocoder_status": "OK"}],
            "routes": [{
                "overview_polyline": {"points": encode(&[(14.6, -90.5), (14.62, -90.5)])},
                "legs": [
                    {"distance": {"value": 1200, "text": "1.2 km"}, "duration": {"value": 100, "text": "2 min"},
                     "steps": [{"polyline": {"points": encode(&[(14.6, -90.5), (14.605, -90.501)])}},
                               {"polyline": {"points": encode(&[(14.605, -90.501), (14.61, -90.5)])}}]},
                    {"distance": {"value": 1300, "text": "1.3 km"}, "duration": {"value": 110, "text": "2 min"},
                     "steps": [{"polyline": {"points": encode(&[(14.61, -90.5), (14.62, -90.5)])}}]}
                ]
            }]
        });
        let Answer::Route(parsed) = parse(200, body.to_string().as_bytes(), &stops(3)) else {
            panic!("not a route")
        };
        assert_eq!(parsed.distance_m, 2500.0);
        assert_eq!(parsed.duration_s, 210.0);
        // Joints repeat (dropped later by `finish`); the detail between them is kept.
        assert_eq!(parsed.points.len(), 6);
        assert!(parsed.points.contains(&LatLon::new(14.605, -90.501)));
    }

    #[test]
    fn statuses_become_sentences() {
        let check = |body: serde_json::Value, http: u16, retry: bool, needle: &str| {
            let answer = parse(http, body.to_string().as_bytes(), &stops(3));
            crate::directions::tests::assert_failure(answer, retry, needle, &body.to_string());
        };
        check(
            json!({"status": "REQUEST_DENIED", "error_message": "The provided API key is invalid."}),
            200,
            false,
            "API key is invalid",
        );
        check(
            json!({"status": "REQUEST_DENIED", "error_message": "You're calling a legacy API, which is not enabled for your project. To get newer features and more functionality, switch to the Places API (New) or Routes API. Learn more: https://developers.google.com/maps/legacy#LegacyApiNotActivatedMapError"}),
            200,
            false,
            "habilite la Routes API",
        );
        check(
            json!({"status": "REQUEST_DENIED", "error_message": "This API project is not authorized to use this API."}),
            200,
            false,
            "habilite la Routes API",
        );
        check(
            json!({"status": "OVER_QUERY_LIMIT"}),
            200,
            true,
            "límite de solicitudes",
        );
        check(
            json!({"status": "ZERO_RESULTS"}),
            200,
            false,
            "no encontró una ruta",
        );
        check(
            json!({"status": "NOT_FOUND", "geocoded_waypoints": [{"geocoder_status": "OK"}, {"geocoder_status": "ZERO_RESULTS"}, {"geocoder_status": "OK"}]}),
            200,
            false,
            "'p1'",
        );
        check(
            json!({"status": "INVALID_REQUEST", "error_message": "Invalid request. Missing the 'origin' parameter."}),
            200,
            false,
            "origin",
        );
        check(
            json!({"status": "UNKNOWN_ERROR"}),
            200,
            true,
            "error interno",
        );
        check(
            json!({"status": "OK", "routes": []}),
            200,
            false,
            "sin ninguna ruta",
        );
        check(json!({"error": "x"}), 503, true, "HTTP 503");
        check(json!({"error": "x"}), 403, false, "HTTP 403");
    }

    #[test]
    fn garbage_is_named() {
        let Answer::Fail(text) = parse(200, b"<html>Bad gateway</html>", &stops(2)) else {
            panic!()
        };
        assert!(
            text.contains("no es el JSON esperado") && text.contains("<html>"),
            "{text}"
        );
    }
}
