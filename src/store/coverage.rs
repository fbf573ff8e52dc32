//! Whether the stored detections still describe the stored positions.
//!
//! Owns the analysis's coverage record (the `analisis_*` keys of `meta`: engine version,
//! thresholds' SHA-256, "now" and fixes analysed), sealing it with the change log
//! (`cambios_desde_analisis` and its triggers, src/store/schema.rs), and the check a reader
//! runs: [`SqliteStore::analysis_state`]. The check reads the schema list, `meta` and the change log
//! (a handful of rows, never the positions), so it costs the same on any size of database.
//! Spanish reasons live here; the sentences with the command to run are the fleet's.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::Connection;

use super::meta;
use super::queries::EventRow;
use super::reader::{SqliteStore, StoreError};
use super::schema::{
    ANALYSIS_DDL, ANALYSIS_TABLES, ANALYSIS_VERSION, CHANGE_LOG, CHANGE_LOG_DDL, CROSSINGS_DDL,
    CROSSINGS_FILL, CROSSINGS_TABLE, NEWEST_EVENT_COLUMN, change_triggers, crossings_triggers,
};
use crate::engine::{DetectionConfig, EventKind};
use crate::store::Meta;

/// What an analysis covered, recorded when it is committed.
#[derive(Debug, Clone, Copy)]
pub struct Covered<'a> {
    /// The thresholds it ran with (also written as the database's `deteccion`).
    pub config: &'a DetectionConfig,
    /// Fixes with a time after this were not analysed.
    pub until_utc: i64,
    /// Fixes the engine read.
    pub fixes: u64,
}

/// How far the stored detections can be trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnalysisState {
    /// They describe every stored position.
    Current,
    /// They are right for what was analysed, but positions changed since: `(vehicle id,
    /// rows written)` per vehicle, by id.
    Behind(Vec<(i64, i64)>),
    /// Nothing can be said from them.
    Unusable(Unusable),
}

/// Why the detections cannot be used, as a Spanish clause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unusable {
    #[error("faltan las tablas de detecciones")]
    TablesMissing,
    #[error(
        "la base no dice qué posiciones cubren las detecciones, algo que las versiones anteriores de flota no registraban"
    )]
    NoRecord,
    #[error("las detecciones son de otra versión del motor de detección")]
    OtherVersion,
    #[error("las detecciones se calcularon con otros umbrales que los de la base")]
    OtherThresholds,
    #[error("las tablas de detecciones se modificaron después del análisis")]
    Modified,
}

/// Before an analysis rewrites its tables: recreates them if they are missing (or `eventos`
/// if it is from an older analysis, without the evidence columns) and drops the
/// change log's triggers and the crossings' counters', so the analysis's own writes are not
/// logged nor counted row by row (emptying the tables stays a truncation, not a row-by-row
/// delete; [`seal`] counts the crossings at once).
pub(super) fn unseal(conn: &Connection) -> rusqlite::Result<()> {
    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('eventos')")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if !columns.is_empty() && !columns.iter().any(|c| c == NEWEST_EVENT_COLUMN) {
        conn.execute_batch("DROP TABLE eventos;")?;
    }
    conn.execute_batch(ANALYSIS_DDL)?;
    for (name, _) in change_triggers() {
        conn.execute_batch(&format!("DROP TRIGGER IF EXISTS {name};"))?;
    }
    for (name, _) in crossings_triggers() {
        conn.execute_batch(&format!("DROP TRIGGER IF EXISTS {name};"))?;
    }
    Ok(())
}

/// After an analysis wrote its tables, in the same transaction: records what it covered,
/// counts the crossings per day afresh, starts a fresh change log and puts the triggers back.
pub(super) fn seal(conn: &Connection, covered: &Covered<'_>) -> rusqlite::Result<()> {
    seal_with(conn, covered, None)
}

/// [`seal`], the crossings per day taken from `counted` (every `eventos` row went through it)
/// instead of [`CROSSINGS_FILL`]'s two scans of the table and its sort: 2.5 G instructions
/// with both workers idle at the end of the scale scenario (539,766 events), against a few
/// million to insert the counts in key order.
pub(super) fn seal_with(
    conn: &Connection,
    covered: &Covered<'_>,
    counted: Option<&CrossingCounts>,
) -> rusqlite::Result<()> {
    conn.execute_batch(CROSSINGS_DDL)?;
    for (name, _) in crossings_triggers() {
        conn.execute_batch(&format!("DROP TRIGGER IF EXISTS {name};"))?;
    }
    match counted {
        Some(counts) => counts.write(conn)?,
        None => conn.execute_batch(CROSSINGS_FILL)?,
    }
    for (_, create) in crossings_triggers() {
        conn.execute_batch(&create)?;
    }
    conn.execute_batch(CHANGE_LOG_DDL)?;
    for (name, create) in change_triggers() {
        conn.execute_batch(&format!("DROP TRIGGER IF EXISTS {name}; {create}"))?;
    }
    conn.execute_batch(&format!("DELETE FROM {CHANGE_LOG};"))?;
    meta::write(conn, &meta::of_analysis(covered))
}

/// `cruces_por_dia`'s rows counted from the `eventos` rows as they are written, exactly as
/// [`CROSSINGS_FILL`] counts them from the table: an entry (a visit not under way as the data
/// began) on its start's UTC day, an exit (a visit with an end) on its end's, per vehicle.
#[derive(Debug, Default)]
pub struct CrossingCounts {
    /// `(day's first second, vehicle) → (entries, exits)`, in the table's key order.
    days: BTreeMap<(i64, i64), (i64, i64)>,
}

impl CrossingCounts {
    /// Counts one `eventos` row (any kind; only visits count).
    pub(super) fn add(&mut self, row: &EventRow) {
        if row.kind != EventKind::Visit {
            return;
        }
        if !row.from_data_start {
            self.days
                .entry((utc_day(row.start_utc), row.vehicle_id))
                .or_default()
                .0 += 1;
        }
        if let Some(end) = row.end_utc {
            self.days
                .entry((utc_day(end), row.vehicle_id))
                .or_default()
                .1 += 1;
        }
    }

    /// Empties `cruces_por_dia` and inserts the counts, in key order (as the fill's
    /// `GROUP BY` hands them over).
    fn write(&self, conn: &Connection) -> rusqlite::Result<()> {
        conn.execute_batch(&format!("DELETE FROM {CROSSINGS_TABLE};"))?;
        let mut insert = conn.prepare_cached(&format!(
            "INSERT INTO {CROSSINGS_TABLE} (dia_utc, vehiculo_id, entradas, salidas) VALUES (?1, ?2, ?3, ?4)"
        ))?;
        for ((day, vehicle), (entries, exits)) in &self.days {
            insert.execute([day, vehicle, entries, exits])?;
        }
        Ok(())
    }
}

/// The first second of `ts`'s UTC day, as [`CROSSINGS_FILL`] computes it in SQL.
fn utc_day(ts: i64) -> i64 {
    ts - ts.rem_euclid(86_400)
}

/// The rules both backends apply: `present` names the database's tables and triggers,
/// `changes` reads the change log (only when the rest allows the detections).
pub(super) fn state_of(
    present: &BTreeSet<String>,
    meta: &Meta,
    changes: impl FnOnce() -> Result<Vec<(String, i64, i64)>, StoreError>,
) -> Result<AnalysisState, StoreError> {
    if !ANALYSIS_TABLES.iter().all(|t| present.contains(*t)) {
        return Ok(AnalysisState::Unusable(Unusable::TablesMissing));
    }
    let record = &meta.analysis;
    if record.version.is_some_and(|v| v != ANALYSIS_VERSION) {
        return Ok(AnalysisState::Unusable(Unusable::OtherVersion));
    }
    let logged = present.contains(CHANGE_LOG)
        && change_triggers()
            .iter()
            .all(|(name, _)| present.contains(name));
    if !logged || record.version.is_none() || record.detection_sha256.is_none() {
        return Ok(AnalysisState::Unusable(Unusable::NoRecord));
    }
    if record.detection_sha256.as_deref() != Some(meta.config.sha256().as_str()) {
        return Ok(AnalysisState::Unusable(Unusable::OtherThresholds));
    }
    let changes = changes()?;
    if changes.iter().any(|(table, _, _)| table != "posiciones") {
        return Ok(AnalysisState::Unusable(Unusable::Modified));
    }
    if changes.is_empty() {
        return Ok(AnalysisState::Current);
    }
    Ok(AnalysisState::Behind(
        changes
            .into_iter()
            .map(|(_, id, rows)| (id, rows))
            .collect(),
    ))
}

impl SqliteStore {
    /// How far the detections can be trusted, given the database's `meta`.
    pub fn analysis_state(&self, meta: &Meta) -> Result<AnalysisState, StoreError> {
        let present = self.schema_names()?;
        state_of(&present, meta, || self.changes())
    }

    /// Names of the tables and triggers in the file.
    fn schema_names(&self) -> Result<BTreeSet<String>, StoreError> {
        self.conn
            .prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger')")
            .and_then(|mut stmt| stmt.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| self.sqlite(e))
    }

    /// The change log: `(table, vehicle id, rows)` by vehicle id.
    fn changes(&self) -> Result<Vec<(String, i64, i64)>, StoreError> {
        self.conn
            .prepare(&format!(
                "SELECT tabla, vehiculo_id, filas FROM {CHANGE_LOG} ORDER BY vehiculo_id, tabla"
            ))
            .and_then(|mut stmt| {
                stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect()
            })
            .map_err(|e| self.sqlite(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::{DDL, SCHEMA_VERSION};

    /// A file with the schema, one vehicle's positions, detections, and a sealed analysis.
    fn sealed(dir: &std::path::Path) -> (std::path::PathBuf, Connection) {
        let path = dir.join("t.db");
        let conn = Connection::open(&path).unwrap();
        // Rows for vehicles the test never declares.
        conn.execute_batch("PRAGMA foreign_keys = OFF;").unwrap();
        conn.execute_batch(DDL).unwrap();
        conn.execute_batch(ANALYSIS_DDL).unwrap();
        meta::write(
            &conn,
            &[(meta::Key::SchemaVersion, SCHEMA_VERSION.to_string())],
        )
        .unwrap();
        conn.execute_batch(
            "INSERT INTO posiciones (vehiculo_id, ts_utc, lat_e6, lon_e6, velocidad_kmh, rumbo_grados, ignicion, odometro_m)
             VALUES (1, 100, 0, 0, 0, 0, 1, 0), (1, 115, 0, 0, 0, 0, 1, 0);
             INSERT INTO eventos (vehiculo_id, tipo, inicio_utc, lat, lon) VALUES (1, 'parada', 100, 0, 0);",
        )
        .unwrap();
        analyse(&conn);
        (path, conn)
    }

    /// What an analysis does to the file around its own writes (here: none).
    fn analyse(conn: &Connection) {
        unseal(conn).unwrap();
        let covered = Covered {
            config: &DetectionConfig::default(),
            until_utc: 200,
            fixes: 2,
        };
        seal(conn, &covered).unwrap();
    }

    fn state(path: &std::path::Path) -> AnalysisState {
        let store = SqliteStore::open(path).unwrap();
        let meta = store.meta().unwrap();
        store.analysis_state(&meta).unwrap()
    }

    #[test]
    fn every_write_after_the_analysis_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let (path, conn) = sealed(dir.path());
        assert_eq!(state(&path), AnalysisState::Current);
        // Writes to the positions put that vehicle behind, whatever their time.
        let check = |sql: &str, expected: AnalysisState| {
            conn.execute_batch(sql).unwrap();
            assert_eq!(state(&path), expected, "{sql}");
        };
        check(
            "INSERT INTO posiciones (vehiculo_id, ts_utc, lat_e6, lon_e6, velocidad_kmh, rumbo_grados, ignicion, odometro_m)
             VALUES (2, 50, 0, 0, 0, 0, 1, 0)",
            AnalysisState::Behind(vec![(2, 1)]),
        );
        check(
            "UPDATE posiciones SET velocidad_kmh = 5 WHERE vehiculo_id = 1",
            AnalysisState::Behind(vec![(1, 2), (2, 1)]),
        );
        check(
            "UPDATE posiciones SET vehiculo_id = 3 WHERE vehiculo_id = 2",
            AnalysisState::Behind(vec![(1, 2), (2, 2), (3, 1)]),
        );
        check(
            "DELETE FROM posiciones WHERE vehiculo_id = 1",
            AnalysisState::Behind(vec![(1, 4), (2, 2), (3, 1)]),
        );
        // A write to the detections voids them.
        check(
            "DELETE FROM eventos",
            AnalysisState::Unusable(Unusable::Modified),
        );
        // A new analysis starts a fresh log.
        analyse(&conn);
        assert_eq!(state(&path), AnalysisState::Current);
    }

    #[test]
    fn what_makes_detections_unusable() {
        let dir = tempfile::tempdir().unwrap();
        let (path, conn) = sealed(dir.path());
        let check = |sql: &str, expected: Unusable| {
            conn.execute_batch(sql).unwrap();
            assert_eq!(state(&path), AnalysisState::Unusable(expected), "{sql}");
        };
        check(
            "UPDATE meta SET valor = json_set(valor, '$.parada_min_s', 90.0) WHERE clave = 'deteccion'",
            Unusable::OtherThresholds,
        );
        check(
            "UPDATE meta SET valor = '99' WHERE clave = 'analisis_version'",
            Unusable::OtherVersion,
        );
        check(
            "DELETE FROM meta WHERE clave LIKE 'analisis_%'",
            Unusable::NoRecord,
        );
        check("DROP TABLE resumen_diario", Unusable::TablesMissing);
        // The analysis recreates what was dropped, and the record with it.
        analyse(&conn);
        assert_eq!(state(&path), AnalysisState::Current);
        // A log without its triggers records nothing: as good as no record.
        check(
            "DROP TRIGGER cambios_posiciones_insercion",
            Unusable::NoRecord,
        );
    }

    /// One `eventos` row for the crossings: vehicle, kind, start, end, from the data's start.
    fn row(
        vehicle_id: i64,
        kind: EventKind,
        start_utc: i64,
        end_utc: Option<i64>,
        from_data_start: bool,
    ) -> EventRow {
        EventRow {
            vehicle_id,
            kind,
            start_utc,
            end_utc,
            lat: 0.0,
            lon: 0.0,
            fence_id: Some(1),
            max_kmh: None,
            limit_kmh: None,
            long: false,
            end_of_day: false,
            engine_on: None,
            from_data_start,
            first_fix_utc: start_utc,
            last_fix_utc: start_utc,
            fixes: 1,
            measure: 0.0,
            threshold: String::new(),
            threshold_value: 0.0,
        }
    }

    fn crossing_rows(conn: &Connection) -> Vec<(i64, i64, i64, i64)> {
        let mut stmt = conn
            .prepare("SELECT dia_utc, vehiculo_id, entradas, salidas FROM cruces_por_dia ORDER BY dia_utc, vehiculo_id")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    proptest::proptest! {
        /// The crossings counted as the events are written are the table the SQL fill makes
        /// from them: every kind, visits under way as the data began, without an end, across
        /// midnight and before 1970.
        #[test]
        fn crossings_counted_while_writing_are_the_fill(
            events in proptest::collection::vec(
                (1..5i64, 0..4usize, -200_000..400_000i64, proptest::option::of(0..200_000i64), proptest::bool::ANY),
                0..200,
            ),
        ) {
            let kinds = [EventKind::Stop, EventKind::Overspeed, EventKind::Gap, EventKind::Visit];
            let conn = Connection::open_in_memory().unwrap();
            conn.execute_batch("PRAGMA foreign_keys = OFF;").unwrap();
            conn.execute_batch(DDL).unwrap();
            conn.execute_batch(ANALYSIS_DDL).unwrap();
            conn.execute_batch(CROSSINGS_DDL).unwrap();
            let mut counts = CrossingCounts::default();
            for (vehicle, kind, start, length, from_start) in events {
                let event = row(vehicle, kinds[kind], start, length.map(|l| start + l), from_start);
                conn.execute(
                    &format!(
                        "INSERT INTO eventos ({}) VALUES ({})",
                        super::super::analysis::EVENT_VALUE_COLUMNS,
                        super::super::analysis::placeholders(super::super::analysis::EVENT_VALUES)
                    ),
                    rusqlite::params_from_iter(super::super::analysis::event_values(&event)),
                )
                .unwrap();
                counts.add(&event);
            }
            conn.execute_batch(CROSSINGS_FILL).unwrap();
            let filled = crossing_rows(&conn);
            counts.write(&conn).unwrap();
            proptest::prop_assert_eq!(crossing_rows(&conn), filled);
        }
    }
}
