//! Evidence: what each detection rests on, so an operator can check a doubtful one.
//!
//! Owns [`Evidence`] and [`Threshold`], one shape for every kind of event: the first and last
//! fix the detector used, how many, the measure it compared with a threshold (a stop's radius,
//! a speeding episode's top speed, a silence's length, a visit's depth inside the fence) and
//! that threshold by its `[deteccion]` name. Each detector fills it where it builds an event;
//! nothing here decides anything.

/// A threshold a detection was held to: its `[deteccion]` key (or a sum of keys) and value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Threshold {
    pub name: &'static str,
    pub value: f64,
}

/// The stop radius a stop's fixes stayed within (the configured one, or the unit's learned
/// noise radius when larger), metres.
pub const STOP_RADIUS: &str = "parada_radio_m";
/// The limit plus the tolerance a speeding episode's fixes exceeded, km/h.
pub const SPEED_LIMIT: &str = "limite_kmh+exceso_tolerancia_kmh";
/// The silence a signal loss outlasted, seconds.
pub const SILENCE: &str = "perdida_senal_s";
/// The time a unit stayed inside before its entry was confirmed, seconds.
pub const FENCE_CONFIRMATION: &str = "geocerca_confirmacion_s";

/// Why an event was detected. `measure` is in the threshold's unit for stops (radius, m),
/// speeding (top speed, km/h) and signal losses (silence, s); for a visit it is the depth
/// of the deepest fix inside the fence, metres.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evidence {
    pub first_fix_utc: i64,
    pub last_fix_utc: i64,
    pub fixes: u32,
    pub measure: f64,
    pub threshold: Threshold,
}

impl Evidence {
    /// Evidence resting on one fix so far.
    pub fn from_fix(ts_utc: i64, measure: f64, threshold: Threshold) -> Self {
        Evidence {
            first_fix_utc: ts_utc,
            last_fix_utc: ts_utc,
            fixes: 1,
            measure,
            threshold,
        }
    }

    /// One more fix at `ts_utc`, with its measure (the largest is kept).
    pub fn add(&mut self, ts_utc: i64, measure: f64) {
        self.last_fix_utc = self.last_fix_utc.max(ts_utc);
        self.fixes += 1;
        self.measure = self.measure.max(measure);
    }
}
