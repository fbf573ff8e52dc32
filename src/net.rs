//! Shared HTTP plumbing: the TLS provider, an honest User-Agent, and keeping secrets out of
//! messages.
//!
//! Owns the process-wide rustls setup (ring, installed once; reqwest panics without it) and
//! `redact`, which strips API keys from any text about to be logged or shown.

use std::sync::Once;

/// Identifies flota to map and geocoding services, as their usage policies ask; the operator
/// may add a contact (an e-mail or URL) with `FLOTA_CONTACTO`.
pub fn user_agent() -> String {
    let base = concat!(
        "flota/",
        env!("CARGO_PKG_VERSION"),
        " (telemetria de flotas)"
    );
    match std::env::var("FLOTA_CONTACTO") {
        Ok(contact) if !contact.trim().is_empty() => format!("{base} {}", contact.trim()),
        _ => base.to_owned(),
    }
}

static CRYPTO: Once = Once::new();

/// Installs ring as rustls's provider; harmless when called again.
pub fn install_crypto() {
    CRYPTO.call_once(|| {
        // Err means another provider is already installed, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Removes `key=…` query values (Google's API key) from a message.
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(index) = rest.find("key=") {
        out.push_str(&rest[..index + 4]);
        out.push_str("***");
        rest = &rest[index + 4..];
        let end = rest.find(['&', ' ', ')', '"', '\'']).unwrap_or(rest.len());
        rest = &rest[end..];
    }
    out.push_str(rest);
    if let Ok(key) = std::env::var("GOOGLE_MAPS_API_KEY")
        && key.len() >= 6
    {
        return out.replace(&key, "***");
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn keys_are_redacted() {
        assert_eq!(
            super::redact(
                "error sending request for url (http://x/geocode?latlng=1,2&key=SECRETO123&language=es)"
            ),
            "error sending request for url (http://x/geocode?latlng=1,2&key=***&language=es)"
        );
    }
}
