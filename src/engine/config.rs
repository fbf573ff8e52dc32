//! Detection thresholds: one documented configuration for every detector.
//!
//! Owns the defaults (docs/deteccion.md explains each) and reading overrides from a
//! scenario's `[deteccion]` table, which the database keeps in `meta.deteccion` so the server
//! and `flota analizar` use the same numbers the simulation was analysed with.

use serde::{Deserialize, Serialize};

use crate::plumbing::spanish;

/// Every threshold the engine uses. Keys are Spanish: they appear in `[deteccion]` and `meta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DetectionConfig {
    /// Below this reported speed a fix counts as standing still, km/h.
    pub velocidad_detenida_kmh: f64,
    /// A stop lasts at least this long, seconds (traffic halts are shorter).
    pub parada_min_s: f64,
    /// Fixes of a parked unit stay within this distance of the stop's centre, metres; noise
    /// and drift larger than this for several fixes in a row count as leaving.
    pub parada_radio_m: f64,
    /// A stop this long or longer (not the end-of-day parking) is a `parada_prolongada`,
    /// minutes. Between the longest ordinary wait (40 min at the depot) and the shortest
    /// long stop worth an alert (45 min).
    pub parada_prolongada_min: f64,
    /// Speed must exceed the limit by more than this to count as speeding, km/h.
    pub exceso_tolerancia_kmh: f64,
    /// An overspeed episode lasts at least this long, seconds.
    pub exceso_min_s: f64,
    /// A silence longer than this while the ignition is on is a signal loss, seconds.
    pub perdida_senal_s: f64,
    /// A fence crossing counts once the unit stays on the new side this long, seconds.
    pub geocerca_confirmacion_s: f64,
    /// Braking assumed when back-dating a stop's start from the last moving fix, m/s².
    pub frenado_ms2: f64,
    /// Acceleration assumed when back-dating a departure from the first moving fix, m/s².
    pub aceleracion_ms2: f64,
    /// Use the tracker's odometer for kilometres when it is present and consistent.
    pub usar_odometro: bool,
    /// The odometer is consistent when its distance is within this of the GPS track's over the
    /// unit's days, and within twice this on the day, percent (`daily.rs`).
    pub odometro_tolerancia_pct: f64,
}

impl Default for DetectionConfig {
    fn default() -> Self {
        DetectionConfig {
            velocidad_detenida_kmh: 3.0,
            parada_min_s: 120.0,
            parada_radio_m: 60.0,
            parada_prolongada_min: 42.0,
            exceso_tolerancia_kmh: 3.0,
            exceso_min_s: 15.0,
            perdida_senal_s: 120.0,
            geocerca_confirmacion_s: 40.0,
            frenado_ms2: 2.5,
            aceleracion_ms2: 1.5,
            usar_odometro: true,
            odometro_tolerancia_pct: 2.0,
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("[deteccion]: {0}")]
pub struct ConfigError(String);

impl DetectionConfig {
    /// Defaults overridden by a JSON object (the `meta.deteccion` form of `[deteccion]`).
    pub fn from_json(text: &str) -> Result<DetectionConfig, ConfigError> {
        let text = if text.trim().is_empty() { "{}" } else { text };
        let config: DetectionConfig =
            serde_json::from_str(text).map_err(|e| ConfigError(spanish::json_what(&e)))?;
        config.validate()?;
        Ok(config)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let checks = [
            (
                "velocidad_detenida_kmh",
                self.velocidad_detenida_kmh,
                0.0,
                30.0,
            ),
            ("parada_min_s", self.parada_min_s, 1.0, 86_400.0),
            ("parada_radio_m", self.parada_radio_m, 1.0, 5_000.0),
            (
                "parada_prolongada_min",
                self.parada_prolongada_min,
                1.0,
                10_000.0,
            ),
            (
                "exceso_tolerancia_kmh",
                self.exceso_tolerancia_kmh,
                0.0,
                100.0,
            ),
            ("exceso_min_s", self.exceso_min_s, 0.0, 3_600.0),
            ("perdida_senal_s", self.perdida_senal_s, 1.0, 86_400.0),
            (
                "geocerca_confirmacion_s",
                self.geocerca_confirmacion_s,
                0.0,
                3_600.0,
            ),
            ("frenado_ms2", self.frenado_ms2, 0.1, 20.0),
            ("aceleracion_ms2", self.aceleracion_ms2, 0.1, 20.0),
            (
                "odometro_tolerancia_pct",
                self.odometro_tolerancia_pct,
                0.1,
                100.0,
            ),
        ];
        for (name, value, min, max) in checks {
            if !value.is_finite() || value < min || value > max {
                return Err(ConfigError(format!(
                    "{name} = {value} fuera de los límites [{min}, {max}]"
                )));
            }
        }
        Ok(())
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".into())
    }

    /// SHA-256 of [`Self::to_json`], hex: which thresholds an analysis was made with. Every
    /// threshold is in the JSON (defaults included), so a threshold added later changes it.
    pub fn sha256(&self) -> String {
        use sha2::{Digest, Sha256};
        format!("{:x}", Sha256::digest(self.to_json().as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_follows_every_threshold() {
        let base = DetectionConfig::default();
        let mut other = base.clone();
        other.parada_prolongada_min += 1.0;
        assert_eq!(base.sha256(), DetectionConfig::default().sha256());
        assert_ne!(base.sha256(), other.sha256());
        assert_eq!(base.sha256().len(), 64);
    }

    #[test]
    fn overrides_and_errors() {
        let c = DetectionConfig::from_json(r#"{"parada_min_s": 180}"#).unwrap();
        assert_eq!(c.parada_min_s, 180.0);
        assert_eq!(c.parada_radio_m, DetectionConfig::default().parada_radio_m);
        assert_eq!(
            DetectionConfig::from_json("").unwrap(),
            DetectionConfig::default()
        );
        let err = DetectionConfig::from_json(r#"{"radio": 5}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("clave desconocida 'radio'; se admiten: "),
            "{err}"
        );
        let err = DetectionConfig::from_json(r#"{"parada_min_s": -1}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("parada_min_s = -1"), "{err}");
        let round = DetectionConfig::from_json(&DetectionConfig::default().to_json()).unwrap();
        assert_eq!(round, DetectionConfig::default());
    }
}
