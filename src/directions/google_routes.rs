//! Google's Routes API (`computeRoutes`): the request (a JSON POST with the stops as
//! `latLng` waypoints, the key and the response field mask in headers) and the reading of its
//! answer, errors included.
//!
//! Owns the Routes API's shapes only. The geometry is the route's polyline at
//! `HIGH_QUALITY` (not the smoothed overview the legacy API gave by default), traffic-unaware so
//! the same stops give the same road; distance and duration are the route's. Errors come as
//! a `google.rpc.Status` (`{"error": {"code", "message", "status", "details"}}`), the
//! `ErrorInfo` detail's `reason` telling a bad key from an API not enabled.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Answer, Parsed, decode, read_answer, retryable_http, with_message};
use crate::geometry::route::StopFile;
use crate::plumbing::net::Post;

/// The fields asked for: the route's distance, duration and polyline, and its legs (one per
/// stretch between stops, to check none was dropped).
pub(super) const FIELD_MASK: &str = "routes.distanceMeters,routes.duration,\
    routes.polyline.encodedPolyline,routes.legs.distanceMeters";

pub(super) fn request(url: &str, key: &str, stops: &[StopFile]) -> Post {
    let waypoint =
        |s: &StopFile| json!({"location": {"latLng": {"latitude": s.lat, "longitude": s.lon}}});
    let (first, last) = (&stops[0], &stops[stops.len() - 1]);
    // Plain intermediates (not `via`): each is a stop the driver makes, which is what splits
    // the route into one leg per stretch.
    let intermediates: Vec<Value> = stops[1..stops.len() - 1].iter().map(waypoint).collect();
    let body = json!({
        "origin": waypoint(first),
        "destination": waypoint(last),
        "intermediates": intermediates,
        "travelMode": "DRIVE",
        "routingPreference": "TRAFFIC_UNAWARE",
        "polylineQuality": "HIGH_QUALITY",
        "polylineEncoding": "ENCODED_POLYLINE",
        "computeAlternativeRoutes": false,
        "languageCode": "es",
        "units": "METRIC",
    });
    Post::json(url, &body)
        .header("X-Goog-FieldMask", FIELD_MASK)
        .secret_header("X-Goog-Api-Key", key)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    #[serde(default)]
    routes: Vec<Route>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Route {
    // proto3 JSON leaves zero values out.
    #[serde(default)]
    distance_meters: f64,
    #[serde(default)]
    duration: Option<String>,
    #[serde(default)]
    polyline: Option<Polyline>,
    #[serde(default)]
    legs: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Polyline {
    #[serde(default)]
    encoded_polyline: Option<String>,
}

/// `google.rpc.Status`, as the Routes API sends it under `error`.
#[derive(Deserialize)]
struct Failure {
    error: Status,
}

#[derive(Deserialize)]
struct Status {
    #[serde(default)]
    code: u16,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    status: String,
    #[serde(default)]
    details: Vec<Detail>,
}

#[derive(Deserialize)]
struct Detail {
    #[serde(default)]
    reason: Option<String>,
}

const WHO: &str = "Google Routes API";

pub(super) fn parse(http_status: u16, body: &[u8], stops: &[StopFile]) -> Answer {
    if http_status != 200 {
        return match serde_json::from_slice::<Failure>(body) {
            Ok(failure) => status_failure(&failure.error, http_status),
            Err(_) => match read_answer::<Value>(http_status, body, WHO) {
                Err(answer) => answer,
                Ok(_) if retryable_http(http_status) => {
                    Answer::Retry(format!("{WHO} respondió HTTP {http_status}"))
                }
                Ok(_) => Answer::Fail(format!("{WHO} respondió HTTP {http_status}")),
            },
        };
    }
    let response: Response = match read_answer(http_status, body, WHO) {
        Ok(r) => r,
        Err(answer) => return answer,
    };
    // An empty object is the documented answer when no road joins the stops.
    let Some(route) = response.routes.into_iter().next() else {
        return Answer::Fail(
            "Google no encontró una ruta por carretera entre las paradas (respuesta sin rutas)"
                .into(),
        );
    };
    if route.legs.len() + 1 != stops.len() {
        return Answer::Fail(format!(
            "Google devolvió {} tramos para {} paradas",
            route.legs.len(),
            stops.len()
        ));
    }
    let Some(encoded) = route.polyline.and_then(|p| p.encoded_polyline) else {
        return Answer::Fail("Google respondió una ruta sin geometría".into());
    };
    let points = match decode(&encoded) {
        Ok(points) => points,
        Err(reason) => return Answer::Fail(format!("Google: {reason}")),
    };
    let Some(duration_s) = route.duration.as_deref().and_then(seconds) else {
        return Answer::Fail(format!(
            "Google respondió una duración ilegible ({:?}); se esperaba p. ej. \"165s\"",
            route.duration.unwrap_or_default()
        ));
    };
    Answer::Route(Parsed {
        points,
        distance_m: route.distance_meters,
        duration_s,
    })
}

/// A protobuf `Duration` in JSON: seconds with up to nine decimals and an `s`.
fn seconds(text: &str) -> Option<f64> {
    text.strip_suffix('s')?
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite())
}

/// What an error status means, in one Spanish sentence.
fn status_failure(status: &Status, http_status: u16) -> Answer {
    let code = if status.status.is_empty() {
        format!("HTTP {}", status.code.max(http_status))
    } else {
        status.status.clone()
    };
    let reason = status.details.iter().find_map(|d| d.reason.as_deref());
    let detail = with_message(&code, status.message.as_deref());
    match (status.status.as_str(), reason) {
        (_, Some("API_KEY_INVALID" | "API_KEY_EXPIRED")) | ("UNAUTHENTICATED", _) => Answer::Fail(
            format!("Google no aceptó la clave ({detail}); revise GOOGLE_MAPS_API_KEY"),
        ),
        (_, Some("SERVICE_DISABLED")) => Answer::Fail(format!(
            "la Routes API no está habilitada en el proyecto de Google Cloud de esa clave \
             ({detail}); habilítela en la consola de Google Cloud y vuelva a intentarlo en \
             unos minutos"
        )),
        (_, Some("API_KEY_SERVICE_BLOCKED")) => Answer::Fail(format!(
            "la clave tiene restricciones que no permiten la Routes API ({detail}); añádala a \
             las API permitidas de la clave en la consola de Google Cloud"
        )),
        ("PERMISSION_DENIED", _) => Answer::Fail(format!(
            "Google rechazó la solicitud ({detail}); revise GOOGLE_MAPS_API_KEY y que la \
             Routes API esté habilitada para esa clave"
        )),
        ("RESOURCE_EXHAUSTED", _) => Answer::Retry(format!(
            "Google: se excedió el límite de solicitudes o la cuota ({detail})"
        )),
        ("UNAVAILABLE" | "INTERNAL" | "DEADLINE_EXCEEDED" | "UNKNOWN", _) => {
            Answer::Retry(format!("Google tuvo un error pasajero ({detail})"))
        }
        ("INVALID_ARGUMENT", _) => {
            Answer::Fail(format!("Google considera inválida la solicitud ({detail})"))
        }
        ("NOT_FOUND", _) => Answer::Fail(format!(
            "la dirección no es la de computeRoutes de la Routes API ({detail})"
        )),
        _ if retryable_http(http_status) => {
            Answer::Retry(format!("{WHO} respondió HTTP {http_status} ({detail})"))
        }
        _ => Answer::Fail(format!("{WHO} respondió un error ({detail})")),
    }
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
    fn the_request_carries_waypoints_as_lat_lng_and_the_key_in_a_header() {
        let post = request(
            "http://x/directions/v2:computeRoutes",
            "CLAVE-123456",
            &stops(3),
        );
        let shown = format!("{post:?}");
        assert!(
            shown.contains("X-Goog-FieldMask: routes.distanceMeters"),
            "{shown}"
        );
        assert!(shown.contains("X-Goog-Api-Key: ***"), "{shown}");
        assert!(!shown.contains("CLAVE"), "{shown}");
    }

    #[test]
    fn a_route_is_read_from_its_polyline() {
        let body = json!({"routes": [{
            "distanceMeters": 2500,
            "duration": "210.5s",
            "polyline": {"encodedPolyline": encode(&[(14.6, -90.5), (14.61, -90.5), (14.62, -90.5)])},
            "legs": [{"distanceMeters": 1200}, {"distanceMeters": 1300}]
        }]});
        let Answer::Route(parsed) = parse(200, body.to_string().as_bytes(), &stops(3)) else {
            panic!("not a route")
        };
        assert_eq!(parsed.distance_m, 2500.0);
        assert_eq!(parsed.duration_s, 210.5);
        assert_eq!(parsed.points[1], LatLon::new(14.61, -90.5));
    }

    #[test]
    fn errors_become_sentences() {
        let check = |http: u16, body: serde_json::Value, retry: bool, needle: &str| {
            let answer = parse(http, body.to_string().as_bytes(), &stops(3));
            crate::directions::tests::assert_failure(answer, retry, needle, &body.to_string());
        };
        let error = |code: u16, status: &str, message: &str, reason: Option<&str>| {
            let details: Vec<Value> = reason
                .map(|r| json!({"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": r, "domain": "googleapis.com"}))
                .into_iter()
                .collect();
            json!({"error": {"code": code, "message": message, "status": status, "details": details}})
        };
        check(
            400,
            error(
                400,
                "INVALID_ARGUMENT",
                "API key not valid. Please pass a valid API key.",
                Some("API_KEY_INVALID"),
            ),
            false,
            "no aceptó la clave",
        );
        check(
            403,
            error(
                403,
                "PERMISSION_DENIED",
                "Routes API has not been used in project 123 before or it is disabled.",
                Some("SERVICE_DISABLED"),
            ),
            false,
            "Routes API no está habilitada",
        );
        check(
            403,
            error(
                403,
                "PERMISSION_DENIED",
                "The request is missing a valid API key.",
                None,
            ),
            false,
            "PERMISSION_DENIED: The request is missing a valid API key.",
        );
        check(
            400,
            error(
                400,
                "INVALID_ARGUMENT",
                "Origin and destination must be set.",
                None,
            ),
            false,
            "inválida la solicitud (INVALID_ARGUMENT: Origin and destination must be set.)",
        );
        check(
            429,
            error(429, "RESOURCE_EXHAUSTED", "Quota exceeded", None),
            true,
            "cuota",
        );
        check(
            503,
            error(
                503,
                "UNAVAILABLE",
                "The service is currently unavailable.",
                None,
            ),
            true,
            "pasajero",
        );
        check(200, json!({}), false, "no encontró una ruta");
        check(502, json!({"x": 1}), true, "HTTP 502");
        check(
            200,
            json!({"routes": [{"distanceMeters": 10, "duration": "diez", "polyline": {"encodedPolyline": encode(&[(14.6, -90.5), (14.7, -90.5)])}, "legs": [{}, {}]}]}),
            false,
            "duración ilegible",
        );
        check(
            200,
            json!({"routes": [{"distanceMeters": 10, "duration": "5s", "polyline": {"encodedPolyline": encode(&[(14.6, -90.5), (14.7, -90.5)])}, "legs": [{}]}]}),
            false,
            "1 tramos para 3 paradas",
        );
    }
}
