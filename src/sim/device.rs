//! The tracker as a device: when it records, what its faults do to a record, and its modem's
//! store and forward.
//!
//! Owns a unit's [`TrackerProfile`] at work (docs/escenarios.md, "Rastreadores"): the adaptive
//! recording criteria ([`due`]), the faults on a record (cold start, invalid speed, ignition
//! flicker, odometer model), the loss of GNSS fix (nothing recorded, or the last fix repeated
//! flagged invalid) and the loss of network (records held, then delivered in one burst), and
//! the truth events that say what the tracker did. The GNSS noise and the modem's duplicates
//! and delays stay `gnss::Tracker`'s. Sans-IO: the agent decides *when* to ask (its clock, the
//! ignition), this decides *what* comes out. Every random draw of a fault comes from its own
//! stream, so a profile without faults leaves the other streams, and the output, as they were.

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::gnss::{Report, Tracker, TrueSample, round};
use super::truth::TruthEvent;
use crate::geometry::earth::{LatLon, distance_m, offset_m};
use crate::scenario::{Episodes, Recording, TrackerProfile};

/// Backlog records the modem sends per second in a burst.
pub const BURST_PER_S: usize = 10;

/// Whether an adaptive tracker saves a record now, given its last record and whether that
/// one was moving. Fixed mode records on every tick it is given.
pub fn due(recording: &Recording, last: Option<(&Report, bool)>, now: &Report) -> bool {
    let Recording::Adaptive {
        moving_period_s,
        distance_m: min_distance_m,
        angle_deg,
        speed_delta_kmh,
        stopped_period_s,
        moving_kmh,
    } = *recording
    else {
        return true;
    };
    let Some((last, last_moving)) = last else {
        return true;
    };
    let moving = now.speed_kmh >= moving_kmh;
    if moving != last_moving || now.ignition != last.ignition {
        // Movement and ignition changes are event records.
        return true;
    }
    let elapsed_s = now.ts_utc - last.ts_utc;
    if !moving {
        return elapsed_s >= stopped_period_s;
    }
    let far = min_distance_m > 0.0
        && distance_m(
            LatLon::new(last.lat, last.lon),
            LatLon::new(now.lat, now.lon),
        ) >= min_distance_m;
    let turned = angle_deg > 0.0
        && ((now.heading_deg - last.heading_deg + 540.0).rem_euclid(360.0) - 180.0).abs()
            >= angle_deg;
    let sped = speed_delta_kmh > 0.0 && (now.speed_kmh - last.speed_kmh).abs() >= speed_delta_kmh;
    elapsed_s >= moving_period_s || far || turned || sped
}

/// A network outage under way: when it started and what is held.
struct Outage {
    start_utc: i64,
    held: Vec<Report>,
}

pub struct Device {
    profile: TrackerProfile,
    plate: String,
    gnss: Tracker,
    faults: ChaCha8Rng,
    odometer_start_km: f64,
    /// The last record as the GNSS saw it, and whether it counted as moving.
    last: Option<(Report, bool)>,
    last_valid: Option<Report>,
    fix_lost: bool,
    cold_pending: bool,
    outage: Option<Outage>,
    delivered: Vec<Report>,
    records: u64,
    invalid: u64,
}

impl Device {
    pub fn new(
        profile: TrackerProfile,
        plate: &str,
        gnss: Tracker,
        faults: ChaCha8Rng,
        odometer_start_km: f64,
    ) -> Device {
        Device {
            profile,
            plate: plate.to_owned(),
            gnss,
            faults,
            odometer_start_km,
            last: None,
            last_valid: None,
            fix_lost: false,
            cold_pending: false,
            outage: None,
            delivered: Vec::new(),
            records: 0,
            invalid: 0,
        }
    }

    /// Records made so far (valid or not).
    pub fn records(&self) -> u64 {
        self.records
    }

    pub fn profile(&self) -> &TrackerProfile {
        &self.profile
    }

    /// The profile as the truth's first event of the unit (none for the default tracker).
    pub fn describe(&self) -> Option<TruthEvent> {
        let p = &self.profile;
        let name = p.name.clone()?;
        let (mode, interval_s) = match p.recording {
            Recording::Fixed { interval_s } => ("fijo", Some(interval_s)),
            Recording::Adaptive { .. } => ("adaptativo", None),
        };
        Some(TruthEvent::Rastreador {
            placa: self.plate.clone(),
            perfil: name,
            modo: mode.into(),
            intervalo_s: interval_s,
            latido_s: p.heartbeat_s,
            odometro: p.odometer.is_some(),
            odometro_desfase_km: p.odometer.map_or(0.0, |o| o.offset_km),
            odometro_escala: p.odometer.map_or(1.0, |o| o.scale),
        })
    }

    /// A shift starts: its first fix may be a cold start.
    pub fn shift_started(&mut self) {
        self.cold_pending = self.profile.cold_start_probability > 0.0;
    }

    /// Draws a shift's episodes of `episodes` in `[from_ms, to_ms)`: whole seconds, sorted,
    /// overlapping ones merged.
    pub fn draw(&mut self, episodes: Episodes, from_ms: i64, to_ms: i64) -> Vec<(i64, i64)> {
        let mut drawn: Vec<(i64, i64)> = (0..episodes.per_shift)
            .map(|_| {
                let at = self.faults.random_range(0.0..1.0f64);
                let [lo, hi] = episodes.minutes;
                let minutes = if hi > lo {
                    self.faults.random_range(lo..hi)
                } else {
                    lo
                };
                let start_s = (from_ms + ((to_ms - from_ms) as f64 * at) as i64 + 999) / 1000;
                (start_s, start_s + (minutes * 60.0).round().max(1.0) as i64)
            })
            .collect();
        drawn.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::new();
        for (start, end) in drawn {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        merged
    }

    /// The GNSS loses (or regains) its fix.
    pub fn set_fix(&mut self, lost: bool) {
        self.fix_lost = lost;
    }

    /// The network goes at `now_utc`: records are held from now on.
    pub fn lose_coverage(&mut self, now_utc: i64) {
        if self.outage.is_none() {
            self.outage = Some(Outage {
                start_utc: now_utc,
                held: Vec::new(),
            });
        }
    }

    /// The network is back at `now_utc`: the backlog goes out in one burst, into `out`.
    pub fn restore_coverage(
        &mut self,
        now_utc: i64,
        out: &mut Vec<Report>,
        truth: &mut Vec<TruthEvent>,
    ) {
        let Some(outage) = self.outage.take() else {
            return;
        };
        let mut held = outage.held;
        truth.push(TruthEvent::SinCobertura {
            placa: self.plate.clone(),
            inicio_utc: outage.start_utc,
            fin_utc: Some(now_utc),
            retenidos: held.len() as u64,
        });
        if held.is_empty() {
            return;
        }
        held.sort_by_key(|r| (r.ts_utc, r.sequence));
        let (first, last) = (held[0].ts_utc, held[held.len() - 1].ts_utc);
        if self.profile.newest_first {
            held.reverse();
        }
        truth.push(TruthEvent::RafagaPendientes {
            placa: self.plate.clone(),
            entrega_utc: now_utc,
            registros: held.len() as u64,
            primero_utc: first,
            ultimo_utc: last,
            recientes_primero: self.profile.newest_first,
        });
        for (i, mut report) in held.into_iter().enumerate() {
            report.received_utc = now_utc + (i / BURST_PER_S) as i64;
            out.push(report);
        }
    }

    /// Asks the tracker for a record of `sample`: always when `force` (a fixed-mode tick, an
    /// ignition event, a heartbeat), else only if the adaptive criteria fire. What the modem
    /// sends goes to `out` (nothing while the network is out: it is held).
    pub fn record(
        &mut self,
        sample: &TrueSample,
        force: bool,
        out: &mut Vec<Report>,
        truth: &mut Vec<TruthEvent>,
    ) {
        let reading = if self.fix_lost {
            if !self.profile.fix_loss_repeats {
                return;
            }
            let Some(last) = self.last_valid else { return };
            Report {
                ts_utc: sample.ts_utc,
                received_utc: sample.ts_utc,
                speed_kmh: 0.0,
                ignition: sample.ignition,
                odometer_km: Some(round(sample.odometer_km, 3)),
                valid: false,
                ..last
            }
        } else {
            self.gnss.fix(sample)
        };
        let moving = match self.profile.recording {
            Recording::Adaptive { moving_kmh, .. } => reading.speed_kmh >= moving_kmh,
            Recording::Fixed { .. } => reading.speed_kmh > 0.0,
        };
        let last = self.last.as_ref().map(|(r, m)| (r, *m));
        if !force && !due(&self.profile.recording, last, &reading) {
            return;
        }
        self.last = Some((reading, moving));
        self.records += 1;
        if reading.valid {
            self.last_valid = Some(reading);
        } else {
            self.invalid += 1;
        }
        let report = self.faults_on(reading, sample, truth);
        self.delivered.clear();
        self.gnss.deliver(report, &mut self.delivered);
        match &mut self.outage {
            Some(outage) => outage.held.append(&mut self.delivered),
            None => out.append(&mut self.delivered),
        }
    }

    /// Cold start, invalid speed, ignition flicker and the odometer model, on one record.
    fn faults_on(
        &mut self,
        mut report: Report,
        sample: &TrueSample,
        truth: &mut Vec<TruthEvent>,
    ) -> Report {
        let p = &self.profile;
        let ts_utc = report.ts_utc;
        if self.cold_pending && report.valid {
            self.cold_pending = false;
            if self.faults.random_bool(p.cold_start_probability) {
                let [lo, hi] = p.cold_start_m;
                let error_m = if hi > lo {
                    self.faults.random_range(lo..hi)
                } else {
                    lo
                };
                let angle = self.faults.random_range(0.0..std::f64::consts::TAU);
                let moved = offset_m(
                    LatLon::new(report.lat, report.lon),
                    error_m * angle.sin(),
                    error_m * angle.cos(),
                );
                report.lat = round(moved.lat, 6);
                report.lon = round(moved.lon, 6);
                truth.push(TruthEvent::ArranqueFrio {
                    placa: self.plate.clone(),
                    ts_utc,
                    error_m: distance_m(sample.position, moved).round(),
                });
            }
        }
        if p.invalid_speed_probability > 0.0 && self.faults.random_bool(p.invalid_speed_probability)
        {
            let [lo, hi] = p.absurd_speed_kmh;
            let zero = report.speed_kmh > 0.0 && self.faults.random_bool(0.5);
            let speed = if zero {
                0.0
            } else if hi > lo {
                round(self.faults.random_range(lo..hi), 1)
            } else {
                lo
            };
            truth.push(TruthEvent::VelocidadInvalida {
                placa: self.plate.clone(),
                ts_utc,
                velocidad_kmh: speed,
                real_kmh: round(sample.speed_kmh, 1),
            });
            report.speed_kmh = speed;
        }
        if p.flicker_probability > 0.0 && self.faults.random_bool(p.flicker_probability) {
            report.ignition = !report.ignition;
            truth.push(TruthEvent::ParpadeoIgnicion {
                placa: self.plate.clone(),
                ts_utc,
                ignicion_reportada: report.ignition,
            });
        }
        report.odometer_km = match p.odometer {
            None => None,
            Some(model) if model.offset_km == 0.0 && model.scale == 1.0 => report.odometer_km,
            Some(model) => {
                let driven_km = sample.odometer_km - self.odometer_start_km;
                Some(round(
                    self.odometer_start_km + model.offset_km + model.scale * driven_km,
                    3,
                ))
            }
        };
        report
    }

    /// The end of the run at `ahora`: an outage still under way, and the summary of what the
    /// tracker did (for a unit with a profile). `delivered` counts first deliveries in the data.
    pub fn finish(&mut self, delivered: u64, truth: &mut Vec<TruthEvent>) {
        if let Some(outage) = self.outage.take() {
            truth.push(TruthEvent::SinCobertura {
                placa: self.plate.clone(),
                inicio_utc: outage.start_utc,
                fin_utc: None,
                retenidos: outage.held.len() as u64,
            });
        }
        if self.profile.name.is_some() {
            truth.push(TruthEvent::EntregasRastreador {
                placa: self.plate.clone(),
                registros: self.records,
                invalidos: self.invalid,
                entregados: delivered,
            });
        }
    }
}
