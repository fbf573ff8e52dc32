//! A tracker's position noise, learned from its own fixes: the Rayleigh scale of a set of
//! distances, from their median.
//!
//! Owns [`RayleighScale`], shared by the distance rule (displacements between consecutive
//! still fixes) and the stop detector (distances of a parked unit's fixes to its stop's
//! centre). Two-dimensional Gaussian noise of σ per axis puts distances on a Rayleigh
//! distribution of scale σ, whose median is σ·√(2 ln 2); a median barely moves for the rare
//! outlier jump, so the scale is robust to them. A fixed histogram keeps it streaming, cheap to
//! clone (checkpoints) and O(1) per sample.

/// Bins of the histogram (the last takes everything beyond).
const BINS: usize = 400;
/// Median of a Rayleigh distribution over its scale: √(2 ln 2).
const RAYLEIGH_MEDIAN: f64 = 1.177_410_022_515_474_6;

#[derive(Debug, Clone)]
pub struct RayleighScale {
    bin_m: f64,
    min_samples: u32,
    bins: Vec<u32>,
    count: u32,
    /// The scale for `count` samples, when computed.
    cached: Option<(u32, f64)>,
}

impl RayleighScale {
    /// Distances binned `bin_m` wide; no scale until `min_samples` were seen.
    pub fn new(bin_m: f64, min_samples: u32) -> Self {
        RayleighScale {
            bin_m,
            min_samples,
            bins: Vec::new(),
            count: 0,
            cached: None,
        }
    }

    pub fn learn(&mut self, distance_m: f64) {
        if self.bins.is_empty() {
            self.bins = vec![0; BINS];
        }
        let bin = ((distance_m.max(0.0) / self.bin_m) as usize).min(BINS - 1);
        self.bins[bin] += 1;
        self.count += 1;
    }

    /// The scale σ, metres; `None` until enough samples were seen.
    pub fn scale_m(&mut self) -> Option<f64> {
        if self.count < self.min_samples {
            return None;
        }
        if let Some((count, scale)) = self.cached
            && count == self.count
        {
            return Some(scale);
        }
        let scale = self.median()? / RAYLEIGH_MEDIAN;
        self.cached = Some((self.count, scale));
        Some(scale)
    }

    /// The median of the samples, in their unit (the middle of its bin; beyond the last bin,
    /// the histogram's end); `None` until enough samples were seen. The same streaming median
    /// serves other positive quantities, such as a tracker's interval between reports.
    pub fn median(&self) -> Option<f64> {
        if self.count < self.min_samples {
            return None;
        }
        let half = self.count.div_ceil(2);
        let mut seen = 0;
        for (index, n) in self.bins.iter().enumerate() {
            seen += n;
            if seen >= half {
                return Some((index as f64 + 0.5) * self.bin_m);
            }
        }
        Some(BINS as f64 * self.bin_m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_is_the_rayleigh_one_and_jumps_barely_move_it() {
        let mut noise = RayleighScale::new(0.5, 20);
        // Distances of a Rayleigh(σ = 7.07) at its quantiles, plus a few jumps.
        for k in 1..100 {
            let q = f64::from(k) / 100.0;
            noise.learn(7.07 * (-2.0 * (1.0 - q).ln()).sqrt());
        }
        for _ in 0..5 {
            noise.learn(150.0);
        }
        let scale = noise.scale_m().unwrap();
        assert!((scale - 7.07).abs() < 0.5, "{scale}");
        assert!(RayleighScale::new(1.0, 20).scale_m().is_none());
    }
}
