//! A tracker's position noise, learned from its own fixes: the Rayleigh scale of a set of
//! distances, from their median.
//!
//! Owns [`RayleighScale`], shared by the distance rule (displacements between consecutive
//! still fixes) and the stop detector (distances of a parked unit's fixes to its stop's
//! centre), and by the overspeed detector for the Doppler speed noise (the [`RayleighScale::median`] of
//! moving fixes' speed departures from the line through their neighbours'). Two-dimensional Gaussian noise of σ per axis puts distances on a Rayleigh
//! distribution of scale σ, whose median is σ·√(2 ln 2); a median barely moves for the rare
//! outlier jump, so the scale is robust to them. A fixed-width histogram keeps it streaming;
//! it is kept sparse (only the bins that have samples, a few dozen of the [`BINS`]) because
//! every checkpoint of an engine clones its four scales, for each of the thousand vehicles
//! `flota recibir` keeps live.

/// Bins of the histogram (the last takes everything beyond).
const BINS: usize = 400;
/// Median of a Rayleigh distribution over its scale: √(2 ln 2).
const RAYLEIGH_MEDIAN: f64 = 1.177_410_022_515_474_6;

#[derive(Debug, Clone)]
pub struct RayleighScale {
    bin_m: f64,
    min_samples: u32,
    /// The bins that have samples, by bin index: (index, samples).
    bins: Vec<(u16, u32)>,
    count: u32,
    /// The median for `count` samples, when computed.
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
        // BINS fits in u16.
        let bin = ((distance_m.max(0.0) / self.bin_m) as usize).min(BINS - 1) as u16;
        match self.bins.binary_search_by_key(&bin, |(index, _)| *index) {
            Ok(at) => self.bins[at].1 += 1,
            Err(at) => self.bins.insert(at, (bin, 1)),
        }
        self.count += 1;
    }

    /// The scale σ, metres; `None` until enough samples were seen.
    pub fn scale_m(&mut self) -> Option<f64> {
        self.median().map(|median| median / RAYLEIGH_MEDIAN)
    }

    /// The median of the samples (the histogram's bin centre); `None` until enough were seen.
    pub fn median(&mut self) -> Option<f64> {
        if self.count < self.min_samples {
            return None;
        }
        if let Some((count, median)) = self.cached
            && count == self.count
        {
            return Some(median);
        }
        let half = self.count.div_ceil(2);
        let mut seen = 0;
        let mut median_m = BINS as f64 * self.bin_m;
        for (index, n) in &self.bins {
            seen += n;
            if seen >= half {
                median_m = (f64::from(*index) + 0.5) * self.bin_m;
                break;
            }
        }
        self.cached = Some((self.count, median_m));
        Some(median_m)
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

    /// The median by a plain dense histogram, as the scale had it before it went sparse.
    fn dense_median(bin_m: f64, samples: &[f64]) -> f64 {
        let mut bins = vec![0u32; BINS];
        for d in samples {
            bins[((d.max(0.0) / bin_m) as usize).min(BINS - 1)] += 1;
        }
        let half = (samples.len() as u32).div_ceil(2);
        let mut seen = 0;
        for (index, n) in bins.iter().enumerate() {
            seen += n;
            if seen >= half {
                return (index as f64 + 0.5) * bin_m;
            }
        }
        BINS as f64 * bin_m
    }

    /// A checkpoint clones every scale of an engine, a thousand engines' worth of them in
    /// `flota recibir`: a clone holds only the bins that have samples, whatever the order
    /// they came in, and gives the same median as the dense histogram.
    #[test]
    fn a_clone_holds_only_the_filled_bins_and_the_same_median() {
        let mut noise = RayleighScale::new(0.5, 20);
        let mut samples = Vec::new();
        // 1,000 distances over 20 bins in a scrambled order, and one far outlier.
        for i in 0..1000u32 {
            samples.push(f64::from((i * 7919) % 20) * 0.5 + 0.25);
        }
        samples.push(1e6);
        for (n, d) in samples.iter().enumerate() {
            noise.learn(*d);
            if n >= 20 {
                assert_eq!(
                    noise.median(),
                    Some(dense_median(0.5, &samples[..=n])),
                    "after {} samples",
                    n + 1
                );
            }
        }
        let copy = noise.clone();
        let held = std::mem::size_of_val(copy.bins.as_slice());
        assert!(held <= 21 * 8, "a clone holds {held} bytes of bins");
        assert_eq!(copy.count, 1001);
    }
}
