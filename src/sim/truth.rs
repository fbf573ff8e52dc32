//! Ground truth: what really happened, as the simulator knows it and no tracker reports it.
//!
//! Owns the truth log's types and their JSON form, both ways: the first line is a
//! [`TruthHeader`], every other line a [`TruthEvent`] (keys in Spanish, times as UTC seconds).
//! Pure data: the file is written by `flota simular` and read by `evaluate::truth::read`, so
//! this module touches no filesystem. Only the evaluation and the tests read the log; the
//! server and the detection engine never do. Format: docs/datos.md.

use serde::{Deserialize, Serialize};

use crate::scenario::World;

/// The first line of the truth log: which simulation the log belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TruthHeader {
    /// Always `cabecera`: tells the header from an event.
    pub tipo: HeaderTag,
    pub escenario: String,
    pub escenario_sha256: String,
    pub semilla: u64,
    pub zona_horaria: String,
    /// Units whose zone is not `zona_horaria`, by plate (absent when there are none).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub zonas_por_unidad: std::collections::BTreeMap<String, String>,
    /// `AAAA-MM-DDTHH:MM:SS`, local.
    pub ahora_local: String,
    pub ahora_utc: i64,
    /// First and last local dates of the period (null for an empty period).
    pub desde: Option<String>,
    pub hasta: Option<String>,
    pub intervalo_reporte_s: i64,
    pub flota_version: String,
}

/// The header's `tipo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeaderTag {
    Cabecera,
}

impl TruthHeader {
    /// The zone of `plate`'s calendar: its own, else the scenario's.
    pub fn zone_of(&self, plate: &str) -> chrono_tz::Tz {
        self.zonas_por_unidad
            .get(plate)
            .unwrap_or(&self.zona_horaria)
            .parse()
            .unwrap_or(chrono_tz::UTC)
    }

    /// The header of a run of `world` by this version of flota.
    pub fn for_world(world: &World, flota_version: &str) -> TruthHeader {
        TruthHeader {
            tipo: HeaderTag::Cabecera,
            escenario: world.name.clone(),
            escenario_sha256: world.hash.clone(),
            semilla: world.seed,
            zona_horaria: world.zone.name().to_owned(),
            zonas_por_unidad: world
                .units
                .iter()
                .filter(|u| u.zone != world.zone)
                .map(|u| (u.plate.clone(), u.zone.name().to_owned()))
                .collect(),
            ahora_local: world.ahora_local.format("%Y-%m-%dT%H:%M:%S").to_string(),
            ahora_utc: world.ahora_utc,
            desde: world.days.first().map(ToString::to_string),
            hasta: world.days.last().map(ToString::to_string),
            intervalo_reporte_s: world.interval_s,
            flota_version: flota_version.to_owned(),
        }
    }
}

/// Why a vehicle stood still.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Waiting at the depot after switching on.
    EsperaInicial,
    /// At a delivery stop.
    Entrega,
    /// At the depot between loops.
    Deposito,
    /// At the depot at the end of the day (the engine goes off).
    FinDeTurno,
    /// A traffic-light halt (logged only when it lasts a minute or more).
    Semaforo,
    /// An injected halt on the road.
    Inyectada,
    /// Stopped with the engine on at `ahora` (injected).
    DetenidaAhora,
}

/// One line of the truth log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "tipo", rename_all = "snake_case")]
pub enum TruthEvent {
    /// A shift: ignition on to ignition off (`fin_utc` null if still on at `ahora`). `fecha`
    /// is the local date it started on (a night shift belongs to that day); `fin_previsto_utc`
    /// is its drawn start plus its drawn length, the end its loops were planned against.
    Jornada {
        placa: String,
        fecha: String,
        inicio_utc: i64,
        fin_utc: Option<i64>,
        fin_previsto_utc: i64,
    },
    /// A day of the unit's period it does not work although its calendar says so
    /// (`ausencias`): no shift starts on it and the unit stays parked. `motivo` is the
    /// scenario's reason, null when none was written.
    Ausencia {
        placa: String,
        fecha: String,
        motivo: Option<String>,
    },
    /// A maximal interval at speed zero. Overnight parking is one stop from the evening
    /// arrival to the next departure; `fin_utc` is null when still stopped at `ahora`.
    Parada {
        placa: String,
        inicio_utc: i64,
        fin_utc: Option<i64>,
        duracion_s: i64,
        lat: f64,
        lon: f64,
        lugar: String,
        motivo: StopReason,
        /// Engine on at the end of the interval (or at `ahora`).
        motor_encendido: bool,
        /// Already stopped when the data starts, so `inicio_utc` is that start, not the
        /// real arrival.
        desde_inicio_datos: bool,
        /// Caused or lengthened by an injection (`parada_prolongada`, `detenida_ahora`).
        inyectada: bool,
    },
    /// True speed above the applicable limit.
    ExcesoVelocidad {
        placa: String,
        inicio_utc: i64,
        fin_utc: i64,
        velocidad_max_kmh: f64,
        limite_kmh: f64,
        inyectado: bool,
    },
    /// The tracker sent nothing with a fix time inside `[inicio_utc, fin_utc)`; `fin_utc` is
    /// null when still silent at `ahora`.
    PerdidaSenal {
        placa: String,
        inicio_utc: i64,
        fin_utc: Option<i64>,
    },
    /// What the signal loss starting at `inicio_utc` did to the tracker's records: the silence
    /// the data show around it, from the last record before it (`desde_utc`; null when none
    /// that shift) to the first after it (`hasta_utc`; null when none by `ahora`), and the
    /// records the tracker would have made meanwhile (`registros_ocultos`: 0 when the loss hid
    /// nothing, as for an adaptive tracker standing still between its records), the first of
    /// them made when (`primer_oculto_utc`; absent when none was hidden).
    SilencioPerdida {
        placa: String,
        inicio_utc: i64,
        desde_utc: Option<i64>,
        hasta_utc: Option<i64>,
        registros_ocultos: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        primer_oculto_utc: Option<i64>,
    },
    /// A stay inside a geofence of the noise-free path; `entrada_utc` null when inside since
    /// before the data starts, `salida_utc` null when still inside at `ahora`.
    VisitaGeocerca {
        placa: String,
        geocerca: String,
        entrada_utc: Option<i64>,
        salida_utc: Option<i64>,
    },
    /// True kilometres driven on one local date of the unit's zone: one line per unit and day
    /// of its period, worked or not.
    KmDia {
        placa: String,
        fecha: String,
        km: f64,
    },
    /// A unit stopped with the engine on at `ahora`.
    DetenidaAhora {
        placa: String,
        desde_utc: i64,
        minutos: f64,
        lat: f64,
        lon: f64,
    },
    /// An injection as planned (the effects are the events above).
    Inyeccion {
        placa: String,
        fecha: String,
        clase: String,
        aleatoria: bool,
        parametros: serde_json::Value,
    },
    /// The unit's tracker profile, first thing in its log (only for a unit that names one).
    Rastreador {
        placa: String,
        perfil: String,
        /// `fijo` or `adaptativo`.
        modo: String,
        /// The fixed mode's period (null when adaptive).
        intervalo_s: Option<i64>,
        /// Adaptive recording's longest silence while moving and while stopped with the
        /// engine on (absent when fixed): the evaluation judges a silence still open at
        /// `ahora` against the period of the state the unit was last seen in.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        periodo_movimiento_s: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        periodo_detenido_s: Option<i64>,
        /// Heartbeat period with the ignition off (null: silent).
        latido_s: Option<i64>,
        /// Whether it sends an odometer, and how it is off: `real + desfase + escala × recorrido`.
        odometro: bool,
        odometro_desfase_km: f64,
        odometro_escala: f64,
    },
    /// The tracker had no network: it kept recording and held `retenidos` records (duplicates
    /// included) for later; `fin_utc` null when still without network at `ahora` (the held
    /// records never reached the data).
    SinCobertura {
        placa: String,
        inicio_utc: i64,
        fin_utc: Option<i64>,
        retenidos: u64,
    },
    /// The backlog delivered in one burst when the network came back: `registros` records with
    /// fix times `primero_utc`..`ultimo_utc`, received from `entrega_utc` on, ten a second,
    /// newest first when `recientes_primero`.
    RafagaPendientes {
        placa: String,
        entrega_utc: i64,
        registros: u64,
        primero_utc: i64,
        ultimo_utc: i64,
        recientes_primero: bool,
    },
    /// The GNSS had no fix: the tracker recorded nothing, or (`repite_ultimo`) repeated its
    /// last fix flagged invalid (not stored); `fin_utc` null when still without a fix at
    /// `ahora`.
    SinFix {
        placa: String,
        inicio_utc: i64,
        fin_utc: Option<i64>,
        repite_ultimo: bool,
    },
    /// A record whose ignition reads the opposite of the truth.
    ParpadeoIgnicion {
        placa: String,
        ts_utc: i64,
        ignicion_reportada: bool,
    },
    /// A record with an invalid speed (0 while moving, or absurd).
    VelocidadInvalida {
        placa: String,
        ts_utc: i64,
        velocidad_kmh: f64,
        real_kmh: f64,
    },
    /// A shift's first fix from a cold start, `error_m` from the truth.
    ArranqueFrio {
        placa: String,
        ts_utc: i64,
        error_m: f64,
    },
    /// At `ahora`, records made but still on their way (delivered late), all newer than the
    /// last one that reached the data (`desde_utc`, null when none did): `registros` of them,
    /// the first made at `primero_utc`. The data end in a silence from `desde_utc` that the
    /// tracker did not keep. For any unit, with or without a profile; only when it happens.
    EnTransito {
        placa: String,
        desde_utc: Option<i64>,
        primero_utc: i64,
        registros: u64,
    },
    /// At `ahora`, records with a fix made but still on their way (delivered late) while
    /// newer ones had reached the data: the stored records around them are `desde_utc` (null
    /// when none came before) and `hasta_utc`, and the data show a silence between the two
    /// that the tracker did not keep; `registros` of them, the first made at `primero_utc`.
    /// One line per such silence; for any unit, only when it happens.
    HuecoEnTransito {
        placa: String,
        desde_utc: Option<i64>,
        hasta_utc: i64,
        primero_utc: i64,
        registros: u64,
    },
    /// What the tracker did over the whole run: records made (valid or not), and how many
    /// reached the data by `ahora` (duplicates not counted). Only for a unit with a profile.
    EntregasRastreador {
        placa: String,
        registros: u64,
        invalidos: u64,
        entregados: u64,
    },
}

impl TruthEvent {
    /// The plate the event belongs to.
    pub fn plate(&self) -> &str {
        match self {
            TruthEvent::Jornada { placa, .. }
            | TruthEvent::Ausencia { placa, .. }
            | TruthEvent::Parada { placa, .. }
            | TruthEvent::ExcesoVelocidad { placa, .. }
            | TruthEvent::PerdidaSenal { placa, .. }
            | TruthEvent::SilencioPerdida { placa, .. }
            | TruthEvent::VisitaGeocerca { placa, .. }
            | TruthEvent::KmDia { placa, .. }
            | TruthEvent::DetenidaAhora { placa, .. }
            | TruthEvent::Inyeccion { placa, .. }
            | TruthEvent::Rastreador { placa, .. }
            | TruthEvent::SinCobertura { placa, .. }
            | TruthEvent::RafagaPendientes { placa, .. }
            | TruthEvent::SinFix { placa, .. }
            | TruthEvent::ParpadeoIgnicion { placa, .. }
            | TruthEvent::VelocidadInvalida { placa, .. }
            | TruthEvent::ArranqueFrio { placa, .. }
            | TruthEvent::EntregasRastreador { placa, .. }
            | TruthEvent::EnTransito { placa, .. }
            | TruthEvent::HuecoEnTransito { placa, .. } => placa,
        }
    }
}
