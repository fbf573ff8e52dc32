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
        let (mode, interval_s, moving_s, stopped_s) = match p.recording {
            Recording::Fixed { interval_s } => ("fijo", Some(interval_s), None, None),
            Recording::Adaptive {
                moving_period_s,
                stopped_period_s,
                ..
            } => (
                "adaptativo",
                None,
                Some(moving_period_s),
                Some(stopped_period_s),
            ),
        };
        Some(TruthEvent::Rastreador {
            placa: self.plate.clone(),
            perfil: name,
            modo: mode.into(),
            intervalo_s: interval_s,
            periodo_movimiento_s: moving_s,
            periodo_detenido_s: stopped_s,
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

    /// The last record, as the GNSS saw it, and whether it counted as moving.
    pub fn last_record(&self) -> Option<(Report, bool)> {
        self.last
    }

    /// Whether the tracker would record the true state `sample` now (`force`: whatever its
    /// criteria), had it not lost its signal, given what it would have recorded last: what an
    /// injected signal loss hides. Judged on the true state, so it draws nothing.
    pub fn would_record(
        &self,
        last: Option<&(Report, bool)>,
        sample: &TrueSample,
        force: bool,
    ) -> Option<(Report, bool)> {
        let reading = Report {
            ts_utc: sample.ts_utc,
            sequence: 0,
            received_utc: sample.ts_utc,
            lat: sample.position.lat,
            lon: sample.position.lon,
            speed_kmh: sample.speed_kmh,
            heading_deg: sample.heading_deg,
            ignition: sample.ignition,
            odometer_km: Some(sample.odometer_km),
            valid: true,
        };
        let moving = match self.profile.recording {
            Recording::Adaptive { moving_kmh, .. } => reading.speed_kmh >= moving_kmh,
            Recording::Fixed { .. } => reading.speed_kmh > 0.0,
        };
        let last = last.map(|(r, m)| (r, *m));
        (force || due(&self.profile.recording, last, &reading)).then_some((reading, moving))
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
        // Straight to where it goes (held while the network is out), in delivery order.
        let to = match &mut self.outage {
            Some(outage) => &mut outage.held,
            None => out,
        };
        self.gnss.deliver(report, to);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{NoiseFile, OdometerModel};
    use proptest::prelude::*;
    use rand::SeedableRng;

    fn noise() -> NoiseFile {
        NoiseFile {
            sigma_m: 3.0,
            ..NoiseFile::default()
        }
    }

    fn adaptive() -> Recording {
        Recording::Adaptive {
            moving_period_s: 300,
            distance_m: 100.0,
            angle_deg: 10.0,
            speed_delta_kmh: 10.0,
            stopped_period_s: 3600,
            moving_kmh: 5.0,
        }
    }

    fn device(profile: TrackerProfile, seed: u64) -> Device {
        let gnss = Tracker::new(
            noise(),
            ChaCha8Rng::seed_from_u64(seed),
            ChaCha8Rng::seed_from_u64(seed + 1),
        );
        Device::new(
            profile,
            "P-1",
            gnss,
            ChaCha8Rng::seed_from_u64(seed + 2),
            1000.0,
        )
    }

    fn named(recording: Recording) -> TrackerProfile {
        TrackerProfile {
            name: Some("prueba".into()),
            recording,
            ..TrackerProfile::fixed(15)
        }
    }

    fn at(ts: i64, lat: f64, speed_kmh: f64, heading_deg: f64, ignition: bool) -> Report {
        Report {
            ts_utc: ts,
            sequence: 0,
            received_utc: ts,
            lat,
            lon: -15.4,
            speed_kmh,
            heading_deg,
            ignition,
            odometer_km: Some(0.0),
            valid: true,
        }
    }

    #[test]
    fn adaptive_criteria_each_fire_alone() {
        let rec = adaptive();
        let last = at(0, 28.1, 40.0, 90.0, true);
        // (now, last moving, expected)
        let check = |now: Report, last_moving: bool, expected: bool| {
            assert_eq!(
                due(&rec, Some((&last, last_moving)), &now),
                expected,
                "{now:?}"
            );
        };
        check(at(10, 28.1, 42.0, 92.0, true), true, false);
        check(at(300, 28.1, 42.0, 92.0, true), true, true); // period
        check(at(10, 28.101, 42.0, 92.0, true), true, true); // 111 m
        check(at(10, 28.1, 42.0, 101.0, true), true, true); // 11°
        check(at(10, 28.1, 40.0, 355.0, true), true, true); // across north: 95°
        check(at(10, 28.1, 51.0, 90.0, true), true, true); // +11 km/h
        check(at(10, 28.1, 0.0, 90.0, true), true, true); // movement stops
        check(at(10, 28.1, 42.0, 92.0, false), true, true); // ignition off
        // Stopped: only the long period counts, never the distance (parked noise).
        let parked = at(0, 28.1, 0.0, 90.0, true);
        let still =
            |ts: i64, lat: f64| due(&rec, Some((&parked, false)), &at(ts, lat, 0.0, 90.0, true));
        assert!(!still(3599, 28.11));
        assert!(still(3600, 28.1));
        assert!(due(&rec, None, &parked));
        assert!(due(
            &Recording::Fixed { interval_s: 15 },
            Some((&last, true)),
            &last
        ));
    }

    fn drive(ts: i64) -> TrueSample {
        // Speed and heading that wander, with a halt every ten minutes.
        let phase = ts % 600;
        let speed_kmh = if phase < 60 {
            0.0
        } else {
            30.0 + 20.0 * ((ts as f64) / 97.0).sin()
        };
        TrueSample {
            ts_utc: ts,
            position: LatLon::new(28.1 + ts as f64 * 1e-5, -15.4),
            speed_kmh,
            heading_deg: (ts as f64 * 0.3).rem_euclid(360.0),
            ignition: true,
            odometer_km: 1000.0 + ts as f64 * 0.01,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Checked every second, an adaptive tracker never goes longer than its moving period
        /// between records while moving.
        #[test]
        fn adaptive_gap_while_moving_never_exceeds_the_period(
            seed in 0u64..1000,
            period_s in 20i64..400,
            distance_m in prop_oneof![Just(0.0), 50.0..2000.0f64],
        ) {
            let recording = Recording::Adaptive {
                moving_period_s: period_s,
                distance_m,
                angle_deg: 0.0,
                speed_delta_kmh: 0.0,
                stopped_period_s: 3600,
                moving_kmh: 5.0,
            };
            let mut d = device(named(recording), seed);
            let (mut out, mut truth) = (Vec::new(), Vec::new());
            for ts in 0..6000 {
                d.record(&drive(ts), false, &mut out, &mut truth);
            }
            for pair in out.windows(2) {
                let moving = pair[0].speed_kmh >= 5.0 && pair[1].speed_kmh >= 5.0;
                if moving {
                    prop_assert!(pair[1].ts_utc - pair[0].ts_utc <= period_s, "{pair:?}");
                }
            }
            // Moving 540 s of every 600.
            prop_assert!(out.len() >= 5400 / period_s as usize);
        }

        /// Store and forward: every record made during outages reaches the output exactly once,
        /// no earlier than the outage's end, in the burst order asked for.
        #[test]
        fn backlog_bursts_deliver_every_record_exactly_once(
            seed in 0u64..1000,
            outages in proptest::collection::vec((0i64..5000, 1i64..900), 1..5),
            newest_first: bool,
        ) {
            let profile = TrackerProfile { newest_first, ..named(Recording::Fixed { interval_s: 15 }) };
            let mut d = device(profile, seed);
            let mut windows: Vec<(i64, i64)> = outages.iter().map(|(s, l)| (*s, s + l)).collect();
            windows.sort_unstable();
            let (mut out, mut truth) = (Vec::new(), Vec::new());
            let mut made = Vec::new();
            for ts in (0..6000).step_by(15) {
                for (start, end) in &windows {
                    if ts - 15 < *end && *end <= ts {
                        d.restore_coverage(*end, &mut out, &mut truth);
                    }
                    if ts - 15 < *start && *start <= ts {
                        d.lose_coverage(*start);
                    }
                }
                d.record(&drive(ts), true, &mut out, &mut truth);
                made.push(ts);
            }
            d.restore_coverage(6000, &mut out, &mut truth);
            let mut seen: Vec<i64> = out.iter().map(|r| r.ts_utc).collect();
            seen.sort_unstable();
            prop_assert_eq!(&seen, &made);
            for r in &out {
                prop_assert!(r.received_utc >= r.ts_utc);
            }
            let bursts: Vec<(i64, u64)> = truth.iter().filter_map(|e| match e {
                TruthEvent::RafagaPendientes { entrega_utc, registros, .. } => Some((*entrega_utc, *registros)),
                _ => None,
            }).collect();
            let held: u64 = bursts.iter().map(|b| b.1).sum();
            prop_assert_eq!(held as usize, out.iter().filter(|r| r.received_utc > r.ts_utc).count());
            for (at, count) in bursts {
                let burst: Vec<&Report> = out.iter().filter(|r| r.received_utc >= at && r.received_utc < at + 1 + count as i64 / BURST_PER_S as i64 && r.ts_utc < at).collect();
                let order: Vec<i64> = burst.iter().map(|r| r.ts_utc).collect();
                let mut sorted = order.clone();
                sorted.sort_unstable();
                if newest_first {
                    sorted.reverse();
                }
                prop_assert_eq!(order, sorted);
            }
        }
    }

    #[test]
    fn fix_loss_records_nothing_or_repeats_the_last_fix_invalid() {
        for repeats in [false, true] {
            let profile = TrackerProfile {
                fix_loss_repeats: repeats,
                ..named(Recording::Fixed { interval_s: 15 })
            };
            let mut d = device(profile, 3);
            let (mut out, mut truth) = (Vec::new(), Vec::new());
            d.record(&drive(100), true, &mut out, &mut truth);
            d.set_fix(true);
            d.record(&drive(115), true, &mut out, &mut truth);
            d.record(&drive(130), true, &mut out, &mut truth);
            d.set_fix(false);
            d.record(&drive(145), true, &mut out, &mut truth);
            let times: Vec<i64> = out.iter().map(|r| r.ts_utc).collect();
            if repeats {
                assert_eq!(times, [100, 115, 130, 145]);
                for r in &out[1..3] {
                    assert!(!r.valid && r.speed_kmh == 0.0);
                    assert_eq!((r.lat, r.lon), (out[0].lat, out[0].lon));
                }
                assert!(out[3].valid);
            } else {
                assert_eq!(times, [100, 145]);
            }
        }
    }

    #[test]
    fn faults_change_the_record_and_say_so_in_the_truth() {
        let profile = TrackerProfile {
            odometer: Some(OdometerModel {
                offset_km: 12.0,
                scale: 1.5,
            }),
            invalid_speed_probability: 0.2,
            flicker_probability: 0.1,
            cold_start_probability: 1.0,
            cold_start_m: [1000.0, 1000.0],
            ..named(Recording::Fixed { interval_s: 15 })
        };
        let mut d = device(profile, 5);
        let (mut out, mut truth) = (Vec::new(), Vec::new());
        d.shift_started();
        for ts in (0..30_000).step_by(15) {
            d.record(&drive(ts), true, &mut out, &mut truth);
        }
        // Odometer: start + offset + scale × driven.
        let last = out.last().unwrap();
        let driven = drive(last.ts_utc).odometer_km - 1000.0;
        assert!((last.odometer_km.unwrap() - (1000.0 + 12.0 + 1.5 * driven)).abs() < 1e-3);
        // One cold start, on the first fix, a kilometre off.
        let colds: Vec<&TruthEvent> = truth
            .iter()
            .filter(|e| matches!(e, TruthEvent::ArranqueFrio { .. }))
            .collect();
        assert_eq!(colds.len(), 1);
        let TruthEvent::ArranqueFrio {
            ts_utc, error_m, ..
        } = colds[0]
        else {
            unreachable!()
        };
        assert_eq!(*ts_utc, 0);
        assert!((error_m - 1000.0).abs() < 20.0, "{error_m}");
        // Every flicker and invalid speed is in the truth and in the record it names.
        let mut flickers = 0;
        let mut invalid = 0;
        for event in &truth {
            match event {
                TruthEvent::ParpadeoIgnicion {
                    ts_utc,
                    ignicion_reportada,
                    ..
                } => {
                    flickers += 1;
                    let r = out.iter().find(|r| r.ts_utc == *ts_utc).unwrap();
                    assert_eq!(r.ignition, *ignicion_reportada);
                    assert!(!r.ignition, "the truth is on all along");
                }
                TruthEvent::VelocidadInvalida {
                    ts_utc,
                    velocidad_kmh,
                    real_kmh,
                    ..
                } => {
                    invalid += 1;
                    let r = out.iter().find(|r| r.ts_utc == *ts_utc).unwrap();
                    assert_eq!(r.speed_kmh, *velocidad_kmh);
                    assert!(*velocidad_kmh == 0.0 && *real_kmh > 0.0 || *velocidad_kmh >= 250.0);
                }
                _ => {}
            }
        }
        let on = out.iter().filter(|r| !r.ignition).count();
        assert_eq!(on, flickers);
        assert!((120..280).contains(&flickers), "{flickers}");
        assert!((300..500).contains(&invalid), "{invalid}");
        let absent = TrackerProfile {
            odometer: None,
            ..named(Recording::Fixed { interval_s: 15 })
        };
        let mut d = device(absent, 5);
        out.clear();
        d.record(&drive(0), true, &mut out, &mut truth);
        assert_eq!(out[0].odometer_km, None);
    }

    #[test]
    fn the_default_profile_changes_nothing_the_noise_made() {
        let mut plain = Tracker::new(
            noise(),
            ChaCha8Rng::seed_from_u64(9),
            ChaCha8Rng::seed_from_u64(10),
        );
        let mut d = device(TrackerProfile::fixed(15), 9);
        d.shift_started();
        let (mut a, mut b, mut truth) = (Vec::new(), Vec::new(), Vec::new());
        for ts in (0..20_000).step_by(15) {
            plain.observe(&drive(ts), &mut a);
            d.record(&drive(ts), true, &mut b, &mut truth);
        }
        assert_eq!(a, b);
        assert!(truth.is_empty());
        assert!(d.describe().is_none());
    }

    #[test]
    fn episodes_are_drawn_inside_the_shift_and_merged() {
        let mut d = device(named(Recording::Fixed { interval_s: 15 }), 1);
        let episodes = Episodes {
            per_shift: 12,
            minutes: [20.0, 40.0],
        };
        let drawn = d.draw(episodes, 1_000_000, 4_600_000);
        assert!(!drawn.is_empty() && drawn.len() <= 12);
        for pair in drawn.windows(2) {
            assert!(pair[0].1 < pair[1].0, "{drawn:?}");
        }
        for (start, end) in &drawn {
            assert!((1000..=4600).contains(start) && end > start);
        }
    }
}
