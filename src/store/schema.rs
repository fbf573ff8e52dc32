//! The SQLite schema of a flota database, in one place, with its version.
//!
//! Owns the DDL and the version number. Tables and columns are Spanish (users query them);
//! units live in column names. Positions are clustered by (vehicle, fix time) so a unit's day
//! is one contiguous range, and stored as integers where a fixed point is exact enough
//! (microdegrees are 0.11 m; metres for the odometer): it halves the file and speeds up
//! writing; `vista_posiciones` shows them in degrees and kilometres. There is no truth column
//! anywhere: the ground truth lives in its own file. Documented in docs/datos.md.

/// Bumped whenever a table or column changes; readers refuse other versions.
pub const SCHEMA_VERSION: i64 = 1;

/// Bumped whenever the detection engine's output for the same positions changes; the server
/// tells the user to run `flota analizar` when a database was analysed by another version.
pub const ANALYSIS_VERSION: i64 = 2;

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
    rutas TEXT NOT NULL
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

CREATE TABLE eventos (
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
    desde_inicio_datos INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX eventos_por_vehiculo ON eventos (vehiculo_id, inicio_utc);
CREATE INDEX eventos_por_tipo ON eventos (tipo, inicio_utc, vehiculo_id, desde_inicio_datos);
CREATE INDEX eventos_por_fin ON eventos (tipo, fin_utc, vehiculo_id);
CREATE INDEX eventos_prolongadas ON eventos (inicio_utc)
    WHERE tipo = 'parada' AND fin_de_jornada = 0 AND (prolongada = 1 OR fin_utc IS NULL);

CREATE TABLE resumen_diario (
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

CREATE VIEW vista_posiciones AS
SELECT p.vehiculo_id, v.placa, p.ts_utc, datetime(p.ts_utc, 'unixepoch') AS ts_utc_texto,
       p.secuencia, p.ts_utc + p.retraso_s AS recibido_utc,
       p.lat_e6 / 1e6 AS lat, p.lon_e6 / 1e6 AS lon, p.velocidad_kmh, p.rumbo_grados,
       p.ignicion, p.odometro_m / 1000.0 AS odometro_km
FROM posiciones p JOIN vehiculos v ON v.id = p.vehiculo_id;
";
