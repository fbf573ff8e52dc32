//! The agent's side of its tracker: when it asks for a record, heartbeats while parked, the
//! shift's outages, and handing what the [`Device`](crate::sim::device::Device) produced to
//! the sink.
//!
//! Owns the clock of the tracker (fixed-mode ticks on a grid from the shift's start, adaptive
//! checks every second, heartbeats every `latido_apagado_min` while the ignition is off) and the
//! rule that only what is received by `ahora` reaches the data. What a record holds is the
//! device's.

use super::{Agent, Event};
use crate::scenario::Recording;
use crate::sim::Sink;
use crate::sim::gnss::Report;
use crate::sim::gnss::TrueSample;
use crate::sim::truth::TruthEvent;

impl<S: Sink> Agent<'_, S> {
    /// A tick of the tracker's clock while it is awake.
    pub(super) fn report(&mut self) {
        if !self.reporting {
            return;
        }
        let fixed = matches!(self.unit.tracker.recording, Recording::Fixed { .. });
        self.emit_report(fixed);
        self.schedule(self.now_ms + self.interval_ms, Event::Report);
    }

    /// Asks the device for a record of the true state now (`force`: whatever its criteria).
    pub(super) fn emit_report(&mut self, force: bool) {
        let ts_utc = self.now_ms.div_euclid(1000);
        if self.last_report_ts == Some(ts_utc) {
            return;
        }
        let sample = TrueSample {
            ts_utc,
            position: self.position(),
            speed_kmh: self.speed_ms * 3.6,
            heading_deg: self.heading_deg,
            ignition: self.ignition,
            odometer_km: self.odometer_start_km + self.odometer_m / 1000.0,
        };
        if self.signal_lost {
            if let Some(silence) = &mut self.silence
                && let Some(hidden) =
                    self.device
                        .would_record(silence.would_be_last.as_ref(), &sample, force)
            {
                silence.hidden += 1;
                silence.first_hidden_utc.get_or_insert(ts_utc);
                silence.would_be_last = Some(hidden);
            }
            return;
        }
        self.reports.clear();
        let before = self.device_records();
        self.device
            .record(&sample, force, &mut self.reports, &mut self.tracker_truth);
        if self.device_records() != before {
            self.last_report_ts = Some(ts_utc);
            // Only a record with a fix is stored: a repeated invalid one is no end to a
            // silence in the data.
            if self.device.last_record().is_some_and(|(r, _)| r.valid) {
                self.last_stored_ts = Some(ts_utc);
                self.silence_ends(Some(ts_utc));
            }
        }
        self.hand_over();
    }

    /// An injected signal loss starts: the tracker records nothing until it ends, and the
    /// truth will say what that hid (a silence still waiting for its first record after is
    /// closed as having none).
    pub(super) fn signal_starts(&mut self) {
        self.silence_ends(None);
        self.signal_lost = true;
        self.silence = Some(Silence {
            start_utc: self.now_ms.div_euclid(1000),
            before_utc: self.last_stored_ts,
            hidden: 0,
            first_hidden_utc: None,
            would_be_last: self.device.last_record(),
        });
    }

    /// The first record after a signal loss (`None`: none came), once the loss is over: the
    /// silence it caused goes to the truth.
    fn silence_ends(&mut self, first_after_utc: Option<i64>) {
        if self.signal_lost && first_after_utc.is_some() {
            return;
        }
        if let Some(silence) = self.silence.take() {
            self.sink.truth(TruthEvent::SilencioPerdida {
                placa: self.unit.plate.clone(),
                inicio_utc: silence.start_utc,
                desde_utc: silence.before_utc,
                hasta_utc: first_after_utc,
                registros_ocultos: silence.hidden,
                primer_oculto_utc: silence.first_hidden_utc,
            });
        }
    }

    fn device_records(&self) -> u64 {
        self.device.records()
    }

    /// What the device produced, to the sink: reports received by `ahora`, truth events.
    fn hand_over(&mut self) {
        let ahora = self.world.ahora_utc;
        for report in &self.reports {
            // Not received yet at `ahora`: not in the data.
            if report.received_utc <= ahora && report.ts_utc <= ahora {
                self.sink.report(report);
                if report.sequence == 0 {
                    self.delivered += 1;
                }
                self.last_received_ts = self.last_received_ts.max(Some(report.ts_utc));
                if report.valid {
                    self.received_valid.push(report.ts_utc);
                }
            } else if report.ts_utc <= ahora && report.sequence == 0 {
                self.in_transit.push((report.ts_utc, report.valid));
            }
        }
        self.reports.clear();
        // Most records bring no truth: no drain to set up and drop for them.
        if !self.tracker_truth.is_empty() {
            for event in self.tracker_truth.drain(..) {
                self.sink.truth(event);
            }
        }
    }

    /// At ignition off: a heartbeat chain, if the profile beats while parked.
    pub(super) fn start_heartbeats(&mut self) {
        self.heartbeat_chain += 1;
        if let Some(every_s) = self.unit.tracker.heartbeat_s {
            let chain = self.heartbeat_chain;
            self.schedule(self.now_ms + every_s * 1000, Event::Heartbeat(chain));
        }
    }

    /// A heartbeat: a record while the ignition stays off and the tracker is otherwise asleep;
    /// the chain ends when the ignition comes on.
    pub(super) fn heartbeat(&mut self, chain: u32) {
        if self.ignition || chain != self.heartbeat_chain {
            return;
        }
        if !self.reporting {
            self.emit_report(true);
        }
        if let Some(every_s) = self.unit.tracker.heartbeat_s {
            self.schedule(self.now_ms + every_s * 1000, Event::Heartbeat(chain));
        }
    }

    /// At a shift's start: a possible cold start, and the shift's network and fix outages,
    /// drawn over the shift's planned length (a fix outage is in the truth as soon as drawn).
    pub(super) fn tracker_episodes(&mut self, planned_end_ms: i64) {
        self.device.shift_started();
        let from = self.now_ms;
        let profile = self.device.profile().clone();
        for (start, end) in self
            .device
            .draw(profile.coverage_loss, from, planned_end_ms)
        {
            self.schedule(start * 1000, Event::CoverageLost);
            self.schedule(end * 1000, Event::CoverageBack);
        }
        let ahora = self.world.ahora_utc;
        for (start, end) in self.device.draw(profile.fix_loss, from, planned_end_ms) {
            self.schedule(start * 1000, Event::FixLost);
            self.schedule(end * 1000, Event::FixBack);
            if start <= ahora {
                self.sink.truth(TruthEvent::SinFix {
                    placa: self.unit.plate.clone(),
                    inicio_utc: start,
                    fin_utc: (end <= ahora).then_some(end),
                    repite_ultimo: profile.fix_loss_repeats,
                });
            }
        }
    }

    /// The network is back: the backlog goes out.
    pub(super) fn coverage_back(&mut self) {
        self.reports.clear();
        self.device.restore_coverage(
            self.now_ms.div_euclid(1000),
            &mut self.reports,
            &mut self.tracker_truth,
        );
        self.hand_over();
    }

    /// At `ahora`: an outage still under way and the tracker's summary.
    pub(super) fn finish_tracker(&mut self) {
        self.silence_ends(None);
        let delivered = self.delivered;
        self.device.finish(delivered, &mut self.tracker_truth);
        self.hand_over();
        self.in_transit_at_ahora();
    }

    /// Records made before `ahora` but still on their way then (late deliveries): those with
    /// a fix that fall between records that did reach the data, one fact per silence they
    /// leave in the data (`hueco_en_transito`); then those newer than anything that reached
    /// the data, after which the data end in a silence the tracker did not keep.
    fn in_transit_at_ahora(&mut self) {
        self.holes_in_transit();
        let last = self.last_received_ts;
        let after: Vec<i64> = self
            .in_transit
            .iter()
            .map(|(ts, _)| *ts)
            .filter(|ts| last.is_none_or(|last| *ts > last))
            .collect();
        if let Some(first) = after.iter().min() {
            self.sink.truth(TruthEvent::EnTransito {
                placa: self.unit.plate.clone(),
                desde_utc: last,
                primero_utc: *first,
                registros: after.len() as u64,
            });
        }
    }
}

impl<S: Sink> Agent<'_, S> {
    /// The records with a fix still in transit at `ahora` that the data have newer records
    /// than, grouped by the silence they leave: the stored records just before and after
    /// them. A duplicate that arrived in time stands in for its late first copy.
    fn holes_in_transit(&mut self) {
        let Some(&newest) = self.received_valid.iter().max() else {
            return;
        };
        let mut missing: Vec<i64> = self
            .in_transit
            .iter()
            .filter(|(ts, valid)| *valid && *ts < newest)
            .map(|(ts, _)| *ts)
            .collect();
        if missing.is_empty() {
            return;
        }
        missing.sort_unstable();
        let mut received = std::mem::take(&mut self.received_valid);
        received.sort_unstable();
        received.dedup();
        let mut hole: Option<(Option<i64>, i64, i64, u64)> = None;
        for ts in missing {
            let at = received.partition_point(|r| *r < ts);
            if received.get(at) == Some(&ts) {
                continue;
            }
            let before = at.checked_sub(1).map(|i| received[i]);
            // `ts < newest`, so some stored record comes after it.
            let Some(&after) = received.get(at) else {
                continue;
            };
            match &mut hole {
                Some((b, a, _, count)) if *b == before && *a == after => *count += 1,
                _ => {
                    self.emit_hole(hole.take());
                    hole = Some((before, after, ts, 1));
                }
            }
        }
        self.emit_hole(hole);
    }

    fn emit_hole(&mut self, hole: Option<(Option<i64>, i64, i64, u64)>) {
        if let Some((desde_utc, hasta_utc, primero_utc, registros)) = hole {
            self.sink.truth(TruthEvent::HuecoEnTransito {
                placa: self.unit.plate.clone(),
                desde_utc,
                hasta_utc,
                primero_utc,
                registros,
            });
        }
    }
}

/// An injected signal loss as the tracker lived it: what it had recorded last before it,
/// and what it would have recorded meanwhile.
pub(super) struct Silence {
    start_utc: i64,
    before_utc: Option<i64>,
    hidden: u64,
    /// When the first of them would have been made.
    first_hidden_utc: Option<i64>,
    /// The record the tracker would have made last, had it not lost its signal.
    would_be_last: Option<(Report, bool)>,
}
