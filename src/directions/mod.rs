//! Directions services: the road geometry between a route's stops, from Google's Routes API
//! (`computeRoutes`, the default with a key), Google's legacy Directions API (for projects that
//! still have it) or an OSRM `route` service.
//!
//! Owns the HTTP conversation — request building, bounded retries with backoff, response
//! parsing into a [`Directions`], and one Spanish sentence per failure. It knows nothing of
//! files: `flota rutas` decides what to write. The API key travels only in the request:
//! requests go through `net`, whose errors never carry the URL and whose bodies come back
//! with the key scrubbed, and a provider's URL is shown only as `net::public_url`.

mod google;
mod google_routes;
mod osrm;

use std::time::Duration;

use crate::geometry::earth::LatLon;
use crate::geometry::route::StopFile;
use crate::plumbing::net::{Get, Http, NetError, Post, Reply, public_url};

/// Google's Routes API endpoint (`FLOTA_GOOGLE_ROUTES_URL` overrides it, for tests and
/// proxies).
pub const GOOGLE_ROUTES_URL: &str = "https://routes.googleapis.com/directions/v2:computeRoutes";
/// Google's legacy Directions API endpoint (`FLOTA_GOOGLE_DIRECTIONS_URL` overrides it).
pub const GOOGLE_DIRECTIONS_URL: &str = "https://maps.googleapis.com/maps/api/directions/json";
/// Largest response body read (a long route with every step is a few hundred KB).
const MAX_BODY_BYTES: u64 = 16 * 1024 * 1024;
/// Longest `Retry-After` honoured; a server asking for more is treated as a failure.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// Where directions come from.
#[derive(Clone, PartialEq, Eq)]
pub enum Provider {
    /// The Routes API: what a Google Cloud project created today can enable.
    GoogleRoutes {
        key: String,
        url: String,
    },
    /// The legacy Directions API, for projects that still have it enabled.
    GoogleDirections {
        key: String,
        url: String,
    },
    Osrm {
        url: String,
        profile: String,
    },
}

impl std::fmt::Debug for Provider {
    // Never print the key nor a URL's query, not even in a debug dump.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Provider::GoogleRoutes { url, .. } => {
                write!(f, "GoogleRoutes {{ url: {:?}, key: *** }}", public_url(url))
            }
            Provider::GoogleDirections { url, .. } => {
                write!(
                    f,
                    "GoogleDirections {{ url: {:?}, key: *** }}",
                    public_url(url)
                )
            }
            Provider::Osrm { url, profile } => {
                write!(f, "Osrm {{ url: {:?}, {profile:?} }}", public_url(url))
            }
        }
    }
}

impl Provider {
    /// The `fuente` a route file records.
    pub fn source(&self) -> &'static str {
        match self {
            Provider::GoogleRoutes { .. } => "google_routes",
            Provider::GoogleDirections { .. } => "google_directions",
            Provider::Osrm { .. } => "osrm",
        }
    }

    /// How the provider is named in messages: the URL without its query.
    pub fn describe(&self) -> String {
        match self {
            Provider::GoogleRoutes { url, .. } if url == GOOGLE_ROUTES_URL => {
                "Google Routes API".into()
            }
            Provider::GoogleRoutes { url, .. } => {
                format!("Google Routes API en {}", public_url(url))
            }
            Provider::GoogleDirections { url, .. } if url == GOOGLE_DIRECTIONS_URL => {
                "Google Directions API (heredada)".into()
            }
            Provider::GoogleDirections { url, .. } => {
                format!("Google Directions API (heredada) en {}", public_url(url))
            }
            Provider::Osrm { url, profile } => {
                format!("OSRM en {} (perfil {profile})", public_url(url))
            }
        }
    }

    /// Stops a single request may carry.
    fn max_stops(&self) -> usize {
        match self {
            // Origin, destination and at most 25 waypoints (intermediates), in both APIs.
            Provider::GoogleRoutes { .. } | Provider::GoogleDirections { .. } => 27,
            // The public demo server's default `max-viaroute-size` is far larger; 100 keeps
            // URLs reasonable.
            Provider::Osrm { .. } => 100,
        }
    }
}

/// The road between the stops, as a provider routed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Directions {
    /// Full-resolution geometry, consecutive duplicates removed.
    pub points: Vec<LatLon>,
    pub distance_m: u64,
    pub duration_s: u64,
    /// Requests it took (1 when the first answer was good).
    pub attempts: u32,
}

/// Why a route could not be had: one sentence, key-free.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DirectionsError(pub String);

/// Retries on 429, 5xx and the provider's "try again" statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first request.
    pub retries: u32,
    /// Wait before the first retry; doubled each time, unless the server says `Retry-After`.
    pub first_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            retries: 3,
            first_wait: Duration::from_secs(1),
        }
    }
}

/// What one response means.
#[derive(Debug, PartialEq)]
enum Answer {
    Route(Parsed),
    /// Worth asking again (rate limit, transient server error).
    Retry(String),
    Fail(String),
}

/// A provider's answer before the geometry is checked.
#[derive(Debug, PartialEq)]
struct Parsed {
    points: Vec<LatLon>,
    distance_m: f64,
    duration_s: f64,
}

/// A directions client for one provider.
pub struct Client {
    provider: Provider,
    http: Http,
    retry: RetryPolicy,
}

impl Client {
    /// `timeout` bounds each request, connection included.
    pub fn new(
        provider: Provider,
        timeout: Duration,
        retry: RetryPolicy,
    ) -> Result<Client, DirectionsError> {
        let http = Http::new(Some(timeout), timeout.min(Duration::from_secs(5)))
            .map_err(|e| DirectionsError(e.to_string()))?;
        Ok(Client {
            provider,
            http,
            retry,
        })
    }

    pub fn provider(&self) -> &Provider {
        &self.provider
    }

    /// The road from the first stop to the last through the others, in order.
    pub fn route(&self, stops: &[StopFile]) -> Result<Directions, DirectionsError> {
        if stops.len() < 2 {
            return Err(DirectionsError(
                "se necesitan al menos dos paradas para pedir una ruta".into(),
            ));
        }
        if stops.len() > self.provider.max_stops() {
            return Err(DirectionsError(format!(
                "{} paradas; {} admite como máximo {} por solicitud",
                stops.len(),
                self.provider.describe(),
                self.provider.max_stops()
            )));
        }
        let request = match &self.provider {
            Provider::GoogleRoutes { key, url } => {
                Request::Post(google_routes::request(url, key, stops).max_bytes(MAX_BODY_BYTES))
            }
            Provider::GoogleDirections { key, url } => {
                Request::Get(google::request(url, key, stops).max_bytes(MAX_BODY_BYTES))
            }
            Provider::Osrm { url, profile } => {
                Request::Get(osrm::request(url, profile, stops).max_bytes(MAX_BODY_BYTES))
            }
        };
        let mut wait = self.retry.first_wait;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let (answer, retry_after) = self.once(&request, stops);
            let reason = match answer {
                Answer::Route(parsed) => return finish(parsed, attempt),
                Answer::Fail(reason) => return Err(DirectionsError(reason)),
                Answer::Retry(reason) => reason,
            };
            if attempt > self.retry.retries {
                let tries = if attempt == 1 {
                    "1 intento".to_string()
                } else {
                    format!("{attempt} intentos")
                };
                return Err(DirectionsError(format!("{reason} (tras {tries})")));
            }
            let pause = match retry_after {
                Some(asked) if asked > MAX_RETRY_AFTER => {
                    return Err(DirectionsError(format!(
                        "{reason}; el servidor pide esperar {} s",
                        asked.as_secs()
                    )));
                }
                Some(asked) => asked,
                None => wait,
            };
            std::thread::sleep(pause);
            wait = wait.saturating_mul(2);
        }
    }

    /// One request: what it means, and the server's `Retry-After` if any.
    fn once(&self, request: &Request, stops: &[StopFile]) -> (Answer, Option<Duration>) {
        let who = self.provider.describe();
        let sent: Result<Reply, NetError> = match request {
            Request::Get(get) => self.http.get(get),
            Request::Post(post) => self.http.post(post),
        };
        let reply = match sent {
            Ok(reply) => reply,
            Err(NetError::Timeout) => {
                return (Answer::Fail(format!("{who} no respondió a tiempo")), None);
            }
            // A cut answer, or a connection dropped before answering (a restarting
            // server, a proxy recycling connections), may come whole next time.
            Err(e @ (NetError::Interrupted | NetError::Closed)) => {
                return (Answer::Retry(format!("{who}: {e}")), None);
            }
            Err(e @ NetError::Connect(_)) => {
                return (
                    Answer::Fail(format!("no se pudo conectar con {who}: {e}")),
                    None,
                );
            }
            Err(e) => return (Answer::Fail(format!("{who}: {e}")), None),
        };
        let answer = match &self.provider {
            Provider::GoogleRoutes { .. } => google_routes::parse(reply.status, &reply.body, stops),
            Provider::GoogleDirections { .. } => google::parse(reply.status, &reply.body, stops),
            Provider::Osrm { .. } => osrm::parse(reply.status, &reply.body),
        };
        (answer, reply.retry_after)
    }
}

/// One provider's request, in the method its API takes.
enum Request {
    Get(Get),
    Post(Post),
}

/// Checks a parsed answer into [`Directions`].
fn finish(parsed: Parsed, attempts: u32) -> Result<Directions, DirectionsError> {
    let mut points = parsed.points;
    points.dedup();
    if points.len() < 2 {
        return Err(DirectionsError(
            "la respuesta no trae geometría (menos de dos puntos)".into(),
        ));
    }
    if let Some(bad) = points
        .iter()
        .find(|p| !(-90.0..=90.0).contains(&p.lat) || !(-180.0..=180.0).contains(&p.lon))
    {
        return Err(DirectionsError(format!(
            "la respuesta trae una coordenada imposible ({}, {})",
            bad.lat, bad.lon
        )));
    }
    let positive = |v: f64| v.is_finite() && v >= 0.5;
    if !positive(parsed.distance_m) || !positive(parsed.duration_s) {
        return Err(DirectionsError(format!(
            "la respuesta trae distancia {} m y duración {} s; se esperaban valores positivos",
            parsed.distance_m, parsed.duration_s
        )));
    }
    Ok(Directions {
        points,
        distance_m: parsed.distance_m.round() as u64,
        duration_s: parsed.duration_s.round() as u64,
        attempts,
    })
}

/// Decodes a Google-format polyline of precision 1e-5.
fn decode(encoded: &str) -> Result<Vec<LatLon>, String> {
    polyline::decode_polyline(encoded, crate::geometry::route::POLYLINE_PRECISION)
        .map(|line| line.0.iter().map(|c| LatLon::new(c.y, c.x)).collect())
        .map_err(|e| {
            format!(
                "polilínea ilegible en la respuesta: {}",
                crate::geometry::route::polyline_problem(&e)
            )
        })
}

/// The JSON of a response, or a sentence saying what came instead.
fn json_body<T: serde::de::DeserializeOwned>(body: &[u8], who: &str) -> Result<T, String> {
    serde_json::from_slice(body).map_err(|e| {
        let start: String = String::from_utf8_lossy(&body[..body.len().min(60)])
            .chars()
            .filter(|c| !c.is_control())
            .collect();
        format!(
            "{who} respondió algo que no es el JSON esperado ({}); empieza con «{start}»",
            crate::plumbing::net::json_error(&e)
        )
    })
}

/// A provider's JSON answer. A body that is not that JSON is blamed on the HTTP status when it
/// is not 200 (worth another try when the status says so), else on the provider.
fn read_answer<T: serde::de::DeserializeOwned>(
    http_status: u16,
    body: &[u8],
    who: &str,
) -> Result<T, Answer> {
    json_body(body, who).map_err(|reason| {
        if retryable_http(http_status) {
            Answer::Retry(format!("{who} respondió HTTP {http_status}"))
        } else if http_status != 200 {
            Answer::Fail(format!("{who} respondió HTTP {http_status}"))
        } else {
            Answer::Fail(reason)
        }
    })
}

/// A provider's status code with its own explanation, when it sent one: `code: message`.
fn with_message(code: &str, message: Option<&str>) -> String {
    match message.map(str::trim) {
        Some(m) if !m.is_empty() => format!("{code}: {m}"),
        _ => code.to_owned(),
    }
}

/// The HTTP statuses worth retrying.
fn retryable_http(status: u16) -> bool {
    status == 429 || (500..600).contains(&status)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A provider's answer is a failure, worth a retry or not as `retry` says, whose sentence
    /// contains `needle`; `case` names the input in messages.
    pub(super) fn assert_failure(answer: Answer, retry: bool, needle: &str, case: &str) {
        let (got_retry, text) = match answer {
            Answer::Retry(t) => (true, t),
            Answer::Fail(t) => (false, t),
            Answer::Route(_) => panic!("{case}: a route"),
        };
        assert_eq!(got_retry, retry, "{case}: {text}");
        assert!(text.contains(needle), "{case}: {text}");
    }

    #[test]
    fn finish_rejects_what_cannot_be_a_route() {
        let check = |points: Vec<LatLon>, distance_m: f64, duration_s: f64, ok: bool| {
            let got = finish(
                Parsed {
                    points,
                    distance_m,
                    duration_s,
                },
                1,
            );
            assert_eq!(got.is_ok(), ok, "{got:?}");
        };
        let a = LatLon::new(14.6, -90.5);
        let b = LatLon::new(14.61, -90.51);
        check(vec![a, b], 1500.0, 120.0, true);
        check(vec![a, a, a], 1500.0, 120.0, false);
        check(vec![a, LatLon::new(95.0, 0.0)], 1500.0, 120.0, false);
        check(vec![a, b], 0.0, 120.0, false);
        check(vec![a, b], 1500.0, f64::NAN, false);
    }

    #[test]
    fn the_key_never_shows_in_debug_output_or_descriptions() {
        let provider = Provider::GoogleRoutes {
            key: "CLAVE-MUY-SECRETA".into(),
            url: "http://proxy.local/directions?firma=FIRMA-SECRETA".into(),
        };
        let legacy = Provider::GoogleDirections {
            key: "CLAVE-MUY-SECRETA".into(),
            url: "http://proxy.local/directions?firma=FIRMA-SECRETA".into(),
        };
        let osrm = Provider::Osrm {
            url: "http://osrm.local/?token=FIRMA-SECRETA".into(),
            profile: "driving".into(),
        };
        for shown in [
            format!("{provider:?}"),
            provider.describe(),
            format!("{osrm:?}"),
            osrm.describe(),
            format!("{legacy:?}"),
            legacy.describe(),
        ] {
            assert!(
                !shown.contains("CLAVE") && !shown.contains("FIRMA"),
                "{shown}"
            );
        }
    }

    #[test]
    fn too_many_stops_fail_before_any_request() {
        let provider = Provider::GoogleRoutes {
            key: "k".into(),
            // Nothing listens here; a request would fail differently.
            url: "http://127.0.0.1:9/".into(),
        };
        let client = Client::new(provider, Duration::from_secs(1), RetryPolicy::default()).unwrap();
        let stops: Vec<StopFile> = (0..30)
            .map(|i| StopFile {
                nombre: format!("p{i}"),
                lat: 14.6,
                lon: -90.5 + f64::from(i) * 0.001,
            })
            .collect();
        let err = client.route(&stops).unwrap_err();
        assert!(err.0.contains("30 paradas"), "{err}");
    }
}
