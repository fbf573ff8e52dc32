//! Signal loss: silences longer than a threshold while the ignition was on.
//!
//! Owns gap detection. Bounds are exact: the last fix before the silence and the first after
//! it. A silence that follows an ignition-off report is the tracker sleeping, not a loss; one
//! still running at "now" is reported open.

use super::config::DetectionConfig;
use super::{Fix, Gap};

#[derive(Clone)]
pub struct GapDetector {
    threshold_s: i64,
    prev: Option<Fix>,
    pub gaps: Vec<Gap>,
}

impl GapDetector {
    pub fn new(config: &DetectionConfig) -> Self {
        GapDetector {
            threshold_s: config.perdida_senal_s.round() as i64,
            prev: None,
            gaps: Vec::new(),
        }
    }

    pub fn push(&mut self, fix: &Fix) {
        if let Some(prev) = &self.prev
            && prev.ignition
            && fix.ts_utc - prev.ts_utc > self.threshold_s
        {
            self.gaps.push(Gap {
                from_utc: prev.ts_utc,
                to_utc: Some(fix.ts_utc),
                lat: prev.lat,
                lon: prev.lon,
            });
        }
        self.prev = Some(*fix);
    }

    pub fn finish(&mut self, now_utc: i64) {
        if let Some(prev) = &self.prev
            && prev.ignition
            && now_utc - prev.ts_utc > self.threshold_s
        {
            self.gaps.push(Gap {
                from_utc: prev.ts_utc,
                to_utc: None,
                lat: prev.lat,
                lon: prev.lon,
            });
        }
    }
}
