//! Signal loss: silences longer than a threshold while the ignition was on.
//!
//! Owns gap detection. Bounds are exact: the last fix before the silence and the first after
//! it. A silence that follows an ignition-off report is the tracker sleeping, not a loss; one
//! still running at "now" is reported open.

use super::config::DetectionConfig;
use super::evidence::{Evidence, SILENCE, Threshold};
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

    /// A silence from the fix at `from_utc` until `to_utc`, resting on that one fix.
    fn evidence(&self, from_utc: i64, to_utc: i64) -> Evidence {
        let threshold = Threshold {
            name: SILENCE,
            value: self.threshold_s as f64,
        };
        Evidence::from_fix(from_utc, (to_utc - from_utc) as f64, threshold)
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
                evidence: Evidence {
                    last_fix_utc: fix.ts_utc,
                    fixes: 2,
                    ..self.evidence(prev.ts_utc, fix.ts_utc)
                },
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
                evidence: self.evidence(prev.ts_utc, now_utc),
            });
        }
    }
}
