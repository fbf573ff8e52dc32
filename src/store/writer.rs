//! Writing a new database: schema, fleet tables, positions as pages, analysis.
//!
//! Owns the write path of `flota simular`. The file is built under a temporary name next to
//! the target with journaling off (a crash leaves only that temporary file behind, never a
//! damaged database) and is renamed into place by [`crate::plumbing::output`] only when complete.
//! SQLite makes the file with the whole schema and closes it; the positions, which arrive in
//! key order, are appended to it as finished B-tree pages ([`super::pages`]), while the fleet
//! and the detections go through SQLite into a second file beside it with the same schema.
//! When the positions are complete, SQLite copies that file's tables into the database (an
//! `INSERT … SELECT *` into an empty table of the same shape moves whole records), the second
//! file is removed, and the change log, the analysis's indexes and statistics are made in the
//! database itself. Memory stays flat whatever the fleet size (one page per B-tree level).

use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};

use super::coverage::{self, Covered, CrossingCounts};
use super::encoding::PositionRow;
use super::meta;
use super::pages::{self, PositionTree, TreeError};
use super::schema::{
    ANALYSIS_INDEXES_DDL, ANALYSIS_TABLES_DDL, CHANGE_LOG_DDL, DDL, SCHEMA_VERSION,
    VEHICLE_INDEXES_DDL,
};
use crate::scenario::World;

/// Positions between commits of the side file's open transaction (the detections written
/// meanwhile), and between the flusher's passes over the database.
pub const BATCH_ROWS: usize = 50_000;

/// The side file's name: the database's temporary name and this.
const SIDE_SUFFIX: &str = "-tablas";

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// SQLite's failure in Spanish ([`super::reader::sqlite_words`]); the library's error is
    /// not kept as a source, so nothing prints its English.
    #[error("{path}: {message}")]
    Sqlite { path: String, message: String },
    /// A PostgreSQL failure, worded by the store.
    #[error(transparent)]
    Store(#[from] super::reader::StoreError),
}

fn write_error(path: &str, e: &rusqlite::Error) -> WriteError {
    WriteError::Sqlite {
        path: path.to_owned(),
        message: super::reader::sqlite_words(e),
    }
}

fn disk_error(path: &str, e: &std::io::Error) -> WriteError {
    WriteError::Sqlite {
        path: path.to_owned(),
        message: pages::io_words(e).to_owned(),
    }
}

/// Journal off: a half-written file is thrown away, never repaired. The page size before
/// anything is written.
const PRAGMAS: &str = "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA foreign_keys = OFF; PRAGMA page_size = 16384;";

/// Opens `path` (new or empty) and gives it the schema of a database being simulated: the
/// analysis's time-keyed indexes come later ([`SqliteWriter::finish`]), those keyed first by
/// vehicle are there from the start.
fn create_schema(path: &Path, shown: &str) -> Result<Connection, WriteError> {
    let wrap = |source| write_error(shown, &source);
    let conn = Connection::open(path).map_err(wrap)?;
    conn.execute_batch(PRAGMAS).map_err(wrap)?;
    // One transaction for the whole schema: each of its ~25 statements committed on its own
    // took the file's locks, looked for a journal and rewrote the first page again, 500
    // `fcntl` calls for the two files of the reference week.
    let tx = conn.unchecked_transaction().map_err(wrap)?;
    tx.execute_batch(DDL).map_err(wrap)?;
    tx.execute_batch(ANALYSIS_TABLES_DDL).map_err(wrap)?;
    tx.execute_batch(VEHICLE_INDEXES_DDL).map_err(wrap)?;
    tx.execute_batch(CHANGE_LOG_DDL).map_err(wrap)?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(wrap)?;
    tx.commit().map_err(wrap)?;
    Ok(conn)
}

/// The database being written and, until merged and removed, its side file.
struct Files {
    database: PathBuf,
    side: Option<PathBuf>,
}

pub struct SqliteWriter {
    /// The side file's connection while positions are written; the database's once they
    /// are complete ([`Self::merge`]).
    conn: Connection,
    path: String,
    /// The database and its side file (boxed as [`Self::crossings`]).
    files: Box<Files>,
    /// `posiciones`' pages being written, until merged; boxed as [`Self::crossings`].
    tree: Option<Box<PositionTree>>,
    /// Positions since the side file's transaction was opened (0: none open).
    in_batch: usize,
    pub rows: u64,
    /// `cruces_por_dia` counted from the events as they are written ([`Self::seal_analysis`]);
    /// boxed so that `Writer`'s two variants stay of a size.
    crossings: Box<CrossingCounts>,
}

impl SqliteWriter {
    /// Creates `path` (which must not exist, or be empty) with the schema, and its side file.
    pub fn create(path: &Path) -> Result<SqliteWriter, WriteError> {
        let shown = path.display().to_string();
        let conn = create_schema(path, &shown)?;
        let root: u32 = conn
            .query_row(
                "SELECT rootpage FROM sqlite_schema WHERE type = 'table' AND name = 'posiciones'",
                [],
                |r| r.get(0),
            )
            .map_err(|e| write_error(&shown, &e))?;
        conn.close().map_err(|(_, e)| write_error(&shown, &e))?;
        let layout = pages::layout_of(path, root).map_err(|e| disk_error(&shown, &e))?;
        let tree = PositionTree::open(path, layout).map_err(|e| disk_error(&shown, &e))?;
        let mut side_name = path.as_os_str().to_owned();
        side_name.push(SIDE_SUFFIX);
        let side = PathBuf::from(side_name);
        // One a crash left behind is stale.
        let _ = std::fs::remove_file(&side);
        let mut writer = SqliteWriter {
            // Replaced at once; a connection in memory costs nothing to open.
            conn: Connection::open_in_memory().map_err(|e| write_error(&shown, &e))?,
            path: shown,
            files: Box::new(Files {
                database: path.to_path_buf(),
                side: Some(side.clone()),
            }),
            tree: Some(Box::new(tree)),
            in_batch: 0,
            rows: 0,
            crossings: Box::default(),
        };
        writer.conn = create_schema(&side, &writer.path)?;
        Ok(writer)
    }

    fn wrap(&self, source: rusqlite::Error) -> WriteError {
        write_error(&self.path, &source)
    }

    /// Vehicles, geofences, routes and stops.
    pub fn write_fleet(&mut self, world: &World) -> Result<(), WriteError> {
        self.commit_open()?;
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction()
            .map_err(|e| write_error(&path, &e))?;
        let result = (|| {
            for (index, unit) in world.units.iter().enumerate() {
                let routes: Vec<&str> = unit
                    .routes
                    .iter()
                    .map(|r| world.routes[*r].name.as_str())
                    .collect();
                tx.execute(
                    "INSERT INTO vehiculos (id, placa, tipo, conductor, activo, limite_kmh, rutas, zona_horaria) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    params![
                        index as i64 + 1,
                        unit.plate,
                        unit.kind,
                        unit.driver,
                        unit.active,
                        unit.limit_kmh,
                        serde_json::to_string(&routes).unwrap_or_default(),
                        unit.zone.name()
                    ],
                )?;
            }
            for (index, fence) in world.fences.iter().enumerate() {
                let centre = fence.centre();
                let (half_side, radius) = match fence.shape {
                    crate::geometry::geofence::Shape::Square { half_side_m, .. } => {
                        (Some(half_side_m), None)
                    }
                    crate::geometry::geofence::Shape::Circle { radius_m, .. } => {
                        (None, Some(radius_m))
                    }
                    crate::geometry::geofence::Shape::Polygon { .. } => (None, None),
                };
                tx.execute(
                    "INSERT INTO geocercas (id, nombre, tipo, forma, centro_lat, centro_lon, medio_lado_m, radio_m, poligono_wkt, limite_kmh) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                    params![
                        index as i64 + 1,
                        fence.name,
                        fence.kind,
                        fence.shape_name(),
                        centre.lat,
                        centre.lon,
                        half_side,
                        radius,
                        fence.wkt(),
                        fence.speed_limit_kmh
                    ],
                )?;
            }
            for (index, route) in world.routes.iter().enumerate() {
                let id = index as i64 + 1;
                tx.execute(
                    "INSERT INTO rutas (id, nombre, fuente, polilinea, distancia_m, duracion_s) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![id, route.name, route.source, route.polyline, route.routed_distance_m, route.routed_duration_s],
                )?;
                for (order, stop) in route.stops.iter().enumerate() {
                    tx.execute(
                        "INSERT INTO paradas (ruta_id, orden, nombre, lat, lon) VALUES (?1, ?2, ?3, ?4, ?5)",
                        params![id, order as i64, stop.name, stop.position.lat, stop.position.lon],
                    )?;
                }
            }
            Ok::<(), rusqlite::Error>(())
        })();
        result.map_err(|e| write_error(&path, &e))?;
        tx.commit().map_err(|e| self.wrap(e))
    }

    /// One unit's rows, in key order (time, then sequence), units in increasing id order.
    /// A row whose key is not after the previous one (a repeated position) or with a value
    /// SQLite would store as NULL is an error, as a failed constraint was.
    pub fn write_positions(
        &mut self,
        vehicle_id: i64,
        rows: &[PositionRow],
    ) -> Result<(), WriteError> {
        let Some(tree) = self.tree.as_mut() else {
            return Err(WriteError::Sqlite {
                path: self.path.clone(),
                message: "posiciones escritas tras cerrar la tabla".into(),
            });
        };
        for (written, row) in rows.iter().enumerate() {
            match tree.add(vehicle_id, row) {
                Ok(()) => {}
                Err(TreeError::Io(e)) => return Err(disk_error(&self.path, &e)),
                Err(TreeError::Order | TreeError::Null) => {
                    return Err(WriteError::Sqlite {
                        path: self.path.clone(),
                        message: format!(
                            "la unidad {vehicle_id} tiene una posición repetida o incompleta (se escribieron {written} de {} filas)",
                            rows.len()
                        ),
                    });
                }
            }
        }
        self.rows += rows.len() as u64;
        if self.in_batch > 0 {
            self.in_batch += rows.len();
            if self.in_batch > BATCH_ROWS {
                self.commit_open()?;
            }
        }
        Ok(())
    }

    /// One vehicle's detections, in the side file's open transaction.
    pub fn write_analysis(
        &mut self,
        vehicle_id: i64,
        analysis: &crate::engine::Analysis,
        fence_ids: &[i64],
        config: &crate::engine::DetectionConfig,
        now_utc: i64,
    ) -> Result<(), WriteError> {
        if self.in_batch == 0 {
            self.conn.execute_batch("BEGIN").map_err(|e| self.wrap(e))?;
            self.in_batch = 1;
        }
        super::analysis::insert(
            &self.conn,
            vehicle_id,
            analysis,
            fence_ids,
            config,
            now_utc,
            Some(&mut self.crossings),
        )
        .map_err(|e| write_error(&self.path, &e))
    }

    /// What the simulation of `world` records about itself in `meta`, with the positions
    /// written so far (which ends them).
    pub fn write_meta(&mut self, world: &World) -> Result<(), WriteError> {
        self.merge()?;
        meta::write(&self.conn, &meta::of_world(world, self.rows)).map_err(|e| self.wrap(e))
    }

    /// Once every unit's positions and analysis are written: ends the positions, records
    /// what the analysis covered and starts the change log, exactly as `flota analizar` does.
    /// The log's triggers are created only now, so the bulk writes above never fire them.
    pub fn seal_analysis(&mut self, covered: &Covered<'_>) -> Result<(), WriteError> {
        self.merge()?;
        let started = std::time::Instant::now();
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction()
            .map_err(|e| write_error(&path, &e))?;
        // Every `eventos` row of this new file went through `write_analysis`.
        coverage::seal_with(&tx, covered, Some(&self.crossings))
            .and_then(|()| tx.commit())
            .map_err(|e| write_error(&path, &e))?;
        crate::log_debug!("análisis sellado: {:?}", started.elapsed());
        Ok(())
    }

    fn commit_open(&mut self) -> Result<(), WriteError> {
        if self.in_batch > 0 {
            self.conn
                .execute_batch("COMMIT")
                .map_err(|e| self.wrap(e))?;
            self.in_batch = 0;
        }
        Ok(())
    }

    /// Ends the positions (the tree's last pages, its top in the root, the page count), then
    /// has SQLite copy the side file's tables into the database, removes the side file, and
    /// goes on in the database. Once; later calls do nothing.
    fn merge(&mut self) -> Result<(), WriteError> {
        let Some(tree) = self.tree.take() else {
            return Ok(());
        };
        self.commit_open()?;
        let started = std::time::Instant::now();
        let pages = tree.finish().map_err(|e| disk_error(&self.path, &e))?;
        crate::log_debug!("posiciones: {pages} páginas, {:?}", started.elapsed());
        let started = std::time::Instant::now();
        let path = self.path.clone();
        let wrap = |source| write_error(&path, &source);
        let tables: Vec<String> = self
            .conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name <> 'posiciones' AND name NOT LIKE 'sqlite%' ORDER BY rootpage")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(wrap)?;
        self.conn
            .execute(
                "ATTACH DATABASE ?1 AS destino",
                [self.files.database.to_string_lossy()],
            )
            .map_err(wrap)?;
        let copy = (|| {
            // An attached file keeps SQLite's defaults, a rollback journal synced at every
            // commit: the copy made, synced and deleted `-journal` beside the database (three
            // syncs, 12–45 ms of the reference week with the workers idle). The database is a
            // temporary file, thrown away if anything fails, as when it was written.
            self.conn.execute_batch(
                "PRAGMA destino.journal_mode = OFF; PRAGMA destino.synchronous = OFF;",
            )?;
            self.conn.execute_batch("BEGIN")?;
            for table in &tables {
                self.conn.execute_batch(&format!(
                    "INSERT INTO destino.\"{table}\" SELECT * FROM main.\"{table}\";"
                ))?;
            }
            self.conn.execute_batch("COMMIT; DETACH DATABASE destino;")
        })();
        copy.map_err(wrap)?;
        let database = Connection::open(&self.files.database).map_err(wrap)?;
        database.execute_batch(PRAGMAS).map_err(wrap)?;
        let side = std::mem::replace(&mut self.conn, database);
        side.close().map_err(|(_, e)| write_error(&path, &e))?;
        if let Some(side) = self.files.side.take() {
            std::fs::remove_file(&side).map_err(|e| disk_error(&path, &e))?;
        }
        crate::log_debug!("tablas copiadas: {:?}", started.elapsed());
        Ok(())
    }

    /// Commits, builds the analysis's secondary indexes (one sort each, rather than row by
    /// row across the load), gathers planner statistics for the analysis tables, and closes
    /// the file.
    pub fn finish(mut self) -> Result<(), WriteError> {
        self.merge()?;
        let started = std::time::Instant::now();
        self.conn
            .execute_batch(ANALYSIS_INDEXES_DDL)
            .map_err(|e| self.wrap(e))?;
        crate::log_debug!("índices de eventos: {:?}", started.elapsed());
        let started = std::time::Instant::now();
        super::analysis::analyze_tables(&self.conn).map_err(|e| self.wrap(e))?;
        crate::log_debug!("estadísticas: {:?}", started.elapsed());
        let path = self.path.clone();
        let conn = std::mem::replace(
            &mut self.conn,
            Connection::open_in_memory().map_err(|e| write_error(&path, &e))?,
        );
        conn.close()
            .map_err(|(_, source)| write_error(&path, &source))
    }
}

impl Drop for SqliteWriter {
    /// A writer given up before its merge leaves no side file behind.
    fn drop(&mut self) {
        if let Some(side) = self.files.side.take() {
            let _ = std::fs::remove_file(side);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn indexes(conn: &Connection) -> Vec<String> {
        let mut statement = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'eventos' AND sql IS NOT NULL ORDER BY name")
            .unwrap();
        statement
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    fn row(ts_utc: i64, lat_e6: i64) -> PositionRow {
        PositionRow {
            ts_utc,
            sequence: 0,
            row: super::super::encoding::StoredRow {
                delay_s: 0,
                lat_e6,
                lon_e6: -3_703_790,
                speed_kmh: 12.5,
                heading_deg: 90,
                ignition: true,
                odometer_m: 1000,
            },
        }
    }

    /// Every row of `posiciones` in the finished file at `path`, by key.
    fn stored(path: &Path) -> Vec<(i64, PositionRow)> {
        let conn = Connection::open(path).unwrap();
        conn.prepare("SELECT vehiculo_id, ts_utc, secuencia, retraso_s, lat_e6, lon_e6, velocidad_kmh, rumbo_grados, ignicion, odometro_m FROM posiciones ORDER BY vehiculo_id, ts_utc, secuencia")
            .unwrap()
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    PositionRow {
                        ts_utc: r.get(1)?,
                        sequence: r.get(2)?,
                        row: super::super::encoding::StoredRow {
                            delay_s: r.get(3)?,
                            lat_e6: r.get(4)?,
                            lon_e6: r.get(5)?,
                            speed_kmh: r.get(6)?,
                            heading_deg: r.get(7)?,
                            ignition: r.get::<_, i64>(8)? != 0,
                            odometer_m: r.get(9)?,
                        },
                    },
                ))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// Rows go in whole, call after call and vehicle after vehicle, and the finished file is
    /// sound, holds them, and no side file is left; a key already written, or one before the
    /// previous, is an error in Spanish naming the unit.
    #[test]
    fn rows_are_stored_as_given_and_a_repeated_key_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let mut writer = SqliteWriter::create(&path).unwrap();
        let rows: Vec<PositionRow> = (0..2_000)
            .map(|i| row(1_000 + i * 15, 40_000_000 + i))
            .collect();
        writer.write_positions(7, &rows[..1_500]).unwrap();
        writer.write_positions(7, &rows[1_500..]).unwrap();
        writer.write_positions(9, &rows[..3]).unwrap();
        for (vehicle, again) in [(9, &rows[2..3]), (9, &rows[1..2]), (8, &rows[5..6])] {
            let refused = writer.write_positions(vehicle, again);
            let Err(WriteError::Sqlite { message, .. }) = refused else {
                panic!("{refused:?}");
            };
            assert!(
                message.contains(&format!("la unidad {vehicle} tiene una posición repetida")),
                "{message}"
            );
        }
        assert_eq!(writer.rows, 2_003);
        writer.finish().unwrap();
        let conn = Connection::open(&path).unwrap();
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
        let mut expected: Vec<(i64, PositionRow)> = rows.iter().map(|r| (7, *r)).collect();
        expected.extend(rows[..3].iter().map(|r| (9, *r)));
        assert_eq!(stored(&path), expected);
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["t.db"]);
    }

    /// A writer given up halfway (an interrupted simulation) leaves no side file.
    #[test]
    fn a_writer_given_up_leaves_no_side_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let mut writer = SqliteWriter::create(&path).unwrap();
        writer.write_positions(1, &[row(1, 2)]).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        drop(writer);
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["t.db"]);
    }

    /// Values repeat from row to row (as a parked unit's do) and change anywhere: every row is
    /// stored as given, over several vehicles and calls.
    #[test]
    fn rows_whose_values_repeat_are_stored_as_given() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let mut writer = SqliteWriter::create(&path).unwrap();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut pick = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n) as usize
        };
        let mut expected = Vec::new();
        for (vehicle_id, first, count) in [(3, 0, 130), (3, 130, 101), (5, 0, 77), (5, 77, 1)] {
            let rows: Vec<PositionRow> = (first..first + count)
                .map(|i| PositionRow {
                    ts_utc: 1_000 + i * 15,
                    sequence: [0, 0, 1][pick(3)],
                    row: super::super::encoding::StoredRow {
                        delay_s: [0, 0, 7][pick(3)],
                        lat_e6: [40_000_000, 40_000_000, 40_000_001][pick(3)],
                        lon_e6: [-3_703_790, -3_703_791][pick(2)],
                        speed_kmh: [0.0, 0.0, 12.5, 30.1][pick(4)],
                        heading_deg: [0, 90, 359][pick(3)],
                        ignition: pick(2) == 0,
                        odometer_m: [-1, 1000, 1000, 1001][pick(4)],
                    },
                })
                .collect();
            writer.write_positions(vehicle_id, &rows).unwrap();
            expected.extend(rows.iter().map(|r| (vehicle_id, *r)));
        }
        writer.finish().unwrap();
        assert_eq!(stored(&path).len(), 309);
        assert_eq!(stored(&path), expected);
    }

    /// The time-keyed indexes of `eventos` are built once after the load (not kept up to
    /// date row by row while vehicles are written: their pages would be spread over the
    /// whole index), those keyed first by vehicle are there from the start, and the finished
    /// file has every one.
    #[test]
    fn the_analysis_indexes_are_built_after_the_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let writer = SqliteWriter::create(&path).unwrap();
        assert_eq!(
            indexes(&writer.conn),
            ["eventos_paradas_por_fin", "eventos_por_vehiculo"]
        );
        writer.finish().unwrap();
        let conn = Connection::open(&path).unwrap();
        assert_eq!(
            indexes(&conn),
            [
                "eventos_alertas",
                "eventos_entradas",
                "eventos_paradas_por_fin",
                "eventos_por_fin",
                "eventos_por_vehiculo",
                "eventos_prolongadas"
            ]
        );
    }
}
