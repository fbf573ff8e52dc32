//! Online addresses through loopback mock services: Google's Geocoding API and a
//! Nominatim-compatible server, answered, hanging, or broken. The offline phrase must always
//! come back when the service fails. That the API key never leaks, whatever the failure, is
//! `redaction`'s matrix.

use std::time::Duration;

use serde_json::json;

use crate::ground_truth::fixture;
use crate::http_mock::{Mock, Reply};
use crate::support::{Server, flota_bin};

/// How the mock answers.
#[derive(Clone, Copy)]
enum Mode {
    Google,
    Nominatim,
    Hang,
    Garbage,
}

/// A loopback service answering in `mode`; returns its base URL and the mock (its
/// `lines()` are the requests with their User-Agent).
fn mock(mode: Mode) -> (String, Mock) {
    let mock = Mock::start(move |_| {
        match mode {
        Mode::Google => Reply::Json(200, json!({"status": "OK", "results": [{"formatted_address": "7a Avenida 1-23, Zona 1, Ciudad de Guatemala"}]}).to_string()),
        Mode::Nominatim => Reply::Json(200, json!({"display_name": "Calzada Roosevelt, Zona 11, Guatemala"}).to_string()),
        Mode::Garbage => Reply::Json(200, "<html>no es JSON</html>".to_owned()),
        // Longer than any test waits: the deadline, never the mock, ends the lookup.
        Mode::Hang => Reply::Hang(Duration::from_secs(600)),
    }
    });
    (mock.url.clone(), mock)
}

fn position(env: &[(&str, &str)]) -> (serde_json::Value, serde_json::Value) {
    let db = fixture("minimo").db.to_str().unwrap().to_owned();
    let mut server = Server::spawn_with_env(flota_bin(), &["servir", "--db", &db], env);
    server.initialize("2025-11-25");
    let first = server.call(1, "posicion_actual", json!({"placa": "P-123BCD"}));
    let second = server.call(2, "posicion_actual", json!({"placa": "P-123BCD"}));
    (
        first["result"]["structuredContent"].clone(),
        second["result"]["structuredContent"].clone(),
    )
}

#[test]
fn google_answers_are_used_and_cached() {
    let (url, seen) = mock(Mode::Google);
    let (first, second) = position(&[
        ("GOOGLE_MAPS_API_KEY", "CLAVE-SECRETA-123"),
        (
            "FLOTA_GOOGLE_GEOCODE_URL",
            &format!("{url}/maps/api/geocode/json"),
        ),
    ]);
    assert_eq!(
        first["direccion"],
        "7a Avenida 1-23, Zona 1, Ciudad de Guatemala"
    );
    assert_ne!(first["referencia"], first["direccion"]);
    assert_eq!(second["direccion"], first["direccion"]);
    let requests = seen.lines();
    assert_eq!(requests.len(), 1, "second call not cached: {requests:?}");
    let request = &requests[0];
    assert!(
        request.starts_with("GET /maps/api/geocode/json?"),
        "{request}"
    );
    assert!(
        request.contains("key=CLAVE-SECRETA-123") && request.contains("language=es"),
        "{request}"
    );
    let lat = first["lat"].as_f64().unwrap();
    assert!(request.contains(&format!("latlng={lat}%2C")), "{request}");
    assert!(
        request.to_lowercase().contains("user-agent: flota/"),
        "{request}"
    );
}

/// `FLOTA_CONTACTO` reaches the User-Agent of the requests, as the services' usage policies
/// ask of heavy users.
#[test]
fn the_operators_contact_rides_in_the_user_agent() {
    let (url, seen) = mock(Mode::Nominatim);
    position(&[
        ("FLOTA_GEOCODER_URL", &url),
        ("FLOTA_CONTACTO", " flota@example.org "),
    ]);
    let request = seen.lines()[0].clone();
    assert!(
        request.contains("user-agent: flota/")
            && request.ends_with("(telemetria de flotas) flota@example.org"),
        "{request}"
    );
}

#[test]
fn nominatim_answers_are_used() {
    let (url, seen) = mock(Mode::Nominatim);
    let (first, _) = position(&[("FLOTA_GEOCODER_URL", &url)]);
    assert_eq!(first["direccion"], "Calzada Roosevelt, Zona 11, Guatemala");
    let request = seen.lines()[0].clone();
    assert!(
        request.starts_with("GET /reverse?format=jsonv2&lat="),
        "{request}"
    );
    assert!(
        request.contains("accept-language=es") && request.contains("zoom=17"),
        "{request}"
    );
}

#[test]
fn a_hanging_or_broken_service_falls_back_to_the_local_reference() {
    for mode in [Mode::Hang, Mode::Garbage] {
        let (url, seen) = mock(mode);
        // The deadline is what this test is about: a short one, set here (the harness raises
        // it for every other test), against a service that never answers.
        let (first, second) = position(&[
            ("GOOGLE_MAPS_API_KEY", "CLAVE-SECRETA-123"),
            ("FLOTA_GOOGLE_GEOCODE_URL", &url),
            ("FLOTA_GEOCODER_LIMITE_S", "0.5"),
        ]);
        assert_eq!(first["direccion"], first["referencia"]);
        assert_eq!(second["direccion"], second["referencia"]);
        // After a failure the service is paused: the second call did not ask again.
        assert_eq!(seen.lines().len(), 1);
    }
}
