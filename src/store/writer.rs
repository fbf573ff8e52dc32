//! Writing a new database: schema, fleet tables, positions in batched transactions.
//!
//! Owns the write path of `flota simular`. The file is built under a temporary name next to
//! the target with journaling off (a crash leaves only that temporary file behind, never a
//! damaged database) and is renamed into place by [`crate::plumbing::output`] only when complete.
//! Positions stream in per unit with one prepared statement and a commit every
//! [`BATCH_ROWS`] rows, so memory stays flat whatever the fleet size.

use std::path::Path;

use rusqlite::{Connection, params};

use super::coverage::{self, Covered, CrossingCounts};
use super::encoding::PositionRow;
use super::meta;
use super::schema::{
    ANALYSIS_INDEXES_DDL, ANALYSIS_TABLES_DDL, CHANGE_LOG_DDL, DDL, SCHEMA_VERSION,
    VEHICLE_INDEXES_DDL,
};
use crate::scenario::World;

/// Rows per transaction.
pub const BATCH_ROWS: usize = 50_000;
/// Rows per INSERT statement.
const ROWS_PER_INSERT: usize = 50;
/// Columns of `posiciones`.
const COLUMNS: usize = 10;
/// `OR IGNORE`: a statement that cannot abort needs no statement journal, which copied every
/// page the statement changed that existed before it (the B-tree's right edge, each
/// statement); a row it would ignore — a repeated key, a NULL — is still an error, found by
/// the count of rows inserted ([`SqliteWriter::write_positions`]).
const INSERT_HEAD: &str = "INSERT OR IGNORE INTO posiciones (vehiculo_id, ts_utc, secuencia, retraso_s, lat_e6, lon_e6, velocidad_kmh, rumbo_grados, ignicion, odometro_m) VALUES ";

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

pub struct SqliteWriter {
    conn: Connection,
    path: String,
    in_batch: usize,
    insert_one: String,
    insert_many: String,
    pub rows: u64,
    /// `cruces_por_dia` counted from the events as they are written ([`Self::seal_analysis`]);
    /// boxed so that `Writer`'s two variants stay of a size.
    crossings: Box<CrossingCounts>,
}

impl SqliteWriter {
    /// Creates `path` (which must not exist) with the schema.
    pub fn create(path: &Path) -> Result<SqliteWriter, WriteError> {
        let shown = path.display().to_string();
        let wrap = |source| write_error(&shown, &source);
        let conn = Connection::open(path).map_err(wrap)?;
        // A half-written temporary file is thrown away, never repaired: no journal needed.
        conn.execute_batch(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA foreign_keys = OFF; PRAGMA page_size = 16384;",
        )
        .map_err(wrap)?;
        conn.execute_batch(DDL).map_err(wrap)?;
        // The analysis's time-keyed indexes are built by `finish`, after the bulk load; those
        // keyed first by vehicle take the rows at their right edge as they come.
        conn.execute_batch(ANALYSIS_TABLES_DDL).map_err(wrap)?;
        conn.execute_batch(VEHICLE_INDEXES_DDL).map_err(wrap)?;
        conn.execute_batch(CHANGE_LOG_DDL).map_err(wrap)?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(wrap)?;
        Ok(SqliteWriter {
            conn,
            path: shown,
            in_batch: 0,
            insert_one: insert_sql(1),
            insert_many: insert_sql(ROWS_PER_INSERT),
            rows: 0,
            crossings: Box::default(),
        })
    }

    fn wrap(&self, source: rusqlite::Error) -> WriteError {
        write_error(&self.path, &source)
    }

    /// Vehicles, geofences, routes and stops.
    pub fn write_fleet(&mut self, world: &World) -> Result<(), WriteError> {
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

    /// One unit's rows (any order; the primary key clusters them). A row the table refuses
    /// (its key already there) is an error, as a failed constraint was.
    pub fn write_positions(
        &mut self,
        vehicle_id: i64,
        rows: &[PositionRow],
    ) -> Result<(), WriteError> {
        let path = &self.path;
        let wrap = |source| write_error(path, &source);
        let conn = &self.conn;
        // Many rows per statement: binding is cheap, stepping a statement is not.
        let mut many = conn.prepare_cached(&self.insert_many).map_err(wrap)?;
        let mut one = conn.prepare_cached(&self.insert_one).map_err(wrap)?;
        // Both statements come from the cache with their bindings cleared: nothing is known
        // to be bound yet.
        let mut many_bound = Bound::new(ROWS_PER_INSERT);
        let mut one_bound = Bound::new(1);
        let mut rest = rows;
        while !rest.is_empty() {
            if self.in_batch == 0 {
                conn.execute_batch("BEGIN").map_err(wrap)?;
            }
            let take = if rest.len() >= ROWS_PER_INSERT {
                ROWS_PER_INSERT
            } else {
                1
            };
            let (chunk, tail) = rest.split_at(take);
            let (insert, bound) = if take == ROWS_PER_INSERT {
                (&mut many, &mut many_bound)
            } else {
                (&mut one, &mut one_bound)
            };
            bind_rows(insert, vehicle_id, chunk, bound).map_err(wrap)?;
            let inserted = insert.raw_execute().map_err(wrap)?;
            if inserted != take {
                return Err(WriteError::Sqlite {
                    path: path.clone(),
                    message: format!(
                        "la unidad {vehicle_id} tiene una posición repetida o incompleta (se escribieron {inserted} de {take} filas)"
                    ),
                });
            }
            rest = tail;
            self.in_batch += take;
            self.rows += take as u64;
            if self.in_batch >= BATCH_ROWS {
                conn.execute_batch("COMMIT").map_err(wrap)?;
                self.in_batch = 0;
            }
        }
        Ok(())
    }

    /// One vehicle's detections, in the current batch transaction.
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
    /// written so far.
    pub fn write_meta(&mut self, world: &World) -> Result<(), WriteError> {
        self.commit_open()?;
        meta::write(&self.conn, &meta::of_world(world, self.rows)).map_err(|e| self.wrap(e))
    }

    /// Once every unit's positions and analysis are written: records what the analysis
    /// covered and starts the change log, exactly as `flota analizar` does. The log's
    /// triggers are created only now, so the bulk writes above never fire them.
    pub fn seal_analysis(&mut self, covered: &Covered<'_>) -> Result<(), WriteError> {
        self.commit_open()?;
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

    /// Commits, builds the analysis's secondary indexes (one sort each, rather than row by
    /// row across the load), gathers planner statistics for the analysis tables, and closes
    /// the file.
    pub fn finish(mut self) -> Result<(), WriteError> {
        self.commit_open()?;
        let started = std::time::Instant::now();
        self.conn
            .execute_batch(ANALYSIS_INDEXES_DDL)
            .map_err(|e| self.wrap(e))?;
        crate::log_debug!("índices de eventos: {:?}", started.elapsed());
        let started = std::time::Instant::now();
        super::analysis::analyze_tables(&self.conn).map_err(|e| self.wrap(e))?;
        crate::log_debug!("estadísticas: {:?}", started.elapsed());
        let path = self.path.clone();
        self.conn
            .close()
            .map_err(|(_, source)| write_error(&path, &source))
    }
}

/// The insert of `rows` rows: the vehicle is parameter 1 in every row (bound once per
/// execution, not once per row), each row's other columns the next nine.
fn insert_sql(rows: usize) -> String {
    let mut sql = String::from(INSERT_HEAD);
    for i in 0..rows {
        if i > 0 {
            sql.push(',');
        }
        sql.push_str("(?1");
        for column in 1..COLUMNS {
            sql.push_str(&format!(",?{}", 2 + i * (COLUMNS - 1) + column - 1));
        }
        sql.push(')');
    }
    sql
}

/// What a statement's row parameters hold since its last execution, as bits. SQLite keeps
/// a statement's bindings across executions (`sqlite3_reset` leaves them), so a value equal
/// to the one already bound there — a fix's sequence and delay, the ignition, a parked unit's
/// speed and heading, often the same as the row's in the previous statement — is not bound
/// again: a bind is ~45 instructions of SQLite and rusqlite, a comparison a few. Valid only
/// while the statement stays out of rusqlite's cache, which clears the bindings when it
/// takes a statement back ([`SqliteWriter::write_positions`] starts each call unknown).
struct Bound {
    bits: Vec<u64>,
    known: bool,
}

impl Bound {
    fn new(rows: usize) -> Bound {
        Bound {
            bits: vec![0; rows * (COLUMNS - 1)],
            known: false,
        }
    }
}

/// Binds `chunk`'s rows to `insert`'s parameters ([`insert_sql`]'s numbering), each value only
/// where [`Bound`] does not show it there already. One `Result` for the chunk: a wrapped error
/// per bound value cost the writer thread about 4 % of its time. The rows come encoded from
/// the workers: the writer thread only binds.
fn bind_rows(
    insert: &mut rusqlite::Statement<'_>,
    vehicle_id: i64,
    chunk: &[PositionRow],
    bound: &mut Bound,
) -> rusqlite::Result<()> {
    let known = bound.known;
    if !known {
        insert.raw_bind_parameter(1, vehicle_id)?;
    }
    // Set before binding: should a bind fail, the caller gives up on the statement.
    bound.known = true;
    let mut index = 2;
    for (r, slots) in chunk.iter().zip(bound.bits.chunks_exact_mut(COLUMNS - 1)) {
        let row = &r.row;
        let integers = [
            r.ts_utc,
            i64::from(r.sequence),
            row.delay_s,
            row.lat_e6,
            row.lon_e6,
        ];
        for (value, slot) in integers.into_iter().zip(&mut slots[..5]) {
            bind_changed(insert, index, slot, known, value as u64, value)?;
            index += 1;
        }
        let speed = row.speed_kmh;
        bind_changed(insert, index, &mut slots[5], known, speed.to_bits(), speed)?;
        let tail = [row.heading_deg, i64::from(row.ignition), row.odometer_m];
        for (value, slot) in tail.into_iter().zip(&mut slots[6..]) {
            bind_changed(insert, index + 1, slot, known, value as u64, value)?;
            index += 1;
        }
        index += 1;
    }
    Ok(())
}

/// Binds `value` to parameter `index` unless `slot` shows the same bits bound there.
#[inline(always)]
fn bind_changed<T: rusqlite::ToSql>(
    insert: &mut rusqlite::Statement<'_>,
    index: usize,
    slot: &mut u64,
    known: bool,
    bits: u64,
    value: T,
) -> rusqlite::Result<()> {
    if !known || *slot != bits {
        insert.raw_bind_parameter(index, value)?;
        *slot = bits;
    }
    Ok(())
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

    /// Rows go in whole (the vehicle bound once per statement, each row's own columns), in
    /// full statements and single rows; a key already in the table is an error even though
    /// the insert ignores conflicts, in a full statement or alone.
    #[test]
    fn rows_are_stored_as_given_and_a_repeated_key_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = SqliteWriter::create(&dir.path().join("t.db")).unwrap();
        let rows: Vec<PositionRow> = (0..ROWS_PER_INSERT as i64 + 3)
            .map(|i| row(1_000 + i * 15, 40_000_000 + i))
            .collect();
        writer.write_positions(7, &rows).unwrap();
        writer.commit_open().unwrap();
        let stored: Vec<(i64, i64, i64, f64, i64)> = writer
            .conn
            .prepare("SELECT vehiculo_id, ts_utc, lat_e6, velocidad_kmh, odometro_m FROM posiciones ORDER BY ts_utc")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let expected: Vec<_> = rows
            .iter()
            .map(|r| (7, r.ts_utc, r.row.lat_e6, 12.5, 1000))
            .collect();
        assert_eq!(stored, expected);
        assert_eq!(writer.rows, rows.len() as u64);

        let again = writer.write_positions(7, &rows[3..4]);
        assert!(matches!(again, Err(WriteError::Sqlite { .. })), "{again:?}");
        let mut full: Vec<PositionRow> = (0..ROWS_PER_INSERT as i64)
            .map(|i| row(900_000 + i, 1))
            .collect();
        full[ROWS_PER_INSERT - 1] = rows[0];
        let again = writer.write_positions(7, &full);
        assert!(matches!(again, Err(WriteError::Sqlite { .. })), "{again:?}");
    }

    /// Values repeat from row to row and from statement to statement (as a parked unit's do)
    /// and change anywhere: whatever the writer leaves bound from the previous statement,
    /// every row is stored as given, over several vehicles and calls, full statements and
    /// single rows.
    #[test]
    fn rows_whose_values_repeat_are_stored_as_given() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = SqliteWriter::create(&dir.path().join("t.db")).unwrap();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut pick = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n) as usize
        };
        let mut expected = Vec::new();
        for (vehicle_id, first, count) in [(3, 0, 130), (5, 0, 77), (3, 130, 101), (5, 77, 1)] {
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
        writer.commit_open().unwrap();
        expected.sort_by_key(|(v, r)| (*v, r.ts_utc));
        let stored: Vec<(i64, PositionRow)> = writer
            .conn
            .prepare("SELECT vehiculo_id, ts_utc, secuencia, retraso_s, lat_e6, lon_e6, velocidad_kmh, rumbo_grados, ignicion, odometro_m FROM posiciones ORDER BY vehiculo_id, ts_utc")
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
            .unwrap();
        assert_eq!(stored.len(), 309);
        assert_eq!(stored, expected);
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
