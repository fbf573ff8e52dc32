//! Who may reach an HTTP endpoint, decided once from what the operator asked for: the bind
//! address (loopback unless said otherwise), the bearer token (given, or generated for a
//! loopback endpoint), and the hosts and origins accepted.
//!
//! Owns the refusals that protect an operator from exposing data by accident: a non-loopback
//! address needs a token the operator chose, and only a loopback endpoint may go without one.
//! Pure: the caller prints a generated token and binds the socket.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};

use super::guard::Guard;
use super::sessions::random_id;

/// What the operator asked for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// `127.0.0.1:8765`, `[::1]:8765`, `0.0.0.0:8765`, `:8765` or `8765` (loopback).
    pub address: String,
    /// The token chosen by the operator (`--token` or the environment).
    pub token: Option<String>,
    /// No token at all (loopback only).
    pub no_token: bool,
    /// The endpoint's public URL behind a reverse proxy.
    pub public_url: Option<String>,
    /// Browser origins to accept besides loopback ones.
    pub origins: Vec<String>,
    /// Authorization servers to name in the RFC 9728 metadata.
    pub authorization_servers: Vec<String>,
}

/// What to serve with.
#[derive(Debug, Clone)]
pub struct Plan {
    pub address: SocketAddr,
    pub guard: Guard,
    /// A token made up here, to be shown to the operator once.
    pub generated_token: Option<String>,
}

/// Why the endpoint will not be served as asked (a usage error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("dirección HTTP inválida '{0}': use por ejemplo 127.0.0.1:8765")]
    Address(String),
    #[error(
        "escuchar en {0} expone los datos fuera de esta máquina: hace falta un token elegido \
         por el operador (y HTTPS delante, con un proxy inverso)"
    )]
    ExposedWithoutToken(String),
    #[error("servir sin token solo se admite en una dirección local (127.0.0.1, ::1), no en {0}")]
    NoTokenExposed(String),
    #[error("el token no puede estar vacío ni contener espacios")]
    BadToken,
    #[error("URL pública inválida '{0}': debe empezar por https:// o http://")]
    PublicUrl(String),
}

fn parse_address(text: &str) -> Result<SocketAddr, Refused> {
    let trimmed = text.trim();
    if let Ok(port) = trimmed.trim_start_matches(':').parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Some(port) = trimmed
        .strip_prefix("localhost:")
        .and_then(|p| p.parse().ok())
    {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Ok(address) = trimmed.parse::<SocketAddr>() {
        return Ok(address);
    }
    trimmed
        .to_socket_addrs()
        .ok()
        .and_then(|mut all| all.next())
        .ok_or_else(|| Refused::Address(text.to_owned()))
}

/// Decides address, token, hosts and origins, or refuses.
pub fn plan(request: &Request) -> Result<Plan, Refused> {
    let address = parse_address(&request.address)?;
    let loopback = address.ip().is_loopback();
    if let Some(token) = &request.token
        && (token.is_empty() || token.chars().any(char::is_whitespace))
    {
        return Err(Refused::BadToken);
    }
    if request.no_token && !loopback {
        return Err(Refused::NoTokenExposed(address.to_string()));
    }
    if !loopback && request.token.is_none() {
        return Err(Refused::ExposedWithoutToken(address.to_string()));
    }
    if let Some(url) = &request.public_url
        && !(url.starts_with("https://") || url.starts_with("http://"))
    {
        return Err(Refused::PublicUrl(url.clone()));
    }
    let generated_token = (request.token.is_none() && !request.no_token)
        .then(|| format!("flt_{}{}", random_id(), random_id()));
    let token = if request.no_token {
        None
    } else {
        request.token.clone().or_else(|| generated_token.clone())
    };
    // On loopback only this machine's names are valid hosts (DNS rebinding); behind a proxy
    // the public name is, when given.
    let mut hosts = Vec::new();
    if loopback {
        hosts.extend(["localhost", "127.0.0.1", "[::1]"].map(String::from));
    }
    if let Some(host) = request
        .public_url
        .as_deref()
        .and_then(|u| u.split_once("://"))
        .and_then(|(_, rest)| rest.split('/').next())
    {
        hosts.push(host.to_ascii_lowercase());
    }
    Ok(Plan {
        address,
        guard: Guard {
            token,
            hosts,
            origins: request
                .origins
                .iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
            authorization_servers: request.authorization_servers.clone(),
            public_url: request.public_url.clone(),
            path: "/mcp".into(),
        },
        generated_token,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(address: &str, token: Option<&str>, no_token: bool) -> Request {
        Request {
            address: address.into(),
            token: token.map(String::from),
            no_token,
            ..Request::default()
        }
    }

    #[test]
    fn loopback_by_default_and_a_token_always_unless_refused() {
        let plan = plan(&asked("8765", None, false)).unwrap();
        assert_eq!(plan.address.to_string(), "127.0.0.1:8765");
        let generated = plan.generated_token.unwrap();
        assert_eq!(plan.guard.token.as_deref(), Some(generated.as_str()));
        assert!(generated.len() > 40);
        assert!(plan.guard.hosts.contains(&"localhost".to_owned()));

        let plan = super::plan(&asked("127.0.0.1:9000", Some("t0k"), false)).unwrap();
        assert_eq!(plan.guard.token.as_deref(), Some("t0k"));
        assert!(plan.generated_token.is_none());

        let plan = super::plan(&asked("[::1]:9000", None, true)).unwrap();
        assert!(plan.guard.token.is_none() && plan.generated_token.is_none());
    }

    #[test]
    fn exposing_without_a_chosen_token_is_refused() {
        for (request, refusal) in [
            (asked("0.0.0.0:8765", None, false), "ExposedWithoutToken"),
            (asked("0.0.0.0:8765", Some("t"), true), "NoTokenExposed"),
            (asked("127.0.0.1:1", Some("con espacio"), false), "BadToken"),
            (asked("127.0.0.1:1", Some(""), false), "BadToken"),
            (asked("no es una dirección", None, false), "Address"),
        ] {
            let got = plan(&request).map(|_| ()).unwrap_err();
            assert!(
                format!("{got:?}").starts_with(refusal),
                "{request:?}: {got:?}"
            );
        }
        let exposed = plan(&asked("0.0.0.0:8765", Some("elegido"), false)).unwrap();
        assert!(exposed.guard.hosts.is_empty(), "any host behind a proxy");
    }
}
