//! The SQLite schema of a flota database, in one place, with its version.
//!
//! Owns the DDL and the version number. Tables and columns are Spanish (users query them);
//! units live in column names. Positions are clustered by (vehicle, fix time) so a unit's day
//! is one contiguous range, and stored as integers where a fixed point is exact enough
//! (microdegrees are 0.11 m; metres for the odometer): it halves the file and speeds up
//! writing; `vista_posiciones` shows them in degrees and kilometres. There is no truth column
//! anywhere: the ground truth lives in its own file. Documented in docs/datos.md.
//!
//! The detection engine's tables are created apart ([`ANALYSIS_DDL`], idempotent) so that
//! `flota analizar` can recreate them in a file that lost them. The change log
//! `cambios_desde_analisis` and its triggers record, per table and vehicle, the rows anyone
//! wrote to the positions or the detections after the analysis: the analysis drops the
//! triggers while it writes and empties the log when it is done (src/store/coverage.rs).

/// Bumped whenever a table or column changes; readers refuse other versions. 2: each vehicle's
/// zone (`vehiculos.zona_horaria`).
pub const SCHEMA_VERSION: i64 = 2;

/// Bumped whenever the detection engine's output for the same positions changes; the server
/// tells the user to run `flota analizar` when a database was analysed by another version.
/// 5: each event's evidence (`eventos.primer_reporte_utc` … `umbral_valor`). 6: GPS km skip
/// jumps, the odometer's trust bound, speeding against Doppler noise and slow zones' edges. 7: stops under drift
/// and signal losses against each unit's cadence while stopped, exits dated by their own fixes.
/// 8: GPS km across a halt between an adaptive tracker's records (its cadence while moving);
/// a departure recorded while the unit was still setting off is dated by its speed, not by
/// its distance from the stop's centre (the drift). 9: a fence's debounce counts from the
/// interpolated crossing; an odometer that advanced between two still fixes ends the stop;
/// an unconfirmed last "off" is no day end; an "off" that jumped away still counts; GPS km:
/// jumps skipped at any cadence (a detour through one fix beyond two noise margins), no noise
/// counted across a silent stop (a parked unit's noise learned from its still fixes minutes
/// apart and from the chords across such silences). 10: GPS km across a silence that began at
/// an "off" fix still counts when that fix showed a driving speed (a flickered "off"). 11: a
/// lone "off" (an "on" report within the loss threshold before it) straight into a silence is a
/// flicker before a signal loss when most of the unit's shutdowns kept reporting "off"; and
/// geofence crossings counted per vehicle and UTC day (`cruces_por_dia`, kept by triggers).
/// 12: GPS km: no chord across a stop of a tracker silent while standing (adaptive recording).
/// 13: the odometer of a tracker recording a moving unit a minute or more apart is trusted
/// between the GPS distance (a lower bound there) and the unit's reach (top speed × time moving).
/// 14: a geofence crossing shown by one fix after a silence waits for the next fix: back on the
/// old side farther than the speeds allow, that fix was a jump and nothing crossed; and GPS km:
/// a straight stretch's chord fused with its speeds (ending at a halt the unit moves off from
/// the way it arrived), on units whose roads mostly run straight.
/// 15: a lone "on" after "off" reports followed, within the tracker's sleep between them, by
/// "on" where the unit stood is a heartbeat's flicker, not the start of a signal loss; a
/// silence is judged against the unit's own cadence while moving (a 5-min tracker), and while
/// stopped, when no stop showed it, against its heartbeats' period while parked; and a still
/// speed between two moving fixes whose chord no path through a halt covers is invalid (a
/// phone's 0 km/h while driving), decided by the fix after it.
/// 16: a silence at a stop is a loss beyond the unit's cadence there plus the loss threshold
/// (was twice the cadence); a setting-off fix since a stop's last still one dates its
/// departure when the odometer shows a move at the next fix; an odometer that stood keeps a
/// parking whole however few fixes it rests on (hourly heartbeats drifting off at night).
/// 17: the GPS distance's noise margin falls back to a parked unit's noise when a tracker
/// never records two still fixes within a minute (a sparse adaptive one under-counted 9–15 %).
/// 18: the overspeed margin's Doppler noise is learned from each moving fix's departure from
/// its neighbours' line, not from consecutive changes (an adaptive tracker recording on 15 km/h
/// changes learned 17 km/h of noise and missed 108 km/h under a 100 km/h limit); a silence is
/// spent stopped when the odometer stood through it, whatever the last speed read; the GPS
/// distance drives a departure recorded at walking pace only its ramp, a halt recorded after a
/// driving speed to its end, and no wait between two walking-pace records (`comercial` +0.4 %).
/// 19: the distance rule's chords by the plain norm, not `hypot`, and its jump and stretch
/// chords on local planes, not haversines: km sums change in their last digits, no rule does.
pub const ANALYSIS_VERSION: i64 = 19;

pub const DDL: &str = "
CREATE TABLE meta (
    clave TEXT PRIMARY KEY,
    valor TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE vehiculos (
    id INTEGER PRIMARY KEY,
    placa TEXT NOT NULL UNIQUE,
    tipo TEXT NOT NULL,
    conductor TEXT NOT NULL,
    activo INTEGER NOT NULL,
    limite_kmh REAL NOT NULL,
    rutas TEXT NOT NULL,
    zona_horaria TEXT NOT NULL
);

CREATE TABLE geocercas (
    id INTEGER PRIMARY KEY,
    nombre TEXT NOT NULL UNIQUE,
    tipo TEXT NOT NULL,
    forma TEXT NOT NULL,
    centro_lat REAL NOT NULL,
    centro_lon REAL NOT NULL,
    medio_lado_m REAL,
    radio_m REAL,
    poligono_wkt TEXT NOT NULL,
    limite_kmh REAL
);

CREATE TABLE rutas (
    id INTEGER PRIMARY KEY,
    nombre TEXT NOT NULL UNIQUE,
    fuente TEXT NOT NULL,
    polilinea TEXT NOT NULL,
    distancia_m REAL NOT NULL,
    duracion_s REAL NOT NULL
);

CREATE TABLE paradas (
    ruta_id INTEGER NOT NULL REFERENCES rutas(id),
    orden INTEGER NOT NULL,
    nombre TEXT NOT NULL,
    lat REAL NOT NULL,
    lon REAL NOT NULL,
    PRIMARY KEY (ruta_id, orden)
) WITHOUT ROWID;

CREATE TABLE posiciones (
    vehiculo_id INTEGER NOT NULL REFERENCES vehiculos(id),
    ts_utc INTEGER NOT NULL,
    secuencia INTEGER NOT NULL DEFAULT 0,
    retraso_s INTEGER NOT NULL DEFAULT 0,
    lat_e6 INTEGER NOT NULL,
    lon_e6 INTEGER NOT NULL,
    velocidad_kmh REAL NOT NULL,
    rumbo_grados INTEGER NOT NULL,
    ignicion INTEGER NOT NULL,
    odometro_m INTEGER NOT NULL,
    PRIMARY KEY (vehiculo_id, ts_utc, secuencia)
) WITHOUT ROWID;

CREATE VIEW vista_posiciones AS
SELECT p.vehiculo_id, v.placa, p.ts_utc, datetime(p.ts_utc, 'unixepoch') AS ts_utc_texto,
       p.secuencia, p.ts_utc + p.retraso_s AS recibido_utc,
       p.lat_e6 / 1e6 AS lat, p.lon_e6 / 1e6 AS lon, p.velocidad_kmh, p.rumbo_grados,
       p.ignicion, CASE WHEN p.odometro_m < 0 THEN NULL ELSE p.odometro_m / 1000.0 END AS odometro_km
FROM posiciones p JOIN vehiculos v ON v.id = p.vehiculo_id;
";

/// Trackers known by their own id (an IMEI) rather than by their unit's plate: created by
/// `flota recibir` and `flota importar` when missing (older files lack it; nothing else
/// reads it).
pub const DEVICES_DDL: &str = "
CREATE TABLE IF NOT EXISTS dispositivos (
    dispositivo TEXT PRIMARY KEY,
    vehiculo_id INTEGER NOT NULL REFERENCES vehiculos(id)
) WITHOUT ROWID;
";

/// The detection engine's output tables and indexes, created when missing.
pub const ANALYSIS_DDL: &str = concat!(analysis_tables_ddl!(), analysis_indexes_ddl!());

/// The detection engine's output tables alone: `flota simular` creates these and
/// [`VEHICLE_INDEXES_DDL`] first, and the rest of [`ANALYSIS_INDEXES_DDL`] after the bulk load.
pub const ANALYSIS_TABLES_DDL: &str = analysis_tables_ddl!();

/// The secondary indexes of `eventos`. The alert view reads only indexes (`alertas` over a
/// month on 1,000 units read 1,300 table pages for 1,400 rows before they covered it):
/// speeding and signal losses with what ranks them (`eventos_alertas`), long-stop candidates
/// with their ends (`eventos_prolongadas`), geofence entries counted and listed from an index of
/// visits alone (`eventos_entradas`: half the pages of the index of every kind by start time,
/// `eventos_por_tipo`, a seventh fewer SQLite steps; exits stay on `eventos_por_fin`, as such an
/// index of them halved the pages but took a fifth more steps); a unit's stops by end time
/// (`eventos_paradas_por_fin`) find the stop under way and the last one ended without reading
/// its earlier stops. All but the first two ([`VEHICLE_INDEXES_DDL`]) are keyed by kind and
/// time across vehicles, so a vehicle's events land on leaf pages spread over the whole index: kept
/// up to date row by row while `flota simular` writes vehicle after vehicle, they made
/// SQLite write and read back pages far beyond its cache (14.7 GB written for a 2.4 GB
/// file). Built once at the end of the load, they are one sort. `eventos_por_tipo` is no
/// longer made: once the entries were read from `eventos_entradas` nothing a tool runs used it,
/// and it was the dearest of the builds at the end of `flota simular` (a text kind first).
/// Older files keep theirs; readers fall back to it only where `eventos_entradas` is missing.
pub const ANALYSIS_INDEXES_DDL: &str = analysis_indexes_ddl!();

/// The indexes of `eventos` keyed first by vehicle. `flota simular` writes the events vehicle
/// after vehicle, so these take each row at their right edge (the same few pages stay in
/// SQLite's cache) and it creates them before the load: kept row by row while the workers
/// still run, they cost the writer 1.6 G instructions on the scale scenario's 539,766 events
/// against 2.9 G to build them at the end with both workers idle.
pub const VEHICLE_INDEXES_DDL: &str = vehicle_indexes_ddl!();

// Macros rather than constants so `concat!` can join them into [`ANALYSIS_DDL`].
macro_rules! vehicle_indexes_ddl {
    () => {
        "
CREATE INDEX IF NOT EXISTS eventos_por_vehiculo ON eventos (vehiculo_id, inicio_utc);
CREATE INDEX IF NOT EXISTS eventos_paradas_por_fin ON eventos (vehiculo_id, fin_utc, inicio_utc)
    WHERE tipo = 'parada';
"
    };
}
use vehicle_indexes_ddl;

macro_rules! analysis_indexes_ddl {
    () => {
        concat!(
            vehicle_indexes_ddl!(),
            "
CREATE INDEX IF NOT EXISTS eventos_por_fin ON eventos (tipo, fin_utc, vehiculo_id);
CREATE INDEX IF NOT EXISTS eventos_prolongadas ON eventos (inicio_utc, vehiculo_id, fin_utc)
    WHERE tipo = 'parada' AND fin_de_jornada = 0 AND (prolongada = 1 OR fin_utc IS NULL);
CREATE INDEX IF NOT EXISTS eventos_alertas ON eventos
    (tipo, inicio_utc, vehiculo_id, desde_inicio_datos, fin_utc, velocidad_max_kmh, limite_kmh)
    WHERE tipo = 'exceso_velocidad' OR tipo = 'perdida_senal';
CREATE INDEX IF NOT EXISTS eventos_entradas ON eventos (inicio_utc, vehiculo_id)
    WHERE tipo = 'visita_geocerca' AND desde_inicio_datos = 0;
"
        )
    };
}
use analysis_indexes_ddl;

macro_rules! analysis_tables_ddl {
    () => {
        "
CREATE TABLE IF NOT EXISTS eventos (
    id INTEGER PRIMARY KEY,
    vehiculo_id INTEGER NOT NULL REFERENCES vehiculos(id),
    tipo TEXT NOT NULL,
    inicio_utc INTEGER NOT NULL,
    fin_utc INTEGER,
    lat REAL NOT NULL,
    lon REAL NOT NULL,
    geocerca_id INTEGER REFERENCES geocercas(id),
    velocidad_max_kmh REAL,
    limite_kmh REAL,
    prolongada INTEGER NOT NULL DEFAULT 0,
    fin_de_jornada INTEGER NOT NULL DEFAULT 0,
    motor_encendido INTEGER,
    desde_inicio_datos INTEGER NOT NULL DEFAULT 0,
    primer_reporte_utc INTEGER NOT NULL DEFAULT 0,
    ultimo_reporte_utc INTEGER NOT NULL DEFAULT 0,
    reportes INTEGER NOT NULL DEFAULT 0,
    medida REAL NOT NULL DEFAULT 0,
    umbral TEXT NOT NULL DEFAULT '',
    umbral_valor REAL NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS resumen_diario (
    vehiculo_id INTEGER NOT NULL REFERENCES vehiculos(id),
    fecha TEXT NOT NULL,
    km REAL NOT NULL,
    km_gps REAL NOT NULL,
    km_odometro REAL,
    primer_movimiento_utc INTEGER,
    ultimo_movimiento_utc INTEGER,
    minutos_en_movimiento REAL NOT NULL,
    paradas INTEGER NOT NULL,
    minutos_detenida REAL NOT NULL,
    velocidad_max_kmh REAL NOT NULL,
    reportes INTEGER NOT NULL,
    perdidas_senal INTEGER NOT NULL,
    excesos_velocidad INTEGER NOT NULL,
    primer_reporte_utc INTEGER NOT NULL,
    ultimo_reporte_utc INTEGER NOT NULL,
    PRIMARY KEY (vehiculo_id, fecha)
) WITHOUT ROWID;
"
    };
}
use analysis_tables_ddl;

/// Geofence crossings counted per vehicle and UTC day, as PostgreSQL's (src/store/pg/schema.rs):
/// `alertas` over a month on 1,000 units stepped through ~187,000 entries and as many exits
/// of the covering indexes, row by row, each handed to Rust. Whole UTC days in a range are
/// summed from here (one row per vehicle and day) and only the partial days at its ends are
/// counted from `eventos` (`SqliteStore::crossings_by_vehicle`). An entry counts on the day of
/// its start (not when under way as the data began), an exit on the day of its end, as the
/// direct counts do; `dia_utc` is the day's first second. Derived by the database, like an
/// index: [`seal`](super::coverage) fills it from `eventos` after a bulk write (whose
/// `unseal` dropped the triggers, so a rewrite's `DELETE` stays a truncation), and the
/// triggers of [`crossings_triggers`] (visits only) keep it as rows come and go, which is
/// how `flota recibir` and `flota importar` write. A file without the table or one of its
/// triggers (an older flota's) is counted directly.
pub const CROSSINGS_DDL: &str = "
CREATE TABLE IF NOT EXISTS cruces_por_dia (
    dia_utc INTEGER NOT NULL,
    vehiculo_id INTEGER NOT NULL,
    entradas INTEGER NOT NULL,
    salidas INTEGER NOT NULL,
    PRIMARY KEY (dia_utc, vehiculo_id)
) WITHOUT ROWID;
";

/// The table of [`CROSSINGS_DDL`].
pub const CROSSINGS_TABLE: &str = "cruces_por_dia";

/// [`CROSSINGS_DDL`]'s table filled from `eventos` (after its rows were written in bulk with
/// the triggers off). A day is its first second: `ts - ((ts % 86400) + 86400) % 86400`
/// (SQLite's `%` keeps the dividend's sign, so the remainder is made non-negative for
/// instants before 1970). The entries are read off `eventos_entradas` (the partial index of
/// exactly those rows; without `eventos_por_tipo` the planner would take `eventos_por_fin` and
/// the table): the fill runs only after [`ANALYSIS_DDL`] has made sure it exists.
pub const CROSSINGS_FILL: &str = "
DELETE FROM cruces_por_dia;
INSERT INTO cruces_por_dia (dia_utc, vehiculo_id, entradas, salidas)
SELECT ts - ((ts % 86400) + 86400) % 86400 AS dia, vehiculo_id, sum(entrada), sum(salida) FROM (
    SELECT inicio_utc AS ts, vehiculo_id, 1 AS entrada, 0 AS salida FROM eventos INDEXED BY eventos_entradas
    WHERE tipo = 'visita_geocerca' AND desde_inicio_datos = 0
    UNION ALL
    SELECT fin_utc, vehiculo_id, 0, 1 FROM eventos
    WHERE tipo = 'visita_geocerca' AND fin_utc IS NOT NULL
) GROUP BY dia, vehiculo_id;
";

/// [`CROSSINGS_DDL`]'s triggers as `(name, CREATE TRIGGER statement)`: an insert, a delete
/// and an update of a visit (the `WHEN` costs other kinds one comparison). Each adds or takes
/// one entry on the start's day and one exit on the end's day, as the row counts.
pub fn crossings_triggers() -> [(&'static str, String); 3] {
    // `WHERE` keeps SQLite from reading `ON CONFLICT` as part of a join, and skips a visit
    // that is no entry (under way as the data began) or has no exit (still inside).
    let count = |row: &str, sign: &str| {
        let upsert = |ts: &str, entry: &str, exit: &str, when: &str| {
            let day = format!("({row}.{ts} - (({row}.{ts} % 86400) + 86400) % 86400)");
            format!(
                "INSERT INTO cruces_por_dia (dia_utc, vehiculo_id, entradas, salidas) \
                 SELECT {day}, {row}.vehiculo_id, {entry}, {exit} \
                 WHERE {row}.tipo = 'visita_geocerca' AND {when} \
                 ON CONFLICT (dia_utc, vehiculo_id) DO UPDATE \
                 SET entradas = entradas + excluded.entradas, salidas = salidas + excluded.salidas;"
            )
        };
        format!(
            "{} {}",
            upsert(
                "inicio_utc",
                sign,
                "0",
                &format!("{row}.desde_inicio_datos = 0")
            ),
            upsert("fin_utc", "0", sign, &format!("{row}.fin_utc IS NOT NULL")),
        )
    };
    [
        (
            "cruces_insercion",
            format!(
                "CREATE TRIGGER cruces_insercion AFTER INSERT ON eventos \
                 WHEN NEW.tipo = 'visita_geocerca' BEGIN {} END;",
                count("NEW", "1")
            ),
        ),
        (
            "cruces_borrado",
            format!(
                "CREATE TRIGGER cruces_borrado AFTER DELETE ON eventos \
                 WHEN OLD.tipo = 'visita_geocerca' BEGIN {} END;",
                count("OLD", "-1")
            ),
        ),
        (
            "cruces_actualizacion",
            format!(
                "CREATE TRIGGER cruces_actualizacion AFTER UPDATE ON eventos \
                 WHEN OLD.tipo = 'visita_geocerca' OR NEW.tipo = 'visita_geocerca' BEGIN {} {} END;",
                count("OLD", "-1"),
                count("NEW", "1")
            ),
        ),
    ]
}

/// The newest column of `eventos`: a table without it is from an older analysis, dropped
/// (its rows are rewritten anyway) before [`ANALYSIS_DDL`] recreates it.
pub const NEWEST_EVENT_COLUMN: &str = "umbral_valor";

/// The tables the analysis writes.
pub const ANALYSIS_TABLES: [&str; 2] = ["eventos", "resumen_diario"];

/// The tables a live writer needs to find (the analysis tables it recreates itself).
pub const BASE_TABLES: [&str; 6] = [
    "meta",
    "vehiculos",
    "geocercas",
    "rutas",
    "paradas",
    "posiciones",
];

/// Refuses a database without every one of [`BASE_TABLES`], naming those missing (in
/// [`BASE_TABLES`]' order), before anything is written to it.
pub(super) fn require_base_tables(
    path: &str,
    present: &std::collections::BTreeSet<String>,
) -> Result<(), super::StoreError> {
    let missing: Vec<&str> = BASE_TABLES
        .into_iter()
        .filter(|t| !present.contains(*t))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(super::StoreError::Incomplete {
        path: path.to_owned(),
        tables: missing.join(", "),
    })
}

/// The change log's table: rows written per table and vehicle since the last analysis.
pub const CHANGE_LOG: &str = "cambios_desde_analisis";

/// Tables whose writes the log records: the analysis's input and its output.
pub const LOGGED_TABLES: [&str; 3] = ["posiciones", "eventos", "resumen_diario"];

pub const CHANGE_LOG_DDL: &str = "
CREATE TABLE IF NOT EXISTS cambios_desde_analisis (
    tabla TEXT NOT NULL,
    vehiculo_id INTEGER NOT NULL,
    filas INTEGER NOT NULL,
    PRIMARY KEY (tabla, vehiculo_id)
) WITHOUT ROWID;
";

/// The change log's triggers as `(name, CREATE TRIGGER statement)`: an insert, a delete and an
/// update on each logged table. An update logs the new row's vehicle, and the old row's too
/// when the vehicle changed.
pub fn change_triggers() -> Vec<(String, String)> {
    // `WHERE` keeps SQLite from reading `ON CONFLICT` as part of a join.
    let log = |table: &str, row: &str, when: &str| {
        format!(
            "INSERT INTO {CHANGE_LOG} (tabla, vehiculo_id, filas) \
             SELECT '{table}', {row}.vehiculo_id, 1 WHERE {when} \
             ON CONFLICT (tabla, vehiculo_id) DO UPDATE SET filas = filas + 1;"
        )
    };
    let mut triggers = Vec::new();
    for table in LOGGED_TABLES {
        let events = [
            ("insercion", "INSERT", log(table, "NEW", "true")),
            ("borrado", "DELETE", log(table, "OLD", "true")),
            (
                "actualizacion",
                "UPDATE",
                format!(
                    "{} {}",
                    log(table, "NEW", "true"),
                    log(table, "OLD", "OLD.vehiculo_id IS NOT NEW.vehiculo_id")
                ),
            ),
        ];
        for (suffix, event, body) in events {
            let name = format!("cambios_{table}_{suffix}");
            let sql = format!("CREATE TRIGGER {name} AFTER {event} ON {table} BEGIN {body} END;");
            triggers.push((name, sql));
        }
    }
    triggers
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EventKind;

    /// The partial index spells a kind in its DDL (stored in every file as written), so the
    /// word there must be the one the engine's rows carry.
    #[test]
    fn the_long_stop_index_names_the_stop_kind() {
        let condition = format!(
            "WHERE tipo = '{}' AND fin_de_jornada = 0",
            EventKind::Stop.name()
        );
        assert!(ANALYSIS_DDL.contains(&condition), "{condition}");
    }

    /// Likewise the partial indexes of the alert view and of visits.
    #[test]
    fn the_partial_indexes_name_the_engine_kinds() {
        for kind in [EventKind::Overspeed, EventKind::Gap, EventKind::Visit] {
            let condition = format!("tipo = '{}'", kind.name());
            assert!(ANALYSIS_DDL.contains(&condition), "{condition}");
        }
    }
}
