//! The tracker: from the true state of a vehicle to what its GNSS and modem report.
//!
//! Owns the noise model (docs/escenarios.md, "Ruido"): position error is white Gaussian noise
//! per axis (a separate σ while stationary), plus an optional Ornstein–Uhlenbeck drift and rare
//! outlier jumps. Speed and heading come from the receiver's Doppler solution, as real
//! trackers report them — far more precise than differencing noisy fixes: speed gets a small
//! Gaussian error and is zeroed below the static-navigation threshold; heading is held while
//! stopped. The odometer is the true path. Delivery may duplicate or delay a report.

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

use crate::geometry::earth::{LatLon, cos_lat, offset_m_at};
use crate::geometry::rounding;
use crate::scenario::NoiseFile;

/// The true state of a vehicle at a report instant.
#[derive(Debug, Clone, Copy)]
pub struct TrueSample {
    pub ts_utc: i64,
    pub position: LatLon,
    pub speed_kmh: f64,
    pub heading_deg: f64,
    pub ignition: bool,
    pub odometer_km: f64,
}

/// One position as the tracker delivers it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Report {
    pub ts_utc: i64,
    /// 0 for the first delivery of a fix, 1 for a duplicate.
    pub sequence: u8,
    pub received_utc: i64,
    pub lat: f64,
    pub lon: f64,
    pub speed_kmh: f64,
    pub heading_deg: f64,
    pub ignition: bool,
    /// `None` when the tracker sends no odometer.
    pub odometer_km: Option<f64>,
    /// `false` for a record without a GNSS fix (the last fix repeated): acknowledged by a
    /// receiver but not stored, as `flota recibir` does.
    pub valid: bool,
}

pub struct Tracker {
    noise: NoiseFile,
    gnss: ChaCha8Rng,
    delivery: ChaCha8Rng,
    /// Ornstein–Uhlenbeck drift, metres east/north, and when it was last updated.
    drift_m: (f64, f64),
    drift_ts: Option<i64>,
    last_heading_deg: f64,
    /// The latest true latitude's bits and its cosine: a unit standing still is sampled at
    /// the same point record after record, and the cosine is most of a record's arithmetic.
    cos_lat: Option<(u64, f64)>,
}

fn normal(rng: &mut ChaCha8Rng) -> f64 {
    rng.sample(StandardNormal)
}

pub(super) fn round(value: f64, decimals: i32) -> f64 {
    let factor = 10f64.powi(decimals);
    // `f64::round`'s answer without its library call (five per record).
    rounding::round(value * factor) / factor
}

impl Tracker {
    pub fn new(noise: NoiseFile, gnss: ChaCha8Rng, delivery: ChaCha8Rng) -> Self {
        Tracker {
            noise,
            gnss,
            delivery,
            drift_m: (0.0, 0.0),
            drift_ts: None,
            last_heading_deg: 0.0,
            cos_lat: None,
        }
    }

    /// What the tracker sends for one true sample (one report, or two when duplicated).
    #[cfg(test)]
    pub fn observe(&mut self, truth: &TrueSample, out: &mut Vec<Report>) {
        let report = self.fix(truth);
        self.deliver(report, out);
    }

    /// The record the GNSS makes of one true sample, delivered on time.
    pub fn fix(&mut self, truth: &TrueSample) -> Report {
        let n = &self.noise;
        let stationary = truth.speed_kmh < 0.1;

        if n.deriva_sigma_m > 0.0 {
            let dt = self
                .drift_ts
                .map_or(f64::INFINITY, |t| (truth.ts_utc - t) as f64);
            let keep = (-dt / n.deriva_tau_s).exp();
            let fresh = n.deriva_sigma_m * (1.0 - keep * keep).sqrt();
            self.drift_m = (
                self.drift_m.0 * keep + fresh * normal(&mut self.gnss),
                self.drift_m.1 * keep + fresh * normal(&mut self.gnss),
            );
            self.drift_ts = Some(truth.ts_utc);
        }
        let sigma = if stationary {
            n.jitter_estacionado_m.unwrap_or(n.sigma_m)
        } else {
            n.sigma_m
        };
        let mut east = self.drift_m.0 + sigma * normal(&mut self.gnss);
        let mut north = self.drift_m.1 + sigma * normal(&mut self.gnss);
        if n.saltos_probabilidad > 0.0 && self.gnss.random_bool(n.saltos_probabilidad) {
            let angle = self.gnss.random_range(0.0..std::f64::consts::TAU);
            east += n.saltos_m * angle.sin();
            north += n.saltos_m * angle.cos();
        }
        // `offset_m`'s arithmetic, with the cosine reused while the latitude repeats.
        let bits = truth.position.lat.to_bits();
        let cos = match self.cos_lat {
            Some((cached, cos)) if cached == bits => cos,
            _ => {
                let cos = cos_lat(truth.position);
                self.cos_lat = Some((bits, cos));
                cos
            }
        };
        let position = offset_m_at(truth.position, cos, east, north);

        let mut speed_kmh = 0.0;
        if !stationary {
            speed_kmh = (truth.speed_kmh + n.velocidad_sigma_kmh * normal(&mut self.gnss)).max(0.0);
            if speed_kmh < n.umbral_estatico_kmh {
                speed_kmh = 0.0;
            }
        }
        if speed_kmh > 0.0 {
            // Doppler heading degrades at walking pace.
            let sigma_deg = n.rumbo_sigma_grados * (15.0 / speed_kmh).max(1.0);
            self.last_heading_deg =
                (truth.heading_deg + sigma_deg * normal(&mut self.gnss)).rem_euclid(360.0);
        }

        Report {
            ts_utc: truth.ts_utc,
            sequence: 0,
            received_utc: truth.ts_utc,
            lat: round(position.lat, 6),
            lon: round(position.lon, 6),
            speed_kmh: round(speed_kmh, 1),
            heading_deg: round(self.last_heading_deg, 1),
            ignition: truth.ignition,
            odometer_km: Some(round(truth.odometer_km, 3)),
            valid: true,
        }
    }

    /// The modem's faults on one record: a late delivery, a duplicate.
    pub fn deliver(&mut self, mut report: Report, out: &mut Vec<Report>) {
        let n = &self.noise;
        if n.retrasados_probabilidad > 0.0 && self.delivery.random_bool(n.retrasados_probabilidad) {
            let [lo, hi] = n.retraso_s;
            let delay = if hi > lo {
                self.delivery.random_range(lo..hi)
            } else {
                lo
            };
            report.received_utc += delay.round() as i64;
        }
        out.push(report);
        if n.duplicados_probabilidad > 0.0 && self.delivery.random_bool(n.duplicados_probabilidad) {
            let mut copy = report;
            copy.sequence = 1;
            copy.received_utc += self.delivery.random_range(1..60);
            out.push(copy);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::earth::distance_m;
    use rand::SeedableRng;

    fn tracker(noise: NoiseFile) -> Tracker {
        Tracker::new(
            noise,
            ChaCha8Rng::seed_from_u64(1),
            ChaCha8Rng::seed_from_u64(2),
        )
    }

    fn sample(ts: i64, speed_kmh: f64) -> TrueSample {
        TrueSample {
            ts_utc: ts,
            position: LatLon::new(14.6, -90.5),
            speed_kmh,
            heading_deg: 90.0,
            ignition: true,
            odometer_km: 1000.0,
        }
    }

    #[test]
    fn white_noise_has_the_configured_sigma() {
        let mut t = tracker(NoiseFile::default());
        let mut out = Vec::new();
        for ts in 0..4000 {
            t.observe(&sample(ts * 15, 40.0), &mut out);
        }
        let truth = LatLon::new(14.6, -90.5);
        // Radial error of a 2-D Gaussian with σ = 5 m: mean σ·√(π/2) ≈ 6.27 m.
        let mean = out
            .iter()
            .map(|r| distance_m(truth, LatLon::new(r.lat, r.lon)))
            .sum::<f64>()
            / out.len() as f64;
        assert!((mean - 6.27).abs() < 0.3, "{mean}");
        assert!(
            out.iter()
                .all(|r| r.received_utc == r.ts_utc && r.sequence == 0)
        );
        let speed_mean = out.iter().map(|r| r.speed_kmh).sum::<f64>() / out.len() as f64;
        assert!((speed_mean - 40.0).abs() < 0.1, "{speed_mean}");
    }

    #[test]
    fn stationary_reports_zero_speed_and_hold_heading() {
        let mut t = tracker(NoiseFile::default());
        let mut out = Vec::new();
        t.observe(&sample(0, 30.0), &mut out);
        let heading = out[0].heading_deg;
        for ts in 1..50 {
            t.observe(&sample(ts * 15, 0.0), &mut out);
        }
        assert!(
            out[1..]
                .iter()
                .all(|r| r.speed_kmh == 0.0 && r.heading_deg == heading)
        );
        // Walking pace under the static threshold also reads 0.
        out.clear();
        t.observe(&sample(1000, 1.5), &mut out);
        assert_eq!(out[0].speed_kmh, 0.0);
    }

    #[test]
    fn drift_is_correlated_and_delivery_faults_happen() {
        let noise = NoiseFile {
            sigma_m: 0.0,
            deriva_sigma_m: 15.0,
            deriva_tau_s: 60.0,
            duplicados_probabilidad: 0.1,
            retrasados_probabilidad: 0.1,
            ..NoiseFile::default()
        };
        let mut t = tracker(noise);
        let mut out = Vec::new();
        for ts in 0..2000 {
            t.observe(&sample(ts * 15, 0.0), &mut out);
        }
        let firsts: Vec<&Report> = out.iter().filter(|r| r.sequence == 0).collect();
        let truth = LatLon::new(14.6, -90.5);
        let errors: Vec<f64> = firsts
            .iter()
            .map(|r| crate::geometry::earth::local_m(truth, LatLon::new(r.lat, r.lon)).0)
            .collect();
        let var = errors.iter().map(|e| e * e).sum::<f64>() / errors.len() as f64;
        assert!((var.sqrt() - 15.0).abs() < 3.0, "{}", var.sqrt());
        // Lag-1 correlation exp(-15/60) ≈ 0.78.
        let lag: f64 =
            errors.windows(2).map(|w| w[0] * w[1]).sum::<f64>() / (errors.len() - 1) as f64 / var;
        assert!((lag - 0.78).abs() < 0.08, "{lag}");
        let dups = out.len() - firsts.len();
        assert!((120..280).contains(&dups), "{dups}");
        let late = firsts.iter().filter(|r| r.received_utc > r.ts_utc).count();
        assert!((120..280).contains(&late), "{late}");
    }
}
