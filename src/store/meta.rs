//! The `meta` table: every key spelled once, what a simulation and an analysis record in it,
//! and the typed [`Meta`] a reader gets from it.
//!
//! Owns the key names (Spanish: users query them), their values and parsing, and the only SQL
//! that reads or writes `meta`: the writer, the analysis's seal and the reader all come here.
//! `Key` is private to the store, so nothing else can write a key. Nothing here touches the
//! other tables.

use chrono::NaiveDate;
use chrono_tz::Tz;
use rusqlite::{Connection, OptionalExtension};

use super::coverage::Covered;
use super::schema::{ANALYSIS_VERSION, SCHEMA_VERSION};
use crate::engine::DetectionConfig;
use crate::scenario::World;

/// A key of `meta`. docs/datos.md documents each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Key {
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
    pub(super) const fn name(self) -> &'static str {
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
    /// The limit of a unit without its own (`limite_flota_kmh`).
    pub fleet_limit_kmh: Option<f64>,
    pub analysis: AnalysisRecord,
}

impl Meta {
    /// Parses the table through `get`, which returns a key's raw value. A malformed
    /// `deteccion` is the only error (its message names the threshold).
    pub(super) fn parse(
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
            fleet_limit_kmh: get(Key::FleetLimitKmh).and_then(|v| v.parse().ok()),
            analysis: AnalysisRecord {
                version: number(get(Key::AnalysisVersion)),
                detection_sha256: get(Key::AnalysisDetectionSha256),
                until_utc: number(get(Key::AnalysisUntilUtc)),
                fixes: get(Key::AnalysisFixes).and_then(|v| v.parse().ok()),
            },
        })
    }
}

/// One key's raw value.
pub(super) fn read(conn: &Connection, key: Key) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT valor FROM meta WHERE clave = ?1",
        [key.name()],
        |r| r.get(0),
    )
    .optional()
}

/// Writes `entries`, replacing the keys' previous values.
pub(super) fn write(conn: &Connection, entries: &[(Key, String)]) -> rusqlite::Result<()> {
    let mut put =
        conn.prepare_cached("INSERT OR REPLACE INTO meta (clave, valor) VALUES (?1, ?2)")?;
    for (key, value) in entries {
        put.execute([key.name(), value.as_str()])?;
    }
    Ok(())
}

/// Removes `keys`.
pub(super) fn remove(conn: &Connection, keys: &[Key]) -> rusqlite::Result<()> {
    let mut delete = conn.prepare_cached("DELETE FROM meta WHERE clave = ?1")?;
    for key in keys {
        delete.execute([key.name()])?;
    }
    Ok(())
}

/// What an empty live database records about itself: no scenario, no `ahora`.
pub(super) fn of_live_database(new: &super::live::NewDatabase) -> Vec<(Key, String)> {
    vec![
        (Key::SchemaVersion, SCHEMA_VERSION.to_string()),
        (Key::FlotaVersion, env!("CARGO_PKG_VERSION").to_owned()),
        (Key::Zone, new.zone.name().to_owned()),
        (Key::FleetLimitKmh, new.fleet_limit_kmh.to_string()),
        (Key::Positions, "0".to_owned()),
    ]
}

/// What a simulation of `world` that wrote `positions` rows records about itself.
pub(super) fn of_world(world: &World, positions: u64) -> Vec<(Key, String)> {
    let day = |d: Option<&NaiveDate>| d.map(ToString::to_string).unwrap_or_default();
    vec![
        (Key::SchemaVersion, SCHEMA_VERSION.to_string()),
        (Key::FlotaVersion, env!("CARGO_PKG_VERSION").to_owned()),
        (Key::Scenario, world.name.clone()),
        (Key::ScenarioDescription, world.description.clone()),
        (Key::ScenarioSha256, world.hash.clone()),
        (Key::Seed, world.seed.to_string()),
        (Key::Zone, world.zone.name().to_owned()),
        (
            Key::AhoraLocal,
            world.ahora_local.format("%Y-%m-%dT%H:%M:%S").to_string(),
        ),
        (Key::AhoraUtc, world.ahora_utc.to_string()),
        (Key::FromDate, day(world.days.first())),
        (Key::ToDate, day(world.days.last())),
        (Key::IntervalS, world.interval_s.to_string()),
        (Key::FleetLimitKmh, world.fleet_limit_kmh.to_string()),
        (Key::Positions, positions.to_string()),
    ]
}

/// The analysis's coverage record ([`AnalysisRecord`], read back by [`Meta::parse`]), with
/// the thresholds it ran with as the database's `deteccion`.
pub(super) fn of_analysis(covered: &Covered<'_>) -> Vec<(Key, String)> {
    vec![
        (Key::Detection, covered.config.to_json()),
        (Key::AnalysisVersion, ANALYSIS_VERSION.to_string()),
        (Key::AnalysisDetectionSha256, covered.config.sha256()),
        (Key::AnalysisUntilUtc, covered.until_utc.to_string()),
        (Key::AnalysisFixes, covered.fixes.to_string()),
    ]
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

    /// What an analysis writes is what a reader parses: one module both ways.
    #[test]
    fn the_analysis_record_reads_back() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(super::super::schema::DDL).unwrap();
        let config = DetectionConfig {
            parada_min_s: 150.0,
            ..DetectionConfig::default()
        };
        let covered = Covered {
            config: &config,
            until_utc: 1_787_175_000,
            fixes: 42,
        };
        write(&conn, &of_analysis(&covered)).unwrap();
        let meta = Meta::parse(|key| read(&conn, key).unwrap()).unwrap();
        assert_eq!(
            meta.analysis,
            AnalysisRecord {
                version: Some(ANALYSIS_VERSION),
                detection_sha256: Some(config.sha256()),
                until_utc: Some(1_787_175_000),
                fixes: Some(42),
            }
        );
        assert_eq!(meta.config, config);
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
