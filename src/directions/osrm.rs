//! An OSRM `route` service: the request (`/route/v1/{perfil}/lon,lat;lon,lat…`, full
//! polyline geometry) and the reading of its answer, error codes included.
//!
//! Owns OSRM's JSON shapes only. OSRM puts longitude first in the URL and answers errors with
//! HTTP 400 and a JSON `code`, which is read before the HTTP status.

use serde::Deserialize;

use super::{Answer, Parsed, decode, read_answer, retryable_http, with_message};
use crate::geometry::route::StopFile;
use crate::plumbing::net::Get;

pub(super) fn request(url: &str, profile: &str, stops: &[StopFile]) -> Get {
    let coordinates: Vec<String> = stops
        .iter()
        .map(|s| format!("{},{}", s.lon, s.lat))
        .collect();
    let base = url.trim_end_matches('/');
    // Accept both a server root and a URL that already names the service.
    let service = if base.contains("/route/v1/") {
        base.to_owned()
    } else {
        format!("{base}/route/v1/{profile}")
    };
    Get::new(format!("{service}/{}", coordinates.join(";")))
        .param("overview", "full")
        .param("geometries", "polyline")
        .param("steps", "false")
        .param("alternatives", "false")
}

#[derive(Deserialize)]
struct Response {
    code: String,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    routes: Vec<Route>,
}

#[derive(Deserialize)]
struct Route {
    geometry: String,
    distance: f64,
    duration: f64,
}

pub(super) fn parse(http_status: u16, body: &[u8]) -> Answer {
    let response: Response = match read_answer(http_status, body, "OSRM") {
        Ok(r) => r,
        Err(answer) => return answer,
    };
    let detail = with_message(&response.code, response.message.as_deref());
    match response.code.as_str() {
        "Ok" => {}
        "NoRoute" => {
            return Answer::Fail(format!(
                "OSRM no encontró una ruta entre las paradas ({detail})"
            ));
        }
        "NoSegment" => {
            return Answer::Fail(format!(
                "OSRM no halló una calle cerca de alguna parada ({detail})"
            ));
        }
        "TooBig" => {
            return Answer::Fail(format!(
                "OSRM rechazó la solicitud por demasiado grande ({detail})"
            ));
        }
        _ if retryable_http(http_status) => {
            return Answer::Retry(format!("OSRM respondió HTTP {http_status} ({detail})"));
        }
        _ => {
            return Answer::Fail(format!("OSRM rechazó la solicitud ({detail})"));
        }
    }
    let Some(route) = response.routes.into_iter().next() else {
        return Answer::Fail("OSRM respondió Ok sin ninguna ruta".into());
    };
    match decode(&route.geometry) {
        Ok(points) => Answer::Route(Parsed {
            points,
            distance_m: route.distance,
            duration_s: route.duration,
        }),
        Err(reason) => Answer::Fail(format!("OSRM: {reason}")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn codes_become_sentences() {
        let check = |body: serde_json::Value, http: u16, retry: bool, needle: &str| {
            let answer = parse(http, body.to_string().as_bytes());
            crate::directions::tests::assert_failure(answer, retry, needle, &body.to_string());
        };
        check(
            json!({"code": "NoRoute", "message": "Impossible route between points"}),
            400,
            false,
            "Impossible route",
        );
        check(
            json!({"code": "NoSegment", "message": "Could not find a matching segment for coordinate 1"}),
            400,
            false,
            "coordinate 1",
        );
        check(
            json!({"code": "InvalidQuery", "message": "Query string malformed close to position 28"}),
            400,
            false,
            "InvalidQuery",
        );
        check(json!({"code": "InvalidValue"}), 400, false, "InvalidValue");
        check(json!({"code": "TooBig"}), 400, false, "demasiado grande");
        check(
            json!({"code": "Ok", "routes": []}),
            200,
            false,
            "sin ninguna ruta",
        );
        check(
            json!({"code": "Ok", "routes": [{"geometry": "\u{1}", "distance": 1.0, "duration": 1.0}]}),
            200,
            false,
            "polilínea ilegible",
        );
        check(json!({"message": "x"}), 502, true, "HTTP 502");
    }

    #[test]
    fn a_route_is_read() {
        let body = json!({"code": "Ok", "routes": [{"geometry": "_p~iF~ps|U_ulLnnqC", "distance": 1234.5, "duration": 99.6, "legs": []}], "waypoints": []});
        let Answer::Route(parsed) = parse(200, body.to_string().as_bytes()) else {
            panic!()
        };
        assert_eq!(parsed.points.len(), 2);
        assert!((parsed.points[0].lat - 38.5).abs() < 1e-9);
        assert!((parsed.points[0].lon + 120.2).abs() < 1e-9);
        assert_eq!(parsed.distance_m, 1234.5);
    }
}
