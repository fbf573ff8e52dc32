//! Every outbound HTTP request, and the one place where its failures become words.
//!
//! Owns the process-wide rustls setup (ring, installed once; reqwest panics without it), the
//! User-Agent, and [`Http::get`], [`Http::post`] and [`FleetHttp::post`] (many at once, for the
//! simulator's trackers): the only ways flota talks to a server.
//! What comes back is a [`Reply`] — status, `Retry-After`, a bounded body from which the
//! request's secrets have been scrubbed — and what goes wrong is a [`NetError`], a Spanish
//! clause that names no URL. A request's secrets are the values added with [`Get::secret`] or
//! [`Post::secret_header`] (an API key, in the query or in a header) and every value of the
//! configured URL's own query (a token a user pasted into `--url` or a tile template).
//! `reqwest` is named in this file and nowhere else (tests/it/tidy.rs), so no caller can hold,
//! let alone print, a library error carrying a URL; [`public_url`] is how a URL is shown.

use std::io::Read;
use std::sync::{Once, OnceLock};
use std::time::Duration;

/// Identifies flota to map and geocoding services, as their usage policies ask.
const BASE_AGENT: &str = concat!(
    "flota/",
    env!("CARGO_PKG_VERSION"),
    " (telemetria de flotas)"
);

/// The operator's contact (an e-mail or URL) for the User-Agent: like the log level, one per
/// process, set by the command line from `FLOTA_CONTACTO` before any request.
static CONTACT: OnceLock<String> = OnceLock::new();

/// Adds `contact` to the User-Agent of every later request; only the first call counts.
pub fn set_contact(contact: Option<&str>) {
    if let Some(contact) = contact.map(str::trim).filter(|c| !c.is_empty()) {
        let _ = CONTACT.set(contact.to_owned());
    }
}

pub fn user_agent() -> String {
    match CONTACT.get() {
        Some(contact) => format!("{BASE_AGENT} {contact}"),
        None => BASE_AGENT.to_owned(),
    }
}

static CRYPTO: Once = Once::new();

/// Installs ring as rustls's provider; harmless when called again.
fn install_crypto() {
    CRYPTO.call_once(|| {
        // Err means another provider is already installed, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Shorter values are not treated as secrets: scrubbing two letters out of a body would
/// corrupt it, and no real API key is that short.
const MIN_SECRET_LEN: usize = 6;
/// What a scrubbed secret becomes.
const MASK: &[u8] = b"***";

/// Why a request failed, in Spanish, without the URL. Each message reads as a clause after a
/// colon or inside parentheses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    #[error("no se pudo preparar el cliente HTTP")]
    Setup,
    #[error("la dirección del servicio no es una URL válida")]
    InvalidUrl,
    #[error("un encabezado de la solicitud tiene caracteres no válidos")]
    InvalidHeader,
    #[error("{0}")]
    Connect(Connect),
    #[error("el servidor no respondió a tiempo")]
    Timeout,
    #[error("el servidor redirigió demasiadas veces o a una dirección no válida")]
    Redirect,
    #[error("el servidor cerró la conexión sin responder")]
    Closed,
    #[error("la respuesta se cortó antes de terminar")]
    Interrupted,
    #[error("la respuesta supera el máximo de {} KB", max_bytes / 1024)]
    TooLarge { max_bytes: u64 },
    #[error("el servidor respondió HTTP {0}")]
    Status(u16),
    #[error("{}", json_clause(*problem, *line, *column))]
    Json {
        problem: JsonProblem,
        line: usize,
        column: usize,
    },
    #[error("la solicitud HTTP falló")]
    Other,
}

/// Why no connection was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Connect {
    #[error("el servidor rechazó la conexión")]
    Refused,
    #[error("no se encontró el servidor (DNS)")]
    NotFound,
    #[error("falló la conexión segura (TLS): certificado no válido o protocolo no admitido")]
    Tls,
    #[error("no se pudo conectar con el servidor")]
    Other,
}

/// What is wrong with a body that should be JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonProblem {
    /// Not JSON at all (HTML, plain text…).
    Syntax,
    /// JSON cut short.
    Incomplete,
    /// JSON, but not the expected shape.
    Shape,
}

fn json_clause(problem: JsonProblem, line: usize, column: usize) -> String {
    let what = match problem {
        JsonProblem::Syntax => "la respuesta no es JSON válido",
        JsonProblem::Incomplete => "la respuesta JSON llega incompleta",
        JsonProblem::Shape => "la respuesta JSON no tiene la forma esperada",
    };
    format!("{what} (línea {line}, columna {column})")
}

/// A response body's JSON error as a [`NetError`] (serde_json's own text is English).
pub fn json_error(e: &serde_json::Error) -> NetError {
    use serde_json::error::Category;
    let problem = match e.classify() {
        Category::Eof => JsonProblem::Incomplete,
        Category::Data => JsonProblem::Shape,
        Category::Syntax | Category::Io => JsonProblem::Syntax,
    };
    NetError::Json {
        problem,
        line: e.line(),
        column: e.column(),
    }
}

/// One GET: a URL (whose own query values are secret), parameters, limits.
#[derive(Clone)]
pub struct Get {
    url: String,
    /// `(name, value, secret)` in order.
    params: Vec<(String, String, bool)>,
    timeout: Option<Duration>,
    max_bytes: u64,
}

impl std::fmt::Debug for Get {
    // A debug dump is a message too: no secret, no configured query.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|(name, value, secret)| {
                format!("{name}={}", if *secret { "***" } else { value.as_str() })
            })
            .collect();
        f.debug_struct("Get")
            .field("url", &public_url(&self.url))
            .field("params", &params)
            .field("timeout", &self.timeout)
            .field("max_bytes", &self.max_bytes)
            .finish()
    }
}

impl Get {
    pub fn new(url: impl Into<String>) -> Get {
        Get {
            url: url.into(),
            params: Vec::new(),
            timeout: None,
            max_bytes: 1024 * 1024,
        }
    }

    /// A query parameter that may be shown.
    pub fn param(mut self, name: &str, value: impl Into<String>) -> Get {
        self.params.push((name.to_owned(), value.into(), false));
        self
    }

    /// A query parameter that must never be shown (an API key): scrubbed from the body too.
    pub fn secret(mut self, name: &str, value: impl Into<String>) -> Get {
        self.params.push((name.to_owned(), value.into(), true));
        self
    }

    /// This request's deadline, overriding the client's.
    pub fn timeout(mut self, timeout: Duration) -> Get {
        self.timeout = Some(timeout);
        self
    }

    /// Largest body accepted (default 1 MiB); a larger one is [`NetError::TooLarge`].
    pub fn max_bytes(mut self, max_bytes: u64) -> Get {
        self.max_bytes = max_bytes;
        self
    }

    /// The full URL and the secrets it carries.
    fn resolve(&self) -> Result<(reqwest::Url, Vec<String>), NetError> {
        let mut url = reqwest::Url::parse(&self.url).map_err(|_| NetError::InvalidUrl)?;
        let mut secrets: Vec<String> = url.query_pairs().map(|(_, v)| v.into_owned()).collect();
        if !self.params.is_empty() {
            let mut query = url.query_pairs_mut();
            for (name, value, _) in &self.params {
                query.append_pair(name, value);
            }
        }
        secrets.extend(
            self.params
                .iter()
                .filter(|(_, _, secret)| *secret)
                .map(|(_, value, _)| value.clone()),
        );
        Ok((url, secrets))
    }
}

/// One POST of a JSON body: a URL (whose own query values are secret), headers (some
/// secret: an API key travelling in a header is as secret as one in a query), limits.
#[derive(Clone)]
pub struct Post {
    url: String,
    /// `(name, value, secret)` in order.
    headers: Vec<(String, String, bool)>,
    body: Vec<u8>,
    timeout: Option<Duration>,
    max_bytes: u64,
}

impl std::fmt::Debug for Post {
    // As for `Get`: no secret header, no configured query.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<String> = self
            .headers
            .iter()
            .map(|(name, value, secret)| {
                format!("{name}: {}", if *secret { "***" } else { value.as_str() })
            })
            .collect();
        f.debug_struct("Post")
            .field("url", &public_url(&self.url))
            .field("headers", &headers)
            .field("body_bytes", &self.body.len())
            .field("timeout", &self.timeout)
            .field("max_bytes", &self.max_bytes)
            .finish()
    }
}

impl Post {
    /// A POST of `body` as `application/json`.
    pub fn json(url: impl Into<String>, body: &serde_json::Value) -> Post {
        Post {
            url: url.into(),
            headers: vec![(
                "Content-Type".to_owned(),
                "application/json".to_owned(),
                false,
            )],
            body: body.to_string().into_bytes(),
            timeout: None,
            max_bytes: 1024 * 1024,
        }
    }

    /// A header that may be shown.
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Post {
        self.headers.push((name.to_owned(), value.into(), false));
        self
    }

    /// A header that must never be shown (an API key): scrubbed from the reply's body too.
    pub fn secret_header(mut self, name: &str, value: impl Into<String>) -> Post {
        self.headers.push((name.to_owned(), value.into(), true));
        self
    }

    /// This request's deadline, overriding the client's.
    pub fn timeout(mut self, timeout: Duration) -> Post {
        self.timeout = Some(timeout);
        self
    }

    /// Largest body accepted (default 1 MiB); a larger one is [`NetError::TooLarge`].
    pub fn max_bytes(mut self, max_bytes: u64) -> Post {
        self.max_bytes = max_bytes;
        self
    }

    /// The URL and the secrets the request carries.
    fn resolve(&self) -> Result<(reqwest::Url, Vec<String>), NetError> {
        let url = reqwest::Url::parse(&self.url).map_err(|_| NetError::InvalidUrl)?;
        let mut secrets: Vec<String> = url.query_pairs().map(|(_, v)| v.into_owned()).collect();
        secrets.extend(
            self.headers
                .iter()
                .filter(|(_, _, secret)| *secret)
                .map(|(_, value, _)| value.clone()),
        );
        Ok((url, secrets))
    }

    /// The headers as reqwest takes them, the secret ones marked sensitive (never printed
    /// by the library either).
    fn header_map(&self) -> Result<reqwest::header::HeaderMap, NetError> {
        use reqwest::header::{HeaderName, HeaderValue};
        let mut map = reqwest::header::HeaderMap::new();
        for (name, value, secret) in &self.headers {
            let name =
                HeaderName::from_bytes(name.as_bytes()).map_err(|_| NetError::InvalidHeader)?;
            let mut value = HeaderValue::from_str(value).map_err(|_| NetError::InvalidHeader)?;
            value.set_sensitive(*secret);
            map.append(name, value);
        }
        Ok(map)
    }
}

/// A response: status, the server's `Retry-After` (seconds form), the body with every secret
/// of the request replaced by `***`.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub retry_after: Option<Duration>,
    pub body: Vec<u8>,
}

impl Reply {
    /// Itself when the status is 2xx, else [`NetError::Status`].
    pub fn require_success(self) -> Result<Reply, NetError> {
        if (200..300).contains(&self.status) {
            Ok(self)
        } else {
            Err(NetError::Status(self.status))
        }
    }

    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, NetError> {
        serde_json::from_slice(&self.body).map_err(|e| json_error(&e))
    }
}

/// An HTTP client; cheap to clone (one connection pool).
#[derive(Clone)]
pub struct Http {
    client: reqwest::blocking::Client,
}

impl Http {
    /// `timeout` bounds each whole request unless the request sets its own; `connect`
    /// bounds making the connection.
    pub fn new(timeout: Option<Duration>, connect: Duration) -> Result<Http, NetError> {
        install_crypto();
        let mut builder = reqwest::blocking::Client::builder()
            .user_agent(user_agent())
            .connect_timeout(connect);
        if let Some(timeout) = timeout {
            builder = builder.timeout(timeout);
        }
        let client = builder.build().map_err(|_| NetError::Setup)?;
        Ok(Http { client })
    }

    /// Sends `request`; any status is a [`Reply`], only a transport failure is an error.
    pub fn get(&self, request: &Get) -> Result<Reply, NetError> {
        let (url, secrets) = request.resolve()?;
        let mut builder = self.client.get(url);
        if let Some(timeout) = request.timeout {
            builder = builder.timeout(timeout);
        }
        receive(builder, request.max_bytes, &secrets)
    }

    /// Sends `request`; any status is a [`Reply`], only a transport failure is an error.
    pub fn post(&self, request: &Post) -> Result<Reply, NetError> {
        let (url, secrets) = request.resolve()?;
        let mut builder = self
            .client
            .post(url)
            .headers(request.header_map()?)
            .body(request.body.clone());
        if let Some(timeout) = request.timeout {
            builder = builder.timeout(timeout);
        }
        receive(builder, request.max_bytes, &secrets)
    }
}

/// Sends a built request and reads its answer: status, `Retry-After`, at most `max_bytes` of
/// body with `secrets` scrubbed.
fn receive(
    builder: reqwest::blocking::RequestBuilder,
    max_bytes: u64,
    secrets: &[String],
) -> Result<Reply, NetError> {
    let response = builder.send().map_err(|e| classify(&e))?;
    let status = response.status().as_u16();
    let retry_after = retry_after(response.headers());
    let mut body = Vec::new();
    response
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut body)
        .map_err(|e| classify_read(&e))?;
    if body.len() as u64 > max_bytes {
        return Err(NetError::TooLarge { max_bytes });
    }
    Ok(Reply {
        status,
        retry_after,
        body: scrub(body, secrets),
    })
}

/// An HTTP client for many requests in flight at once (a simulated fleet of trackers, each
/// sending its reports): asynchronous, on the caller's tokio runtime, with the same
/// User-Agent, [`NetError`]s and scrubbed bodies as [`Http`]. Cheap to clone (one pool).
#[derive(Clone)]
pub struct FleetHttp {
    client: reqwest::Client,
}

impl FleetHttp {
    /// `timeout` bounds each whole request, `connect` making a connection; up to
    /// `idle_per_host` kept-alive connections are pooled (one per tracker sending at once).
    pub fn new(
        timeout: Duration,
        connect: Duration,
        idle_per_host: usize,
    ) -> Result<FleetHttp, NetError> {
        install_crypto();
        let client = reqwest::Client::builder()
            .user_agent(user_agent())
            .connect_timeout(connect)
            .timeout(timeout)
            .pool_max_idle_per_host(idle_per_host)
            .build()
            .map_err(|_| NetError::Setup)?;
        Ok(FleetHttp { client })
    }

    /// POSTs to `request`'s URL with its parameters in the query and an empty body (as the
    /// OsmAnd protocol's trackers do); any status is a [`Reply`].
    pub async fn post(&self, request: &Get) -> Result<Reply, NetError> {
        let (url, secrets) = request.resolve()?;
        let mut builder = self.client.post(url);
        if let Some(timeout) = request.timeout {
            builder = builder.timeout(timeout);
        }
        let mut response = builder.send().await.map_err(|e| classify(&e))?;
        let status = response.status().as_u16();
        let retry_after = retry_after(response.headers());
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| classify(&e))? {
            body.extend_from_slice(&chunk);
            if body.len() as u64 > request.max_bytes {
                return Err(NetError::TooLarge {
                    max_bytes: request.max_bytes,
                });
            }
        }
        Ok(Reply {
            status,
            retry_after,
            body: scrub(body, &secrets),
        })
    }
}

/// A `Retry-After` given in seconds (the HTTP-date form is not honoured: the callers'
/// own back-off applies).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

/// A reqwest error as a [`NetError`]; only its kind is kept, never its text.
fn classify(e: &reqwest::Error) -> NetError {
    if e.is_timeout() {
        NetError::Timeout
    } else if e.is_redirect() {
        NetError::Redirect
    } else if e.is_builder() {
        NetError::InvalidUrl
    } else if e.is_connect() {
        NetError::Connect(connect_problem(e))
    } else if e.is_body() || e.is_decode() {
        NetError::Interrupted
    } else if e.is_request() {
        NetError::Closed
    } else {
        NetError::Other
    }
}

fn connect_problem(e: &reqwest::Error) -> Connect {
    if e.is_dns() {
        return Connect::NotFound;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(cause) = source {
        if cause.is::<rustls::Error>() {
            return Connect::Tls;
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return Connect::Refused;
            }
            if io
                .get_ref()
                .is_some_and(|inner| inner.is::<rustls::Error>())
            {
                return Connect::Tls;
            }
        }
        source = cause.source();
    }
    Connect::Other
}

/// A failure while reading the body: the deadline, or a cut.
fn classify_read(e: &std::io::Error) -> NetError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(cause) = source {
        let timed_out = cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
            || cause
                .downcast_ref::<reqwest::Error>()
                .is_some_and(reqwest::Error::is_timeout);
        if timed_out {
            return NetError::Timeout;
        }
        source = cause.source();
    }
    NetError::Interrupted
}

/// Replaces every secret — as given and as it travels form-encoded in a query — with `***`.
fn scrub(mut body: Vec<u8>, secrets: &[String]) -> Vec<u8> {
    for secret in secrets.iter().filter(|s| s.len() >= MIN_SECRET_LEN) {
        let encoded: String = reqwest::Url::parse_with_params("http://x/", [("s", secret)])
            .ok()
            .and_then(|u| u.query().map(|q| q.trim_start_matches("s=").to_owned()))
            .unwrap_or_default();
        for form in [secret.as_str(), encoded.as_str()] {
            if form.len() >= MIN_SECRET_LEN {
                body = replace_all(&body, form.as_bytes(), MASK);
            }
        }
    }
    body
}

fn replace_all(haystack: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut rest = haystack;
    while let Some(at) = rest.windows(needle.len()).position(|w| w == needle) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(with);
        rest = &rest[at + needle.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// A URL as it may be shown: scheme, host and path; a query or fragment becomes `?…`, and
/// a user or password is dropped.
pub fn public_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) => {
            let hidden = parsed.query().is_some() || parsed.fragment().is_some();
            parsed.set_query(None);
            parsed.set_fragment(None);
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            let mut shown = parsed.to_string();
            if hidden {
                shown.push_str("?…");
            }
            shown
        }
        Err(_) => match url.find(['?', '#', '@']) {
            Some(at) => format!("{}?…", &url[..at]),
            None => url.to_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_urls_keep_no_query_or_credentials() {
        let check = |url: &str, shown: &str| assert_eq!(public_url(url), shown, "{url}");
        check(
            "https://maps.googleapis.com/maps/api/directions/json",
            "https://maps.googleapis.com/maps/api/directions/json",
        );
        check(
            "http://127.0.0.1:5000/route?key=SECRETO&x=1",
            "http://127.0.0.1:5000/route?…",
        );
        check(
            "https://usuario:clave@osrm.example.org/x#frag",
            "https://osrm.example.org/x?…",
        );
        check("no es una url?token=SECRETO", "no es una url?…");
    }

    #[test]
    fn secrets_are_scrubbed_from_bodies_in_every_form() {
        let check = |body: &str, secrets: &[&str], expected: &str| {
            let secrets: Vec<String> = secrets.iter().map(|s| (*s).to_owned()).collect();
            assert_eq!(
                String::from_utf8(scrub(body.as_bytes().to_vec(), &secrets)).unwrap(),
                expected,
                "{body}"
            );
        };
        check(
            "GET /geocode?key=CLAVE-123456&language=es",
            &["CLAVE-123456"],
            "GET /geocode?key=***&language=es",
        );
        check(
            "token a b+c/d en a+b%2Bc%2Fd y a b+c/d",
            &["a b+c/d"],
            "token *** en *** y ***",
        );
        // Too short to be a key: left alone rather than corrupting the body.
        check(r#"{"lang": "es"}"#, &["es"], r#"{"lang": "es"}"#);
        check("sin secretos", &[], "sin secretos");
    }

    #[test]
    fn the_configured_query_is_secret_and_parameters_follow_it() {
        let get = Get::new("http://x/tiles/1/2/3.png?access_token=pk.ABCDEFG")
            .param("latlng", "14.6,-90.5")
            .secret("key", "CLAVE-123456");
        let (url, secrets) = get.resolve().unwrap();
        assert_eq!(
            url.as_str(),
            "http://x/tiles/1/2/3.png?access_token=pk.ABCDEFG&latlng=14.6%2C-90.5&key=CLAVE-123456"
        );
        assert_eq!(secrets, ["pk.ABCDEFG", "CLAVE-123456"]);
        let shown = format!("{get:?}");
        assert!(
            !shown.contains("ABCDEFG") && !shown.contains("CLAVE") && shown.contains("latlng"),
            "{shown}"
        );
        assert_eq!(
            Get::new("no es una url").resolve().unwrap_err(),
            NetError::InvalidUrl
        );
    }

    #[test]
    fn secret_headers_are_secrets() {
        let post = Post::json(
            "http://x/directions/v2:computeRoutes?firma=FIRMA-123456",
            &serde_json::json!({"origin": 1}),
        )
        .secret_header("X-Goog-Api-Key", "CLAVE-123456")
        .header("X-Goog-FieldMask", "routes.polyline");
        let (url, secrets) = post.resolve().unwrap();
        assert_eq!(url.path(), "/directions/v2:computeRoutes");
        assert_eq!(secrets, ["FIRMA-123456", "CLAVE-123456"]);
        let shown = format!("{post:?}");
        assert!(
            !shown.contains("CLAVE") && !shown.contains("FIRMA") && shown.contains("FieldMask"),
            "{shown}"
        );
        let headers = post.header_map().unwrap();
        assert!(headers["x-goog-api-key"].is_sensitive());
        assert!(!headers["x-goog-fieldmask"].is_sensitive());
        let bad = Post::json("http://x/", &serde_json::json!({})).header("X", "a\nb");
        assert_eq!(bad.header_map().unwrap_err(), NetError::InvalidHeader);
    }

    #[test]
    fn json_errors_are_spanish() {
        let check = |body: &str, expected: &str| {
            let e = serde_json::from_str::<Vec<u32>>(body).unwrap_err();
            assert_eq!(json_error(&e).to_string(), expected, "{body}");
        };
        check(
            "<html>",
            "la respuesta no es JSON válido (línea 1, columna 1)",
        );
        check(
            "[1, 2",
            "la respuesta JSON llega incompleta (línea 1, columna 5)",
        );
        check(
            r#"["a"]"#,
            "la respuesta JSON no tiene la forma esperada (línea 1, columna 4)",
        );
    }
}
