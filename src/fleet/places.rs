//! Where a point is, in words: offline from the fleet's own places, online when configured.
//!
//! Owns two things. The offline phrase — "en CEDIS Zona 12" inside a geofence, else "a 2.3 km
//! de Bodega Mixco" or "a 350 m de la parada z10_oakland" for the nearest geofence or route
//! stop — needs nothing but the database. The online address comes from Google's Geocoding
//! API (`GOOGLE_MAPS_API_KEY`) or a Nominatim-compatible service (`FLOTA_GEOCODER_URL`), with
//! a two-second timeout (`FLOTA_GEOCODER_LIMITE_S`, handed in by the verb), a cache of answers (never of failures), a one-minute pause after a
//! failure so an offline machine stays fast, and the offline phrase as fallback. The tools
//! make no other HTTP call; this one goes through `net`, whose errors never carry the URL or
//! the key.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::geometry::earth::{LatLon, distance_m};
use crate::geometry::geofence::Geofence;
use crate::plumbing::mutex::lock;
use crate::plumbing::net::{Get, Http, Reply};

/// A named place a point can be described against.
#[derive(Debug, Clone)]
enum Place {
    Fence(Geofence),
    Stop { name: String, at: LatLon },
}

/// The offline gazetteer: the fleet's geofences and route stops.
#[derive(Debug, Clone, Default)]
pub struct Places {
    places: Vec<Place>,
}

impl Places {
    pub fn new(fences: &[Geofence], stops: &[(String, LatLon)]) -> Places {
        let mut places: Vec<Place> = fences.iter().cloned().map(Place::Fence).collect();
        let mut seen = std::collections::HashSet::new();
        for (name, at) in stops {
            if seen.insert(name.clone()) {
                places.push(Place::Stop {
                    name: name.clone(),
                    at: *at,
                });
            }
        }
        Places { places }
    }

    /// "en X" inside a geofence, else "a D de X" for the nearest place.
    pub fn phrase(&self, p: LatLon) -> String {
        let mut inside: Option<&Geofence> = None;
        let mut nearest: Option<(f64, String)> = None;
        for place in &self.places {
            let (d, label) = match place {
                Place::Fence(fence) => {
                    if fence.contains(p) {
                        // The smallest containing fence is the most specific.
                        let better =
                            inside.is_none_or(|current| area_hint(fence) < area_hint(current));
                        if better {
                            inside = Some(fence);
                        }
                        continue;
                    }
                    (distance_m(p, fence.centre()), fence.name.clone())
                }
                Place::Stop { name, at } => (distance_m(p, *at), format!("la parada {name}")),
            };
            if nearest.as_ref().is_none_or(|(best, _)| d < *best) {
                nearest = Some((d, label));
            }
        }
        if let Some(fence) = inside {
            return format!("en {}", fence.name);
        }
        match nearest {
            Some((d, label)) if d < 1000.0 => {
                format!("a {:.0} m de {label}", (d / 10.0).round() * 10.0)
            }
            Some((d, label)) => format!("a {:.1} km de {label}", d / 1000.0),
            None => format!("{:.5}, {:.5}", p.lat, p.lon),
        }
    }
}

impl Places {
    /// The name of the place `p` is at, if it is at one: the smallest geofence holding it,
    /// else a route stop within `within_m` (its underscores as spaces, as the map labels
    /// stops). For short labels; [`Places::phrase`] says where anything is.
    pub fn name_at(&self, p: LatLon, within_m: f64) -> Option<String> {
        let fence = self
            .places
            .iter()
            .filter_map(|place| match place {
                Place::Fence(fence) if fence.contains(p) => Some(fence),
                _ => None,
            })
            .min_by(|a, b| area_hint(a).total_cmp(&area_hint(b)));
        if let Some(fence) = fence {
            return Some(fence.name.clone());
        }
        self.places
            .iter()
            .filter_map(|place| match place {
                Place::Stop { name, at } => Some((distance_m(p, *at), name)),
                Place::Fence(_) => None,
            })
            .filter(|(d, _)| *d <= within_m)
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, name)| name.replace('_', " "))
    }
}

fn area_hint(fence: &Geofence) -> f64 {
    let (sw, ne) = fence.bbox();
    (ne.lat - sw.lat) * (ne.lon - sw.lon)
}

/// Google's Geocoding API, unless `FLOTA_GOOGLE_GEOCODE_URL` points elsewhere (a proxy).
pub const GOOGLE_GEOCODE_URL: &str = "https://maps.googleapis.com/maps/api/geocode/json";

/// Which online service answers addresses.
#[derive(Clone, PartialEq, Eq)]
pub enum Service {
    Google { key: String, url: String },
    Nominatim { url: String },
}

impl std::fmt::Debug for Service {
    // Never print the key, nor a URL's query, not even in a debug dump.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Service::Google { url, .. } => {
                write!(
                    f,
                    "Google {{ url: {:?}, key: *** }}",
                    crate::plumbing::net::public_url(url)
                )
            }
            Service::Nominatim { url } => {
                write!(
                    f,
                    "Nominatim {{ url: {:?} }}",
                    crate::plumbing::net::public_url(url)
                )
            }
        }
    }
}

impl Service {
    pub fn name(&self) -> &'static str {
        match self {
            Service::Google { .. } => "Google",
            Service::Nominatim { .. } => "Nominatim",
        }
    }
}

/// Where an address came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Online,
    Cache,
    Offline,
}

/// Online reverse geocoding with cache and fallback.
pub struct Geocoder {
    service: Option<Service>,
    client: Mutex<Option<Http>>,
    cache: Mutex<HashMap<(i64, i64), String>>,
    paused_until: Mutex<Option<Instant>>,
    timeout: Duration,
}

/// How long a lookup waits for the service unless told otherwise: an address is a nicety
/// next to a position, not worth holding the answer for.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);
/// A failure pauses online lookups this long.
const PAUSE: Duration = Duration::from_secs(60);
/// Largest answer read (one address is a few KB).
const MAX_BODY_BYTES: u64 = 1024 * 1024;

impl Geocoder {
    pub fn new(service: Option<Service>) -> Geocoder {
        Geocoder {
            service,
            client: Mutex::new(None),
            cache: Mutex::new(HashMap::new()),
            paused_until: Mutex::new(None),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The same geocoder waiting `timeout` for each answer instead of the default two
    /// seconds: `FLOTA_GEOCODER_LIMITE_S`, for a slow service or a loaded machine.
    pub fn with_timeout(mut self, timeout: Duration) -> Geocoder {
        self.timeout = timeout;
        self
    }

    pub fn service(&self) -> Option<&Service> {
        self.service.as_ref()
    }

    /// The address of `p`: online if configured and reachable, else `offline`.
    pub fn address(&self, p: LatLon, offline: &str) -> (String, Origin) {
        let Some(service) = &self.service else {
            return (offline.to_owned(), Origin::Offline);
        };
        // About 11 m: close enough to share an address.
        let key = ((p.lat * 1e4).round() as i64, (p.lon * 1e4).round() as i64);
        if let Some(hit) = lock(&self.cache).get(&key) {
            return (hit.clone(), Origin::Cache);
        }
        if lock(&self.paused_until).is_some_and(|until| Instant::now() < until) {
            return (offline.to_owned(), Origin::Offline);
        }
        match self.lookup(service, p) {
            Ok(address) => {
                lock(&self.cache).insert(key, address.clone());
                (address, Origin::Online)
            }
            Err(reason) => {
                crate::log_warn!(
                    "geocodificación {} sin respuesta: {reason}; se usa la referencia local",
                    service.name()
                );
                *lock(&self.paused_until) = Some(Instant::now() + PAUSE);
                (offline.to_owned(), Origin::Offline)
            }
        }
    }

    fn lookup(&self, service: &Service, p: LatLon) -> Result<String, String> {
        let http = {
            let mut slot = lock(&self.client);
            match slot.as_ref() {
                Some(http) => http.clone(),
                None => {
                    let http =
                        Http::new(Some(self.timeout), self.timeout).map_err(|e| e.to_string())?;
                    *slot = Some(http.clone());
                    http
                }
            }
        };
        let request = match service {
            Service::Google { key, url } => Get::new(url.as_str())
                .param("latlng", format!("{},{}", p.lat, p.lon))
                .secret("key", key.as_str())
                .param("language", "es"),
            Service::Nominatim { url } => {
                Get::new(format!("{}/reverse", url.trim_end_matches('/')))
                    .param("format", "jsonv2")
                    .param("lat", p.lat.to_string())
                    .param("lon", p.lon.to_string())
                    .param("zoom", "17")
                    .param("accept-language", "es")
            }
        }
        .max_bytes(MAX_BODY_BYTES);
        let body: Value = http
            .get(&request)
            .and_then(Reply::require_success)
            .and_then(|reply| reply.json())
            .map_err(|e| e.to_string())?;
        let address = match service {
            Service::Google { .. } => {
                let status = body["status"].as_str().unwrap_or("?");
                if status != "OK" {
                    return Err(format!("Google respondió el estado {status}"));
                }
                body["results"][0]["formatted_address"]
                    .as_str()
                    .map(str::to_owned)
            }
            Service::Nominatim { .. } => body["display_name"].as_str().map(str::to_owned),
        };
        address
            .filter(|a| !a.trim().is_empty())
            .ok_or_else(|| "respuesta sin dirección".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places() -> Places {
        Places::new(
            &[crate::geometry::geofence::tests::cedis()],
            &[("z10_oakland".into(), LatLon::new(14.599, -90.509))],
        )
    }

    #[test]
    fn offline_phrases() {
        let places = places();
        assert_eq!(
            places.phrase(LatLon::new(14.585, -90.545)),
            "en CEDIS Zona 12"
        );
        assert_eq!(
            places.phrase(LatLon::new(14.5990, -90.5120)),
            "a 320 m de la parada z10_oakland"
        );
        assert_eq!(
            places.phrase(LatLon::new(14.565, -90.545)),
            "a 2.2 km de CEDIS Zona 12"
        );
        assert_eq!(
            Places::default().phrase(LatLon::new(14.5, -90.5)),
            "14.50000, -90.50000"
        );
    }

    #[test]
    fn names_of_places_for_labels() {
        let places = places();
        let check = |lat: f64, lon: f64, expected: Option<&str>| {
            assert_eq!(
                places.name_at(LatLon::new(lat, lon), 150.0).as_deref(),
                expected,
                "{lat},{lon}"
            )
        };
        check(14.585, -90.545, Some("CEDIS Zona 12"));
        check(14.5990, -90.5100, Some("z10 oakland"));
        check(14.5990, -90.5120, None);
        check(14.565, -90.545, None);
    }

    #[test]
    fn a_debug_dump_shows_no_key_nor_configured_query() {
        let service = Service::Google {
            key: "CLAVE-MUY-SECRETA".into(),
            url: "http://proxy.local/geocode?signature=FIRMA-SECRETA".into(),
        };
        let shown = format!("{service:?}");
        assert!(
            !shown.contains("CLAVE") && !shown.contains("FIRMA"),
            "{shown}"
        );
    }

    #[test]
    fn without_a_service_the_offline_phrase_is_used() {
        let geocoder = Geocoder::new(None);
        assert_eq!(
            geocoder.address(LatLon::new(1.0, 2.0), "cerca"),
            ("cerca".into(), Origin::Offline)
        );
    }
}
