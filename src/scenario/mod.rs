//! Scenarios: what a simulation run is about, from TOML text to a checked [`World`].
//!
//! Owns reading a scenario (a file, or the embedded reference week), its routes, and every
//! check that can be made before simulating. The result, [`World`], is plain data the
//! simulator consumes; nothing here simulates, writes, or reads the clock (the caller passes
//! "now" in). Format reference: docs/escenarios.md.

mod absences;
mod checker;
mod error;
mod file;
mod injections;
mod resolve;
mod shifts;
mod trackers;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{NaiveDate, NaiveDateTime};
use chrono_tz::Tz;

use crate::calendar::{ClockTime, WallTime};
use sha2::{Digest, Sha256};

pub use error::{ScenarioError, line_column};
pub use file::{BehaviourFile, NoiseFile, RandomInjectionsFile, ScenarioFile};
pub use injections::{SPEEDING_CLEARANCE_M, past_workdays, running_shift};
pub use shifts::{SHIFT_TOLERANCE_S, longest_loop_s, shortfall_limit_s};
pub use trackers::{Episodes, OdometerModel, Recording, TrackerProfile, builtin_profiles};

use crate::geometry::geofence::Geofence;
use crate::geometry::route::Route;

/// Embedded copies, so `flota simular` works from any folder on a fresh machine.
pub mod embedded {
    pub const SEMANA: &str = include_str!("../../escenarios/semana.toml");
    pub const ROUTES: &[(&str, &str)] = &[
        (
            "r01_cedis_z1_z4",
            include_str!("../../rutas/r01_cedis_z1_z4.json"),
        ),
        (
            "r02_cedis_z10_cayala",
            include_str!("../../rutas/r02_cedis_z10_cayala.json"),
        ),
        (
            "r03_vn_amatitlan",
            include_str!("../../rutas/r03_vn_amatitlan.json"),
        ),
        (
            "r04_vn_boca_cedis",
            include_str!("../../rutas/r04_vn_boca_cedis.json"),
        ),
        (
            "r05_mixco_sancristobal_z7",
            include_str!("../../rutas/r05_mixco_sancristobal_z7.json"),
        ),
        (
            "r06_mixco_miraflores_z1",
            include_str!("../../rutas/r06_mixco_miraflores_z1.json"),
        ),
        (
            "r07_z18_centro_z4",
            include_str!("../../rutas/r07_z18_centro_z4.json"),
        ),
        (
            "r08_z18_cayala_z10",
            include_str!("../../rutas/r08_z18_cayala_z10.json"),
        ),
        (
            "r09_caes_pinula_fraijanes",
            include_str!("../../rutas/r09_caes_pinula_fraijanes.json"),
        ),
        (
            "r10_caes_aeropuerto_cedis",
            include_str!("../../rutas/r10_caes_aeropuerto_cedis.json"),
        ),
    ];
}

/// When "now" is: given on the scenario zone's wall clock (`--ahora`), or the wall clock read by
/// the caller.
#[derive(Debug, Clone, Copy)]
pub enum Ahora {
    Local(WallTime),
    /// Wall-clock UTC seconds; truncated to the minute.
    NowUtc(i64),
}

/// A checked scenario, ready to simulate.
#[derive(Debug, Clone)]
pub struct World {
    pub name: String,
    pub description: String,
    /// The scenario's zone (`[escenario] zona_horaria`): `--ahora`, the period and units without
    /// a zone of their own.
    pub zone: Tz,
    pub seed: u64,
    pub interval_s: i64,
    /// The end of the data, UTC seconds.
    pub ahora_utc: i64,
    /// `ahora` on the scenario zone's wall clock.
    pub ahora_local: NaiveDateTime,
    /// Local dates of the period in the scenario's zone, oldest first; the last is the day of
    /// `ahora`. Each unit has its own (`Unit::days`).
    pub days: Vec<NaiveDate>,
    pub holidays: Vec<NaiveDate>,
    pub routes: Vec<Route>,
    pub fences: Vec<Geofence>,
    pub fleet_limit_kmh: f64,
    pub units: Vec<Unit>,
    /// The `[rastreadores.*]` profiles by name (what `flota evaluar --rastreadores` may name).
    pub trackers: BTreeMap<String, TrackerProfile>,
    pub behaviour: BehaviourFile,
    pub noise: NoiseFile,
    /// Explicit injections, resolved to units, dates and instants.
    pub injections: Vec<Injection>,
    /// Counts and parameter ranges for injections drawn at random.
    pub random: RandomInjectionsFile,
    /// `[deteccion]` as given, for the detection engine.
    pub detection: Option<toml::Table>,
    /// SHA-256 of the scenario text and every route file it could use.
    pub hash: String,
    /// The file the scenario came from, for messages about it.
    pub path: PathBuf,
}

impl World {
    /// Whether `unit` works on `date` (active, a working weekday, not a holiday, not absent).
    pub fn works(&self, unit: &Unit, date: NaiveDate) -> bool {
        unit.active
            && unit.workdays[chrono::Datelike::weekday(&date).num_days_from_monday() as usize]
            && !self.holidays.contains(&date)
            && unit.absence_on(date).is_none()
    }

    /// The zones of the fleet: the scenario's first, then the units' others, each once.
    pub fn zones(&self) -> Vec<Tz> {
        let mut zones = vec![self.zone];
        for unit in &self.units {
            if !zones.contains(&unit.zone) {
                zones.push(unit.zone);
            }
        }
        zones
    }
}

/// A vehicle.
#[derive(Debug, Clone)]
pub struct Unit {
    pub plate: String,
    pub kind: String,
    pub driver: String,
    /// Indexes into `World::routes`, driven in turn, one loop each.
    pub routes: Vec<usize>,
    pub active: bool,
    /// Its calendar, shifts and injections are read in this zone.
    pub zone: Tz,
    /// Monday first.
    pub workdays: [bool; 7],
    /// Shift rule per weekday, Monday first.
    pub shifts: [ShiftRule; 7],
    pub dynamics: Dynamics,
    /// The limit that applies outside geofences with their own.
    pub limit_kmh: f64,
    pub odometer_start_km: Option<f64>,
    /// How its tracker records and delivers.
    pub tracker: TrackerProfile,
    /// Dates it does not work although its calendar says so (`ausencias`), sorted, disjoint.
    pub absences: Vec<Absence>,
    /// The unit's local days: the period's first date to its date at `ahora`, with the shift
    /// each working day allows.
    pub days: Vec<UnitDay>,
}

/// Days a unit does not work although its calendar says so (`ausencias`): a driver off sick,
/// on leave, the vehicle in the workshop. Both ends included.
#[derive(Debug, Clone, PartialEq)]
pub struct Absence {
    pub first: NaiveDate,
    pub last: NaiveDate,
    /// `motivo`, when written.
    pub reason: Option<String>,
}

impl Unit {
    pub fn shift_for(&self, date: NaiveDate) -> &ShiftRule {
        &self.shifts[chrono::Datelike::weekday(&date).num_days_from_monday() as usize]
    }

    /// The unit's date at `ahora` (its last day).
    pub fn today(&self) -> Option<NaiveDate> {
        self.days.last().map(|d| d.date)
    }

    /// The absence covering `date`, if any.
    pub fn absence_on(&self, date: NaiveDate) -> Option<&Absence> {
        self.absences
            .iter()
            .find(|a| a.first <= date && date <= a.last)
    }

    /// The unit's day `date`, if in its period.
    pub fn day(&self, date: NaiveDate) -> Option<&UnitDay> {
        self.days.iter().find(|d| d.date == date)
    }
}

/// One local day of a unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnitDay {
    pub date: NaiveDate,
    /// The local day's bounds in the unit's zone, UTC seconds `[start, end)`.
    pub start_utc: i64,
    pub end_utc: i64,
    /// The shift of a working day.
    pub shift: Option<ShiftPlan>,
}

/// When a working day's shift may start and how long it may last.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShiftPlan {
    /// The start window, UTC seconds: the instants of the day whose wall-clock time lies
    /// within `inicio`.
    pub first_start_utc: i64,
    pub last_start_utc: i64,
    /// Shortest and longest elapsed hours.
    pub length_h: [f64; 2],
}

impl ShiftPlan {
    /// The earliest a shift can be planned to end: earliest start, shortest length.
    pub fn earliest_end_utc(&self) -> i64 {
        self.first_start_utc + (self.length_h[0] * 3600.0).round() as i64
    }

    /// The latest a shift can be planned to end.
    pub fn latest_end_utc(&self) -> i64 {
        self.last_start_utc + (self.length_h[1] * 3600.0).round() as i64
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShiftRule {
    /// Earliest and latest start on the wall clock.
    pub start: [ClockTime; 2],
    pub length_h: [f64; 2],
    /// Where the rule's start is written, for messages (a byte offset in the scenario text).
    pub at: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dynamics {
    pub accel_ms2: f64,
    pub brake_ms2: f64,
    pub top_speed_kmh: f64,
}

/// An injected event on one unit and day (the day its shift starts on).
#[derive(Debug, Clone, PartialEq)]
pub struct Injection {
    pub unit: usize,
    pub date: NaiveDate,
    pub kind: InjectionKind,
    /// How messages name it: `[[inyecciones.exceso_velocidad]] #1 (P-456DEF)` and where it is
    /// written (`archivo:línea`).
    pub label: String,
}

/// What is injected, with its parameters: one type for the scenario's explicit injections and
/// the simulator's plan (which adds those drawn at random).
#[derive(Debug, Clone, PartialEq)]
pub enum InjectionKind {
    Speeding {
        at: Trigger,
        speed_kmh: f64,
        duration_s: f64,
    },
    LongStop {
        at: LongStopAt,
        minutes: f64,
    },
    SignalLoss {
        at: LossAt,
        minutes: f64,
    },
    StoppedNow {
        minutes: f64,
    },
}

impl InjectionKind {
    /// The kind's word in scenario files and the truth log (`exceso_velocidad`…).
    pub fn name(&self) -> &'static str {
        match self {
            InjectionKind::Speeding { .. } => "exceso_velocidad",
            InjectionKind::LongStop { .. } => "parada_prolongada",
            InjectionKind::SignalLoss { .. } => "perdida_senal",
            InjectionKind::StoppedNow { .. } => "detenida_ahora",
        }
    }

    /// The instant a timed injection asks for, UTC seconds.
    pub fn asked_utc(&self) -> Option<i64> {
        match self {
            InjectionKind::Speeding {
                at: Trigger::At(t), ..
            }
            | InjectionKind::LongStop {
                at: LongStopAt::At(t),
                ..
            }
            | InjectionKind::SignalLoss {
                at: LossAt::At(t), ..
            } => Some(*t),
            _ => None,
        }
    }
}

/// Where in a day an event starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Trigger {
    /// At the first suitable moment from this instant (UTC seconds), on any loop.
    At(i64),
    /// When the day's first loop passes this fraction of its route.
    Fraction(f64),
}

/// When a signal loss starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LossAt {
    /// At this instant, UTC seconds (how a scenario file places one).
    At(i64),
    /// Fraction of the day's shift, start to planned end (how a random one is placed).
    ShiftFraction(f64),
}

#[derive(Debug, Clone, PartialEq)]
pub enum LongStopAt {
    /// A delivery stop of the first loop, by name.
    Stop(String),
    /// A halt on the road at this fraction of the first loop.
    Fraction(f64),
    /// A halt on the road at the first moment from this instant (UTC seconds) on, any loop.
    At(i64),
}

/// Where a scenario's text came from, for messages and for finding its routes.
#[derive(Debug, Clone)]
pub enum Source {
    File(PathBuf),
    /// The reference week compiled into the binary (routes too).
    Embedded,
}

impl Source {
    pub fn display_path(&self) -> PathBuf {
        match self {
            Source::File(path) => path.clone(),
            Source::Embedded => PathBuf::from("escenarios/semana.toml (integrado)"),
        }
    }
}

/// Reads, parses and checks a scenario. `ahora` decides the period's end.
pub fn load(source: &Source, ahora: Ahora) -> Result<World, ScenarioError> {
    let path = source.display_path();
    let text = match source {
        Source::File(file) => std::fs::read_to_string(file).map_err(|err| ScenarioError::Read {
            path: file.clone(),
            source: err,
        })?,
        Source::Embedded => embedded::SEMANA.to_owned(),
    };
    let file: ScenarioFile =
        toml::from_str(&text).map_err(|err| error::syntax_error(path.clone(), &text, &err))?;
    let (routes, route_texts) = load_routes(source, &file.escenario.rutas)?;
    let mut hasher = Sha256::new();
    hasher.update(text.as_bytes());
    for route_text in route_texts.values() {
        hasher.update(route_text.as_bytes());
    }
    let hash = format!("{:x}", hasher.finalize());
    resolve::resolve(file, routes, ahora, (&path, &text), hash)
}

/// The routes a scenario can use: its `rutas` folder, or the embedded set.
/// Routes by name, and the text of each route file (for the scenario hash).
type LoadedRoutes = (BTreeMap<String, Route>, BTreeMap<String, String>);

fn load_routes(source: &Source, folder: &str) -> Result<LoadedRoutes, ScenarioError> {
    let mut routes = BTreeMap::new();
    let mut texts = BTreeMap::new();
    match source {
        Source::Embedded => {
            for (name, text) in embedded::ROUTES {
                let path = PathBuf::from(format!("rutas/{name}.json"));
                routes.insert((*name).to_owned(), Route::parse(text, &path)?);
                texts.insert((*name).to_owned(), (*text).to_owned());
            }
        }
        Source::File(file) => {
            let base = file.parent().unwrap_or(Path::new("."));
            let dir = base.join(folder);
            routes = crate::geometry::route::load_dir(&dir)?;
            for name in routes.keys() {
                let path = dir.join(format!("{name}.json"));
                let text = std::fs::read_to_string(&path)
                    .map_err(|err| ScenarioError::Read { path, source: err })?;
                texts.insert(name.clone(), text);
            }
        }
    }
    Ok((routes, texts))
}

/// Uppercase, spaces and separators removed: `p 123-bcd` and `P-123BCD` compare equal.
pub fn plate_key(plate: &str) -> String {
    plate
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_uppercase)
        .collect()
}
