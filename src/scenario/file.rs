//! The scenario file as written: TOML tables with Spanish keys, units in the key names.
//!
//! Owns the syntax only — which keys exist, their types and defaults. Every struct rejects
//! unknown keys so a typo is an error with its line and column, never a silent default.
//! Meaning (does the route exist, do injections overlap…) is checked in `resolve`. The
//! key-by-key reference is docs/escenarios.md; keep the two in step.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use serde::{Deserialize, Deserializer};
use toml::Spanned;

/// A date written as a TOML date (`2026-08-18`) or a string (`"2026-08-18"`).
fn date<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<NaiveDate>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Written {
        Toml(toml::value::Datetime),
        Text(String),
    }
    let written = Option::<Written>::deserialize(deserializer)?;
    let text = match written {
        None => return Ok(None),
        Some(Written::Toml(datetime)) => match datetime.date {
            Some(date) => format!("{:04}-{:02}-{:02}", date.year, date.month, date.day),
            None => return Err(serde::de::Error::custom("se esperaba una fecha AAAA-MM-DD")),
        },
        Some(Written::Text(text)) => text,
    };
    NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d")
        .map(Some)
        .map_err(|_| serde::de::Error::custom(format!("'{text}' no es una fecha AAAA-MM-DD")))
}

fn dates<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<NaiveDate>, D::Error> {
    #[derive(Deserialize)]
    struct One(#[serde(deserialize_with = "date")] Option<NaiveDate>);
    let list = Vec::<One>::deserialize(deserializer)?;
    Ok(list.into_iter().filter_map(|one| one.0).collect())
}

/// A whole scenario file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    pub escenario: General,
    #[serde(default)]
    pub calendario: CalendarFile,
    #[serde(default)]
    pub turno: ShiftFile,
    #[serde(default)]
    pub tipos: BTreeMap<String, VehicleTypeFile>,
    #[serde(default)]
    pub limites: LimitsFile,
    #[serde(default)]
    pub comportamiento: BehaviourFile,
    #[serde(default)]
    pub ruido: NoiseFile,
    /// Tracker profiles by name, referenced by units, groups and vehicle types.
    #[serde(default)]
    pub rastreadores: BTreeMap<String, TrackerFile>,
    #[serde(default)]
    pub geocercas: Vec<Spanned<GeofenceFile>>,
    #[serde(default)]
    pub unidades: Vec<Spanned<UnitFile>>,
    /// Groups of identical units, for large fleets.
    #[serde(default)]
    pub flotillas: Vec<Spanned<FlotillaFile>>,
    #[serde(default)]
    pub inyecciones: InjectionsFile,
    /// Detection thresholds, checked and used by the detection engine.
    #[serde(default)]
    pub deteccion: Option<toml::Table>,
}

/// `[escenario]`: name, time frame, reporting.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct General {
    pub nombre: String,
    #[serde(default)]
    pub descripcion: String,
    /// IANA zone in which dates, shifts and `--ahora` are read, unless a unit or group sets
    /// its own.
    #[serde(default = "default_zone")]
    pub zona_horaria: String,
    /// Number of days ending with the day of `ahora` (inclusive).
    pub dias: Option<u32>,
    /// First day instead of `dias`; the period runs to the day of `ahora`.
    #[serde(default, deserialize_with = "date")]
    pub desde: Option<NaiveDate>,
    #[serde(default = "default_interval")]
    pub intervalo_reporte_s: u32,
    #[serde(default = "default_seed")]
    pub semilla: u64,
    /// Folder of route files, relative to the scenario file.
    #[serde(default = "default_routes")]
    pub rutas: String,
}

fn default_zone() -> String {
    "America/Guatemala".into()
}
fn default_interval() -> u32 {
    15
}
fn default_seed() -> u64 {
    7
}
fn default_routes() -> String {
    "../rutas".into()
}

/// `[calendario]`: which days units work by default.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalendarFile {
    #[serde(default = "default_workdays")]
    pub dias_laborables: Vec<String>,
    /// Dates nobody works.
    #[serde(default, deserialize_with = "dates")]
    pub feriados: Vec<NaiveDate>,
}

impl Default for CalendarFile {
    fn default() -> Self {
        CalendarFile {
            dias_laborables: default_workdays(),
            feriados: Vec::new(),
        }
    }
}

/// Monday to Saturday.
fn default_workdays() -> Vec<String> {
    crate::calendar::WEEKDAY_KEYS[..6]
        .iter()
        .map(|day| (*day).to_owned())
        .collect()
}

/// `[turno]`: shift start window and length window, with per-weekday overrides. A shift
/// belongs to the day it starts on and may run past midnight.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShiftFile {
    /// Earliest and latest start, local `HH:MM` (an offset, `02:30+01:00`, picks one of a
    /// repeated hour); drawn uniformly in whole minutes of real time between the two.
    #[serde(default = "default_start")]
    pub inicio: [String; 2],
    /// Shortest and longest shift, elapsed hours.
    #[serde(default = "default_length")]
    pub duracion_h: [f64; 2],
    pub lunes: Option<ShiftOverride>,
    pub martes: Option<ShiftOverride>,
    pub miercoles: Option<ShiftOverride>,
    pub jueves: Option<ShiftOverride>,
    pub viernes: Option<ShiftOverride>,
    pub sabado: Option<ShiftOverride>,
    pub domingo: Option<ShiftOverride>,
}

impl Default for ShiftFile {
    fn default() -> Self {
        ShiftFile {
            inicio: default_start(),
            duracion_h: default_length(),
            lunes: None,
            martes: None,
            miercoles: None,
            jueves: None,
            viernes: None,
            sabado: None,
            domingo: None,
        }
    }
}

fn default_start() -> [String; 2] {
    ["06:20".into(), "08:20".into()]
}
fn default_length() -> [f64; 2] {
    [7.5, 9.5]
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShiftOverride {
    pub inicio: Option<[String; 2]>,
    pub duracion_h: Option<[f64; 2]>,
}

/// A unit's (or group's) `turno`: overrides of the scenario's `[turno]`, for every day and per
/// weekday (`turno = { inicio = ["21:30", "22:30"], sabado = { duracion_h = [4, 5] } }`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnitShiftFile {
    pub inicio: Option<[String; 2]>,
    pub duracion_h: Option<[f64; 2]>,
    pub lunes: Option<ShiftOverride>,
    pub martes: Option<ShiftOverride>,
    pub miercoles: Option<ShiftOverride>,
    pub jueves: Option<ShiftOverride>,
    pub viernes: Option<ShiftOverride>,
    pub sabado: Option<ShiftOverride>,
    pub domingo: Option<ShiftOverride>,
}

impl UnitShiftFile {
    /// The every-day part as an override.
    pub fn base(&self) -> ShiftOverride {
        ShiftOverride {
            inicio: self.inicio.clone(),
            duracion_h: self.duracion_h,
        }
    }

    /// The weekday overrides, Monday first.
    pub fn weekdays(&self) -> [&Option<ShiftOverride>; 7] {
        [
            &self.lunes,
            &self.martes,
            &self.miercoles,
            &self.jueves,
            &self.viernes,
            &self.sabado,
            &self.domingo,
        ]
    }
}

impl ShiftFile {
    /// The weekday overrides, Monday first.
    pub fn weekdays(&self) -> [&Option<ShiftOverride>; 7] {
        [
            &self.lunes,
            &self.martes,
            &self.miercoles,
            &self.jueves,
            &self.viernes,
            &self.sabado,
            &self.domingo,
        ]
    }
}

/// `[tipos.<tipo>]`: dynamics of a vehicle type.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VehicleTypeFile {
    pub aceleracion_ms2: f64,
    pub frenado_ms2: f64,
    pub velocidad_max_kmh: f64,
    /// Speed limit for this type; defaults to `[limites] velocidad_kmh`.
    pub limite_kmh: Option<f64>,
    /// The tracker profile units of this type carry, unless they name their own.
    pub rastreador: Option<String>,
}

/// `[limites]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsFile {
    #[serde(default = "default_limit")]
    pub velocidad_kmh: f64,
}

impl Default for LimitsFile {
    fn default() -> Self {
        LimitsFile {
            velocidad_kmh: default_limit(),
        }
    }
}

fn default_limit() -> f64 {
    60.0
}

/// `[comportamiento]`: how drivers spend a day.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BehaviourFile {
    /// Wait at the depot after switching on, minutes (range).
    pub espera_inicial_min: [f64; 2],
    /// Per loop, a base dwell is drawn in this range (minutes); each delivery stop then
    /// dwells 0.6–1.4 times the base.
    pub espera_parada_min: [f64; 2],
    /// Wait at the depot between loops, minutes.
    pub espera_deposito_min: [f64; 2],
    /// Wait at the depot after the last loop before switching off, minutes.
    pub espera_final_min: [f64; 2],
    /// Cruise speed as a factor of the route's planned average speed.
    pub variacion_velocidad: [f64; 2],
    /// Drivers keep below this fraction of the applicable limit.
    pub cumplimiento_limite: f64,
    /// Seconds between changes of the driver's desired speed.
    pub cambio_velocidad_s: [f64; 2],
    /// Traffic-light halts per kilometre of route.
    pub semaforos_por_km: f64,
    /// Duration of a traffic-light halt, seconds.
    pub semaforo_s: [f64; 2],
    /// Minutes of ignition-off reports after switching off at the end of the day.
    pub reportes_apagado_min: f64,
    /// Another loop starts only if `now + planned loop time × margen` fits in the shift.
    pub margen_vuelta: f64,
}

impl Default for BehaviourFile {
    fn default() -> Self {
        BehaviourFile {
            espera_inicial_min: [3.0, 8.0],
            espera_parada_min: [10.0, 20.0],
            espera_deposito_min: [15.0, 40.0],
            espera_final_min: [1.0, 4.0],
            variacion_velocidad: [0.8, 1.25],
            cumplimiento_limite: 0.93,
            cambio_velocidad_s: [20.0, 90.0],
            semaforos_por_km: 0.5,
            semaforo_s: [15.0, 75.0],
            reportes_apagado_min: 3.0,
            margen_vuelta: 1.4,
        }
    }
}

/// `[ruido]`: what the tracker's GNSS and modem do to the truth.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NoiseFile {
    /// White position noise, metres per axis (1 σ).
    pub sigma_m: f64,
    /// Correlated drift (Ornstein–Uhlenbeck), metres per axis (stationary σ); 0 = off.
    pub deriva_sigma_m: f64,
    /// Drift correlation time, seconds.
    pub deriva_tau_s: f64,
    /// Probability that a report is an outlier jump.
    pub saltos_probabilidad: f64,
    /// Size of an outlier jump, metres.
    pub saltos_m: f64,
    /// White noise while stationary, metres (defaults to `sigma_m`).
    pub jitter_estacionado_m: Option<f64>,
    /// Doppler speed noise, km/h (1 σ).
    pub velocidad_sigma_kmh: f64,
    /// Speeds below this are reported as 0 ("static navigation").
    pub umbral_estatico_kmh: f64,
    /// Heading noise at cruising speed, degrees (grows at walking pace).
    pub rumbo_sigma_grados: f64,
    /// Probability that a report is delivered twice.
    pub duplicados_probabilidad: f64,
    /// Probability that a report is delivered late.
    pub retrasados_probabilidad: f64,
    /// Delay of a late report, seconds (range).
    pub retraso_s: [f64; 2],
}

impl Default for NoiseFile {
    fn default() -> Self {
        NoiseFile {
            sigma_m: 5.0,
            deriva_sigma_m: 0.0,
            deriva_tau_s: 60.0,
            saltos_probabilidad: 0.0,
            saltos_m: 80.0,
            jitter_estacionado_m: None,
            velocidad_sigma_kmh: 0.5,
            umbral_estatico_kmh: 3.0,
            rumbo_sigma_grados: 3.0,
            duplicados_probabilidad: 0.0,
            retrasados_probabilidad: 0.0,
            retraso_s: [30.0, 300.0],
        }
    }
}

/// `[rastreadores.<nombre>]`: how one kind of tracker records and delivers (docs/escenarios.md,
/// "Rastreadores"). Every default is today's fixed-interval tracker that never fails.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrackerFile {
    /// `fijo` (a record every `intervalo_s`) or `adaptativo` (records on period, distance,
    /// heading or speed change while moving; on a long period while stopped).
    pub modo: String,
    /// Fixed mode's period; `[escenario] intervalo_reporte_s` when absent.
    pub intervalo_s: Option<u32>,
    /// Adaptive: longest time between records while moving, seconds.
    pub periodo_movimiento_s: f64,
    /// Adaptive: a record once this far from the last one, metres (0 = off).
    pub distancia_m: f64,
    /// Adaptive: a record on a heading change of this many degrees (0 = off).
    pub angulo_grados: f64,
    /// Adaptive: a record on a speed change of this many km/h (0 = off).
    pub delta_velocidad_kmh: f64,
    /// Adaptive: the period while stopped with the ignition on, seconds.
    pub periodo_detenido_s: f64,
    /// Adaptive: below this reported speed the tracker counts as stopped.
    pub umbral_movimiento_kmh: f64,
    /// A heartbeat every this many minutes while the ignition is off (0 = silent, today's).
    pub latido_apagado_min: f64,
    /// Chance a record reads the ignition inverted.
    pub parpadeo_ignicion_probabilidad: f64,
    /// Coverage losses per shift (the tracker records and delivers the backlog later).
    pub sin_cobertura_por_turno: u32,
    pub sin_cobertura_min: [f64; 2],
    /// Backlog order on delivery: `antiguos` (oldest first) or `recientes`.
    pub orden_envio: String,
    /// GNSS fix losses per shift.
    pub sin_fix_por_turno: u32,
    pub sin_fix_min: [f64; 2],
    /// Without a fix: `nada` (records nothing) or `repetir` (the last fix, flagged invalid).
    pub sin_fix_modo: String,
    /// `real`, or `ausente` (the tracker sends none).
    pub odometro: String,
    /// Added to the odometer, km.
    pub odometro_desfase_km: f64,
    /// The odometer counts this many metres per metre driven.
    pub odometro_escala: f64,
    /// Chance a record carries an invalid speed (0 while moving, absurd while stopped or
    /// half the time while moving).
    pub velocidad_invalida_probabilidad: f64,
    /// Range of the absurd speeds, km/h.
    pub velocidad_absurda_kmh: [f64; 2],
    /// Chance a shift's first fix is a cold start far from the truth.
    pub arranque_frio_probabilidad: f64,
    /// How far a cold start's fix lands, metres (range).
    pub arranque_frio_m: [f64; 2],
}

impl Default for TrackerFile {
    fn default() -> Self {
        TrackerFile {
            modo: "fijo".into(),
            intervalo_s: None,
            periodo_movimiento_s: 300.0,
            distancia_m: 100.0,
            angulo_grados: 10.0,
            delta_velocidad_kmh: 10.0,
            periodo_detenido_s: 3600.0,
            umbral_movimiento_kmh: 5.0,
            latido_apagado_min: 0.0,
            parpadeo_ignicion_probabilidad: 0.0,
            sin_cobertura_por_turno: 0,
            sin_cobertura_min: [5.0, 30.0],
            orden_envio: "antiguos".into(),
            sin_fix_por_turno: 0,
            sin_fix_min: [2.0, 10.0],
            sin_fix_modo: "nada".into(),
            odometro: "real".into(),
            odometro_desfase_km: 0.0,
            odometro_escala: 1.0,
            velocidad_invalida_probabilidad: 0.0,
            velocidad_absurda_kmh: [250.0, 900.0],
            arranque_frio_probabilidad: 0.0,
            arranque_frio_m: [500.0, 5000.0],
        }
    }
}

/// `[[geocercas]]`: exactly one of `cuadrado`, `circulo`, `poligono`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeofenceFile {
    pub nombre: String,
    pub tipo: String,
    pub cuadrado: Option<SquareFile>,
    pub circulo: Option<CircleFile>,
    /// Vertices as `[lat, lon]` pairs.
    pub poligono: Option<Vec<[f64; 2]>>,
    pub limite_kmh: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SquareFile {
    /// `[lat, lon]`.
    pub centro: [f64; 2],
    pub medio_lado_m: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CircleFile {
    pub centro: [f64; 2],
    pub radio_m: f64,
}

/// `[[unidades]]`: one vehicle.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnitFile {
    pub placa: String,
    pub tipo: String,
    pub conductor: String,
    /// Routes driven in turn, one loop each; all must start at the same depot.
    #[serde(default)]
    pub rutas: Vec<String>,
    #[serde(default = "default_true")]
    pub activo: bool,
    /// Overrides `[calendario] dias_laborables`.
    pub dias_laborables: Option<Vec<String>>,
    /// Overrides `[turno]` for this unit, every day and per weekday.
    pub turno: Option<UnitShiftFile>,
    /// The unit's IANA zone: its calendar, shifts and injections are read in it.
    pub zona_horaria: Option<String>,
    /// Odometer at the start of the period; drawn in 20,000–180,000 km when absent.
    pub odometro_inicial_km: Option<f64>,
    /// The unit's tracker profile (`[rastreadores.<nombre>]`); else its type's; else fixed.
    pub rastreador: Option<String>,
    /// Dates it does not work although its calendar says so: dates, `"desde..hasta"` ranges or
    /// `{ fechas, motivo }` tables, read (with messages naming the entry) in `absences`.
    #[serde(default)]
    pub ausencias: Vec<toml::Value>,
}

fn default_true() -> bool {
    true
}

/// `[[flotillas]]`: `cantidad` units named `<prefijo>-0001`…, routes assigned in turn.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlotillaFile {
    pub prefijo: String,
    pub cantidad: u32,
    pub tipo: String,
    /// Unit k drives `rutas[k % len]`.
    pub rutas: Vec<String>,
    #[serde(default = "default_driver")]
    pub conductor: String,
    pub dias_laborables: Option<Vec<String>>,
    pub turno: Option<UnitShiftFile>,
    pub zona_horaria: Option<String>,
    pub rastreador: Option<String>,
}

fn default_driver() -> String {
    "Conductor".into()
}

impl FlotillaFile {
    /// The units this group stands for.
    pub fn expand(&self) -> Vec<UnitFile> {
        let width = self.cantidad.to_string().len().max(4);
        (0..self.cantidad as usize)
            .map(|k| UnitFile {
                placa: format!("{}-{:0width$}", self.prefijo, k + 1),
                tipo: self.tipo.clone(),
                conductor: format!("{} {:0width$}", self.conductor, k + 1),
                rutas: if self.rutas.is_empty() {
                    Vec::new()
                } else {
                    vec![self.rutas[k % self.rutas.len()].clone()]
                },
                activo: true,
                dias_laborables: self.dias_laborables.clone(),
                turno: self.turno.clone(),
                zona_horaria: self.zona_horaria.clone(),
                odometro_inicial_km: None,
                rastreador: self.rastreador.clone(),
                ausencias: Vec::new(),
            })
            .collect()
    }
}

/// `[inyecciones]`: events forced into the truth, explicit or drawn at random.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InjectionsFile {
    #[serde(default)]
    pub aleatorias: RandomInjectionsFile,
    #[serde(default)]
    pub exceso_velocidad: Vec<Spanned<SpeedingFile>>,
    #[serde(default)]
    pub parada_prolongada: Vec<Spanned<LongStopFile>>,
    #[serde(default)]
    pub perdida_senal: Vec<Spanned<SignalLossFile>>,
    #[serde(default)]
    pub detenida_ahora: Vec<Spanned<StoppedNowFile>>,
}

/// `[inyecciones.aleatorias]`: counts per type and the ranges their parameters come from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RandomInjectionsFile {
    pub exceso_velocidad: u32,
    pub parada_prolongada: u32,
    pub perdida_senal: u32,
    pub detenida_ahora: u32,
    /// Forced speeds are drawn from these values (km/h).
    pub exceso_velocidad_kmh: Vec<f64>,
    pub exceso_duracion_s: [f64; 2],
    /// Long-stop lengths are drawn from these values (minutes).
    pub parada_minutos: Vec<f64>,
    pub perdida_minutos: [f64; 2],
    pub detenida_minutos: [f64; 2],
}

impl Default for RandomInjectionsFile {
    fn default() -> Self {
        RandomInjectionsFile {
            exceso_velocidad: 0,
            parada_prolongada: 0,
            perdida_senal: 0,
            detenida_ahora: 0,
            exceso_velocidad_kmh: vec![78.0, 85.0, 92.0, 98.0, 105.0],
            exceso_duracion_s: [90.0, 90.0],
            parada_minutos: vec![45.0, 60.0, 75.0, 90.0, 110.0],
            perdida_minutos: [6.0, 14.0],
            detenida_minutos: [30.0, 100.0],
        }
    }
}

/// `[[inyecciones.exceso_velocidad]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpeedingFile {
    pub placa: String,
    #[serde(default, deserialize_with = "date")]
    pub fecha: Option<NaiveDate>,
    /// Day offset from the day of `ahora` (0 = that day, -1 = the day before).
    pub dia: Option<i64>,
    /// Local `HH:MM`: the episode starts at the first open stretch from then on, on any loop.
    pub hora: Option<String>,
    /// Fraction of the day's first loop where the episode starts.
    pub fraccion_ruta: Option<f64>,
    pub velocidad_kmh: f64,
    pub duracion_s: f64,
}

/// `[[inyecciones.parada_prolongada]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LongStopFile {
    pub placa: String,
    #[serde(default, deserialize_with = "date")]
    pub fecha: Option<NaiveDate>,
    pub dia: Option<i64>,
    /// Name of a delivery stop of the unit's route (first loop).
    pub parada: Option<String>,
    /// Or a halt on the road at this fraction of the first loop.
    pub fraccion_ruta: Option<f64>,
    /// Or a halt on the road at the first moment from this local time on, on any loop.
    pub hora: Option<String>,
    pub minutos: f64,
}

/// `[[inyecciones.perdida_senal]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignalLossFile {
    pub placa: String,
    #[serde(default, deserialize_with = "date")]
    pub fecha: Option<NaiveDate>,
    pub dia: Option<i64>,
    /// Local `HH:MM` or `HH:MM:SS` when the tracker goes silent.
    pub hora: String,
    pub minutos: f64,
}

/// `[[inyecciones.detenida_ahora]]`: stopped with the engine on at `ahora`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoppedNowFile {
    pub placa: String,
    pub minutos: f64,
}
