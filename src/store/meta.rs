//! The `meta` table: every key spelled once, and the typed [`Meta`] a reader gets from it.
//!
//! Owns the key names (Spanish: users query them) and their parsing. Writers name keys with
//! [`Key`], never with string literals; nothing else here touches the other tables.

use chrono::NaiveDate;
use chrono_tz::Tz;

use crate::engine::DetectionConfig;

/// A key of `meta`. docs/datos.md documents each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    SchemaVersion,
    FlotaVersion,
    Scenario,
    ScenarioDescription,
    ScenarioSha256,
    Seed,
    Zone,
    AhoraLocal,
    AhoraUtc,
    FromDate,
    ToDate,
    IntervalS,
    FleetLimitKmh,
    Positions,
    Detection,
    AnalysisVersion,
    AnalysisDetectionSha256,
    AnalysisUntilUtc,
    AnalysisFixes,
}

impl Key {
    pub const fn name(self) -> &'static str {
        match self {
            Key::SchemaVersion => "esquema_version",
            Key::FlotaVersion => "flota_version",
            Key::Scenario => "escenario",
            Key::ScenarioDescription => "escenario_descripcion",
            Key::ScenarioSha256 => "escenario_sha256",
            Key::Seed => "semilla",
            Key::Zone => "zona_horaria",
            Key::AhoraLocal => "ahora_local",
            Key::AhoraUtc => "ahora_utc",
            Key::FromDate => "desde_fecha",
            Key::ToDate => "hasta_fecha",
            Key::IntervalS => "intervalo_reporte_s",
            Key::FleetLimitKmh => "limite_flota_kmh",
            Key::Positions => "posiciones",
            Key::Detection => "deteccion",
            Key::AnalysisVersion => "analisis_version",
            Key::AnalysisDetectionSha256 => "analisis_deteccion_sha256",
            Key::AnalysisUntilUtc => "analisis_hasta_utc",
            Key::AnalysisFixes => "analisis_posiciones",
        }
    }
}

/// What the stored detections say about themselves: which engine made them, with which
/// thresholds, up to when and from how many fixes. Absent in files written before flota
/// recorded it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AnalysisRecord {
    pub version: Option<i64>,
    pub detection_sha256: Option<String>,
    pub until_utc: Option<i64>,
    pub fixes: Option<u64>,
}

/// The database's `meta` table, parsed.
#[derive(Debug, Clone)]
pub struct Meta {
    pub zone: Tz,
    pub ahora_utc: Option<i64>,
    pub from_date: Option<NaiveDate>,
    pub to_date: Option<NaiveDate>,
    pub interval_s: i64,
    /// The thresholds the database asks for (`deteccion`); the detections are only right if
    /// they were made with these (see [`AnalysisRecord::detection_sha256`]).
    pub config: DetectionConfig,
    pub scenario: String,
    pub scenario_sha256: String,
    pub positions: Option<i64>,
    pub analysis: AnalysisRecord,
}

impl Meta {
    /// Parses the table through `get`, which returns a key's raw value. A malformed
    /// `deteccion` is the only error (its message names the threshold).
    pub fn parse(
        mut get: impl FnMut(Key) -> Option<String>,
    ) -> Result<Meta, crate::engine::config::ConfigError> {
        let date =
            |v: Option<String>| v.and_then(|d| NaiveDate::parse_from_str(&d, "%Y-%m-%d").ok());
        let number = |v: Option<String>| v.and_then(|v| v.parse::<i64>().ok());
        let config = get(Key::Detection)
            .map(|json| DetectionConfig::from_json(&json))
            .transpose()?
            .unwrap_or_default();
        Ok(Meta {
            zone: get(Key::Zone)
                .and_then(|z| z.parse().ok())
                .unwrap_or(chrono_tz::UTC),
            ahora_utc: number(get(Key::AhoraUtc)),
            from_date: date(get(Key::FromDate)),
            to_date: date(get(Key::ToDate)),
            interval_s: number(get(Key::IntervalS)).unwrap_or(15),
            config,
            scenario: get(Key::Scenario).unwrap_or_default(),
            scenario_sha256: get(Key::ScenarioSha256).unwrap_or_default(),
            positions: number(get(Key::Positions)),
            analysis: AnalysisRecord {
                version: number(get(Key::AnalysisVersion)),
                detection_sha256: get(Key::AnalysisDetectionSha256),
                until_utc: number(get(Key::AnalysisUntilUtc)),
                fixes: get(Key::AnalysisFixes).and_then(|v| v.parse().ok()),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names_are_distinct() {
        let keys = [
            Key::SchemaVersion,
            Key::FlotaVersion,
            Key::Scenario,
            Key::ScenarioDescription,
            Key::ScenarioSha256,
            Key::Seed,
            Key::Zone,
            Key::AhoraLocal,
            Key::AhoraUtc,
            Key::FromDate,
            Key::ToDate,
            Key::IntervalS,
            Key::FleetLimitKmh,
            Key::Positions,
            Key::Detection,
            Key::AnalysisVersion,
            Key::AnalysisDetectionSha256,
            Key::AnalysisUntilUtc,
            Key::AnalysisFixes,
        ];
        let names: std::collections::BTreeSet<&str> = keys.iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), keys.len());
    }

    #[test]
    fn a_file_without_an_analysis_record_parses_with_none() {
        let meta =
            Meta::parse(|key| (key == Key::Zone).then(|| "America/Guatemala".into())).unwrap();
        assert_eq!(meta.analysis, AnalysisRecord::default());
        assert_eq!(meta.zone.name(), "America/Guatemala");
        assert_eq!(meta.interval_s, 15);
    }
}
