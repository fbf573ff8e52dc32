//! Tracker profiles: `[rastreadores.<nombre>]` checked into [`TrackerProfile`]s, and which
//! profile each unit carries.
//!
//! Owns the meaning of the profile keys (modes, ranges, words) and the precedence unit →
//! vehicle type → the default fixed-interval tracker. What a profile does to reports is the
//! simulator's (`sim::device`); nothing here simulates.

use std::collections::BTreeMap;

use super::ScenarioError;
use super::checker::Checker;
use super::file::TrackerFile;

/// When a tracker records a fix.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Recording {
    /// A record every `interval_s`, on a grid from the shift's start (today's behaviour).
    Fixed { interval_s: i64 },
    /// Commercial trackers' data acquisition (Teltonika's "Moving" and "On Stop" modes): the
    /// criteria are checked every second; any that fires saves a record. 0 disables distance,
    /// angle and speed delta.
    Adaptive {
        moving_period_s: i64,
        distance_m: f64,
        angle_deg: f64,
        speed_delta_kmh: f64,
        stopped_period_s: i64,
        moving_kmh: f64,
    },
}

/// Random episodes drawn per shift.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Episodes {
    pub per_shift: u32,
    pub minutes: [f64; 2],
}

/// A tracker's odometer when it sends one: `start + offset + scale × driven`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OdometerModel {
    pub offset_km: f64,
    pub scale: f64,
}

/// A checked tracker profile.
#[derive(Debug, Clone, PartialEq)]
pub struct TrackerProfile {
    /// The profile's name; `None` for the default tracker of a unit that names none.
    pub name: Option<String>,
    pub recording: Recording,
    /// Heartbeat period while the ignition is off; `None`: silent after the ignition-off
    /// reports (`[comportamiento] reportes_apagado_min`).
    pub heartbeat_s: Option<i64>,
    pub flicker_probability: f64,
    pub coverage_loss: Episodes,
    /// The backlog goes out newest first.
    pub newest_first: bool,
    pub fix_loss: Episodes,
    /// Without a fix, repeat the last one flagged invalid (else record nothing).
    pub fix_loss_repeats: bool,
    /// `None`: the tracker sends no odometer.
    pub odometer: Option<OdometerModel>,
    pub invalid_speed_probability: f64,
    pub absurd_speed_kmh: [f64; 2],
    pub cold_start_probability: f64,
    pub cold_start_m: [f64; 2],
}

impl TrackerProfile {
    /// The tracker of a unit that names no profile: a record every `interval_s`, nothing
    /// ever goes wrong.
    pub fn fixed(interval_s: i64) -> TrackerProfile {
        let file = TrackerFile::default();
        TrackerProfile {
            name: None,
            recording: Recording::Fixed { interval_s },
            heartbeat_s: None,
            flicker_probability: 0.0,
            coverage_loss: Episodes {
                per_shift: 0,
                minutes: file.sin_cobertura_min,
            },
            newest_first: false,
            fix_loss: Episodes {
                per_shift: 0,
                minutes: file.sin_fix_min,
            },
            fix_loss_repeats: false,
            odometer: Some(OdometerModel {
                offset_km: 0.0,
                scale: 1.0,
            }),
            invalid_speed_probability: 0.0,
            absurd_speed_kmh: file.velocidad_absurda_kmh,
            cold_start_probability: 0.0,
            cold_start_m: file.arranque_frio_m,
        }
    }
}

/// Profiles for a scenario that defines none, by name: the fixed tracker that never fails
/// (`fijo`), and the three of `escenarios/rastreadores.toml` — a commercial tracker recording
/// adaptively with hourly heartbeats, an outage per shift and an odometer 12 km off
/// (`comercial`); a phone with no odometer, fix losses, invalid speeds and cold starts
/// (`telefono`); a cheap tracker with outages delivered newest first, ignition flicker,
/// repeated invalid fixes and an odometer 3 % fast (`economico`).
pub fn builtin_profiles(interval_s: i64) -> BTreeMap<String, TrackerProfile> {
    let base = TrackerFile::default;
    let files = [
        (
            "comercial",
            TrackerFile {
                modo: "adaptativo".into(),
                latido_apagado_min: 60.0,
                sin_cobertura_por_turno: 1,
                sin_cobertura_min: [10.0, 25.0],
                odometro_desfase_km: 12.0,
                ..base()
            },
        ),
        (
            "telefono",
            TrackerFile {
                intervalo_s: Some(10),
                odometro: "ausente".into(),
                sin_fix_por_turno: 1,
                sin_fix_min: [3.0, 8.0],
                velocidad_invalida_probabilidad: 0.01,
                arranque_frio_probabilidad: 0.5,
                arranque_frio_m: [800.0, 3000.0],
                ..base()
            },
        ),
        (
            "economico",
            TrackerFile {
                intervalo_s: Some(30),
                latido_apagado_min: 30.0,
                parpadeo_ignicion_probabilidad: 0.005,
                sin_cobertura_por_turno: 2,
                sin_cobertura_min: [5.0, 15.0],
                orden_envio: "recientes".into(),
                sin_fix_por_turno: 1,
                sin_fix_min: [2.0, 6.0],
                sin_fix_modo: "repetir".into(),
                odometro_escala: 1.03,
                ..base()
            },
        ),
    ];
    let mut profiles: BTreeMap<String, TrackerProfile> = files
        .iter()
        .map(|(name, file)| ((*name).to_owned(), build(name, file, interval_s)))
        .collect();
    let mut fixed = TrackerProfile::fixed(interval_s);
    fixed.name = Some("fijo".into());
    profiles.insert("fijo".into(), fixed);
    profiles
}

/// Checks every `[rastreadores.*]` table.
pub(super) fn profiles(
    check: Checker,
    files: &BTreeMap<String, TrackerFile>,
    interval_s: i64,
) -> Result<BTreeMap<String, TrackerProfile>, ScenarioError> {
    files
        .iter()
        .map(|(name, file)| {
            let here = check.table(&format!("rastreadores.{name}"));
            Ok((name.clone(), profile(here, name, file, interval_s)?))
        })
        .collect()
}

/// A checked profile.
fn profile(
    here: Checker,
    name: &str,
    f: &TrackerFile,
    interval_s: i64,
) -> Result<TrackerProfile, ScenarioError> {
    check(here, name, f, interval_s)?;
    Ok(build(name, f, interval_s))
}

/// One check per key, in the order docs/escenarios.md lists them.
fn check(here: Checker, name: &str, f: &TrackerFile, interval_s: i64) -> Result<(), ScenarioError> {
    let what = format!("[rastreadores.{name}]");
    let word = |key: &str, value: &str, allowed: &[&str]| {
        if allowed.contains(&value) {
            Ok(())
        } else {
            here.key(key).fail(format!(
                "{what} {key} = '{value}': use {}",
                allowed
                    .iter()
                    .map(|a| format!("'{a}'"))
                    .collect::<Vec<_>>()
                    .join(" o ")
            ))
        }
    };
    word("modo", &f.modo, &["fijo", "adaptativo"])?;
    word("orden_envio", &f.orden_envio, &["antiguos", "recientes"])?;
    word("sin_fix_modo", &f.sin_fix_modo, &["nada", "repetir"])?;
    word("odometro", &f.odometro, &["real", "ausente"])?;
    let values = [
        (
            "intervalo_s",
            f.intervalo_s.map_or(interval_s as f64, f64::from),
            1.0,
            3600.0,
        ),
        (
            "periodo_movimiento_s",
            f.periodo_movimiento_s,
            1.0,
            86_400.0,
        ),
        ("distancia_m", f.distancia_m, 0.0, 100_000.0),
        ("angulo_grados", f.angulo_grados, 0.0, 180.0),
        ("delta_velocidad_kmh", f.delta_velocidad_kmh, 0.0, 300.0),
        ("periodo_detenido_s", f.periodo_detenido_s, 1.0, 86_400.0),
        ("umbral_movimiento_kmh", f.umbral_movimiento_kmh, 0.0, 50.0),
        ("latido_apagado_min", f.latido_apagado_min, 0.0, 1440.0),
        (
            "parpadeo_ignicion_probabilidad",
            f.parpadeo_ignicion_probabilidad,
            0.0,
            1.0,
        ),
        (
            "sin_cobertura_por_turno",
            f64::from(f.sin_cobertura_por_turno),
            0.0,
            20.0,
        ),
        (
            "sin_fix_por_turno",
            f64::from(f.sin_fix_por_turno),
            0.0,
            20.0,
        ),
        ("odometro_desfase_km", f.odometro_desfase_km, -1e6, 1e6),
        ("odometro_escala", f.odometro_escala, 0.5, 2.0),
        (
            "velocidad_invalida_probabilidad",
            f.velocidad_invalida_probabilidad,
            0.0,
            1.0,
        ),
        (
            "arranque_frio_probabilidad",
            f.arranque_frio_probabilidad,
            0.0,
            1.0,
        ),
    ];
    for (key, value, min, max) in values {
        here.key(key)
            .value(&format!("{what} {key}"), value, min, max)?;
    }
    let ranges = [
        ("sin_cobertura_min", f.sin_cobertura_min, 0.1, 1440.0),
        ("sin_fix_min", f.sin_fix_min, 0.1, 1440.0),
        (
            "velocidad_absurda_kmh",
            f.velocidad_absurda_kmh,
            0.0,
            10_000.0,
        ),
        ("arranque_frio_m", f.arranque_frio_m, 0.0, 1_000_000.0),
    ];
    for (key, range, min, max) in ranges {
        here.key(key)
            .range(&format!("{what} {key}"), range, min, max)?;
    }
    Ok(())
}

/// The profile a checked table describes.
fn build(name: &str, f: &TrackerFile, interval_s: i64) -> TrackerProfile {
    let recording = if f.modo == "adaptativo" {
        Recording::Adaptive {
            moving_period_s: f.periodo_movimiento_s.round() as i64,
            distance_m: f.distancia_m,
            angle_deg: f.angulo_grados,
            speed_delta_kmh: f.delta_velocidad_kmh,
            stopped_period_s: f.periodo_detenido_s.round() as i64,
            moving_kmh: f.umbral_movimiento_kmh,
        }
    } else {
        Recording::Fixed {
            interval_s: f.intervalo_s.map_or(interval_s, i64::from),
        }
    };
    TrackerProfile {
        name: Some(name.to_owned()),
        recording,
        heartbeat_s: (f.latido_apagado_min > 0.0).then_some((f.latido_apagado_min * 60.0) as i64),
        flicker_probability: f.parpadeo_ignicion_probabilidad,
        coverage_loss: Episodes {
            per_shift: f.sin_cobertura_por_turno,
            minutes: f.sin_cobertura_min,
        },
        newest_first: f.orden_envio == "recientes",
        fix_loss: Episodes {
            per_shift: f.sin_fix_por_turno,
            minutes: f.sin_fix_min,
        },
        fix_loss_repeats: f.sin_fix_modo == "repetir",
        odometer: (f.odometro == "real").then_some(OdometerModel {
            offset_km: f.odometro_desfase_km,
            scale: f.odometro_escala,
        }),
        invalid_speed_probability: f.velocidad_invalida_probabilidad,
        absurd_speed_kmh: f.velocidad_absurda_kmh,
        cold_start_probability: f.arranque_frio_probabilidad,
        cold_start_m: f.arranque_frio_m,
    }
}

/// The profile a unit carries: its own `rastreador`, else its type's, else the default.
pub(super) fn of_unit(
    check: Checker,
    what: &str,
    named: Option<&str>,
    profiles: &BTreeMap<String, TrackerProfile>,
    interval_s: i64,
) -> Result<TrackerProfile, ScenarioError> {
    let Some(name) = named else {
        return Ok(TrackerProfile::fixed(interval_s));
    };
    match profiles.get(name) {
        Some(profile) => Ok(profile.clone()),
        None => {
            let known: Vec<&str> = profiles.keys().map(String::as_str).collect();
            check.key("rastreador").fail(format!(
                "{what}: rastreador desconocido '{name}'; {}",
                if known.is_empty() {
                    format!("defina [rastreadores.{name}]")
                } else {
                    format!(
                        "defina [rastreadores.{name}] o use uno de: {}",
                        known.join(", ")
                    )
                }
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Ahora, Source, load};

    #[test]
    fn the_builtin_profiles_are_those_of_the_tracker_scenario() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("escenarios")
            .join("rastreadores.toml");
        // 2026-09-17 15:00 in the Canaries.
        let world = load(&Source::File(path), Ahora::NowUtc(1_789_653_600)).unwrap();
        let mut builtin = builtin_profiles(world.interval_s);
        let fixed = builtin.remove("fijo").unwrap();
        assert_eq!(builtin, world.trackers);
        assert_eq!(fixed.name.as_deref(), Some("fijo"));
        assert_eq!(
            TrackerProfile {
                name: None,
                ..fixed
            },
            TrackerProfile::fixed(world.interval_s)
        );
    }
}
