//! Who may talk to the HTTP endpoint: the bearer token, the `Origin` and `Host` checks
//! against DNS rebinding, and the OAuth Protected Resource Metadata (RFC 9728) that tells a
//! client where to get a token.
//!
//! Owns every refusal that happens before a message is read (401, 403, 421) and the metadata
//! document; knows nothing of sessions or JSON-RPC. The token is compared in constant time.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The well-known path of the metadata document for an endpoint at `/mcp`, and the root one.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// What the guard checks.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    /// The bearer token every request must carry; `None`: no authentication.
    pub token: Option<String>,
    /// Hosts (`name` or `name:port`, lower case) accepted in `Host`; empty: any.
    pub hosts: Vec<String>,
    /// Origins (`scheme://host[:port]`, lower case) accepted in `Origin` besides loopback ones.
    pub origins: Vec<String>,
    /// The authorization servers named in the metadata document.
    pub authorization_servers: Vec<String>,
    /// The endpoint's public URL (`https://host/mcp`), when it differs from what `Host` says.
    pub public_url: Option<String>,
    /// The endpoint's path, e.g. `/mcp`.
    pub path: String,
}

/// Compares in time that depends only on the lengths, never on where the bytes differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Whether a host name (without port) is this machine's loopback.
pub fn is_loopback_name(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `name` of `name:port`, `[::1]:80` → `[::1]`.
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

impl Guard {
    /// The refusal for a request, if any: a bad `Host` or `Origin` (403), then a missing or
    /// wrong token (401 with the metadata's address).
    pub fn check(&self, headers: &HeaderMap) -> Option<Response> {
        if let Some(refusal) = self.check_host_and_origin(headers) {
            return Some(refusal);
        }
        let Some(token) = &self.token else {
            return None;
        };
        let presented = header_text(headers, header::AUTHORIZATION)
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim);
        match presented {
            Some(p) if constant_time_eq(p.as_bytes(), token.as_bytes()) => None,
            Some(_) => Some(self.unauthorized(headers, Some("invalid_token"))),
            None => Some(self.unauthorized(headers, None)),
        }
    }

    fn check_host_and_origin(&self, headers: &HeaderMap) -> Option<Response> {
        let host = header_text(headers, header::HOST).map(str::to_ascii_lowercase);
        if !self.hosts.is_empty() {
            let allowed = host
                .as_deref()
                .is_some_and(|h| self.hosts.iter().any(|a| a == h || a == host_name(h)));
            if !allowed {
                return Some(forbidden(format!(
                    "host no permitido: {}",
                    host.as_deref().unwrap_or("(ninguno)")
                )));
            }
        }
        let origin = header_text(headers, header::ORIGIN)?.to_ascii_lowercase();
        if origin == "null" || !self.origin_allowed(&origin) {
            return Some(forbidden(format!("origen no permitido: {origin}")));
        }
        None
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        if self.origins.iter().any(|o| o == origin) {
            return true;
        }
        if let Some(public) = self.public_origin()
            && public == origin
        {
            return true;
        }
        let Some((scheme, rest)) = origin.split_once("://") else {
            return false;
        };
        (scheme == "http" || scheme == "https") && is_loopback_name(host_name(rest))
    }

    fn public_origin(&self) -> Option<String> {
        let url = self.public_url.as_deref()?;
        let (scheme, rest) = url.split_once("://")?;
        let authority = rest.split('/').next()?;
        Some(format!("{scheme}://{authority}").to_ascii_lowercase())
    }

    /// The endpoint's canonical URL: the public one, else from `Host`.
    fn resource_url(&self, headers: &HeaderMap) -> String {
        if let Some(url) = &self.public_url {
            return url.trim_end_matches('/').to_owned();
        }
        let host = header_text(headers, header::HOST).unwrap_or("127.0.0.1");
        format!("http://{host}{}", self.path)
    }

    /// Where the metadata document of this endpoint lives.
    fn metadata_url(&self, headers: &HeaderMap) -> String {
        let resource = self.resource_url(headers);
        let (scheme, rest) = resource.split_once("://").unwrap_or(("http", &resource));
        let authority = rest.split('/').next().unwrap_or(rest);
        format!("{scheme}://{authority}{METADATA_PATH}{}", self.path)
    }

    fn unauthorized(&self, headers: &HeaderMap, error: Option<&str>) -> Response {
        let mut challenge = format!(
            "Bearer resource_metadata=\"{}\"",
            self.metadata_url(headers)
        );
        if let Some(error) = error {
            challenge.push_str(&format!(", error=\"{error}\""));
        }
        let body = json!({
            "error": error.unwrap_or("unauthorized"),
            "error_description": "falta el token de acceso o no es válido: envíe \
                'Authorization: Bearer <token>'",
        });
        let mut response = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }

    /// The RFC 9728 document for this endpoint.
    pub fn metadata(&self, headers: &HeaderMap) -> Value {
        let mut document = json!({
            "resource": self.resource_url(headers),
            "bearer_methods_supported": ["header"],
            "resource_name": "servidor MCP",
        });
        if !self.authorization_servers.is_empty() {
            document["authorization_servers"] = json!(self.authorization_servers);
        }
        document
    }
}

fn forbidden(reason: String) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {
        "code": -32600, "message": "Invalid Request", "data": reason}});
    (StatusCode::FORBIDDEN, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn status(guard: &Guard, pairs: &[(&'static str, &str)]) -> u16 {
        guard
            .check(&headers(pairs))
            .map_or(200, |r| r.status().as_u16())
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }

    #[test]
    fn the_token_is_required_on_every_request() {
        let guard = Guard {
            token: Some("secreto".into()),
            path: "/mcp".into(),
            ..Guard::default()
        };
        assert_eq!(status(&guard, &[]), 401);
        assert_eq!(status(&guard, &[("authorization", "Bearer otro")]), 401);
        assert_eq!(status(&guard, &[("authorization", "Basic secreto")]), 401);
        assert_eq!(status(&guard, &[("authorization", "Bearer secreto")]), 200);
        let refusal = guard
            .check(&headers(&[("host", "127.0.0.1:8765")]))
            .unwrap();
        let challenge = refusal.headers()[header::WWW_AUTHENTICATE]
            .to_str()
            .unwrap();
        assert_eq!(
            challenge,
            "Bearer resource_metadata=\"http://127.0.0.1:8765/.well-known/oauth-protected-resource/mcp\""
        );
    }

    #[test]
    fn foreign_origins_and_hosts_are_refused() {
        let guard = Guard {
            hosts: vec!["localhost".into(), "127.0.0.1".into()],
            origins: vec!["https://panel.ejemplo.org".into()],
            path: "/mcp".into(),
            ..Guard::default()
        };
        for (pairs, expected) in [
            (vec![("host", "127.0.0.1:8765")], 200),
            (
                vec![
                    ("host", "localhost:3000"),
                    ("origin", "http://localhost:3000"),
                ],
                200,
            ),
            (
                vec![
                    ("host", "localhost"),
                    ("origin", "https://panel.ejemplo.org"),
                ],
                200,
            ),
            (
                vec![("host", "localhost"), ("origin", "http://evil.example.com")],
                403,
            ),
            (vec![("host", "localhost"), ("origin", "null")], 403),
            (vec![("host", "evil.example.com")], 403),
            (vec![], 403),
        ] {
            assert_eq!(status(&guard, &pairs), expected, "{pairs:?}");
        }
    }

    #[test]
    fn metadata_names_the_resource_and_its_servers() {
        let guard = Guard {
            public_url: Some("https://mcp.ejemplo.org/mcp".into()),
            authorization_servers: vec!["https://id.ejemplo.org".into()],
            path: "/mcp".into(),
            ..Guard::default()
        };
        let document = guard.metadata(&HeaderMap::new());
        assert_eq!(document["resource"], "https://mcp.ejemplo.org/mcp");
        assert_eq!(
            document["authorization_servers"][0],
            "https://id.ejemplo.org"
        );
        assert_eq!(
            guard.metadata_url(&HeaderMap::new()),
            "https://mcp.ejemplo.org/.well-known/oauth-protected-resource/mcp"
        );
    }
}
